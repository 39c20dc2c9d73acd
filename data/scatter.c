/* scatter.c -- the 2-D scattering transform of order 2 (Mallat; Bruna & Mallat 2013) as
 * kymatio's Scattering2D computes it (Andreux et al., JMLR 2020): reflect padding, FFTs
 * by FFTW3 in double, the Morlet bank of scatter_filters.c, modulus, subsampling by
 * periodisation in Fourier, float output (docs/SCATTER.md). */
#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "scatter_internal.h"

/* FFTW's planner is not thread-safe: every plan is made and destroyed under this lock
 * (a file-local mutex rather than a named OpenMP critical section, which would export a
 * symbol). */
static pthread_mutex_t planner = PTHREAD_MUTEX_INITIALIZER;

static void plans_make(dpgd_scatter *s)
{
  pthread_mutex_lock(&planner);
  for (int r = 0; r <= s->J; r++) {
    int m = (int)(s->Mp >> r), n = (int)(s->Np >> r);
    fftw_complex *b = (fftw_complex *)s->tmp;
    s->fwd[r] = fftw_plan_dft_2d(m, n, b, b, FFTW_FORWARD, FFTW_ESTIMATE);
    s->bwd[r] = fftw_plan_dft_2d(m, n, b, b, FFTW_BACKWARD, FFTW_ESTIMATE);
    s->r2c[r] = fftw_plan_dft_r2c_2d(m, n, s->rbuf, s->half, FFTW_ESTIMATE);
  }
  pthread_mutex_unlock(&planner);
}

void dpgd_scatter_free(dpgd_scatter *s)
{
  if (!s) return;
  pthread_mutex_lock(&planner);
  for (int r = 0; r <= DPGD_SCATTER_MAX_J; r++) {
    if (s->fwd[r]) fftw_destroy_plan(s->fwd[r]);
    if (s->bwd[r]) fftw_destroy_plan(s->bwd[r]);
    if (s->r2c[r]) fftw_destroy_plan(s->r2c[r]);
  }
  pthread_mutex_unlock(&planner);
  fftw_free(s->u0);
  fftw_free(s->u1);
  fftw_free(s->tmp);
  fftw_free(s->low);
  fftw_free(s->u2);
  fftw_free(s->rbuf);
  fftw_free(s->half);
  free(s->filters);
  free(s->outd);
  free(s->img);
  free(s);
}

dpgd_scatter *dpgd_scatter_alloc(size_t rows, size_t cols, int J, int L)
{
  if (J < 1 || J > DPGD_SCATTER_MAX_J || L < 1 || L > DPGD_SCATTER_MAX_L || rows < 2 ||
      cols < 2 || rows > 4096 || cols > 4096 || (size_t)1 << J > rows ||
      (size_t)1 << J > cols) {
    DPGD_FAIL(DPGD_EINVAL,
              "scattering of %zux%zu images with J = %d, L = %d: J must be in 1..%d with 2^J "
              "at most the image side (2..4096), L in 1..%d",
              rows, cols, J, L, DPGD_SCATTER_MAX_J, DPGD_SCATTER_MAX_L);
    return NULL;
  }
  dpgd_scatter *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->M = rows;
  s->N = cols;
  s->J = J;
  s->L = L;
  /* kymatio's compute_padding: the next multiple of 2^J above M + 2^J. */
  size_t k = (size_t)1 << J;
  s->Mp = ((rows + k) / k + 1) * k;
  s->Np = ((cols + k) / k + 1) * k;
  s->pad_top = (s->Mp - rows) / 2;
  s->pad_left = (s->Np - cols) / 2;
  s->Mo = s->Mp / k - 2;
  s->No = s->Np / k - 2;
  s->C = 1 + (size_t)J * L + (size_t)L * L * J * (J - 1) / 2;
  size_t area = s->Mp * s->Np;
  s->u0 = fftw_malloc(area * sizeof(fftw_complex));
  s->u1 = fftw_malloc(area * sizeof(fftw_complex));
  s->tmp = fftw_malloc(area * sizeof(fftw_complex));
  s->low = fftw_malloc(area * sizeof(fftw_complex));
  s->u2 = fftw_malloc(area * sizeof(fftw_complex));
  s->rbuf = fftw_malloc(area * sizeof(double));
  s->half = fftw_malloc(s->Mp * (s->Np / 2 + 1) * sizeof(fftw_complex));
  s->img = malloc(rows * cols * sizeof *s->img);
  s->outd = malloc(s->C * s->Mo * s->No * sizeof *s->outd);
  if (!s->u0 || !s->u1 || !s->tmp || !s->low || !s->u2 || !s->rbuf || !s->half || !s->img ||
      !s->outd) {
    dpgd_scatter_free(s);
    return NULL;
  }
  plans_make(s);
  int ok = 1;
  for (int r = 0; r <= J; r++) ok = ok && s->fwd[r] && s->bwd[r] && s->r2c[r];
  if (!ok || dpgd_scatter_filters_make(s)) {
    dpgd_scatter_free(s);
    return NULL;
  }
  return s;
}

