/* filter_io.c -- what an individual filter reports (each point's odometer, the run's
 * guarantee through the accountant's conversions) and its checkpoint format: magic
 * "DPGDFILT", version, currency, sizes, a pure-DP flag, orders, budgets and spends in little-endian
 * order (doubles as IEEE-754 bit patterns), then a CRC-32 of everything before it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acct_internal.h"

#define FILTER_MAGIC "DPGDFILT"
#define FILTER_VERSION 1u

int dpgd_filter_report(const dpgd_filter *f, size_t i, const dpgd_odometer *o, double unit,
                       size_t *level, double *mu, double *eps)
{
  if (!f || !o || i >= f->n || !(unit > 0) || !isfinite(unit))
    return DPGD_FAIL(DPGD_EINVAL, "filter report: bad arguments");
  if (f->pure_dp)
    return DPGD_FAIL(DPGD_EINVAL, "filter report: pure-DP or direct RDP charges have no GDP "
                                  "odometer");
  return dpgd_odometer_report(o, dpgd_filter_point_mu2(f, i, unit), level, mu, eps);
}

/* RDP: (a_j, B_j)-RDP holds at every order at once (the filter halts a point when any
 * order is spent), so the smallest of the orders' conversions by m is valid. */
static int rdp_epsilon(const dpgd_filter *f, dpgd_acct_method m, double u2, double delta,
                       double *eps)
{
  double best = INFINITY;
  for (size_t j = 0; j < f->k; j++) {
    double a = f->order[j], zeta = f->budget[j] / u2 * (1 + 0x1p-50), e;
    if (m == DPGD_ACCT_RDP_CLASSIC) e = dpgd_acct_rdp_conv_classic(a, zeta, delta);
    else if (m == DPGD_ACCT_RDP_BALLE) e = dpgd_acct_rdp_conv_balle(a, zeta, delta);
    else if (dpgd_acct_rdp_conv_optimal(a, zeta, delta, &e)) e = INFINITY;
    if (isnan(e)) e = INFINITY;
    if (e < best) best = e;
  }
  if (!isfinite(best)) return DPGD_FAIL(DPGD_ERANGE, "filter: no finite RDP conversion");
  *eps = best < 0 ? 0 : dpgd_acct_round_up(best);
  return DPGD_OK;
}

int dpgd_filter_epsilon(const dpgd_filter *f, dpgd_acct_method m, double unit, double delta,
                        double *eps)
{
  if (!f || !eps || !(unit > 0) || !isfinite(unit) || !(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "filter epsilon: bad arguments");
  if ((int)m < 0 || m >= DPGD_ACCT_N_METHODS)
    return DPGD_FAIL(DPGD_EINVAL, "filter epsilon: unknown method %d", (int)m);
  for (size_t j = 0; j < f->k; j++)
    if (!isfinite(f->budget[j]))
      return DPGD_FAIL(DPGD_ERANGE, "filter epsilon: infinite budget (no filter)");
  int rdp =
      m == DPGD_ACCT_RDP_CLASSIC || m == DPGD_ACCT_RDP_BALLE || m == DPGD_ACCT_RDP_OPTIMAL;
  if (f->cur == DPGD_FILTER_RDP) {
    if (!rdp)
      return DPGD_FAIL(DPGD_EINVAL, "filter epsilon: an RDP filter converts by rdp_* only");
    return rdp_epsilon(f, m, unit * unit, delta, eps);
  }
  if (f->cur == DPGD_FILTER_ZCDP && m == DPGD_ACCT_EXACT)
    return DPGD_FAIL(DPGD_EINVAL, "filter epsilon: a zCDP filter has no exact GDP curve");
  /* GDP: mu = sqrt(B) / unit (docs/MATH.md "The individual filter", evaluated as written
   * there so that the trainer's mu = sqrt(B_norm) / (sigma C) is reproduced bit for bit; the
   * accountant pads eps for the numerical error); zCDP: rho = B / unit^2 is the curve of mu^2 =
   * 2 rho, mu = sqrt(2 B) / unit. */
  double mu = sqrt(f->budget[0] / f->coef[0]) / unit;
  dpgd_accountant *a = dpgd_acct_alloc();
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (filter epsilon)");
  dpgd_acct_value v = {0, 0};
  int st = dpgd_acct_add_gaussian(a, mu, 1);
  if (!st) st = dpgd_acct_epsilon(a, m, delta, &v);
  dpgd_acct_free(a);
  if (!st) *eps = v.value;
  return st;
}

static void put_u64(unsigned char *b, size_t *pos, uint64_t v)
{
  for (int i = 0; i < 8; i++) b[(*pos)++] = (unsigned char)(v >> (8 * i));
}

static void put_f64(unsigned char *b, size_t *pos, double x)
{
  uint64_t v;
  memcpy(&v, &x, sizeof v);
  put_u64(b, pos, v);
}

int dpgd_filter_serialize(const dpgd_filter *f, void **buf, size_t *len)
{
  if (!f || !buf || !len) return DPGD_FAIL(DPGD_EINVAL, "filter serialize: NULL argument");
  size_t n = 8 * 6 + 16 * f->k + 8 * f->k * f->n + 4; /* magic, version, cur, n, k, flags */
  unsigned char *b = malloc(n);
  if (!b) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (filter serialize)");
  size_t pos = 8;
  memcpy(b, FILTER_MAGIC, 8);
  put_u64(b, &pos, FILTER_VERSION);
  put_u64(b, &pos, (uint64_t)f->cur);
  put_u64(b, &pos, f->n);
  put_u64(b, &pos, f->k);
  put_u64(b, &pos, (uint64_t)f->pure_dp);
  for (size_t j = 0; j < f->k; j++) put_f64(b, &pos, f->order[j]);
  for (size_t j = 0; j < f->k; j++) put_f64(b, &pos, f->budget[j]);
  for (size_t i = 0; i < f->k * f->n; i++) put_f64(b, &pos, f->spent[i]);
  uint32_t crc = dpgd_crc32(b, pos);
  for (int i = 0; i < 4; i++) b[pos++] = (unsigned char)(crc >> (8 * i));
  *buf = b;
  *len = pos;
  return DPGD_OK;
}

static uint64_t get_u64(const unsigned char *b, size_t *pos)
{
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)b[(*pos)++] << (8 * i);
  return x;
}

