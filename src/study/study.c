#include "study.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "failif.h"
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

void tsim_study_row_from_session(tsim_study_row *row, const tsim_session *s, int planner)
{
    snprintf(row->planner, sizeof row->planner, "%s", s->planners[planner].label);
    snprintf(row->method, sizeof row->method, "%s", s->planners[planner].desc->name);
    row->ok = true;
    row->records = s->results[planner].records;
    const int k = s->ptopo && planner < s->n_ptopo ? s->ptopo[planner].slots : s->topo.slots;
    row->planner_slots = k != s->topo.slots ? k : 0;
    for (int m = 0; m < TSIM_M_COUNT; m++) {
        row->metric_on[m] = tsim_session_metric_on(s, m);
        row->metrics[m] = tsim_session_summary(s, planner, (tsim_metric_id)m);
    }
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        row->notes[b] = s->results[planner].note_records[b];
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
    int m = metric_index(metric);
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
    double sum = 0;
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok || !r->metric_on[m] || strcmp(r->planner, planner) != 0)
            continue;
        if (key && strcmp(r->key, key) != 0)
            continue;
        double v;
        if (!stat_of(&r->metrics[m], stat, &v))
            return -1;
        sum += v;
        n++;
        if (key)
            break;
    }
    if (n == 0)
        return -1;
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
