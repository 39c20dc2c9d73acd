/* test_ckpt.c -- the checkpoint container: round trip, every byte flip refused (the
 * CRC-32 covers the whole file), truncation, a foreign config hash, a missing or
 * wrong-sized section, and the atomic replacement (no temp file left behind). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
static char path[256];

static void spit(const char *p, const void *b, size_t len)
{
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, len, f), len);
  fclose(f);
}

static double ledger[5] = {2.385, 0, 11199.999, 1e-300, 42};
static const char note[] = "step 17";

static void write_sample(uint64_t hash)
{
  dpgd_ckpt_section s[3] = {
      {"ledger", ledger, sizeof ledger}, {"note", note, sizeof note}, {"empty", NULL, 0}};
  assert_int_equal(dpgd_ckpt_write(path, hash, s, 3), DPGD_OK);
}

static void test_round_trip(void **state)
{
  (void)state;
  write_sample(0xfeedULL);
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  assert_int_not_equal(access(tmp, F_OK), 0);
  dpgd_ckpt *c;
  assert_int_equal(dpgd_ckpt_read(&c, path, 0xfeedULL), DPGD_OK);
  const void *d;
  size_t len;
  assert_int_equal(dpgd_ckpt_get(c, "ledger", sizeof ledger, &d, &len), DPGD_OK);
  assert_memory_equal(d, ledger, sizeof ledger);
  assert_int_equal(dpgd_ckpt_get(c, "note", 0, &d, &len), DPGD_OK);
  assert_int_equal(len, sizeof note);
  assert_string_equal(d, note);
  assert_int_equal(dpgd_ckpt_get(c, "empty", 0, &d, &len), DPGD_OK);
  assert_int_equal(len, 0);
  assert_int_equal(dpgd_ckpt_get(c, "ledger", 8, &d, &len), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "ledger"));
  assert_int_equal(dpgd_ckpt_get(c, "model", 0, &d, &len), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "missing"));
  dpgd_ckpt_free(c);
  dpgd_ckpt_free(NULL);
}

static void test_every_flip_refused(void **state)
{
  (void)state;
  write_sample(7);
  size_t len;
  unsigned char *good = tt_slurp(path, &len);
  for (size_t i = 0; i < len; i++) {
    for (int bit = 0; bit < 8; bit += 3) {
      good[i] ^= (unsigned char)(1u << bit);
      spit(path, good, len);
      good[i] ^= (unsigned char)(1u << bit);
      dpgd_ckpt *c = (dpgd_ckpt *)1;
      assert_int_equal(dpgd_ckpt_read(&c, path, 7), DPGD_EFORMAT);
      assert_null(c);
      assert_non_null(strstr(dpgd_error_last(), path));
    }
  }
  for (size_t cut = 0; cut < len; cut += 5) {
    spit(path, good, cut);
    dpgd_ckpt *c;
    assert_int_equal(dpgd_ckpt_read(&c, path, 7), DPGD_EFORMAT);
  }
  /* A trailing byte is refused too. */
  unsigned char *longer = calloc(len + 1, 1);
  memcpy(longer, good, len);
  spit(path, longer, len + 1);
  dpgd_ckpt *c;
  assert_int_equal(dpgd_ckpt_read(&c, path, 7), DPGD_EFORMAT);
  free(longer);
  free(good);
}

static void test_wrong_hash_and_missing(void **state)
{
  (void)state;
  write_sample(1);
  dpgd_ckpt *c;
  assert_int_equal(dpgd_ckpt_read(&c, path, 2), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "another configuration"));
  char missing[300];
  snprintf(missing, sizeof missing, "%s/nothing.bin", dir);
  assert_int_equal(dpgd_ckpt_read(&c, missing, 1), DPGD_EIO);
  /* Replacing keeps a readable file: write again over it with new content. */
  ledger[0] = 3.5;
  write_sample(1);
  assert_int_equal(dpgd_ckpt_read(&c, path, 1), DPGD_OK);
  const void *d;
  assert_int_equal(dpgd_ckpt_get(c, "ledger", sizeof ledger, &d, NULL), DPGD_OK);
  assert_true(((const double *)d)[0] == 3.5);
  dpgd_ckpt_free(c);
  /* A write into a missing folder fails with EIO and names the file. */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/no/such/dir/ck.bin", dir);
  dpgd_ckpt_section s = {"x", ledger, 8};
  assert_int_equal(dpgd_ckpt_write(bad, 1, &s, 1), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "ck.bin"));
}

/* A write that fails after N bytes (file size limit; SIGXFSZ ignored so write(2) fails
 * with EFBIG) for N = 0 .. the new file's size - 1: the call fails naming the file, the
 * old checkpoint survives intact and no temp file is left. */
static void test_failed_write_keeps_old(void **state)
{
  (void)state;
  write_sample(7);
  size_t good_len;
  unsigned char *good = tt_slurp(path, &good_len);
  static double big[64];
  for (size_t i = 0; i < 64; i++) big[i] = (double)i;
  dpgd_ckpt_section s = {"big", big, sizeof big};
  struct rlimit old;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  for (rlim_t n = 0; n < sizeof big; n += 37) {
    struct rlimit lim = {n, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = dpgd_ckpt_write(path, 8, &s, 1);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_int_equal(rc, DPGD_EIO);
    assert_non_null(strstr(dpgd_error_last(), "checkpoint.bin"));
    assert_int_not_equal(access(tmp, F_OK), 0);
    size_t len;
    unsigned char *now = tt_slurp(path, &len);
    assert_int_equal(len, good_len);
    assert_memory_equal(now, good, len);
    free(now);
  }
  signal(SIGXFSZ, prev);
  free(good);
  dpgd_ckpt *c;
  assert_int_equal(dpgd_ckpt_read(&c, path, 7), DPGD_OK);
  dpgd_ckpt_free(c);
}

int main(void)
{
  dir = tu_tmpdir();
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_every_flip_refused),
      cmocka_unit_test(test_wrong_hash_and_missing),
      cmocka_unit_test(test_failed_write_keeps_old),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_rmtree(dir);
  free(dir);
  return rc;
}
