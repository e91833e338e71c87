#include "merge.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments.h"
#include "grid.h"
#include "json_strict.h"
#include "provenance.h"
#include "stats.h"

/* ---- shards ------------------------------------------------------------------------ */

int tsim_shard_parse(const char *text, tsim_shard *out, tsim_error *err)
{
    const char *slash = text ? strchr(text, '/') : NULL;
    char *end;
    if (!slash || slash == text)
        return tsim_error_set(err, TSIM_E_INPUT, "--shard: expected I/N (shard I of N, from 0), got '%s'",
                              text ? text : "");
    errno = 0;
    long i = strtol(text, &end, 10);
    bool ok = end == slash && errno == 0 && text[0] != '-' && text[0] != '+' && text[0] != ' ';
    long n = ok ? strtol(slash + 1, &end, 10) : 0;
    ok = ok && *end == '\0' && end != slash + 1 && errno == 0 && slash[1] != '-' && slash[1] != '+' &&
         slash[1] != ' ';
    if (!ok)
        return tsim_error_set(err, TSIM_E_INPUT, "--shard: expected I/N (shard I of N, from 0), got '%s'", text);
    if (n < 1 || n > TSIM_SHARD_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "--shard %s: N must be in 1..%d", text, TSIM_SHARD_MAX);
    if (i < 0 || i >= n)
        return tsim_error_set(err, TSIM_E_INPUT, "--shard %s: I must be in 0..%ld (shards count from 0)", text,
                              n - 1);
    out->index = (int)i;
    out->count = (int)n;
    return TSIM_OK;
}

void tsim_shard_range(int64_t total, tsim_shard shard, int64_t *lo, int64_t *hi)
{
    if (shard.count <= 0) {
        *lo = 0;
        *hi = total;
        return;
    }
    const int64_t base = total / shard.count, extra = total % shard.count, i = shard.index;
    *lo = i * base + (i < extra ? i : extra);
    *hi = *lo + base + (i < extra ? 1 : 0);
}

tsim_planner_memory tsim_planner_memory_of(const tsim_planner_desc *d)
{
    switch (d->state) {
    case TSIM_STATE_NONE:
        return TSIM_MEMORY_NONE;
    case TSIM_STATE_WINDOW:
    case TSIM_STATE_LAYER_PREFIX:
        return TSIM_MEMORY_LAYER;
    case TSIM_STATE_EVERY_RECORD:
        break;
    }
    return TSIM_MEMORY_ALL;
}

int tsim_shard_owner(tsim_planner_memory memory, int planner, int64_t dense_layer, int64_t seq, int64_t total,
                     int shard_count)
{
    if (shard_count <= 1)
        return 0;
    switch (memory) {
    case TSIM_MEMORY_LAYER:
        return (int)((dense_layer + planner) % shard_count);
    case TSIM_MEMORY_ALL:
        return planner % shard_count;
    default: {
        /* the shard whose range holds seq: ranges of base+1 records first */
        const int64_t base = total / shard_count, extra = total % shard_count;
        const int64_t big = extra * (base + 1);
        if (seq < big)
            return (int)(seq / (base + 1));
        return base > 0 ? (int)(extra + (seq - big) / base) : shard_count - 1;
    }
    }
}

/* ---- which trace a shard read ------------------------------------------------------ */

/* ---- the identity command line ------------------------------------------------------- */

typedef struct {
    const char *name;
    char short_name;
} dropped_option;

static const dropped_option dropped[] = {{"shard", 0}, {"output", 'o'}, {"format", 0}, {"jobs", 'j'}};
#define N_DROPPED ((int)(sizeof dropped / sizeof dropped[0]))

/* Whether arg is one of the dropped options; *takes_next when its value is
 * the next argument. */
static bool dropped_arg(const char *arg, bool *takes_next)
{
    *takes_next = false;
    if (strncmp(arg, "--", 2) == 0) {
        size_t len = strcspn(arg + 2, "=");
        for (int i = 0; i < N_DROPPED; i++)
            if (strlen(dropped[i].name) == len && strncmp(arg + 2, dropped[i].name, len) == 0) {
                *takes_next = arg[2 + len] == '\0';
                return true;
            }
        return false;
    }
    if (arg[0] == '-' && arg[1])
        for (int i = 0; i < N_DROPPED; i++)
            if (dropped[i].short_name && arg[1] == dropped[i].short_name) {
                *takes_next = arg[2] == '\0';
                return true;
            }
    return false;
}

char **tsim_argv_identity(int argc, char *const *argv, int *out_argc)
{
    char **out = calloc((size_t)argc + 1, sizeof *out);
    if (!out)
        return NULL;
    int n = 0;
    bool options_end = false; /* after "--" everything is an argument */
    for (int i = 0; i < argc; i++) {
        bool takes_next;
        if (!options_end && strcmp(argv[i], "--") == 0)
            options_end = true;
        else if (!options_end && dropped_arg(argv[i], &takes_next)) {
            if (takes_next)
                i++;
            continue;
        }
        if (!(out[n++] = strdup(argv[i]))) {
            tsim_argv_free(out);
            return NULL;
        }
    }
    *out_argc = n;
    return out;
}

void tsim_argv_free(char **argv)
{
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* ---- numbers: exact, and NaN/inf as strings (JSON has neither) ---------------------- */

/* cJSON prints 15 significant digits whenever they read back within an
 * epsilon, which can lose the last bit: a partial result writes 17 (%.17g
 * reads back exactly), so the merge sees the very doubles the shard had. */
static cJSON *num(double v)
{
    if (isnan(v))
        return cJSON_CreateString("nan");
    if (isinf(v))
        return cJSON_CreateString(v > 0 ? "inf" : "-inf");
    char text[32];
    snprintf(text, sizeof text, "%.17g", v);
    return cJSON_CreateRaw(text);
}

/* Counts and indices, exact up to 2^53 (cJSON would round past 1e15). */
static cJSON *count(int64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)v);
    return cJSON_CreateRaw(text);
}

