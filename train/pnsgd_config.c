/* pnsgd_config.c -- the configuration rules of train.algorithm = pnsgd (train/
 * LASTITERATE.md section 4): a convex model, one pass, a projection radius, and none of
 * the keys that would release or keep an intermediate iterate (ITERATION.md A1, A2). */
#include <math.h>
#include <string.h>

#include "dpgd_config.h"

#define NAME(field) DPGD_CONFIG_KEY(field)
#define A1 "only the last iterate may be released (accounting/ITERATION.md A1)"

/* Keys that would release, keep or evaluate an intermediate iterate. */
static int check_hidden(const dpgd_config *c)
{
  if (c->train_eval_every != 0)
    return DPGD_FAIL(
        DPGD_EINVAL,
        "%s = %zu evaluates intermediate iterates; set it to 0 with %s = pnsgd: " A1,
        NAME(train_eval_every), c->train_eval_every, NAME(train_algorithm));
  if (c->output_checkpoint_every != 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = %zu writes intermediate iterates to disk; set it to 0 with %s = "
                     "pnsgd (a pass is not resumable): " A1,
                     NAME(output_checkpoint_every), c->output_checkpoint_every,
                     NAME(train_algorithm));
  if (c->stopping_queries != 0)
    return DPGD_FAIL(DPGD_EINVAL, "%s = %zu queries intermediate iterates; %s = pnsgd: " A1,
                     NAME(stopping_queries), c->stopping_queries, NAME(train_algorithm));
  if (c->output_diagnostics)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = true computes per-step metrics of intermediate iterates; %s = "
                     "pnsgd: " A1,
                     NAME(output_diagnostics), NAME(train_algorithm));
  return DPGD_OK;
}

/* Keys of the other trainers that change what the pass is. */
static int check_pass(const dpgd_config *c)
{
  if (c->train_momentum != 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s does not go with %s = pnsgd: its last-iterate guarantee needs "
                     "every step to be a projected gradient step (accounting/ITERATION.md)",
                     NAME(train_momentum), NAME(train_algorithm));
  if (c->filter_enabled)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = true (individual filtering) does not go with %s = pnsgd: a pass "
                     "uses each point once",
                     NAME(filter_enabled), NAME(train_algorithm));
  if (c->train_sampling != DPGD_SAMPLING_FULL)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s must be full with %s = pnsgd: each point is used once, at a position "
                     "fixed in advance (accounting/ITERATION.md A2)",
                     NAME(train_sampling), NAME(train_algorithm));
  if (c->train_steps != 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s is not used with %s = pnsgd (one pass: n steps); leave it 0",
                     NAME(train_steps), NAME(train_algorithm));
  if (c->train_lr_schedule != DPGD_LR_CONSTANT)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s must be constant with %s = pnsgd (one step size, <= 2/beta)",
                     NAME(train_lr_schedule), NAME(train_algorithm));
  return DPGD_OK;
}

int dpgd_pnsgd_config_check(const dpgd_config *c)
{
  if (!strcmp(c->model_type, "scatter-softmax") && c->model_scatter_groups == 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = pnsgd with %s = scatter-softmax needs %s > 0: the public bound on "
                     "a feature vector's norm comes from group normalisation "
                     "(train/LASTITERATE.md section 1)",
                     NAME(train_algorithm), NAME(model_type), NAME(model_scatter_groups));
  if (strcmp(c->model_type, "softmax") && strcmp(c->model_type, "scatter-softmax"))
    return DPGD_FAIL(
        DPGD_EINVAL,
        "%s = pnsgd needs %s = softmax or scatter-softmax: its guarantee assumes a "
        "convex, smooth "
        "loss (accounting/ITERATION.md A3) and the %s model's loss is not convex",
        NAME(train_algorithm), NAME(model_type), c->model_type);
  if (!(c->train_radius > 0) || !isfinite(c->train_radius))
    return DPGD_FAIL(DPGD_EINVAL, "%s = pnsgd needs %s > 0 (the projection radius)",
                     NAME(train_algorithm), NAME(train_radius));
  int rc = check_hidden(c);
  if (!rc) rc = check_pass(c);
  if (rc) return rc;
  if (c->privacy_calibrate == DPGD_CALIBRATE_BUDGET)
    return DPGD_FAIL(DPGD_EINVAL, "%s = budget needs %s = true, which pnsgd does not use",
                     NAME(privacy_calibrate), NAME(filter_enabled));
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA && !(c->privacy_epsilon > 0))
    return DPGD_FAIL(DPGD_EINVAL, "%s = sigma needs %s > 0", NAME(privacy_calibrate),
                     NAME(privacy_epsilon));
  if (c->privacy_calibrate == DPGD_CALIBRATE_NONE && c->privacy_sigma == 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s is not set (the noise std on the gradient; or %s = sigma with %s)",
                     NAME(privacy_sigma), NAME(privacy_calibrate), NAME(privacy_epsilon));
  return DPGD_OK;
}
