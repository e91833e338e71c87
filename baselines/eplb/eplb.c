/* The `eplb` planner (eplb.md section 3). Per layer: a window of summed
 * per-expert tokens, the layout in force (phy2log) and home'. A layout is
 * recomputed at the records 3.1 names, kept when the window is all zero, and
 * every record's tokens are split over it; replicas are static, listed with
 * 0 tokens too. Every plan carries home' (the static map while cold), so
 * rehomed_* are reported for this planner from its first record on. */
#include "eplb.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "eplb_layout.h"
#include "layout_io.h"

typedef struct {
    int64_t layer;
    int64_t seen;     /* records of this layer planned so far */
    bool has_layout;  /* false while cold */
    int64_t *window;  /* [E] prev: tokens since the last recomputation */
    int32_t *phy2log; /* [P] the layout in force */
    int32_t *home;    /* [E] home' in force (the static map at first) */
} eplb_layer;

typedef struct {
    int R, E, P, history, interval;
    int32_t *static_home; /* [E] the topology's home map */
    tsim_eplb_workspace ws;
    tsim_eplb_hosts hosts;
    int32_t *phyrank, *logcnt; /* [P], [E]: EPLB outputs the planner does not keep */
    int64_t *tpe;              /* [E] */
    eplb_layer *layers;        /* sorted by layer id */
    int layer_count, layer_cap;
    bool recomputed;
    /* --eplb-layout FILE: every layer serves the file's row, never recomputed */
    bool has_fixed;
    tsim_layout_table fixed;
    char fixed_path[192];
} eplb_state;

static void eplb_free(void *state);

