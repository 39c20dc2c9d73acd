/* pnsgd_report.c -- the files a hidden-iterate run leaves (train/LASTITERATE.md section
 * 8): positions.csv (eps by position), points.csv (each point's position, a function of
 * the seed only) and summary.json (constants, setting, the worst-case guarantee, the
 * exact-arithmetic diagnostics of positions t < n, test accuracy of the last iterate).
 * Privacy numbers are rounded up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pnsgd_internal.h"

#define ARITHMETIC_NOTE                                                                        \
  "the guarantees are proven for the algorithm in exact arithmetic (convex, beta-smooth, "     \
  "L-Lipschitz loss; 1-Lipschitz gradient steps and projection); the code clips each "         \
  "gradient to L (1 - 2^-20) so that the one-step shift L is a true bound in floating "        \
  "point, but the rounding of the float iterates, of the update and of the projection is "     \
  "not accounted for (train/LASTITERATE.md section 7)"

#define MEANING_NOTE                                                                           \
  "eps at delta under the null-point neighbour (g = L), only the last iterate released: "      \
  "worst = position t = n, the guarantee of every point (one Gaussian step; eps = "            \
  "min(iteration, contraction)); composition = what a point would cost if every iterate "      \
  "were released (for comparison only)"

/* Positions t < n rely on every later step being 1-Lipschitz, which the floating-point
 * steps are not (LASTITERATE.md section 7): printed as diagnostics, never as guarantees. */
#define DIAGNOSTIC_NOTE                                                                        \
  "NOT privacy guarantees of this run: eps of positions t < n for the algorithm run in "       \
  "exact arithmetic; they need every later step to be 1-Lipschitz, and the float steps "       \
  "are not (their rounding drift can exceed the one-step shift); train/LASTITERATE.md "        \
  "section 7"

/* Writes text (len bytes) to <dir>/name atomically, freeing text. */
static int put_file(const dpgd_pnsgd *r, const char *name, char *text, size_t len, int ok)
{
  char p[DPGD_CONFIG_PATH_MAX + 32];
  dpgd_pnsgd_path(p, r, name);
  int rc = ok ? dpgd_write_atomic(p, text, len) : DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  free(text);
  return rc;
}

static void csv_up(FILE *f, double v)
{
  fputc(',', f);
  dpgd_report_up(f, v);
}

/* eps by position on a grid of k = n - t + 1 (steps from use to release): 1, 2, 3, ...
 * growing by about 1/8 each row, then n. */
static int write_positions(const dpgd_pnsgd *r)
{
  const dpgd_pnsgd_plan *p = &r->plan;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for positions.csv");
  fprintf(f,
          "# DIAGNOSTIC, not a privacy guarantee except the row t = n (every point's "
          "guarantee): %s. eps at delta = %.10g of the point at position t "
          "(steps_to_release = n - t + 1), n = %zu; eps = min(eps_iteration, "
          "eps_contraction); eps_composition: if every iterate were released. Rounded up.\n",
          DIAGNOSTIC_NOTE, p->delta, p->n);
  fprintf(f,
          "position,steps_to_release,rho,eps_iteration,eps_contraction,eps,eps_composition\n");
  int rc = DPGD_OK;
  for (size_t k = 1; k <= p->n && !rc;) {
    dpgd_pnsgd_eps e;
    rc = dpgd_pnsgd_guarantee(p, p->n - k + 1, &e);
    if (rc) break;
    fprintf(f, "%zu,%zu", e.t, k);
    csv_up(f, e.rho);
    csv_up(f, e.iteration);
    csv_up(f, e.contraction);
    csv_up(f, e.eps);
    csv_up(f, e.composition);
    fputc('\n', f);
    size_t next = k + (k / 8 ? k / 8 : 1);
    k = k < p->n && next > p->n ? p->n : next;
  }
  int ok = fclose(f) == 0;
  if (rc) {
    free(text);
    return rc;
  }
  return put_file(r, "positions.csv", text, len, ok);
}

/* index -> position (and its rho): the order is a function of train.seed only. */
static int write_points(const dpgd_pnsgd *r)
{
  const dpgd_pnsgd_plan *p = &r->plan;
  size_t *pos = malloc(p->n * sizeof *pos);
  char *text = NULL;
  size_t len = 0;
  FILE *f = pos ? open_memstream(&text, &len) : NULL;
  if (!f) {
    free(pos);
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for points.csv");
  }
  for (size_t t = 0; t < p->n; t++) pos[r->order[t]] = t + 1;
  fprintf(f, "# each training point's position in the one pass: drawn from train.seed, not "
             "from the data; rho: the exact-arithmetic RDP of its position, a diagnostic (see "
             "positions.csv), not a guarantee\nindex,position,rho\n");
  for (size_t i = 0; i < p->n; i++) {
    dpgd_iter_setting s = dpgd_pnsgd_setting(p, pos[i]);
    fprintf(f, "%zu,%zu", i, pos[i]);
    csv_up(f, dpgd_iter_rho(&s));
    fputc('\n', f);
  }
  free(pos);
  int ok = fclose(f) == 0;
  return put_file(r, "points.csv", text, len, ok);
}

