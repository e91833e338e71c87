/* Trace reader front end: format detection, the header rules, the checks every
 * format shares (duplicates, totals), the even split and rebucketing, and the
 * warning queue. The format-specific parsing is in trace_json.c and
 * trace_csv.c, the writers in trace_write.c. */
#include "torch_pt.h"
#include "trace_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "topology.h"

static size_t max_line_override;

void tsim_trace_set_max_line(size_t bytes)
{
    max_line_override = bytes;
}

size_t tsim_trace_max_line(void)
{
    return max_line_override ? max_line_override : TSIM_GZLINE_DEFAULT_MAX;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int tsim_trace_format_from_path(const char *path, tsim_trace_format *fmt, tsim_error *err)
{
    if (ends_with(path, ".jsonl.gz"))
        *fmt = TSIM_FMT_JSONL_GZ;
    else if (ends_with(path, ".jsonl"))
        *fmt = TSIM_FMT_JSONL;
    else if (ends_with(path, ".json"))
        *fmt = TSIM_FMT_JSON;
    else if (ends_with(path, ".csv") || ends_with(path, ".csv.gz"))
        *fmt = TSIM_FMT_CSV;
    else if (ends_with(path, ".npy"))
        *fmt = TSIM_FMT_NPY;
    else if (ends_with(path, ".safetensors"))
        *fmt = TSIM_FMT_SAFETENSORS;
    else if (ends_with(path, ".pt"))
        *fmt = TSIM_FMT_PT;
    else if (ends_with(path, ".npz"))
        *fmt = TSIM_FMT_NPZ;
    else
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: cannot tell the trace format from the name: expected .json, .jsonl, "
                              ".jsonl.gz, .csv, .csv.gz, .npy, .npz, .pt, .safetensors or a Megatron router trace directory",
                              path);
    return TSIM_OK;
}

bool tsim_trace_format_import_only(tsim_trace_format fmt)
{
    return fmt == TSIM_FMT_CSV || fmt == TSIM_FMT_NPY || fmt == TSIM_FMT_SAFETENSORS || fmt == TSIM_FMT_MEGATRON ||
           fmt == TSIM_FMT_PT || fmt == TSIM_FMT_NPZ || fmt == TSIM_FMT_TRTLLM;
}

void tsim_path_base(const char *path, char *buf, size_t cap)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--; /* "dir/" names "dir" */
    const char *end = path + n;
    const char *p = end;
    while (p > path && p[-1] != '/')
        p--;
    snprintf(buf, cap, "%.*s", (int)(end - p), p);
}

/* Each format option belongs to one format: anything else is a mistake. */
static int check_format_options(const char *path, tsim_trace_format fmt, const tsim_read_options *o, tsim_error *err)
{
    if (o->block && strcmp(o->block, "decoder") != 0 && strcmp(o->block, "mtp") != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--block: expected decoder or mtp, got '%.40s'", o->block);
    if (o->experts < 0 || o->experts > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d is out of range 1..%d", o->experts, TSIM_MAX_EXPERTS);
    if (fmt != TSIM_FMT_MEGATRON && (o->block || o->experts))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: --%s applies to Megatron router trace directories only, not to this trace",
                              path, o->block ? "block" : "experts");
    if (fmt != TSIM_FMT_MEGATRON && o->megatron_parallel)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: --megatron-parallel applies to Megatron router trace directories only, not to this "
                              "trace",
                              path);
    if (!o->megatron_parallel && (o->num_layers || o->ep_group))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: --%s needs --megatron-parallel", path,
                              o->num_layers ? "num-layers" : "ep-group");
    if (fmt != TSIM_FMT_SAFETENSORS && o->tensor)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: --tensor applies to .safetensors files only, not to this trace",
                              path);
    if (fmt != TSIM_FMT_NPZ && o->array)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: --array applies to .npz files only, not to this trace", path);
    if (o->array && !o->array[0])
        return tsim_error_set(err, TSIM_E_INPUT, "--array: the name is empty");
    if (o->tensor && !o->tensor[0])
        return tsim_error_set(err, TSIM_E_INPUT, "--tensor: the name is empty");
    return TSIM_OK;
}

void tsim_trace_header_free(tsim_trace_header *h)
{
    if (!h)
        return;
    free(h->home);
    cJSON_Delete(h->meta);
    h->home = NULL;
    h->meta = NULL;
}

