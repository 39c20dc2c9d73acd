/* noise.c -- the random streams of a run: research mode (a ChaCha20 keystream per
 * stream, keyed by the whole master seed: stream.c; position checkpointable; Gaussian
 * noise by GSL's ziggurat, in floating point, reproducible) and secure mode (the OS
 * CSPRNG through getrandom(2)). Secure mode draws no floating-point Gaussian: its
 * releases add an exact discrete Gaussian (train/dgauss.c) to exact integer sums, proven
 * as they run (docs/MATH.md section 18); the floating-point samplers are attackable
 * through their rounding (Mironov, CCS 2012; Jin et al., IEEE S&P 2022). This file also
 * turns a noise std on a grid into the discrete Gaussian's rational variance. */
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
#define POISSON_BLOCK 512    /* points per bulk read of a research stream */

struct dpgd_rng {
  int mode;
  gsl_rng *g;                     /* research */
  uint64_t buf[SECURE_BUF_WORDS]; /* secure: pending random words */
  size_t pos;                     /* next unused word of buf */
};

const char *dpgd_rng_mode_name(int mode)
{
  return mode == DPGD_RNG_SECURE ? "secure" : "research";
}

dpgd_rng *dpgd_rng_alloc(int mode, const dpgd_seed *seed, int stream)
{
  if (stream < 0 || stream >= DPGD_N_STREAMS) return NULL;
  mode = mode == DPGD_RNG_SECURE ? DPGD_RNG_SECURE : DPGD_RNG_RESEARCH;
  uint8_t key[DPGD_STREAM_KEY_BYTES];
  if (mode == DPGD_RNG_RESEARCH && (!seed || dpgd_stream_key(seed, stream, key))) return NULL;
  dpgd_rng *r = calloc(1, sizeof *r);
  if (r) r->mode = mode;
  if (r && mode == DPGD_RNG_RESEARCH) {
    r->g = gsl_rng_alloc(dpgd_stream_type());
    if (r->g) dpgd_stream_set_key(r->g, key);
    else free(r), r = NULL;
  } else if (r) {
    r->pos = SECURE_BUF_WORDS;
  }
  explicit_bzero(key, sizeof key);
  return r;
}

dpgd_rng *dpgd_rng_alloc_u64(int mode, uint64_t seed, int stream)
{
  dpgd_seed s = dpgd_seed_from_u64(seed);
  return dpgd_rng_alloc(mode, &s, stream);
}

