/* GPU TAOT against the CPU reference: identical plans (replicas, planned counts,
 * allocations, the auction-cap note) for 10,000 random records (R <= 64, the
 * generator of the CPU property tests) under both Phase-3 variants and every
 * ablation switch, for every bundled trace, for large counts, with and without
 * CUDA graphs and at several batch sizes; with diagnostics on, each record's
 * Phase 0, 1 and 2 results are compared too (hashes of their bits), so that a
 * difference names the first phase that diverged.
 *
 * Without a usable GPU the parity tests skip ("skipped: no GPU: <why>"); the
 * fallback tests run everywhere: --taot-device gpu must then give the CPU plan
 * plus TSIM_NOTE_GPU_FALLBACK, through the library and through the CLI. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cjson/cJSON.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan.h"
#include "planner.h"
#include "random_records.h"
#include "taot.h"
#include "taot_planner.h"
#include "taot_gpu.h"
#include "topology.h"
#include "trace.h"
#include "tsim_config.h"

#define REQUIRE_GPU()                                                                                                  \
    do {                                                                                                               \
        char why_[512];                                                                                                \
        if (!tsim_taot_gpu_available(why_, sizeof why_))                                                               \
            cr_skip_test("skipped: no GPU: %s", why_);                                                                 \
    } while (0)

/* ------------------------------------------------------------------------- */
/* Configurations                                                             */

typedef struct {
    int phase3;
    bool flow_hint, comm_cost;
    double lambda, self_bonus;
    int iters, rounds;
} config;

/* The 8 combinations of variant x flow hint x communication cost, with the
 * other options of this shape. */
static config combo(int i, double lambda, double self_bonus, int iters, int rounds)
{
    config c = {i & 1 ? TSIM_TAOT_SPLIT : TSIM_TAOT_AUCTION, !(i & 2), !(i & 4), lambda, self_bonus, iters, rounds};
    return c;
}

static void config_options(const config *c, tsim_planner_options *o)
{
    tsim_planner_options_default(o);
    o->lambda_plan = c->lambda;
    o->taot.phase3 = c->phase3;
    o->taot.flow_hint = c->flow_hint;
    o->taot.comm_cost = c->comm_cost;
    o->taot.self_bonus = c->self_bonus;
    o->taot.iters = c->iters;
    o->taot.auction_rounds = c->rounds;
    o->taot.device = TSIM_DEVICE_CPU;
}

static void config_name(const config *c, const tsim_topology *t, char *buf, size_t n)
{
    snprintf(buf, n, "R=%d E=%d K=%d rpn=%d %s%s%s lambda=%g self_bonus=%g iters=%d rounds=%d", t->ranks,
             t->experts, t->slots, t->ranks_per_node, c->phase3 == TSIM_TAOT_SPLIT ? "split" : "auction",
             c->flow_hint ? "" : " no-flow-hint", c->comm_cost ? "" : " no-comm-cost", c->lambda, c->self_bonus,
             c->iters, c->rounds);
}

/* ------------------------------------------------------------------------- */
/* Comparison                                                                 */

/* First difference between the CPU plan and the GPU plan, or false. The GPU
 * fallback bit is not part of the comparison (the CPU reference never sets it
 * when asked for the CPU). */
static bool plans_differ(const tsim_plan *cpu, const tsim_plan *gpu, char *msg, size_t n)
{
    if (cpu->count != gpu->count) {
        snprintf(msg, n, "CPU has %d replicas, GPU %d", cpu->count, gpu->count);
        return true;
    }
    for (int i = 0; i < cpu->count; i++) {
        const tsim_replica *a = &cpu->replicas[i], *b = &gpu->replicas[i];
        if (a->expert != b->expert || a->guest != b->guest || a->slot != b->slot || a->planned != b->planned) {
            snprintf(msg, n, "replica %d: CPU (e %d, g %d, k %d, planned %lld), GPU (e %d, g %d, k %d, planned %lld)",
                     i, a->expert, a->guest, a->slot, (long long)a->planned, b->expert, b->guest, b->slot,
                     (long long)b->planned);
            return true;
        }
        const int64_t *ra = tsim_plan_alloc_row_c(cpu, i), *rb = tsim_plan_alloc_row_c(gpu, i);
        for (int r = 0; r < cpu->ranks; r++) {
            if (ra[r] != rb[r]) {
                snprintf(msg, n, "replica %d (e %d, g %d): alloc from rank %d: CPU %lld, GPU %lld", i, a->expert,
                         a->guest, r, (long long)ra[r], (long long)rb[r]);
                return true;
            }
        }
    }
    const uint32_t na = cpu->notes & ~(uint32_t)TSIM_NOTE_GPU_FALLBACK;
    const uint32_t nb = gpu->notes & ~(uint32_t)TSIM_NOTE_GPU_FALLBACK;
    if (na != nb) {
        snprintf(msg, n, "notes: CPU 0x%x, GPU 0x%x", na, nb);
        return true;
    }
    if (!tsim_plan_equal(cpu, gpu)) {
        snprintf(msg, n, "tsim_plan_equal says they differ");
        return true;
    }
    return false;
}