int tsim_trace_header_copy(tsim_trace_header *dst, const tsim_trace_header *src, tsim_error *err)
{
    *dst = *src;
    dst->home = NULL;
    dst->meta = NULL;
    if (src->home) {
        if (src->experts < 1 || src->experts > TSIM_MAX_EXPERTS)
            return tsim_error_set(err, TSIM_E_INTERNAL, "header copy: experts %d out of range", src->experts);
        dst->home = malloc(sizeof *dst->home * (size_t)src->experts);
        if (!dst->home)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        memcpy(dst->home, src->home, sizeof *dst->home * (size_t)src->experts);
    }
    if (src->meta) {
        dst->meta = cJSON_Duplicate(src->meta, 1);
        if (!dst->meta) {
            tsim_trace_header_free(dst);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
    }
    return TSIM_OK;
}

bool tsim_line_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return false;
    return true;
}

int tsim_next_content_line(tsim_reader *r, char **line, size_t *len, tsim_error *err)
{
    int rc;
    do {
        rc = tsim_gzline_next(&r->lines, line, len, err);
        if (rc != 1)
            return rc;
    } while (tsim_line_blank(*line));
    return 1;
}

/* ---- warnings ---------------------------------------------------------- */

int tsim_reader_warn(tsim_reader *r, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->warn_n == r->warn_cap) {
        size_t cap = r->warn_cap ? r->warn_cap * 2 : 8;
        char **p = realloc(r->warnings, sizeof *p * cap);
        if (!p)
            return -1;
        r->warnings = p;
        r->warn_cap = cap;
    }
    char *copy = strdup(msg);
    if (!copy)
        return -1;
    r->warnings[r->warn_n++] = copy;
    return 0;
}

/* Key names come from the input: keep messages to one printable line. */
static void printable(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 4 < cap; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
    if (src[i])
        memcpy(dst + i, "...", 4);
    else
        dst[i] = '\0';
}

int tsim_reader_warn_key(tsim_reader *r, const char *where, const char *context, const char *key)
{
    for (int i = 0; i < r->warned_n; i++)
        if (strcmp(r->warned_keys[i], key) == 0)
            return 0;
    if (r->warned_n == TSIM_WARN_KEYS_MAX) {
        if (r->warned_overflow)
            return 0;
        r->warned_overflow = true;
        return tsim_reader_warn(r, "%s: more than %d different unknown keys; the rest are ignored silently", where,
                                TSIM_WARN_KEYS_MAX);
    }
    char *copy = strdup(key);
    if (!copy)
        return -1;
    r->warned_keys[r->warned_n++] = copy;
    char shown[80];
    printable(shown, sizeof shown, key);
    return tsim_reader_warn(r, "%s: unknown key \"%s\" %s ignored", where, shown, context);
}

const char *tsim_reader_take_warning(tsim_reader *r)
{
    free(r->warn_taken);
    r->warn_taken = NULL;
    if (r->warn_head == r->warn_n) {
        r->warn_head = r->warn_n = 0;
        return NULL;
    }
    r->warn_taken = r->warnings[r->warn_head++];
    return r->warn_taken;
}

/* ---- the header -------------------------------------------------------- */

const char *tsim_json_type_name(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    return "an invalid value";
}

