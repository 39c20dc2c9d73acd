/* test_filter.c -- the individual privacy filter (docs/MATH.md "The individual filter"): closed
 * forms of the costs and caps per currency, every boundary of the filter (STYLE.md 16),
 * the checkpoint format, and a property test: random adaptive Gaussian charges capped by
 * the filter never let a point exceed its budget, and the run's guarantee is docs/MATH.md's
 * mu = sqrt(B_norm) / (sigma C) in the trainer's units. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_accounting.h"

static dpgd_filter *gdp(size_t n, double b)
{
  dpgd_filter *f = dpgd_filter_alloc(n, DPGD_FILTER_GDP, 1, NULL, &b);
  assert_non_null(f);
  return f;
}

/* Costs: mu^2 = x^2/sigma^2, rho = x^2/(2 sigma^2), RDP a x^2/(2 sigma^2). */
static void test_closed_forms(void **state)
{
  (void)state;
  dpgd_filter *f = gdp(3, 4.0);
  assert_true(dpgd_filter_cost(f, 0, 9.0, 3.0) == 1.0);
  assert_true(dpgd_filter_cap(f, 0, 1.0, 1.0) == 1.0);
  assert_true(dpgd_filter_cap(f, 0, 5.0, 1.0) == 2.0); /* sqrt(4) */
  assert_true(dpgd_filter_cap(f, 0, 5.0, 2.0) == 4.0); /* mu^2 = 16/4 = 4 */
  dpgd_filter_free(f);
  double rho = 2.0;
  f = dpgd_filter_alloc(2, DPGD_FILTER_ZCDP, 1, NULL, &rho);
  assert_non_null(f);
  assert_true(dpgd_filter_cost(f, 0, 8.0, 2.0) == 1.0);
  assert_true(dpgd_filter_cap(f, 0, 10.0, 1.0) == 2.0); /* x^2/2 = 2 */
  assert_int_equal(dpgd_filter_charge(f, 0, 4.0, 1.0), DPGD_OK);
  assert_true(dpgd_filter_spent(f, 0, 0) == 2.0);
  assert_false(dpgd_filter_active(f, 0));
  assert_true(dpgd_filter_point_mu2(f, 0, 1.0) >= 4.0);
  dpgd_filter_free(f);
  double orders[2] = {2.0, 8.0}, budgets[2] = {1.0, 8.0};
  f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, 2, orders, budgets);
  assert_non_null(f);
  assert_true(dpgd_filter_cost(f, 1, 1.0, 1.0) == 4.0);
  /* Order 2 allows x^2 = 1, order 8 allows x^2 = 2: every order must stay within its
   * budget (Feldman & Zrnic 2021, Remark 4.4), so the smaller wins. */
  assert_true(dpgd_filter_cap(f, 0, 10.0, 1.0) == 1.0);
  assert_int_equal(dpgd_filter_charge(f, 0, 0.5, 1.0), DPGD_OK);
  assert_true(dpgd_filter_spent(f, 0, 0) == 0.5 && dpgd_filter_spent(f, 0, 1) == 2.0);
  assert_true(dpgd_filter_active(f, 0));
  assert_int_equal(dpgd_filter_charge(f, 0, 0.75, 1.0), DPGD_ERANGE); /* order 2: 1.25 */
  assert_true(dpgd_filter_spent(f, 0, 0) == 0.5 && dpgd_filter_spent(f, 0, 1) == 2.0);
  assert_int_equal(dpgd_filter_charge(f, 0, 0.5, 1.0), DPGD_OK); /* order 2 exactly spent */
  assert_false(dpgd_filter_active(f, 0));                        /* though order 8 is not */
  assert_true(dpgd_filter_cap(f, 0, 1.0, 1.0) == 0.0);
  assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  dpgd_filter_free(f);
  /* The higher order binds: budgets 4 and 2 allow x^2 = 4 and 0.5. */
  budgets[0] = 4.0;
  budgets[1] = 2.0;
  f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, 2, orders, budgets);
  double cap = dpgd_filter_cap(f, 0, 10.0, 1.0);
  assert_true(4 * (cap * cap) <= 2.0 && cap > sqrt(0.5) * (1 - 1e-15));
  dpgd_filter_free(f);
}

