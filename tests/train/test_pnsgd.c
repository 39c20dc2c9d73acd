/* test_pnsgd.c -- hidden-iterate training (train/LASTITERATE.md): the derived constants
 * against an independent double-precision computation; L against gradient norms of real
 * MNIST points and of adversarial corners of the feature box (independent formula and
 * the engine); the gradient step at eta = 2/beta is 1-Lipschitz (and the check would see
 * an expansion at 4/beta); the run's reported eps equals the accountant's dpgd_iter_*;
 * refusals; a small run learns; same seed, same bytes; the order depends on the seed only. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>

#include "data/testutil.h"
#include "dpgd_model.h"
#include "dpgd_train.h"
#include "ttest.h"

enum { D = 784, K = 10, P = K * (D + 1) };

static char mnist[1000];
static dpgd_dataset *train; /* the first 2000 MNIST training points */

static int setup(void **state)
{
  (void)state;
  const char *env = getenv("DPGD_MNIST_DIR");
  if (!env || !env[0]) env = getenv("DPGD_MNIST_DIR_DEFAULT");
  if (dpgd_data_find_dir(mnist, sizeof mnist, env && env[0] ? env : NULL) != 0 ||
      dpgd_data_load(&train, mnist, "train") != 0) {
    fprintf(stderr, "MNIST: %s\n", dpgd_error_last());
    return -1;
  }
  return dpgd_data_truncate(train, 2000);
}

static int teardown(void **state)
{
  (void)state;
  dpgd_data_free(train);
  return 0;
}

/* ---- an independent double-precision softmax regression ---- */

/* The feature of pixel byte q in exact real arithmetic (not the code's float path). */
static double feat(int q, double mean, double std) { return (q / 255.0 - mean) / std; }

/* grad (P) of the cross-entropy at theta (W (K, D) then b (K)) for input x, label y;
 * returns its norm. */
static double grad_ref(double *grad, const double *theta, const double *x, int y)
{
  double z[K], zmax = -INFINITY, s = 0, xx = 0, rr = 0;
  for (int k = 0; k < K; k++) {
    z[k] = theta[K * D + k];
    for (int j = 0; j < D; j++) z[k] += theta[k * D + j] * x[j];
    zmax = fmax(zmax, z[k]);
  }
  for (int k = 0; k < K; k++) s += exp(z[k] - zmax);
  for (int j = 0; j < D; j++) xx += x[j] * x[j];
  for (int k = 0; k < K; k++) {
    double r = exp(z[k] - zmax) / s - (k == y);
    rr += r * r;
    if (grad) {
      for (int j = 0; j < D; j++) grad[k * D + j] = r * x[j];
      grad[K * D + k] = r;
    }
  }
  return sqrt(rr * (xx + 1));
}

static double dist(const double *a, const double *b)
{
  double s = 0;
  for (int i = 0; i < P; i++) s += (a[i] - b[i]) * (a[i] - b[i]);
  return sqrt(s);
}

static void consts_of(dpgd_pnsgd_consts *k, double mean, double std)
{
  assert_int_equal(dpgd_pnsgd_consts_make(k, D, (float)mean, (float)std), DPGD_OK);
}

/* X^2, L, beta and 2/beta against their closed forms in double. */
static void test_consts_closed_form(void **state)
{
  (void)state;
  const double ms[3][2] = {{0.1307, 0.3081}, {0.5, 0.25}, {0.0, 1.0}};
  for (int c = 0; c < 3; c++) {
    dpgd_pnsgd_consts k;
    consts_of(&k, ms[c][0], ms[c][1]);
    double a = feat(0, ms[c][0], ms[c][1]), b = feat(255, ms[c][0], ms[c][1]);
    double x2 = D * fmax(a * a, b * b);
    assert_true(fabs(k.feat_sq / x2 - 1) < 1e-6); /* the code's features are floats */
    assert_true(fabs(k.lipschitz / sqrt(2 * (x2 + 1)) - 1) < 1e-6);
    assert_true(fabs(k.smooth / ((x2 + 1) / 2) - 1) < 1e-6);
    assert_true(k.lr_max * k.smooth <= 2);
    assert_true(k.lr_max * k.smooth > 2 * (1 - 1e-12));
    assert_true(k.lipschitz * k.lipschitz >= 2 * (k.feat_sq + 1));
  }
}

