/* test_sweep.c -- `dpgd sweep`: seeds and grid parsing, the cells (order, names,
 * overrides), .sweep files, the configuration check, the tables of a synthetic sweep
 * directory (mean and sample std against values computed here), and the runner's
 * process handling (bounded workers, skip finished, resume, failures) with a stand-in
 * shell script in place of `dpgd train`: it tests orchestration, it trains nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plot.h"

static char tmpdir[] = "/tmp/dpgd_test_sweep_XXXXXX";

static const char *path_in(const char *rel)
{
  static char buf[4][600];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
  return buf[k];
}

static void write_file(const char *rel, const char *text)
{
  const char *p = path_in(rel);
  char dir[600];
  snprintf(dir, sizeof dir, "%s", p);
  for (char *q = dir + strlen(tmpdir) + 1; *q; q++)
    if (*q == '/') {
      *q = '\0';
      mkdir(dir, 0777);
      *q = '/';
    }
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int file_exists(const char *rel)
{
  struct stat sb;
  return !stat(path_in(rel), &sb);
}

static const char *const cfg_text = "[model]\ntype = softmax\n[train]\nsteps = 5\nlr = 0.5\n"
                                    "[privacy]\nsigma = 10\nclip = 1\n";

static void test_seeds(void **state)
{
  (void)state;
  dpgd_sweep s;
  dpgd_sweep_init(&s);
  assert_int_equal(dpgd_sweep_parse_seeds(&s, "1-3,7,10-11"), DPGD_OK);
  const uint64_t want[] = {1, 2, 3, 7, 10, 11};
  assert_int_equal(s.n_seeds, 6);
  for (size_t i = 0; i < 6; i++) assert_true(s.seeds[i] == want[i]);
  const char *bad[] = {"",   "3-1",  "1,1",   "2-4,3",  "a",  "1-",
                       "-3", "1,,2", "1-2-3", "0-5000", "1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dpgd_sweep_init(&s);
    if (dpgd_sweep_parse_seeds(&s, bad[i]) != DPGD_EINVAL) fail_msg("accepted '%s'", bad[i]);
    assert_non_null(strstr(dpgd_error_last(), "--seeds"));
  }
  dpgd_sweep_init(&s);
  assert_int_equal(dpgd_sweep_parse_seeds(&s, "0"), DPGD_OK);
  assert_true(s.n_seeds == 1 && s.seeds[0] == 0);
}

static void test_grid_and_cells(void **state)
{
  (void)state;
  dpgd_sweep s;
  dpgd_sweep_init(&s);
  assert_int_equal(dpgd_sweep_add_config(&s, "configs/paper/eps03-plain.ini"), DPGD_OK);
  assert_int_equal(dpgd_sweep_add_config(&s, "b.ini"), DPGD_OK);
  assert_int_equal(dpgd_sweep_add_grid(&s, "train.clip=10, 15"), DPGD_OK);
  assert_int_equal(dpgd_sweep_add_grid(&s, "train.lr=0.1,0.2,0.3"), DPGD_OK);
  assert_int_equal(dpgd_sweep_n_cells(&s), 12);
  char name[512], kv[700];
  /* configs outermost, the last grid key fastest */
  assert_int_equal(dpgd_sweep_cell_name(name, sizeof name, &s, 0), DPGD_OK);
  assert_string_equal(name, "eps03-plain+train.clip=10+train.lr=0.1");
  assert_int_equal(dpgd_sweep_cell_name(name, sizeof name, &s, 1), DPGD_OK);
  assert_string_equal(name, "eps03-plain+train.clip=10+train.lr=0.2");
  assert_int_equal(dpgd_sweep_cell_name(name, sizeof name, &s, 5), DPGD_OK);
  assert_string_equal(name, "eps03-plain+train.clip=15+train.lr=0.3");
  assert_int_equal(dpgd_sweep_cell_name(name, sizeof name, &s, 7), DPGD_OK);
  assert_string_equal(name, "b+train.clip=10+train.lr=0.2");
  assert_string_equal(dpgd_sweep_cell_config(&s, 7), "b.ini");
  assert_int_equal(dpgd_sweep_cell_override(kv, sizeof kv, &s, 10, 0), DPGD_OK);
  assert_string_equal(kv, "train.clip=15");
  assert_int_equal(dpgd_sweep_cell_override(kv, sizeof kv, &s, 10, 1), DPGD_OK);
  assert_string_equal(kv, "train.lr=0.2");
  /* every cell distinct */
  for (size_t a = 0; a < 12; a++)
    for (size_t b = 0; b < a; b++) {
      char na[512], nb[512];
      dpgd_sweep_cell_name(na, sizeof na, &s, a);
      dpgd_sweep_cell_name(nb, sizeof nb, &s, b);
      assert_string_not_equal(na, nb);
    }
  /* unsafe characters in values do not escape the sweep directory */
  assert_int_equal(dpgd_sweep_add_grid(&s, "data.dir=../x/y"), DPGD_OK);
  assert_int_equal(dpgd_sweep_cell_name(name, sizeof name, &s, 0), DPGD_OK);
  assert_null(strchr(name, '/'));
  const char *bad[] = {"clip=10",        "train.clip", "train.clip=", "train.clip=1,,2",
                       "train.clip=1,1", ".clip=1",    "train.=1",    "train.lr=5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (dpgd_sweep_add_grid(&s, bad[i]) != DPGD_EINVAL) fail_msg("accepted '%s'", bad[i]);
  assert_int_equal(dpgd_sweep_add_set(&s, "train.steps=3"), DPGD_OK);
  assert_int_equal(dpgd_sweep_add_set(&s, "steps=3"), DPGD_EINVAL);
  assert_int_equal(dpgd_sweep_add_set(&s, "train.steps"), DPGD_EINVAL);
  dpgd_sweep_clear(&s);
  assert_int_equal(dpgd_sweep_n_cells(&s), 0);
}

