/* cmd_train.c -- 'dpgd train': loads and checks the config, prints the planned guarantee
 * under every accounting method, drives the training loop with a progress line on
 * stderr, and prints where the run directory is. --resume continues a checkpointed run.
 * SIGINT and SIGTERM stop the run between steps, after a checkpoint. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "dpgd_accounting.h"
#include "dpgd_train.h"
#ifdef DPGD_MPI
#include "mpi_train.h"
#endif

#define MAX_SETS 64

/* The stop signal received (SIGINT or SIGTERM), 0 if none: set by the handler, read by
 * the training loop between steps, so that a stop never cuts a step or a file short. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

/* SA_RESETHAND: a second signal takes its default action (ends the process at once), for
 * a user who does not want to wait for the step in progress; the run directory survives
 * that like any kill. SA_RESTART: system calls interrupted by the first one resume. */
static void catch_stop_signals(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static void usage(FILE *f)
{
  fprintf(
      f,
      "usage: dpgd train --config FILE [--set section.key=value ...] [--out RUN_DIR]\n"
      "       dpgd train --resume RUN_DIR\n\n"
      "Private full-batch gradient descent (Feldman & Zrnic, Algorithm 6, or\n"
      "Algorithm 7 with individual privacy filtering when filter.enabled = true), or\n"
      "DP-SGD with Poisson sampling (train.sampling = poisson, train.sample_rate = q:\n"
      "each point independently with probability q each step, the noisy sum divided by\n"
      "q n; accounted as Poisson-subsampled Gaussians by the same accountant), or with\n"
      "fixed-size sampling (train.sampling = subset, train.batch_size = m: a uniformly\n"
      "random set of exactly m points each step, without replacement, the sum divided by\n"
      "m; accounted under replace-one neighbours by an RDP bound, reported as the\n"
      "smallest rdp_* eps and never as exact: accounting/SAMPLING.md).\n"
      "Samplers offered: full, poisson, subset. Epoch-wise shuffling (each point once\n"
      "per epoch) is not offered: it is a different sampler, and its usual accounting as\n"
      "Poisson sampling is not valid (Chua et al., How Private are DP-SGD\n"
      "Implementations?, ICML 2024); dpgd has no accountant for it.\n"
      "train.algorithm = pnsgd: one pass of projected noisy SGD on softmax regression\n"
      "releasing only the last iterate (train/LASTITERATE.md; no checkpoints, no resume).\n"
      "Writes the run directory described in train/RUN_FORMAT.md: config.ini,\n"
      "metrics.csv, model.bin, points.csv (SENSITIVE per-point report; its rows' eps\n"
      "hold together at the run's delta, delta_level is a level's share of it, not a\n"
      "delta on its own), checkpoint.bin (training state: never share checkpoint.bin,\n"
      "and never fork a run: resuming two copies of a run directory releases two\n"
      "continuations that no eps covers), summary.json (last).\n\n"
      "  --config FILE    INI configuration (configs/*.ini)\n"
      "  --set S.K=V      override one key (repeatable)\n"
      "  --out DIR        run directory (overrides output.dir)\n"
      "  --resume DIR     continue the unfinished run in DIR from its checkpoint (never\n"
      "                   a copy of it as well: never fork a run); with\n"
      "                   train.rng = secure a checkpoint is written after every step,\n"
      "                   before its results, so no released step is ever redone\n"
      "  --quiet          no progress line\n"
      "  --dry-run        print the plan and its guarantee under every method; no training\n\n"
      "SIGINT or SIGTERM stops the run after the step in progress and a checkpoint (exit\n"
      "status 130 or 143; continue with --resume); a second one ends it at once.\n\n"
      "configuration keys:\n");
  dpgd_config_print_schema(f);
}

/* The guarantee line: GDP mu for full-batch runs; poisson runs are not GDP. */
static void print_guarantee(const dpgd_plan *p)
{
  if (p->sampling == DPGD_SAMPLING_SUBSET)
    printf("guarantee   %zu subset-sampled Gaussians (m = %zu of n = %zu, sigma = %.6g, "
           "replace-one, RDP bound)%s, delta = %g; eps by method (reported: %s):\n",
           p->steps, p->batch_size, p->n, dpgd_round_digits(p->sigma, 6, 1),
           p->queries ? " and the queries" : "", p->delta,
           dpgd_acct_method_name((dpgd_acct_method)p->report_method));
  else if (p->sampling == DPGD_SAMPLING_POISSON && p->filtered)
    printf("guarantee   the filter's eps above, and also the composition of %zu "
           "Poisson-subsampled Gaussians (q = %.6g, sigma = %.6g)%s as if every point were "
           "charged every step: both hold, the smaller is the run's guarantee; delta = %g; "
           "eps of the composition by method:\n",
           p->steps, p->sample_rate, dpgd_round_digits(p->sigma, 6, 1),
           p->queries ? " and the queries" : "", p->delta);
  else if (p->sampling == DPGD_SAMPLING_POISSON && p->discrete)
    printf("guarantee   %zu Poisson-subsampled discrete Gaussians on exact integer sums (q = "
           "%.6g, sigma = %.6g, grid 2^-%d)%s, %s; delta = %g; eps by method (reported: %s):\n",
           p->steps, p->sample_rate, dpgd_round_digits(p->sigma, 6, 1), p->grid_bits,
           p->queries ? " and the queries" : "", dpgd_plan_theorem(p), p->delta,
           dpgd_acct_method_name((dpgd_acct_method)p->report_method));
  else if (p->sampling == DPGD_SAMPLING_POISSON)
    printf("guarantee   %zu Poisson-subsampled Gaussians (q = %.6g, sigma = %.6g)%s, delta = "
           "%g; eps by method:\n",
           p->steps, p->sample_rate, dpgd_round_digits(p->sigma, 6, 1),
           p->queries ? " and the queries" : "", p->delta);
  else if (p->discrete)
    printf("guarantee   discrete Gaussians on exact integer sums (grid 2^-%d): rho = mu^2/2 "
           "zCDP with mu = %.6g (training %.6g), %s; delta = %g; eps by method (reported: "
           "%s):\n",
           p->grid_bits, dpgd_round_digits(p->mu_total, 6, 1),
           dpgd_round_digits(p->mu_train, 6, 1), DPGD_DISCRETE_THEOREM, p->delta,
           dpgd_acct_method_name((dpgd_acct_method)p->report_method));
  else
    printf("guarantee   mu = %.6g GDP (training %.6g), delta = %g; eps by method:\n",
           dpgd_round_digits(p->mu_total, 6, 1), dpgd_round_digits(p->mu_train, 6, 1),
           p->delta);
}

static void print_eps_rows(const dpgd_plan *p);

static void print_plan(const dpgd_plan *p, const dpgd_config *c)
{
  if (p->sampling == DPGD_SAMPLING_SUBSET)
    printf("algorithm   DP-SGD, subset sampling: exactly m = %zu points per step without "
           "replacement (the noisy sum is divided by m)\n",
           p->batch_size);
  else if (p->sampling == DPGD_SAMPLING_POISSON)
    printf("algorithm   DP-SGD, Poisson sampling: rate q = %.6g, expected batch q n = %.6g "
           "(the noisy sum is divided by it)\n",
           p->sample_rate, p->sample_rate * (double)p->n);
  else
    printf("algorithm   %s\n", p->filtered ? "filtered (Algorithm 7, individual filtering)"
                                           : "plain (Algorithm 6)");
  printf("data        n = %zu (public)\n", p->n);
  /* Noise scales are shown rounded up, like every privacy number: a configuration that
   * copies a shown value gets at least the noise the guarantee assumes. */
  printf("noise       sigma = %.6g, clip C = %.6g, noise std sigma*C = %.6g, rng %s\n",
         dpgd_round_digits(p->sigma, 6, 1), p->clip,
         dpgd_round_digits(p->sigma * p->clip, 6, 1), dpgd_rng_mode_name(c->train_rng));
  if (p->filtered && p->sampling == DPGD_SAMPLING_POISSON)
    printf("filter      every point (a, B_a)-RDP at %d orders, B_a = %.6g full-rate steps: "
           "eps %.6g (rdp_optimal, delta %g) whatever the steps; a full pass every %zu "
           "step%s; %zu steps\n",
           DPGD_FILTER_SG_N_ORDERS, p->filter_k, dpgd_round_digits(p->filter_eps, 6, 1),
           p->delta, p->refresh, p->refresh == 1 ? "" : "s", p->steps);
  else if (p->filtered)
    printf("budget      B_norm = %.10g (%.6g full-norm steps), k_max = %zu steps\n",
           dpgd_round_digits(p->budget, 10, -1),
           dpgd_round_digits(p->budget / (p->clip * p->clip), 6, -1), p->steps);
  else printf("steps       %zu\n", p->steps);
  if (c->train_rng == DPGD_RNG_SECURE)
    printf(
        "checkpoint  after every step, before its metrics row (train.rng = secure: the noise "
        "cannot be replayed, so no released step is ever redone; output.checkpoint_every "
        "ignored)\n");
  if (p->queries)
    printf("stopping    %zu noisy accuracy queries every %zu steps from step %zu, tau = %.6g "
           "(mu %.3g each)\n",
           p->queries, p->every, p->first_query, dpgd_round_digits(p->tau, 6, 1),
           dpgd_round_digits(1 / p->tau, 3, 1));
  else printf("stopping    none (last iterate)\n");
  print_guarantee(p);
  print_eps_rows(p);
}

/* The planned eps under every method, or why a method has none. */
static void print_eps_rows(const dpgd_plan *p)
{
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    const char *name = dpgd_acct_method_name((dpgd_acct_method)m);
    if (isfinite(p->eps[m])) printf("  %-12s %.6g\n", name, dpgd_round_digits(p->eps[m], 6, 1));
    else if (p->sampling == DPGD_SAMPLING_SUBSET && m <= DPGD_ACCT_ZCDP)
      printf("  %-12s n/a (no dominating pair is known for subset sampling under replace-one "
             "neighbours; the rdp_* rows are upper bounds)\n",
             name);
    else if (p->discrete && m == DPGD_ACCT_EXACT)
      printf("  %-12s n/a (no exact privacy curve is proven for the discrete Gaussian; the "
             "continuous Gaussian would give %.6g)\n",
             name, dpgd_round_digits(p->eps_continuous, 6, 1));
    else if (p->sampling == DPGD_SAMPLING_POISSON && m == DPGD_ACCT_ZCDP)
      printf("  %-12s n/a (not offered for subsampled Gaussians: the rdp_* rows carry the "
             "amplification by sampling)\n",
             name);
    else
      printf("  %-12s n/a (%s)\n", name,
             p->eps_status[m] == DPGD_OK ? "infinite" : dpgd_error_str(p->eps_status[m]));
  }
  fflush(stdout);
}

