/* Trace writers: JSON document and JSON Lines (optionally gzip), streamed
 * record by record into an atomic output file. Records are always written
 * with "counts"; the same header and records always give the same bytes,
 * whether the header is written first or, for a header known only at the end
 * (gen's achieved imbalance), at close before the records kept in a scratch
 * file. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sendfile.h>
#endif
#include <zlib.h>

#include "crc32_fast.h"
#include "fdio.h"
#include "gzline.h"
#include "outfile.h"
#include "topology.h"
#include "trace_internal.h"
#include "utf8.h"

#define FLUSH_AT ((size_t)1 << 16)
/* Blocked gzip: a .jsonl.gz is a series of independent gzip members, each
 * ending at a record boundary once about this many text bytes went in, so an
 * index can point a reader at a member start (any gzip reader reads the
 * members as one stream). */
#define GZ_MEMBER ((size_t)1 << 20)

struct tsim_writer {
    tsim_outfile out;
    tsim_trace_format fmt;
    int ep, experts;
    int64_t records;
    char *path;
    char *buf; /* pending text */
    size_t len, cap;
    bool gz;
    z_stream z;
    unsigned char *zbuf;
    size_t member_in; /* text bytes deflated into the current member */
    int64_t members;  /* members finished */
    int level;        /* deflate level, for the header's XFL byte */
    /* The current member's raw deflate output, held until it ends: its
     * header carries the member's length (TSIM_GZ_SUBFIELD_*), so a reader
     * can hand whole members to other threads without inflating first. */
    unsigned char *member;
    size_t member_len, member_cap;
    uint32_t crc; /* CRC-32 of the current member's text */
    /* Opened by tsim_writer_open_body: out is the scratch file holding the
     * records; the header comes at tsim_writer_close_with_header. */
    bool deferred;
    /* The counts below 100 as ready text: a comma, their one or two digits,
     * and in the fourth byte that text's length. */
    char small[100][4];
};

static int reserve(tsim_writer *w, size_t more, tsim_error *err)
{
    if (w->len + more <= w->cap)
        return TSIM_OK;
    size_t cap = w->cap ? w->cap : FLUSH_AT * 2;
    while (cap < w->len + more)
        cap *= 2;
    char *p = realloc(w->buf, cap);
    if (!p)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory while writing %s", w->path);
    w->buf = p;
    w->cap = cap;
    return TSIM_OK;
}

static void put(tsim_writer *w, const char *s, size_t n)
{
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void put_str(tsim_writer *w, const char *s)
{
    put(w, s, strlen(s));
}

static const char TWO_DIGITS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                 "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";

/* Decimal digits without printf. */
static void put_int(tsim_writer *w, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    while (n)
        w->buf[w->len++] = tmp[--n];
}

/* A JSON string: quotes, backslashes and control bytes escaped. Needs 6 bytes
 * of room per input byte plus 2. */
static void put_json_string(tsim_writer *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    w->buf[w->len++] = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            w->buf[w->len++] = '\\';
            w->buf[w->len++] = (char)ch;
        } else if (ch < 0x20) {
            put(w, "\\u00", 4);
            w->buf[w->len++] = hex[ch >> 4];
            w->buf[w->len++] = hex[ch & 15];
        } else {
            w->buf[w->len++] = (char)ch;
        }
    }
    w->buf[w->len++] = '"';
}

