/* test_plot.c -- reading run directories for `dpgd plot` (CSV and summary.json: every
 * class of corruption rejected with a message naming the file) and the figures' gnuplot
 * scripts: the data they would draw, checked against values computed here (histogram
 * counts, percentages, B_norm/C^2, the GDP trade-off curve through GSL). The run
 * directories are synthetic, written by this test: this is plotting code, not training. */
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
#include <gsl/gsl_cdf.h>

#include "plot.h"

static char tmpdir[] = "/tmp/dpgd_test_plot_XXXXXX";

static void write_file(const char *dir, const char *name, const char *text)
{
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *mkrun(const char *name)
{
  static char dir[300];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  mkdir(dir, 0777);
  return dir;
}

static const char *const good_summary =
    "{\"dpgd_version\": \"0.1.0\", \"model\": \"cnn\", \"activation\": \"relu\",\n"
    " \"algorithm\": \"filtered\", \"n_train\": 60000, \"n_test\": 10000,\n"
    " \"steps\": 112, \"selected_step\": 150, \"sigma\": 170, \"clip\": 10.5,\n"
    " \"budget\": 11907, \"delta\": 1e-5, \"mu\": 0.6588,\n"
    " \"eps\": {\"exact\": 0.2033, \"zcdp\": 0.3007, \"rdp_classic\": 0.41,\n"
    "         \"rdp_balle\": 0.38, \"rdp_optimal\": 0.37},\n"
    " \"future\": {\"nested\": [1, 2.5e-3, \"x\\\"y\", true, null, {}]},\n"
    " \"odometer\": {\"level_mu2\": 0.0068, \"levels\": 2, \"delta_split\": [1e-06, 9e-06]},\n"
    " \"test_acc\": 0.9329, \"seed\": 7, \"rng\": \"research\",\n"
    " \"caveat\": \"research rng: the noise is reproducible from config.ini\",\n"
    " \"nonprivate\": {\"wall_s\": 123.4}}\n";

static const char *const good_metrics =
    "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,mu,test_acc,"
    "query_acc_noisy,lr,diag_train_loss,diag_train_acc,diag_active\n"
    "1,0.01,0.02,0.03,0.025,0.024,0.06,,,0.2,2.3,0.1,60000\n"
    "2,0.02,0.03,0.04,0.035,0.034,0.085,0.9375,,0.2,2.0,0.3,60000\n"
    "3,0.03,0.04,0.05,0.045,0.044,0.1,,0.91,0.2,1.9,0.5,59000\n"
    "4,0.04,0.05,0.06,0.055,0.054,0.12,0.953125,,0.2,1.8,0.6,41000\n";

/* ---- CSV ---- */

static void test_csv_good(void **state)
{
  (void)state;
  dpgd_csv *t;
  const char *text = "# a comment\nstep, a ,b\n1,2.5,\n2,-3e2, 4\r\n";
  assert_int_equal(dpgd_csv_parse(&t, text, strlen(text), "x.csv"), DPGD_OK);
  assert_int_equal(t->n_rows, 2);
  assert_int_equal(t->n_cols, 3);
  assert_int_equal(dpgd_csv_col(t, "a"), 1);
  assert_int_equal(dpgd_csv_col(t, "zz"), -1);
  assert_true(dpgd_csv_at(t, 0, 1) == 2.5);
  assert_true(isnan(dpgd_csv_at(t, 0, 2)));
  assert_true(dpgd_csv_at(t, 1, 1) == -300.0);
  assert_true(dpgd_csv_at(t, 1, 2) == 4.0);
  assert_true(isnan(dpgd_csv_at(t, 1, -1)));
  dpgd_csv_free(t);
  /* no final newline */
  text = "step\n1\n2";
  assert_int_equal(dpgd_csv_parse(&t, text, strlen(text), "x.csv"), DPGD_OK);
  assert_int_equal(t->n_rows, 2);
  dpgd_csv_free(t);
  dpgd_csv_free(NULL);
}

static void expect_csv_error(const char *text, const char *needle)
{
  dpgd_csv *t = (dpgd_csv *)0x1;
  dpgd_error_clear();
  int st = dpgd_csv_parse(&t, text, strlen(text), "bad.csv");
  assert_int_equal(st, DPGD_EFORMAT);
  assert_null(t);
  if (!strstr(dpgd_error_last(), needle) || !strstr(dpgd_error_last(), "bad.csv"))
    fail_msg("message '%s' lacks '%s'", dpgd_error_last(), needle);
}

/* The last error message is one line of printable ASCII (it may quote file content). */
static void assert_printable_error(void)
{
  for (const char *m = dpgd_error_last(); *m; m++)
    if (!(*m >= 0x20 && *m < 0x7f))
      fail_msg("byte 0x%02x in message '%s'", (unsigned char)*m, dpgd_error_last());
}

static void test_csv_bad(void **state)
{
  (void)state;
  expect_csv_error("", "empty file");
  expect_csv_error("# only a comment\n", "empty file");
  expect_csv_error("step,a\n1,2,3\n", "3 fields, the header has 2");
  expect_csv_error("step,a\n1\n", "1 fields");
  expect_csv_error("step,a\n1,abc\n", "'abc' is not a finite number");
  expect_csv_error("step,a\n1,nan\n", "not a finite number");
  expect_csv_error("step,a\n1,inf\n", "not a finite number");
  expect_csv_error("step,a\n1,1e999\n", "not a finite number");
  expect_csv_error("step,a\n1,0x10\n", "not a finite number");
  expect_csv_error("step,a\n1,1.2.3\n", "not a finite number");
  expect_csv_error("step,,a\n", "empty column name");
  expect_csv_error("step,a,a\n", "'a' appears twice");
  expect_csv_error("step,a\n1,2\n\n2,3\n", "empty line");
  /* file content quoted in a message is shown printable */
  expect_csv_error("step,a\n1,\x1b[2J\r\xff\n", "'?[2J?\?' is not a finite number");
  assert_printable_error();
  expect_csv_error("step,a\x01\x1b\n1,2\n", "column 2 of the header ('a?\?') has a byte");
  assert_printable_error();
  const char bin[] = "step\n1\0\n";
  dpgd_csv *t;
  assert_int_equal(dpgd_csv_parse(&t, bin, sizeof bin - 1, "b.csv"), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "NUL"));
}

