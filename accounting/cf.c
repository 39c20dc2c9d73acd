/* cf.c -- placeholder replaced below */
#include "acct_internal.h"
int acct_exact_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{ (void)a; (void)eps; (void)out; return DPGD_FAIL(DPGD_ENOTIMPL, "exact accounting of non-Gaussian mechanisms is not built yet"); }
int acct_exact_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out)
{ (void)a; (void)delta; (void)out; return DPGD_FAIL(DPGD_ENOTIMPL, "exact accounting of non-Gaussian mechanisms is not built yet"); }
