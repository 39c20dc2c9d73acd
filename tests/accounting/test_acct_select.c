/* test_acct_select.c -- private selection (accounting/SELECTION.md) against what it did
 * not compute: the distributions of K against their probability generating functions in
 * closed form, Theorem 2's curve for a Gaussian base against its minimum over lambda_hat
 * in closed form, the pure-DP limit against Liu & Talwar's 3 eps, and the true Renyi
 * divergence of "best of K" for a Gaussian score (GSL QAGI) below every bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_sf_erf.h>

#include "dpgd_accounting.h"

static const double etas[] = {-0.5, 0, 1, 2.385};

/* The pmf sums to 1 and its mean is E[K]; dpgd_select_k_tnb hits the asked mean. */
static void test_k_distributions(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof etas / sizeof *etas; i++) {
    dpgd_select_k k;
    assert_int_equal(dpgd_select_k_tnb(&k, etas[i], 4.7), DPGD_OK);
    assert_true(fabs(dpgd_select_k_mean(&k) - 4.7) < 1e-12 * 4.7);
    assert_true(dpgd_select_k_mean(&k) <= 4.7);
    double s = 0, m = 0;
    for (uint64_t j = 0; j < 20000; j++) {
      double p = dpgd_select_k_pmf(&k, j);
      s += p, m += (double)j * p;
    }
    assert_true(fabs(s - 1) < 1e-9);
    assert_true(fabs(m - 4.7) < 1e-7);
  }
  dpgd_select_k g;
  assert_int_equal(dpgd_select_k_tnb(&g, 1, 8), DPGD_OK); /* geometric: gamma = 1/E[K] */
  assert_true(fabs(g.gamma - 0.125) < 1e-14);
  assert_true(fabs(dpgd_select_k_pmf(&g, 3) - 0.125 * 0.875 * 0.875) < 1e-15);
  dpgd_select_k p = {DPGD_SELECT_POISSON, 0, 0, 3.1};
  assert_true(fabs(dpgd_select_k_pmf(&p, 2) - exp(-3.1) * 3.1 * 3.1 / 2) < 1e-15);
}

/* Gaussian base (mu-GDP, eps(a) = a mu^2 / 2): min over lambda_hat >= 1 of
 * (1 + eta)((lambda_hat - 1) mu^2/2 + L / lambda_hat), L = log(1/gamma), is at
 * lambda_hat = sqrt(2L)/mu (when >= 1): (1 + eta)(mu sqrt(2L) - mu^2/2). */
static void test_tnb_gaussian_closed_form(void **state)
{
  (void)state;
  const double mus[] = {0.21, 0.5, 1.3};
  const double lams[] = {1.5, 2, 8, 32.5};
  for (size_t i = 0; i < sizeof etas / sizeof *etas; i++)
    for (size_t u = 0; u < 3; u++) {
      dpgd_select_k k;
      assert_int_equal(dpgd_select_k_tnb(&k, etas[i], 6.2), DPGD_OK);
      dpgd_select_base b = {0, NULL, mus[u]};
      double L = -log(k.gamma), mu = mus[u];
      assert_true(sqrt(2 * L) / mu >= 1);
      for (size_t l = 0; l < 4; l++) {
        double lam = lams[l];
        double ref = lam * mu * mu / 2 + (1 + etas[i]) * (mu * sqrt(2 * L) - mu * mu / 2) +
                     log(dpgd_select_k_mean(&k)) / (lam - 1);
        double v = dpgd_select_rdp(&k, &b, lam);
        assert_true(v >= ref);               /* any lambda_hat is valid: never below */
        assert_true(v <= ref * (1 + 1e-9));  /* and the grid finds the minimum */
        assert_true(v >= lam * mu * mu / 2); /* at least the base's own curve */
      }
    }
}

/* Pure eps0-DP base (randomised response, curve below eps0): as lambda -> inf the
 * geometric selection tends to Liu & Talwar's 3 eps0 (and (2 + eta) eps0 generally,
 * once log(1/gamma) >= eps0). */
