/* sweep_spec.c -- what a sweep runs: configs x grid of overrides x seeds, from the
 * command line or a .sweep file (INI), the cells' names and overrides, and a check of
 * every cell's configuration before anything starts. */
#include "plot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "dpgd_config.h"

void dpgd_sweep_init(dpgd_sweep *s)
{
  memset(s, 0, sizeof *s);
  s->jobs = 1;
}

void dpgd_sweep_clear(dpgd_sweep *s)
{
  for (size_t i = 0; i < s->n_configs; i++) free(s->configs[i]);
  for (size_t i = 0; i < s->n_sets; i++) free(s->sets[i]);
  for (size_t d = 0; d < s->n_dims; d++)
    for (size_t v = 0; v < s->dims[d].n_values; v++) free(s->dims[d].values[v]);
  free(s->configs);
  free(s->sets);
  dpgd_sweep_init(s);
}

static int push(char ***list, size_t *n, const char *text, size_t len)
{
  char **nl = realloc(*list, (*n + 1) * sizeof *nl);
  if (!nl) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  *list = nl;
  nl[*n] = strndup(text, len);
  if (!nl[*n]) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  (*n)++;
  return DPGD_OK;
}

int dpgd_sweep_add_config(dpgd_sweep *s, const char *path)
{
  if (!path || !*path) return DPGD_FAIL(DPGD_EINVAL, "empty config path");
  return push(&s->configs, &s->n_configs, path, strlen(path));
}

/* "section.key" of an assignment: a dot before the '=', something on each side. */
static int check_key(const char *a, size_t klen, const char *what)
{
  const char *dot = memchr(a, '.', klen);
  if (!klen || !dot || dot == a || dot == a + klen - 1)
    return DPGD_FAIL(DPGD_EINVAL, "%s '%s': expected section.key=value", what, a);
  for (size_t i = 0; i < klen; i++)
    if (a[i] == ' ' || a[i] == '/' || a[i] == ',')
      return DPGD_FAIL(DPGD_EINVAL, "%s '%s': bad character in the key", what, a);
  return DPGD_OK;
}

int dpgd_sweep_add_set(dpgd_sweep *s, const char *a)
{
  const char *eq = strchr(a, '=');
  int st = eq ? check_key(a, (size_t)(eq - a), "--set")
              : DPGD_FAIL(DPGD_EINVAL, "--set '%s': expected section.key=value", a);
  if (st) return st;
  return push(&s->sets, &s->n_sets, a, strlen(a));
}

int dpgd_sweep_add_grid(dpgd_sweep *s, const char *spec)
{
  const char *eq = strchr(spec, '=');
  if (!eq) return DPGD_FAIL(DPGD_EINVAL, "--grid '%s': expected section.key=v1,v2,...", spec);
  size_t klen = (size_t)(eq - spec);
  int st = check_key(spec, klen, "--grid");
  if (st) return st;
  if (klen >= sizeof s->dims[0].key)
    return DPGD_FAIL(DPGD_EINVAL, "--grid '%s': key too long", spec);
  if (s->n_dims == DPGD_SWEEP_MAX_DIMS)
    return DPGD_FAIL(DPGD_EINVAL, "--grid: at most %d grid keys", DPGD_SWEEP_MAX_DIMS);
  for (size_t d = 0; d < s->n_dims; d++)
    if (strlen(s->dims[d].key) == klen && !strncmp(s->dims[d].key, spec, klen))
      return DPGD_FAIL(DPGD_EINVAL, "--grid: key %.*s given twice", (int)klen, spec);
  dpgd_sweep_dim *dim = &s->dims[s->n_dims];
  memset(dim, 0, sizeof *dim);
  memcpy(dim->key, spec, klen);
  const char *p = eq + 1;
  for (;;) {
    size_t k = strcspn(p, ",");
    while (k && p[k - 1] == ' ') k--;
    if (!k) st = DPGD_FAIL(DPGD_EINVAL, "--grid '%s': empty value", spec);
    else if (dim->n_values == DPGD_SWEEP_MAX_VALUES)
      st =
          DPGD_FAIL(DPGD_EINVAL, "--grid '%s': at most %d values", spec, DPGD_SWEEP_MAX_VALUES);
    for (size_t v = 0; !st && v < dim->n_values; v++)
      if (strlen(dim->values[v]) == k && !strncmp(dim->values[v], p, k))
        st = DPGD_FAIL(DPGD_EINVAL, "--grid '%s': value %.*s given twice", spec, (int)k, p);
    if (!st && !(dim->values[dim->n_values] = strndup(p, k)))
      st = DPGD_FAIL(DPGD_ENOMEM, "out of memory");
    if (st) break;
    dim->n_values++;
    p += strcspn(p, ",");
    if (!*p) break;
    p++;
    while (*p == ' ') p++;
  }
  if (st) {
    for (size_t v = 0; v < dim->n_values; v++) free(dim->values[v]);
    return st;
  }
  s->n_dims++;
  return DPGD_OK;
}