static void test_sweep_file(void **state)
{
  (void)state;
  write_file("spec/a-plain.ini", cfg_text);
  write_file("spec/a-filtered.ini", cfg_text);
  write_file("spec/t.sweep",
             "; a sweep\n[sweep]\nconfig = a-plain.ini a-filtered.ini\n"
             "set = train.steps=4\nset = privacy.sigma=12\ngrid = train.lr=0.1,0.2\n"
             "seeds = 1-3\njobs = 2\nout = runs/x\n");
  dpgd_sweep s;
  dpgd_sweep_init(&s);
  assert_int_equal(dpgd_sweep_load(&s, path_in("spec/t.sweep")), DPGD_OK);
  assert_int_equal(s.n_configs, 2);
  assert_string_equal(s.configs[1], path_in("spec/a-filtered.ini"));
  assert_int_equal(s.n_sets, 2);
  assert_string_equal(s.sets[1], "privacy.sigma=12");
  assert_int_equal(s.n_dims, 1);
  assert_int_equal(s.n_seeds, 3);
  assert_int_equal(s.jobs, 2);
  assert_string_equal(s.out, "runs/x");
  assert_int_equal(dpgd_sweep_check(&s), DPGD_OK);
  /* a grid value the config rejects fails the check, naming the cell */
  assert_int_equal(dpgd_sweep_add_grid(&s, "privacy.clip=-1,2"), DPGD_OK);
  assert_int_not_equal(dpgd_sweep_check(&s), DPGD_OK);
  assert_non_null(strstr(dpgd_error_last(), "cell a-plain+train.lr=0.1+privacy.clip=-1"));
  dpgd_sweep_clear(&s);

  struct {
    const char *text, *needle;
  } bad[] = {
      {"[sweep]\nconfig = a-plain.ini\nfoo = 1\n", "t.sweep:3: unknown key 'foo'"},
      {"[other]\nconfig = a-plain.ini\n", "unknown section [other]"},
      {"[sweep]\nseeds = 1\n", "no config"},
      {"[sweep]\nconfig = a-plain.ini\nseeds = 1\nseeds = 2\n", "seeds given twice"},
      {"[sweep]\nconfig = a-plain.ini\njobs = 0\n", "jobs = '0'"},
      {"[sweep]\nconfig = a-plain.ini\ngrid = lr=1\n", "expected section.key"},
      {"[sweep]\nthis is not ini\n", "t.sweep:2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file("spec/t.sweep", bad[i].text);
    dpgd_sweep_init(&s);
    assert_int_not_equal(dpgd_sweep_load(&s, path_in("spec/t.sweep")), DPGD_OK);
    if (!strstr(dpgd_error_last(), bad[i].needle))
      fail_msg("case %zu: '%s' lacks '%s'", i, dpgd_error_last(), bad[i].needle);
    dpgd_sweep_clear(&s);
  }
  dpgd_sweep_init(&s);
  assert_int_equal(dpgd_sweep_load(&s, path_in("spec/none.sweep")), DPGD_EIO);
  /* a config file that is missing fails the check */
  assert_int_equal(dpgd_sweep_add_config(&s, path_in("spec/missing.ini")), DPGD_OK);
  s.seeds[s.n_seeds++] = 1;
  assert_int_not_equal(dpgd_sweep_check(&s), DPGD_OK);
  assert_non_null(strstr(dpgd_error_last(), "missing.ini"));
  dpgd_sweep_clear(&s);
  /* two configs with one file name would share a cell folder */
  dpgd_sweep_add_config(&s, path_in("spec/a-plain.ini"));
  dpgd_sweep_add_config(&s, path_in("spec/../spec/a-plain.ini"));
  s.seeds[s.n_seeds++] = 1;
  assert_int_equal(dpgd_sweep_check(&s), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "both named a-plain"));
  dpgd_sweep_clear(&s);
}

