/* Independent grid points run in parallel on a small thread pool; results go
 * to per-job slots so output order (and bytes) never depend on -j. */
#ifndef TSIM_GRID_H
#define TSIM_GRID_H

#include "error.h"

/* Runs job(ctx, i, err) for i in 0..n-1 on up to `threads` threads. Returns
 * TSIM_OK, or the error of the LOWEST-numbered failing job (deterministic).
 * Jobs are started in order and none is started after one fails (a study
 * ends at its first failure instead of waiting out every cell): the jobs
 * before a failing one have all started, so the lowest failure is the same
 * for any thread count. Jobs already running finish; their results stand.
 * progress (may be NULL) is called under a lock after each job. */
typedef int (*tsim_grid_job)(void *ctx, int job, tsim_error *err);
typedef void (*tsim_grid_progress)(void *ctx, int done, int total);

int tsim_grid_run(int n, int threads, tsim_grid_job job, tsim_grid_progress progress, void *ctx, tsim_error *err);

/* The same over the points of one shard (--shard I/N): jobs I, I+N, I+2N, ...
 * of 0..n-1 (all of them when shard_count is 0); progress counts the
 * shard's jobs. */
int tsim_grid_run_shard(int n, int shard_index, int shard_count, int threads, tsim_grid_job job,
                        tsim_grid_progress progress, void *ctx, tsim_error *err);

/* Whether grid point `point` belongs to shard I/N (every point when N is 0). */
static inline int tsim_grid_point_in_shard(int point, int shard_index, int shard_count)
{
    return shard_count <= 0 || point % shard_count == shard_index;
}

#endif
