/* run_step.c -- one step of private full-batch GD (Algorithms 6 and 7 of Feldman &
 * Zrnic) or of DP-SGD with Poisson sampling: caps (0 for the points not sampled), the
 * clipped per-example sum, the ledger, ONE Gaussian draw, the update, accounted private
 * stopping, and the row it emits. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "run_internal.h"

/* ---- the step ---- */

static double lr_at(const dpgd_run *r, size_t t)
{
  if (r->cfg.train_lr_schedule == DPGD_LR_COSINE && r->plan.steps > 1)
    return r->cfg.train_lr * 0.5 *
           (1 + cos(M_PI * (double)(t - 1) / (double)(r->plan.steps - 1)));
  return r->cfg.train_lr;
}

int dpgd_run_test_accuracy(dpgd_run *r, double *acc)
{
  size_t correct = 0;
  int rc = dpgd_model_evaluate(r->model, r->test, 0, r->test->n, r->cfg.model_threads, NULL,
                               &correct, NULL);
  if (!rc) *acc = (double)correct / (double)r->test->n;
  return rc;
}

int dpgd_run_done(const dpgd_run *r) { return r->m.step >= r->plan.steps; }

static int emit_row(dpgd_run *r, size_t t, int force_ckpt)
{
  if (!r->secure) {
    /* Research mode: a resume replays the steps after the checkpoint bit for bit (the
     * streams' states are in it), so rows may reach the disk before their checkpoint. */
    int rc = dpgd_run_metrics_put(r, r->row);
    if (rc) return rc;
    size_t ce = r->cfg.output_checkpoint_every;
    if (force_ckpt || (ce && t % ce == 0 && t < r->plan.steps))
      return dpgd_run_write_checkpoint(r);
    return DPGD_OK;
  }
  /* Secure mode: the noise cannot be replayed, so a step redone after a resume is a NEW
   * Gaussian release of the same step (and, under Algorithm 7, a spend the checkpointed
   * ledger never saw). Releasing step t twice would be a composition the accountant does
   * not count. Hence a durable checkpoint covering step t (parameters, ledger,
   * accountant, best iterate, and this row's text) is written after EVERY step
   * (output.checkpoint_every is ignored) and BEFORE anything of step t is emitted: its
   * metrics row (eps, test accuracy, the noisy query), and the progress line, which the
   * caller prints after this returns. Why that is enough: a kill before the checkpoint's
   * rename loses a step of which nothing was emitted (the checkpoint is training state
   * like the ledger, not a release), so the resume redoes it with fresh noise and releases
   * it once; a kill after the rename resumes AFTER step t, never redoing it, and the
   * resume writes the checkpointed row if the kill cut it off (dpgd_run_resume), so the
   * row is the very text already (partly) emitted and exactly one row per step remains.
   * The accountant in the checkpoint therefore counts exactly the emitted releases. */
  int rc = dpgd_run_write_checkpoint(r);
  if (rc) return rc;
  return dpgd_run_metrics_put(r, r->row);
}

/* Step t's update left non-finite parameters. The step's noisy sum was computed, and
 * the divergence itself (and everything printed about it) is a function of it: the
 * step is a release. It is accounted, its row written and the state checkpointed (a
 * resume refuses a diverged run, so the step is never redone), then the run stops. */
static int diverged(dpgd_run *r, size_t t, double lr)
{
  r->m.step = t;
  r->m.diverged = 1;
  r->last_query = NAN;
  dpgd_plan_epsilons(r->acct, r->plan.delta, r->eps_now, NULL);
  r->eps_step = t;
  int rc = dpgd_run_compose_row(r, t, NAN, lr, 0);
  if (!rc) rc = emit_row(r, t, 1);
  if (rc) return rc;
  return DPGD_FAIL(DPGD_ERANGE,
                   "training diverged: parameters not finite after step %zu (lower %s); "
                   "the step was released and is accounted: eps %.6g (%s, delta %g) in "
                   "metrics.csv",
                   t, DPGD_CONFIG_KEY(train_lr), dpgd_round_digits(dpgd_run_eps_now(r), 6, 1),
                   dpgd_acct_method_name((dpgd_acct_method)r->plan.report_method),
                   r->plan.delta);
}

int dpgd_run_checkpoint(dpgd_run *r) { return dpgd_run_write_checkpoint(r); }

/* Poisson or subset sampling: the points not in this step's sample get cap 0, which the
 * engine skips (unless train.constant_time) and the ledger does not charge (the filter
 * under Poisson subsampling charges every point: the sample is secret). An empty Poisson
 * sample is normal: the update is then noise only. */
static int sample_batch(dpgd_run *r)
{
  return r->plan.sampling == DPGD_SAMPLING_SUBSET
             ? dpgd_rng_sample_subset(r->rng_sample, r->plan.batch_size, r->in, r->m.n)
             : dpgd_rng_sample_poisson(r->rng_sample, r->plan.sample_rate, r->in, r->m.n, NULL);
}

