/* vllm-ascend's SwiftBalancer (production-balancers.md section 3): an
 * incremental layout update that keeps every original copy in place except
 * for a few pairwise swaps, refills the redundant positions, keeps the
 * position of every expert that stays on its rank, and is taken only when it
 * lowers the estimated imbalance. Tokens are not split: each source rank
 * sends all its tokens of an expert to one copy. State: per layer, the layout
 * in force, home' and the window since the last update, so a record's plan
 * depends on every earlier record of its layer. */
#ifndef TSIM_SWIFT_H
#define TSIM_SWIFT_H

#include <stdint.h>

#include "error.h"
#include "layout_layers.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

enum {
    TSIM_SWIFT_HISTORY_PREV = TSIM_LAYOUT_HISTORY_PREV,   /* update at records 1, 1+N, ... from the summed window */
    TSIM_SWIFT_HISTORY_ORACLE = TSIM_LAYOUT_HISTORY_ORACLE, /* update at every record from the record itself */
    TSIM_SWIFT_HISTORY_NONE = TSIM_LAYOUT_HISTORY_NONE,   /* never update: D0 serves */
};

/* --swift-* options (3.2), published defaults in (). */
typedef struct {
    int history;  /* TSIM_SWIFT_HISTORY_* (prev) */
    int interval; /* records of a layer between updates (8) */
    int tp;       /* attention TP size inside EP, for the copy choice (1) */
    char layout[192]; /* a fixed layout file (docs/export.md): served, never updated; "" none */
} tsim_swift_options;

typedef struct tsim_swift tsim_swift;

void tsim_swift_options_default(tsim_swift_options *opt);


/* Checks the configuration (3.6) and allocates the scratch; a layer's state
 * is allocated the first time it is seen. slots is K (at most E - hpr). */
int tsim_swift_init(tsim_swift **out, const tsim_topology *topo, int slots, const tsim_swift_options *opt,
                    tsim_error *err);

/* Plans one record of layer rec->layer (records of a layer in trace order). */
int tsim_swift_plan(tsim_swift *s, const tsim_record *rec, tsim_plan *plan, tsim_error *err);

/* As tsim_trtllm_prime: window rows are summed (no decay). */
int tsim_swift_prime(tsim_swift *s, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                     const int32_t *placement, tsim_error *err);

/* The layout in force for a layer into out; -1 when never seen. */
int tsim_swift_layout(const tsim_swift *s, int64_t layer, int32_t *out);

void tsim_swift_free(tsim_swift *s);

#endif
