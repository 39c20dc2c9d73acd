/* test_scatter.c -- the scattering transform (data/scatter*.c) against things it did not
 * compute: kymatio's published test data and kymatio's output on a closed-form image
 * (scatter_kymatio.h, made by scatter_kymatio.py), an independent double-precision
 * evaluation by direct DFTs and spatial subsampling, closed forms of the filters, the
 * Littlewood-Paley sum and translation equivariance (the cache: test_scatter_cache.c). */
#define _GNU_SOURCE
#include <complex.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_data.h"
#include "scatter_kymatio.h"

static double image28(int i, int j)
{
  double r2 = (i - 13.2) * (i - 13.2) + (j - 14.7) * (j - 14.7);
  return exp(-r2 / 40.0) * cos(0.9 * i + 0.4 * j) + 0.25 * sin(0.31 * i * j / 7.0);
}

static double *transform28(const double *img, int J, size_t *dim)
{
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, J, 8);
  assert_non_null(s);
  *dim = dpgd_scatter_dim(s);
  double *out = malloc(*dim * sizeof *out);
  dpgd_scatter_transform_d(s, out, img);
  dpgd_scatter_free(s);
  return out;
}

static void test_shape(void **state)
{
  (void)state;
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, 2, 8);
  assert_non_null(s);
  assert_int_equal(dpgd_scatter_channels(s), 81);
  assert_int_equal(dpgd_scatter_out_rows(s), 7);
  assert_int_equal(dpgd_scatter_out_cols(s), 7);
  assert_int_equal(dpgd_scatter_dim(s), 3969);
  /* 36 x 36 padding (kymatio: ((28 + 4) / 4 + 1) 4): the low-pass has 18 x 18 at res 1 */
  assert_non_null(dpgd_scatter_phi(s, 1));
  assert_null(dpgd_scatter_phi(s, 2));
  assert_null(dpgd_scatter_psi(s, 8, 1)); /* J = 2 keeps one resolution of each wavelet */
  dpgd_scatter_free(s);
  assert_null(dpgd_scatter_alloc(28, 28, 0, 8));
  assert_null(dpgd_scatter_alloc(28, 28, 5, 8)); /* 2^5 > 28 */
  assert_null(dpgd_scatter_alloc(28, 28, 2, 0));
}

/* kymatio's own test data: J = 4 on 32 x 32 (417 channels of 2 x 2; several wavelet
 * resolutions), every 7th coefficient. kymatio stores float32 and builds its filters in
 * float32: agreement to 1e-6 of the largest coefficient. */
static void test_kymatio_npz(void **state)
{
  (void)state;
  dpgd_scatter *s = dpgd_scatter_alloc(32, 32, 4, 8);
  assert_non_null(s);
  assert_int_equal(dpgd_scatter_channels(s), 417);
  size_t dim = dpgd_scatter_dim(s);
  assert_int_equal(dim, 417 * 4);
  double *out = malloc(dim * sizeof *out), big = 0;
  dpgd_scatter_transform_d(s, out, kym_npz_x);
  size_t n = sizeof kym_npz_S / sizeof *kym_npz_S;
  for (size_t k = 0; k < n; k++) big = fmax(big, fabs(kym_npz_S[k]));
  for (size_t k = 0; k < n; k++)
    if (fabs(out[k * KYM_NPZ_STEP] - kym_npz_S[k]) > 1e-6 * big)
      fail_msg("coefficient %zu: %.9g, kymatio %.9g", k * KYM_NPZ_STEP, out[k * KYM_NPZ_STEP],
               kym_npz_S[k]);
  free(out);
  dpgd_scatter_free(s);
}

/* kymatio's numpy frontend on the closed-form 28 x 28 image, J = 2: every 11th value;
 * and the float version rounds the double one. */
static void test_kymatio_28(void **state)
{
  (void)state;
  double img[784];
  float imgf[784];
  for (int i = 0; i < 28; i++)
    for (int j = 0; j < 28; j++) imgf[i * 28 + j] = (float)(img[i * 28 + j] = image28(i, j));
  size_t dim;
  double *out = transform28(img, 2, &dim), big = 0;
  size_t n = sizeof kym_28_S / sizeof *kym_28_S;
  assert_int_equal(n, (dim + KYM_28_STEP - 1) / KYM_28_STEP);
  for (size_t k = 0; k < n; k++) big = fmax(big, fabs(kym_28_S[k]));
  for (size_t k = 0; k < n; k++)
    if (fabs(out[k * KYM_28_STEP] - kym_28_S[k]) > 1e-6 * big)
      fail_msg("coefficient %zu: %.9g, kymatio %.9g", k * KYM_28_STEP, out[k * KYM_28_STEP],
               kym_28_S[k]);
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, 2, 8);
  float *of = malloc(dim * sizeof *of);
  dpgd_scatter_transform(s, of, imgf);
  for (size_t k = 0; k < dim; k++) assert_true(fabs(of[k] - out[k]) <= 1e-6 * big);
  free(of);
  dpgd_scatter_free(s);
  free(out);
}

