/* plot.h -- private header of `dpgd plot` and `dpgd sweep`: reading run directories
 * (train/RUN_FORMAT.md), writing gnuplot scripts for the five figures, and the sweep
 * (grid of trials, worker pool, tables). Not a public module: only cmd_plot.c and the
 * tests include it. Library code here never prints; it returns a dpgd status. */
#ifndef DPGD_PLOT_H
#define DPGD_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpgd_accounting.h"
#include "dpgd_core.h"

/* ---- CSV tables (plot_run.c) ----------------------------------------------------- */

/* A numeric CSV file: a header of column names, then rows of numbers; an empty field
 * is NAN ("not measured at that step"). Leading lines starting with '#' are comments. */
typedef struct dpgd_csv {
  size_t n_rows, n_cols;
  char **names; /* (n_cols) column names */
  double *v;    /* (n_rows, n_cols) row-major; NAN = empty field */
} dpgd_csv;

/* Parses a CSV file. Rejects: a missing file, no header, an empty or duplicate column
 * name, a row with a different number of fields, a field that is not a number (text,
 * "nan", "inf"), a missing final newline is accepted. name appears in messages. */
int dpgd_csv_parse(dpgd_csv **out, const char *buf /* (len) */, size_t len, const char *name);
int dpgd_csv_read(dpgd_csv **out, const char *path);
void dpgd_csv_free(dpgd_csv *t);

/* Index of column name, or -1. */
int dpgd_csv_col(const dpgd_csv *t, const char *name);

/* Value of row r, column c (c may be -1: NAN). */
double dpgd_csv_at(const dpgd_csv *t, size_t r, int c);

/* metrics.csv columns eps_<name> and summary.json "eps" keys use the accountant's
 * method names (dpgd_acct_method_name, RUN_FORMAT.md). */

/* ---- summary.json (plot_run.c) --------------------------------------------------- */

typedef struct dpgd_run_summary {
  char algorithm[16]; /* "filtered" | "plain" */
  char sampling[16];  /* "full" (also when absent) | "poisson" | "subset" */
  char model[16];
  char rng[16];
  double steps, selected_step, sigma, clip, budget, delta, mu;
  double eps[DPGD_ACCT_N_METHODS]; /* NAN where the method is absent */
  double test_acc, wall_s, seed;
  double n_train, n_test;
} dpgd_run_summary;

/* Parses summary.json text: a JSON object. Required: "algorithm" (filtered|plain),
 * "mu" (>= 0; null, NAN here, when "sampling" is "poisson" or "subset"), "delta" in (0,1), "test_acc" in [0,1], "steps" (>= 0), and an "eps"
 * object with at least one method of dpgd_acct_method_name. Other numbers are NAN when
 * absent. Unknown keys are ignored (forward compatible); bad JSON is an error. */
int dpgd_run_summary_parse(dpgd_run_summary *s, const char *buf /* (len) */, size_t len,
                           const char *name);
int dpgd_run_summary_read(dpgd_run_summary *s, const char *path);

/* ---- a run directory (plot_run.c) ------------------------------------------------ */

typedef struct dpgd_plot_run {
  char dir[1024];
  char label[128]; /* for legends: the directory's last component, or the
                              * last two for a sweep trial (<cell>/seed<k>) */
  dpgd_run_summary summary;
  dpgd_csv *metrics; /* metrics.csv, checked against RUN_FORMAT.md */
  dpgd_csv *points;  /* points.csv or NULL when the run has none (sensitive) */
} dpgd_plot_run;

/* Reads dir/summary.json and dir/metrics.csv (both required: a missing one means the
 * run did not finish), and dir/points.csv if present. metrics.csv must have a "step"
 * column of increasing positive integers, and test_acc / eps_* / diag_active values
 * in range. */
int dpgd_plot_run_read(dpgd_plot_run *r, const char *dir);
void dpgd_plot_run_clear(dpgd_plot_run *r);

/* ---- figures (plot_figures.c) ---------------------------------------------------- */

typedef enum {
  DPGD_FIG_ACCURACY = 0, /* accuracy.png: test accuracy vs step, runs overlaid */
  DPGD_FIG_ACTIVE = 1,   /* active.png: active points vs step (diagnostic, not private) */
  DPGD_FIG_EPS = 2,      /* eps.png: eps vs step under each accounting method */
  DPGD_FIG_SPEND = 3,    /* spend.png: histogram of s(i)/B_norm (SENSITIVE) */
  DPGD_FIG_TRADEOFF = 4, /* tradeoff.png: beta(alpha) of the final guarantee */
  DPGD_FIG_N = 5
} dpgd_fig;

const char *dpgd_fig_name(dpgd_fig f); /* "accuracy", "active", ... */

/* Figure size in pixels (readable at 800 px wide) and histogram bins. */
#define DPGD_FIG_WIDTH 800
#define DPGD_FIG_HEIGHT 560
#define DPGD_FIG_SPEND_BINS 50
#define DPGD_FIG_TRADEOFF_POINTS 201

