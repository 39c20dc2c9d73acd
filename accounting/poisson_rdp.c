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
 * (1-g)^{1-l} E_q|Z-1|^l, E_q(Z-1)^2 <= e^{eps(2)} - 1, E_q|Z-1|^l <= e^{(l-1)eps(l)} + 1. */
static lsum log_add(double g, const double *lm, unsigned a)
{
  double l1 = log1p(-g), lg = log(g);
  lsum s = {0, -INFINITY, 0}; /* the 1, exact */
  double e2 = lm[2];          /* log e^{eps(2)} = eps(2) */
  if (e2 > 0)
    add_term(&s, gsl_sf_lnchoose(a, 2), 2 * lg, -l1,
             e2 > 1 ? e2 + log(-expm1(-e2)) : log(expm1(e2)));
  for (unsigned k = 3; k <= a; k++)
    add_term(&s, gsl_sf_lnchoose(a, k), k * lg, (1.0 - k) * l1, dpgd_acct_logsumexp2(lm[k], 0));
  return s;
}

double dpgd_acct_poisson_rdp_bound(double g, dpgd_acct_rdp_fn base, const void *ctx,
                                   unsigned alpha)
{
  if (!(g >= 0 && g <= 1) || alpha < 2 || alpha > ACCT_POISSON_ALPHA_MAX || !base) return NAN;
  if (g == 0) return 0;
  if (g == 1) return base(alpha, ctx);
  /* lm[l] = (l - 1) eps(l), the log of the bound on E_q[Z^l] */
  double lm[ACCT_POISSON_ALPHA_MAX + 1];
  for (unsigned k = 2; k <= alpha; k++) {
    double e = base(k, ctx);
    if (isnan(e) || e < 0) return NAN;
    lm[k] = (k - 1) * e;
  }
  lsum sa = log_remove(g, lm, alpha), sb = log_add(g, lm, alpha);
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

/* The discrete Gaussian's curve eps(l) = l mu^2 / 2, mu = 1/sigma. */
static double dgauss_curve(double l, const void *ctx)
{
  double s = *(const double *)ctx;
  return l / (2 * s * s);
}

double dpgd_acct_sdgauss_rdp(double q, double sigma, double alpha)
{
  double ai = ceil(alpha - 1e-12);
  if (ai < 2) ai = 2;
  if (ai > ACCT_POISSON_ALPHA_MAX) return INFINITY;
  return dpgd_acct_poisson_rdp_bound(q, dgauss_curve, &sigma, (unsigned)ai);
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