static bool get_num(const cJSON *j, double *v)
{
    if (cJSON_IsNumber(j)) {
        *v = j->valuedouble;
        return true;
    }
    if (!cJSON_IsString(j))
        return false;
    if (strcmp(j->valuestring, "nan") == 0)
        *v = NAN;
    else if (strcmp(j->valuestring, "inf") == 0)
        *v = INFINITY;
    else if (strcmp(j->valuestring, "-inf") == 0)
        *v = -INFINITY;
    else
        return false;
    return true;
}

/* A non-negative integer exact in a double. */
static bool get_count(const cJSON *j, int64_t *v)
{
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d))
        return false;
    *v = (int64_t)d;
    return true;
}

/* An integer that fits an int (a cast of 1e300 would be undefined). */
static bool get_int(const cJSON *j, int *v)
{
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= INT_MIN && d <= INT_MAX) || d != floor(d))
        return false;
    *v = (int)d;
    return true;
}

static const cJSON *item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* ---- writing ---------------------------------------------------------------------- */

static cJSON *partial_root(const char *study, tsim_shard shard, char *const *argv, int argc)
{
    cJSON *root = tsim_result_json_new();
    cJSON *p = cJSON_AddObjectToObject(root, "partial");
    cJSON_AddNumberToObject(p, "format", TSIM_PARTIAL_FORMAT);
    cJSON *sh = cJSON_AddObjectToObject(p, "shard");
    cJSON_AddNumberToObject(sh, "index", shard.index);
    cJSON_AddNumberToObject(sh, "count", shard.count);
    cJSON *a = cJSON_AddArrayToObject(p, "argv");
    for (int i = 0; i < argc; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
    cJSON_AddStringToObject(root, "study", study);
    return root;
}

static cJSON *sketch_json(const tsim_series *s)
{
    tsim_sketch k;
    if (tsim_series_sketch(s, &k))
        return NULL;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "n", count((int64_t)k.n));
    cJSON_AddItemToObject(j, "sum", num(k.sum));
    cJSON_AddItemToObject(j, "mean", num(k.mean));
    cJSON_AddItemToObject(j, "m2", num(k.m2));
    cJSON_AddItemToObject(j, "min", num(k.min));
    cJSON_AddItemToObject(j, "max", num(k.max));
    cJSON_AddItemToObject(j, "below", count((int64_t)k.below));
    cJSON_AddItemToObject(j, "above", count((int64_t)k.above));
    cJSON *bins = cJSON_AddArrayToObject(j, "bins");
    for (size_t i = 0; i < k.n_bins; i++) {
        cJSON *b = cJSON_CreateArray();
        cJSON_AddItemToArray(b, cJSON_CreateNumber(k.bin[i]));
        cJSON_AddItemToArray(b, count((int64_t)k.count[i]));
        cJSON_AddItemToArray(b, num(k.bin_min[i]));
        cJSON_AddItemToArray(bins, b);
    }
    tsim_sketch_free(&k);
    return j;
}

cJSON *tsim_replay_partial_json(const tsim_session *s, const tsim_replay_partial_info *info, tsim_error *err)
{
    cJSON *root = partial_root("replay", info->shard, info->argv, info->argc);
    cJSON *t = cJSON_AddObjectToObject(root, "trace");
    cJSON_AddStringToObject(t, "path", info->trace_path ? info->trace_path : "");
    cJSON_AddItemToObject(t, "records", count(info->records));
    cJSON_AddItemToObject(t, "bytes", count(info->bytes));
    char content[40];
    snprintf(content, sizeof content, "fnv64w:%016llx", (unsigned long long)info->digest.hash);
    cJSON_AddStringToObject(t, "content", content);
    cJSON_AddNumberToObject(t, "experts", info->header->experts);
    cJSON_AddNumberToObject(t, "ep", info->header->ep);
    cJSON_AddNumberToObject(t, "ranks_per_node", info->header->ranks_per_node);
    cJSON_AddNumberToObject(t, "topk", info->header->topk);
    cJSON_AddItemToObject(t, "meta",
                          info->header->meta ? cJSON_Duplicate(info->header->meta, 1) : cJSON_CreateObject());
    if (info->header->home) {
        cJSON *home = cJSON_AddArrayToObject(t, "home");
        for (int e = 0; e < info->header->experts; e++)
            cJSON_AddItemToArray(home, cJSON_CreateNumber(info->header->home[e]));
    }
    cJSON *ses = cJSON_AddObjectToObject(root, "session");
    cJSON_AddNumberToObject(ses, "slots", s->topo.slots);
    cJSON_AddItemToObject(ses, "lambda_eval", num(s->lambda_eval));
    cJSON_AddBoolToObject(ses, "timing", s->timing);
    cJSON_AddBoolToObject(ses, "step_model", s->step_model_on);
    cJSON_AddBoolToObject(ses, "per_record", info->per_record);
    cJSON_AddBoolToObject(ses, "values", info->values);
    /* not in "session", which every shard must share: only the shards that
     * planned a re-homing planner's layers saw a placement */
    cJSON_AddBoolToObject(root, "rehoming", s->rehoming);
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    bool oom = !results;
    for (int p = 0; p < s->n_planners && !oom; p++) {
        const tsim_planner_result *res = &s->results[p];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(results, r);
        cJSON_AddStringToObject(r, "planner", s->planners[p].label);
        cJSON_AddStringToObject(r, "algorithm", s->planners[p].desc->name);
        cJSON_AddItemToObject(r, "records", count(res->records));
        cJSON *notes = cJSON_AddArrayToObject(r, "notes");
        for (int b = 0; b < TSIM_NOTE_KINDS; b++)
            cJSON_AddItemToArray(notes, count(res->note_records[b]));
        cJSON *metrics = cJSON_AddObjectToObject(r, "metrics");
        if (info->values) {
            cJSON *runs = cJSON_AddArrayToObject(r, "runs");
            for (int64_t k = 0; k < res->n_runs; k++) {
                cJSON *run = cJSON_CreateArray();
                cJSON_AddItemToArray(run, count(res->runs[2 * k]));
                cJSON_AddItemToArray(run, count(res->runs[2 * k + 1]));
                cJSON_AddItemToArray(runs, run);
            }
        }
        for (int m = 0; m < TSIM_M_COUNT && !oom; m++) {
            const tsim_series *ser = &res->metrics[m];
            cJSON *v;
            if (info->values) {
                if (!tsim_series_exact(ser)) {
                    cJSON_Delete(root);
                    tsim_error_set(err, TSIM_E_INTERNAL, "partial result: values asked of a bounded series");
                    return NULL;
                }
                v = cJSON_CreateArray();
                for (size_t i = 0; v && i < ser->n; i++)
                    cJSON_AddItemToArray(v, num(ser->values[i]));
            } else {
                v = sketch_json(ser);
            }
            oom = !v;
            if (v)
                cJSON_AddItemToObject(metrics, tsim_metric_names[m], v);
        }
    }
    if (!oom && info->per_record) {
        cJSON *ids = cJSON_AddArrayToObject(root, "ids");
        for (int64_t i = 0; ids && i < s->n_ids; i++) {
            cJSON *id = cJSON_CreateArray();
            cJSON_AddItemToArray(id, count(s->ids[i].index));
            cJSON_AddItemToArray(id, count(s->ids[i].microbatch));
            cJSON_AddItemToArray(id, count(s->ids[i].layer));
            cJSON_AddItemToArray(ids, id);
        }
    }
    if (oom) {
        cJSON_Delete(root);
        tsim_error_set(err, TSIM_E_INTERNAL, "out of memory writing the partial result");
        return NULL;
    }
    return root;
}

