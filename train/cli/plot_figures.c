/* plot_figures.c -- the five figures of `dpgd plot` as gnuplot scripts (pngcairo,
 * data inline as datablocks), and running gnuplot on them. Scripts are generated
 * separately from running them so that tests can read what would be drawn. */
#include "dpgd_config.h"
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const fig_names[DPGD_FIG_N] = {"accuracy", "active", "eps", "spend",
                                                  "tradeoff"};

const char *dpgd_fig_name(dpgd_fig f) { return (unsigned)f < DPGD_FIG_N ? fig_names[f] : "?"; }

/* A gnuplot single-quoted string: ' is written ''; newlines become spaces. */
static void put_quoted(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputs("''", f);
    else if (*s == '\n' || *s == '\r') fputc(' ', f);
    else fputc(*s, f);
  }
  fputc('\'', f);
}

static void preamble(FILE *f, const char *png, const char *title, const char *xlabel,
                     const char *ylabel)
{
  fprintf(f, "set terminal pngcairo size %d,%d noenhanced font 'sans,12' linewidth 2\n",
          DPGD_FIG_WIDTH, DPGD_FIG_HEIGHT);
  fputs("set output ", f);
  put_quoted(f, png);
  fputs("\nset encoding utf8\nset title ", f);
  put_quoted(f, title);
  fputs("\nset xlabel ", f);
  put_quoted(f, xlabel);
  fputs("\nset ylabel ", f);
  put_quoted(f, ylabel);
  fputs("\nset grid\nset key outside top center horizontal maxrows 4 box opaque\n", f);
}

/* Column values of a run's metrics with a measurement (non-NAN). */
static size_t count_values(const dpgd_csv *t, const char *col)
{
  int c = dpgd_csv_col(t, col);
  size_t n = 0;
  for (size_t r = 0; c >= 0 && r < t->n_rows; r++) n += !isnan(dpgd_csv_at(t, r, c));
  return n;
}

/* Datablock $name of (step, scale * col) over the rows where col was measured. */
static void datablock(FILE *f, const char *name, const dpgd_csv *t, const char *col,
                      double scale)
{
  int cs = dpgd_csv_col(t, "step"), c = dpgd_csv_col(t, col);
  fprintf(f, "$%s << EOD\n", name);
  for (size_t r = 0; r < t->n_rows; r++) {
    double v = dpgd_csv_at(t, r, c);
    if (!isnan(v)) fprintf(f, "%.17g %.17g\n", dpgd_csv_at(t, r, cs), scale * v);
  }
  fputs("EOD\n", f);
}

static void legend(char *buf, size_t len, const dpgd_plot_run *r)
{
  snprintf(buf, len, "%s (%s)", r->label, r->summary.algorithm);
}

/* One curve per run of (step, column), runs overlaid; "plot" already written. */
static void plot_runs(FILE *f, const dpgd_plot_run *runs, size_t n, const char *col,
                      const char *style)
{
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!count_values(runs[i].metrics, col)) continue;
    char lab[200];
    legend(lab, sizeof lab, &runs[i]);
    fprintf(f, "%s$r%zu using 1:2 with %s lt %zu title ", first ? "" : ", \\\n     ", i, style,
            i + 1);
    put_quoted(f, lab);
    first = 0;
  }
  fputc('\n', f);
}

/* Datablock $r<i> of column col (times scale) for every run that has values in it;
 * returns how many runs have. */
static size_t run_blocks(FILE *f, const dpgd_plot_run *runs, size_t n, const char *col,
                         double scale)
{
  size_t have = 0;
  for (size_t i = 0; i < n; i++) {
    if (!count_values(runs[i].metrics, col)) continue;
    char name[32];
    snprintf(name, sizeof name, "r%zu", i);
    datablock(f, name, runs[i].metrics, col, scale);
    have++;
  }
  return have;
}

static int fig_accuracy(FILE *f, const dpgd_plot_run *runs, size_t n, const char *png)
{
  if (!run_blocks(f, runs, n, "test_acc", 100.0))
    return DPGD_FAIL(DPGD_EINVAL,
                     "no test_acc values in metrics.csv of any run "
                     "(%s = 0 measures only at the end)",
                     DPGD_CONFIG_KEY(train_eval_every));
  preamble(f, png, "Test accuracy during training", "step (full-batch gradient steps)",
           "test accuracy (%)");
  fputs("plot ", f);
  plot_runs(f, runs, n, "test_acc", "linespoints pt 7 ps 0.6");
  return DPGD_OK;
}

