/* cmd_account.c -- 'dpgd account' (eps or delta of a composition of mechanisms under
 * every accounting method, with error bound and query time) and 'dpgd calibrate'
 * (sigma for k steps, or the filter budget B_norm for a given sigma and clip, per method).
 * All numbers come from the accountant library (docs/MATH.md); this file only
 * parses, times and prints. A method that does not apply prints "n/a" and the reason. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "account_mech.h"
#include "commands.h"
#include "dpgd_accounting.h"

/* The --method and --json lines of both usages: the method names wrapped at 80
 * columns under the flag's text. */
static void print_method_help(FILE *f)
{
  int col = fprintf(f, "  --method M[,M..]  only these methods:");
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    const char *name = dpgd_acct_method_names[m];
    const char *tail = m + 1 < DPGD_ACCT_N_METHODS ? "," : " (default: all)";
    if (col + 1 + (int)strlen(name) + (int)strlen(tail) > 80) {
      fputc('\n', f);
      col = fprintf(f, "%19s", "");
    }
    col += fprintf(f, " %s%s", name, tail);
  }
  fprintf(f, "\n  --json            one JSON object instead of the table\n");
}

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* --method a,b -> mask of methods. */
static int parse_methods(const char *cmd, const char *text, unsigned *mask)
{
  char buf[256];
  if (!text || strlen(text) >= sizeof buf) {
    dpgd_cli_usage_error(cmd, "--method needs a list of methods");
    return 1;
  }
  strcpy(buf, text);
  *mask = 0;
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int m = dpgd_acct_method_find(tok);
    if (m < 0) {
      char names[128];
      dpgd_cli_usage_error(cmd, "--method: unknown method '%s' (%s)", tok,
                           dpgd_acct_method_list(names, sizeof names, ", "));
      return 1;
    }
    *mask |= 1u << m;
  }
  if (!*mask) {
    dpgd_cli_usage_error(cmd, "--method needs a list of methods");
    return 1;
  }
  return 0;
}

/* The options both commands share. */
typedef struct {
  const char *cmd;
  dpgd_accountant *acc; /* mechanisms given on the command line */
  double eps, delta, sigma, clip;
  int have_eps, have_delta, have_sigma, have_clip, have_steps, json;
  size_t steps;
  unsigned methods;
} options;

/* Flag value: argv[i + 1] or an error naming the flag (an unknown flag is named as
 * unknown, also at the end of the line). */
static const char *value_of(const options *o, int argc, char **argv, int i)
{
  static const char *const known[] = {"--epsilon", "--delta", "--sigma",
                                      "--clip",    "--steps", "--method"};
  size_t k = 0, n = sizeof known / sizeof known[0];
  while (k < n && strcmp(argv[i], known[k])) k++;
  if (k == n && argv[i][0] != '-' && strchr(argv[i], '='))
    dpgd_cli_usage_error(o->cmd,
                         "'%s' is not an option: a mechanism's keys are separated by commas, "
                         "not spaces (--gaussian sigma=1,count=2)",
                         argv[i]);
  else if (k == n) dpgd_cli_usage_error(o->cmd, "unknown option '%s'", argv[i]);
  if (k == n) return NULL;
  if (i + 1 >= argc) {
    dpgd_cli_usage_error(o->cmd, "%s needs a value", argv[i]);
    return NULL;
  }
  return argv[i + 1];
}

static int parse_options(options *o, int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (!strcmp(f, "--json")) {
      o->json = 1;
      continue;
    }
    int r = dpgd_cli_add_mechanism(o->acc, f, i + 1 < argc ? argv[i + 1] : NULL);
    if (r > 0) return DPGD_EXIT_USAGE;
    if (r == 0) {
      i++;
      continue;
    }
    const char *v = value_of(o, argc, argv, i);
    if (!v) return DPGD_EXIT_USAGE;
    i++;
    double *dst = NULL;
    int *have = NULL;
    if (!strcmp(f, "--epsilon")) dst = &o->eps, have = &o->have_eps;
    else if (!strcmp(f, "--delta")) dst = &o->delta, have = &o->have_delta;
    else if (!strcmp(f, "--sigma")) dst = &o->sigma, have = &o->have_sigma;
    else if (!strcmp(f, "--clip")) dst = &o->clip, have = &o->have_clip;
    if (dst) {
      if (*have) return dpgd_cli_usage_error(o->cmd, "%s given twice", f);
      if (dpgd_cli_parse_double(f, v, dst)) return DPGD_EXIT_USAGE;
      *have = 1;
    } else if (!strcmp(f, "--steps")) {
      if (dpgd_cli_parse_size(f, v, &o->steps)) return DPGD_EXIT_USAGE;
      o->have_steps = 1;
    } else if (!strcmp(f, "--method")) {
      if (parse_methods(o->cmd, v, &o->methods)) return DPGD_EXIT_USAGE;
    } else {
      return dpgd_cli_usage_error(o->cmd, "unknown option '%s'", f);
    }
  }
  if (o->have_delta && !(o->delta > 0 && o->delta < 1))
    return dpgd_cli_usage_error(o->cmd, "--delta must lie in (0, 1) (got %g)", o->delta);
  if (o->have_eps && !(o->eps >= 0))
    return dpgd_cli_usage_error(o->cmd, "--epsilon must be >= 0 (got %g)", o->eps);
  return DPGD_EXIT_OK;
}