static cJSON *row_json(const tsim_study_row *r)
{
    cJSON *j = cJSON_CreateObject();
    if (r->axis)
        cJSON_AddStringToObject(j, "axis", r->axis);
    cJSON_AddNumberToObject(j, "ep", r->ep);
    cJSON_AddItemToObject(j, "imbalance", num(r->imbalance));
    cJSON_AddNumberToObject(j, "slots", r->slots);
    if (r->planner_slots > 0)
        cJSON_AddNumberToObject(j, "planner_slots", r->planner_slots);
    cJSON_AddItemToObject(j, "lambda_plan", num(r->lambda_plan));
    cJSON_AddItemToObject(j, "lambda_eval", num(r->lambda_eval));
    cJSON_AddNumberToObject(j, "flow_hint", r->flow_hint);
    cJSON_AddNumberToObject(j, "comm_cost", r->comm_cost);
    cJSON_AddStringToObject(j, "key", r->key);
    cJSON_AddStringToObject(j, "planner", r->planner);
    if (strcmp(tsim_study_row_method(r), r->planner) != 0) /* absent when the label is the name */
        cJSON_AddStringToObject(j, "method", r->method);
    cJSON_AddBoolToObject(j, "ok", r->ok);
    cJSON_AddStringToObject(j, "error", r->error);
    cJSON_AddNumberToObject(j, "seeds", r->seeds);
    cJSON_AddItemToObject(j, "records", count(r->records));
    cJSON *ms = cJSON_AddObjectToObject(j, "metrics");
    for (int m = 0; m < TSIM_M_COUNT; m++) {
        const tsim_summary *s = &r->metrics[m];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddBoolToObject(x, "on", r->metric_on[m]);
        cJSON_AddItemToObject(x, "n", count((int64_t)s->n));
        cJSON_AddItemToObject(x, "mean", num(s->mean));
        cJSON_AddItemToObject(x, "std", num(s->std));
        cJSON_AddItemToObject(x, "min", num(s->min));
        cJSON_AddItemToObject(x, "p50", num(s->p50));
        cJSON_AddItemToObject(x, "p95", num(s->p95));
        cJSON_AddItemToObject(x, "max", num(s->max));
        cJSON_AddItemToObject(ms, tsim_metric_names[m], x);
    }
    cJSON *notes = cJSON_AddArrayToObject(j, "notes");
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        cJSON_AddItemToArray(notes, count(r->notes[b]));
    return j;
}

cJSON *tsim_study_partial_json(const tsim_study *st, char *const *argv, int argc, tsim_error *err)
{
    tsim_shard shard = {st->shard_index, st->shard_count};
    cJSON *root = partial_root(st->study, shard, argv, argc);
    cJSON_AddItemToObject(root, "params", cJSON_Duplicate(st->params, 1));
    cJSON *grid = cJSON_AddObjectToObject(root, "grid");
    cJSON_AddNumberToObject(grid, "points", st->points);
    cJSON_AddNumberToObject(grid, "rows_per_point", st->rows_per_point);
    cJSON *points = cJSON_AddArrayToObject(root, "points");
    int row = 0;
    for (int i = 0; i < st->points && points; i++) {
        if (!tsim_grid_point_in_shard(i, shard.index, shard.count))
            continue;
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddItemToArray(points, pt);
        cJSON_AddNumberToObject(pt, "point", i);
        cJSON *rows = cJSON_AddArrayToObject(pt, "rows");
        for (int k = 0; k < st->rows_per_point && row < st->n; k++)
            cJSON_AddItemToArray(rows, row_json(&st->rows[row++]));
    }
    if (!points || row != st->n) {
        cJSON_Delete(root);
        tsim_error_set(err, TSIM_E_INTERNAL, "partial %s: %d rows for the shard's points", st->study, st->n);
        return NULL;
    }
    return root;
}

/* ---- reading ----------------------------------------------------------------------- */

