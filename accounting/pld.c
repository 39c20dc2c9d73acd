/* pld.c -- the privacy-loss-distribution (PLD) path of the exact method: the rounded-up
 * pmfs of pld_pmf.c composed by one real FFT over a window of the composed loss, and
 * delta(eps) or eps(delta) read off with the infinite mass, the aliasing bound and a
 * bound on the FFT's rounding error added. Derivation and sources: accounting/PLD.md. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fft_halfcomplex.h>
#include <gsl/gsl_fft_real.h>

#include "pld_internal.h"

/* The composition in one direction on the grid indices [a, a + N): after the suffix sums,
 * A_i = sum_{j >= i} c_j and B_i = sum_{j >= i} c_j e^{-(j - i) h} of its masses c. */
typedef struct {
  size_t N;
  int64_t a, lo; /* window start; lowest index of the composed support */
  double h;
  uint64_t K;
  double *A, *B;       /* (N) each */
  double alias_hi;     /* bound on the mass above the window, folded down */
  double alias_lo;     /* bound on the mass below the window, folded up */
  double add_hi;       /* infinite mass + aliasing from above + FFT bound */
  double sub_fft, low; /* aliasing from below + FFT bound; sum k (f_low + eta) */
  double shift;        /* sum k gamma: the lower bound's shift of eps */
  double lo_scale;     /* prod (1 + rho)^-k: the pmf's relative excess over the truth */
} composed;

/* The smallest 2^i 3^j 5^k >= n (sizes GSL's mixed-radix FFT factors fully). */
static size_t good_size(size_t n)
{
  size_t best = SIZE_MAX;
  for (size_t p2 = 1; p2 < 2 * n; p2 *= 2)
    for (size_t p3 = p2; p3 < 2 * n; p3 *= 3)
      for (size_t p5 = p3; p5 < 2 * n; p5 *= 5)
        if (p5 >= n && p5 < best) best = p5;
  return best;
}

/* The window: the whole support of the composed pmf when it fits ACCT_PLD_MAX_N bins (no
 * aliasing), else the part outside which Chernoff bounds leave at most tau on each side
 * (P(S >= b) <= E[e^{lam S}] e^{-lam b}, and the same below with -lam). */
static int choose_window(composed *c, const dpgd_pld_pmf *m, size_t ne, double tau)
{
  int64_t lo = 0, top = 0;
  double dlo = 0, dtop = 0; /* the same in double: the int64 sums must not overflow */
  for (size_t e = 0; e < ne; e++) {
    dlo += (double)m[e].k * fabs((double)m[e].i0);
    dtop += (double)m[e].k * fabs((double)(m[e].i0 + (int64_t)m[e].n - 1));
  }
  if (!(dlo < 0x1p61 && dtop < 0x1p61))
    return DPGD_FAIL(DPGD_ERANGE, "PLD grid h=%g: the composed loss leaves the grid's range",
                     c->h);
  for (size_t e = 0; e < ne; e++) {
    lo += (int64_t)m[e].k * m[e].i0;
    top += (int64_t)m[e].k * (m[e].i0 + (int64_t)m[e].n - 1);
  }
  int64_t ia = lo, ib = top;
  c->alias_lo = c->alias_hi = 0;
  if (c->K > 1) {
    double b = INFINITY, a = -INFINITY;
    for (int i = 0; i < ACCT_PLD_N_LAMBDA; i++) {
      double lam = pow(2, (i - 12) / 2.0), sp = 0, sn = 0;
      for (size_t e = 0; e < ne; e++) {
        sp += (double)m[e].k * dpgd_pld_log_mgf(&m[e], c->h, lam);
        sn += (double)m[e].k * dpgd_pld_log_mgf(&m[e], c->h, -lam);
      }
      b = fmin(b, (sp - log(tau)) / lam);
      a = fmax(a, (log(tau) - sn) / lam);
    }
    if (floor(a / c->h) > (double)lo) ia = (int64_t)floor(a / c->h), c->alias_lo = tau;
    if (ceil(b / c->h) < (double)top) ib = (int64_t)ceil(b / c->h), c->alias_hi = tau;
    if (ib < ia) ib = ia;
  }
  if (!((double)(ib - ia) + 1 <= ACCT_PLD_MAX_N))
    return DPGD_FAIL(DPGD_ERANGE, "PLD grid h=%g needs %.3g bins for the composition", c->h,
                     (double)(ib - ia) + 1);
  c->a = ia, c->lo = lo;
  c->N = good_size((size_t)(ib - ia) + 1);
  return DPGD_OK;
}

