/* CSV import (trace-format.md section 3): a header row
 * "[index,]TAG,iteration,layer_idx[,rank],0,1,...,E-1", where TAG is any
 * column name (a dataset, a skew setting, ...) whose values become the
 * records' tags. Without a rank column, one row of per-expert totals per
 * (tag, iteration, layer), split evenly over --ep ranks; with one, one row per
 * source rank, the rows of a record next to each other, and the ranks of the
 * first record give the EP size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"
#include "utf8.h"
#include "trace_internal.h"

typedef struct csv_field {
    char *text; /* NUL-terminated, unquoted in place */
    long col;   /* 1-based byte column where the field starts */
} csv_field;

/* Splits a line into fields in place. Fields beyond `max` are counted, not
 * stored. Returns the field count, or -1 with *bad_col and *problem for an
 * unterminated quote or text after a closing quote ("a"b is not ab). */
static long split_fields(char *line, csv_field *fields, long max, long *bad_col, const char **problem)
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
                    *problem = "unterminated quoted field";
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
            while (*p == ' ' || *p == '\t' || *p == '\r')
                p++;
            if (*p && *p != ',') {
                *bad_col = (long)(p - line) + 1;
                *problem = "text after the closing quote of a quoted field (a quote inside one is written \"\")";
                return -1;
            }
            char sep = *p;
            *w = '\0';
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

/* The exact value of a decimal number that is an integer:
 * [+-]digits[.digits][(e|E)[+-]digits]. "12.0" (as pandas writes float
 * columns) and "1e3" are integers; "5.0000000000000001" is not, although it
 * rounds to 5 as a double. Returns 0 with *out, 1 when malformed, 2 when not
 * a non-negative integer, 3 when above max. */
static int decimal_uint(const char *s, int64_t max, int64_t *out)
{
    bool negative = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    const char *m = s;
    long len = 0, point = -1;
    for (; (*s >= '0' && *s <= '9') || (*s == '.' && point < 0); s++) {
        if (*s == '.')
            point = len;
        else
            len++;
    }
    if (len == 0)
        return 1;
    long frac = point < 0 ? 0 : len - point, exp = 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        bool eneg = *s == '-';
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 1;
        for (; *s >= '0' && *s <= '9'; s++)
            if (exp < 1000000)
                exp = exp * 10 + (*s - '0');
        exp = eneg ? -exp : exp;
    }
    if (*s)
        return 1;
/* the i-th digit of the mantissa, its point skipped */
#define DIGIT(i) (m[(i) + (point >= 0 && (i) >= point)] - '0')
    long first = 0;
    while (first < len && DIGIT(first) == 0)
        first++;
    if (first == len) {
        *out = 0;
        return 0;
    }
    if (negative)
        return 2;
    const long whole = len - frac + exp; /* digits before the value's decimal point */
    for (long i = whole > first ? whole : first; i < len; i++)
        if (DIGIT(i))
            return 2;
    if (whole - first > 16)
        return 3; /* at least 10^16, above every limit */
    int64_t v = 0;
    for (long i = first; i < whole; i++)
        v = v * 10 + (i < len ? DIGIT(i) : 0);
#undef DIGIT
    if (v > max)
        return 3;
    *out = v;
    return 0;
}

/* Parses a non-negative integer cell (decimal_uint). Anything else is named
 * in the message, which is only formatted on the error path (this runs once
 * per cell). */
