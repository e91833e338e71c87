#include "topology.h"

#include <stdlib.h>
#include <string.h>

int tsim_topology_init(tsim_topology *t, int ranks, int experts, int ranks_per_node, int slots,
                       const int32_t *home, tsim_error *err)
{
    memset(t, 0, sizeof *t);
    if (ranks < 1 || ranks > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "ep %d is out of range 1..%d", ranks, TSIM_MAX_RANKS);
    if (experts < 1 || experts > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "experts %d is out of range 1..%d", experts,
                              TSIM_MAX_EXPERTS);
    if (experts % ranks != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "experts %d is not divisible by ep %d", experts, ranks);
    if ((int64_t)ranks * experts > TSIM_MAX_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "ep %d x experts %d is %lld counts per record, above the limit of %lld (2^24)", ranks,
                              experts, (long long)ranks * experts, (long long)TSIM_MAX_CELLS);
    if (ranks_per_node < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "ranks per node must be at least 1, got %d",
                              ranks_per_node);
    if (slots < 0 || slots > 1024)
        return tsim_error_set(err, TSIM_E_INPUT, "slots %d is out of range 0..1024", slots);
    if ((int64_t)ranks * ranks * (slots > 0 ? slots : 1) > TSIM_MAX_PLAN_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "ep %d with %d guest slots per rank makes plans of %lld token counts, above the limit "
                              "of %lld (2^26): use fewer slots",
                              ranks, slots, (long long)ranks * ranks * (slots > 0 ? slots : 1),
                              (long long)TSIM_MAX_PLAN_CELLS);

    t->ranks = ranks;
    t->experts = experts;
    t->ranks_per_node = ranks_per_node;
    t->slots = slots;
    t->experts_per_rank = experts / ranks;
    t->home = malloc(sizeof *t->home * (size_t)experts);
    t->rank_experts = malloc(sizeof *t->rank_experts * (size_t)experts);
    int *fill = calloc((size_t)ranks, sizeof *fill);
    if (!t->home || !t->rank_experts || !fill) {
        free(fill);
        tsim_topology_free(t);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    for (int e = 0; e < experts; e++) {
        int r = home ? home[e] : e / t->experts_per_rank;
        if (r < 0 || r >= ranks) {
            free(fill);
            tsim_topology_free(t);
            return tsim_error_set(err, TSIM_E_INPUT, "home[%d] = %d is not a rank in 0..%d", e, r,
                                  ranks - 1);
        }
        if (fill[r] == t->experts_per_rank) {
            free(fill);
            tsim_topology_free(t);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "home gives rank %d more than %d experts (every rank needs experts/ep)",
                                  r, t->experts_per_rank);
        }
        t->home[e] = r;
        t->rank_experts[(size_t)r * (size_t)t->experts_per_rank + (size_t)fill[r]++] = e;
    }
    free(fill);
    return TSIM_OK;
}

void tsim_topology_free(tsim_topology *t)
{
    free(t->home);
    free(t->rank_experts);
    t->home = NULL;
    t->rank_experts = NULL;
}