static int fig_active(FILE *f, const dpgd_plot_run *runs, size_t n, const char *png)
{
  if (!run_blocks(f, runs, n, "diag_active", 1.0))
    return DPGD_FAIL(DPGD_EINVAL,
                     "no diag_active column in metrics.csv of any run "
                     "(train with %s = true to record active points)",
                     DPGD_CONFIG_KEY(output_diagnostics));
  preamble(f, png, "Active points vs step -- diagnostic (not private)",
           "step (full-batch gradient steps)", "active points (not yet out of budget)");
  /* Headroom above n, so that a run in which every point stays active is not drawn on
   * the frame. */
  double n_max = 0;
  for (size_t i = 0; i < n; i++)
    if (runs[i].summary.n_train > n_max) n_max = runs[i].summary.n_train;
  if (n_max > 0) fprintf(f, "set yrange [0:%.17g]\n", 1.08 * n_max);
  else fputs("set yrange [0:*]\n", f);
  /* Feldman & Zrnic, Figure 1: the step B_norm/C^2 after which points can run out of budget */
  for (size_t i = 0; i < n; i++) {
    const dpgd_run_summary *s = &runs[i].summary;
    if (!count_values(runs[i].metrics, "diag_active")) continue;
    if (!(s->budget > 0 && s->clip > 0)) continue;
    double k = s->budget / (s->clip * s->clip);
    fprintf(f, "set arrow from %.17g, graph 0 to %.17g, graph 1 nohead lt %zu dt 2\n", k, k,
            i + 1);
    fprintf(f, "set label 'B_norm/C^2 = %g' at %.17g, graph %.3f left offset 0.5,0 tc lt %zu\n",
            k, k, 0.95 - 0.06 * (double)(i % 8), i + 1);
  }
  fputs("plot ", f);
  plot_runs(f, runs, n, "diag_active", "lines");
  return DPGD_OK;
}

static int fig_eps(FILE *f, const dpgd_plot_run *runs, size_t n, const char *png)
{
  size_t have = 0;
  for (size_t i = 0; i < n; i++)
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
      char col[48], name[32];
      snprintf(col, sizeof col, "eps_%s", dpgd_acct_method_name((dpgd_acct_method)m));
      if (!count_values(runs[i].metrics, col)) continue;
      snprintf(name, sizeof name, "r%zum%d", i, m);
      datablock(f, name, runs[i].metrics, col, 1.0);
      have++;
    }
  if (!have) return DPGD_FAIL(DPGD_EINVAL, "no eps_* values in metrics.csv of any run");
  double delta = runs[0].summary.delta;
  int same = 1;
  for (size_t i = 1; i < n; i++) same &= runs[i].summary.delta == delta;
  char ylabel[96];
  if (same) snprintf(ylabel, sizeof ylabel, "epsilon at delta = %g (public guarantee)", delta);
  else snprintf(ylabel, sizeof ylabel, "epsilon at each run's delta (public guarantee)");
  preamble(f, png, "Privacy spent vs step, by accounting method",
           "step (releases: gradient steps and stopping queries)", ylabel);
  fputs("set yrange [0:*]\nplot ", f);
  int first = 1;
  for (size_t i = 0; i < n; i++)
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
      char col[48], lab[240];
      const char *mn = dpgd_acct_method_name((dpgd_acct_method)m);
      snprintf(col, sizeof col, "eps_%s", mn);
      if (!count_values(runs[i].metrics, col)) continue;
      snprintf(lab, sizeof lab, "%s: %s", runs[i].label, mn);
      fprintf(f, "%s$r%zum%d using 1:2 with lines lt %d dt %zu title ",
              first ? "" : ", \\\n     ", i, m, m + 1, i % 5 + 1);
      put_quoted(f, lab);
      first = 0;
    }
  fputc('\n', f);
  return DPGD_OK;
}