/* The diagnostics hashes of taot_gpu.h, from the CPU context after a plan. */
static uint32_t fnv(uint32_t h, uint32_t w)
{
    return (h ^ w) * 16777619u;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void cpu_diagnostics(const tsim_taot_ctx *c, tsim_taot_gpu_record_out *d)
{
    memset(d, 0, sizeof *d);
    d->iters_computed = c->flow_hint ? c->iters_computed : 0;
    d->auction_rounds_run = c->auction_rounds_run;
    d->avg = c->avg;
    d->alpha = c->alpha;
    uint32_t a = 2166136261u;
    for (int e = 0; e < c->E; e++)
        a = fnv(a, bits(c->tpe_f[e]));
    for (int r = 0; r < c->R; r++)
        a = fnv(a, bits(c->load[r]));
    for (int r = 0; r < c->R; r++)
        a = fnv(a, bits(c->hot[r]));
    for (int r = 0; r < c->R; r++)
        a = fnv(a, bits(c->spare[r]));
    for (int e = 0; e < c->E; e++)
        a = fnv(a, bits(c->spill[e]));
    d->hash_phase0 = a;
    if (c->flow_hint) {
        uint32_t b = 2166136261u;
        for (int r = 0; r < c->R; r++)
            b = fnv(b, bits(c->u[r]));
        for (int r = 0; r < c->R; r++)
            b = fnv(b, bits(c->v[r]));
        for (int r = 0; r < c->R; r++)
            b = fnv(b, bits(c->col_factor[r]));
        d->hash_phase1 = b;
    }
    uint32_t h = 2166136261u;
    for (int s = 0; s < c->R * c->K; s++) {
        h = fnv(h, (uint32_t)c->slot_expert[s]);
        h = fnv(h, bits(c->slot_amount[s]));
        h = fnv(h, (uint32_t)((uint64_t)c->slot_planned[s] & 0xffffffffu));
        h = fnv(h, (uint32_t)((uint64_t)c->slot_planned[s] >> 32));
    }
    d->hash_phase2 = h;
}

/* The first phase whose results differ, or NULL. */
static const char *phase_differs(const tsim_taot_gpu_record_out *cpu, const tsim_taot_gpu_record_out *gpu)
{
    if (bits(cpu->avg) != bits(gpu->avg) || cpu->hash_phase0 != gpu->hash_phase0)
        return "phase 0 (tpe_f, load, hot, spare, spill, avg)";
    if (cpu->hash_phase1 != gpu->hash_phase1 || cpu->iters_computed != gpu->iters_computed)
        return "phase 1 (u, v, col_factor, rounds to the fixed point)";
    if (bits(cpu->alpha) != bits(gpu->alpha) || cpu->hash_phase2 != gpu->hash_phase2)
        return "phase 2 (slot experts, amounts, planned counts)";
    if (cpu->auction_rounds_run != gpu->auction_rounds_run)
        return "phase 3 (auction rounds run)";
    return NULL;
}

typedef struct {
    long records;   /* records compared */
    long differing; /* records whose plan or phases differ */
    int reported;   /* differences logged so far */
} tally;

/* Plans recs[0..n-1] on the CPU and on the GPU (launches of settings->max_batch)
 * and compares every record. */
static void check_records(const tsim_topology *topo, const config *cfg, const tsim_taot_gpu_settings *settings,
                          tsim_record *recs, int n, tally *t)
{
    char name[256];
    config_name(cfg, topo, name, sizeof name);
    tsim_planner_options opts;
    config_options(cfg, &opts);
    tsim_error err = {0};
    tsim_taot_ctx cpu;
    cr_assert_eq(tsim_taot_init(&cpu, topo, &opts, &err), TSIM_OK, "%s: %s", name, err.msg);
    tsim_taot_gpu *g = tsim_taot_gpu_create_ex(topo, &opts, settings, &err);
    cr_assert_not_null(g, "%s: GPU planner not created: %s", name, err.msg);

    const int R = topo->ranks, cap = R * (topo->slots > 0 ? topo->slots : 1);
    tsim_plan cpu_plan, *gpu_plans = calloc((size_t)n, sizeof *gpu_plans);
    const tsim_record **ptrs = calloc((size_t)n, sizeof *ptrs);
    cr_assert(gpu_plans && ptrs);
    cr_assert_eq(tsim_plan_init(&cpu_plan, R, cap, &err), TSIM_OK);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tsim_plan_init(&gpu_plans[i], R, cap, &err), TSIM_OK);
        ptrs[i] = &recs[i];
    }

    const int mb = settings->max_batch;
    for (int start = 0; start < n; start += mb) {
        const int m = n - start < mb ? n - start : mb;
        int rc = tsim_taot_gpu_plan_batch(g, ptrs + start, m, gpu_plans + start, &err);
        cr_assert_eq(rc, TSIM_OK, "%s: GPU batch at record %d: %s", name, start, err.msg);
        for (int i = start; i < start + m; i++) {
            rc = tsim_taot_plan(&cpu, &recs[i], &cpu_plan, &err);
            cr_assert_eq(rc, TSIM_OK, "%s: CPU record %d: %s", name, i, err.msg);
            char diff[512] = "";
            bool bad = plans_differ(&cpu_plan, &gpu_plans[i], diff, sizeof diff);
            const char *phase = NULL;
            if (settings->diagnostics) {
                tsim_taot_gpu_record_out dc, dg;
                cpu_diagnostics(&cpu, &dc);
                cr_assert(tsim_taot_gpu_diagnostics(g, i - start, &dg));
                phase = phase_differs(&dc, &dg);
            }
            t->records++;
            if (bad || phase) {
                t->differing++;
                if (t->reported++ < 10)
                    cr_log_error("GPU differs from CPU: %s, record %d (index %lld): %s%s%s", name, i,
                                 (long long)recs[i].index, bad ? diff : "plans equal",
                                 phase ? "; first phase that differs: " : "", phase ? phase : "");
            }
        }
    }
    for (int i = 0; i < n; i++)
        tsim_plan_free(&gpu_plans[i]);
    tsim_plan_free(&cpu_plan);
    free(gpu_plans);
    free(ptrs);
    tsim_taot_gpu_free(g);
    tsim_taot_free(&cpu);
}

