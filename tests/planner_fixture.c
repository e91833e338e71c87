#include "planner_fixture.h"

#include <criterion/criterion.h>

void tsim_fixture_open(tsim_test_fixture *f, const tsim_planner_desc *desc, int R, int E, int rpn, int K,
                       const tsim_planner_options *opts, int plan_capacity)
{
    tsim_error err = {0};
    f->desc = desc;
    cr_assert_eq(tsim_topology_init(&f->topo, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
    if (opts)
        f->opts = *opts;
    else
        tsim_planner_options_default(&f->opts);
    cr_assert_eq(desc->init(&f->state, &f->topo, &f->opts, &err), 0, "%s: %s", desc->name, err.msg);
    cr_assert_eq(tsim_plan_init(&f->plan, R, plan_capacity, &err), 0);
    cr_assert_eq(tsim_evaluator_init(&f->ev, &f->topo, &err), 0);
}

void tsim_fixture_close(tsim_test_fixture *f)
{
    tsim_evaluator_free(&f->ev);
    tsim_plan_free(&f->plan);
    f->desc->free(f->state);
    tsim_topology_free(&f->topo);
}

void tsim_fixture_plan(tsim_test_fixture *f, const tsim_record *rec, tsim_metrics *m)
{
    tsim_error err = {0};
    cr_assert_eq(f->desc->plan(f->state, rec, &f->plan, &err), 0, "%s: %s", f->desc->name, err.msg);
    cr_assert_eq(tsim_evaluate(&f->ev, rec, &f->plan, 3.0, f->desc->name, m, &err), 0, "%s", err.msg);
}
