/* SGLang expert-distribution dumps (torch.save .pt): a zip archive holding
 * <prefix>/data.pkl and the raw storages <prefix>/data/<key>.
 * - "stat" mode: {"logical_count": [steps, layers, experts], ...} becomes
 *   per-expert totals read by trace_dense.c (needs --ep).
 * - "per_pass" / "per_token" modes: one file per rank, {"records": [...],
 *   "last_physical_to_logical_map": [L, P]}. Each rank's counts (from
 *   topk_ids_of_layer when present, else global_physical_count) are folded
 *   from physical slots to logical experts and written as a [T, L, R, E]
 *   int64 array into a temporary file, which trace_dense.c then reads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "topology.h"
#include "torch_pt.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int tsim_dir_kind(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int kind = 0;
    struct dirent *e;
    while (!kind && (e = readdir(d)) != NULL)
        kind = ends_with(e->d_name, ".pt")                ? 1
               : ends_with(e->d_name, ".npz")             ? 2
               : strcmp(e->d_name, "meta_info.json") == 0 ? 3 /* TensorRT-LLM expert statistics */
               : strncmp(e->d_name, "rank", 4) == 0 && ends_with(e->d_name, ".safetensors") ? 3
                                                          : 0;
    closedir(d);
    return kind;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tsim_dir_list_free(char **paths, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(paths[k]);
    free(paths);
}

int tsim_dir_list(const char *dir, const char *suffix, char ***paths, size_t *n, tsim_error *err)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open the directory: %s", dir, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    int rc = TSIM_OK;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, suffix))
            continue;
        if (*n == TSIM_MAX_RANKS) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: more than %d %s files", dir, TSIM_MAX_RANKS, suffix);
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(*paths, cap * sizeof *p);
            if (!p) {
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
                break;
            }
            *paths = p;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *full = malloc(len);
        if (!full) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            break;
        }
        snprintf(full, len, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", e->d_name);
        (*paths)[(*n)++] = full;
    }
    closedir(d);
    if (rc) {
        tsim_dir_list_free(*paths, *n);
        *paths = NULL;
        *n = 0;
        return rc;
    }
    if (*n)
        qsort(*paths, *n, sizeof **paths, cmp_str);
    return TSIM_OK;
}

int tsim_pwrite_all(int fd, const void *buf, size_t n, int64_t off, tsim_error *err)
{
    if (tsim_pwrite_full(fd, buf, n, off) < n)
        return tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: write error: %s", strerror(errno));
    return TSIM_OK;
}

int tsim_pread_all(int fd, void *buf, size_t n, int64_t off, tsim_error *err)
{
    if (tsim_pread_full(fd, buf, n, off) < n)
        return tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: read error: %s",
                              errno ? strerror(errno) : "end of file");
    return TSIM_OK;
}

