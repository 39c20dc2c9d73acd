/* outside.c -- a program outside the dpgd tree, built only against an installed dpgd
 * (tests/install/install.sh): the accountant's eps for a Gaussian composition against
 * the closed form of the Gaussian curve, then two steps of private softmax regression
 * through the training library's run API. Usage: outside MNIST_DIR RUN_DIR. */
#include <dpgd/dpgd.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "outside: FAIL %s:%d: ", __FILE__, __LINE__);                            \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      failures++;                                                                              \
    }                                                                                          \
  } while (0)

/* delta(eps) of mu-GDP (Dong, Roth & Su 2022, Corollary 2.13):
 * Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), with Phi(x) = erfc(-x/sqrt 2)/2. */
static double gdp_delta(double mu, double eps)
{
  return 0.5 * erfc((eps / mu - mu / 2) / sqrt(2.0)) -
         exp(eps) * 0.5 * erfc((eps / mu + mu / 2) / sqrt(2.0));
}

/* The eps with gdp_delta(mu, eps) = delta, by bisection (delta(eps) decreases). */
static double gdp_epsilon(double mu, double delta)
{
  double lo = 0, hi = 50;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if (gdp_delta(mu, mid) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
}

/* 112 Gaussian releases of sensitivity 1 at noise std 170 compose to mu = sqrt(112)/170
 * GDP; the exact accountant's eps(1e-5) must be the closed form's, up to its own stated
 * error and the bisection's rounding, and never below it (an upper bound). */
static void check_accountant(void)
{
  const double sigma = 170, delta = 1e-5;
  const uint64_t steps = 112;
  dpgd_accountant *a = dpgd_acct_alloc();
  CHECK(a != NULL, "dpgd_acct_alloc");
  if (!a) return;
  int rc = dpgd_acct_add_gaussian(a, 1 / sigma, steps);
  CHECK(rc == DPGD_OK, "dpgd_acct_add_gaussian: %s", dpgd_error_str(rc));
  dpgd_acct_value eps;
  rc = dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &eps);
  CHECK(rc == DPGD_OK, "dpgd_acct_epsilon: %s", dpgd_error_str(rc));
  double mu = sqrt((double)steps) / sigma;
  double want = gdp_epsilon(mu, delta);
  printf("outside: %u Gaussian releases at sigma %g, delta %g: eps %.6f (err %.1e), "
         "closed form %.6f\n",
         (unsigned)steps, sigma, delta, eps.value, eps.err, want);
  CHECK(eps.value >= want - 1e-12, "eps %.10f below the closed form %.10f", eps.value, want);
  CHECK(eps.value <= want + eps.err + 1e-9, "eps %.10f above the closed form %.10f + err %g",
        eps.value, want, eps.err);
  CHECK(fabs(dpgd_acct_gdp_mu(a) - mu) <= 1e-12 * mu, "gdp mu %.15g, want %.15g",
        dpgd_acct_gdp_mu(a), mu);
  dpgd_acct_free(a);
}

static int set(dpgd_config *c, const char *assignment)
{
  int rc = dpgd_config_set(c, assignment);
  CHECK(rc == DPGD_OK, "dpgd_config_set %s: %s", assignment, dpgd_error_last());
  return rc;
}

/* Two steps of Algorithm 6 on the first 1000 MNIST training images, driven step by step
 * (INITIALIZE / ITERATE / TEST), then the run directory is finished. */
static void check_training(const char *mnist, const char *run_dir)
{
  dpgd_config c;
  char buf[DPGD_CONFIG_PATH_MAX + 16];
  dpgd_config_defaults(&c);
  snprintf(buf, sizeof buf, "data.dir=%s", mnist);
  if (set(&c, buf) || set(&c, "data.n_train=1000") || set(&c, "data.n_test=1000") ||
      set(&c, "model.type=softmax") || set(&c, "train.steps=2") ||
      set(&c, "privacy.sigma=3.7") || set(&c, "privacy.clip=2.375") ||
      set(&c, "output.progress=false"))
    return;
  int rc = dpgd_config_validate(&c);
  CHECK(rc == DPGD_OK, "dpgd_config_validate: %s", dpgd_error_last());
  dpgd_run *r = NULL;
  rc = dpgd_run_open(&r, &c, run_dir);
  CHECK(rc == DPGD_OK, "dpgd_run_open: %s", dpgd_error_last());
  if (rc != DPGD_OK) return;
  while (!dpgd_run_done(r)) {
    rc = dpgd_run_step(r);
    CHECK(rc == DPGD_OK, "dpgd_run_step: %s", dpgd_error_last());
    if (rc != DPGD_OK) break;
  }
  CHECK(dpgd_run_step_index(r) == 2, "%zu steps done, want 2", dpgd_run_step_index(r));
  double eps = dpgd_run_eps_now(r);
  CHECK(isfinite(eps) && eps > 0, "eps after two steps: %g", eps);
  if (rc == DPGD_OK) {
    rc = dpgd_run_finish(r);
    CHECK(rc == DPGD_OK, "dpgd_run_finish: %s", dpgd_error_last());
  }
  printf("outside: trained %zu steps of softmax regression, eps %.4f\n", dpgd_run_step_index(r),
         eps);
  dpgd_run_free(r);
  struct stat st;
  snprintf(buf, sizeof buf, "%s/summary.json", run_dir);
  CHECK(stat(buf, &st) == 0 && st.st_size > 0, "%s missing or empty", buf);
}

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: outside MNIST_DIR RUN_DIR\n");
    return 2;
  }
  printf("outside: dpgd headers %s\n", DPGD_VERSION_STRING);
  check_accountant();
  check_training(argv[1], argv[2]);
  printf("outside: %d failures\n", failures);
  return failures ? 1 : 0;
}
