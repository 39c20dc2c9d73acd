/* select.h -- private header of `dpgd select` (cmd_select.c, select_plan.c,
 * select_run.c): private hyperparameter selection over a sweep's grid, accounted by
 * Papernot & Steinke's theorems (accounting/SELECTION.md). */
#ifndef DPGD_SELECT_H
#define DPGD_SELECT_H

#include "dpgd_accounting.h"
#include "dpgd_config.h"
#include "dpgd_train.h"
#include "plot.h"

typedef struct dpgd_selection {
  dpgd_sweep sweep;        /* the grid: configs x dims (seeds unused) */
  size_t n_cells;          /* grid cells */
  dpgd_config *cfg;        /* (n_cells) each cell's config, privacy.epsilon = run_eps */
  size_t *n;               /* (n_cells) training set sizes (after data.validation) */
  dpgd_accountant **acct;  /* (n_cells) each cell's planned composition at run_eps */
  double *sigma;           /* (n_cells) planned noise multipliers */
  double *eps;             /* (n_cells) planned exact eps of a run at its delta */
  double run_eps;          /* privacy.epsilon given to every candidate run */
  double run_delta;        /* the runs' privacy.delta (the same in every cell) */
  double score_sigma;      /* noise std on the validation count; 0: auto (free) */
  double score_mu;         /* 1 / score_sigma */
  dpgd_select_k k;         /* distribution of the number of runs */
  dpgd_acct_method method; /* rdp_* conversion of the total */
  double delta;            /* the total's delta */
  dpgd_acct_value total;   /* the total eps at delta */
} dpgd_selection;

/* Loads every cell's config (sweep sets, grid values), checks it can be selected over
 * (data.validation > 0, no privacy.* in the grid, one delta) and learns n per cell. */
int dpgd_select_setup(dpgd_selection *s);
void dpgd_select_clear(dpgd_selection *s);
/* Plans every cell at per-run eps e (privacy.epsilon = e) and accounts the selection
 * into s->total. */
int dpgd_select_account(dpgd_selection *s, double e);
/* The largest per-run eps (bisection) whose selection's total is at most target. */
int dpgd_select_calibrate(dpgd_selection *s, double target);
/* "privacy.epsilon=<e>" exactly as the planner and the runs read it. */
void dpgd_select_eps_setting(char *buf, size_t len, double e);

#endif /* DPGD_SELECT_H */