/* ------------------------------------------------------------------------- */
/* Parity: random records                                                     */

#define N_SHAPES 100
#define PER_SHAPE 100

Test(gpu_parity, random_records, .timeout = 1800)
{
    REQUIRE_GPU();
    static const double lambdas[] = {3.0, 1.0, 2.5, 7.0};
    static const double bonuses[] = {0.0, 2.0, -1.0};
    static const int iters[] = {50, 50, 0, 1, 7};
    static const int batches[] = {48, 7, 1, 48, 13};
    uint64_t st = UINT64_C(0x6770755f70617269);
    tally t = {0, 0, 0};
    for (int s = 0; s < N_SHAPES; s++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&st, TSIM_TAOT_GPU_MAX_RANKS, &sh);
        tsim_topology topo;
        tsim_error err = {0};
        cr_assert_eq(tsim_topology_init(&topo, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots, NULL, &err),
                     TSIM_OK, "%s", err.msg);
        tsim_record recs[PER_SHAPE];
        for (int i = 0; i < PER_SHAPE; i++) {
            tsim_random_record(&st, &sh, &recs[i]);
            recs[i].index = (int64_t)s * PER_SHAPE + i;
        }
        tsim_taot_gpu_settings set;
        tsim_taot_gpu_settings_default(&set);
        set.max_batch = batches[s % 5];
        set.use_graph = s % 4 != 3;
        set.diagnostics = true;
        const int rounds = s % 7 == 3 ? 3 : 300; /* a small cap exercises the capped note */
        for (int c = 0; c < 8; c++) {
            config cfg = combo(c, lambdas[s % 4], bonuses[s % 3], iters[s % 5], rounds);
            check_records(&topo, &cfg, &set, recs, PER_SHAPE, &t);
        }
        for (int i = 0; i < PER_SHAPE; i++)
            tsim_record_free(&recs[i]);
        tsim_topology_free(&topo);
    }
    cr_log_info("gpu parity: %ld records x configurations compared (%d records), %ld differ", t.records,
                N_SHAPES * PER_SHAPE, t.differing);
    cr_assert_eq(t.differing, 0, "%ld of %ld GPU plans differ from the CPU reference (first ones logged above)",
                 t.differing, t.records);
}