/* JSON string: the reasons are library messages (ASCII); escape quotes, backslashes
 * and control characters. */
static void json_string(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
    else putchar(*s);
  }
  putchar('"');
}

/* One method's answer: value (already an upper/lower bound as the library returns it),
 * its error bound and time, or the reason it does not apply. */
typedef struct {
  int ok;
  double value, err, ms;
  char why[256];
  char how[64]; /* the exact method's algorithm when it is not the characteristic function */
} answer;

static void answer_fail(answer *r, int st)
{
  const char *why = dpgd_error_last();
  snprintf(r->why, sizeof r->why, "%s", why[0] ? why : dpgd_error_str(st));
  dpgd_error_clear();
}

static int n_ok(const answer *r, unsigned methods)
{
  int n = 0;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    if ((methods >> m & 1) && r[m].ok) n++;
  return n;
}

/* Prints the table or JSON of per-method answers; `what` names the value. With
 * clip2 > 0 (budget calibration) the second column is floor(value / clip2), the number
 * of full steps; with clip2 == 0 it is the error bound; with clip2 < 0 there is none. */
static void print_answers(const options *o, const answer *r, const char *what,
                          const char *head_json, double clip2)
{
  int dir = clip2 > 0 ? -1 : 1; /* budgets round down, eps/delta/sigma up */
  if (o->json) printf("{%s, \"methods\": {", head_json);
  else if (clip2 != 0)
    printf("%-12s %-18s %-12s %s\n", "method", what, clip2 > 0 ? "full steps" : "", "time ms");
  else printf("%-12s %-18s %-12s %s\n", "method", what, "err included", "time ms");
  int first = 1;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    if (!(o->methods >> m & 1)) continue;
    const char *name = dpgd_acct_method_name(m);
    if (o->json) {
      printf("%s\"%s\": {\"%s\": ", first ? "" : ", ", name, what);
      first = 0;
      if (!r[m].ok) {
        printf("null, \"na\": ");
        json_string(r[m].why);
        printf("}");
        continue;
      }
      printf("%.17g", r[m].value);
      if (clip2 > 0) printf(", \"full_steps\": %.0f", floor(r[m].value / clip2));
      else if (clip2 == 0) printf(", \"err\": %.3g", r[m].err);
      printf(", \"time_ms\": %.4f", r[m].ms);
      if (r[m].how[0]) {
        printf(", \"algorithm\": ");
        json_string(r[m].how);
      }
      printf("}");
    } else if (!r[m].ok) {
      printf("%-12s %-18s (%s)\n", name, "n/a", r[m].why);
    } else if (clip2 > 0) {
      printf("%-12s %-18.10g %-12.0f %.3f\n", name, dpgd_round_digits(r[m].value, 10, dir),
             floor(r[m].value / clip2), r[m].ms);
    } else if (clip2 < 0) {
      printf("%-12s %-18.10g %-12s %.3f\n", name, dpgd_round_digits(r[m].value, 10, dir), "",
             r[m].ms);
    } else {
      printf("%-12s %-18.10g %-12.3g %.3f%s%s\n", name, dpgd_round_digits(r[m].value, 10, dir),
             dpgd_round_digits(r[m].err, 3, 1), r[m].ms, r[m].how[0] ? "  " : "", r[m].how);
    }
  }
  if (o->json) printf("}}\n");
}

/* The neighbouring relation each without-replacement entry assumes: printed, or
 * appended to the JSON head when head is given. */
