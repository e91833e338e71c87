/* `trtllm` (production-balancers.md section 2). Per layer: the layout in
 * force (D0 at first), home', and the float32 load factor of the window. An
 * update replicates (2.4), re-places every copy (2.5) and picks home' as eplb
 * does (1.4); every record's tokens rotate over the copies (2.6). */
#include "trtllm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eplb_hosts.h"
#include "layout_layers.h"
#include "sort.h"

#define TRTLLM_MAX_EXPERTS 1024 /* the published routing kernel's limit */

struct tsim_trtllm {
    int R, E, S, P;
    tsim_trtllm_options opt;
    float decay;
    tsim_layout_layers layers; /* window: float lf[E] */
    tsim_eplb_hosts hosts;
    int64_t *tpe;     /* [E] */
    float *oracle_lf; /* [E] */
    int *copies;      /* [E] c(e) */
    int64_t *size_key; /* [E] bits of s(e) = lf / c (non-negative doubles order as integers) */
    int *order;       /* [P] copies by size descending, expert ascending */
    int *sort_tmp;    /* [P] */
    double *rank_load; /* [R] */
    int *filled;      /* [R] positions taken */
};

void tsim_trtllm_options_default(tsim_trtllm_options *opt)
{
    opt->history = TSIM_TRTLLM_HISTORY_PREV;
    opt->interval = 8;
    opt->decay = 0.95;
    opt->layout[0] = '\0';
}

void tsim_trtllm_free(tsim_trtllm *t)
{
    if (!t)
        return;
    tsim_layout_layers_free(&t->layers);
    tsim_eplb_hosts_free(&t->hosts);
    free(t->tpe);
    free(t->oracle_lf);
    free(t->copies);
    free(t->size_key);
    free(t->order);
    free(t->sort_tmp);
    free(t->rank_load);
    free(t->filled);
    free(t);
}

