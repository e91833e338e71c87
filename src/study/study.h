/* Study results (table1, ablation, sweep, scaling): rows of per-planner metric
 * summaries at grid coordinates, looked up by name for --fail-if; printed as
 * markdown, CSV or JSON by render/study_print.h. */
#ifndef TSIM_STUDY_H
#define TSIM_STUDY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "evaluate.h"
#include "planner.h"
#include "session.h"
#include "stats.h"

struct cJSON;

typedef struct {
    /* Grid coordinates; which ones apply depends on the study (-1 / NAN: n/a). */
    const char *axis;     /* scaling: "ep", "imbalance" or "slots" */
    int ep;
    double imbalance;     /* target initial imbalance (fraction) */
    int slots;
    /* The slot budget K the planner ran at, when its own rule gives another
     * than `slots` (MoonEP's E/R); 0: it ran at `slots`. */
    int planner_slots;
    double lambda_plan, lambda_eval;
    int flow_hint, comm_cost; /* ablation: 0/1 */
    char key[64];         /* --fail-if prefix, e.g. "ep16.imb70" */
    char planner[TSIM_LABEL_MAX]; /* its label */
    /* the planner's registry name ("llep" for echo=llep): the paper's values
     * are looked up by it, never by the label; "" = the label (older partials) */
    char method[TSIM_LABEL_MAX];
    bool ok;              /* false: the planner cannot run this cell */
    char error[256];
    int seeds;            /* per-seed means summarised (ablation), else 1 */
    int64_t records;
    bool metric_on[TSIM_M_COUNT];
    tsim_summary metrics[TSIM_M_COUNT];
    int64_t notes[TSIM_NOTE_KINDS];
    /* --bounds: the excess metrics were measured (bounds_on), and why they
     * are n/a for this planner (tsim_bounds_fit; 0: in the model). */
    bool bounds_on;
    int bounds_fit;
} tsim_study_row;

typedef struct {
    const char *study;    /* "table1", "ablation", "sweep", "scaling" */
    tsim_study_row *rows;
    int n, cap;
    struct cJSON *params; /* study parameters for the JSON output (owned) */
    struct cJSON *extra;  /* study-specific top-level fields, e.g. break_even (owned object) */
    /* The grid behind the rows (--shard and taotsim merge): `points` grid
     * points of rows_per_point rows each. A partial study (shard_count > 0,
     * from --shard I/N) holds only the rows of points I, I+N, ..., as the
     * grid made them, before tsim_study_finish. */
    int points, rows_per_point;
    int shard_index, shard_count;
} tsim_study;

void tsim_study_init(tsim_study *s, const char *name);
void tsim_study_free(tsim_study *s);
/* Appends a zeroed row; NULL when out of memory. */
tsim_study_row *tsim_study_add(tsim_study *s);

/* The name a row's planner is registered under (see method). */
const char *tsim_study_row_method(const tsim_study_row *r);

/* Fills a row's metrics from one planner's results of a session. */
void tsim_study_row_from_session(tsim_study_row *row, const tsim_session *s, int planner);
/* The same for one of its layers (results[planner].layers[layer], --by-layer),
 * keyed "layerL" for --fail-if ("layer3.taot.rho_after.p95"). */
void tsim_study_row_from_layer(tsim_study_row *row, const tsim_session *s, int planner, int layer);

/* --fail-if lookup over rows: "KEY.PLANNER.METRIC.STAT" for one cell, or
 * "PLANNER.METRIC.STAT" for the mean of that statistic over all of the
 * planner's cells; where the planner has a row without a key (a replay),
 * that row alone. ctx is the tsim_study. */
int tsim_study_lookup(void *ctx, const char *name, double *value);

/* Table 1's paper values hold for K = 2 and lambda = 3 only: true when the
 * study ran at those (its params), so they may stand beside ours. */
bool tsim_study_paper_comparable(const tsim_study *s);

/* vLLM's balancedness of a row (sum of mean loads over sum of max loads),
 * before or after the plan. */
double tsim_study_row_vllm(const tsim_study_row *r, bool after);

#endif
