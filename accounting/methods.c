/* methods.c -- the names of the accounting methods: the one table that the config
 * schema, the metrics.csv columns, summary.json, plots, sweeps and the account command
 * all read. Kept apart from the accountant so that it links without GSL. */
#include <stdio.h>
#include <string.h>

#include "dpgd_accounting.h"

const char *const dpgd_acct_method_names[DPGD_ACCT_N_METHODS + 1] = {
    "exact", "zcdp", "rdp_classic", "rdp_balle", "rdp_optimal", NULL};

const char *dpgd_acct_method_name(dpgd_acct_method m)
{
  if ((int)m < 0 || m >= DPGD_ACCT_N_METHODS) return "unknown";
  return dpgd_acct_method_names[m];
}

int dpgd_acct_method_find(const char *name)
{
  if (!name) return -1;
  for (int i = 0; i < DPGD_ACCT_N_METHODS; i++)
    if (!strcmp(name, dpgd_acct_method_names[i])) return i;
  return -1;
}

const char *dpgd_acct_method_list(char *buf, size_t size, const char *sep)
{
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (int i = 0; i < DPGD_ACCT_N_METHODS && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? sep : "",
                             dpgd_acct_method_names[i]);
  return buf;
}
