/* fuzz_ckpt.c -- libFuzzer target for the checkpoint container (dpgd_ckpt_read) and the
 * sections a resume hands on to other parsers: "acct" to dpgd_acct_deserialize,
 * "rngstep"/"rngquery" to dpgd_rng_state_set (then draws from the stream), "filter" to
 * dpgd_ledger_load and "spend" (older checkpoints) to a ledger and dpgd_ledger_check. Each input is read twice: as it is (the config hash taken
 * from the file, so only the checks before the checksum decide), and with its CRC-32
 * recomputed, so the mutations reach the section table and the sections behind it.
 * Any crash, sanitizer report, leak or status without a message is a bug. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpgd_train.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

#define HEADER_LEN 32 /* "DPGDCKPT", version, byte-order mark, config hash, n_sections */

static void check_status(int st)
{
  if (st != DPGD_OK && dpgd_error_last()[0] == '\0') __builtin_trap();
}

static void rng_section(const dpgd_ckpt *c, const char *name, int stream)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(c, name, 0, &d, &len) != DPGD_OK) return;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, stream);
  if (!r) return;
  dpgd_error_clear();
  int st = dpgd_rng_state_set(r, d, len);
  check_status(st);
  if (st == DPGD_OK) {
    uint64_t u;
    double x[8] = {0};
    for (int k = 0; k < 4; k++) dpgd_rng_u64(r, &u);
    dpgd_rng_gaussian_add(r, 2.385, x, 8);
    for (int k = 0; k < 8; k++)
      if (!isfinite(x[k])) __builtin_trap();
  }
  dpgd_rng_free(r);
}

static void acct_section(const dpgd_ckpt *c)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(c, "acct", 0, &d, &len) != DPGD_OK) return;
  dpgd_accountant *a = (dpgd_accountant *)&a; /* must be reset on every path */
  dpgd_error_clear();
  int st = dpgd_acct_deserialize(&a, d, len);
  check_status(st);
  if (st != DPGD_OK && a != NULL) __builtin_trap();
  if (st == DPGD_OK) {
    (void)dpgd_acct_gdp_mu(a);
    (void)dpgd_acct_n_releases(a);
    dpgd_acct_free(a);
  }
}

static void spend_section(const dpgd_ckpt *c)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(c, "spend", 0, &d, &len) != DPGD_OK || len < sizeof(double)) return;
  dpgd_ledger *l = dpgd_ledger_alloc(len / sizeof(double), 1, 2.385, 11.2);
  if (!l) return;
  memcpy(l->spend, d, l->n * sizeof(double));
  dpgd_error_clear();
  check_status(dpgd_ledger_check(l));
  (void)dpgd_ledger_active(l);
  dpgd_ledger_free(l);
}

static void filter_section(const dpgd_ckpt *c)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(c, "filter", 0, &d, &len) != DPGD_OK) return;
  dpgd_ledger *l = dpgd_ledger_alloc(4, 1, 2.385, 11.2);
  if (!l) return;
  dpgd_error_clear();
  int st = dpgd_ledger_load(l, d, len);
  check_status(st);
  if (dpgd_ledger_check(l) != DPGD_OK) __builtin_trap(); /* loaded or unchanged: valid */
  (void)dpgd_ledger_active(l);
  dpgd_ledger_free(l);
}

static void read_one(const uint8_t *data, size_t size)
{
  uint64_t hash = 0;
  if (size >= HEADER_LEN) memcpy(&hash, data + 16, sizeof hash);
  const char *path = fuzz_temp_file(data, size, ".ckpt");
  if (!path) return;
  dpgd_ckpt *c = (dpgd_ckpt *)&c; /* must be reset on every path */
  dpgd_error_clear();
  int st = dpgd_ckpt_read(&c, path, hash);
  unlink(path);
  check_status(st);
  if (st != DPGD_OK) {
    if (c != NULL) __builtin_trap();
    return;
  }
  const void *d;
  size_t len;
  static const char *names[] = {"meta", "replay", "data", "params", "best", "row", "x"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    dpgd_error_clear();
    if (dpgd_ckpt_get(c, names[k], 0, &d, &len) == DPGD_OK) {
      uint8_t sum = 0; /* reads the section: ASan checks it lies in the file */
      for (size_t j = 0; j < len; j++) sum += ((const uint8_t *)d)[j];
      sink = sum;
      check_status(dpgd_ckpt_get(c, names[k], len + 1, &d, NULL));
    } else {
      check_status(DPGD_EFORMAT);
    }
  }
  acct_section(c);
  rng_section(c, "rngstep", DPGD_STREAM_STEP);
  rng_section(c, "rngquery", DPGD_STREAM_QUERY);
  spend_section(c);
  filter_section(c);
  dpgd_ckpt_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_as_is_and_crc_fixed(data, size, HEADER_LEN + 4, read_one);
  return 0;
}
