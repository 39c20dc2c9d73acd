/* acct_internal.h -- private to the accountant library: the entry list, the tunable
 * numerical constants (STYLE.md 13) and the functions the .c files share. Tests include
 * it to reach the individual methods (formula A, formula B, enumeration, RDP curves). */
#ifndef DPGD_ACCT_INTERNAL_H
#define DPGD_ACCT_INTERNAL_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "dpgd_accounting.h"

typedef enum {
  ACCT_GAUSSIAN = 1,   /* par[0] = mu */
  ACCT_LAPLACE = 2,    /* par[0] = a = sensitivity/scale */
  ACCT_RR = 3,         /* par[0] = eps0 */
  ACCT_DISCRETE = 4,   /* p[k], q[k] */
  ACCT_SUBSAMPLED = 5, /* par[0] = q (rate), par[1] = sigma */
  /* without replacement, replace-one neighbours (wor.c): RDP bound only */
  ACCT_WOR_RO_GAUSSIAN = 6, /* par[0] = gamma = m/n, par[1] = sigma */
  ACCT_WOR_RO_LAPLACE = 7,  /* par[0] = gamma = m/n, par[1] = a0 */
  /* without replacement, add/remove neighbours (cf_wor_laplace.c): exact */
  ACCT_WOR_AR_LAPLACE = 8, /* par[0] = gamma = m/n, par[1] = a0 */
  /* multivariate discrete Gaussian (discrete_gaussian.c): zCDP and RDP only */
  ACCT_DGAUSS = 9, /* par[0] = mu = Delta/sigma */
  /* its Poisson subsampling (poisson_rdp.c): RDP only, MATH.md 18.1 */
  ACCT_SDGAUSS = 10 /* par[0] = q (rate), par[1] = sigma (noise multiplier) */
} acct_kind;

typedef struct {
  acct_kind kind;
  uint64_t count;
  double par[2];
  size_t k;      /* discrete: number of outcomes */
  double *p, *q; /* discrete: (k) each, owned */
} acct_entry;

struct dpgd_accountant {
  acct_entry *e; /* (n) */
  size_t n, cap;
};

/* ---- Tunable constants (documented defaults) ---- */
/* Relative tolerance of the root finders for eps(delta), mu(eps, delta), sigma, B. */
#define ACCT_ROOT_RELTOL 1e-13
/* Maximum iterations of any root finder / minimiser. */
#define ACCT_MAX_ITER 300
/* Relative accuracy asked of the contour / Gil-Pelaez quadratures. */
#define ACCT_QUAD_RELTOL 1e-9
/* Relative size of the contour's truncation tail at which T stops growing (the tail
 * bound is added to the reported error, so this trades time for a slightly larger
 * upper bound, never for a wrong one). */
#define ACCT_TAIL_RELTOL 1e-6
/* Absolute error below which the contour's truncation is accepted (deltas this small
 * are zero for every purpose; the error is still reported and added). */
#define ACCT_QUAD_ABSTOL 1e-30
/* Sub-intervals of the adaptive quadrature workspace. */
#define ACCT_QUAD_LIMIT 2000
/* Most equal sub-intervals the eps search's fixed-node quadrature of one contour piece
 * may use before that piece falls back to the adaptive QAG. */
#define ACCT_QUAD_FIXED_MAX 64
/* Largest integer order of the generic Poisson-subsampled RDP bound (poisson_rdp.c); the
 * RDP conversions' integer grid ends here too (rdp.c). */
#define ACCT_POISSON_ALPHA_MAX 256
/* Largest number of atoms exact enumeration of a pure-discrete composition may use. */
#define ACCT_ENUM_MAX_ATOMS 4000000
/* Nodes of the composite Gauss-Legendre rule over the output o of the subsampled
 * Gaussian (per panel) and the number of panels of width sigma. */
#define ACCT_SG_GL_NODES 16
/* Slots and most panels of the memory of sg_log_int's leading panels (cf.c sg_cache). */
#define ACCT_SG_CACHE_SLOTS 4
#define ACCT_SG_CACHE_PANELS 512
/* Fraction of the summed modulus below which sg_log_int stops at a bounded right tail. */
#define ACCT_SG_CUT 1e-30
/* Half-width (in units of sigma) of the window around the integrand's mass. */
#define ACCT_SG_TAIL_SIGMAS 12.0
/* Most panels one subsampled-Gaussian moment integral may use (NaN beyond: the
 * contour quadrature then reports a non-finite integrand). */
