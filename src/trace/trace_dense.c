/* Records out of a dense little-endian array on disk (.npy, .safetensors):
 * [L,E] one record per layer, [T,L,E] per-expert totals per microbatch and
 * layer, [T,L,R,E] per source rank. The array is read in chunks of whole
 * records into one buffer allocated at open, so memory stays flat however
 * large the file; every element is checked (non-negative, whole, <= 2^40)
 * and the first bad one is named by its index and byte offset. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "topology.h"
#include "trace_internal.h"

/* Records are read this many bytes at a time (or one record, if larger). */
#define CHUNK_BYTES ((size_t)1 << 20)

typedef struct {
    int fd;
    tsim_dense_spec spec;
    int itemsize;
    int64_t L, R, E; /* R = 0: totals */
    int64_t nrecords, next;
    size_t rec_elems, rec_bytes;
    unsigned char *buf;
    int64_t buf_first, buf_count; /* records held in buf */
    int64_t chunk_records;
    int64_t file_size;
} dense;

int tsim_dtype_size(tsim_dtype t)
{
    return t == TSIM_DT_I4 || t == TSIM_DT_U4 || t == TSIM_DT_F4 ? 4 : 8;
}

bool tsim_dtype_from_name(const char *name, bool npy, tsim_dtype *out)
{
    static const struct {
        const char *npy, *safetensors;
        tsim_dtype t;
    } known[] = {{"<i4", "I32", TSIM_DT_I4}, {"<i8", "I64", TSIM_DT_I8}, {"<u4", "U32", TSIM_DT_U4},
                 {"<u8", "U64", TSIM_DT_U8}, {"<f4", "F32", TSIM_DT_F4}, {"<f8", "F64", TSIM_DT_F8}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, npy ? known[i].npy : known[i].safetensors) == 0) {
            *out = known[i].t;
            return true;
        }
    return false;
}

int tsim_dense_too_many_dims(const tsim_reader *r, const char *what, int ndim, tsim_error *err)
{
    return tsim_error_set(err, TSIM_E_INPUT, "%s: %s has %d dimensions: " TSIM_DENSE_SHAPES, r->path, what, ndim);
}

int tsim_dense_open_file(const tsim_reader *r, int *fd, int64_t *size, tsim_error *err)
{
    *fd = open(r->path, O_RDONLY);
    if (*fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", r->path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a regular file", r->path);
    }
    *size = (int64_t)st.st_size;
    return TSIM_OK;
}

cJSON *tsim_dense_meta(const tsim_reader *r, const char *source)
{
    char base[256];
    tsim_path_base(r->path, base, sizeof base);
    cJSON *meta = cJSON_CreateObject();
    if (!meta || !cJSON_AddStringToObject(meta, "source", source) || !cJSON_AddStringToObject(meta, "file", base)) {
        cJSON_Delete(meta);
        return NULL;
    }
    return meta;
}

int tsim_dense_finish(tsim_reader *r, int fd, const tsim_dense_spec *spec, int64_t data_bytes,
                      const tsim_read_options *opts, cJSON *meta, tsim_error *err)
{
    int rc = tsim_dense_open(r, fd, spec, data_bytes, opts, err);
    if (rc) {
        cJSON_Delete(meta);
        return rc;
    }
    r->hdr.meta = meta;
    return TSIM_OK;
}

