/* chacha.c -- ChaCha20's keystream (djb's variant: 64-bit block counter in state words 12
 * and 13, 64-bit nonce in words 14 and 15) for the research streams (stream.c).
 *
 * Why our own: speed. libsodium's crypto_stream_chacha20_xor_ic made 2.3-2.5 GB/s on
 * the shared AMD EPYC machine dpgd is timed on, about 5 % of a DP-SGD step at batch 256 on
 * MNIST (the Poisson sampler's 480 KB of keystream per step, the noise's 100 KB). Three
 * paths of the same function, chosen at run time: AVX-512F (16 blocks at once, one per
 * lane of each state vector; rotations by _mm512_rol_epi32) made 6.9-7.4 GB/s there,
 * AVX2 (8 blocks at once) 2.5-2.6 GB/s, the portable scalar one (a block at a time) 1.0-1.1
 * (tests/tools/bench_chacha.c, one core, 1 and 4 KiB requests); a 1-thread CNN DP-SGD
 * step at batch 256 went from 3.90 to 3.68 ms (medians of 8 pairs of runs).
 *
 * What it must equal: libsodium's crypto_stream_chacha20 keystream, bit for bit, on every
 * path: a research stream's words are a run's randomness, and a change of them changes
 * every run's results. Each path is ChaCha20's 20 rounds of add, xor and rotate on the
 * 4 x 4 state, then the input state added: constant time (no table, no branch on key or
 * keystream), like libsodium's. tests/train/test_chacha.c checks every path the CPU has
 * (each forced in turn) on the test vectors of draft-agl-tls-chacha20poly1305-04 section
 * 7 and against libsodium (random keys and nonces, counters 0, small, 2^32 - 3 with its carry
 * into word 13, and 2^63, lengths of 1 to 100 blocks), and the streams against libsodium
 * through dpgd_stream_words, gsl_rng_get and a checkpoint's seek. */
#include <string.h>

#include "chacha.h"

/* Paths 8 and 16 blocks wide compute whole groups; the rest of a request is one more
 * group computed into a local array (16 blocks at most, 1 KiB) and copied. */
#define MAX_WIDTH 16

static uint32_t load32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The input state but the counter words 12 and 13: "expand 32-byte k", key, nonce. */
static void init_state(uint32_t s[16], const uint8_t *key, uint64_t nonce)
{
  s[0] = 0x61707865, s[1] = 0x3320646e, s[2] = 0x79622d32, s[3] = 0x6b206574;
  for (int k = 0; k < 8; k++) s[4 + k] = load32(key + 4 * k);
  s[12] = s[13] = 0;
  s[14] = (uint32_t)nonce, s[15] = (uint32_t)(nonce >> 32);
}

/* Blocks counter .. counter + n - 1 (n at most MAX_WIDTH) as the low and high words of
 * their 64-bit counters: the carry from word 12 into word 13 in 64-bit arithmetic. */
static void counters(uint32_t *lo, uint32_t *hi, size_t n, uint64_t counter)
{
  for (size_t j = 0; j < n; j++) {
    lo[j] = (uint32_t)(counter + j);
    hi[j] = (uint32_t)((counter + j) >> 32);
  }
}

/* One double round (a column round, then a diagonal round) over a state x[0..15] of
 * whatever QR's operands are: words in the scalar path, vectors of lanes in the others. */
#define DOUBLE_ROUND(x)                                                                        \
  QR(x[0], x[4], x[8], x[12]), QR(x[1], x[5], x[9], x[13]), QR(x[2], x[6], x[10], x[14]),      \
      QR(x[3], x[7], x[11], x[15]), QR(x[0], x[5], x[10], x[15]),                              \
      QR(x[1], x[6], x[11], x[12]), QR(x[2], x[7], x[8], x[13]), QR(x[3], x[4], x[9], x[14])

#define ROTL32(v, n) ((v) << (n) | (v) >> (32 - (n)))
#define QR(a, b, c, d)                                                                         \
  (a += b, d = ROTL32(d ^ a, 16), c += d, b = ROTL32(b ^ c, 12), a += b, d = ROTL32(d ^ a, 8), \
   c += d, b = ROTL32(b ^ c, 7))

