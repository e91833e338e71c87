/* taotsim advise: scoring the rows, the Pareto set and the recommendation
 * (advise.h). Works on rows alone (with the params), so a study merged from
 * shards is finished exactly like one run whole. */
#include "advise.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double param(const tsim_study *s, const char *key, double fallback)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(s->params, key);
    return cJSON_IsNumber(j) ? j->valuedouble : fallback;
}

/* The evaluator's balancedness (mean / max load after the plan), by name. */
int tsim_advise_balancedness_metric(void)
{
    for (int m = 0; m < TSIM_M_COUNT; m++)
        if (strcmp(tsim_metric_names[m], "balancedness_after") == 0)
            return m;
    return -1;
}

void tsim_advise_score_row(const tsim_study *s, const tsim_study_row *r, tsim_advise_score *out)
{
    const double lambda_eval = param(s, "lambda_eval", 3), mb = param(s, "expert_mb", 0);
    const int k = r->slots > 0 ? r->slots : r->planner_slots;
    const int b = tsim_advise_balancedness_metric();
    out->memory_mb = k * mb;
    out->balancedness = b >= 0 && r->ok ? r->metrics[b].mean : NAN;
    const double ri = r->metric_on[TSIM_M_REHOMED_INTRA] ? r->metrics[TSIM_M_REHOMED_INTRA].mean : 0;
    const double rx = r->metric_on[TSIM_M_REHOMED_INTER] ? r->metrics[TSIM_M_REHOMED_INTER].mean : 0;
    out->moves = ri + rx;
    out->weight_traffic = r->metrics[TSIM_M_WEIGHTED].mean + ri + lambda_eval * rx;
}

/* A setting that reads the record it plans (history oracle) is a bound, not
 * something to deploy: shown, never in the Pareto set or recommended. */
static bool deployable(const tsim_study_row *r)
{
    tsim_advise_setting set;
    return r->ok && tsim_advise_setting_parse(r->key, &set) == 0 && strcmp(set.history, "oracle") != 0;
}

/* a at least as good as b on all three and better on one */
static bool dominates(const tsim_advise_score *a, const tsim_advise_score *b)
{
    bool no_worse = a->balancedness >= b->balancedness && a->memory_mb <= b->memory_mb &&
                    a->weight_traffic <= b->weight_traffic;
    bool better = a->balancedness > b->balancedness || a->memory_mb < b->memory_mb ||
                  a->weight_traffic < b->weight_traffic;
    return no_worse && better;
}

/* The order of the recommendation: least memory, then the fewest weights
 * moved, then the better balance; the earlier row on a tie. */
static bool preferred(const tsim_advise_score *a, const tsim_advise_score *b)
{
    if (a->memory_mb != b->memory_mb)
        return a->memory_mb < b->memory_mb;
    if (a->weight_traffic != b->weight_traffic)
        return a->weight_traffic < b->weight_traffic;
    return a->balancedness > b->balancedness;
}

int tsim_advise_ranked(const tsim_study *s, int *order)
{
    const double target = param(s, "target_balancedness", 0.95);
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        tsim_advise_score sc;
        tsim_advise_score_row(s, &s->rows[i], &sc);
        if (!deployable(&s->rows[i]) || !(sc.balancedness >= target))
            continue;
        /* insertion: stable, so equal rows keep the sweep's order */
        int at = n++;
        for (; at > 0; at--) {
            tsim_advise_score prev;
            tsim_advise_score_row(s, &s->rows[order[at - 1]], &prev);
            if (!preferred(&sc, &prev))
                break;
            order[at] = order[at - 1];
        }
        order[at] = i;
    }
    return n;
}

static void describe(const tsim_study_row *r, char *buf, size_t n)
{
    tsim_advise_setting set;
    tsim_advise_setting_parse(r->key, &set);
    size_t used = (size_t)snprintf(buf, n, "%s", r->planner);
    if (set.slots > 0 && used < n)
        used += (size_t)snprintf(buf + used, n - used, " K=%d", set.slots);
    else if (used < n)
        used += (size_t)snprintf(buf + used, n - used, " (no slot limit, peak %d guests)", r->planner_slots);
    if (set.interval > 0 && used < n)
        used += (size_t)snprintf(buf + used, n - used, " interval %d", set.interval);
    if (set.history[0] && used < n)
        used += (size_t)snprintf(buf + used, n - used, " history %s", set.history);
    if (!isnan(set.lambda_plan) && used < n)
        snprintf(buf + used, n - used, " lambda_plan %g", set.lambda_plan);
}

/* The deployable row with the best mean balancedness (the first on a tie), or -1. */
static int best_balanced(const tsim_study *s, const tsim_advise_score *sc)
{
    int top = -1;
    for (int i = 0; i < s->n; i++)
        if (deployable(&s->rows[i]) && (top < 0 || sc[i].balancedness > sc[top].balancedness))
            top = i;
    return top;
}

