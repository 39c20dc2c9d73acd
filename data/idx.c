/* idx.c -- the IDX format (LeCun's MNIST files): a strict parser over a byte buffer,
 * gzip (inflate with the gzip wrapper) or raw, and the file readers on top of it.
 * The parser never trusts a header: the declared size is checked against what the
 * input can possibly hold before anything is allocated, so a 20-byte file cannot ask
 * for gigabytes, and every byte of the input must be accounted for. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data_internal.h"

/* Deflate cannot expand better than about 1032:1 (zlib's FAQ); with the gzip header
 * and trailer this bounds what a compressed input of a given size can decode to. */
#define DEFLATE_MAX_RATIO 1032u

/* A decoder over the whole input: raw bytes, or one or more gzip members. */
typedef struct src {
  const char *name;
  const uint8_t *in; /* (len) */
  size_t len, pos;   /* pos: input bytes consumed */
  int gz;            /* 1 if the input starts with the gzip magic 1f 8b */
  int live;          /* inflate state initialised (inflateEnd needed) */
  int member_done;   /* the current gzip member ended (Z_STREAM_END) */
  z_stream zs;
} src;

/* zlib allocates through malloc here (not its own default) so that the tests'
 * allocation-failure injection reaches inflate's state too. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
  (void)opaque;
  if (size && items > SIZE_MAX / size) return Z_NULL;
  return malloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p)
{
  (void)opaque;
  free(p);
}

static int is_gzip(const uint8_t *p, size_t len)
{
  return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

static int src_open(src *s, const void *buf, size_t len, const char *name)
{
  memset(s, 0, sizeof *s);
  s->name = name;
  s->in = buf;
  s->len = len;
  s->gz = is_gzip(s->in, len);
  if (!s->gz) return DPGD_OK;
  s->zs.zalloc = z_alloc;
  s->zs.zfree = z_free;
  int ret = inflateInit2(&s->zs, 16 + MAX_WBITS); /* 16: gzip wrapper only */
  if (ret == Z_MEM_ERROR)
    return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory starting gzip decompression", name);
  if (ret != Z_OK)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: cannot start gzip decompression (zlib %d)", name, ret);
  s->live = 1;
  return DPGD_OK;
}

static void src_close(src *s)
{
  if (s->live) inflateEnd(&s->zs);
  s->live = 0;
}

/* Decodes up to n bytes into dst; *got < n means the input ended cleanly. Corrupt or
 * truncated gzip data and bytes after the last gzip member are errors. */
static int src_read(src *s, uint8_t *dst, size_t n, size_t *got)
{
  *got = 0;
  if (!s->gz) {
    size_t k = s->len - s->pos < n ? s->len - s->pos : n;
    if (k) memcpy(dst, s->in + s->pos, k);
    s->pos += k;
    *got = k;
    return DPGD_OK;
  }
  while (*got < n) {
    if (s->member_done) {
      if (s->pos == s->len) return DPGD_OK; /* end of the last member: clean EOF */
      /* Concatenated gzip members are one file for gzip(1) and zlib's gz API. */
      if (!is_gzip(s->in + s->pos, s->len - s->pos))
        return DPGD_FAIL(DPGD_EFORMAT, "%s: %zu bytes of trailing garbage after the gzip data",
                         s->name, s->len - s->pos);
      inflateReset(&s->zs);
      s->member_done = 0;
    }
    size_t in_left = s->len - s->pos, out_left = n - *got;
    s->zs.next_in = (Bytef *)(s->in + s->pos);
    s->zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
    s->zs.next_out = dst + *got;
    s->zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
    uInt avail_in = s->zs.avail_in, avail_out = s->zs.avail_out;
    int ret = inflate(&s->zs, Z_NO_FLUSH);
    s->pos += avail_in - s->zs.avail_in;
    *got += avail_out - s->zs.avail_out;
    if (ret == Z_STREAM_END) {
      s->member_done = 1;
    } else if (ret == Z_BUF_ERROR) {
      /* No progress with output space left: the input ran out inside a member. */
      return DPGD_FAIL(DPGD_EFORMAT,
                       "%s: truncated: the gzip stream ends before its end marker", s->name);
    } else if (ret == Z_MEM_ERROR) {
      return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory decompressing", s->name);
    } else if (ret != Z_OK) {
      return DPGD_FAIL(DPGD_EFORMAT, "%s: corrupt gzip data (%s)", s->name,
                       s->zs.msg ? s->zs.msg : "invalid stream");
    }
  }
  return DPGD_OK;
}

