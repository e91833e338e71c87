/* Scale-out (issue 15): Chan et al.'s merge of bounded series, the shard
 * split of records and grid points, the partial results of --shard and their
 * merge, and replay -j: every threaded or sharded run must give the
 * one-thread session's values bit for bit. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit.h"
#include "grid.h"
#include "merge.h"
#include "random_records.h"
#include "registry.h"
#include "report.h"
#include "session.h"
#include "stats.h"

/* ---- Chan merging of bounded series ------------------------------------------------ */

/* A series that summarises from its first value on, holding values[0..n-1]. */
static void bounded_of(tsim_series *s, const double *values, size_t n)
{
    memset(s, 0, sizeof *s);
    tsim_series_bound(s, 1);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(tsim_series_push(s, values[i]), 0);
}

/* The series of values split at cuts[0..k-2], each part sketched alone (from
 * an exact series, as a shard writes it) and merged in order. */
static void merged_of(tsim_series *out, const double *values, size_t n, const size_t *cuts, int k)
{
    memset(out, 0, sizeof *out);
    size_t from = 0;
    for (int part = 0; part < k; part++) {
        size_t to = part == k - 1 ? n : cuts[part];
        tsim_series exact = {0};
        for (size_t i = from; i < to; i++)
            cr_assert_eq(tsim_series_push(&exact, values[i]), 0);
        tsim_sketch sk;
        cr_assert_eq(tsim_series_sketch(&exact, &sk), 0);
        if (part == 0) {
            cr_assert_eq(tsim_series_from_sketch(out, &sk), 0);
        } else {
            tsim_series one = {0};
            cr_assert_eq(tsim_series_from_sketch(&one, &sk), 0);
            cr_assert_eq(tsim_series_merge(out, &one), 0);
            tsim_series_free(&one);
        }
        tsim_sketch_free(&sk);
        tsim_series_free(&exact);
        from = to;
    }
}

Test(chan, hand_checked_two_halves)
{
    /* {1, 2} and {3, 4}: means 1.5 and 3.5, M2 0.5 each; delta 2, so the
     * mean is 1.5 + 2 * 2/4 = 2.5 and M2 = 0.5 + 0.5 + 4 * (2 * 2 / 4) = 5:
     * the population std is sqrt(5 / 4). */
    const double v[4] = {1, 2, 3, 4};
    const size_t cut[1] = {2};
    tsim_series m;
    merged_of(&m, v, 4, cut, 2);
    tsim_summary s = tsim_series_summary(&m);
    cr_assert_eq(s.n, 4);
    cr_assert_eq(s.mean, 2.5);
    cr_assert_float_eq(s.std, sqrt(5.0 / 4.0), 1e-15);
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.max, 4);
    cr_assert_eq(s.p50, 2); /* small integers have a bin each: exact */
    cr_assert_eq(s.p95, 4);
    tsim_series_free(&m);
}

Test(chan, empty_parts_change_nothing)
{
    const double v[3] = {5, -1, 7};
    const size_t cuts[3] = {0, 3, 3}; /* parts: {}, {5,-1,7}, {}, {} */
    tsim_series m, one;
    merged_of(&m, v, 3, cuts, 4);
    bounded_of(&one, v, 3);
    tsim_summary a = tsim_series_summary(&m), b = tsim_series_summary(&one);
    cr_assert_eq(a.n, 3);
    cr_assert_eq(a.min, -1);
    cr_assert_eq(a.max, 7);
    cr_assert_eq(a.mean, b.mean);
    cr_assert_eq(a.p50, b.p50);
    tsim_series_free(&m);
    tsim_series_free(&one);
}

