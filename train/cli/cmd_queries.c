/* cmd_queries.c -- 'dpgd queries': answers the columns of a CSV of users x queries as
 * sparse linear queries under individual filtering (Feldman & Zrnic, Theorem 1.2 and
 * Corollary 4.7; train/QUERIES.md), or under plain composition (--plain), and writes the
 * noisy answers, the guarantee under every method and the sensitive per-user report.
 * The numbers come from the library (dpgd_queries_*); this file checks the CSV, lays
 * its columns out as queries, and writes and prints the results. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "dpgd_accounting.h"
#include "dpgd_core.h"
#include "dpgd_train.h"
#include "plot.h"
#include "queries_csv.h"

#ifndef DPGD_VERSION
#define DPGD_VERSION "unknown"
#endif

#define CMD "queries"
#define QPATH (PATH_MAX + 32)

static void usage(FILE *f)
{
  fprintf(f, "usage: dpgd queries --data FILE.csv --budget B_NORM --kappa K --out DIR [opts]\n"
             "       dpgd queries --data FILE.csv --plain --kappa K --out DIR [opts]\n\n"
             "Answers the queries of a CSV of users x queries in column order: each answer is\n"
             "the sum of the users' values plus Gaussian noise of std sigma, sigma^2 =\n"
             "B_NORM / (2 K) (Feldman & Zrnic, Theorem 1.2; train/QUERIES.md). Individual\n"
             "filtering: a user's value is capped to norm min(norm, sqrt(B_NORM - spend)),\n"
             "spend being the sum of the squared norms of its capped values so far, and the\n"
             "user is active while spend < B_NORM; a user who takes part in few queries is\n"
             "answered in all of them. The whole sequence is K-zCDP (sqrt(2 K)-GDP), however\n"
             "many queries the file has.\n\n"
             "The CSV has a header row and one row per user, every value in [0, 1]. A column\n"
             "is one query, except that the columns NAME.0, NAME.1, ..., NAME.(d-1) together\n"
             "are one query NAME with vector values; every query must have the same dim d.\n"
             "DIR gets answers.csv (query,answer or query,answer_0,...,answer_(d-1)),\n"
             "summary.json (eps under every method, sigma, the accuracy bound of Corollary\n"
             "4.7) and users.csv (SENSITIVE per-user report: each row for its user only).\n\n"
             "  --data FILE.csv   users x queries, values in [0, 1]\n"
             "  --budget B_NORM   squared-norm budget of every user (> 0)\n"
             "  --kappa K         zCDP level of the whole sequence (> 0)\n"
             "  --plain           plain composition at the same guarantee instead: no\n"
             "                    filtering, clip sqrt(d), budget k d for the k queries of\n"
             "                    the file (no --budget)\n"
             "  --delta D         delta of the reported eps, 0 < D < 1 (default 1e-5)\n"
             "  --beta B          failure probability of the accuracy bound, 0 < B < 1\n"
             "                    (default 0.05): P(|answer - sum of capped values| > bound)\n"
             "                    <= B for each query\n"
             "  --seed S          master seed of --rng research (default 1, public): decimal\n"
             "                    below 2^64 or 0x and up to 64 hex digits; eps holds only\n"
             "                    for a seed of 128+ bits of secret entropy kept secret\n"
             "  --rng MODE        research (reproducible from the seed, continuous Gaussian\n"
             "                    noise in floating point; default) or secure (getrandom,\n"
             "                    one exact discrete Gaussian per coordinate on the integer\n"
             "                    sum in units of 2^-F, eps by zCDP/RDP (docs/MATH.md\n"
             "                    section 18); for answers you release)\n"
             "  --out DIR         output directory, created; it must not hold answers.csv\n"
             "  --diagnostics     also print how many users ended inactive (not private)\n");
}

/* ---- the command line ---- */

typedef struct {
  const char *data, *out;
  double budget, kappa, delta, beta;
  int have_budget, have_kappa, plain, diagnostics, rng;
  dpgd_seed seed;
} qargs;

/* Takes the value v of flag f. Returns 0, 1 after printing an error, or -1 when f is not
 * a flag with a value. */
