/* select_run.c -- the running side of `dpgd select`: K and every candidate's cell and
 * seed drawn from the selection's secret stream, each candidate trained as a `dpgd train`
 * child on the training part, its validation count released with Gaussian noise, and the
 * best noisy score picked (accounting/SELECTION.md "The driver"). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "select_run.h"

/* K ~ k by inversion of one uniform (53 bits). */
static int draw_k(dpgd_rng *r, const dpgd_select_k *k, uint64_t *K)
{
  uint64_t w;
  int st = dpgd_rng_u64(r, &w);
  if (st) return st;
  double u = (double)(w >> 11) * 0x1p-53, cdf = 0;
  for (uint64_t j = k->dist == DPGD_SELECT_POISSON ? 0 : 1; j < 10000000; j++) {
    cdf += dpgd_select_k_pmf(k, j);
    if (u < cdf) {
      *K = j;
      return DPGD_OK;
    }
  }
  return DPGD_FAIL(DPGD_ERANGE, "selection: K beyond 10^7 runs");
}

/* Uniform in 0..n-1 without bias (rejection). */
static int draw_cell(dpgd_rng *r, size_t n, size_t *cell)
{
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, w;
  do {
    int st = dpgd_rng_u64(r, &w);
    if (st) return st;
  } while (w >= lim);
  *cell = (size_t)(w % n);
  return DPGD_OK;
}

/* A fresh 256-bit seed for a candidate run, as train.seed text. */
static int draw_seed(dpgd_rng *r, char *buf, size_t len)
{
  uint64_t w[4];
  for (int i = 0; i < 4; i++) {
    int st = dpgd_rng_u64(r, &w[i]);
    if (st) return st;
  }
  snprintf(buf, len, "0x%016llx%016llx%016llx%016llx", (unsigned long long)w[0],
           (unsigned long long)w[1], (unsigned long long)w[2], (unsigned long long)w[3]);
  return DPGD_OK;
}

int dpgd_select_draw(dpgd_select_draws *d, const dpgd_selection *s, dpgd_rng *r)
{
  int st = draw_k(r, &s->k, &d->K);
  if (st) return st;
  if (d->K > DPGD_SELECT_MAX_RUNS)
    return DPGD_FAIL(DPGD_ERANGE, "selection: K = %llu runs is beyond %d",
                     (unsigned long long)d->K, DPGD_SELECT_MAX_RUNS);
  d->cand = calloc(d->K ? d->K : 1, sizeof *d->cand);
  if (!d->cand) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  for (uint64_t i = 0; i < d->K; i++) {
    st = draw_cell(r, s->n_cells, &d->cand[i].cell);
    if (!st) st = draw_seed(r, d->cand[i].seed, sizeof d->cand[i].seed);
    if (st) return st;
  }
  return DPGD_OK;
}

/* The child's argument vector (strings in strs, 700 bytes each). */
static char **child_argv(const dpgd_selection *s, const dpgd_select_cand *c, const char *exe,
                         const char *dir, int rng, char *strs)
{
  size_t max = 16 + 2 * (s->sweep.n_sets + s->sweep.n_dims);
  char **argv = calloc(max, sizeof *argv);
  if (!argv) return NULL;
  size_t a = 0, k = 0;
  argv[a++] = (char *)exe, argv[a++] = "train", argv[a++] = "--config";
  argv[a++] = (char *)dpgd_sweep_cell_config(&s->sweep, c->cell);
  for (size_t i = 0; i < s->sweep.n_sets; i++)
    argv[a++] = "--set", argv[a++] = s->sweep.sets[i];
  for (size_t d = 0; d < s->sweep.n_dims; d++, k++) {
    dpgd_sweep_cell_override(strs + 700 * k, 700, &s->sweep, c->cell, d);
    argv[a++] = "--set", argv[a++] = strs + 700 * k;
  }
  dpgd_select_eps_setting(strs + 700 * k, 700, s->run_eps);
  argv[a++] = "--set", argv[a++] = strs + 700 * k++;
  snprintf(strs + 700 * k, 700, "%s=%s", DPGD_CONFIG_KEY(train_seed), c->seed);
  argv[a++] = "--set", argv[a++] = strs + 700 * k++;
  snprintf(strs + 700 * k, 700, "%s=%s", DPGD_CONFIG_KEY(train_rng), dpgd_rng_mode_name(rng));
  argv[a++] = "--set", argv[a++] = strs + 700 * k++;
  argv[a++] = "--out", argv[a++] = (char *)dir, argv[a++] = "--quiet";
  return argv;
}