/* Counts above 2^24 per expert (the float tpe is then a float sum) and above
 * 2^32 per cell (the launch carries int64 counts). */
Test(gpu_parity, large_counts, .timeout = 600)
{
    REQUIRE_GPU();
    uint64_t st = UINT64_C(0x6c61726765);
    tally t = {0, 0, 0};
    for (int s = 0; s < 12; s++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&st, TSIM_TAOT_GPU_MAX_RANKS, &sh);
        tsim_topology topo;
        tsim_error err = {0};
        cr_assert_eq(tsim_topology_init(&topo, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots, NULL, &err),
                     TSIM_OK);
        enum { N = 40 };
        tsim_record recs[N];
        const int64_t top = s % 2 ? (INT64_C(1) << 34) : (INT64_C(1) << 26);
        for (int i = 0; i < N; i++) {
            tsim_record_alloc(&recs[i], sh.ranks, sh.experts, NULL);
            recs[i].index = i;
            const int hot = (int)tsim_rand_range(&st, 0, sh.ranks - 1), hpr = sh.experts / sh.ranks;
            for (int r = 0; r < sh.ranks; r++)
                for (int e = 0; e < sh.experts; e++)
                    recs[i].counts[(size_t)r * (size_t)sh.experts + (size_t)e] =
                        tsim_rand_range(&st, 0, top) / (e / hpr == hot ? 1 : 1 + (int64_t)(e % 5));
        }
        tsim_taot_gpu_settings set;
        tsim_taot_gpu_settings_default(&set);
        set.max_batch = 16;
        set.diagnostics = true;
        for (int c = 0; c < 8; c++) {
            config cfg = combo(c, 3.0, 0.0, 50, 300);
            check_records(&topo, &cfg, &set, recs, N, &t);
        }
        for (int i = 0; i < N; i++)
            tsim_record_free(&recs[i]);
        tsim_topology_free(&topo);
    }
    cr_assert_eq(t.differing, 0, "%ld of %ld GPU plans differ (large counts)", t.differing, t.records);
}

/* ------------------------------------------------------------------------- */
/* Parity: every bundled trace                                                */

static int load_trace(const char *path, tsim_trace_header *hdr, tsim_record **out, int max_records)
{
    tsim_reader *rd;
    tsim_read_options ro;
    memset(&ro, 0, sizeof ro);
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&rd, path, &ro, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_trace_header_copy(hdr, tsim_reader_header(rd), &err), TSIM_OK, "%s", err.msg);
    tsim_record *recs = calloc((size_t)max_records, sizeof *recs);
    cr_assert_not_null(recs);
    int n = 0;
    const tsim_record *rec;
    int rc;
    while (n < max_records && (rc = tsim_reader_next(rd, &rec, &err)) == 1) {
        cr_assert_eq(tsim_record_alloc(&recs[n], rec->ranks, rec->experts, &err), TSIM_OK);
        memcpy(recs[n].counts, rec->counts, sizeof *rec->counts * (size_t)rec->ranks * (size_t)rec->experts);
        recs[n].index = rec->index;
        recs[n].layer = rec->layer;
        recs[n].microbatch = rec->microbatch;
        n++;
    }
    cr_assert(n == max_records || rc == 0, "%s: %s", path, err.msg);
    tsim_reader_close(rd);
    *out = recs;
    return n;
}

