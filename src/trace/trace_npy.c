/* NumPy .npy (format versions 1.0, 2.0, 3.0): the magic, the version, the
 * header length, and the header itself, a Python dict literal with exactly
 * 'descr', 'fortran_order' and 'shape', padded with spaces and ended by a
 * newline. Parsed strictly; the data behind it is read by trace_dense.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topology.h"
#include "trace_internal.h"

/* numpy itself refuses headers above 10000 bytes unless told otherwise;
 * this leaves room while keeping the read bounded. */
#define NPY_HEADER_MAX (1 << 20)

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct {
    const tsim_reader *r;
    const char *text;
    size_t len, p;
    size_t base; /* file offset of text[0] */
    tsim_error *err;
} hdr_parser;

static int hdr_fail(const hdr_parser *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int hdr_fail(const hdr_parser *h, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsim_error_set(h->err, TSIM_E_INPUT, "%s: .npy header, byte %zu: %s", h->r->path, h->base + h->p, msg);
}

static void skip_spaces(hdr_parser *h)
{
    while (h->p < h->len && h->text[h->p] == ' ')
        h->p++;
}

/* What is at the parser's position, for messages. */
static const char *here(const hdr_parser *h, char *buf, size_t cap)
{
    if (h->p >= h->len)
        return "the end of the header";
    size_t n = 0;
    buf[n++] = '"';
    for (size_t i = h->p; i < h->len && n + 2 < cap && n < 16; i++)
        buf[n++] = (unsigned char)h->text[i] < 0x20 || (unsigned char)h->text[i] >= 0x7f ? '?' : h->text[i];
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

static int expect_char(hdr_parser *h, char ch, const char *what)
{
    skip_spaces(h);
    if (h->p < h->len && h->text[h->p] == ch) {
        h->p++;
        return 0;
    }
    char b[24];
    return hdr_fail(h, "expected %s, found %s", what, here(h, b, sizeof b));
}

/* A Python string literal without escapes ('...' or "..."). */
static int parse_str(hdr_parser *h, char *out, size_t cap)
{
    skip_spaces(h);
    char b[24];
    if (h->p >= h->len || (h->text[h->p] != '\'' && h->text[h->p] != '"'))
        return hdr_fail(h, "expected a quoted string, found %s", here(h, b, sizeof b));
    char q = h->text[h->p];
    size_t start = ++h->p;
    while (h->p < h->len && h->text[h->p] != q) {
        unsigned char c = (unsigned char)h->text[h->p];
        if (c == '\\' || c < 0x20 || c >= 0x7f)
            return hdr_fail(h, "unexpected byte 0x%02x in a string", c);
        h->p++;
    }
    if (h->p >= h->len)
        return hdr_fail(h, "a string is never closed");
    size_t n = h->p - start;
    h->p++;
    if (n >= cap) {
        h->p = start;
        return hdr_fail(h, "string longer than %zu characters", cap - 1);
    }
    memcpy(out, h->text + start, n);
    out[n] = '\0';
    return 0;
}

/* A non-negative decimal integer (no sign, no leading zeros) up to max. */
static int parse_int(hdr_parser *h, int64_t max, int64_t *out)
{
    skip_spaces(h);
    char b[24];
    size_t start = h->p;
    int64_t v = 0;
    while (h->p < h->len && h->text[h->p] >= '0' && h->text[h->p] <= '9') {
        if (v > (max - (h->text[h->p] - '0')) / 10) {
            h->p = start;
            return hdr_fail(h, "dimension above the limit of %lld", (long long)max);
        }
        v = v * 10 + (h->text[h->p] - '0');
        h->p++;
    }
    if (h->p == start) {
        return hdr_fail(h, "expected a dimension (a non-negative integer), found %s", here(h, b, sizeof b));
    }
    if (h->text[start] == '0' && h->p - start > 1) {
        h->p = start;
        return hdr_fail(h, "a dimension with a leading zero");
    }
    *out = v;
    return 0;
}

static int parse_shape(hdr_parser *h, int64_t *shape, int *ndim)
{
    if (expect_char(h, '(', "'(' to open the shape tuple"))
        return TSIM_E_INPUT;
    *ndim = 0;
    skip_spaces(h);
    if (h->p < h->len && h->text[h->p] == ')') {
        h->p++;
        return 0;
    }
    for (;;) {
        if (*ndim == 8)
            return hdr_fail(h, "more than 8 dimensions");
        int64_t v = 0;
        if (parse_int(h, INT64_MAX / 16, &v))
            return TSIM_E_INPUT;
        if (*ndim < 4)
            shape[*ndim] = v;
        (*ndim)++;
        skip_spaces(h);
        if (h->p < h->len && h->text[h->p] == ')') {
            h->p++;
            break;
        }
        if (expect_char(h, ',', "',' or ')' in the shape tuple"))
            return TSIM_E_INPUT;
        skip_spaces(h);
        if (h->p < h->len && h->text[h->p] == ')') {
            h->p++;
            break;
        }
    }
    /* (5) is not a tuple in Python: a 1-tuple is written (5,) */
    return 0;
}

static int parse_dtype(const hdr_parser *h, const char *descr, tsim_dtype *dt)
{
    static const struct {
        const char *name;
        tsim_dtype t;
    } known[] = {{"<i4", TSIM_DT_I4}, {"<i8", TSIM_DT_I8}, {"<u4", TSIM_DT_U4},
                 {"<u8", TSIM_DT_U8}, {"<f4", TSIM_DT_F4}, {"<f8", TSIM_DT_F8}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(descr, known[i].name) == 0) {
            *dt = known[i].t;
            return 0;
        }
    if (descr[0] == '>' && descr[1] && strchr("iuf", descr[1]))
        return tsim_error_set(h->err, TSIM_E_INPUT,
                              "%s: dtype '%s' is big-endian: save it little-endian (a.astype('<%s'))", h->r->path,
                              descr, descr + 1);
    return tsim_error_set(h->err, TSIM_E_INPUT,
                          "%s: dtype '%s' is not supported: expected <i4, <i8, <u4, <u8, <f4 or <f8 (a.astype('<i8'))",
                          h->r->path, descr);
}

int tsim_npy_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    int fd = open(r->path, O_RDONLY);
    if (fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", r->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a regular file", r->path);
    }
    const int64_t size = (int64_t)st.st_size;
    unsigned char pre[12];
    ssize_t got = pread(fd, pre, sizeof pre, 0);
    if (got < 0)
        got = 0;
    if (got < 8 || memcmp(pre, npy_magic, sizeof npy_magic) != 0) {
        close(fd);
        if (got >= 6 && memcmp(pre, npy_magic, sizeof npy_magic) != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: not a NumPy .npy file (it does not start with \\x93NUMPY)",
                                  r->path);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: truncated .npy file: %lld bytes, too short for the preamble",
                              r->path, (long long)size);
    }
    const int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)",
                              r->path, major, minor);
    }
    const size_t pre_len = major == 1 ? 10 : 12;
    if (got < (ssize_t)pre_len) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: truncated .npy file: %lld bytes, too short for the preamble",
                              r->path, (long long)size);
    }
    const uint64_t hlen = major == 1 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                                     : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
                                           (uint64_t)pre[11] << 24;
    if (hlen > NPY_HEADER_MAX) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: .npy header of %llu bytes is above the limit of %d", r->path,
                              (unsigned long long)hlen, NPY_HEADER_MAX);
    }
    if ((int64_t)(pre_len + hlen) > size) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: truncated .npy file: the header needs %llu bytes, the file has %lld", r->path,
                              (unsigned long long)(pre_len + hlen), (long long)size);
    }
    char *text = malloc(hlen + 1);
    if (!text) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    size_t have = 0;
    while (have < hlen) {
        ssize_t n = pread(fd, text + have, hlen - have, (off_t)(pre_len + have));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    text[have] = '\0';
    hdr_parser h = {r, text, hlen, 0, pre_len, err};
    int rc = have == hlen ? 0 : tsim_error_set(err, TSIM_E_INPUT, "%s: read error in the .npy header", r->path);

    char descr[32] = "";
    bool fortran = false, have_descr = false, have_fortran = false, have_shape = false;
    int64_t shape[4] = {0};
    int ndim = 0;
    char b[24];
    if (!rc && major < 3) {
        for (size_t i = 0; i < hlen; i++)
            if ((unsigned char)text[i] >= 0x80) {
                h.p = i;
                rc = hdr_fail(&h, "a non-ASCII byte in a version %d.0 header (only 3.0 allows UTF-8)", major);
                break;
            }
    }
    if (!rc)
        rc = expect_char(&h, '{', "'{' to open the header dict");
    while (!rc) {
        skip_spaces(&h);
        if (h.p < h.len && h.text[h.p] == '}') {
            h.p++;
            break;
        }
        size_t key_at = h.p;
        char key[32];
        if ((rc = parse_str(&h, key, sizeof key)) || (rc = expect_char(&h, ':', "':' after a key")))
            break;
        bool *seen = strcmp(key, "descr") == 0           ? &have_descr
                     : strcmp(key, "fortran_order") == 0 ? &have_fortran
                     : strcmp(key, "shape") == 0         ? &have_shape
                                                         : NULL;
        if (!seen || *seen) {
            h.p = key_at;
            rc = hdr_fail(&h, seen ? "key '%s' appears twice" : "unknown key '%s' (expected 'descr', 'fortran_order' and 'shape')", key);
            break;
        }
        *seen = true;
        if (seen == &have_descr) {
            skip_spaces(&h);
            if (h.p < h.len && h.text[h.p] == '[') {
                rc = hdr_fail(&h, "a structured dtype (a list of fields): save a plain integer or float array");
                break;
            }
            rc = parse_str(&h, descr, sizeof descr);
        } else if (seen == &have_fortran) {
            skip_spaces(&h);
            if (h.len - h.p >= 4 && memcmp(h.text + h.p, "True", 4) == 0) {
                fortran = true;
                h.p += 4;
            } else if (h.len - h.p >= 5 && memcmp(h.text + h.p, "False", 5) == 0) {
                h.p += 5;
            } else {
                rc = hdr_fail(&h, "'fortran_order' must be True or False, found %s", here(&h, b, sizeof b));
            }
        } else {
            rc = parse_shape(&h, shape, &ndim);
        }
        if (rc)
            break;
        skip_spaces(&h);
        if (h.p < h.len && h.text[h.p] == ',') {
            h.p++;
            continue;
        }
        rc = expect_char(&h, '}', "',' or '}' after a value");
        break;
    }
    if (!rc) {
        /* padding: spaces, then the newline that ends the header */
        skip_spaces(&h);
        if (h.p + 1 != h.len || h.text[h.p] != '\n')
            rc = hdr_fail(&h, "expected space padding and a final newline after the dict, found %s",
                          here(&h, b, sizeof b));
    }
    free(text);
    if (!rc && (!have_descr || !have_fortran || !have_shape))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: .npy header: missing key '%s'", r->path,
                            !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    tsim_dtype dt = TSIM_DT_I8;
    if (!rc)
        rc = parse_dtype(&h, descr, &dt);
    if (!rc && fortran)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: the array is in Fortran order (fortran_order: True); the reader takes C order: save "
                            "np.ascontiguousarray(a) instead",
                            r->path);
    if (!rc && ndim > 4) {
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: shape has %d dimensions: expected [L, E] (one record per layer), [T, L, E] (totals "
                            "per microbatch and layer) or [T, L, R, E] (per source rank)",
                            r->path, ndim);
    }
    if (rc) {
        close(fd);
        return rc;
    }
    tsim_dense_spec spec = {"", dt, ndim, {shape[0], shape[1], shape[2], shape[3]}, (int64_t)(pre_len + hlen)};
    rc = tsim_dense_open(r, fd, &spec, size - spec.data_offset, opts, err);
    if (rc)
        return rc;

    char base[256];
    tsim_path_base(r->path, base, sizeof base);
    cJSON *meta = cJSON_CreateObject();
    cJSON *dims = cJSON_CreateArray();
    bool ok = meta && dims && cJSON_AddStringToObject(meta, "source", "npy") &&
              cJSON_AddStringToObject(meta, "file", base) &&
              cJSON_AddStringToObject(meta, "dtype", descr);
    for (int k = 0; ok && k < ndim; k++) {
        cJSON *v = cJSON_CreateNumber((double)shape[k]);
        ok = v && cJSON_AddItemToArray(dims, v);
    }
    if (ok)
        ok = cJSON_AddItemToObject(meta, "shape", dims);
    else
        cJSON_Delete(dims);
    if (!ok) {
        cJSON_Delete(meta);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    r->hdr.meta = meta;
    return TSIM_OK;
}
