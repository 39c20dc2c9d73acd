/* cmd_plot.c -- 'dpgd plot RUN_DIR...' (the five figures, drawn by gnuplot) and
 * 'dpgd sweep' (seeds x grid of overrides, parallel workers, resumable, tables). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "dpgd_config.h"
#include "plot.h"

static void plot_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd plot [--out DIR] [--only NAME,...] RUN_DIR [RUN_DIR ...]\n\n"
          "Draws PNG figures (%d px wide, gnuplot pngcairo) from finished run directories\n"
          "(summary.json and metrics.csv; see train/RUN_FORMAT.md):\n"
          "  accuracy.png  test accuracy vs step, runs overlaid\n"
          "  active.png    active points vs step with B_norm/C^2 marked: diagnostic (not\n"
          "                private); needs output.diagnostics = true (column diag_active)\n"
          "  eps.png       eps vs step under each accounting method\n"
          "  spend.png     histogram of s(i)/B_norm from points.csv: SENSITIVE, local only\n"
          "  tradeoff.png  type I vs type II error of the final mu-GDP guarantee, against\n"
          "                random guessing\n"
          "A figure whose data no run has is skipped with a note.\n\n"
          "  --out DIR       output folder (default: RUN_DIR/figures of the first run)\n"
          "  --only LIST     draw only these figures (comma-separated names above)\n\n"
          "Needs gnuplot (Debian package gnuplot-nox); DPGD_GNUPLOT names another binary.\n",
          DPGD_FIG_WIDTH);
}

/* mkdir -p of the figures folder, which must end up a directory. */
static int make_dirs(const char *path)
{
  char failed[1024];
  if (dpgd_path_mkdirs(path, 0777, failed, sizeof failed)) {
    if (errno == ENAMETOOLONG) return dpgd_cli_error("path too long: %s", path);
    return dpgd_cli_error("cannot create directory %s: %s", failed, strerror(errno));
  }
  if (!dpgd_path_is_dir(path)) return dpgd_cli_error("%s exists and is not a directory", path);
  return 0;
}

static int parse_only(int *want, const char *list)
{
  for (int f = 0; f < DPGD_FIG_N; f++) want[f] = 0;
  const char *p = list;
  while (*p) {
    size_t k = strcspn(p, ",");
    int found = 0;
    for (int f = 0; f < DPGD_FIG_N; f++) {
      const char *name = dpgd_fig_name((dpgd_fig)f);
      if (strlen(name) == k && !strncmp(p, name, k)) want[f] = found = 1;
    }
    if (!found) {
      dpgd_cli_usage_error("plot",
                           "--only: unknown figure '%.*s' (accuracy, active, eps, "
                           "spend, tradeoff)",
                           (int)k, p);
      return 1;
    }
    p += k + (p[k] == ',');
  }
  return 0;
}

/* Draws one figure; returns 0 drawn, 1 skipped (no data: the reason goes into note),
 * -1 error (printed). */
static int draw(const char *gnuplot, dpgd_fig f, const dpgd_plot_run *runs, size_t n,
                const char *out, char *note, size_t note_len)
{
  char png[1200];
  snprintf(png, sizeof png, "%s/%s.png", out, dpgd_fig_name(f));
  char *script = NULL;
  size_t len = 0;
  FILE *ms = open_memstream(&script, &len);
  if (!ms) return dpgd_cli_error("out of memory"), -1;
  dpgd_error_clear();
  int st = dpgd_fig_script(ms, f, runs, n, png);
  fclose(ms);
  if (st == DPGD_EINVAL) {
    snprintf(note, note_len, "%s.png: %s", dpgd_fig_name(f), dpgd_error_last());
    free(script);
    return 1;
  }
  if (!st) st = dpgd_gnuplot_run(gnuplot, script, len, png);
  free(script);
  if (st) return dpgd_cli_status_error(st, ""), -1;
  printf("%s\n", png);
  return 0;
}

/* The options of 'dpgd plot' into want and out, its run directories into dirs;
 * returns the exit status (DPGD_EXIT_OK to go on). */
