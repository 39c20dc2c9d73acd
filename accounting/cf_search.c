/* cf_search.c -- the exact method's dispatch: closed form for one subsampled release, the
 * eps(delta) search over formula B, the PLD path where it applies, and the fallback to a
 * valid bound (RDP conversions, basic composition) where no exact path answers. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_sf_gamma.h>

#include "cf_internal.h"

/* ---- the exact method ---- */

/* One subsampled-Gaussian release: L is monotone in the output, so
 * delta = P(L > eps) - e^eps Q(L > eps) is a difference of normal tails. Valid for any
 * real eps. */
static double qtail(double z) { return 0.5 * gsl_sf_erfc(z / M_SQRT2); }

static double sg1_delta(double q, double sigma, int dir, double eps)
{
  if (dir == 0) {
    /* remove: L = u(o) > eps  <=>  x > log((e^eps - 1 + q)/q); all o if e^eps <= 1 - q,
     * and then delta = 1 - e^eps E_P[e^{-L}] = 1 - e^eps */
    double r = expm1(eps) + q;
    if (r <= 0) return -expm1(eps);
    double x = log(r / q), o = (2 * sigma * sigma * x + 1) / 2;
    return (1 - q) * qtail(o / sigma) + q * qtail((o - 1) / sigma) -
           exp(eps) * qtail(o / sigma);
  }
  /* add: L = -u(o) > eps  <=>  (1 - q) + q e^x < e^{-eps} */
  double r = expm1(-eps) + q; /* e^{-eps} - (1 - q) */
  if (r <= 0) return 0;
  double x = log(r / q), o = (2 * sigma * sigma * x + 1) / 2;
  return qtail(-o / sigma) -
         exp(eps) * ((1 - q) * qtail(-o / sigma) + q * qtail(-(o - 1) / sigma));
}

int dpgd_acct_delta_single_sg(double q, double sigma, int dir, double eps, dpgd_acct_value *out)
{
  double v = sg1_delta(q, sigma, dir, eps);
  dpgd_acct_cf_clamp_delta(out, v,
                           16 * DBL_EPSILON * (1 + exp(eps)) * fmax(q, 1e-300) + 1e-300);
  return DPGD_OK;
}

/* 1 if the composition is one subsampled-Gaussian entry of at most ACCT_SG_FEW_MAX
 * releases: one has a closed form; 2 or more go to the PLD path, where the contour
 * integral converges too slowly. */
static int few_sg(const dpgd_accountant *a)
{
  return a->n == 1 && a->e[0].kind == ACCT_SUBSAMPLED && a->e[0].count <= ACCT_SG_FEW_MAX;
}

/* What an eps(delta) search keeps between its delta evaluations, per direction: the
 * enumerated atoms and, with subsampled entries, the memo of log M at a fixed c. */
typedef struct {
  atoms at[2];
  lm_memo memo[2];
  int ready[2], use_memo;
} search;

static void search_free(search *S)
{
  for (int d = 0; d < 2; d++) {
    dpgd_acct_cf_atoms_free(&S->at[d]);
    free(S->memo[d].t);
    free(S->memo[d].v);
  }
}

/* The exact method in one direction: closed form for one subsampled release, else
 * formula B (A as fallback with a Gaussian entry). */
static int exact_dir(const dpgd_accountant *a, int dir, double eps, search *S,
                     dpgd_acct_value *o)
{
  const acct_entry *e0 = &a->e[0];
  if (few_sg(a) && e0->count == 1)
    return dpgd_acct_delta_single_sg(e0->par[0], e0->par[1], dir, eps, o);
  int st;
  if (!S) {
    st = dpgd_acct_delta_formula_b(a, dir, eps, o);
  } else {
    if (dpgd_acct_cf_gl_init()) return DPGD_ENOMEM;
    if (!S->ready[dir]) {
      st = dpgd_acct_cf_enumerate_peel(a, dir, &S->at[dir]);
      if (st) return st;
      lm_memo *m = &S->memo[dir];
      m->cap = ACCT_MEMO_SIZE;
      m->t = malloc(m->cap * sizeof *m->t);
      m->v = malloc(m->cap * sizeof *m->v);
      if (!m->t || !m->v) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (contour memo)");
      for (size_t i = 0; i < m->cap; i++) m->t[i] = NAN;
      S->ready[dir] = 1;
    }
    dpgd_acct_gsl_quiet();
    st =
        dpgd_acct_cf_formula_b(a, dir, eps, &S->at[dir], S->use_memo ? &S->memo[dir] : NULL, o);
    if (st && S->use_memo) { /* the fixed c may be poor far from the root: choose afresh */
      dpgd_error_clear();
      st = dpgd_acct_cf_formula_b(a, dir, eps, &S->at[dir], NULL, o);
    }
  }
  if (st && dpgd_acct_gauss_mu2(a) > 0) {
    dpgd_error_clear();
    st = dpgd_acct_delta_formula_a(a, dir, eps, o);
  }
  return st;
}

