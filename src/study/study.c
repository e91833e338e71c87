#include "study.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "failif.h"
#include "layers.h"
#include "paper.h"

void tsim_study_init(tsim_study *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->study = name;
    s->params = cJSON_CreateObject();
    s->extra = cJSON_CreateObject();
}

void tsim_study_free(tsim_study *s)
{
    free(s->rows);
    cJSON_Delete(s->params);
    cJSON_Delete(s->extra);
    memset(s, 0, sizeof *s);
}

tsim_study_row *tsim_study_add(tsim_study *s)
{
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 32;
        tsim_study_row *rows = realloc(s->rows, sizeof *rows * (size_t)cap);
        if (!rows)
            return NULL;
        s->rows = rows;
        s->cap = cap;
    }
    tsim_study_row *r = &s->rows[s->n++];
    memset(r, 0, sizeof *r);
    r->ep = -1;
    r->imbalance = NAN;
    r->slots = -1;
    r->lambda_plan = NAN;
    r->lambda_eval = NAN;
    r->flow_hint = -1;
    r->comm_cost = -1;
    r->seeds = 1;
    return r;
}

const char *tsim_study_row_method(const tsim_study_row *r)
{
    return r->method[0] ? r->method : r->planner;
}

void tsim_study_row_from_layer(tsim_study_row *row, const tsim_session *s, int planner, int layer)
{
    tsim_study_row_from_session(row, s, planner);
    const tsim_layer_result *l = &s->results[planner].layers[layer];
    snprintf(row->key, sizeof row->key, "layer%lld", (long long)l->layer);
    row->records = l->records;
    for (int m = 0; m < TSIM_M_COUNT; m++)
        row->metrics[m] = tsim_series_summary(&l->metrics[m]);
}

void tsim_study_row_from_session(tsim_study_row *row, const tsim_session *s, int planner)
{
    snprintf(row->planner, sizeof row->planner, "%s", s->planners[planner].label);
    snprintf(row->method, sizeof row->method, "%s", s->planners[planner].desc->name);
    row->ok = true;
    row->records = s->results[planner].records;
    const int k = s->ptopo && planner < s->n_ptopo ? s->ptopo[planner].slots : s->topo.slots;
    row->planner_slots = k != s->topo.slots ? k : 0;
    for (int m = 0; m < TSIM_M_COUNT; m++) {
        row->metric_on[m] = tsim_session_planner_metric_on(s, planner, m);
        row->metrics[m] = tsim_session_summary(s, planner, (tsim_metric_id)m);
    }
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        row->notes[b] = s->results[planner].note_records[b];
    row->bounds_on = s->bounds != NULL;
    row->bounds_fit = s->bounds ? s->bounds_fit[planner] : 0;
}

static bool stat_of(const tsim_summary *sum, const char *stat, double *v)
{
    if (strcmp(stat, "mean") == 0)
        *v = sum->mean;
    else if (strcmp(stat, "std") == 0)
        *v = sum->std;
    else if (strcmp(stat, "min") == 0)
        *v = sum->min;
    else if (strcmp(stat, "p50") == 0)
        *v = sum->p50;
    else if (strcmp(stat, "p95") == 0)
        *v = sum->p95;
    else if (strcmp(stat, "max") == 0)
        *v = sum->max;
    else
        return false;
    return true;
}

static int metric_index(const char *name)
{
    for (int m = 0; m < TSIM_M_COUNT; m++)
        if (strcmp(tsim_metric_names[m], name) == 0)
            return m;
    return -1;
}

/* vLLM's balancedness of a row, before or after the plan. */
double tsim_study_row_vllm(const tsim_study_row *r, bool after)
{
    return tsim_vllm_balancedness(r->metrics[TSIM_M_LOAD_MEAN].mean,
                                  r->metrics[after ? TSIM_M_LOAD_MAX_AFTER : TSIM_M_LOAD_MAX_BEFORE].mean);
}

int tsim_study_lookup(void *ctx, const char *name, double *value)
{
    const tsim_study *s = ctx;
    /* Split from the right: STAT, METRIC, then PLANNER, then an optional KEY. */
    char buf[256];
    if (strlen(name) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", name);
    char *stat = strrchr(buf, '.');
    if (!stat)
        return -1;
    *stat++ = '\0';
    char *metric = strrchr(buf, '.');
    if (!metric)
        return -1;
    *metric++ = '\0';
    /* vLLM's balancedness is a ratio of two metrics' means: STAT is before or after. */
    const bool vllm = strcmp(metric, "balancedness_vllm") == 0;
    if (vllm && strcmp(stat, "before") != 0 && strcmp(stat, "after") != 0)
        return -1;
    int m = vllm ? TSIM_M_LOAD_MEAN : metric_index(metric);
    if (m < 0)
        return -1;
    const char *planner = buf, *key = NULL;
    /* KEY.PLANNER: the key is everything before the first row key match. */
    for (int i = 0; i < s->n; i++) {
        size_t kl = strlen(s->rows[i].key);
        if (kl && strncmp(buf, s->rows[i].key, kl) == 0 && buf[kl] == '.') {
            key = s->rows[i].key;
            planner = buf + kl + 1;
            break;
        }
    }
    /* Without a key, a planner's row without a key (a replay's whole run)
     * stands for it alone; its keyed rows (the replay's layers) are details. */
    bool whole = false;
    for (int i = 0; i < s->n && !key; i++)
        whole |= s->rows[i].key[0] == '\0' && strcmp(s->rows[i].planner, planner) == 0;
    double sum = 0;
    int n = 0, unmeasured = 0;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok || strcmp(r->planner, planner) != 0)
            continue;
        if (key ? strcmp(r->key, key) != 0 : whole && r->key[0] != '\0')
            continue;
        if (!r->metric_on[m]) {
            unmeasured++;
            continue;
        }
        double v;
        if (vllm)
            v = tsim_study_row_vllm(r, strcmp(stat, "after") == 0);
        else if (!stat_of(&r->metrics[m], stat, &v))
            return -1;
        sum += v;
        n++;
        if (key)
            break;
    }
    if (n == 0)
        return unmeasured ? TSIM_FAILIF_UNMEASURED : -1;
    *value = sum / n;
    return 0;
}

static double param_or(const tsim_study *s, const char *key, double fallback)
{
    const cJSON *j = s->params ? cJSON_GetObjectItemCaseSensitive(s->params, key) : NULL;
    return cJSON_IsNumber(j) ? j->valuedouble : fallback;
}

bool tsim_study_paper_comparable(const tsim_study *s)
{
    return param_or(s, "slots", 2) == 2 && param_or(s, "lambda_plan", 3) == 3 && param_or(s, "lambda_eval", 3) == 3;
}
