/* dpgd_train.h -- private full-batch gradient descent (docs/MATH.md "Private gradient
 * descent"; Feldman & Zrnic, Algorithms 6 and 7) and DP-SGD with Poisson sampling: the
 * per-point ledger and clip caps, the noise streams, the checkpoint container, the
 * run-directory writers (train/RUN_FORMAT.md) and the training state that ties them to a model
 * (model/) and the accountant (accounting/).
 *
 * Reading order: ledger -> rng -> checkpoint container -> run (dpgd_run_*), which a
 * caller drives INITIALIZE / ITERATE / TEST style (STYLE.md 13): dpgd_run_open, then
 * dpgd_run_step until dpgd_run_done, then dpgd_run_finish (and dpgd_run_free).
 * Library code never prints: the CLI prints dpgd_run_progress and the plan. */
#ifndef DPGD_TRAIN_H
#define DPGD_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpgd_accounting.h"
#include "dpgd_config.h"
#include "dpgd_core.h"
#include "dpgd_model.h"

/* ===== The per-point ledger (docs/MATH.md "Private gradient descent") ===============
 * spend[i] = s(i), the sum of the squared post-clip norms of point i's gradients, in
 * double. Algorithm 6: cap = C. Algorithm 7: cap = min(C, sqrt(max(0, B - s(i)))),
 * adjusted down by ulps so that s(i) + cap^2 <= B holds in floating point too: the
 * invariant s(i) <= B is exact, not approximate. A point is active while s(i) < B.
 *
 * Algorithm 7 with B = k C^2 reproduces Algorithm 6 bit for bit for k steps: the cap is
 * exactly C (no sqrt) while s(i) + C^2 <= B, and each step charges at most C^2, so this
 * holds for k steps whenever k additions of C^2 are exact in double (C^2 with a short
 * binary significand, e.g. C = 10, 15, 2.375; true of every paper setting).
 *
 * Floating point (docs/MATH.md "Floating point: sensitivity and noise"): the engine
 * keeps each contributed vector within its cap, but the rounding of the sum moves the
 * released value by up to `slack` more when one point changes (model/SENSITIVITY.md).
 * The allowance a(i) (C, or Algorithm 7's cap) is therefore split: the engine clips to
 * a(i) - slack, and the ledger charges (||v_i|| + slack)^2 <= a(i)^2. slack = 0 until
 * dpgd_ledger_set_slack says otherwise.
 *
 * Each point's total s(i) / (sigma C)^2 in GDP mu^2 units (dpgd_ledger_point_mu2) is
 * what the per-point odometer reports (dpgd_odometer_report in the accountant).
 *
 * The caps, the spend update and the invariant are the accountant's individual GDP
 * filter (dpgd_filter_*) in squared-norm units: budget B_norm (INFINITY for Algorithm 6),
 * charges against noise std 1 (the unit is sigma C), mu^2 = s(i) / (sigma C)^2 only when
 * reported. The ledger adds the slack and the step's charge. */
typedef struct dpgd_ledger {
  size_t n;
  double clip;         /* C */
  double clip2;        /* C*C as used in every comparison */
  double budget;       /* B_norm (Algorithm 7); INFINITY for Algorithm 6 */
  double slack;        /* absolute summation allowance in norm units (>= 0, < C) */
  double *spend;       /* (n) s(i): the filter's spends, owned by it */
  dpgd_filter *filter; /* GDP filter in squared-norm units (budget B_norm, or INFINITY) */
  /* Filtered DP-SGD (dpgd_ledger_alloc_sg); NULL otherwise. */
  dpgd_filter_sg *sg;   /* per-point RDP of the subsampled Gaussian on the grid */
  uint32_t *cap_idx;    /* (n) the step's cap, as a grid index (dpgd_ledger_caps) */
  uint32_t *charge_idx; /* (n) the step's charge: cap_idx, or lower (dpgd_ledger_refresh) */
  double hold;          /* filter.hold: factor of the held bound; 0 = no hold */
  uint32_t *hold_idx;   /* (n) grid index held from the last refresh; NULL = no hold */
} dpgd_ledger;

/* budget is ignored (INFINITY) when filtered is 0. NULL on bad sizes or no memory. */
dpgd_ledger *dpgd_ledger_alloc(size_t n, int filtered, double clip, double budget);
void dpgd_ledger_free(dpgd_ledger *l);

/* Individual filtering under Poisson subsampling (train/DPSGD_FILTER.md): an RDP filter
 * at the orders dpgd_filter_sg_orders with budgets of k full-rate steps at rate q and
 * noise multiplier sigma. Every point is charged every step, sampled or not: the RDP of
 * its cap (a grid point, (k / K) C), or at a refresh step its refreshed bound. caps are
 * then grid caps minus the slack (exactly C - slack while the budget allows a full-rate
 * step), and dpgd_ledger_spend ignores caps and sqnorm_post. budget is NAN. */
