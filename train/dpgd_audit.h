/* dpgd_audit.h -- the one-run privacy audit (`dpgd audit`, train/audit*.c;
 * train/AUDIT.md). Part of the training library; dpgd_train.h includes it. */
#ifndef DPGD_AUDIT_H
#define DPGD_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_train.h" /* includes this header at its end: either order works */

/* ===== One-run privacy audit (train/AUDIT.md) ========================================
 * Steinke, Nasr & Jagielski 2023: M canary images are appended to the training set of a
 * config; each is included with probability 1/2 (an excluded canary is a null point:
 * cap 0, n stays public). The run is trained as dpgd train trains it, and the auditor,
 * white-box, sees every released noisy sum. With every gradient at the released
 * theta_t (canaries capped as if included, under their own Algorithm 7 filter),
 *   y_t = noisy_sum_t - sum_{base i} gbar_t(i) - (1/2) sum_k gbar_t(k)
 *       = sum_k (S_k - 1/2) gbar_t(k) + noise,
 * and canary j's score is the least-squares estimate of S_j - 1/2 from all the y_t:
 * (sum_t G_t G_t^T)^-1 sum_t G_t y_t, G_t the canaries' gradients: a function of the
 * released sums and of data the auditor owns.
 * The r/2 highest scores are guessed in, the r/2 lowest out; dpgd_audit_eps_lower turns
 * the correct guesses into an eps lower bound. Driven like a run: dpgd_audit_open, then
 * dpgd_audit_step until dpgd_audit_done, then dpgd_audit_finish. */
typedef struct dpgd_audit_params {
  size_t canaries;   /* M >= 2 */
  size_t guesses;    /* r, even, <= M; 0: M / 5 rounded down to even (at least 2) */
  uint64_t seed;     /* canary images, labels and inclusion coins */
  double confidence; /* of the lower bound, in (0, 1) */
  /* Noise multiplier actually used over the one the claim assumes: 1 in every audit a
   * user can run (dpgd audit has no flag for it); tests/train/audit_planted.c plants a
   * bug with 0.1 to show that the audit catches it. */
  double planted_noise_scale;
} dpgd_audit_params;

void dpgd_audit_defaults(dpgd_audit_params *p); /* M 1000, r M/5, seed 1, 0.95, 1 */

typedef struct dpgd_audit_result {
  double eps_lower, eps_claimed, delta, confidence;
  size_t canaries, included, guesses, correct, steps;
  double wall_s;
} dpgd_audit_result;

typedef struct dpgd_audit dpgd_audit;

/* Loads the config's data, makes the canaries, writes <dir>/audit_data (mode 0700, its
 * files 0600) and <dir>/SENSITIVE and opens the run in dir (a new run directory). eps_claimed: the exact eps at the run's delta of its
 * training releases (every step as the plan accounts it), the guarantee the audit tests.
 * DP-SGD (Poisson sampling): the auditor also uses the step's sample of the BASE points
 * (independent of every canary's), never the canaries' samples. */
int dpgd_audit_open(dpgd_audit **out, const dpgd_config *c, const char *dir,
                    const dpgd_audit_params *p);
int dpgd_audit_step(dpgd_audit *a);
int dpgd_audit_done(const dpgd_audit *a);
const dpgd_run *dpgd_audit_run(const dpgd_audit *a);
/* Canary j's score (M entries) and inclusion (in[j] = 1: included), for figures. */
const double *dpgd_audit_scores(const dpgd_audit *a, const uint8_t **in, size_t *M);
/* Finishes the run, makes the guesses, computes the bound and writes audit_scores.csv
 * (canary,included,score,guess) and audit.json in the run directory. */
int dpgd_audit_finish(dpgd_audit *a, dpgd_audit_result *res);
void dpgd_audit_free(dpgd_audit *a);

#endif /* DPGD_AUDIT_H */
