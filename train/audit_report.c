/* audit_report.c -- the end of a one-run audit (train/AUDIT.md): the run finished, the
 * guesses (the r/2 highest scores in, the r/2 lowest out), the eps lower bound, and the
 * files audit_scores.csv and audit.json in the run directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>

#include "audit_internal.h"

/* The canaries' released evidence, decorrelated: with y_t = released sum - base part -
 * (1/2) sum_k g_t(k) = sum_k (S_k - 1/2) g_t(k) + noise, the least-squares estimate of
 * S - 1/2 is (sum_t G_t G_t^T)^-1 sum_t G_t y_t, i.e. Gram^-1 score (a small ridge keeps
 * it defined). Canaries whose gradients resemble each other (the CNN's) would otherwise
 * drown each other's signal. Any function of the released sums and the auditor's own
 * data is allowed, so this changes the power of the audit, never its validity. */
static int decorrelate(dpgd_audit *a)
{
  size_t M = a->M;
  double tr = 0;
  for (size_t i = 0; i < M; i++) tr += a->gram[i * M + i];
  double ridge = 1e-6 * (tr > 0 ? tr / (double)M : 1);
  gsl_matrix *g = gsl_matrix_alloc(M, M);
  if (!g) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the canaries' Gram matrix");
  for (size_t i = 0; i < M; i++)
    for (size_t j = i; j < M; j++) {
      double v = a->gram[i * M + j] + (i == j ? ridge : 0);
      gsl_matrix_set(g, i, j, v);
      gsl_matrix_set(g, j, i, v);
    }
  gsl_vector_view x = gsl_vector_view_array(a->score, M);
  int st = gsl_linalg_cholesky_decomp1(g);
  if (!st) st = gsl_linalg_cholesky_svx(g, &x.vector);
  gsl_matrix_free(g);
  if (st)
    return DPGD_FAIL(DPGD_ERANGE, "the canaries' Gram matrix is not positive definite (%s)",
                     gsl_strerror(st));
  return DPGD_OK;
}

/* Gradient canaries: y_t(k_j) = (S_j - 1/2) c_t(j) + (beta - 1) b_t(k_j) + noise, with b
 * the base points' clipped sum the auditor computed and beta = 1 in a correct run. One
 * common beta - 1 is fitted by least squares over every canary and step, and its part
 * removed from each score: a bug that scales the base points' sums (a wrong clip norm)
 * then leaves the scores as clean as a correct run's. Post-processing of the released
 * sums: the power changes, never the validity. */
static void remove_base_scale(dpgd_audit *a)
{
  double num = 0, den = 0;
  for (size_t j = 0; j < a->M; j++) num += a->syb[j], den += a->sbb[j];
  double beta1 = den > 0 ? num / den : 0;
  for (size_t j = 0; j < a->M; j++) a->score[j] -= beta1 * a->sb[j];
}

typedef struct {
  double score;
  size_t j;
} ranked;

/* Order of canaries by score, ties by index (deterministic). */
static int by_score(const void *x, const void *y)
{
  const ranked *a = x, *b = y;
  if (a->score != b->score) return a->score < b->score ? -1 : 1;
  return a->j < b->j ? -1 : a->j > b->j;
}

/* guess[j]: 1 in, -1 out, 0 abstain, for r guesses. Returns the number of correct
 * guesses. */
static size_t make_guesses(const dpgd_audit *a, size_t r, signed char *guess, ranked *order)
{
  size_t M = a->M, k = r / 2, correct = 0;
  for (size_t j = 0; j < M; j++) {
    order[j] = (ranked){a->score[j], j};
    guess[j] = 0;
  }
  qsort(order, M, sizeof *order, by_score);
  for (size_t i = 0; i < k; i++) {
    guess[order[i].j] = -1;
    guess[order[M - 1 - i].j] = 1;
  }
  for (size_t j = 0; j < M; j++)
    if ((guess[j] == 1 && a->in[j]) || (guess[j] == -1 && !a->in[j])) correct++;
  return correct;
}

