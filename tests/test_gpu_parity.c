/* GPU TAOT against the CPU reference: identical plans (replicas, planned counts,
 * allocations, the auction-cap note) for 10,000 random records (R <= 64, the
 * generator of the CPU property tests) under both Phase-3 variants and every
 * ablation switch, for every bundled trace, for large counts, with and without
 * CUDA graphs and at several batch sizes, and for every TAOT spec vector (the
 * vector's expected plan, vector 18's float-rounded kernel constant included);
 * with diagnostics on, each record's Phase 0, 1 and 2 results are compared too
 * (hashes of their bits), so that a difference names the first phase that
 * diverged. gpu_parity/bench is the benchmark at full size for
 * scripts/gpu-check.sh.
 *
 * Every test here needs a GPU, so main() asks first: without one it prints
 * "skipped: no GPU: <why>" and exits 77, which meson counts as a skipped
 * suite, not a passed one. What runs everywhere (--taot-device gpu falling
 * back to the CPU) is in test_gpu_fallback.c. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_fixture.h"
#include "test_options.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "random_records.h"
#include "taot.h"
#include "taot_gpu.h"
#include "topology.h"
#include "trace.h"
#include "tsim_config.h"
#include "vector.h"
#include "vector_check.h"

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
static void check_records(const tsim_topology *topo, const tsim_gpu_config *cfg, const tsim_taot_gpu_settings *settings,
                          tsim_record *recs, int n, tally *t)
{
    char name[256];
    tsim_gpu_config_name(cfg, topo, name, sizeof name);
    tsim_planner_options opts;
    tsim_gpu_config_options(cfg, &opts);
    tsim_error err = {0};
    tsim_taot_ctx cpu;
    cr_assert_eq(tsim_taot_init(&cpu, topo, &opts.common, TSIM_OPTS(opts, taot), &err), TSIM_OK, "%s: %s", name, err.msg);
    tsim_taot_gpu *g = tsim_taot_gpu_create_ex(topo, &opts.common, TSIM_OPTS(opts, taot), settings, &err);
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
            bool bad = tsim_gpu_plans_differ(&cpu_plan, &gpu_plans[i], diff, sizeof diff);
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
            tsim_gpu_config cfg = tsim_gpu_combo(c, lambdas[s % 4], bonuses[s % 3], iters[s % 5], rounds);
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
            tsim_gpu_config cfg = tsim_gpu_combo(c, 3.0, 0.0, 50, 300);
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
                tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts.common, TSIM_OPTS(opts, taot), 48, &err);
                cr_assert_null(g);
                cr_assert(strstr(err.msg, "64") != NULL, "%s: %s", path, err.msg);
                cr_log_info("%s: R = %d > 64, runs on the CPU: %s", path, hdr.ep, err.msg);
            } else {
                tsim_taot_gpu_settings set;
                tsim_taot_gpu_settings_default(&set);
                set.diagnostics = true;
                for (int c = 0; c < 8; c++) {
                    tsim_gpu_config cfg = tsim_gpu_combo(c, 3.0, 0.0, 50, 300);
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
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 8, 32, 4, 2, NULL, &err), TSIM_OK);
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts.common, TSIM_OPTS(opts, taot), 4, &err);
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
/* Parity: the TAOT spec vectors                                              */

#define MAX_VECTORS 64

/* Each vector's record planned by the GPU engine and by the `taot` planner
 * with --taot-device gpu gives the vector's expected plan; vector 18 (the
 * kernel constant exp rounded as the published code does) must be among them. */
Test(gpu_parity, spec_vectors, .timeout = 300)
{
    static char paths[MAX_VECTORS][1024];
    const int n = tsim_test_vector_files("taot", paths, MAX_VECTORS);
    bool kernel_constant = false;
    for (int i = 0; i < n; i++) {
        tsim_vector v;
        tsim_error err = {0};
        cr_assert_eq(tsim_vector_load(&v, paths[i], &err), TSIM_OK, "%s", err.msg);
        cr_assert(v.has_expect, "%s has no expect", paths[i]);
        kernel_constant |= strcmp(v.name, "18-r8-k1-rpn4-kernel-constant") == 0;

        tsim_topology topo;
        cr_assert_eq(tsim_topology_init(&topo, v.record.ranks, v.record.experts, v.ranks_per_node, v.slots, NULL,
                                        &err),
                     TSIM_OK, "%s: %s", v.name, err.msg);
        tsim_taot_gpu_settings set;
        tsim_taot_gpu_settings_default(&set);
        set.max_batch = 1;
        tsim_taot_gpu *g = tsim_taot_gpu_create_ex(&topo, &v.opts.common, TSIM_OPTS(v.opts, taot), &set, &err);
        cr_assert_not_null(g, "%s: GPU planner not created: %s", v.name, err.msg);
        tsim_plan plan;
        cr_assert_eq(tsim_plan_init(&plan, topo.ranks, topo.ranks * (topo.slots > 0 ? topo.slots : 1), &err),
                     TSIM_OK);
        const tsim_record *rec = &v.record;
        cr_assert_eq(tsim_taot_gpu_plan_batch(g, &rec, 1, &plan, &err), TSIM_OK, "%s: %s", v.name, err.msg);
        char label[256];
        snprintf(label, sizeof label, "%s (GPU engine)", v.name);
        tsim_test_assert_plans_equal(&plan, &v.expect, label);
        tsim_plan_free(&plan);
        tsim_taot_gpu_free(g);

        /* The same through the planner entry that replay uses. */
        TSIM_OPTS(v.opts, taot)->device = TSIM_DEVICE_GPU;
        tsim_metrics m;
        int64_t *loads = calloc((size_t)v.record.ranks, sizeof *loads);
        cr_assert_not_null(loads);
        tsim_test_run_vector(&v, "taot", &plan, &m, loads);
        cr_assert_eq(plan.notes & TSIM_NOTE_GPU_FALLBACK, 0u, "%s: the taot planner fell back to the CPU", v.name);
        snprintf(label, sizeof label, "%s (taot --taot-device gpu)", v.name);
        tsim_test_assert_plans_equal(&plan, &v.expect, label);
        for (int r = 0; r < v.record.ranks; r++)
            cr_assert_eq(loads[r], v.loads_after[r], "%s: load of rank %d is %lld, expected %lld", label, r,
                         (long long)loads[r], (long long)v.loads_after[r]);
        free(loads);
        tsim_plan_free(&plan);
        tsim_topology_free(&topo);
        tsim_vector_free(&v);
    }
    cr_assert(kernel_constant, "vector 18-r8-k1-rpn4-kernel-constant not found among the %d TAOT vectors in %s", n,
              tsim_test_spec_dir());
    cr_log_info("gpu parity: %d TAOT spec vectors give their expected plan on the GPU", n);
}

