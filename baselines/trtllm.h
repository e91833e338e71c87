/* TensorRT-LLM's MoE load balancer (production-balancers.md section 2): a
 * float32 decayed load factor per expert, replication to the largest
 * load/copies, then a longest-first placement of every copy onto the lightest
 * rank. Starts from the initial layout D0, whose copies serve from the first
 * record. State: per layer, the layout in force, home' and the load factor of
 * the records since the last update, so a record's plan depends on every
 * earlier record of its layer. */
#ifndef TSIM_TRTLLM_H
#define TSIM_TRTLLM_H

#include <stdint.h>

#include "error.h"
#include "layout_layers.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

enum {
    TSIM_TRTLLM_HISTORY_PREV = TSIM_LAYOUT_HISTORY_PREV,   /* update at records 1, 1+N, ... from the window since the last one */
    TSIM_TRTLLM_HISTORY_ORACLE = TSIM_LAYOUT_HISTORY_ORACLE, /* update at every record from the record itself */
    TSIM_TRTLLM_HISTORY_NONE = TSIM_LAYOUT_HISTORY_NONE,   /* never update: D0 serves (layer_updates_per_iter = 0) */
};

/* --trtllm-* options (2.2), published defaults in (). */
typedef struct {
    int history;  /* TSIM_TRTLLM_HISTORY_* (prev) */
    int interval; /* records of a layer between updates (8) */
    double decay; /* load-factor decay, read as float32 (0.95) */
    char layout[192]; /* a fixed layout file (docs/export.md): served, never updated; "" none */
} tsim_trtllm_options;

typedef struct tsim_trtllm tsim_trtllm;

void tsim_trtllm_options_default(tsim_trtllm_options *opt);


/* Checks the configuration (2.7) and allocates the scratch; a layer's state
 * is allocated the first time it is seen. slots is K. */
int tsim_trtllm_init(tsim_trtllm **out, const tsim_topology *topo, int slots, const tsim_trtllm_options *opt,
                     tsim_error *err);

/* Plans one record of layer rec->layer (records of a layer in trace order). */
int tsim_trtllm_plan(tsim_trtllm *t, const tsim_record *rec, tsim_plan *plan, tsim_error *err);

/* Seeds a layer as if earlier records had been planned, so that its next
 * record is an update record under prev: window holds n rows of E per-expert
 * totals, oldest first (folded into the load factor); layout (R * (hpr + K)
 * experts, NULL: D0) and placement (home', NULL: the static map) are in force. */
int tsim_trtllm_prime(tsim_trtllm *t, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                      const int32_t *placement, tsim_error *err);

/* The layout in force for a layer (R * (hpr + K) experts) into out; -1 when
 * the layer was never seen. */
int tsim_trtllm_layout(const tsim_trtllm *t, int64_t layer, int32_t *out);

void tsim_trtllm_free(tsim_trtllm *t);

#endif
