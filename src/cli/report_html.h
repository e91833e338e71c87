/* The self-contained HTML page of `taotsim report` (report_html.c), also
 * written by the study commands' --report FILE. */
#ifndef TSIM_REPORT_HTML_H
#define TSIM_REPORT_HTML_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "outfile.h"

struct cJSON;

/* The page's head (styles, title) and end. */
void tsim_report_html_begin(FILE *f);
void tsim_report_html_end(FILE *f);

/* One result's section: its command, version, parameters, trace, tables,
 * notes and, when draw, its figures inline as SVG. source names the result
 * (its file) in the heading and in error messages; NULL for none. A result
 * without "study" and "results" is TSIM_E_INPUT. */
int tsim_report_html_section(FILE *f, const struct cJSON *root, const char *source, bool draw, tsim_error *err);

/* --report FILE, before any work: FILE can be written (standard output is
 * refused: the study's own output goes there) and gnuplot draws SVG. NULL
 * path: nothing to check. */
int tsim_report_check(const char *path, tsim_error *err);

/* Opens path (atomically), writes the page of one result and flushes it; the
 * caller commits or aborts out with its other outputs, so a late failure
 * leaves no file behind. */
int tsim_report_write(tsim_outfile *out, const char *path, const struct cJSON *result, tsim_error *err);

#endif
