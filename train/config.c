/* config.c -- the training configuration: one schema table (every key with its type,
 * default, range and help), an inih handler that fills dpgd_config from it, overrides
 * "section.key=value" and the resolved config written as INI (cross-key validation:
 * config_check.c).
 * Every error names the key (and the file and line when there is one). */
#include "dpgd_accounting.h"
#include "dpgd_config.h"
#include "dpgd_data.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

typedef enum { T_SIZE, T_INT, T_SEED, T_DOUBLE, T_BOOL, T_ENUM, T_NAME, T_PATH } key_type;

/* Range rules for numbers. A key whose default is 0 with ZERO_UNSET may be left at 0
 * ("not given"), but a value the user writes must satisfy the range. */
enum {
  GT0 = 1 << 0,        /* > 0 */
  LT1 = 1 << 1,        /* < 1 */
  ZERO_UNSET = 1 << 2, /* 0 means "not given"; only the default may be 0 (doubles only) */
  NOHASH = 1 << 3,     /* does not change the computation: left out of the hash */
  LIST_NAMES = 1 << 4, /* the help text is followed by the allowed names, " | "-joined */
  LE1 = 1 << 5,        /* <= 1 */
  /* Left out of the hash while at its default (0, or the first name), so that a config
   * that does not use the key hashes as it would without it and the checkpoints of such
   * runs stay resumable across versions that know the key. */
  HASH_IF_SET = 1 << 6,
  ZERO_OK = 1 << 7 /* with ZERO_UNSET: 0 may also be written, meaning "not given" */
};

typedef struct {
  const char *section, *key;
  const char *name; /* "section.key", as messages write it */
  size_t offset;
  key_type type;
  const char *def;          /* default, as text (parsed like a user value) */
  const char *const *names; /* T_ENUM / T_NAME: allowed values, NULL-terminated */
  unsigned flags;
  const char *help;
} key_spec;

static const char *const activation_names[] = {"relu", "tanh", NULL};
static const char *const model_names[] = {"cnn", "softmax", "scatter-softmax", "scatter-cnn",
                                          NULL};
static const char *const schedule_names[] = {"constant", "cosine", NULL};
static const char *const rng_names[] = {"research", "secure", NULL};
static const char *const calibrate_names[] = {"none", "sigma", "budget", NULL};
static const char *const sampling_names[] = {"full", "poisson", "subset", NULL};
static const char *const algorithm_names[] = {"gd", "pnsgd", NULL};

/* A key's section, key, "section.key" and field offset, all from the two words, so that
 * the name in messages and the field it sets cannot drift apart. */
#define KEY(section, key)                                                                      \
#section, #key, #section "." #key, offsetof(dpgd_config, section##_##key)

