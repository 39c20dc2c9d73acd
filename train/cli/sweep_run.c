/* sweep_run.c -- running a sweep: every (cell, seed) trial as a `dpgd train` child
 * process with at most `jobs` at a time. A trial is finished when its summary.json
 * exists (the trainer writes it last, atomically), so an interrupted sweep resumes by
 * skipping finished trials and resuming (checkpoint.bin) or rerunning the others. */
#include "dpgd_config.h"
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct trial {
  size_t cell;
  uint64_t seed;
  char dir[1300];
  pid_t pid;
  double t0;
} trial;

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int exists(const char *dir, const char *file)
{
  char path[1400];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  struct stat sb;
  return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

static int mkdirs(const char *path)
{
  char failed[1300];
  if (dpgd_path_mkdirs(path, 0777, failed, sizeof failed) == 0) return DPGD_OK;
  if (errno == ENAMETOOLONG) return DPGD_FAIL(DPGD_EINVAL, "path too long: %s", path);
  return DPGD_FAIL(DPGD_EIO, "cannot create directory %s: %s", failed, strerror(errno));
}

/* The child's argument vector: `exe train ...` for a fresh trial, `exe train --resume
 * DIR` for one with a checkpoint. strs holds the strings (freed by the caller). */
static int trial_argv(char ***argv_out, char **strs, const dpgd_sweep *s, const trial *t,
                      const char *exe, int resume)
{
  size_t max = 12 + 2 * (s->n_sets + s->n_dims);
  char **argv = calloc(max, sizeof *argv);
  if (!argv) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  size_t a = 0;
  argv[a++] = (char *)exe;
  argv[a++] = "train";
  if (resume) {
    argv[a++] = "--resume";
    argv[a++] = (char *)t->dir;
  } else {
    argv[a++] = "--config";
    argv[a++] = (char *)dpgd_sweep_cell_config(s, t->cell);
    for (size_t i = 0; i < s->n_sets; i++) {
      argv[a++] = "--set";
      argv[a++] = s->sets[i];
    }
    /* strs: one buffer of grid overrides and the seed, 700 bytes each */
    for (size_t d = 0; d < s->n_dims; d++) {
      char *kv = *strs + 700 * d;
      int st = dpgd_sweep_cell_override(kv, 700, s, t->cell, d);
      if (st) {
        free(argv);
        return st;
      }
      argv[a++] = "--set";
      argv[a++] = kv;
    }
    /* the last 700 bytes: the seed override, then (from byte 64) the progress one */
    char *seed = *strs + 700 * s->n_dims, *progress = seed + 64;
    snprintf(seed, 64, "%s=%llu", DPGD_CONFIG_KEY(train_seed), (unsigned long long)t->seed);
    snprintf(progress, 700 - 64, "%s=false", DPGD_CONFIG_KEY(output_progress));
    argv[a++] = "--set";
    argv[a++] = seed;
    argv[a++] = "--set";
    argv[a++] = progress; /* the log is a file, not a terminal */
    argv[a++] = "--out";
    argv[a++] = (char *)t->dir;
  }
  argv[a] = NULL;
  *argv_out = argv;
  return DPGD_OK;
}

static int start(trial *t, const dpgd_sweep *s, const char *exe)
{
  int st = mkdirs(t->dir);
  if (st) return st;
  int resume = exists(t->dir, "checkpoint.bin");
  char *strs = malloc(700 * (s->n_dims + 1));
  if (!strs) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  char **argv = NULL;
  if ((st = trial_argv(&argv, &strs, s, t, exe, resume))) {
    free(strs);
    return st;
  }
  char log[1400];
  snprintf(log, sizeof log, "%s/train.log", t->dir);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) st = DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", log, strerror(errno));
  pid_t pid = st ? -1 : fork();
  if (!st && pid < 0) st = DPGD_FAIL(DPGD_EIO, "cannot start a trial: %s", strerror(errno));
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0) dup2(nul, 0);
    execv(exe, argv);
    dprintf(2, "dpgd sweep: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  if (fd >= 0) close(fd);
  free(argv);
  free(strs);
  t->pid = pid;
  t->t0 = now_s();
  return st;
}

/* The last non-empty line of a trial's log (the trainer's one-line error). */
static void last_log_line(char *buf, size_t len, const char *dir)
{
  char path[1400], line[512];
  buf[0] = '\0';
  snprintf(path, sizeof path, "%s/train.log", dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0]) snprintf(buf, len, "%s", line);
  }
  fclose(f);
}

