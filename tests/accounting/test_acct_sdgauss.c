/* test_acct_sdgauss.c -- the Poisson-subsampled discrete Gaussian (docs/MATH.md 18.1): the
 * generic Poisson-subsampling RDP bound dpgd_acct_poisson_rdp_bound and the discrete
 * Gaussian's own refinement against independent 60-digit mpmath values
 * (tests/tools/poisson_rdp_ref.py), its closed forms (q = 1: the
 * base curve; q = 0: 0; order 2 by hand), above the true Renyi divergences of a
 * one-dimensional subsampled discrete Gaussian in both directions (direct long double
 * summation), never below the tight sampled-Gaussian RDP (Mironov, Talwar & Zhang 2019)
 * when given the continuous Gaussian's curve, monotone in q and sigma; the accountant
 * entry (exact and zcdp refuse, continuous twin, checkpoint round trip, bad input). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"

/* {q, sigma, alpha, generic bound, the discrete Gaussian's own}:
 * python3 tests/tools/poisson_rdp_ref.py (mpmath, 60 digits) */
static const struct {
  double q, s;
  unsigned a;
  double want, own;
} ref[] = {
    {0.001, 0.6, 2, 1.5098225032300834404e-5, 1.5098225032300834404e-5},
    {0.001, 0.6, 3, 2.4731695364689274638e-5, 2.4723137058713554751e-5},
    {0.001, 0.6, 7, 1.6642500961604758136, 1.6642500765200790815},
    {0.001, 0.6, 32, 37.314858850344854247, 37.314858850344854247},
    {0.001, 0.6, 256, 348.62171154051883679, 348.62171154051883679},
    {0.001, 1.1, 2, 1.2864690361563213292e-6, 1.2864690361563213292e-6},
    {0.001, 1.1, 3, 1.9361806854725744469e-6, 1.934534810028657732e-6},
    {0.001, 1.1, 7, 4.5790303908329110051e-6, 4.559605521859887213e-6},
    {0.001, 1.1, 32, 6.0935549094736813913, 6.0935549094659681778},
    {0.001, 1.1, 256, 98.851279951905429998, 98.851279951905429998},
    {0.001, 4, 2, 6.4559015851861916062e-8, 6.4559015851861916062e-8},
    {0.001, 4, 3, 9.7943841979419297278e-8, 9.6855124820205519779e-8},
    {0.001, 4, 7, 2.3886621998738062669e-7, 2.2615026087879880088e-7},
    {0.001, 4, 32, 1.3894934170933124176e-6, 1.0382618284987772359e-6},
    {0.001, 4, 256, 1.0662762387974897386, 1.0662762378560743606},
    {0.0042, 0.6, 2, 2.6715487678949080929e-4, 2.6715487678949080929e-4},
    {0.0042, 0.6, 3, 5.559295280240453484e-4, 5.5529205576011005861e-4},
    {0.0042, 0.6, 7, 3.3416645131064408193, 3.3416644937596497706},
    {0.0042, 0.6, 32, 38.799444769277529411, 38.799444769277529411},
    {0.0042, 0.6, 256, 350.06563219270074557, 350.06563219270074557},
    {0.0042, 1.1, 2, 2.276599418330763396e-5, 2.276599418330763396e-5},
    {0.0042, 1.1, 3, 3.4631334439348468002e-5, 3.4508617864992368004e-5},
    {0.0042, 1.1, 7, 8.5580104148633766894e-5, 8.4077773359967137155e-5},
    {0.0042, 1.1, 32, 7.5781408225296201929, 7.5781408225219069782},
    {0.0042, 1.1, 256, 100.29520060408733878, 100.29520060408733878},
    {0.0042, 4, 2, 1.1424800215118902635e-6, 1.1424800215118902635e-6},
    {0.0042, 4, 3, 1.7961362396203506756e-6, 1.7149563920745426736e-6},
    {0.0042, 4, 7, 4.9646832318497746703e-6, 4.0131125172916505516e-6},
    {0.0042, 4, 32, 4.5544194060315925593e-5, 1.8676898145231251035e-5},
    {0.0042, 4, 256, 2.5101051571508186844, 2.5101051562108242452},
    {0.05, 0.6, 2, 0.038925225857644590938, 0.038925225857644590938},
    {0.05, 0.6, 3, 0.26396828473204577784, 0.26327000996468450088},
    {0.05, 0.6, 7, 6.2784958115939862423, 6.2784957923278378827},
    {0.05, 0.6, 32, 41.403368940324649436, 41.403368940324649436},
    {0.05, 0.6, 256, 352.59936860668890337, 352.59936860668890337},
    {0.05, 1.1, 2, 3.3763552548464304971e-3, 3.3763552548464304971e-3},
    {0.05, 1.1, 3, 5.9334101939747300774e-3, 5.7085376732149191176e-3},
    {0.05, 1.1, 7, 0.040155784933066794731, 0.035997487179274528699},
    {0.05, 1.1, 32, 10.182064991894524674, 10.182064991886811459},
    {0.05, 1.1, 256, 102.82893701807549657, 102.82893701807549657},
    {0.05, 4, 2, 1.6970785911677968238e-4, 1.6970785911677968238e-4},
    {0.05, 4, 3, 4.0720355905724510277e-4, 2.5681300789106881622e-4},
    {0.05, 4, 7, 2.4665202874368381399e-3, 6.2039737685718814948e-4},
    {0.05, 4, 32, 0.040886736137183674812, 3.4475135716790187869e-3},
    {0.05, 4, 256, 5.0438153361676019433, 5.0438153352280130914},
    {0.3, 0.6, 2, 1.0781625442727117406, 1.0781625442727117406},
    {0.3, 0.6, 3, 2.7321528172856818998, 2.7301554528216319856},
    {0.3, 0.6, 7, 8.6742623850647990141, 8.6742623658047863646},
    {0.3, 0.6, 32, 43.558308751659629992, 43.558308751659629992},
    {0.3, 0.6, 256, 354.70353623319060317, 354.70353623319060317},
    {0.3, 1.1, 2, 0.15292524207051796395, 0.15292524207051796395},
    {0.3, 1.1, 3, 0.39612706839418485455, 0.35336438486418333401},
    {0.3, 1.1, 7, 1.8649558020831586174, 1.8611428297326756804},
    {0.3, 1.1, 32, 12.337004803100951645, 12.33700480309323843},
    {0.3, 1.1, 256, 104.93310464457719638, 104.93310464457719638},
    {0.3, 4, 2, 8.2579537668407912006e-3, 8.2579537668407912006e-3},
    {0.3, 4, 3, 0.030015316756055919572, 0.013176332853520674689},
    {0.3, 4, 7, 0.099314077927166351794, 0.037927937137182286118},
    {0.3, 4, 32, 0.52333533286798297279, 0.33366502529848970597},
    {0.3, 4, 256, 7.147980958248962276, 7.1479809573094043977},
    {0.9, 0.6, 2, 2.6793020104264749589, 2.6793020104264749589},
    {0.9, 0.6, 3, 4.1139997625192322036, 4.1139997625192322036},
    {0.9, 0.6, 7, 9.704662136279251172, 9.704662136279251172},
    {0.9, 0.6, 32, 44.441045718132901661, 44.441045718132901661},
    {0.9, 0.6, 256, 355.55514237706277977, 355.55514237706277977},
    {0.9, 1.1, 2, 0.76856307227790284596, 0.76856307227790284596},
    {0.9, 1.1, 3, 1.1916231021875889098, 1.1916231021875889098},
    {0.9, 1.1, 7, 2.8750018980654616674, 2.8750018980654616674},
    {0.9, 1.1, 32, 13.219741769556225811, 13.219741769556225811},
    {0.9, 1.1, 256, 105.78471078844937297, 105.78471078844937297},
    {0.9, 4, 2, 0.056422877924342229812, 0.056422877924342229812},
    {0.9, 4, 3, 0.085127534531222363447, 0.085127534531222363447},
    {0.9, 4, 7, 0.20610103247127876813, 0.20610103247127876813},
    {0.9, 4, 32, 0.99660127368845733948, 0.99660127368845733948},
    {0.9, 4, 256, 7.9995868215072242106, 7.9995868215072242106},
};

