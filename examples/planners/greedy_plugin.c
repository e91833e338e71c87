/* greedy.c as a taotsim plugin (include/taotsim/planner.h):
 *     taotsim replay TRACE --planners g=plugin:./libgreedy_plugin.so [--g-divisor=3]
 * The same algorithm (greedy_core.c) without the pipe: taotsim calls plan()
 * directly, so its plan time compares with the built-in planners'. */
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "greedy_core.h"
#include "taotsim/planner.h"

typedef struct {
    int divisor;
} greedy_options;

typedef struct {
    taotsim_topology topo;
    int64_t divisor;
    int64_t *scratch; /* R + E */
    int64_t *alloc;   /* R */
} greedy_state;

static const taotsim_option greedy_option_table[] = {
    {.name = "divisor", .type = TAOTSIM_OPTION_INT, .offset = offsetof(greedy_options, divisor), .lo = 1,
     .hi = 1000000, .def = "2", .help = "each source sends floor(tokens / divisor) to the replica"},
    {0},
};

static int greedy_init(void **state, const taotsim_topology *topo, const void *options, char *error, size_t n)
{
    const greedy_options *o = options;
    greedy_state *s = calloc(1, sizeof *s);
    if (s) {
        s->scratch = malloc(sizeof *s->scratch * (size_t)(topo->ranks + topo->experts));
        s->alloc = malloc(sizeof *s->alloc * (size_t)topo->ranks);
    }
    if (!s || !s->scratch || !s->alloc) {
        if (s) {
            free(s->scratch);
            free(s->alloc);
        }
        free(s);
        strncpy(error, "out of memory", n - 1);
        error[n - 1] = '\0';
        return 1;
    }
    s->topo = *topo;
    s->divisor = o->divisor;
    *state = s;
    return 0;
}

static int greedy_plan_record(void *state, const taotsim_record *rec, taotsim_plan *plan, char *error, size_t n)
{
    greedy_state *s = state;
    greedy_result g = greedy_plan(rec->ranks, rec->experts, s->topo.slots, s->topo.home, rec->counts, s->divisor,
                                  s->scratch, s->alloc);
    if (!g.replicas)
        return 0;
    int i = taotsim_plan_add(plan, g.expert, g.guest, 0, g.planned);
    if (i < 0) {
        strncpy(error, "no room for a replica", n - 1);
        error[n - 1] = '\0';
        return 1;
    }
    memcpy(plan->alloc + (size_t)i * (size_t)plan->ranks, s->alloc, sizeof *s->alloc * (size_t)rec->ranks);
    return 0;
}

static void greedy_free(void *state)
{
    greedy_state *s = state;
    free(s->scratch);
    free(s->alloc);
    free(s);
}

static const taotsim_planner_descriptor greedy_descriptor = {
    .abi_version = TAOTSIM_PLANNER_ABI_VERSION,
    .descriptor_size = sizeof(taotsim_planner_descriptor),
    .name = "greedy",
    .summary = "copy the hottest expert of the hottest rank to the coldest rank",
    .options = greedy_option_table,
    .options_size = sizeof(greedy_options),
    .init = greedy_init,
    .plan = greedy_plan_record,
    .free = greedy_free,
};

const taotsim_planner_descriptor *taotsim_planner_entry(void)
{
    return &greedy_descriptor;
}
