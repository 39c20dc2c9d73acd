/* test_chacha.c -- dpgd's ChaCha20 keystream (train/chacha.c) is libsodium's, bit for bit,
 * on every path the CPU has (scalar, AVX2, AVX-512F, each forced in turn; a path the CPU
 * lacks is skipped with a message): the test vectors of draft-agl-tls-chacha20poly1305-04
 * section 7 (djb's variant: 64-bit nonce and counter), libsodium's
 * crypto_stream_chacha20_xor_ic on random keys, nonces, start counters (0, small, 2^32 - 3
 * with the carry from word 12 into word 13, 2^63) and lengths of 1 to 100 blocks; and the
 * research streams built on it (dpgd_stream_words, gsl_rng_get, a checkpoint's position
 * restored) give libsodium's keystream words at every position, across the stream's
 * buffer boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "chacha.h"
#include "noise_internal.h"

static const int paths[] = {DPGD_CHACHA_SCALAR, DPGD_CHACHA_AVX2, DPGD_CHACHA_AVX512};
static const char *const path_name[] = {"auto", "scalar", "avx2", "avx512"};

/* Forces path p; 0 (with a message) where the CPU lacks it. */
static int use_path(int p)
{
  if (dpgd_chacha20_force(p)) return 1;
  printf("test_chacha: the CPU has no %s path; skipped\n", path_name[p]);
  return 0;
}

static uint32_t le32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void hex_bytes(const char *hex, uint8_t *out, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    unsigned v;
    assert_int_equal(sscanf(hex + 2 * k, "%2x", &v), 1);
    out[k] = (uint8_t)v;
  }
}

/* splitmix64: random keys, nonces and lengths, the same in every run (a failure repeats). */
static uint64_t mix(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ z >> 27) * 0x94d049bb133111ebULL;
  return z ^ z >> 31;
}

static void random_key(uint64_t *x, uint8_t key[32])
{
  for (int k = 0; k < 4; k++) {
    uint64_t v = mix(x);
    memcpy(key + 8 * k, &v, 8);
  }
}

/* libsodium's keystream: n bytes from block `counter` under key and the nonce's 8
 * little-endian bytes. */
static void sodium_keystream(uint8_t *out, size_t n, const uint8_t key[32], uint64_t nonce,
                             uint64_t counter)
{
  uint8_t nb[8];
  for (int k = 0; k < 8; k++) nb[k] = (uint8_t)(nonce >> 8 * k);
  memset(out, 0, n);
  assert_int_equal(crypto_stream_chacha20_xor_ic(out, out, n, nb, counter, key), 0);
}

/* nblocks of dpgd_chacha20_blocks (on the path in force) equal libsodium's keystream,
 * and nothing past them is written. */
static void check_blocks(const uint8_t key[32], uint64_t nonce, uint64_t counter,
                         size_t nblocks)
{
  size_t nw = 16 * nblocks;
  uint32_t *got = malloc((nw + 16) * sizeof *got);
  uint8_t *want = malloc(4 * nw);
  assert_non_null(got);
  assert_non_null(want);
  for (size_t w = 0; w < nw + 16; w++) got[w] = 0xdeadbeef;
  dpgd_chacha20_blocks(got, nblocks, key, nonce, counter);
  sodium_keystream(want, 4 * nw, key, nonce, counter);
  for (size_t w = 0; w < nw; w++)
    if (got[w] != le32(want + 4 * w))
      fail_msg("counter %llu, %zu blocks: word %zu is %08x, libsodium's %08x",
               (unsigned long long)counter, nblocks, w, got[w], le32(want + 4 * w));
  for (size_t w = nw; w < nw + 16; w++) assert_int_equal(got[w], 0xdeadbeef);
  free(got);
  free(want);
}

/* draft-agl-tls-chacha20poly1305-04 section 7: key, nonce (bytes as written there) and the
 * keystream from block 0. */
