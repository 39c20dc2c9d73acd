/* cmd_select.c -- `dpgd select`: private hyperparameter selection over a sweep's grid
 * (Papernot & Steinke 2022; accounting/SELECTION.md): options, the per-run eps from a
 * target total, the released outputs (selection.json, model.bin, config.ini) and what stays
 * private. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "select_run.h"

typedef struct {
  const char *file, *out, *seed;
  double total, run_eps, mean_k, eta;
  int dry, quiet, rng;
} select_opts;

static void select_usage(FILE *f)
{
  fputs("usage: dpgd select FILE.sweep (--epsilon TOTAL | --run-epsilon E) [options]\n"
        "Private selection over the sweep's grid (Papernot & Steinke 2022): K runs, K drawn\n"
        "at random, each on a grid cell drawn uniformly, trained on the training part; each\n"
        "one's validation count released with Gaussian noise; the best one's model kept.\n"
        "The total eps covers the whole selection (accounting/SELECTION.md).\n"
        "  --epsilon TOTAL      the total eps to meet: the per-run eps is calibrated to it\n"
        "  --run-epsilon E      or: every run's privacy.epsilon; the total is computed\n"
        "  --delta D            the total's delta (default: the configs' privacy.delta)\n"
        "  --mean-k M           E[K] (default 5; above 1, or at least 1 for poisson)\n"
        "  --k-dist D           geometric (default), logarithmic, poisson or tnb:ETA\n"
        "  --score-sigma S      noise std on the validation count (default: free, 1/mu)\n"
        "  --method M           rdp_optimal (default), rdp_balle or rdp_classic\n"
        "  --set KEY=VALUE      override in every cell (repeatable)\n"
        "  --seed S             research rng seed (default 1: public); --rng secure\n"
        "  --out DIR            output folder (default runs/select)\n"
        "  --dry-run            account only, train nothing\n"
        "  --quiet              print only the result lines\n",
        f);
}

static int parse_k(const char *v, select_opts *o, dpgd_selection *s)
{
  s->k.dist = DPGD_SELECT_TNB;
  if (!strcmp(v, "geometric")) o->eta = 1;
  else if (!strcmp(v, "logarithmic")) o->eta = 0;
  else if (!strcmp(v, "poisson")) s->k.dist = DPGD_SELECT_POISSON;
  else if (!strncmp(v, "tnb:", 4))
    return dpgd_cli_parse_double("--k-dist tnb:", v + 4, &o->eta);
  else
    return dpgd_cli_usage_error("select",
                                "--k-dist '%s': expected geometric, logarithmic, "
                                "poisson or tnb:ETA",
                                v);
  return DPGD_EXIT_OK;
}

static int parse_value(const char *a, const char *v, select_opts *o, dpgd_selection *s)
{
  int st = DPGD_OK;
  if (!strcmp(a, "--epsilon")) return dpgd_cli_parse_double(a, v, &o->total);
  if (!strcmp(a, "--run-epsilon")) return dpgd_cli_parse_double(a, v, &o->run_eps);
  if (!strcmp(a, "--delta")) return dpgd_cli_parse_double(a, v, &s->delta);
  if (!strcmp(a, "--mean-k")) return dpgd_cli_parse_double(a, v, &o->mean_k);
  if (!strcmp(a, "--score-sigma")) return dpgd_cli_parse_double(a, v, &s->score_sigma);
  if (!strcmp(a, "--k-dist")) return parse_k(v, o, s);
  if (!strcmp(a, "--out")) o->out = v;
  else if (!strcmp(a, "--seed")) o->seed = v;
  else if (!strcmp(a, "--rng")) {
    if (strcmp(v, "research") && strcmp(v, "secure"))
      return dpgd_cli_usage_error("select", "--rng '%s': expected research or secure", v);
    o->rng = strcmp(v, "secure") ? DPGD_RNG_RESEARCH : DPGD_RNG_SECURE;
  } else if (!strcmp(a, "--method")) {
    int m = dpgd_acct_method_find(v);
    if (m < DPGD_ACCT_RDP_CLASSIC)
      return dpgd_cli_usage_error("select",
                                  "--method '%s': expected rdp_optimal, rdp_balle "
                                  "or rdp_classic",
                                  v);
    s->method = (dpgd_acct_method)m;
  } else if (!strcmp(a, "--set")) st = dpgd_sweep_add_set(&s->sweep, v);
  else return dpgd_cli_usage_error("select", "unknown option '%s'", a);
  return st ? dpgd_cli_status_error(st, "") : DPGD_EXIT_OK;
}

static int parse_options(int argc, char **argv, select_opts *o, dpgd_selection *s)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int rc = DPGD_EXIT_OK;
    if (a[0] != '-') {
      if (o->file) return dpgd_cli_usage_error("select", "more than one .sweep file ('%s')", a);
      o->file = a;
    } else if (!strcmp(a, "--dry-run")) o->dry = 1;
    else if (!strcmp(a, "--quiet")) o->quiet = 1;
    else if (i + 1 >= argc) return dpgd_cli_usage_error("select", "%s needs a value", a);
    else rc = parse_value(a, argv[++i], o, s);
    if (rc) return rc;
  }
  if (!o->file) return dpgd_cli_usage_error("select", "no grid: give FILE.sweep");
  if ((o->total > 0) == (o->run_eps > 0))
    return dpgd_cli_usage_error("select",
                                "give one of --epsilon TOTAL or --run-epsilon E (> 0)");
  if (!(s->score_sigma >= 0))
    return dpgd_cli_usage_error("select", "--score-sigma %g: expected > 0", s->score_sigma);
  return DPGD_EXIT_OK;
}

/* The distribution of K from the options (one line for a bad mean or eta). */
static int set_k(dpgd_selection *s, const select_opts *o)
{
  if (s->k.dist == DPGD_SELECT_POISSON) {
    if (!(o->mean_k >= 1))
      return dpgd_cli_usage_error("select", "--mean-k %g: the Poisson mean must be >= 1",
                                  o->mean_k);
    s->k.mean = o->mean_k;
    return DPGD_EXIT_OK;
  }
  int st = dpgd_select_k_tnb(&s->k, o->eta, o->mean_k);
  return st ? dpgd_cli_status_error(st, "") : DPGD_EXIT_OK;
}

