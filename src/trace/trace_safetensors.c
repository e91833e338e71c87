/* safetensors: an 8-byte little-endian header length N, N bytes of JSON
 * ({"NAME": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 * "__metadata__": {string: string}}), then the tensors' raw little-endian
 * bytes. Everything in the header is checked before any data is read: sizes
 * against dtypes and shapes, offsets against the file, no overlaps and no
 * gaps. One tensor ("counts" or --tensor) is read as records by
 * trace_dense.c; __metadata__ goes into the trace's meta. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "json_strict.h"
#include "trace_internal.h"

/* The header limit of the safetensors format itself. */
#define ST_HEADER_MAX INT64_C(100000000)

typedef struct {
    const char *name;
    uint64_t begin, end;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Bytes per element of every dtype the format defines (0: unknown). */
static int st_dtype_size(const char *t)
{
    static const struct {
        const char *name;
        int size;
    } sizes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2},
                 {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},    {"F32", 4},     {"I64", 8}, {"U64", 8},
                 {"F64", 8}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(t, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

/* Tensor names come from the file: one printable line for messages. */
static void shown(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 4 < cap; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
    if (src[i])
        memcpy(dst + i, "...", 4);
    else
        dst[i] = '\0';
}

/* A JSON number that is a non-negative integer below 2^53. */
static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0) || d != floor(d) || d > 9007199254740991.0)
        return false;
    *out = (uint64_t)d;
    return true;
}

typedef struct {
    int ndim;
    int64_t shape[8];
    uint64_t elements; /* UINT64_MAX when the product overflows */
} st_shape;

/* One tensor entry: dtype, shape and data_offsets, nothing else. */
static int check_entry(const tsim_reader *r, const cJSON *t, uint64_t data_size, span *sp, st_shape *shape,
                       tsim_error *err)
{
    char name[80];
    shown(name, sizeof name, t->string);
    if (!cJSON_IsObject(t))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\" must be an object, got %s", r->path, name,
                              tsim_json_type_name(t));
    const cJSON *dtype = NULL, *dims = NULL, *offs = NULL;
    for (const cJSON *k = t->child; k; k = k->next) {
        const cJSON **slot = strcmp(k->string, "dtype") == 0          ? &dtype
                             : strcmp(k->string, "shape") == 0        ? &dims
                             : strcmp(k->string, "data_offsets") == 0 ? &offs
                                                                      : NULL;
        char key[80];
        shown(key, sizeof key, k->string);
        if (!slot)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: header: tensor \"%s\" has an unknown key \"%s\" (expected dtype, shape, "
                                  "data_offsets)",
                                  r->path, name, key);
        if (*slot)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\" has key \"%s\" twice", r->path, name,
                                  key);
        *slot = k;
    }
    if (!dtype || !dims || !offs)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\" has no \"%s\"", r->path, name,
                              !dtype ? "dtype" : !dims ? "shape" : "data_offsets");
    if (!cJSON_IsString(dtype))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\": \"dtype\" must be a string, got %s",
                              r->path, name, tsim_json_type_name(dtype));
    if (!cJSON_IsArray(dims))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\": \"shape\" must be an array, got %s",
                              r->path, name, tsim_json_type_name(dims));
    shape->ndim = 0;
    shape->elements = 1;
    for (const cJSON *d = dims->child; d; d = d->next) {
        uint64_t v;
        if (!json_uint(d, &v))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: header: tensor \"%s\": \"shape\" must hold non-negative integers", r->path,
                                  name);
        if (shape->ndim == 8)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\": more than 8 dimensions", r->path,
                                  name);
        shape->shape[shape->ndim++] = (int64_t)v;
        if (shape->elements != UINT64_MAX && __builtin_mul_overflow(shape->elements, v, &shape->elements))
            shape->elements = UINT64_MAX;
    }
    uint64_t b, e;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_uint(offs->child, &b) ||
        !json_uint(offs->child->next, &e))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: header: tensor \"%s\": \"data_offsets\" must be [begin, end], two non-negative "
                              "integers",
                              r->path, name);
    if (b > e)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\": data_offsets [%llu, %llu] end before they begin",
                              r->path, name, (unsigned long long)b, (unsigned long long)e);
    if (e > data_size)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: header: tensor \"%s\": data_offsets [%llu, %llu] run past the end of the data "
                              "(%llu bytes after the header)",
                              r->path, name, (unsigned long long)b, (unsigned long long)e,
                              (unsigned long long)data_size);
    int size = st_dtype_size(dtype->valuestring);
    if (size) {
        uint64_t need = 0;
        if (shape->elements == UINT64_MAX || __builtin_mul_overflow(shape->elements, (uint64_t)size, &need) ||
            need != e - b) {
            char dims_text[160];
            tsim_shape_text(dims_text, sizeof dims_text, shape->shape, shape->ndim < 4 ? shape->ndim : 4);
            if (shape->elements == UINT64_MAX || need / (uint64_t)size != shape->elements)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: header: tensor \"%s\": shape %s%s of %s is too large",
                                      r->path, name, dims_text, shape->ndim > 4 ? "..." : "", dtype->valuestring);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: header: tensor \"%s\": shape %s%s of %s is %llu bytes, but data_offsets "
                                  "[%llu, %llu] hold %llu",
                                  r->path, name, dims_text, shape->ndim > 4 ? "..." : "", dtype->valuestring,
                                  (unsigned long long)need, (unsigned long long)b, (unsigned long long)e,
                                  (unsigned long long)(e - b));
        }
    }
    sp->name = t->string;
    sp->begin = b;
    sp->end = e;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No name twice. Sorted, so that a header of many tensors costs n log n
 * (comparing every pair took minutes on 80,000 names). */