/* ---- summary.json ---- */

static void test_summary_good(void **state)
{
  (void)state;
  dpgd_run_summary s;
  assert_int_equal(dpgd_run_summary_parse(&s, good_summary, strlen(good_summary), "s.json"),
                   DPGD_OK);
  assert_string_equal(s.algorithm, "filtered");
  assert_string_equal(s.model, "cnn");
  assert_string_equal(s.rng, "research");
  assert_true(s.mu == 0.6588 && s.delta == 1e-5 && s.clip == 10.5 && s.budget == 11907);
  assert_true(s.steps == 112 && s.selected_step == 150 && s.seed == 7);
  assert_true(s.eps[DPGD_ACCT_EXACT] == 0.2033 && s.eps[DPGD_ACCT_ZCDP] == 0.3007);
  assert_true(s.eps[DPGD_ACCT_RDP_OPTIMAL] == 0.37);
  assert_true(s.test_acc == 0.9329 && s.wall_s == 123.4);
  /* a method missing is NAN, not 0 */
  const char *t = "{\"algorithm\":\"plain\",\"mu\":1,\"delta\":1e-5,\"test_acc\":0.5,"
                  "\"steps\":3,\"eps\":{\"zcdp\":1.5,\"unknown\":2}}";
  assert_int_equal(dpgd_run_summary_parse(&s, t, strlen(t), "s.json"), DPGD_OK);
  assert_true(isnan(s.eps[DPGD_ACCT_EXACT]) && s.eps[DPGD_ACCT_ZCDP] == 1.5);
  assert_true(isnan(s.wall_s) && isnan(s.budget));
  assert_string_equal(s.sampling, "full"); /* absent: full-batch */
  /* A poisson run is not GDP: its mu is null. */
  t = "{\"algorithm\":\"plain\",\"sampling\":\"poisson\",\"sample_rate\":0.0427,"
      "\"mu\":null,\"delta\":1e-5,\"test_acc\":0.5,\"steps\":3,\"eps\":{\"exact\":1}}";
  assert_int_equal(dpgd_run_summary_parse(&s, t, strlen(t), "s.json"), DPGD_OK);
  assert_string_equal(s.sampling, "poisson");
  assert_true(isnan(s.mu));
  /* Nor is a subset run. */
  t = "{\"algorithm\":\"plain\",\"sampling\":\"subset\",\"sample_rate\":0.064,"
      "\"batch_size\":64,\"eps_method\":\"rdp_optimal\",\"mu\":null,\"delta\":1e-5,"
      "\"test_acc\":0.5,\"steps\":3,\"eps\":{\"exact\":null,\"rdp_optimal\":2}}";
  assert_int_equal(dpgd_run_summary_parse(&s, t, strlen(t), "s.json"), DPGD_OK);
  assert_string_equal(s.sampling, "subset");
  assert_true(isnan(s.mu) && isnan(s.eps[DPGD_ACCT_EXACT]) &&
              s.eps[DPGD_ACCT_RDP_OPTIMAL] == 2);
}