static int parse_plot_args(int argc, char **argv, int *want, char **dirs, int *n_dirs_out,
                           const char **out_out)
{
  const char *out = NULL;
  int n_dirs = 0;
  int rc = DPGD_EXIT_OK;
  for (int i = 1; i < argc && rc == DPGD_EXIT_OK; i++) {
    if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "--only")) {
      if (i + 1 >= argc) {
        rc = dpgd_cli_usage_error("plot", "%s needs a value", argv[i]);
      } else if (!strcmp(argv[i], "--out")) {
        out = argv[++i];
      } else if (parse_only(want, argv[++i])) {
        rc = DPGD_EXIT_USAGE;
      }
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = dpgd_cli_usage_error("plot", "unknown option '%s'", argv[i]);
    } else {
      dirs[n_dirs++] = argv[i];
    }
  }
  *n_dirs_out = n_dirs;
  *out_out = out;
  return rc;
}

/* Draws the wanted figures into out; returns the exit status. */
static int draw_figures(const char *gnuplot, const int *want, const dpgd_plot_run *runs,
                        int n_dirs, const char *out)
{
  int rc = DPGD_EXIT_OK;
  /* Notes on skipped figures are printed after the others are drawn; with nothing drawn
   * the first one becomes the (one-line) error. */
  int drawn = 0;
  char notes[DPGD_FIG_N][400];
  int n_notes = 0;
  for (int f = 0; f < DPGD_FIG_N && rc == DPGD_EXIT_OK; f++) {
    if (!want[f]) continue;
    int r =
        draw(gnuplot, (dpgd_fig)f, runs, (size_t)n_dirs, out, notes[n_notes], sizeof notes[0]);
    if (r < 0) rc = DPGD_EXIT_ERROR;
    drawn += r == 0;
    n_notes += r == 1;
  }
  if (rc == DPGD_EXIT_OK && !drawn) rc = dpgd_cli_error("no figure drawn: %s", notes[0]);
  else if (rc == DPGD_EXIT_OK)
    for (int i = 0; i < n_notes; i++) fprintf(stderr, "dpgd: note: skipped %s\n", notes[i]);
  return rc;
}

int dpgd_cmd_plot(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    plot_usage(stdout);
    return DPGD_EXIT_OK;
  }
  const char *out = NULL;
  int want[DPGD_FIG_N];
  for (int f = 0; f < DPGD_FIG_N; f++) want[f] = 1;
  int n_dirs = 0;
  char **dirs = calloc((size_t)argc, sizeof *dirs);
  if (!dirs) return dpgd_cli_error("out of memory");
  int rc = parse_plot_args(argc, argv, want, dirs, &n_dirs, &out);
  if (rc == DPGD_EXIT_OK && !n_dirs) rc = dpgd_cli_usage_error("plot", "no RUN_DIR given");
  char gnuplot[1024];
  if (rc == DPGD_EXIT_OK) {
    int st = dpgd_gnuplot_find(gnuplot, sizeof gnuplot);
    if (st) rc = dpgd_cli_status_error(st, "");
  }
  dpgd_plot_run *runs = rc == DPGD_EXIT_OK ? calloc((size_t)n_dirs, sizeof *runs) : NULL;
  if (rc == DPGD_EXIT_OK && !runs) rc = dpgd_cli_error("out of memory");
  int n_read = 0;
  for (int i = 0; i < n_dirs && rc == DPGD_EXIT_OK; i++, n_read++) {
    int st = dpgd_plot_run_read(&runs[i], dirs[i]);
    if (st) rc = dpgd_cli_status_error(st, "");
  }
  char outbuf[1100];
  if (rc == DPGD_EXIT_OK && !out) {
    snprintf(outbuf, sizeof outbuf, "%s/figures", runs[0].dir);
    out = outbuf;
  }
  if (rc == DPGD_EXIT_OK && make_dirs(out)) rc = DPGD_EXIT_ERROR;
  if (rc == DPGD_EXIT_OK) rc = draw_figures(gnuplot, want, runs, n_dirs, out);
  for (int i = 0; i < n_read; i++) dpgd_plot_run_clear(&runs[i]);
  free(runs);
  free(dirs);
  return rc;
}