/* z^k by binary powering (real and imaginary parts kept apart: no C99 Annex G checks). */
static void cpow_k(double *re, double *im, uint64_t k)
{
  double rr = 1, ri = 0, zr = *re, zi = *im;
  while (k) {
    if (k & 1) {
      double t = rr * zr - ri * zi;
      ri = rr * zi + ri * zr, rr = t;
    }
    k >>= 1;
    if (k) {
      double t = zr * zr - zi * zi;
      zi = 2 * zr * zi, zr = t;
    }
  }
  *re = rr, *im = ri;
}

/* x *= y^k elementwise on GSL's mixed-radix half-complex layout (x[0] real; (x[2i-1],
 * x[2i]) the i-th coefficient; x[N-1] real when N is even); first: x = y^k. */
static void hc_mul_pow(double *x, double *y, uint64_t k, size_t N, int first)
{
  for (size_t i = 0; i <= N / 2; i++) {
    size_t r = i ? 2 * i - 1 : 0, s = 2 * i;
    int real = i == 0 || (N % 2 == 0 && i == N / 2);
    double yr = y[r], yi = real ? 0 : y[s];
    cpow_k(&yr, &yi, k);
    if (first) {
      x[r] = yr;
      if (!real) x[s] = yi;
    } else if (real) {
      x[r] *= yr;
    } else {
      double t = x[r] * yr - x[s] * yi;
      x[s] = x[r] * yi + x[s] * yr, x[r] = t;
    }
  }
}

/* x = the circular convolution of every entry's pmf k times with itself (index j of x
 * holds the composed losses with grid index lo + j mod N); y is scratch. */
static int fft_compose(const composed *c, const dpgd_pld_pmf *m, size_t ne, double *x,
                       double *y)
{
  gsl_fft_real_wavetable *rw = gsl_fft_real_wavetable_alloc(c->N);
  gsl_fft_halfcomplex_wavetable *hw = gsl_fft_halfcomplex_wavetable_alloc(c->N);
  gsl_fft_real_workspace *ws = gsl_fft_real_workspace_alloc(c->N);
  int st = !rw || !hw || !ws ? DPGD_FAIL(DPGD_ENOMEM, "out of memory (FFT of %zu)", c->N) : 0;
  for (size_t e = 0; !st && e < ne; e++) {
    memset(y, 0, c->N * sizeof *y);
    for (size_t j = 0; j < m[e].n; j++) y[j % c->N] += m[e].p[j];
    if (gsl_fft_real_transform(y, 1, c->N, rw, ws))
      st = DPGD_FAIL(DPGD_ERANGE, "FFT of %zu points failed", c->N);
    else hc_mul_pow(x, y, m[e].k, c->N, e == 0);
  }
  if (!st && gsl_fft_halfcomplex_inverse(x, 1, c->N, hw, ws))
    st = DPGD_FAIL(DPGD_ERANGE, "inverse FFT of %zu points failed", c->N);
  gsl_fft_real_wavetable_free(rw);
  gsl_fft_halfcomplex_wavetable_free(hw);
  gsl_fft_real_workspace_free(ws);
  return st;
}

/* Rotates the circular result x into window order (y), clamps it at 0 (the true masses
 * are >= 0, so this only shrinks the error) and forms the suffix sums A (in y) and B (in
 * x). */
