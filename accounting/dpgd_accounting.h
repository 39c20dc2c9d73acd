/* dpgd_accounting.h -- the accountant library (formulas, sources, tests: docs/MATH.md).
 * Depends on GSL and nothing else of ours but dpgd_error.h.
 *
 * An accountant keeps a composition symbolically as a list of (mechanism, count) and
 * answers eps(delta) / delta(eps) on demand under each method:
 *   exact       characteristic-function accounting (closed form for pure-Gaussian
 *               compositions, docs/MATH.md "The Gaussian curve"; inversion formula B,
 *               A as fallback, docs/MATH.md "Exact accounting");
 *               where those fail for Gaussian and subsampled-Gaussian compositions, a
 *               privacy-loss distribution with proven bounds (accounting/PLD.md);
 *   zcdp        rho-zCDP with rho = sum of mu^2/2 (Gaussians and discrete Gaussians only);
 *   rdp_*       RDP curves composed over an order grid, converted by the classic,
 *               Balle et al. 2020 or Asoodeh et al. (optimal) conversion.
 * Every reported value is an upper bound in the private direction: the numerical error
 * bound has been added (eps, delta rounded up; sigma up and budgets down in
 * calibration). Functions return a dpgd status (dpgd_error.h) and report through the
 * error handler.
 *
 * Threads: different accountants may be used from different threads at the same time
 * (the library's internal memories and the last error message are per thread); one
 * accountant must not be used by two threads at once. The library checks every GSL
 * status itself and turns GSL's error handler off (gsl_set_error_handler_off) for the
 * process when it is first used, since GSL's default handler aborts. */
#ifndef DPGD_ACCOUNTING_H
#define DPGD_ACCOUNTING_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_core.h"

typedef enum {
  DPGD_ACCT_EXACT = 0,
  DPGD_ACCT_ZCDP = 1,
  DPGD_ACCT_RDP_CLASSIC = 2,
  DPGD_ACCT_RDP_BALLE = 3,
  DPGD_ACCT_RDP_OPTIMAL = 4,
  DPGD_ACCT_N_METHODS = 5
} dpgd_acct_method;

/* "exact", "zcdp", "rdp_classic", "rdp_balle", "rdp_optimal" (the metrics.csv column
 * suffixes and summary.json keys): the one list of the names, in dpgd_acct_method order
 * and NULL-terminated. dpgd_acct_method_find returns -1 if unknown. */
extern const char *const dpgd_acct_method_names[DPGD_ACCT_N_METHODS + 1];
const char *dpgd_acct_method_name(dpgd_acct_method m);
int dpgd_acct_method_find(const char *name);
/* The names joined by sep into buf (truncated to size); returns buf. */
const char *dpgd_acct_method_list(char *buf, size_t size, const char *sep);

/* v rounded to `digits` significant decimal digits (1..17) towards +inf (dir > 0: the
 * private direction for eps, delta and sigma) or towards -inf (dir < 0: for budgets).
 * Printed with "%.<digits>g" the result shows exactly those digits, and the printed
 * number is on the stated side of v up to 4 ulps of v (so that a value that already is
 * a short decimal, like 0.2033 read from a file, prints as it is; every privacy number
 * is padded by more than that when it is computed). NaN, +-inf, 0 and
 * negative values are returned unchanged. Every privacy number shown to a user goes
 * through this, so that no display rounding moves it the wrong way. */
double dpgd_round_digits(double v, int digits, int dir);

/* A reported number: value already includes err (it is the private-side bound). */
typedef struct {
  double value;
  double err; /* bound on the numerical error that was added to value (>= 0) */
} dpgd_acct_value;

/* ---- The Gaussian curve (docs/MATH.md "The Gaussian curve"), mu-GDP ---- */
/* delta(eps) for mu-GDP from a two-sided bracket in log space, valid at every mu
 * (accounting/GDP.md); the upper end, never below DBL_MIN for mu > 0. */
double dpgd_gdp_delta(double mu, double eps);
/* Smallest eps >= 0 with delta(eps) <= delta (rounded up); 0 exactly when delta >=
 * 2 Phi(mu/2) - 1; DPGD_ERANGE where eps exceeds the double range (mu >~ 1.9e154). */
int dpgd_gdp_epsilon(double mu, double delta, double *eps);
/* Largest mu whose curve gives eps(delta) <= eps (rounded down). */
int dpgd_gdp_mu(double eps, double delta, double *mu);
/* Trade-off curve beta(alpha) = Phi(Phi^{-1}(1 - alpha) - mu). */
double dpgd_gdp_tradeoff(double mu, double alpha);

/* ---- Per-point odometer of an individual filter (docs/MATH.md "Per-point odometer") ----
 * Levels m = 1..levels of level_mu2 (= Delta, GDP mu^2 units) each; a point whose total
 * mu^2 is at most m Delta (and above (m - 1) Delta) is at level m and is reported as
 * sqrt(m Delta)-GDP at delta_m, where the levels share delta: delta_top for the top
 * level (the whole budget), delta_low for each level below it. The split makes the
 * report valid although the level a point reaches depends on the data. A point may be
 * reported with a higher level's statement when that one's eps is smaller (near the top
 * level, whose share of delta is the largest): the report never decreases with the
 * spend, and a point near the whole budget is reported at about the run's eps. */
