/* `lplb`: DeepSeek's Linear-Programming-Based Load Balancer (baselines.md,
 * `lplb`). Every rank hosts D static replica slots along the edges of a fixed
 * graph; per record, one min-max LP per group of ranks decides what share of
 * each replicated expert's tokens stays on the original. All replicas are
 * listed in every record, even with no tokens, so all of them count as
 * transfers. With --lplb-rehome eplb (eplb.md section 4) every record with a
 * history first re-homes the experts with EPLB (no copies: exactly hpr per
 * rank), and the plan carries that placement. */
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eplb_layout.h"
#include "search.h"
#include "lplb.h"
#include "planner.h"

/* The last record of one layer, for history `prev`. */
typedef struct {
    int64_t layer;
    int64_t *tpe; /* [E] */
} layer_history;

/* A home expert with its history load, for ordering a rank's experts. */
typedef struct {
    int64_t load;
    int32_t expert;
} ranked_expert;

typedef struct {
    int R, E, hpr, D, G, groups;
    int solver, history;
    tsim_lplb_graph graph;
    bool graph_auto; /* the graph was --lplb-graph auto's choice */
    int32_t *rank_experts; /* [R * hpr]: home experts, ascending */
    int32_t *bundles;      /* [R * D]: expert of bundle (rank, d) */
    int32_t *nonrep;       /* [R * (hpr - D)]: the other home experts, in history order */
    ranked_expert *order, *order_tmp; /* [hpr] sort scratch */
    int64_t *tpe;          /* [E] this record's tokens per expert */
    float *load_f;         /* [E] ipm: tpe divided by the largest, in float */
    float *wb_f, *f_f, *x_f;   /* [G * D], [G], [G * D] one group for ipm */
    double *wb_d, *f_d, *x_d;  /* the same for exact, in tokens */
    double *x;             /* [R * D]: kept share of each bundle */
    tsim_lplb_ipm ipm;
    tsim_lplb_ipm_state *ipm_state; /* [groups] */
    tsim_lplb_exact exact;
    double *optimum;       /* [groups] */
    layer_history *layers; /* sorted by layer id */
    int layer_count, layer_cap;
    bool rehome;           /* --lplb-rehome eplb */
    tsim_eplb_workspace eplb; /* EPLB(history, P = E, n_group, nodes, R) */
    int32_t *phy2log, *phyrank, *logcnt; /* [E] each: EPLB's outputs */
    int32_t *static_home;  /* [E] the topology's home map */
    int32_t *home;         /* [E] home' of the last record */
    int32_t *static_rank_experts; /* [R * hpr] the topology's */
} lplb_state;

static void lplb_free(void *state);

