/* audit_fdp.c -- the f-DP one-run audit bound (Mahloujifar, Melis & Chaudhuri, "Auditing
 * f-Differential Privacy in One Run", ICML 2025, arXiv:2410.22235; train/AUDIT.md
 * "The f-DP bound"): the test of a claimed trade-off curve by v correct guesses out of r
 * among m canaries, and the strongest Gaussian or subsampled-Gaussian claim rejected. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

#include "dpgd_accounting.h"

/* Rejection needs r_0 + h_0 above r/m by this relative margin: the recursion's
 * rounding (a few ulps a step, at most m steps) never turns a non-rejection into one. */
#define FDP_MARGIN 1e-9

int dpgd_audit_fdp_reject(size_t m, size_t r, size_t v, dpgd_audit_curve f, void *ctx,
                          double confidence, int *reject)
{
  *reject = 0;
  if (!(v <= r && r <= m && m > 0) || !(confidence > 0 && confidence < 1))
    return DPGD_FAIL(DPGD_EINVAL,
                     "f-DP audit needs 0 <= v <= r <= m, m > 0 and confidence in (0, 1) "
                     "(m %zu, r %zu, v %zu, confidence %g)",
                     m, r, v, confidence);
  if (r == 0) return DPGD_OK;
  double tau = 1 - confidence, md = (double)m;
  /* Start at i = v: r_v = tau v / m (correct), h_v = tau (r - v) / m (wrong); then
   * for i = v-1 .. 0: h_i = max(h_{i+1}, f(1 - r_{i+1})),
   *                   r_i = r_{i+1} + i / (r - i) (h_i - h_{i+1}). */
  double R = tau * (double)v / md, H = tau * (double)(r - v) / md;
  for (size_t i = v; i-- > 0;) {
    double hn = f(R < 1 ? 1 - R : 0, ctx);
    if (!(hn > H)) break; /* h stays, so r stays: nothing changes any more */
    R += (double)i / (double)(r - i) * (hn - H);
    if (R > 1) R = 1;
    H = hn;
  }
  *reject = R + H > (double)r / md * (1 + FDP_MARGIN);
  return DPGD_OK;
}

/* The mu-GDP curve Phi(Phi^{-1}(1 - a) - mu). */
static double gauss_curve(double a, void *ctx) { return dpgd_gdp_tradeoff(*(double *)ctx, a); }

/* Largest parameter x in [0, x_max] whose claim is rejected, by bisection on a
 * monotone family (a larger x is a weaker claim); 0 when none is. */
typedef int (*family_reject)(double x, void *ctx, int *rej);

static int family_lower(family_reject rej, void *ctx, double x_max, double tol, double *x)
{
  *x = 0;
  int rc, yes;
  double lo = x_max * 1e-9, hi = 1;
  if ((rc = rej(lo, ctx, &yes)) || !yes) return rc;
  for (;;) { /* grow hi until it is not rejected */
    if ((rc = rej(hi, ctx, &yes))) return rc;
    if (!yes) break;
    lo = hi;
    if (hi >= x_max) {
      *x = x_max;
      return DPGD_OK;
    }
    hi = fmin(2 * hi, x_max);
  }
  for (int it = 0; it < 50 && hi - lo > tol * hi; it++) {
    double mid = 0.5 * (lo + hi);
    if ((rc = rej(mid, ctx, &yes))) return rc;
    if (yes) lo = mid;
    else hi = mid;
  }
  *x = lo; /* the rejected side */
  return DPGD_OK;
}

typedef struct {
  size_t m, r, v;
  double confidence;
} counts;

static int gauss_reject(double mu, void *ctx, int *rej)
{
  const counts *c = ctx;
  return dpgd_audit_fdp_reject(c->m, c->r, c->v, gauss_curve, &mu, c->confidence, rej);
}

