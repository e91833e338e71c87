/* Aggregates over records (model.md): mean, population std, min, p50, p95
 * (nearest rank), max. */
#ifndef TSIM_STATS_H
#define TSIM_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    double mean, std, min, p50, p95, max;
    size_t n;
} tsim_summary;

/* A growable list of values (doubles its capacity when full).
 *
 * Bounded memory: with exact_max > 0 (tsim_series_bound), a series keeps its
 * values only up to exact_max of them. The push past that switches it for
 * good to a summary of fixed size: n, the sum in push order (so the mean is
 * the same sum / n as the exact path), Welford's running variance, exact min
 * and max, and a histogram for p50/p95. The histogram has logarithmic bins,
 * each spanning a factor TSIM_SERIES_GAMMA (1.01) in magnitude, per sign, for
 * magnitudes from 1e-12 up to the largest finite double, plus one bin for
 * magnitudes below 1e-12 (and zero); bins remember the smallest value that
 * fell in them. A quantile is then that smallest value of the bin holding the
 * nearest-rank position: a value actually seen, in the same bin as the exact
 * answer, so at most the exact answer and within 1% of it relatively, over
 * the whole finite range (below 1e-12 in absolute terms in the zero bin;
 * infinities and NaN are counted outside the bins). Small integers (below
 * 100) get a bin each, so their quantiles stay exact. The bins are allocated
 * 128 at a time on first use: memory grows with the decades the values span,
 * never with n.
 * Once bounded, values is NULL: per-record output needs exact_max = 0. */
#define TSIM_SERIES_GAMMA 1.01
typedef struct {
    double *values;
    size_t n, cap;
    size_t exact_max;       /* 0: keep every value (the default) */
    struct tsim_series_hist *hist; /* non-NULL once the series is bounded */
} tsim_series;

int tsim_series_push(tsim_series *s, double v); /* 0 ok, -1 out of memory */
void tsim_series_free(tsim_series *s);
/* Forgets every value; keeps exact_max. */
void tsim_series_clear(tsim_series *s);
/* Sets exact_max (see above); only on an empty series. */
void tsim_series_bound(tsim_series *s, size_t exact_max);
/* True while every value is kept (values[0..n-1] valid). */
static inline int tsim_series_exact(const tsim_series *s)
{
    return s->hist == NULL;
}
/* The mean: the same sum in push order, divided by n, in both modes. */
double tsim_series_mean(const tsim_series *s);

/* The bounded summary as plain data, for partial results that another
 * process merges (taotsim merge). Bins are listed in value order, only those
 * holding a value: bin[i] is the bin's number in stats.c's layout, count[i]
 * its values, bin_min[i] the smallest of them. */
typedef struct {
    uint64_t n, below, above; /* values; -inf; +inf and NaN */
    double sum, mean, m2;     /* sum in push order; Welford's mean and M2 */
    double min, max;
    size_t n_bins;
    int32_t *bin;
    uint64_t *count;
    double *bin_min;
} tsim_sketch;

/* The sketch of a series: its own when bounded; an exact series is pushed
 * through a fresh summary in order (the same sum, moments and bins it would
 * have had bounded). 0 ok, -1 out of memory. */
int tsim_series_sketch(const tsim_series *s, tsim_sketch *out);
void tsim_sketch_free(tsim_sketch *k);
/* Makes an empty series the bounded series the sketch describes. Returns -1
 * when out of memory or when the sketch is inconsistent (a bin out of range
 * or listed twice, counts not adding up to n). */
int tsim_series_from_sketch(tsim_series *s, const tsim_sketch *k);
/* Adds src's values to dst as if pushed after dst's, for a bounded dst:
 * n, min, max, the infinities and every bin exactly (so p50 and p95 are what
 * one series of all the values gives); the sum is dst's plus src's, and the
 * mean and M2 combine by Chan et al.'s parallel formula, so mean and std may
 * differ from one pass over the values in the last bits. src may be exact
 * (its values are summarised first). -1 when out of memory or dst is exact. */
int tsim_series_merge(tsim_series *dst, const tsim_series *src);
/* Number of bins of the layout (bins are 0 .. tsim_sketch_bins() - 1). */
int tsim_sketch_bins(void);

/* Summarises values (sorting a copy in scratch, which must hold n doubles). */
tsim_summary tsim_summarize(const double *values, size_t n, double *scratch);
/* Convenience: allocates its own scratch; returns a zero summary on OOM. */
tsim_summary tsim_series_summary(const tsim_series *s);

/* Nearest-rank quantile of a sorted array: the value at 1-based ceil(q*n). */
double tsim_quantile_sorted(const double *sorted, size_t n, double q);

#endif