void tsim_shape_text(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Little-endian loads that compile to plain moves on little-endian hosts. */
static inline uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Decodes n elements into dst. Returns the index of the first element that is
 * not a count (negative, fractional, NaN, above 2^40), or -1; *any is set when
 * some count is not zero. */
static long decode(tsim_dtype t, const unsigned char *src, size_t n, int64_t *dst, bool *any)
{
    const uint64_t max = (uint64_t)TSIM_MAX_COUNT;
    uint64_t acc = 0;
    switch (t) {
    case TSIM_DT_I8:
    case TSIM_DT_U8: /* a negative int64 is a huge uint64: one test covers both */
        for (size_t i = 0; i < n; i++) {
            uint64_t v = le64(src + 8 * i);
            if (v > max)
                return (long)i;
            dst[i] = (int64_t)v;
            acc |= v;
        }
        break;
    case TSIM_DT_I4:
        for (size_t i = 0; i < n; i++) {
            uint32_t v = le32(src + 4 * i);
            if (v & UINT32_C(0x80000000))
                return (long)i;
            dst[i] = (int64_t)v;
            acc |= v;
        }
        break;
    case TSIM_DT_U4: /* every uint32 is below 2^40 */
        for (size_t i = 0; i < n; i++) {
            uint32_t v = le32(src + 4 * i);
            dst[i] = (int64_t)v;
            acc |= v;
        }
        break;
    case TSIM_DT_F4:
        for (size_t i = 0; i < n; i++) {
            uint32_t bits = le32(src + 4 * i);
            float f;
            memcpy(&f, &bits, sizeof f);
            if (!(f >= 0.0f && f <= (float)max))
                return (long)i;
            int64_t v = (int64_t)f;
            if ((float)v != f)
                return (long)i;
            dst[i] = v;
            acc |= (uint64_t)v;
        }
        break;
    case TSIM_DT_F8:
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = le64(src + 8 * i);
            double d;
            memcpy(&d, &bits, sizeof d);
            if (!(d >= 0.0 && d <= (double)max))
                return (long)i;
            int64_t v = (int64_t)d;
            if ((double)v != d)
                return (long)i;
            dst[i] = v;
            acc |= (uint64_t)v;
        }
        break;
    }
    *any = *any || acc != 0;
    return -1;
}

/* Why element src is not a count. */
static void element_problem(char *buf, size_t cap, tsim_dtype t, const unsigned char *src)
{
    char num[64];
    double d = 0;
    switch (t) {
    case TSIM_DT_I8:
        snprintf(num, sizeof num, "%lld", (long long)(int64_t)le64(src));
        d = (double)(int64_t)le64(src);
        break;
    case TSIM_DT_U8:
        snprintf(num, sizeof num, "%llu", (unsigned long long)le64(src));
        d = (double)le64(src);
        break;
    case TSIM_DT_I4:
        snprintf(num, sizeof num, "%ld", (long)(int32_t)le32(src));
        d = (double)(int32_t)le32(src);
        break;
    case TSIM_DT_U4:
        snprintf(num, sizeof num, "%lu", (unsigned long)le32(src));
        d = (double)le32(src);
        break;
    case TSIM_DT_F4: {
        uint32_t bits = le32(src);
        float f;
        memcpy(&f, &bits, sizeof f);
        d = f;
        tsim_number_text(num, sizeof num, d);
        break;
    }
    case TSIM_DT_F8: {
        uint64_t bits = le64(src);
        memcpy(&d, &bits, sizeof d);
        tsim_number_text(num, sizeof num, d);
        break;
    }
    }
    if (isnan(d))
        snprintf(buf, cap, "count NaN is not a number");
    else if (d < 0)
        snprintf(buf, cap, "count %s is negative", num);
    else if (d > (double)TSIM_MAX_COUNT || isinf(d))
        snprintf(buf, cap, "count %s is above the limit of 2^40", isinf(d) ? "inf" : num);
    else
        snprintf(buf, cap, "count %s is not a whole number", num);
}

static int bad_element(tsim_reader *r, const dense *d, int64_t rec, size_t i, const unsigned char *src,
                       tsim_error *err)
{
    int64_t idx[4];
    const int nd = d->spec.ndim;
    int64_t flat = rec * (int64_t)d->rec_elems + (int64_t)i;
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = flat % d->spec.shape[k];
        flat /= d->spec.shape[k];
    }
    char at[128], problem[128];
    tsim_shape_text(at, sizeof at, idx, nd);
    element_problem(problem, sizeof problem, d->spec.dtype, src);
    long long byte = (long long)(d->spec.data_offset + (rec * (int64_t)d->rec_elems + (int64_t)i) * d->itemsize);
    return tsim_error_set(err, TSIM_E_INPUT, "%s: %selement %s at byte %lld: %s, expected a non-negative integer",
                          r->path, d->spec.what, at, byte, problem);
}