static int check_unique_names(const tsim_reader *r, const cJSON *root, tsim_error *err)
{
    size_t n = 0;
    for (const cJSON *t = root->child; t; t = t->next)
        n++;
    if (n < 2)
        return TSIM_OK;
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    size_t i = 0;
    for (const cJSON *t = root->child; t; t = t->next)
        names[i++] = t->string;
    qsort(names, n, sizeof *names, name_cmp);
    int rc = TSIM_OK;
    for (i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            char name[80];
            shown(name, sizeof name, names[i]);
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: header: \"%s\" appears twice", r->path, name);
            break;
        }
    free(names);
    return rc;
}

/* The header's length and text, checked by the strict JSON checker and
 * parsed: *root is a cJSON tree, *hlen the length in bytes. */
static int read_header(const tsim_reader *r, int fd, int64_t size, cJSON **root, uint64_t *hlen, tsim_error *err)
{
    unsigned char lenbuf[8];
    if (size < 8 || tsim_pread_full(fd, lenbuf, 8, 0) != 8)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: truncated safetensors file: %lld bytes, too short for the 8-byte header length",
                              r->path, (long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | lenbuf[i];
    if (n > (uint64_t)ST_HEADER_MAX)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: safetensors header length %llu is above the limit of %lld bytes (100 MB): not a "
                              "safetensors file, or a damaged one",
                              r->path, (unsigned long long)n, (long long)ST_HEADER_MAX);
    if ((int64_t)n > size - 8)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: safetensors header length %llu runs past the end of the file (%lld bytes)", r->path,
                              (unsigned long long)n, (long long)size);
    char *text = malloc(n + 1);
    if (!text)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a %llu-byte header", (unsigned long long)n);
    if (tsim_pread_full(fd, text, n, 8) != n) {
        free(text);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: read error in the safetensors header", r->path);
    }
    text[n] = '\0';
    tsim_json_fault f;
    if (tsim_json_check_all(text, n, &f) == (size_t)-1) {
        char near[28];
        size_t k = 0;
        for (size_t i = f.at; i < n && k < 24; i++)
            near[k++] = (unsigned char)text[i] < 0x20 ? '?' : text[i];
        near[k] = '\0';
        free(text);
        if (f.what[0])
            return tsim_error_set(err, TSIM_E_INPUT, "%s: header byte %zu: malformed JSON: %s", r->path, f.at + 8,
                                  f.what);
        if (f.at >= n)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: header byte %zu: malformed JSON: the header ends early",
                                  r->path, f.at + 8);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header byte %zu: malformed JSON near \"%s\"", r->path, f.at + 8,
                              near);
    }
    *root = cJSON_ParseWithLength(text, n);
    free(text);
    if (!*root)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory parsing the safetensors header");
    *hlen = n;
    if (!cJSON_IsObject(*root))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: expected a JSON object, got %s", r->path,
                              tsim_json_type_name(*root));
    return TSIM_OK;
}

