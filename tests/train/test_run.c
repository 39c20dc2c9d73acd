/* test_run.c -- the training loop on a small synthetic IDX dataset with the softmax
 * model: Algorithm 7 with B = k C^2 equals Algorithm 6 bit for bit; the ledger
 * invariant at every step of a run that exhausts points; zero active points give a
 * noise-only update divided by the public n (checked against an independent replay of
 * the noise stream); private stopping is accounted (eps equals the Gaussian curve at the
 * composed mu, and exceeds the run without queries); releases equal noise draws;
 * same seed -> same model, other seed -> other model; the initial parameters are the
 * init stream's words, one per parameter (all 256 seed bits); the non-private diagnostics change
 * no released value; bad plans are refused; every shipped config plans. Checkpoints and
 * resuming: test_run_resume.c; secure mode: test_run_secure.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
#define SLURP(run, name, len) tt_slurp_in(dir, run, name, len)
#define ASSERT_SAME_FILE(a, b, name) tt_assert_same_file(dir, a, b, name)
enum { N_TRAIN = 240, N_TEST = 120 };

/* Algorithm 7 with B = k C^2 and k_max = k against Algorithm 6, same seed: the same
 * parameters after every step and the same model file. With C = 0.375 every gradient is
 * clipped at every step, so every point exhausts its budget exactly on the last step;
 * with C = 2.375 some points stop being clipped. */
static void alg6_vs_alg7(const char *model, double clip, const char *n6, const char *n7)
{
  dpgd_config c6, c7;
  tt_full_config(&c6, dir, n6);
  tt_full_config(&c7, dir, n7);
  snprintf(c6.model_type, sizeof c6.model_type, "%s", model);
  snprintf(c7.model_type, sizeof c7.model_type, "%s", model);
  /* CNN with 2 threads: its parallel reduction must be deterministic run to run. */
  c6.model_threads = c7.model_threads = strcmp(model, "cnn") ? 1 : 2;
  c6.privacy_clip = c7.privacy_clip = clip;
  c7.filter_enabled = 1;
  c7.filter_k = 12; /* B = k C^2, k_max = k = train.steps */
  dpgd_run *r6 = tt_open_run(&c6), *r7 = tt_open_run(&c7);
  size_t P;
  while (!dpgd_run_done(r6)) {
    assert_int_equal(dpgd_run_step(r6), DPGD_OK);
    assert_int_equal(dpgd_run_step(r7), DPGD_OK);
    const float *a = dpgd_run_params(r6, &P), *b = dpgd_run_params(r7, NULL);
    assert_memory_equal(a, b, P * sizeof(float));
  }
  assert_true(dpgd_run_done(r7));
  const dpgd_ledger *l = dpgd_run_ledger(r7);
  assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  size_t exhausted = l->n - dpgd_ledger_active(l);
  print_message("  %s, C = %g: %zu of %zu points exhausted after k steps\n", model, clip,
                exhausted, l->n);
  if (clip < 1) assert_int_equal(exhausted, l->n);
  assert_int_equal(dpgd_run_finish(r6), DPGD_OK);
  assert_int_equal(dpgd_run_finish(r7), DPGD_OK);
  ASSERT_SAME_FILE(n6, n7, "model.bin");
  /* Same guarantee: Algorithm 7's mu is sqrt(B)/(sigma C) = sqrt(k)/sigma. */
  assert_true(fabs(dpgd_run_plan(r7)->mu_train - sqrt(12.0) / 3.7) < 1e-14);
  assert_true(dpgd_run_eps_now(r7) == dpgd_run_eps_now(r6));
  dpgd_run_free(r6);
  dpgd_run_free(r7);
}

static void test_alg6_equals_alg7(void **state)
{
  (void)state;
  alg6_vs_alg7("softmax", 2.375, "alg6", "alg7");
  alg6_vs_alg7("softmax", 0.375, "alg6c", "alg7c");
  alg6_vs_alg7("cnn", 0.375, "alg6cnn", "alg7cnn");
}

/* A budget of 1.5 C^2: points are exhausted after two steps, the ledger invariant is
 * checked after every step, and once no point is active the update is the noise alone,
 * divided by the public n: theta_{t+1} = theta_t - lr * N(0, sigma^2 C^2 I) / n, with the
 * noise replayed here from the step stream. */
