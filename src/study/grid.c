#include "grid.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pthread_mutex_t lock;
    int next, done, n;
    bool failed; /* a job failed: start no more (every lower job has started) */
    tsim_grid_job job;
    tsim_grid_progress progress;
    void *ctx;
    tsim_error *errors; /* [n] */
    int *status;        /* [n] */
} grid_state;

static void *worker(void *arg)
{
    grid_state *g = arg;
    for (;;) {
        pthread_mutex_lock(&g->lock);
        int i = g->next < g->n && !g->failed ? g->next++ : -1;
        pthread_mutex_unlock(&g->lock);
        if (i < 0)
            return NULL;
        g->status[i] = g->job(g->ctx, i, &g->errors[i]);
        pthread_mutex_lock(&g->lock);
        g->failed |= g->status[i] != 0;
        g->done++;
        if (g->progress)
            g->progress(g->ctx, g->done, g->n);
        pthread_mutex_unlock(&g->lock);
    }
}

int tsim_grid_run(int n, int threads, tsim_grid_job job, tsim_grid_progress progress, void *ctx, tsim_error *err)
{
    if (n <= 0)
        return TSIM_OK;
    grid_state g = {.n = n, .job = job, .progress = progress, .ctx = ctx};
    g.errors = calloc((size_t)n, sizeof *g.errors);
    g.status = calloc((size_t)n, sizeof *g.status);
    if (!g.errors || !g.status) {
        free(g.errors);
        free(g.status);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    pthread_mutex_init(&g.lock, NULL);
    if (threads < 1)
        threads = 1;
    if (threads > n)
        threads = n;
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    int started = 0;
    if (tids)
        for (; started < threads - 1; started++)
            if (pthread_create(&tids[started], NULL, worker, &g) != 0)
                break;
    worker(&g); /* the calling thread works too */
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(tids);
    pthread_mutex_destroy(&g.lock);
    int rc = TSIM_OK;
    for (int i = 0; i < n; i++) {
        if (g.status[i]) {
            rc = g.status[i];
            if (err)
                *err = g.errors[i];
            break;
        }
    }
    free(g.errors);
    free(g.status);
    return rc;
}

/* A shard's jobs renumbered 0..k-1 for tsim_grid_run. */
typedef struct {
    int shard_index, shard_count;
    tsim_grid_job job;
    tsim_grid_progress progress;
    void *ctx;
} shard_wrap;

static int shard_job(void *w_, int k, tsim_error *err)
{
    shard_wrap *w = w_;
    return w->job(w->ctx, w->shard_index + k * w->shard_count, err);
}

static void shard_progress(void *w_, int done, int total)
{
    shard_wrap *w = w_;
    if (w->progress)
        w->progress(w->ctx, done, total);
}

int tsim_grid_run_shard(int n, int shard_index, int shard_count, int threads, tsim_grid_job job,
                        tsim_grid_progress progress, void *ctx, tsim_error *err)
{
    if (shard_count <= 0)
        return tsim_grid_run(n, threads, job, progress, ctx, err);
    if (shard_index < 0 || shard_index >= shard_count)
        return tsim_error_set(err, TSIM_E_INTERNAL, "shard %d/%d", shard_index, shard_count);
    int k = n > shard_index ? (n - shard_index + shard_count - 1) / shard_count : 0;
    shard_wrap w = {shard_index, shard_count, job, progress, ctx};
    return tsim_grid_run(k, threads, shard_job, shard_progress, &w, err);
}
