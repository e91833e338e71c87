/* Tables in markdown and CSV, and the common parts of JSON result files. */
#ifndef TSIM_REPORT_H
#define TSIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "provenance.h"
#include "stats.h"

struct cJSON;

typedef enum { TSIM_FORMAT_MD, TSIM_FORMAT_CSV, TSIM_FORMAT_JSON } tsim_format;

int tsim_format_parse(const char *s, tsim_format *out, tsim_error *err);

/* A table of preformatted cells. */
typedef struct {
    int ncols;
    char **headers; /* [ncols] */
    char **cells;   /* [nrows * ncols] */
    int nrows, cap;
} tsim_table;

int tsim_table_init(tsim_table *t, int ncols, const char *const *headers);
/* Appends a row of ncols cells formatted by the caller (copied). */
int tsim_table_add_row(tsim_table *t, const char *const *cells);
/* The same from cells held in one array char [ncols][cell_size]. */
int tsim_table_add_row_cells(tsim_table *t, const char *cells, size_t cell_size);
/* Cell helper: printf into a small static-free buffer the table copies. */
void tsim_table_free(tsim_table *t);
/* Markdown (aligned pipes) or CSV (RFC 4180 quoting). */
void tsim_table_print(const tsim_table *t, FILE *out, tsim_format fmt);

/* {"mean":..,"std":..,"min":..,"p50":..,"p95":..,"max":..} */
struct cJSON *tsim_summary_json(const tsim_summary *s);

/* Prints a cJSON object formatted (2-space indent is cJSON's tab; we print
 * cJSON_Print output) followed by a newline. Returns 0 or -1 on OOM. */
int tsim_json_print(FILE *out, const struct cJSON *j);

/* Formats a double for tables: fixed decimals, "-" for NaN. */
void tsim_fmt_num(char *buf, size_t n, double v, int decimals);
/* The same with a "+" before a positive value that does not print as zero
 * (a difference: "+0.4", "0.0", "-1.2"). */
void tsim_fmt_signed_num(char *buf, size_t n, double v, int decimals);

#endif
