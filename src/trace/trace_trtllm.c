/* TensorRT-LLM expert statistics: the directory EXPERT_STATISTIC_PATH that
 * the PyTorch backend's ExpertStatistic fills when EXPERT_STATISTIC_ITER_RANGE
 * is set. Rank 0 writes meta_info.json ({"num_experts": E,
 * "num_experts_per_token": k}, some versions also "ep_size" and
 * "experts_per_rank"); every rank r writes rank{r}.safetensors with one 1-D
 * tensor [E] per (iteration, layer), named "{iter}_{layer}": the bincount of
 * the experts rank r's tokens chose. Rank r's tensor is row r of the record,
 * so the per-source split is kept; the record's microbatch is the iteration
 * and its layer the layer id as the model numbers it. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "json_strict.h"
#include "topology.h"
#include "trace_internal.h"

/* meta_info.json is a few dozen bytes; this bounds the read. */
#define META_MAX (1 << 20)

typedef struct {
    int64_t iter, layer;
} stat_key;

typedef struct {
    int R;            /* rank files */
    int64_t E;        /* experts */
    int64_t K;        /* records: (iteration, layer) pairs */
    stat_key *keys;   /* [K], sorted */
    int64_t *offs;    /* [R][K] file offset of each tensor's data */
    tsim_dtype *dts;  /* [R][K] */
    int *fds;         /* [R] */
    char **paths;     /* [R] */
    unsigned char *buf; /* one tensor's bytes */
    int64_t next;
    bool all_same;    /* every rank's row equal so far */
    int64_t bytes_read;
} trtllm;

static void trtllm_close(tsim_reader *r)
{
    trtllm *t = r->ext;
    for (int k = 0; t->fds && k < t->R; k++)
        if (t->fds[k] >= 0)
            close(t->fds[k]);
    for (int k = 0; t->paths && k < t->R; k++)
        free(t->paths[k]);
    free(t->fds);
    free(t->paths);
    free(t->keys);
    free(t->offs);
    free(t->dts);
    free(t->buf);
    free(t);
    r->ext = NULL;
}

static void trtllm_progress(const tsim_reader *r, int64_t *bytes, int64_t *done, int64_t *total)
{
    const trtllm *t = r->ext;
    *bytes = t->bytes_read;
    *done = t->next;
    *total = t->K;
}

/* "rank12.safetensors" is rank 12; -1 for any other name, -2 for a rank
 * number with a leading zero (rank01), which TensorRT-LLM never writes. */
static long rank_of(const char *name)
{
    if (strncmp(name, "rank", 4) != 0)
        return -1;
    const char *p = name + 4, *q = p;
    long v = 0;
    while (*q >= '0' && *q <= '9' && v < 100000)
        v = v * 10 + (*q++ - '0');
    if (q == p || strcmp(q, ".safetensors") != 0)
        return -1;
    return (q - p > 1 && *p == '0') ? -2 : v;
}

/* A JSON integer in [lo, hi]. */
static bool json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble)
        return false;
    *out = (int64_t)v->valuedouble;
    return *out >= lo && *out <= hi;
}

/* meta_info.json: E and k; ep_size and experts_per_rank, when there, must
 * agree with the rank files. */
static int read_meta(tsim_reader *r, const char *path, trtllm *t, int64_t *topk, tsim_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: cannot open: %s (rank 0 writes it next to rank0.safetensors)", path,
                              strerror(errno));
    char *text = malloc(META_MAX + 1);
    size_t n = text ? fread(text, 1, META_MAX + 1, f) : 0;
    fclose(f);
    if (!text)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = TSIM_OK;
    tsim_json_fault fault;
    cJSON *root = NULL;
    if (n > META_MAX)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: above %d bytes: not a meta_info.json", path, META_MAX);
    else if (tsim_json_check_all(text, n, &fault) == (size_t)-1)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: byte %zu: malformed JSON%s%s", path, fault.at,
                            fault.what[0] ? ": " : "", fault.what);
    else if (!(root = cJSON_ParseWithLength(text, n)))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    else if (!cJSON_IsObject(root))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: expected a JSON object, got %s", path,
                            tsim_json_type_name(root));
    free(text);
    int64_t ep = -1, per_rank = -1;
    *topk = 0;
    t->E = 0;
    for (const cJSON *k = root && !rc ? root->child : NULL; k && !rc; k = k->next) {
        if (strcmp(k->string, "num_experts") == 0) {
            if (!json_int(k, 1, TSIM_MAX_EXPERTS, &t->E))
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"num_experts\" must be an integer in 1..%d", path,
                                    TSIM_MAX_EXPERTS);
        } else if (strcmp(k->string, "num_experts_per_token") == 0) {
            if (!json_int(k, 1, TSIM_MAX_EXPERTS, topk))
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"num_experts_per_token\" must be a positive integer",
                                    path);
        } else if (strcmp(k->string, "ep_size") == 0) {
            if (!json_int(k, 1, TSIM_MAX_RANKS, &ep))
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"ep_size\" must be an integer in 1..%d", path,
                                    TSIM_MAX_RANKS);
        } else if (strcmp(k->string, "experts_per_rank") == 0) {
            if (!json_int(k, 0, TSIM_MAX_EXPERTS, &per_rank))
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"experts_per_rank\" must be a non-negative integer",
                                    path);
        } else if (tsim_reader_warn_key(r, path, "is", k->string)) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
    }
    if (!rc && (t->E == 0 || *topk == 0))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: no \"%s\"", path, t->E == 0 ? "num_experts" : "num_experts_per_token");
    if (!rc && *topk > t->E)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: num_experts_per_token %lld is above num_experts %lld", path,
                            (long long)*topk, (long long)t->E);
    if (!rc && ep >= 0 && ep != t->R)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: ep_size %lld, but the directory holds %d rank files", path,
                            (long long)ep, t->R);
    if (!rc && per_rank >= 0 && per_rank != t->E / t->R)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: experts_per_rank %lld, but %lld experts over %d ranks is %lld",
                            path, (long long)per_rank, (long long)t->E, t->R, (long long)(t->E / t->R));
    cJSON_Delete(root);
    return rc;
}

