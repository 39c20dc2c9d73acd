/* stream.c -- the keyed research streams: one 256-bit key per stream from the whole
 * master seed (BLAKE2b keyed by the seed, over the stream's label) and ChaCha20's
 * keystream under it, wrapped as a gsl_rng_type so GSL's samplers read it.
 *
 * BLAKE2b is libsodium's: constant-time, audited, tested against the RFC vectors, and
 * packaged by Debian (libsodium-dev). The keystream was libsodium's too and is now ours
 * (chacha.c) for speed: libsodium's made about 2.4 GB/s here, some 5 % of a DP-SGD step
 * at batch 256 on MNIST. It must be libsodium's crypto_stream_chacha20 keystream bit for
 * bit, and every build's tests check that it is (tests/train/test_chacha.c, with
 * libsodium as the reference). ChaCha20 is djb's variant (64-bit block counter, 64-bit
 * nonce fixed at zero; one key per stream, so no key-nonce pair repeats): word w of a
 * stream is 32-bit little-endian word w mod 16 of keystream block floor(w / 16). A
 * stream's position is the number of words drawn, which is all a checkpoint needs (the
 * key comes again from the seed). */
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_rng.h>
#include <sodium.h>

#include "chacha.h"
#include "noise_internal.h"

#define BLOCK_WORDS DPGD_CHACHA_BLOCK_WORDS
#define BUF_BLOCKS 16 /* keystream blocks computed per call (1 KiB) */
#define BUF_WORDS (BLOCK_WORDS * BUF_BLOCKS)

typedef struct {
  uint8_t key[DPGD_STREAM_KEY_BYTES];
  uint64_t block; /* the keystream block buf starts at */
  uint32_t pos;   /* next unused word of buf, <= BUF_WORDS (BUF_WORDS: all used) */
  uint32_t buf[BUF_WORDS];
} stream_state;

static const char *const stream_label[DPGD_N_STREAMS] = {"init", "step", "query", "sample",
                                                         "audit"};

int dpgd_stream_key(const dpgd_seed *seed, int stream, uint8_t key[DPGD_STREAM_KEY_BYTES])
{
  if (stream < 0 || stream >= DPGD_N_STREAMS || sodium_init() < 0) return DPGD_EINVAL;
  char msg[64];
  int len = snprintf(msg, sizeof msg, "dpgd research stream v1: %s", stream_label[stream]);
  /* crypto_generichash is BLAKE2b; keyed by the 32-byte seed it is a PRF of the label. */
  crypto_generichash(key, DPGD_STREAM_KEY_BYTES, (const unsigned char *)msg,
                     (unsigned long long)len, seed->b, sizeof seed->b);
  return DPGD_OK;
}

int dpgd_stream_derive_seed(const dpgd_seed *seed, const char *purpose, dpgd_seed *out)
{
  if (sodium_init() < 0) return DPGD_EINVAL;
  char msg[96];
  int len = snprintf(msg, sizeof msg, "dpgd derived seed v1: %s", purpose);
  if (len < 0 || (size_t)len >= sizeof msg) return DPGD_EINVAL;
  /* The same PRF as the stream keys under another prefix: no label of a stream is a
   * purpose's message, so a derived seed is never a stream key of its parent. */
  crypto_generichash(out->b, sizeof out->b, (const unsigned char *)msg, (unsigned long long)len,
                     seed->b, sizeof seed->b);
  return DPGD_OK;
}

static void fill(stream_state *s, uint64_t block)
{
  dpgd_chacha20_blocks(s->buf, BUF_BLOCKS, s->key, 0, block);
  s->block = block;
}

static void stream_set(void *vs, unsigned long seed)
{
  (void)seed; /* keyed by dpgd_stream_set_key, never by GSL's 32-bit seed */
  stream_state *s = vs;
  memset(s->key, 0, sizeof s->key);
  fill(s, 0);
  s->pos = 0;
}

static unsigned long stream_get(void *vs)
{
  stream_state *s = vs;
  if (s->pos == BUF_WORDS) {
    fill(s, s->block + BUF_BLOCKS);
    s->pos = 0;
  }
  return s->buf[s->pos++];
}

/* n words in stream order, the very words n calls of stream_get return: what is left
 * of the buffer, then the whole blocks straight into out (no copy through the buffer),
 * then a refill for the last partial block. When out ends at a block's end, the buffer
 * is marked used up (pos = BUF_WORDS, block = the next block - BUF_BLOCKS): the position
 * is right and the next read refills at the next block. */
void dpgd_stream_words(gsl_rng *g, uint32_t *out, size_t n)
{
  stream_state *s = gsl_rng_state(g);
  if (n == 0) return;
  size_t k = BUF_WORDS - s->pos < n ? BUF_WORDS - s->pos : n;
  memcpy(out, s->buf + s->pos, k * sizeof *out);
  s->pos += (uint32_t)k;
  if (n == k) return;
  out += k, n -= k;
  uint64_t next = s->block + BUF_BLOCKS; /* the buffer is used up */
  size_t whole = n / BLOCK_WORDS;
  dpgd_chacha20_blocks(out, whole, s->key, 0, next);
  next += whole, out += whole * BLOCK_WORDS, n -= whole * BLOCK_WORDS;
  if (n == 0) {
    s->block = next - BUF_BLOCKS;
    return;
  }
  fill(s, next);
  memcpy(out, s->buf, n * sizeof *out);
  s->pos = (uint32_t)n;
}

static double stream_get_double(void *vs) { return (double)stream_get(vs) / 4294967296.0; }

static const gsl_rng_type stream_type = {"dpgd-chacha20",      0xffffffffUL, 0,
                                         sizeof(stream_state), &stream_set,  &stream_get,
                                         &stream_get_double};

const gsl_rng_type *dpgd_stream_type(void) { return &stream_type; }

void dpgd_stream_set_key(gsl_rng *g, const uint8_t key[DPGD_STREAM_KEY_BYTES])
{
  stream_state *s = gsl_rng_state(g);
  memcpy(s->key, key, sizeof s->key);
  fill(s, 0);
  s->pos = 0;
}

uint64_t dpgd_stream_position(const gsl_rng *g)
{
  const stream_state *s = gsl_rng_state(g);
  return s->block * BLOCK_WORDS + s->pos;
}

/* Every 64-bit position is a valid one (block position / 16 < 2^60, well inside
 * ChaCha20's 64-bit block counter), so whatever a checkpoint gives back is accepted;
 * positions count modulo 2^64 words, which no run comes near. */
void dpgd_stream_seek(gsl_rng *g, uint64_t position)
{
  stream_state *s = gsl_rng_state(g);
  fill(s, position / BLOCK_WORDS);
  s->pos = (uint32_t)(position % BLOCK_WORDS);
}

void dpgd_stream_wipe(gsl_rng *g) { sodium_memzero(gsl_rng_state(g), gsl_rng_size(g)); }