static void test_draft_vectors(void **state)
{
  (void)state;
  static const struct {
    const char *key, *nonce, *stream;
  } tv[] = {
      {"0000000000000000000000000000000000000000000000000000000000000000", "0000000000000000",
       "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
       "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669"},
      {"0000000000000000000000000000000000000000000000000000000000000001", "0000000000000000",
       "4540f05a9f1fb296d7736e7b208e3c96eb4fe1834688d2604f450952ed432d41"
       "bbe2a0b6ea7566d2a5d1e7e20d42af2c53d792b1c43fea817e9ad275ae546963"},
      {"0000000000000000000000000000000000000000000000000000000000000000", "0000000000000001",
       "de9cba7bf3d69ef5e786dc63973f653a0b49e015adbff7134fcb7df137821031"
       "e85a050278a7084527214f73efc7fa5b5277062eb7a0433e445f41e3"},
      {"0000000000000000000000000000000000000000000000000000000000000000", "0100000000000000",
       "ef3fdfd6c61578fbf5cf35bd3dd33b8009631634d21e42ac33960bd138e50d32"
       "111e4caf237ee53ca8ad6426194a88545ddc497a0b466e7d6bbdb0041b2f586b"},
      {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "0001020304050607",
       "f798a189f195e66982105ffb640bb7757f579da31602fc93ec01ac56f85ac3c1"
       "34a4547b733b46413042c9440049176905d3be59ea1c53f15916155c2be8241a"
       "38008b9a26bc35941e2444177c8ade6689de95264986d95889fb60e84629c9bd"
       "9a5acb1cc118be563eb9b3a4a472f82e09a7e778492b562ef7130e88dfe031c7"
       "9db9d4f7c7a899151b9a475032b63fc385245fe054e3dd5a97a5f576fe064025"
       "d3ce042c566ab2c507b138db853e3d6959660996546cc9c4a6eafdc777c040d7"
       "0eaf46f76dad3979e5c5360c3317166a1c894c94a371876a94df7628fe4eaaf2"
       "ccb27d5aaae0ad7ad0f9d4b6ad3b54098746d4524d38407a6deb3ab78fab78c9"},
  };
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    if (!use_path(paths[p])) continue;
    for (size_t t = 0; t < sizeof tv / sizeof tv[0]; t++) {
      uint8_t key[32], nb[8], want[256];
      uint32_t got[64];
      size_t n = strlen(tv[t].stream) / 2;
      hex_bytes(tv[t].key, key, 32);
      hex_bytes(tv[t].nonce, nb, 8);
      hex_bytes(tv[t].stream, want, n);
      dpgd_chacha20_blocks(got, (n + 63) / 64, key, le32(nb) | (uint64_t)le32(nb + 4) << 32, 0);
      for (size_t w = 0; w < n / 4; w++)
        if (got[w] != le32(want + 4 * w))
          fail_msg("%s path, vector %zu: word %zu is %08x, the draft's %08x",
                   path_name[paths[p]], t + 1, w, got[w], le32(want + 4 * w));
    }
  }
  dpgd_chacha20_force(DPGD_CHACHA_AUTO);
}

/* Random keys and nonces (and the zero nonce of the streams), start counters 0, small,
 * 2^32 - 3 and 2^63, lengths 1 to 100 blocks (most neither multiples of 8 nor of 16). */
static void test_paths_equal_libsodium(void **state)
{
  (void)state;
  static const uint64_t counter[] = {0, 5, 0xfffffffdULL, 1ULL << 63};
  static const size_t len[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47, 64, 99, 100};
  uint64_t x = 20261129;
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    if (!use_path(paths[p])) continue;
    for (size_t c = 0; c < sizeof counter / sizeof counter[0]; c++)
      for (size_t l = 0; l < sizeof len / sizeof len[0]; l++) {
        uint8_t key[32];
        random_key(&x, key);
        check_blocks(key, l % 2 ? mix(&x) : 0, counter[c], len[l]);
      }
    for (int r = 0; r < 20; r++) { /* random counters of every size, random lengths */
      uint8_t key[32];
      random_key(&x, key);
      uint64_t c = mix(&x), shift = mix(&x) % 64;
      check_blocks(key, 0, c >> shift, 1 + mix(&x) % 100);
    }
  }
  dpgd_chacha20_force(DPGD_CHACHA_AUTO);
}

/* The carry from word 12 into word 13: 8 blocks from 2^32 - 3 are libsodium's, and blocks
 * 2^32 .. 2^32 + 4 are the single blocks at those counters (words 12, 13 = 0, 1 .. 4, 1)
 * that the scalar path computes one by one, not libsodium's reading of the carry. */
static void test_counter_carry(void **state)
{
  (void)state;
  uint8_t key[32];
  for (int k = 0; k < 32; k++) key[k] = (uint8_t)(7 * k + 1);
  const uint64_t start = 0xfffffffdULL;
  uint32_t single[5][16];
  assert_true(dpgd_chacha20_force(DPGD_CHACHA_SCALAR));
  for (int b = 0; b < 5; b++) dpgd_chacha20_blocks(single[b], 1, key, 0, (1ULL << 32) + b);
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    if (!use_path(paths[p])) continue;
    check_blocks(key, 0, start, 8);
    uint32_t got[8 * 16];
    dpgd_chacha20_blocks(got, 8, key, 0, start);
    for (int b = 0; b < 5; b++) assert_memory_equal(got + 16 * (3 + b), single[b], 64);
    assert_memory_not_equal(got, got + 16 * 4, 64); /* no block repeats: the carry is taken */
  }
  dpgd_chacha20_force(DPGD_CHACHA_AUTO);
}

/* Word `pos` of the stream under key: libsodium's keystream word pos mod 16 of block
 * floor(pos / 16), zero nonce. */
static uint32_t sodium_word(const uint8_t key[32], uint64_t pos)
{
  uint8_t b[64];
  sodium_keystream(b, sizeof b, key, 0, pos / 16);
  return le32(b + 4 * (pos % 16));
}