void tsim_partial_free(tsim_partial *p)
{
    free(p->path);
    cJSON_Delete(p->root);
    tsim_argv_free(p->argv);
    memset(p, 0, sizeof *p);
}

/* The study names a partial may carry, as the static strings tsim_study uses. */
static const char *const known_studies[] = {"replay", "table1", "ablation", "sweep", "scaling", "advise"};

int tsim_partial_load(tsim_partial *p, const char *path, tsim_error *err)
{
    memset(p, 0, sizeof *p);
    /* strict (no NUL or garbage after the value) and bounded like a JSON trace */
    cJSON *root;
    int rc = tsim_json_read_file(path, TSIM_JSON_DOC_MAX, "a partial result", &root, err);
    if (rc)
        return rc;
    p->root = root;
    p->path = strdup(path);
    const cJSON *part = item(root, "partial");
    const cJSON *study = item(root, "study");
    int64_t format = 0, index = -1, count = 0;
    if (!cJSON_IsObject(part) || !cJSON_IsString(study)) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: not a partial result (no \"partial\"): write one with --shard I/N",
                       path);
        goto fail;
    }
    if (!get_count(item(part, "format"), &format) || format != TSIM_PARTIAL_FORMAT) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: partial result format %lld, this taotsim reads %d", path,
                       (long long)format, TSIM_PARTIAL_FORMAT);
        goto fail;
    }
    for (size_t i = 0; i < sizeof known_studies / sizeof known_studies[0]; i++)
        if (strcmp(study->valuestring, known_studies[i]) == 0)
            p->study = known_studies[i];
    const cJSON *sh = item(part, "shard");
    if (!p->study || !get_count(item(sh, "index"), &index) || !get_count(item(sh, "count"), &count) ||
        count < 1 || count > TSIM_SHARD_MAX || index >= count) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (study or shard)", path);
        goto fail;
    }
    p->shard = (tsim_shard){(int)index, (int)count};
    const cJSON *argv = item(part, "argv");
    int argc = cJSON_GetArraySize(argv);
    if (!cJSON_IsArray(argv) || argc < 1) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (argv)", path);
        goto fail;
    }
    p->argv = calloc((size_t)argc + 1, sizeof *p->argv);
    if (!p->argv || !p->path) {
        tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto fail;
    }
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        if (!cJSON_IsString(a) || !(p->argv[p->argc++] = strdup(a->valuestring))) {
            tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (argv)", path);
            goto fail;
        }
    }
    return TSIM_OK;
fail:
    tsim_partial_free(p);
    return TSIM_E_INPUT;
}

static int damaged(const tsim_partial *p, const char *what, tsim_error *err)
{
    return tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (%s)", p->path, what);
}

/* Which trace a replay part read: the trace's size and its records' hash. */
static int trace_identity(const tsim_partial *p, int64_t *bytes, const char **content, tsim_error *err)
{
    const cJSON *t = item(p->root, "trace"), *c = item(t, "content");
    if (!get_count(item(t, "bytes"), bytes) || !cJSON_IsString(c) || strncmp(c->valuestring, "fnv64w:", 7) != 0)
        return damaged(p, "trace size or content hash", err);
    *content = c->valuestring + 7;
    return TSIM_OK;
}

/* Replay shards must all have read one trace. Each hashes every record of it
 * (its counting pass reads them all), so the hashes must be equal, not merely
 * the path, header and meta, which another trace can share. */
static int check_same_trace(const tsim_partial *a, const tsim_partial *b, tsim_error *err)
{
    int64_t bytes_a, bytes_b;
    const char *hash_a, *hash_b;
    if (trace_identity(a, &bytes_a, &hash_a, err) || trace_identity(b, &bytes_b, &hash_b, err))
        return TSIM_E_INPUT;
    if (bytes_a == bytes_b && strcmp(hash_a, hash_b) == 0)
        return TSIM_OK;
    return tsim_error_set(err, TSIM_E_INPUT,
                          "%s and %s were computed from different traces (%lld bytes, records hash %s; %lld bytes, "
                          "records hash %s): not shards of one run",
                          a->path, b->path, (long long)bytes_a, hash_a, (long long)bytes_b, hash_b);
}

/* The first top-level field (but "command") where two parts differ. */
static const char *first_difference(const cJSON *a, const cJSON *b)
{
    static const char *const keys[] = {"tool", "version", "study", "trace", "params", "session", "grid"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *x = item(a, keys[i]), *y = item(b, keys[i]);
        if ((x || y) && !cJSON_Compare(x, y, true))
            return keys[i];
    }
    const cJSON *ra = item(a, "results"), *rb = item(b, "results");
    if (cJSON_GetArraySize(ra) != cJSON_GetArraySize(rb))
        return "planners";
    for (int i = 0; i < cJSON_GetArraySize(ra); i++) {
        const cJSON *x = cJSON_GetArrayItem(ra, i), *y = cJSON_GetArrayItem(rb, i);
        if (!cJSON_Compare(item(x, "planner"), item(y, "planner"), true) ||
            !cJSON_Compare(item(x, "algorithm"), item(y, "algorithm"), true))
            return "planners";
    }
    return NULL;
}

