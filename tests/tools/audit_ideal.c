/* audit_ideal.c -- the f-DP bound an ideal gradient-canary auditor expects (train/AUDIT.md
 * "Ideal bounds by configuration"): T Poisson-subsampled Gaussian steps of rate q, sigma
 * calibrated to the claim by the exact accountant, the per-step likelihood-ratio score of
 * the claimed mechanism (Monte Carlo; closed form at q = 1), the expected correct count
 * of "r/2 highest in, r/2 lowest out" and the f-DP bound of the run's family there.
 *
 *   audit_ideal M Q T EPS [--delta D] [--n N] [--seed S] [--scan K] [--split F]
 *     one line: sigma, claim, the guess rule's r, expected v, bound, bound / claim, then
 *     with --scan K the K grid counts either side of the rule's r (factors 2^(1/4)); with
 *     --split F, F r of the guesses say "in" (the highest) and the rest "out" (dpgd
 *     audit's rule: F = 1/2).
 *   audit_ideal --check
 *     exits 1 unless the Monte Carlo at q = 1 (T = 4) gives the closed form's expected
 *     counts to within 4 Monte Carlo sd, and the closed-form bound at the rule's r is
 *     dpgd_audit_guess_rule's expected bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_roots.h>

#include "dpgd_accounting.h"

#define CONF 0.95
#define RSTEP 1.189207115002721 /* 2^(1/4), the guess rule's grid */

typedef struct {
  double s;
  unsigned char in;
} scored;

typedef struct {
  size_t M, n;
  double split; /* the fraction of the r guesses that say "in" (the rule: 1/2) */
  double q, eps, delta, sigma, claim, mu_claim;
  uint64_t T;
  unsigned long seed;
  scored *mc;  /* 2n scores, sorted; NULL: closed form (q = 1) */
  size_t *cin; /* cin[k]: included canaries among the k lowest */
} game;

static double sg_eps(double q, double sigma, uint64_t T, double delta)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  dpgd_acct_value v = {0};
  if (!a || dpgd_acct_add_subsampled_gaussian(a, q, sigma, T) ||
      dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &v)) {
    fprintf(stderr, "audit_ideal: accountant failed: %s\n", dpgd_error_last());
    exit(2);
  }
  dpgd_acct_free(a);
  return v.value;
}

/* The noise multiplier: mu-GDP's at q = 1 (sqrt(T) / mu); else the smallest sigma (to
 * 1e-6 relative, bisection in log sigma) whose exact eps(delta) is at most eps. */
static void calibrate(game *g)
{
  if (g->q == 1) {
    double mu;
    if (dpgd_gdp_mu(g->eps, g->delta, &mu)) exit(2);
    g->sigma = sqrt((double)g->T) / mu;
    g->claim = g->eps;
    return;
  }
  double lo = 0.05, hi = 50;
  while (hi / lo > 1 + 1e-6) {
    double mid = sqrt(lo * hi);
    if (sg_eps(g->q, mid, g->T, g->delta) > g->eps) lo = mid;
    else hi = mid;
  }
  g->sigma = hi;
  g->claim = sg_eps(g->q, hi, g->T, g->delta);
}

static int by_score(const void *a, const void *b)
{
  double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
  return (x > y) - (x < y);
}

/* n included and n excluded canaries: per step x = B + N(0, sigma^2) (in units of the
 * clip), B ~ Bernoulli(q) when included, 0 when not; the score is the sum over steps of
 * log(1 - q + q exp((x - 1/2) / sigma^2)), the audit's Poisson score. */
