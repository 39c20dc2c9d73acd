/* png.c -- PNG-folder datasets in the mnist_png layout (split/<label>/<index>.png):
 * listing and validating the folder, then decoding each image with libpng.
 * libpng reports errors by longjmp; every function that calls into libpng arms its
 * own setjmp and nothing it allocates lives in locals across it, so an error in any
 * file unwinds through one cleanup path (png_close) without leaks. */
#include <dirent.h>
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_internal.h"
#include "png_internal.h"

/* Index values above this are rejected as file names (and keep index + 1 exact). */
#define MAX_INDEX 1000000000000ull

typedef struct entry {
  size_t index; /* from the file name */
  int label;    /* from the folder name */
} entry;

/* ---- listing ------------------------------------------------------------------- */

/* Parses a decimal number without sign or leading zeros from [s, s + len). */
static int parse_decimal(unsigned long long *v, const char *s, size_t len)
{
  if (len == 0 || len > 13 || (s[0] == '0' && len > 1)) return 0;
  unsigned long long x = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    x = 10 * x + (unsigned long long)(s[i] - '0');
  }
  if (x > MAX_INDEX) return 0;
  *v = x;
  return 1;
}

static int join(char *buf, size_t len, const char *a, const char *b)
{
  int k = snprintf(buf, len, "%s/%s", a, b);
  if (k < 0 || (size_t)k >= len) return DPGD_FAIL(DPGD_EINVAL, "path too long: %s/%s", a, b);
  return DPGD_OK;
}

/* Appends the files of one label folder to *list. */
static int list_label(entry **list, size_t *n, size_t *cap, const char *dir, int label)
{
  char path[4200];
  int st = snprintf(path, sizeof path, "%s/%d", dir, label) >= (int)sizeof path
               ? DPGD_FAIL(DPGD_EINVAL, "path too long: %s", dir)
               : DPGD_OK;
  if (st) return st;
  DIR *d = opendir(path);
  if (!d) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", path, strerror(errno));
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(e->d_name);
    unsigned long long idx;
    if (len < 5 || strcmp(e->d_name + len - 4, ".png") != 0 ||
        !parse_decimal(&idx, e->d_name, len - 4)) {
      st = DPGD_FAIL(DPGD_EFORMAT,
                     "%s/%s: unexpected file name (expected <index>.png, index a decimal "
                     "number without leading zeros)",
                     path, e->d_name);
      break;
    }
    if (*n == *cap) {
      size_t c = *cap ? 2 * *cap : 256;
      entry *grown = realloc(*list, c * sizeof *grown);
      if (!grown) {
        st = DPGD_FAIL(DPGD_ENOMEM, "out of memory listing %s", path);
        break;
      }
      *list = grown;
      *cap = c;
    }
    (*list)[(*n)++] = (entry){(size_t)idx, label};
  }
  closedir(d);
  return st;
}

static int by_index(const void *a, const void *b)
{
  size_t x = ((const entry *)a)->index, y = ((const entry *)b)->index;
  return (x > y) - (x < y);
}

/* Lists split_dir/<label>/<index>.png, sorted by index, duplicates rejected; with
 * contiguous set, indices must be exactly 0..n-1. */
static int list_split(entry **out, size_t *n_out, const char *dir, int n_classes,
                      int contiguous)
{
  *out = NULL;
  *n_out = 0;
  unsigned char seen[256] = {0};
  DIR *d = opendir(dir);
  if (!d) return DPGD_FAIL(DPGD_EIO, "cannot open PNG folder %s: %s", dir, strerror(errno));
  int st = DPGD_OK;
  struct dirent *e;
  char path[4200];
  while (!st && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    unsigned long long label;
    if (!parse_decimal(&label, e->d_name, strlen(e->d_name)) ||
        label >= (unsigned long long)n_classes) {
      st = DPGD_FAIL(DPGD_EFORMAT,
                     "%s: unexpected entry '%s' (expected label folders "
                     "0..%d)",
                     dir, e->d_name, n_classes - 1);
    } else if (!(st = join(path, sizeof path, dir, e->d_name)) && !dpgd_path_is_dir(path)) {
      st = DPGD_FAIL(DPGD_EFORMAT, "%s is not a folder (expected label folders 0..%d)", path,
                     n_classes - 1);
    } else {
      seen[label] = 1;
    }
  }
  closedir(d);
  entry *list = NULL;
  size_t n = 0, cap = 0;
  for (int k = 0; k < n_classes && !st; k++)
    if (seen[k]) st = list_label(&list, &n, &cap, dir, k);
  if (!st && n == 0) st = DPGD_FAIL(DPGD_EFORMAT, "%s: no PNG images found", dir);
  if (!st) qsort(list, n, sizeof *list, by_index);
  for (size_t i = 1; i < n && !st; i++)
    if (list[i].index == list[i - 1].index)
      st = DPGD_FAIL(DPGD_EFORMAT, "%s: index %zu appears twice (%d/%zu.png and %d/%zu.png)",
                     dir, list[i].index, list[i - 1].label, list[i].index, list[i].label,
                     list[i].index);
  for (size_t i = 0; i < n && !st && contiguous; i++)
    if (list[i].index != i)
      st = DPGD_FAIL(DPGD_EFORMAT,
                     "%s: gap in the indices: %zu.png is missing (found %zu images, "
                     "indices up to %zu); a sample with gaps must be read as sparse "
                     "(--sparse)",
                     dir, i, n, list[n - 1].index);
  if (st) {
    free(list);
    return st;
  }
  *out = list;
  *n_out = n;
  return DPGD_OK;
}