/* The rank files rank0..rank{R-1}.safetensors; other files are counted. */
static int list_ranks(tsim_reader *r, trtllm *t, tsim_error *err)
{
    DIR *d = opendir(r->path);
    if (!d)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open the directory: %s", r->path, strerror(errno));
    long max_rank = -1, count = 0, others = 0;
    char other[256] = "", bad[256] = "";
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const long k = rank_of(e->d_name);
        if (k == -2 && (!bad[0] || strcmp(e->d_name, bad) < 0))
            snprintf(bad, sizeof bad, "%s", e->d_name);
        if (k >= 0) {
            count++;
            max_rank = k > max_rank ? k : max_rank;
        } else if (k == -1 && e->d_name[0] != '.' && strcmp(e->d_name, "meta_info.json") != 0) {
            if (!others++ || strcmp(e->d_name, other) < 0)
                snprintf(other, sizeof other, "%s", e->d_name);
        }
    }
    closedir(d);
    if (bad[0])
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %s: a rank number with a leading zero (TensorRT-LLM writes rank1.safetensors)",
                              r->path, bad);
    if (count == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no rank{N}.safetensors files", r->path);
    if (max_rank >= TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: rank %ld is above the limit of %d ranks", r->path, max_rank,
                              TSIM_MAX_RANKS);
    t->R = (int)max_rank + 1;
    t->paths = calloc((size_t)t->R, sizeof *t->paths);
    if (!t->paths)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int k = 0; k < t->R; k++) {
        size_t len = strlen(r->path) + 32;
        if (!(t->paths[k] = malloc(len)))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        snprintf(t->paths[k], len, "%s/rank%d.safetensors", r->path, k);
    }
    if (count != t->R)
        for (int k = 0; k < t->R; k++)
            if (access(t->paths[k], F_OK) != 0)
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "%s: no rank%d.safetensors, but rank%d.safetensors is there: every rank writes "
                                      "its file",
                                      r->path, k, t->R - 1);
    if (others && tsim_reader_warn(r,
                                   "%s: %ld other file%s ignored (%s%s): only meta_info.json and "
                                   "rank{N}.safetensors are read",
                                   r->path, others, others == 1 ? "" : "s", other, others > 1 ? ", ..." : ""))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    return TSIM_OK;
}

/* "{iter}_{layer}", both decimal without sign or leading zeros. */
static bool parse_key(const char *s, stat_key *k)
{
    int64_t v[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        const char *start = s;
        while (*s >= '0' && *s <= '9') {
            if (v[part] > (TSIM_MAX_INDEX - 9) / 10)
                return false;
            v[part] = v[part] * 10 + (*s++ - '0');
        }
        if (s == start || (s - start > 1 && *start == '0') || *s != (part == 0 ? '_' : '\0'))
            return false;
        s++;
    }
    k->iter = v[0];
    k->layer = v[1];
    return true;
}

typedef struct {
    stat_key key;
    int64_t off;
    tsim_dtype dt;
} stat_entry;

static int entry_cmp(const void *a, const void *b)
{
    const stat_key *x = &((const stat_entry *)a)->key, *y = &((const stat_entry *)b)->key;
    if (x->iter != y->iter)
        return x->iter < y->iter ? -1 : 1;
    return (x->layer > y->layer) - (x->layer < y->layer);
}

