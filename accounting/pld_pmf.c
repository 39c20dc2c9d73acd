/* pld_pmf.c -- one release's privacy-loss distribution on a grid of step h, its loss
 * rounded up (pessimistic), for Gaussian and Poisson-subsampled Gaussian entries, and the
 * Chernoff bounds on the tails of a composition of them. Derivation: accounting/PLD.md. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pld_internal.h"

#define U DBL_EPSILON

static double qtail(double z) { return 0.5 * erfc(z / M_SQRT2); }

/* Q(z) at the end of z's rounding interval (the division that formed z and the scaling
 * by 1/sqrt 2 inside qtail: a relative 2 u each) on the side that makes it larger (up)
 * or smaller (dn); erfc's own error is in ACCT_PLD_CDF_RELERR. */
static double qt_up(double z) { return qtail(z - 4 * U * fabs(z)); }
static double qt_dn(double z) { return qtail(z + 4 * U * fabs(z)); }

/* An interval [*lo, *hi] around log r, r = e^v - (1 - q), for a grid loss v known to a
 * relative 2^-53 (the interval also covers that); -inf at an end where r <= 0 is
 * possible. Log space throughout: no exponential of v is formed where it could
 * overflow, and near r = 0 (the edge of the loss support) r is formed as
 * (1 - q) expm1(v - log(1 - q)), whose only cancellation, in v - log(1 - q), is
 * bounded (PLD.md section 2). */
static void log_r_range(double q, double lq, double v, double *lo, double *hi)
{
  double lr, e;
  if (q >= 1) {
    lr = v, e = U * fabs(v);
  } else if (v >= 1) { /* log r = v + log1p(-(1 - q) e^-v), (1 - q) e^-v <= 1/e */
    lr = v + log1p(-(1 - q) * exp(-v));
    e = 8 * U + 3 * U * (fabs(v) + fabs(lr));
  } else if (v >= 0) { /* r = expm1(v) + q: a sum of non-negative terms */
    lr = log(expm1(v) + q);
    e = 8 * U + 3 * U * fabs(lr);
  } else { /* r = (1 - q) expm1(t), t = v - log1p(-q) */
    double t = v - lq, dt = 3 * U * (fabs(lq) + fabs(t) + fabs(v));
    double ex = 6 * U + 3 * U * fabs(lq);
    *lo = *hi = -INFINITY;
    if (t + dt > 0) *hi = lq + log(expm1(t + dt)), *hi += ex + 3 * U * fabs(*hi);
    if (t - dt > 0) *lo = lq + log(expm1(t - dt)), *lo -= ex + 3 * U * fabs(*lo);
    return;
  }
  *lo = lr - e, *hi = lr + e;
}

/* One entry in one direction, with the logarithms every evaluation needs. */
typedef struct {
  const acct_entry *en;
  int dir;
  double q, s, lq, lq1; /* q, sigma, log q, log(1 - q) */
} tails_ctx;

static tails_ctx tails_init(const acct_entry *en, int dir)
{
  tails_ctx c = {.en = en, .dir = dir, .q = en->par[0], .s = en->par[1]};
  if (en->kind != ACCT_GAUSSIAN) c.lq = log(c.q), c.lq1 = log1p(-c.q);
  return c;
}

/* The threshold output o = sigma^2 log(r/q) + 1/2 of a subsampled Gaussian's loss at v
 * (docs/MATH.md "Exact accounting"), as an interval [*lo, *hi] that holds it (-inf: r <= 0). */
static void threshold_range(const tails_ctx *c, double v, double *lo, double *hi)
{
  double a, b, lq = c->lq, s2 = c->s * c->s;
  log_r_range(c->q, c->lq1, v, &a, &b);
  double ea = 4 * U * (s2 * (fabs(a) + fabs(lq)) + fabs(s2 * (a - lq)) + 1);
  double eb = 4 * U * (s2 * (fabs(b) + fabs(lq)) + fabs(s2 * (b - lq)) + 1);
  *lo = isinf(a) ? a : s2 * (a - lq) + 0.5 - ea;
  *hi = isinf(b) ? b : s2 * (b - lq) + 0.5 + eb;
}

/* Applies the assumed relative error of the normal tails (erfc) and an absolute slack
 * for results in or near the subnormal range. */
static double up(double x)
{
  return fmin(1, x * (1 + ACCT_PLD_CDF_RELERR) + 16 * DBL_TRUE_MIN);
}

