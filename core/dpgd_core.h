/* dpgd_core.h -- the leaf library every other dpgd folder may use: it includes nothing
 * of dpgd. It offers the status codes and the error handler (dpgd_error.h, included
 * here), the write side of file I/O (write-all, fsync, rename, directory fsync, atomic
 * whole-file replacement), path helpers (mkdir -p, is-a-directory, read a whole file)
 * and CRC-32. The file wrappers report failure as -1 with errno set so that the caller,
 * which knows what the file is, words the message.
 *
 * Built with DPGD_FAULT_INJECTION (on in test builds), the wrappers also count their
 * calls by kind and can be armed to fail one chosen call, so that a test can make every
 * write, fsync, rename or open of a run fail in turn (SQLite's I/O error loop). */
#ifndef DPGD_CORE_H
#define DPGD_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_error.h"

/* ===== Paths ======================================================================== */

/* mkdir -p: creates each missing prefix of path ending at a '/' and then path itself,
 * with the given mode (umask applies). Returns 0, or -1 with errno set (ENAMETOOLONG
 * for a path of PATH_MAX bytes or more); then, when failed is not NULL, the prefix that
 * could not be created is copied into failed (failed_size bytes, truncated). */
int dpgd_path_mkdirs(const char *path, unsigned mode, char *failed, size_t failed_size);
/* 1 if path names a directory (following symbolic links), 0 otherwise. */
int dpgd_path_is_dir(const char *path);
/* Reads the whole file at path into a malloc'ed buffer with a NUL byte after its len
 * bytes (so text can be parsed in place). Works on pipes and other unsized files too.
 * Returns DPGD_OK, or DPGD_EIO / DPGD_ENOMEM reported through the handler ("cannot open
 * PATH: reason", "read error on PATH: reason", "out of memory reading PATH"); on failure
 * *buf is NULL and *len 0. */
int dpgd_file_slurp(char **buf, size_t *len, const char *path);

/* ===== Memory ======================================================================= */

/* Frees a buffer that libdpgd allocated and handed to its caller (dpgd_acct_serialize,
 * dpgd_filter_serialize, dpgd_ledger_save, ...). Callers whose allocator may differ from
 * the library's (a program linked with jemalloc or tcmalloc, a language binding, a
 * sanitizer runtime) must free such buffers with this, not with their own free().
 * dpgd_free(NULL) is a no-op. */
void dpgd_free(void *p);

/* ===== Checksums ==================================================================== */

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): the zlib and PNG checksum. */
uint32_t dpgd_crc32(const void *buf, size_t len);

/* ===== Writing files ================================================================
 * Every file a run writes goes through these calls, so that durability (fsync before
 * rename, directory fsync after it) is decided in one place. */

/* open(path, O_WRONLY | O_CREAT | O_CLOEXEC | extra_flags, 0644); extra_flags is
 * typically O_TRUNC or O_APPEND. Returns the descriptor or -1. */
int dpgd_file_open_write(const char *path, int extra_flags);
/* write(2) until all len bytes are written, retrying on EINTR. 0 or -1. A failure may
 * leave a prefix of buf written. */
int dpgd_file_write_all(int fd, const void *buf, size_t len);
/* fsync(2). 0 or -1. */
int dpgd_file_fsync(int fd);
/* rename(2). 0 or -1. */
int dpgd_file_rename(const char *from, const char *to);
/* fsync of the directory holding path, so that a rename or a creation in it is durable.
 * 0 or -1 (counted as an fsync). */
int dpgd_file_sync_dir(const char *path);
/* close(2), with errno kept from the close. 0 or -1. */
int dpgd_file_close(int fd);

/* Replaces path by len bytes atomically: writes path.tmp, fsyncs it, renames it over
 * path and fsyncs the directory. A crash leaves the old file or the new one, never a
 * mix; a failure before the rename removes path.tmp and leaves path as it was. Returns 0,
 * or -1 with errno set and *failed (when not NULL) set to the step that failed as a verb
 * for "cannot <failed> <path>": "create", "write", "fsync", "close", "rename into place"
 * or "sync the directory of" (the last after the rename: path is the new file). */
int dpgd_file_write_atomic(const char *path, const void *buf, size_t len, const char **failed);

/* ===== Fault injection (tests) ======================================================
 * Only with DPGD_FAULT_INJECTION defined. Kinds of call: */
typedef enum {
  DPGD_FAULT_WRITE = 0, /* a write(2) inside dpgd_file_write_all */
  DPGD_FAULT_FSYNC,     /* dpgd_file_fsync and dpgd_file_sync_dir */
  DPGD_FAULT_RENAME,    /* dpgd_file_rename */
  DPGD_FAULT_OPEN,      /* dpgd_file_open_write */
  DPGD_FAULT_N_KINDS
} dpgd_fault_kind;

#ifdef DPGD_FAULT_INJECTION
/* From now on, the k-th call (1-based) of that kind fails with errno_value; later calls
 * succeed. A failing write first writes half of its bytes (a short write, as on a full
 * disk); the other kinds do nothing. Resets every counter. k = 0 arms nothing. */
void dpgd_fault_arm(dpgd_fault_kind kind, unsigned long k, int errno_value);
/* Disarms and resets every counter. */
void dpgd_fault_disarm(void);
/* Calls of that kind since the last arm or disarm. */
unsigned long dpgd_fault_count(dpgd_fault_kind kind);
/* 1 if the armed fault has fired. */
int dpgd_fault_fired(void);
#endif

#endif /* DPGD_CORE_H */
