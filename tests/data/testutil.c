/* testutil.c -- builders for the data tests (see testutil.h). */
#define _GNU_SOURCE
#include "testutil.h"

#include <ftw.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "dpgd_core.h"

/* One xorshift64* step: advances *x and returns its scrambled output. */
static uint64_t xorshift64s(uint64_t *x)
{
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1Dull;
}

void tu_bytes(uint8_t *out, size_t n, uint64_t seed)
{
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(xorshift64s(&x) >> 56);
}

double tu_urand(uint64_t *state) { return (double)(xorshift64s(state) >> 11) * 0x1.0p-53; }

uint8_t *tu_idx(size_t *len, int ndim, const uint32_t *dims, const uint8_t *body,
                size_t body_len)
{
  *len = 4 + 4 * (size_t)ndim + body_len;
  uint8_t *b = malloc(*len);
  assert_non_null(b);
  b[0] = 0;
  b[1] = 0;
  b[2] = 8;
  b[3] = (uint8_t)ndim;
  for (int k = 0; k < ndim; k++)
    for (int j = 0; j < 4; j++) b[4 + 4 * k + j] = (uint8_t)(dims[k] >> (24 - 8 * j));
  if (body_len) memcpy(b + 4 + 4 * ndim, body, body_len);
  return b;
}

uint8_t *tu_gzip(size_t *out_len, const uint8_t *in, size_t len)
{
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
                   Z_OK);
  size_t cap = deflateBound(&zs, len) + 64;
  uint8_t *out = malloc(cap);
  assert_non_null(out);
  zs.next_in = (Bytef *)in;
  zs.avail_in = (uInt)len;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *out_len = cap - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

void tu_write(const char *path, const void *buf, size_t len)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

void tu_png(const char *path, int w, int h, int color_type, int depth, int interlace,
            const uint8_t *pixels)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  assert_non_null(info);
  if (setjmp(png_jmpbuf(png))) fail_msg("libpng could not write %s", path);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color_type,
               interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_color pal[256];
    for (int k = 0; k < 256; k++) pal[k].red = pal[k].green = pal[k].blue = (png_byte)k;
    png_set_PLTE(png, info, pal, 256);
  }
  png_write_info(png, info);
  int channels = color_type == PNG_COLOR_TYPE_RGB          ? 3
                 : color_type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                 : color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                                                           : 1;
  size_t stride = (size_t)w * (size_t)channels * (size_t)depth / 8;
  int passes = png_set_interlace_handling(png);
  for (int p = 0; p < passes; p++)
    for (int y = 0; y < h; y++) png_write_row(png, pixels + (size_t)y * stride);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  assert_int_equal(fclose(f), 0);
}

char *tu_tmpdir(void)
{
  const char *t = getenv("TMPDIR");
  char buf[512];
  snprintf(buf, sizeof buf, "%s/dpgd-data-test-XXXXXX", t && t[0] ? t : "/tmp");
  assert_non_null(mkdtemp(buf));
  char *out = strdup(buf);
  assert_non_null(out);
  return out;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void tu_rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

void tu_png_tree(const char *split, const size_t *index, const uint8_t *labels, size_t n, int w,
                 int h)
{
  char path[1024];
  mkdir(split, 0755);
  uint8_t *px = malloc((size_t)w * (size_t)h);
  assert_non_null(px);
  for (size_t k = 0; k < n; k++) {
    snprintf(path, sizeof path, "%s/%u", split, labels[k]);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%u/%zu.png", split, labels[k], index[k]);
    tu_bytes(px, (size_t)w * (size_t)h, index[k]);
    tu_png(path, w, h, PNG_COLOR_TYPE_GRAY, 8, 0, px);
  }
  free(px);
}

void tu_png_tree_n(const char *split, size_t n, int w, int h)
{
  size_t index[64];
  uint8_t labels[64];
  assert_true(n <= 64);
  for (size_t i = 0; i < n; i++) {
    index[i] = i;
    labels[i] = (uint8_t)((i * 7 + 3) % 10);
  }
  tu_png_tree(split, index, labels, n, w, h);
}

void tu_expect_error(int st, int want, const char *frag1, const char *frag2)
{
  const char *msg = dpgd_error_last();
  if (st != want || !strstr(msg, frag1) || (frag2 && !strstr(msg, frag2)))
    fail_msg("status %d (want %d), message '%s' (want '%s'%s%s)", st, want, msg, frag1,
             frag2 ? " and " : "", frag2 ? frag2 : "");
}
