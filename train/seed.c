/* seed.c -- the master seed of the research streams as text and back: decimal below
 * 2^64 or 0x with up to 64 hex digits (256 bits), kept as 32 big-endian bytes so that
 * every bit of it keys the streams (noise.c). */
#include <stdio.h>
#include <string.h>

#include "dpgd_config.h"

dpgd_seed dpgd_seed_from_u64(uint64_t v)
{
  dpgd_seed s;
  memset(&s, 0, sizeof s);
  for (int k = 0; k < 8; k++) s.b[DPGD_SEED_BYTES - 1 - k] = (uint8_t)(v >> (8 * k));
  return s;
}

int dpgd_seed_to_u64(const dpgd_seed *s, uint64_t *v)
{
  for (int k = 0; k < DPGD_SEED_BYTES - 8; k++)
    if (s->b[k]) return 0;
  uint64_t x = 0;
  for (int k = DPGD_SEED_BYTES - 8; k < DPGD_SEED_BYTES; k++) x = x << 8 | s->b[k];
  *v = x;
  return 1;
}

static int hex_digit(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int parse_hex(dpgd_seed *s, const char *digits, const char *text, char *why,
                     size_t whylen)
{
  size_t n = strlen(digits);
  if (n == 0 || n > 2 * DPGD_SEED_BYTES) {
    snprintf(why, whylen, "'%.80s' is not a seed: 0x needs 1 to %d hex digits", text,
             2 * DPGD_SEED_BYTES);
    return DPGD_EINVAL;
  }
  dpgd_seed t;
  memset(&t, 0, sizeof t);
  for (size_t k = 0; k < n; k++) { /* digit k from the right is nibble k */
    int d = hex_digit(digits[n - 1 - k]);
    if (d < 0) {
      snprintf(why, whylen, "'%.80s' is not a seed: '%c' is not a hex digit", text,
               digits[n - 1 - k]);
      return DPGD_EINVAL;
    }
    t.b[DPGD_SEED_BYTES - 1 - k / 2] |= (uint8_t)(d << (4 * (k % 2)));
  }
  *s = t;
  return DPGD_OK;
}

int dpgd_seed_parse(dpgd_seed *s, const char *text, char *why, size_t whylen)
{
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    return parse_hex(s, text + 2, text, why, whylen);
  uint64_t v = 0;
  size_t k = 0;
  for (; text[k] >= '0' && text[k] <= '9'; k++) {
    unsigned d = (unsigned)(text[k] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      snprintf(why, whylen,
               "'%.80s' is not a seed: a decimal seed is below 2^64 (write a longer one "
               "as 0x and up to 64 hex digits)",
               text);
      return DPGD_EINVAL;
    }
    v = 10 * v + d;
  }
  if (k == 0 || text[k]) {
    snprintf(why, whylen,
             "'%.80s' is not a seed (a decimal integer below 2^64, or 0x and up to 64 hex "
             "digits)",
             text);
    return DPGD_EINVAL;
  }
  *s = dpgd_seed_from_u64(v);
  return DPGD_OK;
}

const char *dpgd_seed_format(const dpgd_seed *s, char buf[DPGD_SEED_TEXT_MAX])
{
  uint64_t v;
  if (dpgd_seed_to_u64(s, &v)) {
    snprintf(buf, DPGD_SEED_TEXT_MAX, "%llu", (unsigned long long)v);
    return buf;
  }
  static const char hex[] = "0123456789abcdef";
  size_t at = 0, k = 0;
  buf[at++] = '0';
  buf[at++] = 'x';
  while (k < DPGD_SEED_BYTES && !s->b[k]) k++; /* not all zero: the value is >= 2^64 */
  if (s->b[k] < 16) buf[at++] = hex[s->b[k++]];
  for (; k < DPGD_SEED_BYTES; k++) {
    buf[at++] = hex[s->b[k] >> 4];
    buf[at++] = hex[s->b[k] & 15];
  }
  buf[at] = '\0';
  return buf;
}
