#include "cli_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

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
