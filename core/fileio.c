/* fileio.c -- the write-side system calls of dpgd behind one set of wrappers (see
 * dpgd_core.h), the atomic whole-file write built from them, and, in test builds, the
 * fault injection that makes a chosen call fail. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpgd_core.h"

#ifdef DPGD_FAULT_INJECTION
static unsigned long calls[DPGD_FAULT_N_KINDS];
static unsigned long armed_k;
static int armed_kind = -1, armed_errno, fired;

void dpgd_fault_arm(dpgd_fault_kind kind, unsigned long k, int errno_value)
{
  memset(calls, 0, sizeof calls);
  armed_kind = (int)kind;
  armed_k = k;
  armed_errno = errno_value;
  fired = 0;
}

void dpgd_fault_disarm(void) { dpgd_fault_arm(DPGD_FAULT_WRITE, 0, 0); }

unsigned long dpgd_fault_count(dpgd_fault_kind kind)
{
  return (unsigned)kind < DPGD_FAULT_N_KINDS ? calls[kind] : 0;
}

int dpgd_fault_fired(void) { return fired; }

/* Counts a call of this kind; 1 (errno set) if it is the armed one and must fail. */
static int inject(dpgd_fault_kind kind)
{
  calls[kind]++;
  if ((int)kind != armed_kind || calls[kind] != armed_k) return 0;
  fired = 1;
  errno = armed_errno;
  return 1;
}
#else
#define inject(kind) 0
#endif

int dpgd_file_open_write(const char *path, int extra_flags)
{
  if (inject(DPGD_FAULT_OPEN)) return -1;
  return open(path, O_WRONLY | O_CREAT | O_CLOEXEC | extra_flags, 0644);
}

int dpgd_file_write_all(int fd, const void *buf, size_t len)
{
  const unsigned char *p = buf;
  while (len > 0) {
    if (inject(DPGD_FAULT_WRITE)) {
      /* As a full disk does: the first half reaches the file, then the error. */
      int e = errno;
      if (len > 1 && write(fd, p, len / 2) < 0) return -1;
      errno = e;
      return -1;
    }
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int dpgd_file_fsync(int fd)
{
  if (inject(DPGD_FAULT_FSYNC)) return -1;
  return fsync(fd);
}

int dpgd_file_rename(const char *from, const char *to)
{
  if (inject(DPGD_FAULT_RENAME)) return -1;
  return rename(from, to);
}

int dpgd_file_sync_dir(const char *path)
{
  if (inject(DPGD_FAULT_FSYNC)) return -1;
  size_t n = strlen(path);
  char *tmp = malloc(n + 1);
  if (!tmp) return -1;
  memcpy(tmp, path, n + 1);
  int fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(tmp);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  /* Some file systems cannot fsync a directory (EINVAL): nothing more can be done
   * there, and the data itself is already on disk. */
  if (rc && errno == EINVAL) rc = 0;
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

int dpgd_file_close(int fd) { return close(fd); }

int dpgd_file_write_atomic(const char *path, const void *buf, size_t len, const char **failed)
{
  const char *dummy;
  if (!failed) failed = &dummy;
  size_t n = strlen(path);
  char *tmp = malloc(n + 5);
  if (!tmp) {
    *failed = "create";
    return -1;
  }
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".tmp", 5);
  int fd = dpgd_file_open_write(tmp, O_TRUNC);
  if (fd < 0) {
    *failed = "create";
    free(tmp);
    return -1;
  }
  *failed = NULL;
  if (dpgd_file_write_all(fd, buf, len)) *failed = "write";
  else if (dpgd_file_fsync(fd)) *failed = "fsync";
  int e = errno;
  if (dpgd_file_close(fd) && !*failed) {
    *failed = "close";
    e = errno;
  }
  if (!*failed && dpgd_file_rename(tmp, path)) {
    *failed = "rename into place";
    e = errno;
  }
  if (*failed) {
    unlink(tmp); /* never leave a half file behind; path is untouched */
    free(tmp);
    errno = e;
    return -1;
  }
  free(tmp);
  if (dpgd_file_sync_dir(path)) {
    *failed = "sync the directory of";
    return -1;
  }
  return 0;
}