Test(gpu_parity, bundled_traces, .timeout = 1800)
{
    REQUIRE_GPU();
    const char *root = getenv("TSIM_SOURCE_ROOT");
    if (!root)
        root = TSIM_SOURCE_ROOT;
    static const char *const patterns[] = {"traces/*.jsonl.gz", "traces/*.jsonl", "traces/*.json"};
    int traces = 0;
    tally t = {0, 0, 0};
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
        char pattern[4096];
        snprintf(pattern, sizeof pattern, "%s/%s", root, patterns[p]);
        glob_t gl;
        if (glob(pattern, 0, NULL, &gl) != 0)
            continue;
        for (size_t f = 0; f < gl.gl_pathc; f++) {
            const char *path = gl.gl_pathv[f];
            tsim_trace_header hdr;
            tsim_record *recs;
            const int n = load_trace(path, &hdr, &recs, 20000);
            traces++;
            tsim_topology topo;
            tsim_error err = {0};
            cr_assert_eq(tsim_topology_init(&topo, hdr.ep, hdr.experts, hdr.ranks_per_node, 2, hdr.home, &err),
                         TSIM_OK, "%s: %s", path, err.msg);
            if (hdr.ep > TSIM_TAOT_GPU_MAX_RANKS) {
                /* Outside the kernels' limit: create refuses with the reason. */
                tsim_planner_options opts;
                tsim_planner_options_default(&opts);
                tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts, 48, &err);
                cr_assert_null(g);
                cr_assert(strstr(err.msg, "64") != NULL, "%s: %s", path, err.msg);
                cr_log_info("%s: R = %d > 64, runs on the CPU: %s", path, hdr.ep, err.msg);
            } else {
                tsim_taot_gpu_settings set;
                tsim_taot_gpu_settings_default(&set);
                set.diagnostics = true;
                for (int c = 0; c < 8; c++) {
                    config cfg = combo(c, 3.0, 0.0, 50, 300);
                    check_records(&topo, &cfg, &set, recs, n, &t);
                }
                cr_log_info("%s: %d records x 8 configurations compared", path, n);
            }
            for (int i = 0; i < n; i++)
                tsim_record_free(&recs[i]);
            free(recs);
            tsim_topology_free(&topo);
            tsim_trace_header_free(&hdr);
        }
        globfree(&gl);
    }
    cr_assert_gt(traces, 0, "no trace found under %s/traces", root);
    cr_assert_eq(t.differing, 0, "%ld of %ld GPU plans differ on the bundled traces", t.differing, t.records);
}

/* A record of the wrong shape is refused, and the engine keeps working. */
Test(gpu_parity, wrong_shape_refused)
{
    REQUIRE_GPU();
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 8, 32, 4, 2, NULL, &err), TSIM_OK);
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts, 4, &err);
    cr_assert_not_null(g, "%s", err.msg);
    tsim_record bad, good;
    tsim_record_alloc(&bad, 8, 16, NULL);
    tsim_record_alloc(&good, 8, 32, NULL);
    for (int i = 0; i < 8 * 32; i++)
        good.counts[i] = (i % 32) < 4 ? 100 : 3;
    tsim_plan plan;
    tsim_plan_init(&plan, 8, 16, &err);
    const tsim_record *p = &bad;
    cr_assert_eq(tsim_taot_gpu_plan_batch(g, &p, 1, &plan, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "8 x 16") != NULL, "%s", err.msg);
    p = &good;
    cr_assert_eq(tsim_taot_gpu_plan_batch(g, &p, 1, &plan, &err), TSIM_OK, "%s", err.msg);
    cr_assert_gt(plan.count, 0);
    tsim_plan_free(&plan);
    tsim_record_free(&bad);
    tsim_record_free(&good);
    tsim_taot_gpu_free(g);
    tsim_topology_free(&topo);
}

/* ------------------------------------------------------------------------- */
/* Fallback and stub: these run with or without a GPU                          */

Test(gpu_fallback, available_says_why)
{
    char why[512];
    memset(why, 'x', sizeof why);
    const int ok = tsim_taot_gpu_available(why, sizeof why);
    cr_assert(memchr(why, '\0', sizeof why) != NULL, "why is not terminated");
    if (!TSIM_HAVE_CUDA) {
        cr_assert_eq(ok, 0);
        cr_assert(strstr(why, "without CUDA") != NULL, "%s", why);
    } else if (!ok) {
        cr_assert_gt(strlen(why), 0, "no reason given for the missing GPU");
        cr_log_info("no GPU here: %s", why);
    } else {
        cr_assert_eq(why[0], '\0', "a usable GPU comes with no reason: %s", why);
    }
}

/* R above the kernels' limit is refused before any CUDA call, with the reason. */
Test(gpu_fallback, rank_limit)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 128, 256, 8, 2, NULL, &err), TSIM_OK);
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts, 48, &err);
    cr_assert_null(g);
    cr_assert_eq(err.code, TSIM_E_INPUT);
    if (TSIM_HAVE_CUDA)
        cr_assert(strstr(err.msg, "R = 128") != NULL && strstr(err.msg, "64") != NULL, "%s", err.msg);
    else
        cr_assert(strstr(err.msg, "without CUDA") != NULL, "%s", err.msg);
    tsim_topology_free(&topo);
}