static void join_argv(char *buf, size_t n, char *const *argv, int argc)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int tsim_partial_check_pair(const tsim_partial *first, const tsim_partial *p, tsim_error *err)
{
    const bool replay = strcmp(first->study, "replay") == 0;
    if (p == first)
        /* alone, the first part is checked against itself (its fields are there) */
        return replay && check_same_trace(first, first, err) ? TSIM_E_INPUT : TSIM_OK;
    bool same_argv = p->argc == first->argc;
    for (int k = 0; same_argv && k < p->argc; k++)
        same_argv = strcmp(p->argv[k], first->argv[k]) == 0;
    if (!same_argv) {
        char a[512], b[512];
        join_argv(a, sizeof a, first->argv, first->argc);
        join_argv(b, sizeof b, p->argv, p->argc);
        return tsim_error_set(err, TSIM_E_INPUT, "%s and %s are shards of different commands ('%s' and '%s')",
                              first->path, p->path, a, b);
    }
    if (p->shard.count != first->shard.count)
        return tsim_error_set(err, TSIM_E_INPUT, "%s is shard %d/%d but %s is shard %d/%d: not one split",
                              first->path, first->shard.index, first->shard.count, p->path, p->shard.index,
                              p->shard.count);
    /* the same command line: a different study is a different command */
    if (replay && check_same_trace(first, p, err))
        return TSIM_E_INPUT;
    const char *diff = first_difference(first->root, p->root);
    if (diff)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s and %s differ in \"%s\": not shards of one run (other inputs or "
                              "another taotsim build)",
                              first->path, p->path, diff);
    return TSIM_OK;
}

int tsim_shards_check_cover(char *const *paths, const int *index, int n, int count, tsim_error *err)
{
    const int N = count;
    int *owner = malloc(sizeof *owner * (size_t)N);
    if (!owner)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int k = 0; k < N; k++)
        owner[k] = -1;
    int rc = TSIM_OK;
    for (int i = 0; i < n && rc == TSIM_OK; i++) {
        int k = index[i];
        if (owner[k] >= 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s and %s are both shard %d/%d (overlapping shards)",
                                paths[owner[k]], paths[i], k, N);
        owner[k] = i;
    }
    for (int k = 0; k < N && rc == TSIM_OK; k++) {
        if (owner[k] >= 0)
            continue;
        char have[512];
        size_t used = 0;
        have[0] = '\0';
        for (int i = 0; i < n && used + 1 < sizeof have; i++) {
            int w = snprintf(have + used, sizeof have - used, "%s%s (%d/%d)", i ? ", " : "", paths[i], index[i], N);
            if (w < 0)
                break;
            used += (size_t)w;
        }
        int missing = 0;
        for (int q = 0; q < N; q++)
            missing += owner[q] < 0;
        rc = tsim_error_set(err, TSIM_E_INPUT, "shard %d/%d is missing%s: the parts given are %s", k, N,
                            missing > 1 ? " (and more)" : "", have);
    }
    free(owner);
    return rc;
}

int tsim_partials_check(const tsim_partial *parts, int n, tsim_error *err)
{
    if (n < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "no partial results to merge");
    for (int i = 0; i < n; i++)
        if (tsim_partial_check_pair(&parts[0], &parts[i], err))
            return TSIM_E_INPUT;
    char **paths = malloc(sizeof *paths * (size_t)n);
    int *index = malloc(sizeof *index * (size_t)n);
    int rc = paths && index ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; !rc && i < n; i++) {
        paths[i] = parts[i].path;
        index[i] = parts[i].shard.index;
    }
    if (!rc)
        rc = tsim_shards_check_cover(paths, index, n, parts[0].shard.count, err);
    free(paths);
    free(index);
    return rc;
}

/* ---- replay --------------------------------------------------------------------------- */

int tsim_replay_partial_setup_get(const tsim_partial *part, tsim_replay_partial_setup *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    const cJSON *root = part->root;
    const cJSON *t = item(root, "trace"), *ses = item(root, "session"), *results = item(root, "results");
    int64_t experts, ep, rpn, topk, records;
    if (!cJSON_IsObject(t) || !cJSON_IsObject(ses) || !cJSON_IsArray(results) || !get_count(item(t, "experts"), &experts) ||
        !get_count(item(t, "ep"), &ep) || !get_count(item(t, "ranks_per_node"), &rpn) ||
        !get_count(item(t, "topk"), &topk) || !get_count(item(t, "records"), &records) ||
        !cJSON_IsString(item(t, "path")) || experts < 1 || ep < 1 || rpn < 1 || experts > 1 << 24 ||
        ep > 1 << 24 || rpn > 1 << 24 || topk > 1 << 24 || cJSON_GetArraySize(results) > 64 ||
        cJSON_GetArraySize(results) < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (trace, session or results)", part->path);
    out->trace_path = item(t, "path")->valuestring;
    out->records = records;
    out->timing = cJSON_IsTrue(item(ses, "timing"));
    out->step_model = cJSON_IsTrue(item(ses, "step_model"));
    out->per_record = cJSON_IsTrue(item(ses, "per_record"));
    out->values = cJSON_IsTrue(item(ses, "values"));
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        const cJSON *label = item(r, "planner");
        if (!cJSON_IsString(label) || strlen(label->valuestring) >= TSIM_LABEL_MAX)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (planner label)", part->path);
        snprintf(out->labels[out->n_planners++], TSIM_LABEL_MAX, "%s", label->valuestring);
    }
    tsim_trace_header *h = &out->header;
    h->experts = (int)experts;
    h->ep = (int)ep;
    h->ranks_per_node = (int)rpn;
    h->topk = (int)topk;
    const cJSON *home = item(t, "home");
    if (home) {
        if (cJSON_GetArraySize(home) != h->experts || !(h->home = malloc(sizeof *h->home * (size_t)h->experts)))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (home)", part->path);
        int e = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, home)
        {
            int64_t v;
            if (!get_count(x, &v) || v >= ep) {
                tsim_trace_header_free(h);
                return tsim_error_set(err, TSIM_E_INPUT, "%s: damaged partial result (home)", part->path);
            }
            h->home[e++] = (int32_t)v;
        }
    }
    const cJSON *meta = item(t, "meta");
    if (meta && !cJSON_IsNull(meta) && !(h->meta = cJSON_Duplicate(meta, 1))) {
        tsim_trace_header_free(h);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}

