/* plan.c -- what a config means before the first step (docs/MATH.md "Private gradient
 * descent", "Subsampling", "Calibration"):
 * noise calibration (for Poisson sampling: on the subsampled Gaussian's composition),
 * the filter budget, derived step count, the stopping-query schedule, and the guarantee
 * of the whole planned run under every accounting method. Also the public running
 * guarantee mu(t) and the releases one step adds to the accountant, shared by the plan
 * and the training loop so that both account the same way. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_accounting.h"
#include "plan_internal.h"

double dpgd_plan_mu_train(const dpgd_plan *p, size_t t)
{
  if (p->sampling != DPGD_SAMPLING_FULL) return NAN;
  /* sqrt(min(B, t C^2)) / (sigma C), written so that no C^2 over- or underflows */
  double steps = (double)t;
  if (p->filtered) {
    double full = p->budget / (p->clip * p->clip);
    if (full < steps) steps = full;
  }
  return sqrt(steps) / p->sigma;
}

size_t dpgd_plan_queries_by(const dpgd_plan *p, size_t t)
{
  if (p->queries == 0 || t < p->first_query) return 0;
  size_t q = (t - p->first_query) / p->every + 1;
  return q < p->queries ? q : p->queries;
}

int dpgd_plan_query_due(const dpgd_plan *p, size_t t)
{
  return p->queries > 0 && t >= p->first_query && (t - p->first_query) % p->every == 0 &&
         (t - p->first_query) / p->every < p->queries;
}

/* Releases of training step t (1-based), as Gaussian mechanisms: Algorithm 6 and the
 * first floor(B/C^2) steps of Algorithm 7 are Gaussians with mu = 1/sigma (clipped
 * sensitivity C, noise sigma C). The filter bounds the rest of Algorithm 7 by the
 * remaining sum of mu^2, (B - floor(B/C^2) C^2)/(sigma C)^2, added at step
 * floor(B/C^2) + 1 (docs/MATH.md "Private gradient descent": fully adaptive GDP
 * composition under a filter);
 * later steps add nothing. The composition after t steps is mu_train(t). Poisson
 * sampling: every step is a Poisson-subsampled Gaussian, rate q, noise multiplier sigma
 * (docs/MATH.md "Subsampling"), the mechanism the sampler of the step runs; subset sampling: a
 * without-replacement Gaussian under replace-one neighbours (accounting/SAMPLING.md). */
/* A discrete run's releases are discrete Gaussians of the same mu: integer sums of
 * sensitivity <= C 2^F (a count: 1) with noise sigma_grid >= sigma C 2^F (tau), so
 * Delta / sigma_grid <= mu (model/SENSITIVITY.md 8). Under the filter the Renyi filter of
 * Feldman & Zrnic bounds the rest by the same RDP curve (docs/MATH.md "Discrete
 * Gaussian"). */
static int add_noise(dpgd_accountant *a, const dpgd_plan *p, double mu, uint64_t count)
{
  return p->discrete ? dpgd_acct_add_discrete_gaussian(a, mu, count)
                     : dpgd_acct_add_gaussian(a, mu, count);
}

int dpgd_plan_add_step(dpgd_accountant *a, const dpgd_plan *p, size_t t)
{
  if (p->sampling != DPGD_SAMPLING_FULL) return dpgd_plan_add_sampled(a, p, p->sigma, 1);
  if (!p->filtered || t <= p->full_steps) return add_noise(a, p, 1.0 / p->sigma, 1);
  if (t == p->full_steps + 1) {
    double rest = p->budget - (double)p->full_steps * p->clip * p->clip;
    if (rest > 0) return add_noise(a, p, sqrt(rest) / (p->sigma * p->clip), 1);
  }
  return DPGD_OK;
}

int dpgd_plan_add_query(dpgd_accountant *a, const dpgd_plan *p)
{
  return add_noise(a, p, 1.0 / p->tau, 1);
}

