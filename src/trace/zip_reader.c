/* Zip archives through libzip (see zip_reader.h). */
#define _GNU_SOURCE /* O_TMPFILE */
#include "zip_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include "crc32_fast.h"
#include "fdio.h"

struct tsim_zip {
    zip_t *za;
    char *path;
    bool from_file; /* path names the archive on disk */
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
    int rc = wrap(out, za, path, err);
    if (!rc)
        (*out)->from_file = true;
    return rc;
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
    size_t w = tsim_write_full(s->fd, p, n);
    s->written += (int64_t)w;
    if (w < n)
        return tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: write error: %s", strerror(errno));
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

static int discard(void *ctx, const unsigned char *p, size_t n, tsim_error *err)
{
    (void)ctx;
    (void)p;
    (void)n;
    (void)err;
    return TSIM_OK;
}

/* The CRC of a stored entry computed over a read-only mapping of the
 * archive: no copy through libzip's buffers (a third of the time of reading
 * a stored tensor went to that copy and the CRC). */
static int verify_mapped(const tsim_zip *z, int64_t i, int64_t offset, int64_t size, uint32_t want, tsim_error *err)
{
    int fd = open(z->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const long page = sysconf(_SC_PAGESIZE);
    const int64_t start = offset / page * page, len = offset - start + size;
    void *map = len > 0 ? mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, (off_t)start) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    madvise(map, (size_t)len, MADV_SEQUENTIAL);
    const unsigned char *p = (const unsigned char *)map + (offset - start);
    uint32_t crc = 0;
    for (int64_t at = 0; at < size; at += (int64_t)CHUNK) {
        const size_t n = size - at < (int64_t)CHUNK ? (size_t)(size - at) : CHUNK;
        crc = tsim_crc32(crc, p + at, n);
    }
    munmap(map, (size_t)len);
    if (crc != want)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: entry '%s': CRC error (the archive is damaged)", z->path,
                              tsim_zip_name(z, i));
    return TSIM_OK;
}

int tsim_zip_verify(const tsim_zip *z, int64_t i, tsim_error *err)
{
    int64_t size, offset;
    int rc = tsim_zip_size(z, i, &size, err);
    if (rc)
        return rc;
    zip_stat_t st;
    zip_stat_init(&st);
    if (size > 0 && tsim_zip_stored_offset(z, i, &offset) == 0 &&
        zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) == 0 && (st.valid & ZIP_STAT_CRC)) {
        rc = verify_mapped(z, i, offset, size, st.crc, err);
        if (rc >= 0)
            return rc;
    }
    return stream(z, i, size, discard, NULL, err);
}

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* The local header's offset from the zip64 extra field of a central header
 * (the fields present follow the ones set to all ones there). */
static int zip64_local(const unsigned char *extra, size_t len, const unsigned char *cd, uint64_t *off)
{
    size_t skip = (rd(cd + 24, 4) == 0xFFFFFFFFu ? 8 : 0) + (rd(cd + 20, 4) == 0xFFFFFFFFu ? 8 : 0);
    for (size_t p = 0; p + 4 <= len;) {
        size_t id = (size_t)rd(extra + p, 2), n = (size_t)rd(extra + p + 2, 2);
        if (p + 4 + n > len)
            return -1;
        if (id == 1 && skip + 8 <= n) {
            *off = rd(extra + p + 4 + skip, 8);
            return 0;
        }
        p += 4 + n;
    }
    return -1;
}

int tsim_zip_stored_offset(const tsim_zip *z, int64_t i, int64_t *offset)
{
    zip_stat_t st;
    zip_stat_init(&st);
    const char *name = tsim_zip_name(z, i);
    if (!z->from_file || !name || zip_stat_index(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0 ||
        !(st.valid & ZIP_STAT_COMP_METHOD) || st.comp_method != ZIP_CM_STORE || st.size != st.comp_size)
        return -1;
    int fd = open(z->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat fs;
    int64_t found = -1;
    const size_t name_len = strlen(name);
    /* Walk the central directory for the entry's local header offset. */
    unsigned char tail[65557 + 20];
    if (fstat(fd, &fs) == 0 && fs.st_size >= 22) {
        const int64_t size = fs.st_size;
        const size_t n = (size_t)(size < (int64_t)sizeof tail ? size : (int64_t)sizeof tail);
        const int64_t base = size - (int64_t)n;
        uint64_t cd_off = 0, cd_len = 0;
        if (pread(fd, tail, n, (off_t)base) == (ssize_t)n) {
            for (size_t p = n - 22 + 1; p-- > 0;)
                if (rd(tail + p, 4) == 0x06054b50u) {
                    cd_len = rd(tail + p + 12, 4);
                    cd_off = rd(tail + p + 16, 4);
                    if (cd_off == 0xFFFFFFFFu && p >= 20 && rd(tail + p - 20, 4) == 0x07064b50u) {
                        unsigned char e64[56];
                        uint64_t at = rd(tail + p - 20 + 8, 8);
                        if (pread(fd, e64, sizeof e64, (off_t)at) == (ssize_t)sizeof e64 &&
                            rd(e64, 4) == 0x06064b50u) {
                            cd_len = rd(e64 + 40, 8);
                            cd_off = rd(e64 + 48, 8);
                        }
                    }
                    break;
                }
        }
        unsigned char *cd = cd_len > 0 && cd_len <= (uint64_t)size && cd_off <= (uint64_t)size - cd_len
                                ? malloc((size_t)cd_len)
                                : NULL;
        if (cd && pread(fd, cd, (size_t)cd_len, (off_t)cd_off) == (ssize_t)cd_len) {
            for (size_t p = 0; p + 46 <= cd_len && rd(cd + p, 4) == 0x02014b50u;) {
                size_t nl = (size_t)rd(cd + p + 28, 2), el = (size_t)rd(cd + p + 30, 2), cl = (size_t)rd(cd + p + 32, 2);
                if (p + 46 + nl + el + cl > cd_len)
                    break;
                if (nl == name_len && memcmp(cd + p + 46, name, nl) == 0) {
                    uint64_t local = rd(cd + p + 42, 4);
                    if (local == 0xFFFFFFFFu && zip64_local(cd + p + 46 + nl, el, cd + p, &local))
                        break;
                    unsigned char lh[30];
                    if (local <= (uint64_t)size - 30 && pread(fd, lh, 30, (off_t)local) == 30 &&
                        rd(lh, 4) == 0x04034b50u && rd(lh + 8, 2) == 0 && rd(lh + 26, 2) == nl) {
                        uint64_t data = local + 30 + nl + rd(lh + 28, 2);
                        if (data <= (uint64_t)size && st.size <= (uint64_t)size - data)
                            found = (int64_t)data;
                    }
                    break;
                }
                p += 46 + nl + el + cl;
            }
        }
        free(cd);
    }
    close(fd);
    if (found < 0)
        return -1;
    *offset = found;
    return 0;
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
