#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "search.h"

const char *const tsim_note_names[TSIM_NOTE_KINDS] = {
    "auction_capped", "ipm_fallback", "threshold_skip", "gpu_fallback", "node_limit",
};

void tsim_planner_result_add_search(tsim_planner_result *res, const tsim_plan *plan)
{
    if (plan->search == TSIM_SEARCH_NONE || plan->search > TSIM_SEARCH_NO_INCUMBENT)
        return;
    res->search_records[plan->search]++;
    if (plan->search == TSIM_SEARCH_STOPPED) {
        res->search_gap_sum += plan->search_gap;
        if (plan->search_gap > res->search_gap_max)
            res->search_gap_max = plan->search_gap;
    }
}

static int session_setup(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots, const int32_t *home,
                         const tsim_planner *planners, int n_planners, double lambda_eval, bool start,
                         tsim_error *err);

int tsim_session_init(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots, const int32_t *home,
                      const tsim_planner *planners, int n_planners, double lambda_eval, tsim_error *err)
{
    return session_setup(s, ranks, experts, ranks_per_node, slots, home, planners, n_planners, lambda_eval, true, err);
}

int tsim_session_init_results(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots,
                              const int32_t *home, const tsim_planner *planners, int n_planners, double lambda_eval,
                              tsim_error *err)
{
    return session_setup(s, ranks, experts, ranks_per_node, slots, home, planners, n_planners, lambda_eval, false,
                         err);
}

/* Every planner's topology with its own K; the evaluator sized for the
 * largest. */
