/* bench_dpsgd_filter.c -- the cost of individual filtering under Poisson subsampling
 * (train/DPSGD_FILTER.md): whole training steps (dpgd_run_step: sampling, the refresh
 * pass when due, the clipped sum, the ledger, noise, update, the accountant's running eps)
 * of unfiltered DP-SGD and of filtered DP-SGD with a full pass every r steps, median and
 * mean wall and CPU time per step; then the active points and the test accuracy at the
 * end; and the ledger alone (caps and charges of n points at 16 orders). Not a ctest
 * test: the figures depend on the machine.
 * Usage: bench_dpsgd_filter MNIST_DIR softmax|cnn STEPS K OUT_DIR [r ...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpgd_train.h"

static double now_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
  double *w = malloc(n * sizeof *w);
  memcpy(w, v, n * sizeof *w);
  qsort(w, n, sizeof *w, cmp_double);
  double m = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
  free(w);
  return m;
}

static double mean(const double *v, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s / (double)n;
}

/* One run: refresh r (0 = unfiltered). */
static int bench_run(const char *data, const char *model, size_t steps, double k, size_t r,
                     const char *out)
{
  dpgd_config c;
  dpgd_config_defaults(&c);
  snprintf(c.data_dir, sizeof c.data_dir, "%s", data);
  snprintf(c.model_type, sizeof c.model_type, "%s", model);
  c.train_sampling = DPGD_SAMPLING_POISSON;
  c.train_sample_rate = 256.0 / 60000;
  c.train_steps = steps;
  c.train_lr = model[0] == 'c' ? 2.0 : 4.0;
  c.train_eval_every = 0;
  c.privacy_sigma = 1.0;
  c.privacy_clip = 1.0;
  c.output_checkpoint_every = 0;
  c.output_progress = 0;
  c.filter_enabled = r > 0;
  c.filter_k = r > 0 ? k : 0;
  c.filter_refresh = (double)r;
  snprintf(c.output_dir, sizeof c.output_dir, "%s/%s-r%zu", out, model, r);
  dpgd_run *run = NULL;
  if (dpgd_run_open(&run, &c, c.output_dir)) {
    fprintf(stderr, "bench: %s\n", dpgd_error_last());
    return 1;
  }
  double *w = malloc(steps * sizeof *w), *u = malloc(steps * sizeof *u);
  for (size_t t = 0; t < steps; t++) {
    double w0 = now_s(CLOCK_MONOTONIC), u0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    if (dpgd_run_step(run)) {
      fprintf(stderr, "bench: step %zu: %s\n", t + 1, dpgd_error_last());
      return 1;
    }
    w[t] = now_s(CLOCK_MONOTONIC) - w0, u[t] = now_s(CLOCK_PROCESS_CPUTIME_ID) - u0;
  }
  char line[256];
  dpgd_run_progress(run, line, sizeof line);
  printf("%-8s r=%-4zu steps %zu: wall median %.4f s mean %.4f s; cpu median %.4f s mean "
         "%.4f s; active %zu of %zu (diagnostic); %s\n",
         model, r, steps, median(w, steps), mean(w, steps), median(u, steps), mean(u, steps),
         dpgd_ledger_active(dpgd_run_ledger(run)), dpgd_run_ledger(run)->n, line);
  free(w);
  free(u);
  dpgd_run_free(run);
  return 0;
}

/* The ledger alone: caps and charges of n points, at the cap (no refresh). */
static void bench_ledger(size_t n)
{
  dpgd_ledger *l = dpgd_ledger_alloc_sg(n, 1.0, 256.0 / 60000, 1.0, 1e6);
  double *caps = malloc(n * sizeof *caps), t[20];
  for (int k = 0; k < 20; k++) {
    double t0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    dpgd_ledger_caps(l, caps);
    dpgd_ledger_spend(l, caps, caps);
    t[k] = now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
  }
  printf("ledger   n = %zu, %d orders: caps + charge %.4f s cpu per step (median of 20)\n", n,
         DPGD_FILTER_SG_N_ORDERS, median(t, 20));
  free(caps);
  dpgd_ledger_free(l);
}

int main(int argc, char **argv)
{
  if (argc < 6) {
    fprintf(stderr,
            "usage: bench_dpsgd_filter MNIST_DIR softmax|cnn STEPS K OUT_DIR [r ...]\n");
    return 2;
  }
  size_t steps = strtoul(argv[3], NULL, 10);
  double k = strtod(argv[4], NULL);
  bench_ledger(60000);
  if (bench_run(argv[1], argv[2], steps, k, 0, argv[5])) return 1;
  for (int i = 6; i < argc; i++)
    if (bench_run(argv[1], argv[2], steps, k, strtoul(argv[i], NULL, 10), argv[5])) return 1;
  return 0;
}
