/* A replay session: a set of configured planners run over records of one
 * topology, every plan scored by the evaluator, metrics collected per planner.
 * Used by `replay` and by every study (table1, ablation, sweep, scaling). */
#ifndef TSIM_SESSION_H
#define TSIM_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "bounds.h"
#include "evaluate.h"
#include "plan.h"
#include "planner.h"
#include "stats.h"
#include "stepmodel.h"
#include "topology.h"

#define TSIM_NOTE_KINDS 5
extern const char *const tsim_note_names[TSIM_NOTE_KINDS];

/* One layer's share of a planner's results (--by-layer). */
typedef struct {
    int64_t layer;
    int64_t records;
    tsim_series metrics[TSIM_M_COUNT];
} tsim_layer_result;

typedef struct {
    tsim_series metrics[TSIM_M_COUNT];
    /* With by_layer: the same per layer, ascending by layer id. */
    tsim_layer_result *layers;
    int n_layers, cap_layers;
    int64_t note_records[TSIM_NOTE_KINDS]; /* records with each TSIM_NOTE_* bit */
    /* Budgeted searches (tsim_plan.search): records per outcome, and the gap
     * summed (in record order) and at most over the stopped ones. */
    int64_t search_records[4];
    double search_gap_sum, search_gap_max;
    int64_t records;
    /* With keep_indices (sharded replays): which records were planned, as
     * pairs (first, count) of ascending runs of their sequence numbers (the
     * order the reader gave them, from 0). */
    int64_t *runs;
    int64_t n_runs, cap_runs;
} tsim_planner_result;

/* Counts a plan's search outcome into its planner's result. */
void tsim_planner_result_add_search(tsim_planner_result *res, const tsim_plan *plan);

/* Identity of a record, kept for per-record output. */
typedef struct {
    int64_t index, microbatch, layer;
} tsim_record_id;

/* The placement one planner used for the previous record of each layer: what
 * rehomed_intra/_inter compare with (eplb.md 1.2). Kept only for layers on
 * which the planner has re-homed (others compare with the static map); a
 * layer's row is allocated the first time, then overwritten. */
typedef struct {
    int64_t *layers;     /* [cap], ascending */
    int32_t *placements; /* [cap * E], row k for layers[k] */
    int count, cap;
} tsim_previous_placements;

/* The layer's previous placement (E ranks), or NULL when it has none yet (the
 * static map is what it compares with). */
const int32_t *tsim_previous_placement(const tsim_previous_placements *pp, int E, int64_t layer);
/* Remembers placement (NULL: the static map `home`) as the layer's previous
 * one. Allocates only for a layer not seen before; a NULL placement for such
 * a layer stores nothing, since the static map is the default. */
int tsim_previous_placement_put(tsim_previous_placements *pp, int E, int64_t layer, const int32_t *placement,
                                const int32_t *home, tsim_error *err);
/* After a plan of `layer` was scored against `previous` (the layer's previous
 * placement or NULL): its placement, or the static map once the layer has one,
 * becomes the layer's previous placement. */
int tsim_previous_placement_update(tsim_previous_placements *pp, int E, int64_t layer, const tsim_plan *plan,
                                   const int32_t *previous, const int32_t *home, tsim_error *err);

/* Whether a planner that failed to start on this topology only refuses it
 * (a study shows n/a and goes on): a built-in planner's input error (LPLB
 * without a graph that fits), or an external planner's explicit decline.
 * Any other failure of an external planner ends the study. */
bool tsim_session_init_refused(const tsim_planner *planner, int rc, const tsim_error *err);

struct tsim_session;
/* Called after each evaluated plan (for --per-record / --dump-plans). The plan
 * may be sorted by the callee. Return non-zero (with err set) to stop. */
typedef int (*tsim_plan_hook)(void *ctx, struct tsim_session *s, int planner, const tsim_record *rec,
                              tsim_plan *plan, const tsim_metrics *m, tsim_error *err);