static void json_up(FILE *f, double v) { dpgd_report_json_num(f, dpgd_round_digits(v, 10, 1)); }

/* "name": {"position": t, ...} of one position's guarantee. */
static int json_position(FILE *f, const dpgd_pnsgd_plan *p, const char *name, size_t t)
{
  dpgd_pnsgd_eps e;
  int rc = dpgd_pnsgd_guarantee(p, t, &e);
  if (rc) return rc;
  fprintf(f, "  \"%s\": {\"position\": %zu, \"steps_to_release\": %zu, \"rho\": ", name, t,
          p->n - t + 1);
  json_up(f, e.rho);
  fputs(", \"iteration\": ", f);
  json_up(f, e.iteration);
  fputs(", \"contraction\": ", f);
  json_up(f, e.contraction);
  fputs(", \"eps\": ", f);
  json_up(f, e.eps);
  fputs(", \"composition\": ", f);
  json_up(f, e.composition);
  fputs("}", f);
  return DPGD_OK;
}

static void json_setting(FILE *f, const dpgd_pnsgd *r)
{
  const dpgd_pnsgd_plan *p = &r->plan;
  fprintf(f, "{\"dpgd_version\": \"%s\", \"model\": \"%s\", \"algorithm\": \"pnsgd\",\n",
          DPGD_VERSION, r->cfg.model_type);
  fprintf(
      f,
      " \"n_train\": %zu, \"n_test\": %zu, \"steps\": %zu, \"released\": \"last iterate\",\n",
      p->n, r->test->n, r->step);
  fprintf(f, " \"sigma\": %.17g, \"lr\": %.17g, \"radius\": %.17g, \"diameter\": %.17g,\n",
          p->sigma, p->lr, p->radius, 2 * p->radius);
  fprintf(f,
          " \"feature_sq_max\": %.17g, \"lipschitz\": %.17g, \"smoothness\": %.17g, "
          "\"lr_max\": %.17g, \"clip\": %.17g,\n",
          p->k.feat_sq, p->k.lipschitz, p->k.smooth, p->k.lr_max, p->cap);
  fprintf(f, " \"neighbour\": \"null\", \"grad_sens\": %.17g, \"delta\": %.17g,\n",
          p->k.lipschitz, p->delta);
  fprintf(f, " \"methods\": {\"iteration\": \"rdp_optimal\", \"contraction\": \"its own "
             "delta(eps)\", \"composition\": \"exact\"},\n");
}

int dpgd_pnsgd_write_reports(const dpgd_pnsgd *r, double test_acc)
{
  int rc = write_positions(r);
  if (!rc) rc = write_points(r);
  if (rc) return rc;
  const dpgd_pnsgd_plan *p = &r->plan;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for summary.json");
  json_setting(f, r);
  fputs(" \"guarantee\": {\n", f);
  rc = json_position(f, p, "worst", p->n);
  fputs("},\n \"diagnostics_exact_arithmetic\": {\"note\": \"" DIAGNOSTIC_NOTE "\",\n", f);
  if (!rc) rc = json_position(f, p, "mid", (p->n + 1) / 2);
  if (!rc) fputs(",\n", f), rc = json_position(f, p, "first", 1);
  fputs("},\n \"meaning\": \"" MEANING_NOTE "\",\n \"arithmetic\": \"" ARITHMETIC_NOTE "\",\n",
        f);
  fputs(" \"test_acc\": ", f);
  dpgd_report_json_num(f, test_acc);
  fputs(", \"seed\": ", f);
  dpgd_report_json_seed(f, &r->cfg.train_seed);
  fprintf(f, ", \"rng\": \"%s\",\n", dpgd_rng_mode_name(r->cfg.train_rng));
  if (r->cfg.train_rng != DPGD_RNG_SECURE)
    fprintf(f, " \"caveat\": \"%s\",\n", DPGD_RESEARCH_CAVEAT);
  else if (!rc) { /* discrete: the continuous curve at t = n is the contraction bound's */
    dpgd_pnsgd_eps e;
    rc = dpgd_pnsgd_guarantee(p, p->n, &e);
    dpgd_report_json_dgauss(f, DPGD_PNSGD_DISCRETE_THEOREM, p->grid_bits,
                            (unsigned long long)r->dg.num, "\"eps_method\": \"rdp_optimal\"",
                            e.contraction);
  }
  fprintf(f, " \"nonprivate\": {\"wall_s\": %.3f}}\n", r->wall_s);
  int ok = fclose(f) == 0;
  if (rc) {
    free(text);
    return rc;
  }
  return put_file(r, "summary.json", text, len, ok);
}