/* One rank file's tensors, checked and sorted by (iteration, layer). */
static int index_rank(trtllm *t, int k, stat_entry **out, int64_t *count, tsim_error *err)
{
    const char *path = t->paths[k];
    *out = NULL;
    int64_t size;
    tsim_reader named = {.path = (char *)path};
    int rc = tsim_dense_open_file(&named, &t->fds[k], &size, err);
    cJSON *root = NULL;
    int64_t start = 0;
    if (!rc)
        rc = tsim_safetensors_index(path, t->fds[k], size, &root, &start, err);
    if (rc)
        return rc;
    int64_t n = 0;
    stat_entry *e = malloc(((size_t)cJSON_GetArraySize(root) + 1) * sizeof *e);
    if (!e)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (const cJSON *x = root->child; x && !rc; x = x->next) {
        if (strcmp(x->string, "__metadata__") == 0)
            continue;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(x, "dtype");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(x, "shape");
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(x, "data_offsets");
        char name[64];
        snprintf(name, sizeof name, "%s", x->string);
        for (char *c = name; *c; c++)
            *c = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
        if (!parse_key(x->string, &e[n].key))
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: tensor \"%s\": expected a name \"{iteration}_{layer}\" (two decimal numbers)",
                                path, name);
        else if ((strcmp(dt->valuestring, "I64") != 0 && strcmp(dt->valuestring, "I32") != 0) ||
                 !tsim_dtype_from_name(dt->valuestring, false, &e[n].dt))
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: tensor \"%s\" has dtype %.16s: expected I64 (torch.bincount) or I32",
                                path, name, dt->valuestring);
        else if (cJSON_GetArraySize(shape) != 1 || shape->child->valuedouble != (double)t->E) {
            int64_t dims[4] = {0, 0, 0, 0};
            int nd = 0;
            for (const cJSON *v = shape->child; v && nd < 4; v = v->next)
                dims[nd++] = (int64_t)v->valuedouble;
            char text[96];
            tsim_shape_text(text, sizeof text, dims, nd);
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: tensor \"%s\" has shape %s%s: expected [%lld] (num_experts in meta_info.json)",
                                path, name, text, cJSON_GetArraySize(shape) > 4 ? "..." : "", (long long)t->E);
        }
        else
            e[n++].off = start + (int64_t)offs->child->valuedouble;
    }
    cJSON_Delete(root);
    if (rc) {
        free(e);
        return rc;
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    *out = e;
    *count = n;
    return TSIM_OK;
}

/* Every rank holds the same (iteration, layer) tensors as rank 0. */
static int same_keys(const trtllm *t, int k, const stat_entry *e, int64_t n, tsim_error *err)
{
    int64_t i = 0;
    for (; i < n && i < t->K; i++) {
        const stat_key *a = &t->keys[i], *b = &e[i].key;
        if (a->iter == b->iter && a->layer == b->layer)
            continue;
        const bool missing = a->iter < b->iter || (a->iter == b->iter && a->layer < b->layer);
        const stat_key *w = missing ? a : b;
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s tensor \"%lld_%lld\" %s %s: the ranks disagree", t->paths[k],
                              missing ? "no" : "a", (long long)w->iter, (long long)w->layer,
                              missing ? "that is in" : "that is not in", t->paths[0]);
    }
    if (n == t->K)
        return TSIM_OK;
    const stat_key *w = n < t->K ? &t->keys[n] : &e[t->K].key;
    return tsim_error_set(err, TSIM_E_INPUT, "%s: %s tensor \"%lld_%lld\" %s %s: the ranks disagree", t->paths[k],
                          n < t->K ? "no" : "a", (long long)w->iter, (long long)w->layer,
                          n < t->K ? "that is in" : "that is not in", t->paths[0]);
}

static int build_index(trtllm *t, tsim_error *err)
{
    t->fds = malloc((size_t)t->R * sizeof *t->fds);
    if (!t->fds)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int k = 0; k < t->R; k++)
        t->fds[k] = -1;
    int rc = TSIM_OK;
    for (int k = 0; k < t->R && !rc; k++) {
        stat_entry *e;
        int64_t n;
        if ((rc = index_rank(t, k, &e, &n, err)))
            break;
        if (k == 0) {
            t->K = n;
            t->keys = malloc(((size_t)n + 1) * sizeof *t->keys);
            t->offs = malloc(((size_t)n * (size_t)t->R + 1) * sizeof *t->offs);
            t->dts = malloc(((size_t)n * (size_t)t->R + 1) * sizeof *t->dts);
            if (!t->keys || !t->offs || !t->dts)
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            for (int64_t i = 0; !rc && i < n; i++)
                t->keys[i] = e[i].key;
        } else {
            rc = same_keys(t, k, e, n, err);
        }
        for (int64_t i = 0; !rc && i < n; i++) {
            t->offs[(size_t)k * (size_t)n + (size_t)i] = e[i].off;
            t->dts[(size_t)k * (size_t)n + (size_t)i] = e[i].dt;
        }
        free(e);
    }
    if (!rc && t->K == 0)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: no tensors: the statistics window recorded nothing", t->paths[0]);
    return rc;
}

