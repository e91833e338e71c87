#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporary files currently open, for the signal handler. Fixed size so the
 * handler never touches the heap. */
#define MAX_PENDING 64
static char pending[MAX_PENDING][4096];
static volatile sig_atomic_t pending_used[MAX_PENDING];

static void pending_add(const char *tmp)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (!pending_used[i]) {
            snprintf(pending[i], sizeof pending[i], "%s", tmp);
            pending_used[i] = 1;
            return;
        }
    }
}

static void pending_remove(const char *tmp)
{
    for (int i = 0; i < MAX_PENDING; i++)
        if (pending_used[i] && strcmp(pending[i], tmp) == 0)
            pending_used[i] = 0;
}

void tsim_outfile_unlink_pending(void)
{
    for (int i = 0; i < MAX_PENDING; i++)
        if (pending_used[i])
            unlink(pending[i]);
}

int tsim_outfile_open(tsim_outfile *f, const char *path, tsim_error *err)
{
    memset(f, 0, sizeof *f);
    if (!path || strcmp(path, "-") == 0) {
        f->fp = stdout;
        return TSIM_OK;
    }
    size_t n = strlen(path);
    f->path = malloc(n + 1);
    f->tmp_path = malloc(n + 32);
    if (!f->path || !f->tmp_path) {
        tsim_outfile_abort(f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    memcpy(f->path, path, n + 1);
    /* Special files (/dev/full, /dev/null, pipes) cannot be renamed over:
     * write them directly. */
    if (strncmp(path, "/dev/", 5) == 0) {
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
    snprintf(f->tmp_path, n + 32, "%s.tmp.XXXXXX", path);
    /* SIGINT/SIGTERM held off until the handler knows the new file, so no
     * signal can land between its creation and its registration. */
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &saved);
    int fd = mkstemp(f->tmp_path);
    if (fd >= 0)
        pending_add(f->tmp_path);
    sigprocmask(SIG_SETMASK, &saved, NULL);
    if (fd < 0) {
        int e = errno;
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
