/* select_run.h -- private header of select_run.c: the draws and the candidates of one
 * `dpgd select`. */
#ifndef DPGD_SELECT_RUN_H
#define DPGD_SELECT_RUN_H

#include "select.h"

#define DPGD_SELECT_MAX_RUNS 10000

typedef struct {
  size_t cell;                   /* grid cell drawn */
  char seed[DPGD_SEED_TEXT_MAX]; /* its fresh train.seed */
  char dir[1300];                /* its run directory */
  size_t n_val, correct;         /* exact validation count (not released) */
  double score;                  /* noisy validation accuracy */
} dpgd_select_cand;

typedef struct {
  uint64_t K;             /* number of runs drawn (not released) */
  dpgd_select_cand *cand; /* (K) */
  long best;              /* index of the best noisy score; -1 when K = 0 */
} dpgd_select_draws;

/* K, and every candidate's cell and seed, from r (the selection's secret stream). */
int dpgd_select_draw(dpgd_select_draws *d, const dpgd_selection *s, dpgd_rng *r);
/* Trains every candidate (`exe train` into dir/candidate-<i>, rng mode rng for its
 * noise), releases its noisy score (noise from r) and picks the best. */
int dpgd_select_run(dpgd_select_draws *d, const dpgd_selection *s, dpgd_rng *r, const char *exe,
                    const char *dir, int rng);
void dpgd_select_draws_free(dpgd_select_draws *d);

#endif /* DPGD_SELECT_RUN_H */