static double gauss_curve(double l, const void *ctx)
{
  double s = *(const double *)ctx;
  return l / (2 * s * s);
}

static void test_reference(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
    double s = ref[i].s;
    double got = dpgd_acct_poisson_rdp_bound(ref[i].q, gauss_curve, &s, ref[i].a);
    /* upward (never below the true value), and within 1e-11 of it */
    assert_true(got >= ref[i].want);
    assert_true(got <= ref[i].want * (1 + 1e-11) + 1e-300);
  }
  for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
    double s = ref[i].s, want = ref[i].own;
    double got = dpgd_acct_sdgauss_rdp(ref[i].q, s, ref[i].a - 0.5); /* ceil */
    /* 1e-8: where G_l's alternating sum cancels, its rounding pad lifts it (1.4e-9 at
     * q 0.3, sigma 4, order 32) */
    assert_true(got >= want && got <= want * (1 + 1e-8) + 1e-300);
    /* never above the generic bound, which it refines */
    assert_true(got <= dpgd_acct_poisson_rdp_bound(ref[i].q, gauss_curve, &s, ref[i].a));
  }
}

static void test_closed_forms(void **state)
{
  (void)state;
  static const double ss[] = {0.3, 1, 2.5, 40};
  for (int i = 0; i < 4; i++) {
    double s = ss[i];
    for (unsigned a = 2; a <= 256; a *= 2) {
      double base = a / (2 * s * s);
      assert_true(dpgd_acct_poisson_rdp_bound(1, gauss_curve, &s, a) == base);
      assert_true(dpgd_acct_poisson_rdp_bound(0, gauss_curve, &s, a) == 0);
      /* below the base curve at every rate: the bound C (joint convexity) */
      assert_true(dpgd_acct_poisson_rdp_bound(0.999, gauss_curve, &s, a) <= base * (1 + 1e-12));
    }
    /* order 2: A = 1 + q^2 (e^{1/s^2} - 1) < B = 1 + q^2 (e^{1/s^2} - 1) / (1 - q) <= C */
    static const double qs[] = {1e-4, 0.01, 0.2, 0.7};
    for (int k = 0; k < 4; k++) {
      double q = qs[k], e = expm1(1 / (s * s));
      double b = log1p(q * q * e / (1 - q)), c = log1p(q * e);
      double want = b < c ? b : c;
      double got = dpgd_acct_poisson_rdp_bound(q, gauss_curve, &s, 2);
      assert_true(got >= want && got <= want * (1 + 1e-10)); /* the pad: cancellation in C */
    }
  }
  double s = 1;
  assert_true(isnan(dpgd_acct_poisson_rdp_bound(-0.1, gauss_curve, &s, 2)));
  assert_true(isnan(dpgd_acct_poisson_rdp_bound(0.1, gauss_curve, &s, 1)));
  assert_true(isnan(dpgd_acct_poisson_rdp_bound(0.1, gauss_curve, &s, 257)));
  assert_true(isnan(dpgd_acct_poisson_rdp_bound(0.1, NULL, &s, 2)));
  assert_true(isinf(dpgd_acct_sdgauss_rdp(0.1, 1, 300)));
}