static void expect_summary_error(const char *text, const char *needle)
{
  dpgd_run_summary s;
  dpgd_error_clear();
  assert_int_equal(dpgd_run_summary_parse(&s, text, strlen(text), "bad.json"), DPGD_EFORMAT);
  if (!strstr(dpgd_error_last(), needle) || !strstr(dpgd_error_last(), "bad.json"))
    fail_msg("message '%s' lacks '%s'", dpgd_error_last(), needle);
}

static void test_summary_bad(void **state)
{
  (void)state;
  const char *base =
      "\"mu\":1,\"delta\":1e-5,\"test_acc\":0.5,\"steps\":3,\"eps\":{\"zcdp\":1}";
  char buf[400];
  expect_summary_error("", "expected an object");
  expect_summary_error("[]", "expected an object");
  expect_summary_error("{\"algorithm\": \"plain\"", "invalid JSON");
  expect_summary_error("{\"algorithm\": \"pla", "unterminated string");
  snprintf(buf, sizeof buf, "{\"algorithm\":\"plain\",%s} x", base);
  expect_summary_error(buf, "text after the object");
  snprintf(buf, sizeof buf, "{\"algorithm\":\"other\",%s}", base);
  expect_summary_error(buf, "\"algorithm\" must be");
  snprintf(buf, sizeof buf, "{%s}", base);
  expect_summary_error(buf, "(missing)");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":null,\"delta\":1e-5,\"test_acc\":0.5,"
                       "\"steps\":3,\"eps\":{\"zcdp\":1}}",
                       "\"mu\"");
  snprintf(buf, sizeof buf, "{\"algorithm\":\"plain\",\"sampling\":\"shuffle\",%s}", base);
  expect_summary_error(buf, "\"sampling\" must be");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":-1,\"delta\":1e-5,\"test_acc\":0.5,"
                       "\"steps\":3,\"eps\":{\"zcdp\":1}}",
                       "\"mu\"");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":1,\"delta\":1e-5,\"test_acc\":1.5,"
                       "\"steps\":3,\"eps\":{\"zcdp\":1}}",
                       "\"test_acc\"");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":1,\"delta\":1,\"test_acc\":0.5,"
                       "\"steps\":3,\"eps\":{\"zcdp\":1}}",
                       "\"delta\"");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":1,\"delta\":1e-5,\"test_acc\":0.5,"
                       "\"steps\":3,\"eps\":{}}",
                       "no \"eps\"");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":1,\"delta\":1e-5,\"test_acc\":0.5,"
                       "\"steps\":3,\"eps\":{\"zcdp\":-1}}",
                       "negative");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":NaN}", "expected a number");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":1e999}", "bad number");
  expect_summary_error("{\"algorithm\":\"plain\",\"mu\":\"1\"}", "expected a number");
  expect_summary_error("{\"algorithm\":\"plain\" \"mu\":1}", "expected ','");
  expect_summary_error("\x89PNG\r\n\x1a\n", "expected an object near '?PNG?\??\?'");
  assert_printable_error();
  expect_summary_error("{\"algorithm\":\"pl\nain\"}", "invalid JSON");
  assert_printable_error();
  /* deep nesting is refused, not a stack overflow */
  char deep[200] = "{\"x\":";
  for (int i = 0; i < 60; i++) strcat(deep, "[");
  expect_summary_error(deep, "nested too deeply");
}

/* ---- run directories ---- */