static int exact_delta_s(const dpgd_accountant *a, double eps, search *S, dpgd_acct_value *out)
{
  dpgd_acct_value best = {0, 0};
  for (int dir = 0; dir <= dpgd_acct_asymmetric(a); dir++) {
    dpgd_acct_value o;
    int st = exact_dir(a, dir, eps, S, &o);
    if (st) return st;
    if (o.value > best.value || dir == 0) best = o;
  }
  *out = best;
  return DPGD_OK;
}

/* sum_j count_j eps_j when every entry is pure eps_j-DP (randomized response, Laplace,
 * discrete pairs: the largest |loss| of either direction), +inf otherwise; rounded up. */
static double pure_dp_eps(const dpgd_accountant *a)
{
  double s = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    double m = 0;
    if (en->kind == ACCT_RR || en->kind == ACCT_LAPLACE) m = en->par[0];
    else if (en->kind == ACCT_DISCRETE)
      for (size_t j = 0; j < en->k; j++)
        if (en->p[j] > 0) m = fmax(m, fabs(log(en->p[j]) - log(en->q[j])));
    if (en->kind != ACCT_RR && en->kind != ACCT_LAPLACE && en->kind != ACCT_DISCRETE)
      return INFINITY;
    s += (double)en->count * m * (1 + 8 * DBL_EPSILON);
  }
  return dpgd_acct_round_up(s * (1 + 2 * (double)a->n * DBL_EPSILON));
}

/* Where no exact path answers (out of its numerical range), the best valid bound: the
 * RDP conversions of Mironov / Balle et al. and, for pure-DP entries, basic composition
 * (eps = sum of the eps_j, delta 0). The note names it; st is returned if none applies. */
static int exact_fallback(const dpgd_accountant *a, int want_eps, double x, int st,
                          dpgd_acct_value *out)
{
  if (st == DPGD_ENOMEM || st == DPGD_EINVAL) return st;
  char why[160];
  snprintf(why, sizeof why, "%s", dpgd_error_last());
  dpgd_acct_value best = {INFINITY, 0};
  const char *name = NULL;
  const dpgd_acct_method ms[2] = {DPGD_ACCT_RDP_CLASSIC, DPGD_ACCT_RDP_BALLE};
  for (int i = 0; i < 2; i++) {
    dpgd_acct_value v;
    int s2 = want_eps ? dpgd_acct_rdp_epsilon(a, ms[i], x, &v)
                      : dpgd_acct_rdp_delta(a, ms[i], x, &v);
    if (!s2 && v.value < best.value) best = v, name = dpgd_acct_method_name(ms[i]);
  }
  double pe = pure_dp_eps(a);
  if (want_eps && pe < best.value) best.value = pe, best.err = 0, name = "basic composition";
  if (!want_eps && x >= pe) best.value = best.err = 0, name = "basic composition";
  dpgd_error_clear();
  if (!name || !isfinite(best.value))
    return DPGD_FAIL(st, "%s; no fallback bound applies", why);
  char note[64];
  snprintf(note, sizeof note, "bound: %s (exact path out of range)", name);
  dpgd_acct_exact_note_set(note);
  *out = best;
  return DPGD_OK;
}

/* The note of an answer whose contour integral stopped on the estimated tail. */
static int estimated_note(void)
{
  if (dpgd_acct_cf_tail_estimated(1) && !dpgd_acct_exact_note()[0])
    dpgd_acct_exact_note_set("cf, contour tail estimated (CF_BOUNDS.md 3)");
  return DPGD_OK;
}

/* 1 if the PLD path answers for the composition: every composition of Gaussian and
 * Poisson-subsampled-Gaussian entries but one subsampled release alone (a closed form).
 * Its bracket is proven (given the stated FFT and erfc error bounds, PLD.md), where the
 * contour integral's quadrature and, without a Gaussian entry, its tail are estimates
 * (CF_BOUNDS.md 3); where the PLD path cannot answer, the fallback bound does. */
static int pld_first(const dpgd_accountant *a)
{
  return dpgd_acct_pld_applies(a) && !(few_sg(a) && a->e[0].count == 1);
}

int dpgd_acct_exact_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  int st;
  dpgd_acct_cf_tail_estimated(1);
  if (pld_first(a)) st = dpgd_acct_pld_delta(a, eps, out);
  else st = exact_delta_s(a, eps, NULL, out);
  return st ? exact_fallback(a, 0, eps, st, out) : estimated_note();
}

typedef struct {
  const dpgd_accountant *a;
  double target, floor; /* delta; ACCT_EPS_FLOOR delta */
  search *S;
  int status;
  /* the last ACCT_EPS_KNOWN evaluations: Brent starts from the bracket's ends and, once
   * converged, may ask for the same eps again */
  int nknown, next;
  double known_eps[ACCT_EPS_KNOWN], known_f[ACCT_EPS_KNOWN];
} eps_root;

