/* taotsim fit: which generator regime reproduces the paper's Table 1.
 *
 * A regime is everything the generator takes except the EP size and the hot
 * share f: hot-rank placement, hot experts per hot rank, hot skew, background
 * concentration, tokens per rank (and the fixed shape: experts, top-k, ranks
 * per node, records, drift, seed). For every regime of a grid, and every
 * (EP, imbalance) cell of Table 1, the fit calibrates f to the cell's target,
 * streams the generated records through ECHO, LLEP, LPLB and TAOT (one replay
 * session per planner, the evaluator of every other study) and scores the
 * regime by its distance to the paper:
 *
 *     e = (ours - paper) / (|paper| + s_q)
 *     s_q = 1 pp for the improvement, 2 replicas for intra and inter
 *     D_p = sqrt(mean of e^2 over the 10 cells and the 3 metrics of planner p)
 *     D   = sqrt(mean of D_p^2 over the 4 planners)
 *
 * so every planner, cell and metric weighs the same (TAOT no more than the
 * others); a planner that cannot run a cell counts e = 1 for each metric.
 * D is a root-mean-square relative error: 0.1 means the regime misses the
 * paper's numbers by about 10% of their size. A regime whose traces cannot be
 * made for some cell (a target below what its base routing alone gives, say)
 * is infeasible and ranked last with the reason.
 *
 * Jobs are (regime, cell) pairs on the grid runner; results go to per-job
 * slots and ties rank by grid order, so the output is the same for any -j.
 * The library never prints; render/fit_print.c formats results. */
#ifndef TSIM_FIT_H
#define TSIM_FIT_H

#include <stdbool.h>
#include <stdio.h>

#include "experiments.h"
#include "gen.h"
#include "study.h"

struct cJSON;

#define TSIM_FIT_MAX_AXIS 32
#define TSIM_FIT_CELLS 10   /* EP16, EP32 x 10, 20, 30, 50, 70% */
#define TSIM_FIT_PLANNERS 4 /* echo, llep, lplb, taot */
#define TSIM_FIT_METRICS 3  /* improve_pp, intra, inter */
#define TSIM_REGIME_NAME_MAX 64

/* The Table-1 cells in fit order: cell i is EP tsim_fit_cell_ep(i) at
 * tsim_fit_cell_imbalance(i). */
int tsim_fit_cell_ep(int cell);
double tsim_fit_cell_imbalance(int cell);
extern const char *const tsim_fit_planner_names[TSIM_FIT_PLANNERS];
extern const char *const tsim_fit_metric_names[TSIM_FIT_METRICS];
/* The softening s_q of each metric's residual (see above). */
extern const double tsim_fit_metric_scale[TSIM_FIT_METRICS];

/* ---- regimes ------------------------------------------------------------- */

typedef struct {
    char name[TSIM_REGIME_NAME_MAX]; /* "" when unnamed */
    tsim_gen_params gen;             /* ep and hot_fraction are set per cell */
} tsim_regime;

/* The regime's generator parameters for one EP size, checked (an explicit
 * hot-rank list must fit the EP size, M the experts per rank). */
int tsim_regime_params(const tsim_regime *r, int ep, tsim_gen_params *out, tsim_error *err);

/* The traces of one Table-1 cell: calibrates f so that the mean initial
 * imbalance is within 0.5 pp of `imbalance`, and opens a generator that
 * streams the cell's records (tsim_gen_next; close with tsim_gen_close).
 * cal (may be NULL) receives the calibration. TSIM_E_INPUT when the regime
 * cannot make this cell, with the reason. */
int tsim_regime_open_cell(const tsim_regime *r, int ep, double imbalance, tsim_gen **out, tsim_gen_calibration *cal,
                          tsim_error *err);

/* A regime file (traces/regime-NAME.json):
 *   {"format": "taotsim-regime", "version": 1, "name": NAME,
 *    "generator": {"experts", "ranks_per_node", "topk", "tokens", "microbatches",
 *                  "layers", "concentration", "drift", "seed",
 *                  "hot_ranks" (the --hot-ranks text), "hot_experts" (M or "all"),
 *                  "hot_skew"},
 *    "fit": {...}   how it was found (command, distance...), optional, not read back}
 * Every generator key is required and no other is accepted. */
#define TSIM_REGIME_FORMAT "taotsim-regime"
#define TSIM_REGIME_VERSION 1

