/* JSON document and JSON Lines readers. Both parse one record at a time:
 * a strict hand-written parser takes the common shape of a record object and
 * falls back to cJSON for anything else, and every error comes from the cJSON
 * path, so both give the same results and the same messages. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "json_strict.h"
#include "topology.h"
#include "trace_internal.h"

/* ---- small helpers ------------------------------------------------------ */

/* "path:line:col: [record N: ]malformed JSON near "..."": base is the start of
 * the line holding `at`. */
static int syntax_error(const tsim_reader *r, long line, const char *line_start, const char *at, const char *end,
                        int64_t recno, tsim_error *err)
{
    char rec[48] = "";
    if (recno > 0)
        snprintf(rec, sizeof rec, "record %lld: ", (long long)recno);
    long col = (long)(at - line_start) + 1;
    char near[28];
    size_t n = 0;
    if (at >= end || *at == '\0') {
        /* cJSON may point one past the culprit: show what came before. */
        const char *from = at - (at - line_start > 24 ? 24 : at - line_start);
        for (const char *q = from; q < at && q < end; q++)
            near[n++] = (unsigned char)*q < 0x20 ? '?' : *q;
        near[n] = '\0';
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: %smalformed JSON: unexpected end of input after \"%s\"",
                              r->path, line, col, rec, near);
    }
    for (const char *q = at; q < end && *q && *q != '\n' && n < 24; q++)
        near[n++] = (unsigned char)*q < 0x20 ? '?' : *q;
    near[n] = '\0';
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: %smalformed JSON near \"%s\"", r->path, line, col, rec, near);
}

/* A fault of the strict checker: its own words when it has them. */
static int fault_error(const tsim_reader *r, long line, const char *line_start, const char *at, const char *end,
                       int64_t recno, const tsim_json_fault *f, tsim_error *err)
{
    if (!f->what[0])
        return syntax_error(r, line, line_start, at, end, recno, err);
    char rec[48] = "";
    if (recno > 0)
        snprintf(rec, sizeof rec, "record %lld: ", (long long)recno);
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: %smalformed JSON: %s", r->path, line,
                          (long)(at - line_start) + 1, rec, f->what);
}

/* Parses a whole JSON Lines line through cJSON after the strict check. */
static int parse_line(const tsim_reader *r, const char *line, size_t len, long lineno, int64_t recno, cJSON **out,
                      tsim_error *err)
{
    tsim_json_fault f;
    if (tsim_json_check_all(line, len, &f) == (size_t)-1)
        return fault_error(r, lineno, line, line + f.at, line + len, recno, &f, err);
    *out = cJSON_ParseWithLength(line, len);
    if (!*out)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s:%ld: out of memory parsing a line", r->path, lineno);
    return TSIM_OK;
}

/* ---- records through cJSON ---------------------------------------------- */

typedef struct {
    const char *where;
    tsim_error *err;
} rec_ctx;

