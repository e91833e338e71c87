#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int tsim_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, tsim_error *err)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is out of range %lld..%lld", what, s, (long long)lo,
                              (long long)hi);
    if (errno || end == s || *end != '\0') {
        /* A whole number written as a float (2e9, 1024.0) is still that
         * integer; a fraction or a huge value says which it is. */
        errno = 0;
        double d = strtod(s, &end);
        if (errno || end == s || *end != '\0' || !isfinite(d))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' is not an integer", what, s);
        if (d != floor(d))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is not a whole number", what, s);
        if (!(d >= (double)lo && d <= (double)hi) || fabs(d) > 9007199254740992.0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is out of range %lld..%lld", what, s, (long long)lo,
                                  (long long)hi);
        v = (long long)d;
    }
    if (v < lo || v > hi)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %lld is out of range %lld..%lld", what, v, (long long)lo,
                              (long long)hi);
    *out = v;
    return TSIM_OK;
}

int tsim_parse_int(const char *s, int lo, int hi, int *out, const char *what, tsim_error *err)
{
    int64_t v;
    int rc = tsim_parse_int64(s, lo, hi, &v, what, err);
    if (rc == TSIM_OK)
        *out = (int)v;
    return rc;
}

int tsim_parse_double(const char *s, double lo, double hi, double *out, const char *what, tsim_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || isnan(v) || (errno && errno != ERANGE))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' is not a number", what, s);
    /* ERANGE: an overflow comes back infinite and is out of range; an
     * underflow (1e-320) is the nearest double, a number like any other.
     * The message echoes the text as given: %g would print 1.0000001 as 1. */
    if (isinf(v) || v < lo || v > hi)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s is out of range %g..%g", what, s, lo, hi);
    *out = v;
    return TSIM_OK;
}

int tsim_parse_double_list(const char *s, double *out, int max, int *n, const char *what, tsim_error *err)
{
    *n = 0;
    if (!*s)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: empty list", what);
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double a = strtod(p, &end);
        if (end == p || errno || !isfinite(a))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read a number at '%s'", what, p);
        p = end;
        if (*p == '-' ) {
            /* range lo-hi+step */
            double b = strtod(p + 1, &end);
            if (end == p + 1)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: range '%s' needs lo-hi+step", what, s);
            p = end;
            double step = 1.0;
            if (*p == '+') {
                step = strtod(p + 1, &end);
                if (end == p + 1 || !(step > 0))
                    return tsim_error_set(err, TSIM_E_INPUT, "%s: range step must be a positive number", what);
                p = end;
            }
            if (b < a)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: range %g-%g runs backwards", what, a, b);
            for (long i = 0;; i++) {
                double v = a + (double)i * step;
                if (v > b + 1e-9 * fabs(step))
                    break;
                if (*n >= max)
                    return tsim_error_set(err, TSIM_E_INPUT, "%s: more than %d values", what, max);
                out[(*n)++] = v;
            }
        } else {
            if (*n >= max)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: more than %d values", what, max);
            out[(*n)++] = a;
        }
        if (*p == ',')
            p++;
        else if (*p)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: unexpected '%c' in '%s'", what, *p, s);
    }
    return TSIM_OK;
}

int tsim_parse_int_list(const char *s, int *out, int max, int *n, const char *what, tsim_error *err)
{
    double tmp[1024];
    if (max > 1024)
        max = 1024;
    int rc = tsim_parse_double_list(s, tmp, max, n, what, err);
    if (rc)
        return rc;
    for (int i = 0; i < *n; i++) {
        if (tmp[i] != floor(tmp[i]) || fabs(tmp[i]) > 1e9)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %g is not an integer", what, tmp[i]);
        out[i] = (int)tmp[i];
    }
    return TSIM_OK;
}