#define DPGD_ODOMETER_MAX_LEVELS 64
/* Share of delta spread over the levels below the top one. */
#define DPGD_ODOMETER_LOW_SHARE 0.1

typedef struct {
  double level_mu2; /* Delta: mu^2 per level (top level: levels x Delta >= mu_max^2) */
  size_t levels;    /* L */
  double delta;     /* the run's delta */
  double delta_top; /* delta_L */
  double delta_low; /* delta_m for m < L; delta_top + (L - 1) delta_low <= delta */
  /* For a point at level m: the level of the statement reported (>= m) and its eps. */
  size_t statement[DPGD_ODOMETER_MAX_LEVELS + 1];
  double eps[DPGD_ODOMETER_MAX_LEVELS + 1];
} dpgd_odometer;

/* Levels for a run whose points spend at most mu_max^2 (the planned run's total) with
 * one-step increments of at most max_step_mu2: L = min(64, floor(mu_max^2 /
 * max_step_mu2)) (at least 1), Delta = mu_max^2 / L rounded up; a point that spent
 * everything is at level L, reported at delta_top = 0.9 delta. */
int dpgd_odometer_init(dpgd_odometer *o, double mu_max, double max_step_mu2, double delta);
/* delta_m (0 outside 1..levels). */
double dpgd_odometer_delta(const dpgd_odometer *o, size_t m);
/* The level of a total spend mu2: the smallest m with mu2 <= m Delta (1 for mu2 = 0);
 * DPGD_ERANGE above the top level or for a non-finite or negative mu2. */
int dpgd_odometer_level(const dpgd_odometer *o, double mu2, size_t *level);
/* The point's report for a total spend mu2: the level of the statement used (the
 * realised level, or a higher one whose eps is smaller), mu = sqrt(level Delta) (rounded
 * up) and eps = eps_GDP(mu, delta_level) (rounded up). */
int dpgd_odometer_report(const dpgd_odometer *o, double mu2, size_t *level, double *mu,
                         double *eps);

/* ---- Individual privacy filter (docs/MATH.md "The individual filter") ----
 * Feldman & Zrnic's Algorithms 3 and 7.
 * n points, each with its own privacy loss in one currency, charged by adaptive Gaussian
 * releases; a point whose budget is spent is dropped (cap 0). Currencies:
 *   GDP   one budget B of sum mu^2 (a Gaussian of sensitivity x, noise std sigma costs
 *         x^2 / sigma^2): the trainer's (Algorithm 7);
 *   ZCDP  one budget of sum rho (x^2 / (2 sigma^2));
 *   RDP   a budget eps(a) per order a (a x^2 / (2 sigma^2) each); a point stays active
 *         while EVERY order is below its budget and halts as soon as ANY order reaches
 *         it. Feldman & Zrnic's Remark 4.4 gives (a_j, B_j)-RDP for all j only while all the
 *         filters continue; halting only when every order is over (an order chosen after
 *         the fact) would be the data-dependent choice the odometer warns against.
 * Units: sigma is measured in whatever unit the caller likes; the costs and budgets are
 * then in the currency times unit^2. The trainer charges squared norms against sigma = 1
 * (its noise std sigma C is the unit), so its spend is s(i) and its budget B_norm; the
 * reporting functions take the unit (sigma C) and divide by unit^2 only there.
 * Invariant, exact in floating point: spent <= budget for every point and order; a
 * charge that would break it is refused, and dpgd_filter_cap is the largest sensitivity
 * that keeps it. Costs and sums round up, so spent is >= the real sum of the real costs
 * (accounting/FILTER.md has the proof and the users' description).
 * A budget of +inf makes an odometer without a filter (Algorithm 6). */
typedef enum {
  DPGD_FILTER_GDP = 0,
  DPGD_FILTER_ZCDP = 1,
  DPGD_FILTER_RDP = 2,
  DPGD_FILTER_N_CURRENCIES = 3
} dpgd_filter_currency;
#define DPGD_FILTER_MAX_ORDERS 64

typedef struct dpgd_filter dpgd_filter;

/* n >= 1 points; GDP and ZCDP: n_orders = 1, orders ignored (may be NULL), budgets[0];
 * RDP: 1..64 orders, each finite and > 1, with budgets[j] for orders[j]. Budgets > 0
 * (+inf allowed). NULL on bad arguments (reported) or no memory. */
dpgd_filter *dpgd_filter_alloc(size_t n, dpgd_filter_currency cur, size_t n_orders,
                               const double *orders, const double *budgets);
void dpgd_filter_free(dpgd_filter *f);
size_t dpgd_filter_n(const dpgd_filter *f);
size_t dpgd_filter_n_orders(const dpgd_filter *f);
dpgd_filter_currency dpgd_filter_currency_of(const dpgd_filter *f);
double dpgd_filter_budget(const dpgd_filter *f, size_t order);

