/* pld_query.c -- the exact method's PLD answers: eps(delta) and delta(eps) of a
 * composition of Gaussian and subsampled-Gaussian releases, the grid step h refined
 * until the pessimistic (upper) and optimistic (lower) bounds agree within
 * ACCT_PLD_RELTOL or the time budget is spent. PLD.md has the derivation. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "pld_internal.h"

static _Thread_local char note[64];

const char *dpgd_acct_exact_note(void) { return note; }

void dpgd_acct_exact_note_set(const char *s) { snprintf(note, sizeof note, "%s", s ? s : ""); }

int dpgd_acct_pld_applies(const dpgd_accountant *a)
{
  int sg = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (a->e[i].kind == ACCT_SUBSAMPLED) sg = 1;
    else if (a->e[i].kind != ACCT_GAUSSIAN) return 0;
  }
  return sg;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Refines h (each step aims the next bracket at ACCT_PLD_AIM tol of the lower bound, the
 * bracket shrinking like K h) until hi - lo <= tol lo, ACCT_PLD_MAX_ROUNDS grids were
 * tried, a grid did not narrow the bracket, or ACCT_PLD_TIME_S seconds of this thread's
 * CPU time have passed; the best bounds of all grids stand. A grid
 * too fine for ACCT_PLD_MAX_N bins is replaced by a coarser one. A direction
 * whose upper bound is below the other's lower bound cannot decide the maximum and is
 * not refined further; the add direction, which rarely decides it, is tried first on a
 * grid ACCT_PLD_ADD_COARSE times coarser (any grid's upper bound is one). */
static int refine(const dpgd_accountant *a, double h, double tol, int want_eps, double x,
                  double tau, double dref, dpgd_pld_bracket *out, double *h_used)
{
  double t0 = now_s();
  int nd = dpgd_acct_asymmetric(a) + 1, have = 0, st = 0;
  dpgd_pld_bracket d[2] = {{0, 0}, {0, 0}};
  double h_ok = h;
  for (int it = 0; it < ACCT_PLD_MAX_ROUNDS; it++) {
    dpgd_pld_bracket b[2] = {d[0], d[1]};
    st = 0;
    for (int dir = 0; dir < nd && !st; dir++) /* add: first on a coarser grid */
      if (!have || d[dir].hi >= fmax(d[0].lo, d[1].lo))
        st = dpgd_pld_run(a, dir, dir && !have ? ACCT_PLD_ADD_COARSE * h : h, tau, dref,
                          want_eps, x, &b[dir]);
    if (st == DPGD_ERANGE) { /* the grid does not fit: step back, or coarsen the first */
      if (it + 1 < ACCT_PLD_MAX_ROUNDS) dpgd_error_clear();
      h = have ? fmin(1.25 * h, sqrt(h * h_ok)) : 16 * h;
      continue;
    }
    if (st) return st;
    /* every grid's bounds are bounds: keep the best of each (a finer grid can be worse
     * where the FFT and aliasing terms, which grow with N, approach delta) */
    double w_prev = have ? out->hi - out->lo : INFINITY;
    for (int dir = 0; dir < nd; dir++) {
      if (!have || b[dir].hi < d[dir].hi) d[dir].hi = b[dir].hi, *h_used = h;
      d[dir].lo = have ? fmax(d[dir].lo, b[dir].lo) : b[dir].lo;
    }
    h_ok = h, have = 1;
    out->hi = fmax(d[0].hi, d[1].hi), out->lo = fmax(d[0].lo, d[1].lo);
    double w = out->hi - out->lo;
    if (w <= tol * out->lo || !(w < w_prev) || now_s() - t0 > ACCT_PLD_TIME_S) break;
    double f = out->lo > 0 ? sqrt(ACCT_PLD_AIM * tol * out->lo / w) : 0.25;
    h *= fmin(fmax(f, 1.0 / 64), 1 / 1.5);
  }
  if (have) dpgd_error_clear();
  return have ? DPGD_OK : st ? st : DPGD_FAIL(DPGD_ERANGE, "PLD: no grid fits");
}

static void set_note(double h)
{
  char s[64];
  snprintf(s, sizeof s, "pld h=%.3g (FFT rounding bound assumed)", h);
  dpgd_acct_exact_note_set(s);
}

static uint64_t releases(const dpgd_accountant *a)
{
  uint64_t k = dpgd_acct_n_releases(a);
  return k ? k : 1;
}

/* An upper bound on delta(0), the total variation distance of the composition:
 * 1 - prod (1 - TV_e)^k_e (a coupling of each factor), TV = q erf(1/(2 sqrt2 sigma)) for a
 * subsampled Gaussian in either direction and erf(mu/(2 sqrt2)) for a Gaussian. */
static double tv_bound(const dpgd_accountant *a)
{
  double s = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *e = &a->e[i];
    double tv = e->kind == ACCT_GAUSSIAN ? erf(e->par[0] / (2 * M_SQRT2))
                                         : e->par[0] * erf(1 / (2 * M_SQRT2 * e->par[1]));
    s += (double)e->count * log1p(-fmin(1, tv * (1 + 1e-12)));
  }
  return fmin(1, -expm1(s) * (1 + 1e-12));
}

int dpgd_acct_pld_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out)
{
  if (delta >= tv_bound(a)) { /* delta(0) <= delta: eps = 0 exactly */
    out->value = out->err = 0;
    dpgd_acct_exact_note_set("pld (total variation at most delta)");
    return DPGD_OK;
  }
  dpgd_acct_value rv;
  double e0 = 1;
  if (dpgd_acct_rdp_epsilon(a, DPGD_ACCT_RDP_BALLE, delta, &rv) == DPGD_OK && rv.value > 0 &&
      isfinite(rv.value))
    e0 = rv.value;
  dpgd_error_clear();
  /* a coarse first grid (the RDP eps is an upper bound: the truth may be far smaller) */
  double k = (double)releases(a), h = e0 * sqrt(ACCT_PLD_RELTOL / (4 * k * sqrt(k)));
  double hu = h;
  dpgd_pld_bracket b;
  int st = refine(a, h, ACCT_PLD_RELTOL, 1, delta, ACCT_PLD_TAIL * delta, delta, &b, &hu);
  if (st) return st;
  out->value = b.hi > 0 ? dpgd_acct_round_up(b.hi) : 0; /* eps = 0 is exact as it is */
  out->err = out->value - b.lo;
  set_note(hu);
  return DPGD_OK;
}

int dpgd_acct_pld_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  double k = (double)releases(a), hu;
  double h = fmax(eps, 0.01) * sqrt(ACCT_PLD_RELTOL / (4 * k * sqrt(k)));
  dpgd_pld_bracket b;
  hu = h;
  int st = refine(a, h, ACCT_PLD_DELTA_RELTOL, 0, eps, ACCT_PLD_DELTA_TAIL, 1e-10, &b, &hu);
  if (st) return st;
  out->value = b.hi > 0 ? fmin(1, dpgd_acct_round_up(b.hi)) : 0;
  out->err = out->value - b.lo;
  set_note(hu);
  return DPGD_OK;
}
