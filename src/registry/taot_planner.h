/* The `taot` planner entry: the CPU algorithm (src/planner/taot.c) or the CUDA
 * port (gpu/), chosen by --taot-device, with the CPU as the fallback. */
#ifndef TSIM_TAOT_PLANNER_H
#define TSIM_TAOT_PLANNER_H

#include <stdbool.h>
#include <stddef.h>

#include "planner.h"

extern const tsim_planner_desc tsim_planner_taot;

/* True when --taot-device gpu was asked for and this planner (state: a `taot`
 * planner's state) runs on the CPU instead; why gets the reason (empty when
 * false). */
bool tsim_taot_gpu_fell_back(const void *state, char *why, size_t n);

#endif
