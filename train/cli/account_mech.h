/* account_mech.h -- the mechanisms of 'dpgd account' and 'dpgd calibrate' from their
 * command-line specifications (account_mech.c). */
#ifndef DPGD_ACCOUNT_MECH_H
#define DPGD_ACCOUNT_MECH_H

#include "dpgd_accounting.h"

/* The help text of the mechanism flags, shared by both commands' usages. */
extern const char dpgd_cli_mech_help[];

/* If flag is a mechanism flag, parses spec (key=value,...) and adds the mechanism to a:
 * 0 added, 1 an error (printed, naming the flag); -1 when flag is not a mechanism. */
int dpgd_cli_add_mechanism(dpgd_accountant *a, const char *flag, const char *spec_in);

/* Which neighbouring relations the without-replacement flags asked for (bit
 * DPGD_ACCT_ADD_REMOVE, bit DPGD_ACCT_REPLACE_ONE), for the relation line. */
unsigned dpgd_cli_wor_relations(void);

#endif /* DPGD_ACCOUNT_MECH_H */
