/* greedy.py in C: a taotsim exec planner (docs/planner-protocol.md).
 *     taotsim replay TRACE --planners g=exec:./greedy [--g-divisor=2]
 * Reads one JSON line per request from standard input and writes one JSON
 * line per answer to standard output, flushed at once; logs would go to
 * standard error. The JSON reader below knows just enough JSON for the
 * protocol's lines (objects, arrays, integers, strings without escapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "greedy_core.h"

typedef struct {
    const char *p;
    int ok;
} reader;

static void ws(reader *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' || *r->p == '\n')
        r->p++;
}

static int expect(reader *r, char c)
{
    ws(r);
    if (*r->p != c)
        return r->ok = 0;
    r->p++;
    return 1;
}

/* A JSON integer (digits by hand: strtoll's locale handling would be most of
 * this planner's time on a 32 x 128 record). */
static long long read_int(reader *r)
{
    ws(r);
    const char *p = r->p;
    int negative = *p == '-';
    p += negative;
    if (*p < '0' || *p > '9')
        return r->ok = 0;
    long long v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    r->p = p;
    return negative ? -v : v;
}

/* A string without escapes into out[n]. */
static void read_string(reader *r, char *out, size_t n)
{
    if (!expect(r, '"'))
        return;
    size_t k = 0;
    for (; *r->p && *r->p != '"'; r->p++)
        if (k + 1 < n)
            out[k++] = *r->p;
    out[k] = '\0';
    if (*r->p != '"' || strchr(out, '\\'))
        r->ok = 0;
    else
        r->p++;
}

/* Skips any value: the protocol may add keys this planner does not read.
 * Stops at the ',', '}' or ']' that follows it. */
static void skip_value(reader *r)
{
    int depth = 0;
    for (char c; (c = *r->p) != '\0'; r->p++) {
        if (depth == 0 && (c == ',' || c == '}' || c == ']'))
            return;
        if (c == '[' || c == '{')
            depth++;
        else if (c == ']' || c == '}')
            depth--;
        else if (c == '"')
            for (r->p++; *r->p && *r->p != '"'; r->p++)
                if (*r->p == '\\' && r->p[1])
                    r->p++;
        if (!*r->p)
            break;
    }
    r->ok = 0;
}

/* Calls on_key for each key of an object; on_key reads or skips the value. */
static void read_object(reader *r, void (*on_key)(reader *, const char *, void *), void *ctx)
{
    if (!expect(r, '{'))
        return;
    ws(r);
    if (*r->p == '}') {
        r->p++;
        return;
    }
    do {
        char key[64];
        read_string(r, key, sizeof key);
        if (!r->ok || !expect(r, ':'))
            return;
        on_key(r, key, ctx);
        ws(r);
    } while (r->ok && *r->p == ',' && r->p++);
    expect(r, '}');
}

/* [a,b,...] into out[0..max); returns the count. One tight loop: the counts
 * are nearly all of a request. */
