/* Test helper: one planner on one topology with a plan and an evaluator, the
 * set-up every planner suite needs. */
#ifndef TSIM_PLANNER_FIXTURE_H
#define TSIM_PLANNER_FIXTURE_H

#include "evaluate.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "record.h"
#include "topology.h"

typedef struct {
    const tsim_planner_desc *desc;
    tsim_topology topo;
    tsim_planner_options opts;
    void *state;
    tsim_plan plan;
    tsim_evaluator ev;
} tsim_test_fixture;

/* Contiguous homes; opts NULL means the defaults; plan_capacity small to
 * exercise plan growth in planners without a slot limit. Asserts success. */
void tsim_fixture_open(tsim_test_fixture *f, const tsim_planner_desc *desc, int R, int E, int rpn, int K,
                       const tsim_planner_options *opts, int plan_capacity);
void tsim_fixture_close(tsim_test_fixture *f);

/* Plans rec, asserting that the planner succeeds and the evaluator (lambda 3)
 * accepts the plan; m receives the metrics. */
void tsim_fixture_plan(tsim_test_fixture *f, const tsim_record *rec, tsim_metrics *m);

/* Asserts replica i of p is (e, g, k, planned) and, when row is not NULL,
 * that its alloc row equals row. */
void tsim_fixture_assert_replica(const tsim_plan *p, int i, int e, int g, int k, int64_t planned, const int64_t *row);

/* Asserts the evaluator's loads after the last plan equal want[R]. */
void tsim_fixture_assert_loads(const tsim_test_fixture *f, const int64_t *want);

#endif