/* The command line of 'dpgd train'. */
typedef struct {
  const char *config, *out, *resume;
  const char *sets[MAX_SETS];
  int n_sets, quiet, dry;
} train_args;

/* Fills *a from argv; returns DPGD_EXIT_OK, or the exit status of a usage error. */
static int parse_args(train_args *a, int argc, char **argv)
{
  memset(a, 0, sizeof *a);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int has_val = i + 1 < argc;
    if (!strcmp(arg, "--quiet")) {
      a->quiet = 1;
    } else if (!strcmp(arg, "--dry-run")) {
      a->dry = 1;
    } else if (!strcmp(arg, "--config") || !strcmp(arg, "--set") || !strcmp(arg, "--out") ||
               !strcmp(arg, "--resume")) {
      if (!has_val) return dpgd_cli_usage_error("train", "%s needs a value", arg);
      const char *v = argv[++i];
      if (!strcmp(arg, "--config")) a->config = v;
      else if (!strcmp(arg, "--out")) a->out = v;
      else if (!strcmp(arg, "--resume")) a->resume = v;
      else if (a->n_sets < MAX_SETS) a->sets[a->n_sets++] = v;
      else return dpgd_cli_usage_error("train", "more than %d --set overrides", MAX_SETS);
    } else {
      return dpgd_cli_usage_error("train", "unknown argument '%s'", arg);
    }
  }
  if (a->resume && (a->config || a->n_sets || a->out || a->dry))
    return dpgd_cli_usage_error("train",
                                "--resume takes no --config, --set, --out or --dry-run");
  if (!a->resume && !a->config)
    return dpgd_cli_usage_error("train", "--config FILE (or --resume RUN_DIR) is required");
  return DPGD_EXIT_OK;
}

