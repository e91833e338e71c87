#include "fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

ssize_t tsim_read_some(int fd, void *buf, size_t n)
{
    ssize_t k;
    do
        k = read(fd, buf, n);
    while (k < 0 && errno == EINTR);
    return k;
}

ssize_t tsim_pread_some(int fd, void *buf, size_t n, int64_t off)
{
    ssize_t k;
    do
        k = pread(fd, buf, n, (off_t)off);
    while (k < 0 && errno == EINTR);
    return k;
}

/* read(2) from the file position, or (at) pread(2) from byte off. */
static size_t read_full(int fd, void *buf, size_t n, bool at, int64_t off)
{
    size_t done = 0;
    while (done < n) {
        char *p = (char *)buf + done;
        ssize_t k = at ? tsim_pread_some(fd, p, n - done, off + (int64_t)done) : tsim_read_some(fd, p, n - done);
        if (k <= 0) {
            if (k == 0)
                errno = 0;
            break;
        }
        done += (size_t)k;
    }
    return done;
}

size_t tsim_read_full(int fd, void *buf, size_t n)
{
    return read_full(fd, buf, n, false, 0);
}

size_t tsim_pread_full(int fd, void *buf, size_t n, int64_t off)
{
    return read_full(fd, buf, n, true, off);
}

/* write(2) at the file position, or (at) pwrite(2) from byte off. */
static size_t write_full(int fd, const void *buf, size_t n, bool at, int64_t off)
{
    size_t done = 0;
    while (done < n) {
        const char *p = (const char *)buf + done;
        ssize_t k = at ? pwrite(fd, p, n - done, (off_t)(off + (int64_t)done)) : write(fd, p, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            break;
        }
        done += (size_t)k;
    }
    return done;
}

size_t tsim_write_full(int fd, const void *buf, size_t n)
{
    return write_full(fd, buf, n, false, 0);
}

size_t tsim_pwrite_full(int fd, const void *buf, size_t n, int64_t off)
{
    return write_full(fd, buf, n, true, off);
}