/* The .sweep file (the one argument that is not an option or its value). */
static const char *find_file(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] != '-') return argv[i];
    i += strcmp(argv[i], "--dry-run") && strcmp(argv[i], "--quiet");
  }
  return NULL;
}

static const char *k_name(const dpgd_select_k *k, char *buf, size_t len)
{
  if (k->dist == DPGD_SELECT_POISSON) return "poisson";
  if (k->eta == 1) return "geometric";
  if (k->eta == 0) return "logarithmic";
  snprintf(buf, len, "tnb:%g", k->eta);
  return buf;
}

static double max_run_eps(const dpgd_selection *s)
{
  double e = 0;
  for (size_t c = 0; c < s->n_cells; c++)
    if (s->eps[c] > e) e = s->eps[c];
  return e;
}

static void print_account(const dpgd_selection *s)
{
  char kb[32];
  printf("per run: eps <= %.10g at delta %g in each of %zu cells (privacy.epsilon = %.17g)\n",
         dpgd_round_digits(max_run_eps(s), 10, 1), s->run_delta, s->n_cells, s->run_eps);
  printf("score: noise std %.17g on the validation count (mu %.17g)\n", 1 / s->score_mu,
         s->score_mu);
  printf("selection: K ~ %s, E[K] = %.6g (Papernot & Steinke 2022, Theorem %d)\n",
         k_name(&s->k, kb, sizeof kb), dpgd_select_k_mean(&s->k),
         s->k.dist == DPGD_SELECT_POISSON ? 6 : 2);
  printf("total: eps = %.10g at delta = %g (%s): the whole selection\n",
         dpgd_round_digits(s->total.value, 10, 1), s->delta, dpgd_acct_method_name(s->method));
}

static void json_best(FILE *f, const dpgd_selection *s, const dpgd_select_draws *d)
{
  if (!d || d->best < 0) {
    fputs(" \"best\": null,\n", f);
    return;
  }
  const dpgd_select_cand *c = &d->cand[d->best];
  char name[512] = "";
  dpgd_sweep_cell_name(name, sizeof name, &s->sweep, c->cell);
  fprintf(f, " \"best\": {\"cell\": \"%s\", \"score\": %.10g, \"overrides\": [", name,
          c->score);
  for (size_t k = 0; k < s->sweep.n_dims; k++) {
    char kv[700];
    dpgd_sweep_cell_override(kv, sizeof kv, &s->sweep, c->cell, k);
    fprintf(f, "%s\"%s\"", k ? ", " : "", kv);
  }
  fputs("]},\n", f);
}

