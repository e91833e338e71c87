/* realpath is XSI, beyond the project-wide _POSIX_C_SOURCE. */
#define _XOPEN_SOURCE 700
#include "outfile.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporary files currently open, for the signal handler and the exit guard:
 * a list that only grows (a node is reused once its file is gone), read by
 * the handler without locks or the heap. used: 0 free, 1 a live file, 2 being
 * filled in by the thread that claimed it. No limit on how many. */
typedef struct pending_node {
    struct pending_node *next;
    char *path;
    size_t size;
    _Atomic int used;
} pending_node;
static _Atomic(pending_node *) pending_head;

/* Registers tmp; false when out of memory (the caller removes the file). */
static bool pending_add(const char *tmp)
{
    const size_t n = strlen(tmp) + 1;
    for (pending_node *p = atomic_load(&pending_head); p; p = p->next) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&p->used, &expected, 2))
            continue;
        if (p->size < n) {
            char *grown = malloc(n);
            if (!grown) {
                atomic_store(&p->used, 0);
                return false;
            }
            free(p->path);
            p->path = grown;
            p->size = n;
        }
        memcpy(p->path, tmp, n);
        atomic_store(&p->used, 1);
        return true;
    }
    pending_node *node = calloc(1, sizeof *node);
    char *path = malloc(n);
    if (!node || !path) {
        free(node);
        free(path);
        return false;
    }
    memcpy(path, tmp, n);
    node->path = path;
    node->size = n;
    atomic_store(&node->used, 1);
    node->next = atomic_load(&pending_head);
    while (!atomic_compare_exchange_weak(&pending_head, &node->next, node))
        ;
    return true;
}

static void pending_remove(const char *tmp)
{
    for (pending_node *p = atomic_load(&pending_head); p; p = p->next)
        if (atomic_load(&p->used) == 1 && strcmp(p->path, tmp) == 0) {
            atomic_store(&p->used, 0);
            return;
        }
}

void tsim_outfile_unlink_pending(void)
{
    for (pending_node *p = atomic_load(&pending_head); p; p = p->next)
        if (atomic_load(&p->used) == 1)
            unlink(p->path);
}

void tsim_outfile_temp_name(const char *path, char *out, size_t n)
{
    /* PATH.tmp.XXXXXX beside the target, unless that would push a legal name
     * over NAME_MAX: then a short hidden name in the same directory (the
     * rename must stay within one file system). */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strlen(base) + strlen(".tmp.XXXXXX") <= NAME_MAX) {
        snprintf(out, n, "%s.tmp.XXXXXX", path);
        return;
    }
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    snprintf(out, n, "%.*s.taotsim.tmp.XXXXXX", dir_len, path);
}

/* The directory that will hold path (for the writability check). */
static void parent_dir(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

#define EMPTY_NAME "empty file name (give a path, or - for standard output)"

int tsim_outfile_check_writable(const char *path, tsim_error *err)
{
    if (!path || strcmp(path, "-") == 0)
        return TSIM_OK;
    if (!*path)
        return tsim_error_set(err, TSIM_E_INPUT, "%s", EMPTY_NAME);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: is a directory, not a file to write", path);
        if (!S_ISREG(st.st_mode))
            return access(path, W_OK) == 0
                       ? TSIM_OK
                       : tsim_error_set(err, TSIM_E_INPUT, "%s: cannot write: %s", path, strerror(errno));
    }
    char dir[4096];
    parent_dir(path, dir, sizeof dir);
    if (stat(dir, &st) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot write: directory %s: %s", path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot write: %s is not a directory", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot write: directory %s: %s", path, dir, strerror(errno));
    return TSIM_OK;
}

/* Two names of one file: the same device and inode when both exist, else the
 * same resolved path (the parent resolved, for a file not created yet). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
    if (ha && hb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ha != hb)
        return false;
    char da[4096], db[4096], ra[PATH_MAX], rb[PATH_MAX];
    parent_dir(a, da, sizeof da);
    parent_dir(b, db, sizeof db);
    const char *ba = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
    const char *bb = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
    if (!realpath(da, ra) || !realpath(db, rb))
        return strcmp(a, b) == 0;
    return strcmp(ra, rb) == 0 && strcmp(ba, bb) == 0;
}

int tsim_outfile_check_distinct(const char *const *outputs, const char *const *output_flags, int n_outputs,
                                const char *const *inputs, int n_inputs, tsim_error *err)
{
    for (int i = 0; i < n_outputs; i++) {
        if (!outputs[i] || strcmp(outputs[i], "-") == 0)
            continue;
        struct stat st;
        /* Writing to a device twice (/dev/null) loses nothing. */
        if (stat(outputs[i], &st) == 0 && !S_ISREG(st.st_mode))
            continue;
        for (int j = 0; j < n_inputs; j++)
            if (inputs[j] && same_file(outputs[i], inputs[j]))
                return tsim_error_set(err, TSIM_E_INPUT, "%s %s is the input %s: it would be overwritten",
                                      output_flags[i], outputs[i], inputs[j]);
        for (int j = 0; j < i; j++)
            if (outputs[j] && strcmp(outputs[j], "-") != 0 && same_file(outputs[i], outputs[j]))
                return tsim_error_set(err, TSIM_E_INPUT, "%s %s and %s %s are the same file: one would be lost",
                                      output_flags[j], outputs[j], output_flags[i], outputs[i]);
    }
    return TSIM_OK;
}