/* Remaining budget exactly one step's cost, a point exhausted on the last step, zero
 * active points, refused charges, bad arguments. */
static void test_boundaries(void **state)
{
  (void)state;
  double c = 10.0;
  dpgd_filter *f = gdp(2, 3 * c * c);
  for (int t = 0; t < 3; t++) {
    assert_true(dpgd_filter_cap(f, 0, c, 1.0) == c); /* the exact C branch */
    assert_int_equal(dpgd_filter_n_active(f), 2);
    assert_int_equal(dpgd_filter_charge(f, 0, c * c, 1.0), DPGD_OK);
    assert_int_equal(dpgd_filter_charge(f, 1, c * c, 1.0), DPGD_OK);
  }
  assert_true(dpgd_filter_spent(f, 0, 0) == dpgd_filter_budget(f, 0));
  assert_int_equal(dpgd_filter_n_active(f), 0);
  assert_true(dpgd_filter_cap(f, 0, c, 1.0) == 0.0);
  assert_int_equal(dpgd_filter_charge(f, 0, 1e-10, 1.0), DPGD_ERANGE);
  assert_int_equal(dpgd_filter_charge(f, 0, 0.0, 1.0), DPGD_OK); /* nothing */
  assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  dpgd_filter_free(f);
  f = gdp(1, 1.0);
  assert_int_equal(dpgd_filter_charge(f, 0, NAN, 1.0), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 0, -1.0, 1.0), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 0, INFINITY, 1.0), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 0, 0.5, 0.0), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 0, 0.5, NAN), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 1, 0.5, 1.0), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge(f, 0, 1.5, 1.0), DPGD_ERANGE);
  assert_true(dpgd_filter_spent(f, 0, 0) == 0.0);
  assert_true(dpgd_filter_cap(f, 0, NAN, 1.0) == 0.0 && dpgd_filter_cap(f, 0, 1, -1) == 0.0);
  assert_true(dpgd_filter_cap(f, 1, 1.0, 1.0) == 0.0 && !dpgd_filter_active(f, 1));
  assert_true(isnan(dpgd_filter_point_mu2(f, 1, 1.0)) && isnan(dpgd_filter_cost(f, 1, 1, 1)));
  assert_true(isnan(dpgd_filter_spent(f, 1, 0)) && isnan(dpgd_filter_budget(f, 1)));
  /* A remainder whose sqrt squared overshoots: the cap steps down until it fits. */
  assert_int_equal(dpgd_filter_charge(f, 0, 0.1, 1.0), DPGD_OK);
  double cap = dpgd_filter_cap(f, 0, 5.0, 1.0);
  assert_true(dpgd_filter_spent(f, 0, 0) + cap * cap <= 1.0);
  assert_int_equal(dpgd_filter_charge(f, 0, cap * cap, 1.0), DPGD_OK);
  assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  dpgd_filter_free(f);
  double b = -1, o = 1.0;
  assert_null(dpgd_filter_alloc(1, DPGD_FILTER_GDP, 1, NULL, &b));
  b = NAN;
  assert_null(dpgd_filter_alloc(1, DPGD_FILTER_GDP, 1, NULL, &b));
  b = 1;
  assert_null(dpgd_filter_alloc(0, DPGD_FILTER_GDP, 1, NULL, &b));
  assert_null(dpgd_filter_alloc(1, DPGD_FILTER_GDP, 2, NULL, &b));
  assert_null(dpgd_filter_alloc(1, DPGD_FILTER_RDP, 1, &o, &b)); /* order must be > 1 */
  assert_null(dpgd_filter_alloc(1, (dpgd_filter_currency)7, 1, NULL, &b));
}

/* xorshift64*: the random doubles of the rounding tests, the same on every platform. */
static uint64_t rng_next(uint64_t *x)
{
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1DULL;
}

