/* audit_internal.h -- the state of a one-run audit (train/AUDIT.md) shared by audit.c
 * (the loop and the scores), audit_data.c (base data, canaries, the run's data
 * directory) and audit_report.c (the guesses, the bound, audit.json). */
#ifndef DPGD_AUDIT_INTERNAL_H
#define DPGD_AUDIT_INTERNAL_H

#include "noise_internal.h"
#include "run_internal.h"

/* What <dir>/SENSITIVE says (one line): an audit directory is as private as the data. */
#define DPGD_AUDIT_SENSITIVE_NOTE                                                              \
  "SENSITIVE: audit_data/ is a byte-identical copy of the training data (owner-only, "         \
  "mode 0600), and the audit is a separate use of that data: its run (model.bin, "             \
  "metrics.csv, points.csv) adds its own eps to that of any other release from the same "      \
  "data, and audit_scores.csv and audit.json are computed from the training data without "     \
  "noise, so no guarantee covers them. Keep this directory as private as the data; ship "      \
  "nothing from it (train/AUDIT.md)."

/* The purpose the audited run's seed is derived for (dpgd_stream_derive_seed). */
#define DPGD_AUDIT_RUN_PURPOSE "audit run"

struct dpgd_audit {
  dpgd_config cfg; /* the audited config, pointed at the audit's data */
  dpgd_audit_params ap;
  size_t M, n_base, P;
  dpgd_dataset *base, *test, *canaries; /* canaries: (M) */
  uint8_t *in;                          /* (M) S_j: canary j is in the training set */
  size_t included;
  uint8_t *null_mask; /* (n_base + M) 1: an excluded canary (a null point of the run) */
  dpgd_run *run;
  dpgd_ledger *shadow;   /* canaries' spends as if every canary were included */
  dpgd_grad_ws *ws1;     /* one example at a time */
  double *ccaps, *cpost; /* (M) */
  double *bcaps;         /* (n_base + M) */
  float *G;              /* (M, P) canary j's clipped gradient at theta_t */
  double *gd, *base_sum; /* (P) */
  double *resid;         /* (P) released sum - base part - half of all canaries */
  double *score;         /* (M) sum over steps of <G_j, resid> */
  float *gstep;          /* (M, M) G G^T of one step (upper triangle) */
  double *gram;          /* (M, M) sum over steps of G G^T (upper triangle) */
  float *theta;          /* (P) theta_t, the iterate of the step's gradients */
  uint32_t *coords;      /* (M) gradient canaries: canary j's coordinate k_j */
  uint32_t *code;        /* (M) gradient canaries: canary j's code row r_j < codes */
  signed char *sign;     /* (M) h(r_j, t) of the coming step (the run's fixed_sign) */
  double *csq;           /* (P) gradient canaries: sum of c_t(i)^2 over coordinate k's */
  size_t codes;          /* K, canaries per coordinate at most (a power of 2; 1: Dirac) */
  dpgd_rng *g;           /* the audit stream, until the coordinates are drawn */
  double *pcaps;         /* (n_base + M) a planted clip bug's caps (tests only) */
  /* (M) gradient canaries, over the steps: sum of b = the base part on k_j, of y b (y the
   * residual on k_j) and of b^2 (audit_report.c fits the base part's scale with them) */
  double *sb, *syb, *sbb;
  double eps_claimed, delta;
  double sigma;      /* the noise multiplier the claim assumes */
  double q_claimed;  /* the Poisson rate the claim assumes (1: full batch) */
  double mu_claimed; /* GDP mu of the claimed eps at delta (the guess rule's) */
  double t0;
  char data_src[DPGD_CONFIG_PATH_MAX]; /* the config's data directory (before audit_data) */
};

int dpgd_audit_load_base(dpgd_audit *a);
int dpgd_audit_make_canaries(dpgd_audit *a);
int dpgd_audit_write_data(dpgd_audit *a, const char *dir);
/* A scatter-* model, after dpgd_audit_write_data: the base and test images replaced by
 * their features exactly as dpgd train makes them (dpgd_run_features: the cache in
 * data.feature_cache, else in data_src, keyed by the images), the input canaries by
 * theirs (the same transform, not cached); *train the run's training set, base then
 * canaries (gradient canaries' rows zero: the engine never reads them). */
int dpgd_audit_features(dpgd_audit *a, dpgd_dataset **train);
int dpgd_audit_grad_attach(dpgd_audit *a);
int dpgd_audit_pick_guesses(dpgd_audit *a, size_t *r_snj, size_t *r_fdp, double *ideal);

#endif /* DPGD_AUDIT_INTERNAL_H */
