/* Generator versions 2 and 3 (gen --generator 2|3, gen_counts.c): the
 * binomial, Poisson and capped multinomial samplers against their
 * distributions, version 3 against version 2 (the same law), and the
 * records' invariants (rows, caps, the hotspot, the same bytes at any -j). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>

#include "evaluate.h"
#include "gen.h"
#include "gen_counts.h"
#include "gen_fixture.h"
#include "topology.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(gen_counts, .init = setup);

static tsim_counts_sampler *sampler_new(int entries, uint64_t seed)
{
    tsim_counts_sampler *s = NULL;
    cr_assert_eq(tsim_counts_sampler_init(&s, entries), 0);
    tsim_counts_seed(s, seed);
    return s;
}

/* log P(X = k) of Binomial(n, p), for the expected histogram. */
static double log_pmf(int64_t n, double p, int64_t k)
{
    return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1) + (double)k * log(p) +
           (double)(n - k) * log1p(-p);
}

/* Each (n, p) over both methods (inversion below a mean of 10, BTRS above)
 * and the p > 1/2 mirror: 200,000 draws, a chi-square test over the values
 * with an expected count of at least 20 (the rest pooled into two tails),
 * and the mean within 5 standard errors. */
Test(gen_counts, binomial_follows_its_distribution)
{
    static const struct {
        int64_t n;
        double p;
    } cases[] = {{1, 0.3}, {5, 0.3}, {40, 0.2}, {30, 0.33}, {100, 0.3}, {1000, 0.05},
                 {60, 0.5}, {20, 0.9}, {5000, 0.7}, {100000, 0.001}, {2000000, 0.25}};
    const int draws = 200000;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int64_t n = cases[c].n;
        const double p = cases[c].p;
        tsim_counts_sampler *s = sampler_new(1, 1000 + c);
        const double mean = (double)n * p, sd = sqrt(mean * (1 - p));
        const int64_t lo = (int64_t)fmax(0.0, floor(mean - 8 * sd)), hi = (int64_t)fmin((double)n, ceil(mean + 8 * sd));
        const size_t bins = (size_t)(hi - lo + 1);
        long *seen = calloc(bins + 2, sizeof *seen);
        double sum = 0.0;
        for (int i = 0; i < draws; i++) {
            int64_t x = tsim_counts_binomial(s, p, n);
            cr_assert(x >= 0 && x <= n, "n %lld p %g: drew %lld", (long long)n, p, (long long)x);
            sum += (double)x;
            seen[x < lo ? 0 : x > hi ? bins + 1 : (size_t)(x - lo) + 1]++;
        }
        cr_assert_lt(fabs(sum / draws - mean), 5 * sd / sqrt(draws) + 1e-12, "n %lld p %g: mean %g, expected %g",
                     (long long)n, p, sum / draws, mean);
        /* chi-square over cells expecting at least 20 draws */
        double chi2 = 0.0, pooled_e = 0.0, pooled_o = (double)(seen[0] + seen[bins + 1]);
        int cells = 0;
        for (int64_t k = lo; k <= hi; k++) {
            const double e = draws * exp(log_pmf(n, p, k));
            const double o = (double)seen[(size_t)(k - lo) + 1];
            if (e >= 20.0) {
                chi2 += (o - e) * (o - e) / e;
                cells++;
            } else {
                pooled_e += e;
                pooled_o += o;
            }
        }
        if (pooled_e >= 20.0) {
            chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
            cells++;
        }
        /* df = cells - 1; the 1e-6 upper quantile is below df + 7 sqrt(2 df) + 25 for these df */
        const double df = cells - 1;
        if (df >= 1)
            cr_assert_lt(chi2, df + 7 * sqrt(2 * df) + 25, "n %lld p %g: chi-square %g over %d cells", (long long)n,
                         p, chi2, cells);
        free(seen);
        tsim_counts_sampler_free(s);
    }
}

/* Random weights (some zero, sometimes all) and rooms: the picks sum to n,
 * stay within every room, and an entry without weight gets picks only when no
 * entry with weight has room left. */
