/* audit.c -- a one-run privacy audit (train/AUDIT.md; Steinke, Nasr & Jagielski 2023):
 * opens the audited run on the base data plus M canaries, and around each of its steps
 * computes what the white-box auditor computes from the released noisy sum: the base
 * points' clipped sum, every canary's clipped gradient, and the canaries' scores. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "audit_internal.h"

void dpgd_audit_defaults(dpgd_audit_params *p)
{
  p->canaries = 1000;
  p->guesses = 0;
  p->seed = 1;
  p->confidence = 0.95;
  p->planted_noise_scale = 1;
  p->planted_clip_scale = 1;
  p->planted_rate_scale = 1;
  p->kind = DPGD_AUDIT_INPUT;
  p->keep_train_seed = 0;
}

void dpgd_audit_free(dpgd_audit *a)
{
  if (!a) return;
  dpgd_run_free(a->run);
  dpgd_data_free(a->base);
  dpgd_data_free(a->test);
  dpgd_data_free(a->canaries);
  dpgd_ledger_free(a->shadow);
  dpgd_grad_ws_free(a->ws1);
  free(a->in);
  free(a->null_mask);
  free(a->ccaps);
  free(a->cpost);
  free(a->bcaps);
  free(a->G);
  free(a->gd);
  free(a->base_sum);
  free(a->resid);
  free(a->score);
  free(a->gstep);
  free(a->gram);
  free(a->theta);
  free(a->coords);
  free(a->code);
  free(a->sign);
  free(a->csq);
  free(a->sb);
  free(a->syb);
  free(a->sbb);
  free(a->pcaps);
  dpgd_rng_free(a->g);
  free(a);
}

static int check_params(const dpgd_audit_params *p)
{
  if (p->canaries < 2) return DPGD_FAIL(DPGD_EINVAL, "an audit needs at least 2 canaries");
  if (p->guesses % 2 || p->guesses > p->canaries)
    return DPGD_FAIL(DPGD_EINVAL, "guesses (%zu) must be even and at most the canaries (%zu)",
                     p->guesses, p->canaries);
  if (!(p->confidence > 0 && p->confidence < 1))
    return DPGD_FAIL(DPGD_EINVAL, "confidence %g must lie in (0, 1)", p->confidence);
  if (!(p->planted_noise_scale > 0 && p->planted_noise_scale <= 1) ||
      !(p->planted_clip_scale >= 1 && p->planted_clip_scale <= 4) ||
      !(p->planted_rate_scale > 0 && p->planted_rate_scale <= 1))
    return DPGD_FAIL(DPGD_EINVAL, "planted scales (noise %g, clip %g, rate %g) out of range",
                     p->planted_noise_scale, p->planted_clip_scale, p->planted_rate_scale);
  if (p->kind != DPGD_AUDIT_INPUT && p->kind != DPGD_AUDIT_GRADIENT)
    return DPGD_FAIL(DPGD_EINVAL, "unknown canary kind %d", p->kind);
  return DPGD_OK;
}

/* Refused before audit_data is written into it: a directory that holds a run. */
static int check_dir_free(const char *dir)
{
  const char *const names[] = {"summary.json", "checkpoint.bin"};
  for (int k = 0; k < 2; k++) {
    char p[PATHLEN];
    snprintf(p, sizeof p, "%s/%s", dir, names[k]);
    if (dpgd_run_file_exists(p))
      return DPGD_FAIL(DPGD_EINVAL, "%s holds %s run; choose another --out", dir,
                       k ? "an unfinished" : "a finished");
  }
  return DPGD_OK;
}

