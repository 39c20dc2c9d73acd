/* dpgd_config.h -- the training configuration: INI files (inih) with sections data,
 * model, train, filter, privacy, stopping, output; `section.key=value` overrides;
 * validation that names the key; the resolved config written back as INI.
 * One table in config.c is the schema: every key, its type, default, range and help. */
#ifndef DPGD_CONFIG_H
#define DPGD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpgd_core.h"

#define DPGD_CONFIG_PATH_MAX 1024

typedef enum { DPGD_LR_CONSTANT = 0, DPGD_LR_COSINE = 1 } dpgd_lr_schedule;
typedef enum { DPGD_RNG_RESEARCH = 0, DPGD_RNG_SECURE = 1 } dpgd_rng_mode;
typedef enum {
  DPGD_SAMPLING_FULL = 0,    /* every point every step (Algorithms 6 and 7) */
  DPGD_SAMPLING_POISSON = 1, /* each point independently with probability q (DP-SGD) */
  DPGD_SAMPLING_SUBSET = 2   /* exactly m points, without replacement (DP-SGD) */
} dpgd_sampling;
typedef enum {
  DPGD_CALIBRATE_NONE = 0,  /* sigma and (for the filter) budget or k are given */
  DPGD_CALIBRATE_SIGMA = 1, /* smallest sigma meeting privacy.epsilon in train.steps */
  DPGD_CALIBRATE_BUDGET = 2 /* largest B_norm meeting privacy.epsilon at sigma, clip */
} dpgd_calibrate_mode;
typedef enum {
  DPGD_ALGO_GD = 0,   /* full-batch GD (Algorithms 6, 7) or DP-SGD: dpgd_run_* */
  DPGD_ALGO_PNSGD = 1 /* one pass of projected noisy SGD, last iterate only: dpgd_pnsgd_* */
} dpgd_algorithm;

/* A research run's master seed (train.seed, dpgd queries --seed): an integer below 2^256,
 * as 32 big-endian bytes. Written as decimal (up to 2^64 - 1) or as 0x and 1 to 64 hex
 * digits; every one of its bits keys the research streams (train/dpgd_train.h). A run's
 * eps holds only if the seed has at least 128 bits of secret entropy (so a decimal seed
 * never suffices); the default seed 1 is public. */
#define DPGD_SEED_BYTES 32
#define DPGD_SEED_TEXT_MAX 67 /* "0x", 64 hex digits, NUL */
typedef struct dpgd_seed {
  uint8_t b[DPGD_SEED_BYTES];
} dpgd_seed;

/* The seed whose value is v. */
dpgd_seed dpgd_seed_from_u64(uint64_t v);
/* Parses text (decimal below 2^64, or 0x/0X and 1 to 64 hex digits, no sign or space).
 * DPGD_EINVAL with a reason (no key name) in why otherwise; *s unchanged then. */
int dpgd_seed_parse(dpgd_seed *s, const char *text, char *why, size_t whylen);
/* Decimal when the value is below 2^64, else 0x and its hex digits without leading
 * zeros: dpgd_seed_parse reads it back to the same value. Returns buf. */
const char *dpgd_seed_format(const dpgd_seed *s, char buf[DPGD_SEED_TEXT_MAX]);
/* 1 and *v = the value when it is below 2^64, else 0. */
int dpgd_seed_to_u64(const dpgd_seed *s, uint64_t *v);