/* Appends deflated bytes from zbuf to the current member. */
static int keep_deflated(tsim_writer *w, size_t have, tsim_error *err)
{
    if (have == 0)
        return TSIM_OK; /* nothing yet: memcpy to a member not yet allocated is undefined even for 0 bytes */
    if (w->member_len + have > w->member_cap) {
        size_t cap = w->member_cap ? w->member_cap : FLUSH_AT * 4;
        while (cap < w->member_len + have)
            cap *= 2;
        unsigned char *p = realloc(w->member, cap);
        if (!p)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory while writing %s", w->path);
        w->member = p;
        w->member_cap = cap;
    }
    memcpy(w->member + w->member_len, w->zbuf, have);
    w->member_len += have;
    return TSIM_OK;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes the finished member: a gzip header whose extra field holds the
 * member's total length, the deflated data, CRC-32 and length of the text. */
static int write_member(tsim_writer *w, size_t text_len, tsim_error *err)
{
    unsigned char head[TSIM_GZ_MEMBER_HEADER] = {0x1f, 0x8b, 8, 4 /* FEXTRA */, 0, 0, 0, 0 /* no time stamp */};
    /* XFL as zlib sets it: 2 for the slowest level, 4 for the fastest. */
    head[8] = w->level == 9 ? 2 : w->level >= 0 && w->level < 2 ? 4 : 0;
    head[9] = 3; /* Unix, on every system, so the bytes are the same everywhere */
    head[10] = 8; /* XLEN: one subfield of 4 + 4 bytes */
    head[12] = TSIM_GZ_SUBFIELD_ID1;
    head[13] = TSIM_GZ_SUBFIELD_ID2;
    head[14] = 4;
    const uint64_t total = (uint64_t)TSIM_GZ_MEMBER_HEADER + w->member_len + 8;
    if (total > UINT32_MAX)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: a gzip member of %llu bytes is too long", w->path,
                              (unsigned long long)total);
    put_le32(head + 16, (uint32_t)total);
    unsigned char tail[8];
    put_le32(tail, w->crc);
    put_le32(tail + 4, (uint32_t)text_len);
    if (fwrite(head, 1, sizeof head, w->out.fp) != sizeof head ||
        (w->member_len && fwrite(w->member, 1, w->member_len, w->out.fp) != w->member_len) ||
        fwrite(tail, 1, sizeof tail, w->out.fp) != sizeof tail)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", w->path, strerror(errno));
    w->member_len = 0;
    w->crc = 0;
    return TSIM_OK;
}

static int emit(tsim_writer *w, const void *data, size_t n, int flush, tsim_error *err)
{
    if (!w->gz) {
        if (n && fwrite(data, 1, n, w->out.fp) != n)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", w->path, strerror(errno));
        return TSIM_OK;
    }
    w->crc = tsim_crc32(w->crc, data, n);
    w->z.next_in = (Bytef *)(uintptr_t)data;
    w->z.avail_in = (uInt)n;
    do {
        w->z.next_out = w->zbuf;
        w->z.avail_out = (uInt)FLUSH_AT;
        int zrc = deflate(&w->z, flush);
        if (zrc == Z_STREAM_ERROR)
            return tsim_error_set(err, TSIM_E_INTERNAL, "%s: zlib deflate failed", w->path);
        int rc = keep_deflated(w, FLUSH_AT - w->z.avail_out, err);
        if (rc)
            return rc;
    } while (w->z.avail_out == 0 || (flush == Z_FINISH && w->z.avail_in > 0));
    return TSIM_OK;
}

static int drain(tsim_writer *w, tsim_error *err)
{
    int rc = emit(w, w->buf, w->len, Z_NO_FLUSH, err);
    w->member_in += w->len;
    w->len = 0;
    return rc;
}

/* Ends the current gzip member with the pending text; the next starts fresh. */
static int end_member(tsim_writer *w, tsim_error *err)
{
    int rc = emit(w, w->buf, w->len, Z_FINISH, err);
    if (!rc)
        rc = write_member(w, w->member_in + w->len, err);
    w->len = 0;
    w->member_in = 0;
    w->members++;
    if (!rc && deflateReset(&w->z) != Z_OK)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "%s: zlib could not start the next gzip member", w->path);
    return rc;
}

int tsim_writer_set_gzip_level(tsim_writer *w, int level, tsim_error *err)
{
    if (level < 0 || level > 9)
        return tsim_error_set(err, TSIM_E_INPUT, "gzip level %d is out of range 0..9", level);
    if (!w->gz)
        return TSIM_OK;
    /* Nothing has been deflated yet (the header is still pending), so the
     * new level applies to the whole file. */
    if (w->members || w->member_in || deflateParams(&w->z, level, Z_DEFAULT_STRATEGY) != Z_OK)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: the gzip level must be set before writing", w->path);
    w->level = level;
    return TSIM_OK;
}

