/* mpi.c -- 'dpgd train' under mpirun (cmake -DDPGD_MPI=ON; train/MPI.md). Rank 0 runs
 * the whole run: files, ledger, sampling, noise, accountant, update, queries. At each
 * step it sends the parameters and the caps; every rank, rank 0 included, sums the
 * maximal tree nodes of its contiguous range of chunks (dpgd_model_clipped_grad_nodes)
 * and its examples' post-clip norms; rank 0 gathers them and adds the node sums as the
 * tree does (dpgd_model_tree_combine), so the sum has the bits of one process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "dpgd_train.h"
#include "mpi_train.h"

enum { CMD_STOP = 0, CMD_RUN = 1, CMD_STEP = 2 };
#define MSG_LEN 248
#define MAX_TIMES 4096 /* sum times kept for the median */

/* What each rank reports after set-up and after each step's sum. */
typedef struct {
  int32_t st;
  uint32_t pad;
  uint64_t chunk, span;
  char msg[MSG_LEN];
} rank_status;

typedef struct {
  int rank, size;
  size_t n, P, chunk, span, nc, slots; /* nc: leaves of span examples */
  size_t worker_chunk, worker_span;    /* rank 0: what the other ranks reported */
  double *check;                       /* rank 0, DPGD_MPI_VERIFY: (P) its own sum; else NULL */
  size_t *bounds;                      /* (size + 1) the first chunk of each rank, then nc */
  int *node_cnt, *node_off;            /* (size) doubles of each rank's node sums, and where */
  int *ex_cnt, *ex_off;                /* (size) each rank's examples: how many, the first */
  double *nodes;                       /* rank 0: (slots, P); other ranks: (their nodes, P) */
  rank_status *status;                 /* (size) rank 0 */
  dpgd_dataset *ds;                    /* other ranks: the training set */
  dpgd_model *m;                       /* other ranks: the model, parameters from rank 0 */
  dpgd_grad_ws *ws;                    /* other ranks */
  double *caps, *post;                 /* other ranks: (n), their examples' entries used */
  double times[MAX_TIMES];             /* rank 0: seconds of each step's sum */
  size_t n_times;
} mpi_ctx;

static mpi_ctx ctx;

/* Started by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE; PMI / PMIx launchers their
 * own): only then is MPI initialised, so that the MPI build runs alone as before. */
