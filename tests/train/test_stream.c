/* test_stream.c -- the keyed research streams against independent computations: a
 * ChaCha20 block function written here from RFC 8439 section 2.3 (checked on the RFC's
 * own vectors), keys computed by Python's hashlib (BLAKE2b), and the properties the
 * privacy argument needs: every bit of the seed changes every stream, the labels give
 * distinct streams, a checkpointed position continues the stream, a bad state is refused,
 * a run's initial parameters are the init keystream's words, the bulk read gives the
 * keystream's words in order; derived seeds (dpgd audit's run seed); plus train.seed's text
 * (decimal below 2^64, 0x and up to 64 hex digits). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_train.h"
#include "noise_internal.h"

/* ---- reference ChaCha20 (RFC 8439 section 2.3, djb's 64-bit counter layout) ---- */
static uint32_t rotl(uint32_t x, int n) { return x << n | x >> (32 - n); }

static void qr(uint32_t *x, int a, int b, int c, int d)
{
  x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 16);
  x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 12);
  x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 8);
  x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 7);
}

static uint32_t le32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The 16 output words of block `counter` under key and an 8-byte nonce: state words 12
 * and 13 are the counter (low, high), 14 and 15 the nonce. */
static void ref_block(const uint8_t key[32], const uint8_t nonce[8], uint64_t counter,
                      uint32_t out[16])
{
  uint32_t s[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int k = 0; k < 8; k++) s[4 + k] = le32(key + 4 * k);
  s[12] = (uint32_t)counter, s[13] = (uint32_t)(counter >> 32);
  s[14] = le32(nonce), s[15] = le32(nonce + 4);
  uint32_t x[16];
  memcpy(x, s, sizeof x);
  for (int r = 0; r < 10; r++) {
    qr(x, 0, 4, 8, 12), qr(x, 1, 5, 9, 13), qr(x, 2, 6, 10, 14), qr(x, 3, 7, 11, 15);
    qr(x, 0, 5, 10, 15), qr(x, 1, 6, 11, 12), qr(x, 2, 7, 8, 13), qr(x, 3, 4, 9, 14);
  }
  for (int k = 0; k < 16; k++) out[k] = x[k] + s[k];
}

static void hex_bytes(const char *hex, uint8_t *out, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    unsigned v;
    assert_int_equal(sscanf(hex + 2 * k, "%2x", &v), 1);
    out[k] = (uint8_t)v;
  }
}

/* RFC 8439 section 2.3.2 (key 00..1f, nonce 000000090000004a00000000, counter 1): in the
 * 64-bit layout the IETF counter word 1 and nonce word 0x09000000 form counter
 * 0x0900000000000001, the remaining nonce bytes 0000004a00000000. And appendix A.1 test
 * vector 1 (zero key, nonce, counter). */
static void test_reference_chacha_rfc(void **state)
{
  (void)state;
  uint8_t key[32], nonce[8] = {0, 0, 0, 0x4a, 0, 0, 0, 0}, want[64];
  for (int k = 0; k < 32; k++) key[k] = (uint8_t)k;
  hex_bytes("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
            want, 64);
  uint32_t got[16];
  ref_block(key, nonce, 0x0900000000000001ULL, got);
  for (int k = 0; k < 16; k++) assert_int_equal(got[k], le32(want + 4 * k));
  memset(key, 0, sizeof key);
  memset(nonce, 0, sizeof nonce);
  hex_bytes("76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
            "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586",
            want, 64);
  ref_block(key, nonce, 0, got);
  for (int k = 0; k < 16; k++) assert_int_equal(got[k], le32(want + 4 * k));
}

static const char *const seed_hex =
    "0x0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4c3d2e1f0";

/* Keys by Python, independently of libsodium:
 *   hashlib.blake2b(b"dpgd research stream v1: step", digest_size=32, key=seed).hexdigest()
 * with seed the 32 big-endian bytes of seed_hex (and of 1). */
static void test_stream_keys(void **state)
{
  (void)state;
  static const struct {
    const char *seed;
    int stream;
    const char *key;
  } cases[] = {
      {NULL, DPGD_STREAM_STEP,
       "a3388d4b896bea3b8036a22cdfc41d376bfccf8bdaa1c648ec1118cb8e1e80f9"},
      {NULL, DPGD_STREAM_INIT,
       "3581512794cb3ec6611ca147b8384e1e7dfa5426fe15182276f358be427dd067"},
      {"1", DPGD_STREAM_STEP,
       "35f645df5d0d904971231e0743069d0d56b26e632320c04cda992b52186ca07b"},
  };
  char why[200];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    dpgd_seed s;
    assert_int_equal(
        dpgd_seed_parse(&s, cases[c].seed ? cases[c].seed : seed_hex, why, sizeof why),
        DPGD_OK);
    uint8_t key[DPGD_STREAM_KEY_BYTES], want[DPGD_STREAM_KEY_BYTES];
    assert_int_equal(dpgd_stream_key(&s, cases[c].stream, key), DPGD_OK);
    hex_bytes(cases[c].key, want, sizeof want);
    assert_memory_equal(key, want, sizeof key);
  }
  dpgd_seed s = dpgd_seed_from_u64(1);
  uint8_t key[DPGD_STREAM_KEY_BYTES];
  assert_int_equal(dpgd_stream_key(&s, DPGD_N_STREAMS, key), DPGD_EINVAL);
}

