/* config_check.c -- dpgd_config_validate: the rules that join several keys (sampling
 * modes, the filter under Poisson sampling, calibration) and the privacy-critical ranges
 * checked again on a struct that code may have filled. The schema and the parser are in
 * config.c; every message names keys by their schema names (dpgd_config_key_name). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "dpgd_config.h"
#include "dpgd_train.h"

/* Names of keys in the messages below come from the schema (dpgd_config_key_name). */
#define NAME(field) DPGD_CONFIG_KEY(field)

/* Per-key ranges were checked when values were parsed; the struct may also have been
 * filled by code, so check the privacy-critical ones again. */
static int check_ranges_again(const dpgd_config *c)
{
  if (!(c->privacy_delta > 0 && c->privacy_delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be in (0, 1) (got %g)", NAME(privacy_delta),
                     c->privacy_delta);
  if (!(c->privacy_clip > 0) || !isfinite(c->privacy_clip))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 (got %g)", NAME(privacy_clip),
                     c->privacy_clip);
  if (!(c->privacy_sigma >= 0) || !isfinite(c->privacy_sigma))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 (got %g)", NAME(privacy_sigma),
                     c->privacy_sigma);
  /* A step is a 1/sigma-GDP release: its mu^2 = 1/sigma^2 must be a normal double for
   * the accountant and the filter's odometer, so sigma within [1e-150, 1e150]. */
  if (c->privacy_sigma != 0 && !(c->privacy_sigma >= 1e-150 && c->privacy_sigma <= 1e150))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s must lie in [1e-150, 1e150] (got %g): a step's mu^2 = 1/sigma^2 "
                     "would underflow or overflow",
                     NAME(privacy_sigma), c->privacy_sigma);
  if (!(c->train_lr > 0) || !isfinite(c->train_lr))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 (got %g)", NAME(train_lr), c->train_lr);
  if (!(c->data_std > 0) || !isfinite(c->data_std))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 (got %g)", NAME(data_std), c->data_std);
  if (memchr(c->output_dir, 0, sizeof c->output_dir) == NULL ||
      memchr(c->data_dir, 0, sizeof c->data_dir) == NULL)
    return DPGD_FAIL(DPGD_EINVAL, "%s or %s is not terminated", NAME(output_dir),
                     NAME(data_dir));
  int rc = dpgd_config_check_path(c->output_dir, NAME(output_dir));
  if (!rc) rc = dpgd_config_check_path(c->data_dir, NAME(data_dir));
  if (!rc) rc = dpgd_data_check_norm(c->data_mean, c->data_std, "data.mean/data.std");
  return rc;
}

/* Individual filtering under subsampling (train/DPSGD_FILTER.md): the budget is in
 * full-rate steps (filter.k), the refresh period a whole number, no stopping queries (they
 * would need an RDP charge of their own), no calibration of the budget. */
static int check_poisson_filter(const dpgd_config *c)
{
  if (!c->filter_enabled) return DPGD_OK;
  double r = c->filter_refresh;
  if (r != 0 && (!(r >= 1 && r <= 1e9) || r != floor(r)))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be a whole number of steps from 1 to 1e9 (got %g)",
                     NAME(filter_refresh), r);
  if (c->filter_hold != 0 && !(c->filter_hold >= 1 && c->filter_hold <= 1e9))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be from 1 to 1e9 (got %g)", NAME(filter_hold),
                     c->filter_hold);
  if (c->filter_budget != 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = poisson with %s: the budget is %s (full-rate steps), not %s "
                     "(a squared-norm budget)",
                     NAME(train_sampling), NAME(filter_enabled), NAME(filter_k),
                     NAME(filter_budget));
  if (c->privacy_calibrate == DPGD_CALIBRATE_BUDGET)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = budget is not supported with %s = poisson and %s (give %s, or "
                     "%s = sigma)",
                     NAME(privacy_calibrate), NAME(train_sampling), NAME(filter_enabled),
                     NAME(filter_k), NAME(privacy_calibrate));
  if (c->filter_k == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = poisson with %s needs %s (full-rate steps)",
                     NAME(train_sampling), NAME(filter_enabled), NAME(filter_k));
  if (c->stopping_queries != 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s is not supported with %s = poisson and %s (set it to 0: the last "
                     "iterate is kept)",
                     NAME(stopping_queries), NAME(train_sampling), NAME(filter_enabled));
  if (c->train_steps == 0 && c->train_epochs == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = poisson with %s needs %s or %s", NAME(train_sampling),
                     NAME(filter_enabled), NAME(train_steps), NAME(train_epochs));
  return DPGD_OK;
}

/* The sampler's keys: poisson needs its rate (and filter keys of its own), subset its
 * batch size (and refuses the filter); the keys of one
 * sampler are refused under another, so that no run trains with one and accounts with
 * another. */
static int check_subset(const dpgd_config *c)
{
  if (c->train_batch_size == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = subset needs %s >= 1", NAME(train_sampling),
                     NAME(train_batch_size));
  if (c->train_sample_rate != 0 || c->train_epochs != 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s and %s apply to %s = poisson only",
                     NAME(train_sample_rate), NAME(train_epochs), NAME(train_sampling));
  if (c->filter_enabled)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = subset with %s = true (individual filtering under subsampling) "
                     "is not supported; set %s = false",
                     NAME(train_sampling), NAME(filter_enabled), NAME(filter_enabled));
  if (c->train_steps == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = subset needs %s > 0", NAME(train_sampling),
                     NAME(train_steps));
  return DPGD_OK;
}

