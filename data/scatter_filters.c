/* scatter_filters.c -- the filter bank of the scattering transform, in Fourier, as
 * kymatio's filter_bank builds it (kymatio/scattering2d/filter_bank.py): Morlet wavelets
 * psi_{j, theta} and the Gabor low-pass phi_J, sampled on the padded grid with 5 x 5
 * periodic images, their real DFTs, and their crops to coarser resolutions. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scatter_internal.h"

/* kymatio divides its Gabor by 2 * 3.1415 * sigma^2 / slant: the constant 3.1415, not pi,
 * so that the coefficients are the ones kymatio publishes. */
#define KYMATIO_PI 3.1415

int dpgd_scatter_psi_levels(int j, int J)
{
  int cap = J - 1 > 1 ? J - 1 : 1;
  return j + 1 < cap ? j + 1 : cap;
}

/* g (M, N) = kymatio's gabor_2d(M, N, sigma, theta, xi, slant): a Gaussian envelope of
 * covariance R diag(1, slant^2) R^T / (2 sigma^2)'s inverse, times e^{i xi (x cos theta + y
 * sin theta)}, summed over the 5 x 5 periodic images of the grid. In double throughout
 * (kymatio holds its rotation and filters in float32: its values agree with these to
 * about 1e-7 of the largest coefficient, docs/SCATTER.md). */
static void gabor(double complex *g, size_t M, size_t N, double sigma, double theta, double xi,
                  double slant)
{
  double c = cos(theta), s = sin(theta), sl2 = slant * slant;
  /* R (D R^-1), R = [c -s; s c], R^-1 = [c s; -s c], D = diag(1, sl2) */
  double dr[2][2] = {{c, s}, {-s * sl2, c * sl2}};
  double r[2][2] = {{c, -s}, {s, c}}, curv[2][2];
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      curv[a][b] = (r[a][0] * dr[0][b] + r[a][1] * dr[1][b]) / (2 * sigma * sigma);
  for (size_t i = 0; i < M * N; i++) g[i] = 0;
  for (int ex = -2; ex <= 2; ex++)
    for (int ey = -2; ey <= 2; ey++)
      for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < N; k++) {
          double x = (double)ex * (double)M + (double)i, y = (double)ey * (double)N + (double)k;
          double re =
              -(curv[0][0] * x * x + (curv[0][1] + curv[1][0]) * x * y + curv[1][1] * y * y);
          double im = x * xi * c + y * xi * s;
          g[i * N + k] += cexp(re + I * im);
        }
  double norm = 2 * KYMATIO_PI * sigma * sigma / slant;
  for (size_t i = 0; i < M * N; i++) g[i] /= norm;
}

/* kymatio's morlet_2d: the Gabor minus K times its envelope, K making the sum zero. */
static void morlet(double complex *w, double complex *env, size_t M, size_t N, double sigma,
                   double theta, double xi, double slant)
{
  gabor(w, M, N, sigma, theta, xi, slant);
  gabor(env, M, N, sigma, theta, 0, slant);
  double complex sw = 0, se = 0;
  for (size_t i = 0; i < M * N; i++) {
    sw += w[i];
    se += env[i];
  }
  double complex K = sw / se;
  for (size_t i = 0; i < M * N; i++) w[i] -= K * env[i];
}

/* out (M >> res, N >> res) = kymatio's periodize_filter_fft(x, res): x with the band
 * [M 2^-(res+1), M 2^-(res+1) + M (1 - 2^-res)) of rows and of columns zeroed (the high
 * frequencies), folded onto the coarse grid. */
static void crop(double *out, const double *x, size_t M, size_t N, int res)
{
  size_t f = (size_t)1 << res, m = M / f, n = N / f;
  size_t sx = (size_t)((double)M * ldexp(1, -res - 1)),
         lx = (size_t)((double)M * (1 - ldexp(1, -res)));
  size_t sy = (size_t)((double)N * ldexp(1, -res - 1)),
         ly = (size_t)((double)N * (1 - ldexp(1, -res)));
  for (size_t k = 0; k < m; k++)
    for (size_t l = 0; l < n; l++) {
      double t = 0;
      for (size_t i = 0; i < f; i++)
        for (size_t j = 0; j < f; j++) {
          size_t a = k + i * m, b = l + j * n;
          int masked = (a >= sx && a < sx + lx) || (b >= sy && b < sy + ly);
          if (!masked) t += x[a * N + b];
        }
      out[k * n + l] = t;
    }
}

/* The real part of the DFT of g (kymatio drops the imaginary part, zero for these
 * filters up to rounding: each is conjugate-symmetric in space). */
static void real_dft(double *out, double complex *g, const dpgd_scatter *s)
{
  fftw_execute_dft(s->fwd[0], (fftw_complex *)g, (fftw_complex *)g);
  for (size_t i = 0; i < s->Mp * s->Np; i++) out[i] = creal(g[i]);
}

int dpgd_scatter_filters_make(dpgd_scatter *s)
{
  const size_t M = s->Mp, N = s->Np, area = M * N;
  const int J = s->J, L = s->L;
  size_t total = 0;
  for (int j = 0; j < J; j++)
    for (int r = 0; r < dpgd_scatter_psi_levels(j, J); r++)
      total += (size_t)L * (area >> 2 * r);
  for (int r = 0; r < J; r++) total += area >> 2 * r;
  s->filters = malloc(total * sizeof *s->filters);
  double complex *g = fftw_malloc(area * sizeof *g), *env = fftw_malloc(area * sizeof *env);
  double *full = malloc(area * sizeof *full);
  int rc = s->filters && g && env && full ? DPGD_OK : DPGD_ENOMEM;
  size_t off = 0;
  for (int n1 = 0; !rc && n1 < J * L; n1++) {
    int j = n1 / L, t = n1 % L;
    double theta = ((int)(L - L / 2.0 - 1) - t) * M_PI / L;
    morlet(g, env, M, N, 0.8 * ldexp(1, j), theta, 3.0 / 4.0 * M_PI / ldexp(1, j), 4.0 / L);
    real_dft(full, g, s);
    for (int r = 0; r < dpgd_scatter_psi_levels(j, J); r++) {
      s->psi_off[n1][r] = off;
      crop(s->filters + off, full, M, N, r);
      off += area >> 2 * r;
    }
  }
  if (!rc) {
    gabor(g, M, N, 0.8 * ldexp(1, J - 1), 0, 0, 1.0);
    real_dft(full, g, s);
    for (int r = 0; r < J; r++) {
      s->phi_off[r] = off;
      crop(s->filters + off, full, M, N, r);
      off += area >> 2 * r;
    }
  }
  fftw_free(g);
  fftw_free(env);
  free(full);
  if (rc) DPGD_FAIL(rc, "no memory for the scattering filters (%zux%zu)", M, N);
  return rc;
}

const double *dpgd_scatter_psi(const dpgd_scatter *s, int n, int res)
{
  if (n < 0 || n >= s->J * s->L || res < 0 || res >= dpgd_scatter_psi_levels(n / s->L, s->J))
    return NULL;
  return s->filters + s->psi_off[n][res];
}

const double *dpgd_scatter_phi(const dpgd_scatter *s, int res)
{
  if (res < 0 || res >= s->J) return NULL;
  return s->filters + s->phi_off[res];
}