/* Every MNIST point's gradient at several parameter vectors (including saturated ones)
 * is below L, by the independent formula and by the engine's own computed norm. */
static void test_lipschitz_mnist(void **state)
{
  (void)state;
  dpgd_pnsgd_consts k;
  consts_of(&k, train->mean, train->std);
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, K);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 1);
  double *theta = malloc(P * sizeof *theta), *x = malloc(D * sizeof *x);
  double *caps = malloc(train->n * sizeof *caps), *pre = malloc(train->n * sizeof *pre);
  double *sum = malloc(P * sizeof *sum);
  float *xf = malloc(D * sizeof *xf);
  for (size_t i = 0; i < train->n; i++) caps[i] = 1e300;
  const double scales[3] = {1, 40, 400}; /* 400: probabilities saturate at 0 and 1 */
  for (int s = 0; s < 3; s++) {
    dpgd_model_init(m, 7 + (uint64_t)s);
    float *w = dpgd_model_params(m);
    for (int j = 0; j < P; j++) theta[j] = w[j] *= (float)scales[s];
    assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, train, caps, sum, pre, NULL), DPGD_OK);
    double worst = 0;
    for (size_t i = 0; i < train->n; i++) {
      dpgd_data_unpack(xf, train, i, 1);
      for (int j = 0; j < D; j++) x[j] = xf[j];
      worst = fmax(worst, grad_ref(NULL, theta, x, train->labels[i]));
      assert_true(sqrt(pre[i]) <= k.lipschitz);
    }
    assert_true(worst <= k.lipschitz);
    if (s == 2) assert_true(worst > 0.3 * k.lipschitz); /* saturated: not a vacuous bound */
  }
  free(theta), free(x), free(caps), free(pre), free(sum), free(xf);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

/* Corners of the box (every pixel 0 or 255) with the label's probability near 0: the
 * gradient approaches L at the all-white corner; the engine's clipped vector stays
 * below L. */
static void test_lipschitz_corners(void **state)
{
  (void)state;
  dpgd_pnsgd_consts k;
  consts_of(&k, train->mean, train->std);
  dpgd_dataset *ds = dpgd_data_alloc(3, 28, 28, K);
  memset(ds->pixels, 255, D);   /* all white */
  memset(ds->pixels + D, 0, D); /* all black */
  tu_bytes(ds->pixels + 2 * D, D, 11);
  for (int j = 0; j < D; j++) ds->pixels[2 * D + j] = ds->pixels[2 * D + j] & 1 ? 255 : 0;
  ds->labels[0] = 3, ds->labels[1] = 0, ds->labels[2] = 9;
  ds->mean = train->mean, ds->std = train->std;
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, K);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 1);
  float *w = dpgd_model_params(m);
  memset(w, 0, P * sizeof *w);
  for (int c = 0; c < K; c++) w[K * D + c] = c == 5 ? 40.0f : -40.0f; /* p_5 ~ 1 */
  double caps[3] = {1e300, 1e300, 1e300}, pre[3], sum[P];
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, pre, NULL), DPGD_OK);
  for (int i = 0; i < 3; i++) assert_true(sqrt(pre[i]) <= k.lipschitz);
  assert_true(sqrt(pre[0]) > k.lipschitz * (1 - 1e-6)); /* L is tight at the corner */
  double cap = k.lipschitz * (1 - 0x1p-20), post[3];
  for (int i = 0; i < 3; i++) {
    dpgd_dataset one = *ds;
    one.n = 1, one.pixels += (size_t)i * D, one.labels += i;
    assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, &one, &cap, sum, pre, post), DPGD_OK);
    double s = 0;
    for (int j = 0; j < P; j++) s += sum[j] * sum[j];
    assert_true(sqrt(s) < k.lipschitz);
  }
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
  dpgd_data_free(ds);
}