void tsim_number_text(char *buf, size_t cap, double v)
{
    if (v == floor(v) && fabs(v) < 1e18) {
        snprintf(buf, cap, "%lld", (long long)v);
        return;
    }
    /* the shortest form that reads back as the same double */
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

typedef struct {
    tsim_reader *r;
    tsim_key_line_fn key_line;
    const void *ctx;
    long obj_line;
    tsim_error *err;
} hdr_ctx;

static int hdr_fail(const hdr_ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int hdr_fail(const hdr_ctx *c, const char *key, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    long line = key ? c->key_line(c->ctx, key) : c->obj_line;
    return tsim_error_set(c->err, TSIM_E_INPUT, "%s:%ld: header: %s", c->r->path, line, msg);
}

/* An integer key in lo..hi. Returns 0 ok, 1 absent (or null when optional), or an error. */
static int hdr_int(const hdr_ctx *c, const cJSON *obj, const char *key, bool required, int64_t lo, int64_t hi,
                   const char *limit_note, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || (!required && cJSON_IsNull(v))) {
        if (required)
            return hdr_fail(c, NULL, "missing required key \"%s\"", key);
        return 1;
    }
    if (!cJSON_IsNumber(v))
        return hdr_fail(c, key, "\"%s\" must be an integer, got %s", key, tsim_json_type_name(v));
    double d = v->valuedouble;
    char num[48];
    tsim_number_text(num, sizeof num, d);
    if (d != floor(d))
        return hdr_fail(c, key, "\"%s\" must be an integer, got %s", key, num);
    if (d < (double)lo)
        return hdr_fail(c, key, "\"%s\" is %s, expected at least %lld", key, num, (long long)lo);
    if (d > (double)hi)
        return hdr_fail(c, key, "\"%s\" is %s, above the %s of %lld", key, num, limit_note, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

static const char *const header_keys[] = {"format", "version", "experts", "ep",     "ranks_per_node",
                                          "topk",   "home",    "meta",    "records"};

int tsim_reader_parse_header(tsim_reader *r, const cJSON *obj, tsim_key_line_fn key_line, const void *ctx,
                             long obj_line, tsim_error *err)
{
    hdr_ctx c = {r, key_line, ctx, obj_line, err};
    tsim_trace_header *h = &r->hdr;
    int rc;

    /* Duplicate keys would make "which one wins" a guess; unknown ones only warn. */
    for (const cJSON *k = obj->child; k; k = k->next) {
        bool known = false;
        for (size_t i = 0; i < sizeof header_keys / sizeof header_keys[0]; i++)
            known = known || strcmp(k->string, header_keys[i]) == 0;
        if (!known) {
            char where[TSIM_ERROR_MSG_MAX];
            snprintf(where, sizeof where, "%s:%ld", r->path, key_line(ctx, k->string));
            if (tsim_reader_warn_key(r, where, "in the header", k->string))
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            continue;
        }
        for (const cJSON *d = k->next; d; d = d->next)
            if (strcmp(d->string, k->string) == 0)
                return hdr_fail(&c, k->string, "key \"%s\" appears twice", k->string);
    }

    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(obj, "format");
    if (!fmt)
        return hdr_fail(&c, NULL, "missing required key \"format\" (expected \"moe-routing-trace\")");
    if (!cJSON_IsString(fmt))
        return hdr_fail(&c, "format", "\"format\" must be a string, got %s", tsim_json_type_name(fmt));
    if (strcmp(fmt->valuestring, "moe-routing-trace") != 0) {
        char shown[80];
        printable(shown, sizeof shown, fmt->valuestring);
        return hdr_fail(&c, "format", "\"format\" is \"%s\", expected \"moe-routing-trace\"", shown);
    }

    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(obj, "version");
    if (!ver)
        return hdr_fail(&c, NULL, "missing required key \"version\"");
    if (!cJSON_IsNumber(ver))
        return hdr_fail(&c, "version", "\"version\" must be an integer, got %s", tsim_json_type_name(ver));
    if (ver->valuedouble != 1.0) {
        char num[48];
        tsim_number_text(num, sizeof num, ver->valuedouble);
        return hdr_fail(&c, "version", "unsupported \"version\" %s (this reader reads version 1)", num);
    }

    int64_t experts, ep, rpn = 8, topk = 0;
    if ((rc = hdr_int(&c, obj, "experts", true, 1, TSIM_MAX_EXPERTS, "limit", &experts)))
        return rc;
    if ((rc = hdr_int(&c, obj, "ep", true, 1, TSIM_MAX_RANKS, "limit", &ep)))
        return rc;
    if (experts % ep != 0)
        return hdr_fail(&c, "ep", "\"experts\" %lld is not divisible by \"ep\" %lld", (long long)experts,
                        (long long)ep);
    if ((rc = hdr_int(&c, obj, "ranks_per_node", false, 1, TSIM_MAX_RANKS, "limit", &rpn)) > 1)
        return rc;
    if ((rc = hdr_int(&c, obj, "topk", false, 1, experts, "number of experts", &topk)) > 1)
        return rc;
    h->experts = (int)experts;
    h->ep = (int)ep;
    h->ranks_per_node = (int)rpn;
    h->topk = (int)topk;
    r->file_ep = (int)ep;

    const cJSON *home = cJSON_GetObjectItemCaseSensitive(obj, "home");
    if (home && !cJSON_IsNull(home)) {
        if (!cJSON_IsArray(home))
            return hdr_fail(&c, "home", "\"home\" must be an array of %lld ranks or null, got %s", (long long)experts,
                            tsim_json_type_name(home));
        int n = cJSON_GetArraySize(home);
        if (n != experts)
            return hdr_fail(&c, "home", "\"home\" has %d entries, expected %lld (one per expert)", n,
                            (long long)experts);
        h->home = malloc(sizeof *h->home * (size_t)experts);
        int *per_rank = calloc((size_t)ep, sizeof *per_rank);
        if (!h->home || !per_rank) {
            free(per_rank);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        int e = 0;
        const int64_t hpr = experts / ep;
        for (const cJSON *v = home->child; v; v = v->next, e++) {
            char num[48];
            if (!cJSON_IsNumber(v)) {
                free(per_rank);
                return hdr_fail(&c, "home", "\"home\"[%d] must be a rank, got %s", e, tsim_json_type_name(v));
            }
            tsim_number_text(num, sizeof num, v->valuedouble);
            if (v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble >= (double)ep) {
                free(per_rank);
                return hdr_fail(&c, "home", "\"home\"[%d] is %s, not a rank in 0..%lld", e, num, (long long)ep - 1);
            }
            int rank = (int)v->valuedouble;
            if (++per_rank[rank] > hpr) {
                free(per_rank);
                return hdr_fail(&c, "home",
                                "\"home\" gives rank %d more than %lld experts (every rank needs experts/ep = "
                                "%lld)",
                                rank, (long long)hpr, (long long)hpr);
            }
            h->home[e] = rank;
        }
        free(per_rank);
    }

    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "meta");
    if (meta && !cJSON_IsNull(meta)) {
        if (!cJSON_IsObject(meta))
            return hdr_fail(&c, "meta", "\"meta\" must be an object, got %s", tsim_json_type_name(meta));
        h->meta = cJSON_Duplicate(meta, 1);
        if (!h->meta)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}

int tsim_reader_alloc_buffers(tsim_reader *r, tsim_error *err)
{
    const size_t R = (size_t)r->hdr.ep, E = (size_t)r->hdr.experts;
    int rc = tsim_record_alloc(&r->rec, (int)R, (int)E, err);
    if (rc)
        return rc;
    r->tpe = calloc(E, sizeof *r->tpe);
    r->scratch = calloc(E, sizeof *r->scratch);
    if (!r->tpe || !r->scratch)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a record of %zu x %zu", R, E);
    return TSIM_OK;
}

void tsim_reader_begin_counts(tsim_reader *r)
{
    if (r->rebucket)
        memset(r->tpe, 0, sizeof *r->tpe * (size_t)r->hdr.experts);
}

void tsim_reader_row_done(tsim_reader *r)
{
    if (!r->rebucket)
        return;
    const int E = r->hdr.experts;
    for (int e = 0; e < E; e++)
        r->tpe[e] += r->scratch[e];
}

/* ---- opening ----------------------------------------------------------- */

/* --rpn, and the nodes it makes of the (effective) EP size: whole nodes, or
 * one node when it is at least ep. The import formats record no ranks per
 * node, so without --rpn they get 8, said once in a warning: a run that
 * silently sees one node and no inter-node traffic looks plausible. */
static int apply_rpn(tsim_reader *r, const char *path, const tsim_read_options *opts, tsim_error *err)
{
    const int ep = r->hdr.ep, rpn = opts->ranks_per_node;
    if (rpn > 0) {
        if (rpn < ep && ep % rpn != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: --rpn %d does not divide ep %d: nodes hold whole groups of ranks (give a "
                                  "divisor of %d, or %d or more for one node)",
                                  path, rpn, ep, ep, ep);
        r->hdr.ranks_per_node = rpn;
        return TSIM_OK;
    }
    if (!tsim_trace_format_import_only(r->fmt))
        return TSIM_OK; /* JSON traces record it (8 when absent, as the format says) */
    const int nodes = (ep + r->hdr.ranks_per_node - 1) / r->hdr.ranks_per_node;
    char shape[96];
    if (nodes == 1)
        snprintf(shape, sizeof shape, "ep %d is one node, so no token crosses nodes", ep);
    else
        snprintf(shape, sizeof shape, "ep %d is %d nodes", ep, nodes);
    if (tsim_reader_warn(r, "%s: the trace does not record the ranks per node: assuming %d (%s); give --rpn N", path,
                         r->hdr.ranks_per_node, shape))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    return TSIM_OK;
}

int tsim_reader_open(tsim_reader **out, const char *path, const tsim_read_options *opts, tsim_error *err)
{
    *out = NULL;
    tsim_read_options none = {0};
    if (!opts)
        opts = &none;
    tsim_trace_format fmt;
    int rc;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        const int kind = tsim_dir_kind(path); /* .pt dumps, .npz loads, TensorRT-LLM statistics, else Megatron */
        fmt = kind == 1 ? TSIM_FMT_PT : kind == 2 ? TSIM_FMT_NPZ : kind == 3 ? TSIM_FMT_TRTLLM : TSIM_FMT_MEGATRON;
    } else if ((rc = tsim_trace_format_from_path(path, &fmt, err)))
        return rc;
    if ((rc = check_format_options(path, fmt, opts, err)))
        return rc;
    if (opts->ep < 0 || opts->ep > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "--ep %d is out of range 1..%d", opts->ep, TSIM_MAX_RANKS);
    if (opts->ranks_per_node < 0 || opts->ranks_per_node > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "--rpn %d is out of range 1..%d", opts->ranks_per_node,
                              TSIM_MAX_RANKS);
    if (opts->dataset && strlen(opts->dataset) >= TSIM_TAG_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "--dataset is longer than %d characters", TSIM_TAG_MAX - 1);

    tsim_reader *r = calloc(1, sizeof *r);
    if (!r)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    r->lines.fd = -1;
    r->fmt = fmt;
    r->path = strdup(path);
    r->dataset = opts->dataset ? strdup(opts->dataset) : NULL;
    if (!r->path || (opts->dataset && !r->dataset)) {
        tsim_reader_close(r);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }

    if (fmt == TSIM_FMT_JSON)
        rc = tsim_json_open(r, err);
    else if (fmt == TSIM_FMT_CSV)
        rc = tsim_csv_open(r, ends_with(path, ".gz"), opts, err);
    else if (fmt == TSIM_FMT_NPY)
        rc = tsim_npy_open(r, opts, err);
    else if (fmt == TSIM_FMT_SAFETENSORS)
        rc = tsim_safetensors_open(r, opts, err);
    else if (fmt == TSIM_FMT_MEGATRON)
        rc = tsim_megatron_open(r, opts, err);
    else if (fmt == TSIM_FMT_PT)
        rc = tsim_pt_open(r, opts, err);
    else if (fmt == TSIM_FMT_NPZ)
        rc = tsim_npz_open(r, opts, err);
    else if (fmt == TSIM_FMT_TRTLLM)
        rc = tsim_trtllm_open(r, opts, err);
    else
        rc = tsim_jsonl_open(r, err);
    if (rc) {
        tsim_reader_close(r);
        return rc;
    }

    if (opts->ep > 0 && opts->ep != r->file_ep) {
        if (r->hdr.experts % opts->ep != 0) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: experts %d is not divisible by --ep %d", path, r->hdr.experts,
                                opts->ep);
            tsim_reader_close(r);
            return rc;
        }
        r->rebucket = true;
        r->hdr.ep = opts->ep;
        /* The file's home map names ranks of the old EP size. */
        free(r->hdr.home);
        r->hdr.home = NULL;
    }
    if ((rc = apply_rpn(r, path, opts, err))) {
        tsim_reader_close(r);
        return rc;
    }

    /* Each limit alone still allows a 2 GiB record (ep 4096 x 65536 experts). */
    if ((int64_t)r->hdr.ep * r->hdr.experts > TSIM_MAX_CELLS) {
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: %s %d x experts %d is %lld counts per record, above the limit of %lld (2^24)", path, r->rebucket ? "--ep" : "ep", r->hdr.ep, r->hdr.experts,
                            (long long)r->hdr.ep * r->hdr.experts, (long long)TSIM_MAX_CELLS);
        tsim_reader_close(r);
        return rc;
    }
    rc = tsim_reader_alloc_buffers(r, err);
    if (rc) {
        tsim_reader_close(r);
        return rc;
    }
    *out = r;
    return TSIM_OK;
}

const tsim_trace_header *tsim_reader_header(const tsim_reader *r)
{
    return &r->hdr;
}

bool tsim_reader_rebucketed(const tsim_reader *r)
{
    return r->rebucket;
}

int tsim_reader_source_ep(const tsim_reader *r)
{
    return r->file_ep;
}

int64_t tsim_reader_count(const tsim_reader *r)
{
    return r->produced;
}

int64_t tsim_reader_skipped_zero(const tsim_reader *r)
{
    return r->skipped_zero;
}

int64_t tsim_reader_bytes(const tsim_reader *r)
{
    if (r->ext_progress) {
        int64_t bytes, done, total;
        r->ext_progress(r, &bytes, &done, &total);
        return bytes;
    }
    if (r->text)
        return (int64_t)r->pos;
    return r->lines.bytes;
}

void tsim_reader_progress(const tsim_reader *r, int64_t *done, int64_t *total)
{
    if (r->ext_progress) {
        int64_t bytes;
        r->ext_progress(r, &bytes, done, total);
    } else if (r->text) {
        *done = (int64_t)r->pos;
        *total = (int64_t)r->text_len;
    } else {
        *done = tsim_gzline_offset(&r->lines);
        *total = r->lines.file_size;
    }
}

/* ---- records ----------------------------------------------------------- */

typedef struct {
    int64_t microbatch;
    int64_t layer;
    uint64_t tag_hash; /* FNV-1a of the dataset tag ("" for none) */
    int64_t record;
    uint64_t gen;
} seen_slot;

static uint64_t tag_hash(const char *tag)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *tag; tag++)
        h = (h ^ (unsigned char)*tag) * UINT64_C(0x100000001b3);
    return h;
}