typedef struct tsim_session {
    tsim_topology topo;           /* the command's (its slots: the command's --slots) */
    /* Each planner's own topology: topo with that planner's slot budget K
     * (tsim_planner_slots), which it plans with and is checked against. */
    tsim_topology *ptopo;         /* [n_planners] */
    int n_ptopo;                  /* set up so far */
    const tsim_topology *eval_topo; /* the topology with the largest K (evaluator scratch) */
    int max_slots;                /* the largest K of any planner (buffers) */
    bool slots_differ;            /* the planners' K are not all the same */
    tsim_evaluator ev;            /* sized for max_slots; ev.topo set per planner */
    tsim_plan plan;
    int n_planners;
    tsim_planner *planners;       /* owned copies */
    tsim_planner_result *results; /* [n_planners] */
    double lambda_eval;
    bool timing;                  /* measure plan_ns (wall time: not reproducible) */
    bool step_model_on;           /* fill step_ms and speedup */
    tsim_step_model step_model;
    int64_t *home_tokens;         /* [R] scratch for the step model */
    bool keep_ids;                /* remember each record's id (per-record output) */
    tsim_record_id *ids;
    int64_t n_ids, cap_ids;
    bool keep_indices;            /* remember each planner's record indices (results[].runs) */
    tsim_plan_hook hook;
    void *hook_ctx;
    tsim_previous_placements *previous; /* [n_planners] */
    bool rehoming;                /* some plan carried a placement: rehomed_* are reported */
    double capacity_factor;       /* > 0: dropped_before/_after at this C (model.md) */
    bool by_layer;                /* also keep every metric per layer (results[].layers) */
    size_t exact_max;             /* the bound of tsim_session_bound_memory (0: none), for new layers */
    /* Pipelining, for planners that ask for a window (external planners over
     * a pipe). A caller that sets `pipeline` lets the session hold records
     * back (copied) until it has `window` of them, hand them to those
     * planners' plan_batch at once, and then score every record in order
     * exactly as one by one; it must call tsim_session_drain after its last
     * record. Without `pipeline`, or when no planner asks for a window,
     * every record is planned and scored at once. */
    bool pipeline;
    int window;                   /* the largest window a planner asked for (1: none) */
    int queued;                   /* records held back */
    tsim_record *queue;           /* [window], own counts; allocated on first use */
    const tsim_record **queue_ptrs;
    tsim_plan *batch_plans;       /* [n_planners * window], for the windowed planners */
    double *batch_ns;             /* [n_planners]: a batch's plan time per record */
    /* --bounds (bounds.h): the excess metrics, NULL when off; bounds_fit[i]
     * the first reason a plan of planner i fell outside the model (0: none). */
    tsim_bounds *bounds;
    int *bounds_fit;              /* [n_planners] */
} tsim_session;

/* Copies the topology (home included), starts every planner. */
int tsim_session_init(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots, const int32_t *home,
                      const tsim_planner *planners, int n_planners, double lambda_eval, tsim_error *err);
void tsim_session_free(tsim_session *s);
/* A session that only holds results (taotsim merge): as init, but no
 * planner is started. */
int tsim_session_init_results(tsim_session *s, int ranks, int experts, int ranks_per_node, int slots,
                              const int32_t *home, const tsim_planner *planners, int n_planners, double lambda_eval,
                              tsim_error *err);

/* Plans and scores one record with every planner (with `pipeline`, possibly
 * later: see tsim_session_drain). */
int tsim_session_record(tsim_session *s, const tsim_record *rec, tsim_error *err);

/* Plans and scores the records held back for pipelined planners. Call after
 * the last tsim_session_record when `pipeline` is set; harmless otherwise.
 * A windowed planner's plan_ns is its batch's wall time divided evenly over
 * the batch's records. */
int tsim_session_drain(tsim_session *s, tsim_error *err);

/* Sets the placement planner i is taken to have used for the previous record
 * of a layer (NULL: the static map), e.g. a test vector's prev_placement. */
int tsim_session_set_previous(tsim_session *s, int planner, int64_t layer, const int32_t *placement,
                              tsim_error *err);

/* Whether a metric is measured in this session (plan_ns needs timing, the
 * step metrics need the step model). */