static void test_ledger_and_zero_active(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "zero");
  c.filter_enabled = 1;
  c.filter_budget = 1.5 * 2.375 * 2.375;
  c.train_steps = 6;
  dpgd_run *r = tt_open_run(&c);
  const dpgd_plan *p = dpgd_run_plan(r);
  assert_int_equal(p->full_steps, 1);
  size_t P;
  const float *theta = dpgd_run_params(r, &P);
  float *before = malloc(P * sizeof *before);
  double *noise = calloc(P, sizeof *noise);
  dpgd_rng *replay = dpgd_rng_alloc(DPGD_RNG_RESEARCH, &c.train_seed, DPGD_STREAM_STEP);
  int saw_zero = 0;
  while (!dpgd_run_done(r)) {
    memcpy(before, theta, P * sizeof *before);
    int zero_before = dpgd_ledger_active(dpgd_run_ledger(r)) == 0;
    memset(noise, 0, P * sizeof *noise);
    assert_int_equal(dpgd_rng_gaussian_add(replay, p->sigma * p->clip, noise, P), DPGD_OK);
    assert_int_equal(dpgd_run_step(r), DPGD_OK);
    assert_int_equal(dpgd_ledger_check(dpgd_run_ledger(r)), DPGD_OK);
    if (zero_before) {
      saw_zero = 1;
      double scale = c.train_lr / (double)N_TRAIN;
      for (size_t j = 0; j < P; j++)
        assert_true(theta[j] == (float)((double)before[j] - scale * noise[j]));
      /* The applied noise, (before - after) n / lr, has std sigma C: its sample std over
       * P coordinates is within 5 standard errors (about sigma C / sqrt(2P) each; false
       * alarm below 1e-6) of sigma C. Float rounding of theta is far below that. */
      double ss = 0;
      for (size_t j = 0; j < P; j++) {
        double z = ((double)before[j] - (double)theta[j]) / scale;
        ss += z * z;
      }
      double sd = sqrt(ss / (double)P), want = p->sigma * p->clip;
      assert_true(fabs(sd / want - 1) < 5 / sqrt(2.0 * (double)P));
    }
  }
  assert_true(saw_zero);
  const dpgd_ledger *l = dpgd_run_ledger(r);
  for (size_t i = 0; i < l->n; i++) assert_true(l->spend[i] == l->budget);
  /* The running guarantee stopped growing at B: mu = sqrt(1.5)/sigma. */
  assert_true(fabs(dpgd_plan_mu_train(p, 6) - sqrt(1.5) / 3.7) < 1e-14);
  assert_int_equal(dpgd_run_finish(r), DPGD_OK);
  dpgd_rng_free(replay);
  free(before);
  free(noise);
  dpgd_run_free(r);
}

/* Stopping queries: eps of the run equals the Gaussian curve at
 * mu = sqrt(B/(sigma C)^2 + m/tau^2), and exceeds the run without queries. */