int tsim_set_meta(tsim_reader *r, const char *source, const char *key, const char *value, tsim_error *err)
{
    char base[256];
    tsim_path_base(r->path, base, sizeof base);
    cJSON *meta = cJSON_CreateObject();
    bool ok = meta && cJSON_AddStringToObject(meta, "source", source) && cJSON_AddStringToObject(meta, "file", base);
    if (ok && key)
        ok = cJSON_AddStringToObject(meta, key, value) != NULL;
    if (!ok) {
        cJSON_Delete(meta);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    cJSON_Delete(r->hdr.meta);
    r->hdr.meta = meta;
    return TSIM_OK;
}

/* ---- one .pt archive ---- */

typedef struct {
    const char *path;
    tsim_zip *z;
    char prefix[256]; /* "<name>/" before data.pkl */
    tsim_pickle pk;
} pt_file;

static void pt_close(pt_file *f)
{
    tsim_pickle_free(&f->pk);
    tsim_zip_close(f->z);
    f->z = NULL;
}

static int pt_load(pt_file *f, const char *path, tsim_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    int rc = tsim_zip_open(&f->z, path, err);
    if (rc)
        return rc;
    int64_t pkl = -1;
    for (int64_t i = 0; i < tsim_zip_count(f->z) && pkl < 0; i++) {
        const char *name = tsim_zip_name(f->z, i);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (slash && strcmp(slash, "/data.pkl") == 0 && (size_t)(slash - name) + 1 < sizeof f->prefix) {
            pkl = i;
            snprintf(f->prefix, sizeof f->prefix, "%.*s", (int)(slash - name) + 1, name);
        }
    }
    if (pkl < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no <name>/data.pkl entry: not a torch.save archive", path);
    unsigned char *buf;
    size_t len;
    if ((rc = tsim_zip_read_all(f->z, pkl, TSIM_PT_PICKLE_MAX, &buf, &len, err)))
        return rc;
    char where[600];
    snprintf(where, sizeof where, "%s: entry '%sdata.pkl'", path, f->prefix);
    rc = tsim_pickle_load(&f->pk, buf, len, where, err);
    free(buf);
    if (!rc && f->pk.root->kind != TSIM_PK_DICT)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: the saved object is a %s, expected a dict", path,
                            tsim_pk_kind_name(f->pk.root->kind));
    return rc;
}

static int storage_entry(const pt_file *f, const tsim_pk *storage, int64_t *idx, tsim_error *err)
{
    char name[512];
    snprintf(name, sizeof name, "%sdata/%s", f->prefix, storage->s);
    *idx = tsim_zip_find(f->z, name);
    if (*idx < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: storage entry '%s' is missing", f->path, name);
    int64_t size;
    int rc = tsim_zip_size(f->z, *idx, &size, err);
    if (rc)
        return rc;
    int64_t want;
    if (__builtin_mul_overflow(storage->numel, (int64_t)tsim_storage_size(storage->st), &want) || size != want)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: storage entry '%s' holds %lld bytes, the pickle says %lld x %d",
                              f->path, name, (long long)size, (long long)storage->numel,
                              tsim_storage_size(storage->st));
    return TSIM_OK;
}

/* The tensor's elements, as int64 in C order; every element must be an
 * integer (int storages, or whole floats). what names it in messages. */
static int tensor_i64(const pt_file *f, const tsim_pk *t, const char *what, int ndim, int64_t **out, tsim_error *err)
{
    *out = NULL;
    if (!t || t->kind != TSIM_PK_TENSOR)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is a %s, expected a tensor", f->path, what,
                              t ? tsim_pk_kind_name(t->kind) : "missing key");
    if (t->ndim != ndim)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s has %d dimensions, expected %d", f->path, what, t->ndim, ndim);
    const tsim_storage_type st = t->st;
    if (st != TSIM_ST_I4 && st != TSIM_ST_I8 && st != TSIM_ST_I2 && st != TSIM_ST_U1 && st != TSIM_ST_I1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s has dtype torch.%s, expected an integer tensor (int32 or int64)",
                              f->path, what, tsim_storage_name(st));
    int64_t numel = 1;
    for (int k = t->ndim - 1; k >= 0; k--) { /* C-contiguous: numel is bounded by the storage */
        if (t->shape[k] > 1 && t->stride[k] != numel)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is not contiguous (stride %lld in dimension %d)", f->path,
                                  what, (long long)t->stride[k], k);
        if (__builtin_mul_overflow(numel, t->shape[k], &numel) || numel > TSIM_PT_TENSOR_MAX)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is too large", f->path, what);
    }
    int64_t end;
    if (__builtin_add_overflow(t->offset, numel, &end) || end > t->storage->numel)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s runs past its storage of %lld elements", f->path, what,
                              (long long)t->storage->numel);
    int64_t idx;
    int rc = storage_entry(f, t->storage, &idx, err);
    if (rc)
        return rc;
    unsigned char *raw;
    size_t len;
    if ((rc = tsim_zip_read_all(f->z, idx, TSIM_PT_TENSOR_MAX * 8, &raw, &len, err)))
        return rc;
    int64_t *v = malloc(sizeof *v * (size_t)(numel ? numel : 1));
    if (!v) {
        free(raw);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    const int isz = tsim_storage_size(st);
    for (int64_t i = 0; i < numel; i++) {
        const unsigned char *p = raw + (t->offset + i) * isz;
        int64_t x = 0;
        if (st == TSIM_ST_I8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | p[b];
            x = (int64_t)u;
        } else if (st == TSIM_ST_I4) {
            x = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        } else if (st == TSIM_ST_I2) {
            x = (int16_t)((uint16_t)p[0] | (uint16_t)p[1] << 8);
        } else {
            x = st == TSIM_ST_I1 ? (int8_t)p[0] : p[0];
        }
        v[i] = x;
    }
    free(raw);
    *out = v;
    return TSIM_OK;
}

