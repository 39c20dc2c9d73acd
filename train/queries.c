/* queries.c -- adaptively chosen sparse linear queries under individual filtering (seed
 * 003, Theorem 1.2 and Corollary 4.7; train/QUERIES.md has the derivation). Each answer
 * is the exact sum of the users' capped values on the grid 2^-F, plus one Gaussian
 * vector (secure mode: one exact discrete Gaussian per coordinate on the integer sum);
 * each user's spend lives in the accountant's individual filter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_train.h"

#define GRID_MAX_BITS 40 /* finest grid: 2^-40 */
#define GRID_MIN_BITS 10 /* coarsest grid accepted: 2^-10 */

typedef unsigned __int128 u128;

struct dpgd_queries {
  dpgd_queries_params p;
  int bits;       /* F: values are integers in units of 2^-F */
  double sigma;   /* noise std, sqrt(B / (2 kappa)) rounded up */
  size_t count;   /* queries answered */
  dpgd_filter *f; /* GDP filter in squared-norm units, budget B */
  dpgd_rng *rng;
  double *value;  /* (dim) one user's value */
  int64_t *units; /* (dim) its capped value in units */
  int64_t *sum;   /* (dim) the exact sum in units */
  double *charge; /* (n) this query's charges, applied when every user is done */
  int discrete;   /* secure mode: exact discrete Gaussian noise on the integer sum */
  dpgd_dgauss dg; /* discrete: N_Z(0, sigma_grid^2), sigma_grid^2 = ceil((sigma 2^F)^2) */
};

static int params_ok(const dpgd_queries_params *p)
{
  if (!p) return DPGD_FAIL(DPGD_EINVAL, "queries: NULL parameters");
  if (p->n_users == 0 || p->dim == 0)
    return DPGD_FAIL(DPGD_EINVAL, "queries: %zu users of dimension %zu (need both > 0)",
                     p->n_users, p->dim);
  if (p->dim > (1u << 20))
    return DPGD_FAIL(DPGD_EINVAL, "queries: dimension %zu is above 2^20", p->dim);
  if (!(p->budget > 0) || !isfinite(p->budget))
    return DPGD_FAIL(DPGD_EINVAL, "queries: budget B_norm %g must be finite and > 0",
                     p->budget);
  if (!(p->kappa > 0) || !isfinite(p->kappa))
    return DPGD_FAIL(DPGD_EINVAL, "queries: kappa %g must be finite and > 0", p->kappa);
  if (!(p->clip > 0))
    return DPGD_FAIL(DPGD_EINVAL, "queries: clip %g must be > 0 (or infinite)", p->clip);
  if (p->rng != DPGD_RNG_RESEARCH && p->rng != DPGD_RNG_SECURE)
    return DPGD_FAIL(DPGD_EINVAL, "queries: unknown rng mode %d", p->rng);
  return DPGD_OK;
}

/* floor(log2 t) for t > 0, or GRID_MAX_BITS for t infinite. */
static int floor_log2(double t)
{
  int e = GRID_MAX_BITS + 1;
  if (isfinite(t)) frexp(t, &e); /* t = f 2^e with f in [1/2, 1): floor(log2 t) = e - 1 */
  return e - 1 > GRID_MAX_BITS ? GRID_MAX_BITS : e - 1;
}

/* The grid: the largest F <= 40 with n * m * 2^F <= 2^52, m >= every capped entry
 * (min(clip, sqrt(B)), with room for the rounding of the filter's cap), so that every
 * partial sum of the entries is an integer below 2^52 in units: exact in int64 and in
 * double. Secure mode also keeps the discrete noise's std within the sampler's range,
 * sigma 2^F <= 2^31 (dpgd_dgauss_from_std). */
static int grid_bits(const dpgd_queries_params *p, double sigma, int *bits)
{
  double m = fmin(p->clip, sqrt(p->budget)) * (1 + 0x1p-20);
  int b = floor_log2(0x1p52 / ((double)p->n_users * m) * (1 - 0x1p-20));
  if (b < GRID_MIN_BITS)
    return DPGD_FAIL(DPGD_EINVAL,
                     "queries: %zu users x value norm %g is too large for exact summation "
                     "(grid would be coarser than 2^-%d)",
                     p->n_users, fmin(p->clip, sqrt(p->budget)), GRID_MIN_BITS);
  if (p->rng == DPGD_RNG_SECURE) {
    int bn = floor_log2(0x1p31 / sigma * (1 - 0x1p-20));
    if (bn < GRID_MIN_BITS)
      return DPGD_FAIL(DPGD_EINVAL,
                       "queries: noise std %g is too large for the discrete sampler on a "
                       "grid of 2^-%d or finer (lower the budget or raise kappa)",
                       sigma, GRID_MIN_BITS);
    b = bn < b ? bn : b;
  }
  *bits = b;
  return DPGD_OK;
}

