/* serialize.c -- the accountant's checkpoint format: magic "DPGDACCT", version, the
 * entries in little-endian order (doubles as IEEE-754 bit patterns), then a CRC-32 of
 * everything before it. Corrupt, truncated or foreign buffers give DPGD_EFORMAT. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acct_internal.h"

#define ACCT_MAGIC "DPGDACCT"
#define ACCT_VERSION 1u

typedef struct {
  unsigned char *buf;
  size_t len, pos;
} wbuf;

static void put_u64(wbuf *w, uint64_t v)
{
  for (int i = 0; i < 8; i++) w->buf[w->pos++] = (unsigned char)(v >> (8 * i));
}

static void put_f64(wbuf *w, double x)
{
  uint64_t v;
  memcpy(&v, &x, sizeof v);
  put_u64(w, v);
}

static size_t entry_size(const acct_entry *en)
{
  /* kind, count, par[2], k, then p and q */
  return 5 * 8 + (en->kind == ACCT_DISCRETE ? 16 * en->k : 0);
}

int dpgd_acct_serialize(const dpgd_accountant *a, void **buf, size_t *len)
{
  if (!a || !buf || !len) return DPGD_FAIL(DPGD_EINVAL, "serialize: NULL argument");
  size_t n = 8 + 8 + 8; /* magic, version, n */
  for (size_t i = 0; i < a->n; i++) n += entry_size(&a->e[i]);
  n += 4; /* crc */
  wbuf w = {malloc(n), n, 0};
  if (!w.buf) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (serialize)");
  memcpy(w.buf, ACCT_MAGIC, 8);
  w.pos = 8;
  put_u64(&w, ACCT_VERSION);
  put_u64(&w, a->n);
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    put_u64(&w, (uint64_t)en->kind);
    put_u64(&w, en->count);
    put_f64(&w, en->par[0]);
    put_f64(&w, en->par[1]);
    put_u64(&w, en->kind == ACCT_DISCRETE ? en->k : 0);
    if (en->kind == ACCT_DISCRETE) {
      for (size_t j = 0; j < en->k; j++) put_f64(&w, en->p[j]);
      for (size_t j = 0; j < en->k; j++) put_f64(&w, en->q[j]);
    }
  }
  uint32_t crc = dpgd_crc32(w.buf, w.pos);
  for (int i = 0; i < 4; i++) w.buf[w.pos++] = (unsigned char)(crc >> (8 * i));
  *buf = w.buf;
  *len = w.pos;
  return DPGD_OK;
}

typedef struct {
  const unsigned char *buf;
  size_t len, pos;
} rbuf;

static int get_u64(rbuf *r, uint64_t *v)
{
  if (r->len - r->pos < 8) return 1;
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)r->buf[r->pos++] << (8 * i);
  *v = x;
  return 0;
}

static int get_f64(rbuf *r, double *x)
{
  uint64_t v;
  if (get_u64(r, &v)) return 1;
  memcpy(x, &v, sizeof v);
  return 0;
}

/* Re-adds one stored entry through the public validating functions, so a buffer with
 * a valid checksum but impossible parameters is still refused. */
static int add_entry(dpgd_accountant *a, uint64_t kind, uint64_t count, const double *par,
                     const double *p, const double *q, size_t k)
{
  switch (kind) {
  case ACCT_GAUSSIAN: return dpgd_acct_add_gaussian(a, par[0], count);
  case ACCT_LAPLACE: return dpgd_acct_add_laplace(a, par[0], count);
  case ACCT_RR: return dpgd_acct_add_rr(a, par[0], count);
  case ACCT_DGAUSS: return dpgd_acct_add_discrete_gaussian(a, par[0], count);
  case ACCT_DISCRETE: return dpgd_acct_add_discrete(a, p, q, k, count);
  case ACCT_SUBSAMPLED: return dpgd_acct_add_subsampled_gaussian(a, par[0], par[1], count);
  case ACCT_SDGAUSS:
    return dpgd_acct_add_subsampled_discrete_gaussian(a, par[0], par[1], count);
  case ACCT_WOR_RO_GAUSSIAN:
  case ACCT_WOR_RO_LAPLACE:
  case ACCT_WOR_AR_LAPLACE: return dpgd_acct_wor_push(a, (acct_kind)kind, par, count);
  default:
    return DPGD_FAIL(DPGD_EFORMAT, "accountant state: unknown mechanism %llu",
                     (unsigned long long)kind);
  }
}

