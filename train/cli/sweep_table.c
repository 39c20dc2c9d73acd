/* sweep_table.c -- the tables of a sweep directory: per trial (trials.csv), per cell
 * (summary.csv), and summary.md in the form of Feldman & Zrnic's tables (mean +- sample
 * standard deviation of test accuracy over seeds; plain and filtered side by side). */
#include "plot.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct cell_stats {
  char name[256];
  char algorithm[16]; /* "filtered", "plain" or "mixed" */
  size_t n, n_unfinished;
  double acc_mean, acc_std;        /* fraction; std NAN when n < 2 */
  double eps[DPGD_ACCT_N_METHODS]; /* largest over seeds; NAN if a seed lacks it */
  double delta;                    /* largest over seeds */
  double wall_mean, wall_total;
} cell_stats;

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "seed<k>" -> k; -1 if the name is something else. */
static long long seed_of(const char *name)
{
  if (strncmp(name, "seed", 4) || !name[4]) return -1;
  long long k = 0;
  for (const char *p = name + 4; *p; p++) {
    if (*p < '0' || *p > '9' || k > 100000000000LL) return -1;
    k = k * 10 + (*p - '0');
  }
  return k;
}

static int by_seed(const void *a, const void *b)
{
  long long x = seed_of(*(char *const *)a), y = seed_of(*(char *const *)b);
  return (x > y) - (x < y);
}

/* Sorted names of the subdirectories of dir accepted by keep (NULL = all). */
static int list_dirs(char ***out, size_t *n_out, const char *dir, int (*keep)(const char *))
{
  *out = NULL;
  *n_out = 0;
  DIR *d = opendir(dir);
  if (!d) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", dir, strerror(errno));
  char **list = NULL;
  size_t n = 0;
  int st = DPGD_OK;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (e->d_name[0] == '.' || (keep && !keep(e->d_name))) continue;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!dpgd_path_is_dir(path)) continue;
    char **nl = realloc(list, (n + 1) * sizeof *nl);
    if (!nl || !(nl[n] = strdup(e->d_name))) {
      if (nl) list = nl;
      st = DPGD_FAIL(DPGD_ENOMEM, "out of memory");
      break;
    }
    list = nl;
    n++;
  }
  closedir(d);
  if (st) {
    for (size_t i = 0; i < n; i++) free(list[i]);
    free(list);
    return st;
  }
  *out = list;
  *n_out = n;
  return DPGD_OK;
}

static void free_list(char **list, size_t n)
{
  for (size_t i = 0; i < n; i++) free(list[i]);
  free(list);
}

static int keep_seed(const char *name) { return seed_of(name) >= 0; }

/* One trial's row of trials.csv (eps and mu rounded up). */
static void put_trial(FILE *trials, const char *cell, long long seed, const dpgd_run_summary *s)
{
  fprintf(trials, "%s,%lld,%s,%.6f", cell, seed, s->algorithm, s->test_acc);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    if (isnan(s->eps[m])) fputs(",", trials);
    else fprintf(trials, ",%.6g", dpgd_round_digits(s->eps[m], 6, 1));
  fprintf(trials, ",%.6g,", s->delta);
  if (!isnan(s->mu))
    fprintf(trials, "%.6g", dpgd_round_digits(s->mu, 6, 1)); /* poisson: none */
  fprintf(trials, ",%.6g,%.6g\n", s->steps, s->wall_s);
}

/* Reads one cell's finished trials; appends a row per trial to trials.csv. */
static int read_cell(cell_stats *cs, const char *dir, const char *cell, FILE *trials)
{
  memset(cs, 0, sizeof *cs);
  snprintf(cs->name, sizeof cs->name, "%s", cell);
  char cdir[1400];
  snprintf(cdir, sizeof cdir, "%s/%s", dir, cell);
  char **seeds;
  size_t n_seeds;
  int st = list_dirs(&seeds, &n_seeds, cdir, keep_seed);
  if (st) return st;
  qsort(seeds, n_seeds, sizeof *seeds, by_seed);
  double mean = 0, m2 = 0; /* Welford's running mean and sum of squared deviations */
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) cs->eps[m] = -INFINITY;
  cs->delta = -INFINITY;
  int wall_known = 1;
  for (size_t i = 0; i < n_seeds && !st; i++) {
    char path[1600];
    snprintf(path, sizeof path, "%s/%s/summary.json", cdir, seeds[i]);
    struct stat sb;
    if (stat(path, &sb)) {
      cs->n_unfinished++;
      continue;
    }
    dpgd_run_summary s;
    if ((st = dpgd_run_summary_read(&s, path))) break;
    if (!cs->n) snprintf(cs->algorithm, sizeof cs->algorithm, "%s", s.algorithm);
    else if (strcmp(cs->algorithm, s.algorithm))
      snprintf(cs->algorithm, sizeof cs->algorithm, "mixed");
    cs->n++;
    double dev = s.test_acc - mean;
    mean += dev / (double)cs->n;
    m2 += dev * (s.test_acc - mean);
    /* eps: the largest over seeds (the private side); unknown if any seed lacks it */
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
      cs->eps[m] = isnan(s.eps[m]) || isnan(cs->eps[m]) ? NAN : fmax(cs->eps[m], s.eps[m]);
    cs->delta = fmax(cs->delta, s.delta);
    if (isnan(s.wall_s)) wall_known = 0;
    else cs->wall_total += s.wall_s;
    put_trial(trials, cell, seed_of(seeds[i]), &s);
  }
  free_list(seeds, n_seeds);
  if (st) return st;
  if (!cs->n) {
    cs->acc_mean = cs->acc_std = cs->delta = cs->wall_mean = cs->wall_total = NAN;
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) cs->eps[m] = NAN;
    snprintf(cs->algorithm, sizeof cs->algorithm, "?");
    return DPGD_OK;
  }
  double n = (double)cs->n;
  cs->acc_mean = mean;
  /* sample standard deviation (n - 1) */
  cs->acc_std = cs->n >= 2 ? sqrt(m2 / (n - 1)) : NAN;
  cs->wall_mean = wall_known ? cs->wall_total / n : NAN;
  if (!wall_known) cs->wall_total = NAN;
  return DPGD_OK;
}

