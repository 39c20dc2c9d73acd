/* cmd_bench.c -- 'dpgd bench grads': speed of the fused per-example clipped-gradient
 * sum (dpgd_model_clipped_grad_sum) on the MNIST training images, against a large
 * OpenBLAS sgemm measured in the same run on the same number of threads, so the ratio
 * says how close the engine gets to the machine's matrix-product speed whatever the
 * load. Timings are medians over --reps passes after one untimed warm-up pass. Then the
 * pass as a DP-SGD step runs it (--batch: m points drawn without replacement get cap 1,
 * the others 0, over the same n images), against the full pass per example, and one
 * Gaussian draw over all parameters (the step's noise). */
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
#include "dpgd_train.h"

enum { SGEMM_N = 2048, MAX_REPS = 100, MAX_BATCHES = 8, BATCH_REPS_X = 10 };

static void usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd bench grads [--model cnn|softmax|all] [--threads N] [--reps R]\n"
          "                        [--data DIR] [--n N] [--chunk B] [--active PCT]\n"
          "                        [--constant-time] [--batch M1,M2,...]\n\n"
          "Times the fused per-example clip-and-sum step over the MNIST training images\n"
          "(every example clipped to 1) and a %d^3 OpenBLAS sgemm on the same threads.\n"
          "Prints, per model, seconds per pass (median of R passes after a warm-up),\n"
          "examples/s, GFLOP/s (FLOPs counted analytically: 2mnk per matrix product of\n"
          "the step, see dpgd_model.h), the sgemm's GFLOP/s, their ratio and the peak\n"
          "resident memory; the last line per model is machine readable:\n"
          "  bench grads model=M threads=T s_per_pass=S ex_per_s=E gflops=G sgemm_gflops=Q\n"
          "  ratio=R rss_mb=MB n=N active=PCT constant_time=0|1 cpu_s_per_pass=C\n"
          "(a pass is over the N images used; rss_mb is the process's peak so far, the\n"
          "dataset and the sgemm's matrices included; cpu_s_per_pass: the process's CPU\n"
          "seconds per pass, all threads, median: on a shared machine, where another\n"
          "program takes turns on the cores, a steadier figure for comparing builds on one\n"
          "thread than the wall time). Then, per batch size m <= N, the\n"
          "pass as a DP-SGD step runs it: a fresh set of m of the N images drawn without\n"
          "replacement before each pass has cap 1, the others cap 0 (skipped unless\n"
          "--constant-time), summed in leaves of the span a sampled run of rate m/N uses;\n"
          "median of %d R passes, and the cost per example against the full pass's (1 =\n"
          "the same; above 1: slower per example):\n"
          "  bench batch model=M threads=T m=B s_per_pass=S ex_per_s=E per_example_vs_full=X\n"
          "  noise_s=Z n=N span=L\n"
          "(noise_s: one N(0, 1) draw for each of the model's parameters, research rng:\n"
          "the rest of a step's work besides the pass, update and accounting aside; span:\n"
          "examples per leaf of the reduction tree, chunk * max(4, floor(N / m))).\n\n"
          "  --model M    cnn, softmax or all (default all)\n"
          "  --threads N  threads (default: the OpenMP default)\n"
          "  --reps R     timed passes, median reported (default 3, 1..%d)\n"
          "  --data DIR   dataset directory (default: found as for 'dpgd train')\n"
          "  --n N        only the first N training images (default all)\n"
          "  --chunk B    examples per chunk (default: the model's measured default)\n"
          "  --active PCT only PCT%% of the examples have a nonzero cap (spread evenly; the\n"
          "               others are filtered out, as late in a filtered run; default 100)\n"
          "  --constant-time  compute the filtered-out examples too (train.constant_time)\n"
          "  --batch LIST batch sizes, comma-separated, at most %d (default 256,1024; those\n"
          "               above N are skipped; 0 = none)\n",
          SGEMM_N, BATCH_REPS_X, MAX_REPS, MAX_BATCHES);
}

/* Seconds on `clock`: CLOCK_MONOTONIC (wall time), CLOCK_PROCESS_CPUTIME_ID (the process's
 * CPU time so far, every thread's). */
static double seconds(clockid_t clock)
{
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return seconds(CLOCK_MONOTONIC); }

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
  size_t batch[MAX_BATCHES], n_batch;
} bench_opts;

/* Seconds of one N(0, 1) draw per parameter (research rng): median of reps. */
static int noise_seconds(double *sum, size_t P, size_t reps, double *out)
{
  dpgd_rng *g = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 1, DPGD_STREAM_STEP);
  if (!g) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the noise stream");
  double t[MAX_REPS];
  int st = DPGD_OK;
  for (size_t r = 0; r <= reps && !st; r++) {
    double t0 = now();
    st = dpgd_rng_gaussian_add(g, 1.0, sum, P);
    if (r > 0) t[r - 1] = now() - t0;
  }
  dpgd_rng_free(g);
  if (!st) *out = median(t, reps);
  return st;
}

/* The pass over a batch of m of the n images drawn without replacement (a fresh draw,
 * untimed, before each pass), as a subset-sampled DP-SGD step runs it; caps (n) and in
 * (n) are scratch. Median seconds over reps passes after a warm-up. */
