/* The trace index (trace_index.h): built from one validating read of the
 * trace (record count, layers) and one raw scan of its bytes (seek points,
 * hashes). */
#include "trace_index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "outfile.h"
#include "trace.h"

#define CHUNK ((size_t)1 << 20)

uint64_t tsim_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

void tsim_trace_digest_init(tsim_trace_digest *d)
{
    d->hash = FNV_OFFSET;
    d->records = 0;
}

/* One 64-bit word per step (eight byte-steps cost as much as parsing the
 * number): FNV-1a's xor and multiply, then an xor-shift so that high bits
 * reach the low ones. Each step is a bijection of the state, so a trace that
 * differs in one value always hashes differently. */
static void digest_int(tsim_trace_digest *d, int64_t v)
{
    uint64_t h = (d->hash ^ (uint64_t)v) * FNV_PRIME;
    d->hash = h ^ (h >> 29);
}

void tsim_trace_digest_add(tsim_trace_digest *d, const tsim_record *rec)
{
    digest_int(d, rec->microbatch);
    digest_int(d, rec->layer);
    digest_int(d, rec->ranks);
    digest_int(d, rec->experts);
    const size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
    for (size_t i = 0; i < cells; i++)
        digest_int(d, rec->counts[i]);
    /* the tag with its length, so "ab"+"" and "a"+"b" differ */
    size_t n = strnlen(rec->tag, sizeof rec->tag);
    digest_int(d, (int64_t)n);
    for (size_t i = 0; i < n; i++)
        digest_int(d, (unsigned char)rec->tag[i]);
    d->records++;
}

void tsim_index_free(tsim_trace_index *ix)
{
    free(ix->layers);
    free(ix->blocks);
    memset(ix, 0, sizeof *ix);
}

static int add_block(tsim_trace_index *ix, int64_t offset, int64_t first_record, int64_t first_line,
                     tsim_error *err)
{
    if ((ix->n_blocks & (ix->n_blocks - 1)) == 0) { /* grow at powers of two */
        size_t cap = ix->n_blocks ? (size_t)ix->n_blocks * 2 : 1;
        tsim_index_block *b = realloc(ix->blocks, sizeof *b * cap);
        if (!b)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the index");
        ix->blocks = b;
    }
    tsim_index_block *b = &ix->blocks[ix->n_blocks++];
    memset(b, 0, sizeof *b);
    b->offset = offset;
    b->first_record = first_record;
    b->first_line = first_line;
    return TSIM_OK;
}

static int count_layer(tsim_trace_index *ix, int64_t layer, tsim_error *err)
{
    for (int i = ix->n_layers - 1; i >= 0; i--)
        if (ix->layers[i].layer == layer) {
            ix->layers[i].records++;
            return TSIM_OK;
        }
    tsim_index_layer *l = realloc(ix->layers, sizeof *l * (size_t)(ix->n_layers + 1));
    if (!l)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the index");
    ix->layers = l;
    l[ix->n_layers++] = (tsim_index_layer){layer, 1};
    return TSIM_OK;
}

/* The validating read: record count and per-layer counts. */
static int read_records(const char *trace, tsim_trace_index *ix, tsim_error *err)
{
    tsim_read_options opts;
    memset(&opts, 0, sizeof opts);
    tsim_reader *r;
    int rc = tsim_reader_open(&r, trace, &opts, err);
    if (rc)
        return rc;
    const tsim_record *rec;
    tsim_trace_digest_init(&ix->digest);
    while ((rc = tsim_reader_next(r, &rec, err)) == 1) {
        if ((rc = count_layer(ix, rec->layer, err)))
            break;
        tsim_trace_digest_add(&ix->digest, rec);
    }
    ix->records = tsim_reader_count(r);
    tsim_reader_close(r);
    return rc < 0 || rc > 1 ? rc : TSIM_OK;
}

/* Line state of the text: records are the non-blank lines after the first. */
typedef struct {
    int64_t line;      /* lines started (1 = the header) */
    bool in_blank;     /* the current line has only blanks so far */
    int64_t records;   /* record lines started */
    bool at_line_start;
} text_state;

/* Feeds text bytes; calls on_record(pos of the record's first non-blank byte)
 * for a .jsonl (pos < 0 for gzip, where text positions are not file
 * offsets). */