static int check_sampling(const dpgd_config *c)
{
  int rc, poisson = c->train_sampling == DPGD_SAMPLING_POISSON;
  if ((c->filter_refresh != 0 || c->filter_hold != 0) && !(poisson && c->filter_enabled))
    return DPGD_FAIL(DPGD_EINVAL, "%s applies to %s = poisson with %s = true only",
                     c->filter_hold != 0 ? NAME(filter_hold) : NAME(filter_refresh),
                     NAME(train_sampling), NAME(filter_enabled));
  if (c->train_sampling == DPGD_SAMPLING_SUBSET) return check_subset(c);
  if (c->train_batch_size != 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s applies to %s = subset only", NAME(train_batch_size),
                     NAME(train_sampling));
  if (!poisson && (c->train_sample_rate != 0 || c->train_epochs != 0))
    return DPGD_FAIL(DPGD_EINVAL, "%s and %s apply to %s = poisson only",
                     NAME(train_sample_rate), NAME(train_epochs), NAME(train_sampling));
  if (!poisson) return DPGD_OK;
  if (!(c->train_sample_rate > 0 && c->train_sample_rate <= 1))
    return DPGD_FAIL(DPGD_EINVAL, "%s = poisson needs %s in (0, 1] (got %g)",
                     NAME(train_sampling), NAME(train_sample_rate), c->train_sample_rate);
  rc = check_poisson_filter(c);
  if (rc) return rc;
  if (!(c->train_epochs >= 0) || !isfinite(c->train_epochs))
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 (got %g)", NAME(train_epochs),
                     c->train_epochs);
  if (c->train_epochs > 0 && c->train_steps > 0)
    return DPGD_FAIL(DPGD_EINVAL, "give %s or %s, not both", NAME(train_steps),
                     NAME(train_epochs));
  return DPGD_OK;
}

int dpgd_config_validate(const dpgd_config *c)
{
  int rc = check_ranges_again(c);
  if (!rc) rc = check_sampling(c);
  if (rc) return rc;
  if (c->data_validation && c->data_n_test)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s applies to the test split; with %s = %zu the evaluation "
                     "set is those held-out training examples",
                     NAME(data_n_test), NAME(data_validation), c->data_validation);
  if (c->train_algorithm == DPGD_ALGO_PNSGD) return dpgd_pnsgd_config_check(c);
  if (c->train_radius != 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s applies to %s = pnsgd only", NAME(train_radius),
                     NAME(train_algorithm));
  /* Poisson runs may give their length in epochs instead of steps. */
  int has_steps = c->train_steps > 0 || c->train_epochs > 0;
  int need_eps = c->privacy_calibrate != DPGD_CALIBRATE_NONE;
  if (need_eps && !(c->privacy_epsilon > 0))
    return DPGD_FAIL(DPGD_EINVAL, "%s = %s needs %s > 0", NAME(privacy_calibrate),
                     c->privacy_calibrate == DPGD_CALIBRATE_SIGMA ? "sigma" : "budget",
                     NAME(privacy_epsilon));
  if (c->privacy_calibrate != DPGD_CALIBRATE_SIGMA && c->privacy_sigma == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s is not set (give it, or %s = sigma with %s)",
                     NAME(privacy_sigma), NAME(privacy_calibrate), NAME(privacy_epsilon));
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA && !has_steps && !c->filter_enabled)
    return DPGD_FAIL(DPGD_EINVAL, "%s = sigma needs %s > 0", NAME(privacy_calibrate),
                     NAME(train_steps));
  if (c->privacy_calibrate == DPGD_CALIBRATE_BUDGET && !c->filter_enabled)
    return DPGD_FAIL(DPGD_EINVAL, "%s = budget needs %s = true (B_norm is the filter's budget)",
                     NAME(privacy_calibrate), NAME(filter_enabled));
  if (c->filter_enabled) {
    if (c->privacy_calibrate != DPGD_CALIBRATE_BUDGET && c->filter_budget == 0 &&
        c->filter_k == 0)
      return DPGD_FAIL(DPGD_EINVAL, "%s needs %s or %s (or %s = budget)", NAME(filter_enabled),
                       NAME(filter_budget), NAME(filter_k), NAME(privacy_calibrate));
    if (c->filter_budget > 0 && c->filter_k > 0)
      return DPGD_FAIL(DPGD_EINVAL, "give %s or %s, not both", NAME(filter_budget),
                       NAME(filter_k));
  } else if (!has_steps) {
    return DPGD_FAIL(DPGD_EINVAL, "%s must be > 0 without filtering (poisson: or %s)",
                     NAME(train_steps), NAME(train_epochs));
  }
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA && c->filter_enabled &&
      c->filter_budget == 0 && c->filter_k == 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = sigma with filtering needs %s or %s",
                     NAME(privacy_calibrate), NAME(filter_k), NAME(filter_budget));
  return DPGD_OK;
}
