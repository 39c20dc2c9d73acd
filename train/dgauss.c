/* dgauss.c -- exact sampling of the discrete Gaussian N_Z(0, sigma^2) for rational
 * sigma^2 = num/den (Canonne, Kamath & Steinke, NeurIPS 2020, Algorithms 1-3), in integer
 * arithmetic only: this unit is compiled with -mgeneral-regs-only where the compiler has it,
 * and tests/train/dgauss_nofloat.sh scans its object code for floating-point instructions.
 *
 * Ranges (docs/MATH.md "Discrete Gaussian"): 1 <= num <= 2^62, 1 <= den <= 2^32. Then
 * t = floor(sqrt(num/den)) + 1 <= 2^31 + 1; a discrete Laplace magnitude is below t 2^31 <
 * 2^63; D = |y| t den - num is below 2^126 in magnitude; B = 2 num den t^2 <= 8 num^2 <=
 * 2^127 (t^2 <= 4 num/den when num >= den; t = 1 otherwise); gamma = D^2 / B is split
 * into its integer part and remainder by a 256-by-128-bit division. Events of probability
 * below exp(-2^31) (a geometric count of 2^31) return DPGD_ERANGE rather than leave the
 * ranges: the sampler then fails, it never returns a value of another distribution. */
#include "dpgd_train.h"

typedef unsigned __int128 u128;

/* Geometric counts of Bernoulli(exp(-1)) successes at or above this return DPGD_ERANGE
 * (probability exp(-2^31)); they keep a Laplace magnitude below t 2^31. */
#define GEOM_MAX (UINT64_C(1) << 31)

void dpgd_bits_init(dpgd_bits *b, dpgd_bits_fn fn, void *ctx)
{
  b->fn = fn;
  b->ctx = ctx;
  b->word = 0;
  b->left = 0;
}

/* k (1..64) uniform bits from the buffered words. */
static int take_bits(dpgd_bits *b, unsigned k, uint64_t *out)
{
  if (k == 64) return b->fn(b->ctx, out);
  if (b->left < k) {
    int rc = b->fn(b->ctx, &b->word);
    if (rc) return rc;
    b->left = 64;
  }
  *out = b->word & ((UINT64_C(1) << k) - 1);
  b->word = k < 64 ? b->word >> k : 0;
  b->left -= k;
  return DPGD_OK;
}

static unsigned bit_length(u128 x)
{
  unsigned n = 0;
  while (x) n++, x >>= 1;
  return n;
}

/* Uniform on {0, ..., m - 1}, m >= 1: the bits of m - 1's length, rejected at or above m
 * (each try accepts with probability above 1/2). */
static int uniform_below(dpgd_bits *b, u128 m, u128 *out)
{
  unsigned len = bit_length(m - 1);
  for (;;) {
    u128 x = 0;
    for (unsigned got = 0; got < len;) {
      unsigned k = len - got < 64 ? len - got : 64;
      uint64_t w;
      int rc = take_bits(b, k, &w);
      if (rc) return rc;
      x |= (u128)w << got;
      got += k;
    }
    if (x < m) {
      *out = x;
      return DPGD_OK;
    }
  }
}

/* Bernoulli(num/den), 0 <= num <= den, den >= 1. */
static int bernoulli(dpgd_bits *b, u128 num, u128 den, int *out)
{
  u128 u;
  int rc = uniform_below(b, den, &u);
  if (!rc) *out = u < num;
  return rc;
}

/* Bernoulli(exp(-r/d)) for 0 <= r <= d, d >= 1 (Algorithm 1, gamma in [0, 1]): K = 1, 2, ...
 * while Bernoulli(gamma/K) succeeds; the answer is whether the final K is odd. Bernoulli(
 * gamma/K) is drawn as Bernoulli(r/d) AND Bernoulli(1/K), independent, so d K never
 * overflows. P[K odd] = sum_k (-gamma)^k / k! = exp(-gamma). */