static int write_json(const char *out, const dpgd_selection *s, const dpgd_select_draws *d,
                      int rng)
{
  char *text = NULL, kb[32], path[1400];
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  fprintf(f, "{\"k\": {\"dist\": \"%s\", \"eta\": %.17g, \"gamma\": %.17g, \"mean\": %.17g},\n",
          k_name(&s->k, kb, sizeof kb), s->k.eta, s->k.gamma, dpgd_select_k_mean(&s->k));
  fprintf(f, " \"theorem\": \"Papernot & Steinke 2022, Theorem %d\", \"cells\": %zu,\n",
          s->k.dist == DPGD_SELECT_POISSON ? 6 : 2, s->n_cells);
  fprintf(f, " \"run\": {\"epsilon\": %.17g, \"eps\": %.10g, \"delta\": %.10g, \"sigma\": [",
          s->run_eps, dpgd_round_digits(max_run_eps(s), 10, 1), s->run_delta);
  for (size_t c = 0; c < s->n_cells; c++) fprintf(f, "%s%.10g", c ? ", " : "", s->sigma[c]);
  fprintf(f, "]},\n \"score_sigma\": %.17g, \"score_noise\": \"%s\",\n", 1 / s->score_mu,
          rng == DPGD_RNG_SECURE ? "exact discrete Gaussian on a grid of the count "
                                   "(accounting/SELECTION.md)"
                                 : "floating-point Gaussian from the seeded stream (research)");
  fprintf(f, " \"total\": {\"eps\": %.10g, \"delta\": %.10g, \"method\": \"%s\"},\n",
          dpgd_round_digits(s->total.value, 10, 1), s->delta, dpgd_acct_method_name(s->method));
  json_best(f, s, d);
  fprintf(f, " \"rng\": \"%s\"}\n", dpgd_rng_mode_name(rng));
  fclose(f);
  snprintf(path, sizeof path, "%s/selection.json", out);
  int st = dpgd_write_atomic(path, text, len);
  free(text);
  return st;
}

/* out/model.bin: a copy of the best candidate's. */
static int copy_model(const char *out, const dpgd_select_cand *c)
{
  char src[1400], dst[1400];
  snprintf(src, sizeof src, "%s/model.bin", c->dir);
  snprintf(dst, sizeof dst, "%s/model.bin", out);
  FILE *f = fopen(src, "rb");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s", src);
  char *buf = NULL;
  long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
  if (n > 0 && !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)n)) &&
      fread(buf, 1, (size_t)n, f) != (size_t)n)
    n = -1;
  fclose(f);
  int st = n > 0 && buf ? dpgd_write_atomic(dst, buf, (size_t)n)
                        : DPGD_FAIL(DPGD_EIO, "cannot read %s", src);
  free(buf);
  return st;
}

/* out/config.ini: the released model's public settings, the keys `dpgd eval` reads to
 * feed it (input normalisation, model type, scattering groups, activation), from the
 * chosen candidate's config. The candidate's whole config.ini stays in private/: it holds
 * its secret training seed. */
static int write_public_config(const char *out, const dpgd_select_cand *c)
{
  static const size_t keys[] = {
      offsetof(dpgd_config, data_mean), offsetof(dpgd_config, data_std),
      offsetof(dpgd_config, model_type), offsetof(dpgd_config, model_scatter_groups),
      offsetof(dpgd_config, model_activation)};
  char src[1400], dst[1400];
  snprintf(src, sizeof src, "%s/config.ini", c->dir);
  snprintf(dst, sizeof dst, "%s/config.ini", out);
  dpgd_config cfg;
  dpgd_config_defaults(&cfg);
  int st = dpgd_config_load(&cfg, src);
  if (st) return st;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (config.ini)");
  fputs("; dpgd select: the released model's public settings (what dpgd eval reads).\n"
        "; The candidates' full configs, with their secret seeds, are in private/.\n",
        f);
  st = dpgd_config_write_keys(&cfg, f, keys, sizeof keys / sizeof keys[0]);
  if (fclose(f) && !st) st = DPGD_FAIL(DPGD_EIO, "cannot write the configuration");
  if (!st) st = dpgd_write_atomic(dst, text, len);
  free(text);
  return st;
}

/* out/private/candidates.csv: what the guarantee does NOT cover (K, every candidate's
 * exact count): for the curator only. */
static int write_private(const char *dir, const dpgd_selection *s, const dpgd_select_draws *d)
{
  char path[1400], name[512];
  snprintf(path, sizeof path, "%s/candidates.csv", dir);
  FILE *f = fopen(path, "w");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot write %s", path);
  fputs("candidate,cell,correct,n_validation,noisy_score\n", f);
  for (uint64_t i = 0; i < d->K; i++) {
    const dpgd_select_cand *c = &d->cand[i];
    dpgd_sweep_cell_name(name, sizeof name, &s->sweep, c->cell);
    fprintf(f, "%llu,%s,%zu,%zu,%.17g\n", (unsigned long long)i + 1, name, c->correct, c->n_val,
            c->score);
  }
  return fclose(f) ? DPGD_FAIL(DPGD_EIO, "cannot write %s", path) : DPGD_OK;
}