int tsim_outfile_open(tsim_outfile *f, const char *path, tsim_error *err)
{
    memset(f, 0, sizeof *f);
    if (!path || strcmp(path, "-") == 0) {
        f->fp = stdout;
        return TSIM_OK;
    }
    if (!*path)
        return tsim_error_set(err, TSIM_E_INPUT, "%s", EMPTY_NAME);
    size_t n = strlen(path);
    f->path = malloc(n + 1);
    f->tmp_path = malloc(n + 32);
    if (!f->path || !f->tmp_path) {
        tsim_outfile_abort(f);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: out of memory opening the output (free some memory)", path);
    }
    memcpy(f->path, path, n + 1);
    /* Devices, pipes and sockets (/dev/null, /dev/full, a FIFO) cannot be
     * renamed over: they are written directly. Decided by what the path is,
     * not by its name, so a regular file under /dev/shm is still written
     * atomically. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            tsim_outfile_abort(f);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: is a directory, not a file to write", path);
        }
        f->fp = fopen(path, "w");
        free(f->tmp_path);
        f->tmp_path = NULL;
        if (!f->fp) {
            int e = errno;
            tsim_outfile_abort(f);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open for writing: %s", path, strerror(e));
        }
        return TSIM_OK;
    }
    tsim_outfile_temp_name(path, f->tmp_path, n + 32);
    /* Signals are held off until the handler knows the new file, so none can
     * land between its creation and its registration. */
    sigset_t block, saved;
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    int fd = mkstemp(f->tmp_path);
    int e = errno;
    if (fd >= 0 && !pending_add(f->tmp_path)) {
        unlink(f->tmp_path);
        close(fd);
        fd = -1;
        e = ENOMEM;
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (fd < 0) {
        free(f->tmp_path);
        f->tmp_path = NULL;
        tsim_outfile_abort(f);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot create: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    f->fp = fdopen(fd, "w");
    if (!f->fp) {
        close(fd);
        tsim_outfile_abort(f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: fdopen failed", path);
    }
    return TSIM_OK;
}

int tsim_outfile_flush(tsim_outfile *f, tsim_error *err)
{
    if (!f->fp)
        return TSIM_OK;
    if (fflush(f->fp) != 0 || ferror(f->fp)) {
        int e = errno;
        const char *name = f->path ? f->path : "standard output";
        return tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", name, strerror(e));
    }
    return TSIM_OK;
}

int tsim_outfile_commit(tsim_outfile *f, tsim_error *err)
{
    if (!f->fp)
        return TSIM_OK;
    if (f->fp == stdout) {
        f->fp = NULL;
        if (fflush(stdout) != 0 || ferror(stdout))
            return tsim_error_set(err, TSIM_E_INPUT, "error writing to standard output: %s", strerror(errno));
        return TSIM_OK;
    }
    int bad = fflush(f->fp) != 0 || ferror(f->fp);
    int e = errno;
    if (fclose(f->fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    f->fp = NULL;
    if (bad) {
        const char *name = f->path ? f->path : "output";
        tsim_error_set(err, TSIM_E_INPUT, "%s: write failed: %s", name, strerror(e));
        tsim_outfile_abort(f);
        return TSIM_E_INPUT;
    }
    if (f->tmp_path) {
        if (rename(f->tmp_path, f->path) != 0) {
            e = errno;
            tsim_error_set(err, TSIM_E_INPUT, "%s: cannot rename into place: %s", f->path, strerror(e));
            tsim_outfile_abort(f);
            return TSIM_E_INPUT;
        }
        pending_remove(f->tmp_path);
    }
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = f->path = NULL;
    return TSIM_OK;
}

void tsim_outfile_abort(tsim_outfile *f)
{
    if (f->fp && f->fp != stdout)
        fclose(f->fp);
    f->fp = NULL;
    if (f->tmp_path) {
        unlink(f->tmp_path);
        pending_remove(f->tmp_path);
    }
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = f->path = NULL;
}