/* clang-format off: one key per entry, its help on the next line */
static const key_spec schema[] = {
    {KEY(data, dir), T_PATH, "", NULL, NOHASH,
     "dataset directory (IDX or PNG tree); empty = $DPGD_DATA_DIR, else data/mnist"},
    {KEY(data, n_train), T_SIZE, "0", NULL, 0,
     "use the first n training examples (n is then the public dataset size); 0 = all"},
    {KEY(data, n_test), T_SIZE, "0", NULL, 0, "use the first n test examples; 0 = all"},
    {KEY(data, validation), T_SIZE, "0", NULL, HASH_IF_SET,
     "hold out the last N of the training examples (after data.n_train) as the evaluation "
     "set, in place of the test split, for tuning; they are not trained on; 0 = test split"},
    {KEY(data, mean), T_DOUBLE, "0.1307", NULL, 0,
     "normalisation: x = (pixel/255 - mean) / std"},
    {KEY(data, std), T_DOUBLE, "0.3081", NULL, GT0, "normalisation std (> 0)"},

    {KEY(data, feature_cache), T_PATH, "", NULL, NOHASH,
     "scatter-* models: directory of the scattering feature cache; empty = the dataset's"},
    {KEY(model, type), T_NAME, "cnn", model_names, 0,
     "cnn | softmax | scatter-softmax | scatter-cnn (softmax, or Tramer & Boneh's small CNN, "
     "on "
     "scattering features: docs/SCATTER.md)"},
    {KEY(model, scatter_groups), T_SIZE, "0", NULL, HASH_IF_SET,
     "scatter-*: group normalisation of each example's 81 channels in this many groups "
     "(1, 3, 9, 27 or 81; per example, no privacy cost); 0 = none"},
    {KEY(model, activation), T_ENUM, "relu", activation_names, 0, "relu (the paper's) | tanh"},
    {KEY(model, chunk), T_SIZE, "0", NULL, 0,
     "examples per chunk of the per-example engine; 0 = measured default"},
    {KEY(model, threads), T_INT, "0", NULL, NOHASH,
     "OpenMP threads; 0 = OpenMP's default (OMP_NUM_THREADS)"},

    {KEY(train, algorithm), T_ENUM, "gd", algorithm_names, HASH_IF_SET,
     "gd (private gradient descent: full batch or train.sampling) | pnsgd (one pass of "
     "projected noisy SGD, softmax only, last iterate released: train/LASTITERATE.md)"},
    {KEY(train, radius), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET | HASH_IF_SET,
     "pnsgd: radius R of the L2 ball the parameters are projected on (> 0)"},
    {KEY(train, steps), T_SIZE, "0", NULL, 0,
     "steps (Algorithm 7: k_max); 0 = floor(B_norm/C^2) + (stopping.queries - 1) * "
     "stopping.every"},
    {KEY(train, sampling), T_ENUM, "full", sampling_names, HASH_IF_SET,
     "full (every point every step: Algorithms 6 and 7) | poisson (DP-SGD: each point "
     "independently with probability train.sample_rate each step) | subset (DP-SGD: a "
     "uniformly random set of exactly train.batch_size points each step, without "
     "replacement). Epoch-wise shuffling is not offered: its usual accounting as Poisson "
     "is not valid (Chua et al. 2024)"},
    {KEY(train, sample_rate), T_DOUBLE, "0", NULL, GT0 | LE1 | ZERO_UNSET | HASH_IF_SET,
     "poisson: sampling rate q in (0, 1]; the noisy sum is divided by q n (public)"},
    {KEY(train, batch_size), T_SIZE, "0", NULL, HASH_IF_SET,
     "subset: m points per step, 1 <= m <= n, sampled without replacement; the noisy sum "
     "is divided by m (public); accounted by an RDP bound (accounting/SAMPLING.md)"},
    {KEY(train, epochs), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET | ZERO_OK | HASH_IF_SET,
     "poisson: train.steps = ceil(epochs / sample_rate) when train.steps is not given "
     "(0: not given); --set train.steps=S replaces a file's epochs, and the reverse"},
    {KEY(train, lr), T_DOUBLE, "0.1", NULL, GT0, "learning rate (> 0)"},
    {KEY(train, momentum), T_DOUBLE, "0", NULL, GT0 | LT1 | ZERO_UNSET | ZERO_OK | HASH_IF_SET,
     "heavy-ball momentum beta, 0 <= beta < 1 (PyTorch SGD's form: v = beta v + g, theta -= "
     "lr v, g the noisy gradient; post-processing of the released sums, so eps is "
     "unchanged); 0: plain gradient steps"},
    {KEY(train, lr_schedule), T_ENUM, "constant", schedule_names, 0, "constant | cosine"},
    {KEY(train, seed), T_SEED, "1", NULL, 0,
     "master seed of the research streams (ChaCha20 keyed by every bit): decimal below 2^64 "
     "or 0x and up to 64 hex digits; eps holds only if it has at least 128 bits of secret "
     "entropy (0x and 32 hex digits from a CSPRNG) and stays secret; 1 is public"},
    {KEY(train, eval_every), T_SIZE, "10", NULL, NOHASH,
     "test accuracy every N steps; 0 = only at the end"},
    {KEY(train, rng), T_ENUM, "research", rng_names, 0,
     "research (seeded, reproducible) | secure (OS CSPRNG, for deployments)"},
    {KEY(train, constant_time), T_BOOL, "false", NULL, 0,
     "true = do the same work for inactive (filtered-out or not sampled) points, so that a "
     "step's time does not reveal how many points are active"},

    {KEY(filter, enabled), T_BOOL, "false", NULL, 0,
     "true = Algorithm 7 (individual privacy filtering); false = Algorithm 6"},
    {KEY(filter, budget), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET,
     "squared-norm budget B_norm of every point; 0 = filter.k * clip^2 or calibrated"},
    {KEY(filter, k), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET,
     "B_norm = k * clip^2 when filter.budget is not given"},
    {KEY(filter, refresh), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET | HASH_IF_SET,
     "poisson: every point's clipped norm is computed (a full pass) every r steps, r a whole "
     "number >= 1; other steps charge the cap (train/DPSGD_FILTER.md); not set = 1"},
    {KEY(filter, hold), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET | HASH_IF_SET,
     "poisson with filter.refresh: between refreshes clip and charge each point at h times "
     "its bound at the last refresh, when below its cap (train/DPSGD_FILTER.md section 3); "
     "h >= 1; not set = charge the cap"},

    {KEY(privacy, sigma), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET | ZERO_OK,
     "noise multiplier (> 0): noise std sigma * clip on the clipped sum (pnsgd: the noise "
     "std on the gradient); 0 = not set (privacy.calibrate = sigma computes it)"},
    {KEY(privacy, clip), T_DOUBLE, "1", NULL, GT0, "clip norm C (> 0)"},
    {KEY(privacy, delta), T_DOUBLE, "1e-5", NULL, GT0 | LT1,
     "delta of the reported (eps, delta) guarantee, in (0, 1)"},
    {KEY(privacy, epsilon), T_DOUBLE, "0", NULL, GT0 | ZERO_UNSET,
     "target epsilon for calibration (> 0)"},
    {KEY(privacy, calibrate), T_ENUM, "none", calibrate_names, 0,
     "none | sigma (smallest sigma for epsilon in train.steps) | budget (largest B_norm)"},
    {KEY(privacy, method), T_ENUM, "exact", dpgd_acct_method_names, LIST_NAMES,
     "accounting method used to calibrate: "},

    {KEY(stopping, queries), T_SIZE, "0", NULL, 0,
     "m noisy training-accuracy queries after floor(B_norm/C^2) steps; 0 = keep the last "
     "iterate"},
    {KEY(stopping, every), T_SIZE, "5", NULL, GT0, "s steps between queries (> 0)"},
    {KEY(stopping, tau_frac), T_DOUBLE, "0.01", NULL, GT0,
     "query noise std tau = tau_frac * n (> 0); each query is a Gaussian with mu = 1/tau"},

    {KEY(output, dir), T_PATH, "runs/default", NULL, NOHASH,
     "run directory (metrics.csv, summary.json, model.bin, points.csv, checkpoint.bin)"},
    {KEY(output, checkpoint_every), T_SIZE, "50", NULL, NOHASH,
     "checkpoint every N steps; 0 = only at the end (train.rng = secure: every step, always)"},
    {KEY(output, eps_every), T_SIZE, "0", NULL, NOHASH,
     "eps columns of metrics.csv every N steps (and at the last step); 0 = every step for "
     "full-batch runs, at the test-accuracy steps (or 100 times a run) with sampling"},
    {KEY(output, diagnostics), T_BOOL, "false", NULL, NOHASH,
     "write non-private diagnostic columns (exact train loss/accuracy, active count)"},
    {KEY(output, progress), T_BOOL, "true", NULL, NOHASH, "progress line on stderr"},
};
/* clang-format on */