size_t dpgd_scatter_channels(const dpgd_scatter *s) { return s->C; }
size_t dpgd_scatter_out_rows(const dpgd_scatter *s) { return s->Mo; }
size_t dpgd_scatter_out_cols(const dpgd_scatter *s) { return s->No; }
size_t dpgd_scatter_dim(const dpgd_scatter *s) { return s->C * s->Mo * s->No; }

/* out (m/k, n/k) = the mean of the k x k aliases of in (m, n): the spectrum of the
 * signal subsampled by k in space (kymatio's subsample_fourier). out may not alias in. */
static void periodise(double complex *out, const double complex *in, size_t m, size_t n,
                      size_t k)
{
  size_t mo = m / k, no = n / k;
  double w = 1.0 / (double)(k * k);
  for (size_t a = 0; a < mo; a++)
    for (size_t b = 0; b < no; b++) {
      double complex t = 0;
      for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) t += in[(a + i * mo) * n + b + j * no];
      out[a * no + b] = t * w;
    }
}

/* x (m, n) *= f (m, n), a real filter in Fourier. */
static void mul_filter(double complex *out, const double complex *x, const double *f, size_t mn)
{
  for (size_t i = 0; i < mn; i++) out[i] = x[i] * f[i];
}

/* The low-pass output of one channel: spectrum x at resolution r (side Mp >> r) times
 * phi at that resolution, subsampled to Mp / 2^J, back to space (real part, numpy's
 * 1/size normalisation), the one-sample border dropped (kymatio's unpad). */
static void lowpass_out(dpgd_scatter *s, double *out /* (Mo, No) */, const double complex *x,
                        int r)
{
  size_t m = s->Mp >> r, n = s->Np >> r, k = (size_t)1 << (s->J - r);
  double complex *low = (double complex *)s->low;
  mul_filter((double complex *)s->tmp, x, dpgd_scatter_phi(s, r), m * n);
  periodise(low, (const double complex *)s->tmp, m, n, k);
  size_t ms = m / k, ns = n / k;
  fftw_execute_dft(s->bwd[s->J], (fftw_complex *)low, (fftw_complex *)low);
  double w = 1.0 / (double)(ms * ns);
  for (size_t a = 0; a < s->Mo; a++)
    for (size_t b = 0; b < s->No; b++)
      out[a * s->No + b] = creal(low[(a + 1) * ns + b + 1]) * w;
}

/* dst (m, n) = the full spectrum of s->rbuf (m, n) at resolution r: a real-input
 * transform (half the work of a complex one), the other half by conjugate symmetry,
 * X[a][b] = conj(X[-a][-b]). */