/* ---- stat mode ---- */

static int stat_open(tsim_reader *r, pt_file *f, const tsim_pk *lc, const tsim_read_options *opts, tsim_error *err)
{
    if (lc->kind != TSIM_PK_TENSOR)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"logical_count\" is a %s, expected a tensor", r->path,
                              tsim_pk_kind_name(lc->kind));
    tsim_dtype dt;
    switch (lc->st) {
    case TSIM_ST_I4: dt = TSIM_DT_I4; break;
    case TSIM_ST_I8: dt = TSIM_DT_I8; break;
    case TSIM_ST_F4: dt = TSIM_DT_F4; break;
    case TSIM_ST_F8: dt = TSIM_DT_F8; break;
    default:
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: \"logical_count\" has dtype torch.%s: expected int32, int64, float32 or float64", r->path,
                              tsim_storage_name(lc->st));
    }
    if (lc->ndim < 2 || lc->ndim > 4)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: \"logical_count\" has %d dimensions: expected [steps, layers, experts]", r->path,
                              lc->ndim);
    int64_t want = 1;
    for (int k = lc->ndim - 1; k >= 0; k--) { /* C-contiguous strides */
        if (lc->shape[k] > 1 && lc->stride[k] != want)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: \"logical_count\" is not contiguous (stride %lld in dimension %d): save "
                                  "t.contiguous()",
                                  r->path, (long long)lc->stride[k], k);
        if (__builtin_mul_overflow(want, lc->shape[k], &want) || want > TSIM_ZIP_MAX_ENTRY)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: \"logical_count\" is too large", r->path);
    }
    const int isz = tsim_storage_size(lc->st);
    int64_t idx, end;
    int rc = storage_entry(f, lc->storage, &idx, err);
    if (rc)
        return rc;
    if (__builtin_add_overflow(lc->offset, want, &end) || end > lc->storage->numel)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"logical_count\" runs past its storage", r->path);
    /* A stored storage is read in place (after a pass that checks its CRC);
     * a compressed one is inflated into a temporary file first. */
    int64_t at = 0;
    int fd = -1;
    if (tsim_zip_stored_offset(f->z, idx, &at) == 0) {
        if ((rc = tsim_zip_verify(f->z, idx, err)))
            return rc;
        fd = open(r->path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        at = 0;
        if ((fd = tsim_tmpfile(err)) < 0)
            return TSIM_E_INTERNAL;
        if ((rc = tsim_zip_extract(f->z, idx, fd, NULL, err))) {
            close(fd);
            return rc;
        }
    }
    tsim_dense_spec spec = {"\"logical_count\" ", dt, lc->ndim, {0}, at + lc->offset * isz};
    for (int k = 0; k < lc->ndim; k++)
        spec.shape[k] = lc->shape[k];
    if ((rc = tsim_dense_open(r, fd, &spec, want * isz, opts, err)))
        return rc;
    return tsim_set_meta(r, "sglang", "mode", "stat", err);
}

/* ---- per_pass / per_token: one file per rank ---- */

typedef struct {
    pt_file f;
    int64_t rank;
    const tsim_pk *records;
    int64_t *map; /* [L, P] */
} rank_file;

typedef struct {
    tsim_reader *r;
    rank_file *files;
    size_t R;
    int64_t L, P, E, T;
    int64_t *fpids; /* [T] sorted */
    int fd;
    int64_t unexplained, first_l, first_p;
    bool per_token;
} per_rank;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int rec_int(const rank_file *rf, size_t k, const char *key, int64_t *v, tsim_error *err)
{
    const tsim_pk *rec = rf->records->items[k];
    const tsim_pk *x = tsim_pk_get(rec, key);
    *v = 0;
    if (rec->kind != TSIM_PK_DICT || !x || x->kind != TSIM_PK_INT)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: records[%zu]: \"%s\" is %s, expected an int", rf->f.path, k,
                              key, rec->kind != TSIM_PK_DICT ? "not in a dict" : x ? tsim_pk_kind_name(x->kind) : "missing");
    *v = x->i;
    return TSIM_OK;
}