static void blocks_scalar(uint32_t *out, size_t n, const uint32_t s0[16], uint64_t counter)
{
  uint32_t s[16], x[16];
  memcpy(s, s0, sizeof s);
  for (size_t b = 0; b < n; b++, out += 16) {
    counters(&s[12], &s[13], 1, counter + b);
    memcpy(x, s, sizeof x);
    for (int r = 0; r < 10; r++) DOUBLE_ROUND(x);
    for (int k = 0; k < 16; k++) out[k] = x[k] + s[k];
  }
}
#undef QR

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T2 __attribute__((target("avx2")))
#define T512 __attribute__((target("avx512f")))

/* AVX2: every rotation as two shifts and an or (a byte shuffle for the rotations by 8
 * and 16, as libsodium does, was slower here: its two constants add to the 16 state
 * vectors' spills from the 16 registers). */
#define ADD8(a, b) _mm256_add_epi32(a, b)
#define XOR8(a, b) _mm256_xor_si256(a, b)
#define ROL8(v, n) _mm256_or_si256(_mm256_slli_epi32(v, n), _mm256_srli_epi32(v, 32 - (n)))
#define QR(a, b, c, d)                                                                         \
  (a = ADD8(a, b), d = ROL8(XOR8(d, a), 16), c = ADD8(c, d), b = ROL8(XOR8(b, c), 12),         \
   a = ADD8(a, b), d = ROL8(XOR8(d, a), 8), c = ADD8(c, d), b = ROL8(XOR8(b, c), 7))

/* v[k], lane b: word w + k of block b (k, b < 8), stored at out[16 b + k], out pointing
 * at word w of block 0 (an 8 x 8 transpose: 32-bit, then 64-bit interleaves within the
 * 128-bit halves, then the halves). */
static inline T2 void store8(uint32_t *out, const __m256i *v)
{
  __m256i t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int j = 0; j < 2; j++) { /* u[4j + r], half h: words 4j.. of block 4h + r */
    u[4 * j] = _mm256_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 1] = _mm256_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 2] = _mm256_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
    u[4 * j + 3] = _mm256_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
  }
  for (int r = 0; r < 4; r++) {
    _mm256_storeu_si256((__m256i *)(out + 16 * r),
                        _mm256_permute2x128_si256(u[r], u[4 + r], 0x20));
    _mm256_storeu_si256((__m256i *)(out + 16 * (4 + r)),
                        _mm256_permute2x128_si256(u[r], u[4 + r], 0x31));
  }
}

static T2 void blocks_avx2(uint32_t *out, size_t n, const uint32_t s[16], uint64_t counter)
{
  for (size_t b = 0; b < n; b += 8, out += 8 * 16) {
    uint32_t lo[8], hi[8];
    counters(lo, hi, 8, counter + b);
    __m256i in[16], x[16];
    for (int k = 0; k < 16; k++) in[k] = _mm256_set1_epi32((int)s[k]);
    in[12] = _mm256_loadu_si256((const __m256i *)lo);
    in[13] = _mm256_loadu_si256((const __m256i *)hi);
    memcpy(x, in, sizeof x);
    for (int r = 0; r < 10; r++) DOUBLE_ROUND(x);
    for (int k = 0; k < 16; k++) x[k] = ADD8(x[k], in[k]);
    store8(out, x);
    store8(out + 8, x + 8);
  }
}
#undef QR

/* AVX-512F: 16 lanes, 32 registers (the state and its input fit), one-instruction
 * rotations. */
#define ADD16(a, b) _mm512_add_epi32(a, b)
#define XOR16(a, b) _mm512_xor_si512(a, b)
#define QR(a, b, c, d)                                                                         \
  (a = ADD16(a, b), d = _mm512_rol_epi32(XOR16(d, a), 16), c = ADD16(c, d),                    \
   b = _mm512_rol_epi32(XOR16(b, c), 12), a = ADD16(a, b),                                     \
   d = _mm512_rol_epi32(XOR16(d, a), 8), c = ADD16(c, d),                                      \
   b = _mm512_rol_epi32(XOR16(b, c), 7))

/* x[k] holding word k of blocks 0..15, stored block by block: a 16 x 16 transpose (32-bit
 * and 64-bit interleaves within the 128-bit quarters, then a 4 x 4 transpose of quarters). */
