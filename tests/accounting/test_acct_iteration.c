/* test_acct_iteration.c -- hidden-iterate bounds (accounting/ITERATION.md) against direct
 * numerical divergences of 1-D contractive noisy iterations
 *   x_k = psi(x_{k-1}) + b_k + N(0, s^2),   s = eta sigma,  b_t = eta g (one run), 0 else,
 * with psi(x) = c x (the last iterates are Gaussian; Renyi divergence by GSL quadrature)
 * and psi = projection onto [-R, R] (densities carried on a grid): the amplification by
 * iteration RDP curve must lie above the computed divergence (and equal it where it is
 * tight: c = 1, t = 1), the contraction bound above the computed E_eps. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>

#include "dpgd_accounting.h"

static dpgd_iter_setting setting(uint64_t n, uint64_t t, double g, double sigma, double eta,
                                 double diam)
{
  dpgd_iter_setting s = {
      .n = n, .t = t, .grad_sens = g, .sigma = sigma, .eta = eta, .diameter = diam};
  return s;
}

/* ---- linear contraction: N(m, v) against N(0, v) ---- */
typedef struct {
  double a, m, v;
} renyi_par;

static double log_normal(double x, double m, double v)
{
  return -(x - m) * (x - m) / (2 * v) - 0.5 * log(2 * M_PI * v);
}

static double renyi_integrand(double x, void *vp)
{
  const renyi_par *p = vp;
  return exp(p->a * log_normal(x, p->m, p->v) + (1 - p->a) * log_normal(x, 0, p->v));
}

/* D_a(N(m, v) || N(0, v)) by GSL's QAGI over the real line. */
static double renyi_quadrature(double a, double m, double v)
{
  renyi_par p = {a, m, v};
  gsl_function F = {renyi_integrand, &p};
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  double r, err;
  assert_int_equal(gsl_integration_qagi(&F, 0, 1e-12, 1000, w, &r, &err), 0);
  gsl_integration_workspace_free(w);
  return log(r) / (a - 1);
}

static void test_rdp_linear(void **state)
{
  (void)state;
  const double g = 2 * 0.731, sigma = 2.385, eta = 0.37, s = eta * sigma;
  const double cs[] = {1.0, 0.93, 0.6};
  const double alphas[] = {1.5, 2, 4.5, 9};
  for (size_t ci = 0; ci < 3; ci++)
    for (uint64_t n = 1; n <= 12; n += 11)
      for (uint64_t t = 1; t <= n; t++) {
        double c = cs[ci], v = 0, m = eta * g * pow(c, (double)(n - t));
        for (uint64_t j = 0; j < n; j++) v += s * s * pow(c, 2.0 * j);
        dpgd_iter_setting st = setting(n, t, g, sigma, eta, INFINITY);
        double rho = dpgd_iter_rho(&st);
        for (size_t ai = 0; ai < 4; ai++) {
          double a = alphas[ai], num = renyi_quadrature(a, m, v);
          assert_true(fabs(num - a * m * m / (2 * v)) <=
                      1e-9 * num + 1e-12); /* the quadrature */
          assert_true(num <= a * rho * (1 + 1e-12) + 1e-12);
          if (c == 1.0 && t == 1) assert_true(num >= a * rho * (1 - 1e-9)); /* tight */
        }
      }
  /* FMTT18 Theorem 23 as stated: 2 a L^2 / (sigma^2 (n - t + 1)) at g = 2L */
  dpgd_iter_setting st = setting(1000, 17, 2 * 0.731, 2.385, 0.1, INFINITY);
  double ref = 2 * 0.731 * 0.731 / (2.385 * 2.385 * 984);
  assert_true(dpgd_iter_rho(&st) >= ref && dpgd_iter_rho(&st) <= ref * (1 + 1e-13));
}

/* ---- projection onto [-R, R]: densities of the pre-projection iterate on a grid ---- */
#define GRID 1201

typedef struct {
  double x0, h;
  double p[GRID];
} grid_density;

static double clampd(double x, double r) { return x < -r ? -r : x > r ? r : x; }

/* The law of the last pre-projection iterate of x_k = clamp(x_{k-1}) + b_k + N(0, s^2)
 * from x_0 = start, shifted by b at step t only (b = 0: the other run). */