Test(gen_counts, multinomial_fills_within_the_rooms)
{
    uint64_t state = 99;
    tsim_counts_sampler *s = sampler_new(16, 5);
    for (int trial = 0; trial < 2000; trial++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t x = state >> 20;
        const int entries = 1 + (int)(x % 16);
        double w[16];
        int64_t room[16], got[16], total_room = 0, weighted_room = 0;
        for (int i = 0; i < entries; i++) {
            x = x * 2862933555777941757ULL + 3037000493ULL;
            w[i] = (x >> 60) % 3 == 0 || trial % 7 == 0 ? 0.0 : (double)((x >> 40) % 1000) / 100.0;
            room[i] = (int64_t)((x >> 20) % 50);
            total_room += room[i];
            if (w[i] > 0)
                weighted_room += room[i];
        }
        const int64_t n = total_room == 0 ? 0 : (int64_t)(x % (uint64_t)(total_room + 1));
        tsim_counts_multinomial(s, entries, w, room, n, got);
        int64_t sum = 0, unweighted = 0;
        for (int i = 0; i < entries; i++) {
            cr_assert(got[i] >= 0 && got[i] <= room[i], "trial %d entry %d: %lld of room %lld", trial, i,
                      (long long)got[i], (long long)room[i]);
            sum += got[i];
            if (!(w[i] > 0))
                unweighted += got[i];
        }
        cr_assert_eq(sum, n, "trial %d: %lld picks of %lld", trial, (long long)sum, (long long)n);
        const int64_t beyond = n > weighted_room ? n - weighted_room : 0;
        cr_assert_eq(unweighted, beyond, "trial %d: %lld picks went to entries without weight, expected %lld", trial,
                     (long long)unweighted, (long long)beyond);
    }
    tsim_counts_sampler_free(s);
}

/* Without binding rooms the picks are multinomial: each entry's mean is
 * n w_i / W within 5 standard errors over many draws. */
Test(gen_counts, multinomial_means_follow_the_weights)
{
    const double w[5] = {1.0, 2.0, 0.5, 4.0, 2.5};
    const int64_t room[5] = {10000, 10000, 10000, 10000, 10000};
    const int64_t picks[2] = {1000, 7}; /* conditional binomials; one draw per pick */
    const int draws = 20000;
    tsim_counts_sampler *s = sampler_new(5, 17);
    for (int c = 0; c < 2; c++) {
        const int64_t n = picks[c];
        double sum[5] = {0};
        int64_t got[5];
        for (int d = 0; d < draws; d++) {
            tsim_counts_multinomial(s, 5, w, room, n, got);
            for (int i = 0; i < 5; i++)
                sum[i] += (double)got[i];
        }
        for (int i = 0; i < 5; i++) {
            const double q = w[i] / 10.0, mean = (double)n * q, se = sqrt((double)n * q * (1 - q) / draws);
            cr_assert_lt(fabs(sum[i] / draws - mean), 5 * se, "n %lld entry %d: mean %g, expected %g", (long long)n,
                         i, sum[i] / draws, mean);
        }
    }
    tsim_counts_sampler_free(s);
}

static tsim_gen_params v2_params(void)
{
    tsim_gen_params p = tsim_test_small_gen_params();
    p.version = TSIM_GEN_VERSION_COUNTS;
    return p;
}

/* All records, concatenated; the mean initial imbalance into *rho. */
static int64_t *v2_records(const tsim_gen_params *p, double *rho)
{
    tsim_gen *g = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_open(&g, p, &err), TSIM_OK, "%s", err.msg);
    const size_t cells = (size_t)p->ep * (size_t)p->experts;
    const int64_t n = tsim_gen_record_count(p);
    int64_t *out = malloc(sizeof *out * cells * (size_t)n);
    const tsim_record *rec;
    double one, sum = 0.0;
    for (int64_t i = 0; tsim_gen_next(g, &rec, &one) == 1; i++) {
        memcpy(out + (size_t)i * cells, rec->counts, sizeof *out * cells);
        sum += one;
    }
    if (rho)
        *rho = sum / (double)n;
    tsim_gen_close(g);
    return out;
}

/* Random regimes (placements, hot experts, skews, k up to E), versions 2
 * and 3 in turn: every row sums to T k, no expert gets more than T, an unskewed hot set of at most k
 * experts gets every hot token, and the records are the same at 1, 2 and 5
 * threads. */
