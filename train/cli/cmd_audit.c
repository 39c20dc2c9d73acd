/* cmd_audit.c -- 'dpgd audit': a one-run privacy audit of a training config
 * (train/AUDIT.md; Steinke, Nasr & Jagielski 2023): trains it with M canaries, prints and
 * writes the eps lower bound (audit.json) beside the claimed eps, and draws the score
 * distributions of included and excluded canaries (audit_scores.png, with gnuplot). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "plot.h"

#define MAX_SETS 64
#define N_BINS 40

static void usage(FILE *f)
{
  fprintf(f, "usage: dpgd audit --config FILE [--set section.key=value ...] [--canaries M]\n"
             "                  [--guesses R] [--seed S] [--confidence C]\n"
             "                  [--canaries-kind input|gradient] --out DIR [--quiet]\n\n"
             "One-run privacy audit (Steinke, Nasr & Jagielski, NeurIPS 2023): M canary\n"
             "images are appended to the config's training set, each included with\n"
             "probability 1/2 (an excluded one is a null point); the run is trained as\n"
             "'dpgd train' trains it and the auditor sees every released noisy sum\n"
             "(white box). A canary's score estimates its inclusion by least squares\n"
             "from the released sums (the base data's part removed) and every canary's\n"
             "clipped gradient at each released iterate; the R/2 highest scores are\n"
             "guessed in, the R/2 lowest out, and the correct guesses give a lower bound\n"
             "on eps at the run's delta. A lower bound can show that a claimed eps is\n"
             "false; it can never show that it holds (train/AUDIT.md).\n"
             "Two bounds: Steinke et al.'s (eps, delta) bound and the f-DP bound of\n"
             "Mahloujifar, Melis & Chaudhuri (ICML 2025), which tests the claimed\n"
             "mechanism's whole trade-off curve; the verdict is the f-DP bound's.\n"
             "Gradient canaries (--canaries-kind gradient) are training points whose\n"
             "gradient is 4C on one coordinate, clipped, charged, sampled and noised as\n"
             "every point; a canary's score is its coordinate of the released sums less\n"
             "the base points' part. Up to one canary per parameter, or with M above the\n"
             "parameter count P, K per coordinate (K the least power of 2 with K P >= M,\n"
             "at most the steps), each signed by its own Walsh code over the steps so\n"
             "that the canaries sharing a coordinate cancel in each other's scores.\n"
             "Every model type: softmax, cnn, and scatter-softmax and scatter-cnn on the\n"
             "base data's scattering features (made or cached as 'dpgd train' does).\n\n"
             "  --config FILE    INI configuration (configs/*.ini)\n"
             "  --set S.K=V      override one key (repeatable)\n"
             "  --canaries M     canaries (default 1000)\n"
             "  --guesses R      guesses, even (default: a rule fixed before the run,\n"
             "                   train/AUDIT.md \"Guesses\")\n"
             "  --canaries-kind K  input (canary images, default) or gradient\n"
             "  --seed S         canaries, inclusion coins and the audited run's seed\n"
             "                   (default 1): the run's noise is drawn from a seed derived\n"
             "                   from S (train/AUDIT.md), not from the config's\n"
             "                   train.seed, unless --set train.seed=V is given\n"
             "  --confidence C   of the lower bound (default 0.95)\n"
             "  --out DIR        run directory: the run's files, audit.json,\n"
             "                   audit_scores.csv, audit_scores.png, SENSITIVE and\n"
             "                   audit_data/ (a copy of the training data, mode 0600):\n"
             "                   keep DIR as private as the data; an audit is a separate\n"
             "                   use of the data, and its scores are covered by no guarantee\n"
             "  --quiet          no progress line\n");
}

typedef struct {
  const char *config, *out;
  const char *sets[MAX_SETS];
  int n_sets, quiet;
  dpgd_audit_params p;
} audit_args;

static int parse_value(audit_args *a, const char *arg, const char *v)
{
  size_t z;
  double d;
  if (!strcmp(arg, "--config")) a->config = v;
  else if (!strcmp(arg, "--out")) a->out = v;
  else if (!strcmp(arg, "--canaries-kind")) {
    if (!strcmp(v, "input")) a->p.kind = DPGD_AUDIT_INPUT;
    else if (!strcmp(v, "gradient")) a->p.kind = DPGD_AUDIT_GRADIENT;
    else
      return dpgd_cli_usage_error("audit",
                                  "--canaries-kind must be input or gradient, not '%s'", v);
  } else if (!strcmp(arg, "--set")) {
    if (a->n_sets >= MAX_SETS)
      return dpgd_cli_usage_error("audit", "more than %d --set overrides", MAX_SETS);
    a->sets[a->n_sets++] = v;
  } else if (!strcmp(arg, "--confidence")) {
    if (dpgd_cli_parse_double(arg, v, &d)) return DPGD_EXIT_USAGE;
    a->p.confidence = d;
  } else {
    if (dpgd_cli_parse_size(arg, v, &z)) return DPGD_EXIT_USAGE;
    if (!strcmp(arg, "--canaries")) a->p.canaries = z;
    else if (!strcmp(arg, "--guesses")) a->p.guesses = z;
    else a->p.seed = z;
  }
  return DPGD_EXIT_OK;
}

static int parse_args(audit_args *a, int argc, char **argv)
{
  static const char *const valued[] = {"--config",     "--set",           "--out",
                                       "--canaries",   "--seed",          "--guesses",
                                       "--confidence", "--canaries-kind", NULL};
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "--quiet")) {
      a->quiet = 1;
      continue;
    }
    int known = 0;
    for (int k = 0; valued[k]; k++) known |= !strcmp(arg, valued[k]);
    if (!known) return dpgd_cli_usage_error("audit", "unknown argument '%s'", arg);
    if (i + 1 >= argc) return dpgd_cli_usage_error("audit", "%s needs a value", arg);
    int code = parse_value(a, arg, argv[++i]);
    if (code) return code;
  }
  if (!a->config) return dpgd_cli_usage_error("audit", "--config FILE is required");
  if (!a->out) return dpgd_cli_usage_error("audit", "--out DIR is required");
  /* --set train.seed=V keeps that seed for the run's noise (dpgd_config_set reads the
   * name exactly so); a train.seed in the config file is the training run's. */
  for (int i = 0; i < a->n_sets; i++)
    if (!strncmp(a->sets[i], "train.seed=", 11)) a->p.keep_train_seed = 1;
  return DPGD_EXIT_OK;
}