/* Resumes or opens the run into *r; a dry run prints its plan and leaves *r NULL. Returns
 * the exit status when *r is NULL. */
static int start_run(dpgd_run **r, const train_args *a)
{
  int rc;
  if (a->resume) {
    catch_stop_signals();
    rc = dpgd_run_resume(r, a->resume);
    if (rc) return dpgd_cli_status_error(rc, "cannot resume");
    return DPGD_EXIT_OK;
  }
  dpgd_config c;
  dpgd_config_defaults(&c);
  rc = dpgd_config_load(&c, a->config);
  for (int i = 0; !rc && i < a->n_sets; i++) rc = dpgd_config_set(&c, a->sets[i]);
  if (!rc) rc = dpgd_config_validate(&c);
  if (rc) return dpgd_cli_status_error(rc, "");
  if (c.train_algorithm == DPGD_ALGO_PNSGD)
    return dpgd_cmd_train_pnsgd(&c, a->out, a->dry, c.output_progress && !a->quiet);
  if (a->dry) {
    dpgd_plan p;
    rc = dpgd_run_dry(&p, &c);
    if (rc) return dpgd_cli_status_error(rc, "");
    print_plan(&p, &c);
    return DPGD_EXIT_OK;
  }
  catch_stop_signals();
  rc = dpgd_run_open(r, &c, a->out);
  if (rc) return dpgd_cli_status_error(rc, "");
  return DPGD_EXIT_OK;
}

