/* queries_csv.c -- the input of 'dpgd queries': a CSV of users x queries (train/cli/
 * plot.h's numeric reader) checked (every value in [0, 1], no empty field) and laid
 * out as queries: a scalar query is a column without a ".<digits>" suffix, a vector
 * query the consecutive columns NAME.0, NAME.1, ...; every query has the same dim. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_core.h"
#include "queries_csv.h"

/* Longest piece of a column name quoted in an error message. */
#define NAME_SHOWN 60

/* The length of a query name as error messages quote it. */
static int shown(size_t len) { return (int)(len < NAME_SHOWN ? len : NAME_SHOWN); }

/* Splits a column name into a query name (the first *base bytes) and a component index
 * *j (-1 for a scalar query: no ".<digits>" suffix). Returns 0, or -1 for a vector
 * component whose index is not written plainly (leading zero, too long) or whose query
 * name is empty. */
static int split_name(const char *s, size_t *base, long *j)
{
  const char *dot = strrchr(s, '.');
  size_t nd = dot ? strlen(dot + 1) : 0;
  *base = strlen(s);
  *j = -1;
  if (!nd || strspn(dot + 1, "0123456789") != nd) return 0;
  *base = (size_t)(dot - s);
  if (*base == 0 || nd > 9 || (nd > 1 && dot[1] == '0')) return -1;
  *j = strtol(dot + 1, NULL, 10);
  return 0;
}

/* The number of columns, from column c (component 0 of a query named by its first base
 * bytes), that are its components 0, 1, ... in order. */
static int vector_dim(const dpgd_csv *t, size_t c, size_t base, const char *file, size_t *d)
{
  const char *name = t->names[c];
  for (*d = 1; c + *d < t->n_cols; ++*d) {
    const char *next = t->names[c + *d];
    size_t b;
    long j;
    if (split_name(next, &b, &j) || j < 0 || b != base || strncmp(next, name, base)) break;
    if ((size_t)j != *d)
      return DPGD_FAIL(DPGD_EFORMAT,
                       "%s: column '%.*s' follows '%.*s': the components of a vector "
                       "query are the consecutive columns %.*s.0, %.*s.1, ...",
                       file, NAME_SHOWN, next, NAME_SHOWN, t->names[c + *d - 1], shown(base),
                       name, shown(base), name);
  }
  return DPGD_OK;
}

/* Query t starts at column c; sets its length in columns *d. */
static int layout_query(dpgd_qlayout *L, const dpgd_csv *t, size_t c, const char *file,
                        size_t *d)
{
  const char *name = t->names[c];
  size_t base;
  long j;
  *d = 1;
  if (split_name(name, &base, &j))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: column '%.*s': a vector component is NAME.<index>, with a "
                     "non-empty NAME and the index 0, 1, ... written plainly (no leading "
                     "zeros, at most 9 digits)",
                     file, NAME_SHOWN, name);
  if (j > 0)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s: column '%.*s' is not preceded by the components %.*s.0, ... of "
                     "its vector query",
                     file, NAME_SHOWN, name, shown(base), name);
  if (j == 0) {
    int st = vector_dim(t, c, base, file, d);
    if (st) return st;
  }
  L->col[L->n] = c;
  L->len[L->n] = base;
  return DPGD_OK;
}

/* Two queries may not share a name (e.g. a column q and the columns q.0, q.1). */
static int layout_unique(const dpgd_qlayout *L, const dpgd_csv *t, const char *file)
{
  for (size_t a = 0; a < L->n; a++)
    for (size_t b = 0; b < a; b++)
      if (L->len[a] == L->len[b] &&
          !strncmp(t->names[L->col[a]], t->names[L->col[b]], L->len[a]))
        return DPGD_FAIL(DPGD_EFORMAT, "%s: two queries are named '%.*s'", file,
                         shown(L->len[a]), t->names[L->col[a]]);
  return DPGD_OK;
}

static int layout_build(dpgd_qlayout *L, const dpgd_csv *t, const char *file)
{
  *L = (dpgd_qlayout){0};
  if (!t->n_cols) return DPGD_FAIL(DPGD_EFORMAT, "%s: no columns (no queries)", file);
  L->col = calloc(2 * t->n_cols, sizeof *L->col);
  if (!L->col) return DPGD_FAIL(DPGD_ENOMEM, "out of memory laying out %s", file);
  L->len = L->col + t->n_cols;
  for (size_t c = 0, d; c < t->n_cols; c += d) {
    int st = layout_query(L, t, c, file, &d);
    if (st) return st;
    if (L->n && d != L->dim)
      return DPGD_FAIL(DPGD_EFORMAT,
                       "%s: query '%.*s' has dim %zu but '%.*s' has dim %zu: every query "
                       "must have the same dim",
                       file, shown(L->len[L->n]), t->names[c], d, shown(L->len[0]), t->names[0],
                       L->dim);
    L->dim = d;
    L->n++;
  }
  return layout_unique(L, t, file);
}

/* Every value is a number in [0, 1]: no empty field (the reader's NAN), no NaN. */
static int check_values(const dpgd_csv *t, const char *file)
{
  if (!t->n_rows) return DPGD_FAIL(DPGD_EFORMAT, "%s: no data rows (one row per user)", file);
  for (size_t r = 0; r < t->n_rows; r++)
    for (size_t c = 0; c < t->n_cols; c++) {
      double v = t->v[r * t->n_cols + c];
      if (isnan(v))
        return DPGD_FAIL(DPGD_EFORMAT, "%s: data row %zu, column '%.*s': empty field", file,
                         r + 1, NAME_SHOWN, t->names[c]);
      if (!(v >= 0 && v <= 1))
        return DPGD_FAIL(DPGD_EFORMAT,
                         "%s: data row %zu, column '%.*s': value %.17g outside [0, 1]", file,
                         r + 1, NAME_SHOWN, t->names[c], v);
    }
  return DPGD_OK;
}

int dpgd_qlayout_build(dpgd_qlayout *L, const dpgd_csv *t, const char *file)
{
  *L = (dpgd_qlayout){0};
  int st = check_values(t, file);
  if (!st) st = layout_build(L, t, file);
  if (st) dpgd_qlayout_free(L);
  return st;
}

void dpgd_qlayout_free(dpgd_qlayout *L)
{
  free(L->col);
  *L = (dpgd_qlayout){0};
}

int dpgd_qcolumn_value(size_t user, double *value, void *ctx)
{
  const dpgd_qcolumn *c = ctx;
  memcpy(value, &c->t->v[user * c->t->n_cols + c->col], c->dim * sizeof *value);
  return 0;
}
