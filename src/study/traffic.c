#include "traffic.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int tsim_traffic_level_parse(const char *text, tsim_traffic_level *out, tsim_error *err)
{
    if (strcmp(text, "node") == 0)
        *out = TSIM_TRAFFIC_NODE;
    else if (strcmp(text, "rank") == 0)
        *out = TSIM_TRAFFIC_RANK;
    else
        return tsim_error_set(err, TSIM_E_INPUT, "--traffic: expected node or rank, got '%s'", text);
    return TSIM_OK;
}

static int units_of(const tsim_topology *topo, tsim_traffic_level level)
{
    if (level == TSIM_TRAFFIC_RANK)
        return topo->ranks;
    return (topo->ranks + topo->ranks_per_node - 1) / topo->ranks_per_node;
}

static inline int unit_of(const tsim_topology *topo, tsim_traffic_level level, int rank)
{
    return level == TSIM_TRAFFIC_RANK ? rank : tsim_node(topo, rank);
}

int tsim_traffic_init(tsim_traffic *t, tsim_traffic_level level, const tsim_session *s, tsim_error *err)
{
    memset(t, 0, sizeof *t);
    t->level = level;
    t->n = units_of(&s->topo, level);
    t->R = s->topo.ranks;
    t->E = s->topo.experts;
    t->rpn = s->topo.ranks_per_node;
    t->n_planners = s->n_planners;
    t->p = calloc((size_t)(s->n_planners > 0 ? s->n_planners : 1), sizeof *t->p);
    if (!t->p)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for traffic matrices");
    const size_t nn = (size_t)t->n * (size_t)t->n;
    for (int i = 0; i < s->n_planners; i++) {
        tsim_traffic_planner *p = &t->p[i];
        p->before = calloc(nn, sizeof *p->before);
        p->after = calloc(nn, sizeof *p->after);
        p->weights = calloc(nn, sizeof *p->weights);
        p->rehomed = calloc(nn, sizeof *p->rehomed);
        p->host = calloc((size_t)t->R, sizeof *p->host);
        p->from_host = s->planners[i].desc->weights_from_host;
        if (!p->before || !p->after || !p->weights || !p->rehomed || !p->host)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for traffic matrices");
    }
    return TSIM_OK;
}

void tsim_traffic_free(tsim_traffic *t)
{
    for (int i = 0; t->p && i < t->n_planners; i++) {
        tsim_traffic_planner *p = &t->p[i];
        free(p->before);
        free(p->after);
        free(p->weights);
        free(p->rehomed);
        free(p->host);
        free(p->previous.layers);
        free(p->previous.placements);
    }
    free(t->p);
    memset(t, 0, sizeof *t);
}

void tsim_traffic_record(const tsim_topology *topo, tsim_traffic_level level, const tsim_record *rec,
                         const tsim_plan *plan, int64_t *before, int64_t *after)
{
    const int R = topo->ranks, E = topo->experts, n = units_of(topo, level);
    const int32_t *home_of = tsim_plan_has_placement(plan) ? plan->placement : topo->home;
    for (int r = 0; r < R; r++) {
        const int64_t *row = rec->counts + (size_t)r * (size_t)E;
        const size_t src = (size_t)unit_of(topo, level, r) * (size_t)n;
        for (int e = 0; e < E; e++) {
            if (!row[e])
                continue;
            before[src + (size_t)unit_of(topo, level, topo->home[e])] += row[e];
            after[src + (size_t)unit_of(topo, level, home_of[e])] += row[e];
        }
    }
    /* What a replica takes leaves home' and reaches the guest. */
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rep = &plan->replicas[i];
        const int64_t *alloc = tsim_plan_alloc_row_c(plan, i);
        const int from = unit_of(topo, level, home_of[rep->expert]), to = unit_of(topo, level, rep->guest);
        for (int r = 0; r < R; r++) {
            if (!alloc[r])
                continue;
            const size_t src = (size_t)unit_of(topo, level, r) * (size_t)n;
            after[src + (size_t)from] -= alloc[r];
            after[src + (size_t)to] += alloc[r];
        }
    }
}

/* Weight moves: every listed replica is a copy from home' to the guest (the
 * evaluator's intra/inter), every changed home' a move (rehomed_*). */
static int add_weights(tsim_traffic *t, tsim_traffic_planner *p, const tsim_topology *topo, const tsim_record *rec,
                       const tsim_plan *plan, tsim_error *err)
{
    const size_t n = (size_t)t->n;
    const bool placed = tsim_plan_has_placement(plan);
    const int32_t *home_of = placed ? plan->placement : topo->home;
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rep = &plan->replicas[i];
        if (p->from_host)
            p->host[rep->guest]++;
        else
            p->weights[(size_t)unit_of(topo, t->level, home_of[rep->expert]) * n +
                       (size_t)unit_of(topo, t->level, rep->guest)]++;
    }
    const int32_t *previous = tsim_previous_placement(&p->previous, topo->experts, rec->layer);
    if (placed || previous) {
        const int32_t *old = previous ? previous : topo->home;
        for (int e = 0; e < topo->experts; e++) {
            if (old[e] == home_of[e])
                continue;
            if (p->from_host)
                p->host[home_of[e]]++;
            else
                p->rehomed[(size_t)unit_of(topo, t->level, old[e]) * n + (size_t)unit_of(topo, t->level, home_of[e])]++;
        }
    }
    return tsim_previous_placement_update(&p->previous, topo->experts, rec->layer, plan, previous, topo->home, err);
}

