/* JSON Lines parsed on several threads (tsim_reader_set_threads: threads of
 * its own; tsim_reader_share_parsing: the caller's threads, through
 * tsim_reader_help, when they have nothing else to do).
 *
 * The caller's thread reads lines (finding record boundaries, inflating gzip)
 * into a ring of slots; helper threads run the strict fast path on any slot,
 * each into the slot's own buffers. Records leave in file order: the caller
 * waits for the oldest slot (parsing it itself when no helper has taken it),
 * swaps the slot's buffers with the reader's, and everything after that
 * (duplicate check, split, totals, dataset filter, warnings, messages) runs
 * exactly as in the one-thread reader. A line the fast path refuses goes
 * through the cJSON path on the caller's thread, in order, so results, errors
 * and warnings are the same at any thread count.
 *
 * A .jsonl.gz whose members carry their length (taotsim's writers) is
 * inflated by the same threads: the caller's thread reads whole members and
 * the helpers inflate them (gzline.c) before they parse lines, since the
 * lines wait on the text. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* Slots per helper thread: enough that helpers never wait on the reading
 * thread for long, few enough that memory stays flat (a slot holds one line
 * and one record). */
#define PAR_SLOTS_PER_THREAD 16
/* Lines read before the helpers are woken, so a wake-up is not paid per line. */
#define PAR_FILL_BATCH 8

enum { SLOT_FREE = 0, SLOT_PENDING, SLOT_TAKEN, SLOT_PARSED, SLOT_REFUSED, SLOT_END, SLOT_ERROR };

typedef struct {
    int state;
    char *text; /* the line, NUL-terminated */
    size_t len, cap;
    long line;
    tsim_raw_record raw;
    tsim_parse_target t; /* its own counts, tpe and scratch */
    int rc;              /* SLOT_ERROR: the reading error */
    tsim_error err;
} par_slot;

struct tsim_parallel {
    tsim_reader *r;
    tsim_parse_target shape; /* experts, file_ep, rebucket of every slot */
    size_t counts_n;         /* cells of a record buffer */
    par_slot *slots;
    int64_t cap;
    int64_t head; /* the next slot to hand out */
    int64_t tail; /* the next slot to fill */
    int64_t scan; /* no slot before it is pending */
    bool read_done;
    bool stop;
    int sleeping;
    pthread_mutex_t lock;
    pthread_cond_t work; /* slots became pending, or stop */
    pthread_cond_t done; /* a slot was parsed */
    pthread_t *tids;
    int threads, started;
};

static par_slot *slot_at(struct tsim_parallel *p, int64_t seq)
{
    return &p->slots[seq % p->cap];
}

/* Runs the fast path on a taken slot (no lock held); returns its new state,
 * which the caller publishes under the lock. */
static int parse_slot(par_slot *s)
{
    memset(&s->raw, 0, sizeof s->raw);
    s->raw.line = s->line;
    if (!tsim_jsonl_fast(&s->t, s->text, s->len, &s->raw))
        return SLOT_REFUSED;
    if (s->raw.kind == REC_COUNTS && !s->t.rebucket)
        s->raw.total_ok = tsim_counts_total_ok(s->t.counts, (size_t)s->t.file_ep * (size_t)s->t.experts);
    return SLOT_PARSED;
}

/* The oldest pending slot at or after p->scan, under the lock; -1 if none. */
static int64_t take_pending(struct tsim_parallel *p)
{
    if (p->scan < p->head)
        p->scan = p->head; /* older slots were handed out (their places may hold newer lines) */
    while (p->scan < p->tail && slot_at(p, p->scan)->state != SLOT_PENDING)
        p->scan++;
    for (int64_t q = p->scan; q < p->tail; q++) {
        par_slot *s = slot_at(p, q);
        if (s->state == SLOT_PENDING) {
            s->state = SLOT_TAKEN;
            return q;
        }
    }
    return -1;
}

