/* cmd_account_iter.c -- 'dpgd account --iteration': the privacy of one point of a
 * one-pass projected noisy SGD run whose last iterate only is released, by amplification
 * by iteration (an RDP curve), the contraction bound and, beside them, composition of all
 * iterates (accounting/ITERATION.md). All numbers come from the accountant library. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "dpgd_accounting.h"

/* The command as usage errors name it (their hint points at its help). */
#define CMD "account --iteration"

/* RDP orders printed in the curve's table. */
static const double orders[] = {1.5, 2, 4, 8, 16, 32, 64, 128};
#define N_ORDERS (sizeof orders / sizeof orders[0])

/* x > 0 computed with a few roundings, moved up past their error (the private side). */
static double up(double x) { return x * (1 + 8 * DBL_EPSILON); }

typedef struct {
  dpgd_iter_setting s;
  double lipschitz, delta;
  int replace, have_delta, have_contraction, json;
} iter_options;

static void iter_usage(FILE *f)
{
  fprintf(
      f,
      "usage: dpgd account --iteration n=N,t=T,lipschitz=L,sigma=S[,neighbour=replace|null]\n"
      "                    [,eta=E,diameter=DIAM] [--delta D] [--json]\n\n"
      "Privacy of the point used at step T of one pass of N steps of projected noisy SGD\n"
      "  w_k = Pi_K(w_{k-1} - E (grad f(w_{k-1}; x_k) + N(0, S^2 I)))\n"
      "(S is the noise std on the GRADIENT) when only the last iterate is released\n"
      "(accounting/ITERATION.md). Valid only if: only w_N is released; each point is used\n"
      "once, in an order fixed in advance; K is convex and the loss convex, beta-smooth\n"
      "and L-Lipschitz on K, with E <= 2/beta. Printed side by side, each an upper bound:\n"
      "  iteration    amplification by iteration (Feldman et al. 2018, Thm 23): RDP\n"
      "               a rho with rho = g^2 / (2 S^2 (N - T + 1)), converted by zcdp/rdp_*\n"
      "  contraction  delta(eps) <= theta_eps(g/S) theta_eps(DIAM/(E S))^(N - T) (Asoodeh et\n"
      "               al.; needs eta= and diameter=, the diameter of K)\n"
      "  composition  every iterate released: one Gaussian step of mu = g/S\n"
      "g = 2L when a point is replaced by another (neighbour=replace, the default), L\n"
      "when it is replaced by the null point (zero gradient, neighbour=null).\n\n"
      "  --delta D   report eps at delta D, 0 < D < 1 (default 1e-5)\n"
      "  --json      one JSON object instead of the tables\n\n"
      "example: dpgd account --iteration n=1000,t=1,lipschitz=1,sigma=4,eta=0.5,diameter=1\n");
}

/* One key=value of the --iteration specification into o. Returns 0 or 1 (error printed). */
static int iter_key(iter_options *o, const char *key, const char *val, unsigned *seen)
{
  static const char *keys[] = {"n", "t", "lipschitz", "sigma", "neighbour", "eta", "diameter"};
  size_t k = 0, z;
  while (k < 7 && strcmp(keys[k], key)) k++;
  if (k == 7) return dpgd_cli_usage_error(CMD, "--iteration: unknown key '%s'", key);
  if (*seen >> k & 1) return dpgd_cli_usage_error(CMD, "--iteration: %s= given twice", key);
  *seen |= 1u << k;
  char name[64];
  snprintf(name, sizeof name, "--iteration %s", key);
  switch (k) {
  case 0:
  case 1:
    if (dpgd_cli_parse_size(name, val, &z)) return 1;
    *(k ? &o->s.t : &o->s.n) = z;
    return 0;
  case 2: return dpgd_cli_parse_double(name, val, &o->lipschitz);
  case 3: return dpgd_cli_parse_double(name, val, &o->s.sigma);
  case 4:
    if (strcmp(val, "replace") && strcmp(val, "null"))
      return dpgd_cli_usage_error(CMD, "%s: 'replace' or 'null' (got '%s')", name, val);
    o->replace = !strcmp(val, "replace");
    return 0;
  case 5: return dpgd_cli_parse_double(name, val, &o->s.eta);
  default: return dpgd_cli_parse_double(name, val, &o->s.diameter);
  }
}