dpgd_ledger *dpgd_ledger_alloc_sg(size_t n, double clip, double q, double sigma, double k);
/* A refresh step: sqnorm_post (n) is the engine's post-clip bound of EVERY point at the
 * caps dpgd_ledger_caps gave; lowers each point's charge to the grid point above
 * (sqrt(post) (1 + 2^-20) + slack) / C and its cap in caps (n, in/out) to match, so the
 * sampled pass stays within the charge. */
int dpgd_ledger_refresh(dpgd_ledger *l, double *caps, const double *sqnorm_post);
/* filter.hold (DPSGD_FILTER.md section 3): from now on a refresh also holds, for every
 * point, the grid index min(K, ceil(factor x)) of its refreshed bound x, and
 * dpgd_ledger_hold_caps lowers an ordinary step's cap and charge to it. Every index starts
 * at K (no hold before the first refresh). DPGD_EINVAL for another ledger or a factor
 * that is not finite and >= 1; DPGD_ENOMEM. */
int dpgd_ledger_set_hold(dpgd_ledger *l, double factor);
/* An ordinary (not refresh) step of a ledger with a hold: each point's cap and charge
 * become min(cap index, held index); caps (n, in/out) as dpgd_ledger_caps gave them.
 * Nothing without a hold. */
void dpgd_ledger_hold_caps(dpgd_ledger *l, double *caps);
/* The held indices (hold_idx, n uint32 in host order) are the checkpoint section "hold";
 * their restore: DPGD_EFORMAT, nothing changed, for a wrong length or an index above K. */
int dpgd_ledger_hold_load(dpgd_ledger *l, const void *buf, size_t len);
/* Filtered DP-SGD: point i's RDP spend at the order that binds it (the largest
 * spent / budget), that ratio and the order; DPGD_EINVAL for another ledger. */
int dpgd_ledger_point_rdp(const dpgd_ledger *l, size_t i, double *spend, double *frac,
                          double *order);

/* The ledger's filter as a checkpoint section (dpgd_filter_serialize, "DPGDFILT"; *buf
 * from malloc). */
int dpgd_ledger_save(const dpgd_ledger *l, void **buf, size_t *len);
/* Replaces the ledger's filter by a saved one: DPGD_EFORMAT, the ledger unchanged, when
 * it does not deserialize, breaks dpgd_filter_check or does not match the ledger (n
 * points, currency GDP, one order, the ledger's budget: B_norm, or INFINITY for
 * Algorithm 6). */
int dpgd_ledger_load(dpgd_ledger *l, const void *buf, size_t len);
/* Restores s(i) from the "spend" section of an older checkpoint (len = n doubles), then
 * dpgd_ledger_check. DPGD_EFORMAT, the ledger unchanged, unless the ledger is the
 * full-batch one (currency GDP, one order), whose whole state s(i) is; after a failed
 * check the ledger must not be used. */
int dpgd_ledger_load_spend(dpgd_ledger *l, const void *buf, size_t len);

/* Sets the summation slack (see above); DPGD_EINVAL unless 0 <= slack < C. */
int dpgd_ledger_set_slack(dpgd_ledger *l, double slack);

/* The engine's clip cap of every point for the next step: a(i) - slack, or 0 when a(i)
 * does not exceed the slack. Filtered DP-SGD: also sets the step's grid indices (the
 * ledger's scratch). */
void dpgd_ledger_caps(const dpgd_ledger *l, double *caps /* (n) out */);
/* The caps of dpgd_ledger_caps for the points with in[i] != 0 and 0 for the others
 * (a sampled step's caps), the same bits; without a DP-SGD filter only the sampled
 * points' allowances are computed. */
void dpgd_ledger_caps_in(const dpgd_ledger *l, const unsigned char *in /* (n) */,
                         double *caps /* (n) out */);

/* Charges one step: s(i) += min(a(i)^2, (sqrt(sqnorm_post[i]) + slack)^2 rounded up)
 * (nothing for a point with cap 0 or a zero contribution); sqnorm_post[i] is the
 * engine's upper bound on ||v_i||^2. A negative or non-finite sqnorm_post is a model
 * defect: DPGD_ERANGE, and the ledger is left unchanged. */
int dpgd_ledger_spend(dpgd_ledger *l, const double *caps /* (n) */,
                      const double *sqnorm_post /* (n) */);

/* Number of points with s(i) < B (all n for Algorithm 6); filtered DP-SGD: that can still
 * pay the smallest grid step at every order. Diagnostic, not private. */
size_t dpgd_ledger_active(const dpgd_ledger *l);
/* Whether point i is active in that sense. */
int dpgd_ledger_point_active(const dpgd_ledger *l, size_t i);

/* DPGD_OK when 0 <= s(i) <= B for every i (exactly); DPGD_ERANGE naming the first
 * violating point otherwise. */
