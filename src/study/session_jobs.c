/* replay -j N: a session's records planned by several threads, results
 * committed in record order, so every series, note count and hook call is
 * what the one-thread session makes (session.h, tsim_session_jobs_*).
 *
 * Work is one (record, planner) task. A planner without memory across records
 * (no `prime`, not external) may plan any record on any thread: each thread
 * has its own instance. A planner with memory per layer (LPLB's prev history,
 * EPLB's window) gets one instance per layer: that layer's tasks run one at a
 * time, in record order, on whichever thread is free. An external planner is
 * one chain over all records (its process may remember anything). The main
 * thread reads the trace, fills a ring of slots, commits finished slots in
 * order and plans too whenever the ring is full. */
#include "session.h"
#include "search.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "merge.h"

/* Records in flight per thread: enough for plan_batch windows and to keep
 * every thread busy, small enough that memory stays flat. */
#define JOBS_WINDOW_PER_WORKER 32
/* An idle thread is woken when this many tasks wait, not for every record:
 * when planning outpaces reading, a wake-up per record costs more than the
 * task (a futex call and a context switch each way). */
#define JOBS_WAKE_TASKS 16

enum { TASK_IDLE = 0, TASK_PENDING, TASK_TAKEN, TASK_DONE };
enum { KIND_FREE = 0, KIND_LAYER, KIND_SERIAL };

/* A sequence of tasks that must run in record order on one planner instance:
 * one layer of a planner with per-layer memory, or all of an external one. */
typedef struct {
    int64_t layer;
    tsim_planner inst;
    bool started, busy;
    tsim_previous_placements previous; /* this chain's own, for rehomed_* */
} jobs_chain;

typedef struct {
    jobs_chain **chains; /* sorted by layer; pointers stay put when the array grows */
    int count, cap;
} chain_list;

typedef struct {
    tsim_record rec;
    int64_t seq;          /* the record's number among those handed in */
    int pending;          /* its tasks still TASK_PENDING */
    uint8_t *state;       /* [P] TASK_* */
    jobs_chain **chain;   /* [P] the chain of a chained task */
    tsim_metrics *m;      /* [P] */
    uint32_t *notes;      /* [P] */
    bool *placed;         /* [P] */
    tsim_plan *plans;     /* [P] kept for the hook */
    int64_t *load_after;  /* [P * R] the evaluator's loads, for the hook */
    int *rc;              /* [P] */
    tsim_error *err;      /* [P] */
} jobs_slot;

typedef struct {
    struct tsim_session_jobs *j;
    int id;
    pthread_t tid;
    bool running;
    tsim_planner *free_inst;             /* [P] free planners' instances (worker 0: the session's) */
    tsim_previous_placements *previous;  /* [P] free planners' (placements are refused, see run_tasks) */
    tsim_evaluator ev;
    bool ev_ready;
    int64_t *home_tokens;                /* [R] */
    const tsim_record **batch_recs;      /* [window] */
    tsim_plan **batch_plans;             /* [window] */
    int *batch_slots;                    /* [window] */
    tsim_plan *batch_scratch;            /* [window] plan_batch's side-by-side plans */
} jobs_worker;

struct tsim_session_jobs {
    tsim_session *s;
    int P, R, E, workers, cap, batch_max;
    int *kind;            /* [P] KIND_* */
    bool *session_inst_used; /* [P] a chain plans with the session's instance */
    chain_list *chains;   /* [P] */
    jobs_chain **serial;  /* [P] the one chain of a serial planner */
    jobs_slot *slots;     /* [cap] ring */
    int64_t head, tail;   /* committed < head <= filled < tail */
    int64_t given;        /* records handed in (the next one's sequence number) */
    int64_t scan_from;    /* no slot before it has a pending task */
    bool finishing, stop, failed;
    bool committing;      /* a thread is committing slots */
    int commit_rc;        /* a commit failed (the hook, memory) */
    tsim_error commit_err;
    int64_t pending;      /* tasks PENDING */
    int sleeping;         /* threads waiting for work */
    pthread_mutex_t lock;
    pthread_cond_t work;  /* tasks were added, or it is time to stop */
    pthread_cond_t done;  /* a task finished */
    jobs_worker *w;       /* [workers] */
    bool lock_ready;
    bool (*idle)(void *); /* other work for an idle thread (tsim_session_jobs_set_idle) */
    void *idle_ctx;
};