Test(chan, random_splits_match_one_pass)
{
    uint64_t seed = 15;
    double worst = 0;
    for (int round = 0; round < 300; round++) {
        size_t n = (size_t)tsim_rand_range(&seed, 1, 3000);
        double *v = malloc(sizeof *v * n);
        int kind = (int)tsim_rand_range(&seed, 0, 4);
        for (size_t i = 0; i < n; i++) {
            double u = tsim_rand_unit(&seed);
            switch (kind) {
            case 0: v[i] = u; break;                                           /* [0, 1) */
            case 1: v[i] = exp(40 * u - 20); break;                            /* 20 decades */
            case 2: v[i] = (double)tsim_rand_range(&seed, -50, 50); break;      /* small integers */
            case 3: v[i] = 1e6 + 1e-3 * u; break;                              /* large mean, tiny spread */
            default: v[i] = u < 0.3 ? 0.0 : -exp(10 * u); break;               /* zeros and negatives */
            }
        }
        int k = (int)tsim_rand_range(&seed, 1, 9);
        size_t cuts[9];
        for (int c = 0; c < k - 1; c++)
            cuts[c] = (size_t)tsim_rand_range(&seed, 0, (int64_t)n);
        for (int a = 0; a < k - 1; a++) /* ascending */
            for (int b = a + 1; b < k - 1; b++)
                if (cuts[b] < cuts[a]) {
                    size_t t = cuts[a];
                    cuts[a] = cuts[b];
                    cuts[b] = t;
                }
        tsim_series m, one;
        merged_of(&m, v, n, cuts, k);
        bounded_of(&one, v, n);
        tsim_summary a = tsim_series_summary(&m), b = tsim_series_summary(&one);
        /* exact: counts, extremes and the bins behind the quantiles */
        cr_assert_eq(a.n, b.n, "round %d", round);
        cr_assert_eq(a.min, b.min, "round %d", round);
        cr_assert_eq(a.max, b.max, "round %d", round);
        cr_assert_eq(a.p50, b.p50, "round %d: p50 %.17g vs %.17g", round, a.p50, b.p50);
        cr_assert_eq(a.p95, b.p95, "round %d: p95 %.17g vs %.17g", round, a.p95, b.p95);
        /* rounding only: the documented last-digits difference */
        double scale = fabs(b.mean) > 1e-300 ? fabs(b.mean) : 1;
        double em = fabs(a.mean - b.mean) / scale;
        double es = fabs(a.std - b.std) / (b.std > 1e-300 ? b.std : 1);
        cr_assert(em < 1e-12, "round %d (kind %d, %d parts): mean %.17g vs %.17g", round, kind, k, a.mean, b.mean);
        /* the spread of case 3 is 1e-9 of the mean: M2 keeps ~1e-7 relative */
        cr_assert(es < (kind == 3 ? 1e-6 : 1e-10), "round %d (kind %d): std %.17g vs %.17g", round, kind, a.std,
                  b.std);
        worst = fmax(worst, em);
        tsim_series_free(&m);
        tsim_series_free(&one);
        free(v);
    }
    cr_assert(worst > 0 || worst == 0); /* reached */
}

Test(chan, sketch_round_trip_is_exact)
{
    uint64_t seed = 3;
    double v[500];
    for (int i = 0; i < 500; i++)
        v[i] = tsim_rand_unit(&seed) * 100 - 20;
    tsim_series one, back = {0};
    bounded_of(&one, v, 500);
    tsim_sketch sk;
    cr_assert_eq(tsim_series_sketch(&one, &sk), 0);
    cr_assert_eq(tsim_series_from_sketch(&back, &sk), 0);
    tsim_summary a = tsim_series_summary(&one), b = tsim_series_summary(&back);
    cr_assert(memcmp(&a, &b, sizeof a) == 0);
    tsim_sketch_free(&sk);
    tsim_series_free(&one);
    tsim_series_free(&back);
}

Test(chan, damaged_sketches_are_refused)
{
    const double v[3] = {1, 2, 3};
    tsim_series one;
    bounded_of(&one, v, 3);
    tsim_sketch sk;
    cr_assert_eq(tsim_series_sketch(&one, &sk), 0);
    cr_assert_eq(sk.n_bins, 3);
    tsim_series s = {0};
    sk.n = 4; /* counts add up to 3 */
    cr_assert_eq(tsim_series_from_sketch(&s, &sk), -1);
    sk.n = 3;
    int32_t b0 = sk.bin[0];
    sk.bin[0] = sk.bin[1]; /* not ascending */
    cr_assert_eq(tsim_series_from_sketch(&s, &sk), -1);
    sk.bin[0] = tsim_sketch_bins(); /* out of range */
    cr_assert_eq(tsim_series_from_sketch(&s, &sk), -1);
    sk.bin[0] = b0;
    cr_assert_eq(tsim_series_from_sketch(&s, &sk), 0);
    tsim_series exact = {0};
    cr_assert_eq(tsim_series_merge(&exact, &one), -1, "merging into an exact series");
    tsim_sketch_free(&sk);
    tsim_series_free(&s);
    tsim_series_free(&one);
}

/* ---- shard partitioning ---------------------------------------------------------- */

Test(shard, hand_checked_ranges)
{
    /* 10 records over 4 shards: 3, 3, 2, 2 */
    const int64_t want[4][2] = {{0, 3}, {3, 6}, {6, 8}, {8, 10}};
    for (int i = 0; i < 4; i++) {
        int64_t lo, hi;
        tsim_shard_range(10, (tsim_shard){i, 4}, &lo, &hi);
        cr_assert_eq(lo, want[i][0], "shard %d", i);
        cr_assert_eq(hi, want[i][1], "shard %d", i);
    }
    int64_t lo, hi;
    tsim_shard_range(2, (tsim_shard){3, 4}, &lo, &hi); /* more shards than records: empty */
    cr_assert_eq(lo, hi);
}