static uint32_t be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the header's dimensions and returns their product in *size. */
static int check_dims(size_t *size, const dpgd_data_idx *a, const char *name)
{
  const char *what = a->ndim == 3 ? "images" : "labels";
  if (a->dims[0] == 0) return DPGD_FAIL(DPGD_EFORMAT, "%s: declares 0 %s", name, what);
  if (a->ndim == 3) {
    if (a->dims[1] == 0 || a->dims[2] == 0 || a->dims[1] > DPGD_DATA_MAX_SIDE ||
        a->dims[2] > DPGD_DATA_MAX_SIDE)
      return DPGD_FAIL(DPGD_EFORMAT, "%s: image size %zu x %zu is outside 1..%d on a side",
                       name, a->dims[1], a->dims[2], DPGD_DATA_MAX_SIDE);
  }
  size_t prod = 1;
  for (int k = 0; k < a->ndim; k++)
    if (__builtin_mul_overflow(prod, a->dims[k], &prod))
      return DPGD_FAIL(DPGD_EFORMAT, "%s: declared size overflows", name);
  *size = prod;
  return DPGD_OK;
}

/* Rejects a declared size the remaining input cannot hold (raw: exactly; gzip: at the
 * best possible compression ratio), before anything is allocated for it. */
static int check_fits(const src *s, size_t size, const char *what)
{
  size_t rest = s->len - s->pos;
  if (!s->gz) {
    if (size > rest)
      return DPGD_FAIL(DPGD_EFORMAT,
                       "%s: truncated: the header declares %zu bytes of %s but only %zu "
                       "follow",
                       s->name, size, what, rest);
    if (size < rest)
      return DPGD_FAIL(DPGD_EFORMAT, "%s: %zu bytes of trailing garbage after the last %s",
                       s->name, rest - size, what);
    return DPGD_OK;
  }
  size_t cap;
  if (__builtin_mul_overflow(rest, (size_t)DEFLATE_MAX_RATIO, &cap)) return DPGD_OK;
  if (size > cap)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: truncated: the header declares %zu bytes of %s but %zu "
                     "compressed bytes cannot hold that many",
                     s->name, size, what, rest);
  return DPGD_OK;
}

static int parse(dpgd_data_idx *a, src *s, int ndim)
{
  uint8_t hdr[12];
  size_t got;
  int st = src_read(s, hdr, 4, &got);
  if (st) return st;
  if (got == 0) return DPGD_FAIL(DPGD_EFORMAT, "%s: empty file, not an IDX file", s->name);
  if (got < 4)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: truncated: %zu bytes, shorter than an IDX header",
                     s->name, got);
  uint32_t magic = be32(hdr);
  if (magic != 0x00000803u && magic != 0x00000801u)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: bad magic 0x%08x: not an IDX file of unsigned bytes (expected "
                     "0x00000803 for images or 0x00000801 for labels)",
                     s->name, magic);
  a->ndim = (int)(magic & 0xff);
  if (ndim && a->ndim != ndim)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: magic 0x%08x marks an IDX %s file, expected %s "
                     "(0x%08x)",
                     s->name, magic, a->ndim == 3 ? "images" : "labels",
                     ndim == 3 ? "images" : "labels", ndim == 3 ? 0x803u : 0x801u);
  const char *what = a->ndim == 3 ? "images" : "labels";
  st = src_read(s, hdr, 4 * (size_t)a->ndim, &got);
  if (st) return st;
  if (got < 4 * (size_t)a->ndim)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: truncated inside the IDX header", s->name);
  for (int k = 0; k < a->ndim; k++) a->dims[k] = be32(hdr + 4 * k);
  if ((st = check_dims(&a->size, a, s->name))) return st;
  if ((st = check_fits(s, a->size, what))) return st;
  a->data = malloc(a->size);
  if (!a->data)
    return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory for %zu bytes of %s", s->name, a->size,
                     what);
  if ((st = src_read(s, a->data, a->size, &got))) return st;
  if (got < a->size)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: truncated: the header declares %zu bytes of %s but the data "
                     "ends after %zu",
                     s->name, a->size, what, got);
  uint8_t extra[64];
  if ((st = src_read(s, extra, sizeof extra, &got))) return st;
  if (got)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: trailing garbage after the last %s (the file is "
                     "longer than its header says)",
                     s->name, what);
  return DPGD_OK;
}

