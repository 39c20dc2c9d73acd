/* test_config.c -- the configuration module: defaults, INI loading, overrides, every
 * class of bad value rejected with a message naming the key, round trip of the
 * resolved config, and the hash that checkpoints compare. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_config.h"
#include "dpgd_train.h"

static char tmpdir[] = "/tmp/dpgd_test_config_XXXXXX";

static const char *write_file(const char *name, const char *text)
{
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_defaults(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_config_defaults(&c);
  assert_string_equal(c.model_type, "cnn");
  assert_int_equal(c.model_activation, 0);
  assert_true(c.privacy_delta == 1e-5);
  assert_true(c.data_mean == 0.1307 && c.data_std == 0.3081);
  assert_int_equal(c.stopping_every, 5);
  assert_int_equal(c.filter_enabled, 0);
  assert_true(c.privacy_sigma == 0); /* unset: validation asks for it */
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "privacy.sigma"));
}

static void test_load_and_override(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_config_defaults(&c);
  const char *p =
      write_file("ok.ini", "; the paper's eps = 0.3 setting\n"
                           "[model]\ntype = softmax\nactivation = tanh\n"
                           "[train]\nsteps = 112\nlr = 2.385\nseed = 18446744073709551615\n"
                           "[filter]\nenabled = true\nk = 112\n"
                           "[privacy]\nsigma = 170\nclip = 10\ndelta = 1e-5\n");
  assert_int_equal(dpgd_config_load(&c, p), DPGD_OK);
  assert_string_equal(c.model_type, "softmax");
  assert_int_equal(c.model_activation, 1);
  assert_int_equal(c.train_steps, 112);
  assert_true(c.train_lr == 2.385);
  uint64_t seed = 0;
  assert_true(dpgd_seed_to_u64(&c.train_seed, &seed) && seed == UINT64_MAX);
  assert_int_equal(c.filter_enabled, 1);
  assert_true(c.filter_k == 112 && c.privacy_sigma == 170 && c.privacy_clip == 10);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);

  assert_int_equal(dpgd_config_set(&c, "privacy.clip=15"), DPGD_OK);
  assert_true(c.privacy_clip == 15);
  assert_int_equal(dpgd_config_set(&c, "model.type=cnn"), DPGD_OK);
  assert_string_equal(c.model_type, "cnn");
  assert_int_equal(dpgd_config_set(&c, "output.dir=/tmp/a=b"), DPGD_OK);
  assert_string_equal(c.output_dir, "/tmp/a=b");
}

/* A run's length is train.steps or train.epochs: an override of one replaces the other
 * given in the file (a DP-SGD config in epochs can be shortened with --set train.steps),
 * and epochs = 0, the documented default, may be written. */
static void test_length_override(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_config_defaults(&c);
  const char *p = write_file("epochs.ini", "[model]\ntype = softmax\n"
                                           "[train]\nsampling = poisson\nsample_rate = 0.01\n"
                                           "epochs = 20\n[privacy]\nsigma = 1.1\n");
  assert_int_equal(dpgd_config_load(&c, p), DPGD_OK);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.steps=10"), DPGD_OK);
  assert_true(c.train_steps == 10 && c.train_epochs == 0);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.epochs=2.5"), DPGD_OK);
  assert_true(c.train_steps == 0 && c.train_epochs == 2.5);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
  /* 0 means not given: then steps must come from somewhere. */
  assert_int_equal(dpgd_config_set(&c, "train.epochs=0"), DPGD_OK);
  assert_true(c.train_epochs == 0);
  assert_int_equal(dpgd_config_set(&c, "train.steps=40"), DPGD_OK);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
  /* A negative or NaN length is still refused. */
  assert_int_equal(dpgd_config_set(&c, "train.epochs=-1"), DPGD_EINVAL);
  assert_int_equal(dpgd_config_set(&c, "train.epochs=nan"), DPGD_EINVAL);
  /* Both in one file stay an error: nothing says which one is meant. */
  p = write_file("both.ini", "[model]\ntype = softmax\n[train]\nsampling = poisson\n"
                             "sample_rate = 0.01\nepochs = 2\nsteps = 9\n"
                             "[privacy]\nsigma = 1.1\n");
  dpgd_config_defaults(&c);
  assert_int_equal(dpgd_config_load(&c, p), DPGD_OK);
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  /* A file's sigma is cleared from the command line (0 = not set) so that a run of it
   * can calibrate instead (with sigma given, the plan refuses calibration). */
  p = write_file("sig.ini", "[model]\ntype = softmax\n[train]\nsteps = 9\n"
                            "[privacy]\nsigma = 170\n");
  dpgd_config_defaults(&c);
  assert_int_equal(dpgd_config_load(&c, p), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "privacy.calibrate=sigma"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "privacy.epsilon=1"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "privacy.sigma=0"), DPGD_OK);
  assert_true(c.privacy_sigma == 0);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
}

