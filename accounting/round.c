/* round.c -- display rounding of privacy numbers in the private direction. */
#include <float.h>
#include <math.h>

#include "dpgd_accounting.h"

double dpgd_round_digits(double v, int digits, int dir)
{
  if (!(v > 0) || isinf(v) || digits < 1 || digits > 17) return v;
  /* Slack of 4 ulps, so that a value that is already a short decimal (0.2033 read back
   * from a file, slightly above 0.2033 in binary) is not bumped by a unit in its last
   * digit. The numbers shown are padded by more than that when they are computed. */
  double tol = 4 * DBL_EPSILON * v, lo = v - tol, hi = v + tol;
  /* v = k * 10^e with k in [10^(digits-1), 10^digits) */
  int e = (int)floor(log10(v)) - (digits - 1);
  double p = pow(10, e);
  if (!(p >= DBL_MIN)) {
    /* 10^e is not a normal double (v below about 1e-292): step v by more than half a
     * unit of its digits-th digit and by two subnormal units, so that printing the
     * result at `digits` significant digits (round to nearest) stays on the stated side. */
    double step = fmax(2 * pow(10, 1 - digits) * v, 2 * DBL_TRUE_MIN);
    return dir > 0 ? v + step : fmax(v - step, 0);
  }
  double k = dir > 0 ? ceil(lo / p) : floor(hi / p);
  double r = k * p;
  /* lo / p and k * p each round once: step k until r is on the stated side. */
  for (int i = 0; i < 4 && (dir > 0 ? r < lo : r > hi); i++) {
    k += dir > 0 ? 1 : -1;
    r = k * p;
  }
  return r;
}