int dpgd_audit_fdp_mu_lower(size_t m, size_t r, size_t v, double confidence, double *mu)
{
  counts c = {m, r, v, confidence};
  int rej, rc = dpgd_audit_fdp_reject(m, r, v, gauss_curve, &(double){1}, confidence, &rej);
  if (rc) return rc;
  return family_lower(gauss_reject, &c, 40, 1e-7, mu);
}

/* eps at delta of a curve known to be rejected, rounded DOWN: dpgd_gdp_epsilon rounds
 * up by far less than 1e-6 relative (GDP.md), so the lowered value is below the truth. */
static double eps_down(double e) { return e * (1 - 1e-6); }

int dpgd_audit_fdp_eps_lower(size_t m, size_t r, size_t v, double delta, double confidence,
                             double *eps)
{
  *eps = 0;
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "f-DP audit delta %g must lie in (0, 1)", delta);
  double mu;
  int rc = dpgd_audit_fdp_mu_lower(m, r, v, confidence, &mu);
  if (rc || mu <= 0) return rc;
  double e;
  rc = dpgd_gdp_epsilon(mu, delta, &e);
  if (!rc) *eps = eps_down(e);
  return rc;
}

/* ---- a curve from a privacy profile ----------------------------------------------------
 * Every (eps_k, delta_k) the mechanism satisfies gives beta >= 1 - delta_k - e^eps_k a
 * and beta >= e^-eps_k (1 - delta_k - a) (Dong, Roth & Su 2022, Prop. 2.5 / the
 * (eps, delta) trade-off); the maximum over a grid is a trade-off curve BELOW the
 * mechanism's, so a claim it represents is weaker than the true one: rejecting it
 * rejects the true claim. */
#define PROFILE_N 48

typedef struct {
  double eps[PROFILE_N], delta[PROFILE_N];
} profile;

static double profile_curve(double a, void *ctx)
{
  const profile *p = ctx;
  double b = 0;
  for (int k = 0; k < PROFILE_N; k++) {
    double e = p->eps[k], d = p->delta[k];
    double b1 = 1 - d - exp(e) * a, b2 = exp(-e) * (1 - d - a);
    if (b1 > b) b = b1;
    if (b2 > b) b = b2;
  }
  return b;
}

/* The profile of the composition in acct: delta(eps) upper bounds (exact method) at
 * eps = 0 .. eps_max on a grid denser near 0. */
static int profile_fill(profile *p, const dpgd_accountant *acct, double eps_max)
{
  for (int k = 0; k < PROFILE_N; k++) {
    double t = (double)k / (PROFILE_N - 1);
    p->eps[k] = eps_max * t * t;
    dpgd_acct_value d;
    int rc = dpgd_acct_delta(acct, DPGD_ACCT_EXACT, p->eps[k], &d);
    if (rc) return rc;
    p->delta[k] = d.value < 1 ? d.value : 1;
  }
  return DPGD_OK;
}

typedef struct {
  counts c;
  double q, delta;
  uint64_t steps;
  profile prof;
} sg_ctx;

/* The claim of `steps` subsampled Gaussians of rate q and noise multiplier s = 1 / x
 * (x grows: a weaker claim), as its profile curve. */
static int sg_reject(double x, void *vp, int *rej)
{
  sg_ctx *s = vp;
  dpgd_accountant *a = dpgd_acct_alloc();
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  int rc = dpgd_acct_add_subsampled_gaussian(a, s->q, 1 / x, s->steps);
  dpgd_acct_value e;
  if (!rc) rc = dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, s->delta, &e);
  if (!rc) rc = profile_fill(&s->prof, a, fmax(4 * e.value, 1));
  dpgd_acct_free(a);
  if (rc) return rc;
  return dpgd_audit_fdp_reject(s->c.m, s->c.r, s->c.v, profile_curve, &s->prof, s->c.confidence,
                               rej);
}