#define ACCT_SG_MAX_PANELS 2000
/* Grid cells and extra factor of the proven total-variation bound V behind
 * |M(c+it)| <= V/t (CF_BOUNDS.md section 2). */
#define ACCT_SG_TV_POINTS 4001
#define ACCT_SG_TV_SAFETY 1.05
/* Doublings of the contour's truncation point T before the tail bound is accepted as
 * it stands (it is then part of the reported error). */
#define ACCT_MAX_DOUBLINGS 40
/* Compositions of one subsampled Gaussian with 2 to this many releases go to the PLD
 * path directly (the contour integral converges slowly there; one release has a closed
 * form). */
#define ACCT_SG_FEW_MAX 3
/* Most Gauss-Legendre panels (width <= pi/|s|) of the continuous part of one
 * without-replacement Laplace moment (NaN beyond: the quadrature then reports it). */
#define ACCT_WL_MAX_PANELS 200000
/* The tail tolerance with such an entry: its moments cost a quadrature whose nodes
 * grow with t, and the peeled remainder's tail falls only like T^-3, so T stops at a
 * tail of this fraction of delta (the tail bound is added to the error: a slightly
 * larger upper bound, never a wrong one). */
#define ACCT_WL_TAIL_RELTOL 1e-3
/* Largest contour shift c formula B uses with such an entry. */
#define ACCT_WL_C_MAX 32.0
/* Slots of the per-thread memory of those moments (48 bytes each). */
#define ACCT_WL_CACHE 65536
/* Slots of the memo of log M(c + it) kept during one eps(delta) search. */
#define ACCT_MEMO_SIZE 4096
/* The memo doubles when half full, up to this many slots (24 bytes each). */
#define ACCT_MEMO_MAX 262144
/* The eps search finds the root of log(delta(eps) + f d) - log(d + f d), f this
 * fraction, for target d (the same root as log delta(eps) - log d, finite at delta = 0). */
#define ACCT_EPS_FLOOR 1e-3
/* The eps search fixes the contour shift c at the saddle point of a guess of eps; an
 * answer further than this fraction from the guess is searched again with c at the
 * answer (a c far from the root leaves a loose, if still upper, delta bound: for 1000
 * subsampled releases at q = 0.001, sigma = 1 the first pass gave 0.42, the truth 0.14),
 * at most ACCT_EPS_PASSES passes in all. */
#define ACCT_EPS_RECENTRE 0.1
#define ACCT_EPS_PASSES 4
/* Evaluations of delta(eps) the eps search remembers (Brent may ask for one again). */
#define ACCT_EPS_KNOWN 8
/* Factor on the estimated contour tail where no closed bound is small enough (an
 * estimate, labelled in the answer's note: CF_BOUNDS.md section 3). */
#define ACCT_TAIL_SAFETY 10.0

/* PLD path of the exact method (pld*.c, accounting/PLD.md). Relative width of the
 * bracket [optimistic, pessimistic] of eps at which the grid step stops shrinking. */
#define ACCT_PLD_RELTOL 1e-3
/* Each refinement aims the bracket at this fraction of the tolerance. */
#define ACCT_PLD_AIM 0.7
/* The same for delta(eps) queries (delta moves far more than eps with the grid). */
#define ACCT_PLD_DELTA_RELTOL 1e-2
/* Time after which no finer grid is tried (seconds); the last bracket stands. */
#define ACCT_PLD_TIME_S 4.0
/* Most grid refinements. */
#define ACCT_PLD_MAX_ROUNDS 8
/* Most bins of one pmf and of the composition's FFT (two arrays of doubles each). */
#define ACCT_PLD_MAX_N (1u << 23)
/* Tail and aliasing mass allowed, as a fraction of the target delta (eps queries) or
 * absolute (delta queries); each such mass is added to the upper bound. */
#define ACCT_PLD_TAIL 1e-5
#define ACCT_PLD_DELTA_TAIL 1e-14
/* Relative error bound assumed for glibc's erfc and the sum of two normal tails behind
 * each pmf (about 4500 ulps; glibc's published maximum for erfc is a few ulps). The
 * rounding of the threshold and of erfc's argument is bounded separately (PLD.md 2). */