static void test_run_read(void **state)
{
  (void)state;
  const char *dir = mkrun("good");
  write_file(dir, "summary.json", good_summary);
  write_file(dir, "metrics.csv", good_metrics);
  dpgd_plot_run r;
  char slash[400];
  snprintf(slash, sizeof slash, "%s//", dir);
  assert_int_equal(dpgd_plot_run_read(&r, slash), DPGD_OK);
  assert_string_equal(r.label, "good");
  assert_string_equal(r.dir, dir);
  assert_int_equal(r.metrics->n_rows, 4);
  assert_null(r.points);
  dpgd_plot_run_clear(&r);
  write_file(dir, "points.csv",
             "# SENSITIVE: per-point privacy report\n"
             "index,label,spend,spend_frac,active,mu_i,eps_i\n0,5,11907,1,0,0.6,0.2\n");
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_OK);
  assert_non_null(r.points);
  assert_int_equal(r.points->n_rows, 1);
  dpgd_plot_run_clear(&r);
  /* a sweep trial, DIR/<cell>/seed<k>, is labelled <cell>/seed<k>; other names keep the
   * last component */
  static const char *const trial[][2] = {{"good/seed12", "good/seed12"},
                                         {"good/seed", "seed"},
                                         {"good/seed1x", "seed1x"},
                                         {"good/seeds", "seeds"}};
  for (size_t i = 0; i < sizeof trial / sizeof trial[0]; i++) {
    const char *t = mkrun(trial[i][0]);
    write_file(t, "summary.json", good_summary);
    write_file(t, "metrics.csv", good_metrics);
    assert_int_equal(dpgd_plot_run_read(&r, t), DPGD_OK);
    assert_string_equal(r.label, trial[i][1]);
    dpgd_plot_run_clear(&r);
  }
}

static void expect_run_error(const char *metrics, const char *needle)
{
  const char *dir = mkrun("bad");
  write_file(dir, "summary.json", good_summary);
  write_file(dir, "metrics.csv", metrics);
  dpgd_plot_run r;
  dpgd_error_clear();
  assert_int_not_equal(dpgd_plot_run_read(&r, dir), DPGD_OK);
  assert_null(r.metrics);
  if (!strstr(dpgd_error_last(), needle) || !strstr(dpgd_error_last(), "metrics.csv"))
    fail_msg("message '%s' lacks '%s'", dpgd_error_last(), needle);
}

static void test_run_bad(void **state)
{
  (void)state;
  expect_run_error("lr,test_acc\n0.2,0.5\n", "no 'step' column");
  expect_run_error("step,test_acc\n", "no rows");
  expect_run_error("step,test_acc\n1,0.5\n1,0.6\n", "row 2: step must be");
  expect_run_error("step,test_acc\n0,0.5\n", "row 1: step must be");
  expect_run_error("step,test_acc\n1.5,0.5\n", "step must be");
  expect_run_error("step,test_acc\n1,1.5\n", "test_acc = 1.5 is outside");
  expect_run_error("step,eps_zcdp\n1,-0.5\n", "eps_zcdp = -0.5");
  expect_run_error("step,diag_active\n1,-3\n", "diag_active = -3");
  expect_run_error("step,test_acc\n1,x\n", "not a finite number");
  /* missing files */
  const char *dir = mkrun("empty");
  dpgd_plot_run r;
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "summary.json"));
  write_file(dir, "summary.json", good_summary);
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "metrics.csv"));
  write_file(dir, "summary.json", "{\"algorithm\":");
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "summary.json"));
  /* points.csv over budget beyond rounding is corrupt */
  write_file(dir, "summary.json", good_summary);
  write_file(dir, "metrics.csv", good_metrics);
  write_file(dir, "points.csv",
             "#\nindex,label,spend,spend_frac,active,mu_i,eps_i\n"
             "0,5,11907,1.01,0,0.6,0.2\n");
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "spend_frac = 1.01"));
}

/* ---- figure scripts ---- */

/* The script of figure f for the runs; NULL with the status in *st on failure. */
static char *script_of(dpgd_fig f, const dpgd_plot_run *runs, size_t n, int *st)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *ms = open_memstream(&buf, &len);
  assert_non_null(ms);
  *st = dpgd_fig_script(ms, f, runs, n, "/tmp/x'y.png");
  fclose(ms);
  if (*st) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* The lines of datablock $name as (x, y) pairs; returns their count. */
static size_t read_block(const char *script, const char *name, double *x, double *y, size_t max)
{
  char head[64];
  snprintf(head, sizeof head, "$%s << EOD\n", name);
  const char *p = strstr(script, head);
  if (!p) return 0;
  p += strlen(head);
  size_t n = 0;
  while (strncmp(p, "EOD\n", 4) && n < max) {
    assert_int_equal(sscanf(p, "%lf %lf", &x[n], &y[n]), 2);
    n++;
    p = strchr(p, '\n') + 1;
  }
  return n;
}

