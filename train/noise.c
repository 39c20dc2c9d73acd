/* noise.c -- the random streams of a run: research mode (GSL MT19937 per stream, seeded
 * from one master seed, state checkpointable) and secure mode (the OS CSPRNG through
 * getrandom(2), with Gaussian sampling hardened against floating-point attacks).
 *
 * Secure Gaussian: Mironov (CCS 2012, "On significance of the least significant bits for
 * differential privacy") showed that textbook floating-point sampling leaves gaps in the
 * set of reachable outputs that reveal the un-noised value; Jin et al. (IEEE S&P 2022,
 * arXiv:2112.05307) showed the same for the Gaussian in DP-SGD. Mitigation used here:
 * Holohan & Braghin, "Secure Random Sampling in Differential Privacy", ESORICS 2021
 * (doi:10.1007/978-3-030-88428-4_26): for an infinitely divisible distribution, draw the
 * noise as the sum of several independent samples of the correspondingly scaled
 * distribution, so that inverting a released value to the uniforms behind it (the
 * attack) needs a search exponential in the number of summands. We sum
 * DPGD_SECURE_GAUSS_TERMS standard normals (Box-Muller on 52-bit uniforms from
 * getrandom, strictly inside (0, 1)) and scale by std / sqrt(terms): exactly N(0, std^2) in real arithmetic.
 * This is a mitigation, not a proof that the floating-point output is exactly DP. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "dpgd_train.h"
#include "noise_internal.h"

#define SECURE_BUF_WORDS 512 /* 4 KiB of getrandom output per refill */

struct dpgd_rng {
  int mode;
  gsl_rng *g;                     /* research */
  uint64_t buf[SECURE_BUF_WORDS]; /* secure: pending random words */
  size_t pos;                     /* next unused word of buf */
};

/* splitmix64 (Steele, Lea & Flood 2014): decorrelates the master seed per stream. */
static uint64_t splitmix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static const uint64_t stream_tag[DPGD_N_STREAMS] = {
    0x696e6974ULL,    /* "init" */
    0x73746570ULL,    /* "step" */
    0x7175657279ULL,  /* "query" */
    0x73616d706c65ULL /* "sample" */
};

const char *dpgd_rng_mode_name(int mode)
{
  return mode == DPGD_RNG_SECURE ? "secure" : "research";
}

dpgd_rng *dpgd_rng_alloc(int mode, uint64_t master_seed, int stream)
{
  if (stream < 0 || stream >= DPGD_N_STREAMS) return NULL;
  dpgd_rng *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->mode = mode == DPGD_RNG_SECURE ? DPGD_RNG_SECURE : DPGD_RNG_RESEARCH;
  if (r->mode == DPGD_RNG_RESEARCH) {
    r->g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r->g) {
      free(r);
      return NULL;
    }
    uint64_t s = splitmix64(splitmix64(master_seed) ^ stream_tag[stream]);
    /* gsl's MT19937 takes a 32-bit seed; 0 would select its default seed. */
    unsigned long s32 = (unsigned long)((s ^ (s >> 32)) & 0xffffffffUL);
    gsl_rng_set(r->g, s32 ? s32 : 0x9e3779b9UL);
  } else {
    r->pos = SECURE_BUF_WORDS;
  }
  return r;
}

void dpgd_rng_free(dpgd_rng *r)
{
  if (!r) return;
  if (r->g) gsl_rng_free(r->g);
  explicit_bzero(r->buf, sizeof r->buf);
  free(r);
}

static int secure_refill(dpgd_rng *r)
{
  unsigned char *p = (unsigned char *)r->buf;
  size_t need = sizeof r->buf;
  while (need > 0) {
    ssize_t got = getrandom(p, need, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return DPGD_FAIL(DPGD_EIO, "getrandom failed: %s", strerror(errno));
    }
    p += got;
    need -= (size_t)got;
  }
  r->pos = 0;
  return DPGD_OK;
}

int dpgd_rng_u64(dpgd_rng *r, uint64_t *out)
{
  if (r->mode == DPGD_RNG_RESEARCH) {
    /* MT19937 gives 32 bits per call. */
    uint64_t hi = gsl_rng_get(r->g), lo = gsl_rng_get(r->g);
    *out = (hi << 32) | lo;
    return DPGD_OK;
  }
  if (r->pos == SECURE_BUF_WORDS) {
    int rc = secure_refill(r);
    if (rc) return rc;
  }
  *out = r->buf[r->pos];
  r->buf[r->pos++] = 0;
  return DPGD_OK;
}

/* Only exactly representable values of (k + 1/2) 2^-b keep the uniform inside (0, 1):
 * with b = 53, k + 1/2 for k >= 2^52 is not a double and rounds, to 2^53 (u = 1.0) for
 * k = 2^53 - 1. With b = 52 it is exact: u in [2^-53, 1 - 2^-53], never 0 or 1. */
double dpgd_noise_bits_to_uniform(uint64_t w) { return ((double)(w >> 12) + 0.5) * 0x1.0p-52; }

/* The radius is at most sqrt(-2 log 2^-53) = 8.5717 for u1 >= 2^-53 (NOISE_BM_RADIUS_MAX)
 * and positive for u1 <= 1 - 2^-53; so a secure draw of DPGD_SECURE_GAUSS_TERMS terms is
 * within 8.5717 sqrt(terms) std of zero: a bounded tail, never inf or NaN. */
