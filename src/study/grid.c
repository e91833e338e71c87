#include "grid.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pthread_mutex_t lock;
    int next, done, n;
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
        int i = g->next < g->n ? g->next++ : -1;
        pthread_mutex_unlock(&g->lock);
        if (i < 0)
            return NULL;
        g->status[i] = g->job(g->ctx, i, &g->errors[i]);
        pthread_mutex_lock(&g->lock);
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