static void load_good(dpgd_plot_run *r, const char *name, const char *points)
{
  const char *dir = mkrun(name);
  write_file(dir, "summary.json", good_summary);
  write_file(dir, "metrics.csv", good_metrics);
  if (points) write_file(dir, "points.csv", points);
  assert_int_equal(dpgd_plot_run_read(r, dir), DPGD_OK);
}

static void test_fig_accuracy_active_eps(void **state)
{
  (void)state;
  dpgd_plot_run r;
  load_good(&r, "fig", NULL);
  int st;
  double x[16], y[16];
  char *s = script_of(DPGD_FIG_ACCURACY, &r, 1, &st);
  assert_non_null(s);
  /* test accuracy in percent at the steps where it was measured only */
  assert_int_equal(read_block(s, "r0", x, y, 16), 2);
  assert_true(x[0] == 2 && y[0] == 93.75 && x[1] == 4 && y[1] == 95.3125);
  assert_non_null(strstr(s, "set terminal pngcairo size 800,"));
  assert_non_null(strstr(s, "set output '/tmp/x''y.png'")); /* quoting */
  assert_non_null(strstr(s, "test accuracy (%)"));
  assert_non_null(strstr(s, "'fig (filtered)'"));
  free(s);

  s = script_of(DPGD_FIG_ACTIVE, &r, 1, &st);
  assert_non_null(s);
  assert_int_equal(read_block(s, "r0", x, y, 16), 4);
  assert_true(y[3] == 41000);
  assert_non_null(strstr(s, "diagnostic (not private)"));
  /* B_norm / C^2 = 11907 / 10.5^2 = 108 */
  assert_non_null(strstr(s, "set arrow from 108, graph 0 to 108, graph 1"));
  free(s);

  s = script_of(DPGD_FIG_EPS, &r, 1, &st);
  assert_non_null(s);
  assert_int_equal(read_block(s, "r0m1", x, y, 16), 4); /* zcdp */
  assert_true(y[2] == 0.04);
  assert_int_equal(read_block(s, "r0m4", x, y, 16), 4); /* rdp_optimal */
  assert_true(y[0] == 0.024);
  assert_non_null(strstr(s, "delta = 1e-05"));
  free(s);

  /* spend needs points.csv: absent -> refused with a reason, nothing drawn */
  dpgd_error_clear();
  assert_null(script_of(DPGD_FIG_SPEND, &r, 1, &st));
  assert_int_equal(st, DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "points.csv"));
  dpgd_plot_run_clear(&r);

  /* without diagnostics there is no active-points figure, and the reason says so */
  const char *dir = mkrun("nodiag");
  write_file(dir, "summary.json", good_summary);
  write_file(dir, "metrics.csv", "step,eps_exact,test_acc\n1,0.1,\n2,0.2,0.5\n");
  assert_int_equal(dpgd_plot_run_read(&r, dir), DPGD_OK);
  dpgd_error_clear();
  assert_null(script_of(DPGD_FIG_ACTIVE, &r, 1, &st));
  assert_int_equal(st, DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "diag_active"));
  assert_non_null(strstr(dpgd_error_last(), "output.diagnostics"));
  s = script_of(DPGD_FIG_EPS, &r, 1, &st);
  assert_non_null(s);
  assert_null(strstr(s, "$r0m1")); /* no zcdp column: no zcdp curve */
  free(s);
  dpgd_plot_run_clear(&r);
}

