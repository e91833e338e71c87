#include "vector.h"
#include "parse.h"
#include "json_strict.h"
#include "registry.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static int get_int(const cJSON *obj, const char *key, int64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(it))
        return -1;
    *out = (int64_t)it->valuedouble;
    return 0;
}

static void copy_str(char *dst, size_t n, const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsString(it))
        snprintf(dst, n, "%s", it->valuestring);
}

/* E ranks in 0..R-1; non-zero when not. */
static int read_placement(const cJSON *arr, int R, int E, int32_t *out)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != E)
        return -1;
    int e = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble >= R || c->valuedouble != (int)c->valuedouble)
            return -1;
        out[e++] = (int32_t)c->valuedouble;
    }
    return 0;
}

/* A JSON array of rows, each of cols numbers in [lo, hi], into a new array
 * of *rows * cols values (rows: the array's length, or must_rows when > 0).
 * -1 on a bad shape or value, -2 out of memory. */
static int read_rows(const cJSON *arr, int must_rows, int cols, double lo, double hi, int64_t **out, int *rows)
{
    *out = NULL;
    if (!cJSON_IsArray(arr))
        return -1;
    const int n = cJSON_GetArraySize(arr);
    if ((must_rows > 0 && n != must_rows) || n < 1)
        return -1;
    if (!(*out = malloc(sizeof **out * (size_t)n * (size_t)cols)))
        return -2;
    size_t k = 0;
    const cJSON *row, *c;
    cJSON_ArrayForEach(row, arr)
    {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != cols)
            return -1;
        cJSON_ArrayForEach(c, row)
        {
            if (!cJSON_IsNumber(c) || c->valuedouble < lo || c->valuedouble > hi ||
                c->valuedouble != (double)(int64_t)c->valuedouble)
                return -1;
            (*out)[k++] = (int64_t)c->valuedouble;
        }
    }
    *rows = n;
    return 0;
}

#define BAD(...)                                                          \
    do {                                                                  \
        tsim_error_set(err, TSIM_E_INPUT, __VA_ARGS__);                   \
        tsim_error_prefix(err, "%s", path);                               \
        tsim_vector_free(v);                                              \
        return TSIM_E_INPUT;                                              \
    } while (0)

/* A vector's option goes through the same range-checked parser as the CLI's
 * (a value of 1e300, 4294967297 or 1.5 for an integer is an error, never a
 * silent cast). Numbers are formatted back to text exactly (%.17g). */
static int option_text(const cJSON *it, char *buf, size_t n)
{
    if (cJSON_IsNumber(it))
        snprintf(buf, n, "%.17g", it->valuedouble);
    else if (cJSON_IsString(it))
        snprintf(buf, n, "%s", it->valuestring);
    else
        return -1;
    return 0;
}

/* One option of the vector's planner (or lambda_plan) from its JSON key. A
 * flag takes true or false; everything else goes through the CLI's parser. */
static int set_planner_option(const cJSON *opts, const char *key, const tsim_option_spec *spec, void *block,
                              tsim_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(opts, key);
    if (!it)
        return TSIM_OK;
    if (spec->type == TSIM_OPTION_CLEAR) {
        if (!cJSON_IsBool(it))
            return tsim_error_set(err, TSIM_E_INPUT, "options.%s: expected true or false", key);
        *(bool *)((char *)block + spec->offset) = cJSON_IsTrue(it);
        return TSIM_OK;
    }
    char text[128];
    if (cJSON_IsBool(it) && spec->type == TSIM_OPTION_CHOICE && strcmp(spec->choices, "off|on") == 0)
        snprintf(text, sizeof text, "%s", cJSON_IsTrue(it) ? "on" : "off"); /* an on|off option as a bool */
    else if (option_text(it, text, sizeof text) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "options.%s: expected a number or a string", key);
    if (tsim_option_apply(spec, block, text, err)) {
        tsim_error_prefix(err, "options.%s", key);
        return TSIM_E_INPUT;
    }
    return TSIM_OK;
}

