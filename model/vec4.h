/* vec4.h -- four- and eight-lane float and int32 vectors for the data-movement kernels (GCC and
 * Clang vector extensions: SSE2 on x86-64, NEON on ARM, scalar code elsewhere). They
 * only copy, select bit patterns and add lane by lane, so a kernel written with them
 * gives the bits of its scalar loop. Private to model/. */
#ifndef DPGD_MODEL_VEC4_H
#define DPGD_MODEL_VEC4_H

#include <stdint.h>
#include <string.h>

/* The data-movement and summing kernels are built three times on x86-64 with GCC, for
 * AVX-512F, AVX2 and the baseline, and the loader picks one by the CPU (target_clones).
 * The loops only copy, compare and add lane by lane, and no product is fused into an
 * addition (tanh.c multiplies and divides too, each rounded alone; model/ is built with
 * -ffp-contract=off, so the AVX-512F build, whose CPUs have FMA, fuses nothing either),
 * so every version gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(DPGD_NO_CLONES)
#define DPGD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DPGD_CLONES
#endif

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f v4f_load(const float *p)
{
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline v4i v4i_load(const int32_t *p)
{
  v4i v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void v4f_store(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* Eight lanes: one AVX2 register in the AVX2 clones, two SSE2 registers otherwise.
 * Loaded and stored by macros, not functions: a 32-byte vector passed by value has
 * another ABI with and without AVX, which GCC warns about. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint8_t v8b __attribute__((vector_size(8))); /* eight bytes: v8i's lanes stored */
#define V8_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define V8_STORE(p, v) memcpy((p), &(v), sizeof(v))

/* Rows r[0..3] (four pixels' four channels) become columns (four channels' four
 * pixels), in place. */
static inline void v4f_transpose(v4f r[4])
{
  v4f t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
  v4f t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
  v4f t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
  v4f t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
  r[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
  r[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
  r[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
  r[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

/* dst (4 rows of stride ds) = transpose of src (4 rows of stride ss): a 4 x 4 block. */
static inline void v4f_transpose_block(float *dst, size_t ds, const float *src, size_t ss)
{
  v4f r[4];
  for (int i = 0; i < 4; i++) r[i] = v4f_load(src + (size_t)i * ss);
  v4f_transpose(r);
  for (int i = 0; i < 4; i++) v4f_store(dst + (size_t)i * ds, r[i]);
}

#endif /* DPGD_MODEL_VEC4_H */