/* Buffers, the shadow ledger of the canaries, and the null mask handed to the run. */
static int alloc_state(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  size_t M = a->M, n = a->n_base + M, P = a->P;
  a->shadow = dpgd_ledger_alloc(M, r->plan.filtered, r->plan.clip, r->plan.budget);
  a->ws1 = dpgd_grad_ws_alloc(r->model, 1, 1);
  int grad = a->ap.kind == DPGD_AUDIT_GRADIENT; /* no per-canary gradient matrices */
  a->ccaps = calloc(M, sizeof *a->ccaps);
  a->cpost = calloc(M, sizeof *a->cpost);
  a->bcaps = calloc(n, sizeof *a->bcaps);
  a->G = calloc(grad ? 1 : M * P, sizeof *a->G);
  a->gd = calloc(P, sizeof *a->gd);
  a->base_sum = calloc(P, sizeof *a->base_sum);
  a->resid = calloc(P, sizeof *a->resid);
  a->score = calloc(M, sizeof *a->score);
  a->null_mask = calloc(n, 1);
  a->gstep = calloc(grad ? 1 : M * M, sizeof *a->gstep);
  a->gram = calloc(grad ? 1 : M * M, sizeof *a->gram);
  a->theta = calloc(P, sizeof *a->theta);
  a->sb = calloc(M, sizeof *a->sb);
  a->syb = calloc(M, sizeof *a->syb);
  a->sbb = calloc(M, sizeof *a->sbb);
  if (!a->shadow || !a->ws1 || !a->ccaps || !a->cpost || !a->bcaps || !a->G || !a->gd ||
      !a->base_sum || !a->resid || !a->score || !a->null_mask || !a->gstep || !a->gram ||
      !a->theta || !a->sb || !a->syb || !a->sbb)
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the audit (%zu canaries, %zu parameters)", M,
                     P);
  for (size_t j = 0; j < M; j++) a->null_mask[a->n_base + j] = !a->in[j];
  r->null_mask = a->null_mask;
  /* The canaries are charged as the run charges its points (same summation slack). */
  return dpgd_ledger_set_slack(a->shadow, r->ledger->slack);
}

/* The planted clip bug: the run clips to planted_clip_scale times the caps it accounts
 * (and charges the accounted caps), its noise staying sigma C. */
static int planted_sum(void *ctx, dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                       const double *caps, double *sum, double *post)
{
  dpgd_audit *a = ctx;
  double s = a->ap.planted_clip_scale;
  for (size_t i = 0; i < ds->n; i++) a->pcaps[i] = caps[i] * s;
  int rc = dpgd_model_clipped_grad_sum(m, ws, ds, a->pcaps, sum, NULL, post);
  for (size_t i = 0; !rc && i < ds->n; i++)
    if (post[i] > caps[i] * caps[i]) post[i] = caps[i] * caps[i];
  return rc;
}

/* The claim: eps at delta of the training releases alone (every step's noisy sum, as the
 * plan accounts it; the stopping queries are left out). Then the planted bug, if a test
 * asked for one: less noise than the claim assumes. */
static int claim_and_plant(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  a->delta = r->plan.delta;
  dpgd_accountant *acct = dpgd_acct_alloc();
  if (!acct) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  int rc = DPGD_OK;
  for (size_t t = 1; !rc && t <= r->plan.steps; t++) rc = dpgd_plan_add_step(acct, &r->plan, t);
  dpgd_acct_value v;
  if (!rc) rc = dpgd_acct_epsilon(acct, DPGD_ACCT_EXACT, a->delta, &v);
  dpgd_acct_free(acct);
  if (rc) return rc;
  a->eps_claimed = v.value;
  a->sigma = r->plan.sigma;
  a->q_claimed = r->plan.sampling == DPGD_SAMPLING_POISSON ? r->plan.sample_rate : 1;
  r->plan.sigma *= a->ap.planted_noise_scale;
  r->plan.sample_rate /= a->ap.planted_rate_scale; /* sampled faster than accounted */
  if (a->ap.planted_clip_scale != 1) {
    a->pcaps = calloc(r->m.n, sizeof *a->pcaps);
    if (!a->pcaps) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the planted caps");
    dpgd_run_set_sum(r, planted_sum, a);
  }
  return dpgd_gdp_mu(a->eps_claimed, a->delta, &a->mu_claimed);
}

/* What the audit cannot run. */
static int check_config(const dpgd_config *c)
{
  /* The auditor reveals the base points' sample, which leaves each canary's guarantee
   * intact only when canaries are sampled independently (Poisson): not so for subset. */
  if (c->train_sampling == DPGD_SAMPLING_SUBSET)
    return DPGD_FAIL(DPGD_EINVAL,
                     "dpgd audit does not support %s = subset (its canaries "
                     "are not sampled independently); use full or poisson",
                     DPGD_CONFIG_KEY(train_sampling));
  /* The canaries' shadow ledger is Algorithm 7's; the filter under subsampling charges
   * RDP (train/DPSGD_FILTER.md), which it does not model. */
  if (c->filter_enabled && c->train_sampling == DPGD_SAMPLING_POISSON)
    return DPGD_FAIL(DPGD_EINVAL, "dpgd audit does not support %s = true with %s = poisson",
                     DPGD_CONFIG_KEY(filter_enabled), DPGD_CONFIG_KEY(train_sampling));
  /* The audited run reads base then canaries: a held-out tail would be the canaries. */
  if (c->data_validation)
    return DPGD_FAIL(DPGD_EINVAL,
                     "dpgd audit does not support %s (it evaluates on the test "
                     "split)",
                     DPGD_CONFIG_KEY(data_validation));
  return DPGD_OK;
}

