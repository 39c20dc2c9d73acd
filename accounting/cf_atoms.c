/* cf_atoms.c -- */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_sf_gamma.h>

#include "cf_internal.h"

/* ---- exact enumeration of the atomic part ---- */

static int atom_cmp(const void *x, const void *y)
{
  double a = ((const atom *)x)->l, b = ((const atom *)y)->l;
  return (a > b) - (a < b);
}

/* Atoms of the n-fold composition of one entry (multinomial over its outcomes),
 * appended to out; *m counts them. k <= 2 uses the binomial directly. */
static void nfold_rec(const double *l, const double *lw, size_t k, uint64_t n, size_t i,
                      double loss, double logw, atom *out, size_t *m)
{
  if (i == k - 1) {
    out[*m].l = loss + (double)n * l[i];
    out[*m].lw = logw + (n ? (double)n * lw[i] : 0) - gsl_sf_lnfact((unsigned)n);
    (*m)++;
    return;
  }
  for (uint64_t j = 0; j <= n; j++)
    nfold_rec(l, lw, k, n - j, i + 1, loss + (double)j * l[i],
              logw + (j ? (double)j * lw[i] : 0) - gsl_sf_lnfact((unsigned)j), out, m);
}

/* Number of atoms of the n-fold composition of k outcomes: C(n + k - 1, k - 1), or
 * +inf beyond the cap. */
static double nfold_size(size_t k, uint64_t n)
{
  double s = 1;
  for (size_t i = 1; i < k; i++) {
    s = s * (double)(n + i) / (double)i;
    if (s > ACCT_ENUM_MAX_ATOMS) return INFINITY;
  }
  return s;
}

/* An entry's atoms with log weights, formed in log space where the weight would
 * underflow (randomized response and Laplace at a large parameter: weight e^{-eps0}). */
static size_t entry_log_atoms(const acct_entry *en, int dir, double *l, double *lw)
{
  size_t k = dpgd_acct_cf_entry_atoms(en, dir, l, lw);
  for (size_t j = 0; j < k; j++) lw[j] = log(lw[j]);
  if (en->kind == ACCT_RR) { /* p = 1/(1 + e^{-eps0}), 1 - p = p e^{-eps0} */
    lw[0] = -log1p(exp(-en->par[0]));
    lw[1] = lw[0] - en->par[0];
  } else if (en->kind == ACCT_LAPLACE) {
    lw[1] = -M_LN2 - en->par[0];
  }
  return k;
}

void dpgd_acct_cf_atoms_free(atoms *at)
{
  for (size_t j = 0; at->one && j < at->nlap; j++) free(at->one[j].at);
  free(at->at), free(at->one), free(at->lap_a), free(at->lap_n), free(at->lap_en);
  memset(at, 0, sizeof *at);
}

int dpgd_acct_cf_enumerate(const dpgd_accountant *a, int dir, atoms *res)
{
  memset(res, 0, sizeof *res);
  double total = 1;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    if (en->kind == ACCT_GAUSSIAN || en->kind == ACCT_SUBSAMPLED) return DPGD_OK;
    size_t k = en->kind == ACCT_DISCRETE ? en->k : 2;
    if (en->count > UINT32_MAX) total = INFINITY;
    else total *= nfold_size(k, en->count);
  }
  if (!(total <= ACCT_ENUM_MAX_ATOMS)) {
    res->too_big = 1;
    return DPGD_OK;
  }
  size_t cap = (size_t)total;
  atom *cur = malloc(cap * sizeof *cur), *nxt = malloc(cap * sizeof *nxt);
  atom *one = NULL;
  double *l = NULL, *lw = NULL;
  size_t kmax = 2;
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_DISCRETE && a->e[i].k > kmax) kmax = a->e[i].k;
  l = malloc(kmax * sizeof *l);
  lw = malloc(kmax * sizeof *lw);
  one = malloc(cap * sizeof *one);
  if (!cur || !nxt || !l || !lw || !one) {
    free(cur), free(nxt), free(l), free(lw), free(one);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (enumerating %zu atoms)", cap);
  }
  size_t m = 1;
  cur[0].l = 0, cur[0].lw = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    size_t k = entry_log_atoms(en, dir, l, lw);
    size_t m1 = 0;
    nfold_rec(l, lw, k, en->count, 0, 0, gsl_sf_lnfact((unsigned)en->count), one, &m1);
    size_t mm = 0;
    for (size_t x = 0; x < m; x++)
      for (size_t y = 0; y < m1; y++) {
        nxt[mm].l = cur[x].l + one[y].l;
        nxt[mm].lw = cur[x].lw + one[y].lw;
        mm++;
      }
    atom *t = cur;
    cur = nxt, nxt = t;
    m = mm;
  }
  free(nxt), free(l), free(lw), free(one);
  qsort(cur, m, sizeof *cur, atom_cmp);
  res->at = cur;
  res->n = m;
  return DPGD_OK;
}

/* 1 for the entries with atoms and a continuous part (Laplace, without-replacement
 * Laplace). */
static int has_cont(const acct_entry *en)
{
  return en->kind == ACCT_LAPLACE || en->kind == ACCT_WOR_AR_LAPLACE;
}

