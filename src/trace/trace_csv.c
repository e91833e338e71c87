/* CSV import (trace-format.md section 3): a header row
 * "[index,]dataset,iteration,layer_idx,0,1,...,E-1", then one row of
 * per-expert counts per (dataset, iteration, layer). Rows become records with
 * the even split over --ep ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"
#include "trace_internal.h"

typedef struct csv_field {
    char *text; /* NUL-terminated, unquoted in place */
    long col;   /* 1-based byte column where the field starts */
} csv_field;

/* Splits a line into fields in place. Fields beyond `max` are counted, not
 * stored. Returns the field count, or -1 (with *bad_col) for an unterminated
 * quote. */
static long split_fields(char *line, csv_field *fields, long max, long *bad_col)
{
    long n = 0;
    char *p = line;
    for (;;) {
        char *start = p;
        char *text = p;
        if (*p == '"') {
            /* RFC 4180 quoting: "" inside quotes is one quote. */
            char *w = p;
            text = w;
            p++;
            for (;;) {
                if (*p == '\0') {
                    *bad_col = (long)(start - line) + 1;
                    return -1;
                }
                if (*p == '"') {
                    if (p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            char *tail = w;
            while (*p && *p != ',')
                *tail++ = *p++; /* text after the closing quote stays, and then fails to parse */
            char sep = *p;
            *tail = '\0';
            if (n < max) {
                fields[n].text = text;
                fields[n].col = (long)(start - line) + 1;
            }
            n++;
            if (sep == '\0')
                return n;
            p++;
            continue;
        }
        while (*p && *p != ',')
            p++;
        char sep = *p;
        *p = '\0';
        if (n < max) {
            fields[n].text = text;
            fields[n].col = (long)(start - line) + 1;
        }
        n++;
        if (sep == '\0')
            return n;
        p++;
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Parses a non-negative integer cell. Integral decimals ("12.0", as pandas
 * writes float columns) are accepted; anything else is named in the message,
 * which is only formatted on the error path (this runs once per cell). */
static int csv_uint(const tsim_reader *r, long line, const csv_field *f, int64_t recno, const char *name, int expert,
                    int64_t max, const char *max_text, int64_t *out, tsim_error *err)
{
    const char *s = trim(f->text);
    bool numeric = *s && strspn(s, "0123456789+-.eE") == strlen(s);
    char *end = NULL;
    double d = numeric ? strtod(s, &end) : 0.0;
    if (numeric && end != s && *end == '\0' && isfinite(d) && d >= 0 && d == floor(d) && d <= (double)max) {
        *out = (int64_t)d;
        return 0;
    }
    char where[TSIM_ERROR_MSG_MAX];
    if (expert >= 0)
        snprintf(where, sizeof where, "%s:%ld:%ld: record %lld: expert %d", r->path, line, f->col, (long long)recno,
                 expert);
    else
        snprintf(where, sizeof where, "%s:%ld:%ld: record %lld: %s", r->path, line, f->col, (long long)recno, name);
    if (*s == '\0')
        return tsim_error_set(err, TSIM_E_INPUT, "%s is empty, expected a non-negative integer", where);
    if (!numeric || end == s || *end != '\0' || !isfinite(d)) {
        char shown[40];
        size_t n = 0;
        for (; s[n] && n < 32; n++)
            shown[n] = (unsigned char)s[n] < 0x20 ? '?' : s[n];
        shown[n] = '\0';
        return tsim_error_set(err, TSIM_E_INPUT, "%s is \"%s%s\", expected a non-negative integer", where, shown,
                              s[n] ? "..." : "");
    }
    if (d > (double)max)
        return tsim_error_set(err, TSIM_E_INPUT, "%s is %.40s, above the limit of %s", where, s, max_text);
    return tsim_error_set(err, TSIM_E_INPUT, "%s is %.40s, expected a non-negative integer", where, s);
}

static int csv_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    char *line;
    size_t len;
    int rc = tsim_next_content_line(r, &line, &len, err);
    if (rc != 1)
        return rc;
    const long ln = r->lines.line;
    const int64_t recno = r->raw_records + 1;
    const int E = r->hdr.experts;
    const long want = r->csv_fields;
    csv_field *f = r->csv_row;
    long bad_col = 0;
    long n = split_fields(line, f, want, &bad_col);
    if (n < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: record %lld: unterminated quoted field", r->path, ln,
                              bad_col, (long long)recno);
    if (n != want)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: record %lld: row has %ld fields, expected %ld (as in the header)", r->path, ln,
                              (long long)recno, n, want);
    raw->line = ln;
    long i = r->csv_has_index ? 1 : 0;
    const char *ds = trim(f[i].text);
    if (strlen(ds) >= TSIM_TAG_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: record %lld: \"dataset\" is longer than %d bytes",
                              r->path, ln, f[i].col, (long long)recno, TSIM_TAG_MAX - 1);
    memcpy(raw->tag, ds, strlen(ds) + 1);
    rc = csv_uint(r, ln, &f[i + 1], recno, "\"iteration\"", -1, TSIM_MAX_INDEX, "2^53 - 1", &raw->microbatch, err);
    if (!rc)
        rc = csv_uint(r, ln, &f[i + 2], recno, "\"layer_idx\"", -1, TSIM_MAX_INDEX, "2^53 - 1", &raw->layer, err);
    if (rc)
        return rc;
    for (int e = 0; e < E; e++) {
        rc = csv_uint(r, ln, &f[i + 3 + e], recno, NULL, e, TSIM_MAX_COUNT, "2^40", &r->tpe[e], err);
        if (rc)
            return rc;
    }
    raw->kind = REC_EXPERT_COUNTS;
    return 1;
}

int tsim_csv_open(tsim_reader *r, bool gz, const tsim_read_options *opts, tsim_error *err)
{
    if (!opts || opts->ep <= 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: a CSV trace carries no EP size: give --ep N (the number of ranks, dividing the "
                              "number of experts)",
                              r->path);
    int rc = tsim_gzline_open(&r->lines, r->path, gz, tsim_trace_max_line(), err);
    if (rc)
        return rc;
    r->lines_open = true;
    char *line;
    size_t len;
    rc = tsim_gzline_next(&r->lines, &line, &len, err);
    if (rc < 0 || rc > 1)
        return rc;
    if (rc == 0 || tsim_line_blank(line))
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: expected the CSV header row on line 1", r->path);
    if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3;

    /* Count the columns on a copy first, so the limit is checked before
     * allocating by it. */
    char *copy = strdup(line);
    if (!copy)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    long bad_col = 0;
    long n = split_fields(copy, NULL, 0, &bad_col);
    free(copy);
    if (n < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1:%ld: CSV header: unterminated quoted field", r->path, bad_col);
    if (n > TSIM_MAX_EXPERTS + 4)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: CSV header: %ld columns, above the limit of %d experts",
                              r->path, n, TSIM_MAX_EXPERTS);
    r->csv_row = calloc((size_t)n, sizeof *r->csv_row);
    if (!r->csv_row)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    csv_field *f = r->csv_row;
    split_fields(line, f, n, &bad_col);
    for (long i = 0; i < n; i++)
        f[i].text = trim(f[i].text);

    long i = 0;
    /* pandas writes its index column with an empty name ("Unnamed: 0" after a re-save) */
    if (strcmp(f[0].text, "index") == 0 || f[0].text[0] == '\0' || strcmp(f[0].text, "Unnamed: 0") == 0)
        i = 1;
    r->csv_has_index = i == 1;
    static const char *const fixed[] = {"dataset", "iteration", "layer_idx"};
    for (int k = 0; k < 3; k++, i++) {
        if (i >= n)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1: CSV header: expected \"[index,]dataset,iteration,layer_idx,0,1,...\", the "
                                  "row ends before \"%s\"",
                                  r->path, fixed[k]);
        if (strcmp(f[i].text, fixed[k]) != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1:%ld: CSV header: column %ld is \"%.40s\", expected \"%s\" (the header is "
                                  "\"[index,]dataset,iteration,layer_idx,0,1,...\")",
                                  r->path, f[i].col, i + 1, f[i].text, fixed[k]);
    }
    long experts = n - i;
    if (experts < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: CSV header: no expert columns after \"layer_idx\"", r->path);
    if (experts > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: CSV header: %ld expert columns, above the limit of %d", r->path,
                              experts, TSIM_MAX_EXPERTS);
    for (long e = 0; e < experts; e++, i++) {
        char want[24];
        snprintf(want, sizeof want, "%ld", e);
        if (strcmp(f[i].text, want) != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1:%ld: CSV header: column %ld is \"%.40s\", expected expert \"%s\"", r->path,
                                  f[i].col, i + 1, f[i].text, want);
    }
    if (experts % opts->ep != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: experts %ld (CSV columns) is not divisible by --ep %d", r->path,
                              experts, opts->ep);
    r->csv_fields = n;
    r->hdr.experts = (int)experts;
    r->hdr.ep = opts->ep;
    r->hdr.ranks_per_node = 8;
    r->hdr.topk = 0;
    r->file_ep = opts->ep;

    /* Provenance for result files: where the records came from. */
    const char *base = strrchr(r->path, '/');
    base = base ? base + 1 : r->path;
    cJSON *meta = cJSON_CreateObject();
    if (!meta || !cJSON_AddStringToObject(meta, "source", "csv") || !cJSON_AddStringToObject(meta, "file", base) ||
        (opts->dataset && !cJSON_AddStringToObject(meta, "dataset", opts->dataset))) {
        cJSON_Delete(meta);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    r->hdr.meta = meta;
    r->next_raw = csv_next;
    return TSIM_OK;
}