/* ratio ||G(a) - G(b)|| / ||a - b|| of the exact-formula gradient step at eta. */
static double step_ratio(const double *a, const double *b, const double *x, int y, double eta)
{
  double *ga = malloc(P * sizeof *ga), *gb = malloc(P * sizeof *gb);
  grad_ref(ga, a, x, y);
  grad_ref(gb, b, x, y);
  for (int i = 0; i < P; i++) ga[i] = a[i] - eta * ga[i], gb[i] = b[i] - eta * gb[i];
  double r = dist(ga, gb) / dist(a, b);
  free(ga), free(gb);
  return r;
}

/* The gradient step at eta = 2/beta does not expand random pairs, nor the pair along the
 * Hessian's top eigenvector at the all-white corner (where the bound is tight); at
 * 4/beta the same check sees the expansion. */
static void test_step_nonexpansive(void **state)
{
  (void)state;
  dpgd_pnsgd_consts k;
  consts_of(&k, train->mean, train->std);
  double *a = malloc(P * sizeof *a), *b = malloc(P * sizeof *b), x[D];
  float xf[D];
  uint64_t st = 5;
  for (int trial = 0; trial < 20; trial++) {
    double scale = trial % 2 ? 0.05 : 2.0;
    for (int i = 0; i < P; i++) a[i] = scale * (2 * tu_urand(&st) - 1);
    for (int i = 0; i < P; i++) b[i] = a[i] + scale * (2 * tu_urand(&st) - 1);
    dpgd_data_unpack(xf, train, (size_t)trial * 37, 1);
    for (int j = 0; j < D; j++) x[j] = xf[j];
    assert_true(step_ratio(a, b, x, train->labels[trial * 37], k.lr_max) <= 1 + 1e-12);
  }
  /* p = (1/2, 1/2, 0, ...): lambda_max(H) = 1/2, eigenvector (1, -1, 0..)/sqrt 2. */
  double xw = feat(255, train->mean, train->std), h = 1e-6;
  for (int j = 0; j < D; j++) x[j] = xw;
  memset(a, 0, P * sizeof *a);
  for (int c = 0; c < K; c++) a[K * D + c] = c < 2 ? 30 : -30;
  for (int i = 0; i < P; i++) b[i] = a[i];
  for (int j = 0; j <= D; j++) {
    double u = j < D ? x[j] : 1;
    if (j < D) b[j] += h * u, b[D + j] -= h * u;
    else b[K * D] += h, b[K * D + 1] -= h;
  }
  double r = step_ratio(a, b, x, 0, k.lr_max);
  assert_true(r <= 1 + 1e-6);
  assert_true(r > 0.99); /* eta beta = 2: the bound is tight here */
  assert_true(step_ratio(a, b, x, 0, 2 * k.lr_max) > 2.9);
  free(a), free(b);
}

/* ---- runs ---- */

static void base_config(dpgd_config *c, const char *dir, size_t n)
{
  dpgd_config_defaults(c);
  const char *sets[] = {
      "model.type=softmax", "train.algorithm=pnsgd", "train.radius=50",
      "train.lr=0.0005",    "train.eval_every=0",    "output.checkpoint_every=0",
      "privacy.sigma=2.5",  "output.progress=false", "data.n_test=500"};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
    assert_int_equal(dpgd_config_set(c, sets[i]), DPGD_OK);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", mnist);
  snprintf(c->output_dir, sizeof c->output_dir, "%s", dir);
  c->data_n_train = n;
}

static double run_through(const dpgd_config *c)
{
  dpgd_pnsgd *r = NULL;
  int rc = dpgd_pnsgd_open(&r, c, NULL);
  if (rc) fail_msg("open: %s", dpgd_error_last());
  while (!dpgd_pnsgd_done(r)) assert_int_equal(dpgd_pnsgd_step(r), DPGD_OK);
  double acc = NAN;
  rc = dpgd_pnsgd_finish(r, &acc);
  if (rc) fail_msg("finish: %s", dpgd_error_last());
  dpgd_pnsgd_free(r);
  return acc;
}