/* The audited run's master seed: derived from the audit seed unless the caller keeps the
 * config's (train/AUDIT.md "The audited run's seed"). The canaries' own stream is the
 * audit seed's `audit` stream, never this seed's. */
static int run_seed(dpgd_audit *a)
{
  if (a->ap.keep_train_seed) return DPGD_OK;
  dpgd_seed s = dpgd_seed_from_u64(a->ap.seed);
  if (dpgd_stream_derive_seed(&s, DPGD_AUDIT_RUN_PURPOSE, &a->cfg.train_seed))
    return DPGD_FAIL(DPGD_EINVAL, "cannot derive the audited run's seed (libsodium)");
  return DPGD_OK;
}

/* The audited run: a pixel model reads audit_data as dpgd train reads a data directory;
 * a scatter-* model is given the features of the same rows. */
static int open_run(dpgd_audit *a, const char *dir)
{
  if (!dpgd_run_is_scatter(&a->cfg)) return dpgd_run_open(&a->run, &a->cfg, dir);
  dpgd_dataset *train = NULL, *test = NULL;
  int rc = dpgd_audit_features(a, &train);
  if (rc) return rc;
  if (a->ap.kind == DPGD_AUDIT_GRADIENT) {
    /* Gradient rows from the start (their coordinates are drawn once P is known,
     * dpgd_audit_grad_attach): the run never reads their zero features. */
    a->coords = calloc(a->M, sizeof *a->coords);
    if (!a->coords) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu gradient canaries", a->M);
    train->fixed_from = a->n_base;
    train->fixed_coord = a->coords;
  }
  test = a->test;
  a->test = NULL; /* the run's now */
  if (rc) {
    dpgd_data_free(train);
    return rc;
  }
  return dpgd_run_open_given(&a->run, &a->cfg, dir, train, test);
}

int dpgd_audit_open(dpgd_audit **out, const dpgd_config *c, const char *dir,
                    const dpgd_audit_params *p)
{
  *out = NULL;
  dpgd_audit_params pp = *p; /* the planted clip and rate scales: 0 (unset) is 1 */
  if (pp.planted_clip_scale == 0) pp.planted_clip_scale = 1;
  if (pp.planted_rate_scale == 0) pp.planted_rate_scale = 1;
  p = &pp;
  int rc = check_params(p);
  if (rc) return rc;
  rc = check_config(c);
  if (rc) return rc;
  dpgd_audit *a = calloc(1, sizeof *a);
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the audit");
  a->cfg = *c;
  a->ap = *p;
  a->M = p->canaries;
  a->t0 = dpgd_run_now_s();
  rc = run_seed(a);
  if (!rc) rc = dpgd_audit_load_base(a);
  if (!rc) {
    a->n_base = a->base->n;
    rc = dpgd_audit_make_canaries(a);
  }
  if (!rc) rc = check_dir_free(dir);
  if (!rc) rc = dpgd_run_make_dirs(dir);
  if (!rc) rc = dpgd_audit_write_data(a, dir);
  if (!rc) rc = open_run(a, dir);
  if (!rc) a->P = a->run->P;
  if (!rc) rc = dpgd_audit_grad_attach(a);
  if (!rc) rc = alloc_state(a);
  if (!rc) rc = claim_and_plant(a);
  if (rc) {
    dpgd_audit_free(a);
    return rc;
  }
  *out = a;
  return DPGD_OK;
}

int dpgd_audit_done(const dpgd_audit *a) { return dpgd_run_done(a->run); }
const dpgd_run *dpgd_audit_run(const dpgd_audit *a) { return a->run; }

const double *dpgd_audit_scores(const dpgd_audit *a, const uint8_t **in, size_t *M)
{
  *in = a->in;
  *M = a->M;
  return a->score;
}

