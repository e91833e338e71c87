/* Deliberately broken built-in planners, each breaking one property that
 * test_every_planner checks: linked into that test program only and never
 * registered (so no suite that iterates the registry meets them); the test
 * hands them to the property check and expects it to fail. */
#include "invalid_planners.h"

#include <stdlib.h>

typedef struct {
    const tsim_topology *topo;
    int64_t calls; /* plan calls of this instance */
} invalid_state;

static int invalid_init(void **state, const tsim_topology *topo, const tsim_planner_options *opts, tsim_error *err)
{
    (void)opts;
    invalid_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    s->topo = topo;
    *state = s;
    return TSIM_OK;
}

static void invalid_free(void *state)
{
    free(state);
}

/* A valid replica: expert 0 on the rank after its home, slot 0, source 0
 * sending it half of its expert-0 tokens; nothing where K = 0 or R = 1. */
static void valid_replica(const invalid_state *s, const tsim_record *rec, tsim_plan *out, int64_t planned)
{
    const tsim_topology *t = s->topo;
    if (t->slots == 0 || t->ranks < 2)
        return;
    int i = tsim_plan_add(out, 0, (t->home[0] + 1) % t->ranks, 0, planned);
    if (i >= 0)
        tsim_plan_alloc_row(out, i)[0] = rec->counts[0] / 2;
}

/* Breaks the model: a replica of expert 0 on its own home rank. */
static int home_replica_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    (void)err;
    invalid_state *s = state;
    tsim_plan_reset(out);
    int i = tsim_plan_add(out, 0, s->topo->home[0], 0, rec->counts[0]);
    if (i >= 0)
        tsim_plan_alloc_row(out, i)[0] = rec->counts[0];
    return TSIM_OK;
}

const tsim_planner_desc tsim_invalid_home_replica = {
    .name = "invalid-home-replica",
    .summary = "a replica on its expert's home rank",
    .init = invalid_init,
    .plan = home_replica_plan,
    .free = invalid_free,
};

/* Refuses every shape: the property suite must not count that as a pass. */
static int refuse_init(void **state, const tsim_topology *topo, const tsim_planner_options *opts, tsim_error *err)
{
    (void)state;
    (void)topo;
    (void)opts;
    return tsim_error_set(err, TSIM_E_INPUT, "this planner takes no shape at all");
}

const tsim_planner_desc tsim_invalid_refuses_all = {
    .name = "invalid-refuses-all",
    .summary = "refuses every topology",
    .init = refuse_init,
    .plan = home_replica_plan,
    .free = invalid_free,
};

/* Valid plans, but the planned count comes from a counter shared by every
 * instance: the same records planned twice give different plans. */
static int64_t shared_calls;

static int nondeterministic_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    (void)err;
    tsim_plan_reset(out);
    valid_replica(state, rec, out, __atomic_add_fetch(&shared_calls, 1, __ATOMIC_RELAXED));
    return TSIM_OK;
}

const tsim_planner_desc tsim_invalid_nondeterministic = {
    .name = "invalid-nondeterministic",
    .summary = "plans depend on earlier runs",
    .init = invalid_init,
    .plan = nondeterministic_plan,
    .free = invalid_free,
};

/* Valid, deterministic plans that depend on how many records this instance
 * planned before, while the descriptor declares no memory (no prime): -j and
 * shards, which split records between instances, change its metrics. */
static int hidden_state_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    (void)err;
    invalid_state *s = state;
    tsim_plan_reset(out);
    if (s->calls++ % 2 == 1)
        valid_replica(s, rec, out, 0);
    return TSIM_OK;
}

const tsim_planner_desc tsim_invalid_hidden_state = {
    .name = "invalid-hidden-state",
    .summary = "keeps undeclared state across records",
    .init = invalid_init,
    .plan = hidden_state_plan,
    .free = invalid_free,
};
