/* cf_internal.h -- */
#ifndef DPGD_CF_INTERNAL_H
#define DPGD_CF_INTERNAL_H

#include <complex.h>

#include <gsl/gsl_math.h>

#include "acct_internal.h"

typedef struct {
  double l, lw; /* loss, log weight */
} atom;

/* The atomic part of the composition in direction dir: sorted atoms, or *n_out = 0 and
 * NULL when some entry has no atoms (Gaussian-type) or the enumeration exceeds the cap
 * (*too_big = 1). */
typedef struct atoms {
  atom *at; /* (n) sorted by loss */
  size_t n;
  int too_big;
  /* With Laplace entries (filled by enumerate_peel): per Laplace entry j, in entry order,
   * its parameter lap_a[j], count lap_n[j] and the atoms one[j] of the composition with
   * one release of it left out. Without-replacement Laplace entries join them:
   * lap_en[j] is the entry, lap_a[j] its continuous part's largest loss. */
  size_t nlap;
  double *lap_a, *lap_n;
  const acct_entry **lap_en;
  int dir;
  struct atoms *one;
} atoms;

typedef struct {
  const dpgd_accountant *a;
  int dir;
  double eps, c;
  int subtract; /* integrate R = M - D (atoms enumerated separately) */
  /* NULL, or with subtract and Laplace entries: integrate M - D - J1 instead, J1 the
   * terms with one Laplace continuous factor (their delta is peel_delta) */
  const struct atoms *peel;
  struct lm_memo *memo; /* NULL, or log M(c + i t) remembered across an eps search */
} cf_ctx;

/* Memo of log M(c + i t) of the whole composition in one direction at a fixed c. An
 * eps(delta) search keeps c fixed (any c > 0 is exact; c only steers accuracy), so
 * formula B's QAG visits the same nodes t for every eps and M, the expensive part for
 * subsampled Gaussians, is computed once per node. Open addressing on the bits of t. */
typedef struct lm_memo {
  double c;  /* 0 until the first evaluation fixes it */
  double t0; /* t_scale at c, 0 until computed */
  size_t cap, n;
  double *t;         /* (cap), NAN where empty */
  double complex *v; /* (cap) */
} lm_memo;

/* Integrates f over [0, inf) piecewise ([0, T0], [T0, 2 T0], ...) with GSL's QAG until
 * the tail bound tail(T) <= ACCT_TAIL_RELTOL |I| (or ACCT_QUAD_ABSTOL); *err gets QAG's error
 * estimates plus the final tail bound. With `estimate` set (subsampled Gaussians
 * without a Gaussian entry, where no useful closed bound on |M(c + it)| is known), the
 * loop may also stop when the last piece and T |f(T)| are both below the tolerance; the
 * tail is then estimated as ACCT_TAIL_SAFETY times their sum (an estimate, not a proof:
 * CF_BOUNDS.md section 3; such answers are labelled through dpgd_acct_exact_note).
 * `base` >= 0 is a part of the answer known apart from this integral (the enumerated
 * atoms' delta beside the integral of R = M - D >= 0): the tolerances are relative to
 * base + |integral|, so a continuous part far smaller than the atoms' delta is not
 * resolved to a relative accuracy nobody asked for (every error is still added). */
typedef double tail_fn(const void *ctx, double T);

/* ---- cf_mgf.c ---- */
double dpgd_acct_cf_sg_u(double q, double sigma, double o);
double complex dpgd_acct_cf_log_c(double complex z);
int dpgd_acct_cf_gl_init(void);
double dpgd_acct_cf_sg_log_mgf_real(double q, double sigma, int dir, double c);
double dpgd_acct_cf_sg_tv(double q, double sigma, double rw);
size_t dpgd_acct_cf_entry_atoms(const acct_entry *en, int dir, double *l, double *w);
double complex dpgd_acct_cf_atoms_log_mgf(const acct_entry *en, int dir, double complex s);
double complex dpgd_acct_cf_entry_log_mgf(const acct_entry *en, int dir, double complex s);

/* ---- cf_wor_laplace.c: the without-replacement Laplace, add/remove ---- */
int dpgd_acct_wl_is(const acct_entry *en);
size_t dpgd_acct_wl_atoms(const acct_entry *en, int dir, double *l, double *w);
double dpgd_acct_wl_cont_max(const acct_entry *en, int dir);
double complex dpgd_acct_wl_log_cont(const acct_entry *en, int dir, double complex s);
double complex dpgd_acct_wl_log_mgf(const acct_entry *en, int dir, double complex s);
double dpgd_acct_wl_log_cont_bound(const acct_entry *en, int dir, double c, double t);
double dpgd_acct_wl_kernel(const acct_entry *en, int dir, double x);

/* ---- cf_atoms.c ---- */
void dpgd_acct_cf_atoms_free(atoms *at);
int dpgd_acct_cf_enumerate(const dpgd_accountant *a, int dir, atoms *res);
int dpgd_acct_cf_enumerate_peel(const dpgd_accountant *a, int dir, atoms *res);
double dpgd_acct_cf_atoms_delta(const atoms *at, double eps, double *err);
double dpgd_acct_cf_peel_delta(const atoms *at, double eps, double *err);

/* ---- cf_formula_b.c ---- */
double complex dpgd_acct_cf_memo_log_mgf(lm_memo *m, const dpgd_accountant *a, int dir,
                                         double c, double t);
void dpgd_acct_cf_bound_logs(const cf_ctx *x, double t, double *A, double *Bd, double *H);
double dpgd_acct_cf_find_c(cf_ctx *x);
int dpgd_acct_cf_integrate_tail(gsl_function *F, const void *ctx, tail_fn *tail, int estimate,
                                int fixed, double T0, double base, double *val, double *err);
void dpgd_acct_cf_clamp_delta(dpgd_acct_value *out, double v, double err);
/* 1 if an integration of this thread stopped on the estimated tail since the last reset
 * (CF_BOUNDS.md section 3: an estimate, not a proof); reset clears the flag. */
int dpgd_acct_cf_tail_estimated(int reset);
int dpgd_acct_cf_formula_b(const dpgd_accountant *a, int dir, double eps, const atoms *at,
                           lm_memo *memo, dpgd_acct_value *out);
/* Gauss-Legendre nodes and weights on [-1, 1] (this thread's, after dpgd_acct_cf_gl_init). */
extern _Thread_local double dpgd_acct_gl_x[ACCT_SG_GL_NODES], dpgd_acct_gl_w[ACCT_SG_GL_NODES];

#endif /* DPGD_CF_INTERNAL_H */