static int check_options(const tsim_topology *topo, int slots, const tsim_trtllm_options *opt, tsim_error *err)
{
    if (slots < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: --slots must be >= 0, got %d", slots);
    if (topo->ranks < 2)
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: needs 2 or more ranks (the balancer needs EP > 1)");
    if (topo->experts > TRTLLM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "trtllm: %d experts; the published routing kernel handles at most %d experts",
                              topo->experts, TRTLLM_MAX_EXPERTS);
    if (opt->interval < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: --trtllm-interval must be 1 or more, got %d",
                              opt->interval);
    if (!(opt->decay >= 0.0 && opt->decay <= 1.0))
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: --trtllm-decay must be in [0, 1], got %g", opt->decay);
    if (opt->history < TSIM_TRTLLM_HISTORY_PREV || opt->history > TSIM_TRTLLM_HISTORY_NONE)
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: unknown history %d (prev, oracle, none)", opt->history);
    return TSIM_OK;
}

int tsim_trtllm_init(tsim_trtllm **out, const tsim_topology *topo, int slots, const tsim_trtllm_options *opt,
                     tsim_error *err)
{
    *out = NULL;
    int rc = check_options(topo, slots, opt, err);
    if (rc != TSIM_OK)
        return rc;
    tsim_trtllm *t = calloc(1, sizeof *t);
    if (!t)
        return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: out of memory");
    const int R = topo->ranks, E = topo->experts;
    t->R = R;
    t->E = E;
    t->S = topo->experts_per_rank + slots;
    t->P = R * t->S;
    t->opt = *opt;
    t->decay = (float)opt->decay;
    rc = tsim_layout_layers_init(&t->layers, topo, slots, sizeof(float) * (size_t)E, err);
    if (rc == TSIM_OK)
        rc = tsim_eplb_hosts_init(&t->hosts, R, E, t->S, topo->ranks_per_node, err);
    /* A fixed layout serves every record: no update ever runs. */
    if (rc == TSIM_OK && opt->layout[0]) {
        rc = tsim_layout_layers_load_fixed(&t->layers, "trtllm", opt->layout, err);
        t->opt.history = TSIM_TRTLLM_HISTORY_NONE;
    }
    if (rc != TSIM_OK) {
        tsim_trtllm_free(t);
        return rc;
    }
    const size_t nE = (size_t)E, nP = (size_t)t->P, nR = (size_t)R;
    t->tpe = malloc(sizeof *t->tpe * nE);
    t->oracle_lf = malloc(sizeof *t->oracle_lf * nE);
    t->copies = malloc(sizeof *t->copies * nE);
    t->size_key = malloc(sizeof *t->size_key * nE);
    t->order = malloc(sizeof *t->order * nP);
    t->sort_tmp = malloc(sizeof *t->sort_tmp * nP);
    t->rank_load = malloc(sizeof *t->rank_load * nR);
    t->filled = malloc(sizeof *t->filled * nR);
    if (!t->tpe || !t->oracle_lf || !t->copies || !t->size_key || !t->order || !t->sort_tmp || !t->rank_load ||
        !t->filled) {
        tsim_trtllm_free(t);
        return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: out of memory for %d ranks and %d experts", R, E);
    }
    *out = t;
    return TSIM_OK;
}

/* 2.4: c(e) for T = R*S copies. */
static void replicate(tsim_trtllm *t, const float *lf)
{
    const int E = t->E, T = t->P;
    double sum = 0.0;
    for (int e = 0; e < E; e++)
        sum += (double)lf[e];
    if (T == E || sum == 0.0) {
        for (int e = 0; e < E; e++)
            t->copies[e] = T / E + (e < T % E ? 1 : 0);
        return;
    }
    for (int e = 0; e < E; e++)
        t->copies[e] = 1;
    for (int extra = 0; extra < T - E; extra++) {
        int best = 0;
        double best_size = (double)lf[0] / t->copies[0];
        for (int e = 1; e < E; e++) {
            const double size = (double)lf[e] / t->copies[e];
            if (size >= best_size) { /* ties to the highest id */
                best = e;
                best_size = size;
            }
        }
        t->copies[best]++;
    }
}

/* 2.5: every copy, largest first, to the lightest rank with a free position. */
static void place(tsim_trtllm *t, const float *lf, int32_t *layout)
{
    const int E = t->E, R = t->R, S = t->S;
    int n = 0;
    for (int e = 0; e < E; e++) {
        const double size = (double)lf[e] / t->copies[e];
        memcpy(&t->size_key[e], &size, sizeof size);
        for (int c = 0; c < t->copies[e]; c++)
            t->order[n++] = e;
    }
    tsim_sort_stable_by_key(t->order, n, t->size_key, true, t->sort_tmp);
    for (int r = 0; r < R; r++) {
        t->rank_load[r] = 0.0;
        t->filled[r] = 0;
    }
    for (int i = 0; i < n; i++) {
        const int e = t->order[i];
        int best = -1;
        for (int r = 0; r < R; r++)
            if (t->filled[r] < S && (best < 0 || t->rank_load[r] < t->rank_load[best]))
                best = r;
        layout[(size_t)best * (size_t)S + (size_t)t->filled[best]++] = e;
        double size;
        memcpy(&size, &t->size_key[e], sizeof size);
        t->rank_load[best] += size;
    }
}

static void fold(float *lf, const int64_t *tpe, int E, float decay)
{
    for (int e = 0; e < E; e++)
        lf[e] = fmaf(lf[e], decay, (float)tpe[e]);
}

int tsim_trtllm_prime(tsim_trtllm *t, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                      const int32_t *placement, tsim_error *err)
{
    tsim_layout_layer *l = tsim_layout_layers_get(&t->layers, layer, err);
    if (!l)
        return TSIM_E_INTERNAL;
    for (int p = 0; layout && p < t->P; p++)
        if (layout[p] < 0 || layout[p] >= t->E)
            return tsim_error_set(err, TSIM_E_INPUT, "trtllm: layout position %d holds expert %d, not in 0..%d", p,
                                  layout[p], t->E - 1);
    for (int e = 0; placement && e < t->E; e++)
        if (placement[e] < 0 || placement[e] >= t->R)
            return tsim_error_set(err, TSIM_E_INPUT, "trtllm: placement puts expert %d on rank %d, not in 0..%d", e,
                                  placement[e], t->R - 1);
    memcpy(l->layout, layout ? layout : t->layers.d0, sizeof *l->layout * (size_t)t->P);
    memcpy(l->home, placement ? placement : t->layers.static_home, sizeof *l->home * (size_t)t->E);
    float *lf = l->window;
    memset(lf, 0, sizeof *lf * (size_t)t->E);
    for (int i = 0; i < n; i++)
        fold(lf, window + (size_t)i * (size_t)t->E, t->E, t->decay);
    l->seen = 1; /* the next record is record 1: an update under prev */
    return TSIM_OK;
}

int tsim_trtllm_layout(const tsim_trtllm *t, int64_t layer, int32_t *out)
{
    const tsim_layout_layer *l = tsim_layout_layers_find(&t->layers, layer);
    if (!l)
        return -1;
    memcpy(out, l->layout, sizeof *out * (size_t)t->P);
    return 0;
}

/* The load factor this record updates from (1.3), NULL when it does not. */
static const float *update_weights(tsim_trtllm *t, const tsim_layout_layer *l)
{
    switch (t->opt.history) {
    case TSIM_TRTLLM_HISTORY_ORACLE:
        for (int e = 0; e < t->E; e++)
            t->oracle_lf[e] = (float)t->tpe[e];
        return t->oracle_lf;
    case TSIM_TRTLLM_HISTORY_PREV:
        return l->seen >= 1 && (l->seen - 1) % t->opt.interval == 0 ? l->window : NULL;
    default:
        return NULL;
    }
}

int tsim_trtllm_plan(tsim_trtllm *t, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    const int R = t->R, E = t->E;
    tsim_plan_reset(plan);
    plan->slot_limited = true;
    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INPUT, "trtllm: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (plan->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: plan rows have %d ranks, expected %d", plan->ranks, R);
    tsim_layout_layer *l = tsim_layout_layers_get(&t->layers, rec->layer, err);
    if (!l)
        return err->code ? err->code : TSIM_E_INTERNAL; /* a fixed layout may lack the layer */
    tsim_record_expert_totals(rec, t->tpe);
    const float *lf = update_weights(t, l);
    if (lf) {
        replicate(t, lf);
        place(t, lf, l->layout);
    }
    /* home' (1.4): prev(e) is home' before; without an update it holds a copy
     * and stays. */
    tsim_eplb_hosts_build(&t->hosts, l->layout, l->home);
    memcpy(l->home, t->hosts.home, sizeof *l->home * (size_t)E);
    if (t->opt.history == TSIM_TRTLLM_HISTORY_PREV) {
        float *window = l->window;
        if (lf)
            memset(window, 0, sizeof *window * (size_t)E); /* cleared after the update */
        fold(window, t->tpe, E, t->decay);
    }
    l->seen++;

    int32_t *placement = tsim_plan_placement(plan, E);
    if (!placement)
        return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: out of memory for a placement");
    memcpy(placement, l->home, sizeof *placement * (size_t)E);
    int32_t *layout = tsim_plan_layout(plan, t->P); /* for --export-layout */
    if (!layout)
        return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: out of memory for a layout");
    memcpy(layout, l->layout, sizeof *layout * (size_t)t->P);
    const tsim_eplb_hosts *h = &t->hosts;
    for (int i = 0; i < h->replicas; i++)
        if (tsim_plan_add(plan, h->replica_expert[i], h->replica_gpu[i], h->replica_slot[i], 0) != i)
            return tsim_error_set(err, TSIM_E_INTERNAL, "trtllm: out of memory growing the plan");
    /* 2.6 is eplb.md 3.5's rotation; replica i's row is plan row i. */
    tsim_eplb_hosts_tokens(h, rec->counts, plan->alloc);
    for (int i = 0; i < h->replicas; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        int64_t planned = 0;
        for (int r = 0; r < R; r++)
            planned += row[r];
        plan->replicas[i].planned = planned;
    }
    return TSIM_OK;
}
