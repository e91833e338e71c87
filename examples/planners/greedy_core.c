#include "greedy_core.h"

greedy_result greedy_plan(int ranks, int experts, int slots, const int32_t *home, const int64_t *counts,
                          int64_t divisor, int64_t *scratch, int64_t *alloc)
{
    greedy_result out = {0, -1, -1, 0};
    int64_t *load = scratch, *per_expert = scratch + ranks;
    for (int r = 0; r < ranks; r++)
        load[r] = 0;
    for (int e = 0; e < experts; e++) {
        per_expert[e] = 0;
        for (int r = 0; r < ranks; r++)
            per_expert[e] += counts[(long)r * experts + e];
        load[home[e]] += per_expert[e];
    }
    int hot = 0, cold = 0;
    for (int r = 1; r < ranks; r++) {
        if (load[r] > load[hot])
            hot = r;
        if (load[r] < load[cold])
            cold = r;
    }
    if (slots < 1 || load[hot] == load[cold])
        return out;
    int expert = -1;
    for (int e = 0; e < experts; e++)
        if (home[e] == hot && (expert < 0 || per_expert[e] > per_expert[expert]))
            expert = e;
    for (int r = 0; r < ranks; r++) {
        alloc[r] = counts[(long)r * experts + expert] / divisor;
        out.planned += alloc[r];
    }
    if (out.planned > 0) {
        out.replicas = 1;
        out.expert = expert;
        out.guest = cold;
    }
    return out;
}
