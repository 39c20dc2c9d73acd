/* pool512.c -- layers.c's max pooling (2 x 2 window, stride 1, channels-last) in
 * sixteen-lane AVX-512 vectors, for CPUs with AVX-512F, BW and VL (every AVX-512 CPU but
 * the Xeon Phi) and channel counts that are a multiple of 16 (the CNN's 16 and 32). The
 * vectors compare, select and add with layers.c's rules and in its order, so the bits are
 * those of the eight-lane kernels and of the _ref twins (tests/model/test_layers_fast.c);
 * only the speed changes. The argmax offsets are bytes, sixteen to a 128-bit vector,
 * compared straight into a lane mask (BW, VL): backward's loads are mostly the four
 * gradients it adds, not as many 64-byte vectors of offsets. */
#include "layers.h"

static int force_off; /* dpgd_pool512_force_off */

void dpgd_pool512_force_off(int on) { force_off = on != 0; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define INL static inline __attribute__((always_inline)) T512

/* relu's a < 0 ? +0 : a. vmaxps returns its second operand when either is NaN or both are
 * zero, so max(+0, a) is +0 for a < 0 and a itself for a NaN, -0, +0 or a > 0. */
INL __m512 load_act(const float *p, int relu)
{
  const __m512 v = _mm512_loadu_ps(p);
  return relu ? _mm512_max_ps(_mm512_setzero_ps(), v) : v;
}

/* Where v wins over m (layers.c's pool_wins): v > m, or v NaN and m not. NLE_UQ is v > m
 * or either NaN; it is taken only where m is ordered. */
INL __mmask16 wins(__m512 v, __m512 m)
{
  return _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(m, m, _CMP_ORD_Q), v, m, _CMP_NLE_UQ);
}

/* The pick of a row pair (p, p + c): *m the winner, *a its offset 0 or 1. */
INL void pick_pair(__m512 *m, __m128i *a, const float *p, size_t c, int relu)
{
  const __m512 v0 = load_act(p, relu), v1 = load_act(p + c, relu);
  const __mmask16 k = wins(v1, v0);
  *m = _mm512_mask_mov_ps(v0, k, v1);
  *a = _mm_maskz_mov_epi8(k, _mm_set1_epi8(1));
}

/* Sixteen channels of one image, separably. Rank the values with NaN above every number,
 * equal numbers (+0 and -0 among them) and all NaNs equal: the scan x00, x01, x10, x11
 * keeps the first candidate of the highest rank, and so does picking, in each row pair,
 * its first of the highest rank, then the upper pair's unless the lower's ranks strictly
 * higher (the upper row comes first in the scan): the same candidate, its bits moved
 * unchanged, its offset that in its pair plus 2 for the lower row. So each row pair is
 * picked once and serves as the lower half of one window and the upper of the next down
 * its column. */
INL void forward16(float *y, uint8_t *arg, const float *x, size_t h, size_t w, size_t c,
                   int relu)
{
  const size_t oh = h - 1, ow = w - 1;
  const __m128i two = _mm_set1_epi8(2), none = _mm_set1_epi8(POOL_NONE);
  for (size_t j = 0; j < ow; j++) {
    const float *p = x + j * c;
    __m512 mu, ml;
    __m128i au, al;
    pick_pair(&mu, &au, p, c, relu);
    for (size_t i = 0; i < oh; i++) {
      p += w * c;
      pick_pair(&ml, &al, p, c, relu);
      const __mmask16 k = wins(ml, mu);
      const size_t o = (i * ow + j) * c;
      const __m512 m = _mm512_mask_mov_ps(mu, k, ml);
      __m128i a = _mm_mask_add_epi8(au, k, al, two);
      if (relu) /* POOL_NONE where m is not > 0 */
        a = _mm_mask_mov_epi8(a, _mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_NGT_UQ), none);
      _mm512_storeu_ps(y + o, m);
      _mm_storeu_si128((__m128i *)(arg + o), a);
      mu = ml, au = al;
    }
  }
}

INL void forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h, size_t w, size_t c,
                 int relu)
{
  const size_t ni = h * w * c, no = (h - 1) * (w - 1) * c;
  for (size_t b = 0; b < B; b++)
    for (size_t ch = 0; ch < c; ch += 16)
      forward16(y + b * no + ch, arg + b * no + ch, x + b * ni + ch, h, w, c, relu);
}

/* One input pixel's channels (layers.c's pool_gather), sixteen at a time: dx at d is the
 * sum of dy over the output pixels up-left, up, left and at the pixel (scan order; o
 * their offset at the pixel, r the outputs' row stride) that exist (ul, ur, ll, lr) and
 * whose arg is the pixel's offset in their window (3, 2, 1, 0). The sum starts at +0 and
 * skips the others, where layers.c adds +0: the same bits, since a sum that starts at +0
 * is never -0 in round to nearest, and s + (+0) is s for every other s (NaN, infinity). */
enum { ACT_NONE, ACT_RELU, ACT_TANH };

INL __m512 add_if(__m512 s, const float *g, const uint8_t *a, char q)
{
  const __mmask16 k =
      _mm_cmpeq_epi8_mask(_mm_loadu_si128((const __m128i *)a), _mm_set1_epi8(q));
  return _mm512_mask_add_ps(s, k, s, _mm512_loadu_ps(g));
}