/* ---- chains ------------------------------------------------------------------ */

static int64_t chain_find_key(const void *ctx, int i)
{
    return ((const chain_list *)ctx)->chains[i]->layer;
}

static int chain_find(const chain_list *cl, int64_t layer)
{
    return tsim_search_sorted(cl->count, layer, chain_find_key, cl);
}

static void chain_free(jobs_chain *c)
{
    if (!c)
        return;
    if (c->started)
        tsim_planner_stop(&c->inst);
    free(c->previous.layers);
    free(c->previous.placements);
    free(c);
}

static jobs_chain *chain_new(tsim_session_jobs *j, int p, int64_t layer, tsim_error *err)
{
    jobs_chain *c = calloc(1, sizeof *c);
    if (!c) {
        tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
        return NULL;
    }
    c->layer = layer;
    c->inst = j->s->planners[p];
    if (!j->session_inst_used[p]) {
        /* the session's own instance, fresh from init, serves the first chain
         * (an external planner's process is not started twice) */
        j->session_inst_used[p] = true;
        return c;
    }
    c->inst.state = NULL;
    if (tsim_planner_start(&c->inst, &j->s->ptopo[p], err)) {
        free(c);
        return NULL;
    }
    c->started = true;
    return c;
}

/* The chain of planner p for a record of this layer, created on first sight
 * (main thread, under the lock's protection of the list). */
static jobs_chain *chain_get(tsim_session_jobs *j, int p, int64_t layer, tsim_error *err)
{
    if (j->kind[p] == KIND_SERIAL) {
        if (!j->serial[p] && !(j->serial[p] = chain_new(j, p, 0, err)))
            return NULL;
        return j->serial[p];
    }
    chain_list *cl = &j->chains[p];
    int at = chain_find(cl, layer);
    if (at >= 0)
        return cl->chains[at];
    at = -at - 1;
    if (cl->count == cl->cap) {
        int cap = cl->cap ? 2 * cl->cap : 8;
        jobs_chain **grown = realloc(cl->chains, sizeof *grown * (size_t)cap);
        if (!grown) {
            tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
            return NULL;
        }
        cl->chains = grown;
        cl->cap = cap;
    }
    jobs_chain *c = chain_new(j, p, layer, err);
    if (!c)
        return NULL;
    memmove(cl->chains + at + 1, cl->chains + at, sizeof *cl->chains * (size_t)(cl->count - at));
    cl->chains[at] = c;
    cl->count++;
    return c;
}

/* ---- one task's evaluation (as session.c scores a plan) ------------------------ */

