/* Zip archives through libzip (see zip_reader.h). */
#define _GNU_SOURCE /* O_TMPFILE */
#include "zip_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>

struct tsim_zip {
    zip_t *za;
    char *path;
};

#define CHUNK ((size_t)1 << 20)

static int zip_fail_code(const char *path, int code, tsim_error *err)
{
    zip_error_t ze;
    zip_error_init_with_code(&ze, code);
    int rc;
    if (code == ZIP_ER_NOZIP)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: not a zip archive (no end of central directory: truncated?)", path);
    else if (code == ZIP_ER_INCONS)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: damaged zip archive (inconsistent directory: truncated?)", path);
    else
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open the zip archive: %s", path, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return rc;
}

static int wrap(tsim_zip **out, zip_t *za, const char *path, tsim_error *err)
{
    tsim_zip *z = calloc(1, sizeof *z);
    char *p = strdup(path);
    if (!z || !p) {
        free(z);
        free(p);
        zip_discard(za);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    z->za = za;
    z->path = p;
    *out = z;
    return TSIM_OK;
}

int tsim_zip_open(tsim_zip **out, const char *path, tsim_error *err)
{
    *out = NULL;
    int code = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!za) {
        if (code == ZIP_ER_OPEN || code == ZIP_ER_NOENT || code == ZIP_ER_READ)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", path, strerror(errno ? errno : EIO));
        return zip_fail_code(path, code, err);
    }
    return wrap(out, za, path, err);
}

int tsim_zip_open_buffer(tsim_zip **out, const char *name, const void *data, size_t len, tsim_error *err)
{
    *out = NULL;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    if (!src) {
        zip_error_fini(&ze);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!za) {
        int code = zip_error_code_zip(&ze);
        zip_source_free(src);
        zip_error_fini(&ze);
        return zip_fail_code(name, code, err);
    }
    zip_error_fini(&ze);
    return wrap(out, za, name, err);
}

void tsim_zip_close(tsim_zip *z)
{
    if (!z)
        return;
    zip_discard(z->za);
    free(z->path);
    free(z);
}

int64_t tsim_zip_count(const tsim_zip *z)
{
    return (int64_t)zip_get_num_entries(z->za, 0);
}

const char *tsim_zip_name(const tsim_zip *z, int64_t i)
{
    return zip_get_name(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
}

int64_t tsim_zip_find(const tsim_zip *z, const char *name)
{
    return (int64_t)zip_name_locate(z->za, name, ZIP_FL_ENC_RAW);
}

int tsim_zip_size(const tsim_zip *z, int64_t i, int64_t *size, tsim_error *err)
{
    zip_stat_t st;
    zip_stat_init(&st);
    const char *name = tsim_zip_name(z, i);
    if (!name || zip_stat_index(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry %lld: cannot read its directory record", z->path,
                              (long long)i);
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': no size in the directory", z->path, name);
    if (st.size > (zip_uint64_t)TSIM_ZIP_MAX_ENTRY)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': %llu bytes is above the limit of %lld", z->path,
                              name, (unsigned long long)st.size, (long long)TSIM_ZIP_MAX_ENTRY);
    if ((int64_t)st.size > TSIM_ZIP_RATIO_FREE && st.size / (st.comp_size ? st.comp_size : 1) > TSIM_ZIP_MAX_RATIO)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: entry '%s': %llu bytes compressed to %llu is a ratio above %d:1 (a zip bomb?); "
                              "refused",
                              z->path, name, (unsigned long long)st.size, (unsigned long long)st.comp_size,
                              TSIM_ZIP_MAX_RATIO);
    *size = (int64_t)st.size;
    return TSIM_OK;
}