typedef struct dpgd_config {
  /* [data] */
  char data_dir[DPGD_CONFIG_PATH_MAX]; /* "" = default lookup (dpgd_data_find_dir) */
  size_t data_n_train;                 /* first n training examples; 0 = all */
  size_t data_validation; /* the last N training examples evaluate instead of test; 0 = no */
  size_t data_n_test;     /* first n test examples; 0 = all */
  double data_mean, data_std;                    /* normalisation (p/255 - mean)/std */
  char data_feature_cache[DPGD_CONFIG_PATH_MAX]; /* scatter-*: cache dir; "" = data dir */
  /* [model] */
  char model_type[16];         /* "cnn" | "softmax" | "scatter-softmax" | "scatter-cnn" */
  size_t model_scatter_groups; /* scatter-*: group normalisation groups; 0 = none */
  int model_activation;        /* dpgd_activation: 0 relu, 1 tanh */
  size_t model_chunk;          /* examples per chunk; 0 = measured default */
  int model_threads;           /* OpenMP threads; 0 = OpenMP default */
  /* [train] */
  int train_algorithm;      /* dpgd_algorithm */
  double train_radius;      /* pnsgd: projection radius R; 0 = not given */
  size_t train_steps;       /* Algorithm 6 steps / Algorithm 7 k_max; 0 = derived */
  int train_sampling;       /* dpgd_sampling */
  double train_sample_rate; /* poisson: q in (0, 1]; 0 = not given */
  size_t train_batch_size;  /* subset: points per step; 0 = not given */
  double train_epochs;      /* poisson: steps = ceil(epochs / q); 0 = not given */
  double train_lr;          /* learning rate eta */
  int train_lr_schedule;    /* dpgd_lr_schedule */
  double train_momentum;    /* heavy-ball beta in [0, 1); 0: none */
  dpgd_seed train_seed;     /* master seed (research mode) */
  size_t train_eval_every;  /* test accuracy every N steps; 0 = only at the end */
  int train_rng;            /* dpgd_rng_mode */
  int train_constant_time;  /* same work for inactive points (timing) */
  /* [filter] */
  int filter_enabled;    /* 1 = Algorithm 7 (individual filtering) */
  double filter_budget;  /* B_norm; 0 = from filter.k or calibration */
  double filter_k;       /* B_norm = k * clip^2 when budget is 0 */
  double filter_refresh; /* poisson: full pass every r steps (a whole number); 0 = 1 */
  double filter_hold;    /* poisson: held bound factor between refreshes (>= 1); 0 = none */
  /* [privacy] */
  double privacy_sigma; /* noise multiplier; 0 = calibrate */
  double privacy_clip;  /* C */
  double privacy_delta;
  double privacy_epsilon; /* target for calibration; 0 = none */
  int privacy_calibrate;  /* dpgd_calibrate_mode */
  int privacy_method;     /* dpgd_acct_method used for calibration */
  /* [stopping] */
  size_t stopping_queries;  /* m noisy accuracy queries; 0 = last iterate */
  size_t stopping_every;    /* s steps between queries */
  double stopping_tau_frac; /* query noise std tau = tau_frac * n */
  /* [output] */
  char output_dir[DPGD_CONFIG_PATH_MAX];
  size_t output_checkpoint_every; /* 0 = only at the end */
  size_t output_eps_every;        /* eps columns of metrics.csv every N steps; 0 = auto */
  int output_diagnostics;         /* non-private diagnostic columns */
  int output_progress;            /* progress line on stderr */
} dpgd_config;

/* Fills every key with its documented default. */
void dpgd_config_defaults(dpgd_config *c);
/* A configuration on the heap, filled with the defaults (for callers that cannot size
 * dpgd_config, e.g. bindings); NULL (reported) without memory. */
dpgd_config *dpgd_config_alloc(void);
void dpgd_config_free(dpgd_config *c);

/* Reads an INI file over c (keys not in the file keep their values). Unknown sections
 * or keys and malformed or out-of-range values are errors naming file, line and key. */
int dpgd_config_load(dpgd_config *c, const char *path);

/* Same, from a buffer (fuzzing, tests); name is used in messages. */
int dpgd_config_load_mem(dpgd_config *c, const void *buf, size_t len, const char *name);

/* DPGD_OK if path (what names it in the message) fits a config field and config.ini can
 * carry it back: shorter than DPGD_CONFIG_PATH_MAX, no line break, no leading or
 * trailing blank, no ';' after a blank (an INI comment). */
int dpgd_config_check_path(const char *path, const char *what);
/* Splits an INI key line "name = value ; comment" in place as inih does (both trimmed);
 * for lines longer than inih's buffer. DPGD_EINVAL if it is not a key line. */
int dpgd_config_split_line(char *line, char **name, char **value);

/* Applies one override "section.key=value". */
int dpgd_config_set(dpgd_config *c, const char *assignment);

/* "section.key" of the key whose field is at field_offset in dpgd_config (the schema's
 * spelling, the one messages use); NULL when no key starts there. DPGD_CONFIG_KEY(field)
 * names a field, so a misspelt field does not compile. */
const char *dpgd_config_key_name(size_t field_offset);
#define DPGD_CONFIG_KEY(field) dpgd_config_key_name(offsetof(dpgd_config, field))
/* The schema's keys in order, i < dpgd_config_n_keys(): name, and field offset if asked. */
size_t dpgd_config_n_keys(void);
const char *dpgd_config_key_at(size_t i, size_t *field_offset);

/* Checks every key's range and the cross-key rules (e.g. calibration needs epsilon). */
int dpgd_config_validate(const dpgd_config *c);
/* The part of it for train.algorithm = pnsgd (train/pnsgd_config.c; train/LASTITERATE.md
 * section 4): the keys that would release an intermediate iterate are refused. */
int dpgd_pnsgd_config_check(const dpgd_config *c);

/* Writes the resolved configuration as INI (every key, with its help as a comment). */
int dpgd_config_write(const dpgd_config *c, FILE *f);
/* The same for the keys whose fields are at the given offsets only (offsetof(dpgd_config,
 * ...)), in the schema's order, with their sections and help. */
int dpgd_config_write_keys(const dpgd_config *c, FILE *f, const size_t *offsets, size_t n);

/* FNV-1a hash of the resolved configuration text (checkpoints refuse a mismatch). */
uint64_t dpgd_config_hash(const dpgd_config *c);

/* Prints the schema (section, key, default, help) for --help. */
void dpgd_config_print_schema(FILE *f);

#endif /* DPGD_CONFIG_H */
