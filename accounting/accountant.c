/* accountant.c -- the accountant object: a symbolic list of (mechanism, count) entries
 * (docs/MATH.md "Mechanisms"), with input validation and merging of consecutive equal
 * entries. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acct_internal.h"

dpgd_accountant *dpgd_acct_alloc(void)
{
  dpgd_acct_gsl_quiet();
  return calloc(1, sizeof(dpgd_accountant));
}

static void entry_clear(acct_entry *en)
{
  free(en->p);
  free(en->q);
  en->p = en->q = NULL;
}

void dpgd_acct_free(dpgd_accountant *a)
{
  if (!a) return;
  for (size_t i = 0; i < a->n; i++) entry_clear(&a->e[i]);
  free(a->e);
  free(a);
}

static int same_mechanism(const acct_entry *x, const acct_entry *y)
{
  if (x->kind != y->kind || x->par[0] != y->par[0] || x->par[1] != y->par[1] || x->k != y->k)
    return 0;
  if (x->kind == ACCT_DISCRETE)
    return !memcmp(x->p, y->p, x->k * sizeof(double)) &&
           !memcmp(x->q, y->q, x->k * sizeof(double));
  return 1;
}

int dpgd_acct_push(dpgd_accountant *a, const acct_entry *en)
{
  if (a->n > 0 && same_mechanism(&a->e[a->n - 1], en)) {
    acct_entry *last = &a->e[a->n - 1];
    if (last->count > UINT64_MAX - en->count)
      return DPGD_FAIL(DPGD_ERANGE, "release count overflows");
    last->count += en->count;
    return DPGD_OK;
  }
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 8;
    acct_entry *e = realloc(a->e, cap * sizeof *e);
    if (!e) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (accountant entries)");
    a->e = e;
    a->cap = cap;
  }
  acct_entry *dst = &a->e[a->n];
  *dst = *en;
  dst->p = dst->q = NULL;
  if (en->kind == ACCT_DISCRETE) {
    dst->p = malloc(en->k * sizeof(double));
    dst->q = malloc(en->k * sizeof(double));
    if (!dst->p || !dst->q) {
      entry_clear(dst);
      return DPGD_FAIL(DPGD_ENOMEM, "out of memory (discrete mechanism)");
    }
    memcpy(dst->p, en->p, en->k * sizeof(double));
    memcpy(dst->q, en->q, en->k * sizeof(double));
  }
  a->n++;
  return DPGD_OK;
}

dpgd_accountant *dpgd_acct_clone(const dpgd_accountant *a)
{
  if (!a) return NULL;
  dpgd_accountant *c = dpgd_acct_alloc();
  if (!c) return NULL;
  for (size_t i = 0; i < a->n; i++) {
    /* Pushed one by one: entries stored in `a` are already merged, so none merge. */
    if (dpgd_acct_push(c, &a->e[i])) {
      dpgd_acct_free(c);
      return NULL;
    }
  }
  return c;
}

static int check_common(const dpgd_accountant *a, uint64_t count)
{
  if (!a) return DPGD_FAIL(DPGD_EINVAL, "accountant is NULL");
  if (count < 1) return DPGD_FAIL(DPGD_EINVAL, "count must be >= 1");
  return DPGD_OK;
}