Test(gen_counts, random_regimes_keep_the_invariants)
{
    uint64_t state = 4242;
    for (int trial = 0; trial < 120; trial++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t x = (uint32_t)(state >> 33);
        tsim_gen_params p = v2_params();
        p.version = trial % 2 ? TSIM_GEN_VERSION_BLOCKS : TSIM_GEN_VERSION_COUNTS;
        const int eps[] = {2, 4, 8};
        p.ep = eps[x % 3];
        p.experts = p.ep * (2 + (int)(x / 3 % 4));
        p.ranks_per_node = 1 + (int)(x / 12 % 4);
        p.topk = 1 + (int)(x / 48 % (uint32_t)p.experts);
        p.tokens = 1 + (int)(x / 7 % 300);
        p.microbatches = 2;
        p.hot_fraction = (double)(x / 192 % 11) / 10.0;
        p.concentration = x % 5 == 0 ? 0.02 : 200.0;
        p.seed = x;
        p.hot_placement = TSIM_HOT_FIRST;
        p.hot_ranks = 1 + (int)(x / 6336 % (uint32_t)p.ep);
        const int per_rank = p.experts / p.ep;
        p.hot_experts = (int)(x / 5 % (uint32_t)(per_rank + 1));
        p.hot_skew = (double)(x / 11 % 4);
        if (tsim_gen_hot_experts_per_rank(&p) < 2)
            p.hot_skew = 0.0;
        tsim_error err = {0};
        cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_OK, "trial %d: %s", trial, err.msg);
        const int64_t records = tsim_gen_record_count(&p);
        const size_t cells = (size_t)p.ep * (size_t)p.experts;
        int64_t *one = v2_records(&p, NULL);
        for (int64_t i = 0; i < records; i++)
            for (int r = 0; r < p.ep; r++) {
                const int64_t *row = one + (size_t)i * cells + (size_t)r * (size_t)p.experts;
                int64_t sum = 0;
                for (int e = 0; e < p.experts; e++) {
                    cr_assert(row[e] >= 0 && row[e] <= p.tokens, "trial %d: expert %d got %lld of %d tokens", trial,
                              e, (long long)row[e], p.tokens);
                    sum += row[e];
                }
                cr_assert_eq(sum, (int64_t)p.tokens * p.topk, "trial %d record %lld rank %d", trial, (long long)i,
                             r);
            }
        const int hot_ranks = tsim_gen_hot_rank_list(&p, NULL);
        const int m = hot_ranks * tsim_gen_hot_experts_per_rank(&p);
        if (m <= p.topk && p.hot_skew == 0) {
            const int64_t H = tsim_gen_hot_tokens(&p);
            for (int64_t i = 0; i < records; i++)
                for (int r = 0; r < p.ep; r++) {
                    const int64_t hot = H / p.ep + (r < H % p.ep ? 1 : 0);
                    for (int h = 0; h < hot_ranks; h++)
                        for (int j = 0; j < tsim_gen_hot_experts_per_rank(&p); j++) {
                            const int e = h * per_rank + j; /* hot ranks 0.., home experts contiguous */
                            cr_assert_geq(one[(size_t)i * cells + (size_t)r * (size_t)p.experts + (size_t)e], hot,
                                          "trial %d: hot expert %d below the hot tokens", trial, e);
                        }
                }
        }
        for (int t = 2; t <= 5; t += 3) {
            p.threads = t;
            int64_t *many = v2_records(&p, NULL);
            cr_assert(memcmp(one, many, sizeof *one * cells * (size_t)records) == 0, "trial %d differs at -j %d",
                      trial, t);
            free(many);
        }
        free(one);
    }
}

/* The two versions describe nearly the same routing: on the Table-1 shape
 * (EP32, 128 experts, top-8) the mean initial imbalance agrees within 1.5
 * points with and without a hotspot, and the calibration meets a target. */
Test(gen_counts, close_to_version_1_and_calibrates)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.ep = 32;
    p.tokens = 1024;
    p.microbatches = 8;
    const double fractions[] = {0.0, 0.02, 0.05};
    for (int i = 0; i < 3; i++) {
        p.hot_fraction = fractions[i];
        double rho1, rho2;
        p.version = TSIM_GEN_VERSION;
        free(v2_records(&p, &rho1));
        p.version = TSIM_GEN_VERSION_COUNTS;
        free(v2_records(&p, &rho2));
        cr_assert_lt(fabs(rho1 - rho2), 0.015, "f %g: version 1 %.4f, version 2 %.4f", fractions[i], rho1, rho2);
    }
    tsim_gen_calibration cal;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_calibrate(&p, 0.3, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_lt(fabs(cal.achieved - 0.3), TSIM_GEN_TOLERANCE);
}

