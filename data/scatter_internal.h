/* scatter_internal.h -- the scattering workspace shared by scatter.c (the transform)
 * and scatter_filters.c (the Morlet filter bank); private to data/ and its tests. */
#ifndef DPGD_SCATTER_INTERNAL_H
#define DPGD_SCATTER_INTERNAL_H

#include <fftw3.h>

#include "dpgd_data.h"

struct dpgd_scatter {
  size_t M, N;              /* image side */
  int J, L;                 /* scales, angles */
  size_t Mp, Np;            /* padded side (kymatio's compute_padding) */
  size_t pad_top, pad_left; /* reflect padding before the first row / column */
  size_t Mo, No;            /* output side: Mp / 2^J - 2 */
  size_t C;                 /* channels: 1 + J L + L^2 J (J - 1) / 2 */
  double *filters;          /* every filter level in Fourier, real, one slab */
  size_t psi_off[DPGD_SCATTER_MAX_J * DPGD_SCATTER_MAX_L][DPGD_SCATTER_MAX_J];
  size_t phi_off[DPGD_SCATTER_MAX_J];
  fftw_plan fwd[DPGD_SCATTER_MAX_J + 1], bwd[DPGD_SCATTER_MAX_J + 1]; /* side Mp >> r */
  fftw_plan r2c[DPGD_SCATTER_MAX_J + 1];  /* real (rbuf) to half spectrum (half) */
  double *rbuf;                           /* (Mp, Np) */
  fftw_complex *half;                     /* (Mp, Np / 2 + 1) */
  fftw_complex *u0, *u1, *u2, *tmp, *low; /* (Mp, Np) each */
  double *img;                            /* (M, N) */
  double *outd;                           /* (C, Mo, No) */
};

/* The number of resolutions kymatio keeps of a wavelet of scale j:
 * min(j + 1, max(J - 1, 1)). */
int dpgd_scatter_psi_levels(int j, int J);

/* Builds s->filters and the offset tables (s->fwd[0] must exist: the filters are
 * transformed by it). DPGD_ENOMEM on failure. */
int dpgd_scatter_filters_make(dpgd_scatter *s);

#endif /* DPGD_SCATTER_INTERNAL_H */