static int lplb_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                       const void *own, tsim_error *err)
{
    *state = NULL;
    (void)common;
    const tsim_lplb_options *o = own;
    if (o->solver != TSIM_LPLB_IPM && o->solver != TSIM_LPLB_EXACT)
        return tsim_error_set(err, TSIM_E_INPUT, "lplb: unknown solver %d", o->solver);
    if (o->history != TSIM_LPLB_HISTORY_PREV && o->history != TSIM_LPLB_HISTORY_NONE &&
        o->history != TSIM_LPLB_HISTORY_ORACLE)
        return tsim_error_set(err, TSIM_E_INPUT, "lplb: unknown history mode %d", o->history);
    lplb_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb planner");
    s->graph_auto = strcmp(o->graph, "auto") == 0;
    int rc = tsim_lplb_graph_build(&s->graph, o->graph, topo, err);
    if (rc) {
        free(s);
        return rc;
    }
    s->R = topo->ranks;
    s->E = topo->experts;
    s->hpr = topo->experts_per_rank;
    s->D = s->graph.dups;
    s->G = s->graph.group_size;
    s->groups = s->graph.groups;
    s->solver = o->solver;
    s->history = o->history;
    const size_t R = (size_t)s->R, E = (size_t)s->E, hpr = (size_t)s->hpr, D = (size_t)s->D, G = (size_t)s->G;
    s->rank_experts = malloc(sizeof *s->rank_experts * R * hpr);
    s->bundles = malloc(sizeof *s->bundles * R * D);
    s->nonrep = malloc(sizeof *s->nonrep * (R * (hpr - D) + 1));
    s->order = malloc(sizeof *s->order * hpr);
    s->order_tmp = malloc(sizeof *s->order_tmp * hpr);
    s->tpe = malloc(sizeof *s->tpe * E);
    s->load_f = malloc(sizeof *s->load_f * E);
    s->wb_f = malloc(sizeof *s->wb_f * G * D);
    s->f_f = malloc(sizeof *s->f_f * G);
    s->x_f = malloc(sizeof *s->x_f * G * D);
    s->wb_d = malloc(sizeof *s->wb_d * G * D);
    s->f_d = malloc(sizeof *s->f_d * G);
    s->x_d = malloc(sizeof *s->x_d * G * D);
    s->x = calloc(R * D, sizeof *s->x);
    s->ipm_state = calloc((size_t)s->groups, sizeof *s->ipm_state);
    s->optimum = calloc((size_t)s->groups, sizeof *s->optimum);
    if (!s->rank_experts || !s->bundles || !s->nonrep || !s->order || !s->order_tmp || !s->tpe || !s->load_f ||
        !s->wb_f || !s->f_f || !s->x_f || !s->wb_d || !s->f_d || !s->x_d || !s->x || !s->ipm_state || !s->optimum) {
        lplb_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb planner");
    }
    memcpy(s->rank_experts, topo->rank_experts, sizeof *s->rank_experts * R * hpr);
    if (o->rehome == TSIM_LPLB_REHOME_EPLB) {
        s->rehome = true;
        /* LPLB's call: its group count, nodes of rpn GPUs (integer division). */
        const int nodes = topo->ranks / topo->ranks_per_node > 1 ? topo->ranks / topo->ranks_per_node : 1;
        const tsim_eplb_shape shape = {s->E, s->E, s->groups, nodes, s->R};
        if ((rc = tsim_eplb_workspace_init(&s->eplb, &shape, err))) {
            tsim_error_prefix(err, "lplb: --lplb-rehome eplb");
            lplb_free(s);
            return rc;
        }
        s->phy2log = malloc(sizeof *s->phy2log * E);
        s->phyrank = malloc(sizeof *s->phyrank * E);
        s->logcnt = malloc(sizeof *s->logcnt * E);
        s->static_home = malloc(sizeof *s->static_home * E);
        s->home = malloc(sizeof *s->home * E);
        s->static_rank_experts = malloc(sizeof *s->static_rank_experts * R * hpr);
        if (!s->phy2log || !s->phyrank || !s->logcnt || !s->static_home || !s->home || !s->static_rank_experts) {
            lplb_free(s);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb planner");
        }
        memcpy(s->static_home, topo->home, sizeof *s->static_home * E);
        memcpy(s->static_rank_experts, topo->rank_experts, sizeof *s->static_rank_experts * R * hpr);
    }
    if (s->solver == TSIM_LPLB_IPM)
        rc = tsim_lplb_ipm_init(&s->ipm, &s->graph, err);
    else
        rc = tsim_lplb_exact_init(&s->exact, &s->graph, err);
    if (rc) {
        lplb_free(s);
        return rc;
    }
    *state = s;
    return TSIM_OK;
}

static void lplb_free(void *state)
{
    lplb_state *s = state;
    if (!s)
        return;
    tsim_lplb_ipm_free(&s->ipm);
    tsim_lplb_exact_free(&s->exact);
    tsim_lplb_graph_free(&s->graph);
    for (int l = 0; l < s->layer_count; l++)
        free(s->layers[l].tpe);
    free(s->layers);
    free(s->rank_experts);
    free(s->bundles);
    free(s->nonrep);
    free(s->order);
    free(s->order_tmp);
    free(s->tpe);
    free(s->load_f);
    free(s->wb_f);
    free(s->f_f);
    free(s->x_f);
    free(s->wb_d);
    free(s->f_d);
    free(s->x_d);
    free(s->x);
    free(s->ipm_state);
    free(s->optimum);
    tsim_eplb_workspace_free(&s->eplb);
    free(s->phy2log);
    free(s->phyrank);
    free(s->logcnt);
    free(s->static_home);
    free(s->home);
    free(s->static_rank_experts);
    free(s);
}

/* Index of the layer's history, or -(insertion point) - 1 when it has none. */
static int64_t layer_at(const void *state, int i)
{
    return ((const lplb_state *)state)->layers[i].layer;
}