int dpgd_ledger_check(const dpgd_ledger *l);

/* Point i's training spend in GDP mu^2 units, s(i) / (sigma C)^2, rounded up. */
double dpgd_ledger_point_mu2(const dpgd_ledger *l, size_t i, double sigma);

/* ===== Noise: random streams ========================================================
 * Research mode: one ChaCha20 keystream per stream (chacha.c), under a 256-bit key
 * derived from every bit of the master seed and the stream's label by BLAKE2b (stream.c),
 * so that the streams are independent of each other and of the order in which they are
 * used, and recovering one needs the seed (not a search over 32 or 64 bits); a stream's
 * position (words drawn) is saved in checkpoints. Secure mode: bits from getrandom(2)
 * (the kernel CSPRNG); no state to save; Gaussians are hardened against floating-point
 * attacks (see noise.c). */
enum {
  DPGD_STREAM_INIT = 0,
  DPGD_STREAM_STEP = 1,
  DPGD_STREAM_QUERY = 2,
  DPGD_STREAM_SAMPLE = 3, /* Poisson and subset sampling, pnsgd's order */
  DPGD_STREAM_AUDIT = 4,  /* dpgd audit: canaries and inclusion coins */
  DPGD_N_STREAMS = 5
};

/* The sentence summary.json's "caveat" carries for a research-mode run (and the CLI
 * prints as a warning), one sentence for every command: seed_option names how the seed
 * is set and secure_advice how to switch to the secure generator. */
#define DPGD_RESEARCH_CAVEAT_OF(seed_option, secure_advice)                                    \
  "research rng: the noise is reproducible from " seed_option ", so the printed eps holds "    \
  "only if the seed has at least 128 bits of secret entropy and stays secret; the default "    \
  "seed (1) is public; " secure_advice
/* dpgd train's (and the library's runs'); dpgd queries' is DPGD_QUERIES_RESEARCH_CAVEAT. */
#define DPGD_RESEARCH_CAVEAT                                                                   \
  DPGD_RESEARCH_CAVEAT_OF("train.seed",                                                        \
                          "train anything you will release with train.rng = secure")

/* The build's identity (version, compiler, flags, a hash of the library sources): a
 * research run's checkpoint records it with the engine's (dpgd_grad_ws_replay_id) and
 * libm's (dpgd_libm_id) so that a resume never replays released steps on a build or
 * system that computes other bits. */
extern const char dpgd_build_id[];

/* libm's identity: the C library's name and version and a checksum of the bits of exp,
 * log, expm1, log1p, tanh, cos, pow and erfc (and expf, logf, tanhf) on fixed inputs,
 * e.g. "libm glibc 2.36 sum 0123456789abcdef". */
void dpgd_libm_id(char *buf, size_t len);
/* Test hook: when not NULL, the exp that dpgd_libm_id's checksum evaluates in place of
 * libm's (tests/train/test_run.c shows that another exp changes the replay identity). */
extern double (*dpgd_libm_test_exp)(double);

typedef struct dpgd_rng dpgd_rng;

/* mode is dpgd_rng_mode (DPGD_RNG_RESEARCH / DPGD_RNG_SECURE); the seed is read in
 * research mode only (it may be NULL in secure mode). NULL for an unknown stream, no
 * memory, or a research seed of NULL. */
dpgd_rng *dpgd_rng_alloc(int mode, const dpgd_seed *seed, int stream);
/* The same with the seed of value seed (benchmarks, tests). */
dpgd_rng *dpgd_rng_alloc_u64(int mode, uint64_t seed, int stream);
void dpgd_rng_free(dpgd_rng *r);
const char *dpgd_rng_mode_name(int mode); /* "research" | "secure" */

/* 64 uniformly random bits. DPGD_EIO if the OS generator fails (secure mode). */
int dpgd_rng_u64(dpgd_rng *r, uint64_t *out);
/* A run's initial parameters: dpgd_model_init_draw with the words of the init stream
 * (DPGD_STREAM_INIT) of seed in mode, parameter j from the stream's 64-bit word j; in
 * research mode every bit of the seed keys them (stream.c). DPGD_ENOMEM, or DPGD_EIO in
 * secure mode. */
int dpgd_rng_init_model(dpgd_model *m, int mode, const dpgd_seed *seed);
/* x[j] += N(0, std^2) for j < n, drawn in index order from this stream: research streams
 * only (floating point, GSL's ziggurat); a secure stream refuses (DPGD_EINVAL): secure
 * releases add dpgd_dgauss_release's exact discrete Gaussian instead. */
int dpgd_rng_gaussian_add(dpgd_rng *r, double std, double *x /* (n) */, size_t n);
/* One N(0, std^2) draw (research streams only, as above). */
int dpgd_rng_gaussian(dpgd_rng *r, double std, double *out);
/* Poisson sampling: in[i] = 1 with probability q (at most q, within 2^-64 of it),
 * independently for each i < n, else 0; one 64-bit word per point in index order.
 * *count (if not NULL) = the number sampled. DPGD_EINVAL for q outside [0, 1]. */
