#include "replay_output.h"
#include "traffic_print.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers_print.h"
#include "vector.h"

cJSON *tsim_planner_result_json(const tsim_session *s, int i)
{
    const tsim_planner *p = &s->planners[i];
    const tsim_planner_result *res = &s->results[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "planner", p->label);
    cJSON_AddStringToObject(j, "algorithm", p->desc->name);
    if (s->slots_differ) /* each planner's slot budget, stated when they differ */
        cJSON_AddNumberToObject(j, "slots", s->ptopo[i].slots);
    cJSON *opts = tsim_vector_options_json(p, s->topo.slots, s->topo.ranks_per_node);
    cJSON_DeleteItemFromObjectCaseSensitive(opts, "slots");
    cJSON_DeleteItemFromObjectCaseSensitive(opts, "ranks_per_node");
    cJSON_AddItemToObject(j, "options", opts);
    cJSON_AddNumberToObject(j, "record_count", (double)res->records);
    cJSON *metrics = cJSON_AddObjectToObject(j, "metrics");
    for (int m = 0; m < TSIM_M_COUNT; m++) {
        if (!tsim_session_planner_metric_on(s, i, m))
            continue;
        tsim_summary sum = tsim_series_summary(&res->metrics[m]);
        cJSON_AddItemToObject(metrics, tsim_metric_names[m], tsim_summary_json(&sum));
    }
    if (s->bounds && s->bounds_fit[i]) /* --bounds: why this planner has no excess metrics */
        cJSON_AddStringToObject(j, "bounds", tsim_bounds_fit_text(s->bounds_fit[i]));
    cJSON_AddItemToObject(j, "balancedness_vllm", tsim_vllm_balancedness_json(res->metrics));
    if (s->by_layer)
        cJSON_AddItemToObject(j, "layers", tsim_layers_json(s, i));
    cJSON *notes = cJSON_AddObjectToObject(j, "notes");
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        if (res->note_records[b])
            cJSON_AddNumberToObject(notes, tsim_note_names[b], (double)res->note_records[b]);
    const int64_t *sr = res->search_records;
    if (sr[TSIM_SEARCH_PROVED] + sr[TSIM_SEARCH_STOPPED] + sr[TSIM_SEARCH_NO_INCUMBENT] > 0) {
        /* a budgeted search (optimal): how many records it proved, and the
         * gap (objective - proven bound) where the budget stopped it */
        cJSON *search = cJSON_AddObjectToObject(j, "search");
        cJSON_AddNumberToObject(search, "proved", (double)sr[TSIM_SEARCH_PROVED]);
        cJSON_AddNumberToObject(search, "stopped", (double)sr[TSIM_SEARCH_STOPPED]);
        cJSON_AddNumberToObject(search, "no_incumbent", (double)sr[TSIM_SEARCH_NO_INCUMBENT]);
        if (sr[TSIM_SEARCH_STOPPED] > 0) {
            cJSON_AddNumberToObject(search, "gap_mean", res->search_gap_sum / (double)sr[TSIM_SEARCH_STOPPED]);
            cJSON_AddNumberToObject(search, "gap_max", res->search_gap_max);
        }
    }
    return j;
}

cJSON *tsim_session_params_json(const tsim_session *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "slots", s->topo.slots);
    cJSON_AddNumberToObject(j, "lambda_plan", s->n_planners ? s->planners[0].common.lambda_plan : 3.0);
    cJSON_AddNumberToObject(j, "lambda_eval", s->lambda_eval);
    return j;
}

static void fmt(char *buf, size_t n, double v, int dec)
{
    tsim_fmt_num(buf, n, v, dec);
}

/* The table's note for a budgeted search (optimal): records proven, stopped
 * with an incumbent (and its gap to the proven bound), without one. */