/* Magic, checksum, version and entry count of a state of len bytes; r is left at the
 * first entry. */
static int read_header(rbuf *r, const unsigned char *b, size_t len, uint64_t *n_out)
{
  if (len < 8 + 8 + 8 + 4 || memcmp(b, ACCT_MAGIC, 8))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "accountant state: bad magic or too short (not a dpgd accountant state)");
  uint32_t crc = 0;
  for (int i = 0; i < 4; i++) crc |= (uint32_t)b[len - 4 + i] << (8 * i);
  if (crc != dpgd_crc32(b, len - 4))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "accountant state: checksum mismatch (corrupt or truncated)");
  *r = (rbuf){b, len - 4, 8};
  uint64_t version, n;
  if (get_u64(r, &version) || get_u64(r, &n))
    return DPGD_FAIL(DPGD_EFORMAT, "accountant state: truncated header");
  if (version != ACCT_VERSION)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "accountant state: version %llu, this build reads %u "
                     "(re-create the checkpoint with this build)",
                     (unsigned long long)version, ACCT_VERSION);
  if (n > (r->len - r->pos) / 40)
    return DPGD_FAIL(DPGD_EFORMAT, "accountant state: %llu entries cannot fit in %zu bytes",
                     (unsigned long long)n, len);
  *n_out = n;
  return DPGD_OK;
}

/* Entry i at r, added to a. */
static int read_entry(dpgd_accountant *a, rbuf *r, uint64_t i)
{
  uint64_t kind, count, k;
  double par[2];
  if (get_u64(r, &kind) || get_u64(r, &count) || get_f64(r, &par[0]) || get_f64(r, &par[1]) ||
      get_u64(r, &k))
    return DPGD_FAIL(DPGD_EFORMAT, "accountant state: truncated entry %llu",
                     (unsigned long long)i);
  int st = DPGD_OK;
  double *p = NULL, *q = NULL;
  if (kind == ACCT_DISCRETE) {
    if (k < 1 || k > (r->len - r->pos) / 16)
      return DPGD_FAIL(DPGD_EFORMAT, "accountant state: entry %llu has a bad size",
                       (unsigned long long)i);
    p = malloc(k * sizeof *p);
    q = malloc(k * sizeof *q);
    if (!p || !q) st = DPGD_FAIL(DPGD_ENOMEM, "out of memory (deserialize)");
    for (size_t j = 0; j < k && !st; j++) get_f64(r, &p[j]);
    for (size_t j = 0; j < k && !st; j++) get_f64(r, &q[j]);
  } else if (k != 0) {
    st = DPGD_FAIL(DPGD_EFORMAT, "accountant state: entry %llu is malformed",
                   (unsigned long long)i);
  }
  if (!st) {
    st = add_entry(a, kind, count, par, p, q, (size_t)k);
    if (st && st != DPGD_ENOMEM)
      st = DPGD_FAIL(DPGD_EFORMAT, "accountant state: entry %llu is invalid",
                     (unsigned long long)i);
  }
  free(p);
  free(q);
  return st;
}

int dpgd_acct_deserialize(dpgd_accountant **out, const void *buf, size_t len)
{
  if (!out || !buf) return DPGD_FAIL(DPGD_EINVAL, "deserialize: NULL argument");
  *out = NULL;
  rbuf r = {0};
  uint64_t n = 0;
  int st = read_header(&r, buf, len, &n);
  if (st) return st;
  dpgd_accountant *a = dpgd_acct_alloc();
  if (!a) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (deserialize)");
  for (uint64_t i = 0; i < n && !st; i++) st = read_entry(a, &r, i);
  if (!st && r.pos != r.len)
    st = DPGD_FAIL(DPGD_EFORMAT, "accountant state: %zu trailing bytes", r.len - r.pos);
  if (st) {
    dpgd_acct_free(a);
    return st;
  }
  *out = a;
  return DPGD_OK;
}