/* Derived seeds (dpgd audit's run seed) by Python, independently of libsodium:
 *   hashlib.blake2b(b"dpgd derived seed v1: audit run", digest_size=32, key=seed)
 * with seed the 32 big-endian bytes of 1 and of 2385; the derived seed is neither the
 * parent nor any of its stream keys, and a purpose too long is refused. */
static void test_derived_seed(void **state)
{
  (void)state;
  static const struct {
    uint64_t seed;
    const char *want;
  } cases[] = {
      {1, "bc24871f9e0da164cc650b30373585b4eb25d3aa0b5048aa9d5aea9aabf615dd"},
      {2385, "b6a71dce25225abcb30ff0f6f429394cdd4991011c8d7eb914ac0ff21278f75d"},
  };
  for (size_t c = 0; c < 2; c++) {
    dpgd_seed s = dpgd_seed_from_u64(cases[c].seed), d;
    uint8_t want[32], key[DPGD_STREAM_KEY_BYTES];
    assert_int_equal(dpgd_stream_derive_seed(&s, "audit run", &d), DPGD_OK);
    hex_bytes(cases[c].want, want, sizeof want);
    assert_memory_equal(d.b, want, sizeof want);
    assert_memory_not_equal(d.b, s.b, sizeof d.b);
    for (int k = 0; k < DPGD_N_STREAMS; k++) {
      assert_int_equal(dpgd_stream_key(&s, k, key), DPGD_OK);
      assert_memory_not_equal(d.b, key, sizeof key);
    }
  }
  char longer[80];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  dpgd_seed s = dpgd_seed_from_u64(1), d;
  assert_int_equal(dpgd_stream_derive_seed(&s, longer, &d), DPGD_EINVAL);
}

/* seed_hex parsed, and one of its stream keys from hex. */
static void seed_and_key(dpgd_seed *s, const char *key_hex, uint8_t key[32])
{
  char why[200];
  assert_int_equal(dpgd_seed_parse(s, seed_hex, why, sizeof why), DPGD_OK);
  hex_bytes(key_hex, key, 32);
}

/* The step stream of seed_hex, word by word, is the reference keystream under its key
 * (little-endian words, zero nonce, blocks from 0; dpgd_rng_u64 = word 2j << 32 | word
 * 2j+1), across dpgd's 1 KiB refills; a stream restored at a position far out continues
 * the keystream from there. */
static void test_stream_known_answer(void **state)
{
  (void)state;
  dpgd_seed s;
  uint8_t key[32], nonce[8] = {0};
  seed_and_key(&s, "a3388d4b896bea3b8036a22cdfc41d376bfccf8bdaa1c648ec1118cb8e1e80f9", key);
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, &s, DPGD_STREAM_STEP);
  assert_non_null(r);
  enum { BLOCKS = 40 }; /* 640 words: two and a half refills */
  for (uint64_t b = 0; b < BLOCKS; b++) {
    uint32_t w[16];
    ref_block(key, nonce, b, w);
    for (int k = 0; k < 16; k += 2) {
      uint64_t u;
      assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
      assert_true(u == ((uint64_t)w[k] << 32 | w[k + 1]));
    }
  }
  /* A checkpoint state at word 16 * 1000003 + 6: the tag and the position. */
  uint64_t pos = 16 * 1000003ULL + 6;
  unsigned char st[16];
  assert_int_equal(dpgd_rng_state_size(r), sizeof st);
  memcpy(st, "dpgdcc20", 8);
  memcpy(st + 8, &pos, 8);
  assert_int_equal(dpgd_rng_state_set(r, st, sizeof st), DPGD_OK);
  uint32_t w[16], w2[16];
  ref_block(key, nonce, 1000003, w);
  ref_block(key, nonce, 1000004, w2);
  uint64_t u;
  for (int k = 6; k < 16; k += 2) {
    assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
    assert_true(u == ((uint64_t)w[k] << 32 | w[k + 1]));
  }
  assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
  assert_true(u == ((uint64_t)w2[0] << 32 | w2[1]));
  unsigned char back[16];
  dpgd_rng_state_get(r, back);
  pos += 12;
  assert_memory_equal(back + 8, &pos, 8);
  dpgd_rng_free(r);
}