/* The run directory, its plan, and what a resume redid. */
static void print_start(dpgd_run *r, int resume)
{
  const dpgd_config *c = dpgd_run_config(r);
  const char *note = dpgd_notice_take();
  if (note) fprintf(stderr, "dpgd: note: %s\n", note);
  printf("run         %s%s\n", c->output_dir, resume ? " (resumed)" : "");
  print_plan(dpgd_run_plan(r), c);
  if (c->train_rng == DPGD_RNG_RESEARCH)
    fprintf(stderr, "dpgd: warning: %s\n", DPGD_RESEARCH_CAVEAT);
  if (resume) printf("resuming    after step %zu\n", dpgd_run_step_index(r));
  if (resume && c->train_rng == DPGD_RNG_SECURE)
    printf("redone      %zu released steps (secure: every step is checkpointed before it is "
           "emitted; a step cut short released nothing and is drawn afresh)%s\n",
           dpgd_run_redone(r),
           dpgd_run_row_restored(r) ? "; metrics row of the checkpointed step restored" : "");
  else if (resume && dpgd_run_redone(r))
    printf("redone      %zu steps after the checkpoint, replayed bit for bit (research rng)\n",
           dpgd_run_redone(r));
  fflush(stdout); /* the resume's report is out before the first step */
}

/* Steps until the run is done or a stop signal came, with the progress line. */
static int train_loop(dpgd_run *r, int progress)
{
  const dpgd_plan *p = dpgd_run_plan(r);
  int rc = DPGD_OK;
  int tty = isatty(STDERR_FILENO);
  size_t every = p->steps / 20 ? p->steps / 20 : 1;
  char line[256];
  while (!dpgd_run_done(r) && !stop_signal) {
    rc = dpgd_run_step(r);
    if (rc) break;
    size_t t = dpgd_run_step_index(r);
    if (progress && (tty || t % every == 0 || t == p->steps)) {
      dpgd_run_progress(r, line, sizeof line);
      fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
    }
  }
  if (progress && tty) fputc('\n', stderr);
  return rc;
}