static void search_note(FILE *out, const char *label, const tsim_planner_result *res)
{
    const int64_t *sr = res->search_records;
    if (sr[TSIM_SEARCH_PROVED] + sr[TSIM_SEARCH_STOPPED] + sr[TSIM_SEARCH_NO_INCUMBENT] == 0)
        return;
    fprintf(out, "\n%s: proved optimal in %lld of %lld records", label, (long long)sr[TSIM_SEARCH_PROVED],
            (long long)res->records);
    if (sr[TSIM_SEARCH_STOPPED] > 0) {
        char mean[32], max[32];
        fmt(mean, sizeof mean, res->search_gap_sum / (double)sr[TSIM_SEARCH_STOPPED], 6);
        fmt(max, sizeof max, res->search_gap_max, 6);
        fprintf(out, "; stopped at the budget in %lld (gap to the bound: mean %s, max %s)",
                (long long)sr[TSIM_SEARCH_STOPPED], mean, max);
    }
    if (sr[TSIM_SEARCH_NO_INCUMBENT] > 0)
        fprintf(out, "; no solution within the budget in %lld", (long long)sr[TSIM_SEARCH_NO_INCUMBENT]);
    fprintf(out, "\n");
}

static double mean_of(const tsim_session *s, int p, int m)
{
    return tsim_series_mean(&s->results[p].metrics[m]);
}

/* Per-record output needs every value: false when a series went bounded. */
static bool all_exact(const tsim_session *s)
{
    for (int p = 0; p < s->n_planners; p++)
        for (int m = 0; m < TSIM_M_COUNT; m++)
            if (!tsim_series_exact(&s->results[p].metrics[m]))
                return false;
    return true;
}

