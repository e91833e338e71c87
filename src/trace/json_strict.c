/* The RFC 8259 grammar, checked iteratively (an explicit stack of open
 * containers, so no input can exhaust the C stack). */
#include "json_strict.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
