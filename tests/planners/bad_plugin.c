/* Plugins that break include/taotsim/planner.h one way each, built once per
 * case with -DBAD_<CASE> (meson.build), for the loader's checks; BAD_BATCH is
 * a valid plugin that plans (empty plans) in batches of 4. RANKS, CAPACITY
 * and REPLICAS overwrite plan fields only taotsim may set; EXIT, EXIT_AT_LOAD
 * and CRASH end the process from inside the plugin. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "taotsim/planner.h"

#if defined(BAD_HUGE_BATCH)
#define BATCH_CHECKED 0
#else
#define BATCH_CHECKED 1
#endif

typedef struct {
    int level;
} bad_options;

static const taotsim_option bad_option_table[] = {
#if defined(BAD_OFFSET)
    {.name = "level", .type = TAOTSIM_OPTION_INT, .offset = 4096, .lo = 0, .hi = 9, .def = "1", .help = "a level"},
#elif defined(BAD_DEFAULT)
    {.name = "level", .type = TAOTSIM_OPTION_INT, .offset = 0, .lo = 0, .hi = 9, .def = "abc", .help = "a level"},
#else
    {.name = "level", .type = TAOTSIM_OPTION_INT, .offset = 0, .lo = 0, .hi = 9, .def = "1", .help = "a level"},
#endif
    {0},
};

static int bad_init(void **state, const taotsim_topology *topo, const void *options, char *error, size_t n)
{
    (void)options;
#if defined(BAD_DECLINE)
    snprintf(error, n, "this plugin needs at least 8 ranks, got %d", (int)topo->ranks);
    (void)state;
    return 1;
#else
    (void)error;
    (void)n;
    *state = (void *)topo;
    return 0;
#endif
}

#if defined(BAD_NO_PLAN)
__attribute__((unused))
#endif
static int bad_plan(void *state, const taotsim_record *rec, taotsim_plan *plan, char *error, size_t n)
{
    (void)state;
#if defined(BAD_FAIL)
    if (rec->index == 2) {
        snprintf(error, n, "cannot plan layer %lld", (long long)rec->layer);
        return 1;
    }
#elif defined(BAD_INVALID)
    int i = taotsim_plan_add(plan, 0, 0, 0, 1); /* expert 0 on its own home rank 0 */
    plan->alloc[(size_t)i * (size_t)plan->ranks + 1] = rec->counts[rec->experts] > 0 ? 1 : 0;
#elif defined(BAD_OVERFULL)
    plan->count = plan->capacity + 1;
#elif defined(BAD_RANKS) /* the fields only taotsim sets, overwritten */
    plan->ranks = 1 << 20;
    plan->count = 1;
#elif defined(BAD_CAPACITY)
    plan->capacity = 1 << 20;
    plan->count = 1 << 19;
#elif defined(BAD_REPLICAS)
    static taotsim_replica elsewhere[2];
    plan->replicas = elsewhere;
    plan->count = 1;
#elif defined(BAD_EXIT)
    if (rec->index == 1)
        exit(0);
#elif defined(BAD_CRASH)
    if (rec->index == 1)
        abort();
#endif
    (void)rec;
    (void)plan;
    (void)error;
    (void)n;
    return 0;
}

#if defined(BAD_BATCH) || defined(BAD_HUGE_BATCH)
static int bad_plan_batch(void *state, const taotsim_record *const *recs, int n, taotsim_plan *plans, char *error,
                          size_t size)
{
    if (n > 4 && BATCH_CHECKED) {
        snprintf(error, size, "got a batch of %d records, asked for 4", n);
        return 1;
    }
    for (int k = 0; k < n; k++)
        if (bad_plan(state, recs[k], &plans[k], error, size))
            return 1;
    return 0;
}
#endif

#if defined(BAD_EXIT_AT_LOAD)
/* exit() while taotsim loads the library */
__attribute__((constructor)) static void bad_constructor(void)
{
    exit(0);
}
#endif

static void bad_free(void *state)
{
    (void)state;
}

static const taotsim_planner_descriptor descriptor = {
#if defined(BAD_ABI)
    .abi_version = 99,
#else
    .abi_version = TAOTSIM_PLANNER_ABI_VERSION,
#endif
#if defined(BAD_SIZE)
    .descriptor_size = sizeof(taotsim_planner_descriptor) - 8,
#else
    .descriptor_size = sizeof(taotsim_planner_descriptor),
#endif
    .name = "bad",
    .summary = "a plugin for the loader's tests",
    .options = bad_option_table,
    .options_size = sizeof(bad_options),
    .init = bad_init,
#if defined(BAD_NO_PLAN)
    .plan = NULL,
#else
    .plan = bad_plan,
#endif
#if defined(BAD_BATCH)
    .batch = 4,
    .plan_batch = bad_plan_batch,
#elif defined(BAD_HUGE_BATCH)
    .batch = INT32_MAX,
    .plan_batch = bad_plan_batch,
#endif
    .free = bad_free,
};

#if defined(BAD_NO_ENTRY)
const taotsim_planner_descriptor *taotsim_planner_entry_misspelt(void)
#else
const taotsim_planner_descriptor *taotsim_planner_entry(void)
#endif
{
#if defined(BAD_NULL)
    return descriptor.name ? NULL : &descriptor; /* always NULL; keeps the descriptor used */
#else
    return &descriptor;
#endif
}
