/* The strict parser of one Megatron router call line (see trace_megatron.c):
 * parsed once, straight into counts; anything it does not take is checked by
 * the RFC 8259 checker so that a message says what is wrong. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_strict.h"
#include "topology.h"
#include "trace_megatron_internal.h"
/* A problem at byte `at` of the line. If the line is not even valid JSON,
 * the JSON problem is what gets reported. */
int tsim_megatron_line_fail(const line_ctx *c, size_t at, const char *fmt, ...)
{
    tsim_json_fault f;
    if (tsim_json_check_all(c->line, c->len, &f) == (size_t)-1) {
        if (f.what[0])
            return tsim_error_set(c->err, TSIM_E_INPUT, "%s:%ld:%zu: malformed JSON: %s", c->f->path, c->lineno,
                                  f.at + 1, f.what);
        if (f.at >= c->len)
            return tsim_error_set(c->err, TSIM_E_INPUT, "%s:%ld:%zu: malformed JSON: the line ends early", c->f->path,
                                  c->lineno, f.at + 1);
        char near[28];
        size_t n = 0;
        for (size_t i = f.at; i < c->len && n < 24; i++)
            near[n++] = (unsigned char)c->line[i] < 0x20 ? '?' : c->line[i];
        near[n] = '\0';
        return tsim_error_set(c->err, TSIM_E_INPUT, "%s:%ld:%zu: malformed JSON near \"%s\"", c->f->path, c->lineno,
                              f.at + 1, near);
    }
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsim_error_set(c->err, TSIM_E_INPUT, "%s:%ld:%zu: %s", c->f->path, c->lineno, at + 1, msg);
}

/* Inline (not tsim_json_skip_ws): it runs twice per expert id, and the call
 * was 13% of a layout read's CPU time. */
static inline size_t skip_ws(const line_ctx *c, size_t p)
{
    const char *s = c->line;
    while (p < c->len && tsim_json_is_ws(s[p]))
        p++;
    return p;
}

/* The JSON value at p as written (for messages), at most 24 bytes. */
static void value_text(const line_ctx *c, size_t p, char *buf, size_t cap)
{
    tsim_json_fault f;
    size_t n = tsim_json_check(c->line + p, c->len - p, &f);
    if (n == (size_t)-1)
        n = 1;
    size_t k = 0;
    for (; k < n && k + 4 < cap && k < 24; k++)
        buf[k] = (unsigned char)c->line[p + k] < 0x20 ? '?' : c->line[p + k];
    if (k < n)
        memcpy(buf + k, "...", 4);
    else
        buf[k] = '\0';
}

/* A plain non-negative integer (no sign, fraction, exponent or leading zero)
 * at p; returns the byte after it, or (size_t)-1 after reporting. */
static size_t parse_uint(const line_ctx *c, size_t p, const char *name, int64_t max, int64_t *out)
{
    const char *s = c->line;
    size_t start = p;
    uint64_t v = 0;
    while (p < c->len && s[p] >= '0' && s[p] <= '9' && p - start < 16)
        v = v * 10 + (uint64_t)(s[p++] - '0');
    bool plain = p > start && !(s[start] == '0' && p - start > 1) &&
                 !(p < c->len && ((s[p] >= '0' && s[p] <= '9') || s[p] == '.' || s[p] == 'e' || s[p] == 'E'));
    if (!plain || v > (uint64_t)max) {
        char text[32];
        value_text(c, start, text, sizeof text);
        if (plain)
            tsim_megatron_line_fail(c, start, "%s is %s, above the limit of %lld", name, text, (long long)max);
        else
            tsim_megatron_line_fail(c, start, "%s is %s, expected a non-negative integer", name, text);
        return (size_t)-1;
    }
    *out = (int64_t)v;
    return p;
}

/* A string without escapes into buf (empty and *plain false when it has
 * escapes or is too long: it then matches nothing). */