/* Steps until done, with a progress line on stderr. */
static int audit_loop(dpgd_audit *au, int progress)
{
  const dpgd_run *r = dpgd_audit_run(au);
  size_t steps = dpgd_run_plan(r)->steps, every = steps / 10 ? steps / 10 : 1;
  char line[256];
  while (!dpgd_audit_done(au)) {
    int rc = dpgd_audit_step(au);
    if (rc) return rc;
    size_t t = dpgd_run_step_index(r);
    if (progress && (t % every == 0 || t == steps)) {
      dpgd_run_progress(r, line, sizeof line);
      fprintf(stderr, "%s\n", line);
    }
  }
  return DPGD_OK;
}

/* Histogram counts of the included and excluded canaries' scores on N_BINS common bins,
 * as an inline gnuplot datablock: "centre count_in count_out". */
static void histogram_block(FILE *f, const double *s, const uint8_t *in, size_t M)
{
  double lo = INFINITY, hi = -INFINITY;
  for (size_t j = 0; j < M; j++) lo = fmin(lo, s[j]), hi = fmax(hi, s[j]);
  double w = hi > lo ? (hi - lo) / N_BINS : 1;
  size_t count[2][N_BINS] = {{0}};
  for (size_t j = 0; j < M; j++) {
    size_t b = (size_t)((s[j] - lo) / w);
    count[in[j] ? 0 : 1][b < N_BINS ? b : N_BINS - 1]++;
  }
  fputs("$h << EOD\n", f);
  for (size_t b = 0; b < N_BINS; b++)
    fprintf(f, "%.10g %zu %zu\n", lo + w * ((double)b + 0.5), count[0][b], count[1][b]);
  fputs("EOD\n", f);
}

/* audit_scores.png; a missing gnuplot is a warning (the numbers are in audit.json). */
static void draw_scores(const dpgd_audit *au, const dpgd_audit_result *res, const char *dir)
{
  size_t M;
  const uint8_t *in;
  const double *s = dpgd_audit_scores(au, &in, &M);
  char gp[512], png[4200], *text = NULL;
  size_t len = 0;
  if (strchr(dir, '\'') || dpgd_gnuplot_find(gp, sizeof gp)) {
    fprintf(stderr, "dpgd: warning: audit_scores.png not drawn (%s)\n",
            strchr(dir, '\'') ? "quote in the directory name" : "no gnuplot");
    return;
  }
  snprintf(png, sizeof png, "%s/audit_scores.png", dir);
  FILE *f = open_memstream(&text, &len);
  if (!f) return;
  fprintf(f,
          "set terminal pngcairo size 900,600 noenhanced font 'sans,12'\n"
          "set output '%s'\nset grid\nset style fill transparent solid 0.4\n",
          png);
  fprintf(f, "set title 'canary scores: eps_lower %.3f vs claimed %.3f (%zu/%zu correct)'\n",
          dpgd_round_digits(res->eps_lower, 3, -1), dpgd_round_digits(res->eps_claimed, 4, 1),
          res->correct, res->guesses);
  fputs("set xlabel 'score'\nset ylabel 'canaries'\n", f);
  histogram_block(f, s, in, M);
  fputs("plot $h using 1:2 with boxes title 'included', "
        "$h using 1:3 with boxes title 'excluded'\n",
        f);
  fclose(f);
  if (dpgd_gnuplot_run(gp, text, len, png))
    fprintf(stderr, "dpgd: warning: audit_scores.png not drawn: %s\n", dpgd_error_last());
  free(text);
}