Test(shard, ranges_cover_every_record_once)
{
    uint64_t seed = 7;
    for (int round = 0; round < 2000; round++) {
        int64_t total = tsim_rand_range(&seed, 0, round < 1000 ? 300 : 5000000);
        int n = (int)tsim_rand_range(&seed, 1, 300);
        int64_t next = 0, smallest = INT64_MAX, largest = 0;
        for (int i = 0; i < n; i++) {
            int64_t lo, hi;
            tsim_shard_range(total, (tsim_shard){i, n}, &lo, &hi);
            cr_assert_eq(lo, next, "total %lld, %d shards: shard %d starts at %lld", (long long)total, n, i,
                         (long long)lo);
            cr_assert_geq(hi, lo);
            smallest = hi - lo < smallest ? hi - lo : smallest;
            largest = hi - lo > largest ? hi - lo : largest;
            /* the owner of every record of the range is the shard (all of them when small) */
            for (int64_t q = lo; q < hi && (total <= 300 || q < lo + 3); q++)
                cr_assert_eq(tsim_shard_owner(TSIM_MEMORY_NONE, 5, 0, q, total, n), i);
            if (hi > lo)
                cr_assert_eq(tsim_shard_owner(TSIM_MEMORY_NONE, 0, 0, hi - 1, total, n), i);
            next = hi;
        }
        cr_assert_eq(next, total);
        cr_assert_leq(largest - smallest, 1);
    }
}

Test(shard, layers_and_external_planners_stay_whole)
{
    /* every (planner, layer) in exactly one shard, whatever the record */
    for (int n = 1; n <= 9; n++)
        for (int p = 0; p < 4; p++)
            for (int64_t layer = 0; layer < 20; layer++) {
                int owner = tsim_shard_owner(TSIM_MEMORY_LAYER, p, layer, 0, 1000, n);
                cr_assert(owner >= 0 && owner < n);
                for (int64_t seq = 1; seq < 1000; seq += 97)
                    cr_assert_eq(tsim_shard_owner(TSIM_MEMORY_LAYER, p, layer, seq, 1000, n), owner);
                cr_assert_eq(tsim_shard_owner(TSIM_MEMORY_ALL, p, layer, 17, 1000, n), p % n);
            }
    /* with as many layers as shards, each shard gets one */
    bool seen[6] = {false};
    for (int64_t layer = 0; layer < 6; layer++)
        seen[tsim_shard_owner(TSIM_MEMORY_LAYER, 0, layer, 0, 100, 6)] = true;
    for (int i = 0; i < 6; i++)
        cr_assert(seen[i], "shard %d got no layer", i);
}

Test(shard, parse)
{
    tsim_shard s;
    tsim_error err = {0};
    cr_assert_eq(tsim_shard_parse("0/1", &s, &err), TSIM_OK);
    cr_assert_eq(s.index, 0);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(tsim_shard_parse("63/64", &s, &err), TSIM_OK);
    cr_assert_eq(s.index, 63);
    cr_assert_eq(s.count, 64);
    const char *bad[] = {"4/4", "-1/4", "1/0", "a/b", "1/", "/2", "1/2x", " 1/2", "1/ 2", "", "1", "1/-2", "0/100001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(tsim_shard_parse(bad[i], &s, &err), TSIM_E_INPUT, "'%s' accepted", bad[i]);
    cr_assert(strstr(err.msg, "--shard") != NULL);
}

Test(shard, identity_command_line)
{
    char *argv[] = {"replay", "t.json", "--shard", "1/4", "-o", "x", "--format=json", "-j", "2", "--jobs=3",
                    "-oy", "--planners", "taot", "--output", "z", "--shard=2/4", "--", "-o"};
    int argc = (int)(sizeof argv / sizeof argv[0]), n = 0;
    char **id = tsim_argv_identity(argc, argv, &n);
    const char *want[] = {"replay", "t.json", "--planners", "taot", "--", "-o"};
    cr_assert_eq(n, 6);
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(id[i], want[i]);
    cr_assert_null(id[n]);
    tsim_argv_free(id);
}

static int grid_calls[16];
static int count_call(void *ctx, int job, tsim_error *err)
{
    (void)ctx;
    (void)err;
    __atomic_add_fetch(&grid_calls[job], 1, __ATOMIC_RELAXED);
    return TSIM_OK;
}

Test(shard, grid_points_of_one_shard)
{
    for (int n = 1; n <= 5; n++)
        for (int i = 0; i < n; i++) {
            memset(grid_calls, 0, sizeof grid_calls);
            tsim_error err = {0};
            cr_assert_eq(tsim_grid_run_shard(11, i, n, 3, count_call, NULL, NULL, &err), TSIM_OK);
            for (int job = 0; job < 11; job++)
                cr_assert_eq(grid_calls[job], job % n == i ? 1 : 0, "shard %d/%d, point %d", i, n, job);
        }
}

/* ---- replay -j and shards against one thread ------------------------------------- */

#define PLANNERS "none,taot,echo,llep,lplb,fastermoe,eplb,lplb-re=lplb:--lplb-rehome=eplb,eplb-1=eplb:--eplb-interval=1"
#define N_REC 240

typedef struct {
    tsim_record recs[N_REC];
    tsim_planner planners[16];
    int n;
} replay_case;

static void case_make(replay_case *c, uint64_t seed)
{
    tsim_random_shape shape = {.ranks = 16, .experts = 64, .slots = 2, .ranks_per_node = 8};
    for (int i = 0; i < N_REC; i++) {
        tsim_random_record(&seed, &shape, &c->recs[i]);
        c->recs[i].index = i;
        c->recs[i].layer = i % 3 == 2 ? 7 : i % 3; /* layers 0, 1, 7 interleaved */
        c->recs[i].microbatch = i / 3;
    }
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_list_parse(PLANNERS, &base, c->planners, 16, &c->n, &err), TSIM_OK, "%s", err.msg);
}