/* Makes record k available in the buffer; returns its bytes or NULL with err. */
static const unsigned char *record_bytes(tsim_reader *r, dense *d, int64_t k, tsim_error *err)
{
    if (k < d->buf_first || k >= d->buf_first + d->buf_count) {
        int64_t count = d->nrecords - k < d->chunk_records ? d->nrecords - k : d->chunk_records;
        size_t want = (size_t)count * d->rec_bytes;
        off_t at = (off_t)(d->spec.data_offset + k * (int64_t)d->rec_bytes);
        size_t got = tsim_pread_full(d->fd, d->buf, want, (int64_t)at);
        if (got < want) {
            if (errno)
                tsim_error_set(err, TSIM_E_INPUT, "%s: read error at byte %lld: %s", r->path,
                               (long long)(at + (off_t)got), strerror(errno));
            else
                tsim_error_set(err, TSIM_E_INPUT, "%s: the file ended at byte %lld while being read (was it cut short?)",
                               r->path, (long long)(at + (off_t)got));
            return NULL;
        }
        d->buf_first = k;
        d->buf_count = count;
    }
    return d->buf + (size_t)(k - d->buf_first) * d->rec_bytes;
}

static int dense_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    dense *d = r->ext;
    const size_t E = (size_t)d->E;
    while (d->next < d->nrecords) {
        const int64_t k = d->next++;
        const unsigned char *src = record_bytes(r, d, k, err);
        if (!src)
            return err ? err->code : TSIM_E_INPUT;
        bool any = false;
        if (d->R == 0) {
            long bad = decode(d->spec.dtype, src, E, r->tpe, &any);
            if (bad >= 0)
                return bad_element(r, d, k, (size_t)bad, src + (size_t)bad * (size_t)d->itemsize, err);
            raw->kind = REC_EXPERT_COUNTS;
        } else {
            tsim_reader_begin_counts(r);
            for (int row = 0; row < (int)d->R; row++) {
                const unsigned char *rs = src + (size_t)row * E * (size_t)d->itemsize;
                long bad = decode(d->spec.dtype, rs, E, tsim_reader_row(r, row), &any);
                if (bad >= 0)
                    return bad_element(r, d, k, (size_t)row * E + (size_t)bad,
                                       rs + (size_t)bad * (size_t)d->itemsize, err);
                tsim_reader_row_done(r);
            }
            raw->kind = REC_COUNTS;
        }
        if (!any) {
            r->skipped_zero++;
            continue;
        }
        raw->microbatch = k / d->L;
        raw->layer = k % d->L;
        raw->line = 0;
        return 1;
    }
    return 0;
}

static void dense_close(tsim_reader *r)
{
    dense *d = r->ext;
    if (d->fd >= 0)
        close(d->fd);
    free(d->buf);
    free(d);
    r->ext = NULL;
}

static void dense_progress(const tsim_reader *r, int64_t *bytes, int64_t *done, int64_t *total)
{
    const dense *d = r->ext;
    *bytes = d->spec.data_offset + d->next * (int64_t)d->rec_bytes;
    *done = *bytes;
    *total = d->file_size;
}

