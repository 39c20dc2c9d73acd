/* poisson_rdp.c -- the RDP of a Poisson-subsampled mechanism from its base mechanism's RDP
 * curve alone, under add/remove neighbours in both directions (docs/MATH.md 18.1), and the
 * Poisson-subsampled multivariate discrete Gaussian built on it (secure DP-SGD). */
#include <float.h>
#include <math.h>

#include <gsl/gsl_sf_gamma.h>

#include "acct_internal.h"

/* A log-sum and what its rounding pad needs: l = log sum_i e^{t_i}; w = log sum_i e^{t_i}
 * mag_i, mag_i the sum of the magnitudes of t_i's parts (t_i's own rounding error is a
 * few ulps of mag_i, a relative error of e^{t_i}); big = the largest |partial sum|. */
typedef struct {
  double l, w, big;
} lsum;

static void add_term(lsum *s, double lc, double lq, double lr, double lz)
{
  if (lz == -INFINITY) return;
  double t = lc + lq + lr + lz, mag = fabs(lc) + fabs(lq) + fabs(lr) + fabs(lz);
  s->l = dpgd_acct_logsumexp2(s->l, t);
  if (mag > 0) s->w = dpgd_acct_logsumexp2(s->w, t + log(mag));
  if (fabs(s->l) > s->big) s->big = fabs(s->l);
}

/* log of the remove-direction sum A (MATH.md 18.1 (a)): E_q[(1 - g + g Z)^a] expanded
 * binomially, E_q[Z^l] <= e^{(l-1) eps(l)}, E_q[Z] = 1. */
static lsum log_remove(double g, const double *lm, unsigned a)
{
  double l1 = log1p(-g), lg = log(g);
  /* l = 0 and 1: (1 - g)^{a-1} (1 + (a-1) g), formed without cancellation */
  lsum s = {-INFINITY, -INFINITY, 0};
  add_term(&s, 0, 0, (a - 1) * l1, log1p((a - 1) * g));
  for (unsigned k = 2; k <= a; k++)
    add_term(&s, gsl_sf_lnchoose(a, k), k * lg, (a - k) * l1, lm[k]);
  return s;
}

/* log of the add-direction bound B (MATH.md 18.1 (b)): 1 + sum_{l>=2} C(a,l) g^l
 * (1-g)^{1-l} E_q|Z-1|^l, lv[l] the log of a bound on E_q|Z-1|^l. */
static lsum log_add(double g, const double *lv, unsigned a)
{
  double l1 = log1p(-g), lg = log(g);
  lsum s = {0, -INFINITY, 0}; /* the 1, exact */
  for (unsigned k = 2; k <= a; k++)
    add_term(&s, gsl_sf_lnchoose(a, k), k * lg, (1.0 - k) * l1, lv[k]);
  return s;
}

/* log(e^x - 1) for x >= 0, without cancellation. */
static double log_expm1(double x) { return x > 1 ? x + log(-expm1(-x)) : log(expm1(x)); }

/* max(A, min(B, C)) of MATH.md 18.1, padded upward, as an RDP value; lm[l] = (l-1) eps(l)
 * and lv[l] (l = 2..a) as above. */
static double bound_from(double g, const double *lm, const double *lv, unsigned alpha)
{
  lsum sa = log_remove(g, lm, alpha), sb = log_add(g, lv, alpha);
  /* C = 1 - g + g e^{(a-1) eps(a)} bounds both directions too (MATH.md 18.1 (c)); A <= C */
  lsum sc = {-INFINITY, -INFINITY, 0};
  add_term(&sc, 0, 0, 0, log1p(-g));
  add_term(&sc, 0, log(g), 0, lm[alpha]);
  if (sc.l < sb.l) sb = sc;
  lsum s = sa.l > sb.l ? sa : sb;
  if (isinf(s.l)) return s.l;
  /* Rounding pad, upward (the private direction): each term's relative error is a few
   * ulps of its parts' magnitudes (weighted mean exp(w - l)), and each of the <= a + 2
   * additions of the log-sum a few ulps of the largest partial sum. */
  double pad = 64 * DBL_EPSILON * (s.w > -INFINITY ? exp(s.w - s.l) : 0) +
               4.0 * (alpha + 4) * DBL_EPSILON * (s.big + fabs(s.l));
  double v = (s.l + pad) / (alpha - 1);
  return v * (1 + 8 * DBL_EPSILON) + DBL_TRUE_MIN;
}

/* lm from the base curve, and the generic lv: E_q(Z-1)^2 = E_q Z^2 - 1 <= e^{eps(2)} - 1;
 * |Z - 1|^l <= Z^l + 1. 0 if the curve is usable. */
static int generic_moments(dpgd_acct_rdp_fn base, const void *ctx, unsigned alpha, double *lm,
                           double *lv)
{
  for (unsigned k = 2; k <= alpha; k++) {
    double e = base(k, ctx);
    if (isnan(e) || e < 0) return -1;
    lm[k] = (k - 1) * e;
    lv[k] =
        k == 2 ? (lm[2] > 0 ? log_expm1(lm[2]) : -INFINITY) : dpgd_acct_logsumexp2(lm[k], 0);
  }
  return 0;
}

double dpgd_acct_poisson_rdp_bound(double g, dpgd_acct_rdp_fn base, const void *ctx,
                                   unsigned alpha)
{
  if (!(g >= 0 && g <= 1) || alpha < 2 || alpha > ACCT_POISSON_ALPHA_MAX || !base) return NAN;
  if (g == 0) return 0;
  if (g == 1) return base(alpha, ctx);
  double lm[ACCT_POISSON_ALPHA_MAX + 2], lv[ACCT_POISSON_ALPHA_MAX + 2];
  if (generic_moments(base, ctx, alpha, lm, lv)) return NAN;
  return bound_from(g, lm, lv, alpha);
}