static void put_num(FILE *f, double v, const char *fmt)
{
  if (isnan(v)) return;
  fprintf(f, fmt, v);
}

/* "(93.29 ± 0.49)%" or "93.29%" for one seed, "—" for none. */
static void put_acc(FILE *f, const cell_stats *c)
{
  if (!c->n) fputs("—", f);
  else if (c->n < 2) fprintf(f, "%.2f%% (1 seed)", 100 * c->acc_mean);
  else fprintf(f, "(%.2f ± %.2f)%%", 100 * c->acc_mean, 100 * c->acc_std);
}

static void put_eps(FILE *f, double v)
{
  if (isnan(v)) fputs("—", f);
  else fprintf(f, "%.4g", dpgd_round_digits(v, 4, 1)); /* private direction: up */
}

/* The cell pairing c with "-plain" in its name replaced by "-filtered", or -1. */
static long partner(const cell_stats *cells, size_t n, size_t c)
{
  const char *p = strstr(cells[c].name, "-plain");
  if (!p) return -1;
  char want[300];
  snprintf(want, sizeof want, "%.*s-filtered%s", (int)(p - cells[c].name), cells[c].name,
           p + strlen("-plain"));
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cells[i].name, want)) return (long)i;
  return -1;
}

static void write_markdown(FILE *f, const char *dir, const cell_stats *cells, size_t n)
{
  fprintf(f, "# Sweep %s\n\n", dir);
  fprintf(f, "Test accuracy: mean ± sample standard deviation (n − 1) over the finished "
             "seeds. eps: each run's final public guarantee from its summary.json (the "
             "largest over seeds) at the delta shown. Wall time: mean per trial.\n\n");
  int any_pair = 0;
  for (size_t c = 0; c < n; c++) any_pair |= partner(cells, n, c) >= 0;
  if (any_pair) {
    fprintf(f, "| setting | eps (exact) | eps (zCDP) | private GD | private GD with filtering "
               "| seeds |\n| --- | --- | --- | --- | --- | --- |\n");
    for (size_t c = 0; c < n; c++) {
      long q = partner(cells, n, c);
      if (q < 0) continue;
      const cell_stats *a = &cells[c], *b = &cells[q];
      const char *p = strstr(a->name, "-plain");
      fprintf(f, "| %.*s%s | ", (int)(p - a->name), a->name, p + strlen("-plain"));
      put_eps(f, fmax(a->eps[DPGD_ACCT_EXACT], b->eps[DPGD_ACCT_EXACT]));
      fputs(" | ", f);
      put_eps(f, fmax(a->eps[DPGD_ACCT_ZCDP], b->eps[DPGD_ACCT_ZCDP]));
      fputs(" | ", f);
      put_acc(f, a);
      fputs(" | ", f);
      put_acc(f, b);
      fprintf(f, " | %zu / %zu |\n", a->n, b->n);
    }
    fputs("\n", f);
  }
  fputs("| cell | algorithm | seeds | test accuracy | delta |", f);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    fprintf(f, " eps %s |", dpgd_acct_method_name((dpgd_acct_method)m));
  fputs(" wall time per trial (not private) |\n| --- | --- | --- | --- | --- |", f);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) fputs(" --- |", f);
  fputs(" --- |\n", f);
  for (size_t c = 0; c < n; c++) {
    const cell_stats *a = &cells[c];
    fprintf(f, "| %s | %s | %zu", a->name, a->algorithm, a->n);
    if (a->n_unfinished) fprintf(f, " (+%zu unfinished)", a->n_unfinished);
    fputs(" | ", f);
    put_acc(f, a);
    fputs(" | ", f);
    if (isnan(a->delta)) fputs("—", f);
    else fprintf(f, "%g", a->delta);
    fputs(" |", f);
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
      fputc(' ', f);
      put_eps(f, a->eps[m]);
      fputs(" |", f);
    }
    if (isnan(a->wall_mean)) fputs(" — |\n", f);
    else fprintf(f, " %.1f s |\n", a->wall_mean);
  }
}