static void propagate(grid_density *d, double start, double r, double s, uint64_t n, uint64_t t,
                      double b)
{
  double *tmp = malloc(sizeof(double) * GRID);
  assert_non_null(tmp);
  for (int i = 0; i < GRID; i++) {
    double y = d->x0 + i * d->h, mean = clampd(start, r) + (t == 1 ? b : 0);
    d->p[i] = exp(log_normal(y, mean, s * s));
  }
  for (uint64_t k = 2; k <= n; k++) {
    double shift = k == t ? b : 0;
    for (int i = 0; i < GRID; i++) {
      double y = d->x0 + i * d->h, sum = 0;
      for (int j = 0; j < GRID; j++)
        sum += d->p[j] * exp(log_normal(y, clampd(d->x0 + j * d->h, r) + shift, s * s));
      tmp[i] = sum * d->h;
    }
    for (int i = 0; i < GRID; i++) d->p[i] = tmp[i];
  }
  free(tmp);
}

static double grid_renyi(const grid_density *p, const grid_density *q, double a)
{
  double sum = 0;
  for (int i = 0; i < GRID; i++)
    if (p->p[i] > 0 && q->p[i] > 0) sum += exp(a * log(p->p[i]) + (1 - a) * log(q->p[i]));
  return log(sum * p->h) / (a - 1);
}

static double grid_e_eps(const grid_density *p, const grid_density *q, double eps)
{
  double sum = 0;
  for (int i = 0; i < GRID; i++) {
    double d = p->p[i] - exp(eps) * q->p[i];
    if (d > 0) sum += d;
  }
  return sum * p->h;
}

/* One position t of the projected iteration: the bounds against the grid's divergences. */
static void check_projected(grid_density *pa, grid_density *pb, double r, uint64_t n,
                            uint64_t t)
{
  const double g = 2 * 0.9, sigma = 1.7, eta = 0.41, s = eta * sigma;
  pa->x0 = pb->x0 = -r - 14 * s;
  pa->h = pb->h = (2 * r + eta * g + 28 * s) / (GRID - 1);
  propagate(pa, 0.3, r, s, n, t, eta * g);
  propagate(pb, 0.3, r, s, n, t, 0);
  dpgd_iter_setting st = setting(n, t, g, sigma, eta, 2 * r);
  double rho = dpgd_iter_rho(&st);
  for (double a = 1.5; a <= 4.5; a += 1.5) {
    double num = fmax(grid_renyi(pa, pb, a), grid_renyi(pb, pa, a));
    assert_true(num > 0 && num <= a * rho * (1 + 1e-6));
  }
  for (double eps = 0; eps <= 1.6; eps += 0.4) {
    double num = fmax(grid_e_eps(pa, pb, eps), grid_e_eps(pb, pa, eps));
    double bound = dpgd_iter_contraction_delta(&st, eps);
    assert_true(num <= bound * (1 + 1e-6) + 1e-12);
  }
  if (t == 1)
    print_message("  R %g, t = 1 of %d: D_2 %.4g <= %.4g, E_0.4 %.4g <= %.4g\n", r, (int)n,
                  grid_renyi(pa, pb, 2), 2 * rho, grid_e_eps(pa, pb, 0.4),
                  dpgd_iter_contraction_delta(&st, 0.4));
}

static void test_projected(void **state)
{
  (void)state;
  grid_density *pa = malloc(sizeof *pa), *pb = malloc(sizeof *pb);
  assert_true(pa && pb);
  for (uint64_t t = 1; t <= 5; t++) {
    check_projected(pa, pb, 0.55, 5, t); /* the projection binds: strong contraction */
    check_projected(pa, pb, 2.5, 5, t);  /* it rarely binds: near the linear case */
  }
  free(pa);
  free(pb);
}

/* theta_eps(r) written with GSL's Q, independently of the accountant's log-space form. */
static double theta(double eps, double r)
{
  return gsl_cdf_ugaussian_Q(eps / r - r / 2) - exp(eps) * gsl_cdf_ugaussian_Q(eps / r + r / 2);
}

static void test_contraction(void **state)
{
  (void)state;
  const double g = 1.3, sigma = 2.385, eta = 0.2, diam = 1.1;
  for (double eps = 0.05; eps < 3; eps += 0.35) {
    /* no step after the point: one Gaussian step, theta at r = g / sigma */
    dpgd_iter_setting st = setting(5, 5, g, sigma, eta, diam);
    double th1 = theta(eps, g / sigma), th2 = theta(eps, diam / (eta * sigma));
    assert_true(fabs(dpgd_iter_contraction_delta(&st, eps) - th1) <= 1e-9 * th1);
    assert_true(dpgd_iter_contraction_delta(&st, eps) >= th1 * (1 - 1e-13));
    assert_true(fabs(dpgd_gdp_delta(g / sigma, eps) - th1) <= 1e-9 * th1);
    st.t = 2; /* three contractions */
    double want = th1 * th2 * th2 * th2;
    assert_true(fabs(dpgd_iter_contraction_delta(&st, eps) - want) <= 1e-9 * want);
    /* monotone: more steps after the point, larger eps -> smaller delta */
    double prev = 2;
    for (uint64_t t = 5; t >= 1; t--) {
      st.t = t;
      double d = dpgd_iter_contraction_delta(&st, eps);
      assert_true(d <= prev && d > 0);
      assert_true(d <= dpgd_iter_contraction_delta(&st, eps * 0.9));
      prev = d;
    }
  }
  /* unconstrained: no contraction, the bound is the single step's */
  dpgd_iter_setting st = setting(1000, 1, g, sigma, 0, INFINITY);
  assert_true(dpgd_iter_contraction_delta(&st, 0.7) == dpgd_gdp_delta(g / sigma, 0.7) ||
              fabs(dpgd_iter_contraction_delta(&st, 0.7) / dpgd_gdp_delta(g / sigma, 0.7) - 1) <
                  1e-13);
}