static void test_stopping_accounted(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "stop");
  c.filter_enabled = 1;
  c.filter_k = 4;
  c.train_steps = 0; /* derived: 4 + (3 - 1) * 2 = 8 */
  c.stopping_queries = 3;
  c.stopping_every = 2;
  c.stopping_tau_frac = 0.05;
  dpgd_run *r = tt_open_run(&c);
  const dpgd_plan *p = dpgd_run_plan(r);
  assert_int_equal(p->steps, 8);
  assert_int_equal(p->first_query, 4);
  tt_finish_run(r);
  double tau = 0.05 * N_TRAIN;
  double mu = sqrt(4.0 / (3.7 * 3.7) + 3.0 / (tau * tau)), want;
  assert_int_equal(dpgd_gdp_epsilon(mu, c.privacy_delta, &want), DPGD_OK);
  double got = dpgd_run_eps_now(r);
  print_message("  eps with 3 queries %.9g, closed form %.9g\n", got, want);
  assert_true(fabs(got - want) <= 1e-9 * want);
  assert_true(fabs(p->eps[DPGD_ACCT_EXACT] - want) <= 1e-9 * want); /* planned = done */
  /* Algorithm 7: 8 step draws and 3 query draws; the accountant holds the 4 full-norm
   * steps and the 3 queries: steps after B_norm/C^2 add nothing (the filter bounds every
   * point's sum of mu^2 by B_norm/(sigma C)^2, docs/MATH.md "Private gradient descent"). */
  assert_int_equal(dpgd_run_noise_draws(r), 8 + 3);
  assert_int_equal(dpgd_run_releases(r), 4 + 3);
  dpgd_config c0 = c;
  c0.stopping_queries = 0;
  c0.train_steps = 8;
  snprintf(c0.output_dir, sizeof c0.output_dir, "%s/stop0", dir);
  dpgd_run *r0 = tt_open_run(&c0);
  tt_finish_run(r0);
  assert_true(dpgd_run_eps_now(r0) < got);
  dpgd_run_free(r0);
  /* summary.json says which iterate was selected; metrics rows carry the queries. */
  size_t len;
  char *sum = (char *)SLURP("stop", "summary.json", &len);
  assert_non_null(strstr(sum, "\"queries\": 3"));
  assert_non_null(strstr(sum, "\"rng\": \"research\""));
  /* A research run says its noise is reproducible; its time is outside the guarantee. */
  char *cav = strstr(sum, "\"caveat\": \"");
  assert_non_null(cav);
  assert_non_null(strstr(cav, "reproducible"));
  /* ... and exactly when its eps holds: a seed of 128 secret bits; seed 1 is public. */
  assert_non_null(strstr(cav, "at least 128 bits of secret entropy and stays secret"));
  assert_non_null(strstr(cav, "the default seed (1) is public"));
  assert_non_null(strstr(cav, "train.rng = secure"));
  char *np = strstr(sum, "\"nonprivate\": {\"wall_s\": ");
  assert_non_null(np);
  assert_true(strstr(sum, "\"wall_s\"") > np); /* the only wall_s is the nonprivate one */
  assert_non_null(strstr(sum, "\"odometer\": {\"level_mu2\": "));
  free(sum);
  /* points.csv: spend_frac = spend / B; active iff spend < B; the level is the smallest
   * m with total <= m Delta (total = spend/(sigma C)^2 + queries/tau^2), or the higher
   * level whose statement is smaller; mu_i = sqrt(level Delta), delta_level its share, eps_i the GDP curve at (mu_i,
   * delta_level); a point that spent all of B is at the top level, at most 1% above
   * the run's mu; the ledger is the run's. */
  char *pts = (char *)SLURP("stop", "points.csv", &len), *line = strchr(pts, '\n') + 1;
  assert_true(pts[0] == '#');
  const char hdr[] = "index,label,spend,spend_frac,active,level,delta_level,mu_i,eps_i\n";
  assert_true(!strncmp(line, hdr, sizeof hdr - 1));
  line = strchr(line, '\n') + 1;
  const dpgd_ledger *l = dpgd_run_ledger(r);
  const dpgd_plan *pl = dpgd_run_plan(r);
  const dpgd_odometer *od = &pl->odometer;
  double sc = pl->sigma * pl->clip;
  size_t rows = 0;
  for (; *line; line = strchr(line, '\n') + 1, rows++) {
    size_t idx, level;
    unsigned lab;
    int active;
    double spend, frac, dl, mu_i, eps_i, eps_want;
    assert_int_equal(sscanf(line, "%zu,%u,%lf,%lf,%d,%zu,%lf,%lf,%lf", &idx, &lab, &spend,
                            &frac, &active, &level, &dl, &mu_i, &eps_i),
                     9);
    assert_int_equal(idx, rows);
    assert_true(spend == l->spend[idx]);
    assert_true(fabs(frac - spend / l->budget) <= 1e-9);
    assert_int_equal(active, spend < l->budget);
    long double total =
        (long double)spend / ((long double)sc * sc) + 3.0L / ((long double)pl->tau * pl->tau);
    assert_true(level >= 1 && level <= od->levels);
    assert_true(total <= (long double)level * od->level_mu2);
    size_t realised;
    assert_int_equal(dpgd_odometer_level(od, (double)total * (1 + 1e-13), &realised), DPGD_OK);
    assert_int_equal(level, od->statement[realised]);
    assert_true(fabs(mu_i - sqrt(level * od->level_mu2)) <= 1e-9 * mu_i);
    assert_true(dl >= dpgd_odometer_delta(od, level) &&
                dl <= dpgd_odometer_delta(od, level) * (1 + 1e-9));
    if (!active) {
      assert_int_equal(level, od->levels);
      assert_true(mu_i >= mu * (1 - 1e-9) && mu_i <= mu * 1.01);
    }
    assert_int_equal(dpgd_gdp_epsilon(mu_i, dl, &eps_want), DPGD_OK);
    assert_true(fabs(eps_i - eps_want) <= 1e-8 * eps_want);
  }
  assert_int_equal(rows, N_TRAIN);
  size_t spent = N_TRAIN - dpgd_ledger_active(l);
  print_message("  points.csv: %zu of %d points spent all of B_norm\n", spent, N_TRAIN);
  assert_true(spent > 0 && spent < N_TRAIN); /* both kinds of rows were checked */
  free(pts);
  dpgd_run_free(r);
}