double dpgd_plan_noise_std_up(const dpgd_plan *p)
{
  double s = p->sigma * p->clip;
  return fma(p->sigma, p->clip, -s) > 0 ? nextafter(s, INFINITY) : s;
}

/* Accountant of the whole run up to step t, queries included. Composition does not
 * depend on order, so the releases go in as counted entries (time independent of t):
 * the same mechanisms the training loop adds one step at a time. */
int dpgd_plan_accountant(dpgd_accountant **out, const dpgd_plan *p, size_t t)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  size_t full = p->filtered && t > p->full_steps ? p->full_steps : t;
  int rc = DPGD_OK;
  if (p->sampling != DPGD_SAMPLING_FULL && t) rc = dpgd_plan_add_sampled(a, p, p->sigma, t);
  else if (full) rc = add_noise(a, p, 1.0 / p->sigma, full);
  if (!rc && full < t) rc = dpgd_plan_add_step(a, p, full + 1); /* the filter's rest */
  size_t q = dpgd_plan_queries_by(p, t);
  if (!rc && q) rc = add_noise(a, p, 1.0 / p->tau, q);
  if (rc) {
    dpgd_acct_free(a);
    return rc;
  }
  *out = a;
  return DPGD_OK;
}

void dpgd_plan_epsilons(const dpgd_accountant *a, double delta, double *eps, int *status)
{
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    dpgd_acct_value v;
    int rc = dpgd_acct_epsilon(a, (dpgd_acct_method)m, delta, &v);
    eps[m] = rc ? NAN : v.value;
    if (status) status[m] = rc;
  }
  dpgd_error_clear(); /* a method that is not available is reported as n/a, not an error */
}

/* floor(B / C^2), corrected so that it equals the number of C^2 additions that fit. */
size_t dpgd_plan_full_steps(double budget, double clip)
{
  double c2 = clip * clip, f = floor(budget / c2);
  if (f > 1e15) return (size_t)1e15;
  if (f > 0 && f * c2 > budget) f -= 1;
  if ((f + 1) * c2 <= budget) f += 1;
  return (size_t)f;
}

/* Limits of double and size_t that a config can cross before any planning starts. */
static int check_ranges(const dpgd_config *c)
{
  double c2 = c->privacy_clip * c->privacy_clip;
  if (!(c2 >= DBL_MIN) || !isfinite(c2))
    return DPGD_FAIL(DPGD_ERANGE,
                     "%s = %g: its square is outside the range of "
                     "double precision",
                     DPGD_CONFIG_KEY(privacy_clip), c->privacy_clip);
  if (c->stopping_queries > 1 && c->stopping_every > (SIZE_MAX / 2) / (c->stopping_queries - 1))
    return DPGD_FAIL(DPGD_ERANGE,
                     "stopping: %zu queries every %zu steps span more steps "
                     "than can be counted",
                     c->stopping_queries, c->stopping_every);
  return DPGD_OK;
}

/* The planned queries, passed to calibration as `extra` (NULL when there are none). */
static int planned_queries(dpgd_accountant **extra, const dpgd_plan *p)
{
  *extra = NULL;
  if (p->queries == 0) return DPGD_OK;
  *extra = dpgd_acct_alloc();
  if (!*extra) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  return dpgd_acct_add_gaussian(*extra, 1.0 / p->tau, p->queries);
}

/* A value the calibration would overwrite is a contradiction, not a default. */
static int check_calibration_conflicts(const dpgd_config *c, const dpgd_plan *p)
{
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA && c->privacy_sigma > 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = %g conflicts with %s = sigma, which "
                     "computes sigma (set %s = none to use the given sigma, or %s = 0 to "
                     "calibrate)",
                     DPGD_CONFIG_KEY(privacy_sigma), c->privacy_sigma,
                     DPGD_CONFIG_KEY(privacy_calibrate), DPGD_CONFIG_KEY(privacy_calibrate),
                     DPGD_CONFIG_KEY(privacy_sigma));
  if (c->privacy_calibrate == DPGD_CALIBRATE_BUDGET && p->filtered &&
      (c->filter_budget > 0 || c->filter_k > 0))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s/%s conflict with %s = budget, which "
                     "computes B_norm (set %s = none to use a given budget)",
                     DPGD_CONFIG_KEY(filter_budget), DPGD_CONFIG_KEY(filter_k),
                     DPGD_CONFIG_KEY(privacy_calibrate), DPGD_CONFIG_KEY(privacy_calibrate));
  return DPGD_OK;
}