/* dpgd_stream_words (the bulk read behind Poisson sampling) gives the reference
 * keystream's words in order, for reads of 1 word up to several refills, starting inside
 * and at the end of a refill, and leaves the position where word-by-word reads would. */
static void test_stream_words(void **state)
{
  (void)state;
  dpgd_seed s;
  uint8_t key[32], nonce[8] = {0};
  seed_and_key(&s, "a3388d4b896bea3b8036a22cdfc41d376bfccf8bdaa1c648ec1118cb8e1e80f9", key);
  gsl_rng *g = gsl_rng_alloc(dpgd_stream_type());
  assert_non_null(g);
  dpgd_stream_set_key(g, key);
  static const size_t len[] = {1, 3, 252, 256, 257, 1, 600, 4097, 255};
  uint32_t *got = malloc(4097 * sizeof *got);
  assert_non_null(got);
  uint64_t pos = 0;
  for (size_t c = 0; c < sizeof len / sizeof len[0]; c++) {
    dpgd_stream_words(g, got, len[c]);
    for (size_t k = 0; k < len[c]; k++) {
      uint32_t w[16];
      ref_block(key, nonce, (pos + k) / 16, w);
      assert_true(got[k] == w[(pos + k) % 16]);
    }
    pos += len[c];
    assert_true(dpgd_stream_position(g) == pos);
  }
  uint32_t w[16];
  ref_block(key, nonce, pos / 16, w);
  assert_true(gsl_rng_get(g) == w[pos % 16]); /* word by word continues from there */
  free(got);
  gsl_rng_free(g);
}

static void first_words(const dpgd_seed *s, int stream, uint64_t out[8])
{
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, s, stream);
  assert_non_null(r);
  for (int k = 0; k < 8; k++) assert_int_equal(dpgd_rng_u64(r, &out[k]), DPGD_OK);
  dpgd_rng_free(r);
}

/* Every bit of the seed matters: seeds equal in their low 32, 64 or 255 bits give
 * different streams (each bit flipped in turn), and so do 31121 and 42995, which the
 * MT19937 streams before (seeded with a 32-bit fold of the seed) could not tell apart:
 * their step streams were the same. */
static void test_seed_bits_matter(void **state)
{
  (void)state;
  char why[200];
  dpgd_seed base;
  assert_int_equal(dpgd_seed_parse(&base, seed_hex, why, sizeof why), DPGD_OK);
  uint64_t a[8], b[8];
  first_words(&base, DPGD_STREAM_STEP, a);
  for (int bit = 0; bit < 8 * DPGD_SEED_BYTES; bit++) {
    dpgd_seed t = base;
    t.b[DPGD_SEED_BYTES - 1 - bit / 8] ^= (uint8_t)(1u << (bit % 8));
    first_words(&t, DPGD_STREAM_STEP, b);
    if (!memcmp(a, b, sizeof a)) fail_msg("seed bit %d does not change the stream", bit);
  }
  dpgd_seed x = dpgd_seed_from_u64(31121), y = dpgd_seed_from_u64(42995);
  first_words(&x, DPGD_STREAM_STEP, a);
  first_words(&y, DPGD_STREAM_STEP, b);
  assert_memory_not_equal(a, b, sizeof a);
}

/* A run's initial parameters (dpgd_rng_init_model) against the reference keystream
 * under the init key that Python's hashlib gives for seed_hex: parameter j of the
 * 28 x 28 softmax (7850, all of fan-in 784) is (2u - 1)/28 with u = (w >> 11) 2^-53, w
 * = word 2j << 32 | word 2j + 1 of the keystream, blocks from 0, across refills. */
static void test_init_known_answer(void **state)
{
  (void)state;
  dpgd_seed s;
  uint8_t key[32], nonce[8] = {0};
  seed_and_key(&s, "3581512794cb3ec6611ca147b8384e1e7dfa5426fe15182276f358be427dd067", key);
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  assert_non_null(m);
  size_t P = dpgd_model_n_params(m);
  assert_int_equal(P, 7850);
  assert_int_equal(dpgd_rng_init_model(m, DPGD_RNG_RESEARCH, &s), DPGD_OK);
  const float *p = dpgd_model_params_const(m);
  uint32_t w[16];
  for (size_t j = 0; j < P; j++) {
    if (j % 8 == 0) ref_block(key, nonce, j / 8, w);
    uint64_t u64 = (uint64_t)w[2 * (j % 8)] << 32 | w[2 * (j % 8) + 1];
    float want = (float)((2.0 * ((double)(u64 >> 11) * 0x1p-53) - 1.0) / 28.0);
    if (memcmp(&p[j], &want, sizeof want))
      fail_msg("parameter %zu: %.9g, the reference keystream gives %.9g", j, p[j], want);
  }
  dpgd_model_free(m);
}