static void write_summary(const char *rel, const char *algorithm, double acc, double eps,
                          double wall)
{
  char text[600];
  snprintf(text, sizeof text,
           "{\"algorithm\": \"%s\", \"steps\": 10, \"delta\": 1e-5, \"mu\": 0.5, "
           "\"eps\": {\"exact\": %.17g, \"zcdp\": %.17g}, \"test_acc\": %.17g, "
           "\"wall_s\": %.17g}\n",
           algorithm, eps, 1.5 * eps, acc, wall);
  write_file(rel, text);
}

/* The field of summary.csv's row for cell in column col (as text). */
static void csv_field(char *out, size_t len, const char *csv_path, const char *cell,
                      const char *col)
{
  FILE *f = fopen(csv_path, "r");
  assert_non_null(f);
  char header[1000], line[1000];
  assert_non_null(fgets(header, sizeof header, f));
  int ci = -1, k = 0;
  for (char *p = strtok(header, ",\n"); p; p = strtok(NULL, ",\n"), k++)
    if (!strcmp(p, col)) ci = k;
  assert_true(ci >= 0);
  out[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, cell, strlen(cell)) || line[strlen(cell)] != ',') continue;
    char *p = line;
    for (int i = 0; i < ci; i++) p = strchr(p, ',') + 1;
    size_t n = strcspn(p, ",\n");
    snprintf(out, len, "%.*s", (int)n, p);
  }
  fclose(f);
}