static int fig_spend(FILE *f, const dpgd_plot_run *runs, size_t n, const char *png)
{
  size_t have = 0;
  for (size_t i = 0; i < n; i++) {
    const dpgd_csv *p = runs[i].points;
    if (!p || !p->n_rows) continue;
    size_t counts[DPGD_FIG_SPEND_BINS] = {0};
    int c = dpgd_csv_col(p, "spend_frac");
    for (size_t r = 0; r < p->n_rows; r++) {
      double v = dpgd_csv_at(p, r, c);
      if (isnan(v)) continue;
      /* the last bin is closed: a point exactly out of budget (v = 1) belongs to it */
      long b = (long)floor(v * DPGD_FIG_SPEND_BINS);
      if (b < 0) b = 0;
      if (b >= DPGD_FIG_SPEND_BINS) b = DPGD_FIG_SPEND_BINS - 1;
      counts[b]++;
    }
    fprintf(f, "$r%zu << EOD\n", i);
    for (int b = 0; b < DPGD_FIG_SPEND_BINS; b++)
      fprintf(f, "%.17g %zu\n", (b + 0.5) / DPGD_FIG_SPEND_BINS, counts[b]);
    fputs("EOD\n", f);
    have++;
  }
  if (!have)
    return DPGD_FAIL(DPGD_EINVAL, "no points.csv in any run (the per-point report is "
                                  "local to the machine that trained)");
  preamble(f, png,
           "Per-point spend s(i)/B_norm at the end -- SENSITIVE: local only, "
           "do not publish",
           "s(i) / B_norm (fraction of the per-point budget spent)",
           "number of training points");
  fprintf(f,
          "set xrange [0:1]\nset yrange [0:*]\nset boxwidth %.17g absolute\n"
          "set style fill transparent solid 0.45 border\nplot ",
          1.0 / DPGD_FIG_SPEND_BINS);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!runs[i].points || !runs[i].points->n_rows) continue;
    char lab[200];
    legend(lab, sizeof lab, &runs[i]);
    fprintf(f, "%s$r%zu using 1:2 with boxes lt %zu title ", first ? "" : ", \\\n     ", i,
            i + 1);
    put_quoted(f, lab);
    first = 0;
  }
  fputc('\n', f);
  return DPGD_OK;
}

static int fig_tradeoff(FILE *f, const dpgd_plot_run *runs, size_t n, const char *png)
{
  /* Distinct guarantees only: seeds of one configuration share mu. Poisson runs have
   * no mu (not GDP) and no curve here. */
  int *show = calloc(n ? n : 1, sizeof *show);
  if (!show) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    show[i] = !isnan(runs[i].summary.mu);
    for (size_t j = 0; j < i; j++)
      if (show[j] && runs[j].summary.mu == runs[i].summary.mu) show[i] = 0;
  }
  for (size_t i = 0; i < n; i++) {
    if (!show[i]) continue;
    fprintf(f, "$r%zu << EOD\n", i);
    for (int k = 0; k < DPGD_FIG_TRADEOFF_POINTS; k++) {
      double alpha = (double)k / (DPGD_FIG_TRADEOFF_POINTS - 1);
      fprintf(f, "%.17g %.17g\n", alpha, dpgd_gdp_tradeoff(runs[i].summary.mu, alpha));
    }
    fputs("EOD\n", f);
  }
  fputs("$guess << EOD\n0 1\n1 0\nEOD\n", f);
  preamble(f, png, "Trade-off curve of the final guarantee (mu-GDP): an attacker's errors",
           "type I error alpha (false positive rate)",
           "type II error beta (false negative rate)");
  fputs("set xrange [0:1]\nset yrange [0:1]\nset size ratio 1\nplot ", f);
  for (size_t i = 0; i < n; i++) {
    if (!show[i]) continue;
    char lab[240];
    snprintf(lab, sizeof lab, "%s (mu = %.4g)", runs[i].label,
             dpgd_round_digits(runs[i].summary.mu, 4, 1));
    fprintf(f, "$r%zu using 1:2 with lines lt %zu title ", i, i + 1);
    put_quoted(f, lab);
    fputs(", \\\n     ", f);
  }
  fputs("$guess using 1:2 with lines lt -1 dt 2 title 'random guessing (beta = 1 - alpha)'\n",
        f);
  free(show);
  return DPGD_OK;
}