static int set_int_option(const cJSON *opts, const char *key, int lo, int hi, int *out, tsim_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(opts, key);
    if (!it)
        return TSIM_OK;
    char text[128], what[64];
    snprintf(what, sizeof what, "options.%s", key);
    if (!cJSON_IsNumber(it) || option_text(it, text, sizeof text) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: expected a number", what);
    return tsim_parse_int(text, lo, hi, out, what, err);
}

/* The vector's options object, read by walking its planner's option table
 * under the keys JSON results record them with (tsim_option_key). */
static int apply_options(tsim_vector *v, const cJSON *opts, tsim_error *err)
{
    int rc;
    if ((rc = set_int_option(opts, "slots", 0, 1024, &v->slots, err)) ||
        (rc = set_int_option(opts, "ranks_per_node", 1, TSIM_MAX_RANKS, &v->ranks_per_node, err)) ||
        (rc = set_planner_option(opts, "lambda_plan", &tsim_planner_common_options[0], &v->opts.common, err)))
        return rc;
    const tsim_planner_desc *d = tsim_planner_find(v->planner);
    void *block = d ? tsim_planner_options_own(&v->opts, d) : NULL;
    for (const tsim_option_spec *o = block ? d->options : NULL; o && o->name; o++) {
        char key[64];
        tsim_option_key(d->name, o, key, sizeof key);
        if ((rc = set_planner_option(opts, key, o, block, err)))
            return rc;
    }
    return TSIM_OK;
}

/* prev_window (rows of E counts) and prev_layout (R rows of E/R + K experts). */
static int read_history_rows(tsim_vector *v, const char *path, int R, int E, tsim_error *err)
{
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(v->root, "prev_window");
    int rc = win ? read_rows(win, 0, E, 0, (double)TSIM_MAX_COUNT * R, &v->prev_window, &v->prev_window_rows) : 0;
    if (rc == -1)
        BAD("\"prev_window\" must be rows of %d counts", E);
    const cJSON *lay = cJSON_GetObjectItemCaseSensitive(v->root, "prev_layout");
    int64_t *layout = NULL;
    int rows = 0;
    const int S = E / R + v->slots;
    if (rc == 0 && lay && (rc = read_rows(lay, R, S, 0, E - 1, &layout, &rows)) == -1) {
        free(layout);
        BAD("\"prev_layout\" must be %d rows of %d experts in 0..%d", R, S, E - 1);
    }
    if (rc == 0 && layout && (v->prev_layout = malloc(sizeof *v->prev_layout * (size_t)R * (size_t)S)))
        for (size_t k = 0; k < (size_t)R * (size_t)S; k++)
            v->prev_layout[k] = (int32_t)layout[k];
    free(layout);
    if (rc == -2 || (lay && !v->prev_layout)) {
        tsim_vector_free(v);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}

/* The "expect" object: the plan, loads and metrics the planner must give. */
static int read_expect(tsim_vector *v, const char *path, const cJSON *expect, int R, int E, tsim_error *err)
{
    const cJSON *reps = cJSON_GetObjectItemCaseSensitive(expect, "replicas");
    const cJSON *alloc = cJSON_GetObjectItemCaseSensitive(expect, "alloc");
    const cJSON *loads = cJSON_GetObjectItemCaseSensitive(expect, "loads_after");
    if (!cJSON_IsArray(reps) || !cJSON_IsArray(alloc) || !cJSON_IsArray(loads) || cJSON_GetArraySize(loads) != R)
        BAD("\"expect\" needs replicas, alloc and loads_after (%d numbers)", R);
    int nrep = cJSON_GetArraySize(reps);
    if (tsim_plan_init(&v->expect, R, nrep + 1, err)) {
        tsim_vector_free(v);
        return TSIM_E_INTERNAL;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, reps)
    {
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 4)
            BAD("expect.replicas entries are [expert, guest, slot, planned]");
        tsim_plan_add(&v->expect, (int)cJSON_GetArrayItem(it, 0)->valuedouble,
                      (int)cJSON_GetArrayItem(it, 1)->valuedouble, (int)cJSON_GetArrayItem(it, 2)->valuedouble,
                      (int64_t)cJSON_GetArrayItem(it, 3)->valuedouble);
    }
    cJSON_ArrayForEach(it, alloc)
    {
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 5)
            BAD("expect.alloc entries are [source, expert, guest, slot, tokens]");
        int src = (int)cJSON_GetArrayItem(it, 0)->valuedouble;
        int e = (int)cJSON_GetArrayItem(it, 1)->valuedouble;
        int g = (int)cJSON_GetArrayItem(it, 2)->valuedouble;
        int k = (int)cJSON_GetArrayItem(it, 3)->valuedouble;
        int64_t tok = (int64_t)cJSON_GetArrayItem(it, 4)->valuedouble;
        int found = -1;
        for (int i = 0; i < v->expect.count; i++) {
            const tsim_replica *rp = &v->expect.replicas[i];
            if (rp->expert == e && rp->guest == g && rp->slot == k)
                found = i;
        }
        if (found < 0 || src < 0 || src >= R)
            BAD("expect.alloc entry (%d, %d, %d, %d) names no listed replica", src, e, g, k);
        tsim_plan_alloc_row(&v->expect, found)[src] = tok;
    }
    v->loads_after = calloc((size_t)R, sizeof *v->loads_after);
    if (!v->loads_after) {
        tsim_vector_free(v);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int i = 0;
    cJSON_ArrayForEach(it, loads) v->loads_after[i++] = (int64_t)it->valuedouble;
    const cJSON *x;
    if ((x = cJSON_GetObjectItemCaseSensitive(expect, "rho_before")) && cJSON_IsNumber(x))
        v->rho_before = x->valuedouble;
    if ((x = cJSON_GetObjectItemCaseSensitive(expect, "rho_after")) && cJSON_IsNumber(x))
        v->rho_after = x->valuedouble;
    get_int(expect, "intra", &v->intra);
    get_int(expect, "inter", &v->inter);
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(expect, "placement");
    if (pl) {
        int32_t *home = tsim_plan_placement(&v->expect, E);
        if (!home) {
            tsim_vector_free(v);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        if (read_placement(pl, R, E, home))
            BAD("expect.placement must have %d ranks in 0..%d", E, R - 1);
    }
    v->has_rehomed = get_int(expect, "rehomed_intra", &v->rehomed_intra) == 0 &&
                     get_int(expect, "rehomed_inter", &v->rehomed_inter) == 0;
    tsim_plan_sort(&v->expect);
    return TSIM_OK;
}

int tsim_vector_load(tsim_vector *v, const char *path, tsim_error *err)
{
    memset(v, 0, sizeof *v);
    tsim_planner_options_default(&v->opts);
    v->slots = 2;
    v->ranks_per_node = 8;
    /* strict, like every JSON taotsim reads */
    int rc = tsim_json_read_file(path, TSIM_JSON_DOC_MAX, "a spec vector", &v->root, err);
    if (rc)
        return rc;
    if (!cJSON_IsObject(v->root))
        BAD("not a JSON object");
    copy_str(v->name, sizeof v->name, v->root, "name");
    copy_str(v->source, sizeof v->source, v->root, "source");
    copy_str(v->planner, sizeof v->planner, v->root, "planner");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(v->root, "options");
    if (cJSON_IsObject(opts) && apply_options(v, opts, err)) {
        tsim_error_prefix(err, "%s", path);
        tsim_vector_free(v);
        return TSIM_E_INPUT;
    }

    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(v->root, "counts");
    if (!cJSON_IsArray(counts) || cJSON_GetArraySize(counts) < 1)
        BAD("\"counts\" must be a non-empty array of rows");
    int R = cJSON_GetArraySize(counts);
    const cJSON *row0 = cJSON_GetArrayItem(counts, 0);
    if (!cJSON_IsArray(row0) || cJSON_GetArraySize(row0) < 1)
        BAD("\"counts\" row 0 must be a non-empty array");
    int E = cJSON_GetArraySize(row0);
    if (R > TSIM_MAX_RANKS || E > TSIM_MAX_EXPERTS)
        BAD("counts is %d x %d, above the limits", R, E);
    if (tsim_record_alloc(&v->record, R, E, err)) {
        tsim_vector_free(v);
        return TSIM_E_INTERNAL;
    }
    int r = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, counts)
    {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != E)
            BAD("\"counts\" row %d must have %d numbers", r, E);
        int e = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, row)
        {
            if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > (double)TSIM_MAX_COUNT)
                BAD("\"counts\" row %d column %d is not a count", r, e);
            v->record.counts[(size_t)r * (size_t)E + (size_t)e] = (int64_t)c->valuedouble;
            e++;
        }
        r++;
    }

    const cJSON *prev = cJSON_GetObjectItemCaseSensitive(v->root, "prev_expert_counts");
    if (prev) {
        if (!cJSON_IsArray(prev) || cJSON_GetArraySize(prev) != E)
            BAD("\"prev_expert_counts\" must have %d numbers", E);
        if (!(v->prev_expert_counts = malloc(sizeof *v->prev_expert_counts * (size_t)E))) {
            tsim_vector_free(v);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        int e = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, prev)
        {
            if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > (double)TSIM_MAX_COUNT * R)
                BAD("\"prev_expert_counts\" entry %d is not a count", e);
            v->prev_expert_counts[e++] = (int64_t)c->valuedouble;
        }
    }
    const cJSON *prev_pl = cJSON_GetObjectItemCaseSensitive(v->root, "prev_placement");
    if (prev_pl) {
        if (!(v->prev_placement = malloc(sizeof *v->prev_placement * (size_t)E))) {
            tsim_vector_free(v);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        if (read_placement(prev_pl, R, E, v->prev_placement))
            BAD("\"prev_placement\" must have %d ranks in 0..%d", E, R - 1);
    }

    int hrc = read_history_rows(v, path, R, E, err);
    if (hrc)
        return hrc;

    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(v->root, "expect");
    if (!cJSON_IsObject(expect))
        return TSIM_OK;
    v->has_expect = true;
    return read_expect(v, path, expect, R, E, err);
}