/* ---- an independent evaluation: direct DFTs, filters from their formulas, and
 * subsampling in space (not by periodisation) ---------------------------------------- */

/* In-place 2-D DFT of a (n, n) array by rows then columns, sign -1 forward, +1 inverse
 * (inverse divided by n^2), O(n^3): no FFT. */
static void dft2(double complex *a, int n, int sign)
{
  double complex *t = malloc((size_t)n * sizeof *t);
  for (int pass = 0; pass < 2; pass++)
    for (int r = 0; r < n; r++) {
      for (int k = 0; k < n; k++) {
        double complex acc = 0;
        for (int m = 0; m < n; m++) {
          double complex v = pass ? a[m * n + r] : a[r * n + m];
          acc += v * cexp(sign * 2 * M_PI * I * (double)(k * m % n) / n);
        }
        t[k] = acc;
      }
      for (int k = 0; k < n; k++) {
        double complex v = sign > 0 ? t[k] / n : t[k];
        if (pass) a[k * n + r] = v;
        else a[r * n + k] = v;
      }
    }
  free(t);
}

/* The Gabor of kymatio's formula in its textbook form: exp(-|D^(1/2) R^-1 u|^2 / (2 sigma^2)
 * + i xi (x cos theta + y sin theta)), periodised over 5 x 5 images, over 2 pi sigma^2 /
 * slant (with kymatio's 3.1415), in double. */
static void gabor_ref(double complex *g, int n, double sigma, double theta, double xi,
                      double slant)
{
  double c = cos(theta), s = sin(theta);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double complex acc = 0;
      for (int ex = -2; ex <= 2; ex++)
        for (int ey = -2; ey <= 2; ey++) {
          double x = i + ex * n, y = j + ey * n;
          double p = c * x + s * y, q = -s * x + c * y; /* R^-1 u */
          acc += cexp(-(p * p + slant * slant * q * q) / (2 * sigma * sigma) +
                      I * xi * (x * cos(theta) + y * sin(theta)));
        }
      g[i * n + j] = acc / (2 * 3.1415 * sigma * sigma / slant);
    }
}

/* Filter in Fourier: real part of the DFT of the Morlet (or of the Gabor when xi = 0). */
static void filter_ref(double *f, int n, double sigma, double theta, double xi, double slant)
{
  double complex *g = malloc((size_t)n * n * sizeof *g), *e = malloc((size_t)n * n * sizeof *e);
  gabor_ref(g, n, sigma, theta, xi, slant);
  if (xi != 0) {
    gabor_ref(e, n, sigma, theta, 0, slant);
    double complex sg = 0, se = 0;
    for (int k = 0; k < n * n; k++) sg += g[k], se += e[k];
    for (int k = 0; k < n * n; k++) g[k] -= sg / se * e[k];
  }
  dft2(g, n, -1);
  for (int k = 0; k < n * n; k++) f[k] = creal(g[k]);
  free(g);
  free(e);
}

/* y (n, n) = x conv h on the n-grid, with h given in Fourier (its low band when the grid
 * is coarser than the filter's: frequencies |k| < n / 2 of the fine grid). */
static void conv_ref(double complex *y, const double complex *x, const double *hf, int nf,
                     int n)
{
  memcpy(y, x, (size_t)n * n * sizeof *y);
  dft2(y, n, -1);
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      int fa = a < n / 2 ? a : a + nf - n, fb = b < n / 2 ? b : b + nf - n;
      y[a * n + b] *= hf[fa * nf + fb];
    }
  dft2(y, n, +1);
}

/* Keeps every k-th sample of (n, n) into (n / k, n / k), modulus when mod. */
static void sub_ref(double complex *y, const double complex *x, int n, int k, int mod)
{
  for (int a = 0; a < n / k; a++)
    for (int b = 0; b < n / k; b++) {
      double complex v = x[a * k * n + b * k];
      y[a * (n / k) + b] = mod ? cabs(v) : v;
    }
}

/* The 7 x 7 low-pass output from a signal u on an (n, n) grid (n = 36 or 18). */
static void out_ref(double *o, const double complex *u, int n, const double *phi)
{
  double complex y[36 * 36], z[81];
  conv_ref(y, u, phi, 36, n);
  sub_ref(z, y, n, n / 9, 0);
  for (int a = 0; a < 7; a++)
    for (int b = 0; b < 7; b++) o[a * 7 + b] = creal(z[(a + 1) * 9 + b + 1]);
}

