#ifndef TSIM_FDIO_H
#define TSIM_FDIO_H

/* read(2), pread(2), write(2) and pwrite(2), again whenever a signal
 * interrupts them (EINTR): the one place for that loop. Nothing here prints
 * or names a file; the caller words the error from errno. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One read(2), again when a signal interrupts it: the bytes read, 0 at end
 * of file, or -1 with errno (never EINTR). */
ssize_t tsim_read_some(int fd, void *buf, size_t n);

/* One pread(2) at byte off, likewise. */
ssize_t tsim_pread_some(int fd, void *buf, size_t n, int64_t off);

/* Reads until n bytes, end of file or an error; returns the bytes read. When
 * that is fewer than n, errno says why: 0 at end of file, else the error. */
size_t tsim_read_full(int fd, void *buf, size_t n);

/* Likewise with pread(2), from byte off. */
size_t tsim_pread_full(int fd, void *buf, size_t n, int64_t off);

/* Writes until all n bytes are written or an error; returns the bytes
 * written. When that is fewer than n, errno says why (EIO when write(2)
 * wrote nothing without naming an error). */
size_t tsim_write_full(int fd, const void *buf, size_t n);

/* Likewise with pwrite(2), from byte off. */
size_t tsim_pwrite_full(int fd, const void *buf, size_t n, int64_t off);

#endif