/* Each bad value must be refused, and the message must name the key. */
static void test_bad_values(void **state)
{
  (void)state;
  static const struct {
    const char *set, *key;
  } bad[] = {
      {"privacy.sigma=-1", "privacy.sigma"},
      {"privacy.sigma=nan", "privacy.sigma"},
      {"privacy.sigma=inf", "privacy.sigma"},
      {"privacy.sigma=1e999", "privacy.sigma"},
      {"privacy.sigma=abc", "privacy.sigma"},
      {"privacy.sigma=", "privacy.sigma"},
      {"privacy.sigma=2x", "privacy.sigma"},
      {"privacy.clip=0", "privacy.clip"},
      {"privacy.clip=-3", "privacy.clip"},
      {"privacy.delta=0", "privacy.delta"},
      {"privacy.delta=1", "privacy.delta"},
      {"privacy.delta=1.5", "privacy.delta"},
      {"privacy.delta=-1e-5", "privacy.delta"},
      {"privacy.epsilon=0", "privacy.epsilon"},
      {"privacy.epsilon=-0.3", "privacy.epsilon"},
      {"train.steps=-3", "train.steps"},
      {"train.steps=1.5", "train.steps"},
      {"train.lr=0", "train.lr"},
      {"train.lr=NaN", "train.lr"},
      {"train.seed=-1", "train.seed"},
      {"train.seed=18446744073709551616", "train.seed"},
      {"train.seed=0x", "train.seed"},
      {"train.seed=0x12g4", "train.seed"},
      {"train.seed=0x10000000000000000000000000000000000000000000000000000000000000000",
       "train.seed"},
      {"stopping.every=0", "stopping.every"},
      {"model.type=resnet", "model.type"},
      {"model.activation=gelu", "model.activation"},
      {"filter.enabled=maybe", "filter.enabled"},
      {"filter.k=-2", "filter.k"},
      {"privacy.method=magic", "privacy.method"},
      {"model.threads=99999", "model.threads"},
      {"data.std=0", "data.std"},
      {"train.steps=99999999999999999999999", "train.steps"},
      {"train.sampling=minibatch", "train.sampling"},
      {"train.sample_rate=0", "train.sample_rate"},
      {"train.sample_rate=-0.25", "train.sample_rate"},
      {"train.sample_rate=1.0000001", "train.sample_rate"},
      {"train.sample_rate=nan", "train.sample_rate"},
      {"train.epochs=-2", "train.epochs"},
      {"train.batch_size=-64", "train.batch_size"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dpgd_config c;
    dpgd_config_defaults(&c);
    dpgd_error_clear();
    int rc = dpgd_config_set(&c, bad[i].set);
    if (rc != DPGD_EINVAL) fail_msg("accepted %s", bad[i].set);
    if (!strstr(dpgd_error_last(), bad[i].key))
      fail_msg("error for %s does not name the key: %s", bad[i].set, dpgd_error_last());
  }
  static const char *malformed[] = {"sigma=1",          "privacy.sigma", "privacy=1",
                                    ".sigma=1",         "privacy.=1",    "privacy.nokey=1",
                                    "nosection.sigma=1"};
  for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
    dpgd_config c;
    dpgd_config_defaults(&c);
    if (dpgd_config_set(&c, malformed[i]) != DPGD_EINVAL) fail_msg("accepted %s", malformed[i]);
  }
}