static int sketch_from_json(const cJSON *j, tsim_sketch *k)
{
    memset(k, 0, sizeof *k);
    int64_t n, below, above;
    if (!get_count(item(j, "n"), &n) || !get_count(item(j, "below"), &below) ||
        !get_count(item(j, "above"), &above) || !get_num(item(j, "sum"), &k->sum) ||
        !get_num(item(j, "mean"), &k->mean) || !get_num(item(j, "m2"), &k->m2) || !get_num(item(j, "min"), &k->min) ||
        !get_num(item(j, "max"), &k->max))
        return -1;
    k->n = (uint64_t)n;
    k->below = (uint64_t)below;
    k->above = (uint64_t)above;
    const cJSON *bins = item(j, "bins");
    int nb = cJSON_GetArraySize(bins);
    if (!cJSON_IsArray(bins) || nb > tsim_sketch_bins())
        return -1;
    if (nb > 0) {
        k->bin = malloc(sizeof *k->bin * (size_t)nb);
        k->count = malloc(sizeof *k->count * (size_t)nb);
        k->bin_min = malloc(sizeof *k->bin_min * (size_t)nb);
        if (!k->bin || !k->count || !k->bin_min) {
            tsim_sketch_free(k);
            return -1;
        }
    }
    const cJSON *b;
    cJSON_ArrayForEach(b, bins)
    {
        int64_t bin, count;
        if (cJSON_GetArraySize(b) != 3 || !get_count(cJSON_GetArrayItem(b, 0), &bin) ||
            !get_count(cJSON_GetArrayItem(b, 1), &count) ||
            !get_num(cJSON_GetArrayItem(b, 2), &k->bin_min[k->n_bins]) || bin >= tsim_sketch_bins()) {
            tsim_sketch_free(k);
            return -1;
        }
        k->bin[k->n_bins] = (int32_t)bin;
        k->count[k->n_bins] = (uint64_t)count;
        k->n_bins++;
    }
    return 0;
}

/* Values mode: every planner's values of every part, placed by sequence
 * number, then pushed in record order. */
/* A replay merge fed one part at a time (in shard order), so only the part
 * being added is held besides what the merged result needs: per-record
 * values (when kept) wait in [planner][record][metric] until every part is
 * in, sketches merge as they come, ids are gathered and sorted at the end. */
struct tsim_replay_merger {
    tsim_session *s;
    int64_t total;
    bool values, per_record;
    int added;
    char **paths;           /* [added] for messages */
    double *vals;           /* [P][total][M] */
    int *from;              /* [P][total] the part that gave record q, -1 none */
    tsim_record_id *ids;
    int64_t n_ids, cap_ids;
};

void tsim_replay_merger_free(tsim_replay_merger *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->added; i++)
        free(m->paths[i]);
    free(m->paths);
    free(m->vals);
    free(m->from);
    free(m->ids);
    free(m);
}

int tsim_replay_merger_start(tsim_replay_merger **out, tsim_session *s, const tsim_partial *first, int n_parts,
                             tsim_error *err)
{
    *out = NULL;
    tsim_replay_partial_setup setup;
    int rc = tsim_replay_partial_setup_get(first, &setup, err);
    if (rc)
        return rc;
    tsim_trace_header_free(&setup.header);
    if (setup.n_planners != s->n_planners)
        return tsim_error_set(err, TSIM_E_INTERNAL, "merge: %d planners in the session, %d in the parts",
                              s->n_planners, setup.n_planners);
    tsim_replay_merger *m = calloc(1, sizeof *m);
    if (!m)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    m->s = s;
    m->total = setup.records;
    m->values = setup.values;
    m->per_record = setup.per_record;
    m->paths = calloc((size_t)n_parts, sizeof *m->paths);
    const size_t P = (size_t)s->n_planners, T = (size_t)(m->total ? m->total : 1);
    if (m->paths && m->values) {
        m->vals = malloc(sizeof *m->vals * P * T * TSIM_M_COUNT);
        m->from = malloc(sizeof *m->from * P * T);
        for (size_t q = 0; m->from && q < P * T; q++)
            m->from[q] = -1;
    }
    if (!m->paths || (m->values && (!m->vals || !m->from))) {
        tsim_replay_merger_free(m);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory merging %lld records", (long long)m->total);
    }
    *out = m;
    return TSIM_OK;
}

/* One part's per-record values of planner p into the merger's table. */
static int add_values(tsim_replay_merger *m, int p, const tsim_partial *part, const cJSON *r, tsim_error *err)
{
    const cJSON *runs = item(r, "runs"), *metrics = item(r, "metrics");
    const cJSON *mv[TSIM_M_COUNT], *cur[TSIM_M_COUNT];
    int64_t count = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs)
    {
        int64_t first, len;
        if (cJSON_GetArraySize(run) != 2 || !get_count(cJSON_GetArrayItem(run, 0), &first) ||
            !get_count(cJSON_GetArrayItem(run, 1), &len) || first + len > m->total)
            return damaged(part, "record runs", err);
        count += len;
    }
    for (int k = 0; k < TSIM_M_COUNT; k++) {
        mv[k] = item(metrics, tsim_metric_names[k]);
        if (!cJSON_IsArray(mv[k]) || cJSON_GetArraySize(mv[k]) != count)
            return damaged(part, tsim_metric_names[k], err);
        cur[k] = mv[k]->child;
    }
    int *from = m->from + (size_t)p * (size_t)m->total;
    double *vals = m->vals + (size_t)p * (size_t)m->total * TSIM_M_COUNT;
    cJSON_ArrayForEach(run, runs)
    {
        int64_t first = (int64_t)cJSON_GetArrayItem(run, 0)->valuedouble;
        int64_t len = (int64_t)cJSON_GetArrayItem(run, 1)->valuedouble;
        for (int64_t q = first; q < first + len; q++) {
            if (from[q] >= 0)
                return tsim_error_set(err, TSIM_E_INPUT, "%s and %s both hold record %lld of planner '%s'",
                                      m->paths[from[q]], part->path, (long long)q, m->s->planners[p].label);
            from[q] = m->added;
            for (int k = 0; k < TSIM_M_COUNT; k++) {
                if (!get_num(cur[k], &vals[(size_t)q * TSIM_M_COUNT + (size_t)k]))
                    return damaged(part, tsim_metric_names[k], err);
                cur[k] = cur[k]->next;
            }
        }
    }
    return TSIM_OK;
}