static int csv_uint(const tsim_reader *r, long line, const csv_field *f, int64_t recno, const char *name, int expert,
                    int64_t max, const char *max_text, int64_t *out, tsim_error *err)
{
    const char *s = trim(f->text);
    int bad = decimal_uint(s, max, out);
    if (bad == 0)
        return 0;
    char where[TSIM_ERROR_MSG_MAX];
    if (expert >= 0)
        snprintf(where, sizeof where, "%s:%ld:%ld: record %lld: expert %d", r->path, line, f->col, (long long)recno,
                 expert);
    else
        snprintf(where, sizeof where, "%s:%ld:%ld: record %lld: %s", r->path, line, f->col, (long long)recno, name);
    if (*s == '\0')
        return tsim_error_set(err, TSIM_E_INPUT, "%s is empty, expected a non-negative integer", where);
    if (bad == 1) {
        char shown[40];
        size_t n = 0;
        for (; s[n] && n < 32; n++)
            shown[n] = (unsigned char)s[n] < 0x20 ? '?' : s[n];
        shown[n] = '\0';
        return tsim_error_set(err, TSIM_E_INPUT, "%s is \"%s%s\", expected a non-negative integer", where, shown,
                              s[n] ? "..." : "");
    }
    if (bad == 3)
        return tsim_error_set(err, TSIM_E_INPUT, "%s is %.40s, above the limit of %s", where, s, max_text);
    return tsim_error_set(err, TSIM_E_INPUT, "%s is %.40s, expected a non-negative integer", where, s);
}

/* The offset of the first byte of s that is not valid UTF-8, or -1. Tags
 * end up in JSON, which must be UTF-8: such a tag would write a trace that
 * no reader accepts. */
static long invalid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = tsim_utf8_sequence(p);
        if (n == 0)
            return (long)(p - (const unsigned char *)s);
        p += n;
    }
    return -1;
}

/* The key columns of one row; the expert cells stay in r->csv_row. */
typedef struct {
    char tag[TSIM_TAG_MAX];
    int64_t microbatch;
    int64_t layer;
    int64_t rank;
    long line;
} row_key;

/* Reads the next row and parses its key columns. Returns 1, 0 at the end of
 * the file, or an error. */
static int read_row(tsim_reader *r, int64_t recno, row_key *k, tsim_error *err)
{
    char *line;
    size_t len;
    int rc = tsim_next_content_line(r, &line, &len, err);
    if (rc != 1)
        return rc;
    const long ln = r->lines.line;
    const long want = r->csv_fields;
    csv_field *f = r->csv_row;
    long bad_col = 0;
    const char *problem = "";
    long n = split_fields(line, f, want, &bad_col, &problem);
    if (n < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: record %lld: %s", r->path, ln, bad_col,
                              (long long)recno, problem);
    if (n != want)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: record %lld: row has %ld fields, expected %ld (as in the header)", r->path, ln,
                              (long long)recno, n, want);
    k->line = ln;
    long i = r->csv_tag_col;
    const char *tag = trim(f[i].text);
    if (strlen(tag) >= TSIM_TAG_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: record %lld: \"%s\" is longer than %d bytes", r->path, ln,
                              f[i].col, (long long)recno, r->csv_tag_name, TSIM_TAG_MAX - 1);
    long bad = invalid_utf8(tag);
    if (bad >= 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld:%ld: record %lld: \"%s\" is not valid UTF-8 (byte %ld of the value is 0x%02x): "
                              "tags are JSON strings",
                              r->path, ln, f[i].col, (long long)recno, r->csv_tag_name, bad + 1,
                              (unsigned)(unsigned char)tag[bad]);
    memcpy(k->tag, tag, strlen(tag) + 1);
    rc = csv_uint(r, ln, &f[i + 1], recno, "\"iteration\"", -1, TSIM_MAX_INDEX, "2^53 - 1", &k->microbatch, err);
    if (!rc)
        rc = csv_uint(r, ln, &f[i + 2], recno, "\"layer_idx\"", -1, TSIM_MAX_INDEX, "2^53 - 1", &k->layer, err);
    if (!rc && r->csv_has_rank)
        rc = csv_uint(r, ln, &f[i + 3], recno, "\"rank\"", -1, TSIM_MAX_RANKS - 1, "4095", &k->rank, err);
    return rc ? rc : 1;
}