static void case_free(replay_case *c)
{
    for (int i = 0; i < N_REC; i++)
        tsim_record_free(&c->recs[i]);
}

static void session_of(tsim_session *s, const replay_case *c)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_session_init(s, 16, 64, 8, 2, NULL, c->planners, c->n, 3.0, &err), TSIM_OK, "%s", err.msg);
    s->step_model_on = true;
    tsim_step_model_default(&s->step_model);
}

static void assert_same_results(const tsim_session *a, const tsim_session *b, const char *what)
{
    cr_assert_eq(a->n_planners, b->n_planners);
    cr_assert_eq(a->rehoming, b->rehoming, "%s: rehoming", what);
    for (int p = 0; p < a->n_planners; p++) {
        const tsim_planner_result *x = &a->results[p], *y = &b->results[p];
        cr_assert_eq(x->records, y->records, "%s: planner %s records", what, a->planners[p].label);
        cr_assert(memcmp(x->note_records, y->note_records, sizeof x->note_records) == 0, "%s: notes", what);
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            if (m == TSIM_M_PLAN_NS)
                continue; /* a wall time */
            cr_assert_eq(x->metrics[m].n, y->metrics[m].n);
            for (size_t i = 0; i < x->metrics[m].n; i++)
                cr_assert(memcmp(&x->metrics[m].values[i], &y->metrics[m].values[i], sizeof(double)) == 0,
                          "%s: planner %s, %s of record %zu: %.17g vs %.17g", what, a->planners[p].label,
                          tsim_metric_names[m], i, x->metrics[m].values[i], y->metrics[m].values[i]);
        }
    }
}

