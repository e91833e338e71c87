/* ECHO (elastic cloning of hot experts, baselines.md "echo"): its steps exposed
 * for the unit tests. The planner itself is tsim_planner_echo in the registry. */
#ifndef TSIM_ECHO_H
#define TSIM_ECHO_H

#include <stdint.h>

#include "error.h"
#include "plan.h"
#include "planner.h"

extern const tsim_planner_desc tsim_planner_echo;

/* Number of FIFO buckets of the K = 1 bin packing. */
#define TSIM_ECHO_BUCKETS 8

/* K = 1 bucket of a spill: 0 when spill >= avg, else
 * min((avg - spill) / step + 1, 7) with step = avg / 7 (0 treated as 1). */
int tsim_echo_bucket(int64_t spill, int64_t avg);

/* Step 1 for expert totals tpe[E], with the state from tsim_planner_echo.init:
 * native loads load[R], spare[R] = max(avg - load, 0) and spill[E] against the
 * integer avg = floor(total / R), which is returned. */
int64_t tsim_echo_spill(void *state, const int64_t *tpe, int64_t *load, int64_t *spill, int64_t *spare);

/* Step 2: which expert goes where, for any spill[E] / spare[R] / avg. Resets out
 * and appends one replica (expert, guest, slot, planned) per piece with zeroed
 * alloc rows: bin packing when K = 1, one-shot greedy when K > 1, nothing when
 * K = 0. Requires spare > 0 only on ranks none of whose experts spill. */
int tsim_echo_assign(void *state, const int64_t *spill, const int64_t *spare, int64_t avg, tsim_plan *out,
                     tsim_error *err);

#endif