static void test_pure_dp_limit(void **state)
{
  (void)state;
  const double e0 = 0.3817;
  dpgd_accountant *rr = dpgd_acct_alloc();
  assert_non_null(rr);
  assert_int_equal(dpgd_acct_add_rr(rr, e0, 1), DPGD_OK);
  const dpgd_accountant *cells[1] = {rr};
  dpgd_select_base b = {1, cells, 0};
  for (size_t i = 0; i < sizeof etas / sizeof *etas; i++) {
    dpgd_select_k k;
    assert_int_equal(dpgd_select_k_tnb(&k, etas[i], 10), DPGD_OK);
    assert_true(-log(k.gamma) >= e0);
    double v = dpgd_select_rdp(&k, &b, 1e9);
    /* the lambda_hat grid ends at 1 + 1e6: (1 + eta) log(1/gamma) / 1e6 above the limit */
    assert_true(v <= (2 + etas[i]) * e0 * (1 + 1e-9) - (1 + etas[i]) * log(k.gamma) * 1.01e-6);
    assert_true(v >= (2 + etas[i]) * e0 * (1 - 1e-3));
    assert_true(v >= e0);
  }
  dpgd_acct_free(rr);
}

/* ---- the true Renyi divergence of best-of-K for a Gaussian score ----
 * Q outputs y ~ N(s, 1), s = 0 on x and mu on x' (larger is better): best of K has
 * density G'(F(y)) f(y), G the pgf of K. */
typedef struct {
  const dpgd_select_k *k;
  double lam, s_p, s_q;
} div_par;

/* log G'(u) from the pgf in closed form (TNB: G(u) = ((1 - (1-g)u)^-eta - 1) /
 * (g^-eta - 1), logarithmic: log(1 - (1-g)u) / log g; Poisson: e^(m(u - 1))). */
static double log_pgf_deriv(const dpgd_select_k *k, double u)
{
  if (k->dist == DPGD_SELECT_POISSON) return log(k->mean) + k->mean * (u - 1);
  double g = k->gamma, eta = k->eta, w = 1 - (1 - g) * u;
  if (eta == 0) return log(1 - g) - log(w) - log(-log(g));
  return log(fabs(eta) * (1 - g)) - (eta + 1) * log(w) - log(fabs(pow(g, -eta) - 1));
}

static double log_best_density(const dpgd_select_k *k, double y, double s)
{
  double z = y - s;
  return log_pgf_deriv(k, gsl_sf_erf_Q(-z)) - z * z / 2 - 0.5 * log(2 * M_PI);
}

static double div_integrand(double y, void *vp)
{
  const div_par *d = vp;
  double lp = log_best_density(d->k, y, d->s_p), lq = log_best_density(d->k, y, d->s_q);
  return exp(d->lam * lp + (1 - d->lam) * lq);
}

static double true_renyi(const dpgd_select_k *k, double mu, double lam, int dir)
{
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(2000);
  div_par d = {k, lam, dir ? mu : 0, dir ? 0 : mu};
  gsl_function F = {div_integrand, &d};
  double r, err;
  assert_int_equal(gsl_integration_qagi(&F, 0, 1e-11, 2000, w, &r, &err), GSL_SUCCESS);
  gsl_integration_workspace_free(w);
  if (k->dist == DPGD_SELECT_POISSON) r += exp(-k->mean); /* K = 0: the same empty answer */
  return log(r) / (lam - 1);
}

static void test_bound_above_true_divergence(void **state)
{
  (void)state;
  const double mu = 0.73, lams[] = {1.5, 2, 4, 9.5};
  dpgd_select_base b = {0, NULL, mu};
  dpgd_select_k ks[5];
  for (size_t i = 0; i < 4; i++) assert_int_equal(dpgd_select_k_tnb(&ks[i], etas[i], 5), 0);
  ks[4] = (dpgd_select_k){DPGD_SELECT_POISSON, 0, 0, 5};
  for (size_t i = 0; i < 5; i++)
    for (size_t l = 0; l < 4; l++)
      for (int dir = 0; dir < 2; dir++) {
        double t = true_renyi(&ks[i], mu, lams[l], dir);
        double v = dpgd_select_rdp(&ks[i], &b, lams[l]);
        assert_true(t <= v);
        assert_true(t >= 0);
      }
}

/* eps(delta) grows with E[K] and is at least the base's own eps at that delta. */
static double base_curve(double a, const void *ctx) { return dpgd_select_base_rdp(ctx, a); }

static void test_monotone_and_above_base(void **state)
{
  (void)state;
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.05, 200), DPGD_OK);
  const dpgd_accountant *cells[1] = {a};
  dpgd_select_base b = {1, cells, 0.4};
  dpgd_acct_value base, prev = {0, 0};
  assert_int_equal(
      dpgd_acct_rdp_curve_epsilon(base_curve, &b, 0, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &base), 0);
  const double means[] = {1.5, 3, 5, 10, 40};
  for (size_t i = 0; i < 5; i++)
    for (int poisson = 0; poisson < 2; poisson++) {
      dpgd_select_k k = {DPGD_SELECT_POISSON, 0, 0, means[i]};
      if (!poisson) assert_int_equal(dpgd_select_k_tnb(&k, 1, means[i]), DPGD_OK);
      dpgd_acct_value v;
      assert_int_equal(dpgd_select_epsilon(&k, &b, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &v), 0);
      assert_true(v.value >= base.value);
      if (!poisson) {
        assert_true(v.value > prev.value);
        prev = v;
      }
    }
  dpgd_acct_free(a);
}