static int rec_fail(const rec_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int rec_fail(const rec_ctx *c, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsim_error_set(c->err, TSIM_E_INPUT, "%s: %s", c->where, msg);
}

/* A non-negative integer up to max; `name` is how the message names it. */
static int rec_uint(const rec_ctx *c, const cJSON *v, const char *name, int64_t max, const char *max_text, int64_t *out)
{
    if (!cJSON_IsNumber(v))
        return rec_fail(c, "%s must be a non-negative integer, got %s", name, tsim_json_type_name(v));
    double d = v->valuedouble;
    char num[48];
    if (d != floor(d) || d < 0) {
        tsim_number_text(num, sizeof num, d);
        return rec_fail(c, "%s is %s, expected a non-negative integer", name, num);
    }
    if (d > (double)max) {
        tsim_number_text(num, sizeof num, d);
        return rec_fail(c, "%s is %s, above the limit of %s", name, num, max_text);
    }
    *out = (int64_t)d;
    return 0;
}

static int rec_row(const rec_ctx *c, const cJSON *arr, int n, int64_t *dst, const char *fmt_name, int row)
{
    int e = 0;
    for (const cJSON *v = arr->child; v && e < n; v = v->next, e++) {
        char name[64];
        if (row >= 0)
            snprintf(name, sizeof name, fmt_name, row, e);
        else
            snprintf(name, sizeof name, fmt_name, e);
        int rc = rec_uint(c, v, name, TSIM_MAX_COUNT, "2^40", &dst[e]);
        if (rc)
            return rc;
    }
    return 0;
}

enum { K_MICROBATCH, K_LAYER, K_COUNTS, K_EXPERT_COUNTS, K_DATASET, K_COUNT };
static const char *const record_keys[K_COUNT] = {"microbatch", "layer", "counts", "expert_counts", "dataset"};

int tsim_record_from_cjson(tsim_reader *r, const cJSON *obj, const char *where, tsim_raw_record *raw, tsim_error *err)
{
    rec_ctx c = {where, err};
    const cJSON *val[K_COUNT] = {0};
    for (const cJSON *k = obj->child; k; k = k->next) {
        int id = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strcmp(k->string, record_keys[i]) == 0)
                id = i;
        if (id < 0) {
            if (tsim_reader_warn_key(r, where, "in a record", k->string))
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            continue;
        }
        if (val[id])
            return rec_fail(&c, "key \"%s\" appears twice", k->string);
        val[id] = k;
    }
    if (!val[K_MICROBATCH])
        return rec_fail(&c, "missing required key \"microbatch\"");
    if (!val[K_LAYER])
        return rec_fail(&c, "missing required key \"layer\"");
    int rc = rec_uint(&c, val[K_MICROBATCH], "\"microbatch\"", TSIM_MAX_INDEX, "2^53 - 1", &raw->microbatch);
    if (!rc)
        rc = rec_uint(&c, val[K_LAYER], "\"layer\"", TSIM_MAX_INDEX, "2^53 - 1", &raw->layer);
    if (rc)
        return rc;
    if (val[K_DATASET]) {
        const cJSON *ds = val[K_DATASET];
        if (!cJSON_IsString(ds))
            return rec_fail(&c, "\"dataset\" must be a string, got %s", tsim_json_type_name(ds));
        if (strlen(ds->valuestring) >= TSIM_TAG_MAX)
            return rec_fail(&c, "\"dataset\" is longer than %d bytes", TSIM_TAG_MAX - 1);
        memcpy(raw->tag, ds->valuestring, strlen(ds->valuestring) + 1);
    }
    if (val[K_COUNTS] && val[K_EXPERT_COUNTS])
        return rec_fail(&c, "has both \"counts\" and \"expert_counts\"; a record takes exactly one");
    if (!val[K_COUNTS] && !val[K_EXPERT_COUNTS])
        return rec_fail(&c, "has neither \"counts\" nor \"expert_counts\"");

    const int E = r->hdr.experts, R = r->file_ep;
    if (val[K_EXPERT_COUNTS]) {
        const cJSON *ec = val[K_EXPERT_COUNTS];
        if (!cJSON_IsArray(ec))
            return rec_fail(&c, "\"expert_counts\" must be an array of %d numbers, got %s", E, tsim_json_type_name(ec));
        int n = cJSON_GetArraySize(ec);
        if (n != E)
            return rec_fail(&c, "\"expert_counts\" has %d numbers, expected %d (experts)", n, E);
        raw->kind = REC_EXPERT_COUNTS;
        return rec_row(&c, ec, E, r->tpe, "\"expert_counts\"[%d]", -1);
    }
    const cJSON *counts = val[K_COUNTS];
    if (!cJSON_IsArray(counts))
        return rec_fail(&c, "\"counts\" must be an array of %d rows (ep) of %d numbers, got %s", R, E,
                        tsim_json_type_name(counts));
    int rows = cJSON_GetArraySize(counts);
    if (rows != R)
        return rec_fail(&c, "\"counts\" has %d rows, expected %d (ep)", rows, R);
    tsim_reader_begin_counts(r);
    int row = 0;
    for (const cJSON *v = counts->child; v; v = v->next, row++) {
        if (!cJSON_IsArray(v))
            return rec_fail(&c, "\"counts\" row %d must be an array of %d numbers, got %s", row, E,
                            tsim_json_type_name(v));
        int n = cJSON_GetArraySize(v);
        if (n != E)
            return rec_fail(&c, "\"counts\" row %d has %d numbers, expected %d", row, n, E);
        rc = rec_row(&c, v, E, tsim_reader_row(r, row), "\"counts\"[%d][%d]", row);
        if (rc)
            return rc;
        tsim_reader_row_done(r);
    }
    raw->kind = REC_COUNTS;
    return 0;
}

