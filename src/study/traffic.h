/* Traffic matrices (replay --traffic node|rank, docs/export.md): per planner,
 * the token all-to-all before and after each plan, summed over records, as a
 * node x node or rank x rank matrix (row: the source, column: where the tokens
 * are computed), and the weight copies the plans imply. The definitions are
 * the evaluator's (evaluate.c): before, expert e's tokens go to its static
 * home; after, to home'(e) minus what the plan sends to replicas, which go to
 * the guests. The node matrices' off-diagonal sums are therefore exactly
 * traffic_inter_before/after; replica copies are intra/inter; re-homes are
 * rehomed_intra/inter. Library code: no printing except to a given FILE. */
#ifndef TSIM_TRAFFIC_H
#define TSIM_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "session.h"
#include "topology.h"

struct cJSON;

typedef enum { TSIM_TRAFFIC_OFF = 0, TSIM_TRAFFIC_NODE, TSIM_TRAFFIC_RANK } tsim_traffic_level;

/* "node" or "rank". */
int tsim_traffic_level_parse(const char *text, tsim_traffic_level *out, tsim_error *err);

typedef struct {
    int64_t *before, *after; /* [n * n] tokens, row = source unit, column = computing unit */
    int64_t *weights;        /* [n * n] replica copies, home' unit -> guest unit (GPU to GPU) */
    int64_t *rehomed;        /* [n * n] re-homed experts, old home' unit -> new home' unit (GPU to GPU) */
    int64_t *host;           /* [R] copies each rank loads from host memory (weights_from_host planners) */
    bool from_host;
    int64_t records;
    tsim_previous_placements previous; /* home' of each layer's previous record */
} tsim_traffic_planner;

typedef struct tsim_traffic {
    tsim_traffic_level level;
    int n;          /* units: nodes or ranks */
    int R, E, rpn;
    int n_planners;
    tsim_traffic_planner *p;
    double hidden_bytes; /* bytes per token (0: tokens only) */
    double expert_mb;    /* MB per expert copy (0: copies only) */
} tsim_traffic;

/* Zeroed matrices for every planner of the session. */
int tsim_traffic_init(tsim_traffic *t, tsim_traffic_level level, const tsim_session *s, tsim_error *err);
void tsim_traffic_free(tsim_traffic *t);

/* Adds one record's token matrices (n x n, level's units) into before and
 * after: the evaluator's definitions, with home' from the plan's placement. */
void tsim_traffic_record(const tsim_topology *topo, tsim_traffic_level level, const tsim_record *rec,
                         const tsim_plan *plan, int64_t *before, int64_t *after);

/* Adds planner p's evaluated plan of rec: tokens, replica copies, re-homes.
 * Call in record order per planner (the session's hook order). */
int tsim_traffic_add(tsim_traffic *t, int planner, const tsim_topology *topo, const tsim_record *rec,
                     const tsim_plan *plan, tsim_error *err);

/* The hottest link of an n x n matrix: the largest off-diagonal cell (ties:
 * lowest source, then destination) and its share of the off-diagonal sum.
 * src = -1 when nothing crosses. */
typedef struct {
    int src, dst;
    int64_t value, total;
    double share;
} tsim_traffic_link;
tsim_traffic_link tsim_traffic_hottest(const int64_t *m, int n);

/* Off-diagonal sum (tokens that cross a node or rank boundary). */
int64_t tsim_traffic_crossing(const int64_t *m, int n);

/* The whole matrices (--traffic-out). */
struct cJSON *tsim_traffic_json(const tsim_traffic *t, const tsim_session *s, const char *trace_path);
/* The hottest links per planner, for the replay result's "traffic" key. */
struct cJSON *tsim_traffic_summary_json(const tsim_traffic *t, const tsim_session *s);
/* "node" or "rank". */
const char *tsim_traffic_level_name(tsim_traffic_level level);

#endif
