/* audit_bound.c -- the statistics of a one-run privacy audit (Steinke, Nasr & Jagielski,
 * "Privacy Auditing with One (1) Training Run", NeurIPS 2023, Theorem 5.2 and their
 * Appendix D; train/AUDIT.md writes the formula out): the p-value of v correct guesses
 * out of r under (eps, delta)-DP, and the largest eps that the guesses reject. */
#include <math.h>

#include "dpgd_accounting.h"

/* log P[Binomial(r, q) = k] with log q and log(1 - q) given (exact in log space). */
static double log_pmf(size_t r, size_t k, double lq, double l1q)
{
  double lc = lgamma((double)r + 1) - lgamma((double)k + 1) - lgamma((double)(r - k) + 1);
  return lc + (double)k * lq + (double)(r - k) * l1q;
}

int dpgd_audit_p_value(size_t m, size_t r, size_t v, double eps, double delta, double *p)
{
  if (!(v <= r && r <= m) || !(eps >= 0) || !(delta >= 0 && delta <= 1))
    return DPGD_FAIL(DPGD_EINVAL,
                     "audit p-value needs 0 <= v <= r <= m, eps >= 0, 0 <= delta <= 1 "
                     "(m %zu, r %zu, v %zu, eps %g, delta %g)",
                     m, r, v, eps, delta);
  /* q = e^eps / (1 + e^eps), the accuracy of eps-DP randomized response. */
  double lq = -log1p(exp(-eps)), l1q = -eps + lq;
  double beta = 0; /* P[Binomial(r, q) >= v] */
  for (size_t k = v; k <= r; k++) beta += exp(log_pmf(r, k, lq, l1q));
  /* alpha = max over 1 <= i <= v of P[v - i <= Binomial(r, q) < v] / i */
  double alpha = 0, below = 0;
  for (size_t i = 1; i <= v; i++) {
    below += exp(log_pmf(r, v - i, lq, l1q));
    if (below / (double)i > alpha) alpha = below / (double)i;
  }
  double pv = beta + 2 * (double)m * delta * alpha;
  *p = pv < 1 ? pv : 1;
  return DPGD_OK;
}

int dpgd_audit_eps_lower(size_t m, size_t r, size_t v, double delta, double confidence,
                         double *eps)
{
  *eps = 0;
  if (!(confidence > 0 && confidence < 1))
    return DPGD_FAIL(DPGD_EINVAL, "audit confidence %g must lie in (0, 1)", confidence);
  double level = 1 - confidence, p;
  int rc = dpgd_audit_p_value(m, r, v, 0, delta, &p);
  if (rc || !(p < level)) return rc; /* not even eps = 0 is rejected */
  /* lo: rejected (p < level); hi: not rejected. p grows with eps. */
  double lo = 0, hi = 1;
  for (;;) {
    rc = dpgd_audit_p_value(m, r, v, hi, delta, &p);
    if (rc) return rc;
    if (!(p < level)) break;
    lo = hi;
    hi *= 2;
    if (hi > 1e3) break; /* every eps up to 1e3 rejected: report 1e3's lower side */
  }
  for (int it = 0; it < 60 && hi - lo > 1e-12 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    rc = dpgd_audit_p_value(m, r, v, mid, delta, &p);
    if (rc) return rc;
    if (p < level) lo = mid;
    else hi = mid;
  }
  *eps = lo; /* the rejected side: a lower bound never rounds up */
  return DPGD_OK;
}