INL void gather(float *d, const float *dy, const uint8_t *arg, size_t o, size_t r, size_t c,
                int ul, int ur, int ll, int lr, const float *z, int act)
{
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  for (size_t ch = 0; ch < c; ch += 16) {
    __m512 s = zero;
    if (ul) s = add_if(s, dy + (o - r - c + ch), arg + (o - r - c + ch), 3);
    if (ur) s = add_if(s, dy + (o - r + ch), arg + (o - r + ch), 2);
    if (ll) s = add_if(s, dy + (o - c + ch), arg + (o - c + ch), 1);
    if (lr) s = add_if(s, dy + (o + ch), arg + (o + ch), 0);
    if (act == ACT_RELU) /* z > 0 ? s : +0 */
      s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(z + ch), zero, _CMP_GT_OQ), s);
    if (act == ACT_TANH) { /* s (1 - z z), each operation rounded alone */
      const __m512 zv = _mm512_loadu_ps(z + ch);
      s = _mm512_mul_ps(s, _mm512_sub_ps(one, _mm512_mul_ps(zv, zv)));
    }
    _mm512_storeu_ps(d + ch, s);
  }
}

/* One input row: up, lo whether the output rows above and at it exist. Offsets are
 * unsigned and may wrap where a neighbour does not exist; they are read only where it
 * does. */
INL void backward_row(float *d, const float *dy, const uint8_t *arg, size_t o, size_t w,
                      size_t c, const float *z, int act, int up, int lo)
{
  const size_t ow = w - 1, r = ow * c;
  gather(d, dy, arg, o, r, c, 0, up && ow, 0, lo && ow, z, act);
  if (ow == 0) return;
  for (size_t xx = 1; xx < ow; xx++)
    gather(d + xx * c, dy, arg, o + xx * c, r, c, up, up, lo, lo, z ? z + xx * c : z, act);
  gather(d + ow * c, dy, arg, o + ow * c, r, c, up, 0, lo, 0, z ? z + ow * c : z, act);
}

/* layers.c's pool_backward: gathered per input pixel, row by row. */
INL void backward(float *dx, const float *dy, const uint8_t *arg, size_t B, size_t h, size_t w,
                  size_t c, const float *z, int act)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t b = 0; b < B; b++)
    for (size_t yy = 0; yy < h; yy++) {
      const size_t at = ((b * h + yy) * w) * c, o = ((b * oh + yy) * ow) * c;
      float *d = dx + at;
      const float *zr = z ? z + at : z;
      if (yy > 0 && yy < oh) backward_row(d, dy, arg, o, w, c, zr, act, 1, 1);
      else if (yy > 0) backward_row(d, dy, arg, o, w, c, zr, act, 1, 0);
      else backward_row(d, dy, arg, o, w, c, zr, act, 0, yy < oh);
    }
}

/* forward and backward with 16 and 32 channels (the CNN's two poolings) as constants, so
 * that the channel loops unroll and every offset folds: the same operations, fewer of the
 * rest. */
#define BY_CHANNELS(F, c, ...)                                                                 \
  do {                                                                                         \
    if ((c) == 16) F(__VA_ARGS__, 16);                                                         \
    else if ((c) == 32) F(__VA_ARGS__, 32);                                                    \
    else F(__VA_ARGS__, c);                                                                    \
  } while (0)
#define BACKWARD(dx, dy, arg, B, h, w, z, act, c) backward(dx, dy, arg, B, h, w, c, z, act)

static T512 void backward_plain(float *dx, const float *dy, const uint8_t *arg, size_t B,
                                size_t h, size_t w, size_t c)
{
  BY_CHANNELS(BACKWARD, c, dx, dy, arg, B, h, w, NULL, ACT_NONE);
}

static T512 void backward_relu(float *dx, const float *dy, const uint8_t *arg, const float *z,
                               size_t B, size_t h, size_t w, size_t c)
{
  BY_CHANNELS(BACKWARD, c, dx, dy, arg, B, h, w, z, ACT_RELU);
}

static T512 void backward_tanh(float *dx, const float *dy, const uint8_t *arg, const float *z,
                               size_t B, size_t h, size_t w, size_t c)
{
  BY_CHANNELS(BACKWARD, c, dx, dy, arg, B, h, w, z, ACT_TANH);
}
#define FORWARD(y, arg, x, B, h, w, relu, c) forward(y, arg, x, B, h, w, c, relu)

static T512 void forward_plain(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                               size_t w, size_t c)
{
  BY_CHANNELS(FORWARD, c, y, arg, x, B, h, w, 0);
}

static T512 void forward_relu(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                              size_t w, size_t c)
{
  BY_CHANNELS(FORWARD, c, y, arg, x, B, h, w, 1);
}

#undef BY_CHANNELS
#undef BACKWARD
#undef FORWARD

static int have_bw(void)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

static int use512(size_t c) { return !force_off && c % 16 == 0 && have_bw(); }
#endif

int dpgd_maxpool512_forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                            size_t w, size_t c, int relu)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (use512(c)) {
    if (relu) forward_relu(y, arg, x, B, h, w, c);
    else forward_plain(y, arg, x, B, h, w, c);
    return 1;
  }
#endif
  (void)y, (void)arg, (void)x, (void)B, (void)h, (void)w, (void)c, (void)relu;
  return 0;
}

int dpgd_maxpool512_backward(float *dx, const float *dy, const uint8_t *arg, const float *a,
                             size_t B, size_t h, size_t w, size_t c, dpgd_activation act)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (use512(c)) {
    if (!a) backward_plain(dx, dy, arg, B, h, w, c);
    else if (act == DPGD_ACT_TANH) backward_tanh(dx, dy, arg, a, B, h, w, c);
    else backward_relu(dx, dy, arg, a, B, h, w, c);
    return 1;
  }
#endif
  (void)dx, (void)dy, (void)arg, (void)a, (void)B, (void)h, (void)w, (void)c, (void)act;
  return 0;
}