static int planner_topologies(tsim_session *s, const tsim_planner *planners, int n, tsim_error *err)
{
    const tsim_topology *t = &s->topo;
    if (!(s->ptopo = calloc((size_t)(n > 0 ? n : 1), sizeof *s->ptopo)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int widest = -1;
    s->max_slots = t->slots;
    for (int i = 0; i < n; i++) {
        int k, rc = tsim_planner_slots(&planners[i], t, &k, err);
        if (!rc)
            rc = tsim_topology_init(&s->ptopo[i], t->ranks, t->experts, t->ranks_per_node, k, t->home, err);
        if (rc)
            return rc;
        s->n_ptopo = i + 1;
        s->slots_differ |= k != s->ptopo[0].slots;
        if (widest < 0 || k > s->ptopo[widest].slots)
            widest = i;
    }
    if (widest >= 0 && s->ptopo[widest].slots > s->max_slots)
        s->max_slots = s->ptopo[widest].slots;
    s->eval_topo = widest >= 0 && s->ptopo[widest].slots >= t->slots ? &s->ptopo[widest] : t;
    return tsim_evaluator_init(&s->ev, s->eval_topo, err);
}

static int session_setup(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots, const int32_t *home,
                         const tsim_planner *planners, int n_planners, double lambda_eval, bool start,
                         tsim_error *err)
{
    memset(s, 0, sizeof *s);
    s->lambda_eval = lambda_eval;
    int rc = tsim_topology_init(&s->topo, ranks, experts, ranks_per_node, slots, home, err);
    if (rc)
        return rc;
    s->n_planners = 0;
    if ((rc = planner_topologies(s, planners, n_planners, err)))
        goto fail;
    const int K = s->max_slots > 0 ? s->max_slots : 1;
    if ((rc = tsim_plan_init(&s->plan, ranks, ranks * K, err)))
        goto fail;
    s->home_tokens = malloc(sizeof *s->home_tokens * (size_t)ranks);
    s->planners = calloc((size_t)n_planners, sizeof *s->planners);
    s->results = calloc((size_t)n_planners, sizeof *s->results);
    s->previous = calloc((size_t)n_planners, sizeof *s->previous);
    if (!s->planners || !s->results || !s->home_tokens || !s->previous) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto fail;
    }
    s->window = 1;
    for (int i = 0; i < n_planners; i++) {
        s->planners[i] = planners[i];
        s->planners[i].state = NULL;
        s->n_planners = i + 1;
        if (!start)
            continue; /* results only (taotsim merge): nothing plans */
        if ((rc = tsim_planner_start(&s->planners[i], &s->ptopo[i], err)))
            goto fail;
        const tsim_planner_desc *d = s->planners[i].desc;
        int w = d->window && d->plan_batch ? d->window(s->planners[i].state) : 1;
        if (w > s->window)
            s->window = w;
    }
    return TSIM_OK;
fail:
    tsim_session_free(s);
    return rc;
}

void tsim_session_free(tsim_session *s)
{
    for (int i = 0; i < s->n_planners; i++) {
        tsim_planner_stop(&s->planners[i]);
        for (int m = 0; m < TSIM_M_COUNT; m++)
            tsim_series_free(&s->results[i].metrics[m]);
        for (int l = 0; l < s->results[i].n_layers; l++)
            for (int m = 0; m < TSIM_M_COUNT; m++)
                tsim_series_free(&s->results[i].layers[l].metrics[m]);
        free(s->results[i].layers);
        free(s->results[i].runs);
        if (s->previous) {
            free(s->previous[i].layers);
            free(s->previous[i].placements);
        }
    }
    for (int i = 0; s->queue && i < s->window; i++)
        tsim_record_free(&s->queue[i]);
    for (int i = 0; s->batch_plans && i < s->n_planners * s->window; i++)
        tsim_plan_free(&s->batch_plans[i]);
    free(s->queue);
    free(s->queue_ptrs);
    free(s->batch_plans);
    free(s->batch_ns);
    free(s->previous);
    free(s->planners);
    free(s->results);
    free(s->ids);
    free(s->home_tokens);
    tsim_bounds_free(s->bounds);
    free(s->bounds_fit);
    tsim_plan_free(&s->plan);
    tsim_evaluator_free(&s->ev);
    for (int i = 0; s->ptopo && i < s->n_ptopo; i++)
        tsim_topology_free(&s->ptopo[i]);
    free(s->ptopo);
    tsim_topology_free(&s->topo);
    memset(s, 0, sizeof *s);
}

/* Row of the layer's previous placement, or -(insertion point) - 1. */
static int64_t previous_find_key(const void *ctx, int i)
{
    return ((const tsim_previous_placements *)ctx)->layers[i];
}

static int previous_find(const tsim_previous_placements *pp, int64_t layer)
{
    return tsim_search_sorted(pp->count, layer, previous_find_key, pp);
}

const int32_t *tsim_previous_placement(const tsim_previous_placements *pp, int E, int64_t layer)
{
    const int at = previous_find(pp, layer);
    return at >= 0 ? pp->placements + (size_t)at * (size_t)E : NULL;
}

int tsim_previous_placement_put(tsim_previous_placements *pp, int E, int64_t layer, const int32_t *placement,
                                const int32_t *home, tsim_error *err)
{
    int at = previous_find(pp, layer);
    if (at < 0) {
        if (!placement)
            return TSIM_OK; /* the static map is what an unknown layer compares with */
        at = -at - 1;
        if (pp->count == pp->cap) {
            int cap = pp->cap ? 2 * pp->cap : 8;
            int64_t *layers = realloc(pp->layers, sizeof *layers * (size_t)cap);
            if (!layers)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for previous placements");
            pp->layers = layers;
            int32_t *rows = realloc(pp->placements, sizeof *rows * (size_t)cap * (size_t)E);
            if (!rows)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for previous placements");
            pp->placements = rows;
            pp->cap = cap;
        }
        memmove(pp->layers + at + 1, pp->layers + at, sizeof *pp->layers * (size_t)(pp->count - at));
        memmove(pp->placements + (size_t)(at + 1) * (size_t)E, pp->placements + (size_t)at * (size_t)E,
                sizeof *pp->placements * (size_t)(pp->count - at) * (size_t)E);
        pp->layers[at] = layer;
        pp->count++;
    }
    memcpy(pp->placements + (size_t)at * (size_t)E, placement ? placement : home, sizeof *pp->placements * (size_t)E);
    return TSIM_OK;
}

int tsim_previous_placement_update(tsim_previous_placements *pp, int E, int64_t layer, const tsim_plan *plan,
                                   const int32_t *previous, const int32_t *home, tsim_error *err)
{
    if (tsim_plan_has_placement(plan))
        return tsim_previous_placement_put(pp, E, layer, plan->placement, home, err);
    if (previous)
        return tsim_previous_placement_put(pp, E, layer, NULL, home, err);
    return TSIM_OK;
}

int tsim_session_set_previous(tsim_session *s, int planner, int64_t layer, const int32_t *placement,
                              tsim_error *err)
{
    if (planner < 0 || planner >= s->n_planners)
        return tsim_error_set(err, TSIM_E_INTERNAL, "no planner %d in the session", planner);
    for (int e = 0; placement && e < s->topo.experts; e++)
        if (placement[e] < 0 || placement[e] >= s->topo.ranks)
            return tsim_error_set(err, TSIM_E_INPUT, "previous placement puts expert %d on rank %d, not in 0..%d",
                                  e, placement[e], s->topo.ranks - 1);
    return tsim_previous_placement_put(&s->previous[planner], s->topo.experts, layer, placement, s->topo.home, err);
}

bool tsim_session_init_refused(const tsim_planner *planner, int rc, const tsim_error *err)
{
    return rc == TSIM_E_INPUT && (!planner->desc->external || err->declined);
}

/* Plans rec with planner i into plan; *ns is the plan call's wall time. */
static int plan_one(tsim_session *s, int i, const tsim_record *rec, tsim_plan *plan, double *ns, tsim_error *err)
{
    tsim_planner *p = &s->planners[i];
    tsim_plan_reset(plan);
    int64_t t0 = s->timing ? tsim_now_ns() : 0;
    int rc = p->desc->plan(p->state, rec, plan, err);
    int64_t t1 = s->timing ? tsim_now_ns() : 0;
    if (rc) {
        tsim_error_prefix(err, "planner '%s', record %lld", p->label, (long long)rec->index);
        return rc;
    }
    *ns = (double)(t1 - t0);
    return TSIM_OK;
}

static int bounds_fill(tsim_session *s, int i, const tsim_record *rec, const tsim_plan *plan, tsim_metrics *m,
                       tsim_error *err);

/* The layer's results of one planner, added in layer order on first use. */
static int64_t layer_result_key(const void *ctx, int i)
{
    return ((const tsim_layer_result *)ctx)[i].layer;
}

static tsim_layer_result *layer_result(tsim_session *s, tsim_planner_result *res, int64_t layer)
{
    int lo = tsim_search_sorted(res->n_layers, layer, layer_result_key, res->layers);
    if (lo >= 0)
        return &res->layers[lo];
    lo = -lo - 1;
    if (res->n_layers == res->cap_layers) {
        int cap = res->cap_layers ? 2 * res->cap_layers : 16;
        tsim_layer_result *grown = realloc(res->layers, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        res->layers = grown;
        res->cap_layers = cap;
    }
    memmove(&res->layers[lo + 1], &res->layers[lo], sizeof *res->layers * (size_t)(res->n_layers - lo));
    res->n_layers++;
    tsim_layer_result *l = &res->layers[lo];
    memset(l, 0, sizeof *l);
    l->layer = layer;
    if (s->exact_max)
        for (int m = 0; m < TSIM_M_COUNT; m++)
            tsim_series_bound(&l->metrics[m], s->exact_max);
    return l;
}

/* One record's metrics into the planner's series (and its layer's). */
static int push_metrics(tsim_session *s, tsim_planner_result *res, int64_t layer, const tsim_metrics *m,
                        tsim_error *err)
{
    for (int k = 0; k < TSIM_M_COUNT; k++)
        if (tsim_series_push(&res->metrics[k], m->v[k]))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (!s->by_layer)
        return TSIM_OK;
    tsim_layer_result *l = layer_result(s, res, layer);
    if (!l)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int k = 0; k < TSIM_M_COUNT; k++)
        if (tsim_series_push(&l->metrics[k], m->v[k]))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    l->records++;
    return TSIM_OK;
}

/* Evaluates planner i's plan of rec and records its metrics. */
static int score_plan(tsim_session *s, int i, const tsim_record *rec, tsim_plan *plan, double plan_ns,
                      tsim_error *err)
{
    tsim_planner *p = &s->planners[i];
    tsim_metrics m;
    tsim_previous_placements *pp = &s->previous[i];
    const int32_t *previous = tsim_previous_placement(pp, s->topo.experts, rec->layer);
    s->ev.topo = &s->ptopo[i]; /* checked against its own K */
    s->ev.capacity_factor = s->capacity_factor;
    int rc = tsim_evaluate_placed(&s->ev, rec, plan, previous, s->lambda_eval, p->label, &m, err);
    if (rc) {
        /* a plan from outside taotsim that breaks a rule is bad input, not a bug */
        if (p->desc->external)
            err->code = rc = TSIM_E_INPUT;
        return rc;
    }
    s->rehoming = s->rehoming || tsim_plan_has_placement(plan);
    if ((rc = tsim_previous_placement_update(pp, s->topo.experts, rec->layer, plan, previous, s->topo.home, err)))
        return rc;
    m.v[TSIM_M_PLAN_NS] = plan_ns;
    if (s->step_model_on) {
        const int R = s->topo.ranks;
        for (int r = 0; r < R; r++)
            s->home_tokens[r] = s->ev.load_after[r] - s->ev.guest_tokens[r];
        double step = tsim_step_time_ms(&s->step_model, R, s->home_tokens, s->ev.guest_tokens,
                                        s->ev.guest_intra, s->ev.guest_inter);
        double base = tsim_step_time_static_ms(&s->step_model, R, s->ev.load_before);
        m.v[TSIM_M_STEP_MS] = step;
        m.v[TSIM_M_SPEEDUP] = step > 0 ? base / step : 1.0;
    }
    if ((rc = bounds_fill(s, i, rec, plan, &m, err)))
        return rc;
    tsim_planner_result *res = &s->results[i];
    if ((rc = push_metrics(s, res, rec->layer, &m, err)))
        return rc;
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        if (plan->notes & (1u << b))
            res->note_records[b]++;
    tsim_planner_result_add_search(res, plan);
    res->records++;
    if (s->hook && (rc = s->hook(s->hook_ctx, s, i, rec, plan, &m, err)))
        return rc;
    return TSIM_OK;
}

static bool windowed(const tsim_session *s, int i)
{
    const tsim_planner_desc *d = s->planners[i].desc;
    return d->window && d->plan_batch && d->window(s->planners[i].state) > 1;
}

/* The held-back records and the windowed planners' plans, allocated on the
 * first record that is held back. */
static int queue_alloc(tsim_session *s, tsim_error *err)
{
    const int W = s->window, n = s->n_planners;
    s->queue = calloc((size_t)W, sizeof *s->queue);
    s->queue_ptrs = calloc((size_t)W, sizeof *s->queue_ptrs);
    s->batch_plans = calloc((size_t)n * (size_t)W, sizeof *s->batch_plans);
    s->batch_ns = calloc((size_t)n, sizeof *s->batch_ns);
    if (!s->queue || !s->queue_ptrs || !s->batch_plans || !s->batch_ns)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the pipeline");
    const int R = s->topo.ranks, slots = s->max_slots > 0 ? s->max_slots : 1;
    for (int k = 0; k < W; k++) {
        if (tsim_record_alloc(&s->queue[k], R, s->topo.experts, err))
            return TSIM_E_INTERNAL;
        s->queue_ptrs[k] = &s->queue[k];
    }
    for (int i = 0; i < n; i++) {
        if (!windowed(s, i))
            continue;
        for (int k = 0; k < W; k++)
            if (tsim_plan_init(&s->batch_plans[(size_t)i * (size_t)W + (size_t)k], R, R * slots, err))
                return TSIM_E_INTERNAL;
    }
    return TSIM_OK;
}

/* Plans and scores a record with every planner right away. */
static int record_now(tsim_session *s, const tsim_record *rec, tsim_error *err)
{
    for (int i = 0; i < s->n_planners; i++) {
        double ns = 0;
        int rc = plan_one(s, i, rec, &s->plan, &ns, err);
        if (rc == TSIM_OK)
            rc = score_plan(s, i, rec, &s->plan, ns, err);
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

int tsim_session_drain(tsim_session *s, tsim_error *err)
{
    const int n = s->queued, W = s->window;
    s->queued = 0;
    if (n == 0)
        return TSIM_OK;
    /* The windowed planners first, a batch each (the records in flight
     * together); then every record in order, as record_now would. */
    for (int i = 0; i < s->n_planners; i++) {
        if (!windowed(s, i))
            continue;
        tsim_planner *p = &s->planners[i];
        tsim_plan *plans = &s->batch_plans[(size_t)i * (size_t)W];
        for (int k = 0; k < n; k++)
            tsim_plan_reset(&plans[k]);
        int64_t t0 = s->timing ? tsim_now_ns() : 0;
        int rc = p->desc->plan_batch(p->state, s->queue_ptrs, n, plans, err);
        int64_t t1 = s->timing ? tsim_now_ns() : 0;
        if (rc) {
            /* plan_batch names the record ("record N: ..."); the message
             * reads as record_now's would */
            char msg[TSIM_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            snprintf(err->msg, sizeof err->msg, "planner '%s', %s", p->label, msg);
            return rc;
        }
        s->batch_ns[i] = (double)(t1 - t0) / n;
    }
    for (int k = 0; k < n; k++) {
        const tsim_record *rec = s->queue_ptrs[k];
        for (int i = 0; i < s->n_planners; i++) {
            int rc;
            if (windowed(s, i)) {
                rc = score_plan(s, i, rec, &s->batch_plans[(size_t)i * (size_t)W + (size_t)k], s->batch_ns[i], err);
            } else {
                double ns = 0;
                rc = plan_one(s, i, rec, &s->plan, &ns, err);
                if (rc == TSIM_OK)
                    rc = score_plan(s, i, rec, &s->plan, ns, err);
            }
            if (rc)
                return rc;
        }
    }
    return TSIM_OK;
}

int tsim_session_record(tsim_session *s, const tsim_record *rec, tsim_error *err)
{
    if (s->keep_ids) {
        if (s->n_ids == s->cap_ids) {
            int64_t cap = s->cap_ids ? s->cap_ids * 2 : 256;
            tsim_record_id *ids = realloc(s->ids, sizeof *ids * (size_t)cap);
            if (!ids)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            s->ids = ids;
            s->cap_ids = cap;
        }
        s->ids[s->n_ids++] = (tsim_record_id){rec->index, rec->microbatch, rec->layer};
    }
    if (!s->pipeline || s->window <= 1)
        return record_now(s, rec, err);
    if (!s->queue) {
        int rc = queue_alloc(s, err);
        if (rc)
            return rc;
    }
    if (rec->ranks != s->topo.ranks || rec->experts != s->topo.experts)
        return tsim_error_set(err, TSIM_E_INTERNAL, "record %lld is %d x %d, topology is %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, s->topo.ranks, s->topo.experts);
    tsim_record *dst = &s->queue[s->queued++];
    int64_t *counts = dst->counts;
    *dst = *rec;
    dst->counts = counts;
    memcpy(counts, rec->counts, sizeof *counts * (size_t)rec->ranks * (size_t)rec->experts);
    return s->queued == s->window ? tsim_session_drain(s, err) : TSIM_OK;
}

bool tsim_session_metric_on(const tsim_session *s, int metric)
{
    if (metric == TSIM_M_PLAN_NS)
        return s->timing;
    if (metric == TSIM_M_STEP_MS || metric == TSIM_M_SPEEDUP)
        return s->step_model_on;
    if (metric == TSIM_M_REHOMED_INTRA || metric == TSIM_M_REHOMED_INTER)
        return s->rehoming;
    if (metric == TSIM_M_EXCESS_IMBALANCE || metric == TSIM_M_EXCESS_COST)
        return s->bounds != NULL;
    if (metric == TSIM_M_DROPPED_BEFORE || metric == TSIM_M_DROPPED_AFTER)
        return s->capacity_factor > 0;
    return true;
}

bool tsim_session_planner_metric_on(const tsim_session *s, int planner, int metric)
{
    if (!tsim_session_metric_on(s, metric))
        return false;
    if (metric == TSIM_M_EXCESS_IMBALANCE || metric == TSIM_M_EXCESS_COST)
        return s->bounds_fit[planner] == TSIM_BOUNDS_IN_MODEL;
    return true;
}

int tsim_session_enable_bounds(tsim_session *s, tsim_error *err)
{
    if (s->bounds)
        return TSIM_OK;
    s->bounds_fit = calloc((size_t)(s->n_planners > 0 ? s->n_planners : 1), sizeof *s->bounds_fit);
    if (!s->bounds_fit)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for --bounds");
    return tsim_bounds_new(&s->bounds, s->n_planners, s->lambda_eval, err);
}

/* The excess metrics of planner i's plan (with --bounds). */
static int bounds_fill(tsim_session *s, int i, const tsim_record *rec, const tsim_plan *plan, tsim_metrics *m,
                       tsim_error *err)
{
    if (!s->bounds)
        return TSIM_OK;
    tsim_bounds_fit fit;
    int rc = tsim_bounds_fill(s->bounds, i, &s->ptopo[i], rec, plan, m, &fit, err);
    if (rc) {
        tsim_error_prefix(err, "planner '%s'", s->planners[i].label);
        return rc;
    }
    if (fit != TSIM_BOUNDS_IN_MODEL && s->bounds_fit[i] == TSIM_BOUNDS_IN_MODEL)
        s->bounds_fit[i] = fit;
    return TSIM_OK;
}

tsim_summary tsim_session_summary(const tsim_session *s, int planner, tsim_metric_id metric)
{
    return tsim_series_summary(&s->results[planner].metrics[metric]);
}

void tsim_session_bound_memory(tsim_session *s, size_t exact_max)
{
    if (s->keep_ids)
        return;
    s->exact_max = exact_max;
    for (int i = 0; i < s->n_planners; i++)
        for (int m = 0; m < TSIM_M_COUNT; m++)
            tsim_series_bound(&s->results[i].metrics[m], exact_max);
}

int tsim_session_commit_begin(tsim_session *s, const tsim_record *rec, tsim_error *err)
{
    if (!s->keep_ids)
        return TSIM_OK;
    if (s->n_ids == s->cap_ids) {
        int64_t cap = s->cap_ids ? s->cap_ids * 2 : 256;
        tsim_record_id *ids = realloc(s->ids, sizeof *ids * (size_t)cap);
        if (!ids)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        s->ids = ids;
        s->cap_ids = cap;
    }
    s->ids[s->n_ids++] = (tsim_record_id){rec->index, rec->microbatch, rec->layer};
    return TSIM_OK;
}

/* Appends a record's sequence number to the planner's runs. */
static int runs_add(tsim_planner_result *res, int64_t seq, tsim_error *err)
{
    if (res->n_runs && res->runs[2 * res->n_runs - 2] + res->runs[2 * res->n_runs - 1] == seq) {
        res->runs[2 * res->n_runs - 1]++;
        return TSIM_OK;
    }
    if (res->n_runs == res->cap_runs) {
        int64_t cap = res->cap_runs ? 2 * res->cap_runs : 16;
        int64_t *runs = realloc(res->runs, sizeof *runs * 2 * (size_t)cap);
        if (!runs)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        res->runs = runs;
        res->cap_runs = cap;
    }
    res->runs[2 * res->n_runs] = seq;
    res->runs[2 * res->n_runs + 1] = 1;
    res->n_runs++;
    return TSIM_OK;
}

int tsim_session_commit(tsim_session *s, int planner, int64_t seq, const tsim_record *rec, tsim_plan *plan,
                        const tsim_metrics *m_in, uint32_t notes, bool placed, tsim_error *err)
{
    tsim_planner_result *res = &s->results[planner];
    if (placed)
        s->rehoming = true;
    tsim_metrics mb = *m_in;
    const tsim_metrics *m = &mb;
    int rc = bounds_fill(s, planner, rec, plan, &mb, err);
    if (rc)
        return rc;
    if ((rc = push_metrics(s, res, rec->layer, m, err)))
        return rc;
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        if (notes & (1u << b))
            res->note_records[b]++;
    tsim_planner_result_add_search(res, plan);
    res->records++;
    if (s->keep_indices && (rc = runs_add(res, seq, err)))
        return rc;
    if (s->hook && (rc = s->hook(s->hook_ctx, s, planner, rec, plan, m, err)))
        return rc;
    return TSIM_OK;
}