#define N_KEYS (sizeof schema / sizeof schema[0])

const char *dpgd_config_key_name(size_t field_offset)
{
  for (size_t i = 0; i < N_KEYS; i++)
    if (schema[i].offset == field_offset) return schema[i].name;
  return NULL;
}

size_t dpgd_config_n_keys(void) { return N_KEYS; }

const char *dpgd_config_key_at(size_t i, size_t *field_offset)
{
  if (i >= N_KEYS) return NULL;
  if (field_offset) *field_offset = schema[i].offset;
  return schema[i].name;
}

static const key_spec *find_key(const char *section, const char *key)
{
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strcmp(schema[i].section, section) && !strcmp(schema[i].key, key)) return &schema[i];
  return NULL;
}

static int section_known(const char *section)
{
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strcmp(schema[i].section, section)) return 1;
  return 0;
}

/* The parsers of parse_value, one per key type: each writes a reason (without the key,
 * which the caller adds) into why and returns DPGD_EINVAL on error. */
static int parse_integer(char *field, const key_spec *k, const char *text, char *why,
                         size_t whylen)
{
  char *end = NULL;
  if (!*text || *text == '-' || *text == '+') {
    snprintf(why, whylen, "'%s' is not a non-negative integer", text);
    return DPGD_EINVAL;
  }
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end || errno == ERANGE) {
    snprintf(why, whylen, "'%s' is not a non-negative integer", text);
    return DPGD_EINVAL;
  }
  if ((k->flags & GT0) && v == 0) {
    snprintf(why, whylen, "must be %s 0 (got %s)", (k->flags & ZERO_OK) ? ">=" : ">", text);
    return DPGD_EINVAL;
  }
  if (k->type == T_INT) {
    if (v > 4096) {
      snprintf(why, whylen, "must be at most 4096 (got %s)", text);
      return DPGD_EINVAL;
    }
    *(int *)field = (int)v;
  } else {
    *(size_t *)field = (size_t)v;
  }
  return DPGD_OK;
}

