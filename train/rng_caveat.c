/* rng_caveat.c -- the statement a secure run's outputs carry about its noise: secure mode
 * draws Gaussian noise in floating point (train/noise.c), a mitigation of the known
 * attacks on floating-point noise, while every eps dpgd prints is proven for real noise. */
#include "dpgd_train.h"

const char *dpgd_rng_secure_caveat(void)
{
  return "secure rng: the Gaussian noise is computed in floating point (a sum of several "
         "normals from getrandom, Holohan & Braghin 2021), which mitigates floating-point "
         "attacks on the noise (Mironov 2012) but is not a proof: the printed eps is proven "
         "for exact real-valued Gaussian noise, not for its floating-point rendering";
}
