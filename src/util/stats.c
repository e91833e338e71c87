#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The bounded summary of stats.h. Bin layout, in value order: negative
 * magnitudes from the largest down ([0, MAG_BINS)), the zero bin (ZERO_BIN),
 * positive magnitudes from the smallest up. -inf, +inf and NaN are counted
 * apart (below, above) and never binned. The magnitude bins run from
 * HIST_TINY to the largest finite double, so no finite value shares an
 * outermost bin with values far from it (token totals reach 2^62; a cap at
 * 1e16 once turned every p50/p95 of such a trace into its minimum). Chunks
 * are allocated on first use, so the wide range costs only the directory of
 * chunk pointers (N_CHUNKS of them, about 9 KB per bounded series). */
#define HIST_TINY 1e-12
#define CHUNK_BINS 128
#define MAG_BINS 74111 /* ceil(log(DBL_MAX / 1e-12) / log(1.01)) + 1 */
#define ZERO_BIN MAG_BINS
#define ALL_BINS (2 * MAG_BINS + 1)
#define N_CHUNKS ((ALL_BINS + CHUNK_BINS - 1) / CHUNK_BINS)

typedef struct {
    uint64_t n[CHUNK_BINS];
    double min[CHUNK_BINS];
} hist_chunk;

struct tsim_series_hist {
    double sum;            /* in push order, as the exact mean */
    double w_mean, w_m2;   /* Welford */
    double min, max;
    uint64_t below, above; /* -inf; +inf and NaN */
    hist_chunk *chunks[N_CHUNKS];
};

/* Bin of a finite value; monotone in v. log(a) - log(tiny) rather than
 * log(a / tiny), which overflows for a above about 1.8e296. */
static int hist_bin(double v)
{
    double a = fabs(v);
    if (a < HIST_TINY)
        return ZERO_BIN;
    int k = (int)floor((log(a) - log(HIST_TINY)) / log(TSIM_SERIES_GAMMA));
    if (k < 0)
        k = 0;
    if (k > MAG_BINS - 1)
        k = MAG_BINS - 1;
    return v < 0 ? MAG_BINS - 1 - k : ZERO_BIN + 1 + k;
}

static int hist_add(struct tsim_series_hist *h, uint64_t n_before, double v)
{
    h->sum += v;
    double d = v - h->w_mean;
    h->w_mean += d / (double)(n_before + 1);
    h->w_m2 += d * (v - h->w_mean);
    if (n_before == 0 || v < h->min)
        h->min = v;
    if (n_before == 0 || v > h->max)
        h->max = v;
    if (isnan(v) || v == INFINITY) {
        h->above++;
        return 0;
    }
    if (v == -INFINITY) {
        h->below++;
        return 0;
    }
    int b = hist_bin(v);
    hist_chunk *c = h->chunks[b / CHUNK_BINS];
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return -1;
        h->chunks[b / CHUNK_BINS] = c;
    }
    int i = b % CHUNK_BINS;
    if (c->n[i] == 0 || v < c->min[i])
        c->min[i] = v;
    c->n[i]++;
    return 0;
}

static void hist_free(struct tsim_series_hist *h)
{
    if (!h)
        return;
    for (int c = 0; c < N_CHUNKS; c++)
        free(h->chunks[c]);
    free(h);
}

/* Moves the kept values into a new summary and frees them. */
static int series_go_bounded(tsim_series *s)
{
    struct tsim_series_hist *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        if (hist_add(h, i, s->values[i])) {
            hist_free(h);
            return -1;
        }
    }
    free(s->values);
    s->values = NULL;
    s->cap = 0;
    s->hist = h;
    return 0;
}

/* Nearest-rank quantile from the histogram: the smallest value seen in the
 * bin holding position ceil(q*n) (the same rank rule as tsim_quantile_sorted). */
static double hist_quantile(const tsim_series *s, double q)
{
    const struct tsim_series_hist *h = s->hist;
    double pos = ceil(q * (double)s->n - 1e-9);
    uint64_t k = pos < 1 ? 1 : (uint64_t)pos;
    if (k > s->n)
        k = s->n;
    uint64_t seen = h->below;
    if (k <= seen)
        return h->min;
    for (int c = 0; c < N_CHUNKS; c++) {
        const hist_chunk *ch = h->chunks[c];
        if (!ch)
            continue;
        for (int i = 0; i < CHUNK_BINS; i++) {
            seen += ch->n[i];
            if (ch->n[i] && k <= seen)
                return ch->min[i];
        }
    }
    return h->max;
}

void tsim_series_bound(tsim_series *s, size_t exact_max)
{
    if (s->n == 0 && !s->hist)
        s->exact_max = exact_max;
}

double tsim_series_mean(const tsim_series *s)
{
    if (s->n == 0)
        return 0.0;
    if (s->hist)
        return s->hist->sum / (double)s->n;
    double sum = 0.0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->values[i];
    return sum / (double)s->n;
}

int tsim_series_push(tsim_series *s, double v)
{
    if (!s->hist && s->exact_max && s->n == s->exact_max && series_go_bounded(s))
        return -1;
    if (s->hist) {
        if (hist_add(s->hist, s->n, v))
            return -1;
        s->n++;
        return 0;
    }
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
    hist_free(s->hist);
    memset(s, 0, sizeof *s);
}