static int score_task(tsim_session_jobs *j, jobs_worker *w, jobs_slot *sl, int p, tsim_previous_placements *pp,
                      double plan_ns, tsim_error *err)
{
    tsim_session *s = j->s;
    const tsim_planner *planner = &s->planners[p];
    tsim_plan *plan = &sl->plans[p];
    const int32_t *previous = tsim_previous_placement(pp, j->E, sl->rec.layer);
    tsim_metrics *m = &sl->m[p];
    w->ev.topo = &s->ptopo[p]; /* checked against its own K */
    w->ev.capacity_factor = s->capacity_factor;
    int rc = tsim_evaluate_placed(&w->ev, &sl->rec, plan, previous, s->lambda_eval, planner->label, m, err);
    if (rc) {
        if (planner->desc->external)
            err->code = rc = TSIM_E_INPUT;
        return rc;
    }
    sl->placed[p] = tsim_plan_has_placement(plan);
    if (sl->placed[p] && j->kind[p] == KIND_FREE)
        /* its previous placement per layer would depend on which thread
         * planned the layer's previous record */
        return tsim_error_set(err, TSIM_E_INTERNAL,
                              "planner '%s' re-homes experts but declares itself stateless: "
                              "it cannot run with -j above 1",
                              planner->label);
    if ((rc = tsim_previous_placement_update(pp, j->E, sl->rec.layer, plan, previous, s->topo.home, err)))
        return rc;
    m->v[TSIM_M_PLAN_NS] = plan_ns;
    if (s->step_model_on) {
        for (int r = 0; r < j->R; r++)
            w->home_tokens[r] = w->ev.load_after[r] - w->ev.guest_tokens[r];
        double step = tsim_step_time_ms(&s->step_model, j->R, w->home_tokens, w->ev.guest_tokens, w->ev.guest_intra,
                                        w->ev.guest_inter);
        double base = tsim_step_time_static_ms(&s->step_model, j->R, w->ev.load_before);
        m->v[TSIM_M_STEP_MS] = step;
        m->v[TSIM_M_SPEEDUP] = step > 0 ? base / step : 1.0;
    }
    sl->notes[p] = plan->notes;
    if (s->hook)
        memcpy(sl->load_after + (size_t)p * (size_t)j->R, w->ev.load_after, sizeof *sl->load_after * (size_t)j->R);
    return TSIM_OK;
}

/* ---- picking and running tasks --------------------------------------------------- */

static jobs_slot *slot_at(tsim_session_jobs *j, int64_t seq)
{
    return &j->slots[seq % j->cap];
}

/* Under the lock: the oldest task worker w may run, and up to batch_max more
 * of the same planner (and chain) for plan_batch, all marked TAKEN. Returns
 * the number taken; *planner is theirs. */
static int take_tasks(tsim_session_jobs *j, jobs_worker *w, int *planner)
{
    if (j->scan_from < j->head)
        j->scan_from = j->head;
    while (j->scan_from < j->tail && slot_at(j, j->scan_from)->pending == 0)
        j->scan_from++;
    for (int64_t q = j->scan_from; q < j->tail; q++) {
        jobs_slot *sl = slot_at(j, q);
        if (sl->pending == 0)
            continue;
        for (int p = 0; p < j->P; p++) {
            if (sl->state[p] != TASK_PENDING)
                continue;
            jobs_chain *c = sl->chain[p];
            if (c && c->busy)
                continue;
            const tsim_planner_desc *d = j->s->planners[p].desc;
            int want = d->plan_batch ? j->batch_max : 1;
            /* keep the other threads fed: never more than a fair share */
            if (want > 1 && j->workers > 1) {
                int64_t share = (j->tail - q) / j->workers;
                if (share < want)
                    want = share < 1 ? 1 : (int)share;
            }
            int n = 0;
            for (int64_t r = q; r < j->tail && n < want; r++) {
                jobs_slot *o = slot_at(j, r);
                if (o->state[p] != TASK_PENDING || o->chain[p] != c)
                    continue;
                o->state[p] = TASK_TAKEN;
                o->pending--;
                w->batch_slots[n++] = (int)(r % j->cap);
            }
            if (c)
                c->busy = true;
            j->pending -= n;
            *planner = p;
            return n;
        }
    }
    return 0;
}