/* log sum_x exp(f(x)) accumulated stably in long double */
static void lse(long double *acc, long double v)
{
  if (*acc == -INFINITY) *acc = v;
  else if (v > *acc) *acc = v + log1pl(expl(*acc - v));
  else *acc += log1pl(expl(v - *acc));
}

/* D_a of the one-dimensional pair P' = (1-q) N_Z(0, s2) + q N_Z(m, s2) and P = N_Z(0, s2),
 * remove (P' || P) or add (P || P') direction, by direct summation (Z cancels). */
static long double mix_renyi(long double q, long m, long double s2, unsigned a, int add)
{
  long M = (long)(60 * sqrtl(s2) + 2 * a * labs(m)) + 60;
  long double l = -INFINITY, lz = -INFINITY;
  for (long x = -M; x <= M; x++) {
    long double l0 = -(long double)x * x / (2 * s2),
                lm = -(long double)(x - m) * (x - m) / (2 * s2);
    long double mx = l0 > lm ? l0 : lm;
    long double lmix = mx + logl((1 - q) * expl(l0 - mx) + q * expl(lm - mx));
    lse(&l, add ? a * l0 + (1.0L - a) * lmix : a * lmix + (1.0L - a) * l0);
    lse(&lz, l0);
  }
  return (l - lz) / (a - 1);
}

static void test_true_divergence(void **state)
{
  (void)state;
  static const double qs[] = {0.01, 0.1, 0.5, 0.9};
  static const double ss[] = {0.5, 1.2, 3};
  static const unsigned as[] = {2, 3, 6, 16, 40};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 5; k++)
        for (long m = 1; m <= 2; m++) {
          long double s2 = (long double)ss[j] * ss[j];
          double bound = dpgd_acct_sdgauss_rdp(qs[i], ss[j] / m, as[k]);
          for (int add = 0; add <= 1; add++)
            assert_true(mix_renyi(qs[i], m, s2, as[k], add) <= bound * (1 + 1e-12L));
        }
}

/* The continuous Gaussian's curve in the generic bound: never below the tight RDP of the
 * sampled Gaussian the accountant already has (at q = 1 equal to it). */