/* eps under method m of `steps` Poisson-subsampled Gaussians (rate q, multiplier sigma)
 * composed with `extra`. A method that cannot answer is an error naming it: taking its
 * silence for "not private enough" would push sigma up to where it answers, far above
 * the smallest sigma. */
static int subsampled_eps(const dpgd_plan *p, dpgd_acct_method m, double sigma, uint64_t steps,
                          const dpgd_accountant *extra, double *eps)
{
  dpgd_accountant *a = extra ? dpgd_acct_clone(extra) : dpgd_acct_alloc();
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  dpgd_acct_value v;
  int rc = dpgd_plan_add_sampled(a, p, sigma, steps);
  if (!rc) rc = dpgd_acct_epsilon(a, m, p->delta, &v);
  dpgd_acct_free(a);
  if (rc)
    return DPGD_FAIL(rc,
                     "calibration: %s = %s cannot evaluate %llu %s-subsampled Gaussians "
                     "at q = %g, sigma = %g (%s); try another %s, or more steps",
                     DPGD_CONFIG_KEY(privacy_method), dpgd_acct_method_name(m),
                     (unsigned long long)steps,
                     p->sampling == DPGD_SAMPLING_SUBSET ? "subset" : "Poisson", p->sample_rate,
                     sigma, dpgd_error_last(), DPGD_CONFIG_KEY(privacy_method));
  *eps = v.value;
  return DPGD_OK;
}

/* The next sigma to try inside (lo, hi) where eps - target changes sign (f = log eps -
 * log target: flo > 0 >= fhi): regula falsi in log sigma, kept away from the ends
 * (within the middle 98 %), bisection where the values give no direction. */
static double next_sigma(double lo, double hi, double flo, double fhi)
{
  double xl = log(lo), xh = log(hi), t = flo / (flo - fhi);
  if (!(t >= 0.01 && t <= 0.99)) t = t < 0.01 ? 0.01 : t > 0.99 ? 0.99 : 0.5;
  return exp(xl + t * (xh - xl));
}

/* The calibrating method: the configured one, but for a discrete run rdp_optimal in
 * place of exact, which has no curve for the discrete Gaussian. The rdp_* and zcdp
 * methods answer the same for a Gaussian as for a discrete Gaussian of the same mu (one
 * RDP curve, docs/MATH.md "Discrete Gaussian"), so calibrating on Gaussians with them is
 * calibrating on the proven bound; state_guarantee then states the run's eps from the
 * discrete entries themselves. */
static dpgd_acct_method calib_method(const dpgd_plan *p, const dpgd_config *c)
{
  if (p->discrete && c->privacy_method == DPGD_ACCT_EXACT) return DPGD_ACCT_RDP_OPTIMAL;
  return (dpgd_acct_method)c->privacy_method;
}

/* The smallest sigma (to DPGD_PLAN_SIGMA_RTOL, rounded up) whose `steps` subsampled
 * releases and `extra` give eps(delta) <= eps under method m: a bracket by doubling and
 * halving from sigma = 1, then the Illinois variant of regula falsi in log sigma (an end
 * kept twice in a row has its value halved), falling back to bisection; the upper end,
 * where eps was seen to hold, is the answer (docs/MATH.md "Calibration": round sigma up). */
#define DPGD_PLAN_SIGMA_RTOL 1e-7