/* The cost, in order `order`'s currency, of a Gaussian release of squared sensitivity
 * sens2 against noise std sigma: c sens2 / sigma^2 (c = 1, 1/2 or a/2), rounded up (an
 * exact quotient, as with c = 1 and sigma = 1, is returned as it is); NaN for an order
 * out of range. Charges accumulate rounded up too, so a stored spend is never below the
 * real sum of the real costs (accounting/FILTER.md). */
double dpgd_filter_cost(const dpgd_filter *f, size_t order, double sens2, double sigma);
/* The largest sensitivity cap <= want that point i may still spend this round against
 * noise std sigma: want itself when spent + cost(want^2) <= budget, the sum and cost
 * rounded up as a charge rounds them (no sqrt: with GDP, sigma = 1 and want = C this is
 * Algorithm 7's exact C branch), else sqrt(remaining sigma^2 / c) stepped down by ulps
 * until spent + cost(cap^2) <= budget;
 * RDP: the smallest such cap over the orders. 0 for a halted point or bad
 * arguments (want or sigma not finite and positive). */
double dpgd_filter_cap(const dpgd_filter *f, size_t i, double want, double sigma);
/* Charges point i a Gaussian release of squared sensitivity sens2 (>= 0) against noise
 * std sigma (> 0). DPGD_EINVAL for NaN, negative or infinite sens2, a bad sigma or i
 * out of range; DPGD_ERANGE when the charge would put any order over its budget (the
 * point is then unchanged). sens2 = cap^2 with cap from dpgd_filter_cap always fits. */
int dpgd_filter_charge(dpgd_filter *f, size_t i, double sens2, double sigma);
/* Point i is active while every order has spent < budget (0 for i out of range). */
int dpgd_filter_active(const dpgd_filter *f, size_t i);
size_t dpgd_filter_n_active(const dpgd_filter *f);
double dpgd_filter_spent(const dpgd_filter *f, size_t i, size_t order);
/* The spend of every point in order `order` ((n) contiguous), for a caller that keeps
 * it in a checkpoint; writing into it must keep dpgd_filter_check true. */
double *dpgd_filter_spent_data(dpgd_filter *f, size_t order);
/* DPGD_OK when 0 <= spent <= budget for every point and order (exactly, NaN refused);
 * DPGD_ERANGE naming the first violating point otherwise. */
int dpgd_filter_check(const dpgd_filter *f);

/* The (eps, delta)-DP filter of Feldman & Zrnic (2021) (Algorithm 4, Theorem 4.9): pure eps_t-DP
 * releases, a point continues while sum eps_t^2 / 2 <= B*, B* = (sqrt(log(1/delta) + eps)
 * - sqrt(log(1/delta)))^2 the zCDP level whose classic conversion is (eps, delta).
 * dpgd_filter_dp_budget gives B* (rounded down) for a ZCDP filter's budget;
 * dpgd_filter_charge_dp charges point i of a ZCDP filter eps_t^2 / 2 (an eps_t-DP
 * release is eps_t^2/2-zCDP), refused like dpgd_filter_charge; the cap for a budget of
 * eps is dpgd_filter_cap(f, i, eps, 1.0). After such a charge the points' totals are no
 * longer Gaussian: dpgd_filter_point_mu2 is NaN and dpgd_filter_report refuses. */
int dpgd_filter_dp_budget(double eps, double delta, double *rho);
int dpgd_filter_charge_dp(dpgd_filter *f, size_t i, double eps);

/* Point i's total in GDP mu^2 units: spent / c / unit^2, rounded up (every charge is
 * a Gaussian, so any order gives it); NaN for i out of range or after a pure-DP
 * charge. */
double dpgd_filter_point_mu2(const dpgd_filter *f, size_t i, double unit);
/* Point i's odometer report (dpgd_odometer_report of its mu^2 at unit). */
int dpgd_filter_report(const dpgd_filter *f, size_t i, const dpgd_odometer *o, double unit,
                       size_t *level, double *mu, double *eps);
/* The run's guarantee, eps at delta for every point, under method m, with the budgets
 * divided by unit^2: GDP is sqrt(B)/unit-GDP (any method; exact is the Gaussian curve);
 * ZCDP is rho-zCDP (zcdp or rdp_*); RDP is (a_j, B_j)-RDP at every order (rdp_*), so
 * the smallest of the orders' conversions. DPGD_EINVAL for a method the currency does not support,
 * DPGD_ERANGE for an infinite budget. */
int dpgd_filter_epsilon(const dpgd_filter *f, dpgd_acct_method m, double unit, double delta,
                        double *eps);

/* Versioned, checksummed byte string (magic "DPGDFILT"); *buf is allocated
 * by the library (free it with dpgd_free). Corrupt,
 * truncated, foreign or inconsistent input gives DPGD_EFORMAT. */