int tsim_traffic_add(tsim_traffic *t, int planner, const tsim_topology *topo, const tsim_record *rec,
                     const tsim_plan *plan, tsim_error *err)
{
    if (planner < 0 || planner >= t->n_planners)
        return tsim_error_set(err, TSIM_E_INTERNAL, "traffic: no planner %d", planner);
    tsim_traffic_planner *p = &t->p[planner];
    tsim_traffic_record(topo, t->level, rec, plan, p->before, p->after);
    p->records++;
    return add_weights(t, p, topo, rec, plan, err);
}

int64_t tsim_traffic_crossing(const int64_t *m, int n)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                sum += m[(size_t)i * (size_t)n + (size_t)j];
    return sum;
}

tsim_traffic_link tsim_traffic_hottest(const int64_t *m, int n)
{
    tsim_traffic_link l = {.src = -1, .dst = -1};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const int64_t v = m[(size_t)i * (size_t)n + (size_t)j];
            if (i == j)
                continue;
            l.total += v;
            if (v > l.value) {
                l.value = v;
                l.src = i;
                l.dst = j;
            }
        }
    l.share = l.total > 0 ? (double)l.value / (double)l.total : 0.0;
    return l;
}

/* ---- output ------------------------------------------------------------- */

static cJSON *matrix_json(const int64_t *m, int rows, int cols, double scale)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rows; i++) {
        cJSON *row = cJSON_CreateArray();
        if (!row) {
            cJSON_Delete(a);
            return NULL;
        }
        for (int j = 0; j < cols; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber((double)m[(size_t)i * (size_t)cols + (size_t)j] * scale));
        cJSON_AddItemToArray(a, row);
    }
    return a;
}

static cJSON *link_json(const int64_t *m, int n)
{
    tsim_traffic_link l = tsim_traffic_hottest(m, n);
    if (l.src < 0)
        return cJSON_CreateNull();
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "src", l.src);
    cJSON_AddNumberToObject(j, "dst", l.dst);
    cJSON_AddNumberToObject(j, "tokens", (double)l.value);
    cJSON_AddNumberToObject(j, "share", l.share);
    return j;
}

const char *tsim_traffic_level_name(tsim_traffic_level level)
{
    return level == TSIM_TRAFFIC_RANK ? "rank" : "node";
}

static cJSON *planner_summary(const tsim_traffic *t, const tsim_session *s, int i)
{
    const tsim_traffic_planner *p = &t->p[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "label", s->planners[i].label);
    cJSON_AddNumberToObject(j, "records", (double)p->records);
    cJSON_AddNumberToObject(j, "crossing_before", (double)tsim_traffic_crossing(p->before, t->n));
    cJSON_AddNumberToObject(j, "crossing_after", (double)tsim_traffic_crossing(p->after, t->n));
    cJSON_AddItemToObject(j, "hottest_before", link_json(p->before, t->n));
    cJSON_AddItemToObject(j, "hottest_after", link_json(p->after, t->n));
    cJSON_AddStringToObject(j, "weights_from", p->from_host ? "host" : "gpu");
    return j;
}

static void add_scaled(cJSON *j, const char *key, const int64_t *m, int rows, int cols, double scale)
{
    if (scale > 0)
        cJSON_AddItemToObject(j, key, matrix_json(m, rows, cols, scale));
}

cJSON *tsim_traffic_json(const tsim_traffic *t, const tsim_session *s, const char *trace_path)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "study", "traffic");
    if (trace_path)
        cJSON_AddStringToObject(root, "trace", trace_path);
    cJSON_AddStringToObject(root, "level", tsim_traffic_level_name(t->level));
    cJSON_AddNumberToObject(root, "units", t->n);
    cJSON_AddNumberToObject(root, "ranks", t->R);
    cJSON_AddNumberToObject(root, "ranks_per_node", t->rpn);
    cJSON_AddItemToObject(root, "hidden_bytes", t->hidden_bytes > 0 ? cJSON_CreateNumber(t->hidden_bytes)
                                                                    : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "expert_mb", t->expert_mb > 0 ? cJSON_CreateNumber(t->expert_mb) : cJSON_CreateNull());
    cJSON *planners = cJSON_AddArrayToObject(root, "planners");
    for (int i = 0; planners && i < t->n_planners; i++) {
        const tsim_traffic_planner *p = &t->p[i];
        cJSON *j = planner_summary(t, s, i);
        cJSON_AddItemToObject(j, "tokens_before", matrix_json(p->before, t->n, t->n, 1.0));
        cJSON_AddItemToObject(j, "tokens_after", matrix_json(p->after, t->n, t->n, 1.0));
        add_scaled(j, "bytes_before", p->before, t->n, t->n, t->hidden_bytes);
        add_scaled(j, "bytes_after", p->after, t->n, t->n, t->hidden_bytes);
        cJSON_AddItemToObject(j, "weight_copies", matrix_json(p->weights, t->n, t->n, 1.0));
        add_scaled(j, "weight_mb", p->weights, t->n, t->n, t->expert_mb);
        cJSON_AddItemToObject(j, "rehomed", matrix_json(p->rehomed, t->n, t->n, 1.0));
        add_scaled(j, "rehomed_mb", p->rehomed, t->n, t->n, t->expert_mb);
        cJSON_AddItemToObject(j, "host_copies", matrix_json(p->host, 1, t->R, 1.0));
        add_scaled(j, "host_mb", p->host, 1, t->R, t->expert_mb);
        cJSON_AddItemToArray(planners, j);
    }
    if (!planners) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *tsim_traffic_summary_json(const tsim_traffic *t, const tsim_session *s)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "level", tsim_traffic_level_name(t->level));
    cJSON *planners = cJSON_AddArrayToObject(root, "planners");
    for (int i = 0; planners && i < t->n_planners; i++)
        cJSON_AddItemToArray(planners, planner_summary(t, s, i));
    return root;
}
