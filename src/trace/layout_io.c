#include "layout_io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"
#include "search.h"
#include "trace.h"

const char *const tsim_layout_format_names[2] = {"sglang", "trtllm"};

void tsim_layout_table_init(tsim_layout_table *t, int physical)
{
    memset(t, 0, sizeof *t);
    t->physical = physical;
}

void tsim_layout_table_free(tsim_layout_table *t)
{
    free(t->layers);
    free(t->map);
    memset(t, 0, sizeof *t);
}

static int64_t layer_key(const void *ctx, int i)
{
    return ((const tsim_layout_table *)ctx)->layers[i];
}

const int32_t *tsim_layout_table_find(const tsim_layout_table *t, int64_t layer)
{
    int at = tsim_search_sorted(t->count, layer, layer_key, t);
    return at >= 0 ? t->map + (size_t)at * (size_t)t->physical : NULL;
}

int tsim_layout_table_put(tsim_layout_table *t, int64_t layer, const int32_t *row, tsim_error *err)
{
    if (t->physical < 1)
        return tsim_error_set(err, TSIM_E_INTERNAL, "layout table without a row width");
    int at = tsim_search_sorted(t->count, layer, layer_key, t);
    if (at < 0) {
        at = -at - 1;
        if (t->count == t->cap) {
            int cap = t->cap ? 2 * t->cap : 8;
            int64_t *layers = realloc(t->layers, sizeof *layers * (size_t)cap);
            if (!layers)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a layout table");
            t->layers = layers;
            int32_t *map = realloc(t->map, sizeof *map * (size_t)cap * (size_t)t->physical);
            if (!map)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a layout table");
            t->map = map;
            t->cap = cap;
        }
        const size_t P = (size_t)t->physical;
        memmove(t->layers + at + 1, t->layers + at, sizeof *t->layers * (size_t)(t->count - at));
        memmove(t->map + (size_t)(at + 1) * P, t->map + (size_t)at * P, sizeof *t->map * (size_t)(t->count - at) * P);
        t->layers[at] = layer;
        t->count++;
    }
    memcpy(t->map + (size_t)at * (size_t)t->physical, row, sizeof *row * (size_t)t->physical);
    return TSIM_OK;
}

int tsim_layout_format_parse(const char *text, tsim_layout_format *out, tsim_error *err)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(text, tsim_layout_format_names[i]) == 0) {
            *out = (tsim_layout_format)i;
            return TSIM_OK;
        }
    return tsim_error_set(err, TSIM_E_INPUT, "--export-format: expected sglang or trtllm, got '%s'", text);
}

static void write_row(FILE *fp, const int32_t *row, int n)
{
    fputc('[', fp);
    for (int p = 0; p < n; p++)
        fprintf(fp, p ? ", %d" : "%d", (int)row[p]);
    fputc(']', fp);
}

int tsim_layout_write(FILE *fp, const tsim_layout_table *t, tsim_layout_format format, tsim_error *err)
{
    if (t->count == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "no layer has a layout to export");
    if (format == TSIM_LAYOUT_SGLANG) {
        /* SGLang reads row i as MoE layer i: the rows must be layers 0..L-1 */
        for (int k = 0; k < t->count; k++)
            if (t->layers[k] != k)
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "SGLang's physical_to_logical_map needs layers 0..%d, but layer %lld has no "
                                      "layout (the trace's layers are not numbered from 0 without gaps; "
                                      "--export-format trtllm keys layers by id)",
                                      t->count - 1, (long long)(k == 0 ? 0 : t->layers[k - 1] + 1));
        fputs("{\"physical_to_logical_map\": [\n", fp);
        for (int k = 0; k < t->count; k++) {
            fputs("  ", fp);
            write_row(fp, t->map + (size_t)k * (size_t)t->physical, t->physical);
            fputs(k + 1 < t->count ? ",\n" : "\n", fp);
        }
        fputs("]}\n", fp);
        return TSIM_OK;
    }
    fprintf(fp, "{\"num_slots\": %d, \"layer_updates_per_iter\": 0, \"initial_global_assignments\": {\n",
            t->physical);
    for (int k = 0; k < t->count; k++) {
        fprintf(fp, "  \"%lld\": ", (long long)t->layers[k]);
        write_row(fp, t->map + (size_t)k * (size_t)t->physical, t->physical);
        fputs(k + 1 < t->count ? ",\n" : "\n", fp);
    }
    fputs("}}\n", fp);
    return TSIM_OK;
}

/* One row (a JSON array of integer ids) into t under layer; where names it
 * in messages ("physical_to_logical_map[3]"). */