/* The number after "key": following the first occurrence of `after` in text. */
static double json_num(const char *text, const char *after, const char *key)
{
  const char *p = strstr(text, after);
  assert_non_null(p);
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  p = strstr(p, pat);
  assert_non_null(p);
  return strtod(p + strlen(pat), NULL);
}

static void assert_rounded(double printed, double value)
{
  double want = dpgd_round_digits(value, 10, 1);
  assert_true(fabs(printed - want) <= 1e-15 * want);
  assert_true(printed >= value * (1 - 1e-15));
}

/* summary.json's guarantees are dpgd_iter_* of (n, t, g = L, sigma, eta, 2R), the
 * setting built here from the independent constants. */
static void check_summary(const char *text, const dpgd_config *c, size_t n)
{
  dpgd_pnsgd_consts k;
  consts_of(&k, c->data_mean, c->data_std);
  assert_true(json_num(text, "{", "lipschitz") == k.lipschitz);
  assert_true(json_num(text, "{", "sigma") == c->privacy_sigma);
  /* the only guarantee is t = n; t < n are exact-arithmetic diagnostics (the float steps
   * are not 1-Lipschitz, LASTITERATE.md section 7), in their own labelled object */
  const char *g = strstr(text, "\"guarantee\""),
             *d = strstr(text, "\"diagnostics_exact_arithmetic\"");
  assert_non_null(g), assert_non_null(d);
  assert_true(d > g && strstr(g, "\"worst\"") < d);
  assert_true(strstr(g, "\"mid\"") > d && strstr(g, "\"first\"") > d);
  assert_non_null(strstr(d, "NOT privacy guarantees"));
  const char *names[3] = {"\"worst\"", "\"mid\"", "\"first\""};
  size_t at[3] = {n, (n + 1) / 2, 1};
  for (int i = 0; i < 3; i++) {
    dpgd_iter_setting s = {.n = n,
                           .t = at[i],
                           .grad_sens = k.lipschitz,
                           .sigma = c->privacy_sigma,
                           .eta = c->train_lr,
                           .diameter = 2 * c->train_radius};
    dpgd_acct_value it, con, comp;
    assert_int_equal(dpgd_iter_epsilon(&s, DPGD_ACCT_RDP_OPTIMAL, c->privacy_delta, &it), 0);
    assert_int_equal(dpgd_iter_contraction_epsilon(&s, c->privacy_delta, &con), 0);
    assert_int_equal(
        dpgd_iter_composition_epsilon(&s, DPGD_ACCT_EXACT, c->privacy_delta, &comp), 0);
    assert_true(json_num(text, names[i], "position") == (double)at[i]);
    assert_rounded(json_num(text, names[i], "rho"), dpgd_iter_rho(&s));
    assert_rounded(json_num(text, names[i], "iteration"), it.value);
    assert_rounded(json_num(text, names[i], "contraction"), con.value);
    assert_rounded(json_num(text, names[i], "composition"), comp.value);
    assert_rounded(json_num(text, names[i], "eps"), fmin(it.value, con.value));
  }
  /* the worst position is one Gaussian step: contraction = composition there */
  assert_true(json_num(text, "\"worst\"", "contraction") ==
              json_num(text, "\"worst\"", "composition"));
}

/* A small run learns (independently re-evaluated from model.bin), reports what the
 * accountant says, and the same seed gives the same bytes. */