static int calibrate_subsampled_search(dpgd_plan *p, const dpgd_config *c, uint64_t steps,
                                       const dpgd_accountant *extra)
{
  dpgd_acct_method m = calib_method(p, c);
  double target = c->privacy_epsilon, lo = 0, hi = 1, e, flo = 0, fhi = 0;
  int rc = subsampled_eps(p, m, hi, steps, extra, &e);
  for (int i = 0; !rc && e > target; i++) {
    if (i == 64)
      return DPGD_FAIL(DPGD_ERANGE, "calibration: no sigma up to %g reaches %s = %g", hi,
                       DPGD_CONFIG_KEY(privacy_epsilon), target);
    lo = hi, hi *= 2, flo = log(e / target);
    rc = subsampled_eps(p, m, hi, steps, extra, &e);
  }
  fhi = rc ? 0 : log(e / target);
  for (int i = 0; !rc && lo == 0; i++) {
    if (i == 64) return DPGD_FAIL(DPGD_ERANGE, "calibration: sigma below %g", hi);
    rc = subsampled_eps(p, m, hi / 2, steps, extra, &e);
    if (!rc && e > target) lo = hi / 2, flo = log(e / target);
    else if (!rc) hi /= 2, fhi = log(e / target);
  }
  for (int side = 0, bisect = 0; !rc && hi - lo > hi * DPGD_PLAN_SIGMA_RTOL;) {
    double mid = bisect ? sqrt(lo * hi) : next_sigma(lo, hi, flo, fhi), w = hi - lo;
    if (!(mid > lo && mid < hi)) break;
    rc = subsampled_eps(p, m, mid, steps, extra, &e);
    if (rc) break;
    double f = log(e / target);
    if (e > target) lo = mid, flo = f, fhi *= side == 1 ? 0.5 : 1, side = 1;
    else hi = mid, fhi = f, flo *= side == -1 ? 0.5 : 1, side = -1;
    bisect = !bisect && hi - lo > 0.5 * w; /* a poor step: bisect once */
  }
  if (!rc) p->sigma = hi;
  return rc;
}

/* A memo of this search within a thread: dpgd select plans its grid's cells one after
 * another at every per-run eps it tries, and cells that differ only in what the
 * accountant does not see (a learning rate) calibrate the same composition. The key is
 * everything the search reads, compared byte for byte: the composition at sigma = 1
 * serialized (sampling, rate, batch, steps and the queries in `extra`; at any sigma the
 * composition is that one with the noise multiplier replaced), the method, the target
 * and delta. Only successful searches are kept; a key over CALIB_MEMO_BYTES is not. */
#define CALIB_MEMO_N 8
#define CALIB_MEMO_BYTES 1024
typedef struct {
  size_t len; /* 0: empty */
  unsigned char key[CALIB_MEMO_BYTES];
  dpgd_acct_method m;
  double target, delta, sigma;
} calib_memo;
static _Thread_local calib_memo memo[CALIB_MEMO_N];
static _Thread_local unsigned memo_next;

/* The memo key of the search into k (k->len = 0 where there is none). */
static void memo_key(const dpgd_plan *p, dpgd_acct_method m, double target, uint64_t steps,
                     const dpgd_accountant *extra, calib_memo *k)
{
  k->len = 0;
  dpgd_accountant *a = extra ? dpgd_acct_clone(extra) : dpgd_acct_alloc();
  void *buf = NULL;
  size_t len = 0;
  if (a && !dpgd_plan_add_sampled(a, p, 1.0, steps) && !dpgd_acct_serialize(a, &buf, &len) &&
      len > 0 && len <= CALIB_MEMO_BYTES) {
    memcpy(k->key, buf, len);
    k->len = len, k->m = m, k->target = target, k->delta = p->delta;
  }
  dpgd_free(buf);
  dpgd_acct_free(a);
  dpgd_error_clear();
}