int dpgd_rng_sample_poisson(dpgd_rng *r, double q, unsigned char *in /* (n) out */, size_t n,
                            size_t *count);
/* Fixed-size sampling without replacement: in[i] = 1 for exactly m of the n points, every
 * m-subset with probability 1/C(n, m) (Floyd's algorithm, unbiased bounded integers:
 * accounting/SAMPLING.md); m words or slightly more. DPGD_EINVAL for m > n. */
int dpgd_rng_sample_subset(dpgd_rng *r, size_t m, unsigned char *in /* (n) out */, size_t n);

/* The stream's state for checkpoints: size in bytes (0 in secure mode), copy out, and
 * restore (DPGD_EFORMAT if len does not match or it is not a state of this kind). A
 * research state is 16 bytes: "dpgdcc20" and the position (words drawn, uint64 in the
 * checkpoint's byte order); it holds no key: restored into a stream of the same seed and
 * label it continues that stream. */
size_t dpgd_rng_state_size(const dpgd_rng *r);
void dpgd_rng_state_get(const dpgd_rng *r, void *buf /* (state_size) */);
int dpgd_rng_state_set(dpgd_rng *r, const void *buf, size_t len);

#include "dpgd_dgauss.h" /* the exact discrete Gaussian */

/* ===== Checkpoint container =========================================================
 * A file of named byte sections: magic "DPGDCKPT", format version, byte-order mark,
 * the config hash, the section table and bodies, then a CRC-32 of everything before.
 * Written to PATH.tmp, fsync'ed, renamed over PATH, directory fsync'ed: a crash leaves
 * the old checkpoint or the new one, never a mix. Reading refuses a wrong magic,
 * version, byte order, length, checksum or config hash with a message naming the file. */
#define DPGD_CKPT_VERSION 1u
#define DPGD_CKPT_NAME_LEN 8

typedef struct dpgd_ckpt_section {
  char name[DPGD_CKPT_NAME_LEN]; /* NUL-padded */
  const void *data;
  size_t len;
} dpgd_ckpt_section;

int dpgd_ckpt_write(const char *path, uint64_t config_hash,
                    const dpgd_ckpt_section *sections /* (n) */, size_t n);

typedef struct dpgd_ckpt dpgd_ckpt;
/* Reads and verifies path; a config hash other than config_hash is refused. */
int dpgd_ckpt_read(dpgd_ckpt **out, const char *path, uint64_t config_hash);
/* The body of a section and its length; DPGD_EFORMAT naming the file and section if it
 * is missing or (when want_len is not 0) not want_len bytes long. */
int dpgd_ckpt_get(const dpgd_ckpt *c, const char *name, size_t want_len, const void **data,
                  size_t *len);
void dpgd_ckpt_free(dpgd_ckpt *c);

/* Writes len bytes to path atomically (temp file, fsync, rename, directory fsync). */
int dpgd_write_atomic(const char *path, const void *buf, size_t len);

/* ===== A training run ================================================================ */

/* Everything the config leaves implicit, resolved before the first step. */
typedef struct dpgd_plan {
  int filtered;
  int sampling;       /* dpgd_sampling: full, poisson or subset (DP-SGD) */
  double sample_rate; /* poisson: q; subset: m/n rounded up; full: 1 */
  size_t batch_size;  /* subset: m points per step; 0 otherwise */
  /* The method whose eps the run reports (progress, last line): exact; for subset, whose
   * entries have no exact answer, the rdp_* method with the smallest planned eps. */
  int report_method;
  size_t n;              /* public dataset size */
  double sigma, clip;    /* noise multiplier (after calibration), C */
  double budget;         /* B_norm (filtered); k C^2 equivalent steps otherwise */
  size_t full_steps;     /* floor(B_norm / C^2) (filtered) or steps (plain) */
  size_t steps;          /* total steps (Algorithm 7: k_max) */
  size_t queries, every; /* stopping queries m, interval s */
  size_t first_query;    /* step after which the first query is made; 0 = none */
  double tau;            /* query noise std, tau_frac * n */
  double delta;
  double mu_train; /* GDP of the training releases at the end; NAN for poisson (not GDP) */
  double mu_total; /* with the queries; NAN for poisson */
  /* eps of the whole planned run by method; NAN where the method is not available */
  double eps[5];
  int eps_status[5];      /* dpgd status per method (DPGD_OK: eps is infinite) */
  double filter_k;        /* filtered poisson: budget in full-rate steps (filter.k) */
  double filter_eps;      /* filtered poisson: the filter's eps at delta (rdp_optimal); NAN */
  size_t refresh;         /* filtered poisson: a full pass every `refresh` steps */
  double hold;            /* filtered poisson: filter.hold, 0 = none (DPSGD_FILTER.md 3) */
  dpgd_odometer odometer; /* levels of the per-point report (points.csv); poisson: none
                             (levels = 0): no per-point report is stated */
  /* Secure full batch (train.rng = secure, train.sampling = full): the clipped sum in
   * integers on the grid 2^-grid_bits (dpgd_model_clipped_grad_sum_int) plus exact
   * discrete Gaussian noise (train/dgauss.c), accounted as discrete Gaussians (docs/MATH.md
   * "Discrete Gaussian"): no exact curve, so the reported and calibrating method is an
   * rdp_* one; no odometer (its levels are GDP). 0 and grid_bits -1 otherwise. */
  int discrete;
  int grid_bits;
  double eps_continuous; /* discrete: the exact eps the continuous Gaussian would give */
} dpgd_plan;