static void real_spectrum(dpgd_scatter *s, double complex *dst, int r)
{
  const size_t m = s->Mp >> r, n = s->Np >> r, h = n / 2 + 1;
  const double complex *H = (const double complex *)s->half;
  fftw_execute(s->r2c[r]);
  for (size_t a = 0; a < m; a++) {
    for (size_t b = 0; b < h; b++) dst[a * n + b] = H[a * h + b];
    for (size_t b = h; b < n; b++) dst[a * n + b] = conj(H[(m - a) % m * h + (n - b)]);
  }
}

/* dst (m/k, n/k) = the spectrum of |ifft(periodise(x * psi, k))|: one wavelet modulus,
 * from a spectrum x of side (m, n), in place in dst (which may not alias x). */
static void wavelet_modulus(dpgd_scatter *s, double complex *dst, const double complex *x,
                            const double *psi, size_t m, size_t n, size_t k, int r_out)
{
  double complex *t = (double complex *)s->tmp;
  mul_filter(k > 1 ? t : dst, x, psi, m * n);
  if (k > 1) periodise(dst, t, m, n, k);
  size_t mn = (m / k) * (n / k);
  fftw_execute_dft(s->bwd[r_out], (fftw_complex *)dst, (fftw_complex *)dst);
  double w = 1.0 / (double)mn;
  /* |z| as sqrt(re^2 + im^2): the values are far from overflow, and hypot is slower */
  for (size_t i = 0; i < mn; i++) {
    double re = creal(dst[i]), im = cimag(dst[i]);
    s->rbuf[i] = sqrt(re * re + im * im) * w;
  }
  real_spectrum(s, dst, r_out);
}

/* numpy's pad(mode='reflect'): index i of a side-n signal extended by reflection about
 * its first and last samples (which are not repeated). */
static size_t reflect(long i, long n)
{
  long p = 2 * (n - 1);
  i %= p;
  if (i < 0) i += p;
  return (size_t)(i < n ? i : p - i);
}

void dpgd_scatter_transform_d(dpgd_scatter *s, double *out, const double *img)
{
  const size_t Mp = s->Mp, Np = s->Np, So = s->Mo * s->No;
  double complex *u0 = (double complex *)s->u0, *u1 = (double complex *)s->u1;
  for (size_t a = 0; a < Mp; a++) {
    size_t ia = reflect((long)a - (long)s->pad_top, (long)s->M);
    for (size_t b = 0; b < Np; b++)
      s->rbuf[a * Np + b] = img[ia * s->N + reflect((long)b - (long)s->pad_left, (long)s->N)];
  }
  real_spectrum(s, u0, 0);
  lowpass_out(s, out, u0, 0);
  const int J = s->J, L = s->L;
  size_t ch2 = 1 + (size_t)J * L;
  for (int n1 = 0; n1 < J * L; n1++) {
    int j1 = n1 / L;
    size_t k1 = (size_t)1 << j1;
    wavelet_modulus(s, u1, u0, dpgd_scatter_psi(s, n1, 0), Mp, Np, k1, j1);
    lowpass_out(s, out + (size_t)(1 + n1) * So, u1, j1);
    size_t m1 = Mp >> j1, nn1 = Np >> j1;
    for (int n2 = (j1 + 1) * L; n2 < J * L; n2++) {
      int j2 = n2 / L;
      double complex *d = (double complex *)s->u2;
      wavelet_modulus(s, d, u1, dpgd_scatter_psi(s, n2, j1), m1, nn1, (size_t)1 << (j2 - j1),
                      j2);
      lowpass_out(s, out + ch2++ * So, d, j2);
    }
  }
}

void dpgd_scatter_transform(dpgd_scatter *s, float *out, const float *img)
{
  for (size_t i = 0; i < s->M * s->N; i++) s->img[i] = img[i];
  dpgd_scatter_transform_d(s, s->outd, s->img);
  for (size_t i = 0; i < s->C * s->Mo * s->No; i++) out[i] = (float)s->outd[i];
}