static int read_row(tsim_layout_table *t, const cJSON *row, int64_t layer, const char *path, const char *where,
                    int32_t *scratch, tsim_error *err)
{
    if (!cJSON_IsArray(row))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s: expected an array of expert ids", path, where);
    int n = cJSON_GetArraySize(row);
    if (n < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s: empty row", path, where);
    if (t->physical == 0)
        t->physical = n;
    if (n != t->physical)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s: %d entries, but the first row has %d", path, where, n,
                              t->physical);
    int p = 0;
    for (const cJSON *v = row->child; v; v = v->next, p++) {
        double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
        if (!cJSON_IsNumber(v) || d < 0 || d != floor(d) || d > 65535)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s[%d]: expected an expert id (an integer from 0)", path,
                                  where, p);
        scratch[p] = (int32_t)d;
    }
    if (tsim_layout_table_find(t, layer))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s: layer %lld given twice", path, where, (long long)layer);
    return tsim_layout_table_put(t, layer, scratch, err);
}

/* The widest row of an array of rows or of an object of rows. */
static int widest_row(const cJSON *rows)
{
    int w = 0;
    for (const cJSON *r = rows->child; r; r = r->next)
        if (cJSON_IsArray(r) && cJSON_GetArraySize(r) > w)
            w = cJSON_GetArraySize(r);
    return w;
}

static int read_sglang(const cJSON *map, tsim_layout_table *t, const char *path, int32_t *scratch, tsim_error *err)
{
    if (!cJSON_IsArray(map) || cJSON_GetArraySize(map) < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: physical_to_logical_map: expected [layers][physical experts]",
                              path);
    int l = 0;
    for (const cJSON *row = map->child; row; row = row->next, l++) {
        char where[64];
        snprintf(where, sizeof where, "physical_to_logical_map[%d]", l);
        int rc = read_row(t, row, l, path, where, scratch, err);
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

static int read_trtllm(const cJSON *root, const cJSON *map, tsim_layout_table *t, const char *path,
                       int32_t *scratch, tsim_error *err)
{
    if (!cJSON_IsObject(map) || !map->child)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: initial_global_assignments: expected {\"LAYER\": [expert of each slot], ...}",
                              path);
    for (const cJSON *row = map->child; row; row = row->next) {
        char *end = NULL;
        errno = 0;
        long long layer = strtoll(row->string, &end, 10);
        if (!row->string[0] || *end || errno || layer < 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: initial_global_assignments: key \"%s\" is not a layer index (an integer from 0)",
                                  path, row->string);
        char where[96];
        snprintf(where, sizeof where, "initial_global_assignments[\"%s\"]", row->string);
        int rc = read_row(t, row, layer, path, where, scratch, err);
        if (rc)
            return rc;
    }
    const cJSON *slots = cJSON_GetObjectItemCaseSensitive(root, "num_slots");
    if (slots && !cJSON_IsNull(slots) && (!cJSON_IsNumber(slots) || slots->valuedouble != t->physical))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: num_slots is not the length of the rows (%d)", path,
                              t->physical);
    return TSIM_OK;
}

int tsim_layout_read(const char *path, tsim_layout_table *t, tsim_layout_format *format_out, tsim_error *err)
{
    tsim_layout_table_init(t, 0);
    cJSON *root = NULL;
    int rc = tsim_json_read_file(path, TSIM_JSON_DOC_MAX, "a layout", &root, err);
    if (rc)
        return rc;
    const cJSON *sg = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "physical_to_logical_map") : NULL;
    const cJSON *tr =
        cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "initial_global_assignments") : NULL;
    if (!sg && !tr) {
        cJSON_Delete(root);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: not a layout: expected an object with physical_to_logical_map (SGLang) or "
                              "initial_global_assignments (TensorRT-LLM)",
                              path);
    }
    const cJSON *rows = sg ? sg : tr;
    int w = cJSON_IsArray(rows) || cJSON_IsObject(rows) ? widest_row(rows) : 0;
    int32_t *scratch = malloc(sizeof *scratch * (size_t)(w > 0 ? w : 1));
    if (!scratch)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory reading %s", path);
    else if (sg)
        rc = read_sglang(sg, t, path, scratch, err);
    else
        rc = read_trtllm(root, tr, t, path, scratch, err);
    free(scratch);
    cJSON_Delete(root);
    if (rc)
        tsim_layout_table_free(t);
    else if (format_out)
        *format_out = sg ? TSIM_LAYOUT_SGLANG : TSIM_LAYOUT_TRTLLM;
    return rc;
}

int tsim_layout_check(const tsim_layout_table *t, int ranks, int per_rank, int experts, const char *name,
                      tsim_error *err)
{
    const int P = ranks * per_rank;
    if (t->physical != P)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: rows of %d physical experts, but this run has %d ranks x %d positions "
                              "(E/R + K) = %d",
                              name, t->physical, ranks, per_rank, P);
    for (int k = 0; k < t->count; k++) {
        const int32_t *row = t->map + (size_t)k * (size_t)P;
        for (int p = 0; p < P; p++)
            if (row[p] >= experts)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: layer %lld, position %d: expert %d, not in 0..%d",
                                      name, (long long)t->layers[k], p, row[p], experts - 1);
        for (int e = 0; e < experts; e++) {
            int p = 0;
            while (p < P && row[p] != e)
                p++;
            if (p == P)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: layer %lld: expert %d has no copy", name,
                                      (long long)t->layers[k], e);
        }
    }
    return TSIM_OK;
}