static int take_value(qargs *a, const char *f, const char *v)
{
  static const char *const flags[] = {"--data",  "--out",  "--budget", "--kappa",
                                      "--delta", "--beta", "--seed",   "--rng"};
  size_t k = 0, n = sizeof flags / sizeof flags[0];
  char why[160];
  while (k < n && strcmp(f, flags[k])) k++;
  if (k == n) return -1;
  if (!v) {
    dpgd_cli_usage_error(CMD, "%s needs a value", f);
    return 1;
  }
  switch (k) {
  case 0: a->data = v; return 0;
  case 1: a->out = v; return 0;
  case 2: a->have_budget = 1; return dpgd_cli_parse_double(f, v, &a->budget);
  case 3: a->have_kappa = 1; return dpgd_cli_parse_double(f, v, &a->kappa);
  case 4: return dpgd_cli_parse_double(f, v, &a->delta);
  case 5: return dpgd_cli_parse_double(f, v, &a->beta);
  case 6:
    if (!dpgd_seed_parse(&a->seed, v, why, sizeof why)) return 0;
    dpgd_cli_usage_error(CMD, "--seed: %s", why);
    return 1;
  default:
    if (!strcmp(v, "research") || !strcmp(v, "secure")) {
      a->rng = strcmp(v, "research") ? DPGD_RNG_SECURE : DPGD_RNG_RESEARCH;
      return 0;
    }
    dpgd_cli_usage_error(CMD, "--rng must be research or secure (got '%s')", v);
    return 1;
  }
}

static int check_args(const qargs *a)
{
  if (!a->data) return dpgd_cli_usage_error(CMD, "--data FILE.csv is required");
  if (!a->out) return dpgd_cli_usage_error(CMD, "--out DIR is required");
  if (!a->have_kappa) return dpgd_cli_usage_error(CMD, "--kappa K is required");
  if (!(a->kappa > 0))
    return dpgd_cli_usage_error(CMD, "--kappa must be > 0 (got %g)", a->kappa);
  if (a->plain && a->have_budget)
    return dpgd_cli_usage_error(CMD, "--plain takes no --budget (its budget is k d, the "
                                     "number of queries times their dim)");
  if (!a->plain && !a->have_budget)
    return dpgd_cli_usage_error(CMD, "--budget B_NORM is required (or --plain)");
  if (a->have_budget && !(a->budget > 0))
    return dpgd_cli_usage_error(CMD, "--budget must be > 0 (got %g)", a->budget);
  if (!(a->delta > 0 && a->delta < 1))
    return dpgd_cli_usage_error(CMD, "--delta must lie in (0, 1) (got %g)", a->delta);
  if (!(a->beta > 0 && a->beta < 1))
    return dpgd_cli_usage_error(CMD, "--beta must lie in (0, 1) (got %g)", a->beta);
  return DPGD_EXIT_OK;
}

static int parse_args(qargs *a, int argc, char **argv)
{
  *a = (qargs){.delta = 1e-5, .beta = 0.05, .rng = DPGD_RNG_RESEARCH};
  a->seed = dpgd_seed_from_u64(1);
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (!strcmp(f, "--plain")) {
      a->plain = 1;
      continue;
    }
    if (!strcmp(f, "--diagnostics")) {
      a->diagnostics = 1;
      continue;
    }
    int r = take_value(a, f, i + 1 < argc ? argv[i + 1] : NULL);
    if (r < 0) return dpgd_cli_usage_error(CMD, "unknown option '%s'", f);
    if (r > 0) return DPGD_EXIT_USAGE;
    i++;
  }
  return check_args(a);
}

/* ---- the run ---- */

typedef struct {
  qargs a;
  dpgd_csv *t;
  dpgd_qlayout L;
  dpgd_queries *q;
  double *answers; /* (L.n, L.dim) row-major */
  double clip, budget, bound;
  double eps[DPGD_ACCT_N_METHODS]; /* NAN where the method is unavailable */
  double eps_continuous;           /* secure: the continuous Gaussian's exact eps */
  dpgd_odometer odometer;          /* secure: no levels */
} qrun;

