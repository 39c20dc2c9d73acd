/* ckpt.c -- the checkpoint container (a file of named sections with a CRC-32) and the
 * atomic file write of the run directory (core/fileio.c's, its failure worded as a dpgd
 * error naming the file). Layout (host byte order, checked by a byte-order mark):
 *   "DPGDCKPT" | u32 version | u32 0x01020304 | u64 config hash | u64 n_sections |
 *   n x (name[8] | u64 length) | bodies in table order | u32 CRC-32 of all before. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "dpgd_core.h"
#include "dpgd_train.h"

static const char magic[8] = {'D', 'P', 'G', 'D', 'C', 'K', 'P', 'T'};
#define BOM 0x01020304u
#define HEADER_LEN (8 + 4 + 4 + 8 + 8)
#define ENTRY_LEN (DPGD_CKPT_NAME_LEN + 8)
#define MAX_SECTIONS 64

struct dpgd_ckpt {
  char path[DPGD_CONFIG_PATH_MAX];
  unsigned char *buf;
  size_t n;
  char (*names)[DPGD_CKPT_NAME_LEN];
  const unsigned char **data;
  size_t *len;
};

int dpgd_write_atomic(const char *path, const void *buf, size_t len)
{
  const char *failed = NULL;
  if (dpgd_file_write_atomic(path, buf, len, &failed) == 0) return DPGD_OK;
  return DPGD_FAIL(DPGD_EIO, "cannot %s %s: %s", failed, path, strerror(errno));
}

static void put(unsigned char **p, const void *v, size_t len)
{
  memcpy(*p, v, len);
  *p += len;
}

int dpgd_ckpt_write(const char *path, uint64_t config_hash, const dpgd_ckpt_section *s,
                    size_t n)
{
  if (n > MAX_SECTIONS) return DPGD_FAIL(DPGD_EINVAL, "too many checkpoint sections");
  size_t total = HEADER_LEN + n * ENTRY_LEN + 4;
  for (size_t i = 0; i < n; i++) total += s[i].len;
  unsigned char *buf = malloc(total), *p = buf;
  if (!buf) return DPGD_FAIL(DPGD_ENOMEM, "no memory for checkpoint %s", path);
  uint32_t version = DPGD_CKPT_VERSION, bom = BOM;
  uint64_t ns = n;
  put(&p, magic, 8);
  put(&p, &version, 4);
  put(&p, &bom, 4);
  put(&p, &config_hash, 8);
  put(&p, &ns, 8);
  for (size_t i = 0; i < n; i++) {
    uint64_t len = s[i].len;
    put(&p, s[i].name, DPGD_CKPT_NAME_LEN);
    put(&p, &len, 8);
  }
  for (size_t i = 0; i < n; i++)
    if (s[i].len) put(&p, s[i].data, s[i].len);
  uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(total - 4));
  put(&p, &crc, 4);
  int rc = dpgd_write_atomic(path, buf, total);
  free(buf);
  return rc;
}

void dpgd_ckpt_free(dpgd_ckpt *c)
{
  if (!c) return;
  free(c->buf);
  free(c->names);
  free(c->data);
  free(c->len);
  free(c);
}

static int read_file(const char *path, unsigned char **out, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open checkpoint %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) || st.st_size < 0) {
    fclose(f);
    return DPGD_FAIL(DPGD_EIO, "cannot stat checkpoint %s", path);
  }
  size_t n = (size_t)st.st_size;
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) {
    fclose(f);
    return DPGD_FAIL(DPGD_ENOMEM, "no memory to read checkpoint %s", path);
  }
  size_t got = fread(buf, 1, n, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != n) {
    free(buf);
    return DPGD_FAIL(DPGD_EIO, "cannot read checkpoint %s", path);
  }
  *out = buf;
  *len = n;
  return DPGD_OK;
}

#define BAD(...) (dpgd_ckpt_free(c), DPGD_FAIL(DPGD_EFORMAT, __VA_ARGS__))

int dpgd_ckpt_read(dpgd_ckpt **out, const char *path, uint64_t config_hash)
{
  *out = NULL;
  dpgd_ckpt *c = calloc(1, sizeof *c);
  if (!c) return DPGD_FAIL(DPGD_ENOMEM, "no memory to read checkpoint %s", path);
  snprintf(c->path, sizeof c->path, "%s", path);
  size_t total = 0;
  int rc = read_file(path, &c->buf, &total);
  if (rc) {
    dpgd_ckpt_free(c);
    return rc;
  }
  const unsigned char *b = c->buf;
  if (total < HEADER_LEN + 4 || memcmp(b, magic, 8))
    return BAD("%s is not a dpgd checkpoint (bad magic or too short)", path);
  uint32_t version, bom, crc_file;
  uint64_t hash, ns;
  memcpy(&version, b + 8, 4);
  memcpy(&bom, b + 12, 4);
  memcpy(&hash, b + 16, 8);
  memcpy(&ns, b + 24, 8);
  if (bom != BOM)
    return BAD("checkpoint %s was written on a machine of other byte order", path);
  if (version != DPGD_CKPT_VERSION)
    return BAD("checkpoint %s has format version %u, this dpgd reads %u (start the run "
               "again)",
               path, version, DPGD_CKPT_VERSION);
  memcpy(&crc_file, b + total - 4, 4);
  if ((uint32_t)crc32(0L, b, (uInt)(total - 4)) != crc_file)
    return BAD("checkpoint %s is corrupt (checksum mismatch)", path);
  if (hash != config_hash)
    return BAD("checkpoint %s belongs to another configuration (config hash differs from "
               "config.ini)",
               path);
  if (ns > MAX_SECTIONS || HEADER_LEN + ns * ENTRY_LEN + 4 > total)
    return BAD("checkpoint %s has a malformed section table", path);
  c->n = (size_t)ns;
  c->names = calloc(c->n + 1, sizeof *c->names);
  c->data = calloc(c->n + 1, sizeof *c->data);
  c->len = calloc(c->n + 1, sizeof *c->len);
  if (!c->names || !c->data || !c->len) {
    dpgd_ckpt_free(c);
    return DPGD_FAIL(DPGD_ENOMEM, "no memory to read checkpoint %s", path);
  }
  size_t off = HEADER_LEN + c->n * ENTRY_LEN, avail = total - 4;
  for (size_t i = 0; i < c->n; i++) {
    const unsigned char *e = b + HEADER_LEN + i * ENTRY_LEN;
    uint64_t len;
    memcpy(c->names[i], e, DPGD_CKPT_NAME_LEN);
    memcpy(&len, e + DPGD_CKPT_NAME_LEN, 8);
    if (len > avail - off) return BAD("checkpoint %s: section lengths exceed the file", path);
    c->data[i] = b + off;
    c->len[i] = (size_t)len;
    off += (size_t)len;
  }
  if (off != avail) return BAD("checkpoint %s: trailing bytes after the sections", path);
  *out = c;
  return DPGD_OK;
}

int dpgd_ckpt_get(const dpgd_ckpt *c, const char *name, size_t want_len, const void **data,
                  size_t *len)
{
  for (size_t i = 0; i < c->n; i++) {
    if (strncmp(c->names[i], name, DPGD_CKPT_NAME_LEN)) continue;
    if (want_len && c->len[i] != want_len)
      return DPGD_FAIL(DPGD_EFORMAT, "checkpoint %s: section '%s' is %zu bytes, expected %zu",
                       c->path, name, c->len[i], want_len);
    *data = c->data[i];
    if (len) *len = c->len[i];
    return DPGD_OK;
  }
  return DPGD_FAIL(DPGD_EFORMAT, "checkpoint %s: section '%s' missing", c->path, name);
}