/* Filtered DP-SGD at a refresh step (steps 1, 1 + r, 1 + 2r, ...: public): every point's
 * clipped norm at theta_t under its cap, the pass's sum discarded; the ledger lowers the
 * charges, and the caps of the sampled pass to match, and holds the bounds if
 * filter.hold is set; an ordinary step applies the held bounds (train/DPSGD_FILTER.md
 * section 3). Nothing of this pass enters the released sum. */
static int refresh_pass(dpgd_run *r)
{
  if (!r->ledger->sg) return DPGD_OK;
  if ((size_t)r->m.step % r->plan.refresh != 0) {
    dpgd_ledger_hold_caps(r->ledger, r->caps);
    return DPGD_OK;
  }
  int rc =
      dpgd_model_clipped_grad_sum(r->model, r->ws, r->train, r->caps, r->sum, NULL, r->post);
  if (!rc) rc = dpgd_ledger_refresh(r->ledger, r->caps, r->post);
  return rc;
}

/* The step's caps: the ledger's, 0 outside the sample. The sample comes from its own
 * stream, so drawing it before the caps changes no bit; without a DP-SGD filter only
 * the sampled points' allowances are then computed (the step's work is the batch's).
 * Filtered DP-SGD computes every cap first: a refresh pass clips every point. */
static int step_caps(dpgd_run *r)
{
  int sampled_only = r->rng_sample && !r->ledger->sg;
  int rc;
  if (!sampled_only) {
    dpgd_ledger_caps(r->ledger, r->caps);
    rc = refresh_pass(r);
    if (rc || !r->rng_sample) return rc;
  }
  rc = sample_batch(r);
  if (rc) return rc;
  if (sampled_only) {
    dpgd_ledger_caps_in(r->ledger, r->in, r->caps);
  } else {
    for (size_t i = 0; i < r->m.n; i++)
      if (!r->in[i]) r->caps[i] = 0;
  }
  return DPGD_OK;
}

int dpgd_run_setup_discrete(dpgd_run *r)
{
  const dpgd_plan *p = &r->plan;
  r->isum = malloc(r->P * sizeof *r->isum);
  if (!r->isum) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the integer sum");
  int rc = dpgd_grad_ws_set_grid(r->ws, p->grid_bits);
  if (!rc) rc = dpgd_dgauss_from_std(&r->dg_step, dpgd_plan_noise_std_up(p), p->grid_bits);
  if (!rc && p->queries) rc = dpgd_dgauss_from_std(&r->dg_query, p->tau, 0);
  return rc;
}

/* A discrete run's release: the exact integer sum plus one discrete Gaussian per
 * coordinate (bits from the step's stream: getrandom), then, as post-processing only,
 * converted to the double sum the update uses. */
static int discrete_noisy_sum(dpgd_run *r)
{
  return dpgd_dgauss_release(&r->dg_step, r->rng_step, r->isum, r->sum, r->P,
                             r->plan.grid_bits);
}

/* The clipped sum under the caps of the ledger, the spend, and ONE Gaussian draw on it. */
static int clipped_noisy_sum(dpgd_run *r)
{
  const dpgd_plan *p = &r->plan;
  /* Zero active points is a normal state: the sum is then zero and the update is noise
   * only (divided by the public n, never by the active count). */
  int rc = step_caps(r);
  if (rc) return rc;
  if (r->null_mask) /* dpgd audit: an excluded canary contributes nothing */
    for (size_t i = 0; i < r->m.n; i++)
      if (r->null_mask[i]) r->caps[i] = 0;
  if (p->discrete) /* exact: the ledger is charged the rows' exact norms */
    rc = dpgd_model_clipped_grad_sum_int(r->model, r->ws, r->train, r->caps, r->isum, r->post);
  else if (r->sum_fn)
    rc = r->sum_fn(r->sum_ctx, r->model, r->ws, r->train, r->caps, r->sum, r->post);
  else
    rc = dpgd_model_clipped_grad_sum(r->model, r->ws, r->train, r->caps, r->sum, NULL, r->post);
  if (!rc) rc = dpgd_ledger_spend(r->ledger, r->caps, r->post);
  if (rc) return rc;
#ifndef NDEBUG
  rc = dpgd_ledger_check(r->ledger);
  if (rc) return rc;
#endif
  /* ONE Gaussian draw N(0, sigma^2 C^2 I) on the sum (discrete: N_Z(0, sigma_grid^2 I)). */
  rc = p->discrete ? discrete_noisy_sum(r)
                   : dpgd_rng_gaussian_add(r->rng_step, p->sigma * p->clip, r->sum, r->P);
  if (rc) return rc;
  r->m.noise_draws++;
  return DPGD_OK;
}

