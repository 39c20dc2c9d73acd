/* io.c -- model files (STYLE.md 8). Little-endian throughout:
 *   8 bytes  magic "DPGDMODL"
 *   u32      format version (MODEL_FILE_VERSION)
 *   u32      type code (dpgd_model_type.file_id: 1 softmax, 2 cnn, 3 scatter-softmax,
 *           4 scatter-cnn)
 *   u32      activation (0 relu, 1 tanh)
 *   u32      rows, u32 cols, u32 n_classes
 *   u64      number of parameters P
 *   P x f32  parameters, slab order
 *   u32      CRC-32 (zlib crc32) of every byte before it
 * Written to PATH.tmp, fsync'ed and renamed, then the directory fsync'ed, so a failed
 * write never leaves a half file at PATH and a saved model survives a crash. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "dpgd_core.h"
#include "model_internal.h"

#define MODEL_FILE_VERSION 1u
#define HEADER_BYTES (8 + 6 * 4 + 8)
#define HINT "regenerate it with 'dpgd train'"

static const char magic[8] = {'D', 'P', 'G', 'D', 'M', 'O', 'D', 'L'};

static void put_u32(unsigned char *p, uint32_t v)
{
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static uint32_t get_u32(const unsigned char *p)
{
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) v |= (uint32_t)p[k] << (8 * k);
  return v;
}

static void put_u64(unsigned char *p, uint64_t v)
{
  put_u32(p, (uint32_t)v);
  put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_u64(const unsigned char *p)
{
  return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

int dpgd_model_save(const dpgd_model *m, const char *path)
{
  if (!m || !path) return DPGD_FAIL(DPGD_EINVAL, "no model or path given");
  size_t P = m->n_params, len = HEADER_BYTES + 4 * P + 4;
  unsigned char *buf = malloc(len);
  if (!buf) return DPGD_FAIL(DPGD_ENOMEM, "out of memory writing %s", path);
  memcpy(buf, magic, 8);
  put_u32(buf + 8, MODEL_FILE_VERSION);
  put_u32(buf + 12, m->type->file_id);
  put_u32(buf + 16, (uint32_t)m->act);
  put_u32(buf + 20, (uint32_t)m->rows);
  put_u32(buf + 24, (uint32_t)m->cols);
  put_u32(buf + 28, (uint32_t)m->n_classes);
  put_u64(buf + 32, P);
  for (size_t j = 0; j < P; j++) {
    uint32_t u;
    memcpy(&u, &m->params[j], 4);
    put_u32(buf + HEADER_BYTES + 4 * j, u);
  }
  put_u32(buf + len - 4, (uint32_t)crc32(0L, buf, (uInt)(len - 4)));

  /* Temp file, fsync, rename, directory fsync (core/fileio.c): a failure or a crash
   * leaves the old model file or the new one, and a finished run's model is on disk. */
  const char *failed = NULL;
  int st = DPGD_OK;
  if (dpgd_file_write_atomic(path, buf, len, &failed))
    st = DPGD_FAIL(DPGD_EIO, "cannot %s model file %s: %s", failed, path, strerror(errno));
  free(buf);
  return st;
}

static int read_all(unsigned char **out, size_t *len, const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open model file %s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  int st = buf ? DPGD_OK : DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", path);
  while (!st) {
    if (n == cap) {
      unsigned char *nb = cap < ((size_t)1 << 32) ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        st = DPGD_FAIL(DPGD_ENOMEM, "model file %s is too large to read", path);
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) st = DPGD_FAIL(DPGD_EIO, "reading %s failed", path);
      break;
    }
  }
  fclose(f);
  if (st) {
    free(buf);
    return st;
  }
  *out = buf;
  *len = n;
  return DPGD_OK;
}