/* "n=..,t=..,.." into o; checks that the required keys are there. */
static int iter_spec(iter_options *o, const char *spec_in)
{
  char spec[1024];
  if (!spec_in || !*spec_in || strlen(spec_in) >= sizeof spec)
    return dpgd_cli_usage_error(CMD, "--iteration needs n=N,t=T,lipschitz=L,sigma=S");
  strcpy(spec, spec_in);
  unsigned seen = 0;
  for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    if (!eq) return dpgd_cli_usage_error(CMD, "--iteration: '%s' is not key=value", tok);
    *eq = '\0';
    if (iter_key(o, tok, eq + 1, &seen)) return DPGD_EXIT_USAGE;
  }
  static const char *required[] = {"n", "t", "lipschitz", "sigma"};
  for (int k = 0; k < 4; k++)
    if (!(seen >> k & 1))
      return dpgd_cli_usage_error(CMD, "--iteration: missing %s=", required[k]);
  if ((seen >> 5 & 1) != (seen >> 6 & 1))
    return dpgd_cli_usage_error(CMD, "--iteration: eta= and diameter= go together");
  o->have_contraction = seen >> 6 & 1;
  return 0;
}

static int iter_parse(iter_options *o, int argc, char **argv)
{
  int have_spec = 0;
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (!strcmp(f, "--json")) {
      o->json = 1;
      continue;
    }
    if (strcmp(f, "--iteration") && strcmp(f, "--delta"))
      return dpgd_cli_usage_error(CMD, "'%s' does not go with --iteration", f);
    if (i + 1 >= argc) return dpgd_cli_usage_error(CMD, "%s needs a value", f);
    const char *v = argv[++i];
    if (!strcmp(f, "--delta")) {
      if (o->have_delta) return dpgd_cli_usage_error(CMD, "--delta given twice");
      if (dpgd_cli_parse_double(f, v, &o->delta)) return DPGD_EXIT_USAGE;
      o->have_delta = 1;
    } else {
      if (have_spec++) return dpgd_cli_usage_error(CMD, "--iteration given twice");
      if (iter_spec(o, v)) return DPGD_EXIT_USAGE;
    }
  }
  if (!(o->delta > 0 && o->delta < 1))
    return dpgd_cli_usage_error(CMD, "--delta must lie in (0, 1) (got %g)", o->delta);
  if (!(o->lipschitz > 0))
    return dpgd_cli_usage_error(CMD, "--iteration lipschitz must be > 0");
  o->s.grad_sens = o->replace ? 2 * o->lipschitz : o->lipschitz;
  if (dpgd_iter_check(&o->s)) {
    dpgd_cli_status_error(DPGD_EINVAL, "account");
    return DPGD_EXIT_USAGE;
  }
  return 0;
}

/* One bound's answer under one method (ok = 0: n/a, why says so). */
typedef struct {
  const char *bound;
  dpgd_acct_method m;
  int ok;
  double eps, err;
  char why[200];
} iter_row;

static void row_fill(iter_row *r, int st, const dpgd_acct_value *v)
{
  if (st) {
    const char *why = dpgd_error_last();
    snprintf(r->why, sizeof r->why, "%s", why[0] ? why : dpgd_error_str(st));
    dpgd_error_clear();
    return;
  }
  r->ok = 1, r->eps = v->value, r->err = v->err;
}

/* The rows: iteration (zcdp, rdp_*), contraction (its own delta(eps)), composition (all
 * methods). Returns the number of rows. */
static size_t iter_rows(const iter_options *o, iter_row *r)
{
  size_t k = 0;
  dpgd_acct_value v;
  for (int m = DPGD_ACCT_ZCDP; m < DPGD_ACCT_N_METHODS; m++, k++) {
    r[k] = (iter_row){.bound = "iteration", .m = m};
    row_fill(&r[k], dpgd_iter_epsilon(&o->s, m, o->delta, &v), &v);
  }
  r[k] = (iter_row){.bound = "contraction", .m = DPGD_ACCT_EXACT};
  if (o->have_contraction)
    row_fill(&r[k], dpgd_iter_contraction_epsilon(&o->s, o->delta, &v), &v);
  else snprintf(r[k].why, sizeof r[k].why, "give eta= and diameter= (the diameter of K)");
  k++;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++, k++) {
    r[k] = (iter_row){.bound = "composition", .m = m};
    row_fill(&r[k], dpgd_iter_composition_epsilon(&o->s, m, o->delta, &v), &v);
  }
  return k;
}