int dpgd_audit_fdp_sg_lower(size_t m, size_t r, size_t v, double q, uint64_t steps,
                            double delta, double confidence, double *sigma, double *eps)
{
  *sigma = INFINITY;
  *eps = 0;
  if (!(q > 0 && q <= 1) || steps == 0 || !(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL,
                     "f-DP audit of subsampled Gaussians needs q in (0, 1], steps > 0 and "
                     "delta in (0, 1) (q %g, steps %llu, delta %g)",
                     q, (unsigned long long)steps, delta);
  sg_ctx *s = calloc(1, sizeof *s);
  if (!s) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the f-DP audit");
  s->c = (counts){m, r, v, confidence};
  s->q = q, s->delta = delta, s->steps = steps;
  double x;
  int rc = family_lower(sg_reject, s, 100, 1e-2, &x); /* eps to about 1% */
  if (!rc && x > 0) {
    dpgd_accountant *a = dpgd_acct_alloc();
    dpgd_acct_value e;
    rc = a ? dpgd_acct_add_subsampled_gaussian(a, q, 1 / x, steps) : DPGD_ENOMEM;
    if (!rc) rc = dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &e);
    dpgd_acct_free(a);
    if (!rc) *sigma = 1 / x, *eps = eps_down(e.value - e.err);
  }
  free(s);
  return rc;
}

int dpgd_audit_fdp_profile_reject(size_t m, size_t r, size_t v, const dpgd_accountant *acct,
                                  double eps_max, double confidence, int *reject)
{
  *reject = 0;
  profile *p = calloc(1, sizeof *p);
  if (!p) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the f-DP audit");
  int rc = profile_fill(p, acct, eps_max);
  if (!rc) rc = dpgd_audit_fdp_reject(m, r, v, profile_curve, p, confidence, reject);
  free(p);
  return rc;
}

/* ---- the guess rule ---------------------------------------------------------------------
 * Fixed before the run from public numbers only: an ideal attacker's scores, N(mu, 1)
 * for an included canary and N(0, 1) for an excluded one (mu the claim's GDP
 * parameter); the r/2 highest guessed in and the r/2 lowest out get, in expectation, r a
 * / (a + b) right, a = Q(t - mu), b = Q(t), (a + b) / 2 = r / (2 m). */
static size_t expected_correct(size_t m, size_t r, double mu)
{
  double lo = -40, hi = 40, want = (double)r / (2.0 * (double)m);
  for (int it = 0; it < 100; it++) {
    double t = 0.5 * (lo + hi);
    if (0.5 * (gsl_cdf_ugaussian_Q(t - mu) + gsl_cdf_ugaussian_Q(t)) > want) lo = t;
    else hi = t;
  }
  double a = gsl_cdf_ugaussian_Q(lo - mu), b = gsl_cdf_ugaussian_Q(lo);
  return (size_t)floor((double)r * a / (a + b));
}

int dpgd_audit_guess_rule(size_t m, double mu, double delta, double confidence, int fdp,
                          size_t *r, double *expected_eps)
{
  *r = m >= 2 ? 2 : 0;
  *expected_eps = 0;
  if (m < 2 || !(mu > 0) || !(delta > 0 && delta < 1) || !(confidence > 0 && confidence < 1))
    return DPGD_FAIL(DPGD_EINVAL,
                     "the guess rule needs m >= 2, mu > 0, delta and confidence in (0, 1)");
  /* r from m down by factors of 2^(1/4), even, at least 2 */
  for (double x = (double)m; x >= 2; x /= 1.189207115002721) {
    size_t rr = (size_t)x / 2 * 2, v = expected_correct(m, rr, mu);
    double e;
    int rc = fdp ? dpgd_audit_fdp_eps_lower(m, rr, v, delta, confidence, &e)
                 : dpgd_audit_eps_lower(m, rr, v, delta, confidence, &e);
    if (rc) return rc;
    if (e > *expected_eps) *expected_eps = e, *r = rr;
  }
  return DPGD_OK;
}