Test(gen_counts, meta_records_version_2_and_3_is_refused)
{
    tsim_gen_params p = v2_params();
    struct cJSON *meta = tsim_gen_meta(&p, NULL, 0.1);
    cr_assert_not_null(meta);
    char *text = cJSON_PrintUnformatted(meta);
    cr_assert_not_null(strstr(text, "\"version\":2"), "%s", text);
    free(text);
    cJSON_Delete(meta);
    p.version = TSIM_GEN_VERSION_BLOCKS;
    meta = tsim_gen_meta(&p, NULL, 0.1);
    cr_assert_not_null(meta);
    text = cJSON_PrintUnformatted(meta);
    cr_assert_not_null(strstr(text, "\"version\":3"), "%s", text);
    free(text);
    cJSON_Delete(meta);
    p.version = 4;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT);
    cr_assert_not_null(strstr(err.msg, "--generator 4"), "%s", err.msg);
}

/* P(X <= k) of Poisson(mu), summed term by term from 0 in long double. */
static long double poisson_cdf(double mu, int64_t k)
{
    long double sum = 0.0L;
    for (int64_t j = 0; j <= k; j++)
        sum += expl((long double)j * logl(mu) - mu - lgammal((long double)j + 1));
    return sum;
}

/* The tables invert the Poisson CDF: for uniforms across [0, 1), the ends
 * and the far tail past each table's cut included, the value k drawn has
 * P(X <= k - 1) <= u < P(X <= k), up to rounding. Means on both sides of
 * the from-zero and from-the-mode switch (50), and 0. */
Test(gen_counts, poisson_tables_invert_the_cdf)
{
    static const double mu[] = {0.0, 1e-3, 0.7, 3.0, 15.3, 49.99, 50.0, 256.0, 4000.0};
    const int n = (int)(sizeof mu / sizeof *mu);
    double total = 0.0;
    for (int e = 0; e < n; e++)
        total += mu[e];
    tsim_counts_poisson_tables t;
    cr_assert_eq(tsim_counts_poisson_init(&t, n, tsim_counts_poisson_bound(total, n)), 0);
    cr_assert_eq(tsim_counts_poisson_build(&t, mu), 0);
    enum { GRID = 600 };
    double *u = malloc(sizeof *u * GRID * (size_t)n);
    int64_t *k = malloc(sizeof *k * GRID * (size_t)n);
    for (int i = 0; i < GRID; i++)
        for (int e = 0; e < n; e++) {
            double v = (double)i / GRID;
            if (i >= GRID - 10) /* the far tail, beyond the tables' ends */
                v = 1.0 - pow(10.0, -(double)(i - GRID + 18));
            u[(size_t)i * (size_t)n + (size_t)e] = i == GRID - 1 ? 1.0 - 0x1.0p-53 : v;
        }
    int64_t *sum = malloc(sizeof *sum * GRID), *top = malloc(sizeof *top * GRID);
    tsim_counts_poisson_grid(&t, GRID, u, k, sum, top);
    for (int i = 0; i < GRID; i++) {
        int64_t total = 0, most = 0;
        for (int e = 0; e < n; e++) {
            total += k[(size_t)i * (size_t)n + (size_t)e];
            most = k[(size_t)i * (size_t)n + (size_t)e] > most ? k[(size_t)i * (size_t)n + (size_t)e] : most;
        }
        cr_assert_eq(sum[i], total);
        cr_assert_eq(top[i], most);
    }
    free(sum);
    free(top);
    for (int i = 0; i < GRID; i++)
        for (int e = 0; e < n; e++) {
            const size_t at = (size_t)i * (size_t)n + (size_t)e;
            if (mu[e] == 0.0) {
                cr_assert_eq(k[at], 0);
                continue;
            }
            const long double below = k[at] > 0 ? poisson_cdf(mu[e], k[at] - 1) : 0.0L;
            const long double upto = poisson_cdf(mu[e], k[at]);
            cr_assert(below <= (long double)u[at] + 1e-12L && (long double)u[at] < upto + 1e-12L,
                      "mu %g, u %.17g: drew %lld with P(X < k) %.17Lg, P(X <= k) %.17Lg", mu[e], u[at],
                      (long long)k[at], below, upto);
        }
    free(u);
    free(k);
    tsim_counts_poisson_free(&t);
}

