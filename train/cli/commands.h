/* commands.h -- the subcommands of the dpgd binary, one cmd_<file>.c each. */
#ifndef DPGD_COMMANDS_H
#define DPGD_COMMANDS_H

#include "cli.h"
#include "dpgd_config.h"

dpgd_cmd_fn dpgd_cmd_train; /* cmd_train.c */
/* cmd_train_pnsgd.c: 'dpgd train' of a validated train.algorithm = pnsgd config. */
int dpgd_cmd_train_pnsgd(const dpgd_config *c, const char *out, int dry, int progress);
dpgd_cmd_fn dpgd_cmd_eval;      /* cmd_eval.c    */
dpgd_cmd_fn dpgd_cmd_predict;   /* cmd_eval.c    */
dpgd_cmd_fn dpgd_cmd_account;   /* cmd_account.c */
dpgd_cmd_fn dpgd_cmd_calibrate; /* cmd_account.c */
/* cmd_account_iter.c: 'dpgd account --iteration', chosen when argv has that flag. */
dpgd_cmd_fn dpgd_cmd_account_iteration;
int dpgd_cmd_account_wants_iteration(int argc, char **argv);
dpgd_cmd_fn dpgd_cmd_queries;  /* cmd_queries.c */
dpgd_cmd_fn dpgd_cmd_plot;     /* cmd_plot.c */
dpgd_cmd_fn dpgd_cmd_sweep;    /* cmd_plot.c    */
dpgd_cmd_fn dpgd_cmd_select;   /* cmd_select.c */
dpgd_cmd_fn dpgd_cmd_data;     /* cmd_data.c */
dpgd_cmd_fn dpgd_cmd_data_png; /* cmd_data_png.c: 'dpgd data png' */
dpgd_cmd_fn dpgd_cmd_bench;    /* cmd_bench.c */
dpgd_cmd_fn dpgd_cmd_audit;    /* cmd_audit.c */
/* 'dpgd audit' with planted bugs: the run's noise scaled by noise_scale (< 1), its
 * clip applied as clip_scale C (> 1) while accounted as C, its Poisson rate accounted
 * as rate_scale (< 1) times the rate it samples at. Only the test-only program
 * tests/train/audit_planted.c passes anything but 1, 1, 1: the dpgd binary has no way
 * to plant them. */
int dpgd_cmd_audit_planted(int argc, char **argv, double noise_scale, double clip_scale,
                           double rate_scale);

#endif /* DPGD_COMMANDS_H */