Test(jobs, any_thread_count_gives_one_threads_values, .timeout = 120)
{
    replay_case c;
    case_make(&c, 41);
    tsim_session one;
    session_of(&one, &c);
    tsim_error err = {0};
    for (int i = 0; i < N_REC; i++)
        cr_assert_eq(tsim_session_record(&one, &c.recs[i], &err), TSIM_OK, "%s", err.msg);
    cr_assert(one.rehoming, "the case should exercise re-homing");
    for (int workers = 1; workers <= 4; workers++) {
        tsim_session s;
        session_of(&s, &c);
        tsim_session_jobs *j;
        cr_assert_eq(tsim_session_jobs_start(&j, &s, workers, &err), TSIM_OK, "%s", err.msg);
        for (int i = 0; i < N_REC; i++)
            cr_assert_eq(tsim_session_jobs_record(j, &c.recs[i], NULL, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq(tsim_session_jobs_finish(j, &err), TSIM_OK, "%s", err.msg);
        tsim_session_jobs_free(j);
        char what[32];
        snprintf(what, sizeof what, "-j %d", workers);
        assert_same_results(&one, &s, what);
        tsim_session_free(&s);
    }
    tsim_session_free(&one);
    case_free(&c);
}

/* Writes a partial result to a fresh file; returns its path (static buffer per slot). */
static const char *write_partial(cJSON *j, int slot)
{
    static char paths[8][64];
    snprintf(paths[slot], sizeof paths[slot], "/tmp/tsim-test-merge-%d-%d.json", (int)getpid(), slot);
    FILE *f = fopen(paths[slot], "w");
    cr_assert_not_null(f);
    cr_assert_eq(tsim_json_print(f, j), 0);
    fclose(f);
    return paths[slot];
}

/* Shard `shard` of the case through the threaded path, as replay --shard does. */
static cJSON *run_shard(const replay_case *c, tsim_shard shard, bool values, char *const *argv, int argc)
{
    tsim_session s;
    session_of(&s, c);
    s.keep_indices = values;
    if (!values)
        tsim_session_bound_memory(&s, 8);
    tsim_error err = {0};
    tsim_session_jobs *j;
    cr_assert_eq(tsim_session_jobs_start(&j, &s, 2, &err), TSIM_OK, "%s", err.msg);
    const int64_t dense[8] = {0, 1, 0, 0, 0, 0, 0, 2}; /* layers 0, 1, 7 first seen in that order */
    for (int i = 0; i < N_REC; i++) {
        bool want[16];
        for (int p = 0; p < s.n_planners; p++)
            want[p] = tsim_shard_owner(tsim_planner_memory_of(s.planners[p].desc), p, dense[c->recs[i].layer], i,
                                       N_REC, shard.count) == shard.index;
        cr_assert_eq(tsim_session_jobs_record(j, &c->recs[i], want, &err), TSIM_OK, "%s", err.msg);
    }
    cr_assert_eq(tsim_session_jobs_finish(j, &err), TSIM_OK, "%s", err.msg);
    tsim_session_jobs_free(j);
    tsim_trace_header h = {.experts = 64, .ep = 16, .ranks_per_node = 8};
    tsim_trace_digest digest;
    tsim_trace_digest_init(&digest);
    for (int i = 0; i < N_REC; i++)
        tsim_trace_digest_add(&digest, &c->recs[i]);
    tsim_replay_partial_info info = {.shard = shard, .argv = argv, .argc = argc, .trace_path = "case.jsonl",
                                     .header = &h, .records = N_REC, .digest = digest, .bytes = 4096,
                                     .values = values};
    cJSON *json = tsim_replay_partial_json(&s, &info, &err);
    cr_assert_not_null(json, "%s", err.msg);
    tsim_session_free(&s);
    return json;
}

/* Loads the files as partials, checks and merges them into a results session. */
static int merge_files(const replay_case *c, const char *const *paths, int n, tsim_session *out, tsim_error *err)
{
    tsim_partial parts[8];
    int loaded = 0, rc = TSIM_OK;
    for (; loaded < n && rc == TSIM_OK; loaded++)
        if ((rc = tsim_partial_load(&parts[loaded], paths[loaded], err)))
            break;
    if (rc == TSIM_OK)
        rc = tsim_partials_check(parts, n, err);
    if (rc == TSIM_OK) {
        tsim_error e2 = {0};
        cr_assert_eq(tsim_session_init_results(out, 16, 64, 8, 2, NULL, c->planners, c->n, 3.0, &e2), TSIM_OK);
        out->step_model_on = true;
        tsim_session_bound_memory(out, TSIM_SESSION_EXACT_RECORDS); /* as merge does */
        rc = tsim_replay_merge(out, parts, n, err);
        if (rc)
            tsim_session_free(out);
    }
    for (int i = 0; i < loaded; i++)
        tsim_partial_free(&parts[i]);
    return rc;
}

Test(partials, merged_values_are_the_unsharded_values, .timeout = 120)
{
    replay_case c;
    case_make(&c, 5);
    tsim_session one;
    session_of(&one, &c);
    tsim_error err = {0};
    for (int i = 0; i < N_REC; i++)
        cr_assert_eq(tsim_session_record(&one, &c.recs[i], &err), TSIM_OK, "%s", err.msg);
    char *argv[] = {"replay", "case.jsonl"};
    for (int n = 1; n <= 5; n++) {
        const char *paths[8];
        for (int i = 0; i < n; i++) {
            cJSON *j = run_shard(&c, (tsim_shard){i, n}, true, argv, 2);
            paths[n - 1 - i] = write_partial(j, i); /* any order */
            cJSON_Delete(j);
        }
        tsim_session merged;
        cr_assert_eq(merge_files(&c, paths, n, &merged, &err), TSIM_OK, "%d shards: %s", n, err.msg);
        char what[32];
        snprintf(what, sizeof what, "%d shards", n);
        assert_same_results(&one, &merged, what);
        tsim_session_free(&merged);
        for (int i = 0; i < n; i++)
            unlink(paths[i]);
    }
    tsim_session_free(&one);
    case_free(&c);
}

Test(partials, merged_sketches_match_one_bounded_run, .timeout = 120)
{
    replay_case c;
    case_make(&c, 9);
    tsim_session one;
    session_of(&one, &c);
    tsim_session_bound_memory(&one, 8);
    tsim_error err = {0};
    for (int i = 0; i < N_REC; i++)
        cr_assert_eq(tsim_session_record(&one, &c.recs[i], &err), TSIM_OK, "%s", err.msg);
    char *argv[] = {"replay", "case.jsonl"};
    const char *paths[3];
    for (int i = 0; i < 3; i++) {
        cJSON *j = run_shard(&c, (tsim_shard){i, 3}, false, argv, 2);
        paths[i] = write_partial(j, i);
        cJSON_Delete(j);
    }
    tsim_session merged;
    cr_assert_eq(merge_files(&c, paths, 3, &merged, &err), TSIM_OK, "%s", err.msg);
    for (int p = 0; p < one.n_planners; p++)
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            if (m == TSIM_M_PLAN_NS)
                continue;
            tsim_summary a = tsim_session_summary(&one, p, (tsim_metric_id)m);
            tsim_summary b = tsim_session_summary(&merged, p, (tsim_metric_id)m);
            cr_assert_eq(a.n, b.n);
            cr_assert_eq(a.min, b.min);
            cr_assert_eq(a.max, b.max);
            cr_assert_eq(a.p50, b.p50, "%s %s", one.planners[p].label, tsim_metric_names[m]);
            cr_assert_eq(a.p95, b.p95);
            cr_assert_float_eq(a.mean, b.mean, 1e-12 * (fabs(a.mean) + 1));
            cr_assert_float_eq(a.std, b.std, 1e-9 * (a.std + 1));
        }
    tsim_session_free(&merged);
    for (int i = 0; i < 3; i++)
        unlink(paths[i]);
    tsim_session_free(&one);
    case_free(&c);
}

Test(partials, missing_overlapping_and_foreign_shards_are_refused, .timeout = 120)
{
    replay_case c;
    case_make(&c, 13);
    char *argv[] = {"replay", "case.jsonl"};
    char *other_argv[] = {"replay", "case.jsonl", "--slots", "2"};
    const char *p[4];
    for (int i = 0; i < 3; i++) {
        cJSON *j = run_shard(&c, (tsim_shard){i, 3}, true, argv, 2);
        p[i] = write_partial(j, i);
        cJSON_Delete(j);
    }
    cJSON *j = run_shard(&c, (tsim_shard){1, 3}, true, other_argv, 4);
    p[3] = write_partial(j, 3);
    cJSON_Delete(j);
    tsim_session s;
    tsim_error err = {0};

    const char *missing[2] = {p[0], p[2]};
    cr_assert_eq(merge_files(&c, missing, 2, &s, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "shard 1/3 is missing") && strstr(err.msg, p[0]) && strstr(err.msg, p[2]), "%s",
              err.msg);

    const char *twice[4] = {p[0], p[1], p[1], p[2]};
    cr_assert_eq(merge_files(&c, twice, 4, &s, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "overlapping") && strstr(err.msg, p[1]), "%s", err.msg);

    const char *foreign[3] = {p[0], p[3], p[2]};
    cr_assert_eq(merge_files(&c, foreign, 3, &s, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "different commands") && strstr(err.msg, p[3]), "%s", err.msg);

    /* the same command but another trace (here: its records edited) */
    FILE *f = fopen(p[3], "w");
    cJSON *k = run_shard(&c, (tsim_shard){1, 3}, true, argv, 2);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(k, "trace"), "records", cJSON_CreateNumber(N_REC + 1));
    cr_assert_eq(tsim_json_print(f, k), 0);
    fclose(f);
    cJSON_Delete(k);
    cr_assert_eq(merge_files(&c, foreign, 3, &s, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "differ in \"trace\"") && strstr(err.msg, p[3]), "%s", err.msg);

    for (int i = 0; i < 4; i++)
        unlink(p[i]);
    case_free(&c);
}