/* n words of the stream from its position, read by dpgd_stream_words (or one by one by
 * gsl_rng_get), against libsodium's; the position after them. */
static void read_and_check(gsl_rng *g, const uint8_t key[32], size_t n, int by_get)
{
  uint64_t pos = dpgd_stream_position(g);
  uint32_t *got = malloc((n + 1) * sizeof *got);
  uint8_t *want = malloc(64 * (n / 16 + 2));
  assert_non_null(got);
  assert_non_null(want);
  if (by_get) {
    for (size_t k = 0; k < n; k++) got[k] = (uint32_t)gsl_rng_get(g);
  } else {
    dpgd_stream_words(g, got, n);
  }
  sodium_keystream(want, 64 * (n / 16 + 2), key, 0, pos / 16);
  for (size_t k = 0; k < n; k++)
    if (got[k] != le32(want + 4 * (pos % 16 + k)))
      fail_msg("word %llu of the stream: %08x, libsodium's %08x", (unsigned long long)(pos + k),
               got[k], le32(want + 4 * (pos % 16 + k)));
  assert_true(dpgd_stream_position(g) == pos + n);
  free(got);
  free(want);
}

/* Reads of every size against the 1 KiB buffer (256 words): inside it, to its end, past
 * it, whole blocks straight into the caller's array (ending at a block's end, then word
 * by word, then inside a block), several buffers at once; positions restored by seek
 * and by a checkpoint state far out (2^40 blocks) and near the counter's carry. */
static void stream_reads(const uint8_t key[32])
{
  gsl_rng *g = gsl_rng_alloc(dpgd_stream_type());
  assert_non_null(g);
  dpgd_stream_set_key(g, key);
  static const size_t len[] = {1,    3,   252,  256, 32,  5,  11, 16,
                               1024, 257, 4097, 1,   600, 48, 0,  7};
  for (int by_get = 0; by_get < 2; by_get++) {
    dpgd_stream_seek(g, 0);
    for (size_t c = 0; c < sizeof len / sizeof len[0]; c++)
      read_and_check(g, key, len[c], by_get || c % 5 == 4);
  }
  static const uint64_t at[] = {16 * 1000003ULL + 6, (16ULL << 40) + 255,
                                16 * 0xfffffffdULL + 9, 0};
  for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
    dpgd_stream_seek(g, at[a]);
    read_and_check(g, key, 1, 1);
    read_and_check(g, key, 16 * 40 - 1, 0);
    read_and_check(g, key, 300, 0);
    read_and_check(g, key, 40, 1);
  }
  gsl_rng_free(g);
}

/* The streams on every path: a key from a seed (as a run makes it) and a random one; the
 * Poisson sampler's words (high word first) and a checkpoint state's position restored
 * through dpgd_rng_state_set. */
static void test_stream_words_libsodium(void **state)
{
  (void)state;
  dpgd_seed seed = dpgd_seed_from_u64(2385);
  uint8_t key[DPGD_STREAM_KEY_BYTES], rkey[DPGD_STREAM_KEY_BYTES];
  assert_int_equal(dpgd_stream_key(&seed, DPGD_STREAM_SAMPLE, key), DPGD_OK);
  uint64_t x = 42;
  random_key(&x, rkey);
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    if (!use_path(paths[p])) continue;
    stream_reads(key);
    stream_reads(rkey);
    dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, &seed, DPGD_STREAM_SAMPLE);
    assert_non_null(r);
    enum { N = 1500 }; /* three of the sampler's blocks of 512 points, the last partial */
    unsigned char in[N];
    size_t count;
    const double q = 0.3;
    assert_int_equal(dpgd_rng_sample_poisson(r, q, in, N, &count), DPGD_OK);
    for (size_t i = 0; i < N; i++) {
      uint64_t w = (uint64_t)sodium_word(key, 2 * i) << 32 | sodium_word(key, 2 * i + 1);
      assert_int_equal(in[i], w < (uint64_t)(q * 0x1p64));
    }
    unsigned char st[16];
    uint64_t pos = 16 * 77ULL + 13;
    memcpy(st, "dpgdcc20", 8);
    memcpy(st + 8, &pos, 8);
    assert_int_equal(dpgd_rng_state_set(r, st, sizeof st), DPGD_OK);
    uint64_t u;
    assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
    assert_true(u == ((uint64_t)sodium_word(key, pos) << 32 | sodium_word(key, pos + 1)));
    dpgd_rng_free(r);
  }
  dpgd_chacha20_force(DPGD_CHACHA_AUTO);
}

int main(void)
{
  if (sodium_init() < 0) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_draft_vectors),
      cmocka_unit_test(test_paths_equal_libsodium),
      cmocka_unit_test(test_counter_carry),
      cmocka_unit_test(test_stream_words_libsodium),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