void dpgd_rng_free(dpgd_rng *r)
{
  if (!r) return;
  if (r->g) dpgd_stream_wipe(r->g), gsl_rng_free(r->g);
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
    /* The stream gives 32 bits per call: the first word is the high half. */
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

int dpgd_rng_bits(void *rng, uint64_t *word) { return dpgd_rng_u64(rng, word); }

/* num = ceil(s^2), s = std 2^F (exact: a power-of-two scaling), the smallest integer at
 * least s^2, without rounding: p = fl(s^2) and e = fma(s, s, -p) give s^2 = p + e exactly.
 * If p is an integer, ceil(s^2) = p + ceil(e). If not (p < 2^52), |e| <= ulp(p)/2 while p
 * lies at least one ulp from each integer, so ceil(s^2) = ceil(p). s <= 1 gives 1. */
int dpgd_dgauss_from_std(dpgd_dgauss *g, double std, int bits)
{
  if (!(std > 0) || !isfinite(std) || bits < 0 || bits > 60)
    return DPGD_FAIL(DPGD_EINVAL, "discrete Gaussian: noise std %g on the grid 2^-%d", std,
                     bits);
  double s = ldexp(std, bits);
  if (!(s <= 0x1p31))
    return DPGD_FAIL(DPGD_ERANGE,
                     "discrete Gaussian: noise std %g on the grid 2^-%d is %g grid units, "
                     "above 2^31 (use a coarser grid)",
                     std, bits, s);
  if (s <= 1) return dpgd_dgauss_init(g, 1, 1);
  double p = s * s, e = fma(s, s, -p);
  uint64_t num = p == floor(p) ? (uint64_t)p + (uint64_t)(int64_t)ceil(e) : (uint64_t)ceil(p);
  return dpgd_dgauss_init(g, num, 1);
}

int dpgd_dgauss_release(const dpgd_dgauss *g, dpgd_rng *rng, int64_t *x, double *out, size_t n,
                        int bits)
{
  dpgd_bits b;
  dpgd_bits_init(&b, dpgd_rng_bits, rng);
  int rc = dpgd_dgauss_add(g, &b, x, n);
  explicit_bzero(&b, sizeof b);
  if (rc) return rc;
  for (size_t j = 0; j < n; j++) out[j] = ldexp((double)x[j], -bits);
  return DPGD_OK;
}

/* Secure mode refuses floating-point Gaussian noise: nothing proves its rendering DP. */
static int no_float_gaussian(void)
{
  return DPGD_FAIL(DPGD_EINVAL,
                   "secure rng: no floating-point Gaussian is drawn in secure mode (its "
                   "rounding is not proven private); secure releases add an exact discrete "
                   "Gaussian to an integer sum (dpgd_dgauss_*, docs/MATH.md section 18)");
}

int dpgd_rng_gaussian(dpgd_rng *r, double std, double *out)
{
  if (r->mode == DPGD_RNG_RESEARCH) {
    *out = gsl_ran_gaussian_ziggurat(r->g, std);
    return DPGD_OK;
  }
  return no_float_gaussian();
}

int dpgd_rng_gaussian_add(dpgd_rng *r, double std, double *x, size_t n)
{
  if (r->mode == DPGD_RNG_RESEARCH) {
    for (size_t j = 0; j < n; j++) x[j] += gsl_ran_gaussian_ziggurat(r->g, std);
    return DPGD_OK;
  }
  return no_float_gaussian();
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
  if (r->mode == DPGD_RNG_RESEARCH) {
    /* The words of dpgd_rng_u64 (high half first), read a block of points at a time. */
    uint32_t words[2 * POISSON_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += POISSON_BLOCK) {
      size_t b = n - i0 < POISSON_BLOCK ? n - i0 : POISSON_BLOCK;
      dpgd_stream_words(r->g, words, 2 * b);
      for (size_t i = 0; i < b; i++) {
        uint64_t w = (uint64_t)words[2 * i] << 32 | words[2 * i + 1];
        in[i0 + i] = q == 1 || w < thresh;
        k += in[i0 + i];
      }
    }
    explicit_bzero(words, sizeof words);
  } else {
    for (size_t i = 0; i < n; i++) {
      uint64_t w;
      int rc = dpgd_rng_u64(r, &w);
      if (rc) return rc;
      in[i] = q == 1 || w < thresh;
      k += in[i];
    }
  }
  if (count) *count = k;
  return DPGD_OK;
}

/* A research stream's checkpoint state: a tag and the position; no key (it comes again
 * from the seed). The tag keeps a state of another generator out (an MT19937 state of an
 * older dpgd is thousands of bytes long and refused by its length first). */
static const char state_tag[8] = {'d', 'p', 'g', 'd', 'c', 'c', '2', '0'};
#define STATE_BYTES (sizeof state_tag + sizeof(uint64_t))

size_t dpgd_rng_state_size(const dpgd_rng *r)
{
  return r->mode == DPGD_RNG_RESEARCH ? STATE_BYTES : 0;
}

void dpgd_rng_state_get(const dpgd_rng *r, void *buf)
{
  if (r->mode != DPGD_RNG_RESEARCH) return;
  uint64_t pos = dpgd_stream_position(r->g);
  memcpy(buf, state_tag, sizeof state_tag);
  memcpy((char *)buf + sizeof state_tag, &pos, sizeof pos);
}

int dpgd_rng_state_set(dpgd_rng *r, const void *buf, size_t len)
{
  size_t want = dpgd_rng_state_size(r);
  if (len != want)
    return DPGD_FAIL(DPGD_EFORMAT, "random stream state is %zu bytes, expected %zu%s", len,
                     want,
                     want && len > want ? " (a checkpoint of a dpgd before keyed ChaCha20 "
                                          "streams, with MT19937 states: resume it with that "
                                          "version or start a new run)"
                                        : "");
  if (r->mode != DPGD_RNG_RESEARCH) return DPGD_OK;
  uint64_t pos;
  memcpy(&pos, (const char *)buf + sizeof state_tag, sizeof pos);
  if (memcmp(buf, state_tag, sizeof state_tag))
    return DPGD_FAIL(DPGD_EFORMAT, "random stream state is not a ChaCha20 stream's "
                                   "(corrupt checkpoint)");
  dpgd_stream_seek(r->g, pos);
  return DPGD_OK;
}