void tsim_series_clear(tsim_series *s)
{
    hist_free(s->hist);
    s->hist = NULL;
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
    if (s->hist) {
        const struct tsim_series_hist *h = s->hist;
        out.n = s->n;
        out.mean = h->sum / (double)s->n;
        out.std = sqrt(h->w_m2 / (double)s->n);
        out.min = h->min;
        out.max = h->max;
        out.p50 = hist_quantile(s, 0.50);
        out.p95 = hist_quantile(s, 0.95);
        return out;
    }
    double *scratch = malloc(sizeof *scratch * s->n);
    if (!scratch)
        return out;
    out = tsim_summarize(s->values, s->n, scratch);
    free(scratch);
    return out;
}

/* ---- sketches: the bounded summary as data, and merging two of them ------ */

int tsim_sketch_bins(void)
{
    return ALL_BINS;
}

void tsim_sketch_free(tsim_sketch *k)
{
    free(k->bin);
    free(k->count);
    free(k->bin_min);
    memset(k, 0, sizeof *k);
}

static int sketch_of_hist(const struct tsim_series_hist *h, uint64_t n, tsim_sketch *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->below = h->below;
    out->above = h->above;
    out->sum = h->sum;
    out->mean = h->w_mean;
    out->m2 = h->w_m2;
    out->min = h->min;
    out->max = h->max;
    size_t bins = 0;
    for (int c = 0; c < N_CHUNKS; c++)
        for (int i = 0; h->chunks[c] && i < CHUNK_BINS; i++)
            bins += h->chunks[c]->n[i] != 0;
    if (bins) {
        out->bin = malloc(sizeof *out->bin * bins);
        out->count = malloc(sizeof *out->count * bins);
        out->bin_min = malloc(sizeof *out->bin_min * bins);
        if (!out->bin || !out->count || !out->bin_min) {
            tsim_sketch_free(out);
            return -1;
        }
    }
    for (int c = 0; c < N_CHUNKS; c++)
        for (int i = 0; h->chunks[c] && i < CHUNK_BINS; i++)
            if (h->chunks[c]->n[i]) {
                out->bin[out->n_bins] = c * CHUNK_BINS + i;
                out->count[out->n_bins] = h->chunks[c]->n[i];
                out->bin_min[out->n_bins] = h->chunks[c]->min[i];
                out->n_bins++;
            }
    return 0;
}

int tsim_series_sketch(const tsim_series *s, tsim_sketch *out)
{
    if (s->hist)
        return sketch_of_hist(s->hist, s->n, out);
    struct tsim_series_hist *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++)
        rc = hist_add(h, i, s->values[i]);
    if (rc == 0)
        rc = sketch_of_hist(h, s->n, out);
    hist_free(h);
    return rc;
}

int tsim_series_from_sketch(tsim_series *s, const tsim_sketch *k)
{
    if (s->n || s->hist)
        return -1;
    struct tsim_series_hist *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->sum = k->sum;
    h->w_mean = k->mean;
    h->w_m2 = k->m2;
    h->min = k->min;
    h->max = k->max;
    h->below = k->below;
    h->above = k->above;
    uint64_t total = k->below + k->above;
    for (size_t i = 0; i < k->n_bins; i++) {
        int b = k->bin[i];
        /* ascending, in range, non-empty: anything else is a damaged file */
        if (b < 0 || b >= ALL_BINS || (i > 0 && b <= k->bin[i - 1]) || k->count[i] == 0) {
            hist_free(h);
            return -1;
        }
        hist_chunk *c = h->chunks[b / CHUNK_BINS];
        if (!c && !(c = h->chunks[b / CHUNK_BINS] = calloc(1, sizeof *c))) {
            hist_free(h);
            return -1;
        }
        c->n[b % CHUNK_BINS] = k->count[i];
        c->min[b % CHUNK_BINS] = k->bin_min[i];
        total += k->count[i];
    }
    if (total != k->n) {
        hist_free(h);
        return -1;
    }
    free(s->values);
    s->values = NULL;
    s->cap = 0;
    s->n = (size_t)k->n;
    s->hist = h;
    return 0;
}

/* Chan, Golub and LeVeque's pairwise update of Welford's mean and M2. */
static void chan_combine(double *mean, double *m2, uint64_t na, double mean_b, double m2_b, uint64_t nb)
{
    if (nb == 0)
        return;
    if (na == 0) {
        *mean = mean_b;
        *m2 = m2_b;
        return;
    }
    const double n = (double)na + (double)nb;
    const double delta = mean_b - *mean;
    *mean += delta * ((double)nb / n);
    *m2 += m2_b + delta * delta * ((double)na * (double)nb / n);
}

int tsim_series_merge(tsim_series *dst, const tsim_series *src)
{
    if (!dst->hist)
        return -1;
    if (src->n == 0)
        return 0;
    tsim_sketch k;
    if (tsim_series_sketch(src, &k))
        return -1;
    struct tsim_series_hist *h = dst->hist;
    const uint64_t na = dst->n;
    for (size_t i = 0; i < k.n_bins; i++) {
        int b = k.bin[i];
        hist_chunk *c = h->chunks[b / CHUNK_BINS];
        if (!c && !(c = h->chunks[b / CHUNK_BINS] = calloc(1, sizeof *c))) {
            tsim_sketch_free(&k);
            return -1;
        }
        int j = b % CHUNK_BINS;
        if (c->n[j] == 0 || k.bin_min[i] < c->min[j])
            c->min[j] = k.bin_min[i];
        c->n[j] += k.count[i];
    }
    h->sum += k.sum;
    chan_combine(&h->w_mean, &h->w_m2, na, k.mean, k.m2, k.n);
    if (na == 0 || k.min < h->min)
        h->min = k.min;
    if (na == 0 || k.max > h->max)
        h->max = k.max;
    h->below += k.below;
    h->above += k.above;
    dst->n += (size_t)k.n;
    tsim_sketch_free(&k);
    return 0;
}