/* Decodes one tensor's E counts into dst; the index of a bad one, or -1. */
static int64_t decode_counts(const unsigned char *p, tsim_dtype dt, int64_t E, int64_t *dst, bool *any)
{
    for (int64_t i = 0; i < E; i++) {
        int64_t v;
        if (dt == TSIM_DT_I8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | p[8 * i + b];
            v = (int64_t)u;
        } else {
            const unsigned char *q = p + 4 * i;
            v = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24);
        }
        dst[i] = v; /* also the bad value, for the message */
        if (v < 0 || v > TSIM_MAX_COUNT)
            return i;
        *any = *any || v != 0;
    }
    return -1;
}

static int trtllm_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    trtllm *t = r->ext;
    while (t->next < t->K) {
        const int64_t i = t->next++;
        bool any = false;
        tsim_reader_begin_counts(r);
        for (int k = 0; k < t->R; k++) {
            const size_t at = (size_t)k * (size_t)t->K + (size_t)i;
            const tsim_dtype dt = t->dts[at];
            const size_t n = (size_t)t->E * (size_t)tsim_dtype_size(dt);
            if (tsim_pread_full(t->fds[k], t->buf, n, t->offs[at]) != n)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: read error at byte %lld (was the file cut short?)",
                                      t->paths[k], (long long)t->offs[at]);
            t->bytes_read += (int64_t)n;
            int64_t *row = tsim_reader_row(r, k);
            const int64_t bad = decode_counts(t->buf, dt, t->E, row, &any);
            if (bad >= 0)
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "%s: tensor \"%lld_%lld\" element %lld at byte %lld: %lld is not a count (a "
                                      "non-negative integer up to 2^40)",
                                      t->paths[k], (long long)t->keys[i].iter, (long long)t->keys[i].layer,
                                      (long long)bad, (long long)(t->offs[at] + bad * tsim_dtype_size(dt)),
                                      (long long)row[bad]);
            if (k > 0 && t->all_same && !r->rebucket)
                t->all_same = memcmp(row, tsim_reader_row(r, 0), (size_t)t->E * sizeof *row) == 0;
            tsim_reader_row_done(r);
        }
        if (!any) {
            r->skipped_zero++;
            continue;
        }
        raw->kind = REC_COUNTS;
        raw->microbatch = t->keys[i].iter;
        raw->layer = t->keys[i].layer;
        raw->line = 0;
        return 1;
    }
    if (t->all_same && t->R > 1 && !r->rebucket) {
        t->all_same = false; /* warn once */
        if (tsim_reader_warn(r,
                             "%s: every rank recorded the same counts in every record: with attention DP off, each "
                             "rank routes every token, and the per-source split counts each token %d times",
                             r->path, t->R))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return 0;
}

int tsim_trtllm_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    (void)opts;
    trtllm *t = calloc(1, sizeof *t);
    if (!t)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    r->ext = t;
    r->ext_close = trtllm_close;
    r->ext_progress = trtllm_progress;
    t->all_same = true;
    int rc = list_ranks(r, t, err);
    int64_t topk = 0;
    char meta_path[4096 + 16];
    snprintf(meta_path, sizeof meta_path, "%s/meta_info.json", r->path);
    if (!rc)
        rc = read_meta(r, meta_path, t, &topk, err);
    if (!rc && t->E % t->R != 0)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %lld experts (num_experts) do not divide among the %d ranks",
                            meta_path, (long long)t->E, t->R);
    if (!rc && (int64_t)t->R * t->E > TSIM_MAX_CELLS)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %d ranks x %lld experts is above the limit of %lld counts per record",
                            r->path, t->R, (long long)t->E, (long long)TSIM_MAX_CELLS);
    if (!rc)
        rc = build_index(t, err);
    if (!rc && !(t->buf = malloc((size_t)t->E * 8)))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (rc)
        return rc;
    r->hdr.experts = (int)t->E;
    r->hdr.ep = t->R;
    r->file_ep = t->R;
    r->hdr.ranks_per_node = 8;
    r->hdr.topk = (int)topk;
    r->next_raw = trtllm_next;
    r->hdr.meta = tsim_dense_meta(r, "trtllm");
    if (!r->hdr.meta || !cJSON_AddNumberToObject(r->hdr.meta, "first_iteration", (double)t->keys[0].iter) ||
        !cJSON_AddNumberToObject(r->hdr.meta, "last_iteration", (double)t->keys[t->K - 1].iter))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    return TSIM_OK;
}