int dpgd_fig_script(FILE *script, dpgd_fig f, const dpgd_plot_run *runs, size_t n_runs,
                    const char *png_path)
{
  if (!n_runs) return DPGD_FAIL(DPGD_EINVAL, "no run to plot");
  switch (f) {
  case DPGD_FIG_ACCURACY: return fig_accuracy(script, runs, n_runs, png_path);
  case DPGD_FIG_ACTIVE: return fig_active(script, runs, n_runs, png_path);
  case DPGD_FIG_EPS: return fig_eps(script, runs, n_runs, png_path);
  case DPGD_FIG_SPEND: return fig_spend(script, runs, n_runs, png_path);
  case DPGD_FIG_TRADEOFF: return fig_tradeoff(script, runs, n_runs, png_path);
  default: return DPGD_FAIL(DPGD_EINVAL, "unknown figure %d", (int)f);
  }
}

/* ---- running gnuplot ------------------------------------------------------------- */

static const char *const no_gnuplot =
    "gnuplot not found (%s): install the Debian package gnuplot-nox, or set DPGD_GNUPLOT";

int dpgd_gnuplot_find(char *buf, size_t len)
{
  const char *prog = getenv("DPGD_GNUPLOT");
  if (!prog || !*prog) prog = "gnuplot";
  if (strchr(prog, '\'')) return DPGD_FAIL(DPGD_EINVAL, "DPGD_GNUPLOT contains a quote");
  if (strchr(prog, '/')) {
    if (access(prog, X_OK)) return DPGD_FAIL(DPGD_EIO, no_gnuplot, prog);
    snprintf(buf, len, "%s", prog);
    return DPGD_OK;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/bin:/bin";
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t k = colon ? (size_t)(colon - path) : strlen(path);
    if (k) {
      int w = snprintf(buf, len, "%.*s/%s", (int)k, path, prog);
      struct stat sb;
      if (w > 0 && (size_t)w < len && !strchr(buf, '\'') && !stat(buf, &sb) &&
          S_ISREG(sb.st_mode) && !access(buf, X_OK))
        return DPGD_OK;
    }
    path += k + (colon ? 1 : 0);
  }
  char what[300];
  snprintf(what, sizeof what, "no '%s' on PATH", prog);
  return DPGD_FAIL(DPGD_EIO, no_gnuplot, what);
}

int dpgd_gnuplot_run(const char *gnuplot, const char *script, size_t len, const char *png_path)
{
  char errpath[] = "/tmp/dpgd-gnuplot-XXXXXX";
  int fd = mkstemp(errpath);
  if (fd < 0) return DPGD_FAIL(DPGD_EIO, "cannot create a temporary file: %s", strerror(errno));
  close(fd);
  if (unlink(png_path) && errno != ENOENT) {
    unlink(errpath);
    return DPGD_FAIL(DPGD_EIO, "cannot replace %s: %s", png_path, strerror(errno));
  }
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "'%s' 2>'%s'", gnuplot, errpath);
  int st = DPGD_OK;
  FILE *p = popen(cmd, "w");
  if (!p) {
    unlink(errpath);
    return DPGD_FAIL(DPGD_EIO, "cannot start %s: %s", gnuplot, strerror(errno));
  }
  size_t w = fwrite(script, 1, len, p);
  int rc = pclose(p);
  char why[200] = "";
  FILE *e = fopen(errpath, "r");
  if (e) {
    /* gnuplot's message is the last non-empty line it wrote */
    char line[200];
    while (fgets(line, sizeof line, e)) {
      line[strcspn(line, "\r\n")] = '\0';
      if (line[0]) snprintf(why, sizeof why, "%s", line);
    }
    fclose(e);
  }
  unlink(errpath);
  if (w != len || rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
    st =
        DPGD_FAIL(DPGD_EIO, "gnuplot failed drawing %s%s%s", png_path, why[0] ? ": " : "", why);
  if (!st) {
    FILE *png = fopen(png_path, "rb");
    unsigned char sig[8] = {0};
    size_t k = png ? fread(sig, 1, 8, png) : 0;
    if (png) fclose(png);
    if (k != 8 || memcmp(sig, "\x89PNG\r\n\x1a\n", 8))
      st = DPGD_FAIL(DPGD_EIO, "gnuplot did not write %s%s%s", png_path, why[0] ? ": " : "",
                     why);
  }
  return st;
}
