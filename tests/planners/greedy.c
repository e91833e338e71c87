/* `greedy`, a test-only planner: the algorithm of examples/planners
 * (hottest expert of the hottest rank to slot 0 of the coldest rank, each
 * source sending half its tokens; ties to the lowest index) written a second
 * time on taotsim's own types, as a built-in planner. It is registered the
 * way every built-in is, by its own file plus one line in a registry list,
 * here the test-only list of test_registry.c, so the test programs know it
 * and the taotsim binary does not. The tests compare it with the example's
 * plugin and exec programs. */
#include <stdlib.h>

#include "planner.h"

typedef struct {
    const tsim_topology *topo;
    int64_t *tokens_per_expert; /* [E] */
    int64_t *native_load;       /* [R] */
} greedy_state;

static int greedy_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                       tsim_error *err)
{
    (void)common;
    (void)own;
    greedy_state *g = calloc(1, sizeof *g);
    if (g) {
        g->tokens_per_expert = malloc(sizeof *g->tokens_per_expert * (size_t)topo->experts);
        g->native_load = malloc(sizeof *g->native_load * (size_t)topo->ranks);
    }
    if (!g || !g->tokens_per_expert || !g->native_load) {
        if (g) {
            free(g->tokens_per_expert);
            free(g->native_load);
        }
        free(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    g->topo = topo;
    *state = g;
    return TSIM_OK;
}

static int greedy_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    greedy_state *g = state;
    const tsim_topology *t = g->topo;
    tsim_plan_reset(out);
    tsim_record_expert_totals(rec, g->tokens_per_expert);
    for (int r = 0; r < t->ranks; r++)
        g->native_load[r] = 0;
    for (int e = 0; e < t->experts; e++)
        g->native_load[t->home[e]] += g->tokens_per_expert[e];
    int hottest = 0, coldest = 0;
    for (int r = 0; r < t->ranks; r++) {
        hottest = g->native_load[r] > g->native_load[hottest] ? r : hottest;
        coldest = g->native_load[r] < g->native_load[coldest] ? r : coldest;
    }
    if (t->slots == 0 || g->native_load[hottest] == g->native_load[coldest])
        return TSIM_OK;
    int chosen = -1;
    for (int e = 0; e < t->experts; e++)
        if (t->home[e] == hottest && (chosen < 0 || g->tokens_per_expert[e] > g->tokens_per_expert[chosen]))
            chosen = e;
    int64_t moved = 0;
    for (int r = 0; r < t->ranks; r++)
        moved += tsim_count(rec, r, chosen) / 2;
    if (moved == 0)
        return TSIM_OK;
    int replica = tsim_plan_add(out, chosen, coldest, 0, moved);
    if (replica < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int64_t *row = tsim_plan_alloc_row(out, replica);
    for (int r = 0; r < t->ranks; r++)
        row[r] = tsim_count(rec, r, chosen) / 2;
    return TSIM_OK;
}

static void greedy_free(void *state)
{
    greedy_state *g = state;
    free(g->tokens_per_expert);
    free(g->native_load);
    free(g);
}

const tsim_planner_desc tsim_planner_greedy = {
    .name = "greedy",
    .source = "a test planner (tests/planners/greedy.c)",
    .summary = "test only: hottest expert of the hottest rank to the coldest rank, half the tokens",
    .init = greedy_init,
    .plan = greedy_plan,
    .free = greedy_free,
};