/* Reads and checks the CSV, lays out its queries, and opens the query machine. */
static int run_open(qrun *r)
{
  int st = dpgd_csv_read(&r->t, r->a.data);
  if (!st) st = dpgd_qlayout_build(&r->L, r->t, r->a.data);
  if (st) return st;
  /* Values in [0,1]^d have norm <= sqrt(d): the clip sqrt(d) caps nothing (up to an ulp) and sets
   * the odometer's levels of users.csv (one query spends at most d; train/QUERIES.md).
   * Plain composition: k queries of cap sqrt(d) spend at most k d, so no user is ever
   * capped below its value. */
  r->clip = sqrt((double)r->L.dim);
  r->budget = r->a.plain ? (double)r->L.n * (double)r->L.dim : r->a.budget;
  dpgd_queries_params p = {.n_users = r->t->n_rows,
                           .dim = r->L.dim,
                           .budget = r->budget,
                           .kappa = r->a.kappa,
                           .clip = r->clip,
                           .rng = r->a.rng,
                           .seed = r->a.seed};
  st = dpgd_queries_open(&r->q, &p);
  if (st) return st;
  r->answers = calloc(r->L.n * r->L.dim, sizeof *r->answers);
  if (!r->answers) return DPGD_FAIL(DPGD_ENOMEM, "out of memory for %zu answers", r->L.n);
  return DPGD_OK;
}

/* Answers every query in column order, then the guarantee and the accuracy bound. */
static int run_answer(qrun *r)
{
  for (size_t k = 0; k < r->L.n; k++) {
    dpgd_qcolumn c = {r->t, r->L.col[k], r->L.dim};
    int st = dpgd_queries_answer_fn(r->q, dpgd_qcolumn_value, &c, &r->answers[k * r->L.dim]);
    if (st) return st;
  }
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    if (dpgd_queries_epsilon(r->q, (dpgd_acct_method)m, r->a.delta, &r->eps[m])) {
      r->eps[m] = NAN; /* this method does not apply: null in summary.json */
      dpgd_error_clear();
    }
  r->bound = dpgd_queries_bound(r->q, r->a.beta);
  r->eps_continuous = dpgd_queries_eps_continuous(r->q, r->a.delta);
  return dpgd_queries_odometer(r->q, r->a.delta, &r->odometer);
}

static void run_free(qrun *r)
{
  dpgd_queries_free(r->q);
  dpgd_csv_free(r->t);
  dpgd_qlayout_free(&r->L);
  free(r->answers);
}

/* ---- the output directory ---- */

static int out_path(char *buf, const char *dir, const char *name)
{
  if (snprintf(buf, QPATH, "%s/%s", dir, name) >= QPATH)
    return DPGD_FAIL(DPGD_EINVAL, "--out: path too long: %s", dir);
  return DPGD_OK;
}

/* Creates dir; refuses one that holds a released result (answers.csv). */
static int out_prepare(const char *dir)
{
  char failed[QPATH], p[QPATH];
  if (dpgd_path_mkdirs(dir, 0755, failed, sizeof failed))
    return DPGD_FAIL(DPGD_EIO, "cannot create directory %s: %s", failed, strerror(errno));
  int st = out_path(p, dir, "answers.csv");
  if (st) return st;
  struct stat sb;
  if (stat(p, &sb) == 0)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s already holds answers.csv: a released result is never "
                     "overwritten (choose another --out)",
                     dir);
  return DPGD_OK;
}

/* Writes the memstream text of f to dir/name atomically and frees it. */
static int out_commit(FILE *f, char **text, size_t *len, const char *dir, const char *name)
{
  char p[QPATH];
  int st = fclose(f) ? DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", name) : DPGD_OK;
  if (!st) st = out_path(p, dir, name);
  if (!st) st = dpgd_write_atomic(p, *text, *len);
  free(*text);
  *text = NULL;
  return st;
}

