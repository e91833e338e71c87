#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tsim_error_set(tsim_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
        err->declined = false;
    }
    return code;
}

void tsim_error_prefix(tsim_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* prefix + ": " + old message, truncated to the buffer. */
    char joined[TSIM_ERROR_MSG_MAX];
    size_t used = strnlen(prefix, sizeof joined - 1);
    memcpy(joined, prefix, used);
    const char *parts[2] = {": ", err->msg};
    for (int i = 0; i < 2; i++) {
        size_t len = strlen(parts[i]);
        if (len > sizeof joined - 1 - used)
            len = sizeof joined - 1 - used;
        memcpy(joined + used, parts[i], len);
        used += len;
    }
    joined[used] = '\0';
    memcpy(err->msg, joined, used + 1);
}

void tsim_error_clear(tsim_error *err)
{
    if (err) {
        err->code = TSIM_OK;
        err->msg[0] = '\0';
        err->declined = false;
    }
}