static int check_header(const char *path, const tsim_trace_header *h, tsim_error *err)
{
    if (h->experts < 1 || h->experts > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: experts %d is out of range 1..%d", path, h->experts,
                              TSIM_MAX_EXPERTS);
    if (h->ep < 1 || h->ep > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: ep %d is out of range 1..%d", path, h->ep, TSIM_MAX_RANKS);
    if (h->experts % h->ep != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: experts %d is not divisible by ep %d", path, h->experts, h->ep);
    if (h->ranks_per_node < 1 || h->ranks_per_node > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: ranks_per_node %d is out of range 1..%d", path, h->ranks_per_node,
                              TSIM_MAX_RANKS);
    if (h->topk < 0 || h->topk > h->experts)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: topk %d is out of range 0..%d", path, h->topk, h->experts);
    if (h->meta && !cJSON_IsObject(h->meta))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: meta must be a JSON object", path);
    if (h->home) {
        tsim_topology t;
        int rc = tsim_topology_init(&t, h->ep, h->experts, h->ranks_per_node, 0, h->home, err);
        if (rc) {
            tsim_error_prefix(err, "%s: home", path);
            return rc;
        }
        tsim_topology_free(&t);
    }
    return TSIM_OK;
}

static void writer_free(tsim_writer *w)
{
    if (w->gz)
        deflateEnd(&w->z);
    free(w->zbuf);
    free(w->member);
    free(w->buf);
    free(w->path);
    free(w);
}

/* The formats a writer takes: .json, .jsonl and .jsonl.gz. */
static int writable_format(const char *path, tsim_trace_format *fmt, tsim_error *err)
{
    int rc = tsim_trace_format_from_path(path, fmt, err);
    if (rc)
        return rc;
    if (*fmt == TSIM_FMT_CSV)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: CSV is an import format only; write .json, .jsonl or .jsonl.gz",
                              path);
    if (tsim_trace_format_import_only(*fmt))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %s is an import format only; write .json, .jsonl or .jsonl.gz", path,
                              *fmt == TSIM_FMT_NPY ? ".npy" : ".safetensors");
    return TSIM_OK;
}