static int feed_text(text_state *t, const unsigned char *p, size_t n, int64_t base, tsim_trace_index *ix,
                     int64_t every, tsim_error *err)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (t->at_line_start) {
            t->line++;
            t->in_blank = true;
            t->at_line_start = false;
        }
        if (c == '\n') {
            t->at_line_start = true;
            continue;
        }
        if (t->in_blank && c != ' ' && c != '\t' && c != '\r') {
            t->in_blank = false;
            if (t->line > 1) {
                if (every > 0 && t->records > 0 && t->records % every == 0) {
                    int rc = add_block(ix, base + (int64_t)i, t->records, t->line, err);
                    if (rc)
                        return rc;
                }
                t->records++;
            }
        }
    }
    return TSIM_OK;
}

static int scan_plain(const char *trace, FILE *fp, int64_t every, tsim_trace_index *ix, text_state *t,
                      tsim_error *err)
{
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int64_t base = 0;
    int rc = add_block(ix, 0, 0, 1, err);
    size_t n;
    while (!rc && (n = fread(buf, 1, CHUNK, fp)) > 0) {
        rc = feed_text(t, buf, n, base, ix, every, err);
        base += (int64_t)n;
    }
    if (!rc && ferror(fp))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: read failed: %s", trace, strerror(errno));
    free(buf);
    return rc;
}

/* A .jsonl.gz: a block per gzip member that starts at a line boundary. */
static int scan_gzip(const char *trace, FILE *fp, tsim_trace_index *ix, text_state *t, tsim_error *err)
{
    unsigned char *in = malloc(CHUNK), *out = malloc(CHUNK);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (!in || !out || inflateInit2(&z, 15 + 16) != Z_OK) {
        free(in);
        free(out);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int rc = add_block(ix, 0, 0, 1, err);
    int64_t consumed = 0; /* compressed bytes handed to inflate before this chunk */
    size_t n = 0;
    bool member_done = false;
    while (!rc && (n = fread(in, 1, CHUNK, fp)) > 0) {
        z.next_in = in;
        z.avail_in = (uInt)n;
        while (!rc && z.avail_in > 0) {
            if (member_done) {
                /* Another member starts here: a seek point when the text so
                 * far ends a line. */
                int64_t at = consumed + (int64_t)(z.next_in - in);
                if (t->at_line_start && t->records > ix->blocks[ix->n_blocks - 1].first_record)
                    rc = add_block(ix, at, t->records, t->line + 1, err);
                inflateReset(&z);
                member_done = false;
            }
            z.next_out = out;
            z.avail_out = (uInt)CHUNK;
            int zrc = inflate(&z, Z_NO_FLUSH);
            if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR)
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: corrupt gzip data", trace);
            if (!rc)
                rc = feed_text(t, out, CHUNK - z.avail_out, -1, ix, 0, err);
            member_done = zrc == Z_STREAM_END;
        }
        consumed += (int64_t)n;
    }
    if (!rc && ferror(fp))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: read failed: %s", trace, strerror(errno));
    inflateEnd(&z);
    free(in);
    free(out);
    return rc;
}

/* Hashes every block's bytes and the whole file; size from the scan. */
static int hash_blocks(const char *trace, FILE *fp, tsim_trace_index *ix, tsim_error *err)
{
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    rewind(fp);
    uint64_t all = TSIM_FNV_START;
    int64_t pos = 0, b = 0;
    for (int64_t i = 0; i < ix->n_blocks; i++)
        ix->blocks[i].hash = TSIM_FNV_START;
    size_t n;
    while ((n = fread(buf, 1, CHUNK, fp)) > 0) {
        all = tsim_fnv1a(all, buf, n);
        size_t at = 0;
        while (at < n) {
            int64_t end = b + 1 < ix->n_blocks ? ix->blocks[b + 1].offset : INT64_MAX;
            size_t take = end - pos < (int64_t)(n - at) ? (size_t)(end - pos) : n - at;
            ix->blocks[b].hash = tsim_fnv1a(ix->blocks[b].hash, buf + at, take);
            at += take;
            pos += (int64_t)take;
            if (pos == end)
                b++;
        }
    }
    int rc = ferror(fp) ? tsim_error_set(err, TSIM_E_INPUT, "%s: read failed: %s", trace, strerror(errno)) : 0;
    free(buf);
    ix->trace_bytes = pos;
    ix->trace_hash = all;
    for (int64_t i = 0; i < ix->n_blocks; i++) {
        int64_t end = i + 1 < ix->n_blocks ? ix->blocks[i + 1].offset : pos;
        int64_t next_first = i + 1 < ix->n_blocks ? ix->blocks[i + 1].first_record : ix->records;
        ix->blocks[i].bytes = end - ix->blocks[i].offset;
        ix->blocks[i].records = next_first - ix->blocks[i].first_record;
    }
    return rc;
}