static inline T512 void store16(uint32_t *out, const __m512i *x)
{
  __m512i t[16], u[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_epi32(x[2 * i], x[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(x[2 * i], x[2 * i + 1]);
  }
  for (int j = 0; j < 4; j++) { /* u[4j + r], quarter q: words 4j.. of block 4q + r */
    u[4 * j] = _mm512_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 1] = _mm512_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 2] = _mm512_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
    u[4 * j + 3] = _mm512_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
  }
  for (int r = 0; r < 4; r++) { /* blocks r, 4 + r, 8 + r, 12 + r */
    __m512i p = _mm512_shuffle_i32x4(u[r], u[4 + r], 0x44);
    __m512i q = _mm512_shuffle_i32x4(u[8 + r], u[12 + r], 0x44);
    __m512i h = _mm512_shuffle_i32x4(u[r], u[4 + r], 0xee);
    __m512i g = _mm512_shuffle_i32x4(u[8 + r], u[12 + r], 0xee);
    _mm512_storeu_si512(out + 16 * r, _mm512_shuffle_i32x4(p, q, 0x88));
    _mm512_storeu_si512(out + 16 * (4 + r), _mm512_shuffle_i32x4(p, q, 0xdd));
    _mm512_storeu_si512(out + 16 * (8 + r), _mm512_shuffle_i32x4(h, g, 0x88));
    _mm512_storeu_si512(out + 16 * (12 + r), _mm512_shuffle_i32x4(h, g, 0xdd));
  }
}

static T512 void blocks_avx512(uint32_t *out, size_t n, const uint32_t s[16], uint64_t counter)
{
  for (size_t b = 0; b < n; b += 16, out += 16 * 16) {
    uint32_t lo[16], hi[16];
    counters(lo, hi, 16, counter + b);
    __m512i in[16], x[16];
    for (int k = 0; k < 16; k++) in[k] = _mm512_set1_epi32((int)s[k]);
    in[12] = _mm512_loadu_si512(lo);
    in[13] = _mm512_loadu_si512(hi);
    memcpy(x, in, sizeof x);
    for (int r = 0; r < 10; r++) DOUBLE_ROUND(x);
    for (int k = 0; k < 16; k++) x[k] = ADD16(x[k], in[k]);
    store16(out, x);
  }
}
#undef QR

static int cpu_has(int path)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  if (path == DPGD_CHACHA_AVX512) return __builtin_cpu_supports("avx512f");
  if (path == DPGD_CHACHA_AVX2) return __builtin_cpu_supports("avx2");
  return 1;
}
#else
static int cpu_has(int path) { return path == DPGD_CHACHA_SCALAR || path == DPGD_CHACHA_AUTO; }
#endif

static int forced = DPGD_CHACHA_AUTO; /* dpgd_chacha20_force */

int dpgd_chacha20_force(int path)
{
  if (path < DPGD_CHACHA_AUTO || path > DPGD_CHACHA_AVX512 || !cpu_has(path)) return 0;
  forced = path;
  return 1;
}

static int path_now(void)
{
  if (forced != DPGD_CHACHA_AUTO) return forced;
  return cpu_has(DPGD_CHACHA_AVX512) ? DPGD_CHACHA_AVX512
         : cpu_has(DPGD_CHACHA_AVX2) ? DPGD_CHACHA_AVX2
                                     : DPGD_CHACHA_SCALAR;
}

/* n blocks (a multiple of the path's width) on `path`. */
static void blocks_on(int path, uint32_t *out, size_t n, const uint32_t s[16], uint64_t counter)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (path == DPGD_CHACHA_AVX512) {
    blocks_avx512(out, n, s, counter);
    return;
  }
  if (path == DPGD_CHACHA_AVX2) {
    blocks_avx2(out, n, s, counter);
    return;
  }
#else
  (void)path;
#endif
  blocks_scalar(out, n, s, counter);
}

void dpgd_chacha20_blocks(uint32_t *out, size_t nblocks,
                          const uint8_t key[DPGD_CHACHA_KEY_BYTES], uint64_t nonce,
                          uint64_t counter)
{
  uint32_t s[16];
  init_state(s, key, nonce);
  int path = path_now();
  size_t width = path == DPGD_CHACHA_AVX512 ? 16 : path == DPGD_CHACHA_AVX2 ? 8 : 1;
  size_t whole = nblocks - nblocks % width;
  blocks_on(path, out, whole, s, counter);
  if (whole < nblocks) {
    uint32_t rest[MAX_WIDTH * 16];
    blocks_on(path, rest, width, s, counter + whole);
    memcpy(out + 16 * whole, rest, (nblocks - whole) * 16 * sizeof *rest);
    explicit_bzero(rest, sizeof rest);
  }
  explicit_bzero(s, sizeof s); /* the key's copy */
}
