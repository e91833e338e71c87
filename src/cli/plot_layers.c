/* replay_layers (plot_layers.h): the data and variables are built here; plot.c
 * writes and renders them like its other figures. */
#include "plot_layers.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

bool tsim_plot_layers_present(const cJSON *results)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "layers")))
            return true;
    }
    return false;
}

/* The mean of a metric in one layer entry, or the "before"/"after" of
 * balancedness_vllm when metric is NULL. */
static int layer_value(const cJSON *entry, const char *metric, const char *stat, double *out)
{
    const cJSON *x = metric ? cJSON_GetObjectItemCaseSensitive(
                                  cJSON_GetObjectItemCaseSensitive(entry, "metrics"), metric)
                            : cJSON_GetObjectItemCaseSensitive(entry, "balancedness_vllm");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, stat);
    if (!cJSON_IsNumber(v))
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every layer id any planner reports, sorted and distinct; checks each entry. */
static int collect_layers(const cJSON *results, int64_t **out, size_t *n, tsim_error *err)
{
    size_t cap = 0, count = 0;
    int64_t *ids = NULL;
    int i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(r, "layers"), *e;
        int k = 0;
        cJSON_ArrayForEach(e, layers)
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "layer");
            double unused;
            if (!cJSON_IsNumber(id) || id->valuedouble != floor(id->valuedouble) ||
                layer_value(e, "balancedness_before", "mean", &unused) ||
                layer_value(e, "balancedness_after", "mean", &unused) || layer_value(e, NULL, "after", &unused)) {
                free(ids);
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "results[%d].layers[%d]: expected \"layer\" (an integer), "
                                      "metrics.balancedness_before/_after.mean and balancedness_vllm.after",
                                      i, k);
            }
            if (count == cap) {
                cap = cap ? 2 * cap : 64;
                int64_t *grown = realloc(ids, sizeof *grown * cap);
                if (!grown) {
                    free(ids);
                    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
                }
                ids = grown;
            }
            ids[count++] = (int64_t)id->valuedouble;
            k++;
        }
        i++;
    }
    qsort(ids, count, sizeof *ids, cmp_i64);
    size_t kept = 0;
    for (size_t k = 0; k < count; k++)
        if (kept == 0 || ids[k] != ids[kept - 1])
            ids[kept++] = ids[k];
    *out = ids;
    *n = kept;
    return TSIM_OK;
}

/* A planner's entry for a layer, or NULL. */
static const cJSON *entry_of(const cJSON *result, int64_t layer)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(result, "layers"))
    {
        if ((int64_t)cJSON_GetObjectItemCaseSensitive(e, "layer")->valuedouble == layer)
            return e;
    }
    return NULL;
}

static void put(FILE *f, bool have, double v)
{
    if (have)
        fprintf(f, " %.10g", v);
    else
        fputs(" NaN", f);
}

/* One row per layer: layer, before, then (mean after, vLLM after) per planner. */
static void write_rows(FILE *f, const cJSON *results, const int64_t *ids, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        fprintf(f, "%lld", (long long)ids[k]);
        double before = NAN;
        const cJSON *r;
        cJSON_ArrayForEach(r, results)
        {
            const cJSON *e = entry_of(r, ids[k]);
            if (e && !layer_value(e, "balancedness_before", "mean", &before))
                break; /* the static map's: the same for every planner */
        }
        put(f, !isnan(before), before);
        cJSON_ArrayForEach(r, results)
        {
            if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "layers")))
                continue;
            const cJSON *e = entry_of(r, ids[k]);
            double mean = 0, vllm = 0;
            const bool have_mean = e && !layer_value(e, "balancedness_after", "mean", &mean);
            const bool have_vllm = e && !layer_value(e, NULL, "after", &vllm);
            put(f, have_mean, mean);
            put(f, have_vllm, vllm);
        }
        fputc('\n', f);
    }
}

/* A label as one gnuplot word (spaces would split PLANNERS). */
static void put_word(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == ' ' || *s == '"' ? '_' : *s, f);
}

static void write_vars(FILE *f, const cJSON *results, size_t layers)
{
    fprintf(f, "NL = %zu\n", layers);
    const char *names[3] = {"PLANNERS", "COLORS", "POINTS"};
    int np = 0;
    for (int w = 0; w < 3; w++) {
        fprintf(f, "%s = \"", names[w]);
        int j = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, results)
        {
            const cJSON *label = cJSON_GetObjectItemCaseSensitive(r, "planner");
            if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "layers")))
                continue;
            const char *l = cJSON_IsString(label) ? label->valuestring : "?";
            fputs(j++ ? " " : "", f);
            if (w == 0)
                put_word(f, l);
            else if (w == 1)
                fputs(tsim_plot_planner_colour(l), f);
            else
                fprintf(f, "%d", tsim_plot_planner_point(l));
        }
        fputs("\"\n", f);
        np = j;
    }
    fprintf(f, "NP = %d\n", np);
}

int tsim_plot_layers_build(const cJSON *results, char **dat, char **vars, tsim_error *err)
{
    *dat = *vars = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = collect_layers(results, &ids, &n, err);
    if (rc)
        return rc;
    size_t dlen, vlen;
    FILE *d = open_memstream(dat, &dlen), *v = open_memstream(vars, &vlen);
    if (d && v) {
        fputs("# taotsim plot: balancedness (mean load / max load) per layer\n# layer before", d);
        const cJSON *r;
        cJSON_ArrayForEach(r, results)
        {
            const cJSON *label = cJSON_GetObjectItemCaseSensitive(r, "planner");
            if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "layers")))
                continue;
            const char *l = cJSON_IsString(label) ? label->valuestring : "?";
            fprintf(d, " %s:balancedness_after %s:balancedness_vllm_after", l, l);
        }
        fputc('\n', d);
        write_rows(d, results, ids, n);
        write_vars(v, results, n);
    }
    bool bad = !d || !v || ferror(d) || ferror(v);
    if (d && fclose(d))
        bad = true;
    if (v && fclose(v))
        bad = true;
    free(ids);
    if (bad) {
        free(*dat);
        free(*vars);
        *dat = *vars = NULL;
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}
