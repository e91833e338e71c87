/* Data and variables of the advise figures (plot_advise.h). */
#include "plot_advise.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <string.h>

#include "plot.h"

#define MAX_PLANNERS 64

static const cJSON *field(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The planners of the settings, in the order they first appear. */
static int planner_order(const cJSON *settings, const char **names, int *n, tsim_error *err)
{
    *n = 0;
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, settings)
    {
        const cJSON *p = field(s, "planner");
        if (!cJSON_IsString(p) || !p->valuestring[0] || strpbrk(p->valuestring, " \"'\\"))
            return tsim_error_set(err, TSIM_E_INPUT, "settings[%d].planner: expected a planner label", i);
        bool seen = false;
        for (int k = 0; k < *n && !seen; k++)
            seen = strcmp(names[k], p->valuestring) == 0;
        if (!seen) {
            if (*n == MAX_PLANNERS)
                return tsim_error_set(err, TSIM_E_INPUT, "settings: more than %d planners", MAX_PLANNERS);
            names[(*n)++] = p->valuestring;
        }
        i++;
    }
    return TSIM_OK;
}

/* One planner's block: the settings that ran (n/a ones on a comment line). */
static int write_block(FILE *dat, const cJSON *settings, const char *planner, tsim_error *err)
{
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, settings)
    {
        const cJSON *p = field(s, "planner"), *key = field(s, "key");
        const int at = i++;
        if (strcmp(p->valuestring, planner) != 0)
            continue;
        if (field(s, "error")) {
            fprintf(dat, "# n/a: %s %s\n", planner, cJSON_IsString(key) ? key->valuestring : "?");
            continue;
        }
        const cJSON *mem = field(s, "memory_mb"), *traffic = field(s, "weight_traffic"),
                    *bal = field(s, "balancedness"), *front = field(s, "pareto"), *rec = field(s, "recommended");
        if (!cJSON_IsNumber(mem) || !cJSON_IsNumber(traffic) || !cJSON_IsNumber(bal) || !cJSON_IsBool(front) ||
            !cJSON_IsBool(rec))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "settings[%d]: expected memory_mb, weight_traffic, balancedness (numbers), "
                                  "pareto and recommended (booleans)",
                                  at);
        fprintf(dat, "%.17g %.17g %.17g %d %d\n", mem->valuedouble, traffic->valuedouble, bal->valuedouble,
                cJSON_IsTrue(front), cJSON_IsTrue(rec));
    }
    return TSIM_OK;
}

int tsim_plot_advise_text(const cJSON *root, FILE *dat, FILE *vars, tsim_error *err)
{
    const cJSON *settings = field(root, "settings");
    if (!cJSON_IsArray(settings) || cJSON_GetArraySize(settings) == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "missing \"settings\" (a non-empty array): not a finished advise "
                                                 "result (a --shard partial goes through 'taotsim merge' first)");
    const cJSON *target = field(field(root, "params"), "target_balancedness");
    if (!cJSON_IsNumber(target))
        return tsim_error_set(err, TSIM_E_INPUT, "params.target_balancedness: expected a number");
    const char *names[MAX_PLANNERS];
    int n;
    int rc = planner_order(settings, names, &n, err);
    fprintf(dat, "# taotsim advise: one block per planner (gnuplot index), in this order:");
    for (int k = 0; k < n; k++)
        fprintf(dat, " %s", names[k]);
    fprintf(dat, "\n# memory_mb weight_traffic balancedness pareto recommended\n");
    for (int k = 0; k < n && rc == TSIM_OK; k++) {
        fprintf(dat, "%s# %s\n", k ? "\n\n" : "", names[k]);
        rc = write_block(dat, settings, names[k], err);
    }
    if (rc)
        return rc;
    fprintf(vars, "PLANNERS = \"");
    for (int k = 0; k < n; k++)
        fprintf(vars, "%s%s", k ? " " : "", names[k]);
    fprintf(vars, "\"\nNP = %d\nCOLORS = \"", n);
    for (int k = 0; k < n; k++)
        fprintf(vars, "%s%s", k ? " " : "", tsim_plot_planner_colour(names[k]));
    fprintf(vars, "\"\nPOINTS = \"");
    for (int k = 0; k < n; k++)
        fprintf(vars, "%s%d", k ? " " : "", tsim_plot_planner_point(names[k]));
    fprintf(vars, "\"\nTARGET = %.17g\n", target->valuedouble);
    return TSIM_OK;
}