int dpgd_filter_serialize(const dpgd_filter *f, void **buf, size_t *len);
int dpgd_filter_deserialize(dpgd_filter **out, const void *buf, size_t len);

/* ---- Individual RDP filter under Poisson subsampling (train/DPSGD_FILTER.md) ----
 * The RDP of order a (integer >= 2) of the Poisson-subsampled Gaussian (rate q, noise
 * multiplier sigma) for a point of sensitivity x (in units of the clip norm):
 * eps_a(q, sigma / x) of docs/MATH.md "RDP curves", evaluated as log1p of a sum of
 * non-negative terms and rounded up (relative 2^-30 and one ulp); non-decreasing in x. A table
 * holds it on the grid x_k = k / grid, k = 0..grid, for a set of orders: a point whose
 * sensitivity is at most x is charged the entry at ceil(grid x). An RDP filter with the
 * table's orders then takes the caps and charges of all its points at once. */
#define DPGD_FILTER_SG_GRID 1000
#define DPGD_FILTER_SG_N_ORDERS 16
/* The default orders (integers 2..256, like the accountant's RDP grid). */
extern const double dpgd_filter_sg_orders[DPGD_FILTER_SG_N_ORDERS];

typedef struct {
  double q, sigma;
  size_t grid;     /* K */
  size_t n_orders; /* J <= DPGD_FILTER_MAX_ORDERS */
  double order[DPGD_FILTER_MAX_ORDERS];
  double *eps; /* (J, K + 1) row-major: eps[j (K + 1) + k] >= eps_{a_j}(q, sigma K / k) */
} dpgd_filter_sg;

/* eps_a(q, sigma / x) rounded up; NaN for q outside (0, 1], sigma not finite and > 0,
 * x negative or not finite, a not an integer in [2, 1024]. +inf where it overflows. */
double dpgd_filter_sg_rdp(double q, double sigma, double x, double a);
/* The table (NULL on bad arguments, reported, or no memory); grid >= 1. */
dpgd_filter_sg *dpgd_filter_sg_alloc(double q, double sigma, size_t n_orders,
                                     const double *orders, size_t grid);
void dpgd_filter_sg_free(dpgd_filter_sg *t);
/* Budgets of k full-rate steps: budgets[j] >= k eps[j][K], large enough that floor(k)
 * charges of eps[j][K], accumulated as the filter does, fit (k > 0, finite). */
int dpgd_filter_sg_budgets(const dpgd_filter_sg *t, double k, double *budgets /* (J) */);
/* For every point of f (an RDP filter with the table's orders): idx[i] = the largest
 * grid index whose charge fits at every order (0 for a halted point). */
int dpgd_filter_sg_caps(const dpgd_filter *f, const dpgd_filter_sg *t,
                        uint32_t *idx /* (n) out */);
/* Charges every point i the table's entries at idx[i] (<= grid). DPGD_ERANGE, and no
 * point changed, when some charge does not fit (a cap from dpgd_filter_sg_caps always
 * does). After a charge the filter has no Gaussian odometer (dpgd_filter_point_mu2 is
 * NaN). */
/* 1 while point i can pay the smallest grid step (k = 1) at every order; 0 once it cannot
 * (halted: its cap is 0 from then on) or for bad arguments. */
int dpgd_filter_sg_active(const dpgd_filter *f, const dpgd_filter_sg *t, size_t i);
int dpgd_filter_sg_charge(dpgd_filter *f, const dpgd_filter_sg *t,
                          const uint32_t *idx /* (n) */);

/* ---- The accountant ---- */
typedef struct dpgd_accountant dpgd_accountant;

dpgd_accountant *dpgd_acct_alloc(void);
void dpgd_acct_free(dpgd_accountant *a);
dpgd_accountant *dpgd_acct_clone(const dpgd_accountant *a);

/* Adds count (>= 1) compositions of a mechanism. Consecutive additions of the same
 * mechanism with the same parameters merge into one entry (counts add). */
int dpgd_acct_add_gaussian(dpgd_accountant *a, double mu, uint64_t count);
int dpgd_acct_add_laplace(dpgd_accountant *a, double a0 /* sensitivity/scale */,
                          uint64_t count);
int dpgd_acct_add_rr(dpgd_accountant *a, double eps0, uint64_t count);
int dpgd_acct_add_discrete(dpgd_accountant *a, const double *p, const double *q, size_t k,
                           uint64_t count);
int dpgd_acct_add_subsampled_gaussian(dpgd_accountant *a, double q, double sigma,
                                      uint64_t count);

/* The multivariate discrete Gaussian (docs/MATH.md "Discrete Gaussian"): an integer-valued
 * query whose neighbouring values differ by an integer vector of L2 norm at most Delta,
 * plus independent N_Z(0, sigma^2) noise on each coordinate; mu = Delta/sigma. Proven:
 * rho-zCDP with rho = mu^2/2, the RDP curve a mu^2/2 (Canonne, Kamath & Steinke 2020), so
 * the zcdp and rdp_* methods answer; exact refuses it (DPGD_EINVAL): the continuous
 * Gaussian's privacy curve is not proven for it. */