/* A double in [1, 2) with `bits` random significand bits (1 <= bits <= 53). */
static double rng_mant(uint64_t *x, int bits)
{
  uint64_t m = rng_next(x) >> (64 - (bits - 1));
  return 1.0 + ldexp((double)m, 1 - bits);
}

/* Charges of 0.1 (the double 0.1000000000000000055...): ten of them sum to more than 1
 * in real arithmetic, though round to nearest gives 0.9999999999999999. The stored
 * spend must not be below the real sum: the tenth is refused by a budget of 1, and
 * without a budget the spend stays >= the exact sum, which is tracked exactly as an
 * integer count of 2^-56 (0.1's ulp: every charge and partial sum is a multiple of it).
 * Then the same with random charges k 2^-40 (k < 2^45) counted in units of 2^-40. */
static void test_round_up_tenths(void **state)
{
  (void)state;
  dpgd_filter *f = gdp(2, 1.0);
  double naive = 0;
  for (int t = 0; t < 9; t++) {
    assert_int_equal(dpgd_filter_charge(f, 0, 0.1, 1.0), DPGD_OK);
    naive += 0.1;
  }
  assert_true(naive + 0.1 <= 1.0); /* round to nearest would accept a tenth */
  assert_int_equal(dpgd_filter_charge(f, 0, 0.1, 1.0), DPGD_ERANGE);
  double cap = dpgd_filter_cap(f, 0, 1.0, 1.0); /* and the cap agrees with the charge */
  assert_true(cap > 0 && cap * cap < 0.1);
  assert_int_equal(dpgd_filter_charge(f, 0, cap * cap, 1.0), DPGD_OK);
  assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  dpgd_filter_free(f);
  f = gdp(1, INFINITY);
  uint64_t exact = 0, unit = (uint64_t)ldexp(0.1, 56); /* 0.1 = unit 2^-56 exactly */
  assert_true(ldexp((double)unit, -56) == 0.1);
  naive = 0;
  int below = 0;
  for (int t = 1; t <= 2000; t++) {
    assert_int_equal(dpgd_filter_charge(f, 0, 0.1, 1.0), DPGD_OK);
    exact += unit;
    naive += 0.1;
    double s = dpgd_filter_spent(f, 0, 0);
    assert_true((uint64_t)ldexp(s, 56) >= exact && ldexp(s, 56) == floor(ldexp(s, 56)));
    below += (uint64_t)ldexp(naive, 56) < exact;
  }
  assert_true(below > 0); /* the naive sum does fall below the real one */
  dpgd_filter_free(f);
}

static void test_round_up_random(void **state)
{
  (void)state;
  dpgd_filter *f = gdp(1, INFINITY);
  uint64_t x = 0x9E3779B97F4A7C15ULL, exact = 0;
  int ups = 0;
  for (int t = 0; t < 3000; t++) {
    uint64_t k = (rng_next(&x) >> 19) + 1; /* 1 .. 2^45 */
    double c = ldexp((double)k, -40), prev = dpgd_filter_spent(f, 0, 0);
    assert_int_equal(dpgd_filter_charge(f, 0, c, 1.0), DPGD_OK);
    exact += k;
    double s = ldexp(dpgd_filter_spent(f, 0, 0), 40);
    assert_true(s == floor(s) && (uint64_t)s >= exact);
    assert_true(s < (double)exact * (1 + 0x1p-40)); /* and not far above it */
    /* A step where round to nearest would have rounded the sum down. */
    ups += (uint64_t)ldexp(prev + c, 40) < (uint64_t)ldexp(prev, 40) + k;
  }
  assert_true(ups > 100);
  dpgd_filter_free(f);
}

/* Exact operations are unchanged bit for bit: the trainer's costs (c = 1 against
 * sigma = 1), zCDP's halving, and sums that round to nearest exactly (Algorithm 7 with
 * B = k C^2 reproduces Algorithm 6). */