/* Runs `exe train` for candidate c into dir (log in dir/train.log) and waits for it. */
static int train_child(const dpgd_selection *s, const dpgd_select_cand *c, const char *exe,
                       const char *dir, int rng)
{
  char *strs = malloc(700 * (s->sweep.n_dims + 3));
  char **argv = strs ? child_argv(s, c, exe, dir, rng, strs) : NULL;
  char log[1400];
  snprintf(log, sizeof log, "%s.log", dir);
  int fd = argv ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
  pid_t pid = fd >= 0 ? fork() : -1;
  if (pid == 0) {
    dup2(fd, 1), dup2(fd, 2);
    execv(exe, argv);
    dprintf(2, "dpgd select: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  if (fd >= 0) close(fd);
  free(argv), free(strs);
  if (pid < 0) return DPGD_FAIL(DPGD_EIO, "cannot start a candidate run (%s)", log);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status))
    return DPGD_FAIL(DPGD_EIO, "a candidate run failed: see %s", log);
  return DPGD_OK;
}

/* The candidate's exact validation count from its summary, checked against the plan. */
static int read_count(const dpgd_selection *s, dpgd_select_cand *c, const char *dir)
{
  char path[1400];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  dpgd_run_summary sum;
  int st = dpgd_run_summary_read(&sum, path);
  if (st) return st;
  double want = s->sigma[c->cell];
  if (!(fabs(sum.sigma - want) <= 1e-9 * want))
    return DPGD_FAIL(DPGD_EINVAL, "%s: sigma %.10g is not the accounted %.10g", path, sum.sigma,
                     want);
  double n = sum.n_test, k = nearbyint(sum.test_acc * n);
  if (!(n >= 1) || fabs(k / n - sum.test_acc) > 1e-9)
    return DPGD_FAIL(DPGD_EFORMAT, "%s: test_acc %g is not a count of %g", path, sum.test_acc,
                     n);
  c->n_val = (size_t)n;
  c->correct = (size_t)k;
  return DPGD_OK;
}

/* The noisy score of a validation count (accounting/SELECTION.md "The score's noise").
 * Research: count + N(0, s^2) from the stream, in floating point (reproducible). Secure:
 * exact, on the grid 2^-F: count 2^F + N_Z(0, ceil((s 2^F)^2)), an integer shift of 2^F
 * for a neighbour, whose Renyi curve lambda 4^F / (2 ceil((s 2^F)^2)) is at most the
 * accounted lambda / (2 s^2) (docs/MATH.md 18: integer shifts of a discrete Gaussian
 * have the continuous curve); F the largest <= 20 with s 2^F <= 2^30. */
static int noisy_count(dpgd_rng *r, int rng, size_t correct, double s, double *out)
{
  if (rng != DPGD_RNG_SECURE) {
    double z = 0;
    int st = dpgd_rng_gaussian(r, s, &z);
    *out = (double)correct + z;
    return st;
  }
  int F = 0;
  while (F < 20 && ldexp(s, F + 1) <= 0x1p30) F++;
  dpgd_dgauss g;
  int64_t x = (int64_t)correct * (INT64_C(1) << F); /* correct < 2^32 (an IDX count) */
  int st = dpgd_dgauss_from_std(&g, s, F);
  if (!st) st = dpgd_dgauss_release(&g, r, &x, out, 1, F);
  return st;
}

int dpgd_select_run(dpgd_select_draws *d, const dpgd_selection *s, dpgd_rng *r, const char *exe,
                    const char *dir, int rng)
{
  d->best = -1;
  for (uint64_t i = 0; i < d->K; i++) {
    dpgd_select_cand *c = &d->cand[i];
    snprintf(c->dir, sizeof c->dir, "%s/candidate-%llu", dir, (unsigned long long)i + 1);
    int st = train_child(s, c, exe, c->dir, rng);
    if (!st) st = read_count(s, c, c->dir);
    double noisy = 0;
    if (!st) st = noisy_count(r, rng, c->correct, 1 / s->score_mu, &noisy);
    if (st) return st;
    c->score = noisy / (double)c->n_val;
    if (d->best < 0 || c->score > d->cand[d->best].score) d->best = (long)i;
  }
  return DPGD_OK;
}

void dpgd_select_draws_free(dpgd_select_draws *d)
{
  free(d->cand);
  d->cand = NULL;
}