bool tsim_session_metric_on(const tsim_session *s, int metric);

/* Turns on --bounds (after init, before the first record). */
int tsim_session_enable_bounds(tsim_session *s, tsim_error *err);
/* As tsim_session_metric_on, and the planner's plans were inside the bounds'
 * model for the excess metrics. */
bool tsim_session_planner_metric_on(const tsim_session *s, int planner, int metric);

tsim_summary tsim_session_summary(const tsim_session *s, int planner, tsim_metric_id metric);

/* Bounded memory for long replays: every metric series keeps its values up to
 * exact_max records, then switches to the fixed-size summary of stats.h (mean,
 * std, min, max exact; p50/p95 within 1%). Call after init, before the first
 * record. Does nothing when keep_ids is set: per-record output needs every value. */
#define TSIM_SESSION_EXACT_RECORDS 16384
void tsim_session_bound_memory(tsim_session *s, size_t exact_max);

/* Recording one record's results, for callers that plan elsewhere (the -j
 * threads below): commit_begin once per record (the id, for per-record
 * output), then commit per planner in planner order with the evaluated
 * plan, its metrics (plan_ns, step model included), notes and whether it
 * carried a placement; the hook is called from here. The session's
 * evaluator must hold the plan's loads (load_after) for the hook. */
int tsim_session_commit_begin(tsim_session *s, const tsim_record *rec, tsim_error *err);
int tsim_session_commit(tsim_session *s, int planner, int64_t seq, const tsim_record *rec, tsim_plan *plan,
                        const tsim_metrics *m, uint32_t notes, bool placed, tsim_error *err);

/* replay -j N (session_jobs.c): records planned by `workers` threads (the
 * caller's included), results committed to the session in record order, so
 * every output is byte-identical to one thread's (plan_ns aside, which is a
 * wall time anyway). At most 32 records per thread are in flight. Planners
 * with per-layer memory (`prime`: LPLB, EPLB) get one instance per layer,
 * whose records run in order; external planners one instance for all
 * records, in order; every other planner one instance per thread. A planner
 * with plan_batch is handed up to 32 records at a time. The session's
 * pipeline/window fields are not used on this path. */
typedef struct tsim_session_jobs tsim_session_jobs;
int tsim_session_jobs_start(tsim_session_jobs **out, tsim_session *s, int workers, tsim_error *err);
/* Queues a copy of rec for the planners with want[p] (NULL: all); a record
 * no planner wants is skipped. Hand it every record of the trace: the calls
 * number them (keep_indices). May plan and commit earlier records. */
int tsim_session_jobs_record(tsim_session_jobs *j, const tsim_record *rec, const bool *want, tsim_error *err);
/* The same without the copy: *counts_io (rec->counts, R x E cells the caller
 * owns) goes into the queue, and *counts_io comes back as another buffer of
 * that size, the caller's now (unchanged when the record is not queued). */
int tsim_session_jobs_record_move(tsim_session_jobs *j, const tsim_record *rec, const bool *want, int64_t **counts_io,
                                  tsim_error *err);
/* Plans and commits everything queued. */
/* Counts n records as handed in without handing them in: a shard that
 * starts reading at its range (an indexed trace) numbers its records as the
 * whole trace does. Before the first tsim_session_jobs_record. */
void tsim_session_jobs_skip(tsim_session_jobs *j, int64_t n);
/* Work a planning thread does when no task waits, before it sleeps: idle(ctx)
 * does one piece and returns whether there was one (replay gives it the
 * reader's tsim_reader_help, so the planning threads parse read-ahead lines
 * too). Called without any lock, from any of the threads but the caller's;
 * ctx must outlive tsim_session_jobs_free. Before the first record. */
void tsim_session_jobs_set_idle(tsim_session_jobs *j, bool (*idle)(void *ctx), void *ctx);
int tsim_session_jobs_finish(tsim_session_jobs *j, tsim_error *err);
/* Stops the threads (after finishing what they run) and frees. */
void tsim_session_jobs_free(tsim_session_jobs *j);

#endif