void tsim_vector_free(tsim_vector *v)
{
    tsim_record_free(&v->record);
    tsim_plan_free(&v->expect);
    free(v->loads_after);
    free(v->prev_expert_counts);
    free(v->prev_placement);
    free(v->prev_window);
    free(v->prev_layout);
    cJSON_Delete(v->root);
    memset(v, 0, sizeof *v);
}

typedef struct {
    cJSON *json;
    bool as_text; /* an external planner's options: their text */
} options_out;

static void add_option(const tsim_option_value *v, void *ctx)
{
    const options_out *out = ctx;
    cJSON *json = out->json;
    if (v->spec->not_recorded)
        return;
    /* An unset file option of a built-in planner (--eplb-layout) is left
     * out, so results without one read exactly as before it existed. */
    if (!out->as_text && v->spec->type == TSIM_OPTION_STRING && !*(const char *)v->value)
        return;
    switch (out->as_text && !v->common ? TSIM_OPTION_STRING : v->spec->type) {
    case TSIM_OPTION_DOUBLE:
        cJSON_AddNumberToObject(json, v->key, *(const double *)v->value);
        break;
    case TSIM_OPTION_INT:
        cJSON_AddNumberToObject(json, v->key, *(const int *)v->value);
        break;
    case TSIM_OPTION_INT64:
        cJSON_AddNumberToObject(json, v->key, (double)*(const int64_t *)v->value);
        break;
    case TSIM_OPTION_CLEAR:
        cJSON_AddBoolToObject(json, v->key, *(const bool *)v->value);
        break;
    case TSIM_OPTION_CHOICE:
    case TSIM_OPTION_STRING: {
        char text[256]; /* a file option holds up to 191 characters */
        tsim_option_value_text(v, text, sizeof text);
        cJSON_AddStringToObject(json, v->key, text);
        break;
    }
    }
}

