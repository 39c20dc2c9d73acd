/* private_sum.c -- private full-batch gradient sums for gradients the caller computes
 * (a model dpgd does not have): the engine's clipping rule (dpgd_model_clip_rows_sum),
 * the ledger's caps and charges (Algorithm 6, or Algorithm 7 with a budget), ONE Gaussian
 * draw per step from the run's noise streams, and the plan's accounting of each step.
 * Derivation of the guarantee: train/PRIVATE_SUM.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_model.h"
#include "plan_internal.h"

struct dpgd_psum {
  dpgd_psum_params p;
  dpgd_plan plan; /* the fields dpgd_plan_add_step reads: a full-batch run without queries */
  dpgd_ledger *ledger;
  dpgd_rng *rng;
  dpgd_accountant *acct;
  double *caps, *post; /* (n), (n) */
  int64_t *isum;       /* (dim) secure: the exact sum on the grid 2^-plan.grid_bits */
  dpgd_dgauss dg;      /* secure: its noise, N_Z(0, ceil((sigma C 2^F)^2)) */
  size_t steps;
};

static int check_params(const dpgd_psum_params *p)
{
  if (p->n == 0 || p->dim == 0)
    return DPGD_FAIL(DPGD_EINVAL, "private sum: n = %zu and dim = %zu must be >= 1", p->n,
                     p->dim);
  if (!(p->clip > 0) || !isfinite(p->clip) || !(p->clip * p->clip >= 0x1p-1022))
    return DPGD_FAIL(DPGD_EINVAL, "private sum: clip %g must be finite and > 0", p->clip);
  if (!(p->sigma > 0) || !isfinite(p->sigma))
    return DPGD_FAIL(DPGD_EINVAL, "private sum: sigma %g must be finite and > 0", p->sigma);
  if (!(p->budget > 0))
    return DPGD_FAIL(DPGD_EINVAL, "private sum: budget %g must be > 0 (inf: no filter)",
                     p->budget);
  if (p->rng != DPGD_RNG_RESEARCH && p->rng != DPGD_RNG_SECURE)
    return DPGD_FAIL(DPGD_EINVAL, "private sum: unknown rng mode %d", p->rng);
  return DPGD_OK;
}

/* The plan of a full-batch run with these parameters, as dpgd_plan_add_step reads it. */
static void fill_plan(dpgd_plan *pl, const dpgd_psum_params *p)
{
  pl->filtered = isfinite(p->budget);
  pl->sampling = DPGD_SAMPLING_FULL;
  pl->sample_rate = 1;
  pl->n = p->n;
  pl->sigma = p->sigma;
  pl->clip = p->clip;
  pl->budget = p->budget;
  pl->full_steps = pl->filtered ? dpgd_plan_full_steps(p->budget, p->clip) : 0;
  pl->discrete = p->rng == DPGD_RNG_SECURE; /* exact integer sums + discrete Gaussian */
}

/* Secure: the grid, its buffer and noise (model/SENSITIVITY.md 8: the trainer's). */
static int setup_discrete(dpgd_psum *s)
{
  dpgd_plan *pl = &s->plan;
  double std = dpgd_plan_noise_std_up(pl);
  int rc = dpgd_model_grid_bits(s->p.n, pl->clip, std, &pl->grid_bits);
  if (!rc) rc = dpgd_dgauss_from_std(&s->dg, std, pl->grid_bits);
  if (rc) return rc;
  s->isum = malloc(s->p.dim * sizeof *s->isum);
  return s->isum ? DPGD_OK : DPGD_FAIL(DPGD_ENOMEM, "no memory for the integer sum");
}

int dpgd_psum_open(dpgd_psum **out, const dpgd_psum_params *p)
{
  *out = NULL;
  int rc = check_params(p);
  if (rc) return rc;
  dpgd_psum *s = calloc(1, sizeof *s);
  if (!s) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the private sum");
  s->p = *p;
  fill_plan(&s->plan, p);
  s->ledger = dpgd_ledger_alloc(p->n, s->plan.filtered, p->clip, p->budget);
  s->rng = dpgd_rng_alloc(p->rng, &p->seed, DPGD_STREAM_STEP);
  s->acct = dpgd_acct_alloc();
  s->caps = malloc(p->n * sizeof *s->caps);
  s->post = malloc(p->n * sizeof *s->post);
  if (!s->ledger || !s->rng || !s->acct || !s->caps || !s->post) {
    dpgd_psum_free(s);
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the private sum (n = %zu)", p->n);
  }
  /* The summation slack of the trainer (run.c): the sum's rounding moves it by up to
   * 2 gamma n C more when one point changes (model/SENSITIVITY.md); an exact integer
   * sum has none. */
  double slack = 2 * dpgd_model_sum_error_bound(p->n) * (double)p->n * p->clip * (1 + 0x1p-40);
  rc = s->plan.discrete ? setup_discrete(s) : dpgd_ledger_set_slack(s->ledger, slack);
  if (rc) {
    dpgd_psum_free(s);
    return rc;
  }
  *out = s;
  return DPGD_OK;
}

void dpgd_psum_free(dpgd_psum *s)
{
  if (!s) return;
  dpgd_ledger_free(s->ledger);
  dpgd_rng_free(s->rng);
  dpgd_acct_free(s->acct);
  free(s->caps);
  free(s->post);
  free(s->isum);
  free(s);
}

int dpgd_psum_step(dpgd_psum *s, const float *grads, double *noisy_sum)
{
  const size_t n = s->p.n, P = s->p.dim;
  dpgd_ledger_caps(s->ledger, s->caps);
  int rc;
  if (s->plan.discrete) {
    memset(s->isum, 0, P * sizeof *s->isum);
    rc =
        dpgd_model_clip_rows_sum_int(s->isum, s->post, grads, s->caps, n, P, s->plan.grid_bits);
  } else {
    for (size_t j = 0; j < P; j++) noisy_sum[j] = 0.0;
    rc = dpgd_model_clip_rows_sum(noisy_sum, s->post, grads, s->caps, n, P);
  }
  if (!rc) rc = dpgd_ledger_spend(s->ledger, s->caps, s->post);
  if (rc) return rc;
  /* ONE Gaussian draw N(0, sigma^2 C^2 I) on the sum (secure: N_Z(0, sigma_grid^2 I) on the
   * integer sum); from here on the step is released and accounted. */
  rc = s->plan.discrete
           ? dpgd_dgauss_release(&s->dg, s->rng, s->isum, noisy_sum, P, s->plan.grid_bits)
           : dpgd_rng_gaussian_add(s->rng, s->p.sigma * s->p.clip, noisy_sum, P);
  if (rc) return rc;
  s->steps++;
  return dpgd_plan_add_step(s->acct, &s->plan, s->steps);
}

size_t dpgd_psum_steps(const dpgd_psum *s) { return s->steps; }
const dpgd_ledger *dpgd_psum_ledger(const dpgd_psum *s) { return s->ledger; }
const dpgd_accountant *dpgd_psum_accountant(const dpgd_psum *s) { return s->acct; }
