/* plan_subset.c -- the plan's part for subsampled runs: the releases one step of a
 * Poisson or a fixed-size (train.sampling = subset) run adds to the accountant, what
 * only a subset plan checks and derives, and the method a subset run reports
 * (accounting/SAMPLING.md, "dpgd train with train.sampling = subset"). */
#include <math.h>

#include "dpgd_accounting.h"
#include "plan_internal.h"

int dpgd_plan_add_sampled(dpgd_accountant *a, const dpgd_plan *p, double sigma, uint64_t count)
{
  /* A batch of m real points and one with another real point in a slot have clipped
   * sums up to 2C apart: the base Gaussian (std sigma C) has replace-one multiplier
   * sigma / 2, and dpgd's neighbours (a point against the null point, n fixed) are a
   * replace-one pair (Wang, Balle & Kasiviswanathan 2019, Theorems 9 and 27). */
  if (p->sampling == DPGD_SAMPLING_SUBSET)
    return dpgd_acct_add_wor_gaussian(a, p->batch_size, p->n, sigma / 2, DPGD_ACCT_REPLACE_ONE,
                                      count);
  /* Secure DP-SGD: exact integer sums of the sampled rows plus discrete Gaussian noise of
   * multiplier >= sigma (model/SENSITIVITY.md 8); its bound grows with q and falls with
   * sigma, so the sampler's rate <= q and the rounded-up noise are covered (MATH.md 18.1). */
  if (p->discrete)
    return dpgd_acct_add_subsampled_discrete_gaussian(a, p->sample_rate, sigma, count);
  return dpgd_acct_add_subsampled_gaussian(a, p->sample_rate, sigma, count);
}

const char *dpgd_plan_theorem(const dpgd_plan *p)
{
  return p->sampling == DPGD_SAMPLING_POISSON ? DPGD_SUBSAMPLED_DISCRETE_THEOREM
                                              : DPGD_DISCRETE_THEOREM;
}

int dpgd_plan_secure_check(const dpgd_config *c)
{
  if (c->train_rng != DPGD_RNG_SECURE) return DPGD_OK;
  if (c->train_sampling == DPGD_SAMPLING_SUBSET)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = secure with %s = subset: no bound is proven for fixed-size "
                     "sampling of the discrete Gaussian; use %s = poisson or full",
                     DPGD_CONFIG_KEY(train_rng), DPGD_CONFIG_KEY(train_sampling),
                     DPGD_CONFIG_KEY(train_sampling));
  if (c->train_sampling == DPGD_SAMPLING_POISSON && c->filter_enabled)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = secure with filtered DP-SGD (%s = poisson, filter on): no bound is "
                     "proven for the filter over subsampled discrete Gaussians; turn the "
                     "filter off or use %s = full",
                     DPGD_CONFIG_KEY(train_rng), DPGD_CONFIG_KEY(train_sampling),
                     DPGD_CONFIG_KEY(train_sampling));
  return DPGD_OK;
}

int dpgd_plan_subset_setup(dpgd_plan *p, const dpgd_config *c)
{
  size_t m = c->train_batch_size;
  if (m > p->n)
    return DPGD_FAIL(DPGD_EINVAL, "%s = %zu exceeds the %zu training points",
                     DPGD_CONFIG_KEY(train_batch_size), m, p->n);
  dpgd_acct_method method = (dpgd_acct_method)c->privacy_method;
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA &&
      (method == DPGD_ACCT_EXACT || method == DPGD_ACCT_ZCDP))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = subset is accounted by an RDP bound (replace-one, no exact pair "
                     "known), so %s = %s cannot calibrate it; set %s = rdp_optimal",
                     DPGD_CONFIG_KEY(train_sampling), DPGD_CONFIG_KEY(privacy_method),
                     dpgd_acct_method_name(method), DPGD_CONFIG_KEY(privacy_method));
  p->batch_size = m;
  p->sample_rate = dpgd_acct_wor_rate(m, p->n);
  p->steps = p->full_steps = c->train_steps;
  return DPGD_OK;
}

void dpgd_plan_pick_report(dpgd_plan *p)
{
  p->report_method = DPGD_ACCT_EXACT;
  if (p->sampling != DPGD_SAMPLING_SUBSET && !p->discrete) return;
  /* Every rdp_* value converts the same proven RDP curve: the smallest is proven too. */
  int best = DPGD_ACCT_RDP_OPTIMAL;
  for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++)
    if (isfinite(p->eps[m]) && !(p->eps[m] >= p->eps[best])) best = m;
  p->report_method = best;
}
