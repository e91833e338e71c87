/* The public GPU TAOT API (gpu/taot_gpu.h) on top of the CUDA engine: records in,
 * plans out, the CPU reference's constants, and the GPU benchmark. Compiled
 * only when the build has CUDA (gpu/taot_gpu_stub.c otherwise). */
#include "taot_gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "taot.h"

struct tsim_taot_gpu {
    /* The CPU reference's context for the same topology and options: it
     * validates the options with the CPU's messages and holds the lambda
     * constants, so that the kernels get the very floats the CPU uses. */
    tsim_taot_ctx ref;
    tsim_taot_gpu_engine *engine;
    int R, E, K, max_batch;
};

void tsim_taot_gpu_settings_default(tsim_taot_gpu_settings *s)
{
    s->max_batch = TSIM_TAOT_GPU_DEFAULT_BATCH;
    s->use_graph = true;
    s->diagnostics = false;
}

int tsim_taot_gpu_available(char *why, size_t n)
{
    if (why && n)
        why[0] = '\0';
    return tsim_taot_gpu_engine_probe(why, n);
}

tsim_taot_gpu *tsim_taot_gpu_create(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts, int max_batch,
                                    tsim_error *err)
{
    tsim_taot_gpu_settings s;
    tsim_taot_gpu_settings_default(&s);
    s.max_batch = max_batch;
    return tsim_taot_gpu_create_ex(topo, common, opts, &s, err);
}

tsim_taot_gpu *tsim_taot_gpu_create_ex(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts,
                                       const tsim_taot_gpu_settings *settings, tsim_error *err)
{
    if (topo->ranks > TSIM_TAOT_GPU_MAX_RANKS) {
        tsim_error_set(err, TSIM_E_INPUT,
                       "taot gpu: R = %d ranks is above the GPU kernels' limit of %d (one thread per rank sum, a "
                       "64-bit rank mask)",
                       topo->ranks, TSIM_TAOT_GPU_MAX_RANKS);
        return NULL;
    }
    tsim_taot_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        tsim_error_set(err, TSIM_E_INTERNAL, "taot gpu: out of memory");
        return NULL;
    }
    tsim_taot_options cpu_opts = *opts;
    cpu_opts.device = TSIM_DEVICE_CPU;
    if (tsim_taot_init(&g->ref, topo, common, &cpu_opts, err) != TSIM_OK) {
        free(g);
        return NULL;
    }
    const tsim_taot_ctx *c = &g->ref;
    g->R = c->R;
    g->E = c->E;
    g->K = c->K;
    g->max_batch = settings->max_batch > 0 ? settings->max_batch : 1;

    tsim_taot_gpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.ranks = c->R;
    cfg.experts = c->E;
    cfg.slots = c->K;
    cfg.experts_per_rank = c->hpr;
    cfg.ranks_per_node = c->rpn;
    cfg.phase3 = c->phase3 == TSIM_TAOT_SPLIT ? 1 : 0;
    cfg.flow_hint = c->flow_hint ? 1 : 0;
    cfg.iters = c->iters;
    cfg.auction_rounds = c->auction_rounds;
    cfg.m_in = c->m_in;
    cfg.m_out = c->m_out;
    cfg.b_near = c->b_near;
    cfg.b_far = c->b_far;
    cfg.bonus_self = c->bonus_self;
    cfg.bonus_near = c->bonus_near;
    cfg.bonus_far = c->bonus_far;
    cfg.home = topo->home;
    cfg.rank_experts = topo->rank_experts;
    cfg.max_batch = g->max_batch;
    cfg.use_graph = settings->use_graph ? 1 : 0;
    cfg.diagnostics = settings->diagnostics ? 1 : 0;

    char why[TSIM_ERROR_MSG_MAX - 16];
    why[0] = '\0';
    int rc = tsim_taot_gpu_engine_create(&cfg, &g->engine, why, sizeof why);
    if (rc != TSIM_GPU_OK) {
        tsim_error_set(err, rc == TSIM_GPU_UNSUPPORTED ? TSIM_E_INPUT : TSIM_E_INTERNAL, "taot gpu: %s", why);
        tsim_taot_free(&g->ref);
        free(g);
        return NULL;
    }
    return g;
}

void tsim_taot_gpu_free(tsim_taot_gpu *g)
{
    if (!g)
        return;
    tsim_taot_gpu_engine_free(g->engine);
    tsim_taot_free(&g->ref);
    free(g);
}

/* Copies the counts of m records into the pinned input: as uint32 when every
 * count fits (half the bytes to move), else as int64. Returns wide. */
