/* Generator version 2 (gen --generator 2, gen_counts.c): its binomial and
 * capped multinomial samplers against their distributions, and the records'
 * invariants (rows, caps, the hotspot, the same bytes at any -j). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>

#include "evaluate.h"
#include "gen.h"
#include "gen_counts.h"
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
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.version = TSIM_GEN_VERSION_COUNTS;
    p.experts = 32;
    p.ep = 4;
    p.ranks_per_node = 2;
    p.topk = 4;
    p.tokens = 256;
    p.microbatches = 3;
    p.layers = 2;
    p.hot_fraction = 0.1;
    p.seed = 7;
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

/* Random regimes (placements, hot experts, skews, k up to E): every row sums
 * to T k, no expert gets more than T, an unskewed hot set of at most k
 * experts gets every hot token, and the records are the same at 1, 2 and 5
 * threads. */
Test(gen_counts, random_regimes_keep_the_invariants)
{
    uint64_t state = 4242;
    for (int trial = 0; trial < 60; trial++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t x = (uint32_t)(state >> 33);
        tsim_gen_params p = v2_params();
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
    p.version = 3;
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_params_check(&p, &err), TSIM_E_INPUT);
    cr_assert_not_null(strstr(err.msg, "--generator 3"), "%s", err.msg);
}
