/* ledger_sg.h -- what ledger.c calls of ledger_sg.c (filtered DP-SGD): the caps and the
 * charge of a step of a ledger made by dpgd_ledger_alloc_sg. */
#ifndef DPGD_LEDGER_SG_H
#define DPGD_LEDGER_SG_H

#include "dpgd_train.h"

void dpgd_ledger_sg_caps(const dpgd_ledger *l, double *caps /* (n) out */);
int dpgd_ledger_sg_spend(dpgd_ledger *l);

#endif