int dpgd_acct_add_discrete_gaussian(dpgd_accountant *a, double mu, uint64_t count);
/* The Poisson-subsampled multivariate discrete Gaussian (secure DP-SGD; docs/MATH.md 18.1):
 * each point enters the integer sum with probability q, its rounded clipped contribution of
 * L2 norm <= Delta, and N_Z(0, (sigma Delta)^2) is added to each coordinate. Accounted by a
 * proven generic bound on the RDP of Poisson subsampling (integer orders 2..256, add and
 * remove directions both) applied to the curve a / (2 sigma^2): the rdp_* rows only (exact
 * and zcdp refuse). q = 0 and q = 1 store plain discrete Gaussians. */
int dpgd_acct_add_subsampled_discrete_gaussian(dpgd_accountant *a, double q, double sigma,
                                               uint64_t count);
/* 1 if some entry of a is a discrete Gaussian or a subsampled one. */
int dpgd_acct_has_discrete_gaussian(const dpgd_accountant *a);
/* A copy of a with every (subsampled) discrete Gaussian replaced by the continuous
 * (subsampled) Gaussian of the same mu (sigma, q) (what the composition would give without the proof for the arithmetic that runs);
 * NULL if out of memory. Free with dpgd_acct_free. */
dpgd_accountant *dpgd_acct_continuous_twin(const dpgd_accountant *a);
/* The exact eps at delta of a's continuous twin: what the proof for the integers costs.
 * NAN if it fails (the error is cleared). */
double dpgd_acct_continuous_epsilon(const dpgd_accountant *a, double delta);

/* Subsampling without replacement: each release applies the base mechanism to a fresh
 * uniformly random subset of exactly m of the n points (accounting/SAMPLING.md). The
 * base mechanism's parameter is measured against its sensitivity under replace-one
 * neighbours of the m-point subset (a point swapped for another: 2C for a sum of
 * gradients clipped to norm C): Gaussian sigma = noise std / that sensitivity,
 * Laplace a0 = that sensitivity / scale. 1 <= m <= n.
 *   DPGD_ACCT_ADD_REMOVE: neighbours differ by adding or removing one point, the two
 *     datasets having n and n - 1 points (n the larger; a dataset of n points is covered
 *     against removals, and against additions, whose n + 1 only lowers m/n). Exact:
 *     the dominating pairs of Zhu, Dong & Wang 2022 (amplification by sampling for
 *     dominating pairs, part (2); section 4.1, proof in appendix C.3), "remove" and
 *     "add" accounted separately, delta the larger. The Gaussian's pairs are those of the
 *     Poisson-subsampled Gaussian at rate q = m/n (rounded up), and it is stored as one;
 *     the Laplace's have two atoms and a continuous part (accounting/SAMPLING.md).
 *   DPGD_ACCT_REPLACE_ONE: neighbours have n points each and differ in one point's
 *     value. No dominating pair is known: the entry carries the RDP upper bound of
 *     Wang, Balle & Kasiviswanathan 2019 (Theorems 9, 27), so only the rdp_* methods answer
 *     (exact and zcdp refuse with DPGD_EINVAL); it never mixes with a Poisson-subsampled
 *     or an add/remove entry in one accountant (DPGD_EINVAL). */
typedef enum { DPGD_ACCT_ADD_REMOVE = 0, DPGD_ACCT_REPLACE_ONE = 1 } dpgd_acct_relation;
int dpgd_acct_add_wor_gaussian(dpgd_accountant *a, uint64_t m, uint64_t n, double sigma,
                               dpgd_acct_relation rel, uint64_t count);
int dpgd_acct_add_wor_laplace(dpgd_accountant *a, uint64_t m, uint64_t n, double a0,
                              dpgd_acct_relation rel, uint64_t count);
/* The sampling rate m/n rounded up to a double (never below the true ratio). */
double dpgd_acct_wor_rate(uint64_t m, uint64_t n);
/* 1 if some entry of a assumes replace-one neighbours (the rdp_* methods alone apply). */
int dpgd_acct_replace_one(const dpgd_accountant *a);

/* Total GDP parameter sqrt(sum mu_j^2) when every entry is Gaussian; NAN otherwise. */
double dpgd_acct_gdp_mu(const dpgd_accountant *a);
/* The same sqrt(sum mu_j^2) when every entry is Gaussian or discrete Gaussian (integer
 * shifts): the mu of the composition's Renyi curve lambda mu^2 / 2 (the discrete ones are
 * not mu-GDP: docs/MATH.md 18); NAN otherwise. */
double dpgd_acct_zcdp_mu(const dpgd_accountant *a);
/* Number of entries / total count of releases composed. */
size_t dpgd_acct_n_entries(const dpgd_accountant *a);
uint64_t dpgd_acct_n_releases(const dpgd_accountant *a);