static int parse_double(char *field, const key_spec *k, const char *text, char *why,
                        size_t whylen)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || errno == ERANGE) {
    snprintf(why, whylen, "'%s' is not a number", text);
    return DPGD_EINVAL;
  }
  if (!isfinite(v)) {
    snprintf(why, whylen, "must be finite (got %s)", text);
    return DPGD_EINVAL;
  }
  if ((k->flags & GT0) && !(v > 0) && !((k->flags & ZERO_OK) && v == 0)) {
    snprintf(why, whylen, "must be %s 0 (got %s)", (k->flags & ZERO_OK) ? ">=" : ">", text);
    return DPGD_EINVAL;
  }
  if ((k->flags & LT1) && !(v < 1)) {
    snprintf(why, whylen, "must be < 1 (got %s)", text);
    return DPGD_EINVAL;
  }
  if ((k->flags & LE1) && !(v <= 1)) {
    snprintf(why, whylen, "must be <= 1 (got %s)", text);
    return DPGD_EINVAL;
  }
  *(double *)field = v;
  return DPGD_OK;
}

static int parse_bool(char *field, const char *text, char *why, size_t whylen)
{
  if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes") ||
      !strcmp(text, "on")) {
    *(int *)field = 1;
  } else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no") ||
             !strcmp(text, "off")) {
    *(int *)field = 0;
  } else {
    snprintf(why, whylen, "'%s' is not a boolean (true/false)", text);
    return DPGD_EINVAL;
  }
  return DPGD_OK;
}

/* T_ENUM stores the index of the name, T_NAME the name itself. */
static int parse_name(char *field, size_t field_len, const key_spec *k, const char *text,
                      char *why, size_t whylen)
{
  for (int i = 0; k->names[i]; i++) {
    if (!strcmp(text, k->names[i])) {
      if (k->type == T_ENUM) *(int *)field = i;
      else snprintf(field, field_len, "%s", k->names[i]);
      return DPGD_OK;
    }
  }
  size_t used = (size_t)snprintf(why, whylen, "'%s' is not one of", text);
  for (int i = 0; k->names[i] && used < whylen; i++)
    used += (size_t)snprintf(why + used, whylen - used, "%s %s", i ? "," : "", k->names[i]);
  return DPGD_EINVAL;
}

