/* The exec planner's answers (exec_planner.h): one line per record, read in
 * place into a plan. */
#include "exec_planner.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"
#include "plan.h"

/* A short, printable excerpt of a bad line for messages. */
void exec_excerpt(const char *line, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 5 < n; i++) {
        unsigned char c = (unsigned char)line[i];
        out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (len > 0 && k < len && k + 4 < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
}

/* ---- reading answers ---------------------------------------------------------
 * Answers are read in place, without allocating (one per record): the line
 * has passed the strict JSON check first, so the reader below only needs to
 * know the shapes the protocol expects. Not cJSON (issue 21): an answer at
 * R = 32, E = 128, K = 2 (32 KB) took 4.0 ms to parse and walk with cJSON
 * against 0.4-0.5 ms for this scan, about 8x (5x counting the strict check
 * both need). */

typedef struct {
    const char *p, *end;
} scan;

static void sc_ws(scan *s)
{
    while (s->p < s->end && tsim_json_is_ws(*s->p))
        s->p++;
}

static bool sc_char(scan *s, char c)
{
    sc_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string's raw contents (escapes kept) and the position after it. */
static bool sc_string(scan *s, const char **text, size_t *len)
{
    if (!sc_char(s, '"'))
        return false;
    const char *start = s->p;
    while (s->p < s->end && *s->p != '"')
        s->p += *s->p == '\\' ? 2 : 1;
    *text = start;
    *len = (size_t)(s->p - start);
    s->p++;
    return true;
}

/* Skips one (valid) value. */
static void sc_skip(scan *s)
{
    const char *text;
    size_t len;
    sc_ws(s);
    if (s->p >= s->end)
        return;
    if (*s->p == '"') {
        sc_string(s, &text, &len);
        return;
    }
    if (*s->p != '[' && *s->p != '{') { /* a number, true, false or null */
        while (s->p < s->end && !strchr(",]}", *s->p) && !tsim_json_is_ws(*s->p))
            s->p++;
        return;
    }
    for (int depth = 0; s->p < s->end;) {
        const char c = *s->p;
        if (c == '"') {
            sc_string(s, &text, &len);
            continue;
        }
        s->p++;
        if (c == '[' || c == '{')
            depth++;
        else if ((c == ']' || c == '}') && --depth == 0)
            return;
    }
}

/* An integer (5, or an integral 5.0 / 5e0), or false. */
static bool sc_int(scan *s, int64_t *out)
{
    sc_ws(s);
    const char *p = s->p;
    bool negative = p < s->end && *p == '-';
    p += negative;
    if (p >= s->end || *p < '0' || *p > '9')
        return false;
    uint64_t v = 0;
    const char *digits = p;
    for (; p < s->end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (p < s->end && (*p == '.' || *p == 'e' || *p == 'E')) {
        char *stop;
        double d = strtod(s->p, &stop);
        if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d))
            return false;
        s->p = stop;
        *out = (int64_t)d;
        return true;
    }
    if (p - digits > 18)
        return false; /* past 2^53 anyway, and it could overflow */
    s->p = p;
    *out = negative ? -(int64_t)v : (int64_t)v;
    return true;
}

/* One "got" row of `width` integers. */
static bool sc_row(scan *s, int width, int64_t *v)
{
    if (!sc_char(s, '['))
        return false;
    for (int k = 0; k < width; k++)
        if ((k > 0 && !sc_char(s, ',')) || !sc_int(s, &v[k]))
            return false;
    return sc_char(s, ']');
}

/* Walks an array: before each element *more is set; false at a bad shape. */
static bool sc_next(scan *s, bool first, bool *more)
{
    if (first && !sc_char(s, '['))
        return false;
    if (sc_char(s, ']')) {
        *more = false;
        return true;
    }
    *more = true;
    return first || sc_char(s, ',');
}

/* The planner's "error" text, JSON escapes undone (\uXXXX shown as '?'). */
static void unescape(const char *t, size_t n, char *out, size_t on)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < on; i++) {
        char c = t[i];
        if (c == '\\' && i + 1 < n) {
            c = t[++i];
            c = c == 'n' ? ' ' : c == 't' ? ' ' : c == 'r' ? ' ' : c == 'b' || c == 'f' ? ' ' : c;
            if (c == 'u') {
                i += 4;
                c = '?';
            }
        }
        out[k++] = c;
    }
    out[k] = '\0';
}

/* Where an answer's fields are. */
typedef struct {
    bool has_id;
    int64_t id;
    bool has_error, error_string;
    const char *error, *replicas, *alloc, *placement; /* NULL: absent */
    size_t error_len;
} answer_fields;