/* Outside the lock: plans and scores the taken tasks. */
static void run_tasks(tsim_session_jobs *j, jobs_worker *w, int p, int n)
{
    tsim_session *s = j->s;
    jobs_slot *first = &j->slots[w->batch_slots[0]];
    jobs_chain *c = first->chain[p];
    tsim_planner *inst = c ? &c->inst : &w->free_inst[p];
    tsim_previous_placements *pp = c ? &c->previous : &w->previous[p];
    for (int k = 0; k < n; k++) {
        jobs_slot *sl = &j->slots[w->batch_slots[k]];
        tsim_plan_reset(&sl->plans[p]);
        w->batch_recs[k] = &sl->rec;
        w->batch_plans[k] = &sl->plans[p];
    }
    const bool timing = s->timing;
    if (inst->desc->plan_batch && n > 1) {
        /* plan_batch takes its plans side by side: the slots' plans go
         * through the worker's array (the structs only; the buffers stay the
         * slots', and come back grown if a planner grew them). */
        tsim_plan *plans = w->batch_scratch;
        tsim_error err = {0};
        for (int k = 0; k < n; k++)
            plans[k] = *w->batch_plans[k];
        int64_t t0 = timing ? tsim_now_ns() : 0;
        int rc = inst->desc->plan_batch(inst->state, w->batch_recs, n, plans, &err);
        int64_t t1 = timing ? tsim_now_ns() : 0;
        for (int k = 0; k < n; k++)
            *w->batch_plans[k] = plans[k];
        if (rc) {
            char msg[TSIM_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err.msg);
            snprintf(err.msg, sizeof err.msg, "planner '%s', %s", s->planners[p].label, msg);
        } else {
            double ns = (double)(t1 - t0) / n;
            for (int k = 0; k < n; k++) {
                jobs_slot *sl = &j->slots[w->batch_slots[k]];
                sl->rc[p] = score_task(j, w, sl, p, pp, ns, &sl->err[p]);
            }
        }
        if (rc)
            for (int k = 0; k < n; k++) {
                jobs_slot *sl = &j->slots[w->batch_slots[k]];
                sl->rc[p] = rc;
                sl->err[p] = err;
            }
        return;
    }
    for (int k = 0; k < n; k++) {
        jobs_slot *sl = &j->slots[w->batch_slots[k]];
        tsim_error *err = &sl->err[p];
        int64_t t0 = timing ? tsim_now_ns() : 0;
        int rc = inst->desc->plan(inst->state, &sl->rec, &sl->plans[p], err);
        int64_t t1 = timing ? tsim_now_ns() : 0;
        if (rc)
            tsim_error_prefix(err, "planner '%s', record %lld", s->planners[p].label, (long long)sl->rec.index);
        else
            rc = score_task(j, w, sl, p, pp, (double)(t1 - t0), err);
        sl->rc[p] = rc;
    }
}

/* Under the lock: marks the tasks done. */
static void finish_tasks(tsim_session_jobs *j, jobs_worker *w, int p, int n)
{
    jobs_slot *first = &j->slots[w->batch_slots[0]];
    if (first->chain[p])
        first->chain[p]->busy = false;
    for (int k = 0; k < n; k++) {
        jobs_slot *sl = &j->slots[w->batch_slots[k]];
        sl->state[p] = TASK_DONE;
        if (sl->rc[p])
            j->failed = true;
    }
    pthread_cond_broadcast(&j->done);
    if (first->chain[p] && j->pending > 0)
        pthread_cond_broadcast(&j->work); /* the chain's next task may be waiting */
}

static int commit_ready(tsim_session_jobs *j, tsim_error *err);