static size_t seen_hash(const seen_slot *k, size_t cap)
{
    uint64_t x = ((uint64_t)k->layer * UINT64_C(0x9E3779B97F4A7C15)) ^
                 ((uint64_t)k->microbatch * UINT64_C(0xC2B2AE3D27D4EB4F)) ^ k->tag_hash;
    x ^= x >> 29;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    return (size_t)(x >> 20) & (cap - 1);
}

static bool seen_same(const seen_slot *a, const seen_slot *b)
{
    return a->layer == b->layer && a->microbatch == b->microbatch && a->tag_hash == b->tag_hash;
}

static int seen_grow(tsim_reader *r)
{
    size_t cap = r->seen_cap ? r->seen_cap * 2 : 64;
    seen_slot *fresh = calloc(cap, sizeof *fresh);
    if (!fresh)
        return -1;
    seen_slot *old = r->seen_slots;
    for (size_t i = 0; i < r->seen_cap; i++) {
        if (old[i].gen != r->seen_gen)
            continue;
        size_t j = seen_hash(&old[i], cap);
        while (fresh[j].gen == r->seen_gen)
            j = (j + 1) & (cap - 1);
        fresh[j] = old[i];
    }
    free(old);
    r->seen_slots = fresh;
    r->seen_cap = cap;
    return 0;
}

