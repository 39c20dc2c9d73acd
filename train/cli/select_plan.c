/* select_plan.c -- the accounting side of `dpgd select`: every grid cell's config and
 * planned composition at a per-run eps, the selection's total (accounting/SELECTION.md),
 * and the per-run eps that meets a target total. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "select.h"

void dpgd_select_eps_setting(char *buf, size_t len, double e)
{
  snprintf(buf, len, "%s=%.17g", DPGD_CONFIG_KEY(privacy_epsilon), e);
}

void dpgd_select_clear(dpgd_selection *s)
{
  for (size_t c = 0; s->acct && c < s->n_cells; c++) dpgd_acct_free(s->acct[c]);
  free(s->cfg), free(s->n), free(s->acct), free(s->sigma), free(s->eps);
  s->cfg = NULL, s->n = NULL, s->acct = NULL, s->sigma = NULL, s->eps = NULL;
  dpgd_sweep_clear(&s->sweep);
}

/* Cell c's config: file, sweep sets, grid values; checked for a selection. */
static int cell_config(dpgd_selection *s, size_t c, char *name, size_t len)
{
  dpgd_config *cfg = &s->cfg[c];
  char kv[700];
  dpgd_config_defaults(cfg);
  int st = dpgd_sweep_cell_name(name, len, &s->sweep, c);
  if (!st) st = dpgd_config_load(cfg, dpgd_sweep_cell_config(&s->sweep, c));
  for (size_t i = 0; !st && i < s->sweep.n_sets; i++)
    st = dpgd_config_set(cfg, s->sweep.sets[i]);
  for (size_t d = 0; !st && d < s->sweep.n_dims; d++) {
    st = dpgd_sweep_cell_override(kv, sizeof kv, &s->sweep, c, d);
    if (!st) st = dpgd_config_set(cfg, kv);
  }
  if (!st) st = dpgd_config_validate(cfg);
  if (st) return st;
  if (!cfg->data_validation)
    return DPGD_FAIL(DPGD_EINVAL,
                     "data.validation is 0: the score needs a validation split carved from "
                     "the training set (set data.validation=N)");
  if (cfg->train_algorithm != DPGD_ALGO_GD)
    return DPGD_FAIL(DPGD_EINVAL, "train.algorithm = pnsgd is not supported by select");
  if (cfg->filter_enabled && cfg->train_sampling == DPGD_SAMPLING_POISSON)
    return DPGD_FAIL(DPGD_EINVAL, "filtered DP-SGD is not supported by select (its filter's "
                                  "guarantee is not a composition the selection can use)");
  if (c && cfg->privacy_delta != s->cfg[0].privacy_delta)
    return DPGD_FAIL(DPGD_EINVAL, "privacy.delta differs between cells (%g, %g)",
                     cfg->privacy_delta, s->cfg[0].privacy_delta);
  return DPGD_OK;
}

static int grid_checks(const dpgd_selection *s)
{
  if (!s->n_cells)
    return DPGD_FAIL(DPGD_EINVAL, "the grid is empty: give a .sweep with a config");
  for (size_t d = 0; d < s->sweep.n_dims; d++)
    if (!strncmp(s->sweep.dims[d].key, "privacy.", 8))
      return DPGD_FAIL(DPGD_EINVAL,
                       "the grid varies %s: a private selection sets every run's privacy "
                       "itself (from the total); remove it from the grid",
                       s->sweep.dims[d].key);
  return DPGD_OK;
}

static int grid_varies_data(const dpgd_selection *s)
{
  for (size_t d = 0; d < s->sweep.n_dims; d++)
    if (!strncmp(s->sweep.dims[d].key, "data.", 5)) return 1;
  return 0;
}

int dpgd_select_setup(dpgd_selection *s)
{
  s->n_cells = dpgd_sweep_n_cells(&s->sweep);
  int st = grid_checks(s);
  if (st) return st;
  size_t n = s->n_cells;
  s->cfg = calloc(n, sizeof *s->cfg);
  s->n = calloc(n, sizeof *s->n);
  s->acct = calloc(n, sizeof *s->acct);
  s->sigma = calloc(n, sizeof *s->sigma);
  s->eps = calloc(n, sizeof *s->eps);
  if (!s->cfg || !s->n || !s->acct || !s->sigma || !s->eps)
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  int each = grid_varies_data(s);
  for (size_t c = 0; c < n; c++) {
    char name[512] = "";
    dpgd_plan p;
    st = cell_config(s, c, name, sizeof name);
    if (!st && (c == 0 || each)) st = dpgd_run_dry(&p, &s->cfg[c]);
    if (st) {
      char why[600];
      snprintf(why, sizeof why, "%s", dpgd_error_last());
      return DPGD_FAIL(st, "cell %s: %s", name, why);
    }
    s->n[c] = c == 0 || each ? p.n : s->n[0];
  }
  s->run_delta = s->cfg[0].privacy_delta;
  return DPGD_OK;
}