static void test_round_up_exact_kept(void **state)
{
  (void)state;
  double rho = 1e300;
  dpgd_filter *f = gdp(1, INFINITY), *z = dpgd_filter_alloc(1, DPGD_FILTER_ZCDP, 1, NULL, &rho);
  assert_non_null(z);
  uint64_t x = 12345;
  for (int t = 0; t < 1000; t++) {
    double v = ldexp(rng_mant(&x, 53), (int)(rng_next(&x) % 200) - 100);
    assert_memory_equal(&(double){dpgd_filter_cost(f, 0, v, 1.0)}, &v, sizeof v);
    assert_memory_equal(&(double){dpgd_filter_cost(z, 0, v, 1.0)}, &(double){v / 2}, sizeof v);
    assert_true(dpgd_filter_cost(f, 0, 4 * v, 2.0) == v); /* sigma^2 = 4 exactly */
  }
  dpgd_filter_free(z);
  dpgd_filter_free(f);
  f = gdp(1, 60 * 100.0);
  for (int t = 0; t < 60; t++) {
    assert_true(dpgd_filter_cap(f, 0, 10.0, 1.0) == 10.0);
    assert_int_equal(dpgd_filter_charge(f, 0, 100.0, 1.0), DPGD_OK);
    assert_true(dpgd_filter_spent(f, 0, 0) == 100.0 * (t + 1));
  }
  assert_false(dpgd_filter_active(f, 0));
  dpgd_filter_free(f);
}

#ifdef __SIZEOF_FLOAT128__
/* RDP costs a x^2 / (2 sigma^2) with random orders (20 significand bits), squared
 * sensitivities (53 bits) and noise stds (30 bits, so that sigma^2 has 60 bits and
 * rounds in double): cost sigma^2 >= (a/2) x^2 in exact arithmetic, both sides being
 * exact in __float128 (113 bits >= 53 + 60 and 20 + 53), and cost is within 8 ulps of
 * the real quotient; round to nearest alone falls below it on many draws. */
static void test_round_up_rdp_cost(void **state)
{
  (void)state;
  uint64_t x = 777;
  int below = 0;
  for (int t = 0; t < 20000; t++) {
    double a = 1 + ldexp(rng_mant(&x, 20), (int)(rng_next(&x) % 7));
    double b = 1.0, sens2 = ldexp(rng_mant(&x, 53), (int)(rng_next(&x) % 40) - 20);
    double sigma = ldexp(rng_mant(&x, 30), (int)(rng_next(&x) % 20) - 10);
    dpgd_filter *f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, 1, &a, &b);
    assert_non_null(f);
    double cost = dpgd_filter_cost(f, 0, sens2, sigma);
    dpgd_filter_free(f);
    __float128 s2 = (__float128)sigma * sigma, num = (__float128)(a / 2) * sens2;
    assert_true((__float128)cost * s2 >= num);
    double low = cost;
    for (int u = 0; u < 8; u++) low = nextafter(low, 0);
    assert_true((__float128)low * s2 < num);
    double naive = a / 2 * sens2 / (sigma * sigma);
    below += (__float128)naive * s2 < num;
  }
  assert_true(below > 1000);
}
#else
static void test_round_up_rdp_cost(void **state)
{
  (void)state;
  skip(); /* no exact 113-bit arithmetic on this platform */
}
#endif

static void test_serialize(void **state)
{
  (void)state;
  double orders[3] = {1.5, 4, 32}, budgets[3] = {0.5, 2, 9};
  dpgd_filter *f = dpgd_filter_alloc(5, DPGD_FILTER_RDP, 3, orders, budgets);
  assert_non_null(f);
  for (size_t i = 0; i < 5; i++) assert_int_equal(dpgd_filter_charge(f, i, 0.1 * i, 1), 0);
  void *buf = NULL;
  size_t len = 0;
  assert_int_equal(dpgd_filter_serialize(f, &buf, &len), DPGD_OK);
  dpgd_filter *g = NULL;
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_OK);
  assert_int_equal(dpgd_filter_n(g), 5);
  assert_int_equal(dpgd_filter_n_orders(g), 3);
  assert_int_equal(dpgd_filter_currency_of(g), DPGD_FILTER_RDP);
  for (size_t j = 0; j < 3; j++) {
    assert_true(dpgd_filter_budget(g, j) == budgets[j]);
    for (size_t i = 0; i < 5; i++)
      assert_memory_equal(&(double){dpgd_filter_spent(f, i, j)},
                          &(double){dpgd_filter_spent(g, i, j)}, sizeof(double));
  }
  dpgd_filter_free(g);
  unsigned char *b = buf;
  for (size_t k = 0; k < len; k += 7) { /* any flipped bit is refused */
    b[k] ^= 0x10;
    assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_EFORMAT);
    assert_null(g);
    b[k] ^= 0x10;
  }
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len - 1), DPGD_EFORMAT);
  assert_int_equal(dpgd_filter_deserialize(&g, buf, 10), DPGD_EFORMAT);
  free(buf);
  dpgd_filter_free(f);
}