/* Returns the 1-based record that already had this (dataset, microbatch,
 * layer), 0 if none, -1 out of memory. The whole trace is remembered up to
 * TSIM_SEEN_RECORDS_MAX records; past that only the current (dataset,
 * microbatch) run, whose set a new generation empties in O(1). */
static int64_t seen_check(tsim_reader *r, const tsim_raw_record *raw, int64_t recno)
{
    if (r->seen_gen == 0)
        r->seen_gen = 1; /* calloc'd slots (generation 0) count as empty */
    bool same_run = r->have_prev && r->prev_microbatch == raw->microbatch && strcmp(r->prev_tag, raw->tag) == 0;
    if (!same_run) {
        r->have_prev = true;
        r->prev_microbatch = raw->microbatch;
        memcpy(r->prev_tag, raw->tag, sizeof r->prev_tag);
        if (r->seen_runs_only) {
            r->seen_n = 0;
            r->seen_gen++;
        }
    }
    seen_slot key = {raw->microbatch, raw->layer, tag_hash(raw->tag), recno, r->seen_gen};
    seen_slot *slots = r->seen_slots;
    if (r->seen_cap) {
        for (size_t j = seen_hash(&key, r->seen_cap);; j = (j + 1) & (r->seen_cap - 1)) {
            if (slots[j].gen != r->seen_gen)
                break;
            if (seen_same(&slots[j], &key))
                return slots[j].record;
        }
    }
    if (!r->seen_runs_only && r->seen_n >= TSIM_SEEN_RECORDS_MAX) {
        /* Too long to remember whole: from here on, check within runs. */
        r->seen_runs_only = true;
        r->seen_n = 0;
        r->seen_gen++;
    }
    if (r->seen_runs_only && r->seen_n >= TSIM_SEEN_LAYERS_MAX)
        return 0;
    if ((r->seen_n + 1) * 2 > r->seen_cap && seen_grow(r))
        return -1;
    slots = r->seen_slots;
    size_t j = seen_hash(&key, r->seen_cap);
    while (slots[j].gen == r->seen_gen)
        j = (j + 1) & (r->seen_cap - 1);
    slots[j] = key;
    r->seen_n++;
    return 0;
}