static size_t parse_text(const line_ctx *c, size_t p, const char *name, char *buf, size_t cap, bool *plain)
{
    if (p >= c->len || c->line[p] != '"') {
        char text[32];
        value_text(c, p, text, sizeof text);
        tsim_megatron_line_fail(c, p, "%s is %s, expected a string", name, text);
        return (size_t)-1;
    }
    size_t start = p + 1, q = start;
    while (q < c->len && c->line[q] != '"' && c->line[q] != '\\' && (unsigned char)c->line[q] >= 0x20)
        q++;
    if (q < c->len && c->line[q] == '"' && q - start < cap) {
        memcpy(buf, c->line + start, q - start);
        buf[q - start] = '\0';
        *plain = true;
        return q + 1;
    }
    tsim_json_fault f;
    size_t n = tsim_json_check(c->line + p, c->len - p, &f);
    if (n == (size_t)-1) {
        tsim_megatron_line_fail(c, p, "malformed string");
        return (size_t)-1;
    }
    buf[0] = '\0';
    *plain = false;
    return p + n;
}

/* "top_indices": rows of expert ids, counted into row (when not NULL). */
static size_t parse_ids(const line_ctx *c, megatron *m, size_t p, int64_t *row, call *k)
{
    const char *s = c->line;
    k->rows = 0;
    k->row_len = -1;
    k->max_id = -1;
    if (p >= c->len || s[p] != '[') {
        char text[32];
        value_text(c, p, text, sizeof text);
        tsim_megatron_line_fail(c, p, "\"top_indices\" is %s, expected an array of rows of expert ids", text);
        return (size_t)-1;
    }
    p = skip_ws(c, p + 1);
    if (p < c->len && s[p] == ']')
        return p + 1;
    const int64_t E = m->experts;
    const size_t len = c->len;
    /* locals, not m-> and k-> fields: row[v]++ could alias those (int64_t),
     * and the compiler would reload them for every id */
    uint32_t *const seen = m->seen;
    int64_t max_id = -1;
    uint64_t h = 1;
    for (;;) {
        if (p >= c->len || s[p] != '[') {
            char text[32];
            value_text(c, p, text, sizeof text);
            tsim_megatron_line_fail(c, p, "\"top_indices\" row %lld is %s, expected an array of expert ids",
                                    (long long)k->rows, text);
            return (size_t)-1;
        }
        size_t row_at = p;
        p = skip_ws(c, p + 1);
        int64_t n = 0;
        if (++m->row_stamp == 0) {
            memset(seen, 0, sizeof *seen * (size_t)(TSIM_MAX_EXPERTS + 1));
            m->row_stamp = 1;
        }
        const uint32_t stamp = m->row_stamp;
        if (p < c->len && s[p] == ']') {
            p++;
        } else {
            for (;;) {
                size_t at = p;
                uint64_t v = 0;
                while (p < len && s[p] >= '0' && s[p] <= '9' && p - at < 12)
                    v = v * 10 + (uint64_t)(s[p++] - '0');
                bool plain = p > at && !(s[at] == '0' && p - at > 1) &&
                             !(p < len && ((s[p] >= '0' && s[p] <= '9') || s[p] == '.' || s[p] == 'e' ||
                                           s[p] == 'E'));
                if (!plain) {
                    char text[32];
                    value_text(c, at, text, sizeof text);
                    tsim_megatron_line_fail(c, at,
                                            "\"top_indices\" row %lld: %s is not an expert id (a non-negative integer)",
                                            (long long)k->rows, text);
                    return (size_t)-1;
                }
                if (v > (uint64_t)TSIM_MAX_EXPERTS) {
                    tsim_megatron_line_fail(c, at,
                                            "\"top_indices\" row %lld: expert id %llu is above the limit of %d experts",
                                            (long long)k->rows, (unsigned long long)v, TSIM_MAX_EXPERTS);
                    return (size_t)-1;
                }
                if ((int64_t)v > max_id)
                    max_id = (int64_t)v;
                if (seen[v] == stamp && k->dup_id < 0) {
                    k->dup_id = (int64_t)v;
                    k->dup_row = k->rows;
                    k->dup_at = at;
                }
                seen[v] = stamp;
                h = (h + v + 1) * UINT64_C(0x9E3779B97F4A7C15);
                h ^= h >> 29;
                if (E > 0 && v >= (uint64_t)E) {
                    if (k->bad_id < 0) {
                        k->bad_id = (int64_t)v;
                        k->bad_row = k->rows;
                        k->bad_at = at;
                    }
                } else if (row) {
                    row[v]++;
                }
                n++;
                p = skip_ws(c, p);
                if (p < len && s[p] == ',') {
                    p = skip_ws(c, p + 1);
                    continue;
                }
                if (p < len && s[p] == ']') {
                    p++;
                    break;
                }
                tsim_megatron_line_fail(c, p, "\"top_indices\" row %lld: expected ',' or ']'", (long long)k->rows);
                return (size_t)-1;
            }
        }
        h = (h ^ UINT64_C(0xA5A5A5A5A5A5A5A5)) * UINT64_C(0xBF58476D1CE4E5B9); /* the row ends */
        k->ids_hash = h;
        if (k->row_len < 0)
            k->row_len = n;
        else if (n != k->row_len) {
            tsim_megatron_line_fail(
                c, row_at, "\"top_indices\" row %lld has %lld ids, but row 0 has %lld (every token picks topk)",
                (long long)k->rows, (long long)n, (long long)k->row_len);
            return (size_t)-1;
        }
        k->rows++;
        p = skip_ws(c, p);
        if (p < c->len && s[p] == ',') {
            p = skip_ws(c, p + 1);
            continue;
        }
        if (p < len && s[p] == ']') {
            k->max_id = max_id;
            return p + 1;
        }
        tsim_megatron_line_fail(c, p, "\"top_indices\": expected ',' or ']' after row %lld", (long long)k->rows - 1);
        return (size_t)-1;
    }
}