static int eplb_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                       const void *own, tsim_error *err)
{
    *state = NULL;
    (void)common;
    const tsim_eplb_options *o = own;
    const int R = topo->ranks, E = topo->experts, K = topo->slots, rpn = topo->ranks_per_node;
    if (K < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: --slots must be 0 or more, got %d", K);
    if (o->groups < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: --eplb-groups must be 1 or more, got %d", o->groups);
    if (E % o->groups != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d experts are not a multiple of --eplb-groups %d", E,
                              o->groups);
    if (o->interval < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: --eplb-interval must be 1 or more, got %d", o->interval);
    if (o->history != TSIM_EPLB_HISTORY_PREV && o->history != TSIM_EPLB_HISTORY_ORACLE &&
        o->history != TSIM_EPLB_HISTORY_NONE)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: unknown history mode %d (prev, oracle or none)",
                              o->history);
    if (R > rpn && R % rpn != 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "eplb: %d ranks do not split into nodes of %d (--ranks-per-node); EPLB needs equal "
                              "nodes",
                              R, rpn);
    const int nodes = R > rpn ? R / rpn : 1, per_gpu = topo->experts_per_rank + K;
    eplb_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the eplb planner");
    s->R = R;
    s->E = E;
    s->P = R * per_gpu;
    s->history = o->history;
    s->interval = o->interval;
    const tsim_eplb_shape shape = {E, s->P, o->groups, nodes, R};
    int rc = tsim_eplb_workspace_init(&s->ws, &shape, err);
    if (!rc)
        rc = tsim_eplb_hosts_init(&s->hosts, R, E, per_gpu, rpn, err);
    if (rc) {
        eplb_free(s);
        return rc;
    }
    s->static_home = malloc(sizeof *s->static_home * (size_t)E);
    s->phyrank = malloc(sizeof *s->phyrank * (size_t)s->P);
    s->logcnt = malloc(sizeof *s->logcnt * (size_t)E);
    s->tpe = malloc(sizeof *s->tpe * (size_t)E);
    if (!s->static_home || !s->phyrank || !s->logcnt || !s->tpe) {
        eplb_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the eplb planner");
    }
    memcpy(s->static_home, topo->home, sizeof *s->static_home * (size_t)E);
    if (o->layout[0]) {
        snprintf(s->fixed_path, sizeof s->fixed_path, "%s", o->layout);
        rc = tsim_layout_read(o->layout, &s->fixed, NULL, err);
        if (!rc)
            rc = tsim_layout_check(&s->fixed, R, per_gpu, E, o->layout, err);
        if (rc) {
            tsim_error_prefix(err, "--eplb-layout");
            eplb_free(s);
            return rc;
        }
        s->has_fixed = true;
        s->history = TSIM_EPLB_HISTORY_NONE;
    }
    *state = s;
    return TSIM_OK;
}

static void eplb_free(void *state)
{
    eplb_state *s = state;
    if (!s)
        return;
    tsim_eplb_workspace_free(&s->ws);
    tsim_eplb_hosts_free(&s->hosts);
    for (int l = 0; l < s->layer_count; l++) {
        free(s->layers[l].window);
        free(s->layers[l].phy2log);
        free(s->layers[l].home);
    }
    free(s->layers);
    free(s->static_home);
    free(s->phyrank);
    free(s->logcnt);
    free(s->tpe);
    tsim_layout_table_free(&s->fixed);
    free(s);
}

/* Index of the layer, or -(insertion point) - 1. */
static int64_t layer_at(const void *state, int i)
{
    return ((const eplb_state *)state)->layers[i].layer;
}

static int layer_find(const eplb_state *s, int64_t layer)
{
    return tsim_search_sorted(s->layer_count, layer, layer_at, s);
}

/* The layer's state, created cold on first sight (the only allocation after
 * init, once per layer). */
static eplb_layer *layer_get(eplb_state *s, int64_t layer, tsim_error *err)
{
    int at = layer_find(s, layer);
    if (at >= 0)
        return &s->layers[at];
    at = -at - 1;
    const int32_t *fixed = NULL;
    if (s->has_fixed && !(fixed = tsim_layout_table_find(&s->fixed, layer))) {
        tsim_error_set(err, TSIM_E_INPUT, "eplb: --eplb-layout %s has no layout for layer %lld", s->fixed_path,
                       (long long)layer);
        return NULL;
    }
    if (s->layer_count == s->layer_cap) {
        int cap = s->layer_cap ? 2 * s->layer_cap : 8;
        eplb_layer *grown = realloc(s->layers, sizeof *grown * (size_t)cap);
        if (!grown) {
            tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for eplb's layers");
            return NULL;
        }
        s->layers = grown;
        s->layer_cap = cap;
    }
    eplb_layer l = {.layer = layer};
    l.window = calloc((size_t)s->E, sizeof *l.window);
    l.phy2log = malloc(sizeof *l.phy2log * (size_t)s->P);
    l.home = malloc(sizeof *l.home * (size_t)s->E);
    if (!l.window || !l.phy2log || !l.home) {
        free(l.window);
        free(l.phy2log);
        free(l.home);
        tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for eplb's layers");
        return NULL;
    }
    memcpy(l.home, s->static_home, sizeof *l.home * (size_t)s->E);
    if (fixed) {
        /* A fixed layout is in force from the first record; home' as after a
         * recomputation from the static map (3.3). */
        memcpy(l.phy2log, fixed, sizeof *l.phy2log * (size_t)s->P);
        tsim_eplb_hosts_build(&s->hosts, l.phy2log, l.home);
        memcpy(l.home, s->hosts.home, sizeof *l.home * (size_t)s->E);
        l.has_layout = true;
    }
    memmove(s->layers + at + 1, s->layers + at, sizeof *s->layers * (size_t)(s->layer_count - at));
    s->layers[at] = l;
    s->layer_count++;
    return &s->layers[at];
}

static bool all_zero(const int64_t *w, int n)
{
    for (int i = 0; i < n; i++)
        if (w[i] != 0)
            return false;
    return true;
}

/* 3.1: whether record i of a layer recomputes its layout, and from what. */
static const int64_t *recompute_weights(const eplb_state *s, const eplb_layer *l)
{
    if (s->history == TSIM_EPLB_HISTORY_ORACLE)
        return s->tpe;
    if (s->history == TSIM_EPLB_HISTORY_PREV && l->seen >= 1 && (l->seen - 1) % s->interval == 0)
        return l->window;
    return NULL;
}

static int eplb_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    eplb_state *s = state;
    tsim_plan_reset(out);
    out->slot_limited = true;
    s->recomputed = false;
    if (rec->ranks != s->R || rec->experts != s->E)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: record is %d x %d, the topology %d x %d", rec->ranks,
                              rec->experts, s->R, s->E);
    if (out->ranks != s->R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "eplb: plan rows are %d wide, R = %d", out->ranks, s->R);
    eplb_layer *l = layer_get(s, rec->layer, err);
    if (!l)
        return err->code ? err->code : TSIM_E_INTERNAL; /* a fixed layout may lack the layer */
    tsim_record_expert_totals(rec, s->tpe);

    const int64_t *weights = recompute_weights(s, l);
    /* An all-zero window keeps the layout: EPLB would pile every copy on
     * expert 0. */
    if (weights && !all_zero(weights, s->E)) {
        tsim_eplb_rebalance(&s->ws, weights, l->phy2log, s->phyrank, s->logcnt);
        tsim_eplb_hosts_build(&s->hosts, l->phy2log, l->home); /* prev(e): home' before */
        memcpy(l->home, s->hosts.home, sizeof *l->home * (size_t)s->E);
        l->has_layout = true;
        s->recomputed = true;
    } else if (l->has_layout) {
        /* home' is in force, so the native choice keeps every expert there. */
        tsim_eplb_hosts_build(&s->hosts, l->phy2log, l->home);
    }
    if (s->history == TSIM_EPLB_HISTORY_PREV) {
        if (weights)
            memset(l->window, 0, sizeof *l->window * (size_t)s->E);
        for (int e = 0; e < s->E; e++)
            l->window[e] += s->tpe[e];
    }
    l->seen++;

    int32_t *placement = tsim_plan_placement(out, s->E);
    if (!placement)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for an eplb placement");
    memcpy(placement, l->home, sizeof *placement * (size_t)s->E);
    if (!l->has_layout)
        return TSIM_OK; /* cold: the static map, no replicas */
    int32_t *layout = tsim_plan_layout(out, s->P); /* for --export-layout */
    if (!layout)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for an eplb layout");
    memcpy(layout, l->phy2log, sizeof *layout * (size_t)s->P);

    const tsim_eplb_hosts *h = &s->hosts;
    for (int i = 0; i < h->replicas; i++)
        if (tsim_plan_add(out, h->replica_expert[i], h->replica_gpu[i], h->replica_slot[i], 0) != i)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory growing the eplb plan");
    /* Replica i's alloc row is plan row i: the plan was empty. */
    tsim_eplb_hosts_tokens(h, rec->counts, out->alloc);
    for (int i = 0; i < h->replicas; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(out, i);
        int64_t planned = 0;
        for (int r = 0; r < s->R; r++)
            planned += row[r];
        out->replicas[i].planned = planned;
    }
    return TSIM_OK;
}