/* sigma = sqrt(B / (2 kappa)), rounded up: more noise is the private direction. */
static double noise_std(const dpgd_queries_params *p)
{
  return sqrt(p->budget / (2 * p->kappa)) * (1 + 0x1p-50);
}

int dpgd_queries_open(dpgd_queries **out, const dpgd_queries_params *p)
{
  if (!out) return DPGD_FAIL(DPGD_EINVAL, "queries: NULL output");
  *out = NULL;
  int bits = 0, rc = params_ok(p);
  if (!rc) rc = grid_bits(p, noise_std(p), &bits);
  if (rc) return rc;
  dpgd_queries *q = calloc(1, sizeof *q);
  if (!q) return DPGD_FAIL(DPGD_ENOMEM, "queries: no memory");
  q->p = *p;
  q->bits = bits;
  q->sigma = noise_std(p);
  q->discrete = p->rng == DPGD_RNG_SECURE;
  if (q->discrete && (rc = dpgd_dgauss_from_std(&q->dg, q->sigma, bits))) {
    free(q);
    return rc;
  }
  q->f = dpgd_filter_alloc(p->n_users, DPGD_FILTER_GDP, 1, NULL, &p->budget);
  q->rng = dpgd_rng_alloc(p->rng, &p->seed, DPGD_STREAM_QUERY);
  q->value = calloc(p->dim, sizeof *q->value);
  q->units = calloc(p->dim, sizeof *q->units);
  q->sum = calloc(p->dim, sizeof *q->sum);
  q->charge = calloc(p->n_users, sizeof *q->charge);
  if (!q->f || !q->rng || !q->value || !q->units || !q->sum || !q->charge) {
    dpgd_queries_free(q);
    return DPGD_FAIL(DPGD_ENOMEM, "queries: no memory for %zu users", p->n_users);
  }
  *out = q;
  return DPGD_OK;
}

void dpgd_queries_free(dpgd_queries *q)
{
  if (!q) return;
  dpgd_filter_free(q->f);
  dpgd_rng_free(q->rng);
  free(q->value);
  free(q->units);
  free(q->sum);
  free(q->charge);
  free(q);
}

/* N = sum of units[j]^2 exactly, or limit + 1 as soon as it passes limit (no overflow:
 * every square is below 2^105). */
static u128 units_sqnorm(const int64_t *units, size_t dim, u128 limit)
{
  u128 s = 0;
  for (size_t j = 0; j < dim && s <= limit; j++) {
    u128 a = (u128)(units[j] < 0 ? -(u128)units[j] : (u128)units[j]);
    s += a * a;
  }
  return s <= limit ? s : limit + 1;
}

/* units[j] = trunc(scale * w[j] * 2^F): toward zero, so never longer than the real
 * scale * w. |scale * w[j]| stays below the grid's bound m (callers). */
static void quantize(const double *w, size_t dim, double scale, int bits, int64_t *units)
{
  for (size_t j = 0; j < dim; j++) units[j] = (int64_t)trunc(ldexp(scale * w[j], bits));
}

/* The user's value capped to norm cap and quantized: its units and their squared norm N
 * with N <= limit = floor(fl(cap^2) 2^2F), checked exactly; 0 when no capped value fits
 * (then the user contributes nothing). v is finite and not all zero; mx = max |v_j|
 * and nw = ||v / mx|| as computed (in [1, sqrt(d)] up to rounding). */
static u128 cap_units(dpgd_queries *q, double mx, double nw, double cap, u128 limit)
{
  size_t d = q->p.dim;
  double *v = q->value;
  if (cap / nw >= mx) { /* unclipped (up to rounding): the value itself, rounded to zero */
    quantize(v, d, 1.0, q->bits, q->units);
    u128 n = units_sqnorm(q->units, d, limit);
    if (n <= limit) return n;
  }
  for (size_t j = 0; j < d; j++) v[j] /= mx; /* |v_j| <= 1: v is now the direction */
  double scale = cap / nw; /* then shrunk until the exact check passes (rarely needed) */
  for (int attempt = 0; attempt < 32; attempt++, scale *= 1 - 0x1p-24) {
    quantize(v, d, scale, q->bits, q->units);
    u128 n = units_sqnorm(q->units, d, limit);
    if (n <= limit) return n;
  }
  memset(q->units, 0, d * sizeof *q->units);
  return 0;
}

/* The smallest double >= n 2^-2F: the charge, never below the real squared norm. */
static double units_charge(u128 n, int bits)
{
  double x = (double)n;
  if ((u128)x < n) x = nextafter(x, INFINITY);
  return ldexp(x, -2 * bits);
}

/* One active user's contribution: its value from fn, capped by the filter and
 * quantized, added to q->sum; its charge to q->charge[i]. */