double dpgd_noise_box_muller(double u1, double u2)
{
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static int secure_uniform(dpgd_rng *r, double *u)
{
  uint64_t w;
  int rc = dpgd_rng_u64(r, &w);
  if (rc) return rc;
  *u = dpgd_noise_bits_to_uniform(w);
  return DPGD_OK;
}

/* Standard normal by Box-Muller, secure stream. */
static int secure_std_normal(dpgd_rng *r, double *z)
{
  double u1, u2;
  int rc = secure_uniform(r, &u1);
  if (!rc) rc = secure_uniform(r, &u2);
  if (rc) return rc;
  *z = dpgd_noise_box_muller(u1, u2);
  return DPGD_OK;
}

static int secure_gaussian(dpgd_rng *r, double std, double *out)
{
  double sum = 0;
  for (int k = 0; k < DPGD_SECURE_GAUSS_TERMS; k++) {
    double z;
    int rc = secure_std_normal(r, &z);
    if (rc) return rc;
    sum += z;
  }
  *out = sum * (std / sqrt((double)DPGD_SECURE_GAUSS_TERMS));
  return DPGD_OK;
}

int dpgd_rng_gaussian(dpgd_rng *r, double std, double *out)
{
  if (r->mode == DPGD_RNG_RESEARCH) {
    *out = gsl_ran_gaussian_ziggurat(r->g, std);
    return DPGD_OK;
  }
  return secure_gaussian(r, std, out);
}

int dpgd_rng_gaussian_add(dpgd_rng *r, double std, double *x, size_t n)
{
  if (r->mode == DPGD_RNG_RESEARCH) {
    for (size_t j = 0; j < n; j++) x[j] += gsl_ran_gaussian_ziggurat(r->g, std);
    return DPGD_OK;
  }
  for (size_t j = 0; j < n; j++) {
    double z;
    int rc = secure_gaussian(r, std, &z);
    if (rc) return rc;
    x[j] += z;
  }
  return DPGD_OK;
}

/* Point i is in iff its 64-bit word w_i < floor(q 2^64): probability floor(q 2^64)/2^64,
 * at most q and within 2^-64 of it. Never more than q: the accountant's guarantee for
 * rate q covers every smaller rate (the hockey-stick divergence of the subsampled
 * Gaussian grows with q, by its joint convexity). One word per point, in index order,
 * whether or not q = 1, so that the stream's position does not depend on the data. */
int dpgd_rng_sample_poisson(dpgd_rng *r, double q, unsigned char *in, size_t n, size_t *count)
{
  if (!(q >= 0 && q <= 1)) return DPGD_FAIL(DPGD_EINVAL, "sampling rate %g outside [0, 1]", q);
  /* q 2^64 is exact (a power-of-two scaling); below 2^64 for q < 1, so it converts. */
  uint64_t thresh = q < 1 ? (uint64_t)ldexp(q, 64) : UINT64_MAX;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t w;
    int rc = dpgd_rng_u64(r, &w);
    if (rc) return rc;
    in[i] = q == 1 || w < thresh;
    k += in[i];
  }
  if (count) *count = k;
  return DPGD_OK;
}

size_t dpgd_rng_state_size(const dpgd_rng *r)
{
  return r->mode == DPGD_RNG_RESEARCH ? gsl_rng_size(r->g) : 0;
}

void dpgd_rng_state_get(const dpgd_rng *r, void *buf)
{
  if (r->mode == DPGD_RNG_RESEARCH) memcpy(buf, gsl_rng_state(r->g), gsl_rng_size(r->g));
}

/* GSL's MT19937 state (gsl/rng/mt.c): 624 words of 32 bits, each in an unsigned long,
 * then the index of the next word, 0..624 (624: refill before the next draw). A
 * checkpoint is outside input, and gsl_rng_get reads mt[mti] unchecked: a stored index
 * outside 0..624 would read outside the state, a word over 32 bits would give draws
 * outside MT19937's range. Both are refused. */
#define MT_N 624
typedef struct {
  unsigned long mt[MT_N];
  int mti;
} mt_state;

static int mt_state_check(const void *buf, size_t len)
{
  mt_state s;
  if (len != sizeof s)
    return DPGD_FAIL(DPGD_EFORMAT, "random stream state is %zu bytes, MT19937's is %zu", len,
                     sizeof s);
  memcpy(&s, buf, sizeof s);
  if (s.mti < 0 || s.mti > MT_N)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "random stream state: position %d outside 0..%d (corrupt "
                     "checkpoint)",
                     s.mti, MT_N);
  for (int k = 0; k < MT_N; k++)
    if (s.mt[k] > 0xffffffffUL)
      return DPGD_FAIL(DPGD_EFORMAT,
                       "random stream state: word %d exceeds 32 bits (corrupt "
                       "checkpoint)",
                       k);
  return DPGD_OK;
}

int dpgd_rng_state_set(dpgd_rng *r, const void *buf, size_t len)
{
  if (len != dpgd_rng_state_size(r))
    return DPGD_FAIL(DPGD_EFORMAT, "random stream state is %zu bytes, expected %zu", len,
                     dpgd_rng_state_size(r));
  if (r->mode == DPGD_RNG_RESEARCH) {
    int rc = mt_state_check(buf, len);
    if (rc) return rc;
    memcpy(gsl_rng_state(r->g), buf, len);
  }
  return DPGD_OK;
}