/* Rows from the sampler's own streams: over 100,000 rows the mean and
 * variance of each mean's draws are within 5 standard errors. */
Test(gen_counts, poisson_rows_have_their_moments)
{
    static const double mu[] = {0.4, 15.3, 256.0};
    tsim_counts_poisson_tables t;
    cr_assert_eq(tsim_counts_poisson_init(&t, 3, tsim_counts_poisson_bound(272.0, 3)), 0);
    cr_assert_eq(tsim_counts_poisson_build(&t, mu), 0);
    tsim_counts_sampler *s = sampler_new(3, 99);
    const int rows = 100000;
    double sum[3] = {0}, sq[3] = {0};
    for (int r = 0; r < rows; r++) {
        int64_t got[3], top;
        const int64_t total = tsim_counts_poisson_row(s, &t, got, &top);
        cr_assert_eq(total, got[0] + got[1] + got[2]);
        cr_assert_eq(top, got[0] > got[1] ? (got[0] > got[2] ? got[0] : got[2]) : (got[1] > got[2] ? got[1] : got[2]));
        for (int e = 0; e < 3; e++) {
            sum[e] += (double)got[e];
            sq[e] += (double)got[e] * (double)got[e];
        }
    }
    for (int e = 0; e < 3; e++) {
        const double mean = sum[e] / rows, var = sq[e] / rows - mean * mean;
        cr_assert_lt(fabs(mean - mu[e]), 5.0 * sqrt(mu[e] / rows), "mu %g: mean %g", mu[e], mean);
        /* the variance of a sample variance of a Poisson is about (mu + 2 mu^2) / rows */
        cr_assert_lt(fabs(var - mu[e]), 5.0 * sqrt((mu[e] + 2.0 * mu[e] * mu[e]) / rows), "mu %g: variance %g",
                     mu[e], var);
    }
    tsim_counts_sampler_free(s);
    tsim_counts_poisson_free(&t);
}

/* Version 3's block picks follow version 2's law (picks with replacement, a
 * pick on a full expert drawn again): with a binding cap the mean count of
 * every expert agrees within 5 standard errors over 40,000 draws each, every
 * draw places all picks within the rooms, and the headroom hint (`safe`)
 * changes nothing when it is right. */
Test(gen_counts, block_picks_follow_the_capped_law)
{
    /* slot i keeps expert i with odds thr / 2^32, else gives expert 3 - i */
    static const uint32_t thr[] = {0xC0000000u, 0x40000000u, 0xFFFFFFFFu, 0x20000000u};
    static const int32_t own[] = {0, 1, 2, 3}, alt[] = {3, 2, 1, 0};
    const tsim_counts_alias table = {4, thr, own, alt};
    const int64_t room[] = {6, 100, 100, 9};
    const int64_t n = 40;
    const int trials = 40000;
    double mean[2][4] = {{0}}, sq[2][4] = {{0}};
    tsim_counts_sampler *seq = sampler_new(4, 5), *blk = sampler_new(4, 6);
    /* the table's odds per expert, for the binomial rounds that place what
     * the picks gave up on (as gen.c does) */
    double w[4] = {0};
    for (int i = 0; i < 4; i++) {
        w[own[i]] += (double)thr[i] / 4294967296.0;
        w[alt[i]] += 1.0 - (double)thr[i] / 4294967296.0;
    }
    for (int t = 0; t < trials; t++) {
        int64_t a[4] = {0}, b[4] = {0};
        tsim_counts_fill(seq, 4, w, room, tsim_counts_alias_picks(seq, &table, room, n, a), a);
        tsim_counts_fill(blk, 4, w, room, tsim_counts_alias_block_picks(blk, &table, room, 4, n, t % 2 ? 0 : 6, b), b);
        int64_t total = 0;
        for (int e = 0; e < 4; e++) {
            cr_assert_leq(b[e], room[e]);
            total += b[e];
            mean[0][e] += (double)a[e];
            mean[1][e] += (double)b[e];
            sq[0][e] += (double)a[e] * (double)a[e];
            sq[1][e] += (double)b[e] * (double)b[e];
        }
        cr_assert_eq(total, n);
    }
    for (int e = 0; e < 4; e++) {
        double var = 0.0;
        for (int v = 0; v < 2; v++) {
            mean[v][e] /= trials;
            var += (sq[v][e] / trials - mean[v][e] * mean[v][e]) / trials;
        }
        cr_assert_lt(fabs(mean[0][e] - mean[1][e]), 5.0 * sqrt(var) + 1e-9, "expert %d: %g against %g", e,
                     mean[0][e], mean[1][e]);
    }
    cr_assert_gt(mean[1][0], 5.99, "expert 0 (odds 0.41 of 40 picks, room 6) is nearly always full: %g", mean[1][0]);
    tsim_counts_sampler_free(seq);
    tsim_counts_sampler_free(blk);
}

