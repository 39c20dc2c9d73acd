/* cmd_train_pnsgd.c -- 'dpgd train' for train.algorithm = pnsgd (train/LASTITERATE.md):
 * prints the constants, the guarantee (worst case t = n) and, labelled as exact-arithmetic
 * diagnostics, the middle and the first position (composition beside them), runs the one pass with a progress line, and says
 * where the last iterate and its summary are. Nothing is printed about the model while
 * the pass runs: only the last iterate is released. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "dpgd_train.h"

static void print_eps_row(const char *name, const dpgd_pnsgd_eps *e)
{
  printf("  %-6s t = %-9zu %-12.6g %-12.6g %-12.6g %.6g\n", name, e->t,
         dpgd_round_digits(e->iteration, 6, 1), dpgd_round_digits(e->contraction, 6, 1),
         dpgd_round_digits(e->eps, 6, 1), dpgd_round_digits(e->composition, 6, 1));
}

static int print_plan(const dpgd_pnsgd_plan *p, const dpgd_config *c)
{
  printf("algorithm   pnsgd: one pass of projected noisy SGD, softmax, last iterate only "
         "(train/LASTITERATE.md)\n");
  printf("data        n = %zu (public) = steps; order drawn from train.seed\n", p->n);
  printf("loss        X^2 = %.6g (feature box), L = %.6g, beta = %.6g, 2/beta = %.6g\n",
         dpgd_round_digits(p->k.feat_sq, 6, 1), dpgd_round_digits(p->k.lipschitz, 6, 1),
         dpgd_round_digits(p->k.smooth, 6, 1), dpgd_round_digits(p->k.lr_max, 6, -1));
  printf("step        lr = %.6g, projection radius R = %.6g, gradients clipped to L (1 - "
         "2^-20)\n",
         p->lr, p->radius);
  printf("noise       sigma = %.6g on the gradient (sigma / L = %.6g), rng %s\n",
         dpgd_round_digits(p->sigma, 6, 1), dpgd_round_digits(p->sigma / p->k.lipschitz, 6, 1),
         dpgd_rng_mode_name(c->train_rng));
  printf("guarantee   t = n (every point), delta = %g, neighbour null (g = L)\n", p->delta);
  printf("  %-6s %-13s %-12s %-12s %-12s %s\n", "", "position", "iteration", "contraction",
         "eps", "composition (all iterates released)");
  size_t at[3] = {p->n, (p->n + 1) / 2, 1};
  const char *names[3] = {"worst", "mid", "first"};
  for (int k = 0; k < 3; k++) {
    dpgd_pnsgd_eps e;
    int rc = dpgd_pnsgd_guarantee(p, at[k], &e);
    if (rc) return rc;
    if (k == 1)
      printf("diagnostic  t < n in exact arithmetic, NOT a guarantee: float steps are not "
             "1-Lipschitz\n            (train/LASTITERATE.md section 7)\n");
    print_eps_row(names[k], &e);
  }
  fflush(stdout);
  return DPGD_OK;
}

static int run_pass(dpgd_pnsgd *r, int progress)
{
  size_t n = dpgd_pnsgd_plan_of(r)->n, every = n / 20 ? n / 20 : 1;
  int tty = isatty(STDERR_FILENO);
  while (!dpgd_pnsgd_done(r)) {
    int rc = dpgd_pnsgd_step(r);
    if (rc) return rc;
    size_t t = dpgd_pnsgd_step_index(r);
    if (progress && (t % every == 0 || t == n))
      fprintf(stderr, tty ? "\rstep %zu/%zu\033[K" : "step %zu/%zu\n", t, n);
  }
  if (progress && tty) fputc('\n', stderr);
  return DPGD_OK;
}

int dpgd_cmd_train_pnsgd(const dpgd_config *c, const char *out, int dry, int progress)
{
  dpgd_pnsgd_plan plan;
  dpgd_pnsgd *r = NULL;
  int rc = dry ? dpgd_pnsgd_dry(&plan, c) : dpgd_pnsgd_open(&r, c, out);
  if (rc) return dpgd_cli_status_error(rc, "");
  const dpgd_pnsgd_plan *p = dry ? &plan : dpgd_pnsgd_plan_of(r);
  const char *note = dpgd_notice_take();
  if (note) fprintf(stderr, "dpgd: note: %s\n", note);
  if (!dry) printf("run         %s\n", dpgd_pnsgd_config(r)->output_dir);
  rc = print_plan(p, c);
  if (dry || rc) {
    dpgd_pnsgd_free(r);
    return rc ? dpgd_cli_status_error(rc, "") : DPGD_EXIT_OK;
  }
  if (c->train_rng == DPGD_RNG_RESEARCH)
    fprintf(stderr, "dpgd: warning: %s\n", DPGD_RESEARCH_CAVEAT);
  double acc = NAN;
  rc = run_pass(r, progress);
  if (!rc) rc = dpgd_pnsgd_finish(r, &acc);
  if (rc) {
    dpgd_pnsgd_free(r);
    return dpgd_cli_status_error(rc, "training failed");
  }
  printf(
      "done        %zu steps; last iterate in %s/model.bin; test accuracy %.4f; summary.json, "
      "positions.csv\n",
      dpgd_pnsgd_step_index(r), dpgd_pnsgd_config(r)->output_dir, acc);
  if (c->train_rng == DPGD_RNG_SECURE) printf("guarantee   %s\n", DPGD_PNSGD_DISCRETE_THEOREM);
  dpgd_pnsgd_free(r);
  return DPGD_EXIT_OK;
}