static void print_result(const dpgd_audit_result *res, const char *dir, int gradient)
{
  printf("canaries    %zu (%zu included), %zu guesses, %zu correct\n", res->canaries,
         res->included, res->guesses, res->correct);
  if (gradient)
    printf("codes       %zu per coordinate at most (%s)\n", res->codes,
           res->codes > 1 ? "Walsh codes over the steps, train/AUDIT.md \"Coded canaries\""
                          : "one canary per coordinate");
  printf("eps_lower   %.4f at confidence %g (delta %g; Steinke et al.)\n",
         dpgd_round_digits(res->eps_lower, 4, -1), res->confidence, res->delta);
  printf("f-DP bound  %.4f at confidence %g (%zu guesses, %zu correct; the largest eps of a "
         "claim of the run's mechanism family it rejects)\n",
         dpgd_round_digits(res->eps_lower_fdp, 4, -1), res->confidence, res->guesses_fdp,
         res->correct_fdp);
  printf("eps_claimed %.4f (exact, training releases)\n",
         dpgd_round_digits(res->eps_claimed, 4, 1));
  char seed[DPGD_SEED_TEXT_MAX];
  if (res->secure_rng)
    printf("noise       from the OS CSPRNG (train.rng = secure): no seed draws it\n");
  else
    printf("noise seed  %s (%s)\n", dpgd_seed_format(&res->run_seed, seed),
           res->run_seed_derived ? "derived from --seed; --set train.seed=V keeps one of yours"
                                 : "train.seed, as set on the command line");
  if (!gradient)
    printf("weaker      input canaries: ideal gradient canaries would expect an f-DP bound of "
           "about %.2f here (--canaries-kind gradient)\n",
           dpgd_round_digits(res->eps_ideal_fdp, 3, -1));
  printf("verdict     %s\n", res->eps_lower_fdp > res->eps_claimed
                                 ? "CLAIM REFUTED: the lower bound exceeds the claimed eps"
                                 : "no violation found (a lower bound proves no privacy)");
  printf("done        %zu steps in %.1f s; %s/audit.json\n", res->steps, res->wall_s, dir);
  printf("sensitive   %s holds a copy of the training data and outputs no guarantee covers: "
         "keep it as private as the data (%s/SENSITIVE)\n",
         dir, dir);
}

int dpgd_cmd_audit_planted(int argc, char **argv, double noise_scale, double clip_scale,
                           double rate_scale)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  audit_args a;
  memset(&a, 0, sizeof a);
  dpgd_audit_defaults(&a.p);
  int code = parse_args(&a, argc, argv);
  if (code) return code;
  a.p.planted_noise_scale = noise_scale;
  a.p.planted_clip_scale = clip_scale;
  a.p.planted_rate_scale = rate_scale;
  dpgd_config c;
  dpgd_config_defaults(&c);
  int rc = dpgd_config_load(&c, a.config);
  for (int i = 0; !rc && i < a.n_sets; i++) rc = dpgd_config_set(&c, a.sets[i]);
  if (!rc) rc = dpgd_config_validate(&c);
  if (rc) return dpgd_cli_status_error(rc, "");
  dpgd_audit *au = NULL;
  rc = dpgd_audit_open(&au, &c, a.out, &a.p);
  if (!rc) rc = audit_loop(au, c.output_progress && !a.quiet);
  dpgd_audit_result res;
  if (!rc) rc = dpgd_audit_finish(au, &res);
  if (rc) {
    dpgd_audit_free(au);
    return dpgd_cli_status_error(rc, "audit failed");
  }
  if (noise_scale != 1 || clip_scale != 1 || rate_scale != 1)
    printf("PLANTED BUG noise scaled by %g, clip by %g, accounted rate by %g (test-only "
           "binary)\n",
           noise_scale, clip_scale, rate_scale);
  draw_scores(au, &res, a.out);
  print_result(&res, a.out, a.p.kind == DPGD_AUDIT_GRADIENT);
  dpgd_audit_free(au);
  return DPGD_EXIT_OK;
}

int dpgd_cmd_audit(int argc, char **argv)
{
  return dpgd_cmd_audit_planted(argc, argv, 1, 1, 1);
}