static void suffix_sums(composed *c, double *x, double *y)
{
  size_t N = c->N, off = (size_t)((c->a - c->lo) % (int64_t)N);
  for (size_t i = 0; i < N; i++) y[i] = x[(off + i) % N];
  double eh = exp(-c->h), sa = 0, sb = 0;
  for (size_t i = N; i-- > 0;) {
    double v = y[i] > 0 ? y[i] : 0;
    sa += v, sb = v + eh * sb;
    y[i] = sa, x[i] = sb;
  }
  c->A = y, c->B = x;
}

/* The constants of the two bounds (PLD.md sections 3-4): the infinite mass
 * 1 - prod (1 - p_inf)^k, the aliasing bounds, the lower-tail mass moved up into bin 0
 * (P(some release has L <= i0 h) <= sum k f_low, lower bound only) and the FFT bound
 * ||x_computed - x||_2 ||g||_2 <= E2 sqrt(N), E2 = m^K ((K + 1) eta + (6 K + 8 ne) u)
 * max ||p||_2, eta = ACCT_PLD_FFT_ETA u ceil(log2 N), m >= every |FFT(p)_j|. */
static void bound_constants(composed *c, const dpgd_pld_pmf *m, size_t ne)
{
  double lp = 0, low = 0, shift = 0, lr = 0, l2 = 0, u = DBL_EPSILON;
  for (size_t e = 0; e < ne; e++) {
    lp += (double)m[e].k * log1p(-m[e].p_inf);
    low += (double)m[e].k * (m[e].f_low + m[e].ex);
    shift += (double)m[e].k * m[e].shift;
    lr += (double)m[e].k * log1p(m[e].rel);
    l2 = fmax(l2, m[e].l2);
  }
  double inf = -expm1(lp) * (1 + 1e-12);
  double eta = ACCT_PLD_FFT_ETA * u * ceil(log2((double)c->N));
  double mb = 1 + 1e-9 + eta * sqrt((double)c->N) * l2;
  double e2 = exp((double)c->K * log(mb)) *
              (((double)c->K + 1) * eta + (6.0 * (double)c->K + 8.0 * (double)ne) * u) * l2;
  double fft = e2 * sqrt((double)c->N);
  if (!isfinite(fft)) fft = 1;
  c->add_hi = inf + c->alias_hi + fft;
  c->sub_fft = c->alias_lo + fft;
  c->low = low * (1 + 1e-12);
  c->shift = shift * (1 + 1e-12);
  c->lo_scale = exp(-lr * (1 + 1e-12)) * (1 - 1e-12);
}

/* sum over window bins s_i = (a + i) h > t of c_i (1 - e^{t - s_i}), from the suffix
 * sums, rounded up (up) or down by their summation error (4 N + 16) u. */
static double tail_delta(const composed *c, double t, int up)
{
  double r = (4.0 * (double)c->N + 16) * DBL_EPSILON, fi = floor(t / c->h) - (double)c->a;
  if (fi >= (double)c->N) return 0;
  size_t i = fi < 0 ? 0 : (size_t)fi;
  while (i < c->N && (double)(c->a + (int64_t)i) * c->h <= t) i++;
  if (i >= c->N) return 0;
  double s = (double)(c->a + (int64_t)i) * c->h, w = exp(t - s);
  double v = up ? c->A[i] * (1 + r) - w * c->B[i] * (1 - r)
                : c->A[i] * (1 - r) - w * c->B[i] * (1 + r);
  return v > 0 ? v : 0;
}

/* Upper bound: the composed connect-the-dots pmf (with its infinite mass). Lower bound:
 * each release's curve is at most the truth's shifted by gamma plus eta, so the truth's
 * delta(eps) >= the finite pmf's delta(eps + sum k gamma) - sum k (eta + f_low)
 * (PLD.md section 3). */
static double delta_hi(const composed *c, double eps)
{
  return fmin(1, c->add_hi + tail_delta(c, eps, 1));
}