/* A writer with nothing open yet: the gzip stream started for .jsonl.gz. */
static int writer_new(tsim_writer **out, const char *path, tsim_trace_format fmt, int ep, int experts,
                      tsim_error *err)
{
    *out = NULL;
    tsim_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    w->fmt = fmt;
    w->ep = ep;
    w->experts = experts;
    for (int v = 0; v < 100; v++) {
        const char *d = TWO_DIGITS + 2 * v;
        const bool one = v < 10;
        w->small[v][0] = ',';
        w->small[v][1] = d[one];
        w->small[v][2] = one ? '\0' : d[1];
        w->small[v][3] = (char)(one ? 2 : 3);
    }
    if (fmt == TSIM_FMT_JSONL_GZ) {
        w->zbuf = malloc(FLUSH_AT);
        /* windowBits -15: raw deflate; write_member wraps each member in
         * gzip itself (a header with its length, no time stamp). */
        w->level = 6;
        if (!w->zbuf || deflateInit2(&w->z, w->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            writer_free(w);
            return tsim_error_set(err, TSIM_E_INTERNAL, "zlib could not start a gzip stream");
        }
        w->gz = true;
    }
    *out = w;
    return TSIM_OK;
}

/* The one place that writes a trace's header: checks h and appends its text
 * (up to the first record) to the pending text, for w's format. */
static int put_header(tsim_writer *w, const tsim_trace_header *h, tsim_error *err)
{
    int rc = check_header(w->path, h, err);
    if (rc)
        return rc;
    char *meta = NULL;
    if (h->meta && !(meta = cJSON_PrintUnformatted(h->meta)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    /* meta holds file names, which need not be UTF-8: escape what is not,
     * or the trace would not read back */
    char *fixed = meta ? tsim_utf8_repair_json(meta) : NULL;
    if (fixed != meta) {
        cJSON_free(meta);
        if (!(meta = fixed))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    size_t meta_len = meta ? strlen(meta) : 0;
    if ((rc = reserve(w, 512 + meta_len + (size_t)h->experts * 12, err))) {
        cJSON_free(meta);
        return rc;
    }
    const bool doc = w->fmt == TSIM_FMT_JSON;
    const char *sep = doc ? ",\n  " : ",";
    const char *colon = doc ? ": " : ":";
    put_str(w, doc ? "{\n  " : "{");
    put_str(w, "\"format\"");
    put_str(w, colon);
    put_str(w, "\"moe-routing-trace\"");
    static const char *const names[] = {"version", "experts", "ep", "ranks_per_node", "topk"};
    const int values[] = {1, h->experts, h->ep, h->ranks_per_node, h->topk};
    for (int i = 0; i < 5; i++) {
        if (i == 4 && h->topk == 0)
            continue;
        put_str(w, sep);
        put_json_string(w, names[i]);
        put_str(w, colon);
        put_int(w, values[i]);
    }
    if (h->home) {
        put_str(w, sep);
        put_str(w, "\"home\"");
        put_str(w, colon);
        put_str(w, "[");
        for (int e = 0; e < h->experts; e++) {
            if (e)
                put_str(w, ",");
            put_int(w, h->home[e]);
        }
        put_str(w, "]");
    }
    if (meta) {
        put_str(w, sep);
        put_str(w, "\"meta\"");
        put_str(w, colon);
        put(w, meta, meta_len);
        cJSON_free(meta);
    }
    put_str(w, doc ? ",\n  \"records\": [" : "}\n");
    return TSIM_OK;
}

int tsim_writer_open(tsim_writer **out, const char *path, const tsim_trace_header *h, tsim_error *err)
{
    *out = NULL;
    tsim_trace_format fmt;
    int rc = writable_format(path, &fmt, err);
    if (rc)
        return rc;
    tsim_writer *w;
    if ((rc = writer_new(&w, path, fmt, h->ep, h->experts, err)))
        return rc;
    rc = put_header(w, h, err);
    if (!rc)
        rc = tsim_outfile_open(&w->out, path, err);
    if (rc) {
        writer_free(w);
        return rc;
    }
    *out = w;
    return TSIM_OK;
}

int tsim_writer_write(tsim_writer *w, const tsim_record *rec, tsim_error *err)
{
    if (rec->ranks != w->ep || rec->experts != w->experts)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: record %lld is %d x %d, the trace is %d x %d", w->path,
                              (long long)w->records + 1, rec->ranks, rec->experts, w->ep, w->experts);
    if (rec->microbatch < 0 || rec->microbatch > TSIM_MAX_INDEX || rec->layer < 0 || rec->layer > TSIM_MAX_INDEX)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: record %lld has microbatch %lld, layer %lld", w->path,
                              (long long)w->records + 1, (long long)rec->microbatch, (long long)rec->layer);
    const size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
    for (size_t i = 0; i < cells; i++)
        if (rec->counts[i] < 0 || rec->counts[i] > TSIM_MAX_COUNT)
            return tsim_error_set(err, TSIM_E_INTERNAL,
                                  "%s: record %lld has count %lld at rank %zu, expert %zu: not in 0..2^40", w->path,
                                  (long long)w->records + 1, (long long)rec->counts[i], i / (size_t)rec->experts,
                                  i % (size_t)rec->experts);
    size_t tag_len = strnlen(rec->tag, TSIM_TAG_MAX - 1);
    /* 14 digits for 2^40 plus a comma per cell, brackets per row. */
    int rc = reserve(w, 128 + tag_len * 6 + cells * 15 + (size_t)rec->ranks * 4, err);
    if (rc)
        return rc;
    const bool doc = w->fmt == TSIM_FMT_JSON;
    if (doc)
        put_str(w, w->records ? ",\n    " : "\n    ");
    put_str(w, "{\"microbatch\":");
    put_int(w, rec->microbatch);
    put_str(w, ",\"layer\":");
    put_int(w, rec->layer);
    if (tag_len) {
        char tag[TSIM_TAG_MAX];
        memcpy(tag, rec->tag, tag_len);
        tag[tag_len] = '\0';
        put_str(w, ",\"dataset\":");
        put_json_string(w, tag);
    }
    put_str(w, ",\"counts\":[");
    /* The buffer and its length in locals: stores through a char pointer
     * could alias w->len, so the compiler would reload it for every byte. */
    char *buf = w->buf;
    size_t len = w->len;
    for (int r = 0; r < rec->ranks; r++) {
        const int64_t *row = rec->counts + (size_t)r * (size_t)rec->experts;
        if (r)
            buf[len++] = ',';
        const size_t first = len; /* the first count's comma becomes the row's '[' */
        for (int e = 0; e < rec->experts; e++) {
            const int64_t v = row[e];
            if (v >= 0 && v < 100) {
                /* the writer's hot loop: most counts have one or two digits,
                 * stored with their comma as one 4-byte word (its last
                 * byte, the length, is overwritten by what follows) */
                memcpy(buf + len, w->small[v], 4);
                len += (size_t)w->small[v][3];
            } else {
                buf[len++] = ',';
                w->len = len;
                put_int(w, v);
                len = w->len;
            }
        }
        if (rec->experts > 0)
            buf[first] = '[';
        else
            buf[len++] = '[';
        buf[len++] = ']';
    }
    w->len = len;
    put_str(w, doc ? "]}" : "]}\n");
    w->records++;
    if (w->gz && w->member_in + w->len >= GZ_MEMBER)
        return end_member(w, err);
    if (w->len >= FLUSH_AT)
        return drain(w, err);
    return TSIM_OK;
}

/* The .json document's closing brackets, pending after the last record. */
static int put_closing(tsim_writer *w, tsim_error *err)
{
    if (w->fmt != TSIM_FMT_JSON)
        return TSIM_OK;
    int rc = reserve(w, 16, err);
    if (!rc)
        put_str(w, w->records ? "\n  ]\n}\n" : "]\n}\n");
    return rc;
}

int tsim_writer_close(tsim_writer *w, bool commit, tsim_error *err)
{
    if (!w)
        return TSIM_OK;
    int rc = TSIM_OK;
    if (commit && w->deferred)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "%s: the header is still to come: close with the header",
                            w->path);
    else if (commit) {
        rc = put_closing(w, err);
        /* A member just ended on the last record: no empty member after it. */
        bool empty_tail = w->gz && w->members > 0 && w->member_in == 0 && w->len == 0;
        if (!rc && !empty_tail)
            rc = emit(w, w->buf, w->len, w->gz ? Z_FINISH : Z_NO_FLUSH, err);
        if (!rc && !empty_tail && w->gz)
            rc = write_member(w, w->member_in + w->len, err);
        w->len = 0;
        if (!rc)
            rc = tsim_outfile_commit(&w->out, err);
    }
    if (!commit || rc)
        tsim_outfile_abort(&w->out);
    writer_free(w);
    return rc;
}

/* ---- the header at close ------------------------------------------------- */

bool tsim_writer_can_defer_header(const char *path)
{
    if (!path || !*path || strcmp(path, "-") == 0)
        return false;
    tsim_trace_format fmt;
    tsim_error ignored = {0};
    if (tsim_trace_format_from_path(path, &fmt, &ignored) || (fmt != TSIM_FMT_JSON && fmt != TSIM_FMT_JSONL))
        return false;
    /* A device or pipe (/dev/null) is written directly, so there is no
     * temporary file beside it to hold the records. */
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

int tsim_writer_open_body(tsim_writer **out, const char *path, int ep, int experts, tsim_error *err)
{
    *out = NULL;
    if (!tsim_writer_can_defer_header(path))
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: the header cannot come last here (only a .json or .jsonl file)",
                              path ? path : "(null)");
    tsim_trace_format fmt;
    int rc = writable_format(path, &fmt, err);
    if (rc)
        return rc;
    /* The shape the records are checked against; the header's other fields
     * are checked at close. */
    const tsim_trace_header shape = {.experts = experts, .ep = ep, .ranks_per_node = 1};
    if ((rc = check_header(path, &shape, err)))
        return rc;
    tsim_writer *w;
    if ((rc = writer_new(&w, path, fmt, ep, experts, err)))
        return rc;
    w->deferred = true;
    /* The scratch file: a temporary name beside the output, removed on
     * close, on abort and by the CLI's signal and exit handlers. */
    if ((rc = tsim_outfile_open(&w->out, path, err))) {
        writer_free(w);
        return rc;
    }
    *out = w;
    return TSIM_OK;
}

static int write_all(int fd, const char *data, size_t n, const char *path, tsim_error *err)
{
    if (tsim_write_full(fd, data, n) < n)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", path, strerror(errno));
    return TSIM_OK;
}

#define COPY_BUF ((size_t)1 << 20)

/* Appends the scratch file's bytes (from its start) to fd. */
static int copy_scratch(int from, int to, const char *path, tsim_error *err)
{
    if (lseek(from, 0, SEEK_SET) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot reread the records: %s", path, strerror(errno));
#ifdef __linux__
    /* In the kernel, page cache to page cache: no trip through a buffer
     * here (half the copying). Where sendfile cannot (EINVAL, ENOSYS), or
     * after a partial copy that failed, the loop below goes on from where
     * it stopped: both descriptors' offsets have moved with the bytes. */
    for (;;) {
        ssize_t n = sendfile(to, from, NULL, COPY_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                return TSIM_OK;
            break;
        }
    }
#endif
    char *buf = malloc(COPY_BUF);
    if (!buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory while writing %s", path);
    int rc = TSIM_OK;
    for (;;) {
        ssize_t n = tsim_read_some(from, buf, COPY_BUF);
        if (n < 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: cannot reread the records: %s", path, strerror(errno));
        if (n <= 0)
            break;
        if ((rc = write_all(to, buf, (size_t)n, path, err)))
            break;
    }
    free(buf);
    return rc;
}

/* Finishes the records in the scratch file, then writes the output: the
 * header, the scratch file's bytes, committed atomically. */
static int finish_deferred(tsim_writer *w, const tsim_trace_header *h, tsim_error *err)
{
    if (h->ep != w->ep || h->experts != w->experts)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: the header is %d x %d, the records %d x %d", w->path, h->ep,
                              h->experts, w->ep, w->experts);
    int rc = put_closing(w, err);
    if (!rc)
        rc = emit(w, w->buf, w->len, Z_NO_FLUSH, err);
    w->len = 0;
    if (!rc)
        rc = tsim_outfile_flush(&w->out, err);
    if (!rc)
        rc = put_header(w, h, err);
    if (rc)
        return rc;
    tsim_outfile out;
    if ((rc = tsim_outfile_open(&out, w->path, err)))
        return rc;
    /* out's stream holds nothing: the bytes go straight to its descriptor */
    rc = write_all(fileno(out.fp), w->buf, w->len, w->path, err);
    w->len = 0;
    if (!rc)
        rc = copy_scratch(fileno(w->out.fp), fileno(out.fp), w->path, err);
    if (!rc)
        return tsim_outfile_commit(&out, err); /* removes its temporary file on failure */
    tsim_outfile_abort(&out);
    return rc;
}

int tsim_writer_close_with_header(tsim_writer *w, const tsim_trace_header *h, bool commit, tsim_error *err)
{
    if (!w)
        return TSIM_OK;
    int rc = TSIM_OK;
    if (commit && !w->deferred)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "%s: the header was written at open: close without one", w->path);
    else if (commit)
        rc = finish_deferred(w, h, err);
    tsim_outfile_abort(&w->out); /* the scratch file (or the output of a writer opened with its header) */
    writer_free(w);
    return rc;
}