/* theta -= scale * sum; returns whether every parameter is still finite. */
static int apply_update(dpgd_run *r, double scale)
{
  float *theta = dpgd_model_params(r->model);
  int finite = 1;
  if (r->velocity) { /* heavy ball (PyTorch SGD, dampening 0): v = beta v + g */
    double beta = r->cfg.train_momentum;
    for (size_t j = 0; j < r->P; j++) {
      r->velocity[j] = beta * r->velocity[j] + r->sum[j];
      theta[j] = (float)((double)theta[j] - scale * r->velocity[j]);
      finite &= isfinite(theta[j]);
    }
    return finite;
  }
  for (size_t j = 0; j < r->P; j++) {
    theta[j] = (float)((double)theta[j] - scale * r->sum[j]);
    finite &= isfinite(theta[j]);
  }
  return finite;
}

/* Private stopping: noisy count of correct training predictions, std tau. */
static int stopping_query(dpgd_run *r, size_t t)
{
  const dpgd_plan *p = &r->plan;
  size_t n = r->m.n;
  r->last_query = NAN;
  if (!dpgd_plan_query_due(p, t)) return DPGD_OK;
  size_t correct = 0;
  double count = 0; /* the noisy count */
  int rc =
      dpgd_model_evaluate(r->model, r->train, 0, n, r->cfg.model_threads, NULL, &correct, NULL);
  if (!rc && p->discrete) { /* the count is an integer: exact discrete noise on it */
    int64_t x = (int64_t)correct;
    rc = dpgd_dgauss_release(&r->dg_query, r->rng_query, &x, &count, 1, 0);
  } else if (!rc) {
    double noise = 0;
    rc = dpgd_rng_gaussian(r->rng_query, p->tau, &noise);
    count = (double)correct + noise;
  }
  if (!rc) rc = dpgd_plan_add_query(r->acct, p);
  if (rc) return rc;
  r->m.noise_draws++;
  r->m.queries_done++;
  double noisy = count / (double)n;
  r->last_query = noisy;
  if (noisy > r->m.best_noisy) {
    r->m.best_noisy = noisy;
    r->m.best_step = t;
    memcpy(r->best, dpgd_model_params(r->model), r->P * sizeof(float));
  }
  return DPGD_OK;
}

/* Test accuracy every train.eval_every steps and at the last step; NAN otherwise. */
static int scheduled_test_accuracy(dpgd_run *r, size_t t, double *test_acc)
{
  *test_acc = NAN;
  size_t every = r->cfg.train_eval_every;
  if ((every && t % every == 0) || t == r->plan.steps) {
    int rc = dpgd_run_test_accuracy(r, test_acc);
    if (rc) return rc;
    r->m.last_test_acc = *test_acc;
  }
  return DPGD_OK;
}

/* Whether step t's metrics row carries the eps columns (output.eps_every). They are
 * public functions of the releases so far, so leaving some rows empty hides nothing; with
 * sampling each costs an accountant query of up to a second (the characteristic-function
 * inversion at small q), far more than the step itself, hence the sparser default. */
static int eps_due(const dpgd_run *r, size_t t)
{
  size_t every = r->cfg.output_eps_every;
  if (every == 0 && r->plan.sampling == DPGD_SAMPLING_FULL) every = 1;
  if (every == 0) every = r->cfg.train_eval_every;
  if (every == 0) every = r->plan.steps / 100 > 1 ? r->plan.steps / 100 : 1;
  return t % every == 0 || t >= r->plan.steps;
}

int dpgd_run_step(dpgd_run *r)
{
  if (dpgd_run_done(r)) return DPGD_FAIL(DPGD_EINVAL, "the run has already done its steps");
  size_t t = (size_t)r->m.step + 1, n = r->m.n;
  const dpgd_plan *p = &r->plan;

  int rc = clipped_noisy_sum(r);
  if (rc) return rc;
  /* Divided by the public n, by the expected batch size q n (poisson) or by the batch
   * size m (subset): never by a count of the data. */
  double denom = p->sampling == DPGD_SAMPLING_POISSON  ? p->sample_rate * (double)n
                 : p->sampling == DPGD_SAMPLING_SUBSET ? (double)p->batch_size
                                                       : (double)n;
  double lr = lr_at(r, t), scale = lr / denom;
  int finite = apply_update(r, scale);
  rc = dpgd_plan_add_step(r->acct, p, t);
  if (rc) return rc;
  if (!finite) return diverged(r, t, lr);

  rc = stopping_query(r, t);
  if (rc) return rc;
  r->m.step = t;
  if (eps_due(r, t)) {
    dpgd_plan_epsilons(r->acct, p->delta, r->eps_now, NULL);
    r->eps_step = t;
  }

  double test_acc;
  rc = scheduled_test_accuracy(r, t, &test_acc);
  if (rc) return rc;

  rc = dpgd_run_compose_row(r, t, test_acc, lr, 1);
  if (!rc) rc = emit_row(r, t, 0);
  return rc;
}