static int launched(void)
{
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void free_ctx(void)
{
  free(ctx.bounds);
  free(ctx.node_cnt);
  free(ctx.node_off);
  free(ctx.ex_cnt);
  free(ctx.ex_off);
  free(ctx.nodes);
  free(ctx.status);
  free(ctx.check);
  dpgd_grad_ws_free(ctx.ws);
  dpgd_model_free(ctx.m);
  dpgd_data_free(ctx.ds);
  free(ctx.caps);
  free(ctx.post);
}

/* Which tree leaves (span examples each), node sums and examples each rank has: rank r
 * the leaves [nc r / size, nc (r + 1) / size). The same on every rank. */
static int layout(size_t n, size_t P, size_t span)
{
  int R = ctx.size;
  ctx.n = n;
  ctx.P = P;
  ctx.span = span;
  ctx.nc = (n + span - 1) / span;
  ctx.bounds = malloc((size_t)(R + 1) * sizeof *ctx.bounds);
  ctx.node_cnt = malloc((size_t)R * sizeof(int));
  ctx.node_off = malloc((size_t)R * sizeof(int));
  ctx.ex_cnt = malloc((size_t)R * sizeof(int));
  ctx.ex_off = malloc((size_t)R * sizeof(int));
  if (!ctx.bounds || !ctx.node_cnt || !ctx.node_off || !ctx.ex_cnt || !ctx.ex_off)
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the MPI layout");
  if (n > INT32_MAX) return DPGD_FAIL(DPGD_ERANGE, "%zu examples are too many for MPI", n);
  size_t slots = 0, own = 0;
  for (int r = 0; r <= R; r++) ctx.bounds[r] = ctx.nc * (size_t)r / (size_t)R;
  for (int r = 0; r < R; r++) {
    size_t k = dpgd_model_tree_count(ctx.nc, ctx.bounds[r], ctx.bounds[r + 1]);
    size_t lo = ctx.bounds[r] * span, hi = ctx.bounds[r + 1] * span;
    if ((slots + k) * P > INT32_MAX)
      return DPGD_FAIL(DPGD_ERANGE, "the node sums (%zu x %zu) are too large for MPI", k, P);
    ctx.node_off[r] = (int)(slots * P);
    ctx.node_cnt[r] = (int)(k * P);
    ctx.ex_off[r] = (int)(lo < n ? lo : n);
    ctx.ex_cnt[r] = (int)((hi < n ? hi : n) - (size_t)ctx.ex_off[r]);
    slots += k;
    if (r == ctx.rank) own = k;
  }
  ctx.slots = slots;
  size_t mine = ctx.rank == 0 ? slots : own;
  ctx.nodes = malloc((mine ? mine : 1) * P * sizeof(double));
  if (!ctx.nodes) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu node sums", mine);
  return DPGD_OK;
}

/* A fingerprint of the training set (CRC-32 of pixels, then of labels): every rank must
 * sum over the same data. */
static uint64_t data_print(const dpgd_dataset *ds)
{
  uint32_t x = ds->feat ? dpgd_crc32(ds->feat, ds->n * ds->d * sizeof(float))
                        : dpgd_crc32(ds->pixels, ds->n * ds->d);
  return (uint64_t)x << 32 | dpgd_crc32(ds->labels, ds->n);
}

/* ---- the other ranks ---- */

/* The training split of c, as dpgd_run_open loads it. */
static int load_train(const dpgd_config *c)
{
  char dir[DPGD_CONFIG_PATH_MAX];
  int rc = dpgd_data_find_dir(dir, sizeof dir, c->data_dir[0] ? c->data_dir : NULL);
  if (!rc) rc = dpgd_data_load(&ctx.ds, dir, "train");
  if (!rc && c->data_n_train > 0 && c->data_n_train < ctx.ds->n)
    rc = dpgd_data_truncate(ctx.ds, c->data_n_train);
  if (!rc) {
    ctx.ds->mean = (float)c->data_mean;
    ctx.ds->std = (float)c->data_std;
  }
  return rc;
}

/* Data, model and workspace of the config rank 0 sent, checked against its shape
 * {n, P, data fingerprint}. */
static int worker_open(const dpgd_config *c, const uint64_t *shape)
{
  int rc = load_train(c);
  if (rc) return rc;
  const dpgd_model_type *t = dpgd_model_type_find(c->model_type);
  ctx.m = t ? dpgd_model_alloc(t, (dpgd_activation)c->model_activation, ctx.ds->rows,
                               ctx.ds->cols, ctx.ds->n_classes)
            : NULL;
  if (ctx.m) ctx.ws = dpgd_grad_ws_alloc(ctx.m, c->model_chunk, c->model_threads);
  if (!ctx.ws) return DPGD_FAIL(DPGD_ENOMEM, "cannot set up model %s", c->model_type);
  dpgd_grad_ws_set_constant_time(ctx.ws, c->train_constant_time);
  ctx.chunk = dpgd_grad_ws_chunk(ctx.ws);
  size_t n = ctx.ds->n, P = dpgd_model_n_params(ctx.m);
  rc = dpgd_run_set_leaf_span(ctx.ws, c, n);
  if (rc) return rc;
  if (n != shape[0] || P != shape[1])
    return DPGD_FAIL(DPGD_EINVAL, "it has n = %zu and P = %zu, rank 0 n = %llu and P = %llu", n,
                     P, (unsigned long long)shape[0], (unsigned long long)shape[1]);
  if (data_print(ctx.ds) != shape[2])
    return DPGD_FAIL(DPGD_EINVAL, "its training set differs from rank 0's (other files under "
                                  "the same data.dir); every rank must read the same data");
  ctx.caps = calloc(n, sizeof(double));
  ctx.post = calloc(n, sizeof(double));
  if (!ctx.caps || !ctx.post) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu caps", n);
  rc = dpgd_grad_ws_reserve(ctx.ws, n);
  if (!rc) rc = layout(n, P, dpgd_grad_ws_span(ctx.ws));
  return rc;
}

/* Reports st (and the last error) to rank 0 in the status gather. */
static void send_status(int st)
{
  rank_status s = {.st = st, .chunk = ctx.chunk, .span = ctx.span};
  if (st) snprintf(s.msg, sizeof s.msg, "%s", dpgd_error_last());
  MPI_Gather(&s, (int)sizeof s, MPI_BYTE, NULL, 0, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void worker_setup(void)
{
  dpgd_config c;
  uint64_t shape[3];
  MPI_Bcast(&c, (int)sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(shape, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  send_status(worker_open(&c, shape));
}

/* One step's part: parameters and this rank's caps in, node sums and norms out. Rank 0
 * asks only after every rank's set-up succeeded. A failed sum still takes part in the
 * gathers that follow, so that rank 0 hears of it and stops every rank. */
static void worker_step(void)
{
  int r = ctx.rank;
  MPI_Bcast(dpgd_model_params(ctx.m), (int)ctx.P, MPI_FLOAT, 0, MPI_COMM_WORLD);
  MPI_Scatterv(NULL, NULL, NULL, MPI_DOUBLE, ctx.caps + ctx.ex_off[r], ctx.ex_cnt[r],
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
  send_status(dpgd_model_clipped_grad_nodes(ctx.m, ctx.ws, ctx.ds, ctx.caps, ctx.bounds[r],
                                            ctx.bounds[r + 1], ctx.nodes, NULL, ctx.post));
  MPI_Gatherv(ctx.nodes, ctx.node_cnt[r], MPI_DOUBLE, NULL, NULL, NULL, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  MPI_Gatherv(ctx.post + ctx.ex_off[r], ctx.ex_cnt[r], MPI_DOUBLE, NULL, NULL, NULL, MPI_DOUBLE,
              0, MPI_COMM_WORLD);
}

/* Ranks > 0: serve rank 0's commands until it sends its exit status. */
static int worker_loop(void)
{
  for (;;) {
    int cmd[2];
    MPI_Bcast(cmd, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (cmd[0] == CMD_STOP) return cmd[1];
    if (cmd[0] == CMD_RUN) worker_setup();
    else if (cmd[0] == CMD_STEP) worker_step();
  }
}

/* ---- rank 0 ---- */

static void send_cmd(int cmd, int code)
{
  int c[2] = {cmd, code};
  MPI_Bcast(c, 2, MPI_INT, 0, MPI_COMM_WORLD);
}

/* The first rank that reported a failure, as an error naming it; else DPGD_OK. */
static int gather_status(int st0)
{
  rank_status me = {.st = st0, .chunk = ctx.chunk, .span = ctx.span};
  MPI_Gather(&me, (int)sizeof me, MPI_BYTE, ctx.status, (int)sizeof me, MPI_BYTE, 0,
             MPI_COMM_WORLD);
  if (st0) return st0;
  for (int r = 1; r < ctx.size; r++)
    if (ctx.status[r].st) {
      ctx.status[r].msg[MSG_LEN - 1] = 0;
      return DPGD_FAIL(ctx.status[r].st, "rank %d of %d: %s", r, ctx.size, ctx.status[r].msg);
    }
  return DPGD_OK;
}

/* DPGD_MPI_VERIFY: rank 0 sums every chunk itself too and refuses a step whose sum
 * differs in any bit from the ranks' (a check of the platform: a BLAS whose results
 * depend on where a row lies would show here). */
static int verify(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds, const double *caps,
                  const double *sum)
{
  int st = dpgd_model_clipped_grad_sum(m, ws, ds, caps, ctx.check, NULL, NULL);
  if (!st && memcmp(ctx.check, sum, ctx.P * sizeof(double)))
    st = DPGD_FAIL(DPGD_EINVAL,
                   "DPGD_MPI_VERIFY: the sum of %d ranks differs from rank 0's "
                   "own in its bits; this platform does not reproduce the sum",
                   ctx.size);
  return st;
}

/* The step's sum over all ranks (dpgd_run_sum_fn). */
static int rank0_sum(void *unused, dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                     const double *caps, double *sum, double *post)
{
  (void)unused;
  double t0 = now_s();
  /* The layout needs rank 0's leaf span, which its workspace knows: set at step one. */
  size_t chunk = dpgd_grad_ws_chunk(ws), span = dpgd_grad_ws_span(ws);
  if (ctx.size > 1 && (chunk != ctx.worker_chunk || span != ctx.worker_span))
    return DPGD_FAIL(DPGD_EINVAL,
                     "rank 0's chunk size %zu and leaf span %zu are not the other ranks' %zu "
                     "and %zu",
                     chunk, span, ctx.worker_chunk, ctx.worker_span);
  ctx.chunk = chunk;
  int st = ctx.bounds ? DPGD_OK : layout(ds->n, ctx.P, span);
  if (st) return st;
  send_cmd(CMD_STEP, 0);
  MPI_Bcast(dpgd_model_params(m), (int)ctx.P, MPI_FLOAT, 0, MPI_COMM_WORLD);
  MPI_Scatterv(caps, ctx.ex_cnt, ctx.ex_off, MPI_DOUBLE, MPI_IN_PLACE, 0, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
  st = dpgd_model_clipped_grad_nodes(m, ws, ds, caps, ctx.bounds[0], ctx.bounds[1], ctx.nodes,
                                     NULL, post);
  st = gather_status(st);
  MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, ctx.nodes, ctx.node_cnt, ctx.node_off, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, post, ctx.ex_cnt, ctx.ex_off, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  size_t k = 0;
  if (!st)
    st = dpgd_model_tree_combine(ctx.nodes, ctx.slots, ctx.P, ctx.nc, ctx.bounds,
                                 (size_t)ctx.size, &k);
  if (st) return st;
  if (k == 1) memcpy(sum, ctx.nodes, ctx.P * sizeof(double));
  else memset(sum, 0, ctx.P * sizeof(double)); /* no chunk at all */
  if (ctx.n_times < MAX_TIMES) ctx.times[ctx.n_times++] = now_s() - t0;
  return ctx.check ? verify(m, ws, ds, caps, sum) : DPGD_OK;
}

int dpgd_mpi_attach(dpgd_run *r)
{
  if (ctx.size == 0) return DPGD_OK; /* not under mpirun */
  if (dpgd_run_plan(r)->discrete)
    return DPGD_FAIL(DPGD_EINVAL, "a secure run sums in integers on one process "
                                  "(model/SENSITIVITY.md 8); run it without mpirun");
  dpgd_config c = *dpgd_run_config(r);
  const dpgd_dataset *ds = dpgd_run_train_set(r);
  size_t P = 0;
  dpgd_run_params(r, &P);
  uint64_t shape[3] = {ds->n, P, data_print(ds)};
  ctx.P = P;
  send_cmd(CMD_RUN, 0);
  MPI_Bcast(&c, (int)sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(shape, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int st = gather_status(DPGD_OK);
  if (st) return st;
  ctx.worker_chunk = ctx.size > 1 ? (size_t)ctx.status[1].chunk : 0;
  ctx.worker_span = ctx.size > 1 ? (size_t)ctx.status[1].span : 0;
  for (int k = 2; k < ctx.size; k++)
    if (ctx.status[k].chunk != ctx.worker_chunk || ctx.status[k].span != ctx.worker_span)
      return DPGD_FAIL(DPGD_EINVAL, "ranks 1 and %d disagree on the chunk size or leaf span",
                       k);
  const char *v = getenv("DPGD_MPI_VERIFY");
  if (v && strcmp(v, "0") && !(ctx.check = malloc(P * sizeof(double))))
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for DPGD_MPI_VERIFY");
  dpgd_run_set_sum(r, rank0_sum, NULL);
  /* The noise is rank 0's alone (train/MPI.md "Trust boundary"): say so before any data
   * leaves rank 0. */
  if (ctx.size > 1)
    fprintf(stderr,
            "dpgd: mpi: trust boundary: ranks 1..%d receive the caps (which encode the "
            "sample and every point's remaining budget) and send their partial sums without "
            "noise, in clear: run them only where the training data may be (train/MPI.md)\n",
            ctx.size - 1);
  return DPGD_OK;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void dpgd_mpi_report(void)
{
  if (ctx.size == 0 || ctx.n_times == 0) return;
  qsort(ctx.times, ctx.n_times, sizeof(double), cmp_double);
  /* Per step: parameters to every other rank, each rank's caps and norms, its node sums. */
  double bytes = (double)(ctx.size - 1) * (double)ctx.P * sizeof(float) +
                 2.0 * (double)(ctx.n - (size_t)ctx.ex_cnt[0]) * sizeof(double) +
                 (double)(ctx.slots * ctx.P - (size_t)ctx.node_cnt[0]) * sizeof(double);
  fprintf(stderr,
          "dpgd: mpi: %d ranks; median sum time %.6f s over %zu steps; %.0f bytes exchanged "
          "per step (non-private diagnostics)\n",
          ctx.size, ctx.times[ctx.n_times / 2], ctx.n_times, bytes);
}

int dpgd_mpi_train(int argc, char **argv, dpgd_cmd_fn *train)
{
  if (!launched()) return train(argc, argv);
  if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return dpgd_cli_error("MPI_Init failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
  int code;
  ctx.status = calloc((size_t)ctx.size, sizeof *ctx.status);
  if (!ctx.status) {
    dpgd_cli_error("no memory for %d rank statuses", ctx.size);
    MPI_Abort(MPI_COMM_WORLD, DPGD_EXIT_ERROR);
  }
  if (ctx.rank == 0) {
    code = train(argc, argv);
    send_cmd(CMD_STOP, code);
  } else {
    code = worker_loop();
  }
  free_ctx();
  MPI_Finalize();
  return code;
}
