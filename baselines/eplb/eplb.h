/* `eplb`: DeepSeek's EPLB as a planner (eplb.md section 3): static redundant
 * experts and re-homed experts from a layer's history. The algorithm is
 * eplb_layout.h, the plan it gives eplb_hosts.h; this is the planner state
 * (one layout per layer) and a window into it for tests. */
#ifndef TSIM_EPLB_H
#define TSIM_EPLB_H

#include <stdbool.h>
#include <stdint.h>

#include "eplb_hosts.h"
#include "planner.h"

enum { TSIM_EPLB_HISTORY_PREV = 0, TSIM_EPLB_HISTORY_ORACLE = 1, TSIM_EPLB_HISTORY_NONE = 2 };

/* DeepSeek EPLB (eplb.md section 3)'s own options block; K is the common --slots. */
typedef struct {
    int groups;          /* EPLB's num_groups (1) */
    int history;         /* TSIM_EPLB_HISTORY_* (prev default) */
    int interval;        /* records of a layer between recomputations under prev (8) */
    char layout[192];    /* a fixed layout file (docs/export.md): served, never recomputed; "" none */
} tsim_eplb_options;

extern const tsim_planner_desc tsim_planner_eplb;

/* The layout in force for a layer after the last record planned (state is
 * what tsim_planner_eplb.init returned): false when the layer has none (cold
 * or unseen). phy2log receives P = R * (hpr + K) entries, home E. */
bool tsim_eplb_state_layout(const void *state, int64_t layer, int32_t *phy2log, int32_t *home);

/* Whether the last record planned recomputed its layer's layout. */
bool tsim_eplb_state_recomputed(const void *state);

#endif