static void monte_carlo(game *g)
{
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, g->seed);
  g->mc = malloc(2 * g->n * sizeof *g->mc);
  g->cin = malloc((2 * g->n + 1) * sizeof *g->cin);
  if (!rng || !g->mc || !g->cin) exit(2);
  double s2 = g->sigma * g->sigma;
  for (size_t i = 0; i < 2 * g->n; i++) {
    unsigned char in = i < g->n;
    double sc = 0;
    for (uint64_t t = 0; t < g->T; t++) {
      double x = gsl_ran_gaussian_ziggurat(rng, g->sigma);
      if (in && gsl_rng_uniform(rng) < g->q) x += 1;
      sc += g->q == 1 ? (x - 0.5) / s2 : log1p(g->q * expm1((x - 0.5) / s2));
    }
    g->mc[i] = (scored){sc, in};
  }
  qsort(g->mc, 2 * g->n, sizeof *g->mc, by_score);
  g->cin[0] = 0;
  for (size_t k = 0; k < 2 * g->n; k++) g->cin[k + 1] = g->cin[k] + g->mc[k].in;
  gsl_rng_free(rng);
}

/* Closed form at q = 1: scores N(mu, 1) in, N(0, 1) out (the guess rule's model, solved
 * here apart from it: GSL's Brent root of the upper tail's mass, then r a / (a + b)). */
typedef struct {
  double mu, want;
} tail;

static double tail_gap(double t, void *vp)
{
  const tail *c = vp;
  return 0.5 * (gsl_cdf_ugaussian_Q(t - c->mu) + gsl_cdf_ugaussian_Q(t)) - c->want;
}

static double gauss_correct(size_t M, size_t r, double mu)
{
  tail c = {mu, (double)r / (2.0 * (double)M)};
  gsl_function fn = {tail_gap, &c};
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) exit(2);
  gsl_root_fsolver_set(s, &fn, -40, 40);
  double lo = -40, hi = 40;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * (1 + fabs(lo)); it++) {
    gsl_root_fsolver_iterate(s);
    lo = gsl_root_fsolver_x_lower(s), hi = gsl_root_fsolver_x_upper(s);
  }
  double t = gsl_root_fsolver_root(s);
  gsl_root_fsolver_free(s);
  double a = gsl_cdf_ugaussian_Q(t - mu), b = gsl_cdf_ugaussian_Q(t);
  return (double)r * a / (a + b);
}

/* Expected correct guesses of the split r highest in, the rest lowest out, of M. */
static double expected_correct(const game *g, size_t r)
{
  if (!g->mc) return gauss_correct(g->M, r, sqrt((double)g->T) / g->sigma);
  double N = 2.0 * (double)g->n, rin = g->split * (double)r, rout = (double)r - rin;
  size_t kh = (size_t)llround(rin / (double)g->M * N),
         kl = (size_t)llround(rout / (double)g->M * N);
  size_t n2 = 2 * g->n;
  double hi_in = kh ? (double)(g->cin[n2] - g->cin[n2 - kh]) / (double)kh : 0;
  double lo_out = kl ? (double)(kl - g->cin[kl]) / (double)kl : 0;
  return rin * hi_in + rout * lo_out;
}

/* The f-DP bound of the run's family (as dpgd audit computes it) at v of r. */
static double fdp_bound(const game *g, size_t r, size_t v)
{
  double e = 0, s;
  int rc = g->q == 1 ? dpgd_audit_fdp_eps_lower(g->M, r, v, g->delta, CONF, &e)
                     : dpgd_audit_fdp_sg_lower(g->M, r, v, g->q, g->T, g->delta, CONF, &s, &e);
  if (rc) {
    fprintf(stderr, "audit_ideal: bound failed: %s\n", dpgd_error_last());
    exit(2);
  }
  return e;
}

static size_t even(double x) { return (size_t)x / 2 * 2; }

