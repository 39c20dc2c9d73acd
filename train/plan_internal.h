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
/* floor(B / C^2), corrected to the number of C^2 additions that fit in B (Algorithm 7's
 * steps at full cap). */
size_t dpgd_plan_full_steps(double budget, double clip);
/* A new accountant holding every release of steps 1..t and their queries. */
int dpgd_plan_accountant(dpgd_accountant **out, const dpgd_plan *p, size_t t);
/* eps at delta under every method (NAN and the status where a method fails). */
void dpgd_plan_epsilons(const dpgd_accountant *a, double delta, double *eps /* (5) */,
                        int *status /* (5) or NULL */);

/* ---- plan_subset.c ---- */
/* count releases of a Poisson (rate q) or subset (m of n, replace-one) step at noise
 * multiplier sigma (accounting/SAMPLING.md for subset). */
int dpgd_plan_add_sampled(dpgd_accountant *a, const dpgd_plan *p, double sigma, uint64_t count);
/* Subset: m <= n, a calibration method that can answer; batch_size, sample_rate, steps. */
int dpgd_plan_subset_setup(dpgd_plan *p, const dpgd_config *c);
/* train.rng = secure: refuses the samplings no proof covers for the discrete Gaussian
 * (subset; filtered Poisson), one line naming the problem. */
int dpgd_plan_secure_check(const dpgd_config *c);
/* p->report_method from p->eps: exact, or for subset and discrete runs the smallest
 * finite rdp_*. */
void dpgd_plan_pick_report(dpgd_plan *p);
/* plan_sg.c (filtered DP-SGD, train/DPSGD_FILTER.md section 4): eps at delta of the
 * filter of k full-rate steps at rate q and multiplier sigma (optimal RDP conversion),
 * and the smallest sigma whose filter eps is at most eps (into p->sigma). */
int dpgd_plan_sg_epsilon(double q, double sigma, double k, double delta, double *eps);
int dpgd_plan_sg_calibrate(dpgd_plan *p, double k, double eps);

#endif
