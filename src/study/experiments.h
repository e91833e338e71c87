/* The studies users run (experiments.md): the paper's Table 1, the TAOT
 * ablation (Table 2), lambda sweeps with break-even lambda, and scaling sweeps.
 * Independent grid points run in parallel (grid.h); results are identical for
 * any number of threads. */
#ifndef TSIM_EXPERIMENTS_H
#define TSIM_EXPERIMENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gen.h"
#include "planner.h"
#include "registry.h"
#include "stepmodel.h"
#include "study.h"

#define TSIM_STUDY_LIST_MAX 64

typedef struct {
    tsim_planner_options base;  /* planner options (lambda_plan included) */
    const char *planners;       /* comma list; NULL = the study's default */
    int slots;                  /* K (2) */
    double lambda_eval;         /* (3) */
    int threads;                /* -j (all cores) */
    bool timing;                /* measure plan_ns */
    bool step_model_on;
    tsim_step_model step_model;
    bool bounds;                /* --bounds: excess_imbalance and excess_cost (bounds.h) */
    double capacity_factor;     /* > 0: dropped_before/_after at this C */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    /* --shard I/N: only grid points I, I+N, ... run, and the study stays
     * partial (tsim_study's points and rows_per_point; no finishing), for
     * taotsim merge. shard_count 0: the whole grid. */
    int shard_index, shard_count;

    /* table1 */
    const char *traces_dir;     /* directory with epNN-immNN.jsonl.gz */

    /* generated traces (ablation, scaling) */
    tsim_gen_params gen;        /* shape, tokens, records, seed */
    uint64_t seeds[TSIM_STUDY_LIST_MAX];
    int n_seeds;

    /* ablation */
    int ablation_ep;            /* 32 */
    double ablation_imbalance;  /* 0.7 */

    /* sweep */
    const char *trace;          /* the trace swept over */
    double lambda_plans[TSIM_STUDY_LIST_MAX];
    int n_lambda_plans;
    double lambda_evals[TSIM_STUDY_LIST_MAX];
    int n_lambda_evals;

    /* scaling: one axis varies at a time around the base point */
    int eps[TSIM_STUDY_LIST_MAX];
    int n_eps;
    double imbalances[TSIM_STUDY_LIST_MAX];
    int n_imbalances;
    int slot_list[TSIM_STUDY_LIST_MAX];
    int n_slot_list;
    int base_ep;
    double base_imbalance;
    int base_slots;
} tsim_study_config;

void tsim_study_config_default(tsim_study_config *c);

/* The trace of one Table-1 cell inside dir. */
void tsim_table1_trace_path(char *buf, size_t n, const char *dir, int ep, double imbalance);

int tsim_run_table1(const tsim_study_config *c, tsim_study *out, tsim_error *err);
int tsim_run_ablation(const tsim_study_config *c, tsim_study *out, tsim_error *err);
int tsim_run_sweep(const tsim_study_config *c, tsim_study *out, tsim_error *err);
int tsim_run_scaling(const tsim_study_config *c, tsim_study *out, tsim_error *err);

/* Turns the rows of every grid point (as the grid made them, point-major)
 * into the study's result: ablation's mean over seeds, the break-even lambda
 * of table1 and sweep. What a study run does after its grid, and what
 * taotsim merge does once the shards' rows are together. */
int tsim_study_finish(tsim_study *s, tsim_error *err);

#endif