static int check_metadata(const tsim_reader *r, const cJSON *t, tsim_error *err)
{
    if (!cJSON_IsObject(t))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: header: \"__metadata__\" must be an object, got %s", r->path,
                              tsim_json_type_name(t));
    for (const cJSON *m = t->child; m; m = m->next)
        if (!cJSON_IsString(m)) {
            char key[80];
            shown(key, sizeof key, m->string);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: header: \"__metadata__\" values must be strings; \"%s\" is %s",
                                  r->path, key, tsim_json_type_name(m));
        }
    return TSIM_OK;
}

/* The tensors tile the data exactly: sorted, each starts where the last ended. */
static int check_tiling(const tsim_reader *r, span *spans, size_t count, uint64_t data_size, tsim_error *err)
{
    qsort(spans, count, sizeof *spans, span_cmp);
    uint64_t at = 0;
    for (size_t i = 0; i < count; i++) {
        char name[80], prev[80];
        shown(name, sizeof name, spans[i].name);
        if (spans[i].begin < at) {
            shown(prev, sizeof prev, spans[i - 1].name);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: header: tensor \"%s\" [%llu, %llu] overlaps tensor \"%s\" [%llu, %llu]",
                                  r->path, name, (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                                  prev, (unsigned long long)spans[i - 1].begin, (unsigned long long)spans[i - 1].end);
        }
        if (spans[i].begin > at)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: header: %llu bytes of data before tensor \"%s\" (at %llu) belong to no tensor",
                                  r->path, (unsigned long long)(spans[i].begin - at), name,
                                  (unsigned long long)spans[i].begin);
        at = spans[i].end;
    }
    if (at != data_size)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: the tensors end at data byte %llu, but the file holds %llu bytes of data after the "
                              "header",
                              r->path, (unsigned long long)at, (unsigned long long)data_size);
    return TSIM_OK;
}

/* No tensor is named `want`: the message lists those there are. */
static int no_such_tensor(const tsim_reader *r, const cJSON *root, const char *want, size_t count,
                          const tsim_read_options *opts, tsim_error *err)
{
    char list[400] = "";
    size_t len = 0, listed = 0;
    for (const cJSON *t = root->child; t && len + 90 < sizeof list; t = t->next) {
        if (strcmp(t->string, "__metadata__") == 0)
            continue;
        char name[80];
        shown(name, sizeof name, t->string);
        len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", listed++ ? ", " : "", name);
    }
    char name[80];
    shown(name, sizeof name, want);
    return tsim_error_set(err, TSIM_E_INPUT, "%s: no tensor named \"%s\" (the file has %s%s)", r->path, name,
                          count ? list : "none", count && opts && opts->tensor ? "" : "; pick one with --tensor NAME");
}

/* What the header says of the tensor to read. */
typedef struct {
    const cJSON *tensor, *metadata;
    st_shape shape;
} chosen_tensor;

/* Checks every entry of the header and how the tensors tile the data, and
 * finds the tensor named `want`. */
static int check_tensors(const tsim_reader *r, const cJSON *root, uint64_t data_size, const char *want,
                         const tsim_read_options *opts, chosen_tensor *c, tsim_error *err)
{
    span *spans = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *spans);
    if (!spans)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = check_unique_names(r, root, err);
    size_t count = 0;
    for (const cJSON *t = root->child; t && !rc; t = t->next) {
        if (strcmp(t->string, "__metadata__") == 0) {
            rc = check_metadata(r, t, err);
            c->metadata = t;
            continue;
        }
        st_shape shape;
        if ((rc = check_entry(r, t, data_size, &spans[count], &shape, err)))
            break;
        count++;
        if (want && strcmp(t->string, want) == 0) {
            c->tensor = t;
            c->shape = shape;
        }
    }
    if (!rc)
        rc = check_tiling(r, spans, count, data_size, err);
    free(spans);
    if (!rc && want && !c->tensor)
        rc = no_such_tensor(r, root, want, count, opts, err);
    return rc;
}

