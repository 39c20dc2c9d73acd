/* wor.c -- subsampling without replacement (accounting/SAMPLING.md): m of n points at
 * each release. Add/remove neighbours: the dominating pairs of Zhu, Dong & Wang 2022,
 * which for the Gaussian are the Poisson-subsampled Gaussian's at q = m/n (exact by the
 * characteristic function; the Laplace's in cf_wor_laplace.c). Replace-one neighbours:
 * the RDP bounds of Wang, Balle & Kasiviswanathan 2019, Theorems 9 and 27 (upper bounds;
 * no dominating pair is known). */
#include <float.h>
#include <math.h>

#include <gsl/gsl_sf_gamma.h>

#include "acct_internal.h"

double dpgd_acct_wor_rate(uint64_t m, uint64_t n)
{
  double dm = (double)m, dn = (double)n;
  double g = dm / dn;
  /* m and n above 2^53 round on conversion: step up by the possible relative error */
  if ((uint64_t)dm != m || (uint64_t)dn != n) g *= 1 + 4 * DBL_EPSILON;
  else if (fma(g, dn, -dm) < 0) g = nextafter(g, INFINITY); /* the quotient rounded down */
  return g > 1 ? 1 : g;
}

static int is_replace(acct_kind k)
{
  return k == ACCT_WOR_RO_GAUSSIAN || k == ACCT_WOR_RO_LAPLACE;
}

int dpgd_acct_replace_one(const dpgd_accountant *a)
{
  for (size_t i = 0; a && i < a->n; i++)
    if (is_replace(a->e[i].kind)) return 1;
  return 0;
}

/* Replace-one and add/remove subsampled entries assume different neighbouring relations:
 * one accountant holds one of them. */
static int check_relation(const dpgd_accountant *a, int replace)
{
  for (size_t i = 0; i < a->n; i++) {
    acct_kind k = a->e[i].kind;
    if (replace ? k == ACCT_SUBSAMPLED || k == ACCT_SDGAUSS || k == ACCT_WOR_AR_LAPLACE
                : is_replace(k))
      return DPGD_FAIL(DPGD_EINVAL,
                       "a replace-one entry (sampling without replacement) cannot be composed "
                       "with a subsampled entry under add/remove neighbours");
  }
  return DPGD_OK;
}

static int check_args(const dpgd_accountant *a, uint64_t m, uint64_t n, double par,
                      const char *name, uint64_t count)
{
  if (!a) return DPGD_FAIL(DPGD_EINVAL, "accountant is NULL");
  if (count < 1) return DPGD_FAIL(DPGD_EINVAL, "count must be >= 1");
  if (!(m >= 1 && m <= n))
    return DPGD_FAIL(DPGD_EINVAL,
                     "sampling without replacement needs 1 <= m <= n (got m = %llu, n = %llu)",
                     (unsigned long long)m, (unsigned long long)n);
  if (!(par > 0) || isinf(par))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be finite and > 0 (got %g)", name, par);
  return DPGD_OK;
}