static int batch_seconds(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds, size_t b,
                         size_t reps, double *caps, unsigned char *in, double *sum, double *out)
{
  dpgd_rng *g = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_SAMPLE);
  if (!g) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the sampler");
  double t[MAX_REPS];
  int st = DPGD_OK;
  for (size_t r = 0; r <= reps && !st; r++) {
    st = dpgd_rng_sample_subset(g, b, in, ds->n);
    for (size_t i = 0; i < ds->n && !st; i++) caps[i] = in[i];
    double t0 = now();
    if (!st) st = dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, NULL, NULL);
    if (r > 0) t[r - 1] = now() - t0;
  }
  dpgd_rng_free(g);
  if (!st) *out = median(t, reps);
  return st;
}

/* Every batch size of o that fits: its line and its machine line; full_s is the full
 * pass's seconds over all n images. */
static int bench_batches(const dpgd_model_type *type, dpgd_model *m, dpgd_grad_ws *ws,
                         const dpgd_dataset *ds, const bench_opts *o, double full_s,
                         double *caps, double *sum)
{
  size_t P = dpgd_model_n_params(m), reps = o->reps * BATCH_REPS_X;
  if (reps > MAX_REPS) reps = MAX_REPS;
  unsigned char *in = malloc(ds->n);
  if (!in) return dpgd_cli_error("out of memory for %zu examples", ds->n);
  double noise = 0;
  int st = noise_seconds(sum, P, reps, &noise);
  for (size_t k = 0; k < o->n_batch && !st; k++) {
    size_t b = o->batch[k];
    double s = 0;
    if (b > ds->n) continue;
    /* The leaf span a subset-sampled run of batch b uses (dpgd_run_set_leaf_span). */
    size_t span = dpgd_model_leaf_span(dpgd_grad_ws_chunk(ws), (double)b / (double)ds->n);
    st = dpgd_grad_ws_set_span(ws, span);
    if (!st) st = batch_seconds(m, ws, ds, b, reps, caps, in, sum, &s);
    if (st) break;
    double vs_full = (s / (double)b) / (full_s / (double)ds->n);
    printf("  batch m = %zu: %.3g s per pass (median of %zu), %.0f examples/s, %.3g x the "
           "full pass's time per example; noise over %zu parameters %.3g s\n",
           b, s, reps, (double)b / s, vs_full, P, noise);
    printf("bench batch model=%s threads=%d m=%zu s_per_pass=%.9g ex_per_s=%.9g "
           "per_example_vs_full=%.6g noise_s=%.9g n=%zu span=%zu\n",
           dpgd_model_type_name(type), o->threads, b, s, (double)b / s, vs_full, noise, ds->n,
           span);
  }
  free(in);
  return st ? dpgd_cli_status_error(st, "timing the batches") : DPGD_EXIT_OK;
}

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
  double t[MAX_REPS], c[MAX_REPS];
  for (size_t r = 0; r <= o->reps; r++) {
    double t0 = now(), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    int st = dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, pre, post);
    if (st) {
      rc = dpgd_cli_status_error(st, "computing the clipped gradient sum");
      goto done;
    }
    if (r > 0) t[r - 1] = now() - t0, c[r - 1] = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
  }
  double s = median(t, o->reps), ex = (double)ds->n / s, cpu = median(c, o->reps);
  double gf = ex * dpgd_model_flops_per_example(m) / 1e9;
  printf("%s: %zu parameters, %.0f FLOP per example, %zu examples\n",
         dpgd_model_type_name(type), P, dpgd_model_flops_per_example(m), ds->n);
  printf("  %.4f s per pass (median of %zu; CPU %.4f s), %.0f examples/s, %.2f GFLOP/s = %.3f "
         "of sgemm\n",
         s, o->reps, cpu, ex, gf, gf / sgemm);
  printf("bench grads model=%s threads=%d s_per_pass=%.9g ex_per_s=%.9g gflops=%.6g "
         "sgemm_gflops=%.6g ratio=%.6g rss_mb=%.1f n=%zu active=%zu constant_time=%d "
         "cpu_s_per_pass=%.9g\n",
         dpgd_model_type_name(type), o->threads, s, ex, gf, sgemm, gf / sgemm, peak_rss_mb(),
         ds->n, o->active, o->constant_time, cpu);
  rc = bench_batches(type, m, ws, ds, o, s, caps, sum);
done:
  free(caps);
  free(sum);
  free(pre);
  free(post);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
  return rc;
}

/* --batch M1,M2,...: sizes >= 1, at most MAX_BATCHES; "0" alone means none. */
static int parse_batches(bench_opts *o, const char *v)
{
  o->n_batch = 0;
  if (!strcmp(v, "0")) return DPGD_EXIT_OK;
  char buf[256];
  if (strlen(v) >= sizeof buf) return dpgd_cli_usage_error("bench", "--batch: list too long");
  strcpy(buf, v);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    size_t z;
    if (dpgd_cli_parse_size("--batch", t, &z)) return DPGD_EXIT_USAGE;
    if (z < 1) return dpgd_cli_usage_error("bench", "--batch sizes must be at least 1");
    if (o->n_batch == MAX_BATCHES)
      return dpgd_cli_usage_error("bench", "--batch: at most %d sizes", MAX_BATCHES);
    o->batch[o->n_batch++] = z;
  }
  if (!o->n_batch) return dpgd_cli_usage_error("bench", "--batch needs sizes, e.g. 256,1024");
  return DPGD_EXIT_OK;
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
    if (!strcmp(a, "--batch")) {
      if (!v) return dpgd_cli_usage_error("bench", "%s needs a value", a);
      if (parse_batches(o, v)) return DPGD_EXIT_USAGE;
      i++;
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
  bench_opts o = {.model = "all", .reps = 3, .active = 100, .batch = {256, 1024}, .n_batch = 2};
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