static int close_checked(FILE *f, const char *path, int st)
{
  int bad = ferror(f);
  if (fclose(f) || bad)
    return st ? st : DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", path, strerror(errno));
  return st;
}

/* summary.csv: one row per cell, the mean and spread over its seeds. */
static int write_summary_csv(const char *dir, const cell_stats *cells, size_t nc)
{
  char path[1400];
  snprintf(path, sizeof path, "%s/summary.csv", dir);
  FILE *f = fopen(path, "w");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", path, strerror(errno));
  fputs("cell,algorithm,n_seeds,n_unfinished,test_acc_mean,test_acc_std", f);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    fprintf(f, ",eps_%s", dpgd_acct_method_name((dpgd_acct_method)m));
  fputs(",delta,nonprivate_wall_s_mean,nonprivate_wall_s_total\n", f);
  for (size_t c = 0; c < nc; c++) {
    const cell_stats *a = &cells[c];
    fprintf(f, "%s,%s,%zu,%zu,", a->name, a->algorithm, a->n, a->n_unfinished);
    put_num(f, a->acc_mean, "%.6f");
    fputc(',', f);
    put_num(f, a->acc_std, "%.6f");
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
      fputc(',', f);
      put_num(f, dpgd_round_digits(a->eps[m], 6, 1), "%.6g");
    }
    fputc(',', f);
    put_num(f, a->delta, "%g");
    fputc(',', f);
    put_num(f, a->wall_mean, "%.3f");
    fputc(',', f);
    put_num(f, a->wall_total, "%.3f");
    fputc('\n', f);
  }
  return close_checked(f, path, DPGD_OK);
}

/* summary.md: the same table for reading. */
static int write_summary_md(const char *dir, const cell_stats *cells, size_t nc)
{
  char path[1400];
  snprintf(path, sizeof path, "%s/summary.md", dir);
  FILE *f = fopen(path, "w");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", path, strerror(errno));
  write_markdown(f, dir, cells, nc);
  return close_checked(f, path, DPGD_OK);
}

/* trials.csv, one row per trial, while the cells (folders with seed<k>/ in them) of names
 * are read into cells; *nc counts them. */
static int read_cells(cell_stats *cells, size_t *nc, size_t *n_trials, const char *dir,
                      char **names, size_t n)
{
  char path[1400];
  int st = DPGD_OK;
  snprintf(path, sizeof path, "%s/trials.csv", dir);
  FILE *trials = fopen(path, "w");
  if (!trials) st = DPGD_FAIL(DPGD_EIO, "cannot write %s: %s", path, strerror(errno));
  if (!st) {
    fputs("cell,seed,algorithm,test_acc", trials);
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
      fprintf(trials, ",eps_%s", dpgd_acct_method_name((dpgd_acct_method)m));
    fputs(",delta,mu,steps,nonprivate_wall_s\n", trials);
  }
  for (size_t i = 0; i < n && !st; i++) {
    char cdir[1400];
    snprintf(cdir, sizeof cdir, "%s/%s", dir, names[i]);
    char **seeds;
    size_t ns;
    if ((st = list_dirs(&seeds, &ns, cdir, keep_seed))) break;
    free_list(seeds, ns);
    if (!ns) continue; /* figures/ or anything else that is not a cell */
    st = read_cell(&cells[*nc], dir, names[i], trials);
    *n_trials += cells[*nc].n;
    (*nc)++;
  }
  if (trials) st = close_checked(trials, path, st);
  return st;
}

int dpgd_sweep_tables(const char *dir, size_t *n_cells, size_t *n_trials)
{
  *n_cells = *n_trials = 0;
  if (!dpgd_path_is_dir(dir)) return DPGD_FAIL(DPGD_EIO, "%s is not a sweep directory", dir);
  char **names;
  size_t n;
  int st = list_dirs(&names, &n, dir, NULL);
  if (st) return st;
  qsort(names, n, sizeof *names, by_name);
  cell_stats *cells = calloc(n ? n : 1, sizeof *cells);
  if (!cells) {
    free_list(names, n);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  }
  size_t nc = 0;
  st = read_cells(cells, &nc, n_trials, dir, names, n);
  if (!st && !nc)
    st = DPGD_FAIL(DPGD_EINVAL, "%s holds no trials (<cell>/seed<k>/ folders)", dir);
  if (!st) st = write_summary_csv(dir, cells, nc);
  if (!st) st = write_summary_md(dir, cells, nc);
  free(cells);
  free_list(names, n);
  *n_cells = nc;
  return st;
}