static double get_f64(const unsigned char *b, size_t *pos)
{
  uint64_t v = get_u64(b, pos);
  double x;
  memcpy(&x, &v, sizeof x);
  return x;
}

/* Magic, checksum, version and sizes of a state of len bytes; pos is left at the
 * orders. */
static int read_header(const unsigned char *b, size_t len, size_t *pos, uint64_t hdr[4])
{
  if (len < 8 * 6 + 4 || memcmp(b, FILTER_MAGIC, 8))
    return DPGD_FAIL(DPGD_EFORMAT, "filter state: bad magic or too short");
  uint32_t crc = 0;
  for (int i = 0; i < 4; i++) crc |= (uint32_t)b[len - 4 + i] << (8 * i);
  if (crc != dpgd_crc32(b, len - 4))
    return DPGD_FAIL(DPGD_EFORMAT, "filter state: checksum mismatch (corrupt or truncated)");
  *pos = 8;
  uint64_t version = get_u64(b, pos);
  if (version != FILTER_VERSION)
    return DPGD_FAIL(DPGD_EFORMAT, "filter state: version %llu, this build reads %u",
                     (unsigned long long)version, FILTER_VERSION);
  for (int i = 0; i < 4; i++) hdr[i] = get_u64(b, pos); /* cur, n, k, pure_dp */
  uint64_t n = hdr[1], k = hdr[2];
  if (hdr[0] >= DPGD_FILTER_N_CURRENCIES || n == 0 || k == 0 || k > DPGD_FILTER_MAX_ORDERS ||
      hdr[3] > 2 || (hdr[3] == 1 && hdr[0] != DPGD_FILTER_ZCDP) ||
      (hdr[3] == 2 && hdr[0] != DPGD_FILTER_RDP) || n > (len - 4 - *pos) / 8 / k ||
      (len - 4 - *pos) != 16 * k + 8 * k * n)
    return DPGD_FAIL(DPGD_EFORMAT, "filter state: sizes do not match %zu bytes", len);
  return DPGD_OK;
}

int dpgd_filter_deserialize(dpgd_filter **out, const void *buf, size_t len)
{
  if (!out || !buf) return DPGD_FAIL(DPGD_EINVAL, "filter deserialize: NULL argument");
  *out = NULL;
  const unsigned char *b = buf;
  size_t pos = 0;
  uint64_t hdr[4];
  int st = read_header(b, len, &pos, hdr);
  if (st) return st;
  size_t k = (size_t)hdr[2];
  double orders[DPGD_FILTER_MAX_ORDERS], budgets[DPGD_FILTER_MAX_ORDERS];
  for (size_t j = 0; j < k; j++) orders[j] = get_f64(b, &pos);
  for (size_t j = 0; j < k; j++) budgets[j] = get_f64(b, &pos);
  dpgd_filter *f =
      dpgd_filter_alloc((size_t)hdr[1], (dpgd_filter_currency)hdr[0], k, orders, budgets);
  if (!f) return DPGD_FAIL(DPGD_EFORMAT, "filter state: invalid currency, orders or budgets");
  f->pure_dp = (int)hdr[3];
  for (size_t i = 0; i < k * f->n; i++) f->spent[i] = get_f64(b, &pos);
  if (dpgd_filter_check(f)) {
    dpgd_filter_free(f);
    return DPGD_FAIL(DPGD_EFORMAT, "filter state: spends break the filter's invariant");
  }
  *out = f;
  return DPGD_OK;
}