/* ---- issue 20: which trace, strict and bounded reading, damaged parts ----------- */

static void copy_record(tsim_record *dst, const tsim_record *src)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_record_alloc(dst, src->ranks, src->experts, &err), TSIM_OK);
    int64_t *counts = dst->counts;
    *dst = *src;
    dst->counts = counts;
    memcpy(counts, src->counts, sizeof *counts * (size_t)src->ranks * (size_t)src->experts);
}

static uint64_t digest_of(const tsim_record *recs, int n)
{
    tsim_trace_digest d;
    tsim_trace_digest_init(&d);
    for (int i = 0; i < n; i++)
        tsim_trace_digest_add(&d, &recs[i]);
    cr_assert_eq(d.records, n);
    return d.hash;
}

Test(trace_digest, any_change_of_a_record_changes_it)
{
    replay_case c;
    case_make(&c, 3);
    tsim_record r[2];
    copy_record(&r[0], &c.recs[0]);
    copy_record(&r[1], &c.recs[1]);
    const uint64_t base = digest_of(r, 2);
    cr_assert_eq(digest_of(r, 2), base, "deterministic");
    cr_assert_neq(digest_of(r, 1), base, "one record fewer");
    int64_t *k = r[1].counts;
    k[5]++;
    cr_assert_neq(digest_of(r, 2), base, "one count");
    k[5]--;
    r[1].layer++;
    cr_assert_neq(digest_of(r, 2), base, "layer");
    r[1].layer--;
    snprintf(r[0].tag, sizeof r[0].tag, "x");
    cr_assert_neq(digest_of(r, 2), base, "tag");
    r[0].tag[0] = '\0';
    cr_assert_eq(digest_of(r, 2), base);
    tsim_record swapped[2] = {r[1], r[0]};
    cr_assert_neq(digest_of(swapped, 2), base, "order");
    tsim_record_free(&r[0]);
    tsim_record_free(&r[1]);
    case_free(&c);
}

