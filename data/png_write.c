/* png_write.c -- writes one example of a dataset as an 8-bit grayscale PNG (libpng), the
 * format dpgd predict and the PNG folder readers take: `dpgd data png` makes images to
 * classify from an IDX dataset. The file is written to PATH.tmp and renamed. */
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "data_internal.h"
#include "png_internal.h"

/* libpng's part: the header and the rows into fp. 0, or -1 with w->why set. */
static int encode(FILE *fp, dpgd_pngr *w, const uint8_t *pixels, size_t rows, size_t cols)
{
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w, dpgd_data_png_on_error,
                                            dpgd_data_png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    snprintf(w->why, sizeof w->why, "out of memory");
    png_destroy_write_struct(&png, NULL);
    return -1;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return -1;
  }
  png_init_io(png, fp);
  png_set_IHDR(png, info, (png_uint_32)cols, (png_uint_32)rows, 8, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (size_t r = 0; r < rows; r++) png_write_row(png, (png_const_bytep)(pixels + r * cols));
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return 0;
}

int dpgd_data_png_write(const char *path, const dpgd_dataset *ds, size_t i)
{
  if (!ds || i >= ds->n)
    return DPGD_FAIL(DPGD_EINVAL, "%s: example %zu of %zu does not exist", path, i,
                     ds ? ds->n : 0);
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return DPGD_FAIL(DPGD_EINVAL, "path too long: %s", path);
  FILE *fp = fopen(tmp, "wb");
  if (!fp) return DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", tmp, strerror(errno));
  dpgd_pngr w = {0};
  int bad = encode(fp, &w, ds->pixels + i * ds->d, ds->rows, ds->cols);
  bad |= fflush(fp) != 0 || ferror(fp);
  int close_bad = fclose(fp) != 0;
  if (bad || close_bad || rename(tmp, path) != 0) {
    remove(tmp);
    return DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", path, w.why[0] ? w.why : strerror(errno));
  }
  return DPGD_OK;
}