/* eps for a given delta in (0, 1), and delta for a given eps >= 0, under method m.
 * DPGD_EINVAL if m does not apply to the composition (zcdp for non-Gaussian entries),
 * DPGD_ERANGE if the method cannot answer within its numerical range. An empty
 * accountant gives eps 0 / delta 0. */
int dpgd_acct_epsilon(const dpgd_accountant *a, dpgd_acct_method m, double delta,
                      dpgd_acct_value *out);
int dpgd_acct_delta(const dpgd_accountant *a, dpgd_acct_method m, double eps,
                    dpgd_acct_value *out);

/* Which algorithm gave this thread's last exact answer: "" for the characteristic
 * function or a closed form, "pld h=<step> ..." for the privacy-loss-distribution path
 * (every composition of Gaussian and Poisson-subsampled-Gaussian entries but a lone
 * Gaussian composition or one subsampled release; its error bound is the width of its
 * bracket), "bound: NAME ..." where no exact path answered and the value is the valid
 * bound NAME (an RDP conversion or basic composition). */
const char *dpgd_acct_exact_note(void);

/* Serialisation for checkpoints: a versioned, checksummed byte string.
 * dpgd_acct_serialize allocates *buf (free it with dpgd_free). */
int dpgd_acct_serialize(const dpgd_accountant *a, void **buf, size_t *len);
int dpgd_acct_deserialize(dpgd_accountant **out, const void *buf, size_t len);

/* ---- Calibration (docs/MATH.md "Calibration"), rounded in the private direction ---- */
/* Smallest noise multiplier sigma such that `steps` Gaussian releases of sensitivity 1
 * and noise std sigma (mu = 1/sigma each), composed with the releases in `extra`
 * (may be NULL: e.g. stopping queries), give eps(delta) <= eps under method m. */
int dpgd_calibrate_sigma(dpgd_acct_method m, double eps, double delta, uint64_t steps,
                         const dpgd_accountant *extra, double *sigma);
/* Largest squared-norm budget B_norm such that a filtered run at (sigma, clip),
 * mu = sqrt(B_norm)/(sigma clip), composed with `extra` (may be NULL, Gaussian only),
 * gives eps(delta) <= eps under method m (exact or zcdp or rdp_*). */
int dpgd_calibrate_budget(dpgd_acct_method m, double eps, double delta, double sigma,
                          double clip, const dpgd_accountant *extra, double *budget);

/* ---- RDP curves given as functions ----
 * eps_hat(alpha) of some mechanism at order alpha > 1 (+inf or NaN where unknown). With
 * integer set, the curve is evaluated at the integer orders 2..256 only. eps at delta by
 * conversion m (rdp_classic, rdp_balle or rdp_optimal; others DPGD_EINVAL), minimised
 * over the order grid of the rdp_* methods, rounded up. */
typedef double (*dpgd_acct_rdp_fn)(double alpha, const void *ctx);
/* Upper bound on the RDP of order alpha (integer, 2..256) of a Poisson-subsampled
 * mechanism (rate q in [0, 1]) whose base mechanism has RDP base(l, ctx) at l = 2..alpha in
 * both directions, for add/remove neighbours in both directions (docs/MATH.md 18.1: the
 * max of the remove-direction expansion, Zhu & Wang 2019, and the add-direction bound
 * proven there), rounded upward. NaN on bad arguments. */
double dpgd_acct_poisson_rdp_bound(double q, dpgd_acct_rdp_fn base, const void *ctx,
                                   unsigned alpha);
int dpgd_acct_rdp_curve_epsilon(dpgd_acct_rdp_fn curve, const void *ctx, int integer,
                                dpgd_acct_method m, double delta, dpgd_acct_value *out);
/* The same given lower(alpha, ctx) <= curve(alpha, ctx) at every order (cheap, or NULL):
 * the grid skips the orders whose conversion at the lower bound is above the least value
 * found. Same eps as without it; fewer evaluations of a costly curve. */
int dpgd_acct_rdp_curve_epsilon_lb(dpgd_acct_rdp_fn curve, dpgd_acct_rdp_fn lower,
                                   const void *ctx, int integer, dpgd_acct_method m,
                                   double delta, dpgd_acct_value *out);

/* ---- Private selection: best of a random number K of runs (accounting/SELECTION.md) ----
 * Papernot & Steinke, "Hyperparameter Tuning with Renyi Differential Privacy" (ICLR 2022,
 * arXiv 2110.03620). A base mechanism Q (one candidate: a grid cell drawn uniformly, its
 * training run and its noisy score) is run K times and the best-scoring output released.
 *   TNB: K ~ truncated negative binomial D_{eta,gamma} (their Definition 1; eta = 1 the
 *     geometric, eta = 0 the logarithmic distribution); Theorem 2: for every lambda > 1
 *     and lambda_hat >= 1 the selection is (lambda, eps')-RDP with
 *       eps' = eps(lambda) + (1 + eta)(1 - 1/lambda_hat) eps(lambda_hat)
 *              + (1 + eta) log(1/gamma) / lambda_hat + log E[K] / (lambda - 1).
 *   POISSON: K ~ Poisson(mean) (K = 0 releases nothing); Theorem 6: if Q is
 *     (eps_hat, delta_hat)-DP with e^eps_hat <= 1 + 1/(lambda - 1), the selection is
 *     (lambda, eps(lambda) + mean delta_hat + log(mean) / (lambda - 1))-RDP. */
