/* Test helper shared by the GPU parity suite (needs a GPU) and the GPU
 * fallback suite (runs everywhere): TAOT option sets and a plan comparison
 * that names the first difference. */
#ifndef TSIM_GPU_FIXTURE_H
#define TSIM_GPU_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "topology.h"

typedef struct {
    int phase3;
    bool flow_hint, comm_cost;
    double lambda, self_bonus;
    int iters, rounds;
} tsim_gpu_config;

/* Combination i (0..7) of variant x flow hint x communication cost, with the
 * other options given. */
tsim_gpu_config tsim_gpu_combo(int i, double lambda, double self_bonus, int iters, int rounds);

/* The planner options of c, on the CPU device. */
void tsim_gpu_config_options(const tsim_gpu_config *c, tsim_planner_options *o);

/* "R=.. E=.. K=.. rpn=.. auction no-flow-hint ...", for messages. */
void tsim_gpu_config_name(const tsim_gpu_config *c, const tsim_topology *t, char *buf, size_t n);

/* True, with the first difference in msg, when the two plans differ in any
 * replica, planned count, allocation or note (the GPU fallback note aside:
 * the CPU reference never sets it). */
bool tsim_gpu_plans_differ(const tsim_plan *cpu, const tsim_plan *gpu, char *msg, size_t n);

#endif