static int write_answers(const qrun *r)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for answers.csv");
  fputs("query", f);
  if (r->L.dim == 1) fputs(",answer", f);
  else
    for (size_t j = 0; j < r->L.dim; j++) fprintf(f, ",answer_%zu", j);
  fputc('\n', f);
  for (size_t k = 0; k < r->L.n; k++) {
    fprintf(f, "%.*s", (int)r->L.len[k], r->t->names[r->L.col[k]]);
    for (size_t j = 0; j < r->L.dim; j++) fprintf(f, ",%.17g", r->answers[k * r->L.dim + j]);
    fputc('\n', f);
  }
  return out_commit(f, &text, &len, r->a.out, "answers.csv");
}

/* "eps": {...} and "accuracy": {...} of summary.json. */
static void summary_guarantee(FILE *f, const qrun *r)
{
  fprintf(f, " \"delta\": %.10g, \"mu\": ", r->a.delta); /* secure: no GDP statement */
  dpgd_report_json_num(
      f, dpgd_queries_dgauss(r->q) ? NAN : dpgd_round_digits(sqrt(2 * r->a.kappa), 10, 1));
  fprintf(f, ",\n \"eps\": {");
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    fprintf(f, "%s\"%s\": ", m ? ", " : "", dpgd_acct_method_name((dpgd_acct_method)m));
    dpgd_report_json_num(f, dpgd_round_digits(r->eps[m], 10, 1));
  }
  fprintf(f, "},\n \"accuracy\": {\"beta\": %.10g, \"bound\": ", r->a.beta);
  dpgd_report_json_num(f, dpgd_round_digits(r->bound, 10, 1));
  fprintf(f, ", \"norm\": \"inf\", \"about\": \"P(|answer - sum of capped values| > bound) "
             "<= beta for each query, Corollary 4.7\"},\n ");
  fprintf(f, "\"odometer\": ");
  if (r->odometer.levels) dpgd_report_json_odometer(f, &r->odometer);
  else fputs("null", f);
  fprintf(f, ",\n");
}

/* "noise": {...}: which sampler made the answers and, for the discrete one, the theorem
 * the eps comes from (no floating-point caveat: the released integers are what it
 * covers) and the continuous Gaussian's exact eps beside it. */
static void summary_noise(FILE *f, const qrun *r)
{
  const dpgd_dgauss *g = dpgd_queries_dgauss(r->q);
  if (!g) {
    fputs(" \"noise\": {\"mechanism\": \"gaussian\", \"sampler\": \"continuous, floating "
          "point, seeded stream (research mode)\"},\n",
          f);
    return;
  }
  dpgd_report_json_dgauss(f, DPGD_DISCRETE_THEOREM, -ilogb(dpgd_queries_quantum(r->q)),
                          (unsigned long long)g->num,
                          "\"filter\": \"Renyi filter (Feldman & Zrnic 2021), "
                          "train/QUERIES.md\"",
                          r->eps_continuous);
}

static int write_summary(const qrun *r)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for summary.json");
  fprintf(f, "{\"dpgd_version\": \"%s\", \"command\": \"queries\", \"filter\": \"%s\",\n",
          DPGD_VERSION, r->a.plain ? "plain" : "individual");
  fprintf(f, " \"users\": %zu, \"queries\": %zu, \"dim\": %zu, \"budget\": ", r->t->n_rows,
          r->L.n, r->L.dim);
  dpgd_report_json_num(f, r->budget);
  fprintf(f, ", \"kappa\": %.10g, \"clip\": ", dpgd_round_digits(r->a.kappa, 10, 1));
  dpgd_report_json_num(f, r->clip);
  fprintf(f, ",\n \"sigma\": ");
  dpgd_report_json_num(f, dpgd_round_digits(dpgd_queries_sigma(r->q), 10, 1));
  fprintf(f, ", \"quantum\": %.17g,\n", dpgd_queries_quantum(r->q));
  summary_guarantee(f, r);
  summary_noise(f, r);
  fputs(" \"seed\": ", f);
  dpgd_report_json_seed(f, &r->a.seed);
  fprintf(f, ", \"rng\": \"%s\"", dpgd_rng_mode_name(r->a.rng));
  if (r->a.rng == DPGD_RNG_RESEARCH)
    fprintf(f, ",\n \"caveat\": \"%s\"", DPGD_QUERIES_RESEARCH_CAVEAT);
  fprintf(f, "}\n");
  return out_commit(f, &text, &len, r->a.out, "summary.json");
}