static int read_fail(const tsim_zip *z, const char *name, zip_file_t *f, tsim_error *err)
{
    zip_error_t *ze = f ? zip_file_get_error(f) : zip_get_error(z->za);
    int code = zip_error_code_zip(ze);
    if (code == ZIP_ER_CRC)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': CRC error (the archive is damaged)", z->path, name);
    if (code == ZIP_ER_COMPNOTSUPP)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': compression method not supported", z->path, name);
    return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': cannot read: %s (truncated or damaged?)", z->path,
                          name, zip_error_strerror(ze));
}

/* Streams entry i through sink(ctx, bytes, n); stops at the declared size. */
typedef int (*sink_fn)(void *ctx, const unsigned char *p, size_t n, tsim_error *err);

static int stream(const tsim_zip *z, int64_t i, int64_t size, sink_fn sink, void *ctx, tsim_error *err)
{
    const char *name = tsim_zip_name(z, i);
    zip_file_t *f = zip_fopen_index(z->za, (zip_uint64_t)i, 0);
    if (!f)
        return read_fail(z, name, NULL, err);
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        zip_fclose(f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int64_t got = 0;
    int rc = TSIM_OK;
    for (;;) {
        zip_int64_t n = zip_fread(f, buf, CHUNK);
        if (n < 0) {
            rc = read_fail(z, name, f, err);
            break;
        }
        if (n == 0)
            break;
        if (got + n > size) { /* more than declared: the directory lies */
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': more data than the declared %lld bytes", z->path,
                                name, (long long)size);
            break;
        }
        got += n;
        if ((rc = sink(ctx, buf, (size_t)n, err)))
            break;
    }
    if (!rc && got != size)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': %lld bytes instead of the declared %lld (truncated?)",
                            z->path, name, (long long)got, (long long)size);
    free(buf);
    zip_fclose(f);
    return rc;
}

typedef struct {
    unsigned char *buf;
    size_t len;
} mem_sink;

static int to_mem(void *ctx, const unsigned char *p, size_t n, tsim_error *err)
{
    (void)err;
    mem_sink *m = ctx;
    memcpy(m->buf + m->len, p, n);
    m->len += n;
    return TSIM_OK;
}

int tsim_zip_read_all(const tsim_zip *z, int64_t i, int64_t max, unsigned char **buf, size_t *len, tsim_error *err)
{
    *buf = NULL;
    *len = 0;
    int64_t size;
    int rc = tsim_zip_size(z, i, &size, err);
    if (rc)
        return rc;
    if (size > max)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': %lld bytes is above the limit of %lld", z->path,
                              tsim_zip_name(z, i), (long long)size, (long long)max);
    mem_sink m = {malloc((size_t)size + 1), 0};
    if (!m.buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if ((rc = stream(z, i, size, to_mem, &m, err))) {
        free(m.buf);
        return rc;
    }
    m.buf[m.len] = 0;
    *buf = m.buf;
    *len = m.len;
    return TSIM_OK;
}

typedef struct {
    int fd;
    int64_t written;
} fd_sink;

static int to_fd(void *ctx, const unsigned char *p, size_t n, tsim_error *err)
{
    fd_sink *s = ctx;
    while (n > 0) {
        ssize_t w = write(s->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: write error: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
        s->written += w;
    }
    return TSIM_OK;
}

int tsim_zip_extract(const tsim_zip *z, int64_t i, int fd, int64_t *written, tsim_error *err)
{
    int64_t size;
    int rc = tsim_zip_size(z, i, &size, err);
    if (rc)
        return rc;
    fd_sink s = {fd, 0};
    rc = stream(z, i, size, to_fd, &s, err);
    if (written)
        *written = s.written;
    return rc;
}

int tsim_tmpfile(tsim_error *err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char path[4096];
    snprintf(path, sizeof path, "%s/taotsim-XXXXXX", dir);
    fd = mkstemp(path);
    if (fd < 0) {
        tsim_error_set(err, TSIM_E_INTERNAL, "%s: cannot create a temporary file: %s", dir, strerror(errno));
        return -1;
    }
    unlink(path);
    return fd;
}
