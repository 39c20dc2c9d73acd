/* testutil.h -- builders shared by the data tests: synthetic IDX buffers (raw and
 * gzip), PNG files of any colour type and depth, temporary folders. */
#ifndef DPGD_TEST_DATA_UTIL_H
#define DPGD_TEST_DATA_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Deterministic high-entropy bytes (xorshift64*), seeded. */
void tu_bytes(uint8_t *out /* (n) */, size_t n, uint64_t seed);
/* A uniform double in [0, 1) from the xorshift64* state *state (nonzero), advanced: the
 * same sequence on every platform. */
double tu_urand(uint64_t *state);

/* An IDX file in memory: big-endian header with magic 0x0000080<ndim>, dims, body. */
uint8_t *tu_idx(size_t *len, int ndim, const uint32_t *dims /* (ndim) */, const uint8_t *body,
                size_t body_len);

/* gzip (deflate with the gzip wrapper) of [in, in + len). */
uint8_t *tu_gzip(size_t *out_len, const uint8_t *in, size_t len);

void tu_write(const char *path, const void *buf, size_t len);

/* Writes a PNG: pixels are (h, w * channels * depth/8) rows as libpng takes them. */
void tu_png(const char *path, int w, int h, int color_type, int depth, int interlace,
            const uint8_t *pixels);

/* mkdtemp under $TMPDIR or /tmp; tu_rmtree removes a tree. */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);

/* Writes an 8-bit grayscale w x h PNG tree split/<label>/<index>.png for the given
 * indices, with pixels tu_bytes(seed = index) and label = labels[k]. */
void tu_png_tree(const char *split, const size_t *index, const uint8_t *labels, size_t n, int w,
                 int h);

/* The tests' strict tree of n images split/<label>/<i>.png, i = 0..n-1 (n <= 64), w x h
 * pixels tu_bytes(seed = i), label (7 i + 3) mod 10 (tu_png_tree). */
void tu_png_tree_n(const char *split, size_t n, int w, int h);

/* Fails the test unless st == want and dpgd_error_last() contains frag1 (and frag2,
 * unless NULL). */
void tu_expect_error(int st, int want, const char *frag1, const char *frag2);

#endif