int tsim_index_build(const char *trace, int64_t every, tsim_trace_index *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    tsim_trace_format fmt;
    int rc = tsim_trace_format_from_path(trace, &fmt, err);
    if (rc)
        return rc;
    if (fmt != TSIM_FMT_JSONL && fmt != TSIM_FMT_JSONL_GZ)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: an index is for .jsonl and .jsonl.gz traces (convert it first)",
                              trace);
    if (every < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "--every %lld: at least 1 record per block", (long long)every);
    out->gzip = fmt == TSIM_FMT_JSONL_GZ;
    if ((rc = read_records(trace, out, err))) {
        tsim_index_free(out);
        return rc;
    }
    FILE *fp = fopen(trace, "rb");
    if (!fp) {
        tsim_index_free(out);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s", trace, strerror(errno));
    }
    text_state t = {.at_line_start = true};
    rc = out->gzip ? scan_gzip(trace, fp, out, &t, err) : scan_plain(trace, fp, every, out, &t, err);
    if (!rc && t.records != out->records)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %lld record lines but %lld records read (changed while indexing?)",
                            trace, (long long)t.records, (long long)out->records);
    if (!rc)
        rc = hash_blocks(trace, fp, out, err);
    fclose(fp);
    if (rc)
        tsim_index_free(out);
    return rc;
}

static void hex64(uint64_t v, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, v);
}

static cJSON *index_json(const tsim_trace_index *ix)
{
    cJSON *root = cJSON_CreateObject();
    char hex[17];
    hex64(ix->trace_hash, hex);
    cJSON *trace = root ? cJSON_AddObjectToObject(root, "trace") : NULL;
    bool ok = trace && cJSON_AddNumberToObject(trace, "bytes", (double)ix->trace_bytes) &&
              cJSON_AddStringToObject(trace, "fnv1a64", hex);
    ok = ok && cJSON_AddStringToObject(root, "format", "taotsim-trace-index") &&
         cJSON_AddNumberToObject(root, "version", TSIM_INDEX_VERSION) &&
         cJSON_AddStringToObject(root, "blocks_are", ix->gzip ? "gzip-members" : "lines") &&
         cJSON_AddNumberToObject(root, "records", (double)ix->records);
    hex64(ix->digest.hash, hex);
    ok = ok && cJSON_AddStringToObject(root, "records_fnv64w", hex);
    cJSON *layers = ok ? cJSON_AddArrayToObject(root, "layers") : NULL;
    for (int i = 0; layers && i < ix->n_layers; i++) {
        double v[2] = {(double)ix->layers[i].layer, (double)ix->layers[i].records};
        cJSON *pair = cJSON_CreateDoubleArray(v, 2);
        ok = ok && pair && cJSON_AddItemToArray(layers, pair);
    }
    cJSON *blocks = ok && layers ? cJSON_AddArrayToObject(root, "blocks") : NULL;
    for (int64_t i = 0; blocks && ok && i < ix->n_blocks; i++) {
        const tsim_index_block *b = &ix->blocks[i];
        cJSON *row = cJSON_CreateArray();
        hex64(b->hash, hex);
        ok = row && cJSON_AddItemToArray(blocks, row) &&
             cJSON_AddItemToArray(row, cJSON_CreateNumber((double)b->offset)) &&
             cJSON_AddItemToArray(row, cJSON_CreateNumber((double)b->bytes)) &&
             cJSON_AddItemToArray(row, cJSON_CreateNumber((double)b->first_record)) &&
             cJSON_AddItemToArray(row, cJSON_CreateNumber((double)b->records)) &&
             cJSON_AddItemToArray(row, cJSON_CreateString(hex)) &&
             cJSON_AddItemToArray(row, cJSON_CreateNumber((double)b->first_line));
    }
    if (!ok || !blocks) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int tsim_index_write(const tsim_trace_index *ix, const char *path, tsim_error *err)
{
    cJSON *root = index_json(ix);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the index");
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (!rc) {
        size_t n = strlen(text);
        if (fwrite(text, 1, n, f.fp) != n || fputc('\n', f.fp) == EOF) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", path, strerror(errno));
            tsim_outfile_abort(&f);
        } else {
            rc = tsim_outfile_commit(&f, err);
        }
    }
    cJSON_free(text);
    return rc;
}

