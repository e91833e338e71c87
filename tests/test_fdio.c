/* src/util/fdio.h: reads and writes that go on after a signal interrupts
 * them. The signal handler is installed without SA_RESTART, so a plain
 * read(2) blocked on a pipe fails with EINTR (checked first, so the other
 * checks are not vacuous); the helpers must return the data instead. Also:
 * short reads, end of file, a bad descriptor, pread/pwrite at offsets, and a
 * write larger than a pipe holds, drained by another thread. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"

static atomic_int signals_caught;

static void on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&signals_caught, 1);
}

/* SIGUSR1 interrupts system calls: no SA_RESTART. */
static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    atomic_store(&signals_caught, 0);
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* Another thread: signals `target` every few milliseconds for a while (so a
 * blocked call is interrupted however late it started), then writes `data`
 * into `fd` in pieces of `piece` bytes, signalling between them, and closes
 * fd when `close_after` is set. */
typedef struct {
    pthread_t target;
    int fd;
    const char *data;
    size_t len, piece;
    bool close_after;
} interrupter;

static void *interrupt_then_write(void *arg)
{
    interrupter *x = arg;
    sleep_ms(20);
    for (int i = 0; i < 20; i++) {
        pthread_kill(x->target, SIGUSR1);
        sleep_ms(5);
    }
    for (size_t at = 0; at < x->len; at += x->piece) {
        size_t n = x->len - at < x->piece ? x->len - at : x->piece;
        if (write(x->fd, x->data + at, n) != (ssize_t)n)
            abort();
        pthread_kill(x->target, SIGUSR1);
        sleep_ms(5);
    }
    if (x->close_after)
        close(x->fd);
    return NULL;
}

/* A pipe with a thread signalling the reader and writing `data` into it. */
typedef struct {
    int p[2];
    pthread_t t;
    interrupter x;
} feeder;

static void feed(feeder *f, const char *data, size_t piece, bool close_after)
{
    install_handler();
    cr_assert_eq(pipe(f->p), 0);
    f->x = (interrupter){pthread_self(), f->p[1], data, strlen(data), piece, close_after};
    cr_assert_eq(pthread_create(&f->t, NULL, interrupt_then_write, &f->x), 0);
}

static void feed_done(feeder *f)
{
    pthread_join(f->t, NULL);
    close(f->p[0]);
    if (!f->x.close_after)
        close(f->p[1]);
}

Test(fdio, plain_read_fails_with_eintr_here)
{
    /* The control: the same arrangement interrupts a bare read(2). */
    feeder f;
    feed(&f, "hello", 5, false);
    char buf[16];
    ssize_t n = read(f.p[0], buf, sizeof buf);
    int e = errno;
    feed_done(&f);
    cr_assert_eq(n, -1, "read(2) was not interrupted (returned %zd)", n);
    cr_assert_eq(e, EINTR);
}

Test(fdio, read_some_returns_the_data_not_eintr)
{
    feeder f;
    feed(&f, "hello", 5, false);
    char buf[16];
    ssize_t n = tsim_read_some(f.p[0], buf, sizeof buf);
    feed_done(&f);
    cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(buf, "hello", 5), 0);
    cr_assert_geq(atomic_load(&signals_caught), 20, "the read was never interrupted");
}

Test(fdio, read_full_gathers_pieces_across_signals)
{
    const char *text = "the quick brown fox jumps over the lazy dog";
    feeder f;
    feed(&f, text, 4, false);
    char buf[64] = {0};
    size_t want = strlen(text);
    size_t n = tsim_read_full(f.p[0], buf, want);
    feed_done(&f);
    cr_assert_eq(n, want);
    cr_assert_str_eq(buf, text);
    cr_assert_gt(atomic_load(&signals_caught), 20);
}

Test(fdio, short_read_and_end_of_file)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "abc", 3), 3);
    char buf[16];
    /* one read takes what is there */
    cr_assert_eq(tsim_read_some(p[0], buf, sizeof buf), 3);
    cr_assert_eq(memcmp(buf, "abc", 3), 0);
    /* read_full stops at the end of the file, with errno 0 */
    cr_assert_eq(write(p[1], "defg", 4), 4);
    close(p[1]);
    errno = EINVAL;
    size_t n = tsim_read_full(p[0], buf, sizeof buf);
    cr_assert_eq(n, 4);
    cr_assert_eq(errno, 0);
    cr_assert_eq(memcmp(buf, "defg", 4), 0);
    /* and at the end: 0 from both */
    cr_assert_eq(tsim_read_some(p[0], buf, sizeof buf), 0);
    errno = EINVAL;
    cr_assert_eq(tsim_read_full(p[0], buf, sizeof buf), 0);
    cr_assert_eq(errno, 0);
    close(p[0]);
}