/* A state with a valid checksum whose spends break the invariant is refused too. */
static void test_serialize_invariant(void **state)
{
  (void)state;
  dpgd_filter *f = gdp(2, 1.0);
  void *buf = NULL;
  size_t len = 0;
  dpgd_filter_spent_data(f, 0)[1] = 1.5;
  assert_int_equal(dpgd_filter_check(f), DPGD_ERANGE);
  assert_int_equal(dpgd_filter_serialize(f, &buf, &len), DPGD_OK);
  dpgd_filter *g = NULL;
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_EFORMAT);
  free(buf);
  dpgd_filter_free(f);
}

/* Random adaptive sequences: the analyst asks for a random sensitivity, the filter caps
 * it, a random fraction of the cap is charged; no point ever exceeds its budget and the
 * run's guarantee is docs/MATH.md's. */
static void test_property(void **state)
{
  (void)state;
  double sigma = 170, clip = 10, bnorm = 11200, delta = 1e-5;
  srand(3);
  for (int trial = 0; trial < 20; trial++) {
    size_t n = 50;
    double b = trial == 0 ? bnorm : bnorm * (0.01 + (double)rand() / RAND_MAX);
    dpgd_filter *f = gdp(n, b);
    for (int t = 0; t < 400 && dpgd_filter_n_active(f) > 0; t++)
      for (size_t i = 0; i < n; i++) {
        double want = clip * (double)rand() / RAND_MAX * 1.5 + 1e-3;
        double cap = dpgd_filter_cap(f, i, want, 1.0);
        assert_true(cap <= want);
        double frac = rand() % 3 ? 1.0 : (double)rand() / RAND_MAX;
        double x = cap * frac;
        assert_int_equal(dpgd_filter_charge(f, i, x * x, 1.0), DPGD_OK);
        assert_true(dpgd_filter_spent(f, i, 0) <= b);
      }
    assert_int_equal(dpgd_filter_check(f), DPGD_OK);
    double eps = 0, ref = 0;
    assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_EXACT, sigma * clip, delta, &eps), 0);
    assert_int_equal(dpgd_gdp_epsilon(sqrt(b) / (sigma * clip), delta, &ref), 0);
    /* The accountant's exact eps for mu = sqrt(B)/(sigma C), bit for bit, and the
     * Gaussian curve's value to 1e-9. */
    dpgd_accountant *a = dpgd_acct_alloc();
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_add_gaussian(a, sqrt(b) / (sigma * clip), 1), 0);
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &v), 0);
    dpgd_acct_free(a);
    assert_true(eps == v.value);
    assert_true(fabs(eps - ref) <= ref * 1e-9);
    if (trial == 0) assert_true(eps > 0.2032 && eps <= 0.2034); /* docs/MATH.md's example */
    dpgd_filter_free(f);
  }
}

/* The same for zCDP and RDP at several orders, with random noise levels: no order of
 * any point ever exceeds its budget, and points do get exhausted. */