static int stick(tsim_reader *r, int rc, const tsim_error *err)
{
    r->sticky_rc = rc;
    if (err)
        r->sticky = *err;
    else
        tsim_error_set(&r->sticky, rc, "%s: reading failed earlier", r->path);
    return rc;
}

int tsim_reader_next(tsim_reader *r, const tsim_record **rec, tsim_error *err)
{
    *rec = NULL;
    if (r->sticky_rc) {
        if (err)
            *err = r->sticky;
        return r->sticky_rc;
    }
    if (r->finished)
        return 0;
    tsim_error local;
    if (!err)
        err = &local;
    for (;;) {
        tsim_raw_record raw;
        memset(&raw, 0, sizeof raw);
        int rc = r->next_raw(r, &raw, err);
        if (rc < 0 || rc > 1)
            return stick(r, rc, err);
        if (rc == 0) {
            if (r->skipped_zero > 0 && r->produced > 0 &&
                tsim_reader_warn(r,
                                 "%s: skipped %lld all-zero record%s (unused rows of a ring buffer, or layers "
                                 "that routed nothing)",
                                 r->path, (long long)r->skipped_zero, r->skipped_zero == 1 ? "" : "s"))
                return stick(r, tsim_error_set(err, TSIM_E_INTERNAL, "out of memory"), err);
            if (r->produced > 0) {
                r->finished = true;
                return 0;
            }
            if (r->skipped_zero > 0 && r->raw_records == 0)
                tsim_error_set(err, TSIM_E_INPUT, "%s: empty trace: all %lld records are all zeros", r->path,
                               (long long)r->skipped_zero);
            else if (r->raw_records > 0 && r->dataset)
                tsim_error_set(err, TSIM_E_INPUT, "%s: no records with dataset \"%s\" (of %lld records)", r->path,
                               r->dataset, (long long)r->raw_records);
            else
                tsim_error_set(err, TSIM_E_INPUT, "%s: empty trace: no records", r->path);
            return stick(r, TSIM_E_INPUT, err);
        }
        int64_t recno = ++r->raw_records;
        int64_t first = seen_check(r, &raw, recno);
        if (first < 0)
            return stick(r, tsim_error_set(err, TSIM_E_INTERNAL, "out of memory"), err);
        char at[32] = ""; /* ":line", when the format has lines */
        if (raw.line > 0)
            snprintf(at, sizeof at, ":%ld", raw.line);
        if (first > 0) {
            char tag_note[TSIM_TAG_MAX + 24] = "";
            if (raw.tag[0])
                snprintf(tag_note, sizeof tag_note, " of dataset \"%s\"", raw.tag);
            tsim_error_set(err, TSIM_E_INPUT,
                           "%s%s: record %lld: duplicate record: microbatch %lld, layer %lld%s already appeared "
                           "as record %lld",
                           r->path, at, (long long)recno, (long long)raw.microbatch, (long long)raw.layer,
                           tag_note, (long long)first);
            return stick(r, TSIM_E_INPUT, err);
        }
        if (raw.kind == REC_EXPERT_COUNTS || r->rebucket) {
            tsim_record_split_even(&r->rec, r->tpe);
            /* Fewer ranks put more tokens in each count: a rebucketed count
             * above 2^40 is an input error for every command alike (replay
             * and convert), never a writer's surprise later. */
            const size_t n_counts = (size_t)r->rec.ranks * (size_t)r->rec.experts;
            for (size_t i = 0; i < n_counts; i++)
                if (r->rec.counts[i] > TSIM_MAX_COUNT) {
                    tsim_error_set(err, TSIM_E_INPUT,
                                   "%s%s: record %lld: expert %d gets %lld tokens from rank %d after the split over "
                                   "%d ranks, above the 2^40 limit of one count (use a larger --ep)",
                                   r->path, at, (long long)recno, (int)(i % (size_t)r->rec.experts),
                                   (long long)r->rec.counts[i], (int)(i / (size_t)r->rec.experts), r->rec.ranks);
                    return stick(r, TSIM_E_INPUT, err);
                }
        }

        /* A parsing thread may have summed them already, where the counts
         * were still in its cache (the reading thread's serial work bounds -j). */
        const bool split = raw.kind == REC_EXPERT_COUNTS || r->rebucket;
        if (!(raw.total_ok && !split) &&
            !tsim_counts_total_ok(r->rec.counts, (size_t)r->rec.ranks * (size_t)r->rec.experts)) {
            tsim_error_set(err, TSIM_E_INPUT, "%s%s: record %lld: more than 2^62 tokens in one record", r->path, at,
                           (long long)recno);
            return stick(r, TSIM_E_INPUT, err);
        }
        if (r->dataset && strcmp(r->dataset, raw.tag) != 0)
            continue;
        r->rec.microbatch = raw.microbatch;
        r->rec.layer = raw.layer;
        r->rec.line = raw.line;
        r->rec.index = r->produced++;
        memcpy(r->rec.tag, raw.tag, sizeof r->rec.tag);
        *rec = &r->rec;
        return 1;
    }
}