static void print_relations(char *head, size_t size)
{
  if (head) {
    if (dpgd_cli_wor_relations())
      snprintf(head + strlen(head), size - strlen(head), ", \"relation\": \"%s\"",
               dpgd_cli_wor_relations() & 1u << DPGD_ACCT_REPLACE_ONE ? "replace-one"
                                                                      : "add-remove");
    return;
  }
  if (dpgd_cli_wor_relations() & 1u << DPGD_ACCT_ADD_REMOVE)
    printf("relation     without replacement, add/remove: neighbours of n and n-1 points "
           "(exact pairs)\n");
  if (dpgd_cli_wor_relations() & 1u << DPGD_ACCT_REPLACE_ONE)
    printf("relation     without replacement, replace-one: neighbours of n points, one "
           "point changed\n             (no exact value known; rdp_* are upper bounds, "
           "Wang, Balle & Kasiviswanathan 2019, Thms 9, 27)\n");
}

/* With a discrete Gaussian in the composition: the exact answer for the continuous
 * Gaussians of the same mu (dpgd_acct_continuous_twin), so that the cost of the proof
 * shows. NAN when there is none or it fails. */
static double continuous_answer(const options *o)
{
  if (!dpgd_acct_has_discrete_gaussian(o->acc)) return NAN;
  dpgd_accountant *c = dpgd_acct_continuous_twin(o->acc);
  dpgd_acct_value v = {NAN, 0};
  int st = !c            ? DPGD_ENOMEM
           : o->have_eps ? dpgd_acct_delta(c, DPGD_ACCT_EXACT, o->eps, &v)
                         : dpgd_acct_epsilon(c, DPGD_ACCT_EXACT, o->delta, &v);
  dpgd_acct_free(c);
  if (st) dpgd_error_clear();
  return st ? NAN : v.value;
}

static void print_continuous(const options *o, double v)
{
  if (isnan(v) || o->json) return;
  printf("continuous   %-18.10g (exact, the continuous Gaussian of the same sigma: what\n"
         "             dpgd would print without the proof for the integer noise; the rows\n"
         "             above are proven for the discrete Gaussian that runs)\n",
         dpgd_round_digits(v, 10, 1));
}

static void account_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd account MECHANISM... [--delta D | --epsilon E] [--method M] [--json]\n\n"
          "Privacy of the composition of the given mechanisms under every accounting\n"
          "method (formulas and their sources: docs/MATH.md): eps for a delta (default\n"
          "--delta 1e-5), or delta for an eps. Each value is an upper bound that includes\n"
          "its numerical error bound, printed beside it as 'err included' (already added,\n"
          "not to be added again; for eps it is the root finder's tolerance, the delta-side\n"
          "errors of the exact method being folded into the value itself). 'bound: ...'\n"
          "after an exact row names a valid fallback bound where no exact path answered. A\n"
          "method that does not apply prints n/a and why.\n"
          "Where the exact value comes from the privacy-loss distribution (few subsampled\n"
          "releases at a small rate), the line ends with 'pld h=STEP' and its error bound\n"
          "is the width of a proven bracket [lower bound, value] around the truth.\n\n"
          "%s\n"
          "  --delta D         report eps(D), 0 < D < 1 (default 1e-5)\n"
          "  --epsilon E       report delta(E), E >= 0, instead\n",
          dpgd_cli_mech_help);
  print_method_help(f);
  fprintf(
      f,
      "\n  --iteration n=N,t=T,lipschitz=L,sigma=S[,..]  instead of mechanisms: one pass of\n"
      "                    noisy SGD, last iterate only (dpgd account --iteration --help)\n");
  fprintf(f, "\nexample: dpgd account --gaussian sigma=100,count=420 --delta 1e-5\n");
}

/* Every requested method's answer to the question of o, timed. */
static void account_answers(const options *o, answer *r /* (DPGD_ACCT_N_METHODS) */)
{
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    if (!(o->methods >> m & 1)) continue;
    dpgd_acct_value v;
    double t0 = now_ms();
    int st = o->have_eps ? dpgd_acct_delta(o->acc, m, o->eps, &v)
                         : dpgd_acct_epsilon(o->acc, m, o->delta, &v);
    r[m].ms = now_ms() - t0;
    if (st) answer_fail(&r[m], st);
    else r[m].ok = 1, r[m].value = v.value, r[m].err = v.err;
    if (!st && m == DPGD_ACCT_EXACT)
      snprintf(r[m].how, sizeof r[m].how, "%s", dpgd_acct_exact_note());
  }
}