static int pack_counts(tsim_taot_gpu *g, const tsim_record *const *recs, int m)
{
    const size_t cells = (size_t)g->R * (size_t)g->E;
    uint64_t high = 0;
    for (int i = 0; i < m; i++) {
        uint32_t *dst = tsim_taot_gpu_engine_input(g->engine, i, 0);
        const int64_t *src = recs[i]->counts;
        for (size_t idx = 0; idx < cells; idx++) {
            dst[idx] = (uint32_t)src[idx];
            high |= (uint64_t)src[idx] >> 32; /* a negative count lands here too */
        }
    }
    if (high == 0)
        return 0;
    for (int i = 0; i < m; i++)
        memcpy(tsim_taot_gpu_engine_input(g->engine, i, 1), recs[i]->counts, cells * sizeof(int64_t));
    return 1;
}

int tsim_taot_gpu_plan_batch(tsim_taot_gpu *g, const tsim_record *const *recs, int n, tsim_plan *plans,
                             tsim_error *err)
{
    const int R = g->R;
    for (int i = 0; i < n; i++) {
        const tsim_record *rec = recs[i];
        if (rec->ranks != g->R || rec->experts != g->E)
            return tsim_error_set(err, TSIM_E_INPUT, "taot gpu: record %lld is %d x %d, planner set up for %d x %d",
                                  (long long)rec->index, rec->ranks, rec->experts, g->R, g->E);
        if (plans[i].ranks != R)
            return tsim_error_set(err, TSIM_E_INPUT, "taot gpu: plan %d has rows of %d ranks, expected %d", i,
                                  plans[i].ranks, R);
    }
    for (int start = 0; start < n; start += g->max_batch) {
        const int m = n - start < g->max_batch ? n - start : g->max_batch;
        const int wide = pack_counts(g, recs + start, m);
        char why[TSIM_ERROR_MSG_MAX - 16];
        why[0] = '\0';
        int rc = tsim_taot_gpu_engine_run(g->engine, m, wide, why, sizeof why);
        if (rc != TSIM_GPU_OK)
            return tsim_error_set(err, rc == TSIM_GPU_UNSUPPORTED ? TSIM_E_INPUT : TSIM_E_INTERNAL, "taot gpu: %s",
                                  why);
        for (int i = 0; i < m; i++) {
            const tsim_taot_gpu_replica *reps;
            const int64_t *alloc;
            const tsim_taot_gpu_record_out *h = tsim_taot_gpu_engine_result(g->engine, i, &reps, &alloc);
            tsim_plan *out = &plans[start + i];
            tsim_plan_reset(out);
            out->slot_limited = true;
            for (int j = 0; j < h->count; j++) {
                int idx = tsim_plan_add(out, reps[j].expert, reps[j].guest, reps[j].slot, reps[j].planned);
                if (idx < 0)
                    return tsim_error_set(err, TSIM_E_INTERNAL, "taot gpu: out of memory growing the plan");
                memcpy(tsim_plan_alloc_row(out, idx), alloc + (size_t)j * (size_t)R, sizeof(int64_t) * (size_t)R);
            }
            out->notes = h->notes;
        }
    }
    return TSIM_OK;
}

bool tsim_taot_gpu_diagnostics(const tsim_taot_gpu *g, int i, struct tsim_taot_gpu_record_out *out)
{
    const tsim_taot_gpu_record_out *h = tsim_taot_gpu_engine_result(g->engine, i, NULL, NULL);
    if (!h)
        return false;
    *out = *h;
    return true;
}

/* ------------------------------------------------------------------------- */
/* Benchmark                                                                  */