/* ---- decoding one PNG ------------------------------------------------------------ */

/* libpng's error callback (the message into r->why, then back to the setjmp) and its
 * warning callback (warnings -- unknown chunks, odd gamma -- do not change the pixels);
 * png_write.c uses them too. */
void dpgd_data_png_on_error(png_structp png, png_const_charp msg)
{
  dpgd_pngr *r = png_get_error_ptr(png);
  snprintf(r->why, sizeof r->why, "%s", msg);
  png_longjmp(png, 1);
}

void dpgd_data_png_on_warning(png_structp png, png_const_charp msg)
{
  (void)png;
  (void)msg;
}

/* libpng allocates through malloc here so the tests' failure injection reaches it. */
/* The largest single allocation libpng may make for us. Its own buffers for an 8-bit
 * grayscale image at most DPGD_DATA_MAX_SIDE wide are rows and zlib windows of well under
 * a megabyte; but it buffers an ancillary chunk (tEXt, iCCP, ...) at the length the file
 * states, so a 57-byte file could make it ask for 2 GB. */
#define PNG_ALLOC_MAX ((png_alloc_size_t)16 << 20)

static png_voidp on_malloc(png_structp png, png_alloc_size_t size)
{
  if (size > PNG_ALLOC_MAX) {
    ((dpgd_pngr *)png_get_error_ptr(png))->refused = size;
    return NULL;
  }
  void *p = malloc(size);
  if (!p) ((dpgd_pngr *)png_get_error_ptr(png))->oom = 1;
  return p;
}

static void on_free(png_structp png, png_voidp p)
{
  (void)png;
  free(p);
}

static int libpng_failed(dpgd_pngr *r)
{
  if (r->refused)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: corrupt PNG (a chunk asks for %zu bytes, over %d MB)",
                     r->path, r->refused, (int)(PNG_ALLOC_MAX >> 20));
  if (r->oom) return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory decoding PNG", r->path);
  return DPGD_FAIL(DPGD_EFORMAT, "%s: truncated or corrupt PNG (libpng: %s)", r->path, r->why);
}

static void png_close(dpgd_pngr *r)
{
  if (r->png) png_destroy_read_struct(&r->png, r->info ? &r->info : NULL, NULL);
  if (r->fp) fclose(r->fp);
  r->png = NULL;
  r->info = NULL;
  r->fp = NULL;
}

static const char *colour_name(int type)
{
  switch (type) {
  case PNG_COLOR_TYPE_GRAY_ALPHA: return "grayscale with alpha";
  case PNG_COLOR_TYPE_PALETTE: return "palette (indexed colour)";
  case PNG_COLOR_TYPE_RGB: return "RGB colour";
  case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA colour";
  default: return "unknown colour type";
  }
}

/* Opens path and reads the PNG header: must be 8-bit grayscale. Gives the size.
 * Call png_close afterwards whatever the result. */
static int png_open(dpgd_pngr *r, const char *path, size_t *rows, size_t *cols)
{
  memset(r, 0, sizeof *r);
  r->path = path;
  r->fp = fopen(path, "rb");
  if (!r->fp) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", path, strerror(errno));
  png_byte sig[8];
  size_t k = fread(sig, 1, sizeof sig, r->fp);
  if (ferror(r->fp)) return DPGD_FAIL(DPGD_EIO, "read error on %s: %s", path, strerror(errno));
  if (k < sizeof sig && k > 0 && png_sig_cmp(sig, 0, k) == 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: truncated PNG (%zu bytes)", path, k);
  if (k < sizeof sig || png_sig_cmp(sig, 0, sizeof sig) != 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: not a PNG file (no PNG signature)", path);
  r->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, r, dpgd_data_png_on_error,
                                    dpgd_data_png_on_warning, r, on_malloc, on_free);
  if (!r->png) return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory starting libpng", path);
  r->info = png_create_info_struct(r->png);
  if (!r->info) return DPGD_FAIL(DPGD_ENOMEM, "%s: out of memory starting libpng", path);
  if (setjmp(png_jmpbuf(r->png))) return libpng_failed(r);
  png_init_io(r->png, r->fp);
  png_set_sig_bytes(r->png, (int)sizeof sig);
  png_set_user_limits(r->png, DPGD_DATA_MAX_SIDE, DPGD_DATA_MAX_SIDE);
  png_read_info(r->png, r->info);
  png_uint_32 w, h;
  int depth, type;
  png_get_IHDR(r->png, r->info, &w, &h, &depth, &type, NULL, NULL, NULL);
  if (type != PNG_COLOR_TYPE_GRAY)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: %s image, expected 8-bit grayscale", path,
                     colour_name(type));
  if (depth != 8)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: %d-bit grayscale, expected 8-bit grayscale", path,
                     depth);
  *rows = h;
  *cols = w;
  return DPGD_OK;
}

