/* tanh.c -- tanh of a float array, in double, in a loop the compiler vectorises: the CNN's
 * tanh activation (model.activation = tanh). glibc's tanhf is a scalar call, about 20 ns
 * an element here, and a full pass of the MNIST CNN makes about 4000 of them an example:
 * several seconds a pass, more than the rest of the pass. Not privacy code: the
 * activation only shapes the gradient, which the engine clips whatever it is.
 *
 * tanh t = (1 - e) / (1 + e), e = exp(-2 t) for t = |x| (then the sign of x). With
 * y = -2 t log2(e) = k + r, k = round(y) an integer in [-28, 0] (t is clamped at 9.5,
 * where tanh is 1 in float: 1 - tanh(9.5) < 2^-26), r in [-1/2, 1/2]:
 *   e = 2^k (1 + m),  m = 2^r - 1 = expm1(r ln 2) by its Taylor series to z^10 / 10!
 * (Horner, the coefficients 1/j! rounded to double; z = r ln 2, |z| <= 0.347:
 * truncation below 2^-35 relative to m, so m is accurate relative to itself, also near
 * t = 0 where 1 - e is small). 1 - e = -(2^k m + (2^k - 1))
 * and 1 + e = 2 + 2^k m + (2^k - 1), with 2^k - 1 exact. So the double result is within a
 * few 2^-50 of tanh x relative, and its rounding to float is tanh x correctly rounded
 * except when tanh x is within that of a halfway point (about 1 ulp at worst).
 *
 * Only +, -, *, /, comparisons and selections, fabs and copysign: no FMA can be formed
 * (x86-64 baseline and AVX2 without FMA), so the vectorised loop, its AVX2 clone and the
 * scalar reference give the same bits (tested). NaN stays NaN, +-inf gives +-1. Built
 * with -fno-trapping-math (model/CMakeLists.txt): it lets the vectoriser turn the
 * selections into blends; the values are the same. */
#include <math.h>

#include "layers.h"
#include "vec4.h"

static inline float tanh_one(float xf)
{
  double x = (double)xf, t = fabs(x);
  t = t > 9.5 ? 9.5 : t;                 /* NaN stays NaN */
  double y = -2.8853900817779268 * t;    /* -2 log2(e) t, in [-27.42, 0] */
  double kd = (y + 0x1.8p52) - 0x1.8p52; /* round to nearest integer, exact */
  double r = y - kd, z = r * 0.69314718055994531;
  const double c2 = 1.0 / 2, c3 = 1.0 / 6, c4 = 1.0 / 24, c5 = 1.0 / 120, c6 = 1.0 / 720,
               c7 = 1.0 / 5040, c8 = 1.0 / 40320, c9 = 1.0 / 362880, c10 = 1.0 / 3628800;
  double m = c10;
  m = c9 + z * m, m = c8 + z * m, m = c7 + z * m, m = c6 + z * m, m = c5 + z * m;
  m = c4 + z * m, m = c3 + z * m, m = c2 + z * m, m = 1 + z * m, m = z * m;
  /* 2^kd for kd in [-28, 0]: powers 2^-16, 2^-8, ... selected by the bits of -kd (the
   * selections pick constants, so that the loop has no branch to vectorise around) */
  double n = -kd, s = 1, b;
  b = n >= 16 ? 16 : 0, n -= b, s *= b != 0 ? 0x1p-16 : 1;
  b = n >= 8 ? 8 : 0, n -= b, s *= b != 0 ? 0x1p-8 : 1;
  b = n >= 4 ? 4 : 0, n -= b, s *= b != 0 ? 0x1p-4 : 1;
  b = n >= 2 ? 2 : 0, n -= b, s *= b != 0 ? 0x1p-2 : 1;
  s *= n >= 1 ? 0x1p-1 : 1;
  double em1 = s * m + (s - 1); /* e - 1 */
  return (float)copysign(-em1 / (2 + em1), x);
}

DPGD_CLONES void dpgd_tanh_f32(float *a, size_t n)
{
  for (size_t i = 0; i < n; i++) a[i] = tanh_one(a[i]);
}

__attribute__((noinline)) void dpgd_tanh_f32_ref(float *a, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    volatile float v = a[i]; /* one element at a time: no vectorisation */
    a[i] = tanh_one(v);
  }
}
