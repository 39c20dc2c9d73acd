/* discrete_gaussian.c -- the multivariate discrete Gaussian mechanism in the accountant:
 * integer-valued queries of L2 sensitivity Delta plus N_Z(0, sigma^2) noise per coordinate
 * are rho-zCDP with rho = Delta^2 / (2 sigma^2), the continuous Gaussian's rho, so their RDP
 * curve is a mu^2 / 2, mu = Delta/sigma (docs/MATH.md "Discrete Gaussian"); no exact
 * privacy curve is proven, so the exact method refuses them. And the continuous twin of a
 * composition, for showing what the proof costs. */
#include <math.h>

#include "acct_internal.h"

int dpgd_acct_add_discrete_gaussian(dpgd_accountant *a, double mu, uint64_t count)
{
  if (!a) return DPGD_FAIL(DPGD_EINVAL, "accountant is NULL");
  if (count < 1) return DPGD_FAIL(DPGD_EINVAL, "count must be >= 1");
  if (!(mu >= 0) || isinf(mu))
    return DPGD_FAIL(DPGD_EINVAL,
                     "discrete Gaussian mu = Delta/sigma must be finite and >= 0 "
                     "(got %g)",
                     mu);
  acct_entry en = {.kind = ACCT_DGAUSS, .count = count, .par = {mu, 0}};
  return dpgd_acct_push(a, &en);
}

int dpgd_acct_has_discrete_gaussian(const dpgd_accountant *a)
{
  for (size_t i = 0; a && i < a->n; i++)
    if (a->e[i].kind == ACCT_DGAUSS || a->e[i].kind == ACCT_SDGAUSS) return 1;
  return 0;
}

dpgd_accountant *dpgd_acct_continuous_twin(const dpgd_accountant *a)
{
  dpgd_accountant *c = dpgd_acct_clone(a);
  for (size_t i = 0; c && i < c->n; i++)
    if (c->e[i].kind == ACCT_DGAUSS) c->e[i].kind = ACCT_GAUSSIAN;
    else if (c->e[i].kind == ACCT_SDGAUSS) c->e[i].kind = ACCT_SUBSAMPLED; /* same q, sigma */
  return c;
}

double dpgd_acct_continuous_epsilon(const dpgd_accountant *a, double delta)
{
  dpgd_accountant *c = dpgd_acct_continuous_twin(a);
  dpgd_acct_value v;
  int rc = c ? dpgd_acct_epsilon(c, DPGD_ACCT_EXACT, delta, &v) : DPGD_ENOMEM;
  dpgd_acct_free(c);
  dpgd_error_clear();
  return rc ? NAN : v.value;
}