cJSON *tsim_vector_options_json(const tsim_planner *p, int slots, int ranks_per_node)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "slots", slots);
    cJSON_AddNumberToObject(j, "ranks_per_node", ranks_per_node);
    options_out out = {.json = j, .as_text = p->desc->external};
    tsim_planner_options_each(p, add_option, &out);
    return j;
}

int tsim_vector_run(tsim_session *s, const tsim_vector *v, tsim_error *err)
{
    const int64_t layer = v->record.layer;
    const bool seeded = v->prev_expert_counts || v->prev_placement || v->prev_window || v->prev_layout;
    for (int i = 0; seeded && i < s->n_planners; i++) {
        tsim_planner *p = &s->planners[i];
        if ((v->prev_window || v->prev_layout) && !p->desc->prime_window)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "planner '%s' keeps no window of records, so it cannot take the vector's "
                                  "prev_window or prev_layout",
                                  p->label);
        if (p->desc->prime_window && !v->prev_expert_counts) {
            int rc = p->desc->prime_window(p->state, layer, v->prev_window, v->prev_window ? v->prev_window_rows : 0,
                                           v->prev_layout, v->prev_placement, err);
            if (!rc && v->prev_placement)
                rc = tsim_session_set_previous(s, i, layer, v->prev_placement, err);
            if (rc)
                return rc;
            continue;
        }
        if (!p->desc->prime)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "planner '%s' keeps no history, so it cannot take the vector's prev_expert_counts "
                                  "or prev_placement",
                                  p->label);
        int rc = p->desc->prime(p->state, layer, v->prev_expert_counts, v->prev_placement, err);
        if (!rc && v->prev_placement)
            rc = tsim_session_set_previous(s, i, layer, v->prev_placement, err);
        if (rc)
            return rc;
    }
    return tsim_session_record(s, &v->record, err);
}

