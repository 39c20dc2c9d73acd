/* chacha.h -- ChaCha20's keystream (djb's variant) for the research streams (stream.c),
 * private to train/ and its tests (tests/train/test_chacha.c). */
#ifndef DPGD_CHACHA_H
#define DPGD_CHACHA_H

#include <stddef.h>
#include <stdint.h>

#define DPGD_CHACHA_KEY_BYTES 32
#define DPGD_CHACHA_BLOCK_WORDS 16

/* The code paths of dpgd_chacha20_blocks; AUTO is the fastest one the CPU has. */
enum { DPGD_CHACHA_AUTO, DPGD_CHACHA_SCALAR, DPGD_CHACHA_AVX2, DPGD_CHACHA_AVX512 };

/* Keystream blocks counter, counter + 1, ..., counter + nblocks - 1 (the counter a
 * 64-bit number in state words 12 and 13, modulo 2^64) under key and the 64-bit nonce
 * (state words 14 and 15, nonce's low half in word 14), as 32-bit words: out[16 b + k] is
 * little-endian word k of block counter + b, the bytes 4k..4k+3 of that block of
 * libsodium's crypto_stream_chacha20 keystream. */
void dpgd_chacha20_blocks(uint32_t *out, size_t nblocks,
                          const uint8_t key[DPGD_CHACHA_KEY_BYTES], uint64_t nonce,
                          uint64_t counter);

/* A test's hook: every later dpgd_chacha20_blocks takes `path` (AUTO: back to the
 * choice by CPU). 0 and no change where the CPU lacks the path, else 1. */
int dpgd_chacha20_force(int path);

#endif /* DPGD_CHACHA_H */