int tsim_reader_seek(tsim_reader *r, int64_t offset, int64_t first_record, int64_t first_line, int64_t skip,
                     tsim_error *err)
{
    if ((r->fmt != TSIM_FMT_JSONL && r->fmt != TSIM_FMT_JSONL_GZ) || r->par || r->raw_records > 0 || r->dataset ||
        r->rebucket)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: cannot seek in this reader", r->path);
    int rc = offset < 0 ? TSIM_OK : tsim_gzline_seek(&r->lines, offset, (long)first_line, err);
    /* the skipped lines were checked when the index was made (and their
     * block's hash was checked by the caller) */
    for (int64_t i = 0; !rc && i < skip; i++) {
        char *line;
        size_t len;
        int got = tsim_next_content_line(r, &line, &len, err);
        if (got == 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: the trace ends before record %lld: is its index stale?",
                                r->path, (long long)(first_record + skip + 1));
        else if (got != 1)
            rc = got;
    }
    if (rc)
        return stick(r, rc, err);
    r->raw_records = r->produced = first_record + skip;
    return TSIM_OK;
}

int tsim_reader_set_threads(tsim_reader *r, int threads, tsim_error *err)
{
    if (threads < 1 || r->par || (r->fmt != TSIM_FMT_JSONL && r->fmt != TSIM_FMT_JSONL_GZ))
        return TSIM_OK;
    return tsim_parallel_start(r, threads, 0, err);
}