static cJSON *int_array(const int64_t *vals, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)vals[i]));
    return a;
}

cJSON *tsim_vector_plan_json(const char *name, const char *planner, cJSON *options, const tsim_record *rec,
                             tsim_plan *plan, const int64_t *loads_after, const tsim_metrics *m, bool with_counts)
{
    tsim_plan_sort(plan);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, "source", "taotsim");
    cJSON_AddStringToObject(j, "planner", planner);
    if (options)
        cJSON_AddItemToObject(j, "options", options);
    if (with_counts) {
        cJSON *counts = cJSON_AddArrayToObject(j, "counts");
        for (int r = 0; r < rec->ranks; r++)
            cJSON_AddItemToArray(counts, int_array(rec->counts + (size_t)r * (size_t)rec->experts, rec->experts));
    }
    cJSON *got = cJSON_AddObjectToObject(j, "got");
    cJSON *reps = cJSON_AddArrayToObject(got, "replicas");
    cJSON *alloc = cJSON_AddArrayToObject(got, "alloc");
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rp = &plan->replicas[i];
        int64_t q[4] = {rp->expert, rp->guest, rp->slot, rp->planned};
        cJSON_AddItemToArray(reps, int_array(q, 4));
        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        for (int r = 0; r < plan->ranks; r++) {
            if (row[r] == 0)
                continue;
            int64_t a[5] = {r, rp->expert, rp->guest, rp->slot, row[r]};
            cJSON_AddItemToArray(alloc, int_array(a, 5));
        }
    }
    cJSON_AddItemToObject(got, "loads_after", int_array(loads_after, rec->ranks));
    cJSON_AddNumberToObject(got, "rho_before", m->v[TSIM_M_RHO_BEFORE]);
    cJSON_AddNumberToObject(got, "rho_after", m->v[TSIM_M_RHO_AFTER]);
    cJSON_AddNumberToObject(got, "intra", m->v[TSIM_M_INTRA]);
    cJSON_AddNumberToObject(got, "inter", m->v[TSIM_M_INTER]);
    if (tsim_plan_has_placement(plan)) {
        cJSON *pl = cJSON_AddArrayToObject(got, "placement");
        for (int e = 0; e < plan->placement_experts; e++)
            cJSON_AddItemToArray(pl, cJSON_CreateNumber(plan->placement[e]));
        cJSON_AddNumberToObject(got, "rehomed_intra", m->v[TSIM_M_REHOMED_INTRA]);
        cJSON_AddNumberToObject(got, "rehomed_inter", m->v[TSIM_M_REHOMED_INTER]);
    }
    return j;
}