static const calib_memo *memo_find(const calib_memo *k)
{
  for (int i = 0; k->len && i < CALIB_MEMO_N; i++)
    if (memo[i].len == k->len && memo[i].m == k->m && memo[i].target == k->target &&
        memo[i].delta == k->delta && !memcmp(memo[i].key, k->key, k->len))
      return &memo[i];
  return NULL;
}

static int calibrate_subsampled(dpgd_plan *p, const dpgd_config *c, uint64_t steps,
                                const dpgd_accountant *extra)
{
  calib_memo k;
  memo_key(p, calib_method(p, c), c->privacy_epsilon, steps, extra, &k);
  const calib_memo *hit = memo_find(&k);
  if (hit) {
    p->sigma = hit->sigma;
    return DPGD_OK;
  }
  int rc = calibrate_subsampled_search(p, c, steps, extra);
  if (!rc && k.len) {
    k.sigma = p->sigma;
    memo[memo_next++ % CALIB_MEMO_N] = k;
  }
  return rc;
}

/* sigma and B_norm: given, or calibrated to privacy.epsilon with the queries in `extra`. */
static int calibrate_noise(dpgd_plan *p, const dpgd_config *c, const dpgd_accountant *extra)
{
  dpgd_acct_method method = calib_method(p, c);
  int rc = DPGD_OK;
  if (p->filtered && c->privacy_calibrate != DPGD_CALIBRATE_BUDGET)
    p->budget = c->filter_budget > 0 ? c->filter_budget : c->filter_k * p->clip * p->clip;

  p->sigma = c->privacy_sigma;
  if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA && p->sampling == DPGD_SAMPLING_POISSON &&
      p->filtered) {
    rc = dpgd_plan_sg_calibrate(p, c->filter_k, c->privacy_epsilon);
    if (rc) return rc;
  } else if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA &&
             p->sampling != DPGD_SAMPLING_FULL) {
    rc = calibrate_subsampled(p, c, p->steps, extra);
    if (rc) return rc;
  } else if (c->privacy_calibrate == DPGD_CALIBRATE_SIGMA) {
    /* Filtered: B/C^2 full-norm steps, rounded up (more noise: the private direction). */
    double k = p->filtered ? ceil(p->budget / (p->clip * p->clip)) : (double)c->train_steps;
    rc = dpgd_calibrate_sigma(method, c->privacy_epsilon, p->delta, (uint64_t)k, extra,
                              &p->sigma);
    if (rc) return rc;
  } else if (c->privacy_calibrate == DPGD_CALIBRATE_BUDGET) {
    rc = dpgd_calibrate_budget(method, c->privacy_epsilon, p->delta, p->sigma, p->clip, extra,
                               &p->budget);
    if (rc) return rc;
  }
  if (!(p->sigma > 0) || !isfinite(p->sigma))
    return DPGD_FAIL(DPGD_ERANGE, "noise multiplier sigma = %g is not usable", p->sigma);
  if (p->filtered && (!(p->budget > 0) || !isfinite(p->budget)))
    return DPGD_FAIL(DPGD_ERANGE, "filter budget B_norm = %g is not usable", p->budget);
  return DPGD_OK;
}

/* Filtered: train.steps, or (when 0) the full-norm steps plus the query span. */
static void derive_steps(dpgd_plan *p, const dpgd_config *c)
{
  if (p->filtered && p->sampling != DPGD_SAMPLING_POISSON) {
    p->full_steps = dpgd_plan_full_steps(p->budget, p->clip);
    p->steps = c->train_steps;
    if (p->steps == 0)
      p->steps = p->full_steps + (p->queries ? (p->queries - 1) * p->every : 0);
    if (p->steps == 0) p->steps = 1;
  } else if (p->sampling == DPGD_SAMPLING_FULL) {
    p->steps = c->train_steps;
    p->full_steps = p->steps;
  }
}

/* Poisson: train.steps, or ceil(train.epochs / q) (a step sees q n points on average).
 * Known before the calibration, which needs it. */
