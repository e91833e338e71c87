/* LLEP (Least-Loaded Expert Parallelism, baselines.md "llep"): its rules
 * exposed for the unit tests. The planner itself is tsim_planner_llep. */
#ifndef TSIM_LLEP_H
#define TSIM_LLEP_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"

/* llep's own options block. */
typedef struct {
    double alpha;        /* capacity factor (1.0) */
    int64_t min_chunk;   /* minimum piece m (1024) */
    double threshold;    /* activation threshold; 0 = off (default) */
} tsim_llep_options;

extern const tsim_planner_desc tsim_planner_llep;

/* Step 1: cap = max(floor(alpha * floor(total / R)), 1), except cap = total
 * when floor(total / R) = 0. */
int64_t tsim_llep_capacity(int64_t total, int ranks, double alpha);

/* Activation: false for an empty record; true when threshold <= 0 (off);
 * else max_r load0[r] / (total / R) >= threshold, in double. */
bool tsim_llep_active(const int64_t *load0, int ranks, double threshold);

#endif