/* The base points' clipped sum at theta_t (the model holds theta_t) under a->bcaps,
 * subtracted from resid. */
static int subtract_base(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  int rc =
      dpgd_model_clipped_grad_sum(r->model, r->ws, r->train, a->bcaps, a->base_sum, NULL, NULL);
  if (rc) return rc;
  for (size_t k = 0; k < a->P; k++) a->resid[k] -= a->base_sum[k];
  return DPGD_OK;
}

/* The canaries as the run holds them: a view of its training rows n_base .. n_base +
 * M - 1 (images, or a scatter model's features), no gradient rows. */
static dpgd_dataset canary_rows(const dpgd_audit *a)
{
  dpgd_dataset v = *a->run->train;
  v.n = a->M;
  if (v.pixels) v.pixels += a->n_base * v.d;
  if (v.feat) v.feat += a->n_base * v.d;
  v.labels += a->n_base;
  v.fixed_coord = NULL;
  v.fixed_from = 0;
  return v;
}

/* Gradient canaries, at theta_t: the coming step's code signs h(r_j, t) (the run's
 * fixed_sign); canary j's clipped value c_t(j) at its shadow cap, signed, computed by
 * the engine over the canaries' gradient rows alone (gd[k]: the sum over coordinate k's
 * canaries of h c), and resid = -(base part) - (1/2) gd; csq[k]: the sum of c^2 over
 * coordinate k's canaries (Poisson sampling only: its score's interference, after_step_grad). */
static int before_step_grad(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  size_t t = dpgd_run_step_index(r), M = a->M;
  for (size_t j = 0; j < M; j++) a->sign[j] = dpgd_audit_code_sign(a->code[j], t, a->codes);
  dpgd_ledger_caps(a->shadow, a->ccaps);
  dpgd_dataset gds = canary_rows(a); /* M gradient rows, their pixels or features unused */
  gds.fixed_from = 0;
  gds.fixed_coord = a->coords;
  gds.fixed_sign = a->sign;
  gds.fixed_value = r->train->fixed_value;
  int rc = dpgd_model_clipped_grad_sum(r->model, r->ws, &gds, a->ccaps, a->gd, NULL, a->cpost);
  if (rc) return rc;
  for (size_t k = 0; k < a->P; k++) a->resid[k] -= 0.5 * a->gd[k];
  if (a->q_claimed < 1) { /* only the Poisson score uses csq */
    memset(a->csq, 0, a->P * sizeof *a->csq);
    for (size_t j = 0; j < M; j++) a->csq[a->coords[j]] += a->cpost[j];
  }
  return dpgd_ledger_spend(a->shadow, a->ccaps, a->cpost);
}

/* Before the step, at theta_t: resid = -(1/2) sum_j G_j - (base points' clipped sum),
 * with the base caps the run is about to use and the canaries' own (shadow) caps. Under
 * Poisson sampling the base part waits for the step's sample (after_step). */
static int before_step(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  size_t P = a->P, M = a->M;
  memcpy(a->theta, dpgd_model_params(r->model), P * sizeof *a->theta);
  dpgd_ledger_caps(r->ledger, a->bcaps);
  for (size_t j = 0; j < M; j++) a->bcaps[a->n_base + j] = 0;
  memset(a->resid, 0, P * sizeof *a->resid);
  int rc = r->rng_sample ? DPGD_OK : subtract_base(a);
  if (rc) return rc;
  if (a->ap.kind == DPGD_AUDIT_GRADIENT) return before_step_grad(a);
  dpgd_ledger_caps(a->shadow, a->ccaps);
  const dpgd_dataset all = canary_rows(a);
  dpgd_dataset one = all;
  one.n = 1;
  for (size_t j = 0; j < M; j++) {
    if (all.pixels) one.pixels = all.pixels + j * one.d;
    if (all.feat) one.feat = all.feat + j * one.d;
    one.labels = all.labels + j;
    rc = dpgd_model_clipped_grad_sum(r->model, a->ws1, &one, &a->ccaps[j], a->gd, NULL,
                                     &a->cpost[j]);
    if (rc) return rc;
    float *g = a->G + j * P;
    for (size_t k = 0; k < P; k++) {
      g[k] = (float)a->gd[k];
      a->resid[k] -= 0.5 * a->gd[k];
    }
  }
  return dpgd_ledger_spend(a->shadow, a->ccaps, a->cpost);
}