static bool answer_scan(const char *line, size_t len, answer_fields *f)
{
    memset(f, 0, sizeof *f);
    scan s = {line, line + len};
    if (!sc_char(&s, '{'))
        return false;
    if (sc_char(&s, '}'))
        return true;
    do {
        const char *key;
        size_t klen;
        if (!sc_string(&s, &key, &klen) || !sc_char(&s, ':'))
            return false;
        sc_ws(&s);
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(key, k, klen) == 0)
        if (KEY("id")) {
            f->has_id = sc_int(&s, &f->id);
            if (!f->has_id)
                sc_skip(&s);
        } else if (KEY("error")) {
            /* any "error" fails the record; a string is the planner's message */
            f->has_error = true;
            f->error_string = *s.p == '"';
            if (f->error_string) {
                sc_string(&s, &f->error, &f->error_len);
            } else {
                f->error = s.p;
                sc_skip(&s);
                f->error_len = (size_t)(s.p - f->error);
            }
        } else {
            if (KEY("replicas"))
                f->replicas = s.p;
            else if (KEY("alloc"))
                f->alloc = s.p;
            else if (KEY("placement"))
                f->placement = s.p;
            sc_skip(&s);
        }
#undef KEY
    } while (sc_char(&s, ','));
    return sc_char(&s, '}');
}

/* Turns an answer's replicas, alloc and placement into plan. The evaluator
 * checks the plan afterwards; this checks only what reading it needs. */