static void *worker_main(void *arg)
{
    jobs_worker *w = arg;
    tsim_session_jobs *j = w->j;
    pthread_mutex_lock(&j->lock);
    for (;;) {
        if (j->stop)
            break;
        int p, n = take_tasks(j, w, &p);
        if (n == 0 && j->idle) {
            bool (*idle)(void *) = j->idle;
            void *idle_ctx = j->idle_ctx;
            pthread_mutex_unlock(&j->lock);
            bool helped = idle(idle_ctx);
            pthread_mutex_lock(&j->lock);
            if (helped)
                continue;
            /* tasks added (or stop set) while the lock was down woke nobody:
             * this thread was not counted as sleeping, so look again */
            if (j->stop)
                break;
            n = take_tasks(j, w, &p);
        }
        if (n == 0) {
            j->sleeping++;
            pthread_cond_wait(&j->work, &j->lock);
            j->sleeping--;
            continue;
        }
        pthread_mutex_unlock(&j->lock);
        run_tasks(j, w, p, n);
        pthread_mutex_lock(&j->lock);
        finish_tasks(j, w, p, n);
        tsim_error ignored; /* a failed commit sticks; the main thread reports it */
        commit_ready(j, &ignored);
    }
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

/* ---- committing slots in record order (main thread) ------------------------------- */

static bool slot_done(const tsim_session_jobs *j, const jobs_slot *sl)
{
    for (int p = 0; p < j->P; p++)
        if (sl->state[p] == TASK_PENDING || sl->state[p] == TASK_TAKEN)
            return false;
    return true;
}

static int commit_slot(tsim_session_jobs *j, jobs_slot *sl, tsim_error *err)
{
    tsim_session *s = j->s;
    for (int p = 0; p < j->P; p++)
        if (sl->state[p] == TASK_DONE && sl->rc[p]) {
            *err = sl->err[p];
            return sl->rc[p];
        }
    int rc = tsim_session_commit_begin(s, &sl->rec, err);
    if (rc)
        return rc;
    for (int p = 0; p < j->P && rc == TSIM_OK; p++) {
        if (sl->state[p] != TASK_DONE)
            continue;
        if (s->hook)
            memcpy(s->ev.load_after, sl->load_after + (size_t)p * (size_t)j->R, sizeof *s->ev.load_after * (size_t)j->R);
        rc = tsim_session_commit(s, p, sl->seq, &sl->rec, &sl->plans[p], &sl->m[p], sl->notes[p], sl->placed[p], err);
    }
    return rc;
}

/* Commits the finished slots at the head, unless another thread is at it
 * (one committer at a time keeps record order; whichever thread finds work
 * there does it, so the reading thread is not the only one pushing series).
 * The lock is held on entry and exit and dropped while committing. A failed
 * commit sticks: every later call returns it. */
static int commit_ready(tsim_session_jobs *j, tsim_error *err)
{
    if (j->commit_rc) {
        *err = j->commit_err;
        return j->commit_rc;
    }
    if (j->committing)
        return TSIM_OK;
    int64_t ready = j->head;
    while (ready < j->tail && slot_done(j, slot_at(j, ready)))
        ready++;
    if (ready == j->head)
        return TSIM_OK;
    const int64_t from = j->head;
    j->committing = true;
    pthread_mutex_unlock(&j->lock);
    int rc = TSIM_OK;
    tsim_error cerr = {0};
    for (int64_t q = from; q < ready && rc == TSIM_OK; q++)
        rc = commit_slot(j, slot_at(j, q), &cerr);
    pthread_mutex_lock(&j->lock);
    j->committing = false;
    if (rc) {
        j->commit_rc = rc;
        j->commit_err = cerr;
        j->failed = true;
        *err = cerr;
    } else {
        for (int64_t q = from; q < ready; q++)
            memset(slot_at(j, q)->state, TASK_IDLE, (size_t)j->P);
        j->head = ready;
    }
    pthread_cond_broadcast(&j->done); /* room in the window, or the failure */
    return rc;
}

/* Main thread, lock held: commits what it can, else plans, else waits. One
 * step; returns after progress or a wake-up. */
static int main_step(tsim_session_jobs *j, tsim_error *err)
{
    int64_t before = j->head;
    int rc = commit_ready(j, err);
    if (rc || j->head != before)
        return rc;
    jobs_worker *w = &j->w[0];
    int p, n = take_tasks(j, w, &p);
    if (n > 0) {
        pthread_mutex_unlock(&j->lock);
        run_tasks(j, w, p, n);
        pthread_mutex_lock(&j->lock);
        finish_tasks(j, w, p, n);
        return TSIM_OK;
    }
    /* before the main thread sleeps, the others get whatever waits */
    if (j->sleeping && j->pending > 0)
        pthread_cond_broadcast(&j->work);
    pthread_cond_wait(&j->done, &j->lock);
    return TSIM_OK;
}

/* ---- the public part ------------------------------------------------------------- */

static int worker_init(tsim_session_jobs *j, jobs_worker *w, int id, tsim_error *err)
{
    tsim_session *s = j->s;
    w->j = j;
    w->id = id;
    w->free_inst = calloc((size_t)j->P, sizeof *w->free_inst);
    w->previous = calloc((size_t)j->P, sizeof *w->previous);
    w->home_tokens = malloc(sizeof *w->home_tokens * (size_t)j->R);
    w->batch_recs = calloc((size_t)j->cap, sizeof *w->batch_recs);
    w->batch_plans = calloc((size_t)j->cap, sizeof *w->batch_plans);
    w->batch_slots = calloc((size_t)j->cap, sizeof *w->batch_slots);
    w->batch_scratch = calloc((size_t)j->cap, sizeof *w->batch_scratch);
    if (!w->free_inst || !w->previous || !w->home_tokens || !w->batch_recs || !w->batch_plans || !w->batch_slots ||
        !w->batch_scratch)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
    int rc = tsim_evaluator_init(&w->ev, s->eval_topo, err); /* sized for the largest K */
    if (rc)
        return rc;
    w->ev_ready = true;
    for (int p = 0; p < j->P; p++) {
        if (j->kind[p] != KIND_FREE)
            continue;
        if (id == 0) {
            w->free_inst[p] = s->planners[p]; /* the session's own, already started */
            continue;
        }
        w->free_inst[p] = s->planners[p];
        w->free_inst[p].state = NULL;
        if ((rc = tsim_planner_start(&w->free_inst[p], &s->ptopo[p], err))) {
            w->free_inst[p].desc = NULL;
            return rc;
        }
    }
    return TSIM_OK;
}

static void worker_free(tsim_session_jobs *j, jobs_worker *w)
{
    for (int p = 0; w->free_inst && p < j->P; p++) {
        if (w->id != 0 && j->kind[p] == KIND_FREE && w->free_inst[p].desc)
            tsim_planner_stop(&w->free_inst[p]);
        if (w->previous) {
            free(w->previous[p].layers);
            free(w->previous[p].placements);
        }
    }
    free(w->free_inst);
    free(w->previous);
    free(w->home_tokens);
    free(w->batch_recs);
    free(w->batch_plans);
    free(w->batch_slots);
    free(w->batch_scratch);
    if (w->ev_ready)
        tsim_evaluator_free(&w->ev);
}

void tsim_session_jobs_free(tsim_session_jobs *j)
{
    if (!j)
        return;
    if (j->lock_ready) {
        pthread_mutex_lock(&j->lock);
        j->stop = true;
        pthread_cond_broadcast(&j->work);
        pthread_mutex_unlock(&j->lock);
    }
    for (int i = 1; j->w && i < j->workers; i++)
        if (j->w[i].running)
            pthread_join(j->w[i].tid, NULL);
    for (int i = 0; j->w && i < j->workers; i++)
        worker_free(j, &j->w[i]);
    free(j->w);
    for (int q = 0; j->slots && q < j->cap; q++) {
        jobs_slot *sl = &j->slots[q];
        tsim_record_free(&sl->rec);
        for (int p = 0; sl->plans && p < j->P; p++)
            tsim_plan_free(&sl->plans[p]);
        free(sl->state);
        free(sl->chain);
        free(sl->m);
        free(sl->notes);
        free(sl->placed);
        free(sl->plans);
        free(sl->load_after);
        free(sl->rc);
        free(sl->err);
    }
    free(j->slots);
    for (int p = 0; j->chains && p < j->P; p++) {
        for (int c = 0; c < j->chains[p].count; c++)
            chain_free(j->chains[p].chains[c]);
        free(j->chains[p].chains);
    }
    for (int p = 0; j->serial && p < j->P; p++)
        chain_free(j->serial[p]);
    free(j->chains);
    free(j->serial);
    free(j->kind);
    free(j->session_inst_used);
    if (j->lock_ready) {
        pthread_mutex_destroy(&j->lock);
        pthread_cond_destroy(&j->work);
        pthread_cond_destroy(&j->done);
    }
    free(j);
}

int tsim_session_jobs_start(tsim_session_jobs **out, tsim_session *s, int workers, tsim_error *err)
{
    *out = NULL;
    if (workers < 1)
        workers = 1;
    tsim_session_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
    j->s = s;
    j->P = s->n_planners;
    j->R = s->topo.ranks;
    j->E = s->topo.experts;
    j->workers = workers;
    j->cap = workers * JOBS_WINDOW_PER_WORKER;
    j->batch_max = JOBS_WINDOW_PER_WORKER;
    j->kind = calloc((size_t)j->P, sizeof *j->kind);
    j->session_inst_used = calloc((size_t)j->P, sizeof *j->session_inst_used);
    j->chains = calloc((size_t)j->P, sizeof *j->chains);
    j->serial = calloc((size_t)j->P, sizeof *j->serial);
    j->slots = calloc((size_t)j->cap, sizeof *j->slots);
    j->w = calloc((size_t)workers, sizeof *j->w);
    if (!j->kind || !j->session_inst_used || !j->chains || !j->serial || !j->slots || !j->w) {
        tsim_session_jobs_free(j);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
    }
    for (int p = 0; p < j->P; p++) {
        const tsim_planner_desc *d = s->planners[p].desc;
        const tsim_planner_memory memory = tsim_planner_memory_of(d);
        j->kind[p] = memory == TSIM_MEMORY_ALL ? KIND_SERIAL : memory == TSIM_MEMORY_LAYER ? KIND_LAYER : KIND_FREE;
    }
    const int slots = s->max_slots > 0 ? s->max_slots : 1;
    int rc = TSIM_OK;
    for (int q = 0; q < j->cap && rc == TSIM_OK; q++) {
        jobs_slot *sl = &j->slots[q];
        sl->state = calloc((size_t)j->P, 1);
        sl->chain = calloc((size_t)j->P, sizeof *sl->chain);
        sl->m = calloc((size_t)j->P, sizeof *sl->m);
        sl->notes = calloc((size_t)j->P, sizeof *sl->notes);
        sl->placed = calloc((size_t)j->P, sizeof *sl->placed);
        sl->plans = calloc((size_t)j->P, sizeof *sl->plans);
        sl->load_after = calloc((size_t)j->P * (size_t)j->R, sizeof *sl->load_after);
        sl->rc = calloc((size_t)j->P, sizeof *sl->rc);
        sl->err = calloc((size_t)j->P, sizeof *sl->err);
        if (!sl->state || !sl->chain || !sl->m || !sl->notes || !sl->placed || !sl->plans || !sl->load_after ||
            !sl->rc || !sl->err) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for -j");
            break;
        }
        rc = tsim_record_alloc(&sl->rec, j->R, j->E, err);
        for (int p = 0; p < j->P && rc == TSIM_OK; p++)
            rc = tsim_plan_init(&sl->plans[p], j->R, j->R * slots, err);
    }
    for (int i = 0; i < workers && rc == TSIM_OK; i++)
        rc = worker_init(j, &j->w[i], i, err);
    if (rc) {
        tsim_session_jobs_free(j);
        return rc;
    }
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->work, NULL);
    pthread_cond_init(&j->done, NULL);
    j->lock_ready = true;
    for (int i = 1; i < workers; i++) {
        if (pthread_create(&j->w[i].tid, NULL, worker_main, &j->w[i]) != 0) {
            tsim_session_jobs_free(j);
            return tsim_error_set(err, TSIM_E_INTERNAL, "cannot start a thread for -j");
        }
        j->w[i].running = true;
    }
    *out = j;
    return TSIM_OK;
}

