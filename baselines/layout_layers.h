/* Per-layer state of the layout planners (trtllm, swift): the layout in
 * force, home', how many records of the layer were planned, and a window
 * buffer of the planner's choosing. A layer is created the first time it is
 * seen, with D0 and the static map (production-balancers.md 1.2-1.3). */
#ifndef TSIM_LAYOUT_LAYERS_H
#define TSIM_LAYOUT_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "layout_io.h"
#include "topology.h"

/* When a layout planner recomputes its layout: from the window since the
 * last update (prev), from each record itself (oracle), or never (none).
 * trtllm and swift number their TSIM_*_HISTORY_* values in this order. */
enum { TSIM_LAYOUT_HISTORY_PREV = 0, TSIM_LAYOUT_HISTORY_ORACLE = 1, TSIM_LAYOUT_HISTORY_NONE = 2 };

/* Parses "prev", "oracle" or "none" into *out; planner names the option
 * ("--PLANNER-history") in the message. */
int tsim_layout_history_parse(const char *planner, const char *text, int *out, tsim_error *err);

typedef struct {
    int64_t layer;
    int64_t seen;     /* records of this layer planned so far */
    int32_t *layout;  /* [R * S]: the expert at position j of rank r is layout[r * S + j] */
    int32_t *home;    /* [E]: home' in force */
    void *window;     /* window_bytes, zeroed at creation */
} tsim_layout_layer;

typedef struct {
    int R, E, S;           /* S = hpr + K positions per rank */
    size_t window_bytes;
    int32_t *d0;           /* [R * S] the initial layout */
    int32_t *static_home;  /* [E] */
    tsim_layout_layer *layers; /* sorted by layer id */
    int count, cap;
    /* A fixed layout (--PLANNER-layout FILE): a new layer starts from its
     * row instead of D0, and a layer the file lacks is an input error. */
    bool has_fixed;
    tsim_layout_table fixed;
    char fixed_path[256];
    char planner[16];
} tsim_layout_layers;

/* D0[r][j] = Q[(r * hpr + j) mod E], Q the experts by (home rank, id). */
int tsim_layout_layers_init(tsim_layout_layers *ls, const tsim_topology *topo, int slots, size_t window_bytes,
                            tsim_error *err);
void tsim_layout_layers_free(tsim_layout_layers *ls);

/* Reads the layout file at path (SGLang or TensorRT-LLM JSON, layout_io.h)
 * and checks it against this topology; every layer then starts from the
 * file's row. planner names the option in messages ("trtllm"). */
int tsim_layout_layers_load_fixed(tsim_layout_layers *ls, const char *planner, const char *path, tsim_error *err);

/* The layer's state, created on first sight (the only allocation after init,
 * once per layer); NULL with err set when out of memory, or (TSIM_E_INPUT)
 * when a fixed layout has no row for the layer. */
tsim_layout_layer *tsim_layout_layers_get(tsim_layout_layers *ls, int64_t layer, tsim_error *err);

/* The layer's state, or NULL when never seen. */
const tsim_layout_layer *tsim_layout_layers_find(const tsim_layout_layers *ls, int64_t layer);

#endif