/* One part's sketches of planner p merged into the session's series (the
 * parts come in shard order, so the sums run in the unsharded order). */
static int add_sketches(tsim_replay_merger *m, int p, const tsim_partial *part, const cJSON *r, tsim_error *err)
{
    for (int k = 0; k < TSIM_M_COUNT; k++) {
        tsim_series *dst = &m->s->results[p].metrics[k];
        tsim_sketch sk;
        if (sketch_from_json(item(item(r, "metrics"), tsim_metric_names[k]), &sk))
            return damaged(part, tsim_metric_names[k], err);
        int bad;
        if (m->added == 0) {
            bad = tsim_series_from_sketch(dst, &sk);
        } else {
            tsim_series one = {0};
            bad = tsim_series_from_sketch(&one, &sk) || tsim_series_merge(dst, &one);
            tsim_series_free(&one);
        }
        tsim_sketch_free(&sk);
        if (bad)
            return damaged(part, tsim_metric_names[k], err);
    }
    return TSIM_OK;
}

static int add_ids(tsim_replay_merger *m, const tsim_partial *part, tsim_error *err)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, item(part->root, "ids"))
    {
        int64_t v[3];
        for (int c = 0; c < 3; c++)
            if (cJSON_GetArraySize(x) != 3 || !get_count(cJSON_GetArrayItem(x, c), &v[c]))
                return damaged(part, "ids", err);
        if (m->n_ids == m->cap_ids) {
            int64_t cap = m->cap_ids ? 2 * m->cap_ids : 1024;
            tsim_record_id *grown = realloc(m->ids, sizeof *grown * (size_t)cap);
            if (!grown)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            m->ids = grown;
            m->cap_ids = cap;
        }
        m->ids[m->n_ids++] = (tsim_record_id){v[0], v[1], v[2]};
    }
    return TSIM_OK;
}