/* The expert cells of the row just read, into dst[E]. */
static int read_cells(tsim_reader *r, const row_key *k, int64_t recno, int64_t *dst, tsim_error *err)
{
    const csv_field *f = r->csv_row + r->csv_first_expert;
    for (int e = 0; e < r->hdr.experts; e++) {
        int rc = csv_uint(r, k->line, &f[e], recno, NULL, e, TSIM_MAX_COUNT, "2^40", &dst[e], err);
        if (rc)
            return rc;
    }
    return 0;
}

static bool same_record(const row_key *a, const row_key *b)
{
    return a->microbatch == b->microbatch && a->layer == b->layer && strcmp(a->tag, b->tag) == 0;
}

static int csv_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    const int64_t recno = r->raw_records + 1;
    row_key k;
    int rc = read_row(r, recno, &k, err);
    if (rc != 1)
        return rc;
    raw->line = k.line;
    memcpy(raw->tag, k.tag, sizeof raw->tag);
    raw->microbatch = k.microbatch;
    raw->layer = k.layer;
    raw->kind = REC_EXPERT_COUNTS;
    rc = read_cells(r, &k, recno, r->tpe, err);
    return rc ? rc : 1;
}

/* Places one per-rank row (its cells in src) into the record being built. */
static int place_rank_row(tsim_reader *r, const row_key *k, const row_key *first, int64_t recno, const int64_t *src,
                          tsim_error *err)
{
    const int R = r->file_ep;
    if (k->rank >= R)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: record %lld: rank %lld is out of range 0..%d (the first record has rows for "
                              "%d ranks)",
                              r->path, k->line, (long long)recno, (long long)k->rank, R - 1, R);
    if (r->csv_rank_seen[k->rank])
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: record %lld: a second row for rank %lld (the record starts on line %ld)",
                              r->path, k->line, (long long)recno, (long long)k->rank, first->line);
    r->csv_rank_seen[k->rank] = true;
    int64_t *dst = tsim_reader_row(r, (int)k->rank);
    if (dst != src)
        memcpy(dst, src, sizeof *dst * (size_t)r->hdr.experts);
    tsim_reader_row_done(r);
    return 0;
}

/* Per-source rows: the rows of one (tag, iteration, layer) in a run, one per
 * rank. The first row of the next record is read ahead and kept. */
static int csv_next_ranked(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    const int64_t recno = r->raw_records + 1;
    const int R = r->file_ep;
    row_key first;
    int rc;
    if (r->csv_have_pending) {
        first = *(const row_key *)r->csv_pending_key;
        r->csv_have_pending = false;
    } else {
        rc = read_row(r, recno, &first, err);
        if (rc != 1)
            return rc;
        if ((rc = read_cells(r, &first, recno, r->csv_pending, err)))
            return rc;
    }
    raw->line = first.line;
    memcpy(raw->tag, first.tag, sizeof raw->tag);
    raw->microbatch = first.microbatch;
    raw->layer = first.layer;
    raw->kind = REC_COUNTS;
    memset(r->csv_rank_seen, 0, sizeof *r->csv_rank_seen * (size_t)R);
    tsim_reader_begin_counts(r);
    if ((rc = place_rank_row(r, &first, &first, recno, r->csv_pending, err)))
        return rc;
    int rows = 1;
    for (;;) {
        row_key k;
        rc = read_row(r, recno, &k, err);
        if (rc == 0)
            break;
        if (rc != 1)
            return rc;
        if (!same_record(&k, &first)) {
            if ((rc = read_cells(r, &k, recno + 1, r->csv_pending, err)))
                return rc;
            memcpy(r->csv_pending_key, &k, sizeof k);
            r->csv_have_pending = true;
            break;
        }
        if (k.rank >= R || r->csv_rank_seen[k.rank])
            return place_rank_row(r, &k, &first, recno, NULL, err);
        if ((rc = read_cells(r, &k, recno, tsim_reader_row(r, (int)k.rank), err)))
            return rc;
        if ((rc = place_rank_row(r, &k, &first, recno, tsim_reader_row(r, (int)k.rank), err)))
            return rc;
        rows++;
    }
    if (rows < R) {
        int missing = 0;
        while (r->csv_rank_seen[missing])
            missing++;
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: record %lld: rows for %d of %d ranks (rank %d is missing); the rows of a record "
                              "must follow each other",
                              r->path, first.line, (long long)recno, rows, R, missing);
    }
    return 1;
}