static int parse_u64(uint64_t *v, const char *p, size_t k)
{
  if (!k || k > 19) return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < k; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    x = x * 10 + (uint64_t)(p[i] - '0');
  }
  *v = x;
  return 0;
}

int dpgd_sweep_parse_seeds(dpgd_sweep *s, const char *spec)
{
  const char *p = spec;
  if (!*p) return DPGD_FAIL(DPGD_EINVAL, "--seeds: empty list");
  while (*p) {
    size_t k = strcspn(p, ",");
    const char *dash = memchr(p, '-', k);
    uint64_t a, b;
    int bad = dash ? parse_u64(&a, p, (size_t)(dash - p)) ||
                         parse_u64(&b, dash + 1, k - (size_t)(dash - p) - 1) || b < a
                   : parse_u64(&a, p, k);
    if (!dash) b = a;
    if (bad)
      return DPGD_FAIL(DPGD_EINVAL,
                       "--seeds '%s': '%.*s' is not a seed or a range a-b (a <= b)", spec,
                       (int)k, p);
    if (b - a >= DPGD_SWEEP_MAX_SEEDS || s->n_seeds + (b - a + 1) > DPGD_SWEEP_MAX_SEEDS)
      return DPGD_FAIL(DPGD_EINVAL, "--seeds '%s': more than %d seeds", spec,
                       DPGD_SWEEP_MAX_SEEDS);
    for (uint64_t x = a;; x++) {
      for (size_t i = 0; i < s->n_seeds; i++)
        if (s->seeds[i] == x)
          return DPGD_FAIL(DPGD_EINVAL, "--seeds '%s': seed %llu given twice", spec,
                           (unsigned long long)x);
      s->seeds[s->n_seeds++] = x;
      if (x == b) break;
    }
    p += k + (p[k] == ',');
  }
  return DPGD_OK;
}

/* ---- .sweep files ------------------------------------------------------------------ */

typedef struct load_ctx {
  dpgd_sweep *s;
  const char *path;
  size_t dirlen; /* length of the .sweep file's folder prefix, with its '/' */
  int seeds_given;
  int st;
  char why[600];
} load_ctx;

static int on_key(void *user, const char *section, const char *name, const char *value)
{
  load_ctx *c = user;
  dpgd_sweep *s = c->s;
  int st = DPGD_OK;
  if (strcmp(section, "sweep")) {
    st = DPGD_FAIL(DPGD_EINVAL, "unknown section [%s] (a .sweep file has [sweep])", section);
  } else if (!strcmp(name, "config")) {
    /* one or more paths, separated by spaces; relative to the .sweep file */
    const char *p = value;
    while (*p && !st) {
      size_t k = strcspn(p, " \t");
      if (k) {
        char path[2048];
        int w = p[0] == '/' ? snprintf(path, sizeof path, "%.*s", (int)k, p)
                            : snprintf(path, sizeof path, "%.*s%.*s", (int)c->dirlen, c->path,
                                       (int)k, p);
        st = w < 0 || (size_t)w >= sizeof path ? DPGD_FAIL(DPGD_EINVAL, "config path too long")
                                               : dpgd_sweep_add_config(s, path);
      }
      p += k;
      while (*p == ' ' || *p == '\t') p++;
    }
  } else if (!strcmp(name, "set")) {
    st = dpgd_sweep_add_set(s, value);
  } else if (!strcmp(name, "grid")) {
    st = dpgd_sweep_add_grid(s, value);
  } else if (!strcmp(name, "seeds")) {
    if (c->seeds_given++) st = DPGD_FAIL(DPGD_EINVAL, "seeds given twice");
    else st = dpgd_sweep_parse_seeds(s, value);
  } else if (!strcmp(name, "jobs")) {
    uint64_t j;
    if (parse_u64(&j, value, strlen(value)) || j < 1 || j > 256)
      st = DPGD_FAIL(DPGD_EINVAL, "jobs = '%s': expected 1..256", value);
    else s->jobs = (size_t)j;
  } else if (!strcmp(name, "out")) {
    if (!*value || strlen(value) >= sizeof s->out)
      st = DPGD_FAIL(DPGD_EINVAL, "out = '%s': empty or too long", value);
    else snprintf(s->out, sizeof s->out, "%s", value);
  } else {
    st = DPGD_FAIL(DPGD_EINVAL, "unknown key '%s' (config, set, grid, seeds, jobs, out)", name);
  }
  if (st) {
    c->st = st;
    snprintf(c->why, sizeof c->why, "%s", dpgd_error_last());
    return 0;
  }
  return 1;
}