/* ---- the fast path -------------------------------------------------------- */

/* Why a scanner of its own rather than cJSON (issue 21): it reads a record in
 * one pass straight into the buffers, without a tree. On a JSON Lines trace of
 * 32 records of 32 x 128 (0.5 MB) it read everything in 0.5 ms; the cJSON
 * path (strict check, parse, walk) took 70-90 ms, about 150x as long. It
 * takes only the plainest form (known keys, ASCII tags, plain integers) and
 * hands anything else to the strict checker and cJSON, which word the
 * messages, so it never accepts what they refuse. */

/* Only what JSON itself calls whitespace; anything else falls back to cJSON. */
static inline const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* A plain decimal integer <= max: no sign, fraction, exponent or leading zero,
 * at most 15 digits. NULL when the number is anything else. */
static inline const char *fast_uint(const char *p, int64_t max, int64_t *out)
{
    unsigned d = (unsigned char)*p - '0';
    if (d > 9)
        return NULL;
    const char *start = p++;
    uint64_t v = d;
    if (d == 0 && (unsigned)((unsigned char)*p - '0') <= 9)
        return NULL;
    while ((d = (unsigned char)*p - '0') <= 9) {
        v = v * 10 + d;
        p++;
    }
    if (p - start > 15 || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-' || v > (uint64_t)max)
        return NULL;
    *out = (int64_t)v;
    return p;
}

static const char *fast_row(const char *p, int n, int64_t *dst)
{
    if (*p != '[')
        return NULL;
    p = ws(p + 1);
    for (int e = 0; e < n; e++) {
        if (e > 0) {
            if (*p != ',')
                return NULL;
            p = ws(p + 1);
        }
        p = fast_uint(p, TSIM_MAX_COUNT, &dst[e]);
        if (!p)
            return NULL;
        if (*p != ',' && *p != ']')
            p = ws(p);
    }
    if (*p != ']')
        return NULL;
    return p + 1;
}

/* Parses one record object starting at p (NUL-terminated text). Returns the
 * byte after its '}', or NULL to let cJSON decide. */
static const char *fast_record(const tsim_parse_target *t, const char *p, tsim_raw_record *raw)
{
    const int E = t->experts, R = t->file_ep;
    bool have[K_COUNT] = {false};
    p = ws(p);
    if (*p != '{')
        return NULL;
    p = ws(p + 1);
    for (;;) {
        if (*p != '"')
            return NULL;
        const char *key = ++p;
        while ((*p >= 'a' && *p <= 'z') || *p == '_')
            p++;
        if (*p != '"')
            return NULL;
        size_t klen = (size_t)(p - key);
        int id = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strlen(record_keys[i]) == klen && memcmp(key, record_keys[i], klen) == 0)
                id = i;
        if (id < 0 || have[id])
            return NULL;
        have[id] = true;
        p = ws(p + 1);
        if (*p != ':')
            return NULL;
        p = ws(p + 1);
        switch (id) {
        case K_MICROBATCH:
            p = fast_uint(p, TSIM_MAX_INDEX, &raw->microbatch);
            break;
        case K_LAYER:
            p = fast_uint(p, TSIM_MAX_INDEX, &raw->layer);
            break;
        case K_EXPERT_COUNTS:
            if (have[K_COUNTS])
                return NULL;
            p = fast_row(p, E, t->tpe);
            raw->kind = REC_EXPERT_COUNTS;
            break;
        case K_COUNTS:
            if (have[K_EXPERT_COUNTS] || *p != '[')
                return NULL;
            p = ws(p + 1);
            if (t->rebucket)
                memset(t->tpe, 0, sizeof *t->tpe * (size_t)E);
            for (int row = 0; row < R && p; row++) {
                if (row > 0) {
                    if (*p != ',')
                        return NULL;
                    p = ws(p + 1);
                }
                int64_t *dst = t->rebucket ? t->scratch : t->counts + (size_t)row * (size_t)E;
                p = fast_row(p, E, dst);
                if (!p)
                    return NULL;
                if (t->rebucket)
                    for (int e = 0; e < E; e++)
                        t->tpe[e] += t->scratch[e];
                p = ws(p);
            }
            if (!p || *p != ']')
                return NULL;
            p++;
            raw->kind = REC_COUNTS;
            break;
        case K_DATASET: {
            if (*p != '"')
                return NULL;
            const char *s = ++p;
            /* ASCII only: the strict checker judges escapes and UTF-8 */
            while (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80)
                p++;
            if (*p != '"' || (size_t)(p - s) >= TSIM_TAG_MAX)
                return NULL;
            memcpy(raw->tag, s, (size_t)(p - s));
            raw->tag[p - s] = '\0';
            p++;
            break;
        }
        default:
            return NULL;
        }
        if (!p)
            return NULL;
        p = ws(p);
        if (*p == '}')
            break;
        if (*p != ',')
            return NULL;
        p = ws(p + 1);
    }
    if (!have[K_MICROBATCH] || !have[K_LAYER] || !(have[K_COUNTS] || have[K_EXPERT_COUNTS]))
        return NULL;
    return p + 1;
}