static void expect_load_error(const char *text, const char *needle)
{
  dpgd_config c;
  dpgd_config_defaults(&c);
  const char *p = write_file("bad.ini", text);
  dpgd_error_clear();
  assert_int_equal(dpgd_config_load(&c, p), DPGD_EINVAL);
  if (!strstr(dpgd_error_last(), needle))
    fail_msg("expected '%s' in: %s", needle, dpgd_error_last());
}

static void test_bad_files(void **state)
{
  (void)state;
  expect_load_error("[privacy]\nsigma = 1\nsgima = 2\n", "unknown key privacy.sgima");
  expect_load_error("[privacy]\nsigma = 1\nsgima = 2\n", ":3:"); /* the line */
  expect_load_error("[privcy]\nsigma = 1\n", "unknown section [privcy]");
  expect_load_error("sigma = 1\n", "outside any [section]");
  expect_load_error("[privacy]\nsigma = 1\nsigma = 2\n", "given twice");
  expect_load_error("[privacy]\ndelta = 2\n", "privacy.delta");
  expect_load_error("[privacy\nsigma = 1\n", "syntax error");
  expect_load_error("[train]\nsteps = -5\n", "train.steps");
  /* a syntax error before a bad key is reported at its own line */
  expect_load_error("[privacy\nsigma = 1\n", ":1:");
  /* a key line longer than inih's buffer (a long path) is read whole, inline comment
   * and blanks dropped as inih does, never split into two lines by the parser; other
   * lines that long are refused */
  char longline[1200];
  int n = snprintf(longline, sizeof longline, "[data]\ndir = /");
  memset(longline + n, 'a', 1000);
  snprintf(longline + n + 1000, sizeof longline - (size_t)n - 1000, "  ; note\n");
  dpgd_config lc;
  dpgd_config_defaults(&lc);
  assert_int_equal(dpgd_config_load(&lc, write_file("long_key.ini", longline)), DPGD_OK);
  assert_int_equal(strlen(lc.data_dir), 1001);
  assert_true(lc.data_dir[0] == '/' && lc.data_dir[1000] == 'a');
  memset(longline + n, 'a', 1100);
  snprintf(longline + n + 1100, sizeof longline - (size_t)n - 1100, "\n");
  expect_load_error(longline, ":2: data.dir: path: path of 1101 characters, longer than 1023");
  memset(longline + n, 'a', 300);
  snprintf(longline + n + 300, sizeof longline - (size_t)n - 300, "\nnokey = 1\n");
  expect_load_error(longline, ":3: unknown key data.nokey");
  memset(longline, '[', 300);
  snprintf(longline + 300, 100, "\n");
  expect_load_error(longline, ":1: line longer than");
  /* comments of any length are fine, and so is an empty file */
  memset(longline, 'c', 1000);
  longline[0] = ';';
  snprintf(longline + 1000, 100, "\n[privacy]\nsigma = 2.385\n");
  dpgd_config ok;
  dpgd_config_defaults(&ok);
  assert_int_equal(dpgd_config_load(&ok, write_file("long_comment.ini", longline)), DPGD_OK);
  assert_true(ok.privacy_sigma == 2.385);
  assert_int_equal(dpgd_config_load(&ok, write_file("empty.ini", "")), DPGD_OK);

  dpgd_config c;
  dpgd_config_defaults(&c);
  assert_int_equal(dpgd_config_load(&c, "/nonexistent/dpgd.ini"), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "/nonexistent/dpgd.ini"));
}