/* DP-SGD cells (Poisson-subsampled Gaussians, whose curve costs O(order) per evaluation):
 * the total lies between the curve without Theorem 2's lambda_hat part (>= 0) and the one
 * with that part at a few fixed lambda_hat (dpgd minimises over more), and is computed in
 * seconds: the lambda_hat part does not depend on lambda, so it is minimised once, not at
 * every order of the conversion (which took minutes for 12 cells). */
typedef struct {
  const dpgd_select_base *b;
  double add, log_mean;
} fixed_hat;

static double fixed_hat_curve(double a, const void *vp)
{
  const fixed_hat *f = vp;
  return dpgd_select_base_rdp(f->b, a) + f->add + f->log_mean / (a - 1);
}

static void test_subsampled_cells_fast(void **state)
{
  (void)state;
  const uint64_t steps[] = {147, 293, 586};
  dpgd_accountant *a[3];
  for (int c = 0; c < 3; c++) {
    a[c] = dpgd_acct_alloc();
    assert_non_null(a[c]);
    assert_int_equal(dpgd_acct_add_subsampled_gaussian(a[c], 0.0683, 4.5 + c, steps[c]), 0);
  }
  const dpgd_accountant *cells[3] = {a[0], a[1], a[2]};
  dpgd_select_base b = {3, cells, 1.0 / 20};
  dpgd_select_k k;
  assert_int_equal(dpgd_select_k_tnb(&k, 1, 5), DPGD_OK);
  dpgd_acct_value v, lo, hi;
  clock_t t0 = clock();
  assert_int_equal(dpgd_select_epsilon(&k, &b, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &v), DPGD_OK);
  double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
  assert_true(cpu < 20);
  fixed_hat f = {&b, 0, log(dpgd_select_k_mean(&k))};
  assert_int_equal(
      dpgd_acct_rdp_curve_epsilon(fixed_hat_curve, &f, 0, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &lo), 0);
  f.add = INFINITY;
  for (double h = 2; h <= 64; h *= 2) {
    double e = (1 + k.eta) * ((1 - 1 / h) * dpgd_select_base_rdp(&b, h) - log(k.gamma) / h);
    if (e < f.add) f.add = e;
  }
  assert_int_equal(
      dpgd_acct_rdp_curve_epsilon(fixed_hat_curve, &f, 0, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &hi), 0);
  assert_true(v.value > lo.value);
  assert_true(v.value <= hi.value * (1 + 1e-9));
  for (int c = 0; c < 3; c++) dpgd_acct_free(a[c]);
}

/* rdp.c's branch and bound: with a lower bound on the curve the grid gives the eps of the
 * full scan, bit for bit, from fewer evaluations of the curve; a lower bound that says
 * nothing (NaN) gives the full scan. */
typedef struct {
  double mu2, c, gap;
  int calls;
} counted;

static double counted_curve(double a, const void *vp)
{
  counted *t = (counted *)vp;
  t->calls++;
  return a * t->mu2 / 2 + t->c / (a - 1);
}

static double counted_lower(double a, const void *vp)
{
  const counted *t = vp;
  return a * t->mu2 / 2 + t->c / (a - 1) - t->gap;
}

static double nan_lower(double a, const void *vp)
{
  (void)a, (void)vp;
  return NAN;
}

static void test_pruned_grid_equals_full(void **state)
{
  (void)state;
  const dpgd_acct_method ms[] = {DPGD_ACCT_RDP_CLASSIC, DPGD_ACCT_RDP_BALLE,
                                 DPGD_ACCT_RDP_OPTIMAL};
  const double gaps[] = {0, 0.01, 0.3};
  for (size_t i = 0; i < 3; i++)
    for (size_t g = 0; g < 3; g++) {
      counted t = {0.04, 0.7, gaps[g], 0};
      dpgd_acct_value full, cut, none;
      assert_int_equal(dpgd_acct_rdp_curve_epsilon(counted_curve, &t, 0, ms[i], 1e-5, &full),
                       0);
      int n_full = t.calls;
      t.calls = 0;
      assert_int_equal(dpgd_acct_rdp_curve_epsilon_lb(counted_curve, counted_lower, &t, 0,
                                                      ms[i], 1e-5, &cut),
                       0);
      assert_true(cut.value == full.value);
      assert_true(t.calls < n_full);
      if (gaps[g] == 0) assert_true(2 * t.calls < n_full);
      t.calls = 0;
      assert_int_equal(
          dpgd_acct_rdp_curve_epsilon_lb(counted_curve, nan_lower, &t, 0, ms[i], 1e-5, &none),
          0);
      assert_true(none.value == full.value);
      assert_int_equal(t.calls, n_full);
    }
}

