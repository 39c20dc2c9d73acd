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
  size_t guesses;    /* r, even, <= M; 0: the rule of train/AUDIT.md "Guesses" */
  uint64_t seed;     /* canary images, labels, coins, coordinates; and the run's seed */
  double confidence; /* of the lower bound, in (0, 1) */
  /* Noise multiplier actually used over the one the claim assumes: 1 in every audit a
   * user can run (dpgd audit has no flag for it); tests/train/audit_planted.c plants a
   * bug with 0.1 to show that the audit catches it. */
  double planted_noise_scale;
  /* Test-only planted bugs likewise (tests/train/audit_planted.c; 1 everywhere else):
   * the caps the run clips to, times planted_clip_scale (in [1, 4]; the noise stays
   * sigma C); the Poisson rate the claim accounts, times planted_rate_scale (in (0, 1];
   * the run samples at the configured rate). 0 means 1 (callers that predate them). */
  double planted_clip_scale, planted_rate_scale;
  /* DPGD_AUDIT_INPUT: canary images. DPGD_AUDIT_GRADIENT: Dirac gradient points, canary j
   * a training point whose gradient is 4 C e_{k_j} (distinct k_j from the seed), clipped
   * to its cap by the run (train/AUDIT.md "Gradient canaries"). M above the parameter
   * count P: coded canaries, up to K per coordinate with K the least power of 2 with
   * K P >= M (K <= the run's steps), canary j's gradient at step t h(r_j, t) 4 C e_{k_j},
   * h a Walsh code (train/AUDIT.md "Coded canaries"). */
  int kind;
  /* The audited run's master seed (its noise, initial parameters and Poisson samples):
   * 0 (the default) replaces the config's train.seed by the seed derived from `seed`,
   * dpgd_stream_derive_seed(seed as a 256-bit seed, "audit run") (train/AUDIT.md "The
   * audited run's seed"), so that every audit seed draws its own noise; 1 keeps
   * train.seed as the config gives it (dpgd audit: --set train.seed=V). */
  int keep_train_seed;
} dpgd_audit_params;

enum { DPGD_AUDIT_INPUT = 0, DPGD_AUDIT_GRADIENT = 1 };

/* M 1000, r by the rule, seed 1, 0.95, no planted bug, input canaries */
void dpgd_audit_defaults(dpgd_audit_params *p);

typedef struct dpgd_audit_result {
  double eps_lower, eps_claimed, delta, confidence;
  size_t canaries, included, guesses, correct, steps;
  /* The f-DP bound (train/AUDIT.md "The f-DP bound"): its guesses, correct ones, and
   * the eps (at delta) of the weakest claim of the run's family (Gaussian; subsampled
   * Gaussian at the claimed rate under Poisson sampling) it rejects. */
  size_t guesses_fdp, correct_fdp;
  double eps_lower_fdp;
  /* The f-DP bound that ideal gradient canaries would give at this claim, at the
   * expected counts of the guess rule (for input canaries: how much weaker they are). */
  double eps_ideal_fdp;
  double wall_s;
  size_t codes; /* gradient canaries: K, the most sharing a coordinate (1: Dirac); else 0 */
  /* The seed the audited run drew its noise from, and whence: 1 derived from the audit
   * seed, 0 the config's train.seed (keep_train_seed). Under train.rng = secure the
   * noise comes from the OS CSPRNG and no seed draws it (secure_rng 1). */
  dpgd_seed run_seed;
  int run_seed_derived, secure_rng;
} dpgd_audit_result;

typedef struct dpgd_audit dpgd_audit;

/* Loads the config's data, makes the canaries, writes <dir>/audit_data (mode 0700, its
 * files 0600) and <dir>/SENSITIVE and opens the run in dir (a new run directory), seeded
 * as keep_train_seed says. A scatter-* model trains on the features of the same rows
 * (the base data's from the cache dpgd train uses; train/AUDIT.md "Scatter models"). eps_claimed: the exact eps at the run's delta of its
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

/* Gradient canaries' coordinates: m distinct coordinates out of p, every m-subset equally
 * likely (dpgd_rng_sample_subset: Floyd's algorithm with rejection-drawn bounded
 * integers, no modulo bias), written in increasing order; canary j gets coords[j]. The
 * canaries' coins are drawn apart from this, so the order leaves every coin independent
 * of its coordinate. DPGD_EINVAL for m > p. */
int dpgd_audit_draw_coords(dpgd_rng *g, size_t m, size_t p, uint32_t *coords /* (m) */);

/* Coded gradient canaries' signs: h(r, t) = (-1)^popcount(r & (t mod K)), row r < K of
 * the Sylvester-Hadamard (Walsh) matrix of order K (a power of 2) at step t, repeated
 * with period K: over any K consecutive steps, sum_t h(r, t) h(r', t) = K [r = r']. */
signed char dpgd_audit_code_sign(uint32_t r, size_t t, size_t K);

#endif /* DPGD_AUDIT_H */