static int read_plan(exec_state *x, const answer_fields *f, const char *end, tsim_plan *plan, char *why, size_t wn)
{
    const int R = x->R, E = x->E, S = x->slots_per_rank;
    tsim_plan_reset(plan);
    if (!f->replicas || !f->alloc || *f->replicas != '[' || *f->alloc != '[') {
        snprintf(why, wn, "the answer needs \"replicas\" and \"alloc\" arrays");
        return TSIM_E_INPUT;
    }
    bool more = false;
    if (f->placement && *f->placement != 'n') { /* null: no placement */
        int32_t *home = tsim_plan_placement(plan, E);
        if (!home) {
            snprintf(why, wn, "out of memory");
            return TSIM_E_INTERNAL;
        }
        scan s = {f->placement, end};
        int e = 0;
        for (bool first = true; sc_next(&s, first, &more) && more; first = false, e++) {
            int64_t v;
            if (e >= E || !sc_int(&s, &v) || v < INT32_MIN || v > INT32_MAX)
                break;
            home[e] = (int32_t)v;
        }
        if (more || e != E) {
            snprintf(why, wn, "\"placement\" must list one rank (an integer) per expert (%d)", E);
            return TSIM_E_INPUT;
        }
    }
    int rc = TSIM_OK, i = 0;
    scan s = {f->replicas, end};
    for (bool first = true; rc == TSIM_OK; first = false, i++) {
        if (!sc_next(&s, first, &more)) {
            snprintf(why, wn, "\"replicas\" is not an array of [expert, guest, slot, planned] rows");
            rc = TSIM_E_INPUT;
            break;
        }
        if (!more)
            break;
        int64_t v[4];
        if (i >= R * x->K) {
            snprintf(why, wn, "more replicas than the R * K = %d guest slots", R * x->K);
            rc = TSIM_E_INPUT;
        } else if (!sc_row(&s, 4, v)) {
            snprintf(why, wn, "replicas[%d] is not [expert, guest, slot, planned] (4 integers)", i);
            rc = TSIM_E_INPUT;
        } else if (v[0] < 0 || v[0] >= E) {
            snprintf(why, wn, "replicas[%d] names expert %lld, not in 0..%d", i, (long long)v[0], E - 1);
            rc = TSIM_E_INPUT;
        } else if (v[1] < 0 || v[1] >= R) {
            snprintf(why, wn, "replicas[%d] names guest rank %lld, not in 0..%d", i, (long long)v[1], R - 1);
            rc = TSIM_E_INPUT;
        } else if (v[2] < 0 || v[2] >= S) {
            snprintf(why, wn, "replicas[%d] uses slot %lld of rank %lld, not in 0..%d", i, (long long)v[2],
                     (long long)v[1], (tsim_plan_has_placement(plan) ? S : x->K) - 1);
            rc = TSIM_E_INPUT;
        } else {
            int32_t *owner = &x->slot_table[v[1] * S + v[2]];
            if (*owner >= 0) {
                snprintf(why, wn, "replicas[%d] and replicas[%d] both use slot %lld of rank %lld", *owner, i,
                         (long long)v[2], (long long)v[1]);
                rc = TSIM_E_INPUT;
            } else if (tsim_plan_add(plan, (int)v[0], (int)v[1], (int)v[2], v[3]) < 0) {
                snprintf(why, wn, "out of memory");
                rc = TSIM_E_INTERNAL;
            } else {
                *owner = i;
            }
        }
    }
    s = (scan){f->alloc, end};
    i = 0;
    for (bool first = true; rc == TSIM_OK; first = false, i++) {
        if (!sc_next(&s, first, &more)) {
            snprintf(why, wn, "\"alloc\" is not an array of [source, expert, guest, slot, tokens] rows");
            rc = TSIM_E_INPUT;
            break;
        }
        if (!more)
            break;
        int64_t v[5];
        if (!sc_row(&s, 5, v)) {
            snprintf(why, wn, "alloc[%d] is not [source, expert, guest, slot, tokens] (5 integers)", i);
            rc = TSIM_E_INPUT;
            break;
        }
        int32_t replica = v[2] >= 0 && v[2] < R && v[3] >= 0 && v[3] < S ? x->slot_table[v[2] * S + v[3]] : -1;
        if (v[0] < 0 || v[0] >= R) {
            snprintf(why, wn, "alloc[%d] names source rank %lld, not in 0..%d", i, (long long)v[0], R - 1);
            rc = TSIM_E_INPUT;
        } else if (replica < 0 || plan->replicas[replica].expert != v[1]) {
            snprintf(why, wn, "alloc[%d] sends tokens of expert %lld to slot %lld of rank %lld, where \"replicas\" "
                     "lists no replica of it", i, (long long)v[1], (long long)v[3], (long long)v[2]);
            rc = TSIM_E_INPUT;
        } else {
            int64_t *cell = &tsim_plan_alloc_row(plan, replica)[v[0]];
            if (*cell != 0) {
                snprintf(why, wn, "alloc[%d] repeats source %lld for expert %lld on rank %lld slot %lld", i,
                         (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
                rc = TSIM_E_INPUT;
            }
            *cell = v[4];
        }
    }
    /* the table is empty again for the next answer */
    for (int k = 0; k < plan->count; k++)
        x->slot_table[plan->replicas[k].guest * S + plan->replicas[k].slot] = -1;
    return rc;
}

/* One answer line of a batch whose ids are base..base+n-1; sent of them
 * went out. Sets *which to the batch position it answers (or the one it is
 * blamed on). */
int exec_read_answer(exec_state *x, const char *line, size_t len, uint64_t base, int sent, tsim_plan *plans,
                     int *which, char *why, size_t wn)
{
    tsim_json_fault fault = {0};
    char ex[96];
    answer_fields f;
    if (tsim_json_check_all(line, len, &fault) == (size_t)-1) {
        exec_excerpt(line, len, ex, sizeof ex);
        snprintf(why, wn, "the answer is not JSON (%s at byte %zu): '%s'", fault.what[0] ? fault.what : "malformed",
                 fault.at, ex);
        return TSIM_E_INPUT;
    }
    if (!answer_scan(line, len, &f)) {
        exec_excerpt(line, len, ex, sizeof ex);
        snprintf(why, wn, "the answer is not a JSON object: '%s'", ex);
        return TSIM_E_INPUT;
    }
    const int64_t id = f.id;
    if (!f.has_id || id < 0) {
        snprintf(why, wn, "the answer has no integer \"id\"");
    } else if ((uint64_t)id < base) {
        snprintf(why, wn, "a second answer for id %lld (answered already)", (long long)id);
    } else if ((uint64_t)id >= base + (uint64_t)sent) {
        snprintf(why, wn, "the answer has id %lld, but no record with that id was sent (in flight: %" PRIu64
                 "..%" PRIu64 ")", (long long)id, base, base + (uint64_t)sent - 1);
    } else if (x->answered[(uint64_t)id - base]) {
        *which = (int)((uint64_t)id - base);
        snprintf(why, wn, "a second answer for id %lld", (long long)id);
    } else {
        *which = (int)((uint64_t)id - base);
        if (f.has_error && f.error_string) {
            char text[512];
            unescape(f.error, f.error_len, text, sizeof text);
            snprintf(why, wn, "the planner answered with an error: %s", text);
            return TSIM_E_INPUT;
        }
        if (f.has_error) {
            exec_excerpt(f.error, f.error_len, ex, sizeof ex);
            snprintf(why, wn, "the planner answered with an \"error\" that is not a string: %s (an answer with "
                     "\"error\" fails its record; a plan has no \"error\" key)", ex);
            return TSIM_E_INPUT;
        }
        return read_plan(x, &f, line + len, &plans[*which], why, wn);
    }
    return TSIM_E_INPUT;
}