static int eplb_prime(void *state, int64_t layer, const int64_t *history, const int32_t *placement, tsim_error *err)
{
    eplb_state *s = state;
    eplb_layer *l = layer_get(s, layer, err);
    if (!l)
        return TSIM_E_INTERNAL;
    if (placement)
        for (int e = 0; e < s->E; e++)
            if (placement[e] < 0 || placement[e] >= s->R)
                return tsim_error_set(err, TSIM_E_INPUT, "eplb: placement puts expert %d on rank %d, not in 0..%d",
                                      e, placement[e], s->R - 1);
    /* The layer's next record is record 1: under prev it recomputes from the
     * window, record 0's tokens. */
    l->seen = 1;
    l->has_layout = false;
    for (int e = 0; e < s->E; e++)
        l->window[e] = history ? history[e] : 0;
    memcpy(l->home, placement ? placement : s->static_home, sizeof *l->home * (size_t)s->E);
    return TSIM_OK;
}

bool tsim_eplb_state_layout(const void *state, int64_t layer, int32_t *phy2log, int32_t *home)
{
    const eplb_state *s = state;
    int at = layer_find(s, layer);
    if (at < 0 || !s->layers[at].has_layout)
        return false;
    memcpy(phy2log, s->layers[at].phy2log, sizeof *phy2log * (size_t)s->P);
    memcpy(home, s->layers[at].home, sizeof *home * (size_t)s->E);
    return true;
}

bool tsim_eplb_state_recomputed(const void *state)
{
    return ((const eplb_state *)state)->recomputed;
}

/* --eplb-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec eplb_options[] = {
    {.name = "eplb-groups", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_eplb_options, groups), .lo = 1, .hi = 1073741824, .arg = "G", .def = "1", .help = "EPLB: the router's expert groups, num_groups"},
    {.name = "eplb-history", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_eplb_options, history), .choices = "prev|oracle|none", .arg = "prev|oracle|none", .def = "prev", .help = "EPLB: what the layout is computed from"},
    {.name = "eplb-interval", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_eplb_options, interval), .lo = 1, .hi = 1073741824, .arg = "N", .def = "8", .help = "EPLB: records of a layer between recomputations"},
    {.name = "eplb-layout", .type = TSIM_OPTION_STRING, .offset = offsetof(tsim_eplb_options, layout),
     .size = sizeof(((tsim_eplb_options *)0)->layout), .arg = "FILE", .def = "",
     .help = "EPLB: serve this layout (SGLang or TensorRT-LLM JSON, docs/export.md), never recompute (default: none)"},
    {0},
};

const tsim_planner_desc tsim_planner_eplb = {
    .name = "eplb",
    .source = "DeepSeek EPLB, deepseek-ai/EPLB eplb.py @ d52c72d",
    .options_size = sizeof(tsim_eplb_options),
    .state = TSIM_STATE_LAYER_PREFIX,
    .options = eplb_options,
    .summary = "DeepSeek EPLB: static redundant experts and re-homed experts from history",
    .init = eplb_init,
    .plan = eplb_plan,
    .free = eplb_free,
    .prime = eplb_prime,
};