/* The JSON of a regime; fit (may be NULL, taken over) becomes its "fit" member.
 * NULL when out of memory. */
struct cJSON *tsim_regime_json(const tsim_regime *r, struct cJSON *fit);
/* Parses a regime object; errors name the key. */
int tsim_regime_from_json(const struct cJSON *j, tsim_regime *out, tsim_error *err);
/* The file of --regime ARG: ARG itself when it contains '/' or ends in
 * ".json", else DIR/regime-ARG.json (ARG: letters, digits, '-', '_'). */
int tsim_regime_path(const char *arg, const char *traces_dir, char *buf, size_t n, tsim_error *err);
/* Reads a regime: by name from traces_dir or from a file (tsim_regime_path).
 * Errors name the file. */
int tsim_regime_load(const char *arg, const char *traces_dir, tsim_regime *out, tsim_error *err);
/* "hot ranks per-node:1, hot experts all, skew 0, concentration 200, 4096 tokens" */
void tsim_regime_describe(const tsim_regime *r, char *buf, size_t n);

/* Table 1 on generated traces of a regime: the same rows, keys and params as
 * tsim_run_table1 (study "table1"), so tsim_study_print, tsim_study_json,
 * --fail-if and --plots treat it alike; params gain "regime" (name and
 * generator) in place of "traces". Uses c->planners (default the four),
 * c->slots, c->lambda_eval, c->base, c->threads, c->progress. */
int tsim_run_table1_regime(const tsim_study_config *c, const tsim_regime *r, tsim_study *out, tsim_error *err);

/* ---- the fit -------------------------------------------------------------- */

typedef struct {
    tsim_gen_params base;  /* shape, records, drift, seed (ep, regime axes ignored) */
    char placements[TSIM_FIT_MAX_AXIS][64]; /* --hot-ranks texts */
    int n_placements;
    int hot_experts[TSIM_FIT_MAX_AXIS];     /* 0 = all */
    int n_hot_experts;
    double skews[TSIM_FIT_MAX_AXIS];
    int n_skews;
    double concentrations[TSIM_FIT_MAX_AXIS];
    int n_concentrations;
    int tokens[TSIM_FIT_MAX_AXIS];
    int n_tokens;
    int top;               /* regimes reported with per-cell residuals */
} tsim_fit_grid;

/* The default grid (fit.c documents the choice) and the default shape. */
void tsim_fit_grid_default(tsim_fit_grid *g);
/* Checks every axis value against both EP sizes (placements parse and fit,
 * M divides nothing it should not...): TSIM_E_INPUT naming the option. */
int tsim_fit_grid_check(const tsim_fit_grid *g, tsim_error *err);
int tsim_fit_grid_regimes(const tsim_fit_grid *g);
/* Regime i of the grid (placement outermost, tokens innermost). */
int tsim_fit_grid_regime(const tsim_fit_grid *g, int i, tsim_regime *out, tsim_error *err);

typedef struct {
    bool ok;               /* the planner ran the cell */
    double ours[TSIM_FIT_METRICS], paper[TSIM_FIT_METRICS], resid[TSIM_FIT_METRICS];
} tsim_fit_entry;

typedef struct {
    tsim_regime regime;
    bool feasible;         /* every cell could be generated */
    char error[320];       /* why not */
    double distance;       /* D (INFINITY when infeasible) */
    double planner_distance[TSIM_FIT_PLANNERS];
    double achieved[TSIM_FIT_CELLS];     /* mean initial imbalance of each cell's trace */
    double hot_fraction[TSIM_FIT_CELLS]; /* f found */
    tsim_fit_entry entries[TSIM_FIT_CELLS][TSIM_FIT_PLANNERS];
} tsim_fit_regime;

typedef struct {
    tsim_fit_grid grid;
    int slots;
    double lambda_eval, lambda_plan;
    int n;                 /* regimes */
    tsim_fit_regime *regimes; /* [n], grid order */
    int *order;            /* [n]: regime indices, best first (ties: grid order) */
    int closest[TSIM_FIT_PLANNERS]; /* per planner, the regime with the smallest D_p */
} tsim_fit_result;

/* Runs the fit (c: threads, slots, lambda_eval, base planner options,
 * progress; c->planners is ignored: the fit always scores the four). */
int tsim_fit_run(const tsim_study_config *c, const tsim_fit_grid *g, tsim_fit_result *out, tsim_error *err);
void tsim_fit_result_free(tsim_fit_result *r);

#endif
