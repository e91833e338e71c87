#include "gzline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define INITIAL_CAP ((size_t)256 << 10)
#define IN_CAP ((size_t)128 << 10)

static int fail(tsim_gzline *s, long line, tsim_error *err, const char *what, const char *detail)
{
    if (detail)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: %s: %s", s->path, line, what, detail);
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: %s", s->path, line, what);
}

int tsim_gzline_open(tsim_gzline *s, const char *path, bool gz, size_t max_line, tsim_error *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->fd = -1;
    s->max_line = max_line ? max_line : TSIM_GZLINE_DEFAULT_MAX;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read: it is a directory", path);
    }
    s->file_size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;

    /* The name decides the format; say so when the content disagrees. */
    unsigned char magic[2] = {0, 0};
    ssize_t got = pread(fd, magic, sizeof magic, 0);
    bool is_gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gz && !is_gzip && S_ISREG(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: not a gzip file, though its name ends in .gz", path);
    }
    if (!gz && is_gzip) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:1: the file is gzip-compressed; name it with a .gz suffix to read it", path);
    }

    s->cap = INITIAL_CAP;
    if (s->cap > s->max_line + 2)
        s->cap = s->max_line + 2;
    s->buf = malloc(s->cap);
    if (!s->buf) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    s->fd = fd;
    if (gz) {
        /* Our own inflate loop rather than gzread: gzread silently ignores
         * bytes after the last gzip member, which would hide a damaged file. */
        z_stream *zs = calloc(1, sizeof *zs);
        s->in = malloc(IN_CAP);
        if (!zs || !s->in || inflateInit2(zs, 15 + 16) != Z_OK) {
            free(zs);
            free(s->in);
            free(s->buf);
            s->in = NULL;
            s->buf = NULL;
            close(fd);
            s->fd = -1;
            return tsim_error_set(err, TSIM_E_INTERNAL, "%s: zlib could not start", path);
        }
        s->gz = zs;
    }
    return TSIM_OK;
}

/* Refills the compressed input buffer when it is empty. */
static int read_compressed(tsim_gzline *s, z_stream *zs, tsim_error *err)
{
    if (zs->avail_in > 0 || s->in_eof)
        return TSIM_OK;
    for (;;) {
        ssize_t n = read(s->fd, s->in, IN_CAP);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(s, s->line + 1, err, "read error", strerror(errno));
        if (n == 0)
            s->in_eof = true;
        zs->next_in = s->in;
        zs->avail_in = (uInt)n;
        s->in_read += n;
        return TSIM_OK;
    }
}

/* Inflates at least one byte into buf (or reaches the end). Concatenated gzip
 * members are read in turn; anything else after a member is an error. */
static int fill_gzip(tsim_gzline *s, size_t room, tsim_error *err)
{
    z_stream *zs = s->gz;
    if (room > (size_t)UINT_MAX)
        room = UINT_MAX;
    for (;;) {
        int rc = read_compressed(s, zs, err);
        if (rc)
            return rc;
        zs->next_out = (Bytef *)(s->buf + s->end);
        zs->avail_out = (uInt)room;
        int zrc = inflate(zs, Z_NO_FLUSH);
        size_t produced = room - zs->avail_out;
        s->end += produced;
        if (zrc == Z_STREAM_END) {
            if ((rc = read_compressed(s, zs, err)))
                return rc;
            if (zs->avail_in == 0 && s->in_eof) {
                if (produced == 0)
                    s->eof = true;
                return TSIM_OK;
            }
            if (zs->next_in[0] != 0x1f || (zs->avail_in > 1 && zs->next_in[1] != 0x8b)) {
                char where[96];
                snprintf(where, sizeof where, "at compressed byte %lld",
                         (long long)(s->in_read - (int64_t)zs->avail_in));
                return fail(s, s->line + 1, err, "data after the end of the gzip stream", where);
            }
            inflateReset(zs); /* another gzip member follows */
        } else if (zrc == Z_BUF_ERROR || (zrc == Z_OK && produced == 0 && zs->avail_in == 0 && s->in_eof)) {
            if (produced)
                return TSIM_OK;
            if (zs->avail_in == 0 && s->in_eof)
                return fail(s, s->line + 1, err, "truncated gzip file (the compressed data ends early)", NULL);
        } else if (zrc != Z_OK) {
            return fail(s, s->line + 1, err, "corrupt gzip data", zs->msg ? zs->msg : "inflate failed");
        }
        if (produced)
            return TSIM_OK;
    }
}