/* ---- JSON Lines ------------------------------------------------------------ */

static long line_one(const void *ctx, const char *key)
{
    (void)ctx;
    (void)key;
    return 1;
}

tsim_parse_target tsim_reader_parse_target(tsim_reader *r)
{
    return (tsim_parse_target){.experts = r->hdr.experts, .file_ep = r->file_ep, .rebucket = r->rebucket,
                               .counts = r->rec.counts, .tpe = r->tpe, .scratch = r->scratch};
}

bool tsim_jsonl_fast(const tsim_parse_target *t, const char *line, size_t len, tsim_raw_record *raw)
{
    const char *end = fast_record(t, line, raw);
    return end && ws(end) == line + len;
}

int tsim_jsonl_slow(tsim_reader *r, const char *line, size_t len, long lineno, tsim_raw_record *raw,
                    tsim_error *err)
{
    const int64_t recno = r->raw_records + 1;
    memset(raw, 0, sizeof *raw);
    raw->line = lineno;
    int rc;
    cJSON *obj = NULL;
    if ((rc = parse_line(r, line, len, raw->line, recno, &obj, err)))
        return rc;
    char where[TSIM_ERROR_MSG_MAX];
    snprintf(where, sizeof where, "%s:%ld: record %lld", r->path, raw->line, (long long)recno);
    if (!cJSON_IsObject(obj)) {
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: expected a record object, got %s", where, tsim_json_type_name(obj));
    } else {
        rc = tsim_record_from_cjson(r, obj, where, raw, err);
    }
    cJSON_Delete(obj);
    return rc ? rc : 1;
}

static int jsonl_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    char *line;
    size_t len;
    int rc = tsim_next_content_line(r, &line, &len, err);
    if (rc != 1)
        return rc;
    raw->line = r->lines.line;
    tsim_parse_target t = tsim_reader_parse_target(r);
    if (tsim_jsonl_fast(&t, line, len, raw))
        return 1;
    return tsim_jsonl_slow(r, line, len, r->lines.line, raw, err);
}

int tsim_jsonl_open(tsim_reader *r, tsim_error *err)
{
    int rc = tsim_gzline_open(&r->lines, r->path, r->fmt == TSIM_FMT_JSONL_GZ, tsim_trace_max_line(), err);
    if (rc)
        return rc;
    r->lines_open = true;
    char *line;
    size_t len;
    rc = tsim_gzline_next(&r->lines, &line, &len, err);
    if (rc < 0 || rc > 1)
        return rc;
    if (rc == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: empty file: expected the header object on line 1", r->path);
    if (tsim_line_blank(line))
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: line 1 is blank: expected the header object", r->path);
    cJSON *obj = NULL;
    if ((rc = parse_line(r, line, len, 1, 0, &obj, err)))
        return rc;
    if (!cJSON_IsObject(obj)) {
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s:1: header: expected a JSON object on line 1, got %s", r->path,
                            tsim_json_type_name(obj));
    } else if (cJSON_GetObjectItemCaseSensitive(obj, "records")) {
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s:1: header: \"records\" does not belong in a JSON Lines header (records follow, one "
                            "per line); is this a JSON document named .jsonl?",
                            r->path);
    } else {
        rc = tsim_reader_parse_header(r, obj, line_one, NULL, 1, err);
    }
    cJSON_Delete(obj);
    if (rc)
        return rc;
    r->next_raw = jsonl_next;
    return TSIM_OK;
}