static int print_summary_table(FILE *out, const tsim_session *s, tsim_format format)
{
    if (format == TSIM_FORMAT_CSV) {
        fputs("planner,metric,mean,std,min,p50,p95,max\n", out);
        for (int p = 0; p < s->n_planners; p++)
            for (int m = 0; m < TSIM_M_COUNT; m++) {
                if (!tsim_session_planner_metric_on(s, p, m))
                    continue;
                tsim_summary sum = tsim_series_summary(&s->results[p].metrics[m]);
                fprintf(out, "%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", s->planners[p].label,
                        tsim_metric_names[m], sum.mean, sum.std, sum.min, sum.p50, sum.p95, sum.max);
            }
        return 0;
    }
    /* The rehomed columns sit beside weighted (not inside it, eplb.md 1.2) and
     * appear only when some plan re-homed, so other tables keep their bytes. */
    enum { MAX_COLS = 24 };
    const char *headers[MAX_COLS] = {"planner",    "records", "rho before %", "rho after %", "balancedness before",
                                     "balancedness after", "vLLM balancedness before", "vLLM balancedness after"};
    int ncols = 8;
    const bool capacity = tsim_session_metric_on(s, TSIM_M_DROPPED_BEFORE);
    if (capacity) {
        headers[ncols++] = "dropped before";
        headers[ncols++] = "dropped after";
    }
    headers[ncols++] = "improve pp";
    headers[ncols++] = "intra";
    headers[ncols++] = "inter";
    headers[ncols++] = "weighted";
    if (s->rehoming) {
        headers[ncols++] = "rehomed intra";
        headers[ncols++] = "rehomed inter";
    }
    headers[ncols++] = "offloaded";
    headers[ncols++] = "x-node tokens before";
    headers[ncols++] = "x-node tokens after";
    if (s->timing)
        headers[ncols++] = "plan us p50";
    if (s->step_model_on) {
        headers[ncols++] = "step ms (model)";
        headers[ncols++] = "speedup (model)";
    }
    if (s->bounds) {
        headers[ncols++] = "excess imbalance pp";
        headers[ncols++] = "excess cost";
    }
    tsim_table t;
    if (tsim_table_init(&t, ncols, headers))
        return -1;
    for (int p = 0; p < s->n_planners; p++) {
        char c[MAX_COLS][48];
        snprintf(c[0], sizeof c[0], "%s", s->planners[p].label);
        snprintf(c[1], sizeof c[1], "%lld", (long long)s->results[p].records);
        fmt(c[2], sizeof c[2], 100.0 * mean_of(s, p, TSIM_M_RHO_BEFORE), 2);
        fmt(c[3], sizeof c[3], 100.0 * mean_of(s, p, TSIM_M_RHO_AFTER), 2);
        fmt(c[4], sizeof c[4], mean_of(s, p, TSIM_M_BALANCEDNESS_BEFORE), 4);
        fmt(c[5], sizeof c[5], mean_of(s, p, TSIM_M_BALANCEDNESS_AFTER), 4);
        const double load_mean = mean_of(s, p, TSIM_M_LOAD_MEAN);
        fmt(c[6], sizeof c[6], tsim_vllm_balancedness(load_mean, mean_of(s, p, TSIM_M_LOAD_MAX_BEFORE)), 4);
        fmt(c[7], sizeof c[7], tsim_vllm_balancedness(load_mean, mean_of(s, p, TSIM_M_LOAD_MAX_AFTER)), 4);
        int k = 8;
        if (capacity) {
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_DROPPED_BEFORE), 1);
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_DROPPED_AFTER), 1);
        }
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_IMPROVE_PP), 2);
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_INTRA), 2);
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_INTER), 2);
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_WEIGHTED), 2);
        if (s->rehoming) {
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_REHOMED_INTRA), 2);
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_REHOMED_INTER), 2);
        }
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_OFFLOADED), 1);
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_TRAFFIC_INTER_BEFORE), 1);
        fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_TRAFFIC_INTER_AFTER), 1);
        if (s->timing) {
            tsim_summary ns = tsim_series_summary(&s->results[p].metrics[TSIM_M_PLAN_NS]);
            fmt(c[k++], sizeof c[0], ns.p50 / 1000.0, 1);
        }
        if (s->step_model_on) {
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_STEP_MS), 3);
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_SPEEDUP), 3);
        }
        if (s->bounds && s->bounds_fit[p]) {
            snprintf(c[k++], sizeof c[0], "n/a (%s)", tsim_bounds_fit_text(s->bounds_fit[p]));
            snprintf(c[k++], sizeof c[0], "n/a");
        } else if (s->bounds) {
            fmt(c[k++], sizeof c[0], 100.0 * mean_of(s, p, TSIM_M_EXCESS_IMBALANCE), 3);
            fmt(c[k++], sizeof c[0], mean_of(s, p, TSIM_M_EXCESS_COST), 2);
        }
        const char *cells[MAX_COLS];
        for (int q = 0; q < ncols; q++)
            cells[q] = c[q];
        tsim_table_add_row(&t, cells);
    }
    tsim_table_print(&t, out, format);
    tsim_table_free(&t);
    for (int p = 0; p < s->n_planners; p++)
        for (int b = 0; b < TSIM_NOTE_KINDS; b++)
            if (s->results[p].note_records[b])
                fprintf(out, "\n%s: %s in %lld of %lld records\n", s->planners[p].label, tsim_note_names[b],
                        (long long)s->results[p].note_records[b], (long long)s->results[p].records);
    for (int p = 0; p < s->n_planners; p++)
        search_note(out, s->planners[p].label, &s->results[p]);
    return 0;
}

/* Per-record columns: the metrics of model.md, rehomed_* right after weighted
 * when some plan re-homed, then plan_ns when timed. */
