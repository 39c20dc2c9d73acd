/* pld_internal.h -- private to the accountant library: the privacy-loss-distribution
 * (PLD) path of the exact method (pld_pmf.c, pld.c; derivation in accounting/PLD.md). */
#ifndef DPGD_PLD_INTERNAL_H
#define DPGD_PLD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "acct_internal.h"

/* One entry's discretised privacy loss in one direction on the grid l_j = (i0 + j) h: the
 * mass of the losses in (l_j, l_j + h] split between l_j and l_j + h so that both measures'
 * masses are kept ("connect the dots"), every loss <= l_0 at l_0, losses above the last
 * grid point at +inf (accounting/PLD.md section 3). */
typedef struct {
  int64_t i0;   /* grid index of bin 0 */
  size_t n;     /* bins */
  double *p;    /* (n) masses */
  double p_inf; /* mass at +inf (an upper bound of P(L > (i0 + n - 1) h)) */
  double f_low; /* an upper bound of P(L <= i0 h), the mass rounded up into bin 0 */
  double ex;    /* eta: the lower bound's absolute loss in delta per release */
  double shift; /* gamma: the lower bound's shift of eps per release */
  double rel;   /* rho: the lower bound's relative excess of delta per release */
  double l2;    /* ||p||_2, rounded up */
  double *blk;  /* (ceil(n / ACCT_PLD_BLOCK)) block masses, for the Chernoff bounds */
  uint64_t k;   /* releases of this entry */
} dpgd_pld_pmf;

/* Upper bounds on P(L > l) (*S) and P(L <= l) (*F, skipped where F is NULL) under P of
 * one Gaussian or subsampled-Gaussian release in direction dir (0 remove, 1 add), for the
 * real loss l (a double taken as exact to a relative 2^-53), computed in log space. */
void dpgd_pld_loss_tails(const acct_entry *en, int dir, double l, double *S, double *F);
/* Builds the pmf of grid step h between the loss with P(L <= l) <= tau_low and the one
 * with P(L > l) <= tau_inf; dref weighs the lower bound's delta loss against its eps
 * shift (about the delta of interest); DPGD_ERANGE above max_n bins. */
int dpgd_pld_pmf_build(dpgd_pld_pmf *m, const acct_entry *en, int dir, double h, double tau_inf,
                       double tau_low, double dref, size_t max_n);
void dpgd_pld_pmf_free(dpgd_pld_pmf *m);
/* log of an upper bound on E[exp(lam L)] over the finite bins (Chernoff bounds). */
double dpgd_pld_log_mgf(const dpgd_pld_pmf *m, double h, double lam);

/* A two-sided answer: hi is the private-side (upper) bound, lo a lower bound of the
 * truth (eps or delta). */
typedef struct {
  double hi, lo;
} dpgd_pld_bracket;

/* One PLD evaluation at grid step h of the whole composition in direction dir (0 remove,
 * 1 add): want_eps: eps(x = delta), else delta(x = eps). tau: the tail and aliasing mass
 * allowed (each is added to the upper bound); dref as in dpgd_pld_pmf_build. */
int dpgd_pld_run(const dpgd_accountant *a, int dir, double h, double tau, double dref,
                 int want_eps, double x, dpgd_pld_bracket *out);

#endif /* DPGD_PLD_INTERNAL_H */
