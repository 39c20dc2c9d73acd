/* plan_internal.h -- helpers shared by plan.c and run.c (not part of the public API). */
#ifndef DPGD_PLAN_INTERNAL_H
#define DPGD_PLAN_INTERNAL_H

#include "dpgd_accounting.h"
#include "dpgd_train.h"

/* 1 if a stopping query follows step t. */
int dpgd_plan_query_due(const dpgd_plan *p, size_t t);
/* The releases of training step t / of one stopping query, added to a. */
int dpgd_plan_add_step(dpgd_accountant *a, const dpgd_plan *p, size_t t);
int dpgd_plan_add_query(dpgd_accountant *a, const dpgd_plan *p);
/* A new accountant holding every release of steps 1..t and their queries. */
int dpgd_plan_accountant(dpgd_accountant **out, const dpgd_plan *p, size_t t);
/* eps at delta under every method (NAN and the status where a method fails). */
void dpgd_plan_epsilons(const dpgd_accountant *a, double delta, double *eps /* (5) */,
                        int *status /* (5) or NULL */);

/* plan_sg.c (filtered DP-SGD, train/DPSGD_FILTER.md section 4): eps at delta of the
 * filter of k full-rate steps at rate q and multiplier sigma (optimal RDP conversion),
 * and the smallest sigma whose filter eps is at most eps (into p->sigma). */
int dpgd_plan_sg_epsilon(double q, double sigma, double k, double delta, double *eps);
int dpgd_plan_sg_calibrate(dpgd_plan *p, double k, double eps);

#endif