static void test_run_summary_and_bytes(void **state)
{
  (void)state;
  char *dir = tu_tmpdir(), a[900], b[900];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  dpgd_config c;
  base_config(&c, a, 400);
  double acc = run_through(&c);
  assert_true(acc > 0.5); /* chance is 0.1 */
  size_t len;
  char *text = (char *)tt_slurp_in(dir, "a", "summary.json", &len);
  check_summary(text, &c, 400);
  free(text);
  dpgd_model *m = NULL;
  char p[1000];
  snprintf(p, sizeof p, "%s/model.bin", a);
  assert_int_equal(dpgd_model_load(&m, p), DPGD_OK);
  dpgd_dataset *test = NULL;
  assert_int_equal(dpgd_data_load(&test, mnist, "test"), DPGD_OK);
  size_t correct = 0;
  assert_int_equal(dpgd_model_evaluate(m, test, 0, 500, 1, NULL, &correct, NULL), DPGD_OK);
  assert_true(fabs((double)correct / 500 - acc) < 1e-12);
  dpgd_data_free(test);
  dpgd_model_free(m);
  base_config(&c, b, 400);
  run_through(&c);
  tt_assert_same_file(dir, "a", "b", "model.bin");
  tt_assert_same_file(dir, "a", "b", "points.csv");
  tt_assert_same_file(dir, "a", "b", "positions.csv");
  /* the same directory again is refused: it holds a finished run */
  dpgd_pnsgd *r = NULL;
  assert_int_equal(dpgd_pnsgd_open(&r, &c, NULL), DPGD_EINVAL);
  dpgd_run *rr = NULL; /* the other trainer's resume refuses a pnsgd directory */
  assert_int_not_equal(dpgd_run_resume(&rr, b), DPGD_OK);
  dpgd_run_free(rr);
  tu_rmtree(dir);
  free(dir);
}

/* The order is a permutation drawn from the seed alone: the same on other data of the
 * same size, another with another seed; w_0 lies in the ball. */
static void test_order(void **state)
{
  (void)state;
  char *dir = tu_tmpdir(), a[900], syn[900];
  snprintf(syn, sizeof syn, "%s/syn", dir);
  assert_int_equal(mkdir(syn, 0755), 0);
  tt_write_banded_split(syn, "train", 300, 3);
  tt_write_banded_split(syn, "t10k", 50, 4);
  size_t *orders[3];
  for (int v = 0; v < 3; v++) {
    dpgd_config c;
    snprintf(a, sizeof a, "%s/r%d", dir, v);
    base_config(&c, a, 300);
    c.data_n_test = 0;
    if (v == 1) snprintf(c.data_dir, sizeof c.data_dir, "%s", syn);
    if (v == 2) c.train_seed = dpgd_seed_from_u64(99);
    dpgd_pnsgd *r = NULL;
    if (dpgd_pnsgd_open(&r, &c, NULL)) fail_msg("open: %s", dpgd_error_last());
    orders[v] = malloc(300 * sizeof(size_t));
    memcpy(orders[v], dpgd_pnsgd_order(r), 300 * sizeof(size_t));
    size_t np;
    const float *w = dpgd_pnsgd_params(r, &np);
    double s = 0;
    for (size_t j = 0; j < np; j++) s += (double)w[j] * w[j];
    assert_true(sqrt(s) <= 50 * (1 + 1e-6));
    dpgd_pnsgd_free(r);
  }
  unsigned char seen[300] = {0};
  for (int i = 0; i < 300; i++) seen[orders[0][i]]++;
  for (int i = 0; i < 300; i++) assert_int_equal(seen[i], 1);
  assert_memory_equal(orders[0], orders[1], 300 * sizeof(size_t));
  assert_memory_not_equal(orders[0], orders[2], 300 * sizeof(size_t));
  for (int v = 0; v < 3; v++) free(orders[v]);
  tu_rmtree(dir);
  free(dir);
}

/* Each refused setting fails validation (or the plan) with DPGD_EINVAL and a message
 * naming the key. */