int dpgd_acct_wor_push(dpgd_accountant *a, acct_kind kind, const double *par, uint64_t count)
{
  if (!a) return DPGD_FAIL(DPGD_EINVAL, "accountant is NULL");
  if (count < 1) return DPGD_FAIL(DPGD_EINVAL, "count must be >= 1");
  int ar = kind == ACCT_WOR_AR_LAPLACE;
  if (!(is_replace(kind) || ar) || !(par[0] > 0 && par[0] <= 1) || !(par[1] > 0) ||
      isinf(par[1]) || (ar && par[0] == 1))
    return DPGD_FAIL(DPGD_EINVAL, "bad without-replacement entry (rate %g, parameter %g)",
                     par[0], par[1]);
  int st = check_relation(a, !ar);
  if (st) return st;
  acct_entry en = {.kind = kind, .count = count, .par = {par[0], par[1]}};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_add_wor_gaussian(dpgd_accountant *a, uint64_t m, uint64_t n, double sigma,
                               dpgd_acct_relation rel, uint64_t count)
{
  int st = check_args(a, m, n, sigma, "noise multiplier sigma", count);
  if (st) return st;
  double g = dpgd_acct_wor_rate(m, n);
  if (rel == DPGD_ACCT_ADD_REMOVE) {
    st = check_relation(a, 0);
    return st ? st : dpgd_acct_add_subsampled_gaussian(a, g, sigma, count);
  }
  if (rel != DPGD_ACCT_REPLACE_ONE) return DPGD_FAIL(DPGD_EINVAL, "unknown relation %d", rel);
  double par[2] = {g, sigma};
  return dpgd_acct_wor_push(a, ACCT_WOR_RO_GAUSSIAN, par, count);
}

int dpgd_acct_add_wor_laplace(dpgd_accountant *a, uint64_t m, uint64_t n, double a0,
                              dpgd_acct_relation rel, uint64_t count)
{
  int st = check_args(a, m, n, a0, "Laplace a = sensitivity/scale", count);
  if (st) return st;
  double g = dpgd_acct_wor_rate(m, n);
  if (rel != DPGD_ACCT_ADD_REMOVE && rel != DPGD_ACCT_REPLACE_ONE)
    return DPGD_FAIL(DPGD_EINVAL, "unknown relation %d", rel);
  double par[2] = {g, a0};
  if (rel == DPGD_ACCT_REPLACE_ONE)
    return dpgd_acct_wor_push(a, ACCT_WOR_RO_LAPLACE, par, count);
  if (g < 1) return dpgd_acct_wor_push(a, ACCT_WOR_AR_LAPLACE, par, count);
  /* m = n: the pairs are the base Laplace's (a pair and its reverse) */
  st = check_relation(a, 0);
  return st ? st : dpgd_acct_add_laplace(a, a0, count);
}

/* ---- the replace-one RDP bound ---- */

/* Largest chi^l moment of the base Gaussian computed for Theorem 27; above it (orders
 * beyond 256) the terms keep Theorem 9's form. */
#define WOR_CHI_LMAX 258

/* The base mechanism's RDP at order j (docs/MATH.md "RDP curves"; +inf for j = INFINITY: the
 * Gaussian has no pure-DP bound, the Laplace's is a0). */
static double base_rdp(const acct_entry *en, double j)
{
  double p = en->par[1];
  if (en->kind == ACCT_WOR_RO_GAUSSIAN) return isinf(j) ? INFINITY : j / (2 * p * p);
  if (isinf(j)) return p;
  return dpgd_acct_laplace_rdp(p, j);
}

/* Upper bounds on log B_l, l = 0, 2, 4, .., lmax, for the base Gaussian (noise multiplier
 * s): B_l = E_Q[(P/Q - 1)^l] = sum_k C(l,k) (-1)^(l-k) e^{k(k-1)/(2 s^2)}, the Pearson-Vajda
 * chi^l divergence of the base's pair (SAMPLING.md). The alternating sum is taken in long
 * double, scaled by e^{-x}, x = lmax(lmax-1)/(2 s^2), with an error bound on every
 * rounding; logb[l/2] = log(sum + error) + x, or +inf where that is not positive or
 * the scaling would underflow (the caller then keeps Theorem 9's term). */
static void gauss_chi_moments(double s, int lmax, double *logb)
{
  long double g[WOR_CHI_LMAX + 1], xmax = (long double)lmax * (lmax - 1) / (2.0L * s * s);
  for (int l = 0; l <= lmax; l += 2) logb[l / 2] = INFINITY;
  if (xmax > 0.9L * (LDBL_MAX_EXP - 1) * 0.6931L) return;
  long double xa = 0;
  for (int k = 0; k <= lmax; k++) {
    long double x = (long double)k * (k - 1) / (2.0L * s * s) - xmax;
    g[k] = expl(x); /* e^{x_k - xmax} <= 1 */
    if (fabsl(x) > xa) xa = fabsl(x);
  }
  logb[0] = 0;
  for (int l = 2; l <= lmax; l += 2) {
    long double c = 1, sum = 0, abs = 0; /* c = C(l, k) by the product recurrence */
    for (int k = 0; k <= l; k++) {
      if (k) c = c * (l - k + 1) / k;
      long double t = c * g[k];
      sum += (l - k) % 2 ? -t : t;
      abs += t;
    }
    /* each term: C(l,k) to 2k ulps, e^x to (|x| + 4) ulps, the product 1 ulp; the sum
     * l + 1 ulps of the absolute sum; underflowed terms below (l + 1) 2^l LDBL_MIN */
    long double err =
        abs * LDBL_EPSILON * (4.0L * l + 4 * xa + 16) + (l + 1) * ldexpl(LDBL_MIN, l);
    long double up = sum + 2 * err;
    double lb = (double)(logl(up) + xmax);
    if (up > 0) logb[l / 2] = lb + fabs(lb) * 4 * DBL_EPSILON + 1e-300;
  }
}

/* Wang, Balle & Kasiviswanathan 2019, Theorem 9, for integer alpha >= 2:
 *   eps'(alpha) <= log(1 + g^2 C(alpha,2) min{4(e^{e2} - 1), e^{e2} min{2, (e^{einf} - 1)^2}}
 *                  + sum_{j=3}^{alpha} g^j C(alpha,j) e^{(j-1) e(j)} min{2, (e^{einf} - 1)^j})
 *                  / (alpha - 1),
 * and never above the base mechanism's own eps(alpha) (Renyi divergence is jointly
 * quasi-convex: the subsampled outputs are a mixture, over coupled subsets, of pairs that
 * are equal or replace-one neighbours of the base). For the Gaussian, each term j >= 3
 * also takes the minimum with their Theorem 27's 4 sqrt(B_{2 floor(j/2)} B_{2 ceil(j/2)})
 * (SAMPLING.md): a bound term by term, so the sum is never above Theorem 9's. Terms in
 * log space, rounded up. */
double dpgd_acct_wor_rdp(const acct_entry *en, double alpha)
{
  if (en->kind == ACCT_WOR_AR_LAPLACE) return dpgd_acct_wl_rdp(en, alpha);
  if (!is_replace(en->kind)) return INFINITY;
  double ai = ceil(alpha - 1e-12);
  if (ai < 2) ai = 2;
  double g = en->par[0], lg = log(g), einf = base_rdp(en, INFINITY);
  double lx = isinf(einf) ? INFINITY : log(expm1(einf)); /* log(e^einf - 1) */
  double e2 = base_rdp(en, 2);
  double t2 = fmin(log(4 * expm1(e2)), e2 + fmin(log(2), 2 * lx));
  double logb[WOR_CHI_LMAX / 2 + 1];
  int lmax = 2 * (int)fmin(ceil(ai / 2), WOR_CHI_LMAX / 2);
  int gauss = en->kind == ACCT_WOR_RO_GAUSSIAN;
  if (gauss) gauss_chi_moments(en->par[1], lmax, logb);
  double s = gsl_sf_lnchoose((unsigned)ai, 2) + 2 * lg + t2;
  for (double j = 3; j <= ai; j++) {
    double t = (j - 1) * base_rdp(en, j) + fmin(log(2), j * lx);
    int lo = 2 * (int)floor(j / 2), hi = 2 * (int)ceil(j / 2);
    if (gauss && hi <= lmax) t = fmin(t, log(4) + 0.5 * (logb[lo / 2] + logb[hi / 2]));
    s = dpgd_acct_logsumexp2(s, gsl_sf_lnchoose((unsigned)ai, (unsigned)j) + j * lg + t);
  }
  double v = log1p(exp(s)) / (ai - 1);
  if (s > 700) v = (s + log1p(exp(-s))) / (ai - 1);
  v = fmin(v, base_rdp(en, ai));
  return v * (1 + 1e-12) + 1e-300;
}