static int per_record_columns(const tsim_session *s, int *metrics)
{
    static const int base[] = {TSIM_M_RHO_BEFORE, TSIM_M_RHO_AFTER, TSIM_M_BALANCEDNESS_BEFORE,
                               TSIM_M_BALANCEDNESS_AFTER, TSIM_M_IMPROVE_PP, TSIM_M_INTRA,
                               TSIM_M_INTER, TSIM_M_WEIGHTED};
    static const int traffic[] = {TSIM_M_OFFLOADED, TSIM_M_TRAFFIC_INTER_BEFORE, TSIM_M_TRAFFIC_INTER_AFTER};
    int n = 0;
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++)
        metrics[n++] = base[k];
    if (tsim_session_metric_on(s, TSIM_M_DROPPED_BEFORE)) {
        metrics[n++] = TSIM_M_DROPPED_BEFORE;
        metrics[n++] = TSIM_M_DROPPED_AFTER;
    }
    if (s->rehoming) {
        metrics[n++] = TSIM_M_REHOMED_INTRA;
        metrics[n++] = TSIM_M_REHOMED_INTER;
    }
    for (size_t k = 0; k < sizeof traffic / sizeof traffic[0]; k++)
        metrics[n++] = traffic[k];
    if (s->timing)
        metrics[n++] = TSIM_M_PLAN_NS;
    if (s->bounds) {
        metrics[n++] = TSIM_M_EXCESS_IMBALANCE;
        metrics[n++] = TSIM_M_EXCESS_COST;
    }
    return n;
}

static int print_per_record(FILE *out, const tsim_session *s, tsim_format format)
{
    enum { ID_COLS = 4 };
    int metrics[TSIM_M_COUNT];
    const int n_metrics = per_record_columns(s, metrics);
    const char *headers[ID_COLS + TSIM_M_COUNT] = {"record", "microbatch", "layer", "planner"};
    for (int k = 0; k < n_metrics; k++)
        headers[ID_COLS + k] = tsim_metric_names[metrics[k]];
    const int ncols = ID_COLS + n_metrics;
    tsim_table t;
    if (tsim_table_init(&t, ncols, headers))
        return -1;
    for (int64_t r = 0; r < s->n_ids; r++) {
        for (int p = 0; p < s->n_planners; p++) {
            char c[ID_COLS + TSIM_M_COUNT][48];
            snprintf(c[0], sizeof c[0], "%lld", (long long)s->ids[r].index);
            snprintf(c[1], sizeof c[1], "%lld", (long long)s->ids[r].microbatch);
            snprintf(c[2], sizeof c[2], "%lld", (long long)s->ids[r].layer);
            snprintf(c[3], sizeof c[3], "%s", s->planners[p].label);
            for (int k = 0; k < n_metrics; k++) {
                double v = s->results[p].metrics[metrics[k]].values[r];
                if (isnan(v)) /* an excess metric of a plan outside the bounds' model */
                    snprintf(c[ID_COLS + k], sizeof c[0], "n/a");
                else
                    snprintf(c[ID_COLS + k], sizeof c[0], metrics[k] == TSIM_M_PLAN_NS ? "%.0f" : "%.10g", v);
            }
            const char *cells[ID_COLS + TSIM_M_COUNT];
            for (int k = 0; k < ncols; k++)
                cells[k] = c[k];
            tsim_table_add_row(&t, cells);
        }
    }
    tsim_table_print(&t, out, format);
    tsim_table_free(&t);
    return 0;
}

static cJSON *trace_json(const tsim_replay_output_options *o)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "path", o->trace_path ? o->trace_path : "");
    cJSON_AddNumberToObject(j, "records", (double)o->records);
    if (o->header) {
        cJSON_AddNumberToObject(j, "experts", o->header->experts);
        cJSON_AddNumberToObject(j, "ep", o->header->ep);
        cJSON_AddNumberToObject(j, "ranks_per_node", o->header->ranks_per_node);
        cJSON_AddItemToObject(j, "meta", o->header->meta ? cJSON_Duplicate(o->header->meta, 1) : cJSON_CreateObject());
    }
    return j;
}