static void test_independent(void **state)
{
  (void)state;
  double img[784], phi[36 * 36], psi[16][36 * 36];
  for (int i = 0; i < 28; i++)
    for (int j = 0; j < 28; j++) img[i * 28 + j] = image28(i, j) + 0.01 * ((i * 7 + j * 3) % 5);
  size_t dim;
  double *lib = transform28(img, 2, &dim);
  filter_ref(phi, 36, 1.6, 0, 0, 1.0);
  for (int n = 0; n < 16; n++) {
    int j = n / 8, t = n % 8;
    filter_ref(psi[n], 36, 0.8 * (1 << j), (3 - t) * M_PI / 8, 0.75 * M_PI / (1 << j), 0.5);
  }
  double complex x[36 * 36], u1[36 * 36], u1s[36 * 36], u2[36 * 36], u2s[18 * 18];
  for (int a = 0; a < 36; a++) /* reflect padding by 4 (numpy mode 'reflect') */
    for (int b = 0; b < 36; b++) {
      int i = abs(a - 4), j = abs(b - 4);
      if (i > 27) i = 54 - i;
      if (j > 27) j = 54 - j;
      x[a * 36 + b] = img[i * 28 + j];
    }
  double o[49];
  int checks[][3] = {{0, -1, -1}, {1, 0, -1},  {3, -1, -1}, {13, -1, -1},
                     {-1, 5, 10}, {-1, 0, 15}, {-1, 7, 8}};
  for (size_t c = 0; c < sizeof checks / sizeof *checks; c++) {
    int ch = checks[c][0], n1 = checks[c][1], n2 = checks[c][2];
    if (ch == 0) out_ref(o, x, 36, phi);
    else if (ch > 0) { /* first order, n1 = ch - 1 */ int m = ch - 1, k = 1 << (m / 8);
      conv_ref(u1, x, psi[m], 36, 36);
      sub_ref(u1s, u1, 36, k, 1);
      out_ref(o, u1s, 36 / k, phi);
    } else { /* second order: j1 = 0, j2 = 1 */
      conv_ref(u1, x, psi[n1], 36, 36);
      sub_ref(u1, u1, 36, 1, 1);
      conv_ref(u2, u1, psi[n2], 36, 36);
      sub_ref(u2s, u2, 36, 2, 1);
      out_ref(o, u2s, 18, phi);
      ch = 17 + n1 * 8 + (n2 - 8);
    }
    for (int k = 0; k < 49; k++)
      if (fabs(lib[ch * 49 + k] - o[k]) > 1e-11 * (1 + fabs(o[k])))
        fail_msg("channel %d, position %d: %.17g, independent %.17g", ch, k, lib[ch * 49 + k],
                 o[k]);
  }
  free(lib);
}

/* Closed forms of the bank: phi_hat(0) = sum of the Gaussian / (2 3.1415 sigma^2) =
 * pi / 3.1415 (the periodised Gaussian sums to 2 pi sigma^2 to far below 1e-12 for sigma
 * 1.6 on 36 x 36); every Morlet has zero mean; phi is even (real, symmetric spectrum). */
static void test_filter_closed_forms(void **state)
{
  (void)state;
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, 2, 8);
  const double *phi = dpgd_scatter_phi(s, 0);
  assert_true(fabs(phi[0] - M_PI / 3.1415) < 1e-12);
  for (int n = 0; n < 16; n++) assert_true(fabs(dpgd_scatter_psi(s, n, 0)[0]) < 1e-12);
  for (int a = 0; a < 36; a++)
    for (int b = 0; b < 36; b++)
      assert_true(fabs(phi[a * 36 + b] - phi[(36 - a) % 36 * 36 + (36 - b) % 36]) < 1e-14);
  /* res 1 keeps the low band: phi_1[a][b] = phi[a'][b'] with a' = a (a < 9), a + 18 */
  const double *phi1 = dpgd_scatter_phi(s, 1);
  for (int a = 0; a < 18; a++)
    for (int b = 0; b < 18; b++)
      assert_true(phi1[a * 18 + b] == phi[(a < 9 ? a : a + 18) * 36 + (b < 9 ? b : b + 18)]);
  dpgd_scatter_free(s);
}

/* Littlewood-Paley: A(w) = phi(w)^2 + sum_n (psi_n(w)^2 + psi_n(-w)^2) / 2 over the 36 x 36
 * grid, its range equal to that of kymatio's bank; and the energy of one wavelet layer
 * between A_min and A_max times the padded signal's (Parseval). */