static int write_scores(const dpgd_audit *a, const signed char *guess)
{
  char *text = NULL, path[PATHLEN];
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for audit_scores.csv");
  fprintf(f, "canary,included,score,guess\n");
  for (size_t j = 0; j < a->M; j++)
    fprintf(f, "%zu,%d,%.10g,%s\n", j, a->in[j], a->score[j],
            guess[j] > 0   ? "in"
            : guess[j] < 0 ? "out"
                           : "");
  fclose(f);
  dpgd_run_path_in(path, a->run, "audit_scores.csv");
  int rc = dpgd_write_atomic(path, text, len);
  free(text);
  return rc;
}

static int write_json(const dpgd_audit *a, const dpgd_audit_result *res)
{
  char *text = NULL, path[PATHLEN];
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for audit.json");
  const dpgd_plan *p = &a->run->plan;
  fprintf(f, "{\n  \"eps_lower\": ");
  dpgd_report_json_num(f, dpgd_round_digits(res->eps_lower, 10, -1)); /* a lower bound */
  fprintf(f, ",\n  \"eps_claimed\": ");
  dpgd_report_json_num(f, dpgd_round_digits(res->eps_claimed, 10, 1));
  fprintf(f, ",\n  \"delta\": %.10g,\n  \"confidence\": %.10g,\n", res->delta, res->confidence);
  fprintf(f, "  \"canaries\": %zu,\n  \"included\": %zu,\n", res->canaries, res->included);
  fprintf(f, "  \"guesses\": %zu,\n  \"correct\": %zu,\n", res->guesses, res->correct);
  fprintf(f, "  \"eps_lower_fdp\": ");
  dpgd_report_json_num(f, dpgd_round_digits(res->eps_lower_fdp, 10, -1));
  fprintf(f, ",\n  \"guesses_fdp\": %zu,\n  \"correct_fdp\": %zu,\n  \"fdp_family\": \"%s\",\n",
          res->guesses_fdp, res->correct_fdp,
          a->q_claimed < 1 ? "poisson subsampled gaussian" : "gaussian");
  fprintf(f, "  \"eps_ideal_fdp\": ");
  dpgd_report_json_num(f, dpgd_round_digits(res->eps_ideal_fdp, 10, -1));
  fprintf(f, ",\n  \"canaries_kind\": \"%s\",\n  \"codes\": %zu,\n",
          a->ap.kind == DPGD_AUDIT_GRADIENT ? "gradient" : "input", res->codes);
  fprintf(f, "  \"steps\": %zu,\n  \"algorithm\": \"%s\",\n", res->steps,
          p->filtered ? "filtered" : "plain");
  fprintf(f, "  \"seed\": %llu,\n  \"planted_bug\": %s,\n", (unsigned long long)a->ap.seed,
          a->ap.planted_noise_scale != 1 || a->ap.planted_clip_scale != 1 ||
                  a->ap.planted_rate_scale != 1
              ? "true"
              : "false");
  char seed[DPGD_SEED_TEXT_MAX];
  fprintf(f, "  \"run_seed\": \"%s\",\n  \"run_seed_from\": \"%s\",\n",
          dpgd_seed_format(&res->run_seed, seed),
          res->secure_rng         ? "none: train.rng = secure, the noise is the OS CSPRNG's"
          : res->run_seed_derived ? "the audit seed (derived)"
                                  : "train.seed");
  fprintf(f, "  \"wall_s\": %.3f,\n", res->wall_s);
  fprintf(f, "  \"meaning\": \"with the stated confidence the run is not (eps, delta)-DP "
             "for any eps below eps_lower; a lower bound can refute a claim, never prove "
             "it\"\n}\n");
  fclose(f);
  dpgd_run_path_in(path, a->run, "audit.json");
  int rc = dpgd_write_atomic(path, text, len);
  free(text);
  return rc;
}

/* The guess counts, fixed before the run from public numbers (train/AUDIT.md
 * "Guesses"): --guesses R for both bounds when given; else, for each bound, the rule
 * of dpgd_audit_guess_rule at the claim's GDP mu (input canaries keep M/5 for Steinke et
 * al.'s bound). *ideal: the f-DP bound ideal gradient canaries would expect. */