Test(fdio, read_full_across_writes_then_eof)
{
    feeder f;
    feed(&f, "0123456789", 3, true);
    char buf[32];
    errno = EINVAL;
    size_t n = tsim_read_full(f.p[0], buf, sizeof buf);
    int e = errno;
    feed_done(&f);
    cr_assert_eq(n, 10);
    cr_assert_eq(e, 0, "errno %d at end of file", e);
    cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
}

Test(fdio, bad_descriptor)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    close(p[0]);
    close(p[1]);
    char buf[8] = "xxxxxxx";
    errno = 0;
    cr_assert_eq(tsim_read_some(p[0], buf, sizeof buf), -1);
    cr_assert_eq(errno, EBADF);
    errno = 0;
    cr_assert_eq(tsim_pread_some(p[0], buf, sizeof buf, 0), -1);
    cr_assert_eq(errno, EBADF);
    errno = 0;
    cr_assert_eq(tsim_read_full(-1, buf, sizeof buf), 0);
    cr_assert_eq(errno, EBADF);
    errno = 0;
    cr_assert_eq(tsim_pread_full(-1, buf, sizeof buf, 0), 0);
    cr_assert_eq(errno, EBADF);
    errno = 0;
    cr_assert_eq(tsim_write_full(p[1], buf, sizeof buf), 0);
    cr_assert_eq(errno, EBADF);
    errno = 0;
    cr_assert_eq(tsim_pwrite_full(-1, buf, sizeof buf, 0), 0);
    cr_assert_eq(errno, EBADF);
}

/* Drains a pipe into a buffer until end of file. */
typedef struct {
    int fd;
    unsigned char *got;
    size_t cap, len;
} drain;

static void *drain_pipe(void *arg)
{
    drain *d = arg;
    for (;;) {
        ssize_t n = read(d->fd, d->got + d->len, d->cap - d->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        d->len += (size_t)n;
        sleep_ms(10); /* slow: the writer blocks on a full pipe while signals come */
    }
    return NULL;
}

Test(fdio, write_full_over_a_pipe_with_signals)
{
    install_handler();
    const size_t N = (size_t)1 << 20; /* many times a pipe's capacity */
    unsigned char *data = malloc(N), *got = malloc(N + 1);
    cr_assert(data && got);
    for (size_t i = 0; i < N; i++)
        data[i] = (unsigned char)(i * 131u + (i >> 8));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    drain d = {p[0], got, N + 1, 0};
    pthread_t reader, sig;
    cr_assert_eq(pthread_create(&reader, NULL, drain_pipe, &d), 0);
    interrupter x = {pthread_self(), -1, "", 0, 1, false};
    cr_assert_eq(pthread_create(&sig, NULL, interrupt_then_write, &x), 0);
    size_t n = tsim_write_full(p[1], data, N);
    close(p[1]);
    pthread_join(reader, NULL);
    pthread_join(sig, NULL);
    cr_assert_eq(n, N);
    cr_assert_eq(d.len, N);
    cr_assert_eq(memcmp(data, got, N), 0);
    close(p[0]);
    free(data);
    free(got);
}

Test(fdio, pread_and_pwrite_at_offsets)
{
    char path[] = "/tmp/tsim_fdio_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    cr_assert_eq(tsim_pwrite_full(fd, "0123456789", 10, 0), 10);
    cr_assert_eq(tsim_pwrite_full(fd, "AB", 2, 4), 2);
    char buf[16] = {0};
    cr_assert_eq(tsim_pread_full(fd, buf, 4, 3), 4);
    cr_assert_eq(memcmp(buf, "3AB6", 4), 0);
    cr_assert_eq(tsim_pread_some(fd, buf, sizeof buf, 8), 2);
    cr_assert_eq(memcmp(buf, "89", 2), 0);
    /* past the end: what is there, errno 0 */
    errno = EINVAL;
    cr_assert_eq(tsim_pread_full(fd, buf, 8, 6), 4);
    cr_assert_eq(errno, 0);
    cr_assert_eq(memcmp(buf, "6789", 4), 0);
    /* the file position is untouched by pread/pwrite: read_full from 0 */
    cr_assert_eq(tsim_read_full(fd, buf, 10), 10);
    cr_assert_eq(memcmp(buf, "0123AB6789", 10), 0);
    close(fd);
}