static void sweep_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd sweep [FILE.sweep] [--config FILE ...] [--grid section.key=v1,v2 ...]\n"
          "                  [--set section.key=value ...] [--seeds 1-10] [--jobs N]\n"
          "                  [--out DIR] [--dry-run]\n"
          "       dpgd sweep --table DIR\n\n"
          "Runs 'dpgd train' for every cell (config x grid values) and seed, into\n"
          "DIR/<cell>/seed<k>/ (log in train.log there), at most N at a time (default 1).\n"
          "A trial whose summary.json exists is finished and skipped, so an interrupted\n"
          "sweep resumes: unfinished trials resume from checkpoint.bin or rerun. Then\n"
          "writes DIR/summary.csv, DIR/trials.csv and DIR/summary.md: mean +- sample std\n"
          "of test accuracy per cell, eps per method, wall time (the table form of\n"
          "Feldman & Zrnic).\n\n"
          "  FILE.sweep   INI with a [sweep] section: config = a.ini b.ini (relative to the\n"
          "               .sweep file), set = k=v, grid = k=v1,v2 (repeatable), seeds = 1-3,\n"
          "               jobs = N, out = DIR; command-line options add to or override it\n"
          "  --seeds S    seeds: 3, 1-10, 1,4,7 (default 1); set as train.seed\n"
          "  --out DIR    sweep directory (default runs/sweep)\n"
          "  --dry-run    list the trials and their state, run nothing\n"
          "  --table DIR  only re-make the tables of an existing sweep directory\n");
}

static void print_line(void *user, const char *line)
{
  (void)user;
  fprintf(stderr, "dpgd sweep: %s\n", line);
}

static int tables(const char *dir)
{
  size_t n_cells, n_trials;
  int st = dpgd_sweep_tables(dir, &n_cells, &n_trials);
  if (st) return dpgd_cli_status_error(st, "sweep tables");
  printf("%s/summary.md\n%s/summary.csv\n%s/trials.csv\n", dir, dir, dir);
  fprintf(stderr, "dpgd sweep: tables of %zu cells, %zu finished trials\n", n_cells, n_trials);
  return DPGD_EXIT_OK;
}

static int dry_run(const dpgd_sweep *s)
{
  size_t n = dpgd_sweep_n_cells(s);
  for (size_t c = 0; c < n; c++) {
    char name[512];
    if (dpgd_sweep_cell_name(name, sizeof name, s, c)) return dpgd_cli_status_error(1, "");
    for (size_t k = 0; k < s->n_seeds; k++) {
      char dir[1600], path[1700];
      snprintf(dir, sizeof dir, "%s/%s/seed%llu", s->out, name,
               (unsigned long long)s->seeds[k]);
      snprintf(path, sizeof path, "%s/summary.json", dir);
      struct stat sb;
      const char *state = !stat(path, &sb) ? "finished" : "to run";
      snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
      if (strcmp(state, "finished") && !stat(path, &sb)) state = "to resume";
      printf("%s  %s  config=%s", dir, state, dpgd_sweep_cell_config(s, c));
      for (size_t d = 0; d < s->n_dims; d++) {
        char kv[700];
        dpgd_sweep_cell_override(kv, sizeof kv, s, c, d);
        printf(" %s", kv);
      }
      printf(" %s=%llu\n", DPGD_CONFIG_KEY(train_seed), (unsigned long long)s->seeds[k]);
    }
  }
  return DPGD_EXIT_OK;
}

/* The options of 'dpgd sweep' that are not part of the .sweep file. */
typedef struct {
  const char *table_dir, *seeds, *out, *file;
  size_t jobs;
  int dry;
} sweep_opts;

/* The one .sweep file among the arguments (options and their values skipped). */
static int find_sweep_file(int argc, char **argv, const char **file)
{
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') {
      i += strcmp(argv[i], "--dry-run") != 0;
      continue;
    }
    if (*file)
      return dpgd_cli_usage_error("sweep", "more than one .sweep file ('%s')", argv[i]);
    *file = argv[i];
  }
  return DPGD_EXIT_OK;
}

