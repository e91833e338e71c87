/* Error reporting for the library: it never prints or exits; it fills a
 * tsim_error and returns a status that the CLI maps to an exit code. */
#ifndef TSIM_ERROR_H
#define TSIM_ERROR_H

#include <stdbool.h>
#include <stddef.h>

/* Status codes double as process exit statuses (cli.md). */
enum {
    TSIM_OK = 0,
    TSIM_E_CHECK = 1,    /* a --fail-if check held */
    TSIM_E_INPUT = 2,    /* usage or input error */
    TSIM_E_INTERNAL = 3, /* a bug or an I/O failure we cannot blame on input */
};

#define TSIM_ERROR_MSG_MAX 1024

typedef struct {
    int code;
    char msg[TSIM_ERROR_MSG_MAX];
    /* An external planner said it declines this configuration (a shape it
     * does not handle): a study shows n/a for it and goes on, where any other
     * failure of an external planner ends the study. */
    bool declined;
} tsim_error;

/* Sets err (if not NULL) and returns code. */
int tsim_error_set(tsim_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (e.g. the file name). */
void tsim_error_prefix(tsim_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void tsim_error_clear(tsim_error *err);

#endif