int dpgd_data_idx_parse(dpgd_data_idx **out, const void *buf, size_t len, int ndim,
                        const char *name)
{
  *out = NULL;
  if (ndim != 0 && ndim != 1 && ndim != 3)
    return DPGD_FAIL(DPGD_EINVAL, "IDX rank %d requested; only 1 (labels) and 3 (images)",
                     ndim);
  if (!name) name = "(buffer)";
  dpgd_data_idx *a = calloc(1, sizeof *a);
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory", name);
  src s;
  int st = src_open(&s, buf, len, name);
  if (!st) st = parse(a, &s, ndim);
  src_close(&s);
  if (st) {
    dpgd_data_idx_free(a);
    return st;
  }
  *out = a;
  return DPGD_OK;
}

void dpgd_data_idx_free(dpgd_data_idx *a)
{
  if (!a) return;
  free(a->data);
  free(a);
}

/* Reads a whole regular file into a malloc'ed buffer. */
static int slurp(uint8_t **buf, size_t *len, const char *path)
{
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  int st = DPGD_OK;
  if (fstat(fileno(f), &sb) != 0) {
    st = DPGD_FAIL(DPGD_EIO, "cannot stat %s: %s", path, strerror(errno));
  } else if (S_ISDIR(sb.st_mode)) {
    st = DPGD_FAIL(DPGD_EIO, "%s is a directory, not an IDX file", path);
  } else if (!S_ISREG(sb.st_mode)) {
    st = DPGD_FAIL(DPGD_EIO, "%s is not a regular file", path);
  } else {
    size_t n = (size_t)sb.st_size;
    *buf = malloc(n ? n : 1);
    if (!*buf) {
      st = DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s (%zu bytes)", path, n);
    } else {
      *len = fread(*buf, 1, n, f);
      if (ferror(f)) st = DPGD_FAIL(DPGD_EIO, "read error on %s: %s", path, strerror(errno));
      else if (*len != n) st = DPGD_FAIL(DPGD_EIO, "%s changed size while being read", path);
    }
  }
  fclose(f);
  if (st) {
    free(*buf);
    *buf = NULL;
  }
  return st;
}

int dpgd_data_idx_read_file(dpgd_data_idx **out, const char *path, int ndim)
{
  *out = NULL;
  uint8_t *buf;
  size_t len;
  int st = slurp(&buf, &len, path);
  if (st) return st;
  st = dpgd_data_idx_parse(out, buf, len, ndim, path);
  free(buf);
  return st;
}

int dpgd_data_idx_read(dpgd_dataset **out, const char *images_path, const char *labels_path,
                       int n_classes)
{
  *out = NULL;
  int st = dpgd_data_check_classes(n_classes);
  if (st) return st;
  dpgd_data_idx *img = NULL, *lab = NULL;
  if ((st = dpgd_data_idx_read_file(&img, images_path, 3))) goto done;
  if ((st = dpgd_data_idx_read_file(&lab, labels_path, 1))) goto done;
  if (img->dims[0] != lab->dims[0]) {
    st = DPGD_FAIL(DPGD_EFORMAT, "%s holds %zu images but %s holds %zu labels", images_path,
                   img->dims[0], labels_path, lab->dims[0]);
    goto done;
  }
  for (size_t i = 0; i < lab->size; i++) {
    if (lab->data[i] >= n_classes) {
      st = DPGD_FAIL(DPGD_EFORMAT, "%s: label %u of example %zu is outside 0..%d", labels_path,
                     lab->data[i], i, n_classes - 1);
      goto done;
    }
  }
  *out =
      dpgd_data_wrap(img->data, lab->data, img->dims[0], img->dims[1], img->dims[2], n_classes);
  img->data = lab->data = NULL; /* owned (or already freed) by dpgd_data_wrap */
  if (!*out) st = DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", images_path);
done:
  dpgd_data_idx_free(img);
  dpgd_data_idx_free(lab);
  return st;
}