#define ACCT_PLD_CDF_RELERR 1e-12
/* A bin whose pmf tail exceeds the (split) truth's by at most this fraction counts in
 * the lower bound's relative excess rho, a larger one in its absolute excess eta. */
#define ACCT_PLD_REL_EXCESS 1e-5
/* The first grid of the add direction is this many times coarser (PLD.md section 6). */
#define ACCT_PLD_ADD_COARSE 4.0
/* FFT rounding: ||fft(x)_computed - fft(x)||_2 <= ETA u ceil(log2 N) ||fft(x)||_2 is
 * assumed (Higham 2002, Thm 24.2 gives about (mu + 5.7 u) log2 N for radix 2 with
 * twiddle error mu; GSL's mixed-radix tables compute each twiddle by cos/sin). */
#define ACCT_PLD_FFT_ETA 40.0
/* Bins per block of the Chernoff bound's moment function, and the number of its
 * exponents lam = 2^((i - 12)/2), i < N_LAMBDA. */
#define ACCT_PLD_BLOCK 64
#define ACCT_PLD_N_LAMBDA 40

/* ---- gdp.c: the Gaussian curve (docs/MATH.md "The Gaussian curve") ---- */
/* An upper bound of log delta(eps) of mu-GDP (-inf if delta is 0), its error bound
 * already included (*err = 0, kept for the callers that add one); and delta itself
 * rounded up (*err gets the distance to a lower bound of the truth). GDP.md. */
double dpgd_acct_gdp_log_delta_e(double mu, double eps, double *err);
double dpgd_acct_gdp_delta_e(double mu, double eps, double *err);
/* Bracket [*lo, *hi] of log delta of mu-GDP at z = (eps - mu^2/2)/mu (0 < mu < inf). */
void dpgd_acct_gdp_log_delta_z(double mu, double z, double *lo, double *hi);
/* eps(delta) of mu-GDP (rounded up) and *err, its distance to a lower bound of the
 * truth; DPGD_ERANGE where eps exceeds the double range. */
int dpgd_acct_gdp_epsilon_e(double mu, double delta, double *eps, double *err);

/* Brent root bracketing on [lo, hi] with GSL's abort handler off; returns the
 * upper or lower bracket end at convergence. */
struct gsl_function_struct;
/* Turns GSL's error handler off for the whole process, once (thread-safe): the library
 * checks the status of every GSL call, and GSL's default handler would abort the
 * program. Swapping the handler off and back around each call raced between threads
 * (the handler is one global), so it is switched off for good at the first use. */
void dpgd_acct_gsl_quiet(void);
/* log(e^x + e^y) without overflow (-inf when both are -inf). */
double dpgd_acct_logsumexp2(double x, double y);
/* RDP at order a > 1 of the Laplace mechanism with pure-DP parameter a0 (docs/MATH.md
 * 6.1 "RDP curves"). */
double dpgd_acct_laplace_rdp(double a0, double a);
int dpgd_acct_brent(struct gsl_function_struct *F, double lo, double hi, int upper, double *x);

/* ---- rounding helpers (gdp.c) ---- */
double dpgd_acct_round_up(double x);   /* x increased by a few ulps (x >= 0) */
double dpgd_acct_round_down(double x); /* x decreased by a few ulps */

/* ---- accountant.c ---- */
int dpgd_acct_all_gaussian(const dpgd_accountant *a); /* 1 if every entry is Gaussian */
/* 1 if every entry is a Gaussian or a discrete Gaussian (rho-zCDP, rho = mu^2/2 each) */
int dpgd_acct_all_zcdp(const dpgd_accountant *a);
double dpgd_acct_gauss_mu2(const dpgd_accountant *a); /* sum count mu^2 of Gaussian entries */
/* sqrt of that sum without under- or overflow, rounded up (the private side). */
double dpgd_acct_gauss_mu_up(const dpgd_accountant *a);
/* Adds the entry as is (merging with the last one when equal); used by deserialise. */
int dpgd_acct_push(dpgd_accountant *a, const acct_entry *en);

/* ---- rdp.c: RDP curves and conversions (docs/MATH.md "RDP and zCDP") ---- */
/* Composed RDP eps_hat(alpha); +inf if not finite; alpha > 1. */
double dpgd_acct_rdp_curve(const dpgd_accountant *a, double alpha);
int dpgd_acct_rdp_epsilon(const dpgd_accountant *a, dpgd_acct_method m, double delta,
                          dpgd_acct_value *out);