/* The five labels give five different streams of one seed (the seed 1 and seed_hex). */
static void test_labels_differ(void **state)
{
  (void)state;
  char why[200];
  dpgd_seed seeds[2] = {dpgd_seed_from_u64(1)};
  assert_int_equal(dpgd_seed_parse(&seeds[1], seed_hex, why, sizeof why), DPGD_OK);
  for (int s = 0; s < 2; s++) {
    uint64_t w[DPGD_N_STREAMS][8];
    for (int k = 0; k < DPGD_N_STREAMS; k++) first_words(&seeds[s], k, w[k]);
    for (int i = 0; i < DPGD_N_STREAMS; i++)
      for (int j = i + 1; j < DPGD_N_STREAMS; j++)
        assert_memory_not_equal(w[i], w[j], sizeof w[i]);
  }
  assert_null(dpgd_rng_alloc(DPGD_RNG_RESEARCH, NULL, DPGD_STREAM_STEP));
  assert_null(dpgd_rng_alloc(DPGD_RNG_RESEARCH, &seeds[0], -1));
}

/* A state of another kind is refused with one line: an older dpgd's MT19937 state (by
 * its length, naming it), a wrong tag; every position is one (the largest included), and
 * what a stream gives back after drawing past it is accepted again. */
static void test_state_refused(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_STEP);
  unsigned char st[16], *mt = calloc(1, 5008);
  dpgd_rng_state_get(r, st);
  assert_int_equal(dpgd_rng_state_set(r, mt, 5008), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "MT19937"));
  assert_null(strchr(dpgd_error_last(), '\n'));
  assert_int_equal(dpgd_rng_state_set(r, st, 15), DPGD_EFORMAT);
  st[3] ^= 1;
  assert_int_equal(dpgd_rng_state_set(r, st, 16), DPGD_EFORMAT);
  st[3] ^= 1;
  uint64_t far = UINT64_MAX - 5, u;
  memcpy(st + 8, &far, 8);
  assert_int_equal(dpgd_rng_state_set(r, st, 16), DPGD_OK);
  for (int k = 0; k < 300; k++) assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
  dpgd_rng_state_get(r, st);
  assert_int_equal(dpgd_rng_state_set(r, st, 16), DPGD_OK);
  free(mt);
  dpgd_rng_free(r);
}

/* train.seed's text: decimal below 2^64, 0x and 1..64 hex digits; the value round-trips
 * through dpgd_seed_format; anything else is refused with a reason. */
static void test_seed_text(void **state)
{
  (void)state;
  static const struct {
    const char *in, *out;
  } ok[] = {
      {"0", "0"},
      {"18446744073709551615", "18446744073709551615"},
      {"0xffffffffffffffff", "18446744073709551615"},
      {"0x10000000000000000", "0x10000000000000000"},
      {"0X00000000000000000000000000000001AbCd", "109517"},
      {"0x00000000000000000000000000000001AbCd0000000000000000", "0x1abcd0000000000000000"},
      {"0x0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4c3d2e1f0",
       "0x123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4c3d2e1f0"},
  };
  char why[200], buf[DPGD_SEED_TEXT_MAX];
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    dpgd_seed s, t;
    assert_int_equal(dpgd_seed_parse(&s, ok[k].in, why, sizeof why), DPGD_OK);
    dpgd_seed_format(&s, buf);
    assert_string_equal(buf, ok[k].out);
    assert_int_equal(dpgd_seed_parse(&t, buf, why, sizeof why), DPGD_OK);
    assert_memory_equal(&s, &t, sizeof s);
  }
  static const char *const bad[] = {"",
                                    "18446744073709551616",
                                    "-1",
                                    "+1",
                                    " 1",
                                    "1 ",
                                    "0x",
                                    "0xg",
                                    "1e3",
                                    "12a",
                                    "0x1" /* 65 digits: */ "00000000000000000000000000000000000"
                                    "00000000000000000000000000000"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    dpgd_seed s = dpgd_seed_from_u64(5);
    why[0] = '\0';
    assert_int_equal(dpgd_seed_parse(&s, bad[k], why, sizeof why), DPGD_EINVAL);
    assert_true(strlen(why) > 0);
    uint64_t v = 0;
    assert_true(dpgd_seed_to_u64(&s, &v) && v == 5); /* unchanged */
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_chacha_rfc), cmocka_unit_test(test_stream_keys),
      cmocka_unit_test(test_init_known_answer),    cmocka_unit_test(test_stream_known_answer),
      cmocka_unit_test(test_seed_bits_matter),     cmocka_unit_test(test_labels_differ),
      cmocka_unit_test(test_state_refused),        cmocka_unit_test(test_seed_text),
      cmocka_unit_test(test_stream_words),         cmocka_unit_test(test_derived_seed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