static void test_littlewood_paley(void **state)
{
  (void)state;
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, 2, 8);
  const double *phi = dpgd_scatter_phi(s, 0);
  double lo = INFINITY, hi = 0, A[36 * 36];
  for (int a = 0; a < 36; a++)
    for (int b = 0; b < 36; b++) {
      int k = a * 36 + b, m = (36 - a) % 36 * 36 + (36 - b) % 36;
      double t = phi[k] * phi[k];
      for (int n = 0; n < 16; n++) {
        const double *p = dpgd_scatter_psi(s, n, 0);
        t += 0.5 * (p[k] * p[k] + p[m] * p[m]);
      }
      A[k] = t;
      lo = fmin(lo, t);
      hi = fmax(hi, t);
    }
  assert_true(fabs(lo - KYM_LP_MIN) < 1e-6 && fabs(hi - KYM_LP_MAX) < 1e-6);
  /* A real signal's spectrum is conjugate-symmetric, so its energy in the wavelet
   * layer is sum_w |x(w)|^2 A(w) / 36^2 exactly: check the bounds through it. */
  double complex x[36 * 36];
  double ex = 0, el = 0;
  for (int k = 0; k < 36 * 36; k++) x[k] = sin(0.37 * k) + 0.5 * cos(0.011 * k * k);
  for (int k = 0; k < 36 * 36; k++) ex += creal(x[k]) * creal(x[k]);
  dft2(x, 36, -1);
  for (int k = 0; k < 36 * 36; k++) el += cabs(x[k]) * cabs(x[k]) * A[k] / (36.0 * 36.0);
  assert_true(el >= lo * ex * (1 - 1e-12) && el <= hi * ex * (1 + 1e-12));
  dpgd_scatter_free(s);
}

/* A digit-like blob with zero border, shifted by 4 = 2^J pixels: every channel's map moves
 * by one output position. Exact away from the borders up to the low-pass's tails. */
static void test_translation(void **state)
{
  (void)state;
  double a[784] = {0}, b[784] = {0};
  for (int i = 6; i < 22; i++)
    for (int j = 4; j < 18; j++) {
      double v = exp(-((i - 14) * (i - 14) + (j - 11) * (j - 11)) / 12.0) * (1 + 0.3 * sin(i));
      a[i * 28 + j] = v;
      b[i * 28 + j + 4] = v;
    }
  size_t dim;
  double *sa = transform28(a, 2, &dim), *sb = transform28(b, 2, &dim);
  double err = 0, norm = 0, inv = 0, suma = 0;
  for (int c = 0; c < 81; c++) {
    double ta = 0, tb = 0;
    for (int r = 0; r < 7; r++) {
      for (int q = 1; q < 5; q++) { /* interior columns, shifted by one */
        double d = sb[c * 49 + r * 7 + q + 1] - sa[c * 49 + r * 7 + q];
        err += d * d;
        norm += sa[c * 49 + r * 7 + q] * sa[c * 49 + r * 7 + q];
      }
      for (int q = 0; q < 7; q++) ta += sa[c * 49 + r * 7 + q], tb += sb[c * 49 + r * 7 + q];
    }
    inv += fabs(ta - tb);
    suma += fabs(ta);
  }
  assert_true(norm > 0);
  if (sqrt(err / norm) > 0.02) fail_msg("shift error %.3g", sqrt(err / norm));
  if (inv / suma > 0.05) fail_msg("channel sums moved by %.3g", inv / suma);
  /* a shift by 2 (not a multiple of 2^J) is not one output position: the test can fail */
  double c2[784] = {0};
  for (int i = 0; i < 28; i++)
    for (int j = 2; j < 28; j++) c2[i * 28 + j] = a[i * 28 + j - 2];
  double *sc = transform28(c2, 2, &dim), e2 = 0;
  for (int c = 0; c < 81; c++)
    for (int r = 0; r < 7; r++)
      for (int q = 1; q < 5; q++) {
        double d = sc[c * 49 + r * 7 + q + 1] - sa[c * 49 + r * 7 + q];
        e2 += d * d;
      }
  assert_true(sqrt(e2 / norm) > 10 * sqrt(err / norm));
  free(sa);
  free(sb);
  free(sc);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape),
      cmocka_unit_test(test_kymatio_npz),
      cmocka_unit_test(test_kymatio_28),
      cmocka_unit_test(test_independent),
      cmocka_unit_test(test_filter_closed_forms),
      cmocka_unit_test(test_littlewood_paley),
      cmocka_unit_test(test_translation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