int tsim_session_jobs_record(tsim_session_jobs *j, const tsim_record *rec, const bool *want, tsim_error *err)
{
    return tsim_session_jobs_record_move(j, rec, want, NULL, err);
}

int tsim_session_jobs_record_move(tsim_session_jobs *j, const tsim_record *rec, const bool *want, int64_t **counts_io,
                                  tsim_error *err)
{
    if (rec->ranks != j->R || rec->experts != j->E)
        return tsim_error_set(err, TSIM_E_INTERNAL, "record %lld is %d x %d, the session's topology %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, j->R, j->E);
    const int64_t seq = j->given++;
    bool any = !want;
    for (int p = 0; p < j->P && !any; p++)
        any = want[p];
    if (!any)
        return TSIM_OK; /* another shard's record */
    pthread_mutex_lock(&j->lock);
    int rc = TSIM_OK;
    /* After a failed task no more records go in: the failure (or an earlier
     * one) surfaces when the commit reaches it, as one thread would report. */
    while (rc == TSIM_OK && (j->tail - j->head == j->cap || j->failed)) {
        if (j->failed && j->head == j->tail)
            break;
        rc = main_step(j, err);
    }
    if (rc) {
        pthread_mutex_unlock(&j->lock);
        return rc;
    }
    jobs_slot *sl = slot_at(j, j->tail);
    /* The slot is invisible to the workers until tail moves: fill it unlocked. */
    pthread_mutex_unlock(&j->lock);
    int64_t *counts = sl->rec.counts;
    sl->rec = *rec;
    if (counts_io) {
        /* the buffers change hands: a record of EP32 x 128 experts is 32 KiB
         * that would cross cores twice more as a copy */
        sl->rec.counts = *counts_io;
        *counts_io = counts;
    } else {
        sl->rec.counts = counts;
        memcpy(counts, rec->counts, sizeof *counts * (size_t)j->R * (size_t)j->E);
    }
    sl->seq = seq;
    int added = 0;
    for (int p = 0; p < j->P; p++) {
        sl->chain[p] = NULL;
        sl->rc[p] = TSIM_OK;
        if (want && !want[p]) {
            sl->state[p] = TASK_IDLE;
            continue;
        }
        if (j->kind[p] != KIND_FREE && !(sl->chain[p] = chain_get(j, p, rec->layer, err)))
            return err->code ? err->code : TSIM_E_INTERNAL;
        sl->state[p] = TASK_PENDING;
        added++;
    }
    sl->pending = added;
    pthread_mutex_lock(&j->lock);
    j->tail++;
    j->pending += added;
    if (j->sleeping && j->pending >= JOBS_WAKE_TASKS)
        pthread_cond_broadcast(&j->work);
    rc = commit_ready(j, err);
    pthread_mutex_unlock(&j->lock);
    return rc;
}

void tsim_session_jobs_set_idle(tsim_session_jobs *j, bool (*idle)(void *ctx), void *ctx)
{
    /* the threads are running: they read the hook under the lock */
    pthread_mutex_lock(&j->lock);
    j->idle = idle;
    j->idle_ctx = ctx;
    pthread_mutex_unlock(&j->lock);
}

void tsim_session_jobs_skip(tsim_session_jobs *j, int64_t n)
{
    j->given += n;
}

int tsim_session_jobs_finish(tsim_session_jobs *j, tsim_error *err)
{
    pthread_mutex_lock(&j->lock);
    pthread_cond_broadcast(&j->work);
    int rc = TSIM_OK;
    while (rc == TSIM_OK && j->head < j->tail)
        rc = main_step(j, err);
    pthread_mutex_unlock(&j->lock);
    return rc;
}