/* The options, added to the sweep s or kept in o; returns the exit status. */
static int parse_sweep_options(int argc, char **argv, dpgd_sweep *s, sweep_opts *o)
{
  int rc = DPGD_EXIT_OK, st = DPGD_OK;
  for (int i = 1; i < argc && rc == DPGD_EXIT_OK; i++) {
    const char *a = argv[i];
    if (a[0] != '-') continue;
    if (!strcmp(a, "--dry-run")) {
      o->dry = 1;
      continue;
    }
    if (i + 1 >= argc) return dpgd_cli_usage_error("sweep", "%s needs a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--config")) st = dpgd_sweep_add_config(s, v);
    else if (!strcmp(a, "--grid")) st = dpgd_sweep_add_grid(s, v);
    else if (!strcmp(a, "--set")) st = dpgd_sweep_add_set(s, v);
    else if (!strcmp(a, "--seeds")) o->seeds = v;
    else if (!strcmp(a, "--out")) o->out = v;
    else if (!strcmp(a, "--table")) o->table_dir = v;
    else if (!strcmp(a, "--jobs")) {
      if (dpgd_cli_parse_size("--jobs", v, &o->jobs)) rc = DPGD_EXIT_USAGE;
      else if (o->jobs < 1 || o->jobs > 256)
        rc = dpgd_cli_usage_error("sweep", "--jobs %zu: expected 1..256", o->jobs);
    } else rc = dpgd_cli_usage_error("sweep", "unknown option '%s'", a);
    if (st) rc = dpgd_cli_status_error(st, "");
  }
  return rc;
}

/* Runs the trials of s (each a dpgd child process), then writes its tables. */
static int run_trials(dpgd_sweep *s)
{
  int rc = DPGD_EXIT_OK, st;
  char exe[4096];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) rc = dpgd_cli_error("cannot find the dpgd binary (/proc/self/exe)");
  else exe[k] = '\0';
  size_t n_failed = 0;
  if (rc == DPGD_EXIT_OK && make_dirs(s->out)) rc = DPGD_EXIT_ERROR;
  if (rc == DPGD_EXIT_OK && (st = dpgd_sweep_run(s, exe, print_line, NULL, &n_failed)))
    rc = dpgd_cli_status_error(st, "sweep");
  if (rc == DPGD_EXIT_OK) rc = tables(s->out);
  if (rc == DPGD_EXIT_OK && n_failed)
    rc = dpgd_cli_error("%zu trial(s) failed (see their train.log); run the same command "
                        "again to retry them",
                        n_failed);
  return rc;
}

int dpgd_cmd_sweep(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    sweep_usage(stdout);
    return DPGD_EXIT_OK;
  }
  dpgd_sweep s;
  dpgd_sweep_init(&s);
  sweep_opts o = {0};
  int st = DPGD_OK;
  /* the .sweep file first, so that the options add to it or override it */
  int rc = find_sweep_file(argc, argv, &o.file);
  if (rc == DPGD_EXIT_OK && o.file && (st = dpgd_sweep_load(&s, o.file)))
    rc = dpgd_cli_status_error(st, "");
  if (rc == DPGD_EXIT_OK) rc = parse_sweep_options(argc, argv, &s, &o);
  if (rc == DPGD_EXIT_OK && o.table_dir) {
    if (o.file || s.n_configs || o.dry)
      rc = dpgd_cli_usage_error("sweep", "--table takes only the sweep directory");
    else rc = tables(o.table_dir);
    dpgd_sweep_clear(&s);
    return rc;
  }
  if (rc == DPGD_EXIT_OK && o.seeds) {
    s.n_seeds = 0; /* the command line replaces the file's seeds */
    if ((st = dpgd_sweep_parse_seeds(&s, o.seeds))) rc = dpgd_cli_status_error(st, "");
  }
  if (rc == DPGD_EXIT_OK && !s.n_seeds) s.seeds[s.n_seeds++] = 1;
  if (o.jobs) s.jobs = o.jobs;
  if (o.out) snprintf(s.out, sizeof s.out, "%s", o.out);
  if (!s.out[0]) snprintf(s.out, sizeof s.out, "runs/sweep");
  if (rc == DPGD_EXIT_OK && !s.n_configs)
    rc = dpgd_cli_usage_error("sweep", "no config: give FILE.sweep or --config FILE");
  if (rc == DPGD_EXIT_OK && (st = dpgd_sweep_check(&s))) rc = dpgd_cli_status_error(st, "");
  if (rc == DPGD_EXIT_OK && o.dry) rc = dry_run(&s);
  else if (rc == DPGD_EXIT_OK) rc = run_trials(&s);
  dpgd_sweep_clear(&s);
  return rc;
}