/* Plain run with queries: every noise draw (one per step, one per query) is one
 * release in the accountant. */
static void test_releases_equal_draws(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "draws");
  c.stopping_queries = 4;
  c.stopping_every = 3;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  assert_int_equal(dpgd_run_noise_draws(r), 12 + 4);
  assert_int_equal(dpgd_run_releases(r), 12 + 4);
  assert_int_equal(dpgd_run_plan(r)->first_query, 12 - 9);
  dpgd_run_free(r);
}

static void test_reproducible(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "seedA");
  c.train_steps = 5;
  dpgd_run *a = tt_open_run(&c);
  snprintf(c.output_dir, sizeof c.output_dir, "%s/seedA2", dir);
  dpgd_run *b = tt_open_run(&c);
  c.train_seed.b[0] ^= 0x80; /* the same low 255 bits: only bit 255 differs */
  snprintf(c.output_dir, sizeof c.output_dir, "%s/seedB", dir);
  dpgd_run *d = tt_open_run(&c);
  tt_finish_run(a);
  tt_finish_run(b);
  tt_finish_run(d);
  size_t P;
  const float *pa = dpgd_run_params(a, &P);
  assert_memory_equal(pa, dpgd_run_params(b, NULL), P * sizeof(float));
  assert_memory_not_equal(pa, dpgd_run_params(d, NULL), P * sizeof(float));
  ASSERT_SAME_FILE("seedA", "seedA2", "points.csv");
  ASSERT_SAME_FILE("seedA", "seedA2", "metrics.csv");
  /* The long seed stays in config.ini (a resume needs it), not in summary.json. */
  size_t len;
  char *ini = (char *)SLURP("seedB", "config.ini", &len);
  assert_non_null(strstr(
      ini, "\nseed = 0x8000000000000000000000000000000000000000000000000000000000000951\n"));
  free(ini);
  char *sum = (char *)SLURP("seedB", "summary.json", &len);
  assert_non_null(strstr(sum, "\"seed\": null"));
  free(sum);
  sum = (char *)SLURP("seedA", "summary.json", &len);
  assert_non_null(strstr(sum, "\"seed\": 2385,"));
  free(sum);
  dpgd_run_free(a);
  dpgd_run_free(b);
  dpgd_run_free(d);
}

/* The initial parameters come from the init stream itself, one 64-bit word per
 * parameter (parameter j from word j: u = (w >> 11) 2^-53, (2u - 1)/sqrt(784) for the
 * softmax's weight and bias alike), so they depend on every bit of the seed. Before,
 * one word of that stream seeded splitmix64: 64 bits fixed all of them, and two seeds
 * whose init streams share their first word gave the same model. Checked for a 256-bit
 * seed, with the stream replayed here word by word, and in secure mode a model of
 * finite values within the bound that is not the research one. */
static void test_init_from_stream(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "init");
  c.train_steps = 1;
  char why[200];
  assert_int_equal(
      dpgd_seed_parse(&c.train_seed,
                      "0xf3a94c0e5d27b1688e0c4d5b6a79f01d2c3b4a5968778695a4b3c2d1e0f11223", why,
                      sizeof why),
      DPGD_OK);
  dpgd_run *r = tt_open_run(&c);
  size_t P;
  const float *p = dpgd_run_params(r, &P);
  const dpgd_dataset *ds = dpgd_run_train_set(r);
  size_t d = ds->rows * ds->cols;
  assert_int_equal(P, 10 * d + 10);
  double bound = 1.0 / sqrt((double)d);
  dpgd_rng *s = dpgd_rng_alloc(DPGD_RNG_RESEARCH, &c.train_seed, DPGD_STREAM_INIT);
  assert_non_null(s);
  for (size_t j = 0; j < P; j++) {
    uint64_t w;
    assert_int_equal(dpgd_rng_u64(s, &w), DPGD_OK);
    float want = (float)((2.0 * ((double)(w >> 11) * 0x1p-53) - 1.0) * bound);
    if (memcmp(&p[j], &want, sizeof want))
      fail_msg("parameter %zu is %.9g, the init stream's word %zu gives %.9g", j, p[j], j,
               want);
  }
  dpgd_rng_free(s);
  float *research = malloc(P * sizeof *research);
  assert_non_null(research);
  memcpy(research, p, P * sizeof *research);
  dpgd_run_free(r);
  tt_full_config(&c, dir, "init_secure");
  c.train_steps = 1;
  c.train_rng = DPGD_RNG_SECURE;
  r = tt_open_run(&c);
  p = dpgd_run_params(r, NULL);
  for (size_t j = 0; j < P; j++) assert_true(fabs(p[j]) <= bound);
  assert_memory_not_equal(p, research, P * sizeof *research);
  free(research);
  dpgd_run_free(r);
}