/* ------------------------------------------------------------------------- */
/* Benchmark                                                                  */

/* tsim_taot_gpu_bench (`taotsim bench --taot-device gpu`'s batched table): at
 * (16,128,2), (32,128,2) and (64,256,2), the CPU reference, the latency of one
 * record and the time per record in launches of 48, every GPU plan checked
 * against the CPU's. TSIM_GPU_BENCH_RECORDS records per shape (default 96);
 * the table is also written to TSIM_GPU_BENCH_OUT when set. */
Test(gpu_parity, bench, .timeout = 600)
{
    const char *records_env = getenv("TSIM_GPU_BENCH_RECORDS");
    const int records = records_env ? atoi(records_env) : 96;
    cr_assert_gt(records, 0, "TSIM_GPU_BENCH_RECORDS=%s is not a positive count", records_env);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    tsim_error err = {0};
    tsim_planner_options bench_opts;
    tsim_planner_options_default(&bench_opts);
    tsim_taot_gpu_bench_result res;
    const int rc = tsim_taot_gpu_bench(&res, &bench_opts.common, TSIM_OPTS(bench_opts, taot), records, 7, &err);
    fprintf(out, "| R | E | K | records | CPU us/record | GPU latency us (1 record, p50) | GPU us/record (launches of "
                 "%d, p50) | GPU us/record (launches of %d, mean) | plans differing |\n|---|---|---|---|---|---|---|---|---|\n",
            TSIM_TAOT_GPU_DEFAULT_BATCH, TSIM_TAOT_GPU_DEFAULT_BATCH);
    for (int i = 0; i < res.n_rows; i++) {
        const tsim_taot_gpu_bench_row *r = &res.rows[i];
        fprintf(out, "| %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %ld |\n", r->ranks, r->experts, r->slots,
                r->records, r->cpu_us, r->latency_us, r->batched_us, r->batched_mean_us, r->mismatches);
    }
    fclose(out);
    const char *copy_to = getenv("TSIM_GPU_BENCH_OUT");
    if (copy_to && copy_to[0]) {
        FILE *f = fopen(copy_to, "w");
        cr_assert_not_null(f, "cannot write %s", copy_to);
        fputs(buf, f);
        if (rc)
            fprintf(f, "\n%s\n", err.msg);
        cr_assert_eq(fclose(f), 0, "cannot write %s", copy_to);
    }
    cr_assert_eq(rc, TSIM_OK, "%s", err.msg);
    cr_assert(strstr(buf, "| 16 | 128 | 2 |") && strstr(buf, "| 32 | 128 | 2 |") && strstr(buf, "| 64 | 256 | 2 |"),
              "%s", buf);
    cr_log_info("%s", buf);
    free(buf);
}

/* ------------------------------------------------------------------------- */
/* main: skip the whole suite without a GPU                                   */

/* 1 when a GPU answers, 0 when none does (why says so), -1 when the probe
 * itself failed. The probe runs in a child process, so this process, which
 * starts the test workers, holds no CUDA state. */
static int probe_gpu(char *why, size_t n)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, n, "GPU probe: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, n, "GPU probe: fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        char reason[512];
        const int ok = tsim_taot_gpu_available(reason, sizeof reason);
        const size_t len = strlen(reason);
        _exit(write(fd[1], reason, len) == (ssize_t)len && ok ? 0 : ok ? 2 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd[0], why + got, n - 1 - got)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        got += (size_t)r;
    }
    why[got] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(why, n, "GPU probe: waitpid: %s", strerror(errno));
            return -1;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
        return 0;
    if (WIFSIGNALED(status))
        snprintf(why, n, "GPU probe: killed by signal %d", WTERMSIG(status));
    else
        snprintf(why, n, "GPU probe: exit status %d", WEXITSTATUS(status));
    return -1;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    /* 0: --help, --version, --list or a bad option, already answered. */
    if (criterion_handle_args(argc, argv, true)) {
        char why[512];
        const int gpu = probe_gpu(why, sizeof why);
        if (gpu > 0) {
            status = criterion_run_all_tests(tests) ? 0 : 1;
        } else if (gpu == 0) {
            printf("skipped: no GPU: %s\n", why);
            status = 77; /* meson's "skipped" */
        } else {
            fprintf(stderr, "test_gpu_parity: %s\n", why);
            status = 1;
        }
    }
    criterion_finalize(tests);
    return status;
}