static void test_tables(void **state)
{
  (void)state;
  const double acc[3] = {0.9012, 0.9237, 0.9385};
  write_summary("tab/eps03-plain/seed1/summary.json", "plain", acc[0], 0.2033, 10);
  write_summary("tab/eps03-plain/seed2/summary.json", "plain", acc[1], 0.2033, 12);
  write_summary("tab/eps03-plain/seed10/summary.json", "plain", acc[2], 0.2041, 14);
  write_summary("tab/eps03-filtered/seed1/summary.json", "filtered", 0.95, 0.3, 20);
  write_file("tab/eps03-filtered/seed2/metrics.csv", "step\n"); /* unfinished */
  write_file("tab/figures/x.txt", "not a cell\n");
  size_t nc, nt;
  assert_int_equal(dpgd_sweep_tables(path_in("tab"), &nc, &nt), DPGD_OK);
  assert_int_equal(nc, 2);
  assert_int_equal(nt, 4);
  double mean = (acc[0] + acc[1] + acc[2]) / 3, ss = 0;
  for (int i = 0; i < 3; i++) ss += (acc[i] - mean) * (acc[i] - mean);
  double sd = sqrt(ss / 2);
  char v[100];
  const char *csv = path_in("tab/summary.csv");
  csv_field(v, sizeof v, csv, "eps03-plain", "test_acc_mean");
  assert_true(fabs(atof(v) - mean) < 1e-6);
  csv_field(v, sizeof v, csv, "eps03-plain", "test_acc_std");
  assert_true(fabs(atof(v) - sd) < 1e-6);
  csv_field(v, sizeof v, csv, "eps03-plain", "eps_exact"); /* largest over seeds */
  assert_true(atof(v) == 0.2041);
  csv_field(v, sizeof v, csv, "eps03-plain", "eps_rdp_balle"); /* not reported */
  assert_string_equal(v, "");
  csv_field(v, sizeof v, csv, "eps03-plain", "nonprivate_wall_s_mean");
  assert_true(fabs(atof(v) - 12) < 1e-9);
  csv_field(v, sizeof v, csv, "eps03-filtered", "n_unfinished");
  assert_string_equal(v, "1");
  csv_field(v, sizeof v, csv, "eps03-filtered", "test_acc_std"); /* one seed: none */
  assert_string_equal(v, "");
  /* the Markdown: Feldman & Zrnic's pairing, percentages with two decimals */
  char *md;
  size_t len;
  assert_int_equal(dpgd_file_slurp(&md, &len, path_in("tab/summary.md")), DPGD_OK);
  char want[200];
  snprintf(want, sizeof want, "(%.2f ± %.2f)%%", 100 * mean, 100 * sd);
  assert_non_null(strstr(md, want));
  assert_non_null(strstr(md, "| eps03 | 0.3 | 0.45 | "));
  assert_non_null(strstr(md, "95.00% (1 seed)"));
  assert_non_null(strstr(md, "(+1 unfinished)"));
  assert_null(strstr(md, "figures"));
  free(md);
  /* trials.csv: one row per finished trial, seeds in numeric order */
  assert_int_equal(dpgd_file_slurp(&md, &len, path_in("tab/trials.csv")), DPGD_OK);
  char *s1 = strstr(md, "eps03-plain,1,"), *s2 = strstr(md, "eps03-plain,2,"),
       *s10 = strstr(md, "eps03-plain,10,");
  assert_true(s1 && s2 && s10 && s1 < s2 && s2 < s10);
  free(md);
  /* a corrupt summary.json is an error naming it */
  write_file("tab/eps03-plain/seed2/summary.json", "{\"algorithm\": \"plain\", ");
  assert_int_equal(dpgd_sweep_tables(path_in("tab"), &nc, &nt), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "eps03-plain/seed2/summary.json"));
  write_file("empty/x/y.txt", "");
  assert_int_equal(dpgd_sweep_tables(path_in("empty"), &nc, &nt), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "holds no trials"));
  assert_int_equal(dpgd_sweep_tables(path_in("nonexistent"), &nc, &nt), DPGD_EIO);
}

/* A stand-in for `dpgd train`: records its arguments and how many trials run at once
 * (a file per running trial), sleeps, writes summary.json; seed 13 fails. */
static const char *const fake_train =
    "#!/bin/sh\n"
    "out=; seed=; resume=\n"
    "while [ $# -gt 0 ]; do case $1 in\n"
    "  --out) out=$2; shift;; --resume) resume=$2; out=$2; shift;;\n"
    "  --set) case $2 in train.seed=*) seed=${2#train.seed=};; esac; shift;; esac; shift; "
    "done\n"
    "echo \"$*\" >/dev/null\n"
    "run=$(dirname \"$0\")/running; mkdir -p \"$run\"\n"
    "touch \"$run/$$\"; ls \"$run\" | wc -l >>\"$(dirname \"$0\")/concurrency\"\n"
    "[ -n \"$resume\" ] && touch \"$out/resumed\"\n"
    "echo ran >>\"$out/ran\"\n"
    "sleep 0.2\n"
    "rm -f \"$run/$$\"\n"
    "if [ \"$seed\" = 13 ]; then echo 'dpgd: error: seed 13 is unlucky' >&2; exit 3; fi\n"
    "printf '{\"algorithm\": \"plain\", \"steps\": 1, \"delta\": 1e-5, \"mu\": 0.1, "
    "\"eps\": {\"zcdp\": 0.1}, \"test_acc\": 0.5, \"wall_s\": 0.2}' >\"$out/summary.json\"\n";

