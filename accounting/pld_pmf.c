/* pld_pmf.c -- one release's privacy-loss distribution on a grid of step h, its loss
 * rounded up (pessimistic), for Gaussian and Poisson-subsampled Gaussian entries, and the
 * Chernoff bounds on the tails of a composition of them. Derivation: accounting/PLD.md. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "pld_internal.h"

static double qtail(double z) { return 0.5 * erfc(z / M_SQRT2); }

/* P(L > l) and P(L <= l) of one release in direction dir (0: remove pair, 1: add pair),
 * each from a normal tail so that both keep their relative accuracy (docs/MATH.md
 * "Exact accounting": the loss of the subsampled Gaussian is monotone in the output o). */
void dpgd_pld_loss_tails(const acct_entry *en, int dir, double l, double *S, double *F)
{
  if (en->kind == ACCT_GAUSSIAN) { /* L ~ N(mu^2/2, mu^2) under P in both directions */
    double mu = en->par[0], z = (l - mu * mu / 2) / mu;
    *S = qtail(z), *F = qtail(-z);
    return;
  }
  double q = en->par[0], s = en->par[1];
  /* remove: L = u(o) > l <=> o > s^2 log(r/q) + 1/2, r = e^l - (1 - q);
   * add: L = -u(o) > l <=> o < s^2 log(r/q) + 1/2, r = e^-l - (1 - q) */
  double r = dir ? expm1(-l) + q : expm1(l) + q;
  if (r <= 0) { /* remove: every o has L > l; add: none */
    *S = dir ? 0 : 1, *F = dir ? 1 : 0;
    return;
  }
  double o = s * s * log(r / q) + 0.5;
  if (dir == 0) {
    *S = (1 - q) * qtail(o / s) + q * qtail((o - 1) / s);
    *F = (1 - q) * qtail(-o / s) + q * qtail((1 - o) / s);
  } else {
    *S = qtail(-o / s), *F = qtail(o / s);
  }
}

/* The smallest l with P(L > l) <= tau (upper) or the largest with P(L <= l) <= tau, by
 * bisection over a range that holds every loss the entry can have with more mass. */
static double tail_point(const acct_entry *en, int dir, double tau, int upper)
{
  double w = 1e4;
  if (en->kind == ACCT_GAUSSIAN) w += en->par[0] * en->par[0] + 100 * en->par[0];
  double lo = -w, hi = w, S, F;
  for (int i = 0; i < 200 && hi - lo > 4 * DBL_EPSILON * fmax(fabs(lo), fabs(hi)); i++) {
    double mid = 0.5 * (lo + hi);
    dpgd_pld_loss_tails(en, dir, mid, &S, &F);
    if (upper ? S <= tau : F > tau) hi = mid;
    else lo = mid;
  }
  return upper ? hi : lo;
}

/* An upper bound on P(L > l): the tail of dpgd_pld_loss_tails (alone: the pmf's hot
 * loop) times (1 + ACCT_PLD_CDF_RELERR). */
static double surv_up(const acct_entry *en, int dir, double l)
{
  double S;
  if (en->kind == ACCT_GAUSSIAN) {
    double mu = en->par[0];
    S = qtail((l - mu * mu / 2) / mu);
  } else {
    double q = en->par[0], s = en->par[1], r = dir ? expm1(-l) + q : expm1(l) + q;
    double o = r > 0 ? s * s * log(r / q) + 0.5 : 0;
    if (r <= 0) S = dir ? 0 : 1;
    else if (dir == 0) S = (1 - q) * qtail(o / s) + q * qtail((o - 1) / s);
    else S = qtail(-o / s);
  }
  return fmin(1, S * (1 + ACCT_PLD_CDF_RELERR));
}

/* Masses of bins 1..n-1 from an upper bound of the survival function at the bins' losses
 * (made non-increasing: the smaller of two upper bounds is one), so that the pmf's tail
 * above every bin is at least the true tail: the discrete loss dominates the rounded-up
 * one stochastically. */
static void fill_masses(dpgd_pld_pmf *m, const acct_entry *en, int dir, double h)
{
  double prev = surv_up(en, dir, m->i0 * h), l2 = 0;
  m->p[0] = 1 - prev; /* every loss <= l0, rounded up to l0 */
  l2 += m->p[0] * m->p[0];
  for (size_t j = 1; j < m->n; j++) {
    double S = fmin(prev, surv_up(en, dir, (double)(m->i0 + (int64_t)j) * h));
    m->p[j] = prev - S;
    l2 += m->p[j] * m->p[j];
    prev = S;
  }
  m->p_inf = prev;
  m->l2 = sqrt(l2) * (1 + 1e-12) + DBL_MIN;
}

int dpgd_pld_pmf_build(dpgd_pld_pmf *m, const acct_entry *en, int dir, double h, double tau_inf,
                       double tau_low, size_t max_n)
{
  m->p = m->blk = NULL;
  double lt = tail_point(en, dir, tau_inf, 1), ll = tail_point(en, dir, tau_low, 0);
  double i0 = floor(ll / h), i1 = ceil(lt / h);
  if (!(i1 - i0 + 1 <= (double)max_n))
    return DPGD_FAIL(DPGD_ERANGE, "PLD grid h=%g needs %.3g bins for one release", h,
                     i1 - i0 + 1);
  m->i0 = (int64_t)i0;
  m->n = (size_t)(i1 - i0) + 1;
  m->k = en->count;
  m->p = malloc(m->n * sizeof *m->p);
  m->blk = malloc((m->n / ACCT_PLD_BLOCK + 1) * sizeof *m->blk);
  if (!m->p || !m->blk) {
    dpgd_pld_pmf_free(m);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (PLD of %zu bins)", m->n);
  }
  fill_masses(m, en, dir, h);
  for (size_t b = 0; b < m->n; b += ACCT_PLD_BLOCK) {
    double mass = 0;
    for (size_t j = b; j < m->n && j < b + ACCT_PLD_BLOCK; j++) mass += m->p[j];
    m->blk[b / ACCT_PLD_BLOCK] = mass * (1 + 1e-12);
  }
  double S, F;
  dpgd_pld_loss_tails(en, dir, m->i0 * h, &S, &F);
  m->f_low = F * (1 + ACCT_PLD_CDF_RELERR) + DBL_MIN;
  return DPGD_OK;
}

void dpgd_pld_pmf_free(dpgd_pld_pmf *m)
{
  free(m->p);
  free(m->blk);
  m->p = m->blk = NULL;
}

/* log of an upper bound on E[e^{lam L'}; L' finite] for the discrete loss L' (bin j at
 * loss (i0 + j) h): blocks of ACCT_PLD_BLOCK bins, each at its largest (lam > 0) or
 * smallest (lam < 0) loss, summed in log space. */
double dpgd_pld_log_mgf(const dpgd_pld_pmf *m, double h, double lam)
{
  double mx = -INFINITY, s = 0;
  for (size_t b = 0; b < m->n; b += ACCT_PLD_BLOCK) {
    size_t e = b + ACCT_PLD_BLOCK < m->n ? b + ACCT_PLD_BLOCK : m->n;
    double mass = m->blk[b / ACCT_PLD_BLOCK];
    if (mass <= 0) continue;
    double l = (double)(m->i0 + (int64_t)(lam > 0 ? e - 1 : b)) * h;
    double t = log(mass) + lam * l;
    if (t > mx) s = s * exp(mx - t) + 1, mx = t;
    else s += exp(t - mx);
  }
  return mx + log(s) + 1e-12;
}