static int poisson_steps(dpgd_plan *p, const dpgd_config *c)
{
  double k = c->train_steps ? (double)c->train_steps : ceil(c->train_epochs / p->sample_rate);
  if (!(k >= 1) || k > 1e12)
    return DPGD_FAIL(DPGD_ERANGE, "%s = %g at %s = %g gives %g steps (1 to 1e12)",
                     DPGD_CONFIG_KEY(train_epochs), c->train_epochs,
                     DPGD_CONFIG_KEY(train_sample_rate), p->sample_rate, k);
  p->steps = p->full_steps = (size_t)k;
  return DPGD_OK;
}

/* The stopping queries: from floor(B/C^2) on when filtered, else the last ones. */
static int schedule_queries(dpgd_plan *p)
{
  if (p->queries == 0) return DPGD_OK;
  size_t span = (p->queries - 1) * p->every;
  if (p->filtered) p->first_query = p->full_steps > 0 ? p->full_steps : 1;
  else p->first_query = p->steps > span ? p->steps - span : 0;
  if (p->first_query == 0 || p->first_query + span > p->steps)
    return DPGD_FAIL(DPGD_EINVAL,
                     "stopping: %zu queries every %zu steps%s do not fit in %zu steps "
                     "(%s)",
                     p->queries, p->every, p->filtered ? " after floor(B_norm/C^2)" : "",
                     p->steps, DPGD_CONFIG_KEY(train_steps));
  return DPGD_OK;
}

/* The guarantee of the whole planned run, and the per-point report's levels. */
static int state_guarantee(dpgd_plan *p)
{
  int poisson = p->sampling == DPGD_SAMPLING_POISSON;
  int subset = p->sampling == DPGD_SAMPLING_SUBSET;
  p->mu_train = dpgd_plan_mu_train(p, p->steps);
  p->mu_total = sqrt(p->mu_train * p->mu_train + (double)p->queries / (p->tau * p->tau));
  dpgd_accountant *all = NULL;
  int rc = dpgd_plan_accountant(&all, p, p->steps);
  if (rc) return rc;
  dpgd_plan_epsilons(all, p->delta, p->eps, p->eps_status);
  p->eps_continuous = p->discrete ? dpgd_acct_continuous_epsilon(all, p->delta) : NAN;
  dpgd_acct_free(all);
  dpgd_plan_pick_report(p);
  if (subset && !isfinite(p->eps[p->report_method]))
    return DPGD_FAIL(DPGD_ERANGE,
                     "no rdp_* method can state the planned run's eps (%zu subset-sampled "
                     "Gaussians, m = %zu of n = %zu, sigma = %g); change %s, %s or %s",
                     p->steps, p->batch_size, p->n, p->sigma, DPGD_CONFIG_KEY(train_batch_size),
                     DPGD_CONFIG_KEY(train_steps), DPGD_CONFIG_KEY(privacy_sigma));
  /* A run whose guarantee cannot be stated does not run (e.g. tau -> 0: a query with
   * no noise). */
  if (poisson && !isfinite(p->eps[p->report_method]))
    return DPGD_FAIL(DPGD_ERANGE,
                     "the %s accountant cannot state the planned run's eps (%zu "
                     "Poisson-subsampled %sGaussians at q = %g, sigma = %g: %s); change %s, "
                     "%s or %s",
                     dpgd_acct_method_name((dpgd_acct_method)p->report_method), p->steps,
                     p->discrete ? "discrete " : "", p->sample_rate, p->sigma,
                     dpgd_error_str(p->eps_status[p->report_method]),
                     DPGD_CONFIG_KEY(train_sample_rate), DPGD_CONFIG_KEY(train_steps),
                     DPGD_CONFIG_KEY(privacy_sigma));
  if (!poisson && !subset &&
      (!isfinite(p->mu_total) ||
       !isfinite(p->eps[p->discrete ? p->report_method : DPGD_ACCT_EXACT])))
    return DPGD_FAIL(DPGD_ERANGE,
                     "the planned run has no finite guarantee (mu = %g; check "
                     "%s, %s and %s)",
                     p->mu_total, DPGD_CONFIG_KEY(privacy_sigma), DPGD_CONFIG_KEY(privacy_clip),
                     DPGD_CONFIG_KEY(stopping_tau_frac));
  /* Poisson or subset: no odometer (its levels are stated in GDP; the subsampled releases
   * are not Gaussian). Filtered Poisson: the filter's own guarantee
   * (train/DPSGD_FILTER.md). */
  p->filter_eps = NAN;
  if (poisson && p->filtered)
    return dpgd_plan_sg_epsilon(p->sample_rate, p->sigma, p->filter_k, p->delta,
                                &p->filter_eps);
  /* Discrete: no odometer either (its levels are stated in GDP, which no theorem gives
   * the discrete Gaussian). */
  if (poisson || subset || p->discrete) return DPGD_OK;
  /* The per-point report's levels, fixed before any data is seen. Padded by 2^-40 so
   * that a point's total, rounded up, never lands above the top level. */
  double step_mu2 = 1.0 / (p->sigma * p->sigma);
  if (p->queries && 1.0 / (p->tau * p->tau) > step_mu2) step_mu2 = 1.0 / (p->tau * p->tau);
  return dpgd_odometer_init(&p->odometer, p->mu_total * (1 + 0x1p-40), step_mu2, p->delta);
}