/* Under the lock: a parsed slot's new state; the reading thread may wait for
 * exactly this one. */
static void publish(struct tsim_parallel *p, par_slot *s, int64_t q, int state)
{
    s->state = state;
    if (q == p->head)
        pthread_cond_signal(&p->done);
}

/* Under the lock (dropped while parsing): parses the oldest pending slot;
 * false when none is pending. */
static bool parse_one(struct tsim_parallel *p)
{
    int64_t q = take_pending(p);
    if (q < 0)
        return false;
    par_slot *s = slot_at(p, q);
    pthread_mutex_unlock(&p->lock);
    int state = parse_slot(s);
    pthread_mutex_lock(&p->lock);
    publish(p, s, q, state);
    return true;
}

/* Called by the reading thread when members wait to be inflated. The check
 * for work and the wait in helper_main both hold the lock, so no wake-up is
 * lost. */
static void wake_helpers(void *arg)
{
    struct tsim_parallel *p = arg;
    pthread_mutex_lock(&p->lock);
    if (p->sleeping)
        pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
}

static void *helper_main(void *arg)
{
    struct tsim_parallel *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (tsim_gzline_has_work(&p->r->lines)) {
            pthread_mutex_unlock(&p->lock);
            tsim_gzline_help(&p->r->lines);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (!parse_one(p)) {
            p->sleeping++;
            pthread_cond_wait(&p->work, &p->lock);
            p->sleeping--;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Copies the next content line into a free slot (caller's thread, no lock:
 * no helper looks at a free slot). Returns false once the input ended. */
static bool fill_one(struct tsim_parallel *p, par_slot *s)
{
    tsim_reader *r = p->r;
    char *line;
    size_t len;
    s->rc = tsim_next_content_line(r, &line, &len, &s->err);
    if (s->rc != 1) {
        s->state = s->rc == 0 ? SLOT_END : SLOT_ERROR;
        return false;
    }
    if (len + 1 > s->cap) {
        size_t cap = len + 1 > 2 * s->cap ? len + 1 : 2 * s->cap;
        char *grown = realloc(s->text, cap);
        if (!grown) {
            s->rc = tsim_error_set(&s->err, TSIM_E_INTERNAL, "%s:%ld: out of memory for a line of %zu bytes",
                                   r->path, r->lines.line, len);
            s->state = SLOT_ERROR;
            return false;
        }
        s->text = grown;
        s->cap = cap;
    }
    memcpy(s->text, line, len + 1);
    s->len = len;
    s->line = r->lines.line;
    s->state = SLOT_PENDING;
    return true;
}

/* Reads lines into every free slot, waking helpers every few lines. */
static void fill(struct tsim_parallel *p)
{
    int64_t batch = 0;
    while (!p->read_done && p->tail - p->head < p->cap) {
        par_slot *s = slot_at(p, p->tail);
        if (!fill_one(p, s))
            p->read_done = true;
        batch++;
        pthread_mutex_lock(&p->lock);
        p->tail++;
        if (p->sleeping && (batch >= PAR_FILL_BATCH || p->read_done || p->tail - p->head == p->cap)) {
            pthread_cond_broadcast(&p->work);
            batch = 0;
        }
        pthread_mutex_unlock(&p->lock);
    }
}

/* Swaps a slot's buffers with the reader's: the record is then the reader's
 * to finish and return, and the slot reuses the old ones. */
static void swap_buffers(tsim_reader *r, par_slot *s)
{
    int64_t *counts = r->rec.counts, *tpe = r->tpe, *scratch = r->scratch;
    r->rec.counts = s->t.counts;
    r->tpe = s->t.tpe;
    r->scratch = s->t.scratch;
    s->t.counts = counts;
    s->t.tpe = tpe;
    s->t.scratch = scratch;
}

static int par_next_raw(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    struct tsim_parallel *p = r->par;
    fill(p);
    par_slot *s = slot_at(p, p->head);
    pthread_mutex_lock(&p->lock);
    if (s->state == SLOT_PENDING) {
        /* no helper took it yet: parse it here rather than wait */
        s->state = SLOT_TAKEN;
        pthread_mutex_unlock(&p->lock);
        int state = parse_slot(s);
        pthread_mutex_lock(&p->lock);
        s->state = state;
    }
    while (s->state == SLOT_TAKEN)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    int state = s->state;
    if (state == SLOT_END || state == SLOT_ERROR) {
        /* stays in place: the reader remembers the end or the error itself */
        if (state == SLOT_ERROR)
            *err = s->err;
        return s->rc;
    }
    swap_buffers(r, s);
    int rc = 1;
    if (state == SLOT_PARSED)
        *raw = s->raw;
    else
        rc = tsim_jsonl_slow(r, s->text, s->len, s->line, raw, err);
    pthread_mutex_lock(&p->lock);
    s->state = SLOT_FREE;
    p->head++;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void tsim_parallel_stop(tsim_reader *r)
{
    struct tsim_parallel *p = r->par;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->tids[i], NULL);
    tsim_gzline_members_stop(&r->lines); /* its wake-up points at p */
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    for (int64_t i = 0; p->slots && i < p->cap; i++) {
        free(p->slots[i].text);
        free(p->slots[i].t.counts);
        free(p->slots[i].t.tpe);
        free(p->slots[i].t.scratch);
    }
    free(p->slots);
    free(p->tids);
    free(p);
    r->par = NULL;
}

static int alloc_slots(struct tsim_parallel *p, tsim_error *err)
{
    const size_t E = (size_t)p->shape.experts;
    p->slots = calloc((size_t)p->cap, sizeof *p->slots);
    if (!p->slots)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the parsing threads");
    for (int64_t i = 0; i < p->cap; i++) {
        par_slot *s = &p->slots[i];
        s->t = p->shape;
        s->t.counts = calloc(p->counts_n, sizeof *s->t.counts);
        s->t.tpe = calloc(E, sizeof *s->t.tpe);
        s->t.scratch = calloc(E, sizeof *s->t.scratch);
        if (!s->t.counts || !s->t.tpe || !s->t.scratch)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the parsing threads");
    }
    return TSIM_OK;
}

bool tsim_reader_help(tsim_reader *r)
{
    struct tsim_parallel *p = r->par;
    if (!p)
        return false;
    if (tsim_gzline_help(&r->lines))
        return true;
    pthread_mutex_lock(&p->lock);
    bool parsed = !p->stop && parse_one(p);
    pthread_mutex_unlock(&p->lock);
    return parsed;
}

int tsim_parallel_start(tsim_reader *r, int threads, int sharers, tsim_error *err)
{
    struct tsim_parallel *p = calloc(1, sizeof *p);
    if (!p)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the parsing threads");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    r->par = p;
    p->r = r;
    p->shape = tsim_reader_parse_target(r);
    p->counts_n = (size_t)r->rec.ranks * (size_t)r->rec.experts;
    p->threads = threads;
    p->cap = (int64_t)(threads + sharers + 1) * PAR_SLOTS_PER_THREAD;
    p->tids = calloc((size_t)threads, sizeof *p->tids);
    int rc = p->tids ? alloc_slots(p, err)
                     : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the parsing threads");
    /* A member slot per thread that inflates, and one read ahead. */
    if (!rc && r->fmt == TSIM_FMT_JSONL_GZ)
        rc = tsim_gzline_members_start(&r->lines, threads + sharers + 2, wake_helpers, p, err);
    for (int i = 0; !rc && i < threads; i++) {
        if (pthread_create(&p->tids[i], NULL, helper_main, p) != 0)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "cannot start a parsing thread");
        else
            p->started++;
    }
    if (rc) {
        tsim_parallel_stop(r);
        return rc;
    }
    r->next_raw = par_next_raw;
    return TSIM_OK;
}
