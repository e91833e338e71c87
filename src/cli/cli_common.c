#include "cli_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "merge.h"

int tsim_cli_run_with_identity(const char *cmd, int argc, char **argv, tsim_cli_identity_main run, void *ctx)
{
    int id_argc = 0;
    char **id_argv = tsim_argv_identity(argc, argv, &id_argc);
    if (!id_argv) {
        tsim_error err = {0};
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        return tsim_cli_fail(cmd, &err);
    }
    int status = run(argc, argv, id_argv, id_argc, ctx);
    tsim_argv_free(id_argv);
    return status;
}

int tsim_cli_fail(const char *cmd, const tsim_error *err)
{
    int code = err && err->code ? err->code : TSIM_E_INTERNAL;
    const char *msg = err && err->msg[0] ? err->msg : "unknown error";
    /* Running out of memory is the machine's limit, not a bug: say what to do
     * (exit 3, as the library reports it with the internal status). */
    if (code == TSIM_E_INTERNAL && strstr(msg, "out of memory"))
        fprintf(stderr, "taotsim %s: %s: not enough memory; free some, or use fewer -j workers or a smaller trace\n",
                cmd, msg);
    else if (code == TSIM_E_INTERNAL)
        fprintf(stderr, "taotsim %s: internal error (a bug, please report it): %s\n", cmd, msg);
    else
        fprintf(stderr, "taotsim %s: %s\n", cmd, msg);
    return code;
}

int tsim_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "taotsim %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'taotsim %s --help'.\n", cmd);
    return TSIM_E_INPUT;
}

static int dir_writable(const char *dir, const char *flag, const char *path, tsim_error *err)
{
    if (access(path, W_OK | X_OK) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s %s: cannot write into %s: %s", flag, dir, path,
                              strerror(errno));
    return TSIM_OK;
}

int tsim_cli_check_output_dir(const char *dir, const char *flag, tsim_error *err)
{
    if (!dir)
        return TSIM_OK;
    if (!dir[0])
        return tsim_error_set(err, TSIM_E_INPUT, "%s: an empty directory name", flag);
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? dir_writable(dir, flag, dir, err)
                                   : tsim_error_set(err, TSIM_E_INPUT, "%s %s: exists and is not a directory", flag,
                                                    dir);
    /* Not there yet: the nearest ancestor that exists decides. */
    char path[4096];
    if (strlen(dir) >= sizeof path)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: directory name too long", flag);
    strcpy(path, dir);
    for (;;) {
        char *slash = strrchr(path, '/');
        while (slash && slash > path && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(path, '/');
        }
        if (!slash)
            strcpy(path, ".");
        else if (slash == path)
            path[1] = '\0';
        else
            *slash = '\0';
        if (stat(path, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return tsim_error_set(err, TSIM_E_INPUT, "%s %s: cannot create it: %s is not a directory", flag,
                                      dir, path);
            return dir_writable(dir, flag, path, err);
        }
        if (strcmp(path, ".") == 0 || strcmp(path, "/") == 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s %s: cannot create it: %s", flag, dir, strerror(errno));
    }
}

void tsim_progress_start(tsim_progress *p, const char *what)
{
    memset(p, 0, sizeof *p);
    p->enabled = isatty(STDERR_FILENO) && !getenv("TAOTSIM_NO_PROGRESS");
    p->start = p->last = tsim_now_seconds();
    p->what = what;
}

void tsim_progress_update(tsim_progress *p, int64_t done, int64_t total)
{
    if (!p->enabled)
        return;
    double now = tsim_now_seconds();
    if (now - p->start < 1.0 || now - p->last < 0.25)
        return;
    p->last = now;
    p->printed = true;
    if (total > 0)
        fprintf(stderr, "\r%s: %lld/%lld (%.0f%%) %.1fs ", p->what, (long long)done, (long long)total,
                100.0 * (double)done / (double)total, now - p->start);
    else
        fprintf(stderr, "\r%s: %lld %.1fs ", p->what, (long long)done, now - p->start);
    fflush(stderr);
}

void tsim_progress_finish(tsim_progress *p)
{
    if (p->enabled && p->printed) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}
