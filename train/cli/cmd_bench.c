/* cmd_bench.c -- 'dpgd bench grads': speed of the fused per-example clipped-gradient
 * sum (dpgd_model_clipped_grad_sum) on the MNIST training images, against a large
 * OpenBLAS sgemm measured in the same run on the same number of threads, so the ratio
 * says how close the engine gets to the machine's matrix-product speed whatever the
 * load. Timings are medians over --reps passes after one untimed warm-up pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "commands.h"
#include "dpgd_data.h"
#include "dpgd_model.h"

enum { SGEMM_N = 2048, MAX_REPS = 100 };

static void usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd bench grads [--model cnn|softmax|all] [--threads N] [--reps R]\n"
          "                        [--data DIR] [--n N] [--chunk B] [--active PCT]\n"
          "                        [--constant-time]\n\n"
          "Times the fused per-example clip-and-sum step over the MNIST training images\n"
          "(every example clipped to 1) and a %d^3 OpenBLAS sgemm on the same threads.\n"
          "Prints, per model, seconds per pass (median of R passes after a warm-up),\n"
          "examples/s, GFLOP/s (FLOPs counted analytically: 2mnk per matrix product of\n"
          "the step, see dpgd_model.h), the sgemm's GFLOP/s, their ratio and the peak\n"
          "resident memory; the last line per model is machine readable:\n"
          "  bench grads model=M threads=T s_per_pass=S ex_per_s=E gflops=G sgemm_gflops=Q\n"
          "  ratio=R rss_mb=MB n=N\n"
          "(a pass is over the N images used; rss_mb is the process's peak so far, the\n"
          "dataset and the sgemm's matrices included).\n\n"
          "  --model M    cnn, softmax or all (default all)\n"
          "  --threads N  threads (default: the OpenMP default)\n"
          "  --reps R     timed passes, median reported (default 3, 1..%d)\n"
          "  --data DIR   dataset directory (default: found as for 'dpgd train')\n"
          "  --n N        only the first N training images (default all)\n"
          "  --chunk B    examples per chunk (default: the model's measured default)\n"
          "  --active PCT only PCT%% of the examples have a nonzero cap (spread evenly; the\n"
          "               others are filtered out, as late in a filtered run; default 100)\n"
          "  --constant-time  compute the filtered-out examples too (train.constant_time)\n",
          SGEMM_N, MAX_REPS);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double peak_rss_mb(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* GFLOP/s of C = A B, N x N, single precision, OpenBLAS on `threads` threads: median of
 * reps after a warm-up. 0 if out of memory. */
static double sgemm_gflops(int threads, size_t reps)
{
  const size_t n = SGEMM_N;
  float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
  float *c = malloc(n * n * sizeof *c);
  double t[MAX_REPS], g = 0.0;
  if (a && b && c) {
    for (size_t i = 0; i < n * n; i++) {
      a[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
      b[i] = (float)((i * 40503u) % 997) / 997.0f - 0.5f;
    }
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(threads);
    for (size_t r = 0; r <= reps; r++) {
      double t0 = now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                  (int)n, b, (int)n, 0.0f, c, (int)n);
      if (r > 0) t[r - 1] = now() - t0;
    }
    openblas_set_num_threads(saved);
    g = 2.0 * (double)n * (double)n * (double)n / median(t, reps) / 1e9;
  }
  free(a);
  free(b);
  free(c);
  return g;
}

typedef struct bench_opts {
  const char *model, *data;
  int threads;
  size_t reps, n, chunk, active;
  int constant_time;
} bench_opts;

static int bench_model(const dpgd_model_type *type, const dpgd_dataset *ds, const bench_opts *o,
                       double sgemm)
{
  int rc = DPGD_EXIT_ERROR;
  dpgd_model *m = dpgd_model_alloc(type, DPGD_ACT_RELU, ds->rows, ds->cols, ds->n_classes);
  dpgd_grad_ws *ws = m ? dpgd_grad_ws_alloc(m, o->chunk, o->threads) : NULL;
  size_t P = m ? dpgd_model_n_params(m) : 0;
  double *caps = malloc(ds->n * sizeof *caps), *sum = malloc((P ? P : 1) * sizeof *sum);
  double *pre = malloc(ds->n * sizeof *pre), *post = malloc(ds->n * sizeof *post);
  if (!m || !ws) {
    rc = dpgd_cli_error("setting up the %s model: %s", dpgd_model_type_name(type),
                        dpgd_error_last());
    goto done;
  }
  if (!caps || !sum || !pre || !post) {
    rc = dpgd_cli_error("out of memory for %zu examples", ds->n);
    goto done;
  }
  dpgd_model_init(m, 1);
  dpgd_grad_ws_set_constant_time(ws, o->constant_time);
  for (size_t i = 0; i < ds->n; i++) caps[i] = i % 100 < o->active ? 1.0 : 0.0;
  double t[MAX_REPS];
  for (size_t r = 0; r <= o->reps; r++) {
    double t0 = now();
    int st = dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, pre, post);
    if (st) {
      rc = dpgd_cli_status_error(st, "computing the clipped gradient sum");
      goto done;
    }
    if (r > 0) t[r - 1] = now() - t0;
  }
  double s = median(t, o->reps), ex = (double)ds->n / s;
  double gf = ex * dpgd_model_flops_per_example(m) / 1e9;
  printf("%s: %zu parameters, %.0f FLOP per example, %zu examples\n",
         dpgd_model_type_name(type), P, dpgd_model_flops_per_example(m), ds->n);
  printf("  %.4f s per pass (median of %zu), %.0f examples/s, %.2f GFLOP/s = %.3f of sgemm\n",
         s, o->reps, ex, gf, gf / sgemm);
  printf("bench grads model=%s threads=%d s_per_pass=%.9g ex_per_s=%.9g gflops=%.6g "
         "sgemm_gflops=%.6g ratio=%.6g rss_mb=%.1f n=%zu active=%zu constant_time=%d\n",
         dpgd_model_type_name(type), o->threads, s, ex, gf, sgemm, gf / sgemm, peak_rss_mb(),
         ds->n, o->active, o->constant_time);
  rc = DPGD_EXIT_OK;