static void test_refusals(void **state)
{
  (void)state;
  static const struct {
    const char *set, *key;
  } bad[] = {
      {"model.type=cnn", "model.type"},
      {"train.eval_every=10", "train.eval_every"},
      {"output.checkpoint_every=50", "output.checkpoint_every"},
      {"stopping.queries=3", "stopping.queries"},
      {"output.diagnostics=true", "output.diagnostics"},
      {"filter.enabled=true", "filter.enabled"},
      {"train.sampling=poisson", "train.sampling"},
      {"train.steps=100", "train.steps"},
      {"train.lr_schedule=cosine", "train.lr_schedule"},
      {"privacy.calibrate=budget", "privacy.calibrate"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dpgd_config c;
    base_config(&c, "/nonexistent/never-made", 100);
    assert_int_equal(dpgd_config_set(&c, bad[i].set), DPGD_OK);
    if (!strcmp(bad[i].set, "train.sampling=poisson")) c.train_sample_rate = 0.5;
    dpgd_error_clear();
    assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
    if (!strstr(dpgd_error_last(), bad[i].key))
      fail_msg("%s: %s", bad[i].set, dpgd_error_last());
  }
  dpgd_config c;
  base_config(&c, "/nonexistent/never-made", 100);
  c.train_radius = 0;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "train.radius"));
  /* train.radius belongs to pnsgd */
  base_config(&c, "/nonexistent/never-made", 100);
  c.train_algorithm = DPGD_ALGO_GD;
  c.train_steps = 10;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "train.radius"));
  /* the step bound: 2/beta is accepted, just above it is refused naming the bound */
  dpgd_pnsgd_consts k;
  consts_of(&k, 0.1307, 0.3081);
  base_config(&c, "/nonexistent/never-made", 100);
  dpgd_pnsgd_plan p;
  c.train_lr = k.lr_max;
  assert_int_equal(dpgd_pnsgd_plan_make(&p, &c, 100, D, 0.1307f, 0.3081f), DPGD_OK);
  c.train_lr = k.lr_max * (1 + 1e-9);
  assert_int_equal(dpgd_pnsgd_plan_make(&p, &c, 100, D, 0.1307f, 0.3081f), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "train.lr"));
  assert_non_null(strstr(dpgd_error_last(), "2/beta"));
  /* nothing was created for the refused runs */
  dpgd_pnsgd *r = NULL;
  c.train_lr = 1;
  assert_int_equal(dpgd_pnsgd_open(&r, &c, NULL), DPGD_EINVAL);
  assert_null(r);
}

/* privacy.calibrate = sigma: the worst position meets the target, and only just. */
static void test_calibrate(void **state)
{
  (void)state;
  const double targets[3] = {0.5, 2.0, 7.3};
  for (int i = 0; i < 3; i++) {
    dpgd_config c;
    base_config(&c, "/nonexistent/never-made", 60000);
    c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
    c.privacy_epsilon = targets[i];
    dpgd_pnsgd_plan p;
    assert_int_equal(dpgd_pnsgd_plan_make(&p, &c, 60000, D, 0.1307f, 0.3081f), DPGD_OK);
    dpgd_iter_setting s = {.n = 60000,
                           .t = 60000,
                           .grad_sens = p.k.lipschitz,
                           .sigma = p.sigma,
                           .eta = c.train_lr,
                           .diameter = 2 * c.train_radius};
    dpgd_acct_value v;
    assert_int_equal(dpgd_iter_contraction_epsilon(&s, c.privacy_delta, &v), DPGD_OK);
    assert_true(v.value <= targets[i]);
    assert_true(v.value > targets[i] * (1 - 1e-6));
    /* one Gaussian step of mu = L / sigma, as docs/MATH.md "The Gaussian curve" gives it */
    double e;
    assert_int_equal(dpgd_gdp_epsilon(p.k.lipschitz / p.sigma, c.privacy_delta, &e), DPGD_OK);
    assert_true(fabs(e / v.value - 1) < 1e-6);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_consts_closed_form),
      cmocka_unit_test(test_lipschitz_mnist),
      cmocka_unit_test(test_lipschitz_corners),
      cmocka_unit_test(test_step_nonexpansive),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_calibrate),
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_run_summary_and_bytes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