/* A non-negative integer below 2^53 from a JSON number. */
static bool get_count(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0.0 && v->valuedouble < 9007199254740992.0) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

static bool get_hex(const cJSON *v, uint64_t *out)
{
    const char *s = cJSON_GetStringValue(v);
    char *end;
    if (!s || strlen(s) != 16)
        return false;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 16);
    *out = x;
    return !errno && *end == '\0';
}

static int parse_index(const cJSON *root, tsim_trace_index *ix)
{
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(root, "trace");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "blocks_are");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(root, "blocks");
    const char *format = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "format"));
    int64_t version;
    if (!cJSON_IsObject(root) || !format || strcmp(format, "taotsim-trace-index") ||
        !get_count(cJSON_GetObjectItemCaseSensitive(root, "version"), &version) || version != TSIM_INDEX_VERSION ||
        !cJSON_IsObject(trace) || !get_count(cJSON_GetObjectItemCaseSensitive(trace, "bytes"), &ix->trace_bytes) ||
        !get_hex(cJSON_GetObjectItemCaseSensitive(trace, "fnv1a64"), &ix->trace_hash) ||
        !get_count(cJSON_GetObjectItemCaseSensitive(root, "records"), &ix->records) ||
        !get_hex(cJSON_GetObjectItemCaseSensitive(root, "records_fnv64w"), &ix->digest.hash) || !cJSON_IsString(kind) ||
        !cJSON_IsArray(layers) || !cJSON_IsArray(blocks) || cJSON_GetArraySize(blocks) < 1)
        return -1;
    ix->digest.records = ix->records;
    ix->gzip = strcmp(kind->valuestring, "gzip-members") == 0;
    ix->n_layers = cJSON_GetArraySize(layers);
    ix->n_blocks = cJSON_GetArraySize(blocks);
    ix->layers = calloc((size_t)ix->n_layers + 1, sizeof *ix->layers);
    ix->blocks = calloc((size_t)ix->n_blocks, sizeof *ix->blocks);
    if (!ix->layers || !ix->blocks)
        return -1;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, layers)
    {
        if (cJSON_GetArraySize(it) != 2 || !get_count(cJSON_GetArrayItem(it, 0), &ix->layers[i].layer) ||
            !get_count(cJSON_GetArrayItem(it, 1), &ix->layers[i].records))
            return -1;
        i++;
    }
    int64_t b = 0, next_first = 0, next_offset = 0;
    cJSON_ArrayForEach(it, blocks)
    {
        tsim_index_block *x = &ix->blocks[b++];
        if (cJSON_GetArraySize(it) != 6 || !get_count(cJSON_GetArrayItem(it, 5), &x->first_line) || !get_count(cJSON_GetArrayItem(it, 0), &x->offset) ||
            !get_count(cJSON_GetArrayItem(it, 1), &x->bytes) ||
            !get_count(cJSON_GetArrayItem(it, 2), &x->first_record) ||
            !get_count(cJSON_GetArrayItem(it, 3), &x->records) || !get_hex(cJSON_GetArrayItem(it, 4), &x->hash) ||
            x->offset != next_offset || x->first_record != next_first)
            return -1; /* blocks tile the file and the records in order */
        next_offset = x->offset + x->bytes;
        next_first = x->first_record + x->records;
    }
    return next_offset == ix->trace_bytes && next_first == ix->records ? 0 : -1;
}

int tsim_index_read(const char *path, tsim_trace_index *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char buf[65536];
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(fp);
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory reading %s", path);
            }
            text = t;
        }
        memcpy(text + len, buf, n);
        len += n;
    }
    fclose(fp);
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    int bad = !root || parse_index(root, out);
    cJSON_Delete(root);
    if (bad) {
        tsim_index_free(out);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a taotsim trace index (version %d); make it again with "
                              "'taotsim index TRACE'", path, TSIM_INDEX_VERSION);
    }
    return TSIM_OK;
}