static int contribute(dpgd_queries *q, size_t i, dpgd_query_fn fn, void *ctx)
{
  size_t d = q->p.dim;
  memset(q->value, 0, d * sizeof *q->value);
  if (fn(i, q->value, ctx))
    return DPGD_FAIL(DPGD_EINVAL, "query %zu: the value of user %zu could not be computed",
                     q->count + 1, i);
  double mx = 0, ss = 0;
  for (size_t j = 0; j < d; j++) {
    double a = fabs(q->value[j]);
    if (!isfinite(a)) return DPGD_OK; /* infinitely long: contributes nothing */
    mx = a > mx ? a : mx;
  }
  if (mx == 0) return DPGD_OK;
  for (size_t j = 0; j < d; j++) ss += (q->value[j] / mx) * (q->value[j] / mx);
  double nw = sqrt(ss);
  /* want: the value's norm rounded up (or the budget's, which no cap exceeds) */
  double want = fmin(fmin(q->p.clip, mx * nw * (1 + 0x1p-40)), 2 * sqrt(q->p.budget));
  double cap = dpgd_filter_cap(q->f, i, want, 1.0);
  if (!(cap > 0)) return DPGD_OK;
  u128 limit = (u128)floor(ldexp(cap * cap, 2 * q->bits));
  u128 n = cap_units(q, mx, nw, cap, limit);
  if (n == 0) return DPGD_OK;
  for (size_t j = 0; j < d; j++) q->sum[j] += q->units[j];
  q->charge[i] = units_charge(n, q->bits);
  return DPGD_OK;
}

/* Secure mode's release: one exact discrete Gaussian per coordinate added to the int64
 * sum (bits from the query stream: getrandom), integer arithmetic only; the integer is
 * then written in value units, exactly (|x| <= 2^53, so x 2^-F is a double). Nothing is
 * written to answer on an error. */
static int discrete_release(dpgd_queries *q, double *answer)
{
  int rc = dpgd_dgauss_release(&q->dg, q->rng, q->sum, answer, q->p.dim, q->bits);
  for (size_t j = 0; j < q->p.dim && !rc; j++) /* the answers are exact */
    if (q->sum[j] > INT64_C(1) << 53 || q->sum[j] < -(INT64_C(1) << 53))
      rc = DPGD_FAIL(DPGD_ERANGE, "query %zu: noisy sum beyond 2^53 grid units", q->count);
  return rc;
}

int dpgd_queries_answer_fn(dpgd_queries *q, dpgd_query_fn fn, void *ctx, double *answer)
{
  if (!q || !fn || !answer) return DPGD_FAIL(DPGD_EINVAL, "queries: NULL argument");
  size_t n = q->p.n_users, d = q->p.dim;
  memset(q->sum, 0, d * sizeof *q->sum);
  memset(q->charge, 0, n * sizeof *q->charge);
  for (size_t i = 0; i < n; i++) {
    if (!dpgd_filter_active(q->f, i)) continue; /* dropped: never asked again */
    int rc = contribute(q, i, fn, ctx);
    if (rc) return rc;
  }
  /* Every charge fits: it is at most fl(cap^2) for the filter's own cap. */
  for (size_t i = 0; i < n; i++) {
    int rc = q->charge[i] > 0 ? dpgd_filter_charge(q->f, i, q->charge[i], 1.0) : DPGD_OK;
    if (rc) return rc;
  }
  q->count++;
  if (q->discrete) return discrete_release(q, answer);
  for (size_t j = 0; j < d; j++) answer[j] = ldexp((double)q->sum[j], -q->bits); /* exact */
  return dpgd_rng_gaussian_add(q->rng, q->sigma, answer, d);
}

typedef struct {
  const double *values;
  size_t dim;
} table_ctx;

static int table_value(size_t user, double *value, void *ctx)
{
  const table_ctx *t = ctx;
  memcpy(value, t->values + user * t->dim, t->dim * sizeof *value);
  return 0;
}

int dpgd_queries_answer(dpgd_queries *q, const double *values, double *answer)
{
  if (!q || !values) return DPGD_FAIL(DPGD_EINVAL, "queries: NULL argument");
  table_ctx t = {values, q->p.dim};
  return dpgd_queries_answer_fn(q, table_value, &t, answer);
}

size_t dpgd_queries_count(const dpgd_queries *q) { return q->count; }
double dpgd_queries_sigma(const dpgd_queries *q) { return q->sigma; }
double dpgd_queries_quantum(const dpgd_queries *q) { return ldexp(1.0, -q->bits); }
const dpgd_filter *dpgd_queries_filter(const dpgd_queries *q) { return q->f; }