/* The non-private diagnostics only observe: a filtered run with private stopping gives
 * the same model.bin and points.csv with diagnostics on as with them off, and each
 * metrics row is the same row plus the three diag_* columns; the last diag_active is the
 * ledger's active count. If a diagnostic ever reached training or the choice of the
 * returned iterate, the run's guarantee would not hold. */
static size_t diag_run(const char *name, int diagnostics)
{
  dpgd_config c;
  tt_stopping_config(&c, dir, name, 4, diagnostics);
  /* B = 3 C^2: the 240 points' spends over the 9 steps lie well on both sides of it
   * (most gradients are near C in the first steps, small once the training set is
   * fitted), so some points run out and others do not. */
  c.filter_k = 3;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  size_t active = dpgd_ledger_active(dpgd_run_ledger(r));
  dpgd_run_free(r);
  return active;
}

static void test_diagnostics_only_observe(void **state)
{
  (void)state;
  diag_run("nodiag", 0);
  size_t active = diag_run("diag", 1);
  assert_true(active > 0 && active < N_TRAIN); /* some points ran out, not all */
  ASSERT_SAME_FILE("nodiag", "diag", "model.bin");
  ASSERT_SAME_FILE("nodiag", "diag", "points.csv");

  static const char diag_cols[] = ",diag_train_loss,diag_train_acc,diag_active";
  size_t la, lb, rows = 0, last_active = 0;
  char *a = (char *)SLURP("nodiag", "metrics.csv", &la);
  char *b = (char *)SLURP("diag", "metrics.csv", &lb);
  char *pa = a, *pb = b;
  while (pa < a + la) {
    char *ea = memchr(pa, '\n', (size_t)(a + la - pa));
    char *eb = memchr(pb, '\n', (size_t)(b + lb - pb));
    assert_non_null(ea);
    assert_non_null(eb);
    size_t na = (size_t)(ea - pa), nb = (size_t)(eb - pb);
    /* the same text, then the diagnostic columns */
    assert_true(nb > na && pb[na] == ',');
    assert_memory_equal(pa, pb, na);
    if (rows == 0) {
      assert_true(nb - na == strlen(diag_cols) && !memcmp(pb + na, diag_cols, nb - na));
    } else {
      char *last = eb;
      while (last[-1] != ',') last--;
      last_active = strtoul(last, NULL, 10);
    }
    rows++;
    pa = ea + 1;
    pb = eb + 1;
  }
  assert_true(pb == b + lb);
  assert_true(rows > 5);
  assert_int_equal(last_active, active);
  free(a);
  free(b);
}

static void test_bad_plans(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_plan p;
  tt_full_config(&c, dir, "bad");
  c.stopping_queries = 5;
  c.stopping_every = 3; /* 4 * 3 = 12 steps span: first query at step 0: no room */
  assert_int_equal(dpgd_plan_make(&p, &c, 100), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "do not fit"));
  tt_full_config(&c, dir, "bad");
  c.filter_enabled = 1;
  c.filter_k = 3;
  c.train_steps = 4;
  c.stopping_queries = 2;
  c.stopping_every = 2; /* queries at 3 and 5 > 4 */
  assert_int_equal(dpgd_plan_make(&p, &c, 100), DPGD_EINVAL);
  tt_full_config(&c, dir, "bad");
  c.privacy_sigma = 0;
  assert_int_equal(dpgd_plan_make(&p, &c, 100), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "privacy.sigma"));
  tt_full_config(&c, dir, "bad");
  snprintf(c.model_type, sizeof c.model_type, "mlp");
  dpgd_run *r = NULL;
  assert_int_not_equal(dpgd_run_open(&r, &c, NULL), DPGD_OK);
  assert_null(r);
}