done:
  free(caps);
  free(sum);
  free(pre);
  free(post);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
  return rc;
}

static int parse(bench_opts *o, int argc, char **argv)
{
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t z;
    if (!strcmp(a, "--constant-time")) {
      o->constant_time = 1;
      continue;
    }
    if (!strcmp(a, "--model") || !strcmp(a, "--data") || !strcmp(a, "--threads") ||
        !strcmp(a, "--reps") || !strcmp(a, "--n") || !strcmp(a, "--chunk") ||
        !strcmp(a, "--active")) {
      if (!v) return dpgd_cli_usage_error("bench", "%s needs a value", a);
      i++;
    } else {
      return dpgd_cli_usage_error("bench", "unknown option '%s'", a);
    }
    if (!strcmp(a, "--model")) {
      o->model = v;
    } else if (!strcmp(a, "--data")) {
      o->data = v;
    } else {
      if (dpgd_cli_parse_size(a, v, &z)) return DPGD_EXIT_USAGE;
      if (!strcmp(a, "--threads")) {
        if (z < 1 || z > 256) return dpgd_cli_usage_error("bench", "--threads must be 1..256");
        o->threads = (int)z;
      } else if (!strcmp(a, "--reps")) {
        if (z < 1 || z > MAX_REPS)
          return dpgd_cli_usage_error("bench", "--reps must be 1..%d", MAX_REPS);
        o->reps = z;
      } else if (!strcmp(a, "--active")) {
        if (z > 100) return dpgd_cli_usage_error("bench", "--active must be 0..100");
        o->active = z;
      } else if (!strcmp(a, "--n")) {
        if (z < 1) return dpgd_cli_usage_error("bench", "--n must be at least 1");
        o->n = z;
      } else {
        if (z < 1) return dpgd_cli_usage_error("bench", "--chunk must be at least 1");
        o->chunk = z;
      }
    }
  }
  if (strcmp(o->model, "cnn") && strcmp(o->model, "softmax") && strcmp(o->model, "all"))
    return dpgd_cli_usage_error("bench", "--model must be cnn, softmax or all, not '%s'",
                                o->model);
  return DPGD_EXIT_OK;
}

int dpgd_cmd_bench(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  if (argc < 2 || strcmp(argv[1], "grads"))
    return dpgd_cli_usage_error("bench", "expected 'dpgd bench grads [options]'");
  bench_opts o = {.model = "all", .reps = 3, .active = 100};
  int rc = parse(&o, argc, argv);
  if (rc) return rc;
#ifdef _OPENMP
  if (!o.threads) o.threads = omp_get_max_threads();
#else
  o.threads = 1;
#endif

  char dir[4096];
  dpgd_dataset *ds = NULL;
  int st = dpgd_data_find_dir(dir, sizeof dir, o.data);
  if (!st) st = dpgd_data_load(&ds, dir, "train");
  if (st) return dpgd_cli_status_error(st, "loading the training images");
  if (o.n && o.n < ds->n) dpgd_data_truncate(ds, o.n);

  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = NAN;
  const char *core = getenv("OPENBLAS_CORETYPE");
  double sgemm = sgemm_gflops(o.threads, o.reps);
  if (!(sgemm > 0)) {
    dpgd_data_free(ds);
    return dpgd_cli_error("out of memory for the %d^3 sgemm", SGEMM_N);
  }
  printf("data %s (%zu training images), threads %d, OPENBLAS_CORETYPE %s, load average "
         "%.2f\n",
         dir, ds->n, o.threads, core && core[0] ? core : "(unset)", load[0]);
  printf("sgemm %d^3: %.2f GFLOP/s (median of %zu)\n", SGEMM_N, sgemm, o.reps);
  static const char *names[] = {"softmax", "cnn"};
  for (size_t k = 0; k < 2 && !rc; k++)
    if (!strcmp(o.model, "all") || !strcmp(o.model, names[k]))
      rc = bench_model(dpgd_model_type_find(names[k]), ds, &o, sgemm);
  dpgd_data_free(ds);
  return rc;
}
