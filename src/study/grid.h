/* Independent grid points run in parallel on a small thread pool; results go
 * to per-job slots so output order (and bytes) never depend on -j. */
#ifndef TSIM_GRID_H
#define TSIM_GRID_H

#include "error.h"

/* Runs job(ctx, i, err) for i in 0..n-1 on up to `threads` threads. Returns
 * TSIM_OK, or the error of the LOWEST-numbered failing job (deterministic).
 * progress (may be NULL) is called under a lock after each job. */
typedef int (*tsim_grid_job)(void *ctx, int job, tsim_error *err);
typedef void (*tsim_grid_progress)(void *ctx, int done, int total);

int tsim_grid_run(int n, int threads, tsim_grid_job job, tsim_grid_progress progress, void *ctx, tsim_error *err);

#endif