static int layer_find(const lplb_state *s, int64_t layer)
{
    return tsim_search_sorted(s->layer_count, layer, layer_at, s);
}

/* Remembers this record as its layer's previous one. Allocates only when a
 * layer appears for the first time. */
static int layer_remember(lplb_state *s, int64_t layer, tsim_error *err)
{
    int at = layer_find(s, layer);
    if (at < 0) {
        at = -at - 1;
        if (s->layer_count == s->layer_cap) {
            int cap = s->layer_cap ? 2 * s->layer_cap : 8;
            layer_history *grown = realloc(s->layers, sizeof *grown * (size_t)cap);
            if (!grown)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for lplb's layer history");
            s->layers = grown;
            s->layer_cap = cap;
        }
        int64_t *tpe = malloc(sizeof *tpe * (size_t)s->E);
        if (!tpe)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for lplb's layer history");
        memmove(s->layers + at + 1, s->layers + at, sizeof *s->layers * (size_t)(s->layer_count - at));
        s->layers[at] = (layer_history){layer, tpe};
        s->layer_count++;
    }
    memcpy(s->layers[at].tpe, s->tpe, sizeof *s->tpe * (size_t)s->E);
    return TSIM_OK;
}

static bool ranks_before(const ranked_expert *a, const ranked_expert *b)
{
    return a->load > b->load || (a->load == b->load && a->expert < b->expert);
}

/* Stable bottom-up merge sort: most loaded first, ties to the lower index. */
static void sort_by_history(ranked_expert *v, ranked_expert *tmp, int n)
{
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = ranks_before(&v[j], &v[i]) ? v[j++] : v[i++];
            while (i < mid)
                tmp[k++] = v[i++];
            while (j < hi)
                tmp[k++] = v[j++];
        }
        memcpy(v, tmp, sizeof *v * (size_t)n);
    }
}

/* Each rank's D replicated experts (its most loaded by history, or its first
 * D), and its other experts in the same order: the order the published planner
 * keeps them in, which is the order ipm sums their loads in. */
static void choose_bundles(lplb_state *s, const int64_t *history)
{
    const int hpr = s->hpr, D = s->D, rest = hpr - D;
    for (int r = 0; r < s->R; r++) {
        const int32_t *home = s->rank_experts + (size_t)r * (size_t)hpr;
        for (int h = 0; h < hpr; h++)
            s->order[h] = (ranked_expert){history ? history[home[h]] : 0, home[h]};
        if (history)
            sort_by_history(s->order, s->order_tmp, hpr);
        for (int d = 0; d < D; d++)
            s->bundles[r * D + d] = s->order[d].expert;
        for (int h = 0; h < rest; h++)
            s->nonrep[(size_t)r * (size_t)rest + (size_t)h] = s->order[D + h].expert;
    }
}

/* eplb.md section 4, step 1: home' from EPLB's layout of the history with
 * P = E (physical p on rank p / hpr), or the static map without a history.
 * Each rank's experts then ascend by index, as the static ones do. */
static void rehome_experts(lplb_state *s, const int64_t *history)
{
    const int E = s->E, hpr = s->hpr;
    if (!history) {
        memcpy(s->home, s->static_home, sizeof *s->home * (size_t)E);
        memcpy(s->rank_experts, s->static_rank_experts, sizeof *s->rank_experts * (size_t)E);
        return;
    }
    tsim_eplb_rebalance(&s->eplb, history, s->phy2log, s->phyrank, s->logcnt);
    for (int p = 0; p < E; p++)
        s->home[s->phy2log[p]] = p / hpr;
    /* Counting pass: rank_experts rows filled in ascending expert order. */
    memset(s->logcnt, 0, sizeof *s->logcnt * (size_t)s->R); /* reused as fill counts, R <= E */
    for (int e = 0; e < E; e++) {
        const int r = s->home[e];
        s->rank_experts[(size_t)r * (size_t)hpr + (size_t)s->logcnt[r]++] = e;
    }
}