static void test_epsilons(void **state)
{
  (void)state;
  const double delta = 1e-5;
  dpgd_iter_setting st = setting(1000, 1, 2.0, 4.0, 0.05, 2.0);
  dpgd_acct_value v, vc, vb;
  /* zcdp: rho + 2 sqrt(rho log(1/delta)), rho = 2 L^2 / (sigma^2 n) at L = 1 */
  double rho = 2.0 / (16.0 * 1000), z = rho + 2 * sqrt(rho * log(1 / delta));
  assert_int_equal(dpgd_iter_epsilon(&st, DPGD_ACCT_ZCDP, delta, &v), DPGD_OK);
  assert_true(v.value >= z && v.value <= z * (1 + 1e-9));
  assert_int_equal(dpgd_iter_epsilon(&st, DPGD_ACCT_RDP_CLASSIC, delta, &v), DPGD_OK);
  assert_true(v.value >= z * (1 - 1e-12) && v.value <= z * (1 + 1e-6));
  assert_int_equal(dpgd_iter_epsilon(&st, DPGD_ACCT_RDP_OPTIMAL, delta, &vb), DPGD_OK);
  assert_true(vb.value <= v.value);
  assert_int_equal(dpgd_iter_epsilon(&st, DPGD_ACCT_EXACT, delta, &v), DPGD_EINVAL);
  /* the contraction eps is verified and (almost) minimal */
  assert_int_equal(dpgd_iter_contraction_epsilon(&st, delta, &vc), DPGD_OK);
  assert_true(dpgd_iter_contraction_delta(&st, vc.value) <= delta);
  assert_true(dpgd_iter_contraction_delta(&st, vc.value * (1 - 1e-9)) > delta);
  /* baseline: one Gaussian step of mu = g / sigma = 0.5 */
  double e0;
  assert_int_equal(dpgd_gdp_epsilon(0.5, delta, &e0), DPGD_OK);
  assert_int_equal(dpgd_iter_composition_epsilon(&st, DPGD_ACCT_EXACT, delta, &v), DPGD_OK);
  assert_true(v.value >= e0 && v.value <= e0 * (1 + 1e-9));
  assert_true(vb.value < v.value && vc.value < v.value);
  print_message(
      "  n 1000, t 1, L 1, sigma 4, eta 0.05, diam 2: eps iteration %.4g (rdp_optimal), "
      "contraction %.4g, composition %.4g\n",
      vb.value, vc.value, v.value);
  /* at t = n every bound is the single Gaussian step's */
  st.t = st.n;
  assert_int_equal(dpgd_iter_contraction_epsilon(&st, delta, &vc), DPGD_OK);
  assert_true(fabs(vc.value / e0 - 1) < 1e-9);
  /* bad settings */
  dpgd_iter_setting bad[] = {setting(0, 1, 1, 1, 1, 1),   setting(3, 4, 1, 1, 1, 1),
                             setting(3, 0, 1, 1, 1, 1),   setting(3, 1, 0, 1, 1, 1),
                             setting(3, 1, 1, NAN, 1, 1), setting(3, 1, 1, 1, 0, 1),
                             setting(3, 1, 1, 1, 1, -1),  setting(3, 1, INFINITY, 1, 1, 1)};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(dpgd_iter_check(&bad[i]), DPGD_EINVAL);
    assert_true(isnan(dpgd_iter_rho(&bad[i])));
    assert_true(isnan(dpgd_iter_contraction_delta(&bad[i], 1)));
    assert_int_equal(dpgd_iter_contraction_epsilon(&bad[i], delta, &v), DPGD_EINVAL);
  }
  dpgd_error_clear();
}

int main(void)
{
  gsl_set_error_handler_off(); /* the quadrature's status is checked */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdp_linear),
      cmocka_unit_test(test_projected),
      cmocka_unit_test(test_contraction),
      cmocka_unit_test(test_epsilons),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
