/* selection.c -- private selection (accounting/SELECTION.md): the RDP curve of "run the
 * base mechanism K times and release the best" for K truncated negative binomial
 * (Papernot & Steinke 2022, Theorem 2) or Poisson (their Theorem 6), from the base's RDP
 * curve and privacy profile, and its (eps, delta) by the rdp_* conversions. */
#include <float.h>
#include <math.h>

#include "acct_internal.h"

/* lambda_hat grid of Theorem 2: 1 + 10^x, x in [-6, 6] (any lambda_hat >= 1 is valid;
 * the grid minimum is refined by golden section between its neighbours). */
#define SEL_HAT_XMIN -6.0
#define SEL_HAT_XMAX 6.0
#define SEL_HAT_N 241
/* relative pad on eps' for the few roundings of the sums (far above them) */
#define SEL_PAD 1e-13

int dpgd_select_k_check(const dpgd_select_k *k)
{
  if (k->dist == DPGD_SELECT_TNB) {
    if (!(k->eta > -1) || !isfinite(k->eta))
      return DPGD_FAIL(DPGD_EINVAL, "selection: eta = %g must be a number above -1", k->eta);
    if (!(k->gamma > 0 && k->gamma < 1))
      return DPGD_FAIL(DPGD_EINVAL, "selection: gamma = %g must be in (0, 1)", k->gamma);
    return DPGD_OK;
  }
  if (k->dist == DPGD_SELECT_POISSON) {
    if (!(k->mean > 0) || !isfinite(k->mean))
      return DPGD_FAIL(DPGD_EINVAL, "selection: the Poisson mean %g must be positive", k->mean);
    return DPGD_OK;
  }
  return DPGD_FAIL(DPGD_EINVAL, "selection: unknown distribution of K (%d)", (int)k->dist);
}

/* E[K] of D_{eta,gamma} without the checks. */
static double tnb_mean(double eta, double gamma)
{
  double lg = log(gamma); /* < 0 */
  if (eta == 0) return -expm1(lg) / (gamma * -lg);
  /* eta (1 - gamma) / (gamma (1 - gamma^eta)); 1 - gamma^eta = -expm1(eta log gamma) */
  return eta * -expm1(lg) / (gamma * -expm1(eta * lg));
}

double dpgd_select_k_mean(const dpgd_select_k *k)
{
  if (k->dist == DPGD_SELECT_TNB) {
    if (!(k->eta > -1) || !(k->gamma > 0 && k->gamma < 1)) return NAN;
    return tnb_mean(k->eta, k->gamma);
  }
  if (k->dist == DPGD_SELECT_POISSON) return k->mean > 0 ? k->mean : NAN;
  return NAN;
}

int dpgd_select_k_tnb(dpgd_select_k *k, double eta, double mean)
{
  if (!(eta > -1) || !isfinite(eta))
    return DPGD_FAIL(DPGD_EINVAL, "selection: eta = %g must be a number above -1", eta);
  if (!(mean > 1) || !isfinite(mean))
    return DPGD_FAIL(DPGD_EINVAL,
                     "selection: the mean number of runs %g must be above 1 (K >= 1 always)",
                     mean);
  double lo = 0, hi = 1; /* E[K] decreases from +inf (gamma -> 0) to 1 (gamma -> 1) */
  if (tnb_mean(eta, DBL_MIN) < mean)
    return DPGD_FAIL(DPGD_ERANGE, "selection: no gamma gives mean %g at eta %g", mean, eta);
  for (int it = 0; it < 200 && hi - lo > 4 * DBL_EPSILON * hi; it++) {
    double mid = lo > 0 ? sqrt(lo * hi) : hi / 1024;
    if (mid <= DBL_MIN) mid = (lo + hi) / 2;
    if (tnb_mean(eta, mid) > mean) lo = mid;
    else hi = mid;
  }
  k->dist = DPGD_SELECT_TNB;
  k->eta = eta;
  k->gamma = hi; /* E[K] at hi is at most mean */
  k->mean = tnb_mean(eta, hi);
  return DPGD_OK;
}

