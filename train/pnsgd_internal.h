/* pnsgd_internal.h -- the state of a hidden-iterate run (train/LASTITERATE.md), shared by
 * pnsgd.c (plan, pass) and pnsgd_report.c (the run directory's files). */
#ifndef DPGD_PNSGD_INTERNAL_H
#define DPGD_PNSGD_INTERNAL_H

#include <time.h>

#include "dpgd_data.h"
#include "dpgd_model.h"
#include "dpgd_train.h"

struct dpgd_pnsgd {
  dpgd_config cfg;
  dpgd_pnsgd_plan plan;
  char dir[DPGD_CONFIG_PATH_MAX];
  dpgd_dataset *train, *test;
  dpgd_model *model;
  dpgd_grad_ws *ws; /* one example per call, one thread */
  size_t P;
  size_t *order; /* (n) order[t - 1] = point used at step t */
  double *g;     /* (P) the step's clipped gradient, then the pre-projection iterate */
  dpgd_rng *rng_step;
  int64_t *isum;  /* (P) discrete: the step's gradient on the grid, then with noise */
  dpgd_dgauss dg; /* discrete: N_Z(0, ceil((sigma 2^F)^2)) */
  size_t step;    /* steps done */
  int lock_fd;    /* <dir>/lock, flock()ed while the run is open; -1 */
  struct timespec t0;
  double wall_s;
};

/* "<dir>/name" into buf (DPGD_CONFIG_PATH_MAX + 32 bytes). */
void dpgd_pnsgd_path(char *buf, const dpgd_pnsgd *r, const char *name);
/* positions.csv, points.csv, then summary.json (pnsgd_report.c). */
int dpgd_pnsgd_write_reports(const dpgd_pnsgd *r, double test_acc);

#endif