static void tails(const tails_ctx *c, double l, double *S, double *F)
{
  const acct_entry *en = c->en;
  int dir = c->dir;
  double f_dummy;
  if (!F) F = &f_dummy;
  if (en->kind == ACCT_GAUSSIAN) { /* L ~ N(mu^2/2, mu^2) under P in both directions */
    double mu = en->par[0], z = (l - mu * mu / 2) / mu;
    double ze = 3 * U * ((fabs(l) + mu * mu) / mu + fabs(z)) + DBL_TRUE_MIN;
    *S = up(qt_up(z - ze)), *F = F == &f_dummy ? 0 : up(qt_up(-z - ze));
    return;
  }
  /* remove: L = u(o) > l <=> o > o_l; add: L = -u(o) > l <=> o < o_l, with
   * o_l = s^2 log(r/q) + 1/2, r = e^(+-l) - (1 - q) (docs/MATH.md "Exact accounting") */
  double q = c->q, s = c->s, a, b;
  threshold_range(c, dir ? -l : l, &a, &b);
  if (dir == 0) { /* S falls with o, F rises: S at the low end, F at the high end */
    *S = isinf(a) ? 1 : up((1 - q) * qt_up(a / s) + q * qt_up((a - 1) / s));
    *F = isinf(b) || F == &f_dummy ? 0 : up((1 - q) * qt_up(-b / s) + q * qt_up((1 - b) / s));
  } else {
    *S = isinf(b) ? 0 : up(qt_up(-b / s));
    *F = isinf(a) ? 1 : F == &f_dummy ? 0 : up(qt_up(a / s));
  }
}

void dpgd_pld_loss_tails(const acct_entry *en, int dir, double l, double *S, double *F)
{
  tails_ctx c = tails_init(en, dir);
  tails(&c, l, S, F);
}

/* The smallest l found with P(L > l) <= tau (upper) or the largest with P(L <= l) <= tau
 * (both from the upper bounds above), by bisection after doubling a bracket outwards
 * until it holds the point (the loss of a release can be far beyond any fixed range:
 * about 1/(2 sigma^2) for a subsampled Gaussian of small sigma). DPGD_ERANGE where no
 * double does. */
static int tail_point(const acct_entry *en, int dir, double tau, int upper, double *out)
{
  double lo = -1, hi = 1, S, F;
#define PLD_BELOW(x) (dpgd_pld_loss_tails(en, dir, (x), &S, &F), upper ? S <= tau : F > tau)
  for (int i = 0; !PLD_BELOW(hi); i++, hi *= 2)
    if (i > 1100) return DPGD_FAIL(DPGD_ERANGE, "PLD: no loss has a tail of %g", tau);
  for (int i = 0; PLD_BELOW(lo); i++, lo *= 2)
    if (i > 1100) return DPGD_FAIL(DPGD_ERANGE, "PLD: no loss has a tail of %g", tau);
  for (int i = 0; i < 2200 && hi - lo > 4 * DBL_EPSILON * fmax(fabs(lo), fabs(hi)); i++) {
    double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    if (PLD_BELOW(mid)) hi = mid;
    else lo = mid;
  }
#undef PLD_BELOW
  *out = upper ? hi : lo;
  return DPGD_OK;
}

/* Lower (down) and upper (up) bounds of the normal-tail sums behind P(L > l) and Q(L > l):
 * the assumed relative error of erfc and an absolute slack for results in or near the
 * subnormal range. */
static double down(double x)
{
  return fmax(0, x * (1 - ACCT_PLD_CDF_RELERR) - 16 * DBL_TRUE_MIN);
}

/* Intervals holding the true survival functions of one release at the real loss l under
 * both measures of the pair (PLD.md section 3): t[0] >= P(L > l) >= t[1] and
 * t[2] >= Q(L > l) >= t[3], each evaluated at the end of the threshold interval on its
 * side. Under Q: Gaussian L ~ N(-mu^2/2, mu^2); subsampled, remove: O ~ N(0, s^2), add:
 * O ~ (1 - q) N(0, s^2) + q N(1, s^2). */
static void tails_pq(const tails_ctx *c, double l, double t[4])
{
  if (c->en->kind == ACCT_GAUSSIAN) {
    double mu = c->en->par[0], zp = (l - mu * mu / 2) / mu, zq = (l + mu * mu / 2) / mu;
    double ze = 3 * U * ((fabs(l) + mu * mu) / mu + fabs(zp) + fabs(zq)) + DBL_TRUE_MIN;
    t[0] = up(qt_up(zp - ze)), t[1] = down(qt_dn(zp + ze));
    t[2] = up(qt_up(zq - ze)), t[3] = down(qt_dn(zq + ze));
    return;
  }
  double q = c->q, s = c->s, a, b;
  threshold_range(c, c->dir ? -l : l, &a, &b);
  if (c->dir == 0) { /* L > l <=> O > o_l: both tails fall with o */
    double qa = isinf(a) ? 1 : qt_up(a / s), qb = isinf(b) ? 1 : qt_dn(b / s);
    double pa = isinf(a) ? 1 : (1 - q) * qa + q * qt_up((a - 1) / s);
    double pb = isinf(b) ? 1 : (1 - q) * qb + q * qt_dn((b - 1) / s);
    t[0] = up(pa), t[1] = isinf(b) ? 1 : down(pb), t[2] = up(qa),
    t[3] = isinf(b) ? 1 : down(qb);
  } else { /* L > l <=> O < o_l: both tails rise with o */
    double pa = isinf(a) ? 0 : qt_dn(-a / s), pb = isinf(b) ? 0 : qt_up(-b / s);
    double qa = isinf(a) ? 0 : (1 - q) * pa + q * qt_dn((1 - a) / s);
    double qb = isinf(b) ? 0 : (1 - q) * pb + q * qt_up((1 - b) / s);
    t[0] = isinf(b) ? 0 : up(pb), t[1] = down(pa), t[2] = isinf(b) ? 0 : up(qb),
    t[3] = down(qa);
  }
}