/* Loads one rank's file: its records, rank and map. */
static int rank_load(per_rank *pr, rank_file *rf, const char *path, size_t order, tsim_error *err)
{
    int rc = pt_load(&rf->f, path, err);
    if (rc)
        return rc;
    const tsim_pk *root = rf->f.pk.root;
    rf->records = tsim_pk_get(root, "records");
    if (!rf->records || rf->records->kind != TSIM_PK_LIST)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: no \"records\" list: expected an SGLang per_pass or per_token dump%s", path,
                              tsim_pk_get(root, "logical_count") ? " (a stat dump is read alone, not in a directory)"
                                                                 : "");
    rf->rank = (int64_t)order;
    if (rf->records->n > 0 && (rc = rec_int(rf, 0, "rank", &rf->rank, err)))
        return rc;
    const tsim_pk *map = tsim_pk_get(root, "last_physical_to_logical_map");
    char what[] = "\"last_physical_to_logical_map\"";
    if ((rc = tensor_i64(&rf->f, map, what, 2, &rf->map, err)))
        return rc;
    if (pr->R == 0) {
        pr->L = map->shape[0];
        pr->P = map->shape[1];
    } else if (map->shape[0] != pr->L || map->shape[1] != pr->P) {
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is [%lld, %lld], but %s's is [%lld, %lld]: the ranks disagree",
                              path, what, (long long)map->shape[0], (long long)map->shape[1], pr->files[0].f.path,
                              (long long)pr->L, (long long)pr->P);
    }
    for (size_t k = 0; k < rf->records->n; k++) {
        int64_t v;
        if ((rc = rec_int(rf, k, "rank", &v, err)) || (rc = rec_int(rf, k, "forward_pass_id", &v, err)))
            return rc;
        if (tsim_pk_get(rf->records->items[k], "topk_ids_of_layer"))
            pr->per_token = true;
    }
    return TSIM_OK;
}

static int check_ranks(per_rank *pr, tsim_error *err)
{
    for (size_t k = 0; k < pr->R; k++) {
        const rank_file *rf = &pr->files[k];
        if (rf->rank < 0 || rf->rank >= (int64_t)pr->R)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: rank %lld, but there are %zu files (ranks 0..%zu)",
                                  rf->f.path, (long long)rf->rank, pr->R, pr->R - 1);
        for (size_t j = 0; j < k; j++)
            if (pr->files[j].rank == rf->rank)
                return tsim_error_set(err, TSIM_E_INPUT, "%s and %s both hold rank %lld", pr->files[j].f.path,
                                      rf->f.path, (long long)rf->rank);
        for (int64_t i = 0; i < pr->L * pr->P; i++)
            if (rf->map[i] != pr->files[0].map[i])
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "%s: last_physical_to_logical_map[%lld, %lld] is %lld, but %s has %lld: the "
                                      "ranks disagree",
                                      rf->f.path, (long long)(i / pr->P), (long long)(i % pr->P),
                                      (long long)rf->map[i], pr->files[0].f.path, (long long)pr->files[0].map[i]);
    }
    int64_t maxe = -1;
    for (int64_t i = 0; i < pr->L * pr->P; i++) {
        if (pr->files[0].map[i] >= TSIM_MAX_EXPERTS)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: last_physical_to_logical_map[%lld, %lld] is %lld, above %d",
                                  pr->files[0].f.path, (long long)(i / pr->P), (long long)(i % pr->P),
                                  (long long)pr->files[0].map[i], TSIM_MAX_EXPERTS - 1);
        if (pr->files[0].map[i] > maxe)
            maxe = pr->files[0].map[i];
    }
    if (maxe < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: last_physical_to_logical_map names no expert",
                              pr->files[0].f.path);
    pr->E = maxe + 1;
    return TSIM_OK;
}

/* Every forward pass id of every rank, sorted and unique: the microbatches. */
static int collect_passes(per_rank *pr, tsim_error *err)
{
    size_t n = 0;
    for (size_t k = 0; k < pr->R; k++)
        n += pr->files[k].records->n;
    pr->fpids = malloc(sizeof *pr->fpids * (n ? n : 1));
    if (!pr->fpids)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    n = 0;
    for (size_t k = 0; k < pr->R; k++)
        for (size_t j = 0; j < pr->files[k].records->n; j++)
            if (rec_int(&pr->files[k], j, "forward_pass_id", &pr->fpids[n++], err))
                return TSIM_E_INPUT;
    qsort(pr->fpids, n, sizeof *pr->fpids, cmp_i64);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || pr->fpids[u - 1] != pr->fpids[k])
            pr->fpids[u++] = pr->fpids[k];
    pr->T = (int64_t)u;
    if (u == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no records in any file", pr->r->path);
    return TSIM_OK;
}