static const dpgd_model_type *type_by_id(uint32_t id)
{
  const dpgd_model_type *types[] = {dpgd_model_softmax, dpgd_model_cnn,
                                    dpgd_model_scatter_softmax, dpgd_model_scatter_cnn};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    if (types[k]->file_id == id) return types[k];
  return NULL;
}

static int parse(dpgd_model **out, const unsigned char *buf, size_t len, const char *path)
{
  if (len < 8 || memcmp(buf, magic, 8) != 0)
    return DPGD_FAIL(DPGD_EFORMAT, "%s is not a dpgd model file (bad magic)", path);
  if (len < HEADER_BYTES + 4)
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s is truncated (%zu bytes)", path, len);
  uint32_t version = get_u32(buf + 8);
  if (version != MODEL_FILE_VERSION)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "model file %s has format version %u, this dpgd reads %u; " HINT, path,
                     version, MODEL_FILE_VERSION);
  uint64_t P = get_u64(buf + 32);
  if (P > len / 4 || len < HEADER_BYTES + 4 * P + 4)
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s is truncated: %zu bytes for %llu parameters",
                     path, len, (unsigned long long)P);
  if (len > HEADER_BYTES + 4 * P + 4)
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s has %zu bytes after its checksum", path,
                     len - (size_t)(HEADER_BYTES + 4 * P + 4));
  uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(len - 4));
  if (crc != get_u32(buf + len - 4))
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s is corrupt (CRC-32 mismatch); " HINT, path);
  const dpgd_model_type *t = type_by_id(get_u32(buf + 12));
  if (!t)
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s has unknown model type code %u", path,
                     get_u32(buf + 12));
  uint32_t act = get_u32(buf + 16);
  if (act > DPGD_ACT_TANH)
    return DPGD_FAIL(DPGD_EFORMAT, "model file %s has unknown activation code %u", path, act);
  tensor_spec spec[MODEL_MAX_TENSORS];
  size_t rows = get_u32(buf + 20), cols = get_u32(buf + 24), nt = 0;
  int n_classes = (int)get_u32(buf + 28);
  if (rows == 0 || cols == 0 || rows > DPGD_DATA_MAX_SIDE || cols > DPGD_DATA_MAX_SIDE ||
      n_classes < 2 || n_classes > 256 || (nt = t->layout(spec, rows, cols, n_classes)) == 0)
    return DPGD_FAIL(
        DPGD_EFORMAT,
        "model file %s: a %s model of %zu x %zu images and %d classes is not supported", path,
        t->name, rows, cols, n_classes);
  /* The shape's parameter count, checked against the file before anything is
   * allocated: a header may claim a shape far larger than the file holds (a softmax
   * of 16384 x 16384 images and 256 classes would ask for 275 GB). */
  size_t want = 0;
  for (size_t k = 0; k < nt; k++) want += spec[k].size;
  if (want != P)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "model file %s holds %llu parameters, a %s model of its shape has %zu",
                     path, (unsigned long long)P, t->name, want);
  dpgd_model *m = dpgd_model_alloc(t, (dpgd_activation)act, rows, cols, n_classes);
  if (!m) return DPGD_ENOMEM; /* reported by dpgd_model_alloc */
  for (size_t j = 0; j < P; j++) {
    uint32_t u = get_u32(buf + HEADER_BYTES + 4 * j);
    memcpy(&m->params[j], &u, 4);
    if (!isfinite(m->params[j])) {
      dpgd_model_free(m);
      return DPGD_FAIL(DPGD_EFORMAT, "model file %s: parameter %zu is not finite", path, j);
    }
  }
  *out = m;
  return DPGD_OK;
}

int dpgd_model_load(dpgd_model **out, const char *path)
{
  if (!out || !path) return DPGD_FAIL(DPGD_EINVAL, "no output or path given");
  *out = NULL;
  unsigned char *buf = NULL;
  size_t len = 0;
  int st = read_all(&buf, &len, path);
  if (st) return st;
  st = parse(out, buf, len, path);
  free(buf);
  return st;
}
