/* Planner test vectors (shared/spec/vectors/README.md): reading a vector file
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
    struct cJSON *root;          /* the whole document (for "check", "notes") */
} tsim_vector;

int tsim_vector_load(tsim_vector *v, const char *path, tsim_error *err);
void tsim_vector_free(tsim_vector *v);

/* The vector's options object for a planner with these settings. */
struct cJSON *tsim_vector_options_json(const char *planner, int slots, int ranks_per_node,
                                       const tsim_planner_options *o);

/* One plan as a vector object: name, source "taotsim", planner, options,
 * counts, and "got" {replicas, alloc, loads_after, rho_before, rho_after, intra,
 * inter}, in the canonical order. The plan is sorted in place. extra (may be
 * NULL) is merged into the top level. Returns a new cJSON object or NULL. */
struct cJSON *tsim_vector_plan_json(const char *name, const char *planner, struct cJSON *options,
                                    const tsim_record *rec, tsim_plan *plan, const int64_t *loads_after,
                                    const tsim_metrics *m, bool with_counts);

#endif
