/* taotsim advise: "what should I set?" on one trace. Sweeps each planner's
 * deployment knobs (guest slots K, the rebalance interval and history of the
 * periodic planners, lambda_plan of the topology-aware ones), scores every
 * setting (balance, weight traffic, memory), marks the Pareto set and
 * recommends the least-memory setting that reaches a target balancedness.
 * Returns data only (a tsim_study named "advise"); the CLI prints it. */
#ifndef TSIM_ADVISE_H
#define TSIM_ADVISE_H

#include <stdbool.h>

#include "error.h"
#include "layout_export.h"
#include "registry.h"
#include "study.h"

#define TSIM_ADVISE_LIST_MAX 32
#define TSIM_ADVISE_HISTORY_MAX 16

typedef struct {
    tsim_planner_options base;  /* planner options given on the command line */
    const char *planners;       /* comma list; NULL: every cheap built-in planner */
    const char *trace;
    int slot_list[TSIM_ADVISE_LIST_MAX];       /* K values (1,2,3,4) */
    int n_slots;
    int intervals[TSIM_ADVISE_LIST_MAX];       /* records between recomputations (1,8,32,128,512) */
    int n_intervals;
    char histories[TSIM_ADVISE_LIST_MAX][TSIM_ADVISE_HISTORY_MAX]; /* (prev, none) */
    int n_histories;
    double lambdas[TSIM_ADVISE_LIST_MAX];      /* lambda_plan of the planners that read it (1,3,10) */
    int n_lambdas;
    double lambda_eval;         /* (3) */
    double expert_mb;           /* one expert's weights, MB (9.44) */
    double target;              /* balancedness to reach (0.95) */
    int threads;                /* -j */
    int shard_index, shard_count;
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
} tsim_advise_config;

void tsim_advise_config_default(tsim_advise_config *c);

/* One setting, as a row's key spells it: "k2.i8.hprev", "k1.lp3", "kfree". */
typedef struct {
    int slots;          /* K; 0: the planner has no slot limit */
    int interval;       /* 0: not swept for this planner (or history none) */
    char history[TSIM_ADVISE_HISTORY_MAX]; /* "": not swept */
    double lambda_plan; /* NAN: the planner does not read it */
} tsim_advise_setting;

/* Parses a row key back into its setting (rows read back by merge have only
 * their key). -1 when the key is not an advise key. */
int tsim_advise_setting_parse(const char *key, tsim_advise_setting *out);

/* Runs the sweep into out (study "advise", one row per setting, grid
 * point = setting), then tsim_advise_finish unless sharded. */
int tsim_run_advise(const tsim_advise_config *c, tsim_study *out, tsim_error *err);

/* What a row costs and gives, for the Pareto set and the renderers. */
typedef struct {
    double memory_mb;      /* guest slots per rank x expert_mb (peak guests without a slot limit) */
    double balancedness;   /* mean over records */
    double weight_traffic; /* per record: weighted + rehomed_intra + lambda_eval * rehomed_inter */
    double moves;          /* per record: rehomed_intra + rehomed_inter */
} tsim_advise_score;

/* The evaluator's balancedness metric (mean / max load after the plan), by
 * its name; -1 in a build without it. */
int tsim_advise_balancedness_metric(void);

void tsim_advise_score_row(const tsim_study *s, const tsim_study_row *r, tsim_advise_score *out);

/* The rows that may be recommended (deployable, reaching the target) into
 * order[], best first in the recommendation's order; returns how many. */
int tsim_advise_ranked(const tsim_study *s, int *order);

/* The layout to load (--export-layout): of the ranked rows, the first whose
 * plans are layouts (eplb, trtllm, swift) with one for every layer, replayed
 * again from c (the config of the run that made s) into layouts (initialised
 * here when one is found; the caller frees it), its row index into *row.
 * TSIM_E_INPUT when no ranked row has one. */
int tsim_advise_layout(const tsim_advise_config *c, const tsim_study *s, tsim_layout_collector *layouts, int *row,
                       tsim_error *err);

/* The Pareto set (balance up; memory and weight traffic down) and the
 * recommendation into s->extra ("pareto", "recommendation"). */
int tsim_advise_finish(tsim_study *s, tsim_error *err);

#endif