int dpgd_sweep_load(dpgd_sweep *s, const char *path)
{
  load_ctx c = {s, path, 0, 0, DPGD_OK, ""};
  const char *slash = strrchr(path, '/');
  c.dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  FILE *f = fopen(path, "r");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", path, strerror(errno));
  int line = ini_parse_file(f, on_key, &c);
  fclose(f);
  if (line < 0) return DPGD_FAIL(DPGD_EIO, "cannot read %s", path);
  if (line > 0 && c.st) return DPGD_FAIL(c.st, "%s:%d: %s", path, line, c.why);
  if (line > 0) return DPGD_FAIL(DPGD_EFORMAT, "%s:%d: malformed line", path, line);
  if (!s->n_configs) return DPGD_FAIL(DPGD_EINVAL, "%s: no config = ... line", path);
  return DPGD_OK;
}

/* ---- cells -------------------------------------------------------------------------- */

static size_t grid_size(const dpgd_sweep *s)
{
  size_t g = 1;
  for (size_t d = 0; d < s->n_dims; d++) g *= s->dims[d].n_values;
  return g;
}

size_t dpgd_sweep_n_cells(const dpgd_sweep *s) { return s->n_configs * grid_size(s); }

const char *dpgd_sweep_cell_config(const dpgd_sweep *s, size_t c)
{
  return s->configs[c / grid_size(s)];
}

/* Index of dim d's value in cell c: the last dim varies fastest. */
static size_t value_index(const dpgd_sweep *s, size_t c, size_t d)
{
  size_t r = c % grid_size(s);
  for (size_t e = s->n_dims; e-- > d + 1;) r /= s->dims[e].n_values;
  return r % s->dims[d].n_values;
}

int dpgd_sweep_cell_override(char *buf, size_t len, const dpgd_sweep *s, size_t c, size_t d)
{
  int k = snprintf(buf, len, "%s=%s", s->dims[d].key, s->dims[d].values[value_index(s, c, d)]);
  if (k < 0 || (size_t)k >= len) return DPGD_FAIL(DPGD_EINVAL, "grid value too long");
  return DPGD_OK;
}

int dpgd_sweep_cell_name(char *buf, size_t len, const dpgd_sweep *s, size_t c)
{
  const char *cfg = dpgd_sweep_cell_config(s, c);
  const char *base = strrchr(cfg, '/');
  base = base ? base + 1 : cfg;
  size_t k = strlen(base);
  if (k > 4 && !strcmp(base + k - 4, ".ini")) k -= 4;
  size_t n = 0;
  int over = k + 1 > len;
  if (!over) {
    memcpy(buf, base, k);
    n = k;
  }
  for (size_t d = 0; d < s->n_dims && !over; d++) {
    char kv[600];
    int st = dpgd_sweep_cell_override(kv, sizeof kv, s, c, d);
    if (st) return st;
    size_t m = strlen(kv);
    if (n + 1 + m + 1 > len) {
      over = 1;
      break;
    }
    buf[n++] = '+';
    memcpy(buf + n, kv, m);
    n += m;
  }
  if (over || !n) return DPGD_FAIL(DPGD_EINVAL, "cell name of %s too long or empty", cfg);
  buf[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '/' || buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\'') buf[i] = '_';
  if (buf[0] == '.') buf[0] = '_';
  return DPGD_OK;
}

int dpgd_sweep_check(const dpgd_sweep *s)
{
  size_t n = dpgd_sweep_n_cells(s);
  if (!n) return DPGD_FAIL(DPGD_EINVAL, "nothing to run: no config given");
  if (!s->n_seeds) return DPGD_FAIL(DPGD_EINVAL, "nothing to run: no seeds");
  for (size_t c = 0; c < n; c++) {
    char name[512], other[512], kv[600];
    int st = dpgd_sweep_cell_name(name, sizeof name, s, c);
    for (size_t e = 0; !st && e < c; e++) {
      st = dpgd_sweep_cell_name(other, sizeof other, s, e);
      if (!st && !strcmp(name, other))
        st = DPGD_FAIL(DPGD_EINVAL,
                       "two cells are both named %s (configs with the same "
                       "file name?)",
                       name);
    }
    if (st) return st;
    dpgd_config cfg;
    dpgd_config_defaults(&cfg);
    const char *path = dpgd_sweep_cell_config(s, c);
    st = dpgd_config_load(&cfg, path);
    for (size_t i = 0; !st && i < s->n_sets; i++) st = dpgd_config_set(&cfg, s->sets[i]);
    for (size_t d = 0; !st && d < s->n_dims; d++) {
      st = dpgd_sweep_cell_override(kv, sizeof kv, s, c, d);
      if (!st) st = dpgd_config_set(&cfg, kv);
    }
    snprintf(kv, sizeof kv, "%s=%llu", DPGD_CONFIG_KEY(train_seed),
             (unsigned long long)s->seeds[0]);
    if (!st) st = dpgd_config_set(&cfg, kv);
    if (!st) st = dpgd_config_validate(&cfg);
    if (st) {
      char why[600];
      snprintf(why, sizeof why, "%s", dpgd_error_last());
      return DPGD_FAIL(st, "cell %s: %s", name, why);
    }
  }
  return DPGD_OK;
}
