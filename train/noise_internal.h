/* noise_internal.h -- the keyed research streams (stream.c) and the secure sampler's
 * conversions, private to noise.c and its tests (tests/train/test_stream.c checks the
 * streams against an independent ChaCha20, test_chacha.c against libsodium's keystream;
 * test_noise.c calls the conversions at extreme inputs). */
#ifndef DPGD_NOISE_INTERNAL_H
#define DPGD_NOISE_INTERNAL_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "dpgd_train.h"

/* ---- keyed research streams (stream.c) ---- */
#define DPGD_STREAM_KEY_BYTES 32

/* Stream `stream`'s ChaCha20 key: BLAKE2b-256 keyed by the 32 seed bytes, of the text
 * "dpgd research stream v1: " and the stream's label (init, step, query, sample,
 * audit). DPGD_EINVAL for an unknown stream or when libsodium cannot start. */
int dpgd_stream_key(const dpgd_seed *seed, int stream, uint8_t key[DPGD_STREAM_KEY_BYTES]);
/* A seed derived from seed for a purpose (e.g. "audit run"): BLAKE2b-256 keyed by the 32
 * seed bytes, of the text "dpgd derived seed v1: " and the purpose, as the 32 bytes of
 * the new seed (big-endian, as dpgd_seed holds them). A PRF of the purpose: seeds that
 * differ give independent-looking derived seeds, and a derived seed is none of its
 * parent's stream keys (their texts differ). DPGD_EINVAL when libsodium cannot start or
 * the purpose is over 73 characters. */
int dpgd_stream_derive_seed(const dpgd_seed *seed, const char *purpose, dpgd_seed *out);
/* The gsl_rng_type of the streams: 32-bit words, get_double = word / 2^32. A generator
 * of it is keyed with dpgd_stream_set_key (position 0); gsl_rng_set gives the zero key. */
const gsl_rng_type *dpgd_stream_type(void);
void dpgd_stream_set_key(gsl_rng *g, const uint8_t key[DPGD_STREAM_KEY_BYTES]);
/* Words drawn so far (modulo 2^64); dpgd_stream_seek goes to any position. */
uint64_t dpgd_stream_position(const gsl_rng *g);
void dpgd_stream_seek(gsl_rng *g, uint64_t position);
/* The next n words of the stream (the words n gsl_rng_get calls would return), read
 * a buffer at a time. */
void dpgd_stream_words(gsl_rng *g, uint32_t *out, size_t n);
/* Zeroes the generator's state (key and buffered keystream) before it is freed. */
void dpgd_stream_wipe(gsl_rng *g);

#endif /* DPGD_NOISE_INTERNAL_H */
