/* plot_run.c -- reading a run directory (train/RUN_FORMAT.md) for plots and tables:
 * a strict numeric CSV reader (metrics.csv, points.csv), a small JSON reader for
 * summary.json, and the range checks that turn a corrupt file into a one-line error
 * instead of a silently wrong figure. */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- CSV ------------------------------------------------------------------------- */

void dpgd_csv_free(dpgd_csv *t)
{
  if (!t) return;
  for (size_t i = 0; i < t->n_cols; i++) free(t->names[i]);
  free(t->names);
  free(t->v);
  free(t);
}

int dpgd_csv_col(const dpgd_csv *t, const char *name)
{
  for (size_t i = 0; i < t->n_cols; i++)
    if (!strcmp(t->names[i], name)) return (int)i;
  return -1;
}

double dpgd_csv_at(const dpgd_csv *t, size_t r, int c)
{
  if (c < 0 || (size_t)c >= t->n_cols || r >= t->n_rows) return NAN;
  return t->v[r * t->n_cols + (size_t)c];
}

/* A field is a finite decimal number in plain or exponent notation, or empty. */
static int parse_field(double *v, const char *s, size_t len)
{
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\r')) len--;
  while (len && *s == ' ') s++, len--;
  if (len == 0) {
    *v = NAN;
    return 0;
  }
  if (len > 63) return -1;
  char tmp[64];
  memcpy(tmp, s, len);
  tmp[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (!strchr("0123456789+-.eE", tmp[i])) return -1;
  char *end;
  errno = 0;
  double x = strtod(tmp, &end);
  if (end != tmp + len || errno == ERANGE || !isfinite(x)) return -1;
  *v = x;
  return 0;
}

/* Copies the first n bytes of s (n < 48) into buf with control and non-ASCII bytes as
 * '?', so that an error message quoting file content stays one printable line. */
static const char *shown(char buf[48], const char *s, size_t n)
{
  size_t i = 0;
  for (; i < n && i < 47; i++) buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  buf[i] = '\0';
  return buf;
}

static int csv_header(dpgd_csv *t, const char *line, size_t len, const char *name)
{
  size_t n = 1;
  for (size_t i = 0; i < len; i++) n += line[i] == ',';
  t->names = calloc(n, sizeof *t->names);
  if (!t->names) return DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", name);
  const char *p = line, *end = line + len;
  for (size_t c = 0; c < n; c++) {
    const char *q = memchr(p, ',', (size_t)(end - p));
    if (!q) q = end;
    size_t k = (size_t)(q - p);
    while (k && (p[k - 1] == ' ' || p[k - 1] == '\r')) k--;
    while (k && *p == ' ') p++, k--;
    if (k == 0) return DPGD_FAIL(DPGD_EFORMAT, "%s: empty column name in the header", name);
    for (size_t i = 0; i < k; i++)
      if (!(p[i] >= 0x20 && p[i] < 0x7f)) {
        char b[48];
        return DPGD_FAIL(DPGD_EFORMAT,
                         "%s: column %zu of the header ('%s') has a byte that "
                         "is not printable ASCII",
                         name, c + 1, shown(b, p, k > 40 ? 40 : k));
      }
    t->names[c] = strndup(p, k);
    if (!t->names[c]) return DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", name);
    t->n_cols = c + 1;
    for (size_t j = 0; j < c; j++)
      if (!strcmp(t->names[j], t->names[c]))
        return DPGD_FAIL(DPGD_EFORMAT, "%s: column '%s' appears twice", name, t->names[c]);
    p = q + 1;
  }
  return DPGD_OK;
}

/* One data row p (ll bytes, ending at le) of t, line lineno; grows t->v (capacity *cap
 * rows). */
static int csv_row(dpgd_csv *t, size_t *cap, const char *p, const char *le, size_t ll,
                   const char *name, size_t lineno)
{
  int st = DPGD_OK;
  size_t nf = 1;
  for (size_t i = 0; i < ll; i++) nf += p[i] == ',';
  if (nf != t->n_cols)
    return DPGD_FAIL(DPGD_EFORMAT, "%s:%zu: %zu fields, the header has %zu", name, lineno, nf,
                     t->n_cols);
  if (t->n_rows == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    double *nv = realloc(t->v, nc * t->n_cols * sizeof *nv);
    if (!nv) return DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", name);
    t->v = nv;
    *cap = nc;
  }
  const char *f = p;
  for (size_t c = 0; c < nf; c++) {
    const char *q = memchr(f, ',', (size_t)(le - f));
    if (!q) q = le;
    if (parse_field(&t->v[t->n_rows * t->n_cols + c], f, (size_t)(q - f))) {
      char b[48];
      st = DPGD_FAIL(DPGD_EFORMAT, "%s:%zu: column '%s': '%s' is not a finite number", name,
                     lineno, t->names[c], shown(b, f, (q - f) > 40 ? 40 : (size_t)(q - f)));
      break;
    }
    f = q + 1;
  }
  t->n_rows++;
  return st;
}

int dpgd_csv_parse(dpgd_csv **out, const char *buf, size_t len, const char *name)
{
  *out = NULL;
  dpgd_csv *t = calloc(1, sizeof *t);
  if (!t) return DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", name);
  const char *p = buf, *end = buf + len;
  size_t lineno = 0, cap = 0;
  int st = DPGD_OK, have_header = 0;
  while (p < end && !st) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    size_t ll = (size_t)(le - p);
    lineno++;
    if (memchr(p, '\0', ll)) {
      st = DPGD_FAIL(DPGD_EFORMAT, "%s:%zu: NUL byte (binary file?)", name, lineno);
    } else if (!have_header && ll > 0 && p[0] == '#') {
      /* comment before the header (points.csv says it is sensitive) */
    } else if (!have_header) {
      st = csv_header(t, p, ll, name);
      have_header = 1;
    } else if (ll == 0 || (ll == 1 && p[0] == '\r')) {
      st = DPGD_FAIL(DPGD_EFORMAT, "%s:%zu: empty line", name, lineno);
    } else {
      st = csv_row(t, &cap, p, le, ll, name, lineno);
    }
    p = nl ? nl + 1 : end;
  }
  if (!st && !have_header) st = DPGD_FAIL(DPGD_EFORMAT, "%s: empty file (no header)", name);
  if (st) {
    dpgd_csv_free(t);
    return st;
  }
  *out = t;
  return DPGD_OK;
}