static void test_property_orders(void **state)
{
  (void)state;
  double orders[4] = {1.5, 3, 10, 64}, budgets[4] = {0.3, 1.1, 2.0, 40};
  double rho = 0.7;
  dpgd_filter *fs[2] = {dpgd_filter_alloc(30, DPGD_FILTER_RDP, 4, orders, budgets),
                        dpgd_filter_alloc(30, DPGD_FILTER_ZCDP, 1, NULL, &rho)};
  srand(5);
  for (int w = 0; w < 2; w++) {
    dpgd_filter *f = fs[w];
    assert_non_null(f);
    size_t k = dpgd_filter_n_orders(f);
    for (int t = 0; t < 300 && dpgd_filter_n_active(f) > 0; t++)
      for (size_t i = 0; i < 30; i++) {
        double sigma = 0.5 + 3.0 * rand() / RAND_MAX, want = 2.0 * rand() / RAND_MAX + 1e-3;
        double x = dpgd_filter_cap(f, i, want, sigma) * (rand() % 2 ? 1.0 : 0.5);
        assert_int_equal(dpgd_filter_charge(f, i, x * x, sigma), DPGD_OK);
        for (size_t j = 0; j < k; j++)
          assert_true(dpgd_filter_spent(f, i, j) <= dpgd_filter_budget(f, j));
      }
    assert_int_equal(dpgd_filter_n_active(f), 0);
    assert_int_equal(dpgd_filter_check(f), DPGD_OK);
    dpgd_filter_free(f);
  }
}

/* The run's guarantee per currency through the accountant's conversions. */
static void test_epsilon(void **state)
{
  (void)state;
  double rho = 0.05, delta = 1e-6, eps = 0;
  dpgd_filter *f = dpgd_filter_alloc(1, DPGD_FILTER_ZCDP, 1, NULL, &rho);
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_ZCDP, 1.0, delta, &eps), DPGD_OK);
  double cls = rho + 2 * sqrt(rho * log(1 / delta));
  assert_true(eps >= cls * (1 - 1e-6) && eps <= cls * (1 + 1e-6));
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_EXACT, 1.0, delta, &eps), DPGD_EINVAL);
  dpgd_filter_free(f);
  double orders[2] = {4, 16}, budgets[2] = {4 * rho, 16 * rho};
  f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, 2, orders, budgets);
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_RDP_CLASSIC, 1.0, delta, &eps), DPGD_OK);
  double e4 = 4 * rho + log(1 / delta) / 3, e16 = 16 * rho + log(1 / delta) / 15;
  double best = e4 < e16 ? e4 : e16;
  assert_true(eps >= best && eps <= best * (1 + 1e-12));
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_EXACT, 1.0, delta, &eps), DPGD_EINVAL);
  double opt = 0;
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_RDP_OPTIMAL, 1.0, delta, &opt), DPGD_OK);
  assert_true(opt <= eps);
  dpgd_filter_free(f);
  double inf = INFINITY;
  f = gdp(1, inf);
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_EXACT, 1.0, delta, &eps), DPGD_ERANGE);
  dpgd_filter_free(f);
}

/* Algorithm 4 / Theorem 4.9 of Feldman & Zrnic (2021): the (eps, delta) filter as a zCDP filter of
 * budget B*, whose classic conversion is eps again; pure-DP charges of eps_t^2 / 2. */
