/* The plan every planner returns (model.md "A plan"). */
#ifndef TSIM_PLAN_H
#define TSIM_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef struct {
    int32_t expert;
    int32_t guest;   /* rank hosting the replica; never home(expert) */
    int32_t slot;    /* guest slot 0..K-1 (LLEP: order the guest received it) */
    int64_t planned; /* planner's intended token count (informational) */
} tsim_replica;

/* Things a planner wants reported about a record (counted by replay). */
enum {
    TSIM_NOTE_AUCTION_CAPPED = 1u << 0, /* TAOT auction round cap cut service short */
    TSIM_NOTE_IPM_FALLBACK = 1u << 1,   /* LPLB ipm fell back to x = 0.5 in some group */
    TSIM_NOTE_THRESHOLD_SKIP = 1u << 2, /* LLEP activation threshold not reached */
    TSIM_NOTE_GPU_FALLBACK = 1u << 3,   /* GPU planner ran on the CPU */
    TSIM_NOTE_NODE_LIMIT = 1u << 4,     /* optimal: the node budget (--optimal-node-limit) cut the MIP search short */
};

/* How a budgeted search ended (tsim_plan.search). */
enum {
    TSIM_SEARCH_NONE = 0,         /* not a search: every planner but optimal */
    TSIM_SEARCH_PROVED = 1,       /* the plan is proven optimal */
    TSIM_SEARCH_STOPPED = 2,      /* the budget stopped it; the plan is the incumbent, search_gap set */
    TSIM_SEARCH_NO_INCUMBENT = 3, /* the budget stopped it before any solution; the plan is a fallback */
};

typedef struct {
    int ranks;          /* R: width of an alloc row */
    int count;          /* replicas in use */
    int capacity;       /* replicas allocated */
    bool slot_limited;  /* false for LLEP: the K bound does not apply */
    uint32_t notes;     /* TSIM_NOTE_* bits for this record */
    /* A planner that searches under a work budget (optimal) says how the
     * search ended (TSIM_SEARCH_*) and, when stopped with an incumbent, the
     * gap: its objective minus the proven lower bound (>= 0). Reset to none. */
    uint8_t search;
    double search_gap;
    tsim_replica *replicas;
    int64_t *alloc;     /* [capacity * ranks]: alloc[i * ranks + r] = tokens source r sends to replica i */
    /* Optional placement (eplb.md 1.1): home'(e) for placement_experts experts;
     * 0 = none, the static map. Replicas and kept tokens are then relative to
     * home'. The array is allocated on first use and kept across resets. */
    int placement_experts;
    int placement_cap;
    int32_t *placement;
    /* Optional layout (production-balancers.md 1.1) for planners whose plans
     * are layouts (eplb, trtllm, swift): the expert at each of the R * S
     * physical positions in force for this record; 0 = none. Kept across
     * resets like the placement; read by --export-layout, never scored. */
    int layout_positions;
    int layout_cap;
    int32_t *layout;
} tsim_plan;

int tsim_plan_init(tsim_plan *p, int ranks, int capacity, tsim_error *err);
void tsim_plan_free(tsim_plan *p);

/* Empties the plan for the next record (keeps the memory); no placement. */
void tsim_plan_reset(tsim_plan *p);

/* Gives the plan a placement of E experts and returns it for the planner to
 * fill with home'(e) (contents undefined until then). Allocates only when E
 * outgrows the array. NULL when out of memory. */
int32_t *tsim_plan_placement(tsim_plan *p, int experts);

/* Gives the plan a layout of n physical positions and returns it for the
 * planner to fill (allocates only when n outgrows the array); NULL when out
 * of memory. */
int32_t *tsim_plan_layout(tsim_plan *p, int positions);

static inline bool tsim_plan_has_placement(const tsim_plan *p)
{
    return p->placement_experts > 0;
}

/* Appends a replica with a zeroed alloc row; grows (doubling) only when full.
 * Returns its index, or -1 when out of memory. */
int tsim_plan_add(tsim_plan *p, int expert, int guest, int slot, int64_t planned);

static inline int64_t *tsim_plan_alloc_row(tsim_plan *p, int replica)
{
    return p->alloc + (size_t)replica * (size_t)p->ranks;
}

static inline const int64_t *tsim_plan_alloc_row_c(const tsim_plan *p, int replica)
{
    return p->alloc + (size_t)replica * (size_t)p->ranks;
}

/* Removes replicas whose alloc row is all zero (dynamic planners list only
 * replicas that receive tokens). Keeps order. */
void tsim_plan_drop_empty(tsim_plan *p);

/* Sorts replicas by (expert, guest, slot), carrying their alloc rows: the
 * canonical order of the vector format. */
void tsim_plan_sort(tsim_plan *p);

/* Exact equality of replicas (with planned counts), alloc rows, in order, and
 * placements (both absent, or equal). */
bool tsim_plan_equal(const tsim_plan *a, const tsim_plan *b);

#endif