/* ---- JSON document ----------------------------------------------------------- */

typedef struct {
    char *key;
    long line;
} key_line;

typedef struct {
    key_line *items;
    size_t n, cap;
} key_lines;

static long json_key_line(const void *ctx, const char *key)
{
    const key_lines *kl = ctx;
    for (size_t i = 0; i < kl->n; i++)
        if (strcmp(kl->items[i].key, key) == 0)
            return kl->items[i].line;
    return 1;
}

/* Line number of a byte offset; offsets mostly move forward, so counting
 * resumes where the last call stopped. */
static long text_line(tsim_reader *r, size_t off)
{
    if (off < r->line_at) {
        r->line_at = 0;
        r->line_no = 1;
    }
    const char *p = r->text + r->line_at, *end = r->text + off;
    long line = r->line_no;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        line++;
        p = nl + 1;
    }
    r->line_at = off;
    r->line_no = line;
    return line;
}

static const char *text_line_start(const tsim_reader *r, const char *at)
{
    while (at > r->text && at[-1] != '\n')
        at--;
    return at;
}

static int text_fault(tsim_reader *r, const char *at, int64_t recno, const tsim_json_fault *f, tsim_error *err)
{
    const char *end = r->text + r->text_len;
    if (at > end)
        at = end;
    long line = text_line(r, (size_t)(at - r->text));
    return fault_error(r, line, text_line_start(r, at), at, end, recno, f, err);
}

/* Parses the JSON value at p through cJSON after the strict check; *stop is
 * the byte after it. */
static int parse_text_value(tsim_reader *r, const char *p, int64_t recno, cJSON **out, const char **stop,
                            tsim_error *err)
{
    const char *end = r->text + r->text_len;
    tsim_json_fault f;
    size_t n = tsim_json_check(p, (size_t)(end - p), &f);
    if (n == (size_t)-1)
        return text_fault(r, p + f.at, recno, &f, err);
    *out = cJSON_ParseWithLength(p, n);
    if (!*out)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: out of memory parsing JSON", r->path);
    *stop = p + n;
    return TSIM_OK;
}

static int text_expected(tsim_reader *r, const char *at, const char *what, tsim_error *err)
{
    long line = text_line(r, (size_t)(at - r->text));
    long col = (long)(at - text_line_start(r, at)) + 1;
    unsigned char b = at < r->text + r->text_len ? (unsigned char)*at : ' ';
    if (b < 0x20 && !tsim_json_is_ws((char)b))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld:%ld: malformed JSON: byte 0x%02x is not JSON whitespace (only space, tab, CR "
                              "and LF are)",
                              r->path, line, col, b);
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: malformed JSON: expected %s", r->path, line, col, what);
}

/* Skips the "records" array without building it: brackets and strings only;
 * cJSON checks each element properly when it is read. NULL if never closed.
 * Not tsim_json_check: it took 3x as long (0.9 ms against 0.3 ms over a
 * 0.5 MB array), and it would report a bad record here, at open, without the
 * record number that reading it gives. */
static const char *skip_array(const char *p, const char *end)
{
    long depth = 0;
    for (; p < end; p++) {
        char ch = *p;
        if (ch == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            if (p >= end)
                return NULL;
        } else if (ch == '[' || ch == '{') {
            depth++;
        } else if (ch == ']' || ch == '}') {
            if (--depth == 0)
                return p + 1;
        }
    }
    return NULL;
}