/* Checks the file's size, then hashes blocks [from, to] (and, when all is
 * not NULL, the whole file, which needs every block). */
static int check_blocks(const tsim_trace_index *ix, const char *trace, int64_t from, int64_t to, uint64_t *all,
                        tsim_error *err)
{
    FILE *fp = fopen(trace, "rb");
    if (!fp)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s", trace, strerror(errno));
    int rc = TSIM_OK;
    if (fseeko(fp, 0, SEEK_END) == 0 && ftello(fp) != ix->trace_bytes)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %lld bytes, its index says %lld: the index is stale", trace,
                            (long long)ftello(fp), (long long)ix->trace_bytes);
    unsigned char *buf = rc ? NULL : malloc(CHUNK);
    if (!rc && !buf)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int64_t i = from; !rc && i <= to; i++) {
        const tsim_index_block *b = &ix->blocks[i];
        uint64_t h = TSIM_FNV_START;
        int64_t left = b->bytes;
        if (fseeko(fp, b->offset, SEEK_SET) != 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: cannot seek: %s", trace, strerror(errno));
        while (!rc && left > 0) {
            size_t want = left < (int64_t)CHUNK ? (size_t)left : CHUNK, n = fread(buf, 1, want, fp);
            if (n != want)
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: short read at byte %lld", trace,
                                    (long long)(b->offset + b->bytes - left));
            h = tsim_fnv1a(h, buf, n);
            if (all)
                *all = tsim_fnv1a(*all, buf, n);
            left -= (int64_t)n;
        }
        if (!rc && h != b->hash)
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: block %lld (bytes %lld..%lld, records from %lld) differs from its index: the "
                                "index is stale; make it again with 'taotsim index'",
                                trace, (long long)i, (long long)b->offset, (long long)(b->offset + b->bytes),
                                (long long)b->first_record);
    }
    free(buf);
    fclose(fp);
    return rc;
}

int tsim_index_check(const tsim_trace_index *ix, const char *trace, tsim_error *err)
{
    uint64_t all = TSIM_FNV_START;
    int rc = check_blocks(ix, trace, 0, ix->n_blocks - 1, &all, err);
    if (!rc && all != ix->trace_hash)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: its hash differs from its index: the index is stale", trace);
    return rc;
}

int tsim_index_check_blocks(const tsim_trace_index *ix, const char *trace, int64_t from, int64_t to, tsim_error *err)
{
    return check_blocks(ix, trace, from, to, NULL, err);
}

int64_t tsim_index_block_of(const tsim_trace_index *ix, int64_t record)
{
    int64_t lo = 0, hi = ix->n_blocks - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (ix->blocks[mid].first_record <= record)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int tsim_index_find(const char *trace, tsim_trace_index *ix, bool *found, tsim_error *err)
{
    memset(ix, 0, sizeof *ix);
    *found = false;
    size_t n = strlen(trace) + sizeof TSIM_INDEX_SUFFIX;
    char *path = malloc(n);
    if (!path)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    snprintf(path, n, "%s%s", trace, TSIM_INDEX_SUFFIX);
    FILE *fp = fopen(path, "rb");
    int rc = TSIM_OK;
    if (fp) {
        fclose(fp);
        rc = tsim_index_read(path, ix, err);
        *found = rc == TSIM_OK;
    } else if (errno != ENOENT) {
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s", path, strerror(errno));
    }
    free(path);
    return rc;
}

int tsim_index_seek_range(const tsim_trace_index *ix, tsim_reader *r, const char *trace, int64_t lo, int64_t hi,
                          tsim_error *err)
{
    if (lo >= hi || lo >= ix->records)
        return TSIM_OK; /* nothing to read */
    int64_t from = tsim_index_block_of(ix, lo), to = tsim_index_block_of(ix, hi - 1);
    int rc = tsim_index_check_blocks(ix, trace, from, to, err);
    if (rc)
        return rc;
    const tsim_index_block *b = &ix->blocks[from];
    /* the first block holds the header, which the reader has read already */
    int64_t offset = from == 0 ? -1 : b->offset;
    return tsim_reader_seek(r, offset, b->first_record, b->first_line, lo - b->first_record, err);
}
