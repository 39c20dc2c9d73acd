/* dpgd_queries.h -- sparse linear queries answered under individual filtering
 * (`dpgd queries`, train/queries.c; train/QUERIES.md has the derivation). Part of the
 * training library; dpgd_train.h includes it. */
#ifndef DPGD_QUERIES_H
#define DPGD_QUERIES_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_train.h" /* includes this header at its end: either order works */

/* ===== Sparse linear queries (Feldman & Zrnic 2021, Theorem 1.2 and Corollary 4.7) ===============
 * Adaptively chosen linear queries q_t : users -> R^dim answered under individual
 * filtering (train/QUERIES.md has the derivation):
 *
 *   a_t = sum_i qbar_t(i) + N(0, sigma^2 I_dim),   sigma^2 = B_norm / (2 kappa)
 *
 * where qbar_t(i) is user i's value capped to norm min(clip, sqrt(B_norm - s(i))), as in
 * Algorithm 7, and rounded toward zero onto the grid quantum = 2^-F (F fixed by n, clip
 * and B_norm, public). The grid makes the sum exact: the answers of two neighbouring
 * datasets (user i present, or replaced by a null user whose values are 0) differ
 * before the noise by exactly qbar_t(i), whatever n, so the sensitivity is the cap with
 * no rounding allowance. s(i) += ||qbar_t(i)||^2 on the accountant's individual GDP
 * filter (squared-norm units, budget B_norm); a user is active while s(i) < B_norm, and
 * the whole sequence, of any length, is sqrt(B_norm)/sigma = sqrt(2 kappa)-GDP, hence
 * kappa-zCDP. A value with a NaN or infinite entry counts as infinitely long: the user
 * contributes nothing to that query and is not charged.
 *
 * Plain composition (no individual filtering) is the same machine with clip = C, the
 * most any user's value can weigh, and B_norm = k C^2 for k queries fixed in advance:
 * no user is capped below C within k queries, and the guarantee is again sqrt(2 kappa)-GDP.
 *
 * Accuracy (Corollary 4.7): P(||a_t - sum_i qbar_t(i)||_inf > sigma sqrt(2 log(dim /
 * beta))) <= beta for every t: dpgd_queries_bound.
 *
 * Secure mode (rng DPGD_RNG_SECURE) adds to the int64 sum, in units of 2^-F, one exact
 * discrete Gaussian N_Z(0, sigma_grid^2) per coordinate, sigma_grid^2 = ceil((sigma 2^F)^2)
 * (train/dgauss.c, bits from getrandom; F also keeps sigma 2^F <= 2^31): the answer is an
 * integer times 2^-F, computed in integer arithmetic only. Each user's query is then a
 * discrete Gaussian mechanism of Renyi divergence a ||qbar_t(i)||^2 / (2 sigma^2) at
 * most, and the filter (Feldman & Zrnic's Renyi filter) keeps the sequence within the RDP
 * curve of ONE discrete Gaussian of mu = sqrt(B_norm)/sigma: kappa-zCDP, proven in
 * docs/MATH.md section 18 (DPGD_DISCRETE_THEOREM); the zcdp and rdp_* methods answer,
 * exact does not (no GDP statement, no odometer levels). The accuracy bound is then the
 * sub-Gaussian one, sigma_grid 2^-F sqrt(2 log(2 dim / beta)). */
/* The research caveat (DPGD_RESEARCH_CAVEAT_OF, dpgd_train.h) of a dpgd queries run. */
#define DPGD_QUERIES_RESEARCH_CAVEAT                                                           \
  DPGD_RESEARCH_CAVEAT_OF("--seed", "use --rng secure for answers you will release")

typedef struct dpgd_queries_params {
  size_t n_users,
      dim;        /* public: the number of users (nulls included) and each answer's length */
  double budget;  /* B_norm > 0, squared-norm budget of every user */
  double kappa;   /* zCDP level > 0 of the whole sequence; sigma^2 = B_norm / (2 kappa) */
  double clip;    /* per-query norm cap C > 0, or INFINITY (only the budget caps) */
  int rng;        /* DPGD_RNG_RESEARCH (seeded, reproducible) or DPGD_RNG_SECURE */
  dpgd_seed seed; /* research mode's master seed */
} dpgd_queries_params;

typedef struct dpgd_queries dpgd_queries;

/* DPGD_EINVAL for nonsense parameters (zero users or dim, a budget, kappa or clip that
 * is not > 0, a NaN), or for n * min(clip, sqrt(B_norm)) too large for the exact grid
 * (quantum coarser than 2^-10). */
int dpgd_queries_open(dpgd_queries **out, const dpgd_queries_params *p);
void dpgd_queries_free(dpgd_queries *q);

/* A query as a function: writes user i's value (dim doubles) into value. Called once
 * per ACTIVE user, in user order, from the calling thread; a user the filter has
 * dropped is never asked. Nonzero return: the answer is abandoned with DPGD_EINVAL and
 * nothing is released or charged. */
typedef int (*dpgd_query_fn)(size_t user, double *value, void *ctx);

/* Answers the next query: answer (dim) gets a_t. The caller may choose the following
 * query after reading it (the adaptive case). On an error nothing is charged. */
int dpgd_queries_answer_fn(dpgd_queries *q, dpgd_query_fn fn, void *ctx, double *answer);
/* The same with the values given as a row-major n_users x dim table. */
int dpgd_queries_answer(dpgd_queries *q, const double *values, double *answer);

size_t dpgd_queries_count(const dpgd_queries *q); /* queries answered so far */
double dpgd_queries_sigma(const dpgd_queries *q);
double dpgd_queries_quantum(const dpgd_queries *q); /* 2^-F */
/* The accuracy bound of Corollary 4.7 at failure probability beta in (0, 1), rounded up
 * (NaN for a bad beta). */
double dpgd_queries_bound(const dpgd_queries *q, double beta);
/* The guarantee of the whole sequence (any length) under method m at delta: eps of
 * sqrt(2 kappa)-GDP (exact) or of its zCDP/RDP conversions, rounded up. Secure mode: the
 * discrete Gaussian's (dpgd_acct_add_discrete_gaussian), DPGD_EINVAL for exact. */
int dpgd_queries_epsilon(const dpgd_queries *q, dpgd_acct_method m, double delta, double *eps);
/* Secure mode: the discrete sampler (sigma_grid^2 = num/den in units of 2^-2F); NULL in
 * research mode (continuous floating-point Gaussian noise). */
const dpgd_dgauss *dpgd_queries_dgauss(const dpgd_queries *q);
/* Secure mode: the exact eps at delta the same releases would have with continuous
 * Gaussian noise (what the proof for the integers costs); NAN in research mode. */
double dpgd_queries_eps_continuous(const dpgd_queries *q, double delta);
/* The per-user state: spend s(i) in squared-norm units, active flags, and the odometer
 * report with unit sigma (dpgd_filter_report). SENSITIVE: each user's row is for its
 * owner only. */
const dpgd_filter *dpgd_queries_filter(const dpgd_queries *q);
/* Writes the sensitive per-user report atomically (train/QUERIES.md): a '#' line
 * saying it is sensitive, then user,spend,spend_frac,active,level,delta_level,mu_i,eps_i
 * as points.csv has them, with the odometer's levels from dpgd_queries_odometer (secure
 * mode: no levels, those four columns empty). */
int dpgd_queries_odometer(const dpgd_queries *q, double delta, dpgd_odometer *o);
int dpgd_queries_write_users(const dpgd_queries *q, double delta, const char *path);

#endif /* DPGD_QUERIES_H */