/* The theorems of secure full-batch and secure DP-SGD runs, for summary.json and the CLI
 * (dpgd_plan_theorem picks a discrete run's). */
#define DPGD_DISCRETE_THEOREM                                                                  \
  "docs/MATH.md section 18, proven there: the multivariate discrete Gaussian on an integer "   \
  "query of L2 sensitivity Delta is Delta^2/(2 sigma^2)-zCDP (Canonne, Kamath & Steinke "      \
  "2020, The Discrete Gaussian for Differential Privacy, Sec. 2); composed and converted by "  \
  "RDP"

#define DPGD_SUBSAMPLED_DISCRETE_THEOREM                                                       \
  "docs/MATH.md section 18.1, proven there: the Poisson-subsampled (rate q) discrete "         \
  "Gaussian on an exact integer sum, its RDP bounded for add and remove; composed by RDP"
#define DPGD_PNSGD_DISCRETE_THEOREM                                                            \
  "docs/MATH.md section 18 and train/LASTITERATE.md section 7, proven there: the point's "     \
  "step releases its clipped gradient rounded onto the grid plus a multivariate discrete "     \
  "Gaussian, whose Renyi curve for an integer shift is the continuous Gaussian's (Canonne, "   \
  "Kamath & Steinke 2020); every later step is post-processing; converted by rdp_optimal"
const char *dpgd_plan_theorem(const dpgd_plan *p);
/* sigma C rounded up: the discrete noise's std, never below the calibrated one. */
double dpgd_plan_noise_std_up(const dpgd_plan *p);

/* Resolves c into a plan (calibration through the accountant, derived steps, the query
 * schedule, the guarantee under every method). n is the training set size. */
int dpgd_plan_make(dpgd_plan *p, const dpgd_config *c, size_t n);

/* Sets ws's leaf span for a run of config c over n training points:
 * dpgd_model_leaf_span at the sampling rate (poisson: train.sample_rate; subset:
 * train.batch_size / n; full batch: 1, which keeps span = chunk). */
int dpgd_run_set_leaf_span(dpgd_grad_ws *ws, const dpgd_config *c, size_t n);

/* Public GDP parameter of the training releases after t steps (docs/MATH.md "Private
 * gradient descent"):
 * sqrt(min(B, t C^2))/(sigma C) filtered, sqrt(t)/sigma plain; NAN for poisson, whose
 * steps are Poisson-subsampled Gaussians (docs/MATH.md "Subsampling"), not Gaussians. */
double dpgd_plan_mu_train(const dpgd_plan *p, size_t t);
/* Number of stopping queries made after steps 1..t. */
size_t dpgd_plan_queries_by(const dpgd_plan *p, size_t t);

typedef struct dpgd_run dpgd_run;

/* Opens a new run: resolves the plan, loads data, initialises the model, creates
 * run_dir (must not hold a finished run) and writes config.ini and the metrics header.
 * run_dir, when not NULL, overrides the config's output.dir. */
int dpgd_run_open(dpgd_run **out, const dpgd_config *c, const char *run_dir);
/* Reopens run_dir from its config.ini and checkpoint.bin. The steps already done are
 * kept (metrics rows after the checkpoint are dropped and written again). Research mode
 * replays those steps bit for bit. Secure mode (train.rng = secure) checkpoints every
 * step before emitting anything of it, so no emitted step is ever redone: the step cut
 * short by the kill released nothing and is drawn afresh; a row the kill cut off after
 * its checkpoint is written from the checkpoint; a secure run with emitted rows after
 * its checkpoint is refused (DPGD_EINVAL: redoing them would release them twice). */
int dpgd_run_resume(dpgd_run **out, const char *run_dir);

/* One step: caps, clipped sum, ledger, noise, update; a stopping query if one is due;
 * test accuracy if due; the metrics row; a checkpoint if due (research), or a checkpoint
 * of this step BEFORE its metrics row (secure: every step, output.checkpoint_every is
 * ignored). Print the progress line only after this returns. A step whose update leaves
 * non-finite parameters has released its noisy sum: it is accounted, its row written and
 * the state checkpointed as diverged (dpgd_run_resume refuses it), then DPGD_ERANGE. */