static bool index_name(const char *s)
{
    /* pandas writes its index column with an empty name ("Unnamed: 0" after a re-save) */
    return strcmp(s, "index") == 0 || s[0] == '\0' || strcmp(s, "Unnamed: 0") == 0;
}

#define CSV_LAYOUT "\"[index,]TAG,iteration,layer_idx[,rank],0,1,...\" (TAG: any name)"

/* Counts the ranks of the first record (the rows up to the first change of
 * tag, iteration or layer), which must be 0..N-1, each once; then starts the
 * file over. */
static int count_ranks(tsim_reader *r, bool gz, int *ranks, tsim_error *err)
{
    uint8_t *seen = calloc(TSIM_MAX_RANKS, 1);
    if (!seen)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    row_key first, k;
    int n = 0, rc;
    while ((rc = read_row(r, 1, n ? &k : &first, err)) == 1) {
        const row_key *row = n ? &k : &first;
        if (n && !same_record(&k, &first))
            break;
        if (seen[row->rank]) {
            free(seen);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:%ld: record 1: a second row for rank %lld (the record starts on line %ld)",
                                  r->path, row->line, (long long)row->rank, first.line);
        }
        seen[row->rank] = 1;
        n++;
    }
    if (rc < 0 || rc > 1) {
        free(seen);
        return rc;
    }
    for (int i = 0; i < n; i++)
        if (!seen[i]) {
            free(seen);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:%ld: record 1: rows for %d ranks, but rank %d is missing (ranks run 0..N-1)",
                                  r->path, first.line, n, i);
        }
    free(seen);
    *ranks = n;
    /* Start over after the header row. */
    tsim_gzline_close(&r->lines);
    r->lines_open = false;
    if ((rc = tsim_gzline_open(&r->lines, r->path, gz, tsim_trace_max_line(), err)))
        return rc;
    r->lines_open = true;
    char *line;
    size_t len;
    rc = tsim_gzline_next(&r->lines, &line, &len, err);
    return rc == 1 ? TSIM_OK : rc ? rc : tsim_error_set(err, TSIM_E_INPUT, "%s: the file changed while read", r->path);
}