/* log of an upper bound on G_k(x) = sum_j C(k,j) (-1)^j e^{j(j-1)x/2} (k even): the k-th
 * central moment of the Gaussian likelihood ratio at x = mu^2 (MATH.md 18.1 (d)), summed
 * relative to its largest term; the pad covers the rounding of every term and addition. */
static double log_central_even(unsigned k, double x)
{
  double big = -INFINITY, sum = 0, abs_sum = 0, mag = 0;
  for (unsigned j = 0; j <= k; j++) {
    double t = gsl_sf_lnchoose(k, j) + j * (j - 1.0) * x / 2;
    if (t > big) big = t;
  }
  for (unsigned j = 0; j <= k; j++) {
    double lc = gsl_sf_lnchoose(k, j), a = j * (j - 1.0) * x / 2, t = exp(lc + a - big);
    sum += j % 2 ? -t : t;
    abs_sum += t;
    if (fabs(lc) + fabs(a) + fabs(big) > mag) mag = fabs(lc) + fabs(a) + fabs(big);
  }
  double pad = 8 * (k + 8 + mag) * DBL_EPSILON * abs_sum;
  return big + log((sum > 0 ? sum : 0) + pad);
}

/* The discrete Gaussian's curve eps(l) = l mu^2 / 2, mu = 1/sigma. */
static double dgauss_curve(double l, const void *ctx)
{
  double s = *(const double *)ctx;
  return l / (2 * s * s);
}

/* Central moments G_k are used up to this order (the terms beyond carry g^l and cost
 * O(l) each; the other bounds of E|rho - 1|^l remain there). */
#define SDG_CENTRAL_MAX 32

/* log of a bound on E|rho - 1|^l (l >= 3) from E(rho-1)^2 and E[(rho-1)^2 rho^(l-2)]
 * (MATH.md 18.1 (d)), padded upward. */
static double log_abs_moment(unsigned l, double x)
{
  double d1 = (l - 2.0) * x, l1 = log_expm1(x);
  double l2 =
      (l - 2.0) * (l - 3.0) * x / 2 + dpgd_acct_logsumexp2(2 * log_expm1(d1), 2 * d1 + l1);
  double v = dpgd_acct_logsumexp2(l1, l2);
  return v + 32 * DBL_EPSILON * (1 + fabs(l1) + fabs(l2) + 2 * d1);
}

double dpgd_acct_sdgauss_rdp(double q, double sigma, double alpha)
{
  double ai = ceil(alpha - 1e-12);
  if (ai < 2) ai = 2;
  if (ai > ACCT_POISSON_ALPHA_MAX) return INFINITY;
  unsigned a = (unsigned)ai;
  if (!(q >= 0 && q <= 1) || !(sigma > 0)) return NAN;
  if (q == 0) return 0;
  if (q == 1) return dgauss_curve(a, &sigma);
  double lm[ACCT_POISSON_ALPHA_MAX + 2], lv[ACCT_POISSON_ALPHA_MAX + 2];
  if (generic_moments(dgauss_curve, &sigma, a, lm, lv)) return NAN;
  /* The discrete Gaussian's own moments (MATH.md 18.1 (d)): E|rho - 1|^l, rho the
   * likelihood ratio of the base pair at mu^2 = x <= 1/sigma^2. */
  double x = 1 / (sigma * sigma), ge[SDG_CENTRAL_MAX + 2];
  for (unsigned k = 2; k <= a + 1 && k <= SDG_CENTRAL_MAX + 1; k += 2)
    ge[k] = log_central_even(k, x);
  for (unsigned k = 3; k <= a; k++) {
    double v = log_abs_moment(k, x);
    if (k <= SDG_CENTRAL_MAX)
      v = fmin(v, k % 2 ? (ge[k - 1] + ge[k + 1]) / 2 : ge[k]); /* Cauchy-Schwarz if odd */
    lv[k] = fmin(lv[k], v);
  }
  return bound_from(q, lm, lv, a);
}

int dpgd_acct_add_subsampled_discrete_gaussian(dpgd_accountant *a, double q, double sigma,
                                               uint64_t count)
{
  if (!a) return DPGD_FAIL(DPGD_EINVAL, "accountant is NULL");
  if (count < 1) return DPGD_FAIL(DPGD_EINVAL, "count must be >= 1");
  if (!(q >= 0 && q <= 1))
    return DPGD_FAIL(DPGD_EINVAL, "sampling rate q must lie in [0, 1] (got %g)", q);
  if (!(sigma > 0) || isinf(sigma))
    return DPGD_FAIL(DPGD_EINVAL,
                     "discrete Gaussian noise multiplier sigma must be finite and > 0 "
                     "(got %g)",
                     sigma);
  if (dpgd_acct_replace_one(a))
    return DPGD_FAIL(DPGD_EINVAL, "a subsampled entry under add/remove neighbours cannot be "
                                  "composed with a replace-one entry");
  if (q == 0) return dpgd_acct_add_discrete_gaussian(a, 0, count); /* samples no one */
  if (q == 1) return dpgd_acct_add_discrete_gaussian(a, 1 / sigma, count);
  acct_entry en = {.kind = ACCT_SDGAUSS, .count = count, .par = {q, sigma}};
  return dpgd_acct_push(a, &en);
}