/* Poisson K: the selection's total (pruned by Theorem 6 without its delta_hat term) equals
 * the full scan of the same curve (dpgd_select_rdp at every order). */
static double select_curve(double a, const void *vp)
{
  const dpgd_select_base *const *kb = vp;
  return dpgd_select_rdp((const dpgd_select_k *)kb[0], kb[1], a);
}

static void test_poisson_pruned_equals_full(void **state)
{
  (void)state;
  dpgd_accountant *a[2] = {dpgd_acct_alloc(), dpgd_acct_alloc()};
  assert_non_null(a[0]);
  assert_non_null(a[1]);
  assert_int_equal(dpgd_acct_add_gaussian(a[0], 0.05, 200), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(a[1], 0.08, 50), DPGD_OK);
  const dpgd_accountant *cells[2] = {a[0], a[1]};
  dpgd_select_base b = {2, cells, 0.2};
  const double means[] = {0.5, 3, 10};
  const dpgd_acct_method ms[] = {DPGD_ACCT_RDP_CLASSIC, DPGD_ACCT_RDP_BALLE,
                                 DPGD_ACCT_RDP_OPTIMAL};
  for (size_t i = 0; i < 3; i++)
    for (size_t m = 0; m < 3; m++) {
      dpgd_select_k k = {DPGD_SELECT_POISSON, 0, 0, means[i]};
      const void *kb[2] = {&k, &b};
      dpgd_acct_value cut, full;
      assert_int_equal(dpgd_select_epsilon(&k, &b, ms[m], 1e-5, &cut), 0);
      assert_int_equal(dpgd_acct_rdp_curve_epsilon(select_curve, kb, 0, ms[m], 1e-5, &full), 0);
      assert_true(cut.value == full.value);
    }
  dpgd_acct_free(a[0]);
  dpgd_acct_free(a[1]);
}

static void test_bad_input(void **state)
{
  (void)state;
  dpgd_select_k k;
  assert_int_equal(dpgd_select_k_tnb(&k, 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_select_k_tnb(&k, 1, 0.5), DPGD_EINVAL);
  assert_int_equal(dpgd_select_k_tnb(&k, -1, 3), DPGD_EINVAL);
  assert_int_equal(dpgd_select_k_tnb(&k, NAN, 3), DPGD_EINVAL);
  assert_int_equal(dpgd_select_k_tnb(&k, 1, INFINITY), DPGD_EINVAL);
  dpgd_select_k bad = {DPGD_SELECT_TNB, 1, 1, 0};
  assert_int_equal(dpgd_select_k_check(&bad), DPGD_EINVAL);
  dpgd_select_k pz = {DPGD_SELECT_POISSON, 0, 0, 0};
  assert_int_equal(dpgd_select_k_check(&pz), DPGD_EINVAL);
  dpgd_select_k ok = {DPGD_SELECT_POISSON, 0, 0, 2};
  dpgd_select_base none = {0, NULL, 0.3};
  dpgd_acct_value v;
  assert_int_equal(dpgd_select_epsilon(&ok, &none, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &v),
                   DPGD_EINVAL); /* no cells */
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.3, 1), DPGD_OK);
  const dpgd_accountant *cells[1] = {a};
  dpgd_select_base b = {1, cells, 0.3};
  assert_int_equal(dpgd_select_epsilon(&ok, &b, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_select_epsilon(&ok, &b, DPGD_ACCT_RDP_BALLE, 0, &v), DPGD_EINVAL);
  dpgd_acct_free(a);
}

int main(void)
{
  gsl_set_error_handler_off();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_k_distributions),
      cmocka_unit_test(test_tnb_gaussian_closed_form),
      cmocka_unit_test(test_pure_dp_limit),
      cmocka_unit_test(test_bound_above_true_divergence),
      cmocka_unit_test(test_monotone_and_above_base),
      cmocka_unit_test(test_subsampled_cells_fast),
      cmocka_unit_test(test_pruned_grid_equals_full),
      cmocka_unit_test(test_poisson_pruned_equals_full),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