/* Cell c planned at per-run eps setting kv: its composition, sigma and eps. */
static int plan_cell(dpgd_selection *s, size_t c, const char *kv, double e)
{
  dpgd_plan p;
  int st = dpgd_config_set(&s->cfg[c], kv);
  if (!st) st = dpgd_plan_make(&p, &s->cfg[c], s->n[c]);
  dpgd_acct_free(s->acct[c]);
  s->acct[c] = NULL;
  if (!st) st = dpgd_plan_accountant(&s->acct[c], &p, p.steps);
  if (st) return st;
  s->sigma[c] = p.sigma;
  s->eps[c] = p.eps[p.report_method];
  if (!(s->eps[c] <= e * (1 + 1e-9))) {
    char name[512] = "";
    dpgd_sweep_cell_name(name, sizeof name, &s->sweep, c);
    return DPGD_FAIL(DPGD_EINVAL,
                     "cell %s: its run does not calibrate to privacy.epsilon = %g (planned "
                     "eps %g): leave privacy.sigma unset",
                     name, e, s->eps[c]);
  }
  return DPGD_OK;
}

/* The cells whose compositions differ (the same bytes serialized: the same mechanisms,
 * parameters and counts), into uniq; *n_uniq their number. Cells that differ only in
 * keys that do not touch privacy (a learning rate) have equal accountants: the base's
 * maximum over cells is the same over the distinct ones, computed once each. */
static int distinct_cells(const dpgd_selection *s, const dpgd_accountant **uniq, size_t *n_uniq)
{
  void **buf = calloc(s->n_cells, sizeof *buf);
  size_t *len = calloc(s->n_cells, sizeof *len), k = 0;
  int st = buf && len ? DPGD_OK : DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  for (size_t c = 0; !st && c < s->n_cells; c++) {
    st = dpgd_acct_serialize(s->acct[c], &buf[c], &len[c]);
    int seen = 0;
    for (size_t j = 0; !st && j < c && !seen; j++)
      seen = len[j] == len[c] && !memcmp(buf[j], buf[c], len[c]);
    if (!st && !seen) uniq[k++] = s->acct[c];
  }
  for (size_t c = 0; buf && c < s->n_cells; c++) dpgd_free(buf[c]);
  free(buf), free(len);
  *n_uniq = k;
  return st;
}

int dpgd_select_account(dpgd_selection *s, double e)
{
  char kv[128];
  dpgd_select_eps_setting(kv, sizeof kv, e);
  double mu_max = 0;
  int gdp = 1;
  for (size_t c = 0; c < s->n_cells; c++) {
    int st = plan_cell(s, c, kv, e);
    if (st) return st;
    /* Gaussian or discrete Gaussian steps (integer shifts): Renyi curve lambda mu^2 / 2. */
    double mu = dpgd_acct_zcdp_mu(s->acct[c]);
    if (!isfinite(mu)) gdp = 0;
    else if (mu > mu_max) mu_max = mu;
  }
  s->run_eps = e;
  double ss = s->score_sigma;
  if (!(ss > 0)) {
    if (!gdp)
      return DPGD_FAIL(DPGD_EINVAL, "--score-sigma is needed: the runs are not Gaussian "
                                    "compositions (DP-SGD), so no free score noise exists");
    ss = 1 / mu_max; /* the score's curve is then the largest cell's: it costs nothing */
  }
  s->score_mu = 1 / ss;
  const dpgd_accountant **cells = malloc(s->n_cells * sizeof *cells);
  size_t n = 0;
  int st = cells ? distinct_cells(s, cells, &n) : DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  dpgd_select_base b = {n, cells, s->score_mu};
  if (!st) st = dpgd_select_epsilon(&s->k, &b, s->method, s->delta, &s->total);
  free(cells);
  return st;
}

/* With --score-sigma the total has a floor: the base curve is the larger of the runs'
 * and the score's, so no per-run eps gives a total below the selection of the score
 * alone (the runs' curves at 0: a cell with an empty composition), which the total
 * approaches as the per-run eps falls. A target at or below it is an error, not a
 * search towards 0 (whose runs' calibrations grow ever costlier). */
static int score_floor(const dpgd_selection *s, dpgd_acct_value *floor)
{
  dpgd_accountant *none = dpgd_acct_alloc();
  if (!none) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  const dpgd_accountant *cells[1] = {none};
  dpgd_select_base b = {1, cells, 1 / s->score_sigma};
  int st = dpgd_select_epsilon(&s->k, &b, s->method, s->delta, floor);
  dpgd_acct_free(none);
  return st;
}

int dpgd_select_calibrate(dpgd_selection *s, double target)
{
  if (s->score_sigma > 0) {
    dpgd_acct_value f;
    int st = score_floor(s, &f);
    if (st) return st;
    if (!(f.value < target))
      return DPGD_FAIL(DPGD_ERANGE,
                       "no per-run eps gives a total of %g: the validation score's noise "
                       "(--score-sigma %g) costs %.10g by itself; raise --score-sigma or the "
                       "total",
                       target, s->score_sigma, f.value);
  }
  double hi = target, lo = target / 2;
  int st = dpgd_select_account(s, lo);
  for (int i = 0; !st && s->total.value > target && i < 40; i++) {
    hi = lo, lo /= 2;
    st = dpgd_select_account(s, lo);
  }
  if (st) return st;
  if (s->total.value > target)
    return DPGD_FAIL(DPGD_ERANGE, "no per-run eps gives a total of %g", target);
  for (int it = 0; it < 30 && hi - lo > 1e-5 * hi; it++) {
    double mid = sqrt(lo * hi);
    if ((st = dpgd_select_account(s, mid))) return st;
    if (s->total.value <= target) lo = mid;
    else hi = mid;
  }
  return dpgd_select_account(s, lo);
}