/* Physical counts [L, P] of record k: from topk_ids_of_layer [L, tokens, k]
 * when present (negative ids are padding), else global_physical_count. */
static int record_counts(per_rank *pr, const rank_file *rf, size_t k, int64_t *phys, tsim_error *err)
{
    const tsim_pk *rec = rf->records->items[k];
    const tsim_pk *topk = tsim_pk_get(rec, "topk_ids_of_layer");
    char what[96];
    int64_t *v;
    int rc;
    if (topk) {
        snprintf(what, sizeof what, "records[%zu].topk_ids_of_layer", k);
        if ((rc = tensor_i64(&rf->f, topk, what, 3, &v, err)))
            return rc;
        if (topk->shape[0] != pr->L) {
            free(v);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s has %lld layers, the map %lld", rf->f.path, what,
                                  (long long)topk->shape[0], (long long)pr->L);
        }
        memset(phys, 0, sizeof *phys * (size_t)(pr->L * pr->P));
        const int64_t per_layer = topk->shape[1] * topk->shape[2];
        for (int64_t i = 0; i < pr->L * per_layer; i++) {
            if (v[i] < 0)
                continue;
            if (v[i] >= pr->P) {
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s holds physical expert %lld, but the map has %lld slots",
                                    rf->f.path, what, (long long)v[i], (long long)pr->P);
                free(v);
                return rc;
            }
            phys[(i / per_layer) * pr->P + v[i]]++;
        }
        free(v);
        return TSIM_OK;
    }
    const tsim_pk *gpc = tsim_pk_get(rec, "global_physical_count");
    snprintf(what, sizeof what, "records[%zu].global_physical_count", k);
    if ((rc = tensor_i64(&rf->f, gpc, what, 2, &v, err)))
        return rc;
    if (gpc->shape[0] != pr->L || gpc->shape[1] != pr->P) {
        free(v);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is [%lld, %lld], the map [%lld, %lld]", rf->f.path, what,
                              (long long)gpc->shape[0], (long long)gpc->shape[1], (long long)pr->L,
                              (long long)pr->P);
    }
    for (int64_t i = 0; i < pr->L * pr->P; i++)
        if (v[i] < 0) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s[%lld, %lld] is %lld, a negative count", rf->f.path, what,
                                (long long)(i / pr->P), (long long)(i % pr->P), (long long)v[i]);
            free(v);
            return rc;
        }
    memcpy(phys, v, sizeof *phys * (size_t)(pr->L * pr->P));
    free(v);
    return TSIM_OK;
}

/* Folds record k of a rank into the [T, L, R, E] file. */
static int add_record(per_rank *pr, const rank_file *rf, size_t k, int64_t *phys, int64_t *row, tsim_error *err)
{
    int64_t fpid = 0, rank = 0;
    int rc = rec_int(rf, k, "forward_pass_id", &fpid, err);
    if (!rc)
        rc = rec_int(rf, k, "rank", &rank, err);
    if (rc)
        return rc;
    if (rank != rf->rank)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: records[%zu] has rank %lld, the file's first record %lld",
                              rf->f.path, k, (long long)rank, (long long)rf->rank);
    if ((rc = record_counts(pr, rf, k, phys, err)))
        return rc;
    const int64_t *at = bsearch(&fpid, pr->fpids, (size_t)pr->T, sizeof fpid, cmp_i64);
    const int64_t t = at - pr->fpids;
    const size_t row_bytes = sizeof *row * (size_t)pr->E;
    for (int64_t l = 0; l < pr->L; l++) {
        const int64_t off = (((t * pr->L + l) * (int64_t)pr->R + rf->rank) * pr->E) * 8;
        if ((rc = tsim_pread_all(pr->fd, row, row_bytes, off, err)))
            return rc;
        for (int64_t p = 0; p < pr->P; p++) {
            const int64_t c = phys[l * pr->P + p], e = rf->map[l * pr->P + p];
            if (c == 0)
                continue;
            if (e < 0) { /* a slot the last map leaves empty: an earlier map placed it */
                if (pr->unexplained == 0) {
                    pr->first_l = l;
                    pr->first_p = p;
                }
                pr->unexplained += c;
                continue;
            }
            row[e] += c;
        }
        if ((rc = tsim_pwrite_all(pr->fd, row, row_bytes, off, err)))
            return rc;
    }
    return TSIM_OK;
}