static cJSON *recommendation_json(const tsim_study *s, const tsim_advise_score *all, int best, int reaching,
                                  int same_memory, double target)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "target_balancedness", target);
    char what[160], reason[640];
    if (best < 0) {
        const int top = best_balanced(s, all);
        if (top >= 0) {
            describe(&s->rows[top], what, sizeof what);
            snprintf(reason, sizeof reason,
                     "none: no deployable setting reaches balancedness %.2f; the most balanced is %s (%.4f)", target,
                     what, all[top].balancedness);
        } else {
            snprintf(reason, sizeof reason, "none: no deployable setting ran");
        }
        cJSON_AddNullToObject(j, "planner");
        cJSON_AddStringToObject(j, "reason", reason);
        return j;
    }
    const tsim_study_row *r = &s->rows[best];
    tsim_advise_score sc;
    tsim_advise_score_row(s, r, &sc);
    describe(r, what, sizeof what);
    snprintf(reason, sizeof reason,
             "%s: of the %d settings reaching balancedness %.2f, it needs the least memory (%.2f MB per rank)"
             " and, of the %d with that memory, moves the fewest weights (%.2f per record); balancedness %.4f",
             what, reaching, target, sc.memory_mb, same_memory, sc.weight_traffic, sc.balancedness);
    cJSON_AddStringToObject(j, "planner", r->planner);
    cJSON_AddStringToObject(j, "key", r->key);
    cJSON_AddStringToObject(j, "setting", what);
    cJSON_AddNumberToObject(j, "memory_mb", sc.memory_mb);
    cJSON_AddNumberToObject(j, "balancedness", sc.balancedness);
    cJSON_AddNumberToObject(j, "weight_traffic", sc.weight_traffic);
    cJSON_AddStringToObject(j, "reason", reason);
    return j;
}

/* Every row's setting and score, for readers of the JSON and the figures. */
static void settings_json(tsim_study *s, const tsim_advise_score *sc, const bool *pareto, int best)
{
    cJSON *all = cJSON_AddArrayToObject(s->extra, "settings");
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        tsim_advise_setting set;
        tsim_advise_setting_parse(r->key, &set);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "planner", r->planner);
        cJSON_AddStringToObject(j, "key", r->key);
        cJSON_AddNumberToObject(j, "slots", set.slots > 0 ? set.slots : r->planner_slots);
        cJSON_AddBoolToObject(j, "slot_limit", set.slots > 0);
        if (set.interval > 0)
            cJSON_AddNumberToObject(j, "interval", set.interval);
        if (set.history[0])
            cJSON_AddStringToObject(j, "history", set.history);
        if (!isnan(set.lambda_plan))
            cJSON_AddNumberToObject(j, "lambda_plan", set.lambda_plan);
        cJSON_AddNumberToObject(j, "memory_mb", sc[i].memory_mb);
        if (r->ok) {
            cJSON_AddNumberToObject(j, "balancedness", sc[i].balancedness);
            cJSON_AddNumberToObject(j, "weight_traffic", sc[i].weight_traffic);
            cJSON_AddNumberToObject(j, "moves", sc[i].moves);
        } else {
            cJSON_AddStringToObject(j, "error", r->error);
        }
        cJSON_AddBoolToObject(j, "deployable", deployable(r));
        cJSON_AddBoolToObject(j, "pareto", pareto[i]);
        cJSON_AddBoolToObject(j, "recommended", i == best);
        cJSON_AddItemToArray(all, j);
    }
}

int tsim_advise_finish(tsim_study *s, tsim_error *err)
{
    const double target = param(s, "target_balancedness", 0.95);
    tsim_advise_score *sc = calloc((size_t)(s->n ? s->n : 1), sizeof *sc);
    bool *on_front = calloc((size_t)(s->n ? s->n : 1), sizeof *on_front);
    if (!sc || !on_front) {
        free(sc);
        free(on_front);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    for (int i = 0; i < s->n; i++)
        tsim_advise_score_row(s, &s->rows[i], &sc[i]);
    cJSON *pareto = cJSON_AddArrayToObject(s->extra, "pareto");
    int best = -1, reaching = 0;
    for (int i = 0; i < s->n; i++) {
        if (!deployable(&s->rows[i]))
            continue;
        bool dominated = false;
        for (int k = 0; k < s->n && !dominated; k++)
            dominated = k != i && deployable(&s->rows[k]) && dominates(&sc[k], &sc[i]);
        on_front[i] = !dominated;
        if (!dominated) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "planner", s->rows[i].planner);
            cJSON_AddStringToObject(p, "key", s->rows[i].key);
            cJSON_AddItemToArray(pareto, p);
        }
        if (!(sc[i].balancedness >= target))
            continue;
        reaching++;
        if (best < 0 || preferred(&sc[i], &sc[best]))
            best = i;
    }
    int same_memory = 0;
    for (int i = 0; best >= 0 && i < s->n; i++)
        same_memory += deployable(&s->rows[i]) && sc[i].balancedness >= target && sc[i].memory_mb == sc[best].memory_mb;
    cJSON_AddItemToObject(s->extra, "recommendation", recommendation_json(s, sc, best, reaching, same_memory, target));
    settings_json(s, sc, on_front, best);
    free(on_front);
    free(sc);
    return TSIM_OK;
}
