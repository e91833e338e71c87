/* NumPy .npz archives (np.savez, np.savez_compressed): each array is an
 * .npy entry of the zip. One file: the array named by --array (or the only
 * one) is extracted to a temporary file and read as an .npy. A directory of
 * per-rank .npz files (the ultra-ep load recorder: "loads" [layers, forwards,
 * physical experts] per rank) becomes one [forwards, layers, R, experts]
 * array, per source rank, when the experts divide among the R files, else
 * the per-expert totals [forwards, layers, experts]. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topology.h"
#include "torch_pt.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The entry of the array to read: --array, or the only one. */
static int pick_array(const tsim_zip *z, const char *path, const char *want, int64_t *idx, char *name, size_t cap,
                      tsim_error *err)
{
    *idx = -1;
    char list[512] = "";
    size_t ln = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < tsim_zip_count(z); i++) {
        const char *e = tsim_zip_name(z, i);
        if (!e || !ends_with(e, ".npy"))
            continue;
        size_t n = strlen(e) - 4;
        if (ln < sizeof list)
            ln += (size_t)snprintf(list + ln, sizeof list - ln, "%s'%.*s'", count ? ", " : "", (int)n, e);
        count++;
        if ((want && strlen(want) == n && strncmp(e, want, n) == 0) || (!want && count == 1)) {
            *idx = i;
            snprintf(name, cap, "%.*s", (int)n, e);
        }
    }
    if (count == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no .npy entry: not a NumPy .npz archive", path);
    if (want && *idx < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no array '%s' (the archive holds %s)", path, want, list);
    if (!want && count > 1)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %lld arrays (%s): choose one with --array NAME", path,
                              (long long)count, list);
    return TSIM_OK;
}