/* Parses text into the field of c described by k. On error writes a reason (without
 * the key, which the caller adds) into why and returns DPGD_EINVAL. */
static int parse_value(dpgd_config *c, const key_spec *k, const char *text, char *why,
                       size_t whylen)
{
  char *field = (char *)c + k->offset;
  while (*text == ' ' || *text == '\t') text++;

  switch (k->type) {
  case T_SIZE:
  case T_INT: return parse_integer(field, k, text, why, whylen);
  case T_SEED: return dpgd_seed_parse((dpgd_seed *)field, text, why, whylen);
  case T_DOUBLE: return parse_double(field, k, text, why, whylen);
  case T_BOOL: return parse_bool(field, text, why, whylen);
  case T_ENUM:
  case T_NAME: return parse_name(field, sizeof c->model_type, k, text, why, whylen);
  case T_PATH:
    if (dpgd_config_check_path(text, "path")) {
      snprintf(why, whylen, "%s", dpgd_error_last());
      return DPGD_EINVAL;
    }
    snprintf(field, DPGD_CONFIG_PATH_MAX, "%s", text);
    return DPGD_OK;
  }
  snprintf(why, whylen, "internal error: unknown key type");
  return DPGD_EINVAL;
}

void dpgd_config_defaults(dpgd_config *c)
{
  char why[256];
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < N_KEYS; i++) {
    /* Defaults of ZERO_UNSET keys are 0, which parse_value would refuse. */
    if ((schema[i].flags & ZERO_UNSET) && !strcmp(schema[i].def, "0")) continue;
    int rc = parse_value(c, &schema[i], schema[i].def, why, sizeof why);
    (void)rc; /* a default that does not parse is a bug caught by the config tests */
  }
}

/* State of one parse: the reader counts lines so that the first error is reported at
 * its own line, whether inih found it (syntax) or the handler did (keys and values). */
typedef struct {
  dpgd_config *c;
  FILE *f;
  char *line; /* getline buffer: physical lines of any length */
  size_t line_cap;
  int lineno;     /* lines read so far */
  int error_line; /* line of the first error found here; 0 = none */
  char error[512];
  char section[64]; /* the last [section] line's, for key lines split here */
  unsigned char seen[N_KEYS];
} load_state;

static void load_error(load_state *st, const char *fmt, const char *a, const char *b)
{
  if (st->error_line) return;
  st->error_line = st->lineno;
  snprintf(st->error, sizeof st->error, fmt, a, b);
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value);

/* inih's reader: whole-line comments are dropped here, so help comments of any length
 * pass; a key line longer than inih's buffer (a long path) is split here and handed to
 * the handler; any other line that long is an error, never silently split. */
static char *ini_reader_fn(char *str, int num, void *stream)
{
  load_state *st = stream;
  ssize_t len = getline(&st->line, &st->line_cap, st->f);
  if (len < 0) return NULL;
  st->lineno++;
  const char *p = st->line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == ';' || *p == '#' || *p == '\n' || *p == '\r' || *p == '\0') {
    snprintf(str, (size_t)num, "\n");
    return str;
  }
  if (*p == '[')
    snprintf(st->section, sizeof st->section, "%.*s", (int)strcspn(p + 1, "]"), p + 1);
  char *name, *value;
  if (len >= num - 1 && !dpgd_config_split_line(st->line, &name, &value)) {
    ini_handler_fn(st, st->section, name, value); /* a long key line (a path) is split here */
    snprintf(str, (size_t)num, "\n");
    return str;
  }
  if (len >= num - 1) {
    char limit[32];
    snprintf(limit, sizeof limit, "%d", num - 3);
    load_error(st, "line longer than %s characters%s", limit, "");
    snprintf(str, (size_t)num, "\n");
    return str;
  }
  memcpy(str, st->line, (size_t)len + 1);
  return str;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
  load_state *st = user;
  char why[256];
  if (st->error_line) return 0;
  if (!section[0]) {
    load_error(st, "key '%s' outside any [section]%s", name, "");
    return 0;
  }
  if (!section_known(section)) {
    load_error(st, "unknown section [%s]%s", section, "");
    return 0;
  }
  const key_spec *k = find_key(section, name);
  if (!k) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", section, name);
    load_error(st, "unknown key %s%s", full, "");
    return 0;
  }
  if (st->seen[k - schema]) {
    load_error(st, "%s is given twice", k->name, "");
    return 0;
  }
  st->seen[k - schema] = 1;
  if (parse_value(st->c, k, value, why, sizeof why)) {
    load_error(st, "%s: %s", k->name, why);
    return 0;
  }
  return 1;
}