static void test_fig_spend_histogram(void **state)
{
  (void)state;
  /* bins of width 1/50: 0 and 0.0199 in bin 0; 0.02 in bin 1; 0.5 in bin 25; 1 and
   * 1 + 1e-12 (rounding) in the last bin; an empty spend_frac is not counted */
  const char *points = "# SENSITIVE\nindex,label,spend,spend_frac,active,mu_i,eps_i\n"
                       "0,1,0,0,1,0,0\n1,1,1,0.0199,1,0,0\n2,1,1,0.02,1,0,0\n"
                       "3,1,1,0.5,1,0,0\n4,1,1,1,0,0,0\n5,1,1,1.000000000001,0,0,0\n"
                       "6,1,1,,0,0,0\n";
  dpgd_plot_run r[2];
  load_good(&r[0], "spend0", points);
  load_good(&r[1], "spend1", NULL);
  int st;
  char *s = script_of(DPGD_FIG_SPEND, r, 2, &st);
  assert_non_null(s);
  double x[64], y[64];
  assert_int_equal(read_block(s, "r0", x, y, 64), DPGD_FIG_SPEND_BINS);
  double total = 0;
  for (int b = 0; b < DPGD_FIG_SPEND_BINS; b++) {
    double want = b == 0 ? 2 : b == 1 ? 1 : b == 25 ? 1 : b == 49 ? 2 : 0;
    if (y[b] != want) fail_msg("bin %d: %g points, expected %g", b, y[b], want);
    assert_true(fabs(x[b] - (b + 0.5) / 50) < 1e-15);
    total += y[b];
  }
  assert_true(total == 6);
  assert_int_equal(read_block(s, "r1", x, y, 64), 0); /* run without points.csv */
  assert_non_null(strstr(s, "SENSITIVE"));
  free(s);
  dpgd_plot_run_clear(&r[0]);
  dpgd_plot_run_clear(&r[1]);
}

static void test_fig_tradeoff(void **state)
{
  (void)state;
  dpgd_plot_run r[3];
  load_good(&r[0], "t0", NULL);
  load_good(&r[1], "t1", NULL); /* same mu: drawn once */
  load_good(&r[2], "t2", NULL);
  r[2].summary.mu = 2.385;
  int st;
  char *s = script_of(DPGD_FIG_TRADEOFF, r, 3, &st);
  assert_non_null(s);
  double x[300], y[300];
  assert_int_equal(read_block(s, "r1", x, y, 300), 0);
  const double mus[2] = {0.6588, 2.385};
  const char *names[2] = {"r0", "r2"};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(read_block(s, names[k], x, y, 300), DPGD_FIG_TRADEOFF_POINTS);
    for (int i = 0; i < DPGD_FIG_TRADEOFF_POINTS; i++) {
      double a = x[i];
      /* beta(alpha) = Phi(Phi^{-1}(1 - alpha) - mu), independently through GSL */
      double want = a <= 0   ? 1
                    : a >= 1 ? 0
                             : gsl_cdf_ugaussian_P(gsl_cdf_ugaussian_Pinv(1 - a) - mus[k]);
      if (fabs(y[i] - want) > 1e-9) fail_msg("mu %g alpha %g: %g vs %g", mus[k], a, y[i], want);
      assert_true(y[i] <= 1 - a + 1e-12); /* never better than random guessing */
    }
  }
  assert_int_equal(read_block(s, "guess", x, y, 300), 2);
  assert_non_null(strstr(s, "random guessing"));
  assert_non_null(strstr(s, "mu = 2.385"));
  free(s);
  for (int i = 0; i < 3; i++) dpgd_plot_run_clear(&r[i]);
}

static void test_gnuplot_find(void **state)
{
  (void)state;
  char buf[1024];
  setenv("DPGD_GNUPLOT", "/nonexistent/gnuplot", 1);
  assert_int_equal(dpgd_gnuplot_find(buf, sizeof buf), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "gnuplot-nox"));
  setenv("DPGD_GNUPLOT", "no-such-gnuplot-program", 1);
  assert_int_equal(dpgd_gnuplot_find(buf, sizeof buf), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "no 'no-such-gnuplot-program' on PATH"));
  setenv("DPGD_GNUPLOT", "sh", 1); /* found on PATH like gnuplot would be */
  assert_int_equal(dpgd_gnuplot_find(buf, sizeof buf), DPGD_OK);
  assert_non_null(strstr(buf, "/sh"));
  unsetenv("DPGD_GNUPLOT");
}

int main(void)
{
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_good),
      cmocka_unit_test(test_csv_bad),
      cmocka_unit_test(test_summary_good),
      cmocka_unit_test(test_summary_bad),
      cmocka_unit_test(test_run_read),
      cmocka_unit_test(test_run_bad),
      cmocka_unit_test(test_fig_accuracy_active_eps),
      cmocka_unit_test(test_fig_spend_histogram),
      cmocka_unit_test(test_fig_tradeoff),
      cmocka_unit_test(test_gnuplot_find),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) rc = rc ? rc : 1;
  return rc;
}
