/* The bounded series' p50/p95 sketch (stats.h): the promise is that a
 * quantile is a value actually seen, at most the exact nearest-rank answer
 * and within 1% of it, over the whole range of finite values. Checked at both
 * ends (values near 1 and near 2^62, where record totals of 2^40-scale counts
 * live, up to 2^63 and the largest double) and over many random ranges. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "random_records.h"
#include "stats.h"

/* Pushes values into an exact series and one bounded at exact_max = 8 (so
 * every case goes through the sketch) and checks the promise on p50 and p95;
 * returns the larger relative error seen. */
static double check_sketch(const double *values, size_t n, const char *what)
{
    tsim_series exact = {0}, bounded = {0};
    tsim_series_bound(&bounded, 8);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(tsim_series_push(&exact, values[i]), 0);
        cr_assert_eq(tsim_series_push(&bounded, values[i]), 0);
    }
    cr_assert(!tsim_series_exact(&bounded), "%s: the series never left the exact path", what);
    tsim_summary a = tsim_series_summary(&exact), b = tsim_series_summary(&bounded);
    cr_assert_eq(a.min, b.min, "%s: min", what);
    cr_assert_eq(a.max, b.max, "%s: max", what);
    const double want[2] = {a.p50, a.p95}, got[2] = {b.p50, b.p95};
    const char *name[2] = {"p50", "p95"};
    double worst = 0.0;
    for (int q = 0; q < 2; q++) {
        cr_assert(got[q] <= want[q], "%s: %s %.17g above the exact %.17g", what, name[q], got[q], want[q]);
        const double rel = (want[q] - got[q]) / fabs(want[q]);
        cr_assert(rel < 0.01, "%s: %s %.17g is %.3f%% below the exact %.17g", what, name[q], got[q], 100.0 * rel,
                  want[q]);
        /* A value actually seen: the smallest of its bin. */
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = values[i] == got[q];
        cr_assert(seen, "%s: %s %.17g is no value that was pushed", what, name[q], got[q]);
        worst = rel > worst ? rel : worst;
    }
    tsim_series_free(&exact);
    tsim_series_free(&bounded);
    return worst;
}

/* n values log-uniform in [lo, hi] (both positive), shuffled by the draw. */
static void log_uniform(uint64_t *seed, double lo, double hi, double *out, size_t n)
{
    const double a = log(lo), b = log(hi);
    for (size_t i = 0; i < n; i++) {
        double v = exp(a + (b - a) * tsim_rand_unit(seed));
        out[i] = v < lo ? lo : (v > hi ? hi : v);
    }
}

enum { N = 20000 };

Test(stats, sketch_within_one_percent_near_one)
{
    static double v[N];
    uint64_t seed = 0x57a7001;
    log_uniform(&seed, 1.0, 1.5, v, N);
    check_sketch(v, N, "[1, 1.5]");
    log_uniform(&seed, 0.9, 1.1, v, N);
    check_sketch(v, N, "[0.9, 1.1]");
    /* Values a hair apart around 1: all in one or two bins, so the answer is
     * the smallest of them there, still within 1%. */
    for (size_t i = 0; i < N; i++)
        v[i] = 1.0 + 1e-9 * (double)((i * 7919) % N);
    check_sketch(v, N, "1 + 1e-9 steps");
    /* Imbalance-like ratios just above 0. */
    log_uniform(&seed, 1e-6, 1e-2, v, N);
    check_sketch(v, N, "[1e-6, 1e-2]");
    /* Near the bottom of the binned range. */
    log_uniform(&seed, 1e-12, 2e-12, v, N);
    check_sketch(v, N, "[1e-12, 2e-12]");
}

/* Record totals of 2^40-scale counts reach 2^62; the sketch used to stop at
 * 1e16, so every one of these series had p50 = p95 = its minimum (-24% and
 * -39% on a recorded trace). */
Test(stats, sketch_within_one_percent_near_2_to_62)
{
    static double v[N];
    uint64_t seed = 0x57a7002;
    log_uniform(&seed, 0x1p40, 0x1p62, v, N);
    check_sketch(v, N, "[2^40, 2^62]");
    log_uniform(&seed, 0x1p61, 0x1p62, v, N);
    check_sketch(v, N, "[2^61, 2^62]");
    log_uniform(&seed, 1e16, 0x1p63, v, N);
    check_sketch(v, N, "[1e16, 2^63]");
    /* Integers as counts are: 2^62 minus up to 2^50, every one exact in a double. */
    for (size_t i = 0; i < N; i++)
        v[i] = 0x1p62 - (double)(tsim_rand_range(&seed, 0, INT64_C(1) << 50));
    check_sketch(v, N, "2^62 - [0, 2^50]");
}

Test(stats, sketch_covers_every_finite_magnitude)
{
    static double v[N];
    uint64_t seed = 0x57a7003;
    log_uniform(&seed, 0x1p63, 1e300, v, N);
    check_sketch(v, N, "[2^63, 1e300]");
    log_uniform(&seed, 1e300, DBL_MAX, v, N);
    check_sketch(v, N, "[1e300, DBL_MAX]");
    /* Negative values mirror positive ones. */
    log_uniform(&seed, 0x1p40, 0x1p62, v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = -v[i];
    check_sketch(v, N, "[-2^62, -2^40]");
    /* Both ends of the range in one series. */
    log_uniform(&seed, 1e-12, DBL_MAX, v, N);
    check_sketch(v, N, "[1e-12, DBL_MAX]");
}

/* Random ranges anywhere from 1e-12 to the largest double, random sizes and
 * signs: the promise holds for every one. */
Test(stats, sketch_within_one_percent_on_random_ranges)
{
    static double v[N];
    uint64_t seed = 0x57a7004;
    double worst = 0.0;
    for (int trial = 0; trial < 300; trial++) {
        const double lo_exp = -12.0 + 320.0 * tsim_rand_unit(&seed);
        const double span = tsim_rand_unit(&seed) * (308.0 - lo_exp) * (trial % 3 == 0 ? 1.0 : 0.01);
        const double lo = pow(10.0, lo_exp), hi = fmin(pow(10.0, lo_exp + span), DBL_MAX);
        const size_t n = (size_t)tsim_rand_range(&seed, 9, N);
        log_uniform(&seed, lo, hi > lo ? hi : lo, v, n);
        if (trial % 4 == 1)
            for (size_t i = 0; i < n; i++)
                v[i] = -v[i];
        char what[96];
        snprintf(what, sizeof what, "trial %d: %zu values in [%g, %g]", trial, n, lo, hi);
        double rel = check_sketch(v, n, what);
        worst = rel > worst ? rel : worst;
    }
    fprintf(stderr, "stats sketch: worst relative error over 300 random ranges %.4f%%\n", 100.0 * worst);
}