/* Version 3 draws version 2's law with other streams: both see the same
 * popularity in every record, so each expert's total count over a trace
 * agrees within 5 standard errors (a count's variance is at most its mean),
 * on the Table-1 shape at 256 tokens (Poisson tables from 0), at 4096 (from
 * the mode) and with an uneven popularity and a hotspot. */
Test(gen_counts, version_3_counts_like_version_2)
{
    static const struct {
        int tokens;
        double concentration, hot_fraction;
    } cases[] = {{256, 200.0, 0.0}, {4096, 200.0, 0.05}, {256, 0.3, 0.05}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tsim_gen_params p;
        tsim_gen_params_default(&p);
        p.ep = 32;
        p.tokens = cases[c].tokens;
        p.concentration = cases[c].concentration;
        p.hot_fraction = cases[c].hot_fraction;
        p.microbatches = 4;
        p.layers = 2;
        const size_t cells = (size_t)p.ep * (size_t)p.experts;
        const int64_t records = tsim_gen_record_count(&p);
        double rho[2];
        p.version = TSIM_GEN_VERSION_COUNTS;
        int64_t *two = v2_records(&p, &rho[0]);
        p.version = TSIM_GEN_VERSION_BLOCKS;
        int64_t *three = v2_records(&p, &rho[1]);
        for (int e = 0; e < p.experts; e++) {
            double a = 0.0, b = 0.0;
            for (int64_t i = 0; i < records; i++)
                for (int r = 0; r < p.ep; r++) {
                    const size_t at = (size_t)i * cells + (size_t)r * (size_t)p.experts + (size_t)e;
                    a += (double)two[at];
                    b += (double)three[at];
                }
            cr_assert_lt(fabs(a - b), 5.0 * sqrt(a + b) + 1e-9, "case %zu expert %d: version 2 %g, version 3 %g", c,
                         e, a, b);
        }
        cr_assert_lt(fabs(rho[0] - rho[1]), 0.015, "case %zu: imbalance %.4f against %.4f", c, rho[0], rho[1]);
        free(two);
        free(three);
    }
}

/* Version 3 calibrates on every 8th microbatch, the others skipped but for
 * their popularity: the sample's mean at the f found is the mean of the
 * same records in the whole trace, to the bit; versions 1 and 2 keep
 * calibrating on the whole trace. */
Test(gen_counts, version_3_calibrates_on_a_sample_of_the_same_records)
{
    tsim_gen_params p = v2_params();
    p.version = TSIM_GEN_VERSION_BLOCKS;
    p.microbatches = 8 * TSIM_GEN_SAMPLE_MIN + 3;
    p.layers = 2;
    p.drift = 0.5;
    tsim_gen_calibration cal;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_calibrate_sampled(&p, 0.5, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    const int64_t sampled = (p.microbatches + 7) / 8;
    cr_assert_eq(cal.trial_records, sampled * p.layers);
    p.hot_fraction = cal.hot_fraction;
    cr_assert_eq(tsim_gen_hot_tokens(&p), cal.hot_tokens);
    tsim_gen *g = NULL;
    cr_assert_eq(tsim_gen_open(&g, &p, &err), TSIM_OK, "%s", err.msg);
    const tsim_record *rec;
    double rho, sum = 0.0;
    while (tsim_gen_next(g, &rec, &rho) == 1)
        if (rec->microbatch % 8 == 0)
            sum += rho;
    tsim_gen_close(g);
    cr_assert_eq(sum / (double)cal.trial_records, cal.achieved, "whole trace %.17g, sample %.17g",
                 sum / (double)cal.trial_records, cal.achieved);
    p.version = TSIM_GEN_VERSION_COUNTS;
    cr_assert_eq(tsim_gen_calibrate_sampled(&p, 0.5, &cal, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(cal.trial_records, tsim_gen_record_count(&p));
}