/* The connect-the-dots split of bin (l_k, l_k + h] (PLD.md section 3): the true mass
 * a = E_P[(e^(l_k + h - L) - 1)/(e^h - 1); l_k < L <= l_k + h] that may stay at l_k, as
 * [*alo, *aup] from the tails at both ends (x, y) and l1 = l_k + h; the other bin mass
 * moves up to l_k + h. Where e^l1 leaves the double range, nothing stays (*alo = 0). */
static void split_bin(const double x[4], const double y[4], double l1, double eh, double *alo,
                      double *aup)
{
  double pu = fmax(0, x[0] - y[1]), e = exp(l1);
  *alo = 0, *aup = pu;
  if (!(fabs(l1) < 700) || !(e * x[2] < DBL_MAX / 4)) return;
  double m = (16 + 2 * fabs(l1)) * U * (e * (x[2] + y[2]) + x[0] + y[0]) / eh + DBL_TRUE_MIN;
  double na = e * (x[3] - y[2]) - (x[0] - y[1]), nb = e * (x[2] - y[3]) - (x[1] - y[0]);
  double a = na / (na > 0 ? eh * (1 + 4 * U) : eh) - m,
         b = nb / (nb > 0 ? eh : eh * (1 + 4 * U)) + m;
  *alo = fmin(fmax(a, 0), pu), *aup = fmin(fmax(b, *alo), pu);
}

/* What the lower bound may lose per release: the shift gamma of eps and the absolute
 * eta of delta (PLD.md section 3), chosen over buckets of the bins' own gamma_j (powers
 * of two) to minimise gamma + eta / dref; the last bucket holds gamma_j = inf. */
#define PLD_NB 101
typedef struct {
  double g[PLD_NB], e[PLD_NB];
} shift_buckets;

static void bucket_add(shift_buckets *B, double gam, double eta)
{
  int ex = 0, b = PLD_NB - 1;
  if (gam < INFINITY) {
    frexp(gam, &ex);
    b = gam <= 0 ? 0 : ex + 80 < 0 ? 0 : ex + 80 > PLD_NB - 2 ? PLD_NB - 2 : ex + 80;
  }
  B->g[b] = fmax(B->g[b], gam), B->e[b] = fmax(B->e[b], eta);
}

static void bucket_choose(const shift_buckets *B, double dref, double *gam, double *eta)
{
  double best = INFINITY, g = 0;
  for (int t = -1; t < PLD_NB - 1; t++) {
    if (t >= 0) g = fmax(g, B->g[t]);
    double e = 0;
    for (int b = t + 1; b < PLD_NB; b++) e = fmax(e, B->e[b]);
    if (g + e / dref < best) best = g + e / dref, *gam = g, *eta = e;
  }
}

/* Masses on the grid: each bin's mass split between its two grid points so that both
 * the P- and the Q-mass are kept (the hockey-stick curve becomes the chord interpolation
 * of the true, convex one at the grid points: an upper bound), the part staying below
 * taken at its lower bound, so that the pmf's tail above l_k is at least the split
 * truth's, S(l_k) - a_k; made non-increasing by a running minimum. Also the lower
 * bound's terms m->shift and m->ex (PLD.md section 3). */
