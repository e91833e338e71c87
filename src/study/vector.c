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

static int set_planner_option(tsim_vector *v, const cJSON *opts, const char *key, const char *cli_name,
                              tsim_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(opts, key);
    if (!it)
        return TSIM_OK;
    char text[128];
    bool known;
    if (option_text(it, text, sizeof text) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "options.%s: expected a number or a string", key);
    if (tsim_planner_options_set(&v->opts, cli_name, text, &known, err)) {
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

static int apply_options(tsim_vector *v, const cJSON *opts, tsim_error *err)
{
    int rc;
    if ((rc = set_int_option(opts, "slots", 0, 1024, &v->slots, err)) ||
        (rc = set_int_option(opts, "ranks_per_node", 1, TSIM_MAX_RANKS, &v->ranks_per_node, err)))
        return rc;
    /* vector key -> the planner option it stands for */
    static const char *const keys[][2] = {
        {"lambda_plan", "lambda-plan"}, {"iters", "taot-iters"},       {"phase3", "taot-phase3"},
        {"self_bonus", "taot-self-bonus"}, {"auction_rounds", "taot-auction-rounds"}, {"alpha", "llep-alpha"},
        {"min_chunk", "llep-min-chunk"}, {"threshold", "llep-threshold"}, {"graph", "lplb-graph"},
        {"solver", "lplb-solver"},     {"rehome", "lplb-rehome"},     {"groups", "eplb-groups"},
        {"interval", "eplb-interval"},
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if ((rc = set_planner_option(v, opts, keys[k][0], keys[k][1], err)))
            return rc;
    /* "history" belongs to the vector's planner: eplb's or lplb's. */
    const bool eplb = strcmp(v->planner, "eplb") == 0;
    if ((rc = set_planner_option(v, opts, "history", eplb ? "eplb-history" : "lplb-history", err)))
        return rc;
    const cJSON *it;
    if ((it = cJSON_GetObjectItemCaseSensitive(opts, "flow_hint")) && cJSON_IsBool(it))
        v->opts.taot.flow_hint = cJSON_IsTrue(it);
    if ((it = cJSON_GetObjectItemCaseSensitive(opts, "comm_cost")) && cJSON_IsBool(it))
        v->opts.taot.comm_cost = cJSON_IsTrue(it);
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

    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(v->root, "expect");
    if (!cJSON_IsObject(expect))
        return TSIM_OK;
    v->has_expect = true;
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

void tsim_vector_free(tsim_vector *v)
{
    tsim_record_free(&v->record);
    tsim_plan_free(&v->expect);
    free(v->loads_after);
    free(v->prev_expert_counts);
    free(v->prev_placement);
    cJSON_Delete(v->root);
    memset(v, 0, sizeof *v);
}

/* An option's key in the options object: "taot-auction-rounds" ->
 * "auction_rounds", "taot-no-flow-hint" -> "flow_hint" (the flag's bool). */
static void option_key(const char *name, const char *planner, bool flag, char *key, size_t n)
{
    size_t plen = strlen(planner);
    if (strncmp(name, planner, plen) == 0 && name[plen] == '-')
        name += plen + 1;
    if (flag && strncmp(name, "no-", 3) == 0)
        name += 3;
    snprintf(key, n, "%s", name);
    for (char *p = key; *p; p++)
        if (*p == '-')
            *p = '_';
}

/* One option's value, read through its table entry. */
static cJSON *option_value(const tsim_option_spec *spec, const tsim_planner_options *o)
{
    const void *at = (const char *)o + spec->offset;
    switch (spec->type) {
    case TSIM_OPTION_DOUBLE:
        return cJSON_CreateNumber(*(const double *)at);
    case TSIM_OPTION_INT:
        return cJSON_CreateNumber(*(const int *)at);
    case TSIM_OPTION_INT64:
        return cJSON_CreateNumber((double)*(const int64_t *)at);
    case TSIM_OPTION_CHOICE: {
        const char *c = spec->choices;
        for (int k = *(const int *)at; k > 0 && c; k--)
            c = (c = strchr(c, '|')) ? c + 1 : NULL;
        char text[64];
        snprintf(text, sizeof text, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
        return cJSON_CreateString(text);
    }
    case TSIM_OPTION_STRING: {
        char text[256];
        snprintf(text, sizeof text, "%.*s", (int)strnlen(at, spec->size), (const char *)at);
        return cJSON_CreateString(text);
    }
    case TSIM_OPTION_CLEAR:
        return cJSON_CreateBool(*(const bool *)at);
    }
    return cJSON_CreateNull();
}

/* Walks the planner's own option table, so every planner's options are
 * recorded, a new one's included, without a list to keep in step here. */
cJSON *tsim_vector_options_json(const tsim_planner_desc *desc, int slots, int ranks_per_node,
                                const tsim_planner_options *o)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "slots", slots);
    cJSON_AddNumberToObject(j, "ranks_per_node", ranks_per_node);
    char key[128];
    for (const tsim_option_spec *s = tsim_planner_common_options; s->name; s++) {
        option_key(s->name, "", s->type == TSIM_OPTION_CLEAR, key, sizeof key);
        cJSON_AddItemToObject(j, key, option_value(s, o));
    }
    for (const tsim_option_spec *s = desc->options; s && s->name; s++) {
        option_key(s->name, desc->name, s->type == TSIM_OPTION_CLEAR, key, sizeof key);
        /* Where a planner runs is no setting of its plans, which are the same
         * on every device (the GPU parity tests): plans dumped on a GPU and
         * on the CPU stay byte-identical. */
        if (strcmp(key, "device") != 0)
            cJSON_AddItemToObject(j, key, option_value(s, o));
    }
    const char *given;
    char value[1024];
    for (int i = 0; desc->given_option && desc->given_option(o, i, &given, value, sizeof value); i++)
        cJSON_AddItemToObject(j, given, cJSON_CreateString(value));
    return j;
}

int tsim_vector_run(tsim_session *s, const tsim_vector *v, tsim_error *err)
{
    const int64_t layer = v->record.layer;
    const bool seeded = v->prev_expert_counts || v->prev_placement;
    for (int i = 0; seeded && i < s->n_planners; i++) {
        tsim_planner *p = &s->planners[i];
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
