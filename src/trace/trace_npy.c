/* NumPy .npy (format versions 1.0, 2.0, 3.0): the magic, the version, the
 * header length, and the header itself, a Python dict literal with exactly
 * 'descr', 'fortran_order' and 'shape', padded with spaces and ended by a
 * newline. Parsed strictly; the data behind it is read by trace_dense.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "topology.h"
#include "trace_internal.h"

/* numpy itself refuses headers above 10000 bytes unless told otherwise;
 * this leaves room while keeping the read bounded. */
#define NPY_HEADER_MAX (1 << 20)

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct {
    const char *path; /* names the file (or the archive entry) in messages */
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
    return tsim_error_set(h->err, TSIM_E_INPUT, "%s: .npy header, byte %zu: %s", h->path, h->base + h->p, msg);
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
    if (tsim_dtype_from_name(descr, true, dt))
        return 0;
    if (descr[0] == '>' && descr[1] && strchr("iuf", descr[1]))
        return tsim_error_set(h->err, TSIM_E_INPUT,
                              "%s: dtype '%s' is big-endian: save it little-endian (a.astype('<%s'))", h->path,
                              descr, descr + 1);
    return tsim_error_set(h->err, TSIM_E_INPUT,
                          "%s: dtype '%s' is not supported: expected <i4, <i8, <u4, <u8, <f4 or <f8 (a.astype('<i8'))",
                          h->path, descr);
}

/* The magic, the version and the header length: *pre_len bytes of preamble
 * are followed by *hlen bytes of header. */
static int read_preamble(const char *path, int fd, int64_t base, int64_t size, size_t *pre_len, uint64_t *hlen,
                         int *major, tsim_error *err)
{
    unsigned char pre[12];
    ssize_t got = size < (int64_t)sizeof pre ? (ssize_t)size : (ssize_t)sizeof pre;
    got = pread(fd, pre, (size_t)got, (off_t)base);
    if (got < 0)
        got = 0;
    if (got < 8 || memcmp(pre, npy_magic, sizeof npy_magic) != 0) {
        if (got >= 6 && memcmp(pre, npy_magic, sizeof npy_magic) != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: not a NumPy .npy file (it does not start with \\x93NUMPY)",
                                  path);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: truncated .npy file: %lld bytes, too short for the preamble",
                              path, (long long)size);
    }
    *major = pre[6];
    const int minor = pre[7];
    if (*major < 1 || *major > 3 || minor != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)",
                              path, *major, minor);
    *pre_len = *major == 1 ? 10 : 12;
    if (got < (ssize_t)*pre_len)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: truncated .npy file: %lld bytes, too short for the preamble",
                              path, (long long)size);
    *hlen = *major == 1 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                        : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    if (*hlen > NPY_HEADER_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: .npy header of %llu bytes is above the limit of %d", path,
                              (unsigned long long)*hlen, NPY_HEADER_MAX);
    if ((int64_t)(*pre_len + *hlen) > size)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: truncated .npy file: the header needs %llu bytes, the file has %lld", path,
                              (unsigned long long)(*pre_len + *hlen), (long long)size);
    return TSIM_OK;
}

/* One "key: value" of the dict; *seen marks the keys read so far. */
static int parse_entry(hdr_parser *h, tsim_npy_info *out, bool seen[3])
{
    size_t key_at = h->p;
    char key[32], b[24];
    if (parse_str(h, key, sizeof key) || expect_char(h, ':', "':' after a key"))
        return TSIM_E_INPUT;
    const int which = strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2 : -1;
    if (which < 0 || seen[which]) {
        h->p = key_at;
        return hdr_fail(h, which >= 0 ? "key '%s' appears twice"
                                      : "unknown key '%s' (expected 'descr', 'fortran_order' and 'shape')",
                        key);
    }
    seen[which] = true;
    skip_spaces(h);
    if (which == 2)
        return parse_shape(h, out->shape, &out->ndim);
    if (which == 0) {
        if (h->p < h->len && h->text[h->p] == '[')
            return hdr_fail(h, "a structured dtype (a list of fields): save a plain integer or float array");
        return parse_str(h, out->descr, sizeof out->descr);
    }
    if (h->len - h->p >= 4 && memcmp(h->text + h->p, "True", 4) == 0) {
        out->fortran = true;
        h->p += 4;
    } else if (h->len - h->p >= 5 && memcmp(h->text + h->p, "False", 5) == 0) {
        h->p += 5;
    } else {
        return hdr_fail(h, "'fortran_order' must be True or False, found %s", here(h, b, sizeof b));
    }
    return 0;
}