int dpgd_audit_pick_guesses(dpgd_audit *a, size_t *r_snj, size_t *r_fdp, double *ideal)
{
  size_t M = a->M;
  double e;
  int rc = dpgd_audit_guess_rule(M, a->mu_claimed, a->delta, a->ap.confidence, 1, r_fdp, ideal);
  if (a->ap.guesses) *r_snj = *r_fdp = a->ap.guesses; /* the rule's count is not needed */
  else if (!rc && a->ap.kind == DPGD_AUDIT_GRADIENT)
    rc = dpgd_audit_guess_rule(M, a->mu_claimed, a->delta, a->ap.confidence, 0, r_snj, &e);
  else *r_snj = M / 5 >= 2 ? M / 5 / 2 * 2 : 2;
  return rc;
}

/* The f-DP bound: the weakest claim of the run's family that v of r correct guesses
 * reject (Gaussian; subsampled Gaussian at the claimed rate under Poisson sampling). */
static int fdp_bound(const dpgd_audit *a, size_t r, size_t v, double *eps)
{
  if (a->q_claimed < 1) {
    double sigma;
    return dpgd_audit_fdp_sg_lower(a->M, r, v, a->q_claimed, a->run->plan.steps, a->delta,
                                   a->ap.confidence, &sigma, eps);
  }
  return dpgd_audit_fdp_eps_lower(a->M, r, v, a->delta, a->ap.confidence, eps);
}

static int bounds(dpgd_audit *a, dpgd_audit_result *res, signed char *guess, ranked *order)
{
  size_t r_snj, r_fdp;
  int rc = dpgd_audit_pick_guesses(a, &r_snj, &r_fdp, &res->eps_ideal_fdp);
  if (rc) return rc;
  res->guesses_fdp = r_fdp;
  res->correct_fdp = make_guesses(a, r_fdp, guess, order);
  rc = fdp_bound(a, r_fdp, res->correct_fdp, &res->eps_lower_fdp);
  if (rc) return rc;
  res->guesses = r_snj;
  /* the guesses written out; guess[] already holds r_fdp's */
  res->correct = r_snj == r_fdp ? res->correct_fdp : make_guesses(a, r_snj, guess, order);
  return dpgd_audit_eps_lower(a->M, r_snj, res->correct, a->delta, a->ap.confidence,
                              &res->eps_lower);
}

int dpgd_audit_finish(dpgd_audit *a, dpgd_audit_result *res)
{
  /* A planted bug ends here: the run's reports use the noise its claim assumes. */
  a->run->plan.sigma = a->sigma;
  int rc = dpgd_run_finish(a->run);
  if (rc) return rc;
  signed char *guess = malloc(a->M);
  ranked *order = malloc(a->M * sizeof *order);
  if (!guess || !order) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for the guesses");
  memset(res, 0, sizeof *res);
  if (!rc && a->ap.kind == DPGD_AUDIT_INPUT) rc = decorrelate(a);
  if (!rc && a->ap.kind == DPGD_AUDIT_GRADIENT) remove_base_scale(a);
  if (!rc) {
    res->canaries = a->M;
    res->included = a->included;
    res->confidence = a->ap.confidence;
    res->delta = a->delta;
    res->eps_claimed = a->eps_claimed;
    res->steps = dpgd_run_step_index(a->run);
    res->codes = a->ap.kind == DPGD_AUDIT_GRADIENT ? a->codes : 0;
    res->run_seed = a->run->cfg.train_seed;
    res->run_seed_derived = !a->ap.keep_train_seed;
    res->secure_rng = a->run->secure;
    rc = bounds(a, res, guess, order);
  }
  res->wall_s = dpgd_run_now_s() - a->t0;
  if (!rc) rc = write_scores(a, guess);
  if (!rc) rc = write_json(a, res);
  free(guess);
  free(order);
  return rc;
}
