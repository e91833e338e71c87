#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int tsim_format_parse(const char *s, tsim_format *out, tsim_error *err)
{
    if (strcmp(s, "md") == 0 || strcmp(s, "markdown") == 0)
        *out = TSIM_FORMAT_MD;
    else if (strcmp(s, "csv") == 0)
        *out = TSIM_FORMAT_CSV;
    else if (strcmp(s, "json") == 0)
        *out = TSIM_FORMAT_JSON;
    else
        return tsim_error_set(err, TSIM_E_INPUT, "--format: expected md, csv or json, got '%s'", s);
    return TSIM_OK;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int tsim_table_init(tsim_table *t, int ncols, const char *const *headers)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->headers = calloc((size_t)ncols, sizeof *t->headers);
    if (!t->headers)
        return -1;
    for (int c = 0; c < ncols; c++)
        if (!(t->headers[c] = dup_str(headers[c])))
            return -1;
    return 0;
}

int tsim_table_add_row(tsim_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, sizeof *c * (size_t)cap * (size_t)t->ncols);
        if (!c)
            return -1;
        t->cells = c;
        t->cap = cap;
    }
    for (int c = 0; c < t->ncols; c++)
        if (!(t->cells[(size_t)t->nrows * (size_t)t->ncols + (size_t)c] = dup_str(cells[c] ? cells[c] : "")))
            return -1;
    t->nrows++;
    return 0;
}

int tsim_table_add_row_cells(tsim_table *t, const char *cells, size_t cell_size)
{
    const char **row = malloc(sizeof *row * (size_t)t->ncols);
    if (!row)
        return -1;
    for (int c = 0; c < t->ncols; c++)
        row[c] = cells + (size_t)c * cell_size;
    int rc = tsim_table_add_row(t, row);
    free(row);
    return rc;
}

void tsim_table_free(tsim_table *t)
{
    if (t->headers)
        for (int c = 0; c < t->ncols; c++)
            free(t->headers[c]);
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->headers);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* A cell that holds a number (or a placeholder for one): "12.5", "-3", "+0.4",
 * "10%", "1.2 ± 0.3", "-", "n/a". */
static bool looks_numeric(const char *s)
{
    if (strcmp(s, "-") == 0 || strcmp(s, "n/a") == 0 || *s == '\0')
        return true;
    if (*s == '+' || *s == '-')
        s++;
    return *s >= '0' && *s <= '9';
}

/* Display width: UTF-8 code points (λ, ±, Δ are two bytes, one column). */
static size_t display_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static void print_padded(FILE *out, const char *s, size_t width, bool right)
{
    size_t w = display_width(s), pad = w < width ? width - w : 0;
    fputc(' ', out);
    if (right)
        for (size_t i = 0; i < pad; i++)
            fputc(' ', out);
    fputs(s, out);
    if (!right)
        for (size_t i = 0; i < pad; i++)
            fputc(' ', out);
    fputs(" |", out);
}

static void print_csv_cell(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else
        fputs(s, out);
}

void tsim_table_print(const tsim_table *t, FILE *out, tsim_format fmt)
{
    if (fmt == TSIM_FORMAT_CSV) {
        for (int c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', out);
            print_csv_cell(out, t->headers[c]);
        }
        fputc('\n', out);
        for (int r = 0; r < t->nrows; r++) {
            for (int c = 0; c < t->ncols; c++) {
                if (c)
                    fputc(',', out);
                print_csv_cell(out, t->cells[(size_t)r * (size_t)t->ncols + (size_t)c]);
            }
            fputc('\n', out);
        }
        return;
    }
    size_t width[64] = {0};
    int ncols = t->ncols < 64 ? t->ncols : 64;
    for (int c = 0; c < ncols; c++) {
        width[c] = display_width(t->headers[c]);
        if (width[c] < 3)
            width[c] = 3;
        for (int r = 0; r < t->nrows; r++) {
            size_t w = display_width(t->cells[(size_t)r * (size_t)t->ncols + (size_t)c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    /* Numbers right-aligned, text left-aligned. */
    bool numeric[64];
    for (int c = 0; c < ncols; c++) {
        numeric[c] = true;
        for (int r = 0; r < t->nrows && numeric[c]; r++)
            numeric[c] = looks_numeric(t->cells[(size_t)r * (size_t)t->ncols + (size_t)c]);
    }
    fputc('|', out);
    for (int c = 0; c < ncols; c++)
        print_padded(out, t->headers[c], width[c], numeric[c]);
    fputs("\n|", out);
    for (int c = 0; c < ncols; c++) {
        fputc(numeric[c] ? '-' : ':', out);
        for (size_t i = 0; i < width[c]; i++)
            fputc('-', out);
        fputs(numeric[c] ? ":|" : "-|", out);
    }
    fputc('\n', out);
    for (int r = 0; r < t->nrows; r++) {
        fputc('|', out);
        for (int c = 0; c < ncols; c++)
            print_padded(out, t->cells[(size_t)r * (size_t)t->ncols + (size_t)c], width[c], numeric[c]);
        fputc('\n', out);
    }
}

cJSON *tsim_summary_json(const tsim_summary *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "mean", s->mean);
    cJSON_AddNumberToObject(j, "std", s->std);
    cJSON_AddNumberToObject(j, "min", s->min);
    cJSON_AddNumberToObject(j, "p50", s->p50);
    cJSON_AddNumberToObject(j, "p95", s->p95);
    cJSON_AddNumberToObject(j, "max", s->max);
    return j;
}

int tsim_json_print(FILE *out, const cJSON *j)
{
    char *text = cJSON_Print(j);
    if (!text)
        return -1;
    /* a non-UTF-8 file name or tag must not make the result invalid JSON */
    char *valid = tsim_utf8_repair_json(text);
    if (!valid) {
        free(text);
        return -1;
    }
    fputs(valid, out);
    fputc('\n', out);
    if (valid != text)
        free(valid);
    free(text);
    return 0;
}

void tsim_fmt_num(char *buf, size_t n, double v, int decimals)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else {
        snprintf(buf, n, "%.*f", decimals, v);
        if (strcmp(buf, "-0") == 0 || (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)))
            memmove(buf, buf + 1, strlen(buf)); /* no "-0.00" */
    }
}

void tsim_fmt_signed_num(char *buf, size_t n, double v, int decimals)
{
    char t[32];
    tsim_fmt_num(t, sizeof t, v, decimals);
    snprintf(buf, n, "%s%s", (v > 0 && strspn(t, "0.") != strlen(t)) ? "+" : "", t);
}