/* The header dict, its padding and final newline; every key present. */
static int parse_dict(hdr_parser *h, int major, tsim_npy_info *out)
{
    char b[24];
    if (major < 3)
        for (size_t i = 0; i < h->len; i++)
            if ((unsigned char)h->text[i] >= 0x80) {
                h->p = i;
                return hdr_fail(h, "a non-ASCII byte in a version %d.0 header (only 3.0 allows UTF-8)", major);
            }
    if (expect_char(h, '{', "'{' to open the header dict"))
        return TSIM_E_INPUT;
    bool seen[3] = {false, false, false};
    for (;;) {
        skip_spaces(h);
        if (h->p < h->len && h->text[h->p] == '}') {
            h->p++;
            break;
        }
        if (parse_entry(h, out, seen))
            return TSIM_E_INPUT;
        skip_spaces(h);
        if (h->p < h->len && h->text[h->p] == ',') {
            h->p++;
            continue;
        }
        if (expect_char(h, '}', "',' or '}' after a value"))
            return TSIM_E_INPUT;
        break;
    }
    /* padding: spaces, then the newline that ends the header */
    skip_spaces(h);
    if (h->p + 1 != h->len || h->text[h->p] != '\n')
        return hdr_fail(h, "expected space padding and a final newline after the dict, found %s", here(h, b, sizeof b));
    if (!seen[0] || !seen[1] || !seen[2])
        return tsim_error_set(h->err, TSIM_E_INPUT, "%s: .npy header: missing key '%s'", h->path,
                              !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape");
    return 0;
}

int tsim_npy_read_header(const char *path, int fd, int64_t base, int64_t size, tsim_npy_info *nh, tsim_error *err)
{
    size_t pre_len = 0;
    uint64_t hlen = 0;
    int major = 0;
    memset(nh, 0, sizeof *nh);
    int rc = read_preamble(path, fd, base, size, &pre_len, &hlen, &major, err);
    if (rc)
        return rc;
    char *text = malloc(hlen + 1);
    if (!text)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    hdr_parser h = {path, text, hlen, 0, pre_len, err};
    if (tsim_pread_full(fd, text, hlen, base + (int64_t)pre_len) != hlen)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: read error in the .npy header", path);
    else
        rc = parse_dict(&h, major, nh);
    free(text);
    if (!rc)
        rc = parse_dtype(&h, nh->descr, &nh->dtype);
    if (!rc && nh->fortran)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: the array is in Fortran order (fortran_order: True); the reader takes C order: save "
                            "np.ascontiguousarray(a) instead",
                            path);
    nh->data_offset = base + (int64_t)(pre_len + hlen);
    return rc;
}

int tsim_npy_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    int fd;
    int64_t size;
    int rc = tsim_dense_open_file(r, &fd, &size, err);
    return rc ? rc : tsim_npy_open_at(r, fd, 0, size, opts, err);
}

int tsim_npy_open_at(tsim_reader *r, int fd, int64_t base, int64_t size, const tsim_read_options *opts,
                     tsim_error *err)
{
    int rc;
    tsim_npy_info nh;
    tsim_dense_spec spec = {.what = ""};
    if (!(rc = tsim_npy_read_header(r->path, fd, base, size, &nh, err)) && nh.ndim > 4)
        rc = tsim_dense_too_many_dims(r, "shape", nh.ndim, err);
    if (rc) {
        close(fd);
        return rc;
    }
    spec.dtype = nh.dtype;
    spec.data_offset = nh.data_offset;
    memcpy(spec.shape, nh.shape, sizeof spec.shape);
    spec.ndim = nh.ndim;

    cJSON *meta = tsim_dense_meta(r, "npy");
    cJSON *dims = cJSON_CreateArray();
    bool ok = meta && dims && cJSON_AddStringToObject(meta, "dtype", nh.descr);
    for (int k = 0; ok && k < nh.ndim; k++) {
        cJSON *v = cJSON_CreateNumber((double)nh.shape[k]);
        ok = v && cJSON_AddItemToArray(dims, v);
    }
    if (ok)
        ok = cJSON_AddItemToObject(meta, "shape", dims);
    else
        cJSON_Delete(dims);
    if (!ok) {
        cJSON_Delete(meta);
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return tsim_dense_finish(r, fd, &spec, base + size - spec.data_offset, opts, meta, err);
}