static void test_dp_filter(void **state)
{
  (void)state;
  double eps = 1.0, delta = 1e-5, rho = 0, l = log(1 / delta);
  assert_int_equal(dpgd_filter_dp_budget(eps, delta, &rho), DPGD_OK);
  double ref = (sqrt(l + eps) - sqrt(l)) * (sqrt(l + eps) - sqrt(l));
  assert_true(rho <= ref && rho > ref * (1 - 1e-12));
  assert_int_equal(dpgd_filter_dp_budget(0, delta, &rho), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_dp_budget(eps, 1, &rho), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_dp_budget(eps, delta, &rho), DPGD_OK);
  dpgd_filter *f = dpgd_filter_alloc(2, DPGD_FILTER_ZCDP, 1, NULL, &rho);
  double e = 0;
  assert_int_equal(dpgd_filter_epsilon(f, DPGD_ACCT_ZCDP, 1.0, delta, &e), DPGD_OK);
  assert_true(e <= eps * (1 + 1e-6) && e >= eps * (1 - 1e-6));
  /* Charges of 0.05-DP (1.25e-3 each): exactly floor(B* / 1.25e-3) fit, then refused. */
  int k = 0;
  while (dpgd_filter_cap(f, 0, 0.05, 1.0) == 0.05) {
    assert_int_equal(dpgd_filter_charge_dp(f, 0, 0.05), DPGD_OK);
    k++;
  }
  assert_int_equal(dpgd_filter_charge_dp(f, 0, 0.05), DPGD_ERANGE);
  assert_true(k * 1.25e-3 <= rho * (1 + 1e-12) && (k + 1) * 1.25e-3 > rho * (1 - 1e-12));
  double cap = dpgd_filter_cap(f, 0, 0.05, 1.0);
  assert_int_equal(dpgd_filter_charge_dp(f, 0, cap), DPGD_OK); /* the remainder fits */
  assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  assert_int_equal(dpgd_filter_charge_dp(f, 1, NAN), DPGD_EINVAL);
  assert_int_equal(dpgd_filter_charge_dp(f, 1, -0.1), DPGD_EINVAL);
  /* No Gaussian odometer after pure-DP charges, also after a round trip. */
  assert_true(isnan(dpgd_filter_point_mu2(f, 1, 1.0)));
  void *buf = NULL;
  size_t len = 0;
  assert_int_equal(dpgd_filter_serialize(f, &buf, &len), DPGD_OK);
  dpgd_filter *g = NULL;
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_OK);
  assert_true(isnan(dpgd_filter_point_mu2(g, 1, 1.0)));
  dpgd_odometer o;
  size_t lv;
  double mu;
  assert_int_equal(dpgd_odometer_init(&o, 1.0, 0.01, delta), DPGD_OK);
  assert_int_equal(dpgd_filter_report(g, 0, &o, 1.0, &lv, &mu, &e), DPGD_EINVAL);
  free(buf);
  dpgd_filter_free(g);
  dpgd_filter_free(f);
  f = gdp(1, 1.0);
  assert_int_equal(dpgd_filter_charge_dp(f, 0, 0.1), DPGD_EINVAL);
  dpgd_filter_free(f);
}

/* The odometer report of a point is the odometer's at spent / unit^2. */
static void test_report(void **state)
{
  (void)state;
  double sigma = 2, clip = 1, b = 8;
  dpgd_filter *f = gdp(2, b);
  assert_int_equal(dpgd_filter_charge(f, 0, 3.0, 1.0), DPGD_OK);
  dpgd_odometer o;
  assert_int_equal(dpgd_odometer_init(&o, sqrt(b) / (sigma * clip), 0.25, 1e-5), DPGD_OK);
  size_t l1, l2;
  double mu1, mu2, e1, e2;
  assert_int_equal(dpgd_filter_report(f, 0, &o, sigma * clip, &l1, &mu1, &e1), DPGD_OK);
  assert_int_equal(dpgd_odometer_report(&o, 3.0 / 4 * (1 + 0x1p-50), &l2, &mu2, &e2), 0);
  assert_true(l1 == l2 && mu1 == mu2 && e1 == e2);
  assert_int_equal(dpgd_filter_report(f, 1, &o, sigma * clip, &l1, &mu1, &e1), DPGD_OK);
  assert_int_equal(l1 >= 1, 1);
  assert_int_equal(dpgd_filter_report(f, 2, &o, 1.0, &l1, &mu1, &e1), DPGD_EINVAL);
  dpgd_filter_free(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed_forms),      cmocka_unit_test(test_boundaries),
      cmocka_unit_test(test_serialize),         cmocka_unit_test(test_serialize_invariant),
      cmocka_unit_test(test_property),          cmocka_unit_test(test_property_orders),
      cmocka_unit_test(test_epsilon),           cmocka_unit_test(test_report),
      cmocka_unit_test(test_dp_filter),         cmocka_unit_test(test_round_up_tenths),
      cmocka_unit_test(test_round_up_random),   cmocka_unit_test(test_round_up_exact_kept),
      cmocka_unit_test(test_round_up_rdp_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
