/* The RFC 8259 grammar, checked iteratively (an explicit stack of open
 * containers, so no input can exhaust the C stack). */
#include "json_strict.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"

#define BAD ((size_t)-1)

typedef struct {
    const char *s;
    size_t len;
    tsim_json_fault *fault;
} checker;

static size_t fail(const checker *c, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static size_t fail(const checker *c, size_t at, const char *fmt, ...)
{
    c->fault->at = at;
    c->fault->what[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->fault->what, sizeof c->fault->what, fmt, ap);
        va_end(ap);
    }
    return BAD;
}

/* Something other than what the grammar allows at p: name control bytes,
 * leave the rest to the caller's "near ..." message. */
static size_t unexpected(const checker *c, size_t p)
{
    if (p >= c->len)
        return fail(c, c->len, NULL);
    unsigned char b = (unsigned char)c->s[p];
    if (b == 0)
        return fail(c, p, "NUL byte");
    if (b < 0x20)
        return fail(c, p, "byte 0x%02x is not JSON whitespace (only space, tab, CR and LF are)", b);
    return fail(c, p, NULL);
}

size_t tsim_json_skip_ws(const char *text, size_t len, size_t from)
{
    while (from < len && tsim_json_is_ws(text[from]))
        from++;
    return from;
}

static bool is_digit(const checker *c, size_t p)
{
    return p < c->len && c->s[p] >= '0' && c->s[p] <= '9';
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The four hex digits at p, or -1. */
static long hex4(const checker *c, size_t p)
{
    if (p + 4 > c->len)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_value(c->s[p + (size_t)i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Length of the UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_length(const checker *c, size_t p)
{
    const unsigned char *u = (const unsigned char *)c->s + p;
    size_t avail = c->len - p;
    unsigned char b = u[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF)
        n = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n || u[1] < lo || u[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (u[i] < 0x80 || u[i] > 0xBF)
            return 0;
    return n;
}

static size_t check_string(const checker *c, size_t p)
{
    const char *s = c->s;
    for (p++;;) {
        if (p >= c->len)
            return fail(c, c->len, NULL);
        unsigned char ch = (unsigned char)s[p];
        if (ch == '"')
            return p + 1;
        if (ch == 0)
            return fail(c, p, "NUL byte in a string");
        if (ch < 0x20)
            return fail(c, p, "control character 0x%02x in a string (JSON needs it escaped)", ch);
        if (ch == '\\') {
            if (p + 1 >= c->len)
                return fail(c, c->len, NULL);
            char e = s[p + 1];
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            if (e != 'u') {
                if ((unsigned char)e < 0x20 || (unsigned char)e >= 0x7f)
                    return fail(c, p, "invalid escape in a string (byte 0x%02x after \\)", (unsigned char)e);
                return fail(c, p, "invalid escape \\%c in a string", e);
            }
            long u = hex4(c, p + 2);
            if (u < 0)
                return fail(c, p, "\\u in a string must be followed by four hex digits");
            if (u == 0)
                return fail(c, p, "\\u0000 (NUL) in a string is not supported");
            if (u >= 0xDC00 && u <= 0xDFFF)
                return fail(c, p, "unpaired UTF-16 surrogate \\u%04lX in a string", u);
            if (u >= 0xD800 && u <= 0xDBFF) {
                long low = p + 7 < c->len && s[p + 6] == '\\' && s[p + 7] == 'u' ? hex4(c, p + 8) : -1;
                if (low < 0xDC00 || low > 0xDFFF)
                    return fail(c, p, "unpaired UTF-16 surrogate \\u%04lX in a string", u);
                p += 12;
            } else {
                p += 6;
            }
            continue;
        }
        if (ch < 0x80) {
            p++;
            continue;
        }
        size_t n = utf8_length(c, p);
        if (!n)
            return fail(c, p, "invalid UTF-8 (byte 0x%02x) in a string", ch);
        p += n;
    }
}

static size_t check_number(const checker *c, size_t p)
{
    const char *s = c->s;
    const size_t start = p;
    bool nonzero = false, exponent = false;
    if (s[p] == '-')
        p++;
    if (!is_digit(c, p))
        return unexpected(c, p);
    if (s[p] == '0') {
        p++;
        if (is_digit(c, p)) {
            size_t n = p;
            while (is_digit(c, n) && n - start < 24)
                n++;
            return fail(c, start, "number %.*s%s has a leading zero (not allowed in JSON)", (int)(n - start),
                        s + start, is_digit(c, n) ? "..." : "");
        }
    } else {
        nonzero = true;
        while (is_digit(c, p))
            p++;
    }
    if (p < c->len && s[p] == '.') {
        p++;
        if (!is_digit(c, p))
            return unexpected(c, p);
        for (; is_digit(c, p); p++)
            nonzero = nonzero || s[p] != '0';
    }
    if (p < c->len && (s[p] == 'e' || s[p] == 'E')) {
        exponent = true;
        p++;
        if (p < c->len && (s[p] == '+' || s[p] == '-'))
            p++;
        if (!is_digit(c, p))
            return unexpected(c, p);
        while (is_digit(c, p))
            p++;
    }
    size_t n = p - start;
    if (n > TSIM_JSON_MAX_NUMBER)
        return fail(c, start, "number %.24s... is longer than %d characters", s + start, TSIM_JSON_MAX_NUMBER);
    /* Without an exponent, 63 characters can neither overflow nor underflow a double. */
    if (exponent) {
        char buf[TSIM_JSON_MAX_NUMBER + 1];
        memcpy(buf, s + start, n);
        buf[n] = '\0';
        double d = strtod(buf, NULL);
        if (isinf(d))
            return fail(c, start, "number %s is too large for a double", buf);
        if (d == 0 && nonzero)
            return fail(c, start, "number %s is too small for a double (it would read as 0)", buf);
    }
    return p;
}

static size_t check_literal(const checker *c, size_t p, const char *word)
{
    size_t n = strlen(word);
    if (c->len - p < n || memcmp(c->s + p, word, n) != 0)
        return fail(c, p, NULL);
    return p + n;
}

/* A key and its colon; returns where the value starts. */
static size_t check_key(const checker *c, size_t p)
{
    if (p >= c->len || c->s[p] != '"')
        return unexpected(c, p);
    p = check_string(c, p);
    if (p == BAD)
        return BAD;
    p = tsim_json_skip_ws(c->s, c->len, p);
    if (p >= c->len || c->s[p] != ':')
        return unexpected(c, p);
    return tsim_json_skip_ws(c->s, c->len, p + 1);
}

size_t tsim_json_check(const char *text, size_t len, tsim_json_fault *fault)
{
    const checker c = {text, len, fault};
    char open[TSIM_JSON_MAX_DEPTH];
    int depth = 0;
    size_t p = tsim_json_skip_ws(text, len, 0);
    for (;;) {
        /* a value starts at p */
        if (p >= len)
            return unexpected(&c, p);
        char ch = text[p];
        if (ch == '{' || ch == '[') {
            if (depth == TSIM_JSON_MAX_DEPTH)
                return fail(&c, p, "nested deeper than %d levels", TSIM_JSON_MAX_DEPTH);
            open[depth++] = ch;
            p = tsim_json_skip_ws(text, len, p + 1);
            if (p < len && text[p] == (ch == '{' ? '}' : ']')) {
                depth--;
                p++;
            } else {
                if (ch == '{' && (p = check_key(&c, p)) == BAD)
                    return BAD;
                continue;
            }
        } else if (ch == '"') {
            p = check_string(&c, p);
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            p = check_number(&c, p);
        } else if (ch == 't') {
            p = check_literal(&c, p, "true");
        } else if (ch == 'f') {
            p = check_literal(&c, p, "false");
        } else if (ch == 'n') {
            p = check_literal(&c, p, "null");
        } else {
            return unexpected(&c, p);
        }
        if (p == BAD)
            return BAD;
        /* after a value: close containers until one continues with ',' */
        for (;;) {
            if (depth == 0)
                return p;
            p = tsim_json_skip_ws(text, len, p);
            if (p >= len)
                return unexpected(&c, p);
            bool object = open[depth - 1] == '{';
            if (text[p] == ',') {
                p = tsim_json_skip_ws(text, len, p + 1);
                if (object && (p = check_key(&c, p)) == BAD)
                    return BAD;
                break;
            }
            if (text[p] != (object ? '}' : ']'))
                return unexpected(&c, p);
            depth--;
            p++;
        }
    }
}

size_t tsim_json_check_all(const char *text, size_t len, tsim_json_fault *fault)
{
    size_t p = tsim_json_check(text, len, fault);
    if (p == BAD)
        return BAD;
    p = tsim_json_skip_ws(text, len, p);
    if (p < len) {
        const checker c = {text, len, fault};
        return unexpected(&c, p);
    }
    return len;
}

/* ---- whole documents ------------------------------------------------------------ */

/* Up to 24 bytes of text[from..to) on one line, control bytes shown as '?'. */
static void excerpt(char *out, const char *text, size_t from, size_t to)
{
    size_t n = 0;
    for (size_t i = from; i < to && n < 24 && text[i] != '\n'; i++)
        out[n++] = (unsigned char)text[i] < 0x20 ? '?' : text[i];
    out[n] = '\0';
}

cJSON *tsim_json_parse_strict(const char *text, size_t len, const char *name, tsim_error *err)
{
    tsim_json_fault f;
    if (tsim_json_skip_ws(text, len, 0) == len) {
        tsim_error_set(err, TSIM_E_INPUT, "%s: empty, not JSON", name);
        return NULL;
    }
    if (tsim_json_check_all(text, len, &f) == BAD) {
        size_t at = f.at < len ? f.at : len, line_start = 0;
        long line = 1;
        for (size_t i = 0; i < at; i++)
            if (text[i] == '\n') {
                line++;
                line_start = i + 1;
            }
        long col = (long)(at - line_start) + 1;
        if (f.what[0])
            tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: malformed JSON: %s", name, line, col, f.what);
        else if (at >= len)
            tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: malformed JSON: the text ends early (truncated?)", name,
                           line, col);
        else {
            char near[28];
            excerpt(near, text, at, len);
            tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: malformed JSON near \"%s\"", name, line, col, near);
        }
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root)
        tsim_error_set(err, TSIM_E_INTERNAL, "%s: out of memory parsing JSON", name);
    return root;
}

/* The whole of fd (at most max bytes) into *buf; returns 0, 1 when it is
 * longer than max, or -1 with errno. */
static int read_bounded(int fd, size_t max, size_t size_hint, char **buf, size_t *len)
{
    size_t cap = size_hint && size_hint <= max ? size_hint + 2 : 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return -1;
    for (;;) {
        if (n + 1 == cap) {
            if (n > max) {
                free(b);
                return 1;
            }
            /* one byte past max is enough to know the file is too long */
            size_t grown = cap * 2 > max + 2 ? max + 2 : cap * 2;
            char *g = realloc(b, grown);
            if (!g) {
                free(b);
                return -1;
            }
            b = g;
            cap = grown;
        }
        ssize_t got = tsim_read_some(fd, b + n, cap - n - 1);
        if (got < 0) {
            int e = errno;
            free(b);
            errno = e;
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    if (n > max) {
        free(b);
        return 1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int tsim_json_read_file(const char *path, size_t max, const char *what, cJSON **out, tsim_error *err)
{
    *out = NULL;
    const bool std_in = strcmp(path, "-") == 0;
    const char *name = std_in ? "standard input" : path;
    int fd = std_in ? STDIN_FILENO : open(path, O_RDONLY);
    if (fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", name, strerror(errno));
    struct stat st;
    int rc = TSIM_OK;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode))
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read: it is a directory", name);
    else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s may be at most %zu MiB, this file has %lld bytes", name,
                            what, max >> 20, (long long)st.st_size);
    char *buf = NULL;
    size_t len = 0;
    if (rc == TSIM_OK) {
        int got = read_bounded(fd, max, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, &buf, &len);
        if (got == 1)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s may be at most %zu MiB, and this input goes on beyond that",
                                name, what, max >> 20);
        else if (got < 0)
            rc = tsim_error_set(err, errno == ENOMEM ? TSIM_E_INTERNAL : TSIM_E_INPUT, "%s: read error: %s", name,
                                strerror(errno));
    }
    if (!std_in)
        close(fd);
    if (rc == TSIM_OK) {
        tsim_error parse_err = {0};
        if (!(*out = tsim_json_parse_strict(buf, len, name, &parse_err))) {
            rc = parse_err.code;
            if (err)
                *err = parse_err;
        }
    }
    free(buf);
    return rc;
}