int dpgd_run_step(dpgd_run *r);
int dpgd_run_done(const dpgd_run *r);
/* Writes a checkpoint of the steps done so far (for a caller that stops between steps,
 * e.g. on SIGTERM): a resume continues after the last completed step. */
int dpgd_run_checkpoint(dpgd_run *r);
/* Writes model.bin (the selected iterate), points.csv, the final checkpoint and last
 * summary.json (atomically). */
int dpgd_run_finish(dpgd_run *r);
void dpgd_run_free(dpgd_run *r);

/* The run's directory (output.dir, or run_dir of dpgd_run_open). */
const char *dpgd_run_dir(const dpgd_run *r);

/* The plan of c without training (dpgd train --dry-run): loads the training split only
 * to learn n (data.n_train applied). */
int dpgd_run_dry(dpgd_plan *p, const dpgd_config *c);

/* Read access for the CLI and tests. */
const dpgd_plan *dpgd_run_plan(const dpgd_run *r);
const dpgd_config *dpgd_run_config(const dpgd_run *r);
const dpgd_ledger *dpgd_run_ledger(const dpgd_run *r);
size_t dpgd_run_step_index(const dpgd_run *r); /* steps completed */
double dpgd_run_eps_now(const dpgd_run *r);    /* exact eps after the steps so far */
/* A discrete run's steps so far as continuous Gaussians: their exact eps (NAN if none). */
double dpgd_run_eps_continuous(const dpgd_run *r);
const float *dpgd_run_params(const dpgd_run *r, size_t *n_params);
uint64_t dpgd_run_noise_draws(const dpgd_run *r); /* Gaussian vectors + query draws */
uint64_t dpgd_run_releases(const dpgd_run *r);    /* releases in the running accountant */
/* After dpgd_run_resume: metrics rows (emitted steps) after the checkpoint that the run
 * computes again: replayed bit for bit in research mode; always 0 in secure mode. */
size_t dpgd_run_redone(const dpgd_run *r);
/* After dpgd_run_resume (secure): 1 if the checkpoint's row was missing and written. */
int dpgd_run_row_restored(const dpgd_run *r);
/* One-line progress text (no newline): step/total, ETA, eps so far, last test acc. */
void dpgd_run_progress(const dpgd_run *r, char *buf, size_t len);

/* ===== Private sums of gradients computed elsewhere (train/PRIVATE_SUM.md) ============
 * For a model dpgd does not have: the caller computes every point's gradient at each
 * step; dpgd clips it to the point's cap with the engine's rule
 * (dpgd_model_clip_rows_sum), sums in double, charges the ledger (Algorithm 6, or
 * Algorithm 7 with a finite budget B_norm), adds ONE draw of N(0, sigma^2 C^2 I) and
 * accounts the step as the full-batch trainer does. Full batch only: every one of the n
 * points is in every step (a point the filter dropped has cap 0 and its row is not
 * read). The caller answers for the rest of the privacy argument: row i depends on point
 * i and on public values (earlier noisy sums, the model) only, and n is public. */
typedef struct dpgd_psum_params {
  size_t n;       /* public number of points (rows of every step) */
  size_t dim;     /* P: the length of a gradient */
  double clip;    /* C > 0 */
  double sigma;   /* noise multiplier > 0: noise std sigma C */
  double budget;  /* B_norm > 0 (Algorithm 7), or INFINITY (Algorithm 6) */
  int rng;        /* DPGD_RNG_RESEARCH (seeded) or DPGD_RNG_SECURE */
  dpgd_seed seed; /* research mode's master seed (the step stream of a run's seed) */
} dpgd_psum_params;

typedef struct dpgd_psum dpgd_psum;

/* DPGD_EINVAL naming the bad parameter; DPGD_ENOMEM. */
int dpgd_psum_open(dpgd_psum **out, const dpgd_psum_params *p);
void dpgd_psum_free(dpgd_psum *s);
/* One step: noisy_sum (dim) = sum_i f_i g_i + N(0, sigma^2 C^2 I), g_i row i of grads.
 * On an error before the noise nothing is released, charged or accounted. */
int dpgd_psum_step(dpgd_psum *s, const float *grads /* (n, dim) row-major */,
                   double *noisy_sum /* (dim) out */);
