/* `none`: static expert parallelism (plain Megatron-LM EP): no replicas. */
#include <stdlib.h>

#include "planner.h"

static int none_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                     tsim_error *err)
{
    (void)topo;
    (void)common;
    (void)own;
    (void)err;
    *state = NULL;
    return TSIM_OK;
}

static int none_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    (void)state;
    (void)rec;
    (void)err;
    tsim_plan_reset(out);
    out->slot_limited = true;
    return TSIM_OK;
}

static void none_free(void *state)
{
    (void)state;
}

const tsim_planner_desc tsim_planner_none = {
    .name = "none",
    .source = "Megatron-LM expert parallelism (no replicas)",
    .summary = "static expert parallelism: every token at its expert's home rank",
    .init = none_init,
    .plan = none_plan,
    .free = none_free,
};