/* Writes the gnuplot script drawing figure f of the runs into png_path. Returns
 * DPGD_OK, or DPGD_EINVAL when no run has the data the figure needs (the reason, e.g.
 * "no diag_active column", is reported through the error handler). */
int dpgd_fig_script(FILE *script, dpgd_fig f, const dpgd_plot_run *runs, size_t n_runs,
                    const char *png_path);

/* The gnuplot program: $DPGD_GNUPLOT if set, else "gnuplot". Fails with a message
 * naming the Debian package gnuplot-nox when it is not found on PATH. */
int dpgd_gnuplot_find(char *buf, size_t len);

/* Runs gnuplot on a script (popen); fails if gnuplot exits non-zero or the PNG was
 * not written. */
int dpgd_gnuplot_run(const char *gnuplot, const char *script, size_t len, const char *png_path);

/* ---- sweeps (sweep_spec.c, sweep_run.c, sweep_table.c) --------------------------- */

#define DPGD_SWEEP_MAX_DIMS 8
#define DPGD_SWEEP_MAX_VALUES 64
#define DPGD_SWEEP_MAX_SEEDS 1000

typedef struct dpgd_sweep_dim {
  char key[128]; /* section.key */
  size_t n_values;
  char *values[DPGD_SWEEP_MAX_VALUES]; /* owned */
} dpgd_sweep_dim;

typedef struct dpgd_sweep {
  size_t n_configs;
  char **configs; /* (n_configs) config paths, owned */
  size_t n_sets;
  char **sets; /* (n_sets) "section.key=value", owned */
  size_t n_dims;
  dpgd_sweep_dim dims[DPGD_SWEEP_MAX_DIMS];
  size_t n_seeds;
  uint64_t seeds[DPGD_SWEEP_MAX_SEEDS];
  size_t jobs;    /* parallel workers (>= 1) */
  char out[1024]; /* sweep directory */
} dpgd_sweep;

void dpgd_sweep_init(dpgd_sweep *s); /* empty; jobs 1; seeds none */
void dpgd_sweep_clear(dpgd_sweep *s);

int dpgd_sweep_add_config(dpgd_sweep *s, const char *path);
int dpgd_sweep_add_set(dpgd_sweep *s, const char *assignment);
/* "section.key=v1,v2,...": one grid dimension. */
int dpgd_sweep_add_grid(dpgd_sweep *s, const char *spec);
/* "1-10", "3", "1,4,7", "1-3,8": appends seeds (duplicates are an error). */
int dpgd_sweep_parse_seeds(dpgd_sweep *s, const char *spec);

/* Reads a .sweep file (INI, section [sweep]; keys config, set, grid (each repeatable),
 * seeds, jobs, out). Relative config paths are relative to the .sweep file's folder;
 * a relative out is relative to the current directory. */
int dpgd_sweep_load(dpgd_sweep *s, const char *path);

/* Number of cells = n_configs * product of the dims' value counts. */
size_t dpgd_sweep_n_cells(const dpgd_sweep *s);

/* Cell c (0-based, configs outermost, then dims in order): its config, its name (config
 * file stem, then "+key=value" per dim; '/' and spaces become '_') and its overrides. */
const char *dpgd_sweep_cell_config(const dpgd_sweep *s, size_t c);
int dpgd_sweep_cell_name(char *buf, size_t len, const dpgd_sweep *s, size_t c);
/* Writes the "key=value" of dim d in cell c into buf. */
int dpgd_sweep_cell_override(char *buf, size_t len, const dpgd_sweep *s, size_t c, size_t d);

/* Checks every cell's configuration (loads it, applies sets, grid values and a seed,
 * validates) before anything runs, so a typo fails at once with one line. */
int dpgd_sweep_check(const dpgd_sweep *s);

/* One line per trial event; the CLI prints them. */
typedef void dpgd_sweep_log_fn(void *user, const char *line);

/* Runs every (cell, seed) trial not finished yet with at most s->jobs `exe train`
 * children at a time, into out/<cell>/seed<k>/ (stdout+stderr in train.log there). A
 * trial with checkpoint.bin and no summary.json is resumed (`train --resume`).
 * *n_failed gets the number of trials that failed (the others still run). */
int dpgd_sweep_run(const dpgd_sweep *s, const char *exe, dpgd_sweep_log_fn *log, void *user,
                   size_t *n_failed);

/* Tables: scans dir/<cell>/seed<k>/summary.json and writes dir/summary.csv (one row per
 * cell), dir/trials.csv (one row per finished trial) and dir/summary.md (mean +- sample
 * std of test accuracy per cell, eps per method, wall time; plus the layout of Feldman & Zrnic's tables
 * pairing <stem>-plain with <stem>-filtered when such pairs exist). Cells are sorted by
 * name. A corrupt summary.json is an error naming it; an unfinished trial is counted. */
int dpgd_sweep_tables(const char *dir, size_t *n_cells, size_t *n_trials);

#endif /* DPGD_PLOT_H */