/* Corollary 4.7: sigma sqrt(2 log(dim / beta)) = sqrt(B log(dim / beta) / kappa); each
 * coordinate passes it with probability at most beta / dim (P(|Z| > z) <= exp(-z^2/2)). */
double dpgd_queries_bound(const dpgd_queries *q, double beta)
{
  if (!(beta > 0 && beta < 1)) return NAN;
  double b = q->sigma * sqrt(2 * log((double)q->p.dim / beta));
  if (q->discrete) /* sub-Gaussian, two-sided: sigma_grid sqrt(2 log(2 dim / beta)) */
    b = ldexp(sqrt((double)q->dg.num) * (1 + 0x1p-50), -q->bits) *
        sqrt(2 * log(2 * (double)q->p.dim / beta));
  return dpgd_round_digits(b * (1 + 0x1p-50), 15, 1);
}

const dpgd_dgauss *dpgd_queries_dgauss(const dpgd_queries *q)
{
  return q->discrete ? &q->dg : NULL;
}

/* Secure mode's guarantee as the accountant's entry: ONE multivariate discrete Gaussian
 * of mu = sqrt(B) / sigma (rounded up), whose RDP curve a mu^2 / 2 is what the Renyi
 * filter keeps every user within (train/QUERIES.md "Secure mode"). */
static int discrete_acct(const dpgd_queries *q, dpgd_accountant **out)
{
  *out = dpgd_acct_alloc();
  if (!*out) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (queries epsilon)");
  double mu = sqrt(q->p.budget) / q->sigma * (1 + 0x1p-50);
  return dpgd_acct_add_discrete_gaussian(*out, mu, 1);
}

int dpgd_queries_epsilon(const dpgd_queries *q, dpgd_acct_method m, double delta, double *eps)
{
  if (!eps) return DPGD_FAIL(DPGD_EINVAL, "queries: NULL eps");
  /* The filter's guarantee: sqrt(B) / sigma-GDP, with B / sigma^2 <= 2 kappa. */
  if (!q->discrete) return dpgd_filter_epsilon(q->f, m, q->sigma, delta, eps);
  dpgd_accountant *a;
  dpgd_acct_value v = {0, 0};
  int rc = discrete_acct(q, &a);
  if (!rc) rc = dpgd_acct_epsilon(a, m, delta, &v); /* exact refuses: DPGD_EINVAL */
  dpgd_acct_free(a);
  if (!rc) *eps = v.value;
  return rc;
}

double dpgd_queries_eps_continuous(const dpgd_queries *q, double delta)
{
  dpgd_accountant *a = NULL;
  if (!q->discrete || discrete_acct(q, &a)) {
    dpgd_acct_free(a);
    dpgd_error_clear();
    return NAN;
  }
  double e = dpgd_acct_continuous_epsilon(a, delta);
  dpgd_acct_free(a);
  return e;
}

/* The levels of users.csv: the whole budget is mu_max^2 = B / sigma^2; one query moves
 * a user by at most min(clip, sqrt(B))^2 / sigma^2. Secure mode: no levels (they are GDP
 * statements, not proven for the discrete Gaussian). */
int dpgd_queries_odometer(const dpgd_queries *q, double delta, dpgd_odometer *o)
{
  if (q->discrete) {
    memset(o, 0, sizeof *o);
    return DPGD_OK;
  }
  double s2 = q->sigma * q->sigma, b = q->p.budget;
  double step = fmin(q->p.clip * q->p.clip, b) / s2 * (1 + 0x1p-50);
  return dpgd_odometer_init(o, sqrt(b / s2 * (1 + 0x1p-50)), step, delta);
}

int dpgd_queries_write_users(const dpgd_queries *q, double delta, const char *path)
{
  dpgd_odometer o;
  int rc = dpgd_queries_odometer(q, delta, &o);
  if (rc) return rc;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len); /* then written atomically */
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", path);
  fprintf(f,
          "# SENSITIVE: per-user privacy spend. Each row may be disclosed only to that "
          "user; never publish or ship this file.%s\n"
          "user,spend,spend_frac,active,level,delta_level,mu_i,eps_i\n",
          o.levels ? " " DPGD_ODOMETER_FAMILY_NOTE : "");
  for (size_t i = 0; i < q->p.n_users && !rc; i++) {
    double s = dpgd_filter_spent(q->f, i, 0);
    fprintf(f, "%zu,%.17g,", i, s);
    dpgd_report_num(f, s / q->p.budget);
    fprintf(f, ",%d,", dpgd_filter_active(q->f, i));
    if (o.levels)
      rc = dpgd_report_odometer_cols(f, &o, dpgd_filter_point_mu2(q->f, i, q->sigma));
    else fputs(",,,", f);
    fputc('\n', f);
  }
  if (fclose(f) && !rc) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", path);
  if (!rc) rc = dpgd_write_atomic(path, text, len);
  free(text);
  return rc;
}
