/* Strict number parsing for options and lists ("1,2,3" or "1-10+1"). */
#ifndef TSIM_PARSE_H
#define TSIM_PARSE_H

#include <stdint.h>

#include "error.h"

int tsim_parse_int(const char *s, int lo, int hi, int *out, const char *what, tsim_error *err);
int tsim_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, tsim_error *err);
int tsim_parse_double(const char *s, double lo, double hi, double *out, const char *what, tsim_error *err);

/* A list of doubles: "a,b,c" and/or ranges "lo-hi+step" (inclusive, step > 0).
 * Fills out[0..max-1]; *n receives the count. */
int tsim_parse_double_list(const char *s, double *out, int max, int *n, const char *what, tsim_error *err);
int tsim_parse_int_list(const char *s, int *out, int max, int *n, const char *what, tsim_error *err);

#endif