static void test_cross_key_rules(void **state)
{
  (void)state;
  static const struct {
    const char *const sets[4];
    const char *needle;
  } cases[] = {
      {{"privacy.sigma=2.5", NULL}, "train.steps"},
      {{"privacy.sigma=2.5", "filter.enabled=true", NULL}, "filter.budget or filter.k"},
      {{"privacy.sigma=2.5", "filter.enabled=true", "filter.k=3", "filter.budget=300"},
       "not both"},
      {{"privacy.calibrate=sigma", "train.steps=10", NULL}, "privacy.epsilon"},
      {{"privacy.calibrate=budget", "privacy.sigma=3", "privacy.epsilon=1", "train.steps=4"},
       "filter.enabled"},
      {{"train.sampling=poisson", "train.steps=10", "privacy.sigma=1", NULL},
       "train.sampling = poisson needs train.sample_rate"},
      {{"train.sampling=poisson", "train.sample_rate=0.1", "filter.enabled=true", "filter.k=3"},
       "train.sampling = poisson with filter.enabled needs train.steps or train.epochs"},
      {{"train.sampling=subset", "train.steps=10", "privacy.sigma=1", NULL},
       "train.sampling = subset needs train.batch_size >= 1"},
      {{"train.sampling=subset", "train.batch_size=64", "privacy.sigma=1",
        "filter.enabled=true"},
       "train.sampling = subset with filter.enabled = true"},
      {{"train.sampling=subset", "train.batch_size=64", "privacy.sigma=1", NULL},
       "train.sampling = subset needs train.steps > 0"},
      {{"train.batch_size=64", "train.steps=10", "privacy.sigma=1", NULL},
       "train.batch_size applies to train.sampling = subset"},
      {{"train.sample_rate=0.5", "train.steps=10", "privacy.sigma=1", NULL},
       "train.sample_rate and train.epochs apply to train.sampling = poisson"},
      {{"train.steps=10", "train.epochs=3", "privacy.sigma=1", NULL},
       "apply to train.sampling = poisson"},
      {{"privacy.sigma=1e160", NULL}, "privacy.sigma must lie in [1e-150, 1e150]"},
      {{"privacy.sigma=3e-151", NULL}, "privacy.sigma must lie in [1e-150, 1e150]"},
      {{"train.sampling=poisson", "train.sample_rate=0.1", "privacy.sigma=1", NULL},
       "train.steps must be > 0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dpgd_config c;
    dpgd_config_defaults(&c);
    for (int j = 0; j < 4 && cases[i].sets[j]; j++)
      assert_int_equal(dpgd_config_set(&c, cases[i].sets[j]), DPGD_OK);
    dpgd_error_clear();
    assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
    if (!strstr(dpgd_error_last(), cases[i].needle))
      fail_msg("case %zu: expected '%s' in: %s", i, cases[i].needle, dpgd_error_last());
  }
  dpgd_config c;
  dpgd_config_defaults(&c);
  assert_int_equal(dpgd_config_set(&c, "privacy.calibrate=sigma"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "privacy.epsilon=0.3"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.steps=112"), DPGD_OK);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
  /* Poisson with its rate, its length in epochs instead of steps. */
  assert_int_equal(dpgd_config_set(&c, "train.steps=0"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.sampling=poisson"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.sample_rate=1"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&c, "train.epochs=2.385"), DPGD_OK);
  assert_int_equal(dpgd_config_validate(&c), DPGD_OK);
}

/* The written config reads back to the same struct, bit for bit (doubles as %.17g). */
static void test_round_trip_and_hash(void **state)
{
  (void)state;
  dpgd_config a, b;
  dpgd_config_defaults(&a);
  assert_int_equal(dpgd_config_set(&a, "train.lr=0.1234567890123456789"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&a, "privacy.sigma=170.00000000000003"), DPGD_OK);
  /* Paths of any accepted length and characters read back (long lines are split by
   * the loader itself, not by inih's 200-character buffer). */
  char tail[800], set[900];
  int k = snprintf(tail, sizeof tail, "/some/where");
  for (int r = 0; r < 60; r++) k += snprintf(tail + k, sizeof tail - (size_t)k, "/a=b;c:d#e f");
  snprintf(set, sizeof set, "data.dir=%s", tail);
  assert_int_equal(dpgd_config_set(&a, set), DPGD_OK);
  snprintf(set, sizeof set, "output.dir=%s/run", tail);
  assert_int_equal(dpgd_config_set(&a, set), DPGD_OK);
  assert_true(strlen(a.output_dir) > 700);
  /* What config.ini could not carry back is refused when set, and changes nothing. */
  assert_int_equal(dpgd_config_set(&a, "output.dir=/a ;b"), DPGD_EINVAL);
  assert_int_equal(dpgd_config_set(&a, "output.dir=/a\tb\t"), DPGD_EINVAL);
  assert_int_equal(dpgd_config_set(&a, "data.dir=/a\nb"), DPGD_EINVAL);
  assert_string_equal(a.data_dir, tail);
  assert_int_equal(dpgd_config_set(&a, "filter.enabled=true"), DPGD_OK);
  /* A 256-bit seed (0x and 64 hex digits) round-trips with every bit. */
  assert_int_equal(
      dpgd_config_set(
          &a, "train.seed=0xfedcba9876543210fedcba98765432100123456789abcdef0123456789abcdef"),
      DPGD_OK);
  char path[512];
  snprintf(path, sizeof path, "%s/rt.ini", tmpdir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(dpgd_config_write(&a, f), DPGD_OK);
  fclose(f);
  dpgd_config_defaults(&b);
  assert_int_equal(dpgd_config_load(&b, path), DPGD_OK);
  assert_true(a.train_lr == b.train_lr && a.privacy_sigma == b.privacy_sigma);
  assert_string_equal(a.data_dir, b.data_dir);
  assert_string_equal(a.output_dir, b.output_dir);
  assert_int_equal(a.filter_enabled, b.filter_enabled);
  assert_memory_equal(&a.train_seed, &b.train_seed, sizeof a.train_seed);
  assert_true(dpgd_config_hash(&a) == dpgd_config_hash(&b));
  /* A seed that differs only above bit 64 is another configuration. */
  b.train_seed.b[0] ^= 1;
  assert_true(dpgd_config_hash(&a) != dpgd_config_hash(&b));
  b.train_seed = a.train_seed;

  /* The hash follows keys that change the computation, not output-only keys. */
  uint64_t h = dpgd_config_hash(&a);
  assert_int_equal(dpgd_config_set(&b, "output.dir=/elsewhere"), DPGD_OK);
  assert_int_equal(dpgd_config_set(&b, "output.progress=false"), DPGD_OK);
  assert_true(dpgd_config_hash(&b) == h);
  assert_int_equal(dpgd_config_set(&b, "privacy.clip=1.0000000000000002"), DPGD_OK);
  assert_true(dpgd_config_hash(&b) != h);

  /* The sampler's keys: at their defaults they are not hashed (a full-batch config
   * hashes the same whether or not the keys are written), set they are. */
  h = dpgd_config_hash(&b);
  assert_int_equal(dpgd_config_set(&b, "train.sampling=full"), DPGD_OK);
  assert_true(dpgd_config_hash(&b) == h);
  assert_int_equal(dpgd_config_set(&b, "train.sampling=poisson"), DPGD_OK);
  uint64_t hp = dpgd_config_hash(&b);
  assert_true(hp != h);
  assert_int_equal(dpgd_config_set(&b, "train.sample_rate=0.25"), DPGD_OK);
  assert_true(dpgd_config_hash(&b) != hp);
}

/* Every key of the schema round-trips through dpgd_config_key_name: the name at its
 * field offset is its own, it is "section.key", and an override of it is a known key. */
static void test_key_names(void **state)
{
  (void)state;
  size_t n = dpgd_config_n_keys();
  assert_true(n > 0);
  assert_null(dpgd_config_key_at(n, NULL));
  for (size_t i = 0; i < n; i++) {
    size_t off = (size_t)-1;
    const char *name = dpgd_config_key_at(i, &off);
    assert_non_null(name);
    assert_non_null(dpgd_config_key_name(off));
    assert_string_equal(dpgd_config_key_name(off), name);
    const char *dot = strchr(name, '.');
    assert_non_null(dot);
    assert_true(dot > name && dot[1] != '\0' && !strchr(dot + 1, '.'));
    dpgd_config c;
    dpgd_config_defaults(&c);
    char set[128];
    snprintf(set, sizeof set, "%s=not a value %s", name, "2.385");
    dpgd_error_clear();
    if (dpgd_config_set(&c, set) != DPGD_OK) {
      assert_null(strstr(dpgd_error_last(), "unknown key"));
      assert_true(!strncmp(dpgd_error_last(), name, strlen(name))); /* "name: why" */
    }
  }
  assert_string_equal(DPGD_CONFIG_KEY(privacy_delta), "privacy.delta");
  assert_string_equal(DPGD_CONFIG_KEY(data_n_train), "data.n_train");
  assert_string_equal(DPGD_CONFIG_KEY(stopping_tau_frac), "stopping.tau_frac");
  assert_null(dpgd_config_key_name(offsetof(dpgd_config, data_dir) + 1));
}

static int is_schema_key(const char *name)
{
  for (size_t i = 0; i < dpgd_config_n_keys(); i++)
    if (!strcmp(dpgd_config_key_at(i, NULL), name)) return 1;
  return 0;
}

/* Every "section.key" written in msg is a key of the schema; returns how many there are. */
static int check_named_keys(const char *msg)
{
  static const char *const sections[] = {"data",    "model",    "train", "filter",
                                         "privacy", "stopping", "output"};
  int named = 0;
  for (const char *p = msg; *p; p++) {
    if (p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')) continue;
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
      size_t l = strlen(sections[s]);
      if (strncmp(p, sections[s], l) || p[l] != '.' || !islower((unsigned char)p[l + 1]))
        continue;
      size_t k = l + 1;
      while (islower((unsigned char)p[k]) || p[k] == '_') k++;
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)k, p);
      if (!is_schema_key(name)) fail_msg("'%s' names '%s', not a key of the schema", msg, name);
      named++;
    }
  }
  return named;
}

/* A base that validates and plans: sigma given, 113 steps, no filter. */
static void valid_base(dpgd_config *c)
{
  dpgd_config_defaults(c);
  c->privacy_sigma = 2.385;
  c->train_steps = 113;
}

/* Each validation and planning error, provoked on purpose: the keys its message names are
 * keys of the schema (spelt by dpgd_config_key_name, not by hand). */
static void test_messages_name_schema_keys(void **state)
{
  (void)state;
  enum { N = 17 };
  dpgd_config cs[N];
  for (int i = 0; i < N; i++) valid_base(&cs[i]);
  cs[0].privacy_delta = 0;
  cs[1].privacy_clip = 0;
  cs[2].privacy_sigma = -1;
  cs[3].train_lr = 0;
  cs[4].data_std = 0;
  cs[5].privacy_calibrate = DPGD_CALIBRATE_SIGMA; /* no epsilon */
  cs[6].privacy_sigma = 0;                        /* not set, not calibrated */
  cs[7].privacy_calibrate = DPGD_CALIBRATE_SIGMA, cs[7].privacy_epsilon = 1.5,
  cs[7].privacy_sigma = 0, cs[7].train_steps = 0;
  cs[8].privacy_calibrate = DPGD_CALIBRATE_BUDGET, cs[8].privacy_epsilon = 1.5;
  cs[9].filter_enabled = 1;
  cs[10].filter_enabled = 1, cs[10].filter_budget = 3.5, cs[10].filter_k = 7;
  cs[11].train_steps = 0;
  /* planning: dpgd_plan_make */
  cs[12].privacy_calibrate = DPGD_CALIBRATE_SIGMA, cs[12].privacy_epsilon = 1.5;
  cs[13].privacy_calibrate = DPGD_CALIBRATE_BUDGET, cs[13].privacy_epsilon = 1.5,
  cs[13].filter_enabled = 1, cs[13].filter_k = 7;
  cs[14].privacy_clip = 1e200;
  cs[15].stopping_queries = 30, cs[15].stopping_every = 5;
  cs[16].stopping_queries = 1, cs[16].stopping_tau_frac = 1e-160;
  for (int i = 0; i < N; i++) {
    dpgd_plan p;
    dpgd_error_clear();
    int rc = i < 12 ? dpgd_config_validate(&cs[i]) : dpgd_plan_make(&p, &cs[i], 1000);
    if (rc == DPGD_OK) fail_msg("case %d: no error", i);
    if (check_named_keys(dpgd_error_last()) == 0)
      fail_msg("case %d: '%s' names no key", i, dpgd_error_last());
  }
}

int main(void)
{
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_load_and_override),
      cmocka_unit_test(test_length_override),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_cross_key_rules),
      cmocka_unit_test(test_round_trip_and_hash),
      cmocka_unit_test(test_key_names),
      cmocka_unit_test(test_messages_name_schema_keys),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) return 1;
  return rc;
}