static double eps_f(double eps, void *vp)
{
  eps_root *r = vp;
  for (int i = 0; i < r->nknown; i++)
    if (eps == r->known_eps[i]) return r->known_f[i];
  dpgd_acct_value v;
  int st = exact_delta_s(r->a, eps, r->S, &v);
  if (st) {
    r->status = st;
    return GSL_NAN;
  }
  /* log(v + floor) - log(target + floor): zero exactly where v = target and <= 0 exactly
   * where v <= target, like log v - log target, but bounded below where delta(eps) = 0
   * (eps beyond the largest loss), where a steep -inf-like value would pull Brent's
   * secant steps to eps near 0 (poor for the search's fixed c, and slow) */
  double f = log(v.value + r->floor) - log(r->target + r->floor);
  r->known_eps[r->next] = eps, r->known_f[r->next] = f;
  r->next = (r->next + 1) % ACCT_EPS_KNOWN;
  if (r->nknown < ACCT_EPS_KNOWN) r->nknown++;
  return f;
}

/* Fixes c per direction at the saddle point for eps_c and forgets what was computed at
 * the previous c (the memo of log M and the remembered evaluations but f(0), which was
 * computed with c chosen afresh). */
static void search_centre(eps_root *r, double eps_c, double f0)
{
  for (int dir = 0; dir <= dpgd_acct_asymmetric(r->a); dir++) {
    cf_ctx x = {.a = r->a, .dir = dir, .eps = eps_c};
    lm_memo *m = &r->S->memo[dir];
    m->c = dpgd_acct_cf_find_c(&x);
    m->t0 = 0;
    m->n = 0;
    for (size_t i = 0; m->t && i < m->cap; i++) m->t[i] = NAN;
  }
  r->nknown = r->next = 0;
  if (!isnan(f0)) {
    r->known_eps[0] = 0, r->known_f[0] = f0;
    r->nknown = r->next = 1;
  }
}

/* Brent on [0, hi] where hi is the Balle et al. RDP eps (an upper bound of the exact
 * one; doubled if numerics disagree), with c fixed per direction at the saddle for
 * 0.9 hi and log M remembered across evaluations; again with c at the answer while the
 * answer is far from where c was chosen (ACCT_EPS_RECENTRE). */
static int exact_epsilon_s(eps_root *r, double delta, dpgd_acct_value *out)
{
  dpgd_acct_value rv = {0, 0};
  double hi = 1;
  if (dpgd_acct_rdp_epsilon(r->a, DPGD_ACCT_RDP_BALLE, delta, &rv) != DPGD_OK) rv.value = 0;
  if (rv.value > 0 && rv.value < 1e4) hi = rv.value;
  dpgd_error_clear();
  /* far beyond the search's range (1e4 below): the fallback bound answers at once */
  if (rv.value > 4e4 && isfinite(rv.value))
    return DPGD_FAIL(DPGD_ERANGE, "exact eps(delta=%g) far exceeds 1e4", delta);
  if (dpgd_acct_cf_gl_init()) return DPGD_ENOMEM;
  double centre = 0.9 * hi;
  search_centre(r, centre, NAN);
  double f0 = eps_f(0, r);
  if (r->status) return r->status;
  if (f0 <= 0) {
    out->value = out->err = 0;
    return DPGD_OK;
  }
  r->S->use_memo = 1;
  double e = hi;
  for (int pass = 0;; pass++) {
    double lo = 0, f = 0, e_prev = e;
    for (int i = 0;; i++) {
      f = eps_f(hi, r);
      if (r->status || f <= 0 || pass > 0) break;
      if (i > 60 || hi > 1e4)
        return DPGD_FAIL(DPGD_ERANGE, "exact eps(delta=%g) exceeds %g", delta, hi);
      lo = hi, hi *= 2;
    }
    /* Brent starts from the values at the bracket's ends found above (remembered by
     * eps_f; f(0) with c chosen afresh: any c gives an upper bound) */
    gsl_function F = {eps_f, r};
    int st = r->status ? r->status : f > 0 ? DPGD_ERANGE : dpgd_acct_brent(&F, lo, hi, 1, &e);
    if (st && pass > 0) { /* a later pass's c did worse: the previous answer stands */
      r->status = 0;
      dpgd_error_clear();
      e = e_prev;
      break;
    }
    if (st) return st;
    if (pass + 1 >= ACCT_EPS_PASSES || fabs(e - centre) <= ACCT_EPS_RECENTRE * centre) break;
    /* e is an upper bound already: the next pass searches [0, e] with c at e */
    centre = hi = e;
    search_centre(r, centre, f0);
  }
  /* e is the bracket's private end (delta bound <= delta there); the value also carries
   * the root tolerance, as every dpgd_acct_value does. */
  out->err = e * ACCT_ROOT_RELTOL;
  out->value = dpgd_acct_round_up(e + out->err);
  return DPGD_OK;
}

int dpgd_acct_exact_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out)
{
  dpgd_acct_cf_tail_estimated(1);
  if (pld_first(a)) {
    int st = dpgd_acct_pld_epsilon(a, delta, out);
    return st ? exact_fallback(a, 1, delta, st, out) : DPGD_OK;
  }
  search S;
  memset(&S, 0, sizeof S);
  eps_root r = {.a = a, .target = delta, .floor = ACCT_EPS_FLOOR * delta, .S = &S};
  int st = exact_epsilon_s(&r, delta, out);
  search_free(&S);
  return st ? exact_fallback(a, 1, delta, st, out) : estimated_note();
}