/* Parses an open stream; name is used in messages. */
static int load_stream(dpgd_config *c, FILE *f, const char *name)
{
  load_state st = {.c = c, .f = f};
  int rc = ini_parse_stream(ini_reader_fn, &st, ini_handler_fn, &st);
  int read_error = ferror(f);
  free(st.line);
  if (read_error) return DPGD_FAIL(DPGD_EIO, "cannot read config %s", name);
  if (rc == 0 && !st.error_line) return DPGD_OK;
  if (rc < 0) return DPGD_FAIL(DPGD_ENOMEM, "cannot parse config %s: out of memory", name);
  if (st.error_line && (rc == 0 || st.error_line <= rc))
    return DPGD_FAIL(DPGD_EINVAL, "%s:%d: %s", name, st.error_line, st.error);
  return DPGD_FAIL(DPGD_EINVAL, "%s:%d: syntax error (expected [section] or key = value)", name,
                   rc);
}

int dpgd_config_load(dpgd_config *c, const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open config %s: %s", path, strerror(errno));
  int rc = load_stream(c, f, path);
  fclose(f);
  return rc;
}

int dpgd_config_load_mem(dpgd_config *c, const void *buf, size_t len, const char *name)
{
  if (len == 0) return DPGD_OK; /* fmemopen refuses size 0; an empty file sets nothing */
  FILE *f = fmemopen((void *)buf, len, "r");
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "cannot parse config %s: out of memory", name);
  int rc = load_stream(c, f, name);
  fclose(f);
  return rc;
}

int dpgd_config_set(dpgd_config *c, const char *assignment)
{
  char section[64], key[64], why[256];
  const char *dot = strchr(assignment, '.');
  const char *eq = strchr(assignment, '=');
  if (!dot || !eq || dot > eq)
    return DPGD_FAIL(DPGD_EINVAL, "override '%s' is not of the form section.key=value",
                     assignment);
  size_t ls = (size_t)(dot - assignment), lk = (size_t)(eq - dot - 1);
  if (ls == 0 || lk == 0 || ls >= sizeof section || lk >= sizeof key)
    return DPGD_FAIL(DPGD_EINVAL, "override '%s' is not of the form section.key=value",
                     assignment);
  memcpy(section, assignment, ls);
  section[ls] = '\0';
  memcpy(key, dot + 1, lk);
  key[lk] = '\0';
  const key_spec *k = find_key(section, key);
  if (!k) return DPGD_FAIL(DPGD_EINVAL, "unknown key %s.%s in override", section, key);
  if (parse_value(c, k, eq + 1, why, sizeof why))
    return DPGD_FAIL(DPGD_EINVAL, "%s: %s", k->name, why);
  /* A run's length is steps or epochs: an override of one replaces the other. */
  if (k->offset == offsetof(dpgd_config, train_steps) && c->train_steps > 0)
    c->train_epochs = 0;
  if (k->offset == offsetof(dpgd_config, train_epochs) && c->train_epochs > 0)
    c->train_steps = 0;
  return DPGD_OK;
}