int dpgd_plan_make(dpgd_plan *p, const dpgd_config *c, size_t n)
{
  int rc = dpgd_config_validate(c);
  if (rc) return rc;
  /* A pnsgd run is driven by dpgd_pnsgd_* (train/pnsgd.c); it has no checkpoint to resume. */
  if (c->train_algorithm == DPGD_ALGO_PNSGD)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = pnsgd is trained by dpgd train (dpgd_pnsgd_*), not by this "
                     "trainer; its runs have no checkpoint and cannot be resumed (a pass "
                     "releases nothing until it ends: start it again)",
                     DPGD_CONFIG_KEY(train_algorithm));
  if (n == 0) return DPGD_FAIL(DPGD_EINVAL, "the training set is empty");
  rc = check_ranges(c);
  if (rc) return rc;
  *p = (dpgd_plan){0};
  p->filtered = c->filter_enabled;
  p->filter_k = c->filter_k;
  p->refresh = c->filter_refresh > 0 ? (size_t)c->filter_refresh : 1;
  p->hold = c->filter_hold;
  p->sampling = c->train_sampling;
  rc = dpgd_plan_secure_check(c);
  if (rc) return rc;
  p->discrete = c->train_rng == DPGD_RNG_SECURE; /* full or plain Poisson: integer path */
  p->grid_bits = -1;
  p->sample_rate = p->sampling == DPGD_SAMPLING_POISSON ? c->train_sample_rate : 1;
  p->n = n;
  p->clip = c->privacy_clip;
  p->delta = c->privacy_delta;
  p->queries = c->stopping_queries;
  p->every = c->stopping_every;
  p->tau = c->stopping_tau_frac * (double)n;

  dpgd_accountant *extra = NULL;
  rc = planned_queries(&extra, p);
  if (!rc) rc = check_calibration_conflicts(c, p);
  if (!rc && p->sampling == DPGD_SAMPLING_POISSON) rc = poisson_steps(p, c);
  if (!rc && p->sampling == DPGD_SAMPLING_SUBSET) rc = dpgd_plan_subset_setup(p, c);
  if (!rc) rc = calibrate_noise(p, c, extra);
  if (!rc) derive_steps(p, c);
  if (!rc) rc = schedule_queries(p);
  if (!rc && p->discrete)
    rc = dpgd_model_grid_bits(n, p->clip, dpgd_plan_noise_std_up(p), &p->grid_bits);
  if (!rc) rc = state_guarantee(p);
  dpgd_acct_free(extra);
  return rc;
}