int dpgd_acct_add_gaussian(dpgd_accountant *a, double mu, uint64_t count)
{
  int st = check_common(a, count);
  if (st) return st;
  if (!(mu >= 0) || isinf(mu))
    return DPGD_FAIL(DPGD_EINVAL, "Gaussian mu must be finite and >= 0 (got %g)", mu);
  acct_entry en = {.kind = ACCT_GAUSSIAN, .count = count, .par = {mu, 0}};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_add_laplace(dpgd_accountant *a, double a0, uint64_t count)
{
  int st = check_common(a, count);
  if (st) return st;
  if (!(a0 > 0) || isinf(a0))
    return DPGD_FAIL(DPGD_EINVAL,
                     "Laplace a = sensitivity/scale must be finite and > 0 (got %g)", a0);
  acct_entry en = {.kind = ACCT_LAPLACE, .count = count, .par = {a0, 0}};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_add_rr(dpgd_accountant *a, double eps0, uint64_t count)
{
  int st = check_common(a, count);
  if (st) return st;
  if (!(eps0 > 0) || isinf(eps0))
    return DPGD_FAIL(DPGD_EINVAL, "randomized response eps0 must be finite and > 0 (got %g)",
                     eps0);
  acct_entry en = {.kind = ACCT_RR, .count = count, .par = {eps0, 0}};
  return dpgd_acct_push(a, &en);
}

/* Probability vectors within 1e-9 of sum 1, equal supports (a point with mass under one
 * distribution only has infinite privacy loss, which no method here represents). */
int dpgd_acct_add_discrete(dpgd_accountant *a, const double *p, const double *q, size_t k,
                           uint64_t count)
{
  int st = check_common(a, count);
  if (st) return st;
  if (!p || !q || k < 1)
    return DPGD_FAIL(DPGD_EINVAL, "discrete pair needs k >= 1 probabilities");
  double sp = 0, sq = 0;
  for (size_t i = 0; i < k; i++) {
    if (!(p[i] >= 0 && p[i] <= 1) || !(q[i] >= 0 && q[i] <= 1))
      return DPGD_FAIL(DPGD_EINVAL, "discrete pair: probability %zu is not in [0, 1]", i);
    if ((p[i] > 0) != (q[i] > 0))
      return DPGD_FAIL(DPGD_EINVAL,
                       "discrete pair: outcome %zu has mass under one distribution only "
                       "(infinite privacy loss)",
                       i);
    sp += p[i];
    sq += q[i];
  }
  if (fabs(sp - 1) > 1e-9 || fabs(sq - 1) > 1e-9)
    return DPGD_FAIL(DPGD_EINVAL, "discrete pair: p sums to %.12g and q to %.12g, not 1", sp,
                     sq);
  acct_entry en = {
      .kind = ACCT_DISCRETE, .count = count, .k = k, .p = (double *)p, .q = (double *)q};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_add_subsampled_gaussian(dpgd_accountant *a, double q, double sigma,
                                      uint64_t count)
{
  int st = check_common(a, count);
  if (st) return st;
  if (!(q >= 0 && q <= 1))
    return DPGD_FAIL(DPGD_EINVAL, "sampling rate q must lie in [0, 1] (got %g)", q);
  if (!(sigma > 0) || isinf(sigma))
    return DPGD_FAIL(DPGD_EINVAL, "noise multiplier sigma must be finite and > 0 (got %g)",
                     sigma);
  if (dpgd_acct_replace_one(a))
    return DPGD_FAIL(DPGD_EINVAL, "a subsampled entry under add/remove neighbours cannot be "
                                  "composed with a replace-one entry");
  if (q == 0) return dpgd_acct_add_gaussian(a, 0, count); /* samples no one: mu = 0 */
  if (q == 1) return dpgd_acct_add_gaussian(a, 1 / sigma, count);
  acct_entry en = {.kind = ACCT_SUBSAMPLED, .count = count, .par = {q, sigma}};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_all_gaussian(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind != ACCT_GAUSSIAN) return 0;
  return 1;
}

/* The entries whose zCDP is mu^2/2: the Gaussian and the discrete Gaussian (docs/MATH.md
 * "Discrete Gaussian"); the exact method refuses the latter before reading mu. */
static int zcdp_kind(acct_kind k) { return k == ACCT_GAUSSIAN || k == ACCT_DGAUSS; }

int dpgd_acct_all_zcdp(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (!zcdp_kind(a->e[i].kind)) return 0;
  return 1;
}

double dpgd_acct_gauss_mu2(const dpgd_accountant *a)
{
  double s = 0;
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_GAUSSIAN)
      s += (double)a->e[i].count * a->e[i].par[0] * a->e[i].par[0];
  return s;
}

/* sqrt(sum count mu_j^2) scaled by the largest mu_j (neither mu_j^2 underflows nor the
 * sum overflows); pad = 1 rounds it up past the sum's, the scaling's and the root's
 * rounding (GDP.md section 4). */
static double gauss_mu(const dpgd_accountant *a, int pad)
{
  double m = 0, s = 0;
  for (size_t i = 0; i < a->n; i++)
    if (zcdp_kind(a->e[i].kind)) m = fmax(m, a->e[i].par[0]);
  if (m == 0) return 0;
  for (size_t i = 0; i < a->n; i++)
    if (zcdp_kind(a->e[i].kind)) {
      double r = a->e[i].par[0] / m;
      s += (double)a->e[i].count * r * r;
    }
  if (!pad) return m * sqrt(s);
  s *= 1 + 4 * ((double)a->n + 2) * DBL_EPSILON;
  return m * sqrt(s) * (1 + 4 * DBL_EPSILON);
}

double dpgd_acct_gauss_mu_up(const dpgd_accountant *a) { return gauss_mu(a, 1); }

double dpgd_acct_zcdp_mu(const dpgd_accountant *a)
{
  if (!a || !dpgd_acct_all_zcdp(a)) return NAN;
  return gauss_mu(a, 0);
}

double dpgd_acct_gdp_mu(const dpgd_accountant *a)
{
  if (!a || !dpgd_acct_all_gaussian(a)) return NAN;
  return gauss_mu(a, 0);
}

size_t dpgd_acct_n_entries(const dpgd_accountant *a) { return a ? a->n : 0; }

uint64_t dpgd_acct_n_releases(const dpgd_accountant *a)
{
  uint64_t s = 0;
  if (!a) return 0;
  for (size_t i = 0; i < a->n; i++) s += a->e[i].count;
  return s;
}