int tsim_replay_merger_add(tsim_replay_merger *m, const tsim_partial *part, tsim_error *err)
{
    tsim_session *s = m->s;
    for (int p = 0; p < s->n_planners; p++) {
        tsim_planner_result *res = &s->results[p];
        const cJSON *r = cJSON_GetArrayItem(item(part->root, "results"), p);
        const cJSON *notes = item(r, "notes");
        int64_t records;
        if (!cJSON_IsObject(r) || !get_count(item(r, "records"), &records) ||
            cJSON_GetArraySize(notes) != TSIM_NOTE_KINDS)
            return damaged(part, "results", err);
        res->records += records;
        for (int b = 0; b < TSIM_NOTE_KINDS; b++) {
            int64_t c;
            if (!get_count(cJSON_GetArrayItem(notes, b), &c))
                return damaged(part, "notes", err);
            res->note_records[b] += c;
        }
    }
    if (cJSON_IsTrue(item(part->root, "rehoming")))
        s->rehoming = true;
    if (!(m->paths[m->added] = strdup(part->path)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = TSIM_OK;
    for (int p = 0; p < s->n_planners && rc == TSIM_OK; p++) {
        const cJSON *r = cJSON_GetArrayItem(item(part->root, "results"), p);
        rc = m->values ? add_values(m, p, part, r, err) : add_sketches(m, p, part, r, err);
    }
    if (rc == TSIM_OK && m->per_record)
        rc = add_ids(m, part, err);
    m->added++;
    return rc;
}

static int cmp_id(const void *a, const void *b)
{
    const tsim_record_id *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int tsim_replay_merger_finish(tsim_replay_merger *m, tsim_error *err)
{
    tsim_session *s = m->s;
    for (int p = 0; p < s->n_planners; p++)
        if (s->results[p].records != m->total)
            return tsim_error_set(err, TSIM_E_INPUT, "the parts hold %lld records of planner '%s', the trace %lld",
                                  (long long)s->results[p].records, s->planners[p].label, (long long)m->total);
    for (int p = 0; m->values && p < s->n_planners; p++) {
        const int *from = m->from + (size_t)p * (size_t)m->total;
        const double *vals = m->vals + (size_t)p * (size_t)m->total * TSIM_M_COUNT;
        for (int64_t q = 0; q < m->total; q++)
            if (from[q] < 0)
                return tsim_error_set(err, TSIM_E_INPUT, "no part holds record %lld of planner '%s'", (long long)q,
                                      s->planners[p].label);
        tsim_planner_result *res = &s->results[p];
        for (int64_t q = 0; q < m->total; q++)
            for (int k = 0; k < TSIM_M_COUNT; k++)
                if (tsim_series_push(&res->metrics[k], vals[(size_t)q * TSIM_M_COUNT + (size_t)k]))
                    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    if (!m->per_record)
        return TSIM_OK;
    qsort(m->ids, (size_t)m->n_ids, sizeof *m->ids, cmp_id);
    int64_t unique = 0;
    for (int64_t q = 0; q < m->n_ids; q++)
        if (unique == 0 || m->ids[unique - 1].index != m->ids[q].index)
            m->ids[unique++] = m->ids[q];
    if (unique != m->total)
        return tsim_error_set(err, TSIM_E_INPUT, "the parts name %lld records of %lld", (long long)unique,
                              (long long)m->total);
    free(s->ids);
    s->ids = m->ids;
    s->n_ids = s->cap_ids = unique;
    m->ids = NULL;
    m->n_ids = m->cap_ids = 0;
    return TSIM_OK;
}

int tsim_replay_merge(tsim_session *s, const tsim_partial *parts, int n, tsim_error *err)
{
    tsim_replay_merger *m;
    int rc = tsim_replay_merger_start(&m, s, &parts[0], n, err);
    /* in shard order, as a streaming merge adds them */
    for (int k = 0; !rc && k < parts[0].shard.count; k++)
        for (int i = 0; !rc && i < n; i++)
            if (parts[i].shard.index == k)
                rc = tsim_replay_merger_add(m, &parts[i], err);
    if (!rc)
        rc = tsim_replay_merger_finish(m, err);
    tsim_replay_merger_free(m);
    return rc;
}

/* ---- studies ----------------------------------------------------------------------- */

static int row_from_json(const cJSON *j, tsim_study_row *r)
{
    memset(r, 0, sizeof *r);
    int ep, slots, flow, comm, seeds;
    int64_t records;
    const cJSON *axis = item(j, "axis"), *key = item(j, "key"), *planner = item(j, "planner");
    const cJSON *error = item(j, "error");
    if (!get_int(item(j, "ep"), &ep) || !get_num(item(j, "imbalance"), &r->imbalance) ||
        !get_int(item(j, "slots"), &slots) || !get_num(item(j, "lambda_plan"), &r->lambda_plan) ||
        !get_num(item(j, "lambda_eval"), &r->lambda_eval) || !get_int(item(j, "flow_hint"), &flow) ||
        !get_int(item(j, "comm_cost"), &comm) || !get_int(item(j, "seeds"), &seeds) ||
        !get_count(item(j, "records"), &records) || !cJSON_IsString(key) || !cJSON_IsString(planner) ||
        !cJSON_IsString(error) || strlen(key->valuestring) >= sizeof r->key ||
        strlen(planner->valuestring) >= sizeof r->planner || !cJSON_IsBool(item(j, "ok")))
        return -1;
    if (axis) {
        static const char *const axes[] = {"ep", "imbalance", "slots"};
        for (int a = 0; a < 3 && cJSON_IsString(axis); a++)
            if (strcmp(axis->valuestring, axes[a]) == 0)
                r->axis = axes[a];
        if (!r->axis)
            return -1;
    }
    const cJSON *own_slots = item(j, "planner_slots");
    if (own_slots && (!get_int(own_slots, &r->planner_slots) || r->planner_slots < 1))
        return -1;
    r->ep = ep;
    r->slots = slots;
    r->flow_hint = flow;
    r->comm_cost = comm;
    r->seeds = seeds;
    r->records = records;
    r->ok = cJSON_IsTrue(item(j, "ok"));
    snprintf(r->key, sizeof r->key, "%s", key->valuestring);
    snprintf(r->planner, sizeof r->planner, "%s", planner->valuestring);
    const cJSON *method = item(j, "method"); /* the planner's name, when not its label */
    if (method && (!cJSON_IsString(method) || strlen(method->valuestring) >= sizeof r->method))
        return -1;
    snprintf(r->method, sizeof r->method, "%s", method ? method->valuestring : r->planner);
    snprintf(r->error, sizeof r->error, "%s", error->valuestring);
    const cJSON *ms = item(j, "metrics");
    for (int m = 0; m < TSIM_M_COUNT; m++) {
        const cJSON *x = item(ms, tsim_metric_names[m]);
        tsim_summary *s = &r->metrics[m];
        int64_t cnt;
        if (!cJSON_IsBool(item(x, "on")) || !get_count(item(x, "n"), &cnt) || !get_num(item(x, "mean"), &s->mean) ||
            !get_num(item(x, "std"), &s->std) || !get_num(item(x, "min"), &s->min) ||
            !get_num(item(x, "p50"), &s->p50) || !get_num(item(x, "p95"), &s->p95) ||
            !get_num(item(x, "max"), &s->max))
            return -1;
        s->n = (size_t)cnt;
        r->metric_on[m] = cJSON_IsTrue(item(x, "on"));
    }
    const cJSON *notes = item(j, "notes");
    if (cJSON_GetArraySize(notes) != TSIM_NOTE_KINDS)
        return -1;
    for (int b = 0; b < TSIM_NOTE_KINDS; b++)
        if (!get_count(cJSON_GetArrayItem(notes, b), &r->notes[b]))
            return -1;
    return 0;
}

int tsim_study_merge(tsim_study *out, const tsim_partial *parts, int n, tsim_error *err)
{
    tsim_study_init(out, parts[0].study);
    const cJSON *grid = item(parts[0].root, "grid");
    int64_t points, per_point;
    if (!get_count(item(grid, "points"), &points) || !get_count(item(grid, "rows_per_point"), &per_point) ||
        points > 1 << 20 || per_point > 1 << 20 || !cJSON_IsObject(item(parts[0].root, "params")))
        return damaged(&parts[0], "grid", err);
    out->points = (int)points;
    out->rows_per_point = (int)per_point;
    cJSON_Delete(out->params);
    out->params = cJSON_Duplicate(item(parts[0].root, "params"), 1);
    for (int64_t pt = 0; pt < points; pt++) {
        const tsim_partial *part = NULL;
        for (int i = 0; i < n && !part; i++)
            if (tsim_grid_point_in_shard((int)pt, parts[i].shard.index, parts[i].shard.count))
                part = &parts[i];
        const cJSON *found = NULL, *x;
        cJSON_ArrayForEach(x, item(part->root, "points"))
        {
            int64_t at;
            if (get_count(item(x, "point"), &at) && at == pt)
                found = x;
        }
        const cJSON *rows = item(found, "rows");
        if (!found || cJSON_GetArraySize(rows) != per_point)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: grid point %lld is missing or damaged", part->path,
                                  (long long)pt);
        cJSON_ArrayForEach(x, rows)
        {
            tsim_study_row *row = tsim_study_add(out);
            if (!row)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            if (row_from_json(x, row))
                return damaged(part, "rows", err);
        }
    }
    return tsim_study_finish(out, err);
}