size_t dpgd_psum_steps(const dpgd_psum *s);
/* The per-point spends and caps (SENSITIVE per point) and the releases so far. */
const dpgd_ledger *dpgd_psum_ledger(const dpgd_psum *s);
const dpgd_accountant *dpgd_psum_accountant(const dpgd_psum *s);
/* ===== Hidden-iterate training: one pass of projected noisy SGD (train/LASTITERATE.md)
 * train.algorithm = pnsgd, softmax regression only: the point at position t of a random
 * order drawn from the seed (not from the data) is used at step t and nowhere else,
 *   w_t = Pi_K(w_{t-1} - eta (v_t + N(0, sigma^2 I))),  K the L2 ball of radius R,
 * v_t its gradient clipped to L (1 - 2^-20), and ONLY w_n is released: nothing is
 * written, evaluated or checkpointed during the pass. Privacy per position from the
 * accountant's dpgd_iter_* (accounting/ITERATION.md) with g = L (the null-point
 * neighbour). Driven like a run: dpgd_pnsgd_open, dpgd_pnsgd_step until dpgd_pnsgd_done,
 * dpgd_pnsgd_finish, dpgd_pnsgd_free. Not resumable (a pass takes seconds). */

/* The public constants of the loss on the feature box (LASTITERATE.md sections 1-3). */
typedef struct dpgd_pnsgd_consts {
  double feat_sq;   /* X^2 = d max_q x(q)^2 over the 256 pixel values, rounded up */
  double lipschitz; /* L = sqrt(2 (X^2 + 1)), rounded up: every gradient norm is below */
  double smooth;    /* beta = (X^2 + 1) / 2, rounded up */
  double lr_max;    /* 2 / beta rounded down: the largest train.lr accepted */
} dpgd_pnsgd_consts;

/* For d inputs normalised as dpgd_data_unpack does with mean and std (floats). */
int dpgd_pnsgd_consts_make(dpgd_pnsgd_consts *k, size_t d, float mean, float std);
/* For inputs whose squared norm is at most x2 (public): L, beta and 2/beta from it. */
int dpgd_pnsgd_consts_from_sq(dpgd_pnsgd_consts *k, double x2);

/* *ds (images, normalised by its mean and std) replaced by the scattering features every
 * scatter-* model takes (J = 2, L = 8, docs/SCATTER.md), group-normalised in `groups`
 * groups (0: none), computed with `threads` OpenMP threads (0: the default), no cache:
 * what dpgd eval and dpgd predict feed a scatter-* model. */
int dpgd_train_scatter_features(dpgd_dataset **ds, size_t groups, int threads);

/* Feature data (ds->feat: scattering features after group normalisation): the public
 * bound X^2 = d (a group-normalised group of m values has squared norm m v/(v + eps) < m
 * in exact arithmetic) made to hold for the floats: every example whose squared norm,
 * summed in double and moved up by its rounding bound, exceeds d is scaled down until it
 * does not (a per-example map of public form, so it costs no privacy; LASTITERATE.md
 * section 1). *x2 = d; *scaled = how many examples were scaled (0 in practice). */
int dpgd_pnsgd_features_bound(dpgd_dataset *ds, double *x2, size_t *scaled);

typedef struct dpgd_pnsgd_plan {
  size_t n;            /* points = steps of the pass (public) */
  dpgd_pnsgd_consts k; /* of the training data's box */
  double sigma;        /* noise std on the gradient (after calibration) */
  double lr, radius;   /* eta <= k.lr_max, R */
  double cap;          /* L (1 - 2^-20): the engine's clip of each gradient */
  double delta;        /* of the reported guarantees */
  int discrete;        /* train.rng = secure: the step adds an exact discrete Gaussian to
                        * the clipped gradient rounded onto the grid 2^-grid_bits */
  int grid_bits;
} dpgd_pnsgd_plan;

/* Resolves a validated pnsgd config for n points of d inputs (normalised by mean, std as
 * floats): the constants, the check train.lr <= 2/beta (DPGD_EINVAL naming the keys and
 * the bound) and privacy.calibrate = sigma (the worst position t = n within
 * privacy.epsilon; LASTITERATE.md section 6). */
int dpgd_pnsgd_plan_make(dpgd_pnsgd_plan *p, const dpgd_config *c, size_t n, size_t d,
                         float mean, float std);
/* The same for a loaded training set: pixels (the box of mean, std) or group-normalised
 * features (dpgd_pnsgd_features_bound, which may scale examples of ds down). */
int dpgd_pnsgd_plan_for_data(dpgd_pnsgd_plan *p, const dpgd_config *c, dpgd_dataset *ds);
/* The accountant's setting of the point at position t (g = L, diameter 2R). */
dpgd_iter_setting dpgd_pnsgd_setting(const dpgd_pnsgd_plan *p, size_t t);

/* The guarantee of the point at position t at the plan's delta, each eps rounded up. */
typedef struct dpgd_pnsgd_eps {
  size_t t;
  double rho;         /* amplification by iteration: RDP a rho */
  double iteration;   /* its eps, rdp_optimal conversion */
  double contraction; /* eps of the contraction bound */
  double eps;         /* min(iteration, contraction): the reported guarantee (discrete:
                       * iteration; the contraction bound is the continuous curve's) */
  double composition; /* every iterate released (comparison): exact, mu = L / sigma */
} dpgd_pnsgd_eps;
int dpgd_pnsgd_guarantee(const dpgd_pnsgd_plan *p, size_t t, dpgd_pnsgd_eps *e);