static int bern_exp_frac(dpgd_bits *b, u128 r, u128 d, int *out)
{
  uint64_t K = 1;
  for (;;) {
    int a = 0, rc = bernoulli(b, r, d, &a);
    if (!rc && a) rc = bernoulli(b, 1, K, &a);
    if (rc) return rc;
    if (!a) break;
    K++;
  }
  *out = (int)(K & 1);
  return DPGD_OK;
}

/* Bernoulli(exp(-(q + r/d))) for an integer q >= 0 and 0 <= r < d (Algorithm 1, gamma > 1):
 * q draws of Bernoulli(exp(-1)), all of which must succeed, then exp(-r/d). q = UINT64_MAX
 * stands for "at least 2^64 - 1": all of those succeed with probability exp(-2^64), and
 * then DPGD_ERANGE. */
static int bern_exp_split(dpgd_bits *b, uint64_t q, u128 r, u128 d, int *out)
{
  for (uint64_t k = 0; k < q; k++) {
    int a = 0, rc = bern_exp_frac(b, 1, 1, &a);
    if (rc) return rc;
    if (!a) {
      *out = 0;
      return DPGD_OK;
    }
  }
  if (q == UINT64_MAX)
    return DPGD_FAIL(DPGD_ERANGE, "discrete Gaussian: Bernoulli exponent beyond 2^64");
  return bern_exp_frac(b, r, d, out);
}

int dpgd_dgauss_bernoulli_exp(dpgd_bits *b, uint64_t num, uint64_t den, int *out)
{
  if (den == 0) return DPGD_FAIL(DPGD_EINVAL, "Bernoulli(exp(-num/den)): den = 0");
  return bern_exp_split(b, num / den, num % den, den, out);
}

/* The number of Bernoulli(exp(-1)) successes before the first failure (Geometric with
 * success probability 1 - 1/e); DPGD_ERANGE at GEOM_MAX. */
static int geometric_e(dpgd_bits *b, uint64_t *v)
{
  for (*v = 0; *v < GEOM_MAX; ++*v) {
    int a = 0, rc = bern_exp_frac(b, 1, 1, &a);
    if (rc) return rc;
    if (!a) return DPGD_OK;
  }
  return DPGD_FAIL(DPGD_ERANGE, "discrete Laplace: geometric count reached 2^31");
}

/* Discrete Laplace, P[y] proportional to exp(-|y|/t), t >= 1 an integer (Algorithm 2 with
 * s = 1): U uniform below t kept with probability exp(-U/t), V geometric, X = U + t V is
 * then geometric with ratio exp(-1/t); a sign, with -0 rejected. */
static int laplace(dpgd_bits *b, uint64_t t, int64_t *out)
{
  for (;;) {
    u128 u;
    int a = 0, rc = uniform_below(b, t, &u);
    if (!rc) rc = bern_exp_frac(b, u, t, &a);
    if (rc) return rc;
    if (!a) continue;
    uint64_t v, sign;
    rc = geometric_e(b, &v);
    if (!rc) rc = take_bits(b, 1, &sign);
    if (rc) return rc;
    uint64_t x = (uint64_t)u + t * v; /* < t 2^31 <= 2^62 + 2^31 */
    if (sign && x == 0) continue;
    *out = sign ? -(int64_t)x : (int64_t)x;
    return DPGD_OK;
  }
}

int dpgd_dgauss_laplace(dpgd_bits *b, uint64_t t, int64_t *out)
{
  if (t < 1 || t > (UINT64_C(1) << 31) + 1)
    return DPGD_FAIL(DPGD_EINVAL, "discrete Laplace: scale %llu outside [1, 2^31 + 1]",
                     (unsigned long long)t);
  return laplace(b, t, out);
}

