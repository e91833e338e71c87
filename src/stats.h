/* Aggregates over records (model.md): mean, population std, min, p50, p95
 * (nearest rank), max. */
#ifndef TSIM_STATS_H
#define TSIM_STATS_H

#include <stddef.h>

typedef struct {
    double mean, std, min, p50, p95, max;
    size_t n;
} tsim_summary;

/* A growable list of values (doubles its capacity when full). */
typedef struct {
    double *values;
    size_t n, cap;
} tsim_series;

int tsim_series_push(tsim_series *s, double v); /* 0 ok, -1 out of memory */
void tsim_series_free(tsim_series *s);
void tsim_series_clear(tsim_series *s);

/* Summarises values (sorting a copy in scratch, which must hold n doubles). */
tsim_summary tsim_summarize(const double *values, size_t n, double *scratch);
/* Convenience: allocates its own scratch; returns a zero summary on OOM. */
tsim_summary tsim_series_summary(const tsim_series *s);

/* Nearest-rank quantile of a sorted array: the value at 1-based ceil(q*n). */
double tsim_quantile_sorted(const double *sorted, size_t n, double q);

#endif
