#include "taot_planner.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taot.h"
#include "taot_gpu.h"

/* Records per GPU launch when a caller hands the planner a batch. */
#define TAOT_GPU_MAX_BATCH 64

typedef struct {
    tsim_taot_ctx cpu;  /* always set up: the reference and the fallback */
    tsim_taot_gpu *gpu; /* NULL on the CPU device or after a fallback */
    bool fell_back;     /* the GPU was asked for and the CPU runs instead */
    char why[256];
} taot_state;

static int taot_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                     tsim_error *err)
{
    const tsim_taot_options *opts = own;
    taot_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "taot: out of memory");
    int rc = tsim_taot_init(&s->cpu, topo, common, opts, err);
    if (rc) {
        free(s);
        return rc;
    }
    /* No CUDA in the build, no usable device, or a shape beyond the kernels'
     * limits: the CPU reference plans, and every plan says so. */
    if (opts->device == TSIM_DEVICE_GPU) {
        tsim_error gpu_err = {0};
        s->gpu = tsim_taot_gpu_create(topo, common, opts, TAOT_GPU_MAX_BATCH, &gpu_err);
        if (!s->gpu) {
            s->fell_back = true;
            snprintf(s->why, sizeof s->why, "%s", gpu_err.msg);
        }
    }
    *state = s;
    return TSIM_OK;
}

/* The device failed mid-run: drop it; the CPU plans this record and every later one. */
static void drop_gpu(taot_state *s, const tsim_error *gpu_err)
{
    tsim_taot_gpu_free(s->gpu);
    s->gpu = NULL;
    s->fell_back = true;
    snprintf(s->why, sizeof s->why, "%s", gpu_err->msg);
}

static int plan_on_cpu(taot_state *s, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    int rc = tsim_taot_plan(&s->cpu, rec, out, err);
    if (rc == TSIM_OK && s->fell_back)
        out->notes |= TSIM_NOTE_GPU_FALLBACK;
    return rc;
}

static int taot_plan_batch(void *state, const tsim_record *const *recs, int n, tsim_plan *plans, tsim_error *err)
{
    taot_state *s = state;
    if (s->gpu) {
        tsim_error gpu_err = {0};
        if (tsim_taot_gpu_plan_batch(s->gpu, recs, n, plans, &gpu_err) == TSIM_OK)
            return TSIM_OK;
        drop_gpu(s, &gpu_err);
    }
    for (int i = 0; i < n; i++) {
        int rc = plan_on_cpu(s, recs[i], &plans[i], err);
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

static int taot_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return taot_plan_batch(state, &rec, 1, out, err);
}

static void taot_free(void *state)
{
    taot_state *s = state;
    if (!s)
        return;
    tsim_taot_gpu_free(s->gpu);
    tsim_taot_free(&s->cpu);
    free(s);
}

bool tsim_taot_planner_gpu_available(char *why, size_t n)
{
    return tsim_taot_gpu_available(why, n) != 0;
}

int tsim_taot_planner_gpu_bench(tsim_taot_gpu_bench_result *out, const tsim_planner_common *common,
                                const tsim_taot_options *base, int records, uint64_t seed, tsim_error *err)
{
    return tsim_taot_gpu_bench(out, common, base, records, seed, err);
}

bool tsim_taot_gpu_fell_back(const void *state, char *why, size_t n)
{
    const taot_state *s = state;
    if (why && n)
        snprintf(why, n, "%s", s->fell_back ? s->why : "");
    return s->fell_back;
}

/* --taot-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec taot_options[] = {
    {.name = "taot-phase3", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_taot_options, phase3), .choices = "auction|split", .arg = "auction|split", .def = "auction", .help = "TAOT token assignment"},
    {.name = "taot-no-flow-hint", .type = TSIM_OPTION_CLEAR, .offset = offsetof(tsim_taot_options, flow_hint), .help = "drop the Phase-1 Sinkhorn term from the score"},
    {.name = "taot-no-comm-cost", .type = TSIM_OPTION_CLEAR, .offset = offsetof(tsim_taot_options, comm_cost), .help = "drop the Phase-2 topology term from the score"},
    {.name = "taot-iters", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_taot_options, iters), .lo = 0, .hi = 100000, .arg = "N", .def = "50", .help = "Sinkhorn rounds"},
    {.name = "taot-self-bonus", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_taot_options, self_bonus), .lo = -1000000.0, .hi = 1000000.0, .arg = "X", .def = "0", .help = "auction bonus for the guest's own tokens"},
    {.name = "taot-auction-rounds", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_taot_options, auction_rounds), .lo = 1, .hi = 100000000, .arg = "N", .def = "300", .help = "auction round cap"},
    {.name = "taot-device", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_taot_options, device), .choices = "cpu|gpu", .arg = "cpu|gpu", .def = "cpu", .help = "where TAOT runs (default cpu; gpu falls back to cpu)", .not_recorded = true},
    {0},
};

const tsim_planner_desc tsim_planner_taot = {
    .name = "taot",
    .source = "TAOT, Topology-Aware Optimal Transport, arXiv 2608.03676",
    .options = taot_options,
    .options_size = sizeof(tsim_taot_options),
    .reads_lambda_plan = true,
    .summary = "TAOT: Sinkhorn flow hint, column-first matching, auction or split token assignment",
    .init = taot_init,
    .plan = taot_plan,
    .plan_batch = taot_plan_batch,
    .free = taot_free,
    .fell_back = tsim_taot_gpu_fell_back,
};