/* Rewrites "TMP: rest" into "NPZ: array 'NAME': rest". */
static void rename_in_error(tsim_error *err, const char *tmp, const char *npz, const char *name)
{
    if (!err || strncmp(err->msg, tmp, strlen(tmp)) != 0)
        return;
    char msg[TSIM_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s: array '%s'%s", npz, name, err->msg + strlen(tmp));
    snprintf(err->msg, sizeof err->msg, "%s", msg);
}

static int npz_file_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    tsim_zip *z;
    int rc = tsim_zip_open(&z, r->path, err);
    if (rc)
        return rc;
    int64_t idx;
    char name[256];
    if ((rc = pick_array(z, r->path, opts->array, &idx, name, sizeof name, err))) {
        tsim_zip_close(z);
        return rc;
    }
    /* A stored entry is read in place, after a pass that checks its CRC
     * (np.savez stores); a compressed one is inflated into a temporary file. */
    int64_t at = 0, size = 0;
    if (tsim_zip_stored_offset(z, idx, &at) == 0) {
        rc = tsim_zip_size(z, idx, &size, err);
        if (!rc)
            rc = tsim_zip_verify(z, idx, err);
        tsim_zip_close(z);
        int fd = rc ? -1 : open(r->path, O_RDONLY | O_CLOEXEC);
        if (!rc && fd < 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", r->path, strerror(errno));
        if (!rc && (rc = tsim_npy_open_at(r, fd, at, size, opts, err)))
            rename_in_error(err, r->path, r->path, name);
    } else {
        int fd = tsim_tmpfile(err);
        rc = fd < 0 ? TSIM_E_INTERNAL : tsim_zip_extract(z, idx, fd, NULL, err);
        tsim_zip_close(z);
        struct stat st;
        if (!rc && fstat(fd, &st) != 0)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "temporary file: %s", strerror(errno));
        if (!rc) {
            if ((rc = tsim_npy_open_at(r, fd, 0, (int64_t)st.st_size, opts, err)))
                rename_in_error(err, r->path, r->path, name);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    if (!rc && r->hdr.meta) {
        cJSON_ReplaceItemInObject(r->hdr.meta, "source", cJSON_CreateString("npz"));
        char base[256];
        tsim_path_base(r->path, base, sizeof base);
        cJSON_ReplaceItemInObject(r->hdr.meta, "file", cJSON_CreateString(base));
        cJSON_AddStringToObject(r->hdr.meta, "array", name);
    }
    return rc;
}

/* ---- a directory of per-rank .npz files ---- */

typedef struct {
    const char *path;
    int fd; /* the extracted .npy */
    tsim_dtype dt;
    int64_t shape[3];
    int64_t data_off;
} rank_array;

/* The header of an extracted .npy, read by the .npy reader's parser: a 3-D
 * little-endian C-order array whose data fills the rest of the file. */
static int npy_header(rank_array *a, const char *name, tsim_error *err)
{
    struct stat st;
    if (fstat(a->fd, &st) != 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: cannot stat the extracted array: %s", a->path,
                              strerror(errno));
    char label[4096 + 300];
    snprintf(label, sizeof label, "%s: array '%s'", a->path, name);
    tsim_npy_info nh;
    int rc = tsim_npy_read_header(label, a->fd, 0, (int64_t)st.st_size, &nh, err);
    if (rc)
        return rc;
    if (nh.ndim != 3)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s is %d-D: expected 3-D [layers, forwards, physical experts]", label, nh.ndim);
    const int64_t x = nh.shape[0], y = nh.shape[1], z = nh.shape[2];
    a->dt = nh.dtype;
    a->data_off = nh.data_offset;
    memcpy(a->shape, nh.shape, sizeof a->shape);
    int64_t need = 0;
    if (x > TSIM_MAX_INDEX || y > TSIM_MAX_INDEX || z > TSIM_MAX_EXPERTS || __builtin_mul_overflow(x, y, &need) ||
        __builtin_mul_overflow(need, z * tsim_dtype_size(a->dt), &need) ||
        (int64_t)st.st_size - a->data_off != need)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: the data does not match shape [%lld, %lld, %lld]", label,
                              (long long)x, (long long)y, (long long)z);
    return TSIM_OK;
}

/* The rank of a file: the last number in its name (loads_rank12.npz is 12). */
static long long name_rank(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long v = -1;
    for (const char *c = base; *c; c++)
        if (*c >= '0' && *c <= '9' && (c == base || c[-1] < '0' || c[-1] > '9'))
            v = strtoll(c, NULL, 10);
    return v;
}

static int cmp_rank(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    long long rx = name_rank(x), ry = name_rank(y);
    return rx != ry ? (rx > ry) - (rx < ry) : strcmp(x, y);
}

static int64_t element(const unsigned char *p, tsim_dtype t, bool *ok)
{
    uint64_t u = 0;
    const int n = tsim_dtype_size(t);
    for (int b = n - 1; b >= 0; b--)
        u = u << 8 | p[b];
    *ok = true;
    switch (t) {
    case TSIM_DT_I4: return (int32_t)(uint32_t)u;
    case TSIM_DT_U4: return (int64_t)u;
    case TSIM_DT_I8: return (int64_t)u;
    case TSIM_DT_U8: *ok = u <= (uint64_t)TSIM_MAX_COUNT; return (int64_t)u;
    case TSIM_DT_F4: {
        uint32_t bits = (uint32_t)u;
        float f;
        memcpy(&f, &bits, sizeof f);
        *ok = f >= 0 && f <= (float)TSIM_MAX_COUNT && (float)(int64_t)f == f;
        return *ok ? (int64_t)f : 0;
    }
    case TSIM_DT_F8: {
        double d;
        memcpy(&d, &u, sizeof d);
        *ok = d >= 0 && d <= (double)TSIM_MAX_COUNT && (double)(int64_t)d == d;
        return *ok ? (int64_t)d : 0;
    }
    }
    return 0;
}

/* Writes [F, L, R, P] (per source) or [F, L, P] (summed) int64 into fd. */
static int assemble(rank_array *a, size_t R, bool per_source, int fd, tsim_error *err)
{
    const int64_t L = a[0].shape[0], F = a[0].shape[1], P = a[0].shape[2];
    const int isz = tsim_dtype_size(a[0].dt);
    unsigned char *in = malloc((size_t)P * (size_t)isz + 1);
    int64_t *out = malloc(sizeof *out * (size_t)P * (per_source ? R : 1) + 1);
    int rc = in && out ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int64_t at = 0;
    for (int64_t f = 0; !rc && f < F; f++)
        for (int64_t l = 0; !rc && l < L; l++) {
            if (!per_source)
                memset(out, 0, sizeof *out * (size_t)P);
            for (size_t k = 0; !rc && k < R; k++) {
                rc = tsim_pread_all(a[k].fd, in, (size_t)P * (size_t)isz, a[k].data_off + (l * F + f) * P * isz, err);
                int64_t *dst = out + (per_source ? k * (size_t)P : 0);
                for (int64_t p = 0; !rc && p < P; p++) {
                    bool ok;
                    int64_t v = element(in + p * isz, a[k].dt, &ok);
                    if (!ok || v < 0 || v > TSIM_MAX_COUNT)
                        rc = tsim_error_set(err, TSIM_E_INPUT,
                                            "%s: element [%lld, %lld, %lld] is not a count (a non-negative integer "
                                            "up to 2^40)",
                                            a[k].path, (long long)l, (long long)f, (long long)p);
                    else
                        dst[p] = per_source ? v : dst[p] + v;
                }
            }
            const size_t n = sizeof *out * (size_t)P * (per_source ? R : 1);
            if (!rc)
                rc = tsim_pwrite_all(fd, out, n, at, err);
            at += (int64_t)n;
        }
    free(in);
    free(out);
    return rc;
}

static int npz_dir_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    char **paths;
    size_t R;
    int rc = tsim_dir_list(r->path, ".npz", &paths, &R, err);
    if (rc)
        return rc;
    if (R == 0) {
        tsim_dir_list_free(paths, R);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no .npz files in the directory", r->path);
    }
    qsort(paths, R, sizeof *paths, cmp_rank);
    rank_array *a = calloc(R, sizeof *a);
    rc = a ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    size_t opened = 0;
    char name[256] = "";
    for (size_t k = 0; !rc && k < R; k++) {
        a[k].path = paths[k];
        a[k].fd = -1;
        tsim_zip *z;
        int64_t idx;
        if ((rc = tsim_zip_open(&z, paths[k], err)))
            break;
        rc = pick_array(z, paths[k], opts->array, &idx, name, sizeof name, err);
        if (!rc && (a[k].fd = tsim_tmpfile(err)) < 0)
            rc = TSIM_E_INTERNAL;
        opened = k + 1;
        if (!rc)
            rc = tsim_zip_extract(z, idx, a[k].fd, NULL, err);
        tsim_zip_close(z);
        if (!rc)
            rc = npy_header(&a[k], name, err);
        if (!rc && k > 0 &&
            (memcmp(a[k].shape, a[0].shape, sizeof a[0].shape) != 0 || a[k].dt != a[0].dt))
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: array '%s' is [%lld, %lld, %lld], but %s's is [%lld, %lld, %lld] (or its dtype "
                                "differs): the ranks disagree",
                                paths[k], name, (long long)a[k].shape[0], (long long)a[k].shape[1],
                                (long long)a[k].shape[2], paths[0], (long long)a[0].shape[0],
                                (long long)a[0].shape[1], (long long)a[0].shape[2]);
    }
    const bool per_source = !rc && a[0].shape[2] % (int64_t)R == 0;
    int fd = rc ? -1 : tsim_tmpfile(err);
    if (!rc && fd < 0)
        rc = TSIM_E_INTERNAL;
    if (!rc)
        rc = assemble(a, R, per_source, fd, err);
    tsim_dense_spec spec = {"", TSIM_DT_I8, per_source ? 4 : 3, {0}, 0};
    if (!rc) {
        const int64_t L = a[0].shape[0], F = a[0].shape[1], P = a[0].shape[2];
        int64_t s4[4] = {F, L, (int64_t)R, P}, s3[4] = {F, L, P, 0};
        memcpy(spec.shape, per_source ? s4 : s3, sizeof s4);
    }
    for (size_t k = 0; a && k < opened; k++)
        if (a[k].fd >= 0)
            close(a[k].fd);
    free(a);
    if (!rc) {
        int64_t bytes = 8 * spec.shape[0] * spec.shape[1] * spec.shape[2] * (per_source ? spec.shape[3] : 1);
        rc = tsim_dense_open(r, fd, &spec, bytes, opts, err);
        fd = -1;
    }
    if (fd >= 0)
        close(fd);
    if (!rc)
        rc = tsim_set_meta(r, "npz", "array", name, err);
    if (!rc && !per_source &&
        tsim_reader_warn(r, "%s: %lld experts do not divide among %zu rank files: the ranks' loads are summed", r->path,
                         (long long)spec.shape[2], R))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    tsim_dir_list_free(paths, R);
    return rc;
}

int tsim_npz_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    struct stat st;
    if (stat(r->path, &st) == 0 && S_ISDIR(st.st_mode))
        return npz_dir_open(r, opts, err);
    return npz_file_open(r, opts, err);
}