static int read_ints(reader *r, int64_t *out, int max)
{
    if (!expect(r, '['))
        return 0;
    int n = 0;
    ws(r);
    if (*r->p == ']') {
        r->p++;
        return 0;
    }
    for (const char *p = r->p;; n++) {
        const int negative = *p == '-';
        p += negative;
        if (*p < '0' || *p > '9') {
            r->ok = 0;
            return n;
        }
        int64_t v = *p++ - '0';
        while (*p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        if (n < max)
            out[n] = negative ? -v : v;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (*p == ']') {
            r->p = p + 1;
            return n + 1;
        }
        if (*p++ != ',') {
            r->ok = 0;
            return n + 1;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
    }
}

typedef struct {
    int ranks, experts, slots;
    int32_t *home;
    int64_t divisor;
} setup;

static void on_topology(reader *r, const char *key, void *ctx)
{
    setup *s = ctx;
    if (strcmp(key, "ranks") == 0)
        s->ranks = (int)read_int(r);
    else if (strcmp(key, "experts") == 0)
        s->experts = (int)read_int(r);
    else if (strcmp(key, "slots") == 0)
        s->slots = (int)read_int(r);
    else if (strcmp(key, "home") == 0 && s->experts > 0) {
        int64_t *tmp = malloc(sizeof *tmp * (size_t)s->experts);
        s->home = malloc(sizeof *s->home * (size_t)s->experts);
        if (!tmp || !s->home || read_ints(r, tmp, s->experts) != s->experts)
            r->ok = 0;
        for (int e = 0; r->ok && e < s->experts; e++)
            s->home[e] = (int32_t)tmp[e];
        free(tmp);
    } else
        skip_value(r);
}

static void on_options(reader *r, const char *key, void *ctx)
{
    setup *s = ctx;
    char value[64];
    read_string(r, value, sizeof value);
    if (strcmp(key, "divisor") == 0)
        s->divisor = atoll(value);
}

static void on_hello(reader *r, const char *key, void *ctx)
{
    if (strcmp(key, "topology") == 0)
        read_object(r, on_topology, ctx);
    else if (strcmp(key, "options") == 0)
        read_object(r, on_options, ctx);
    else
        skip_value(r);
}

typedef struct {
    const setup *s;
    long long id;
    int64_t *counts;
    int rows;
} request;

static void on_request(reader *r, const char *key, void *ctx)
{
    request *q = ctx;
    if (strcmp(key, "id") == 0) {
        q->id = read_int(r);
    } else if (strcmp(key, "counts") == 0) {
        const int E = q->s->experts;
        if (!expect(r, '['))
            return;
        for (q->rows = 0; r->ok && q->rows < q->s->ranks; q->rows++) {
            if (q->rows > 0 && !expect(r, ','))
                break;
            if (read_ints(r, q->counts + (size_t)q->rows * (size_t)E, E) != E)
                r->ok = 0;
        }
        expect(r, ']');
    } else {
        skip_value(r);
    }
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    setup s = {.divisor = 2};
    /* Requests are tens of kilobytes: read them in large pieces. */
    setvbuf(stdin, NULL, _IOFBF, 1 << 20);
    if (getline(&line, &cap, stdin) < 0)
        return 1;
    reader r = {line, 1};
    read_object(&r, on_hello, &s);
    if (!r.ok || s.ranks < 1 || s.experts < 1 || !s.home || s.divisor < 1) {
        printf("{\"ok\":false,\"error\":\"cannot read the handshake (or --LABEL-divisor is not a positive integer)\"}\n");
        return 1;
    }
    printf("{\"ok\":true,\"name\":\"greedy\"}\n");
    fflush(stdout);
    request q = {.s = &s};
    q.counts = malloc(sizeof *q.counts * (size_t)s.ranks * (size_t)s.experts);
    int64_t *scratch = malloc(sizeof *scratch * (size_t)(s.ranks + s.experts));
    int64_t *alloc = malloc(sizeof *alloc * (size_t)s.ranks);
    if (!q.counts || !scratch || !alloc)
        return 1;
    while (getline(&line, &cap, stdin) > 0) {
        r = (reader){line, 1};
        q.id = -1;
        q.rows = 0;
        read_object(&r, on_request, &q);
        if (!r.ok || q.id < 0 || q.rows != s.ranks) {
            fprintf(stderr, "greedy: cannot read a request\n");
            return 1;
        }
        greedy_result g = greedy_plan(s.ranks, s.experts, s.slots, s.home, q.counts, s.divisor, scratch, alloc);
        printf("{\"id\":%lld,\"replicas\":[", q.id);
        if (g.replicas)
            printf("[%d,%d,0,%lld]", g.expert, g.guest, (long long)g.planned);
        printf("],\"alloc\":[");
        for (int src = 0, first = 1; g.replicas && src < s.ranks; src++)
            if (alloc[src] > 0) {
                printf("%s[%d,%d,%d,0,%lld]", first ? "" : ",", src, g.expert, g.guest, (long long)alloc[src]);
                first = 0;
            }
        printf("]}\n");
        fflush(stdout);
    }
    free(line);
    free(q.counts);
    free(scratch);
    free(alloc);
    free(s.home);
    return 0;
}