static void write_value(const dpgd_config *c, const key_spec *k, FILE *f)
{
  const char *field = (const char *)c + k->offset;
  char seed[DPGD_SEED_TEXT_MAX];
  switch (k->type) {
  case T_SIZE: fprintf(f, "%zu", *(const size_t *)field); break;
  case T_INT: fprintf(f, "%d", *(const int *)field); break;
  case T_SEED: fputs(dpgd_seed_format((const dpgd_seed *)field, seed), f); break;
  case T_DOUBLE: fprintf(f, "%.17g", *(const double *)field); break;
  case T_BOOL: fputs(*(const int *)field ? "true" : "false", f); break;
  case T_ENUM: fputs(k->names[*(const int *)field], f); break;
  case T_NAME:
  case T_PATH: fputs(field, f); break;
  }
}

static void print_help(FILE *f, const key_spec *k)
{
  fputs(k->help, f);
  for (int i = 0; (k->flags & LIST_NAMES) && k->names[i]; i++)
    fprintf(f, "%s%s", i ? " | " : "", k->names[i]);
}

/* For HASH_IF_SET keys, whose default is 0 (numbers) or the first name (T_ENUM). */
static int at_default(const dpgd_config *c, const key_spec *k)
{
  const char *field = (const char *)c + k->offset;
  switch (k->type) {
  case T_SIZE: return *(const size_t *)field == 0;
  case T_DOUBLE: return *(const double *)field == 0;
  case T_ENUM: return *(const int *)field == 0;
  default: return 0;
  }
}

/* Writes every key, or with `only` those at its n_only field offsets; with hash_only, only
 * the keys that change the computation, no comments (the text dpgd_config_hash digests). */
static int write_config(const dpgd_config *c, FILE *f, int hash_only, const size_t *only,
                        size_t n_only)
{
  const char *section = "";
  for (size_t i = 0, j = 0; i < N_KEYS; i++, j = 0) {
    const key_spec *k = &schema[i];
    while (only && j < n_only && only[j] != k->offset) j++;
    if (only && j == n_only) continue;
    if (hash_only && (k->flags & NOHASH)) continue;
    if (hash_only && (k->flags & HASH_IF_SET) && at_default(c, k)) continue;
    if (strcmp(section, k->section)) {
      fprintf(f, "%s[%s]\n", section[0] ? "\n" : "", k->section);
      section = k->section;
    }
    if (!hash_only) {
      fputs("; ", f);
      print_help(f, k);
      fputc('\n', f);
    }
    /* An unset key is written as a comment: reading "0" back would be refused. */
    if ((k->flags & ZERO_UNSET) && *(const double *)((const char *)c + k->offset) == 0) {
      fprintf(f, "; %s = (not set)\n", k->key);
      continue;
    }
    fprintf(f, "%s = ", k->key);
    write_value(c, k, f);
    fputc('\n', f);
  }
  return ferror(f) ? DPGD_FAIL(DPGD_EIO, "cannot write the configuration") : DPGD_OK;
}

int dpgd_config_write(const dpgd_config *c, FILE *f) { return write_config(c, f, 0, NULL, 0); }

int dpgd_config_write_keys(const dpgd_config *c, FILE *f, const size_t *offsets, size_t n)
{
  return write_config(c, f, 0, offsets, n);
}

uint64_t dpgd_config_hash(const dpgd_config *c)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 */
  if (!f) return 0;
  write_config(c, f, 1, NULL, 0);
  fclose(f);
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)buf[i];
    h *= 1099511628211ULL;
  }
  free(buf);
  return h;
}

void dpgd_config_print_schema(FILE *f)
{
  const char *section = "";
  for (size_t i = 0; i < N_KEYS; i++) {
    const key_spec *k = &schema[i];
    if (strcmp(section, k->section)) {
      fprintf(f, "  [%s]\n", k->section);
      section = k->section;
    }
    fprintf(f, "    %-17s default %-13s ", k->key, k->def[0] ? k->def : "\"\"");
    print_help(f, k);
    fputc('\n', f);
  }
}
