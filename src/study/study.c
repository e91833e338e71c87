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
static double row_vllm(const tsim_study_row *r, bool after)
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
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok || !r->metric_on[m] || strcmp(r->planner, planner) != 0)
            continue;
        if (key ? strcmp(r->key, key) != 0 : whole && r->key[0] != '\0')
            continue;
        double v;
        if (vllm)
            v = row_vllm(r, strcmp(stat, "after") == 0);
        else if (!stat_of(&r->metrics[m], stat, &v))
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

int tsim_study_check_gates(const tsim_study *s, const char *const *gates, int n, const char *cmd, FILE *log)
{
    int status = TSIM_OK;
    for (int g = 0; g < n; g++) {
        tsim_error gerr = {0};
        int rc = tsim_failif_check(gates[g], tsim_study_lookup, (void *)s, &gerr);
        if (rc == TSIM_OK)
            continue;
        fprintf(log, "taotsim %s: %s\n", cmd, gerr.msg);
        if (rc != TSIM_E_CHECK || status == TSIM_OK)
            status = rc == TSIM_E_CHECK ? TSIM_E_CHECK : TSIM_E_INPUT;
    }
    return status;
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

cJSON *tsim_study_json(const tsim_study *s)
{
    cJSON *root = tsim_result_json_new();
    cJSON_AddStringToObject(root, "study", s->study);
    cJSON_AddItemToObject(root, "params", cJSON_Duplicate(s->params, 1));
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        cJSON *j = cJSON_CreateObject();
        if (r->axis)
            cJSON_AddStringToObject(j, "axis", r->axis);
        if (r->ep >= 0)
            cJSON_AddNumberToObject(j, "ep", r->ep);
        if (!isnan(r->imbalance))
            cJSON_AddNumberToObject(j, "imbalance", r->imbalance);
        if (r->slots >= 0)
            cJSON_AddNumberToObject(j, "slots", r->slots);
        if (r->planner_slots > 0) /* only where the planner's own K differs */
            cJSON_AddNumberToObject(j, "planner_slots", r->planner_slots);
        if (!isnan(r->lambda_plan))
            cJSON_AddNumberToObject(j, "lambda_plan", r->lambda_plan);
        if (!isnan(r->lambda_eval))
            cJSON_AddNumberToObject(j, "lambda_eval", r->lambda_eval);
        if (r->flow_hint >= 0)
            cJSON_AddBoolToObject(j, "flow_hint", r->flow_hint);
        if (r->comm_cost >= 0)
            cJSON_AddBoolToObject(j, "comm_cost", r->comm_cost);
        cJSON_AddStringToObject(j, "key", r->key);
        cJSON_AddStringToObject(j, "planner", r->planner);
        if (!r->ok) {
            cJSON_AddStringToObject(j, "error", r->error);
            cJSON_AddItemToArray(results, j);
            continue;
        }
        if (r->seeds > 1)
            cJSON_AddNumberToObject(j, "seeds", r->seeds);
        cJSON_AddNumberToObject(j, "records", (double)r->records);
        cJSON *metrics = cJSON_AddObjectToObject(j, "metrics");
        for (int m = 0; m < TSIM_M_COUNT; m++)
            if (r->metric_on[m])
                cJSON_AddItemToObject(metrics, tsim_metric_names[m], tsim_summary_json(&r->metrics[m]));
        if (r->bounds_on && r->bounds_fit) /* --bounds: why excess_* are absent */
            cJSON_AddStringToObject(j, "bounds", tsim_bounds_fit_text(r->bounds_fit));
        cJSON *vllm = cJSON_AddObjectToObject(j, "balancedness_vllm");
        cJSON_AddNumberToObject(vllm, "before", row_vllm(r, false));
        cJSON_AddNumberToObject(vllm, "after", row_vllm(r, true));
        cJSON *notes = NULL;
        for (int b = 0; b < TSIM_NOTE_KINDS; b++)
            if (r->notes[b]) {
                if (!notes)
                    notes = cJSON_AddObjectToObject(j, "notes");
                cJSON_AddNumberToObject(notes, tsim_note_names[b], (double)r->notes[b]);
            }
        /* The paper's figure for this cell, where it has one. */
        tsim_paper_cell pc;
        tsim_paper_ablation pa;
        double speed;
        if (strcmp(s->study, "table1") == 0 && tsim_study_paper_comparable(s) &&
            tsim_paper_table1(r->ep, r->imbalance, tsim_study_row_method(r), &pc)) {
            cJSON *p = cJSON_AddObjectToObject(j, "paper");
            cJSON_AddNumberToObject(p, "improve_pp", pc.improve_pp);
            cJSON_AddNumberToObject(p, "weighted", pc.weighted);
            cJSON_AddNumberToObject(p, "intra", pc.intra);
            cJSON_AddNumberToObject(p, "inter", pc.inter);
        } else if (strcmp(s->study, "ablation") == 0 && tsim_paper_table2(r->flow_hint, r->comm_cost, &pa)) {
            cJSON *p = cJSON_AddObjectToObject(j, "paper");
            cJSON_AddNumberToObject(p, "rho_after", pa.rho_after);
            cJSON_AddNumberToObject(p, "intra", pa.intra);
            cJSON_AddNumberToObject(p, "inter", pa.inter);
            cJSON_AddNumberToObject(p, "weighted", pa.weighted);
        } else if (strcmp(s->study, "scaling") == 0 && r->axis && r->metric_on[TSIM_M_SPEEDUP] &&
                   strcmp(tsim_study_row_method(r), "taot") == 0) {
            double v = strcmp(r->axis, "ep") == 0 ? r->ep : strcmp(r->axis, "slots") == 0 ? r->slots : r->imbalance;
            if (tsim_paper_speedup(r->axis, v, &speed)) {
                cJSON *p = cJSON_AddObjectToObject(j, "paper");
                cJSON_AddNumberToObject(p, "speedup", speed);
            }
        }
        cJSON_AddItemToArray(results, j);
    }
    for (cJSON *e = s->extra ? s->extra->child : NULL; e; e = e->next)
        cJSON_AddItemToObject(root, e->string, cJSON_Duplicate(e, 1));
    return root;
}