double dpgd_select_k_pmf(const dpgd_select_k *k, uint64_t j)
{
  double x = (double)j;
  if (k->dist == DPGD_SELECT_POISSON) {
    if (!(k->mean > 0)) return NAN;
    return exp(-k->mean + x * log(k->mean) - lgamma(x + 1));
  }
  double eta = k->eta, g = k->gamma;
  if (!(eta > -1) || !(g > 0 && g < 1)) return NAN;
  if (j == 0) return 0;
  /* P[K = 1] = (1 - gamma) eta / (gamma^-eta - 1) (-> (1 - gamma) / log(1/gamma) at 0);
   * P[K = j] = P[K = 1] (1 - gamma)^(j-1) Gamma(j + eta) / (Gamma(1 + eta) j!). */
  double lg = log(g);
  double p1 = eta == 0 ? -expm1(lg) / -lg : -expm1(lg) * eta / expm1(-eta * lg);
  return p1 * exp((x - 1) * log1p(-g) + lgamma(x + eta) - lgamma(1 + eta) - lgamma(x + 1));
}

double dpgd_select_base_rdp(const dpgd_select_base *b, double alpha)
{
  double v = b->score_mu > 0 ? alpha * b->score_mu * b->score_mu / 2 : 0;
  for (size_t c = 0; c < b->n_cells; c++) {
    double t = dpgd_acct_rdp_curve(b->train[c], alpha);
    if (isnan(t)) return INFINITY;
    if (t > v) v = t;
  }
  return v;
}

int dpgd_select_base_delta(const dpgd_select_base *b, double eps, double *delta)
{
  double d = b->score_mu > 0 ? dpgd_gdp_delta(b->score_mu, eps) : 0;
  for (size_t c = 0; c < b->n_cells; c++) {
    dpgd_acct_value v;
    int st = dpgd_acct_delta(b->train[c], DPGD_ACCT_EXACT, eps, &v);
    if (st) st = dpgd_acct_delta(b->train[c], DPGD_ACCT_RDP_OPTIMAL, eps, &v);
    if (st) return st;
    if (v.value > d) d = v.value;
  }
  *delta = d > 1 ? 1 : d;
  return DPGD_OK;
}

/* (1 + eta) [(1 - 1/h) eps(h) + log(1/gamma) / h], the lambda_hat part of Theorem 2;
 * *run = (1 + eta)(1 - 1/h) eps(h), its first part, nondecreasing in h (RDP curves are). */
static double tnb_hat_term2(const dpgd_select_k *k, const dpgd_select_base *b, double h,
                            double *run)
{
  double e = dpgd_select_base_rdp(b, h);
  *run = isfinite(e) ? (1 + k->eta) * (1 - 1 / h) * e : INFINITY;
  if (!isfinite(e)) return INFINITY;
  return *run - (1 + k->eta) * log(k->gamma) / h;
}

static double tnb_hat_term(const dpgd_select_k *k, const dpgd_select_base *b, double h)
{
  double run;
  return tnb_hat_term2(k, b, h, &run);
}

static double hat_order(int i)
{
  return 1 + pow(10, SEL_HAT_XMIN + (SEL_HAT_XMAX - SEL_HAT_XMIN) * i / (SEL_HAT_N - 1));
}

/* min over lambda_hat of the term: grid, then golden section in the best cell's
 * neighbourhood (every value tried is a valid bound, so the least is kept). The grid
 * stops where the term's first part alone reaches the best value: it is nondecreasing in
 * lambda_hat, so no larger grid point is below it (and a subsampled curve costs O(order)
 * per point, up to 1e6). */
