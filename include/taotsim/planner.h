/* taotsim planner plugins: the ABI between taotsim and a planner built as a
 * shared library (docs/planner-protocol.md).
 *
 * A plugin exports one function, taotsim_planner_entry, returning its
 * descriptor. taotsim loads the library with
 *     --planners LABEL=plugin:./libmine.so
 * checks abi_version and descriptor_size before it reads anything else, then
 * the descriptor (name, functions, option table), and runs the planner like a
 * built-in one: same option handling (--LABEL-KEY=VALUE), same batching, and
 * every plan through the same evaluator. Self-contained: no other taotsim
 * header is needed, and every type here has a fixed layout for this ABI
 * version. */
#ifndef TAOTSIM_PLANNER_H
#define TAOTSIM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a layout or a meaning below changes. */
#define TAOTSIM_PLANNER_ABI_VERSION 1u

/* The one symbol a plugin exports. */
#define TAOTSIM_PLANNER_ENTRY "taotsim_planner_entry"

/* The machine the plans are for (docs/model.md, "The machine"). */
typedef struct {
    int32_t ranks;          /* R */
    int32_t experts;        /* E; R divides E */
    int32_t ranks_per_node; /* node(r) = r / ranks_per_node */
    int32_t slots;          /* K: guest slots per rank */
    const int32_t *home;    /* [E]: the rank that owns each expert */
    double lambda_plan;     /* the cross-node cost a topology-aware planner believes */
} taotsim_topology;

/* One microbatch of one MoE layer. */
typedef struct {
    int64_t index;          /* position in the trace, from 0 */
    int64_t microbatch;
    int64_t layer;
    int32_t ranks, experts;
    const int64_t *counts;  /* [R * E]: counts[r * E + e], tokens source rank r routes to expert e */
} taotsim_record;

typedef struct {
    int32_t expert;
    int32_t guest;          /* the rank hosting the replica, never home(expert) */
    int32_t slot;           /* 0 .. K-1 */
    int64_t planned;        /* the planner's intended token count (informational) */
} taotsim_replica;

/* The plan a planner fills (docs/model.md, "A plan"). taotsim sets every field
 * before each call (count and has_placement to 0); the planner lists its
 * replicas in replicas[0..count) and, for each, R token counts in its alloc
 * row (taotsim_plan_add zeroes the row). capacity is R * K, as many replicas
 * as any valid plan holds. The planner writes count, has_placement and the
 * rows only: ranks, capacity and the pointers are taotsim's, and a plan
 * whose planner changed one is refused. */
typedef struct {
    int32_t ranks;              /* R: the width of an alloc row */
    int32_t capacity;           /* rows in replicas and alloc */
    int32_t count;              /* rows in use */
    int32_t has_placement;      /* 1: placement[] holds home'(e) (docs/model.md); 0: the static map */
    taotsim_replica *replicas;  /* [capacity] */
    int64_t *alloc;             /* [capacity * ranks]: alloc[i * ranks + r] = tokens source r sends to replica i */
    int32_t *placement;         /* [experts] */
} taotsim_plan;

/* Appends a replica with a zeroed alloc row; its index, or -1 when full. */
static inline int taotsim_plan_add(taotsim_plan *plan, int32_t expert, int32_t guest, int32_t slot, int64_t planned)
{
    if (plan->count >= plan->capacity)
        return -1;
    int i = plan->count++;
    plan->replicas[i].expert = expert;
    plan->replicas[i].guest = guest;
    plan->replicas[i].slot = slot;
    plan->replicas[i].planned = planned;
    int64_t *row = plan->alloc + (size_t)i * (size_t)plan->ranks;
    for (int32_t r = 0; r < plan->ranks; r++)
        row[r] = 0;
    return i;
}

/* Option types. The value lives at `offset` in the planner's own options
 * block (options_size bytes, defaults applied before any command-line
 * value). */
enum {
    TAOTSIM_OPTION_DOUBLE = 1, /* double in [lo, hi] */
    TAOTSIM_OPTION_INT = 2,    /* int in [lo, hi] */
    TAOTSIM_OPTION_INT64 = 3,  /* int64_t in [lo, hi] */
    TAOTSIM_OPTION_CHOICE = 4, /* int: the index of the value in choices ("even|half") */
    TAOTSIM_OPTION_STRING = 5, /* char[size] */
};

typedef struct {
    const char *name;    /* KEY: given as --LABEL-KEY=VALUE; NULL ends the table */
    int32_t type;        /* TAOTSIM_OPTION_* */
    size_t offset;       /* into the options block */
    size_t size;         /* TAOTSIM_OPTION_STRING: the buffer's size */
    double lo, hi;       /* numbers: the accepted range */
    const char *choices; /* TAOTSIM_OPTION_CHOICE: values separated by '|' */
    const char *def;     /* the default, as typed on the command line (required) */
    const char *help;    /* one line */
} taotsim_option;

/* Functions return 0 on success; anything else is a failure described in
 * error[0..error_size) (a NUL-terminated line). A failing init means the
 * planner declines this topology; a failing plan ends the run (exit 2). */
typedef struct taotsim_planner_descriptor {
    uint32_t abi_version;          /* TAOTSIM_PLANNER_ABI_VERSION */
    uint32_t descriptor_size;      /* sizeof(taotsim_planner_descriptor) */
    const char *name;              /* e.g. "greedy" */
    const char *summary;           /* one line */
    const taotsim_option *options; /* NULL-name terminated, or NULL */
    size_t options_size;           /* bytes of the options block (0 without options) */
    int32_t batch;                 /* records wanted per plan_batch call (at most 4096); <= 1: one at a time */
    /* Allocates the state and all scratch memory for this topology. options
     * points at the filled options block (NULL when options_size is 0); both
     * it and topo (home included) stay valid until free. */
    int (*init)(void **state, const taotsim_topology *topo, const void *options, char *error, size_t error_size);
    /* Plans one record into plan. */
    int (*plan)(void *state, const taotsim_record *rec, taotsim_plan *plan, char *error, size_t error_size);
    /* Optional (NULL): plans n records into plans[0..n-1], identical to n
     * calls of plan. Used when batch > 1. */
    int (*plan_batch)(void *state, const taotsim_record *const *recs, int n, taotsim_plan *plans, char *error,
                      size_t error_size);
    void (*free)(void *state);
} taotsim_planner_descriptor;

typedef const taotsim_planner_descriptor *(*taotsim_planner_entry_fn)(void);

/* What the plugin defines (with default visibility). */
const taotsim_planner_descriptor *taotsim_planner_entry(void);

#ifdef __cplusplus
}
#endif

#endif