static void solve_ipm(lplb_state *s, tsim_plan *out)
{
    const int G = s->G, D = s->D, rest = s->hpr - D;
    int64_t largest = 0;
    for (int e = 0; e < s->E; e++)
        largest = s->tpe[e] > largest ? s->tpe[e] : largest;
    if (largest == 0) {
        /* Nothing to balance: the published solver is not run. */
        for (int k = 0; k < s->R * D; k++)
            s->x[k] = 0.5;
        memset(s->ipm_state, 0, sizeof *s->ipm_state * (size_t)s->groups);
        return;
    }
    const float scale = (float)largest;
    for (int e = 0; e < s->E; e++)
        s->load_f[e] = (float)s->tpe[e] / scale;
    for (int grp = 0; grp < s->groups; grp++) {
        const int base = grp * G;
        for (int i = 0; i < G; i++) {
            const int r = base + i;
            for (int d = 0; d < D; d++)
                s->wb_f[i * D + d] = s->load_f[s->bundles[r * D + d]];
            float f = 0.0f;
            for (int h = 0; h < rest; h++)
                f += s->load_f[s->nonrep[(size_t)r * (size_t)rest + (size_t)h]];
            s->f_f[i] = f;
        }
        if (!tsim_lplb_ipm_solve(&s->ipm, s->wb_f, s->f_f, s->x_f, &s->ipm_state[grp]))
            out->notes |= TSIM_NOTE_IPM_FALLBACK;
        for (int k = 0; k < G * D; k++)
            s->x[base * D + k] = s->x_f[k];
    }
}

static int solve_exact(lplb_state *s, tsim_error *err)
{
    const int G = s->G, D = s->D, rest = s->hpr - D;
    for (int grp = 0; grp < s->groups; grp++) {
        const int base = grp * G;
        for (int i = 0; i < G; i++) {
            const int r = base + i;
            for (int d = 0; d < D; d++)
                s->wb_d[i * D + d] = (double)s->tpe[s->bundles[r * D + d]];
            int64_t f = 0;
            for (int h = 0; h < rest; h++)
                f += s->tpe[s->nonrep[(size_t)r * (size_t)rest + (size_t)h]];
            s->f_d[i] = (double)f;
        }
        int rc = tsim_lplb_exact_solve(&s->exact, s->wb_d, s->f_d, s->x_d, &s->optimum[grp], err);
        if (rc) {
            tsim_error_prefix(err, "group %d", grp);
            return rc;
        }
        memcpy(s->x + (size_t)base * (size_t)D, s->x_d, sizeof *s->x_d * (size_t)(G * D));
    }
    return TSIM_OK;
}

/* Every static replica with the tokens each source sends it: a source keeps
 * floor(clamp(x) * cnt + 1e-9) at the original (double; the 1e-9 keeps a
 * vertex value like 0.5 from losing a token to round-off). */
static int emit_plan(lplb_state *s, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    const int G = s->G, D = s->D, R = s->R;
    for (int g = 0; g < R; g++) {
        const int base = g / G * G;
        for (int d = 0; d < D; d++) {
            const int o = base + tsim_lplb_r2o(&s->graph, g - base, d);
            const int e = s->bundles[o * D + d];
            const int idx = tsim_plan_add(out, e, g, d, 0);
            if (idx < 0)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory growing the lplb plan");
            const double share = fmin(fmax(s->x[o * D + d], 0.0), 1.0);
            int64_t *row = tsim_plan_alloc_row(out, idx);
            int64_t planned = 0;
            for (int r = 0; r < R; r++) {
                const int64_t cnt = tsim_count(rec, r, e);
                if (cnt == 0)
                    continue;
                int64_t keep = (int64_t)floor(share * (double)cnt + 1e-9);
                keep = keep < 0 ? 0 : keep > cnt ? cnt : keep;
                row[r] = cnt - keep;
                planned += cnt - keep;
            }
            out->replicas[idx].planned = planned;
        }
    }
    return TSIM_OK;
}