static void test_above_sampled_gaussian(void **state)
{
  (void)state;
  static const double qs[] = {0.001, 0.02, 0.3, 0.95};
  static const double ss[] = {0.5, 0.9, 2, 8};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      dpgd_accountant *a = dpgd_acct_alloc();
      assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, qs[i], ss[j], 1), DPGD_OK);
      double s = ss[j];
      for (unsigned k = 2; k <= 256; k++) {
        double tight = dpgd_acct_rdp_curve(a, k);
        double gen = dpgd_acct_poisson_rdp_bound(qs[i], gauss_curve, &s, k);
        assert_true(gen >= tight * (1 - 1e-13));
        assert_true(dpgd_acct_sdgauss_rdp(qs[i], s, k) >= tight * (1 - 1e-13));
      }
      dpgd_acct_free(a);
    }
}

static void test_monotone(void **state)
{
  (void)state;
  static const unsigned as[] = {2, 5, 31, 256};
  for (int k = 0; k < 4; k++)
    for (double s = 0.4; s < 20; s *= 1.7) {
      double prev = 0;
      for (double q = 1e-4; q < 1; q *= 1.9) {
        double v = dpgd_acct_sdgauss_rdp(q, s, as[k]);
        assert_true(v >= prev);
        assert_true(v >= dpgd_acct_sdgauss_rdp(q, s * 1.01, as[k]));
        prev = v;
      }
    }
}

static void test_entry(void **state)
{
  (void)state;
  const double q = 0.01, sigma = 1.1, delta = 1e-5;
  dpgd_accountant *a = dpgd_acct_alloc(), *b = NULL;
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, q, sigma, 500), DPGD_OK);
  assert_true(dpgd_acct_has_discrete_gaussian(a));
  assert_true(dpgd_acct_rdp_curve(a, 7) == 500 * dpgd_acct_sdgauss_rdp(q, sigma, 7));
  dpgd_acct_value v, vc;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, delta, &v), DPGD_EINVAL);
  /* the twin is the continuous subsampled Gaussian; the proven rows lie above its exact */
  dpgd_accountant *c = dpgd_acct_continuous_twin(a), *g = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(g, q, sigma, 500), DPGD_OK);
  assert_false(dpgd_acct_has_discrete_gaussian(c));
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_RDP_OPTIMAL, delta, &vc), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(g, DPGD_ACCT_RDP_OPTIMAL, delta, &v), DPGD_OK);
  assert_true(v.value == vc.value);
  double ce = dpgd_acct_continuous_epsilon(a, delta);
  for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++) {
    assert_int_equal(dpgd_acct_epsilon(a, m, delta, &v), DPGD_OK);
    assert_true(v.value >= ce);
    assert_true(v.value >= vc.value); /* generic bound >= tight curve, same conversion */
  }
  /* rates 0 and 1 are plain discrete Gaussians */
  dpgd_accountant *d = dpgd_acct_alloc(), *e = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(d, 1, sigma, 3), DPGD_OK);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(e, 1 / sigma, 3), DPGD_OK);
  assert_true(dpgd_acct_rdp_curve(d, 4.5) == dpgd_acct_rdp_curve(e, 4.5));
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(d, 0, sigma, 3), DPGD_OK);
  assert_true(dpgd_acct_rdp_curve(d, 4.5) == dpgd_acct_rdp_curve(e, 4.5));
  /* checkpoint round trip */
  void *buf;
  size_t len;
  assert_int_equal(dpgd_acct_serialize(a, &buf, &len), DPGD_OK);
  assert_int_equal(dpgd_acct_deserialize(&b, buf, len), DPGD_OK);
  dpgd_free(buf);
  assert_true(dpgd_acct_rdp_curve(a, 9) == dpgd_acct_rdp_curve(b, 9));
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_EXACT, delta, &v), DPGD_EINVAL);
  /* bad input; replace-one entries do not mix with it */
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, -0.1, 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, 1.5, 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, 0.1, 0, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, 0.1, NAN, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, 0.1, 1, 0), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(NULL, 0.1, 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 10, 100, 1, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  dpgd_accountant *w = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_wor_gaussian(w, 10, 100, 1, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_OK);
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(w, 0.1, 1, 1), DPGD_EINVAL);
  dpgd_acct_free(w);
  dpgd_acct_free(a);
  dpgd_acct_free(b);
  dpgd_acct_free(c);
  dpgd_acct_free(d);
  dpgd_acct_free(e);
  dpgd_acct_free(g);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference),       cmocka_unit_test(test_closed_forms),
      cmocka_unit_test(test_true_divergence), cmocka_unit_test(test_above_sampled_gaussian),
      cmocka_unit_test(test_monotone),        cmocka_unit_test(test_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