cJSON *tsim_replay_json(const tsim_session *s, const tsim_replay_output_options *o)
{
    cJSON *root = tsim_result_json_new();
    cJSON_AddStringToObject(root, "study", "replay");
    cJSON_AddItemToObject(root, "trace", trace_json(o));
    cJSON_AddItemToObject(root, "params", tsim_session_params_json(s));
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    for (int p = 0; p < s->n_planners; p++) {
        cJSON *r = tsim_planner_result_json(s, p);
        if (o->per_record) {
            cJSON *recs = cJSON_AddArrayToObject(r, "records");
            for (int64_t i = 0; i < s->n_ids; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddNumberToObject(x, "record", (double)s->ids[i].index);
                cJSON_AddNumberToObject(x, "microbatch", (double)s->ids[i].microbatch);
                cJSON_AddNumberToObject(x, "layer", (double)s->ids[i].layer);
                for (int m = 0; m < TSIM_M_COUNT; m++) {
                    if (!tsim_session_planner_metric_on(s, p, m))
                        continue;
                    cJSON_AddNumberToObject(x, tsim_metric_names[m], s->results[p].metrics[m].values[i]);
                }
                cJSON_AddItemToArray(recs, x);
            }
        }
        cJSON_AddItemToArray(results, r);
    }
    if (o->traffic)
        cJSON_AddItemToObject(root, "traffic", tsim_traffic_summary_json(o->traffic, s));
    return root;
}

int tsim_replay_output_print(FILE *out, const tsim_session *s, const tsim_replay_output_options *o, tsim_error *err)
{
    if (o->per_record && !all_exact(s))
        return tsim_error_set(err, TSIM_E_INTERNAL, "per-record output asked of a bounded-memory session");
    if (o->format == TSIM_FORMAT_JSON) {
        cJSON *root = tsim_replay_json(s, o);
        int rc = root ? tsim_json_print(out, root) : -1;
        cJSON_Delete(root);
        return rc ? tsim_error_set(err, TSIM_E_INTERNAL, "out of memory printing JSON") : TSIM_OK;
    }
    if (o->format == TSIM_FORMAT_CSV && o->per_record)
        return print_per_record(out, s, o->format) ? tsim_error_set(err, TSIM_E_INTERNAL, "out of memory") : 0;
    if (o->format == TSIM_FORMAT_CSV && s->by_layer) /* one table per CSV: the finer one */
        return tsim_layers_print(out, s, o->format) ? tsim_error_set(err, TSIM_E_INTERNAL, "out of memory") : 0;
    if (o->format == TSIM_FORMAT_MD) {
        fprintf(out, "# replay: %s (%lld records, EP %d, %d experts, %d ranks/node, K = %d, lambda_eval = %g)\n\n",
                o->trace_path ? o->trace_path : "-", (long long)o->records, s->topo.ranks, s->topo.experts,
                s->topo.ranks_per_node, s->topo.slots, s->lambda_eval);
        if (s->slots_differ) {
            fputs("Slot budget per planner:", out);
            for (int i = 0; i < s->n_planners; i++)
                fprintf(out, "%s %s K = %d", i ? "," : "", s->planners[i].label, s->ptopo[i].slots);
            fputs(".\n\n", out);
        }
    }
    if (print_summary_table(out, s, o->format))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (s->step_model_on && o->format == TSIM_FORMAT_MD)
        fputs("\nstep ms and speedup come from the step-time model: an estimate, not a measurement.\n", out);
    if (s->bounds && o->format == TSIM_FORMAT_MD)
        fputs("\nexcess imbalance and excess cost (--bounds): how far each plan is from proven lower bounds at its "
              "own K, in percentage points of rho_after at its own weighted cost, and in weighted cost at its own "
              "rho_after (mean per record); n/a for planners outside the bounds' model.\n",
              out);
    if (s->rehoming && o->format == TSIM_FORMAT_MD)
        fputs("\nrehomed intra/inter: experts whose home rank changed since the planner's previous record of the "
              "layer (mean per record), within a node or across nodes; weight moves at a rebalance, not part of "
              "weighted.\n",
              out);
    if (o->traffic && tsim_traffic_print(out, o->traffic, s, o->format))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (s->by_layer && o->format == TSIM_FORMAT_MD && tsim_layers_print(out, s, o->format))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (o->per_record) {
        fputs("\n## per record\n\n", out);
        if (print_per_record(out, s, o->format))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}