int dpgd_acct_rdp_delta(const dpgd_accountant *a, dpgd_acct_method m, double eps,
                        dpgd_acct_value *out);
/* One conversion at one order: eps for (alpha, zeta = eps_hat(alpha)). */
double dpgd_acct_rdp_conv_classic(double alpha, double zeta, double delta);
double dpgd_acct_rdp_conv_balle(double alpha, double zeta, double delta);
int dpgd_acct_rdp_conv_optimal(double alpha, double zeta, double delta, double *eps);

/* ---- cf.c: characteristic-function accounting (docs/MATH.md "Exact accounting") ---- */
/* log M(s) of the whole composition in direction dir (0: as given / remove pair,
 * 1: the reversed pair / add pair), at complex s. */
double complex dpgd_acct_log_mgf(const dpgd_accountant *a, int dir, double complex s);
/* delta(eps) by formula B (dir 0 or 1), by formula A, by enumeration. */
int dpgd_acct_delta_formula_b(const dpgd_accountant *a, int dir, double eps,
                              dpgd_acct_value *out);
int dpgd_acct_delta_formula_a(const dpgd_accountant *a, int dir, double eps,
                              dpgd_acct_value *out);
int dpgd_acct_delta_enum(const dpgd_accountant *a, double eps, dpgd_acct_value *out);
/* delta(eps) of one Poisson-subsampled Gaussian release in direction dir, in closed
 * form (its privacy loss is monotone in the output). */
int dpgd_acct_delta_single_sg(double q, double sigma, int dir, double eps,
                              dpgd_acct_value *out);
/* 1 if the composition has an asymmetric entry (two directions to take the max of). */
int dpgd_acct_asymmetric(const dpgd_accountant *a);
/* The exact method: delta(eps) (max over directions, error added). */
int dpgd_acct_exact_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out);
int dpgd_acct_exact_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out);

/* RDP of order ceil(alpha) of the Poisson-subsampled discrete Gaussian (MATH.md 18.1),
 * both directions; +inf beyond ACCT_POISSON_ALPHA_MAX. */
double dpgd_acct_sdgauss_rdp(double q, double sigma, double alpha);

/* ---- pld_query.c: the PLD path (Gaussian and subsampled-Gaussian entries) ---- */
int dpgd_acct_pld_applies(const dpgd_accountant *a);
int dpgd_acct_pld_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out);
int dpgd_acct_pld_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out);
void dpgd_acct_exact_note_set(const char *s);
/* ---- wor.c: subsampling without replacement ---- */
/* eps_hat(alpha) of one replace-one entry (Wang, Balle & Kasiviswanathan 2019, Thms 9
 * and 27, at the integer order ceil(alpha)); of an add/remove Laplace entry, the Renyi divergence
 * of its pairs; INFINITY for other kinds. */
double dpgd_acct_wor_rdp(const acct_entry *en, double alpha);
/* Renyi divergence of the without-replacement Laplace's add/remove pairs
 * (cf_wor_laplace.c), the larger direction. */
double dpgd_acct_wl_rdp(const acct_entry *en, double alpha);
/* Validates and pushes a stored without-replacement entry (deserialise). */
int dpgd_acct_wor_push(dpgd_accountant *a, acct_kind kind, const double *par, uint64_t count);

/* ---- filter.c: the individual filter ---- */
struct dpgd_filter {
  size_t n, k; /* points, orders */
  dpgd_filter_currency cur;
  double order[DPGD_FILTER_MAX_ORDERS];  /* RDP orders (0 for GDP, zCDP) */
  double budget[DPGD_FILTER_MAX_ORDERS]; /* per order, in currency x unit^2 */
  double coef[DPGD_FILTER_MAX_ORDERS];   /* cost = coef sens2 / sigma^2 */
  double *spent;                         /* (k, n) row-major: order j's spends contiguous */
  /* What else than Gaussian costs went in (no Gaussian odometer then): 0 none, 1 a pure
   * eps-DP charge (zCDP), 2 RDP costs given directly (RDP; filter_sg.c). */
  int pure_dp;
};
/* s + x rounded up (filter.c; TwoSum). */
double dpgd_filter_add_up(double s, double x);

#endif /* DPGD_ACCT_INTERNAL_H */
