/* Planner test vectors (tests/spec/vectors/README.md): reading a vector file
 * into a record, a topology setting and an expected plan, and writing a plan in
 * the same shape with "got" in place of "expect" (used by --dump-plans and by
 * `taotsim vector`). */
#ifndef TSIM_VECTOR_H
#define TSIM_VECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "evaluate.h"
#include "plan.h"
#include "planner.h"
#include "record.h"
#include "session.h"
#include "topology.h"

struct cJSON;

typedef struct {
    char name[128];
    char source[32];
    char planner[32];
    int slots;
    int ranks_per_node;
    tsim_planner_options opts;   /* defaults overridden by the vector's options */
    tsim_record record;          /* the counts, as one record */
    bool has_expect;
    tsim_plan expect;            /* replicas (with planned) and alloc rows */
    int64_t *loads_after;        /* [R] when has_expect */
    double rho_before, rho_after;
    int64_t intra, inter;
    /* Planners with memory (docs/planners.md, tests/spec/vectors/README.md): the history the
     * record's layer had and the placement in force before it; NULL when
     * absent. expect.placement goes into expect's plan. */
    int64_t *prev_expert_counts; /* [E] */
    int32_t *prev_placement;     /* [E] */
    bool has_rehomed;            /* expect gives rehomed_intra and rehomed_inter */
    int64_t rehomed_intra, rehomed_inter;
    struct cJSON *root;          /* the whole document (for "check", "notes") */
} tsim_vector;

int tsim_vector_load(tsim_vector *v, const char *path, tsim_error *err);
void tsim_vector_free(tsim_vector *v);

/* Plans and scores the vector's record with every planner of the session (one
 * made for the vector's shape), first seeding each planner's layer with the
 * vector's prev_expert_counts and prev_placement (the planner's prime hook)
 * and the session's previous placement for the rehomed counts. */
int tsim_vector_run(tsim_session *s, const tsim_vector *v, tsim_error *err);

/* The vector's options object for a planner with these settings: slots,
 * ranks_per_node, lambda_plan, then every option of the planner's table
 * (named without the planner's prefix, '-' as '_'; a --NAME-no-X flag as
 * X: true/false; not taot-device, which changes no plan), then what its
 * given_option hook lists (an external
 * planner's own options, as text). */
struct cJSON *tsim_vector_options_json(const tsim_planner_desc *desc, int slots, int ranks_per_node,
                                       const tsim_planner_options *o);

/* One plan as a vector object: name, source "taotsim", planner, options,
 * counts, and "got" {replicas, alloc, loads_after, rho_before, rho_after, intra,
 * inter, and for a plan with a placement placement, rehomed_intra,
 * rehomed_inter}, in the canonical order. The plan is sorted in place. extra (may be
 * NULL) is merged into the top level. Returns a new cJSON object or NULL. */
struct cJSON *tsim_vector_plan_json(const char *name, const char *planner, struct cJSON *options,
                                    const tsim_record *rec, tsim_plan *plan, const int64_t *loads_after,
                                    const tsim_metrics *m, bool with_counts);

#endif
