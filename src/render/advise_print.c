/* taotsim advise: markdown and CSV (JSON is tsim_study_json with the
 * "pareto" and "recommendation" fields). */
#include "advise_print.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ADVISE_COLS 15
#define CELL 96

static const char *const headers[ADVISE_COLS] = {
    "planner", "K", "interval", "history", "lambda_plan", "memory MB/rank", "balancedness", "bal p5",
    "rho after %", "rho p95 %", "weighted", "re-homed", "weight traffic", "pareto", "note"};

static bool in_pareto(const tsim_study *s, const tsim_study_row *r)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(s->extra, "pareto"))
    {
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(p, "planner"), *k = cJSON_GetObjectItemCaseSensitive(p, "key");
        if (cJSON_IsString(pl) && cJSON_IsString(k) && strcmp(pl->valuestring, r->planner) == 0 &&
            strcmp(k->valuestring, r->key) == 0)
            return true;
    }
    return false;
}

static bool recommended(const tsim_study *s, const tsim_study_row *r)
{
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(s->extra, "recommendation");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(rec, "planner"), *k = cJSON_GetObjectItemCaseSensitive(rec, "key");
    return cJSON_IsString(pl) && cJSON_IsString(k) && strcmp(pl->valuestring, r->planner) == 0 &&
           strcmp(k->valuestring, r->key) == 0;
}

/* One row's cells; cell[c] holds CELL bytes. */
static void row_cells(const tsim_study *s, const tsim_study_row *r, char cell[ADVISE_COLS][CELL])
{
    tsim_advise_setting set;
    tsim_advise_setting_parse(r->key, &set);
    tsim_advise_score sc;
    tsim_advise_score_row(s, r, &sc);
    const int b = tsim_advise_balancedness_metric();
    snprintf(cell[0], CELL, "%s", r->planner);
    if (set.slots > 0)
        snprintf(cell[1], CELL, "%d", set.slots);
    else
        snprintf(cell[1], CELL, "free (%d)", r->planner_slots);
    if (set.interval > 0)
        snprintf(cell[2], CELL, "%d", set.interval);
    else
        snprintf(cell[2], CELL, "-");
    snprintf(cell[3], CELL, "%s", set.history[0] ? set.history : "-");
    tsim_fmt_num(cell[4], CELL, set.lambda_plan, 2);
    tsim_fmt_num(cell[5], CELL, sc.memory_mb, 2);
    for (int c = 6; c < ADVISE_COLS; c++)
        cell[c][0] = '\0';
    if (!r->ok) {
        for (int c = 6; c < 13; c++)
            snprintf(cell[c], CELL, "n/a");
        snprintf(cell[14], CELL, "%.*s", CELL - 1, r->error);
        return;
    }
    tsim_fmt_num(cell[6], CELL, sc.balancedness, 4);
    /* The bad tail of balancedness is its low end: per record it is
     * 1 / (1 + rho_after), so its 5th percentile is that of rho's 95th. */
    const double rho95 = r->metrics[TSIM_M_RHO_AFTER].p95;
    tsim_fmt_num(cell[7], CELL, b >= 0 ? 1.0 / (1.0 + rho95) : NAN, 4);
    tsim_fmt_num(cell[8], CELL, r->metrics[TSIM_M_RHO_AFTER].mean * 100, 2);
    tsim_fmt_num(cell[9], CELL, r->metrics[TSIM_M_RHO_AFTER].p95 * 100, 2);
    tsim_fmt_num(cell[10], CELL, r->metrics[TSIM_M_WEIGHTED].mean, 2);
    tsim_fmt_num(cell[11], CELL, sc.moves, 3);
    tsim_fmt_num(cell[12], CELL, sc.weight_traffic, 2);
    snprintf(cell[13], CELL, "%s", in_pareto(s, r) ? "yes" : "");
    if (recommended(s, r))
        snprintf(cell[14], CELL, "recommended");
    else if (strcmp(set.history, "oracle") == 0)
        snprintf(cell[14], CELL, "bound (reads the record it plans)");
}

static int add_rows(tsim_table *t, const tsim_study *s, bool pareto_only)
{
    char cell[ADVISE_COLS][CELL];
    const char *ptrs[ADVISE_COLS];
    for (int c = 0; c < ADVISE_COLS; c++)
        ptrs[c] = cell[c];
    for (int i = 0; i < s->n; i++) {
        if (pareto_only && !in_pareto(s, &s->rows[i]))
            continue;
        row_cells(s, &s->rows[i], cell);
        if (tsim_table_add_row(t, ptrs))
            return -1;
    }
    return 0;
}

static void print_header(FILE *out, const tsim_study *s)
{
    const cJSON *p = s->params;
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(p, "trace");
#define NUM(k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, k))
    fprintf(out,
            "# advise: %s (%g records, EP %g, %g experts, %g ranks/node, lambda_eval = %g, %g MB per expert)\n\n",
            cJSON_IsString(trace) ? trace->valuestring : "?", NUM("records"), NUM("ep"), NUM("experts"),
            NUM("ranks_per_node"), NUM("lambda_eval"), NUM("expert_mb"));
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(s->extra, "recommendation");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(rec, "reason");
    fprintf(out, "Target balancedness %g. Recommendation: %s.\n\n", NUM("target_balancedness"),
            cJSON_IsString(reason) ? reason->valuestring : "-");
#undef NUM
}

int tsim_advise_print(FILE *out, const tsim_study *s, tsim_format fmt, tsim_error *err)
{
    tsim_table t;
    if (tsim_table_init(&t, ADVISE_COLS, headers))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (add_rows(&t, s, false)) {
        tsim_table_free(&t);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    if (fmt == TSIM_FORMAT_CSV) {
        tsim_table_print(&t, out, fmt);
        tsim_table_free(&t);
        return TSIM_OK;
    }
    print_header(out, s);
    fprintf(out, "## Every setting\n\n");
    tsim_table_print(&t, out, fmt);
    tsim_table_free(&t);
    if (tsim_table_init(&t, ADVISE_COLS, headers) || add_rows(&t, s, true)) {
        tsim_table_free(&t);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    fprintf(out, "\n## Pareto set (balancedness up; memory and weight traffic down)\n\n");
    tsim_table_print(&t, out, fmt);
    tsim_table_free(&t);
    fprintf(out, "\nweight traffic = weighted + re-homed intra + lambda_eval x re-homed inter, per record;"
                 " memory = K x expert MB per rank (without a slot limit: the peak guests of any rank);"
                 " bal p5 = 1 / (1 + rho p95), the balancedness 95%% of records reach.\n");
    return TSIM_OK;
}
