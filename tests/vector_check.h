/* Test helper: turn a vector file into a one-record trace, run a planner on it
 * and compare the plan with the vector's "expect" (Criterion asserts). */
#ifndef TSIM_VECTOR_CHECK_H
#define TSIM_VECTOR_CHECK_H

#include "evaluate.h"
#include "plan.h"
#include "vector.h"

/* Directory holding vectors/: TSIM_SPEC_DIR, else tests/spec. */
const char *tsim_test_spec_dir(void);

/* Fills paths with the sorted *.json files of spec/vectors/<sub>; returns the count. */
int tsim_test_vector_files(const char *sub, char (*paths)[1024], int max);

/* Runs planner (NULL: the vector's own) on the vector's record with its options;
 * fills plan (initialised by the caller or not: this inits it), metrics and
 * loads_after [R]. Asserts that the evaluator accepts the plan. */
void tsim_test_run_vector(const tsim_vector *v, const char *planner, tsim_plan *plan, tsim_metrics *m,
                          int64_t *loads_after);

/* Loads the vector, runs its planner, and asserts every field of expect:
 * replicas with planned counts, every alloc entry, loads_after, rho within
 * 1e-9 relative, intra, inter. */
void tsim_test_check_vector(const char *path);

/* Asserts two plans are identical after sorting both (messages name label). */
void tsim_test_assert_plans_equal(tsim_plan *got, tsim_plan *want, const char *label);

#endif