/* --taot-device gpu through the planner registry: the CPU plan, plus the
 * fallback note and a reason whenever the GPU planner could not be set up (no
 * GPU, no CUDA in the build, or R > 64). */
Test(gpu_fallback, device_gpu_plans_like_cpu, .timeout = 600)
{
    char why_gpu[512];
    const bool have_gpu = tsim_taot_gpu_available(why_gpu, sizeof why_gpu);
    uint64_t st = UINT64_C(0x66616c6c);
    for (int s = 0; s < 9; s++) {
        tsim_random_shape sh;
        if (s < 8) {
            tsim_random_shape_draw(&st, TSIM_TAOT_GPU_MAX_RANKS, &sh);
        } else {
            sh.ranks = 128; /* above the kernels' limit: always the CPU */
            sh.experts = 256;
            sh.slots = 2;
            sh.ranks_per_node = 8;
        }
        tsim_topology topo;
        tsim_error err = {0};
        cr_assert_eq(tsim_topology_init(&topo, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots, NULL, &err),
                     TSIM_OK);
        const config cfg = combo(s % 8, 3.0, 0.0, 50, 300);
        tsim_planner_options cpu_opts, gpu_opts;
        config_options(&cfg, &cpu_opts);
        gpu_opts = cpu_opts;
        gpu_opts.taot.device = TSIM_DEVICE_GPU;
        void *cpu_state = NULL, *gpu_state = NULL;
        cr_assert_eq(tsim_planner_taot.init(&cpu_state, &topo, &cpu_opts, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq(tsim_planner_taot.init(&gpu_state, &topo, &gpu_opts, &err), TSIM_OK, "%s", err.msg);

        const bool expect_fallback = !have_gpu || sh.ranks > TSIM_TAOT_GPU_MAX_RANKS;
        char why[512];
        cr_assert_eq(tsim_taot_gpu_fell_back(gpu_state, why, sizeof why), expect_fallback,
                     "R = %d: fell back %d, expected %d (%s)", sh.ranks, !expect_fallback, expect_fallback, why);
        if (expect_fallback) {
            cr_assert_gt(strlen(why), 0, "a fallback without a reason");
            if (!TSIM_HAVE_CUDA)
                cr_assert(strstr(why, "without CUDA") != NULL, "%s", why);
            else if (sh.ranks > TSIM_TAOT_GPU_MAX_RANKS)
                cr_assert(strstr(why, "64") != NULL, "%s", why);
        }
        cr_assert_eq(tsim_taot_gpu_fell_back(cpu_state, why, sizeof why), false, "the CPU device never falls back");

        tsim_plan a, b;
        tsim_plan_init(&a, sh.ranks, sh.ranks * sh.slots, &err);
        tsim_plan_init(&b, sh.ranks, sh.ranks * sh.slots, &err);
        for (int i = 0; i < 60; i++) {
            tsim_record rec;
            tsim_random_record(&st, &sh, &rec);
            rec.index = i;
            cr_assert_eq(tsim_planner_taot.plan(cpu_state, &rec, &a, &err), TSIM_OK, "%s", err.msg);
            cr_assert_eq(tsim_planner_taot.plan(gpu_state, &rec, &b, &err), TSIM_OK, "%s", err.msg);
            char diff[512];
            cr_assert_not(plans_differ(&a, &b, diff, sizeof diff), "R = %d record %d: %s", sh.ranks, i, diff);
            cr_assert_eq(a.notes & TSIM_NOTE_GPU_FALLBACK, 0u);
            cr_assert_eq((b.notes & TSIM_NOTE_GPU_FALLBACK) != 0, expect_fallback,
                         "R = %d record %d: notes 0x%x, fallback expected %d", sh.ranks, i, b.notes, expect_fallback);
            tsim_record_free(&rec);
        }
        tsim_plan_free(&a);
        tsim_plan_free(&b);
        tsim_planner_taot.free(cpu_state);
        tsim_planner_taot.free(gpu_state);
        tsim_topology_free(&topo);
    }
}

/* Runs cmd with the shell, output to out_path; returns the exit status. */
static int run_shell(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The CLI: `replay --taot-device gpu` writes the same plans as the CPU run, and
 * reports the fallback note on every record exactly when no GPU answers. */
Test(gpu_fallback, cli_replay_device_gpu, .timeout = 300)
{
    const char *exe = getenv("TAOTSIM");
    const char *root = getenv("TSIM_SOURCE_ROOT");
    cr_assert_not_null(exe, "TAOTSIM is not set (run through meson test)");
    if (!root)
        root = TSIM_SOURCE_ROOT;
    char dir[] = "/tmp/tsim-gpu-cli-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char cmd[8192];
    const char *trace = "traces/tiny-4rank.json";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' replay %s --planners taot --taot-device gpu --format json --dump-plans '%s/gpu.jsonl' "
             "> '%s/gpu.json' 2> '%s/gpu.err'",
             root, exe, trace, dir, dir, dir);
    cr_assert_eq(run_shell(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' replay %s --planners taot --format json --dump-plans '%s/cpu.jsonl' > '%s/cpu.json' "
             "2> '%s/cpu.err'",
             root, exe, trace, dir, dir, dir);
    cr_assert_eq(run_shell(cmd), 0, "%s", cmd);

    char path[512];
    snprintf(path, sizeof path, "%s/gpu.jsonl", dir);
    char *gpu_plans = slurp(path);
    snprintf(path, sizeof path, "%s/cpu.jsonl", dir);
    char *cpu_plans = slurp(path);
    cr_assert_gt(strlen(cpu_plans), 0);
    cr_assert_str_eq(gpu_plans, cpu_plans, "--taot-device gpu dumped other plans than the CPU");

    snprintf(path, sizeof path, "%s/gpu.json", dir);
    char *text = slurp(path);
    cJSON *j = cJSON_Parse(text);
    cr_assert_not_null(j, "replay --format json is not JSON");
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "results"), 0);
    cr_assert_not_null(res);
    /* Records replayed: "trace": {"records": N} of cli.md. */
    const cJSON *records = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "trace"), "records");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(res, "notes");
    const cJSON *fb = notes ? cJSON_GetObjectItemCaseSensitive(notes, "gpu_fallback") : NULL;
    const double fallback_records = cJSON_IsNumber(fb) ? fb->valuedouble : 0.0;
    cr_assert(cJSON_IsNumber(records) && records->valuedouble > 0);
    char why[512];
    if (tsim_taot_gpu_available(why, sizeof why))
        cr_assert_eq(fallback_records, 0.0, "a GPU answers, yet %g records fell back", fallback_records);
    else
        cr_assert_eq(fallback_records, records->valuedouble, "no GPU (%s): %g of %g records noted as a fallback",
                     why, fallback_records, records->valuedouble);
    cJSON_Delete(j);
    free(text);
    free(gpu_plans);
    free(cpu_plans);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run_shell(cmd);
}