Test(partials, shards_of_another_trace_with_the_same_header_are_refused, .timeout = 120)
{
    replay_case c, other;
    case_make(&c, 21);
    case_make(&other, 21);
    /* the same header, path, size and records but one count moved */
    other.recs[100].counts[3]++;
    other.recs[100].counts[4]--;
    char *argv[] = {"replay", "case.jsonl"};
    const char *p[2];
    cJSON *j = run_shard(&c, (tsim_shard){0, 2}, true, argv, 2);
    p[0] = write_partial(j, 0);
    cJSON_Delete(j);
    j = run_shard(&other, (tsim_shard){1, 2}, true, argv, 2);
    p[1] = write_partial(j, 1);
    cJSON_Delete(j);
    tsim_session s;
    tsim_error err = {0};
    cr_assert_eq(merge_files(&c, p, 2, &s, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "different traces") && strstr(err.msg, p[0]) && strstr(err.msg, p[1]), "%s",
              err.msg);
    /* both shards of one trace still merge */
    j = run_shard(&c, (tsim_shard){1, 2}, true, argv, 2);
    p[1] = write_partial(j, 1);
    cJSON_Delete(j);
    cr_assert_eq(merge_files(&c, p, 2, &s, &err), TSIM_OK, "%s", err.msg);
    tsim_session_free(&s);
    for (int i = 0; i < 2; i++)
        unlink(p[i]);
    case_free(&c);
    case_free(&other);
}

static void append_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

Test(partials, nul_or_garbage_after_the_json_is_refused, .timeout = 120)
{
    replay_case c;
    case_make(&c, 23);
    char *argv[] = {"replay", "case.jsonl"};
    static const struct {
        const char *bytes;
        size_t n;
        const char *want;
    } tails[] = {{"\0{\"x\": 1}", 9, "NUL byte"}, {"\n{}", 3, "malformed JSON"}, {"\x01", 1, "0x01"}};
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        cJSON *j = run_shard(&c, (tsim_shard){0, 1}, true, argv, 2);
        const char *path = write_partial(j, 0);
        cJSON_Delete(j);
        tsim_partial part;
        tsim_error err = {0};
        cr_assert_eq(tsim_partial_load(&part, path, &err), TSIM_OK, "%s", err.msg);
        tsim_partial_free(&part);
        append_bytes(path, tails[t].bytes, tails[t].n);
        cr_assert_eq(tsim_partial_load(&part, path, &err), TSIM_E_INPUT, "tail %zu accepted", t);
        cr_assert(strstr(err.msg, path) && strstr(err.msg, tails[t].want), "%s", err.msg);
        unlink(path);
    }
    case_free(&c);
}

Test(partials, a_partial_longer_than_a_json_trace_is_refused)
{
    tsim_partial part;
    tsim_error err = {0};
    cr_assert_eq(tsim_partial_load(&part, "/dev/zero", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "/dev/zero") && strstr(err.msg, "at most 256 MiB"), "%s", err.msg);
}