int dpgd_csv_read(dpgd_csv **out, const char *path)
{
  *out = NULL;
  char *buf;
  size_t len;
  int st = dpgd_file_slurp(&buf, &len, path);
  if (st) return st;
  st = dpgd_csv_parse(out, buf, len, path);
  free(buf);
  return st;
}

/* ---- summary.json ------------------------------------------------------------------ */

typedef struct jp {
  const char *p, *end, *name;
} jp;

#define JSON_MAX_DEPTH 32

static int jfail(const jp *j, const char *what)
{
  const char *start = j->p;
  size_t k = (size_t)(j->end - j->p);
  if (k > 20) k = 20;
  if (j->p >= j->end)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: invalid JSON: %s at end of file", j->name, what);
  char b[48];
  return DPGD_FAIL(DPGD_EFORMAT, "%s: invalid JSON: %s near '%s'", j->name, what,
                   shown(b, start, k));
}

static void jws(jp *j)
{
  while (j->p < j->end && strchr(" \t\r\n", *j->p) && *j->p) j->p++;
}

static int jlit(jp *j, char c)
{
  jws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return 1;
  }
  return 0;
}

/* A string into buf (truncated to len - 1; buf may be NULL to skip). Escapes are kept
 * simple: \" \\ \/ \b \f \n \r \t and \uXXXX (written as '?'). */
static int jstring(jp *j, char *buf, size_t len)
{
  jws(j);
  if (j->p >= j->end || *j->p != '"') return jfail(j, "expected a string");
  j->p++;
  size_t n = 0;
  while (j->p < j->end && *j->p != '"') {
    char c = *j->p++;
    if ((unsigned char)c < 0x20) return jfail(j, "control character in a string");
    if (c == '\\') {
      if (j->p >= j->end) break;
      char e = *j->p++;
      if (e == 'u') {
        for (int i = 0; i < 4; i++, j->p++)
          if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
            return jfail(j, "bad \\u escape");
        c = '?';
      } else if (strchr("\"\\/", e) && e) {
        c = e;
      } else if (strchr("bfnrt", e) && e) {
        c = ' ';
      } else {
        return jfail(j, "bad escape");
      }
    }
    if (buf && n + 1 < len) buf[n++] = c;
  }
  if (j->p >= j->end) return jfail(j, "unterminated string");
  j->p++;
  if (buf && len) buf[n] = '\0';
  return DPGD_OK;
}

