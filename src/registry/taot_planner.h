/* The `taot` planner entry: the CPU algorithm (src/planner/taot.c) or the CUDA
 * port (gpu/), chosen by --taot-device, with the CPU as the fallback. */
#ifndef TSIM_TAOT_PLANNER_H
#define TSIM_TAOT_PLANNER_H

#include <stdbool.h>
#include <stddef.h>

#include "planner.h"
#include "taot_gpu.h" /* the GPU benchmark's numbers */

extern const tsim_planner_desc tsim_planner_taot;

/* True when --taot-device gpu was asked for and this planner (state: a `taot`
 * planner's state) runs on the CPU instead; why gets the reason (empty when
 * false). */
bool tsim_taot_gpu_fell_back(const void *state, char *why, size_t n);

/* The GPU side for `taotsim bench --taot-device gpu`, so that the CLI reaches
 * the GPU planner through its registry entry: whether a GPU can run TAOT here
 * (why not in why), and the batched benchmark, which returns its numbers for
 * the caller to format (tsim_taot_gpu_bench). */
bool tsim_taot_planner_gpu_available(char *why, size_t n);
int tsim_taot_planner_gpu_bench(tsim_taot_gpu_bench_result *out, const tsim_planner_common *common,
                                const tsim_taot_options *base, int records, uint64_t seed, tsim_error *err);

#endif