/* The benchmark entry for `taotsim bench --taot-device gpu`: a table and no
 * differing plan with a GPU, a clear refusal without. scripts/gpu-check.sh runs
 * it at full size: TSIM_GPU_BENCH_RECORDS records per shape (default 96), the
 * table also written to TSIM_GPU_BENCH_OUT. */
Test(gpu_fallback, bench_entry, .timeout = 600)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    tsim_error err = {0};
    const char *records_env = getenv("TSIM_GPU_BENCH_RECORDS");
    const int records = records_env ? atoi(records_env) : 96;
    const int rc = tsim_taot_gpu_bench(out, records, 7, &err);
    fclose(out);
    const char *copy_to = getenv("TSIM_GPU_BENCH_OUT");
    if (copy_to) {
        FILE *f = fopen(copy_to, "w");
        cr_assert_not_null(f, "cannot write %s", copy_to);
        fputs(buf, f);
        if (rc)
            fprintf(f, "\n%s\n", err.msg);
        fclose(f);
    }
    char why[512];
    if (tsim_taot_gpu_available(why, sizeof why)) {
        cr_assert_eq(rc, TSIM_OK, "%s", err.msg);
        cr_assert(strstr(buf, "| 16 | 128 | 2 |") && strstr(buf, "| 32 | 128 | 2 |") && strstr(buf, "| 64 | 256 | 2 |"),
                  "%s", buf);
        cr_log_info("%s", buf);
    } else {
        cr_assert_eq(rc, TSIM_E_INPUT);
        cr_assert(strstr(err.msg, "no usable GPU") != NULL, "%s", err.msg);
    }
    free(buf);
}