/* A number (JSON grammar) or null (NAN). */
static int jnumber(jp *j, double *v)
{
  jws(j);
  if (j->end - j->p >= 4 && !strncmp(j->p, "null", 4)) {
    j->p += 4;
    *v = NAN;
    return DPGD_OK;
  }
  const char *s = j->p;
  while (j->p < j->end && *j->p && strchr("0123456789+-.eE", *j->p)) j->p++;
  size_t k = (size_t)(j->p - s);
  if (k == 0 || k > 63 || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) {
    j->p = s;
    return jfail(j, "expected a number");
  }
  char tmp[64];
  memcpy(tmp, s, k);
  tmp[k] = '\0';
  char *e;
  errno = 0;
  double x = strtod(tmp, &e);
  if (e != tmp + k || errno == ERANGE || !isfinite(x)) {
    j->p = s;
    return jfail(j, "bad number");
  }
  *v = x;
  return DPGD_OK;
}

static int jskip(jp *j, int depth)
{
  if (depth > JSON_MAX_DEPTH) return jfail(j, "nested too deeply");
  jws(j);
  if (j->p >= j->end) return jfail(j, "expected a value");
  char c = *j->p;
  if (c == '"') return jstring(j, NULL, 0);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    j->p++;
    if (jlit(j, close)) return DPGD_OK;
    for (;;) {
      int st;
      if (c == '{') {
        if ((st = jstring(j, NULL, 0))) return st;
        if (!jlit(j, ':')) return jfail(j, "expected ':'");
      }
      if ((st = jskip(j, depth + 1))) return st;
      if (jlit(j, close)) return DPGD_OK;
      if (!jlit(j, ',')) return jfail(j, "expected ',' or a closing bracket");
    }
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t k = strlen(words[i]);
    if ((size_t)(j->end - j->p) >= k && !strncmp(j->p, words[i], k)) {
      j->p += k;
      return DPGD_OK;
    }
  }
  double v;
  return jnumber(j, &v);
}

/* Iterates over the members of an object: calls member(j, key, user) positioned at the
 * value, which must consume it. */
typedef int member_fn(jp *j, const char *key, void *user);

static int jobject(jp *j, member_fn *member, void *user)
{
  if (!jlit(j, '{')) return jfail(j, "expected an object");
  if (jlit(j, '}')) return DPGD_OK;
  for (;;) {
    char key[64];
    int st = jstring(j, key, sizeof key);
    if (st) return st;
    if (!jlit(j, ':')) return jfail(j, "expected ':'");
    if ((st = member(j, key, user))) return st;
    if (jlit(j, '}')) return DPGD_OK;
    if (!jlit(j, ',')) return jfail(j, "expected ',' or '}'");
  }
}

