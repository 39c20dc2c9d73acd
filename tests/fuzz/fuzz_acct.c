/* fuzz_acct.c -- libFuzzer target for the accountant state a checkpoint carries
 * (dpgd_acct_deserialize): any byte string, as it is and with its trailing CRC-32
 * recomputed (so mutations get past the checksum to the entries), must either load
 * into an accountant that serialises back to a state that loads again to the same
 * bytes, or be refused with a status and a message -- never crash, leak or hang. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load_one(const uint8_t *data, size_t size)
{
  dpgd_accountant *a = (dpgd_accountant *)&a; /* must be reset on every path */
  dpgd_error_clear();
  int st = dpgd_acct_deserialize(&a, data, size);
  if (st != DPGD_OK) {
    if (a != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
    return;
  }
  /* Round trip: what it writes, it reads back to the same bytes. */
  void *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  dpgd_accountant *a2 = NULL;
  if (dpgd_acct_serialize(a, &b1, &n1) != DPGD_OK) __builtin_trap();
  if (dpgd_acct_deserialize(&a2, b1, n1) != DPGD_OK) __builtin_trap();
  if (dpgd_acct_serialize(a2, &b2, &n2) != DPGD_OK) __builtin_trap();
  if (n1 != n2 || memcmp(b1, b2, n1) != 0) __builtin_trap();
  if (dpgd_acct_n_releases(a) != dpgd_acct_n_releases(a2)) __builtin_trap();
  /* The cheap closed-form queries a resume makes; an answer is never below zero. */
  double mu = dpgd_acct_gdp_mu(a);
  if (mu < 0) __builtin_trap();
  dpgd_acct_value v;
  if (dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, 1e-5, &v) == DPGD_OK && !(v.value >= 0))
    __builtin_trap();
  free(b1);
  free(b2);
  dpgd_acct_free(a2);
  dpgd_acct_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_as_is_and_crc_fixed(data, size, 28, load_one);
  return 0;
}