int dpgd_cmd_account(int argc, char **argv)
{
  if (dpgd_cmd_account_wants_iteration(argc, argv))
    return dpgd_cmd_account_iteration(argc, argv);
  if (dpgd_cli_wants_help(argc, argv)) {
    account_usage(stdout);
    return DPGD_EXIT_OK;
  }
  options o = {.cmd = "account", .methods = (1u << DPGD_ACCT_N_METHODS) - 1};
  o.acc = dpgd_acct_alloc();
  if (!o.acc) return dpgd_cli_error("out of memory");
  int rc = parse_options(&o, argc, argv);
  if (!rc && (o.have_sigma || o.have_clip || o.have_steps))
    rc = dpgd_cli_usage_error("account", "--sigma/--clip/--steps belong to 'dpgd calibrate'; "
                                         "give mechanisms with --gaussian etc.");
  if (!rc && o.have_eps && o.have_delta)
    rc = dpgd_cli_usage_error("account", "give --delta or --epsilon, not both");
  if (!rc && dpgd_acct_n_entries(o.acc) == 0)
    rc = dpgd_cli_usage_error("account",
                              "no mechanism given (e.g. --gaussian sigma=100,count=420)");
  if (rc) {
    dpgd_acct_free(o.acc);
    return rc;
  }
  if (!o.have_eps && !o.have_delta) o.delta = 1e-5;
  answer r[DPGD_ACCT_N_METHODS] = {{0}};
  account_answers(&o, r);
  double mu = dpgd_acct_gdp_mu(o.acc), cont = continuous_answer(&o);
  char head[320] = "";
  if (o.json) {
    char mus[64] = "null";
    if (!isnan(mu)) snprintf(mus, sizeof mus, "%.17g", mu);
    snprintf(head, sizeof head,
             "\"releases\": %llu, \"entries\": %zu, \"gdp_mu\": %s, \"%s\": %.17g",
             (unsigned long long)dpgd_acct_n_releases(o.acc), dpgd_acct_n_entries(o.acc), mus,
             o.have_eps ? "epsilon" : "delta", o.have_eps ? o.eps : o.delta);
    print_relations(head, sizeof head);
    if (!isnan(cont))
      snprintf(head + strlen(head), sizeof head - strlen(head),
               ", \"continuous_gaussian_exact\": %.17g", cont);
  } else {
    size_t ne = dpgd_acct_n_entries(o.acc);
    printf("releases     %llu in %zu %s", (unsigned long long)dpgd_acct_n_releases(o.acc), ne,
           ne == 1 ? "entry" : "entries");
    if (!isnan(mu)) printf(" (Gaussian only: mu = %.10g)", mu);
    printf("\n");
    print_relations(NULL, 0);
    if (o.have_eps) printf("epsilon      %.10g\n", o.eps);
    else printf("delta        %.10g\n", o.delta);
  }
  print_answers(&o, r, o.have_eps ? "delta" : "eps", head, 0);
  print_continuous(&o, cont);
  int ok = n_ok(r, o.methods);
  dpgd_acct_free(o.acc);
  if (!ok) return dpgd_cli_error("no requested method applies to this composition");
  return DPGD_EXIT_OK;
}

static void calibrate_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd calibrate --epsilon E [--delta D] --steps K [MECHANISM...] [options]\n"
          "       dpgd calibrate --epsilon E [--delta D] --sigma S --clip C [MECHANISM...]\n\n"
          "Noise calibration (docs/MATH.md \"Calibration\"), per accounting method, rounded\n"
          "in the private direction and verified against the target:\n"
          "  with --steps: the smallest noise multiplier sigma such that K Gaussian steps\n"
          "    (mu = 1/sigma each) give eps(delta) <= E (Algorithm 6);\n"
          "  with --sigma and --clip: the largest squared-norm budget B_norm of the\n"
          "    individual filter (Algorithm 7, mu = sqrt(B_norm)/(sigma C)) and its number\n"
          "    of full steps floor(B_norm/C^2).\n"
          "Mechanism flags add other releases to the composition (with --sigma/--clip\n"
          "they must be Gaussian, e.g. stopping queries --gaussian sigma=600,count=8).\n\n"
          "  --epsilon E       target eps > 0\n"
          "  --delta D         target delta, 0 < D < 1 (default 1e-5)\n"
          "  --steps K         number of gradient steps, K >= 1\n"
          "  --sigma S --clip C  noise multiplier and clip norm of a filtered run\n");
  print_method_help(f);
  fprintf(f, "\n%s", dpgd_cli_mech_help);
}