/* Decodes the pixels of an opened PNG into dst (rows, cols) and reads to IEND, so
 * a file truncated after its image data is still caught. */
static int png_pixels(dpgd_pngr *r, uint8_t *dst /* (rows, cols) */, size_t rows, size_t cols)
{
  if (setjmp(png_jmpbuf(r->png))) return libpng_failed(r);
  /* Interlaced files are decoded pass by pass into the same rows (libpng combines). */
  int passes = png_set_interlace_handling(r->png);
  png_read_update_info(r->png, r->info);
  for (int p = 0; p < passes; p++)
    for (size_t y = 0; y < rows; y++) png_read_row(r->png, dst + y * cols, NULL);
  png_read_end(r->png, NULL);
  return DPGD_OK;
}

/* ---- the split ------------------------------------------------------------------- */

/* Reads image i of n from path into *ds, allocating *ds (n images of the first one's
 * size) when i == 0; later images must have that size (first names the file that set
 * it). The label is left to the caller. */
static int read_image(dpgd_dataset **ds, size_t i, size_t n, int n_classes, const char *path,
                      const char *first)
{
  dpgd_pngr r;
  size_t h, w;
  int st = png_open(&r, path, &h, &w);
  if (!st && i == 0) {
    *ds = dpgd_data_alloc(n, h, w, n_classes);
    if (!*ds) st = DPGD_FAIL(DPGD_ENOMEM, "out of memory for %zu images like %s", n, path);
  } else if (!st && (h != (*ds)->rows || w != (*ds)->cols)) {
    st = DPGD_FAIL(DPGD_EFORMAT, "%s: image is %zu x %zu, expected %zu x %zu like %s", path, h,
                   w, (*ds)->rows, (*ds)->cols, first);
  }
  if (!st) st = png_pixels(&r, (*ds)->pixels + i * (*ds)->d, h, w);
  png_close(&r);
  return st;
}

static int read_split(dpgd_dataset **out, size_t **index, const char *dir, int n_classes,
                      int contiguous)
{
  *out = NULL;
  if (index) *index = NULL;
  int st = dpgd_data_check_classes(n_classes);
  if (st) return st;
  entry *list;
  size_t n;
  if ((st = list_split(&list, &n, dir, n_classes, contiguous))) return st;
  dpgd_dataset *ds = NULL;
  char first[4200] = "", path[4200];
  for (size_t i = 0; i < n && !st; i++) {
    int k = snprintf(path, sizeof path, "%s/%d/%zu.png", dir, list[i].label, list[i].index);
    if (k < 0 || (size_t)k >= sizeof path) {
      st = DPGD_FAIL(DPGD_EINVAL, "path too long: %s", dir);
      break;
    }
    if (i == 0) snprintf(first, sizeof first, "%s", path);
    st = read_image(&ds, i, n, n_classes, path, first);
    if (!st) ds->labels[i] = (uint8_t)list[i].label;
  }
  if (!st && index) {
    *index = malloc(n * sizeof **index);
    if (!*index) st = DPGD_FAIL(DPGD_ENOMEM, "out of memory listing %s", dir);
    for (size_t i = 0; i < n && !st; i++) (*index)[i] = list[i].index;
  }
  free(list);
  if (st) {
    dpgd_data_free(ds);
    return st;
  }
  *out = ds;
  return DPGD_OK;
}

int dpgd_data_png_read(dpgd_dataset **out, const char *split_dir, int n_classes)
{
  return read_split(out, NULL, split_dir, n_classes, 1);
}

int dpgd_data_png_read_sparse(dpgd_dataset **out, size_t **index, const char *split_dir,
                              int n_classes)
{
  return read_split(out, index, split_dir, n_classes, 0);
}

int dpgd_data_png_read_files(dpgd_dataset **out, const char *const *paths, size_t n,
                             int n_classes)
{
  *out = NULL;
  int st = dpgd_data_check_classes(n_classes);
  if (st) return st;
  if (!n) return DPGD_FAIL(DPGD_EINVAL, "no PNG file given");
  dpgd_dataset *ds = NULL;
  for (size_t i = 0; i < n && !st; i++) {
    st = read_image(&ds, i, n, n_classes, paths[i], paths[0]);
    if (!st) ds->labels[i] = 0;
  }
  if (st) {
    dpgd_data_free(ds);
    return st;
  }
  *out = ds;
  return DPGD_OK;
}