static int make_dir(const char *path)
{
  char failed[1300];
  struct stat sb;
  if (!stat(path, &sb))
    return DPGD_FAIL(DPGD_EINVAL, "%s exists: remove it or choose another --out", path);
  if (dpgd_path_mkdirs(path, 0700, failed, sizeof failed))
    return DPGD_FAIL(DPGD_EIO, "cannot create directory %s", failed);
  return DPGD_OK;
}

static int open_rng(dpgd_rng **r, const select_opts *o)
{
  dpgd_seed seed;
  char why[256];
  memset(&seed, 0, sizeof seed);
  if (o->rng == DPGD_RNG_RESEARCH && dpgd_seed_parse(&seed, o->seed, why, sizeof why))
    return DPGD_FAIL(DPGD_EINVAL, "--seed: %s", why);
  *r = dpgd_rng_alloc(o->rng, &seed, DPGD_STREAM_QUERY);
  return *r ? DPGD_OK : DPGD_FAIL(DPGD_ENOMEM, "cannot start the selection's random stream");
}

static int run_selection(const select_opts *o, dpgd_selection *s, dpgd_select_draws *d)
{
  char exe[4096], priv[1300];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return DPGD_FAIL(DPGD_EIO, "cannot find the dpgd binary (/proc/self/exe)");
  exe[k] = '\0';
  snprintf(priv, sizeof priv, "%s/private", o->out);
  dpgd_rng *r = NULL;
  int st = make_dir(priv);
  if (!st && o->rng == DPGD_RNG_RESEARCH && !o->quiet)
    fprintf(stderr, "dpgd: warning: %s\n",
            DPGD_RESEARCH_CAVEAT_OF("--seed",
                                    "select anything you will release with --rng secure"));
  if (!st) st = open_rng(&r, o);
  if (!st) st = dpgd_select_draw(d, s, r);
  if (!st) st = dpgd_select_run(d, s, r, exe, priv, o->rng);
  dpgd_rng_free(r);
  if (!st) st = write_private(priv, s, d);
  if (!st && d->best >= 0) st = copy_model(o->out, &d->cand[d->best]);
  if (!st && d->best >= 0) st = write_public_config(o->out, &d->cand[d->best]);
  if (!st) st = write_json(o->out, s, d, o->rng);
  return st;
}

static int select_main(const select_opts *o, dpgd_selection *s)
{
  /* Every cell is planned as its child runs: in the selection's rng mode (a secure run
   * releases discrete Gaussians, accounted and calibrated as such). */
  char rng[64];
  snprintf(rng, sizeof rng, "%s=%s", DPGD_CONFIG_KEY(train_rng), dpgd_rng_mode_name(o->rng));
  int st = dpgd_sweep_add_set(&s->sweep, rng);
  if (!st) st = dpgd_select_setup(s);
  if (!st && !(s->delta > 0)) s->delta = s->run_delta;
  if (!st)
    st = o->total > 0 ? dpgd_select_calibrate(s, o->total) : dpgd_select_account(s, o->run_eps);
  if (st) return dpgd_cli_status_error(st, "select");
  print_account(s);
  fflush(stdout); /* the guarantee is known before the first run starts */
  if (o->dry) return DPGD_EXIT_OK;
  dpgd_select_draws d = {0, NULL, -1};
  st = run_selection(o, s, &d);
  if (!st && d.best >= 0)
    printf("best: %s/model.bin, noisy validation accuracy %.6f\n", o->out,
           d.cand[d.best].score);
  else if (!st) printf("best: none (K = 0: the selection releases nothing)\n");
  dpgd_select_draws_free(&d);
  return st ? dpgd_cli_status_error(st, "select") : DPGD_EXIT_OK;
}

int dpgd_cmd_select(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    select_usage(stdout);
    return DPGD_EXIT_OK;
  }
  dpgd_selection s;
  memset(&s, 0, sizeof s);
  dpgd_sweep_init(&s.sweep);
  s.method = DPGD_ACCT_RDP_OPTIMAL;
  select_opts o = {NULL, "runs/select", "1", 0, 0, 5, 1, 0, 0, DPGD_RNG_RESEARCH};
  int rc = DPGD_EXIT_OK, st;
  const char *file = find_file(argc, argv);
  if (file && (st = dpgd_sweep_load(&s.sweep, file))) rc = dpgd_cli_status_error(st, "");
  if (rc == DPGD_EXIT_OK) rc = parse_options(argc, argv, &o, &s);
  if (rc == DPGD_EXIT_OK) rc = set_k(&s, &o);
  if (rc == DPGD_EXIT_OK) rc = select_main(&o, &s);
  dpgd_select_clear(&s);
  return rc;
}