/* The plan of c without training (loads the training split to learn n and d). */
int dpgd_pnsgd_dry(dpgd_pnsgd_plan *p, const dpgd_config *c);

typedef struct dpgd_pnsgd dpgd_pnsgd;
/* Loads the data, makes the plan, draws the order and w_0, creates run_dir (NULL: the
 * config's output.dir; refused if it holds a finished run or a checkpoint) and writes
 * config.ini. */
int dpgd_pnsgd_open(dpgd_pnsgd **out, const dpgd_config *c, const char *run_dir);
int dpgd_pnsgd_step(dpgd_pnsgd *r); /* DPGD_ERANGE if the iterate is not finite */
int dpgd_pnsgd_done(const dpgd_pnsgd *r);
size_t dpgd_pnsgd_step_index(const dpgd_pnsgd *r);
const dpgd_pnsgd_plan *dpgd_pnsgd_plan_of(const dpgd_pnsgd *r);
const dpgd_config *dpgd_pnsgd_config(const dpgd_pnsgd *r);
/* (n) order[t - 1] = the training point used at step t. */
const size_t *dpgd_pnsgd_order(const dpgd_pnsgd *r);
const float *dpgd_pnsgd_params(const dpgd_pnsgd *r, size_t *n_params);
/* Writes model.bin (w_n), positions.csv, points.csv and summary.json (last, atomically);
 * *test_acc (may be NULL) gets the test accuracy of w_n. */
int dpgd_pnsgd_finish(dpgd_pnsgd *r, double *test_acc);
void dpgd_pnsgd_free(dpgd_pnsgd *r);
/* The clipped sum of each step computed by fn instead of the engine alone (dpgd train
 * under MPI: train/MPI.md): fn(ctx, m, ws, train, caps, sum, post) must fill sum (P) and
 * post (n) with the bits dpgd_model_clipped_grad_sum(m, ws, train, caps, sum, NULL,
 * post) gives, or return a non-zero status after DPGD_FAIL. NULL restores the engine. */
typedef int (*dpgd_run_sum_fn)(void *ctx, dpgd_model *m, dpgd_grad_ws *ws,
                               const dpgd_dataset *train, const double *caps /* (n) */,
                               double *sum /* (P) out */, double *post /* (n) out */);
void dpgd_run_set_sum(dpgd_run *r, dpgd_run_sum_fn fn, void *ctx);
/* The training set the run's steps sum over (data.n_train applied). */
const dpgd_dataset *dpgd_run_train_set(const dpgd_run *r);

/* ===== Report formats (train/report.c) ===============================================
 * Shared by the run directory and dpgd queries. */
void dpgd_report_num(FILE *f, double v);      /* %.10g; nothing when not finite */
void dpgd_report_up(FILE *f, double v);       /* a privacy number: 10 digits rounded up */
void dpgd_report_json_num(FILE *f, double v); /* %.10g, or null when not finite */
/* A seed below 2^64 as its decimal number; null for a longer one (only such a seed can be
 * secret enough, and summary.json is the file a user shares: config.ini keeps it). */
void dpgd_report_json_seed(FILE *f, const dpgd_seed *s);
/* summary.json's "noise" block of a discrete-Gaussian release (exact int64 sums on the
 * grid 2^-bits, N_Z(0, s2) per coordinate; `theorem` its guarantee): `extra` is one more JSON
 * member ("key": value) naming how the eps was taken; eps_continuous is the exact eps of
 * the same releases as continuous Gaussians (the cost of the proof), rounded up here. */
void dpgd_report_json_dgauss(FILE *f, const char *theorem, int bits, unsigned long long s2,
                             const char *extra, double eps_continuous);
/* What the odometer columns mean together (the comment line of points.csv and
 * users.csv; train/RUN_FORMAT.md "points.csv"). */
#define DPGD_ODOMETER_FAMILY_NOTE                                                              \
  "The rows' (mu_i, eps_i) form one family of statements that hold together at the run's "     \
  "delta: delta_level is the share of delta of the row's level, not a delta on its own."
/* "level,delta_level,mu_i,eps_i" of a point whose total is mu2 (GDP units): its
 * odometer report (dpgd_odometer_report), the last three rounded up. */
int dpgd_report_odometer_cols(FILE *f, const dpgd_odometer *o, double mu2);
/* {"level_mu2": ..., "levels": L, "delta_split": [delta_1, ..., delta_L]} */
void dpgd_report_json_odometer(FILE *f, const dpgd_odometer *o);

/* The sparse linear queries and the one-run audit have headers of their own. */
#include "dpgd_audit.h"
#include "dpgd_queries.h"

#endif /* DPGD_TRAIN_H */