static const char *value_kind(char ch)
{
    switch (ch) {
    case '{':
        return "an object";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

static int json_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    const char *p = ws(r->text + r->pos);
    const int64_t recno = r->raw_records + 1;
    if (!r->records_begun) {
        r->records_begun = true;
        if (*p == ']') {
            r->pos = (size_t)(p - r->text);
            return 0;
        }
    } else {
        if (*p == ']') {
            r->pos = (size_t)(p - r->text);
            return 0;
        }
        if (*p != ',')
            return text_expected(r, p, "',' or ']' after a record", err);
        p = ws(p + 1);
        if (*p == ']')
            return text_expected(r, p, "a record after ',' (no trailing commas in JSON)", err);
    }
    raw->line = text_line(r, (size_t)(p - r->text));
    tsim_parse_target t = tsim_reader_parse_target(r);
    const char *after = fast_record(&t, p, raw);
    if (after) {
        r->pos = (size_t)(after - r->text);
        return 1;
    }
    memset(raw, 0, sizeof *raw);
    raw->line = text_line(r, (size_t)(p - r->text));
    const char *stop = NULL;
    cJSON *obj = NULL;
    int rc = parse_text_value(r, p, recno, &obj, &stop, err);
    if (rc)
        return rc;
    char where[TSIM_ERROR_MSG_MAX];
    snprintf(where, sizeof where, "%s:%ld: record %lld", r->path, raw->line, (long long)recno);
    if (!cJSON_IsObject(obj))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: expected a record object, got %s", where, tsim_json_type_name(obj));
    else
        rc = tsim_record_from_cjson(r, obj, where, raw, err);
    cJSON_Delete(obj);
    if (rc)
        return rc;
    r->pos = (size_t)(stop - r->text);
    return 1;
}

/* "path:line:col" of a byte of the loaded text, for messages. */
static int text_problem(tsim_reader *r, const char *at, const char *problem, tsim_error *err)
{
    long line = text_line(r, (size_t)(at - r->text));
    long col = (long)(at - text_line_start(r, at)) + 1;
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: %s", r->path, line, col, problem);
}

/* Loads the whole document, refusing anything above TSIM_JSON_DOC_MAX before
 * it is read (regular files) or as soon as it is passed (pipes, devices). */
static int read_whole(tsim_reader *r, tsim_error *err)
{
    const size_t limit = TSIM_JSON_DOC_MAX;
    int fd = open(r->path, O_RDONLY);
    if (fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", r->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read: it is a directory", r->path);
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > limit) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: a JSON document trace may be at most %zu MiB (this one has %lld bytes); convert it "
                              "to JSON Lines (.jsonl), which streams",
                              r->path, limit >> 20, (long long)st.st_size);
    }
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: out of memory for %zu bytes", r->path, cap);
    }
    for (;;) {
        if (len + 1 == cap) {
            if (len > limit) {
                free(buf);
                close(fd);
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "%s: a JSON document trace may be at most %zu MiB, and this input goes on "
                                      "beyond that; convert it to JSON Lines (.jsonl), which streams",
                                      r->path, limit >> 20);
            }
            /* one byte past the limit is enough to know it is too long */
            size_t grown = cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            char *p = realloc(buf, grown);
            if (!p) {
                free(buf);
                close(fd);
                return tsim_error_set(err, TSIM_E_INTERNAL, "%s: out of memory for %zu bytes", r->path, grown);
            }
            buf = p;
            cap = grown;
        }
        ssize_t n = tsim_read_some(fd, buf + len, cap - len - 1);
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: read error: %s", r->path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    r->text = buf;
    r->text_len = len;
    r->line_at = 0;
    r->line_no = 1;
    if (len > limit)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: a JSON document trace may be at most %zu MiB, and this input goes on beyond that; "
                              "convert it to JSON Lines (.jsonl), which streams",
                              r->path, limit >> 20);
    if (len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:1: the file is gzip-compressed; only the JSON Lines form may be (.jsonl.gz)",
                              r->path);
    /* The fast path walks the text as a C string: a NUL would end it early. */
    const char *nul = memchr(buf, '\0', len);
    if (nul)
        return text_problem(r, nul, "NUL byte (text has none: is the file binary or damaged?)", err);
    return TSIM_OK;
}