/* The atomic part as dpgd_acct_cf_enumerate() gives it and, when it exists and some entry is Laplace,
 * the atoms of the composition less one release of each Laplace entry (see
 * peel_delta). */
int dpgd_acct_cf_enumerate_peel(const dpgd_accountant *a, int dir, atoms *res)
{
  int st = dpgd_acct_cf_enumerate(a, dir, res);
  if (st || res->n == 0) return st;
  size_t nl = 0;
  for (size_t i = 0; i < a->n; i++) nl += has_cont(&a->e[i]);
  if (nl == 0) return DPGD_OK;
  dpgd_accountant tmp = *a;
  tmp.e = malloc(a->n * sizeof *tmp.e);
  res->one = calloc(nl, sizeof *res->one);
  res->lap_a = malloc(nl * sizeof *res->lap_a);
  res->lap_n = malloc(nl * sizeof *res->lap_n);
  res->lap_en = malloc(nl * sizeof *res->lap_en);
  res->dir = dir;
  if (!tmp.e || !res->one || !res->lap_a || !res->lap_n || !res->lap_en) {
    free(tmp.e);
    dpgd_acct_cf_atoms_free(res);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (Laplace atoms)");
  }
  res->nlap = nl;
  memcpy(tmp.e, a->e, a->n * sizeof *tmp.e); /* shallow: discrete p, q stay a's */
  for (size_t i = 0, j = 0; i < a->n && !st; i++) {
    if (!has_cont(&a->e[i])) continue;
    res->lap_en[j] = &a->e[i];
    res->lap_a[j] =
        dpgd_acct_wl_is(&a->e[i]) ? dpgd_acct_wl_cont_max(&a->e[i], dir) : a->e[i].par[0];
    res->lap_n[j] = (double)a->e[i].count;
    tmp.e[i].count--;
    st = dpgd_acct_cf_enumerate(&tmp, dir, &res->one[j++]); /* never larger than the whole */
    tmp.e[i].count++;
  }
  free(tmp.e);
  if (st) dpgd_acct_cf_atoms_free(res);
  return st;
}

/* sum_k w_k (1 - e^{eps - l_k})_+ over atoms with l_k > eps, with a bound on the
 * rounding error of the sum. */
double dpgd_acct_cf_atoms_delta(const atoms *at, double eps, double *err)
{
  size_t lo = 0, hi = at->n;
  while (lo < hi) { /* first atom with l > eps */
    size_t mid = (lo + hi) / 2;
    if (at->at[mid].l > eps) hi = mid;
    else lo = mid + 1;
  }
  double s = 0;
  for (size_t i = lo; i < at->n; i++) s += exp(at->at[i].lw) * -expm1(eps - at->at[i].l);
  /* each term relative 4 ulps; an exp that underflows loses less than DBL_MIN */
  *err = s * (at->n - lo + 8) * 4 * DBL_EPSILON + (double)(at->n - lo) * DBL_MIN;
  return s;
}

/* One Laplace release's continuous part, density e^{(l - a)/2}/4 on (-a, a), shifted by
 * an atom at m: int (1 - e^{eps - l}) e^{(l - m - a)/2}/4 over l in (max(eps, m - a), m + a)
 * = (1 - e^{-a})(1 - e^{eps - m})/2 for eps <= m - a, (1 - e^{(eps - m - a)/2})^2/2 up to
 * m + a, 0 beyond (both positive, no cancellation). */
static double lap_kernel(double a, double eps, double m)
{
  if (eps >= m + a) return 0;
  if (eps <= m - a) return 0.5 * -expm1(-a) * -expm1(eps - m);
  double d = -expm1((eps - m - a) / 2);
  return 0.5 * d * d;
}

/* delta of the terms of M = prod_j (D_j + C_j)^{n_j} with exactly one continuous factor
 * C_j (Laplace j's continuous part; D the atomic parts):
 * sum_j n_j sum_{atoms k of the composition less one release of j} w_k
 * lap_kernel(a_j, eps, l_k), with a bound on its rounding error. */
double dpgd_acct_cf_peel_delta(const atoms *at, double eps, double *err)
{
  double s = 0, nt = 8;
  for (size_t j = 0; j < at->nlap; j++) {
    const atoms *o = &at->one[j];
    double a = at->lap_a[j], sj = 0;
    size_t lo = 0, hi = o->n;
    while (lo < hi) { /* first atom with l + a > eps */
      size_t mid = (lo + hi) / 2;
      if (o->at[mid].l + a > eps) hi = mid;
      else lo = mid + 1;
    }
    const acct_entry *en = at->lap_en[j];
    for (size_t i = lo; i < o->n; i++)
      sj += exp(o->at[i].lw) * (dpgd_acct_wl_is(en)
                                    ? dpgd_acct_wl_kernel(en, at->dir, eps - o->at[i].l)
                                    : lap_kernel(a, eps, o->at[i].l));
    s += at->lap_n[j] * sj;
    nt += (double)(o->n - lo);
  }
  *err = s * nt * 8 * DBL_EPSILON;
  return s;
}
