/* png_internal.h -- what png.c (the PNG reader) and png_write.c share: libpng's state
 * for one file and its error and warning callbacks. */
#ifndef DPGD_PNG_INTERNAL_H
#define DPGD_PNG_INTERNAL_H

#include <png.h>
#include <stdio.h>

typedef struct dpgd_pngr {
  const char *path;
  FILE *fp;
  png_structp png;
  png_infop info;
  int oom;        /* an allocation libpng asked for failed */
  size_t refused; /* size of an allocation refused as larger than PNG_ALLOC_MAX; 0 */
  char why[160];  /* libpng's error message */
} dpgd_pngr;

/* libpng callbacks; the error pointer is a dpgd_pngr. */
void dpgd_data_png_on_error(png_structp png, png_const_charp msg);
void dpgd_data_png_on_warning(png_structp png, png_const_charp msg);

#endif /* DPGD_PNG_INTERNAL_H */