/* Everything up to the data: the header parsed and checked. On success the
 * tensor's spec is filled and *meta holds the trace's meta. */
static int parse_header(tsim_reader *r, int fd, int64_t size, const tsim_read_options *opts, tsim_dense_spec *spec,
                        int64_t *tensor_bytes, cJSON **meta, tsim_error *err)
{
    cJSON *root = NULL;
    uint64_t n = 0;
    int rc = read_header(r, fd, size, &root, &n, err);
    chosen_tensor c = {NULL, NULL, {0}};
    if (!rc)
        rc = check_tensors(r, root, (uint64_t)(size - 8 - (int64_t)n), opts && opts->tensor ? opts->tensor : "counts",
                           opts, &c, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    char name[80];
    shown(name, sizeof name, c.tensor->string);
    const char *dt = cJSON_GetObjectItemCaseSensitive(c.tensor, "dtype")->valuestring;
    char what[96];
    snprintf(what, sizeof what, "tensor \"%s\"", name);
    if (!tsim_dtype_from_name(dt, false, &spec->dtype)) {
        char dts[40];
        shown(dts, sizeof dts, dt);
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: tensor \"%s\" has dtype %s: expected I32, I64, U32, U64, F32 or F64",
                            r->path, name, dts);
    } else if (c.shape.ndim > 4) {
        rc = tsim_dense_too_many_dims(r, what, c.shape.ndim, err);
    } else {
        snprintf(spec->what, sizeof spec->what, "%s ", what);
        spec->ndim = c.shape.ndim;
        memcpy(spec->shape, c.shape.shape, sizeof spec->shape);
        uint64_t b = 0, e = 0;
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(c.tensor, "data_offsets");
        json_uint(offs->child, &b);
        json_uint(offs->child->next, &e);
        spec->data_offset = 8 + (int64_t)n + (int64_t)b;
        *tensor_bytes = (int64_t)(e - b);
        *meta = tsim_dense_meta(r, "safetensors");
        bool ok = *meta && cJSON_AddStringToObject(*meta, "tensor", c.tensor->string);
        if (ok && c.metadata) {
            cJSON *copy = cJSON_Duplicate(c.metadata, 1);
            ok = copy && cJSON_AddItemToObject(*meta, "metadata", copy);
        }
        if (!ok)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    cJSON_Delete(root);
    return rc;
}

int tsim_safetensors_index(const char *path, int fd, int64_t size, cJSON **root, int64_t *data_start,
                           tsim_error *err)
{
    tsim_reader named = {.path = (char *)path}; /* the checks name the file through a reader */
    uint64_t n = 0;
    *root = NULL;
    int rc = read_header(&named, fd, size, root, &n, err);
    chosen_tensor c = {NULL, NULL, {0}};
    if (!rc)
        rc = check_tensors(&named, *root, (uint64_t)(size - 8 - (int64_t)n), NULL, NULL, &c, err);
    if (rc) {
        cJSON_Delete(*root);
        *root = NULL;
        return rc;
    }
    *data_start = 8 + (int64_t)n;
    return TSIM_OK;
}

int tsim_safetensors_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    int fd;
    int64_t size;
    int rc = tsim_dense_open_file(r, &fd, &size, err);
    if (rc)
        return rc;
    tsim_dense_spec spec;
    memset(&spec, 0, sizeof spec);
    cJSON *meta = NULL;
    int64_t tensor_bytes = 0;
    rc = parse_header(r, fd, size, opts, &spec, &tensor_bytes, &meta, err);
    if (rc) {
        cJSON_Delete(meta);
        close(fd);
        return rc;
    }
    return tsim_dense_finish(r, fd, &spec, tensor_bytes, opts, meta, err);
}
