#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tsim_series_push(tsim_series *s, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        double *p = realloc(s->values, sizeof *p * cap);
        if (!p)
            return -1;
        s->values = p;
        s->cap = cap;
    }
    s->values[s->n++] = v;
    return 0;
}

void tsim_series_free(tsim_series *s)
{
    free(s->values);
    memset(s, 0, sizeof *s);
}

void tsim_series_clear(tsim_series *s)
{
    s->n = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tsim_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    double pos = ceil(q * (double)n - 1e-9); /* guard q*n landing a hair above an integer */
    size_t k = pos < 1 ? 1 : (size_t)pos;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

tsim_summary tsim_summarize(const double *values, size_t n, double *scratch)
{
    tsim_summary s = {0};
    s.n = n;
    if (n == 0)
        return s;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += values[i];
    s.mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = values[i] - s.mean;
        ss += d * d;
    }
    s.std = sqrt(ss / (double)n);
    memcpy(scratch, values, sizeof *values * n);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    s.min = scratch[0];
    s.max = scratch[n - 1];
    s.p50 = tsim_quantile_sorted(scratch, n, 0.50);
    s.p95 = tsim_quantile_sorted(scratch, n, 0.95);
    return s;
}

tsim_summary tsim_series_summary(const tsim_series *s)
{
    tsim_summary out = {0};
    if (s->n == 0)
        return out;
    double *scratch = malloc(sizeof *scratch * s->n);
    if (!scratch)
        return out;
    out = tsim_summarize(s->values, s->n, scratch);
    free(scratch);
    return out;
}
