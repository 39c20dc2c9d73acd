/* rdp.c -- placeholder replaced below */
#include "acct_internal.h"
int acct_rdp_epsilon(const dpgd_accountant *a, dpgd_acct_method m, double delta,
                     dpgd_acct_value *out)
{ (void)a; (void)m; (void)delta; (void)out; return DPGD_FAIL(DPGD_ENOTIMPL, "RDP methods are not built yet"); }
int acct_rdp_delta(const dpgd_accountant *a, dpgd_acct_method m, double eps,
                   dpgd_acct_value *out)
{ (void)a; (void)m; (void)eps; (void)out; return DPGD_FAIL(DPGD_ENOTIMPL, "RDP methods are not built yet"); }
