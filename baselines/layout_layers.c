#include "layout_layers.h"
#include "search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tsim_layout_layers_init(tsim_layout_layers *ls, const tsim_topology *topo, int slots, size_t window_bytes,
                            tsim_error *err)
{
    memset(ls, 0, sizeof *ls);
    const int R = topo->ranks, E = topo->experts, hpr = topo->experts_per_rank;
    ls->R = R;
    ls->E = E;
    ls->S = hpr + slots;
    ls->window_bytes = window_bytes;
    const size_t P = (size_t)R * (size_t)ls->S;
    ls->d0 = malloc(sizeof *ls->d0 * P);
    ls->static_home = malloc(sizeof *ls->static_home * (size_t)E);
    if (!ls->d0 || !ls->static_home) {
        tsim_layout_layers_free(ls);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a layout of %zu positions", P);
    }
    /* rank_experts is Q: the experts by (home rank, id). */
    for (int r = 0; r < R; r++)
        for (int j = 0; j < ls->S; j++)
            ls->d0[(size_t)r * (size_t)ls->S + (size_t)j] = topo->rank_experts[((int64_t)r * hpr + j) % E];
    memcpy(ls->static_home, topo->home, sizeof *ls->static_home * (size_t)E);
    return TSIM_OK;
}

void tsim_layout_layers_free(tsim_layout_layers *ls)
{
    for (int i = 0; i < ls->count; i++) {
        free(ls->layers[i].layout);
        free(ls->layers[i].home);
        free(ls->layers[i].window);
    }
    free(ls->layers);
    free(ls->d0);
    free(ls->static_home);
    tsim_layout_table_free(&ls->fixed);
    memset(ls, 0, sizeof *ls);
}

/* Index of the layer, or -(insertion point) - 1. */
static int64_t layer_index_key(const void *ctx, int i)
{
    return ((const tsim_layout_layers *)ctx)->layers[i].layer;
}

static int layer_index(const tsim_layout_layers *ls, int64_t layer)
{
    return tsim_search_sorted(ls->count, layer, layer_index_key, ls);
}

const tsim_layout_layer *tsim_layout_layers_find(const tsim_layout_layers *ls, int64_t layer)
{
    const int at = layer_index(ls, layer);
    return at >= 0 ? &ls->layers[at] : NULL;
}

tsim_layout_layer *tsim_layout_layers_get(tsim_layout_layers *ls, int64_t layer, tsim_error *err)
{
    int at = layer_index(ls, layer);
    if (at >= 0)
        return &ls->layers[at];
    at = -at - 1;
    if (ls->count == ls->cap) {
        const int cap = ls->cap ? 2 * ls->cap : 8;
        tsim_layout_layer *grown = realloc(ls->layers, sizeof *grown * (size_t)cap);
        if (!grown) {
            tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the layers' layouts");
            return NULL;
        }
        ls->layers = grown;
        ls->cap = cap;
    }
    const size_t P = (size_t)ls->R * (size_t)ls->S;
    const int32_t *start = ls->d0;
    if (ls->has_fixed && !(start = tsim_layout_table_find(&ls->fixed, layer))) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: --%s-layout %s has no layout for layer %lld", ls->planner, ls->planner,
                       ls->fixed_path, (long long)layer);
        return NULL;
    }
    tsim_layout_layer l = {.layer = layer};
    l.layout = malloc(sizeof *l.layout * P);
    l.home = malloc(sizeof *l.home * (size_t)ls->E);
    l.window = calloc(1, ls->window_bytes > 0 ? ls->window_bytes : 1);
    if (!l.layout || !l.home || !l.window) {
        free(l.layout);
        free(l.home);
        free(l.window);
        tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the layers' layouts");
        return NULL;
    }
    memcpy(l.layout, start, sizeof *l.layout * P);
    memcpy(l.home, ls->static_home, sizeof *l.home * (size_t)ls->E);
    memmove(ls->layers + at + 1, ls->layers + at, sizeof *ls->layers * (size_t)(ls->count - at));
    ls->layers[at] = l;
    ls->count++;
    return &ls->layers[at];
}

int tsim_layout_history_parse(const char *planner, const char *text, int *out, tsim_error *err)
{
    static const char *const names[] = {"prev", "oracle", "none"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = i;
            return TSIM_OK;
        }
    return tsim_error_set(err, TSIM_E_INPUT, "%s: unknown --%s-history '%s' (prev, oracle, none)", planner, planner,
                          text);
}

int tsim_layout_layers_load_fixed(tsim_layout_layers *ls, const char *planner, const char *path, tsim_error *err)
{
    snprintf(ls->planner, sizeof ls->planner, "%s", planner);
    snprintf(ls->fixed_path, sizeof ls->fixed_path, "%s", path);
    int rc = tsim_layout_read(path, &ls->fixed, NULL, err);
    if (!rc)
        rc = tsim_layout_check(&ls->fixed, ls->R, ls->S, ls->E, path, err);
    if (rc) {
        tsim_error_prefix(err, "--%s-layout", planner);
        return rc;
    }
    ls->has_fixed = true;
    return TSIM_OK;
}