bool tsim_counts_total_ok(const int64_t *counts, size_t cells)
{
    /* Each count is at most 2^40, so this sum cannot overflow before the test. */
    int64_t total = 0;
    for (size_t i = 0; i < cells; i++) {
        total += counts[i];
        if (total > TSIM_MAX_RECORD_TOTAL)
            return false;
    }
    return true;
}

bool tsim_reader_lends_counts(const tsim_reader *r)
{
    return r->par != NULL;
}

void tsim_reader_replace_counts(tsim_reader *r, int64_t *counts)
{
    r->rec.counts = counts;
}

int tsim_reader_share_parsing(tsim_reader *r, int sharers, tsim_error *err)
{
    if (sharers < 1 || r->par || (r->fmt != TSIM_FMT_JSONL && r->fmt != TSIM_FMT_JSONL_GZ))
        return TSIM_OK;
    return tsim_parallel_start(r, 0, sharers, err);
}

void tsim_reader_close(tsim_reader *r)
{
    if (!r)
        return;
    tsim_parallel_stop(r);
    if (r->lines_open)
        tsim_gzline_close(&r->lines);
    if (r->ext_close && r->ext)
        r->ext_close(r);
    free(r->text);
    tsim_trace_header_free(&r->hdr);
    tsim_record_free(&r->rec);
    free(r->tpe);
    free(r->scratch);
    free(r->seen_slots);
    free(r->csv_row);
    free(r->csv_tag_column);
    free(r->csv_pending);
    free(r->csv_pending_key);
    free(r->csv_rank_seen);
    for (size_t i = r->warn_head; i < r->warn_n; i++)
        free(r->warnings[i]);
    free(r->warnings);
    free(r->warn_taken);
    for (int i = 0; i < r->warned_n; i++)
        free(r->warned_keys[i]);
    free(r->dataset);
    free(r->path);
    free(r);
}