static void log_line(void *user, const char *line)
{
  (*(int *)user)++;
  (void)line;
}

static void test_run(void **state)
{
  (void)state;
  write_file("run/fake-train", fake_train);
  assert_int_equal(chmod(path_in("run/fake-train"), 0755), 0);
  write_file("run/a-plain.ini", cfg_text);
  dpgd_sweep s;
  dpgd_sweep_init(&s);
  dpgd_sweep_add_config(&s, path_in("run/a-plain.ini"));
  dpgd_sweep_add_grid(&s, "train.lr=0.1,0.2");
  assert_int_equal(dpgd_sweep_parse_seeds(&s, "1-3,13"), DPGD_OK);
  s.jobs = 2;
  snprintf(s.out, sizeof s.out, "%s", path_in("run/out"));
  /* one trial finished before (not rerun), one interrupted with a checkpoint (resumed) */
  write_summary("run/out/a-plain+train.lr=0.1/seed2/summary.json", "plain", 0.7, 0.1, 1);
  write_file("run/out/a-plain+train.lr=0.2/seed3/checkpoint.bin", "x");
  size_t failed = 99;
  int lines = 0;
  assert_int_equal(dpgd_sweep_run(&s, path_in("run/fake-train"), log_line, &lines, &failed),
                   DPGD_OK);
  assert_int_equal(failed, 2); /* seed 13 of each cell */
  assert_true(lines >= 8);
  assert_false(file_exists("run/out/a-plain+train.lr=0.1/seed2/ran"));
  assert_true(file_exists("run/out/a-plain+train.lr=0.1/seed1/summary.json"));
  assert_true(file_exists("run/out/a-plain+train.lr=0.2/seed1/train.log"));
  assert_true(file_exists("run/out/a-plain+train.lr=0.2/seed3/resumed"));
  assert_false(file_exists("run/out/a-plain+train.lr=0.2/seed1/resumed"));
  assert_false(file_exists("run/out/a-plain+train.lr=0.1/seed13/summary.json"));
  /* never more than jobs trials at once; 7 trials were started */
  FILE *f = fopen(path_in("run/concurrency"), "r");
  assert_non_null(f);
  int c, n = 0, max = 0;
  while (fscanf(f, "%d", &c) == 1) {
    n++;
    if (c > max) max = c;
  }
  fclose(f);
  assert_int_equal(n, 7);
  assert_true(max >= 1 && max <= 2);
  /* the trainer's error is in the log */
  char *log;
  size_t len;
  assert_int_equal(
      dpgd_file_slurp(&log, &len, path_in("run/out/a-plain+train.lr=0.2/seed13/train.log")),
      DPGD_OK);
  assert_non_null(strstr(log, "seed 13 is unlucky"));
  free(log);
  /* a second run starts only the failed trials again */
  unlink(path_in("run/concurrency"));
  assert_int_equal(dpgd_sweep_run(&s, path_in("run/fake-train"), NULL, NULL, &failed), DPGD_OK);
  assert_int_equal(failed, 2);
  f = fopen(path_in("run/concurrency"), "r");
  assert_non_null(f);
  n = 0;
  while (fscanf(f, "%d", &c) == 1) n++;
  fclose(f);
  assert_int_equal(n, 2);
  /* and the tables count 6 finished trials in 2 cells */
  size_t nc, nt;
  assert_int_equal(dpgd_sweep_tables(s.out, &nc, &nt), DPGD_OK);
  assert_int_equal(nc, 2);
  assert_int_equal(nt, 6);
  dpgd_sweep_clear(&s);
}

int main(void)
{
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seeds),      cmocka_unit_test(test_grid_and_cells),
      cmocka_unit_test(test_sweep_file), cmocka_unit_test(test_tables),
      cmocka_unit_test(test_run),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) rc = rc ? rc : 1;
  return rc;
}
