#include "gpu_fixture.h"
#include "test_options.h"
#include "registry.h"

#include <stdint.h>
#include <stdio.h>

#include "taot.h"

tsim_gpu_config tsim_gpu_combo(int i, double lambda, double self_bonus, int iters, int rounds)
{
    tsim_gpu_config c = {i & 1 ? TSIM_TAOT_SPLIT : TSIM_TAOT_AUCTION, !(i & 2), !(i & 4), lambda, self_bonus, iters,
                         rounds};
    return c;
}

void tsim_gpu_config_options(const tsim_gpu_config *c, tsim_planner_options *o)
{
    tsim_planner_options_default(o);
    o->common.lambda_plan = c->lambda;
    TSIM_OPTS(*o, taot)->phase3 = c->phase3;
    TSIM_OPTS(*o, taot)->flow_hint = c->flow_hint;
    TSIM_OPTS(*o, taot)->comm_cost = c->comm_cost;
    TSIM_OPTS(*o, taot)->self_bonus = c->self_bonus;
    TSIM_OPTS(*o, taot)->iters = c->iters;
    TSIM_OPTS(*o, taot)->auction_rounds = c->rounds;
    TSIM_OPTS(*o, taot)->device = TSIM_DEVICE_CPU;
}

void tsim_gpu_config_name(const tsim_gpu_config *c, const tsim_topology *t, char *buf, size_t n)
{
    snprintf(buf, n, "R=%d E=%d K=%d rpn=%d %s%s%s lambda=%g self_bonus=%g iters=%d rounds=%d", t->ranks,
             t->experts, t->slots, t->ranks_per_node, c->phase3 == TSIM_TAOT_SPLIT ? "split" : "auction",
             c->flow_hint ? "" : " no-flow-hint", c->comm_cost ? "" : " no-comm-cost", c->lambda, c->self_bonus,
             c->iters, c->rounds);
}

bool tsim_gpu_plans_differ(const tsim_plan *cpu, const tsim_plan *gpu, char *msg, size_t n)
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