/* answers.csv, users.csv, then summary.json last (it says the run is complete). */
static int write_outputs(const qrun *r)
{
  char p[QPATH];
  int st = write_answers(r);
  if (!st) st = out_path(p, r->a.out, "users.csv");
  if (!st) st = dpgd_queries_write_users(r->q, r->a.delta, p);
  if (!st) st = write_summary(r);
  return st;
}

static void print_noise(const qrun *r)
{
  double sigma = dpgd_round_digits(dpgd_queries_sigma(r->q), 6, 1);
  const dpgd_dgauss *g = dpgd_queries_dgauss(r->q);
  if (g)
    printf("noise       exact discrete Gaussian N_Z(0, %llu) on the int64 sums in units of "
           "2^-%d (std >= sigma = %.6g), integer arithmetic only, rng secure\n",
           (unsigned long long)g->num, -ilogb(dpgd_queries_quantum(r->q)), sigma);
  else
    printf("noise       Gaussian, sigma = %.6g, continuous sampler in floating point, rng "
           "research\n",
           sigma);
}

static void print_table(const qrun *r)
{
  const qargs *a = &r->a;
  printf("queries     %zu answered (dim %zu), %zu users (public)\n", r->L.n, r->L.dim,
         r->t->n_rows);
  if (a->plain)
    printf("filter      plain composition: clip %.6g, budget k d = %.10g\n", r->clip,
           r->budget);
  else
    printf("filter      individual: budget B_norm = %.10g, values capped to min(norm, "
           "sqrt(B_norm - spend))\n",
           r->budget);
  print_noise(r);
  printf("accuracy    |answer - sum of capped values| <= %.6g for each query with probability "
         ">= 1 - %g (Corollary 4.7)\n",
         dpgd_round_digits(r->bound, 6, 1), a->beta);
  if (dpgd_queries_dgauss(r->q))
    printf("guarantee   kappa = %g zCDP, delta = %g: eps zcdp %.6g, rdp_optimal %.6g (exact "
           "n/a: no exact curve is proven for the discrete Gaussian; the continuous Gaussian "
           "would give %.6g), by %s, under the Renyi filter\n",
           a->kappa, a->delta, dpgd_round_digits(r->eps[DPGD_ACCT_ZCDP], 6, 1),
           dpgd_round_digits(r->eps[DPGD_ACCT_RDP_OPTIMAL], 6, 1),
           dpgd_round_digits(r->eps_continuous, 6, 1), DPGD_DISCRETE_THEOREM);
  else
    printf(
        "guarantee   kappa = %g zCDP (mu = %.6g GDP), delta = %g: eps exact %.6g, zcdp %.6g\n",
        a->kappa, dpgd_round_digits(sqrt(2 * a->kappa), 6, 1), a->delta,
        dpgd_round_digits(r->eps[DPGD_ACCT_EXACT], 6, 1),
        dpgd_round_digits(r->eps[DPGD_ACCT_ZCDP], 6, 1));
  printf("out         %s (answers.csv, summary.json; users.csv is SENSITIVE)\n", a->out);
  if (a->diagnostics) {
    size_t active = dpgd_filter_n_active(dpgd_queries_filter(r->q));
    printf("diagnostic (not private): %zu of %zu users ended inactive\n", r->t->n_rows - active,
           r->t->n_rows);
  }
}

int dpgd_cmd_queries(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  qrun r;
  memset(&r, 0, sizeof r);
  int rc = parse_args(&r.a, argc, argv);
  if (rc) return rc;
  int st = run_open(&r);
  if (!st) st = out_prepare(r.a.out);
  if (!st && r.a.rng == DPGD_RNG_RESEARCH)
    fprintf(stderr, "dpgd: warning: %s\n", DPGD_QUERIES_RESEARCH_CAVEAT);
  if (!st) st = run_answer(&r);
  if (!st) st = write_outputs(&r);
  if (st) rc = dpgd_cli_status_error(st, "");
  else print_table(&r);
  run_free(&r);
  return rc;
}