static uint64_t isqrt(uint64_t x)
{
  uint64_t r = 0;
  for (uint64_t bit = UINT64_C(1) << 62; bit; bit >>= 2) {
    if (x >= r + bit) {
      x -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
  }
  return r;
}

int dpgd_dgauss_init(dpgd_dgauss *g, uint64_t num, uint64_t den)
{
  if (num < 1 || num > DPGD_DGAUSS_NUM_MAX || den < 1 || den > DPGD_DGAUSS_DEN_MAX)
    return DPGD_FAIL(DPGD_EINVAL,
                     "discrete Gaussian: sigma^2 = %llu/%llu outside the range (numerator "
                     "1..2^62, denominator 1..2^32)",
                     (unsigned long long)num, (unsigned long long)den);
  g->num = num;
  g->den = den;
  g->t = isqrt(num / den) + 1; /* floor(sqrt(num/den)) = floor(sqrt(floor(num/den))) */
  return DPGD_OK;
}

/* x * y as a 256-bit number (hi, lo). */
static void mul_128(u128 x, u128 y, u128 *hi, u128 *lo)
{
  const u128 m64 = (u128)UINT64_MAX;
  u128 x0 = x & m64, x1 = x >> 64, y0 = y & m64, y1 = y >> 64;
  u128 p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0, p11 = x1 * y1;
  u128 mid = (p00 >> 64) + (p01 & m64) + (p10 & m64);
  *lo = (p00 & m64) | (mid << 64);
  *hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

/* (hi, lo) / d for 1 <= d <= 2^127: the quotient saturated at UINT64_MAX and the
 * remainder, by restoring division one bit at a time (the running remainder stays
 * below 2 d <= 2^128). */
static void div_256(u128 hi, u128 lo, u128 d, uint64_t *q, u128 *r)
{
  if (hi == 0) {
    u128 qq = lo / d;
    *q = qq > UINT64_MAX ? UINT64_MAX : (uint64_t)qq;
    *r = lo % d;
    return;
  }
  u128 rem = 0, quo = 0;
  int big = 0;
  for (int i = 255; i >= 0; i--) {
    u128 bit = i >= 128 ? (hi >> (i - 128)) & 1 : (lo >> i) & 1;
    rem = (rem << 1) | bit;
    if (quo >> 63) big = 1;
    quo <<= 1;
    if (rem >= d) rem -= d, quo |= 1;
  }
  *q = big || quo > UINT64_MAX ? UINT64_MAX : (uint64_t)quo;
  *r = rem;
}

/* Algorithm 3: Y discrete Laplace of scale t, kept with probability exp(-gamma),
 * gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2) = D^2 / B, D = |Y| t den - num,
 * B = 2 num den t^2. */
int dpgd_dgauss_sample(const dpgd_dgauss *g, dpgd_bits *b, int64_t *out)
{
  const u128 B = (u128)2 * g->num * g->den * g->t * g->t;
  for (;;) {
    int64_t y;
    int a = 0, rc = laplace(b, g->t, &y);
    if (rc) return rc;
    u128 m = (u128)(y < 0 ? -(uint64_t)y : (uint64_t)y) * g->t * g->den;
    u128 D = m >= g->num ? m - g->num : g->num - m;
    u128 hi, lo, r;
    uint64_t q;
    mul_128(D, D, &hi, &lo);
    div_256(hi, lo, B, &q, &r);
    rc = bern_exp_split(b, q, r, B, &a);
    if (rc) return rc;
    if (a) {
      *out = y;
      return DPGD_OK;
    }
  }
}

int dpgd_dgauss_add(const dpgd_dgauss *g, dpgd_bits *b, int64_t *x, size_t n)
{
  for (size_t j = 0; j < n; j++) {
    int64_t z;
    int rc = dpgd_dgauss_sample(g, b, &z);
    if (rc) return rc;
    if (__builtin_add_overflow(x[j], z, &x[j]))
      return DPGD_FAIL(DPGD_ERANGE, "discrete Gaussian: noisy coordinate %zu overflows int64",
                       j);
  }
  return DPGD_OK;
}