static int eps_member(jp *j, const char *key, void *user)
{
  dpgd_run_summary *s = user;
  int m = dpgd_acct_method_find(key);
  if (m < 0) return jskip(j, 1);
  double v;
  int st = jnumber(j, &v);
  if (st) return st;
  if (!isnan(v) && v < 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: eps.%s = %g is negative", j->name, key, v);
  s->eps[m] = v;
  return DPGD_OK;
}

/* "nonprivate": {...}: data-dependent figures outside the guarantee (the run's time). */
static int nonprivate_member(jp *j, const char *key, void *user)
{
  dpgd_run_summary *s = user;
  if (!strcmp(key, "wall_s")) return jnumber(j, &s->wall_s);
  return jskip(j, 1);
}

static int summary_member(jp *j, const char *key, void *user)
{
  dpgd_run_summary *s = user;
  static const struct {
    const char *key;
    size_t off;
  } nums[] = {
      {"steps", offsetof(dpgd_run_summary, steps)},
      {"selected_step", offsetof(dpgd_run_summary, selected_step)},
      {"sigma", offsetof(dpgd_run_summary, sigma)},
      {"clip", offsetof(dpgd_run_summary, clip)},
      {"budget", offsetof(dpgd_run_summary, budget)},
      {"delta", offsetof(dpgd_run_summary, delta)},
      {"mu", offsetof(dpgd_run_summary, mu)},
      {"test_acc", offsetof(dpgd_run_summary, test_acc)},
      {"wall_s", offsetof(dpgd_run_summary, wall_s)},
      {"seed", offsetof(dpgd_run_summary, seed)},
      {"n_train", offsetof(dpgd_run_summary, n_train)},
      {"n_test", offsetof(dpgd_run_summary, n_test)},
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if (!strcmp(key, nums[i].key)) return jnumber(j, (double *)((char *)s + nums[i].off));
  if (!strcmp(key, "algorithm")) return jstring(j, s->algorithm, sizeof s->algorithm);
  if (!strcmp(key, "model")) return jstring(j, s->model, sizeof s->model);
  if (!strcmp(key, "sampling")) return jstring(j, s->sampling, sizeof s->sampling);
  if (!strcmp(key, "rng")) return jstring(j, s->rng, sizeof s->rng);
  if (!strcmp(key, "eps")) return jobject(j, eps_member, s);
  if (!strcmp(key, "nonprivate")) return jobject(j, nonprivate_member, s);
  return jskip(j, 1);
}

int dpgd_run_summary_parse(dpgd_run_summary *s, const char *buf, size_t len, const char *name)
{
  memset(s, 0, sizeof *s);
  double *nums[] = {&s->steps,  &s->selected_step, &s->sigma,   &s->clip,
                    &s->budget, &s->delta,         &s->mu,      &s->test_acc,
                    &s->wall_s, &s->seed,          &s->n_train, &s->n_test};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) *nums[i] = NAN;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) s->eps[m] = NAN;
  jp j = {buf, buf + len, name};
  int st = jobject(&j, summary_member, s);
  if (st) return st;
  jws(&j);
  if (j.p != j.end) return jfail(&j, "text after the object");
  if (!strcmp(s->algorithm, "pnsgd"))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: a pnsgd run releases its last iterate only: no metrics to plot or "
                     "tabulate (eps by position: positions.csv; train/LASTITERATE.md)",
                     name);
  if (strcmp(s->algorithm, "filtered") && strcmp(s->algorithm, "plain"))
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"algorithm\" must be \"filtered\" or \"plain\"%s",
                     name, s->algorithm[0] ? "" : " (missing)");
  if (!s->sampling[0]) snprintf(s->sampling, sizeof s->sampling, "full");
  int poisson = !strcmp(s->sampling, "poisson") || !strcmp(s->sampling, "subset");
  if (!poisson && strcmp(s->sampling, "full"))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: \"sampling\" must be \"full\", \"poisson\" or \"subset\"", name);
  /* Subsampled (poisson, subset) runs are not GDP, nor are secure runs (discrete Gaussian
   * noise, docs/MATH.md 18): their "mu" is null. */
  int no_gdp = poisson || !strcmp(s->rng, "secure");
  if (!(s->mu >= 0) && !(no_gdp && isnan(s->mu)))
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"mu\" missing or negative", name);
  if (!(s->delta > 0 && s->delta < 1))
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"delta\" missing or outside (0,1)", name);
  if (!(s->test_acc >= 0 && s->test_acc <= 1))
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"test_acc\" missing or outside [0,1]", name);
  if (!(s->steps >= 0))
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"steps\" missing or negative", name);
  int any = 0;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) any |= !isnan(s->eps[m]);
  if (!any) return DPGD_FAIL(DPGD_EFORMAT, "%s: no \"eps\" value for any method", name);
  if (!isnan(s->wall_s) && s->wall_s < 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: \"wall_s\" is negative", name);
  return DPGD_OK;
}

int dpgd_run_summary_read(dpgd_run_summary *s, const char *path)
{
  char *buf;
  size_t len;
  int st = dpgd_file_slurp(&buf, &len, path);
  if (st) return st;
  st = dpgd_run_summary_parse(s, buf, len, path);
  free(buf);
  return st;
}

/* ---- the run directory -------------------------------------------------------------- */

/* Every value of column name lies in [lo, hi] (NAN allowed: not measured). */
static int check_col(const dpgd_csv *t, const char *name, double lo, double hi,
                     const char *file)
{
  int c = dpgd_csv_col(t, name);
  if (c < 0) return DPGD_OK;
  for (size_t r = 0; r < t->n_rows; r++) {
    double v = dpgd_csv_at(t, r, c);
    if (!isnan(v) && !(v >= lo && v <= hi))
      return DPGD_FAIL(DPGD_EFORMAT, "%s: row %zu: %s = %g is outside [%g, %g]", file, r + 1,
                       name, v, lo, hi);
  }
  return DPGD_OK;
}