enum { K_STEP, K_STAGE, K_BLOCK, K_LAYER, K_RANK, K_NUM_TOKENS, K_TOPK, K_TOP_INDICES, K_MTP_IDX, K_N };
static const char *const keys[K_N] = {"step", "stage", "block",       "layer",  "rank",
                                      "num_tokens", "topk", "top_indices", "mtp_idx"};

/* Parses one line. row (E zeros, or NULL) receives the counts. Returns 0 or
 * an error; k holds the call. */
int tsim_megatron_parse_call(const line_ctx *c, megatron *m, int64_t *row, call *k)
{
    memset(k, 0, sizeof *k);
    k->block = BLOCK_DECODER;
    k->bad_id = -1;
    k->dup_id = -1;
    const char *s = c->line;
    bool seen[K_N] = {false};
    size_t p = skip_ws(c, 0);
    if (p >= c->len || s[p] != '{')
        return tsim_megatron_line_fail(c, p, "expected a router call object");
    p = skip_ws(c, p + 1);
    if (p < c->len && s[p] == '}')
        return tsim_megatron_line_fail(c, p,
                                       "empty object: a router call needs \"step\", \"layer\" and \"top_indices\"");
    for (;;) {
        if (p >= c->len || s[p] != '"')
            return tsim_megatron_line_fail(c, p, "expected a key");
        size_t key_at = p;
        size_t q = p + 1;
        while (q < c->len && s[q] != '"' && s[q] != '\\' && (unsigned char)s[q] >= 0x20)
            q++;
        int id = -1;
        if (q < c->len && s[q] == '"') {
            for (int i = 0; i < K_N; i++)
                if (strlen(keys[i]) == q - p - 1 && memcmp(s + p + 1, keys[i], q - p - 1) == 0)
                    id = i;
            p = q + 1;
        } else {
            tsim_json_fault f;
            size_t n = tsim_json_check(s + p, c->len - p, &f);
            if (n == (size_t)-1)
                return tsim_megatron_line_fail(c, p, "malformed key");
            p += n;
        }
        if (id >= 0 && seen[id])
            return tsim_megatron_line_fail(c, key_at, "key \"%s\" appears twice", keys[id]);
        p = skip_ws(c, p);
        if (p >= c->len || s[p] != ':')
            return tsim_megatron_line_fail(c, p, "expected ':' after a key");
        p = skip_ws(c, p + 1);
        bool plain = true;
        char text[32];
        switch (id) {
        case K_STEP:
            p = parse_uint(c, p, "\"step\"", TSIM_MAX_INDEX, &k->step);
            break;
        case K_LAYER:
            p = parse_uint(c, p, "\"layer\"", MAX_LAYER, &k->layer);
            break;
        case K_RANK:
            p = parse_uint(c, p, "\"rank\"", TSIM_MAX_RANKS - 1, &k->rank);
            k->has_rank = true;
            break;
        case K_NUM_TOKENS:
            p = parse_uint(c, p, "\"num_tokens\"", TSIM_MAX_INDEX, &k->num_tokens);
            k->has_num_tokens = true;
            break;
        case K_TOPK:
            p = parse_uint(c, p, "\"topk\"", TSIM_MAX_EXPERTS, &k->topk);
            k->has_topk = true;
            break;
        case K_MTP_IDX:
            p = parse_uint(c, p, "\"mtp_idx\"", MAX_MTP_IDX, &k->mtp_idx);
            k->has_mtp_idx = true;
            break;
        case K_STAGE:
            p = parse_text(c, p, "\"stage\"", k->stage, sizeof k->stage, &plain);
            if (p != (size_t)-1 && !plain)
                snprintf(k->stage, sizeof k->stage, "?");
            break;
        case K_BLOCK: {
            size_t at = p;
            p = parse_text(c, p, "\"block\"", text, sizeof text, &plain);
            if (p == (size_t)-1)
                break;
            if (plain && strcmp(text, "decoder") == 0)
                k->block = BLOCK_DECODER;
            else if (plain && strcmp(text, "mtp") == 0)
                k->block = BLOCK_MTP;
            else {
                char shown[32];
                value_text(c, at, shown, sizeof shown);
                return tsim_megatron_line_fail(c, at, "\"block\" is %s, expected \"decoder\" or \"mtp\"", shown);
            }
            break;
        }
        case K_TOP_INDICES:
            k->ids_at = p;
            p = parse_ids(c, m, p, row, k);
            k->ids_end = p;
            break;
        default: {
            tsim_json_fault f;
            size_t n = tsim_json_check(s + p, c->len - p, &f);
            if (n == (size_t)-1)
                return tsim_megatron_line_fail(c, p, "malformed value");
            char name[64];
            size_t kl = 0;
            for (size_t i = key_at + 1; i < c->len && s[i] != '"' && kl + 1 < sizeof name; i++)
                name[kl++] = s[i];
            name[kl] = '\0';
            char where[TSIM_ERROR_MSG_MAX];
            snprintf(where, sizeof where, "%s:%ld", c->f->path, c->lineno);
            if (m->quiet)
                m->dirty = true; /* the caller reads this file again, warning */
            else if (tsim_reader_warn_key(c->r, where, "in a router call", name))
                return tsim_error_set(c->err, TSIM_E_INTERNAL, "out of memory");
            p += n;
        }
        }
        if (p == (size_t)-1)
            return TSIM_E_INPUT;
        if (id >= 0)
            seen[id] = true;
        p = skip_ws(c, p);
        if (p < c->len && s[p] == ',') {
            p = skip_ws(c, p + 1);
            continue;
        }
        if (p < c->len && s[p] == '}')
            break;
        return tsim_megatron_line_fail(c, p, "expected ',' or '}'");
    }
    if (skip_ws(c, p + 1) != c->len)
        return tsim_megatron_line_fail(c, skip_ws(c, p + 1), "text after the router call object");
    static const int required[] = {K_STEP, K_LAYER, K_TOP_INDICES};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!seen[required[i]])
            return tsim_megatron_line_fail(c, 0, "missing key \"%s\"", keys[required[i]]);
    if (k->has_num_tokens && k->num_tokens != k->rows)
        return tsim_megatron_line_fail(c, 0, "\"num_tokens\" is %lld, but \"top_indices\" has %lld rows",
                                       (long long)k->num_tokens, (long long)k->rows);
    if (k->has_topk && k->rows > 0 && k->topk != k->row_len)
        return tsim_megatron_line_fail(c, 0, "\"topk\" is %lld, but the rows of \"top_indices\" have %lld ids",
                                       (long long)k->topk, (long long)k->row_len);
    if (k->block == BLOCK_MTP && k->has_mtp_idx)
        k->layer += k->mtp_idx << 32;
    return 0;
}