int tsim_csv_open(tsim_reader *r, bool gz, const tsim_read_options *opts, tsim_error *err)
{
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
    const char *problem = "";
    long n = split_fields(copy, NULL, 0, &bad_col, &problem);
    free(copy);
    if (n < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1:%ld: CSV header: %s", r->path, bad_col, problem);
    if (n > TSIM_MAX_EXPERTS + 5)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: CSV header: %ld columns, above the limit of %d experts",
                              r->path, n, TSIM_MAX_EXPERTS);
    r->csv_row = calloc((size_t)n, sizeof *r->csv_row);
    if (!r->csv_row)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    csv_field *f = r->csv_row;
    split_fields(line, f, n, &bad_col, &problem);
    for (long i = 0; i < n; i++)
        f[i].text = trim(f[i].text);

    /* "iteration" in column 2 means no index column; in column 3, one. */
    long tag = 0;
    if (n > 2 && strcmp(f[1].text, "iteration") != 0 && strcmp(f[2].text, "iteration") == 0) {
        if (!index_name(f[0].text))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1:%ld: CSV header: column 1 is \"%.40s\", expected an index column (\"index\", "
                                  "an empty name or \"Unnamed: 0\") before the tag column (the header is " CSV_LAYOUT
                                  ")",
                                  r->path, f[0].col, f[0].text);
        tag = 1;
    }
    r->csv_tag_col = tag;
    /* the header row's text is gone once more rows are read: keep the name */
    char *tag_column = strcmp(f[tag].text, "dataset") != 0 ? strdup(f[tag].text) : NULL;
    if (strcmp(f[tag].text, "dataset") != 0 && !tag_column)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    r->csv_tag_column = tag_column;
    if (invalid_utf8(f[tag].text) >= 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1:%ld: CSV header: the name of column %ld is not valid UTF-8",
                              r->path, f[tag].col, tag + 1);
    snprintf(r->csv_tag_name, sizeof r->csv_tag_name, "%.40s", f[tag].text);
    for (char *c = r->csv_tag_name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    static const char *const fixed[] = {"iteration", "layer_idx"};
    long i = tag + 1;
    for (int k = 0; k < 2; k++, i++) {
        if (i >= n)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1: CSV header: expected " CSV_LAYOUT ", the row ends before \"%s\"", r->path,
                                  fixed[k]);
        if (strcmp(f[i].text, fixed[k]) != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:1:%ld: CSV header: column %ld is \"%.40s\", expected \"%s\" (the header is "
                                  CSV_LAYOUT ")",
                                  r->path, f[i].col, i + 1, f[i].text, fixed[k]);
    }
    r->csv_has_rank = i < n && strcmp(f[i].text, "rank") == 0;
    if (r->csv_has_rank)
        i++;
    r->csv_first_expert = i;
    long experts = n - i;
    if (experts < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: CSV header: no expert columns after \"%s\"", r->path,
                              r->csv_has_rank ? "rank" : "layer_idx");
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
    r->csv_fields = n;
    r->hdr.experts = (int)experts;
    r->hdr.ranks_per_node = 8;
    r->hdr.topk = 0;

    if (r->csv_has_rank) {
        int ranks = 0;
        if ((rc = count_ranks(r, gz, &ranks, err)))
            return rc;
        if (ranks == 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: empty trace: no records", r->path);
        if (experts % ranks != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: experts %ld (CSV columns) is not divisible by the %d ranks of the \"rank\" "
                                  "column",
                                  r->path, experts, ranks);
        r->file_ep = ranks;
        r->csv_pending = calloc((size_t)experts, sizeof *r->csv_pending);
        r->csv_rank_seen = calloc((size_t)ranks, sizeof *r->csv_rank_seen);
        r->csv_pending_key = malloc(sizeof(row_key));
        if (!r->csv_pending || !r->csv_rank_seen || !r->csv_pending_key)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    } else {
        if (!opts || opts->ep <= 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: a CSV trace carries no EP size: give --ep N (the number of ranks, dividing the "
                                  "number of experts)",
                                  r->path);
        if (experts % opts->ep != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: experts %ld (CSV columns) is not divisible by --ep %d",
                                  r->path, experts, opts->ep);
        r->file_ep = opts->ep;
    }
    r->hdr.ep = r->file_ep;

    /* Provenance for result files: where the records came from. */
    const char *base = strrchr(r->path, '/');
    base = base ? base + 1 : r->path;
    cJSON *meta = cJSON_CreateObject();
    bool ok = meta && cJSON_AddStringToObject(meta, "source", "csv") && cJSON_AddStringToObject(meta, "file", base);
    if (ok && r->csv_tag_column)
        ok = cJSON_AddStringToObject(meta, "tag_column", r->csv_tag_column) != NULL;
    if (ok && opts && opts->dataset)
        ok = cJSON_AddStringToObject(meta, "dataset", opts->dataset) != NULL;
    if (!ok) {
        cJSON_Delete(meta);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    r->hdr.meta = meta;
    r->next_raw = r->csv_has_rank ? csv_next_ranked : csv_next;
    return TSIM_OK;
}