static uint64_t bench_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double bench_unit(uint64_t *state)
{
    return (double)(bench_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* A skewed microbatch: 4096 tokens per rank, top-8, experts Zipf-weighted in a
 * random order with one boosted home rank, tokens spread over source ranks
 * with noise. */
static void bench_record(uint64_t *state, tsim_record *rec, double *weight)
{
    const int R = rec->ranks, E = rec->experts, hpr = E / R;
    const double s = 0.6 + 0.8 * bench_unit(state);
    const int hot = (int)(bench_rand(state) % (uint64_t)R);
    double sum = 0.0;
    for (int e = 0; e < E; e++) {
        const int rank_of = (int)(bench_rand(state) % (uint64_t)E);
        weight[e] = 1.0 / pow(1.0 + rank_of, s) * (e / hpr == hot ? 3.0 : 1.0);
        sum += weight[e];
    }
    const double assignments = 4096.0 * 8.0;
    for (int r = 0; r < R; r++)
        for (int e = 0; e < E; e++)
            rec->counts[(size_t)r * (size_t)E + (size_t)e] =
                (int64_t)(assignments * weight[e] / sum * (0.5 + bench_unit(state)));
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(n - 1) / 2];
}

static bool same_plan(const tsim_plan *a, const tsim_plan *b)
{
    return tsim_plan_equal(a, b) && (a->notes & TSIM_NOTE_AUCTION_CAPPED) == (b->notes & TSIM_NOTE_AUCTION_CAPPED);
}

typedef struct {
    int R, E, K;
} bench_shape;

/* Records are generated, planned and checked in chunks of this many (a whole
 * number of launches of 48), so that memory stays bounded for any count. */
#define BENCH_CHUNK (20 * TSIM_TAOT_GPU_DEFAULT_BATCH)

typedef struct {
    tsim_topology topo;
    tsim_record recs[BENCH_CHUNK];
    const tsim_record *ptrs[BENCH_CHUNK];
    tsim_plan cpu[BENCH_CHUNK], gpu[BENCH_CHUNK];
    int n_recs, n_plans;
    double *weight;
    double *single_lat; /* [records] one-record latencies */
    double *batch_lat;  /* [records / 48] per-record time of each full launch */
    tsim_taot_ctx cpu_ctx;
    bool cpu_ready;
    tsim_taot_gpu *single, *batched;
} bench_state;

static void bench_state_free(bench_state *b)
{
    tsim_taot_gpu_free(b->single);
    tsim_taot_gpu_free(b->batched);
    if (b->cpu_ready)
        tsim_taot_free(&b->cpu_ctx);
    for (int i = 0; i < b->n_recs; i++)
        tsim_record_free(&b->recs[i]);
    for (int i = 0; i < b->n_plans; i++) {
        tsim_plan_free(&b->cpu[i]);
        tsim_plan_free(&b->gpu[i]);
    }
    free(b->weight);
    free(b->single_lat);
    free(b->batch_lat);
    tsim_topology_free(&b->topo);
    free(b);
}

static int bench_shape_run(tsim_taot_gpu_bench_row *row, const tsim_planner_common *common,
                           const tsim_taot_options *base, const bench_shape *sh, int records, uint64_t *state,
                           tsim_error *err)
{
    const int R = sh->R, E = sh->E, batch = TSIM_TAOT_GPU_DEFAULT_BATCH;
    bench_state *b = calloc(1, sizeof *b);
    if (!b)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bench: out of memory");
    int rc = tsim_topology_init(&b->topo, R, E, 8, sh->K, NULL, err);
    if (rc) {
        free(b);
        return rc;
    }
    b->weight = calloc((size_t)E, sizeof *b->weight);
    b->single_lat = calloc((size_t)records, sizeof *b->single_lat);
    b->batch_lat = calloc((size_t)(records / batch + 1), sizeof *b->batch_lat);
    if (!b->weight || !b->single_lat || !b->batch_lat) {
        bench_state_free(b);
        return tsim_error_set(err, TSIM_E_INTERNAL, "bench: out of memory");
    }
    const int chunk = records < BENCH_CHUNK ? records : BENCH_CHUNK;
    for (int i = 0; i < chunk; i++) {
        if ((rc = tsim_record_alloc(&b->recs[i], R, E, err))) {
            bench_state_free(b);
            return rc;
        }
        b->n_recs = i + 1;
        b->ptrs[i] = &b->recs[i];
        if ((rc = tsim_plan_init(&b->cpu[i], R, R * sh->K, err)) ||
            (rc = tsim_plan_init(&b->gpu[i], R, R * sh->K, err))) {
            b->n_plans = i + 1;
            bench_state_free(b);
            return rc;
        }
        b->n_plans = i + 1;
    }
    tsim_taot_options opts = *base;
    opts.device = TSIM_DEVICE_CPU;
    if ((rc = tsim_taot_init(&b->cpu_ctx, &b->topo, common, &opts, err))) {
        bench_state_free(b);
        return rc;
    }
    b->cpu_ready = true;
    tsim_taot_gpu_settings set;
    tsim_taot_gpu_settings_default(&set);
    set.max_batch = 1;
    b->single = tsim_taot_gpu_create_ex(&b->topo, common, &opts, &set, err);
    set.max_batch = batch;
    b->batched = b->single ? tsim_taot_gpu_create_ex(&b->topo, common, &opts, &set, err) : NULL;
    if (!b->batched) {
        bench_state_free(b);
        return err ? err->code : TSIM_E_INTERNAL;
    }

    double cpu_total = 0.0;
    long mismatches = 0;
    int n_single = 0, n_batch = 0;
    bool warm = false;
    for (int done = 0; done < records; done += chunk) {
        const int m = records - done < chunk ? records - done : chunk;
        for (int i = 0; i < m; i++) {
            bench_record(state, &b->recs[i], b->weight);
            b->recs[i].index = done + i;
        }
        if (!warm) { /* graph instantiation, first-touch of every buffer */
            for (int i = 0; i < 3 && i < m; i++)
                if ((rc = tsim_taot_gpu_plan_batch(b->single, &b->ptrs[i], 1, &b->gpu[i], err))) {
                    bench_state_free(b);
                    return rc;
                }
            if (m >= batch && (rc = tsim_taot_gpu_plan_batch(b->batched, b->ptrs, batch, b->gpu, err))) {
                bench_state_free(b);
                return rc;
            }
            warm = true;
        }
        /* CPU reference. */
        double t0 = now_us();
        for (int i = 0; i < m; i++) {
            if ((rc = tsim_taot_plan(&b->cpu_ctx, &b->recs[i], &b->cpu[i], err))) {
                bench_state_free(b);
                return rc;
            }
        }
        cpu_total += now_us() - t0;
        /* GPU, one record per launch. */
        for (int i = 0; i < m; i++) {
            t0 = now_us();
            rc = tsim_taot_gpu_plan_batch(b->single, &b->ptrs[i], 1, &b->gpu[i], err);
            b->single_lat[n_single++] = now_us() - t0;
            if (rc) {
                bench_state_free(b);
                return rc;
            }
            if (!same_plan(&b->cpu[i], &b->gpu[i]))
                mismatches++;
        }
        /* GPU, launches of 48 (the chunk's full launches). */
        const int full = m / batch;
        for (int k = 0; k < full; k++) {
            t0 = now_us();
            rc = tsim_taot_gpu_plan_batch(b->batched, b->ptrs + (size_t)k * batch, batch, b->gpu + (size_t)k * batch,
                                          err);
            b->batch_lat[n_batch++] = (now_us() - t0) / batch;
            if (rc) {
                bench_state_free(b);
                return rc;
            }
        }
        for (int i = 0; i < full * batch; i++)
            if (!same_plan(&b->cpu[i], &b->gpu[i]))
                mismatches++;
    }
    double batched_mean = 0.0;
    for (int k = 0; k < n_batch; k++)
        batched_mean += b->batch_lat[k];
    batched_mean = n_batch > 0 ? batched_mean / n_batch : 0.0;
    const double cpu_us = cpu_total / records;
    const double single_us = median(b->single_lat, n_single);
    const double batched_us = median(b->batch_lat, n_batch);

    *row = (tsim_taot_gpu_bench_row){.ranks = R, .experts = E, .slots = sh->K, .records = records, .cpu_us = cpu_us,
                                     .latency_us = single_us, .batched_us = batched_us,
                                     .batched_mean_us = batched_mean, .mismatches = mismatches};
    bench_state_free(b);
    return TSIM_OK;
}

int tsim_taot_gpu_bench(tsim_taot_gpu_bench_result *out, const tsim_planner_common *common,
                        const tsim_taot_options *base, int records, uint64_t seed, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    char why[512];
    if (!tsim_taot_gpu_available(why, sizeof why))
        return tsim_error_set(err, TSIM_E_INPUT, "taot gpu bench: no usable GPU: %s", why);
    if (records <= 0)
        records = 20 * TSIM_TAOT_GPU_DEFAULT_BATCH;
    static const bench_shape shapes[TSIM_TAOT_GPU_BENCH_SHAPES] = {{16, 128, 2}, {32, 128, 2}, {64, 256, 2}};
    uint64_t state = seed;
    out->records = records;
    out->seed = seed;
    for (int i = 0; i < TSIM_TAOT_GPU_BENCH_SHAPES; i++) {
        int rc = bench_shape_run(&out->rows[i], common, base, &shapes[i], records, &state, err);
        if (rc)
            return rc;
        out->n_rows = i + 1;
        out->mismatches += out->rows[i].mismatches;
    }
    if (out->mismatches > 0)
        return tsim_error_set(err, TSIM_E_CHECK, "taot gpu bench: %ld GPU plans differ from the CPU reference",
                              out->mismatches);
    return TSIM_OK;
}