static void logf_(dpgd_sweep_log_fn *log, void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(dpgd_sweep_log_fn *log, void *user, const char *fmt, ...)
{
  if (!log) return;
  char line[2000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  log(user, line);
}

/* Every trial of s (cells x seeds) in t, with its directory; those finished before are
 * marked pid -1, the others counted in *n_todo. */
static int list_trials(trial *t, const dpgd_sweep *s, size_t n_cells, size_t *n_todo)
{
  int st = DPGD_OK;
  for (size_t c = 0, i = 0; c < n_cells && !st; c++) {
    char name[512];
    st = dpgd_sweep_cell_name(name, sizeof name, s, c);
    for (size_t k = 0; k < s->n_seeds && !st; k++, i++) {
      t[i].cell = c;
      t[i].seed = s->seeds[k];
      t[i].pid = 0;
      int w = snprintf(t[i].dir, sizeof t[i].dir, "%s/%s/seed%llu", s->out, name,
                       (unsigned long long)s->seeds[k]);
      if (w < 0 || (size_t)w >= sizeof t[i].dir)
        st = DPGD_FAIL(DPGD_EINVAL, "sweep path too long: %s", s->out);
      else if (exists(t[i].dir, "summary.json")) t[i].pid = -1; /* finished before */
      else (*n_todo)++;
    }
  }
  return st;
}

/* Logs how trial tr ended (exit status from waitpid); counts failures in *n_failed. */
static void report_trial(dpgd_sweep_log_fn *log, void *user, const trial *tr, int status,
                         size_t done, size_t n_todo, size_t *n_failed)
{
  double wall = now_s() - tr->t0;
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && exists(tr->dir, "summary.json");
  if (ok) {
    logf_(log, user, "[%zu/%zu] %s: finished in %.1f s", done, n_todo, tr->dir, wall);
  } else {
    char why[512];
    last_log_line(why, sizeof why, tr->dir);
    (*n_failed)++;
    if (WIFSIGNALED(status))
      logf_(log, user, "[%zu/%zu] %s: FAILED (killed by signal %d) %s", done, n_todo, tr->dir,
            WTERMSIG(status), why);
    else
      logf_(log, user, "[%zu/%zu] %s: FAILED (exit %d): %s (log: %s/train.log)", done, n_todo,
            tr->dir, WIFEXITED(status) ? WEXITSTATUS(status) : -1, why, tr->dir);
  }
}

int dpgd_sweep_run(const dpgd_sweep *s, const char *exe, dpgd_sweep_log_fn *log, void *user,
                   size_t *n_failed)
{
  *n_failed = 0;
  int st = dpgd_sweep_check(s);
  if (st) return st;
  size_t n_cells = dpgd_sweep_n_cells(s), n = n_cells * s->n_seeds;
  trial *t = calloc(n, sizeof *t);
  if (!t) return DPGD_FAIL(DPGD_ENOMEM, "out of memory");
  size_t n_todo = 0;
  st = list_trials(t, s, n_cells, &n_todo);
  if (!st)
    logf_(log, user,
          "%zu trials (%zu cells x %zu seeds): %zu finished before, %zu to run, "
          "%zu at a time",
          n, n_cells, s->n_seeds, n - n_todo, n_todo, s->jobs);
  size_t next = 0, running = 0, done = 0;
  while (!st && (next < n || running)) {
    while (next < n && running < s->jobs && !st) {
      trial *tr = &t[next++];
      if (tr->pid == -1) continue;
      if (exists(tr->dir, "checkpoint.bin"))
        logf_(log, user, "resuming %s from its checkpoint", tr->dir);
      if ((st = start(tr, s, exe))) break;
      running++;
    }
    if (!running || st) break;
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      st = DPGD_FAIL(DPGD_EIO, "waiting for trials: %s", strerror(errno));
      break;
    }
    trial *tr = NULL;
    for (size_t i = 0; i < n && !tr; i++)
      if (t[i].pid == pid) tr = &t[i];
    if (!tr) continue; /* not ours */
    running--;
    done++;
    tr->pid = -1;
    report_trial(log, user, tr, status, done, n_todo, n_failed);
  }
  /* on an error of our own, wait for the children already started */
  while (running) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno != EINTR) break;
    if (pid > 0) running--;
  }
  free(t);
  return st;
}