static int check_metrics(const dpgd_csv *t, const char *file)
{
  int c = dpgd_csv_col(t, "step");
  if (c < 0) return DPGD_FAIL(DPGD_EFORMAT, "%s: no 'step' column", file);
  if (t->n_rows == 0) return DPGD_FAIL(DPGD_EFORMAT, "%s: no rows (run has no steps)", file);
  double prev = 0;
  for (size_t r = 0; r < t->n_rows; r++) {
    double s = dpgd_csv_at(t, r, c);
    if (!(s >= 1 && s == floor(s) && s > prev))
      return DPGD_FAIL(DPGD_EFORMAT,
                       "%s: row %zu: step must be a positive integer above the previous row's",
                       file, r + 1);
    prev = s;
  }
  int st = check_col(t, "test_acc", 0, 1, file);
  if (!st) st = check_col(t, "query_acc_noisy", -INFINITY, INFINITY, file);
  if (!st) st = check_col(t, "diag_active", 0, INFINITY, file);
  if (!st) st = check_col(t, "mu", 0, INFINITY, file);
  for (int m = 0; m < DPGD_ACCT_N_METHODS && !st; m++) {
    char col[48];
    snprintf(col, sizeof col, "eps_%s", dpgd_acct_method_name((dpgd_acct_method)m));
    st = check_col(t, col, 0, INFINITY, file);
  }
  return st;
}

static int check_points(const dpgd_csv *t, const char *file)
{
  if (dpgd_csv_col(t, "spend_frac") < 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: no 'spend_frac' column", file);
  /* s(i) <= B_norm holds to a few ulps (float summation); anything beyond is corrupt. */
  int st = check_col(t, "spend_frac", 0, 1 + 1e-9, file);
  if (!st) st = check_col(t, "spend", 0, INFINITY, file);
  return st;
}

static int join(char *buf, size_t len, const char *dir, const char *file)
{
  int k = snprintf(buf, len, "%s/%s", dir, file);
  if (k < 0 || (size_t)k >= len) return DPGD_FAIL(DPGD_EINVAL, "path too long: %s", dir);
  return DPGD_OK;
}

void dpgd_plot_run_clear(dpgd_plot_run *r)
{
  dpgd_csv_free(r->metrics);
  dpgd_csv_free(r->points);
  r->metrics = NULL;
  r->points = NULL;
}

int dpgd_plot_run_read(dpgd_plot_run *r, const char *dir)
{
  memset(r, 0, sizeof *r);
  size_t dl = strlen(dir);
  while (dl > 1 && dir[dl - 1] == '/') dl--;
  if (dl >= sizeof r->dir) return DPGD_FAIL(DPGD_EINVAL, "path too long: %s", dir);
  memcpy(r->dir, dir, dl);
  r->dir[dl] = '\0';
  const char *base = strrchr(r->dir, '/');
  const char *lab = base && base[1] ? base + 1 : r->dir;
  /* A sweep trial (DIR/<cell>/seed<k>, see dpgd sweep) is labelled <cell>/seed<k>: the
   * trials of different cells all end in seed1, seed2, ... */
  if (base && base > r->dir && strncmp(lab, "seed", 4) == 0 && lab[4] &&
      strspn(lab + 4, "0123456789") == strlen(lab + 4)) {
    const char *cell = base;
    while (cell > r->dir && cell[-1] != '/') cell--;
    if (cell < base) lab = cell;
  }
  snprintf(r->label, sizeof r->label, "%.*s", (int)(sizeof r->label - 1), lab);
  char path[1200];
  int st = join(path, sizeof path, r->dir, "summary.json");
  FILE *probe = st ? NULL : fopen(path, "rb");
  if (!st && !probe)
    return DPGD_FAIL(DPGD_EIO,
                     "%s: cannot open summary.json (%s): is it a finished run "
                     "directory?",
                     r->dir, strerror(errno));
  if (probe) fclose(probe);
  if (!st) st = dpgd_run_summary_read(&r->summary, path);
  if (!st) st = join(path, sizeof path, r->dir, "metrics.csv");
  if (!st) st = dpgd_csv_read(&r->metrics, path);
  if (!st) st = check_metrics(r->metrics, path);
  if (!st) st = join(path, sizeof path, r->dir, "points.csv");
  if (!st) {
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      st = dpgd_csv_read(&r->points, path);
      if (!st) st = check_points(r->points, path);
    }
  }
  if (st) dpgd_plot_run_clear(r);
  return st;
}