static void fill_masses(dpgd_pld_pmf *m, const acct_entry *en, int dir, double h, double dref)
{
  tails_ctx c = tails_init(en, dir);
  double x[4], y[4], eh = expm1(h) * (1 - 2 * U), tprev = 1, l2 = 0, csum = 0, cmax = 0;
  double rho = 0;
  shift_buckets B = {{0}, {0}};
  tails_pq(&c, (double)m->i0 * h, x);
  for (size_t k = 0; k + 1 < m->n; k++) {
    double alo, aup, l1 = (double)(m->i0 + (int64_t)k + 1) * h;
    tails_pq(&c, l1, y);
    split_bin(x, y, l1, eh, &alo, &aup);
    double qj = fmax(0, x[2] - y[3]), r = eh * (1 + 4 * U) * qj / (4 * y[3]) * (1 + 4 * U);
    double gam = qj == 0 ? 0 : r < 1 ? -log1p(-r) * (1 + 4 * U) : INFINITY;
    bucket_add(&B, gam, eh * (1 + 4 * U) * fmax(0, x[0] - y[1]) / 4 * (1 + 4 * U));
    double t = fmax(0, fmin(tprev, x[0] - alo));
    m->p[k] = tprev - t;
    l2 += m->p[k] * m->p[k];
    /* the pmf's tail above l_k exceeds the split truth's, >= tl, by ck at most: a
     * relative excess (rho) where small, else an absolute one (PLD.md section 3) */
    double ck = (x[0] - x[1]) + (aup - alo), tl = fmax(y[1], x[1] - aup);
    if (ck <= ACCT_PLD_REL_EXCESS * tl) rho = fmax(rho, ck / tl);
    else csum += ck, cmax = fmax(cmax, ck);
    tprev = t;
    memcpy(x, y, sizeof x);
  }
  double t = fmax(0, fmin(tprev, x[0])); /* the top grid point: nothing above it stays */
  m->p[m->n - 1] = tprev - t;
  l2 += m->p[m->n - 1] * m->p[m->n - 1];
  double gam = 0, eta = 0;
  bucket_choose(&B, dref, &gam, &eta);
  m->p_inf = t;
  m->shift = gam * (1 + 1e-12);
  m->rel = rho * (1 + 1e-12);
  m->ex = (eta + fmin(cmax, h * csum * (1 + 1e-12))) * (1 + 1e-12);
  m->l2 = sqrt(l2) * (1 + 1e-12) + DBL_MIN;
}

int dpgd_pld_pmf_build(dpgd_pld_pmf *m, const acct_entry *en, int dir, double h, double tau_inf,
                       double tau_low, double dref, size_t max_n)
{
  m->p = m->blk = NULL;
  double lt = 0, ll = 0;
  int st = tail_point(en, dir, tau_inf, 1, &lt);
  if (!st) st = tail_point(en, dir, tau_low, 0, &ll);
  if (st) return st;
  double i0 = floor(ll / h), i1 = ceil(lt / h);
  if (!(i1 - i0 + 1 <= (double)max_n) || !(fabs(i0) < 0x1p52 && fabs(i1) < 0x1p52))
    return DPGD_FAIL(DPGD_ERANGE, "PLD grid h=%g needs %.3g bins for one release", h,
                     i1 - i0 + 1);
  m->i0 = (int64_t)i0;
  m->n = (size_t)(i1 - i0) + 1;
  m->k = en->count;
  m->p = malloc(m->n * sizeof *m->p);
  m->blk = malloc((m->n / ACCT_PLD_BLOCK + 1) * sizeof *m->blk);
  if (!m->p || !m->blk) {
    dpgd_pld_pmf_free(m);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (PLD of %zu bins)", m->n);
  }
  fill_masses(m, en, dir, h, dref);
  for (size_t b = 0; b < m->n; b += ACCT_PLD_BLOCK) {
    double mass = 0;
    for (size_t j = b; j < m->n && j < b + ACCT_PLD_BLOCK; j++) mass += m->p[j];
    m->blk[b / ACCT_PLD_BLOCK] = mass * (1 + 1e-12);
  }
  double S, F;
  dpgd_pld_loss_tails(en, dir, (double)m->i0 * h, &S, &F);
  m->f_low = F + DBL_MIN;
  return DPGD_OK;
}

void dpgd_pld_pmf_free(dpgd_pld_pmf *m)
{
  free(m->p);
  free(m->blk);
  m->p = m->blk = NULL;
}

/* log of an upper bound on E[e^{lam L'}; L' finite] for the discrete loss L' (bin j at
 * loss (i0 + j) h): blocks of ACCT_PLD_BLOCK bins, each at its largest (lam > 0) or
 * smallest (lam < 0) loss, summed in log space. */
double dpgd_pld_log_mgf(const dpgd_pld_pmf *m, double h, double lam)
{
  double mx = -INFINITY, s = 0;
  for (size_t b = 0; b < m->n; b += ACCT_PLD_BLOCK) {
    size_t e = b + ACCT_PLD_BLOCK < m->n ? b + ACCT_PLD_BLOCK : m->n;
    double mass = m->blk[b / ACCT_PLD_BLOCK];
    if (mass <= 0) continue;
    double l = (double)(m->i0 + (int64_t)(lam > 0 ? e - 1 : b)) * h;
    double t = log(mass) + lam * l;
    if (t > mx) s = s * exp(mx - t) + 1, mx = t;
    else s += exp(t - mx);
  }
  return mx + log(s) + 1e-12;
}