/* DP-SGD: the base points the step sampled, summed at theta_t. Revealing the BASE points'
 * sample to the auditor keeps each canary's guarantee (its own sampling stays hidden and
 * is independent of the others'); the canaries' samples are never used. */
static int subtract_sampled_base(dpgd_audit *a)
{
  dpgd_run *r = a->run;
  float *theta = dpgd_model_params(r->model);
  for (size_t i = 0; i < a->n_base; i++)
    if (!r->in[i]) a->bcaps[i] = 0;
  for (size_t k = 0; k < a->P; k++) {
    float t = theta[k];
    theta[k] = a->theta[k];
    a->theta[k] = t;
  }
  int rc = subtract_base(a);
  memcpy(theta, a->theta, a->P * sizeof *theta); /* theta_{t+1} back */
  return rc;
}

/* Gradient canaries after the step, canary j on coordinate k with sign h = h(r_j, t):
 * y = h times k's residual (released sum - base part - gd/2). Full batch: the score adds
 * y (with the base part's sums for audit_report.c's scale fit); the other canaries on k
 * cancel over the steps (Walsh rows are orthogonal over every K consecutive steps). Poisson:
 * x = h (released - base) - (q/2) (the others' h c, gd - h c) = B c + noise + the
 * others' deviation from their mean, B ~ Bernoulli(q) when included, 0 when not; the
 * score adds the step's log-likelihood ratio log(1 - q + q e^{(x c - c^2/2) / s^2}),
 * s^2 = (sigma C)^2 (claimed) plus the others' variance (q/2 - q^2/4) sum c^2: the
 * Neyman-Pearson statistic of the step for one canary per coordinate (c^2 is the
 * post-clip norm the ledger charged, the cap: c within 2^-20 of it). */
static void after_step_grad(dpgd_audit *a)
{
  double s2 = a->sigma * a->run->plan.clip, q = a->q_claimed;
  s2 *= s2;
  const double l0 = q < 1 ? log1p(-q) : 0, lq = q < 1 ? log(q) : 0; /* the same every canary */
  for (size_t j = 0; j < a->M; j++) {
    size_t k = a->coords[j];
    double h = a->sign[j], y = h * (a->run->sum[k] + a->resid[k]), b = h * a->base_sum[k];
    if (q < 1) {
      double c = sqrt(a->cpost[j]), others = a->gd[k] - h * c;
      double x = y + 0.5 * h * a->gd[k] - 0.5 * q * h * others;
      double v = s2 + (0.5 * q - 0.25 * q * q) * (a->csq[k] - a->cpost[j]);
      double t = (x * c - 0.5 * c * c) / v, l1 = lq + t;
      a->score[j] += l0 > l1 ? l0 + log1p(exp(l1 - l0)) : l1 + log1p(exp(l0 - l1));
      continue;
    }
    a->score[j] += y;
    a->sb[j] += b, a->syb[j] += y * b, a->sbb[j] += b * b;
  }
}

/* After the step: resid += the released noisy sum; score_j += <G_j, resid>; the Gram
 * matrix of the canaries' gradients gains this step's G G^T (audit_report.c solves with
 * it). */
static int after_step(dpgd_audit *a)
{
  size_t P = a->P, M = a->M;
  int rc = a->run->rng_sample ? subtract_sampled_base(a) : DPGD_OK;
  if (rc) return rc;
  if (a->ap.kind == DPGD_AUDIT_GRADIENT) {
    after_step_grad(a);
    return DPGD_OK;
  }
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)M, (int)P, 1.0f, a->G, (int)P, 0.0f,
              a->gstep, (int)M);
  for (size_t i = 0; i < M; i++)
    for (size_t j = i; j < M; j++) a->gram[i * M + j] += a->gstep[i * M + j];
  for (size_t k = 0; k < P; k++) a->resid[k] += a->run->sum[k];
  for (size_t j = 0; j < a->M; j++) {
    const float *g = a->G + j * P;
    double s = 0;
    for (size_t k = 0; k < P; k++) s += (double)g[k] * a->resid[k];
    a->score[j] += s;
  }
  return DPGD_OK;
}

int dpgd_audit_step(dpgd_audit *a)
{
  int rc = before_step(a);
  if (!rc) rc = dpgd_run_step(a->run);
  if (!rc) rc = after_step(a);
  return rc;
}