static int fill(per_rank *pr, tsim_error *err)
{
    int64_t bytes;
    if (__builtin_mul_overflow(pr->T * pr->L, (int64_t)pr->R * pr->E * 8, &bytes) || bytes > TSIM_ZIP_MAX_ENTRY)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %lld passes x %lld layers x %zu ranks x %lld experts is too large",
                              pr->r->path, (long long)pr->T, (long long)pr->L, pr->R, (long long)pr->E);
    pr->fd = tsim_tmpfile(err);
    if (pr->fd < 0)
        return TSIM_E_INTERNAL;
    if (ftruncate(pr->fd, (off_t)bytes) != 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: %s", strerror(errno));
    int64_t *phys = malloc(sizeof *phys * (size_t)(pr->L * pr->P));
    int64_t *row = malloc(sizeof *row * (size_t)pr->E);
    int rc = phys && row ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (size_t f = 0; !rc && f < pr->R; f++)
        for (size_t k = 0; !rc && k < pr->files[f].records->n; k++)
            rc = add_record(pr, &pr->files[f], k, phys, row, err);
    free(phys);
    free(row);
    if (!rc && pr->unexplained > 0 &&
        tsim_reader_warn(pr->r,
                         "%s: %lld tokens sit on physical slots the last_physical_to_logical_map leaves empty (first "
                         "layer %lld, slot %lld): another map was in force earlier; those tokens are left out",
                         pr->r->path, (long long)pr->unexplained, (long long)pr->first_l, (long long)pr->first_p))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    return rc;
}

static int per_rank_open(tsim_reader *r, char *const *paths, size_t n, const tsim_read_options *opts,
                         tsim_error *err)
{
    per_rank pr = {.r = r, .fd = -1};
    pr.files = calloc(n, sizeof *pr.files);
    int rc = pr.files ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (size_t k = 0; !rc && k < n; k++) {
        rc = rank_load(&pr, &pr.files[k], paths[k], k, err);
        pr.R = k + 1;
    }
    if (!rc)
        rc = check_ranks(&pr, err);
    if (!rc)
        rc = collect_passes(&pr, err);
    if (!rc)
        rc = fill(&pr, err);
    for (size_t k = 0; k < pr.R; k++) {
        pt_close(&pr.files[k].f);
        free(pr.files[k].map);
    }
    free(pr.files);
    free(pr.fpids);
    if (!rc) {
        tsim_dense_spec spec = {"", TSIM_DT_I8, 4, {pr.T, pr.L, (int64_t)pr.R, pr.E}, 0};
        rc = tsim_dense_open(r, pr.fd, &spec, pr.T * pr.L * (int64_t)pr.R * pr.E * 8, opts, err);
        pr.fd = -1;
        if (!rc)
            rc = tsim_set_meta(r, "sglang", "mode", pr.per_token ? "per_token" : "per_pass", err);
    }
    if (pr.fd >= 0)
        close(pr.fd);
    return rc;
}

int tsim_pt_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    struct stat st;
    if (stat(r->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        char **paths;
        size_t n;
        int rc = tsim_dir_list(r->path, ".pt", &paths, &n, err);
        if (rc)
            return rc;
        rc = n ? per_rank_open(r, paths, n, opts, err)
               : tsim_error_set(err, TSIM_E_INPUT, "%s: no .pt files in the directory", r->path);
        tsim_dir_list_free(paths, n);
        return rc;
    }
    pt_file f;
    int rc = pt_load(&f, r->path, err);
    const tsim_pk *lc = rc ? NULL : tsim_pk_get(f.pk.root, "logical_count");
    if (!rc && lc)
        rc = stat_open(r, &f, lc, opts, err);
    bool records = !rc && !lc && tsim_pk_get(f.pk.root, "records");
    if (!rc && !lc && !records)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: neither \"logical_count\" (an SGLang stat dump) nor \"records\" (per_pass or "
                            "per_token) in the saved dict",
                            r->path);
    pt_close(&f);
    if (records) {
        char *one = r->path;
        rc = per_rank_open(r, &one, 1, opts, err);
    }
    return rc;
}
