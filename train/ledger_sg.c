/* ledger_sg.c -- the ledger of individually filtered DP-SGD (train/DPSGD_FILTER.md): an
 * RDP filter whose per-step charge is the Poisson-subsampled Gaussian's RDP at each
 * point's own sensitivity, on a grid, charged to every point every step (the sample is
 * secret), from its cap or, at refresh steps, from its clipped norm at theta_t. No OpenMP
 * and no fast-math here (STYLE.md 11, 12). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_sg.h"

dpgd_ledger *dpgd_ledger_alloc_sg(size_t n, double clip, double q, double sigma, double k)
{
  if (n == 0 || n > UINT32_MAX || !(clip > 0) || !isfinite(clip) || !(k > 0) || !isfinite(k))
    return NULL;
  dpgd_ledger *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->n = n;
  l->clip = clip;
  l->clip2 = clip * clip;
  l->budget = NAN;
  double budgets[DPGD_FILTER_MAX_ORDERS];
  l->sg = dpgd_filter_sg_alloc(q, sigma, DPGD_FILTER_SG_N_ORDERS, dpgd_filter_sg_orders,
                               DPGD_FILTER_SG_GRID);
  l->cap_idx = malloc(n * sizeof *l->cap_idx);
  l->charge_idx = malloc(n * sizeof *l->charge_idx);
  if (l->sg && !dpgd_filter_sg_budgets(l->sg, k, budgets))
    l->filter = dpgd_filter_alloc(n, DPGD_FILTER_RDP, DPGD_FILTER_SG_N_ORDERS,
                                  dpgd_filter_sg_orders, budgets);
  if (!l->sg || !l->cap_idx || !l->charge_idx || !l->filter) {
    dpgd_ledger_free(l);
    return NULL;
  }
  l->spend = dpgd_filter_spent_data(l->filter, 0);
  return l;
}

/* The engine cap of grid index k: (k / K) C, rounded down so that the real cap never
 * exceeds the grid point the table charges (exactly C at k = K), less the slack. */
static double grid_cap(const dpgd_ledger *l, uint32_t k)
{
  size_t K = l->sg->grid;
  double a = k == K ? l->clip : l->clip * ((double)k / (double)K) * (1 - 0x1p-50);
  return a > l->slack ? a - l->slack : 0.0;
}

void dpgd_ledger_sg_caps(const dpgd_ledger *l, double *caps)
{
  /* The indices are the ledger's scratch for this step (written through its pointers). A
   * mismatch of filter and table is a defect; every point then gets cap 0 and charge 0. */
  if (dpgd_filter_sg_caps(l->filter, l->sg, l->cap_idx))
    for (size_t i = 0; i < l->n; i++) l->cap_idx[i] = 0;
  for (size_t i = 0; i < l->n; i++) {
    l->charge_idx[i] = l->cap_idx[i];
    caps[i] = grid_cap(l, l->cap_idx[i]);
  }
}

int dpgd_ledger_refresh(dpgd_ledger *l, double *caps, const double *sqnorm_post)
{
  if (!l->sg) return DPGD_FAIL(DPGD_EINVAL, "refresh: the ledger is not a DP-SGD filter");
  double K = (double)l->sg->grid;
  for (size_t i = 0; i < l->n; i++) {
    double p = sqnorm_post[i];
    if (!(p >= 0) || !isfinite(p))
      return DPGD_FAIL(DPGD_ERANGE,
                       "post-clip squared norm of point %zu is %g (model defect); ledger "
                       "unchanged",
                       i, p);
  }
  for (size_t i = 0; i < l->n; i++) {
    uint32_t k = l->cap_idx[i];
    if (k == 0) continue;
    /* The grid point above the sensitivity bound sqrt(post) + slack, raised by 2^-20 (the
     * sum pass then keeps an unclipped gradient unclipped) and 2^-40 (this rounding). */
    double x = (sqrt(sqnorm_post[i]) * (1 + 0x1p-20) + l->slack) / l->clip * K * (1 + 0x1p-40);
    double c = ceil(x);
    if (c < (double)k) {
      l->charge_idx[i] = (uint32_t)c;
      caps[i] = grid_cap(l, (uint32_t)c);
    }
    if (l->hold_idx) { /* any index is valid (DPSGD_FILTER.md 3); h x only guides it */
      double h = ceil(l->hold * x);
      l->hold_idx[i] = h >= K ? (uint32_t)K : (uint32_t)h;
    }
  }
  return DPGD_OK;
}

int dpgd_ledger_set_hold(dpgd_ledger *l, double factor)
{
  if (!l->sg || !(factor >= 1) || !isfinite(factor))
    return DPGD_FAIL(DPGD_EINVAL, "hold: needs a DP-SGD filter and a finite factor >= 1");
  uint32_t *h = malloc(l->n * sizeof *h);
  if (!h) return DPGD_FAIL(DPGD_ENOMEM, "hold: no memory for %zu points", l->n);
  for (size_t i = 0; i < l->n; i++) h[i] = (uint32_t)l->sg->grid;
  free(l->hold_idx);
  l->hold_idx = h;
  l->hold = factor;
  return DPGD_OK;
}

void dpgd_ledger_hold_caps(dpgd_ledger *l, double *caps)
{
  if (!l->hold_idx) return;
  for (size_t i = 0; i < l->n; i++)
    if (l->hold_idx[i] < l->charge_idx[i]) {
      l->charge_idx[i] = l->hold_idx[i];
      caps[i] = grid_cap(l, l->hold_idx[i]);
    }
}

int dpgd_ledger_hold_load(dpgd_ledger *l, const void *buf, size_t len)
{
  if (!l->hold_idx || len != l->n * sizeof *l->hold_idx)
    return DPGD_FAIL(DPGD_EFORMAT, "held bounds: %zu bytes for %zu points", len, l->n);
  const unsigned char *b = buf;
  for (size_t i = 0; i < l->n; i++) {
    uint32_t v;
    memcpy(&v, b + i * sizeof v, sizeof v);
    if (v > l->sg->grid)
      return DPGD_FAIL(DPGD_EFORMAT, "held bound of point %zu is grid index %u (above %zu)", i,
                       (unsigned)v, l->sg->grid);
  }
  memcpy(l->hold_idx, buf, len);
  return DPGD_OK;
}

int dpgd_ledger_sg_spend(dpgd_ledger *l)
{
  return dpgd_filter_sg_charge(l->filter, l->sg, l->charge_idx);
}

int dpgd_ledger_point_rdp(const dpgd_ledger *l, size_t i, double *spend, double *frac,
                          double *order)
{
  if (!l->sg || i >= l->n) return DPGD_FAIL(DPGD_EINVAL, "point RDP: not a DP-SGD filter");
  *frac = -1;
  for (size_t j = 0; j < l->sg->n_orders; j++) {
    double s = dpgd_filter_spent(l->filter, i, j), b = dpgd_filter_budget(l->filter, j);
    double r = s > 0 ? nextafter(s / b, INFINITY) : 0.0; /* rounded up */
    if (r > *frac) *frac = r, *spend = s, *order = l->sg->order[j];
  }
  return DPGD_OK;
}