static void report(game *g, int scan)
{
  calibrate(g);
  if (g->q < 1) monte_carlo(g);
  size_t r;
  double rule_e;
  if (dpgd_gdp_mu(g->claim, g->delta, &g->mu_claim) ||
      dpgd_audit_guess_rule(g->M, g->mu_claim, g->delta, CONF, 1, &r, &rule_e))
    exit(2);
  double v = expected_correct(g, r), e = fdp_bound(g, r, (size_t)floor(v));
  printf("M %zu q %g T %llu split %g sigma %.5f claim %.4f | rule r %zu v %.1f bound %.3f "
         "ratio %.3f",
         g->M, g->q, (unsigned long long)g->T, g->split, g->sigma, g->claim, r, v, e,
         e / g->claim);
  for (int k = -scan; k <= scan; k++) {
    size_t rr = even((double)r * pow(RSTEP, k));
    if (k == 0 || rr < 2 || rr > g->M) continue;
    double vv = expected_correct(g, rr);
    printf(" | r %zu v %.1f %.3f", rr, vv, fdp_bound(g, rr, (size_t)floor(vv)) / g->claim);
  }
  printf("\n");
}

/* q = 1 through the Monte Carlo agrees with the closed form, and the closed form's bound
 * at the rule's r is the rule's. */
static int check(void)
{
  game g = {
      .M = 7850, .n = 400000, .split = 0.5, .q = 1, .eps = 2, .delta = 1e-5, .T = 4, .seed = 1};
  calibrate(&g);
  monte_carlo(&g);
  game c = g;
  c.mc = NULL;
  int bad = 0;
  for (size_t r = 100; r <= 6400; r *= 4) {
    double vm = expected_correct(&g, r), vc = expected_correct(&c, r);
    double k = (double)r / (2.0 * 7850) * 2 * (double)g.n, p = vc / (double)r;
    double sd = (double)r * sqrt(p * (1 - p) / (2 * k)); /* two tails of k draws each */
    printf("r %zu: Monte Carlo %.2f closed form %.2f (sd %.2f)\n", r, vm, vc, sd);
    bad |= fabs(vm - vc) > 4 * sd;
  }
  size_t r;
  double rule_e, mu;
  if (dpgd_gdp_mu(c.claim, c.delta, &mu) ||
      dpgd_audit_guess_rule(c.M, mu, c.delta, CONF, 1, &r, &rule_e))
    return 2;
  double e = fdp_bound(&c, r, (size_t)floor(expected_correct(&c, r)));
  printf("rule r %zu: bound %.6f, rule's expectation %.6f\n", r, e, rule_e);
  bad |= fabs(e - rule_e) > 1e-9 * rule_e;
  free(g.mc);
  free(g.cin);
  return bad;
}

int main(int argc, char **argv)
{
  if (argc == 2 && !strcmp(argv[1], "--check")) return check();
  if (argc < 5) {
    fprintf(stderr, "usage: audit_ideal M Q T EPS [--delta D] [--n N] [--seed S] [--scan K]"
                    " [--split F] | audit_ideal --check\n");
    return 2;
  }
  game g = {.M = strtoul(argv[1], NULL, 10),
            .q = atof(argv[2]),
            .T = strtoull(argv[3], NULL, 10),
            .eps = atof(argv[4]),
            .delta = 1e-5,
            .n = 1000000,
            .seed = 1,
            .split = 0.5};
  int scan = 0;
  for (int i = 5; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--delta")) g.delta = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--n")) g.n = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--seed")) g.seed = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--scan")) scan = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--split")) g.split = atof(argv[i + 1]);
    else {
      fprintf(stderr, "audit_ideal: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!(g.M >= 2 && g.q > 0 && g.q <= 1 && g.T > 0 && g.eps > 0 && g.n > 0 && g.split >= 0 &&
        g.split <= 1 && (g.split == 0.5 || g.q < 1))) {
    fprintf(stderr, "audit_ideal: need M >= 2, Q in (0, 1], T > 0, EPS > 0, N > 0, SPLIT in "
                    "[0, 1] (other than 1/2 only for Q < 1)\n");
    return 2;
  }
  report(&g, scan);
  free(g.mc);
  free(g.cin);
  return 0;
}