/* The options' cross-checks; budget: --sigma/--clip (calibrate B_norm), else --steps. */
static int check_calibrate_options(const options *o, int budget)
{
  int rc = DPGD_EXIT_OK;
  if (!rc && !o->have_eps) rc = dpgd_cli_usage_error("calibrate", "--epsilon is required");
  if (!rc && !(o->eps > 0))
    rc = dpgd_cli_usage_error("calibrate", "--epsilon must be > 0 (got %g)", o->eps);
  if (!rc && budget && o->have_steps)
    rc = dpgd_cli_usage_error("calibrate", "give --steps, or --sigma and --clip, not both");
  if (!rc && !budget && !o->have_steps)
    rc = dpgd_cli_usage_error("calibrate", "give --steps K, or --sigma S and --clip C");
  if (!rc && budget && !(o->have_sigma && o->have_clip))
    rc = dpgd_cli_usage_error("calibrate", "%s is required with %s",
                              o->have_sigma ? "--clip" : "--sigma",
                              o->have_sigma ? "--sigma" : "--clip");
  if (!rc && budget && !(o->sigma > 0))
    rc = dpgd_cli_usage_error("calibrate", "--sigma must be > 0 (got %g)", o->sigma);
  if (!rc && budget && !(o->clip > 0))
    rc = dpgd_cli_usage_error("calibrate", "--clip must be > 0 (got %g)", o->clip);
  if (!rc && !budget && o->steps < 1)
    rc = dpgd_cli_usage_error("calibrate", "--steps must be >= 1");
  return rc;
}

/* The target, then sigma (or B_norm) by every requested method. */
static void print_calibration(const options *o, int budget, const answer *r)
{
  char head[256] = "";
  if (o->json)
    snprintf(head, sizeof head,
             "\"epsilon\": %.17g, \"delta\": %.17g, \"extra_releases\": %llu", o->eps, o->delta,
             (unsigned long long)dpgd_acct_n_releases(o->acc));
  else
    printf("target       eps %.10g at delta %.10g (+ %llu other releases)\n", o->eps, o->delta,
           (unsigned long long)dpgd_acct_n_releases(o->acc));
  size_t len = strlen(head);
  if (!budget) {
    if (o->json) snprintf(head + len, sizeof head - len, ", \"steps\": %zu", o->steps);
    else printf("steps        %zu\n", o->steps);
    print_answers(o, r, "sigma", head, -1);
  } else {
    if (o->json)
      snprintf(head + len, sizeof head - len, ", \"sigma\": %.17g, \"clip\": %.17g", o->sigma,
               o->clip);
    else printf("sigma        %.10g\nclip         %.10g\n", o->sigma, o->clip);
    print_answers(o, r, "B_norm", head, o->clip * o->clip);
  }
}

int dpgd_cmd_calibrate(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    calibrate_usage(stdout);
    return DPGD_EXIT_OK;
  }
  options o = {.cmd = "calibrate", .methods = (1u << DPGD_ACCT_N_METHODS) - 1};
  o.acc = dpgd_acct_alloc();
  if (!o.acc) return dpgd_cli_error("out of memory");
  int rc = parse_options(&o, argc, argv);
  int budget = o.have_sigma || o.have_clip;
  if (!rc) rc = check_calibrate_options(&o, budget);
  if (rc) {
    dpgd_acct_free(o.acc);
    return rc;
  }
  if (!o.have_delta) o.delta = 1e-5;
  const dpgd_accountant *extra = dpgd_acct_n_entries(o.acc) ? o.acc : NULL;
  answer r[DPGD_ACCT_N_METHODS] = {{0}};
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    if (!(o.methods >> m & 1)) continue;
    double t0 = now_ms(), x;
    int st = budget ? dpgd_calibrate_budget(m, o.eps, o.delta, o.sigma, o.clip, extra, &x)
                    : dpgd_calibrate_sigma(m, o.eps, o.delta, o.steps, extra, &x);
    r[m].ms = now_ms() - t0;
    if (st) answer_fail(&r[m], st);
    else r[m].ok = 1, r[m].value = x;
  }
  print_calibration(&o, budget, r);
  int ok = n_ok(r, o.methods), first = -1;
  dpgd_acct_free(o.acc);
  for (int m = 0; m < DPGD_ACCT_N_METHODS && first < 0; m++)
    if (o.methods >> m & 1) first = m;
  if (!ok) /* the reason of the first requested method (the table has every one) */
    return dpgd_cli_error("no requested method could calibrate this target (%s: %s)",
                          dpgd_acct_method_name((dpgd_acct_method)first), r[first].why);
  return DPGD_EXIT_OK;
}
