/* Expert layouts as the serving stacks load them (docs/export.md): per MoE
 * layer, the logical expert held at every physical position p = r * S + j
 * (rank r, position j of S = hpr + K). Two files:
 *  - SGLang's --init-expert-location JSON: {"physical_to_logical_map":
 *    [[...P ids...], ... one row per layer 0..L-1]};
 *  - TensorRT-LLM's MoeLoadBalancerConfig: {"num_slots": P,
 *    "layer_updates_per_iter": 0, "initial_global_assignments":
 *    {"LAYER": [...P ids...], ...}}.
 * Library code: no printing; errors name the file and the place. */
#ifndef TSIM_LAYOUT_IO_H
#define TSIM_LAYOUT_IO_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

typedef enum { TSIM_LAYOUT_SGLANG = 0, TSIM_LAYOUT_TRTLLM = 1 } tsim_layout_format;

/* Layers by ascending id, each a row of `physical` logical expert ids. */
typedef struct {
    int physical;     /* P; 0 until the first row (a reader sets it from the file) */
    int count, cap;
    int64_t *layers;  /* [cap] ascending */
    int32_t *map;     /* [cap * physical]: row k is layer layers[k] */
} tsim_layout_table;

/* An empty table of rows of `physical` entries (0: taken from the first row put). */
void tsim_layout_table_init(tsim_layout_table *t, int physical);
void tsim_layout_table_free(tsim_layout_table *t);

/* Sets the layer's row (a copy of physical entries), adding the layer when
 * new: the only allocation, once per layer. */
int tsim_layout_table_put(tsim_layout_table *t, int64_t layer, const int32_t *row, tsim_error *err);

/* The layer's row, or NULL when the table has none. */
const int32_t *tsim_layout_table_find(const tsim_layout_table *t, int64_t layer);

/* "sglang" or "trtllm". */
int tsim_layout_format_parse(const char *text, tsim_layout_format *out, tsim_error *err);
extern const char *const tsim_layout_format_names[2];

/* Writes the table in the given format to fp. SGLang's map is indexed by
 * layer position, so its layers must be 0..L-1 (TSIM_E_INPUT otherwise,
 * nothing written). Ids are written as integers, rows on one line each. */
int tsim_layout_write(FILE *fp, const tsim_layout_table *t, tsim_layout_format format, tsim_error *err);

/* Reads either format (told apart by its keys) into t (initialised here).
 * TSIM_E_INPUT naming the file and the key/row/position of any fault: not
 * JSON, no known key, a ragged row, an id that is not an integer >= 0, a
 * num_slots that differs from the rows, a layer key that is not an integer,
 * the same layer twice. *format_out (may be NULL) gets the format read. */
int tsim_layout_read(const char *path, tsim_layout_table *t, tsim_layout_format *format_out, tsim_error *err);

/* Checks t against a topology: rows of ranks * per_rank entries, every id in
 * 0..experts-1, every expert with at least one copy in every layer. Messages
 * start with `name` (the file). */
int tsim_layout_check(const tsim_layout_table *t, int ranks, int per_rank, int experts, const char *name,
                      tsim_error *err);

#endif