typedef enum { DPGD_SELECT_TNB = 0, DPGD_SELECT_POISSON = 1 } dpgd_select_dist;
typedef struct {
  dpgd_select_dist dist;
  double eta;   /* TNB: in (-1, inf) */
  double gamma; /* TNB: in (0, 1) */
  double mean;  /* POISSON: the mean, > 0 */
} dpgd_select_k;
/* DPGD_OK or DPGD_EINVAL naming the bad parameter (reported). */
int dpgd_select_k_check(const dpgd_select_k *k);
/* E[K]: eta (1 - gamma) / (gamma (1 - gamma^eta)), (1/gamma - 1) / log(1/gamma) at eta = 0;
 * the mean for POISSON. NaN for bad parameters. */
double dpgd_select_k_mean(const dpgd_select_k *k);
/* The TNB of this eta whose E[K] = mean (> 1; gamma by bisection, E[K] decreasing in it). */
int dpgd_select_k_tnb(dpgd_select_k *k, double eta, double mean);
/* P[K = j] (j >= 0), for tests and for sampling. */
double dpgd_select_k_pmf(const dpgd_select_k *k, uint64_t j);

/* The base mechanism: one grid cell drawn uniformly, its training run (the composition
 * train[c] of cell c), and the score of the trained model on the validation split, a
 * count of sensitivity 1 plus N(0, 1/score_mu^2) noise (score_mu = 0: no score
 * released). Training and validation points are disjoint, so a neighbouring dataset
 * changes one of the two: per order the curve is the larger of the two, and the larger
 * over the cells (mixtures: joint quasi-convexity). */
typedef struct {
  size_t n_cells;
  const dpgd_accountant *const *train; /* (n_cells) */
  double score_mu;
} dpgd_select_base;
/* eps_hat(alpha) of the base (+inf where a cell's curve is). */
double dpgd_select_base_rdp(const dpgd_select_base *b, double alpha);
/* delta_hat(eps) of the base: the largest over cells of the exact delta (the tightest
 * valid one: exact, else rdp_optimal) and the score's Gaussian delta; rounded up. */
int dpgd_select_base_delta(const dpgd_select_base *b, double eps, double *delta);
/* eps'(lambda) of the selection (TNB: minimised over lambda_hat on a grid in [1, 1e6];
 * POISSON: at eps_hat = log(lambda / (lambda - 1))); +inf where not finite. */
double dpgd_select_rdp(const dpgd_select_k *k, const dpgd_select_base *b, double lambda);
/* eps at delta of the selection under m (rdp_classic, rdp_balle or rdp_optimal). */
int dpgd_select_epsilon(const dpgd_select_k *k, const dpgd_select_base *b, dpgd_acct_method m,
                        double delta, dpgd_acct_value *out);

/* ---- Hidden iterates: one pass of projected noisy SGD (accounting/ITERATION.md) ----
 * The privacy of the point used at step t of an n-step pass of
 *   w_k = Pi_K(w_{k-1} - eta (grad f(w_{k-1}; x_k) + N(0, sigma^2 I)))
 * when ONLY the last iterate w_n is released, each point is used once at a position
 * fixed in advance, K is convex and f(.; x) convex and beta-smooth with eta <= 2/beta.
 * sigma is the noise std added to the GRADIENT (the iterate gets eta sigma). */
typedef struct {
  uint64_t n, t;    /* steps of the pass; the point's position 1..n */
  double grad_sens; /* g >= sup_w ||grad f(w; x) - grad f(w; x')||: 2L replacing a point
                       of an L-Lipschitz loss, L against the null point (zero gradient) */
  double sigma;     /* noise std on the gradient */
  double eta;       /* step size: contraction bound only (unused with diameter +inf) */
  double diameter;  /* of K; +inf without projection (contraction bound only) */
} dpgd_iter_setting;

/* DPGD_OK, or DPGD_EINVAL naming the bad field (reported). */
int dpgd_iter_check(const dpgd_iter_setting *s);
/* Amplification by iteration (Feldman et al. 2018, Theorem 23): the point is
 * (a, a rho)-RDP for every a > 1 with rho = g^2 / (2 sigma^2 (n - t + 1)) (= 2 L^2 /
 * (sigma^2 (n - t + 1)) at g = 2L), rounded up; NaN for a bad setting. */
double dpgd_iter_rho(const dpgd_iter_setting *s);
/* eps at delta of that RDP curve under m = zcdp or rdp_* (exact: DPGD_EINVAL, the curve
 * is not a Gaussian privacy profile). */
int dpgd_iter_epsilon(const dpgd_iter_setting *s, dpgd_acct_method m, double delta,
                      dpgd_acct_value *out);