/* Reads more bytes after s->end. Returns 0, or an error status. */
static int fill(tsim_gzline *s, tsim_error *err)
{
    size_t room = s->cap - s->end - 1; /* one byte kept for the NUL */
    if (room > (size_t)INT_MAX)
        room = (size_t)INT_MAX;
    if (s->gz)
        return fill_gzip(s, room, err);
    for (;;) {
        ssize_t n = read(s->fd, s->buf + s->end, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(s, s->line + 1, err, "read error", strerror(errno));
        if (n == 0)
            s->eof = true;
        s->end += (size_t)n;
        return TSIM_OK;
    }
}

/* Lines are handed out as C strings: a NUL inside one would silently cut it
 * short (a line starting with NUL would even pass as blank), so it is an
 * error at its line and column. */
static bool has_nul(const tsim_gzline *s, const char *line, size_t n, tsim_error *err)
{
    const char *z = memchr(line, '\0', n);
    if (!z)
        return false;
    tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: NUL byte (text has none: is the file binary or damaged?)", s->path,
                   s->line + 1, (long)(z - line) + 1);
    return true;
}

int tsim_gzline_next(tsim_gzline *s, char **line, size_t *len, tsim_error *err)
{
    for (;;) {
        size_t avail = s->end - s->start;
        char *from = s->buf + s->start;
        char *nl = avail > s->scan ? memchr(from + s->scan, '\n', avail - s->scan) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - from);
            if (n > s->max_line)
                break;
            if (has_nul(s, from, n, err))
                return TSIM_E_INPUT;
            *nl = '\0';
            *line = from;
            *len = n;
            s->start += n + 1;
            s->scan = 0;
            s->line++;
            s->bytes += (int64_t)n + 1;
            return 1;
        }
        s->scan = avail;
        if (avail > s->max_line)
            break;
        if (s->eof) {
            if (avail == 0)
                return 0;
            /* A last line without a newline. */
            if (has_nul(s, from, avail, err))
                return TSIM_E_INPUT;
            from[avail] = '\0';
            *line = from;
            *len = avail;
            s->start = s->end;
            s->scan = 0;
            s->line++;
            s->bytes += (int64_t)avail;
            return 1;
        }
        if (s->start > 0) {
            memmove(s->buf, from, avail);
            s->start = 0;
            s->end = avail;
        }
        if (s->end + 1 >= s->cap) {
            size_t cap = s->cap * 2;
            if (cap > s->max_line + 2)
                cap = s->max_line + 2;
            char *p = realloc(s->buf, cap);
            if (!p)
                return tsim_error_set(err, TSIM_E_INTERNAL, "%s:%ld: out of memory for a %zu-byte line", s->path,
                                      s->line + 1, cap);
            s->buf = p;
            s->cap = cap;
        }
        int rc = fill(s, err);
        if (rc)
            return rc;
    }
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: line is longer than the limit of %zu bytes", s->path, s->line + 1,
                          s->max_line);
}

int tsim_gzline_seek(tsim_gzline *s, int64_t offset, long line, tsim_error *err)
{
    if (lseek(s->fd, (off_t)offset, SEEK_SET) != (off_t)offset)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot seek to byte %lld: %s", s->path, (long long)offset,
                              strerror(errno));
    s->start = s->end = s->scan = 0;
    s->eof = false;
    s->line = line - 1;
    s->bytes = s->gz ? 0 : offset;
    if (s->gz) {
        z_stream *zs = s->gz;
        inflateReset(zs);
        zs->next_in = s->in;
        zs->avail_in = 0;
        s->in_eof = false;
        s->in_read = offset;
    }
    return TSIM_OK;
}

int64_t tsim_gzline_offset(const tsim_gzline *s)
{
    if (s->gz)
        return s->in_read - (int64_t)((z_stream *)s->gz)->avail_in;
    return s->bytes;
}

void tsim_gzline_close(tsim_gzline *s)
{
    if (s->gz) {
        inflateEnd(s->gz);
        free(s->gz);
    }
    if (s->fd >= 0)
        close(s->fd);
    free(s->in);
    free(s->buf);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