static double tnb_hat_min(const dpgd_select_k *k, const dpgd_select_base *b)
{
  double best = INFINITY, run;
  int pick = -1;
  for (int i = 0; i < SEL_HAT_N; i++) {
    double v = tnb_hat_term2(k, b, hat_order(i), &run);
    if (v < best) best = v, pick = i;
    if (run >= best) break;
  }
  if (pick < 0) return INFINITY;
  double lo = hat_order(pick > 0 ? pick - 1 : 0);
  double hi = hat_order(pick < SEL_HAT_N - 1 ? pick + 1 : pick);
  const double r = 0.5 * (sqrt(5.0) - 1);
  for (int it = 0; it < 40 && hi - lo > 1e-9 * hi; it++) {
    double x1 = hi - r * (hi - lo), x2 = lo + r * (hi - lo);
    double f1 = tnb_hat_term(k, b, x1), f2 = tnb_hat_term(k, b, x2);
    if (f1 < best) best = f1;
    if (f2 < best) best = f2;
    if (f1 < f2) hi = x2;
    else lo = x1;
  }
  return best;
}

/* eps'(lambda) given hat, Theorem 2's lambda_hat part (tnb_hat_min: it does not depend on
 * lambda, so a curve evaluated at many orders computes it once). */
static double sel_rdp(const dpgd_select_k *k, const dpgd_select_base *b, double lambda,
                      double hat)
{
  if (!(lambda > 1) || isnan(dpgd_select_k_mean(k))) return INFINITY;
  double e = dpgd_select_base_rdp(b, lambda);
  if (!isfinite(e)) return INFINITY;
  double v;
  if (k->dist == DPGD_SELECT_TNB) {
    v = e + hat + log(tnb_mean(k->eta, k->gamma)) / (lambda - 1);
  } else {
    /* the largest eps_hat with e^eps_hat <= 1 + 1/(lambda - 1), rounded down */
    double eh = dpgd_acct_round_down(log1p(1 / (lambda - 1)));
    double dh;
    if (dpgd_select_base_delta(b, eh > 0 ? eh : 0, &dh)) return INFINITY;
    v = e + k->mean * dh + log(k->mean) / (lambda - 1);
  }
  if (!isfinite(v)) return INFINITY;
  return v + fabs(v) * SEL_PAD;
}

static double hat_part(const dpgd_select_k *k, const dpgd_select_base *b)
{
  return k->dist == DPGD_SELECT_TNB && !isnan(dpgd_select_k_mean(k)) ? tnb_hat_min(k, b) : 0;
}

double dpgd_select_rdp(const dpgd_select_k *k, const dpgd_select_base *b, double lambda)
{
  if (!(lambda > 1)) return INFINITY;
  return sel_rdp(k, b, lambda, hat_part(k, b));
}

typedef struct {
  const dpgd_select_k *k;
  const dpgd_select_base *b;
  double hat; /* Theorem 2's lambda_hat part, computed once */
} sel_ctx;

static double sel_curve(double alpha, const void *vp)
{
  const sel_ctx *s = vp;
  return sel_rdp(s->k, s->b, alpha, s->hat);
}

/* Theorem 6's value without its mu delta_hat term (delta_hat >= 0): a lower bound on
 * sel_curve that costs no exact delta, so the order grid evaluates delta_hat only where
 * it can matter (rdp.c's branch and bound; the same eps). */
static double sel_curve_lower(double alpha, const void *vp)
{
  const sel_ctx *s = vp;
  if (!(alpha > 1)) return INFINITY;
  return dpgd_select_base_rdp(s->b, alpha) + log(s->k->mean) / (alpha - 1);
}

int dpgd_select_epsilon(const dpgd_select_k *k, const dpgd_select_base *b, dpgd_acct_method m,
                        double delta, dpgd_acct_value *out)
{
  int st = dpgd_select_k_check(k);
  if (st) return st;
  if (b->n_cells == 0) return DPGD_FAIL(DPGD_EINVAL, "selection: the grid has no cells");
  if (!(b->score_mu >= 0) || !isfinite(b->score_mu))
    return DPGD_FAIL(DPGD_EINVAL, "selection: the score's mu %g is not a number >= 0",
                     b->score_mu);
  sel_ctx s = {k, b, hat_part(k, b)};
  return dpgd_acct_rdp_curve_epsilon_lb(
      sel_curve, k->dist == DPGD_SELECT_POISSON ? sel_curve_lower : NULL, &s, 0, m, delta, out);
}