/* The contraction bound (Asoodeh, Diaz & Calmon): delta(eps) <= theta_eps(g / sigma) *
 * theta_eps(diameter / (eta sigma))^(n - t), theta_eps(r) = dpgd_gdp_delta(r, eps);
 * rounded up (NaN for a bad setting or eps); and its eps at delta (bisection, upper end). */
double dpgd_iter_contraction_delta(const dpgd_iter_setting *s, double eps);
int dpgd_iter_contraction_epsilon(const dpgd_iter_setting *s, double delta,
                                  dpgd_acct_value *out);
/* The baseline with every iterate released: the point's one step, a Gaussian of ratio
 * g / sigma, under any method m. */
int dpgd_iter_composition_epsilon(const dpgd_iter_setting *s, dpgd_acct_method m, double delta,
                                  dpgd_acct_value *out);

/* ===== One-run auditing (train/AUDIT.md) ============================================
 * Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run" (NeurIPS
 * 2023), Theorem 5.2: m canaries, each included independently with probability 1/2; an
 * auditor makes r guesses (in / out) and v are correct. If the mechanism is (eps,
 * delta)-DP in each canary then, with q = e^eps / (1 + e^eps),
 *   P[v correct or more] <= P[Binomial(r, q) >= v]
 *                           + 2 m delta max_{1<=i<=v} P[v - i <= Binomial(r, q) < v] / i.
 * dpgd_audit_p_value is that bound (capped at 1), from exact binomial terms in log space;
 * DPGD_EINVAL unless v <= r <= m, eps >= 0 and 0 <= delta <= 1. dpgd_audit_eps_lower is
 * the largest eps whose p-value stays below 1 - confidence (bisection, rounded down):
 * with that confidence the mechanism is NOT (eps, delta)-DP for any smaller eps. It is 0
 * when even eps = 0 is not rejected. A lower bound says nothing about privacy being
 * kept: it can only show that a claim is false. */
int dpgd_audit_p_value(size_t m, size_t r, size_t v, double eps, double delta, double *p);
int dpgd_audit_eps_lower(size_t m, size_t r, size_t v, double delta, double confidence,
                         double *eps);

/* Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run" (ICML
 * 2025; train/AUDIT.md "The f-DP bound"): the same game, tested against a whole claimed
 * trade-off curve f (f(a) = least type II error at type I error a). With tau = 1 -
 * confidence, r_v = tau v / m, h_v = tau (r - v) / m and for i = v-1 .. 0
 *   h_i = max(h_{i+1}, f(1 - r_{i+1})),  r_i = r_{i+1} + i / (r - i) (h_i - h_{i+1}),
 * the claim "the mechanism is f-DP in each canary" is rejected at that confidence when
 * r_0 + h_0 > r / m (by a relative margin of 1e-9 against rounding). f must be a valid
 * trade-off curve for the claim (a lower curve is a weaker, still valid, claim). */
typedef double (*dpgd_audit_curve)(double a, void *ctx);
int dpgd_audit_fdp_reject(size_t m, size_t r, size_t v, dpgd_audit_curve f, void *ctx,
                          double confidence, int *reject);
/* The largest mu (up to 40) whose mu-GDP claim is rejected (bisection, rounded down), 0
 * when none is; and that mu's eps at delta, rounded down: with that confidence the
 * mechanism is not mu-GDP, i.e. no Gaussian mechanism of eps at most that value explains
 * the guesses. */
int dpgd_audit_fdp_mu_lower(size_t m, size_t r, size_t v, double confidence, double *mu);
int dpgd_audit_fdp_eps_lower(size_t m, size_t r, size_t v, double delta, double confidence,
                             double *eps);
/* The same over the claims "steps Poisson-subsampled Gaussians of rate q and noise
 * multiplier s" (each curve the envelope of its exact delta(eps) upper bounds at 48
 * eps): the least s rejected (INFINITY when none) and its eps at delta, rounded down. */
int dpgd_audit_fdp_sg_lower(size_t m, size_t r, size_t v, double q, uint64_t steps,
                            double delta, double confidence, double *sigma, double *eps);
/* Whether the curve of the composition in acct (the envelope of its exact delta(eps) at
 * 48 eps in [0, eps_max]) is rejected. */
/* The guess count fixed before a run (train/AUDIT.md "Guesses"): the even r that
 * maximises the bound (f-DP when fdp, else Steinke et al.'s) at the expected counts of an
 * ideal attacker on m canaries under a mu-GDP mechanism (scores N(mu, 1) in, N(0, 1)
 * out; the r/2 highest guessed in, the r/2 lowest out); *expected_eps: that bound. */
int dpgd_audit_guess_rule(size_t m, double mu, double delta, double confidence, int fdp,
                          size_t *r, double *expected_eps);
int dpgd_audit_fdp_profile_reject(size_t m, size_t r, size_t v, const dpgd_accountant *acct,
                                  double eps_max, double confidence, int *reject);

#endif /* DPGD_ACCOUNTING_H */