/* A run stopped by signal sig: checkpointed, freed; returns the exit status. */
static int stop_run(dpgd_run *r, int sig)
{
  /* Research runs checkpoint every checkpoint_every steps; the steps since then are
   * kept too. A secure run's last step is already checkpointed; this rewrites it. */
  int rc = dpgd_run_checkpoint(r);
  if (rc) {
    dpgd_run_free(r);
    return dpgd_cli_status_error(rc, "stopping");
  }
  fprintf(stderr, "dpgd: stopped by %s after step %zu; resume with: dpgd train --resume %s\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM", dpgd_run_step_index(r),
          dpgd_run_config(r)->output_dir);
  dpgd_run_free(r);
  return 128 + sig;
}

static int train_command(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  train_args a;
  int code = parse_args(&a, argc, argv);
  if (code != DPGD_EXIT_OK) return code;

  dpgd_run *r = NULL;
  code = start_run(&r, &a);
  if (!r) return code;
#ifdef DPGD_MPI
  int st = dpgd_mpi_attach(r); /* under mpirun: every rank sums its chunks */
  if (st) {
    dpgd_run_free(r);
    return dpgd_cli_status_error(st, "cannot start the ranks");
  }
#endif
  const dpgd_config *c = dpgd_run_config(r);
  const dpgd_plan *p = dpgd_run_plan(r);
  print_start(r, a.resume != NULL);

  int rc = train_loop(r, c->output_progress && !a.quiet);
#ifdef DPGD_MPI
  dpgd_mpi_report();
#endif
  int sig = stop_signal;
  if (!rc && sig && !dpgd_run_done(r)) return stop_run(r, sig);
  if (!rc) rc = dpgd_run_finish(r);
  if (rc) {
    dpgd_run_free(r);
    return dpgd_cli_status_error(rc, "training failed");
  }
  double e = dpgd_run_eps_now(r);
  if (isfinite(p->filter_eps) && !(e <= p->filter_eps)) /* filtered DP-SGD: both hold */
    printf("done        %zu steps; eps %.6g (the filter's, rdp_optimal, delta %g; the "
           "composition gives %.6g, %s); results in %s (summary.json)\n",
           dpgd_run_step_index(r), dpgd_round_digits(p->filter_eps, 6, 1), p->delta,
           dpgd_round_digits(e, 6, 1),
           dpgd_acct_method_name((dpgd_acct_method)p->report_method), c->output_dir);
  else if (p->discrete)
    printf("done        %zu steps; eps %.6g (%s, delta %g; discrete Gaussian, proven for the "
           "integers that ran; the continuous Gaussian would give %.6g); results in %s "
           "(summary.json)\n",
           dpgd_run_step_index(r), dpgd_round_digits(e, 6, 1),
           dpgd_acct_method_name((dpgd_acct_method)p->report_method), p->delta,
           dpgd_round_digits(dpgd_run_eps_continuous(r), 6, 1), c->output_dir);
  else
    printf("done        %zu steps; eps %.6g (%s, delta %g); results in %s (summary.json)\n",
           dpgd_run_step_index(r), dpgd_round_digits(e, 6, 1),
           dpgd_acct_method_name((dpgd_acct_method)p->report_method), p->delta, c->output_dir);
  if (p->discrete) printf("guarantee   %s\n", dpgd_plan_theorem(p));
  dpgd_run_free(r);
  return DPGD_EXIT_OK;
}

int dpgd_cmd_train(int argc, char **argv)
{
#ifdef DPGD_MPI
  return dpgd_mpi_train(argc, argv, train_command);
#else
  return train_command(argc, argv);
#endif
}