static int add_key_line(key_lines *kl, const char *key, long line)
{
    if (kl->n == kl->cap) {
        size_t cap = kl->cap ? kl->cap * 2 : 16;
        key_line *p = realloc(kl->items, sizeof *p * cap);
        if (!p)
            return -1;
        kl->items = p;
        kl->cap = cap;
    }
    kl->items[kl->n].key = strdup(key);
    if (!kl->items[kl->n].key)
        return -1;
    kl->items[kl->n++].line = line;
    return 0;
}

/* Reads the top-level object key by key: every value but "records" through
 * cJSON into one header object, "records" only located. */
static int scan_top(tsim_reader *r, cJSON *hdr, key_lines *kl, size_t *records_at, long *obj_line, tsim_error *err)
{
    const char *text = r->text, *end = text + r->text_len;
    const char *p = text;
    if (r->text_len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    p = ws(p);
    if (p >= end)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: empty file: expected a JSON trace object", r->path);
    if (*p != '{')
        return text_expected(r, p, "'{' to open the trace object", err);
    *obj_line = text_line(r, (size_t)(p - text));
    p = ws(p + 1);
    bool first = true;
    while (!(first && *p == '}')) {
        first = false;
        if (*p != '"')
            return text_expected(r, p, "a key in double quotes", err);
        const char *stop = NULL;
        cJSON *key = NULL;
        int rc = parse_text_value(r, p, 0, &key, &stop, err);
        if (rc)
            return rc;
        char *name = strdup(key->valuestring);
        cJSON_Delete(key);
        if (!name)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        p = ws(stop);
        if (*p != ':') {
            free(name);
            return text_expected(r, p, "':' after a key", err);
        }
        p = ws(p + 1);
        long line = text_line(r, (size_t)(p - text));
        if (add_key_line(kl, name, line)) {
            free(name);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        if (strcmp(name, "records") == 0) {
            free(name);
            if (*records_at)
                return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: header: key \"records\" appears twice", r->path,
                                      line);
            if (*p != '[')
                return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: header: \"records\" must be an array, got %s",
                                      r->path, line, p >= end ? "nothing" : value_kind(*p));
            *records_at = (size_t)(p + 1 - text);
            const char *after = skip_array(p, end);
            if (!after) {
                long col = (long)(p - text_line_start(r, p)) + 1;
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "%s:%ld:%ld: malformed JSON: the \"records\" array opened here is never closed",
                                      r->path, line, col);
            }
            p = after;
        } else {
            cJSON *val = NULL;
            if ((rc = parse_text_value(r, p, 0, &val, &stop, err))) {
                free(name);
                return rc;
            }
            cJSON_AddItemToObject(hdr, name, val);
            free(name);
            p = stop;
        }
        p = ws(p);
        if (*p == ',') {
            p = ws(p + 1);
            if (*p == '}')
                return text_expected(r, p, "a key after ',' (no trailing commas in JSON)", err);
            continue;
        }
        if (*p != '}')
            return text_expected(r, p, "',' or '}' after a value", err);
        break;
    }
    p = ws(p + 1);
    if (p < end)
        return text_expected(r, p, "nothing after the trace object", err);
    return TSIM_OK;
}

int tsim_json_open(tsim_reader *r, tsim_error *err)
{
    int rc = read_whole(r, err);
    if (rc)
        return rc;
    cJSON *hdr = cJSON_CreateObject();
    key_lines kl = {0};
    size_t records_at = 0;
    long obj_line = 1;
    if (!hdr)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    rc = scan_top(r, hdr, &kl, &records_at, &obj_line, err);
    if (!rc)
        rc = tsim_reader_parse_header(r, hdr, json_key_line, &kl, obj_line, err);
    if (!rc && !records_at)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: header: missing required key \"records\"", r->path, obj_line);
    cJSON_Delete(hdr);
    for (size_t i = 0; i < kl.n; i++)
        free(kl.items[i].key);
    free(kl.items);
    if (rc)
        return rc;
    r->pos = records_at;
    r->next_raw = json_next;
    return TSIM_OK;
}