static int lplb_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    lplb_state *s = state;
    tsim_plan_reset(out);
    out->slot_limited = true;
    if (rec->ranks != s->R || rec->experts != s->E)
        return tsim_error_set(err, TSIM_E_INPUT, "lplb: record is %d x %d, the topology %d x %d", rec->ranks,
                              rec->experts, s->R, s->E);
    if (out->ranks != s->R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "lplb: plan rows are %d wide, R = %d", out->ranks, s->R);
    tsim_record_expert_totals(rec, s->tpe);

    const int64_t *history = NULL;
    if (s->history == TSIM_LPLB_HISTORY_ORACLE) {
        history = s->tpe;
    } else if (s->history == TSIM_LPLB_HISTORY_PREV) {
        int at = layer_find(s, rec->layer);
        history = at >= 0 ? s->layers[at].tpe : NULL; /* a layer's first record: identity */
    }
    if (s->rehome) {
        rehome_experts(s, history);
        int32_t *placement = tsim_plan_placement(out, s->E);
        if (!placement)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for an lplb placement");
        memcpy(placement, s->home, sizeof *placement * (size_t)s->E);
    }
    choose_bundles(s, history);

    int rc = TSIM_OK;
    if (s->solver == TSIM_LPLB_IPM)
        solve_ipm(s, out);
    else
        rc = solve_exact(s, err);
    if (!rc)
        rc = emit_plan(s, rec, out, err);
    if (!rc && s->history == TSIM_LPLB_HISTORY_PREV)
        rc = layer_remember(s, rec->layer, err);
    if (rc)
        tsim_error_prefix(err, "lplb, record %lld", (long long)rec->index);
    return rc;
}

/* A vector's history: the layer's previous record had these tokens per
 * expert. LPLB's placement follows from the history alone, so a previous
 * placement changes nothing here (the session compares with it). */
static int lplb_prime(void *state, int64_t layer, const int64_t *history, const int32_t *placement, tsim_error *err)
{
    lplb_state *s = state;
    (void)placement;
    if (!history || s->history != TSIM_LPLB_HISTORY_PREV)
        return TSIM_OK;
    memcpy(s->tpe, history, sizeof *s->tpe * (size_t)s->E); /* scratch until the next record */
    return layer_remember(s, layer, err);
}

const tsim_lplb_graph *tsim_lplb_state_graph(const void *state)
{
    return &((const lplb_state *)state)->graph;
}

const int32_t *tsim_lplb_state_bundles(const void *state)
{
    return ((const lplb_state *)state)->bundles;
}

const double *tsim_lplb_state_x(const void *state)
{
    return ((const lplb_state *)state)->x;
}

const tsim_lplb_ipm_state *tsim_lplb_state_ipm(const void *state, int group)
{
    const lplb_state *s = state;
    return group >= 0 && group < s->groups ? &s->ipm_state[group] : NULL;
}

double tsim_lplb_state_optimum(const void *state, int group)
{
    const lplb_state *s = state;
    return group >= 0 && group < s->groups ? s->optimum[group] : NAN;
}

int tsim_lplb_state_layers(const void *state)
{
    return ((const lplb_state *)state)->layer_count;
}

/* Which graph `auto` chose, since it depends on the trace's shape. */
static bool lplb_note(const void *state, char *line, size_t n)
{
    const lplb_state *s = state;
    const tsim_lplb_graph *g = &s->graph;
    if (!s->graph_auto)
        return false;
    snprintf(line, n, "graph auto chose %s (%d groups of %d ranks)", g->name, g->groups, g->group_size);
    return true;
}

/* --lplb-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec lplb_options[] = {
    {.name = "lplb-graph", .type = TSIM_OPTION_STRING, .offset = offsetof(tsim_lplb_options, graph), .size = TSIM_LPLB_GRAPH_MAX, .arg = "G", .def = "auto", .help = "auto|cube8|hypercube16|ring8|torus:MxN"},
    {.name = "lplb-solver", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_lplb_options, solver), .choices = "ipm|exact", .arg = "ipm|exact", .def = "ipm", .help = "LPLB LP solver"},
    {.name = "lplb-history", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_lplb_options, history), .choices = "prev|none|oracle", .arg = "prev|none|oracle", .def = "prev", .help = "LPLB replicated-expert choice"},
    {.name = "lplb-rehome", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_lplb_options, rehome), .choices = "none|eplb", .arg = "none|eplb", .def = "none", .help = "LPLB: re-home experts with EPLB before replicating"},
    {0},
};

const tsim_planner_desc tsim_planner_lplb = {
    .name = "lplb",
    .source = "DeepSeek LPLB (deepseek-ai/LPLB)",
    .options_size = sizeof(tsim_lplb_options),
    .state = TSIM_STATE_LAYER_PREFIX,
    .options = lplb_options,
    .note = lplb_note,
    .summary = "DeepSeek LPLB: static replicas on a graph, per-group min-max LP (ipm or exact)",
    .init = lplb_init,
    .plan = lplb_plan,
    .free = lplb_free,
    .prime = lplb_prime,
};