static double delta_lo(const composed *c, double eps)
{
  double t = tail_delta(c, eps + c->shift, 0) - c->sub_fft;
  return fmax(0, t * c->lo_scale - c->low);
}

/* The smallest eps >= 0 with delta_hi(eps) <= delta (hi) or the largest eps known to have
 * delta_lo(eps) > delta (lo; 0 if none): bisection (both are non-increasing). +inf when
 * delta_hi never comes down to delta. */
static double solve_eps(const composed *c, double delta, int hi)
{
  double (*f)(const composed *, double) = hi ? delta_hi : delta_lo;
  if (f(c, 0) <= delta) return 0;
  double lo = 0, up = (double)(c->a + (int64_t)c->N) * c->h + c->shift + 1;
  if (f(c, up) > delta) return INFINITY;
  for (int i = 0; i < 400 && up - lo > 4 * DBL_EPSILON * up; i++) {
    double mid = 0.5 * (lo + up);
    if (f(c, mid) <= delta) up = mid;
    else lo = mid;
  }
  return hi ? up : lo;
}

/* The entries' pmfs in direction dir (Gaussians of mu = 0 carry no loss and are left
 * out); *ne gets their number and c->K their releases. */
static int build_pmfs(const dpgd_accountant *a, int dir, composed *c, double tau, double dref,
                      dpgd_pld_pmf *m, size_t *ne)
{
  c->K = 0;
  for (size_t i = 0; i < a->n; i++)
    if (!(a->e[i].kind == ACCT_GAUSSIAN && a->e[i].par[0] == 0)) c->K += a->e[i].count;
  *ne = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (a->e[i].kind == ACCT_GAUSSIAN && a->e[i].par[0] == 0) continue;
    double t = tau / (double)c->K;
    int st = dpgd_pld_pmf_build(&m[*ne], &a->e[i], dir, c->h, t, t, dref, ACCT_PLD_MAX_N);
    if (st) return st;
    (*ne)++;
  }
  return DPGD_OK;
}

/* One direction: eps(x) (want_eps) or delta(x), both bounds. */
static int run_dir(const dpgd_accountant *a, int dir, double h, double tau, double dref,
                   int want_eps, double x, dpgd_pld_bracket *out)
{
  composed c = {.h = h};
  size_t ne = 0;
  dpgd_pld_pmf *m = calloc(a->n ? a->n : 1, sizeof *m);
  double *bx = NULL, *by = NULL;
  int st = m ? build_pmfs(a, dir, &c, tau, dref, m, &ne)
             : DPGD_FAIL(DPGD_ENOMEM, "out of memory (PLD entries)");
  if (!st && ne == 0) out->hi = out->lo = 0;
  if (!st && ne > 0) st = choose_window(&c, m, ne, tau);
  if (!st && ne > 0) {
    bx = malloc(c.N * sizeof *bx), by = malloc(c.N * sizeof *by);
    if (!bx || !by) st = DPGD_FAIL(DPGD_ENOMEM, "out of memory (PLD of %zu bins)", c.N);
    if (!st) st = fft_compose(&c, m, ne, bx, by);
  }
  if (!st && ne > 0) {
    suffix_sums(&c, bx, by);
    bound_constants(&c, m, ne);
    if (want_eps) {
      out->hi = solve_eps(&c, x, 1), out->lo = solve_eps(&c, x, 0);
      if (isinf(out->hi))
        st = DPGD_FAIL(DPGD_ERANGE,
                       "PLD: the infinite, aliased and FFT-rounding mass exceed delta");
    } else {
      out->hi = delta_hi(&c, x), out->lo = delta_lo(&c, x);
    }
  }
  for (size_t e = 0; m && e < ne; e++) dpgd_pld_pmf_free(&m[e]);
  free(m), free(bx), free(by);
  return st;
}

int dpgd_pld_run(const dpgd_accountant *a, int dir, double h, double tau, double dref,
                 int want_eps, double x, dpgd_pld_bracket *out)
{
  return run_dir(a, dir, h, tau, dref, want_eps, x, out);
}