Test(regime, nul_and_garbage_after_a_valid_regime_are_refused)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/tsim-test-regime-%d.json", (int)getpid());
    tsim_regime r;
    tsim_error err = {0};
    const char *root = getenv("TSIM_SOURCE_ROOT");
    cr_assert_not_null(root, "meson test sets TSIM_SOURCE_ROOT");
    char src[4200];
    snprintf(src, sizeof src, "%s/traces/regime-paper.json", root);
    FILE *in = fopen(src, "rb");
    cr_assert_not_null(in, "%s", src);
    char text[8192];
    size_t n = fread(text, 1, sizeof text, in);
    fclose(in);
    static const struct {
        const char *bytes;
        size_t n;
        const char *want;
    } tails[] = {{"", 0, NULL}, {"\0garbage", 8, "NUL byte"}, {"}", 1, "malformed JSON"}};
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(text, 1, n, f), n);
        fclose(f);
        append_bytes(path, tails[t].bytes, tails[t].n);
        int rc = tsim_regime_load(path, ".", &r, &err);
        if (!tails[t].want) {
            cr_assert_eq(rc, TSIM_OK, "%s", err.msg);
            continue;
        }
        cr_assert_eq(rc, TSIM_E_INPUT, "tail %zu accepted", t);
        cr_assert(strstr(err.msg, path) && strstr(err.msg, tails[t].want), "%s", err.msg);
    }
    unlink(path);
}

/* The fields of a part in a fixed order (objects' members, the first two items
 * of each array), with their parents. */
typedef struct {
    cJSON *parent[2048], *node[2048];
    int n;
} field_list;

static void collect_fields(cJSON *parent, field_list *out)
{
    int i = 0;
    cJSON *x;
    cJSON_ArrayForEach(x, parent)
    {
        if (cJSON_IsArray(parent) && i++ >= 2)
            break;
        if (out->n < 2048) {
            out->parent[out->n] = parent;
            out->node[out->n++] = x;
        }
        collect_fields(x, out);
    }
}

static cJSON *wrong_value(int variant)
{
    switch (variant) {
    case 0: return cJSON_CreateString("x");
    case 1: return cJSON_CreateNumber(-1);
    case 2: return cJSON_CreateRaw("1e300");
    default: return cJSON_CreateObject();
    }
}

/* A merge of two parts, one damaged: refused with a message (exit 2), or
 * merged where the field is never read; never a crash or an internal error. */
static void assert_clean(const replay_case *c, const char *const *paths, const char *what)
{
    tsim_session s;
    tsim_error err = {0};
    int rc = merge_files(c, paths, 2, &s, &err);
    cr_assert(rc == TSIM_OK || (rc == TSIM_E_INPUT && err.msg[0]), "%s: status %d: %s", what, rc, err.msg);
    if (rc == TSIM_OK)
        tsim_session_free(&s);
}

static void damage_each_field(const replay_case *c, bool values)
{
    char *argv[] = {"replay", "case.jsonl"};
    cJSON *good[2];
    for (int i = 0; i < 2; i++)
        good[i] = run_shard(c, (tsim_shard){i, 2}, values, argv, 2);
    field_list fields = {.n = 0};
    cJSON *probe = cJSON_Duplicate(good[1], 1);
    collect_fields(probe, &fields);
    const int n_fields = fields.n;
    cJSON_Delete(probe);
    for (int k = 0; k < n_fields; k++)
        for (int variant = k % 2; variant < 4; variant += 2) {
            const int bad = (k / 2 + variant) % 2; /* the first part (read for the setup) and the second */
            cJSON *copy = cJSON_Duplicate(good[bad], 1);
            field_list f = {.n = 0};
            collect_fields(copy, &f);
            cr_assert(cJSON_ReplaceItemViaPointer(f.parent[k], f.node[k], wrong_value(variant)));
            const char *paths[2];
            paths[bad] = write_partial(copy, bad);
            paths[1 - bad] = write_partial(good[1 - bad], 1 - bad);
            char what[96];
            snprintf(what, sizeof what, "%s field %d variant %d of part %d", values ? "values" : "sketch", k,
                     variant, bad);
            assert_clean(c, paths, what);
            cJSON_Delete(copy);
        }
    /* cut short at every 97th byte */
    char *text = cJSON_Print(good[1]);
    const size_t len = strlen(text);
    const char *paths[2] = {write_partial(good[0], 0), NULL};
    for (size_t cut = 0; cut < len; cut += 97) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/tsim-test-merge-%d-cut.json", (int)getpid());
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        fwrite(text, 1, cut, f);
        fclose(f);
        paths[1] = path;
        tsim_session s;
        tsim_error err = {0};
        cr_assert_eq(merge_files(c, paths, 2, &s, &err), TSIM_E_INPUT, "cut at %zu", cut);
        cr_assert(strstr(err.msg, path), "%s", err.msg);
        unlink(path);
    }
    cJSON_free(text);
    for (int i = 0; i < 2; i++)
        cJSON_Delete(good[i]);
    unlink(paths[0]);
}

Test(partials, damaged_or_cut_parts_are_refused_cleanly, .timeout = 300)
{
    replay_case c;
    case_make(&c, 29);
    c.n = 3; /* none, taot, echo: every kind of field, fewer of them */
    damage_each_field(&c, true);
    damage_each_field(&c, false);
    case_free(&c);
}