int tsim_dense_open(tsim_reader *r, int fd, const tsim_dense_spec *spec, int64_t data_bytes,
                    const tsim_read_options *opts, tsim_error *err)
{
    dense *d = calloc(1, sizeof *d);
    if (!d) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    d->fd = fd;
    d->spec = *spec;
    r->ext = d;
    r->ext_close = dense_close;
    r->ext_progress = dense_progress;
    struct stat st;
    d->file_size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
    d->itemsize = tsim_dtype_size(spec->dtype);

    const int nd = spec->ndim;
    char shape[160];
    tsim_shape_text(shape, sizeof shape, spec->shape, nd);
    if (nd < 2 || nd > 4)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %sshape %s has %d dimension%s: " TSIM_DENSE_SHAPES,
                              r->path, spec->what, shape, nd, nd == 1 ? "" : "s");
    const int64_t E = spec->shape[nd - 1];
    const int64_t L = spec->shape[nd == 2 ? 0 : 1];
    const int64_t T = nd == 2 ? 1 : spec->shape[0];
    const int64_t R = nd == 4 ? spec->shape[2] : 0;
    if (E < 1 || E > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %sshape %s: %lld experts (the last dimension), expected 1..%d",
                              r->path, spec->what, shape, (long long)E, TSIM_MAX_EXPERTS);
    if (nd == 4 && (R < 1 || R > TSIM_MAX_RANKS))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %sshape %s: %lld ranks (dimension 3), expected 1..%d", r->path,
                              spec->what, shape, (long long)R, TSIM_MAX_RANKS);
    if (R * E > TSIM_MAX_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %sshape %s: %lld ranks x %lld experts is above the limit of %lld counts per record",
                              r->path, spec->what, shape, (long long)R, (long long)E, (long long)TSIM_MAX_CELLS);
    if (T > TSIM_MAX_INDEX || L > TSIM_MAX_INDEX)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %sshape %s: more microbatches or layers than 2^53 - 1", r->path,
                              spec->what, shape);
    /* elements x itemsize, without overflow */
    uint64_t need = (uint64_t)d->itemsize;
    bool overflow = false;
    for (int k = 0; k < nd; k++)
        overflow = overflow || __builtin_mul_overflow(need, (uint64_t)spec->shape[k], &need);
    if (overflow)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %sshape %s is too large: 2^64 bytes or more of data", r->path,
                              spec->what, shape);
    if (need > (uint64_t)data_bytes)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %sshape %s of %d-byte elements needs %llu bytes of data, but the file holds %lld "
                              "(truncated?)",
                              r->path, spec->what, shape, d->itemsize, (unsigned long long)need, (long long)data_bytes);
    if (need < (uint64_t)data_bytes)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %s%lld bytes after the data of shape %s (%llu bytes): the shape does not describe "
                              "the file",
                              r->path, spec->what, (long long)data_bytes - (long long)need, shape,
                              (unsigned long long)need);

    int ep;
    if (R == 0) {
        if (!opts || opts->ep <= 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: %sshape %s holds per-expert totals and no EP size: give --ep N (the number of "
                                  "ranks, dividing %lld experts)",
                                  r->path, spec->what, shape, (long long)E);
        if (E % opts->ep != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: experts %lld is not divisible by --ep %d", r->path,
                                  (long long)E, opts->ep);
        ep = opts->ep;
    } else {
        if (E % R != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %sshape %s: experts %lld is not divisible by the %lld ranks",
                                  r->path, spec->what, shape, (long long)E, (long long)R);
        ep = (int)R;
    }
    d->E = E;
    d->L = L;
    d->R = R;
    d->nrecords = T * L;
    d->rec_elems = (size_t)(R ? R : 1) * (size_t)E;
    d->rec_bytes = d->rec_elems * (size_t)d->itemsize;
    d->chunk_records = (int64_t)(CHUNK_BYTES / d->rec_bytes);
    if (d->chunk_records < 1)
        d->chunk_records = 1;
    if (d->chunk_records > d->nrecords)
        d->chunk_records = d->nrecords > 0 ? d->nrecords : 1;
    d->buf = malloc((size_t)d->chunk_records * d->rec_bytes);
    if (!d->buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for %zu bytes", (size_t)d->chunk_records * d->rec_bytes);
    d->buf_first = -1;

    r->hdr.experts = (int)E;
    r->hdr.ep = ep;
    r->file_ep = ep;
    r->hdr.ranks_per_node = 8;
    r->hdr.topk = 0;
    r->next_raw = dense_next;
    return TSIM_OK;
}