static void print_json(const iter_options *o, double rho, const iter_row *r, size_t nr)
{
  double mu = up(o->s.grad_sens / o->s.sigma);
  printf("{\"n\": %llu, \"t\": %llu, \"lipschitz\": %.17g, \"sigma\": %.17g, "
         "\"neighbour\": \"%s\", \"grad_sens\": %.17g, \"delta\": %.17g, \"rho\": %.17g, "
         "\"composition_mu\": %.17g, ",
         (unsigned long long)o->s.n, (unsigned long long)o->s.t, o->lipschitz, o->s.sigma,
         o->replace ? "replace" : "null", o->s.grad_sens, o->delta, rho, mu);
  if (o->have_contraction)
    printf("\"eta\": %.17g, \"diameter\": %.17g, ", o->s.eta, o->s.diameter);
  printf("\"rdp\": [");
  for (size_t i = 0; i < N_ORDERS; i++)
    printf("%s{\"alpha\": %.17g, \"iteration\": %.17g, \"composition\": %.17g}", i ? ", " : "",
           orders[i], up(orders[i] * rho), up(orders[i] * mu * mu / 2));
  printf("], \"bounds\": {");
  for (size_t i = 0; i < nr; i++) {
    int first = i == 0 || strcmp(r[i].bound, r[i - 1].bound);
    if (first) printf("%s\"%s\": {", i ? "}, " : "", r[i].bound);
    printf("%s\"%s\": ", first ? "" : ", ", dpgd_acct_method_name(r[i].m));
    if (r[i].ok) printf("{\"eps\": %.17g, \"err\": %.3g}", r[i].eps, r[i].err);
    else printf("null");
  }
  printf("}}}\n");
}

static void print_head(const iter_options *o, double rho)
{
  printf("iteration    one pass of n = %llu steps, the point at t = %llu (%llu steps from its "
         "use to the release)\n",
         (unsigned long long)o->s.n, (unsigned long long)o->s.t,
         (unsigned long long)(o->s.n - o->s.t + 1));
  printf("setting      L = %.10g, sigma = %.10g (noise std on the gradient), neighbour %s "
         "(g = %.10g), delta %.10g\n",
         o->lipschitz, o->s.sigma, o->replace ? "replace" : "null", o->s.grad_sens, o->delta);
  if (o->have_contraction)
    printf("contraction  eta = %.10g, diameter %.10g (r = diameter / (eta sigma) = %.10g)\n",
           o->s.eta, o->s.diameter, o->s.diameter / (o->s.eta * o->s.sigma));
  printf("valid if     only the last iterate is released; each point is used once, in an "
         "order\n             fixed in advance; convex, beta-smooth, L-Lipschitz loss on a "
         "convex set;\n             eta <= 2/beta (accounting/ITERATION.md)\n");
  printf("RDP          iteration: eps_hat(a) = a rho, rho = g^2 / (2 sigma^2 (n - t + 1)) = "
         "%.10g\n",
         dpgd_round_digits(rho, 10, 1));
  double mu = up(o->s.grad_sens / o->s.sigma);
  printf("%-12s %-18s %s\n", "order a", "iteration", "composition");
  for (size_t i = 0; i < N_ORDERS; i++)
    printf("%-12g %-18.10g %.10g\n", orders[i], dpgd_round_digits(up(orders[i] * rho), 10, 1),
           dpgd_round_digits(up(orders[i] * mu * mu / 2), 10, 1));
}

static void print_table(const iter_options *o, double rho, const iter_row *r, size_t nr)
{
  print_head(o, rho);
  printf("\n%-12s %-12s %-18s %s\n", "bound", "method", "eps", "error bound");
  for (size_t i = 0; i < nr; i++) {
    const char *name = dpgd_acct_method_name(r[i].m);
    if (!r[i].ok) printf("%-12s %-12s %-18s (%s)\n", r[i].bound, name, "n/a", r[i].why);
    else
      printf("%-12s %-12s %-18.10g %.3g\n", r[i].bound, name,
             dpgd_round_digits(r[i].eps, 10, 1), dpgd_round_digits(r[i].err, 3, 1));
  }
}

int dpgd_cmd_account_iteration(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    iter_usage(stdout);
    return DPGD_EXIT_OK;
  }
  iter_options o = {.s = {.diameter = INFINITY}, .delta = 1e-5, .replace = 1};
  int rc = iter_parse(&o, argc, argv);
  if (rc) return rc;
  iter_row r[2 * DPGD_ACCT_N_METHODS];
  size_t nr = iter_rows(&o, r);
  double rho = dpgd_iter_rho(&o.s);
  if (o.json) print_json(&o, rho, r, nr);
  else print_table(&o, rho, r, nr);
  for (size_t i = 0; i < nr; i++)
    if (r[i].ok) return DPGD_EXIT_OK;
  return dpgd_cli_error("no bound could be computed for this setting");
}

int dpgd_cmd_account_wants_iteration(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--iteration")) return 1;
  return 0;
}