/* Plans every shipped config (configs/ and configs/paper/) at n = 60000 without
 * data. The paper configs against Feldman & Zrnic, Appendix A: the tuned (sigma, C, k) of each
 * eps; filtering keeps sigma and C with B_norm = k C^2; the suboptimal variants never
 * exceed the tuned training guarantee (steps rounded down, or B_norm scaled) and keep
 * the same noise std sigma C (clipping) or C (noise); the exact variants are calibrated
 * to the nominal eps from below (within 0.1%). */
static double plan_of(const char *file, dpgd_plan *p)
{
  char path[1024];
  const char *src = getenv("DPGD_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/configs/%s", src && src[0] ? src : DPGD_SOURCE_DIR, file);
  dpgd_config c;
  dpgd_config_defaults(&c);
  int rc = dpgd_config_load(&c, path);
  if (!rc) rc = dpgd_plan_make(p, &c, 60000);
  if (rc) print_error("%s: %s\n", path, dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  return p->mu_train;
}

static void test_configs(void **state)
{
  (void)state;
  static const struct {
    const char *eps;
    double nominal, sigma, clip, steps, factor;
  } paper[] = {{"03", 0.3, 170, 10, 112, 1.5},
               {"05", 0.5, 130, 15, 180, 1.5},
               {"10", 1.0, 100, 10, 420, 2}};
  const double tol = 1e-12;
  for (size_t e = 0; e < sizeof paper / sizeof paper[0]; e++) {
    char f[128];
    dpgd_plan p, q;
    snprintf(f, sizeof f, "paper/eps%s-plain.ini", paper[e].eps);
    double mu = plan_of(f, &p);
    assert_true(!p.filtered && p.sigma == paper[e].sigma && p.clip == paper[e].clip &&
                p.steps == (size_t)paper[e].steps);
    snprintf(f, sizeof f, "paper/eps%s-filtered.ini", paper[e].eps);
    assert_true(plan_of(f, &q) == mu);
    assert_true(q.filtered && q.sigma == p.sigma && q.clip == p.clip &&
                q.budget == paper[e].steps * p.clip * p.clip);
    if (e < 2) assert_true(q.steps == q.full_steps + 35 && q.queries == 8 && q.every == 5);
    for (int v = 0; v < 4; v++) {
      static const char *variant[] = {"subclip-plain", "subclip-filtered", "subnoise-plain",
                                      "subnoise-filtered"};
      double k = paper[e].factor;
      snprintf(f, sizeof f, "paper/eps%s-%s.ini", paper[e].eps, variant[v]);
      assert_true(plan_of(f, &q) <= mu * (1 + tol));
      /* sigma written with 10 digits, rounded up (more noise) */
      assert_true(q.sigma >= paper[e].sigma / k && q.sigma <= paper[e].sigma / k * (1 + 1e-9));
      double want_clip = v < 2 ? paper[e].clip * k : paper[e].clip;
      assert_true(fabs(q.clip - want_clip) <= tol * want_clip);
      if (!q.filtered) assert_true(q.steps == (size_t)floor(paper[e].steps / (k * k)));
    }
    for (int v = 0; v < 2; v++) {
      snprintf(f, sizeof f, "paper/eps%s-exact-%s.ini", paper[e].eps, v ? "filtered" : "plain");
      plan_of(f, &q);
      double got = q.eps[DPGD_ACCT_EXACT];
      assert_true(got <= paper[e].nominal && got >= 0.999 * paper[e].nominal);
      assert_true(q.eps[DPGD_ACCT_EXACT] > p.eps[DPGD_ACCT_EXACT]);
    }
  }
  static const char *other[] = {"softmax.ini", "quickstart-plain.ini",
                                "quickstart-filtered.ini"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    dpgd_plan p;
    plan_of(other[i], &p);
    assert_true(p.eps[DPGD_ACCT_EXACT] > 0 && p.eps[DPGD_ACCT_EXACT] <= 1);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alg6_equals_alg7),
      cmocka_unit_test(test_ledger_and_zero_active),
      cmocka_unit_test(test_stopping_accounted),
      cmocka_unit_test(test_releases_equal_draws),
      cmocka_unit_test(test_reproducible),
      cmocka_unit_test(test_init_from_stream),
      cmocka_unit_test(test_diagnostics_only_observe),
      cmocka_unit_test(test_bad_plans),
      cmocka_unit_test(test_configs),
  };
  return tt_run_banded("test_run", tests, sizeof tests / sizeof tests[0], &dir, N_TRAIN,
                       N_TEST);
}
