#include "planner_fixture.h"
#include "test_options.h"
#include "registry.h"

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
    cr_assert_eq(tsim_planner_init_with(desc, &f->state, &f->topo, &f->opts, &err), 0, "%s: %s", desc->name, err.msg);
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

void tsim_fixture_assert_replica(const tsim_plan *p, int i, int e, int g, int k, int64_t planned, const int64_t *row)
{
    cr_assert_lt(i, p->count, "replica %d missing (plan has %d)", i, p->count);
    const tsim_replica *r = &p->replicas[i];
    cr_assert(r->expert == e && r->guest == g && r->slot == k && r->planned == planned,
              "replica %d is [%d,%d,%d,%lld], expected [%d,%d,%d,%lld]", i, r->expert, r->guest, r->slot,
              (long long)r->planned, e, g, k, (long long)planned);
    if (!row)
        return;
    const int64_t *got = tsim_plan_alloc_row_c(p, i);
    for (int s = 0; s < p->ranks; s++)
        cr_assert_eq(got[s], row[s], "replica [%d,%d]: source %d sends %lld, expected %lld", e, g, s,
                     (long long)got[s], (long long)row[s]);
}

void tsim_fixture_assert_loads(const tsim_test_fixture *f, const int64_t *want)
{
    for (int r = 0; r < f->topo.ranks; r++)
        cr_assert_eq(f->ev.load_after[r], want[r], "rank %d load %lld, expected %lld", r,
                     (long long)f->ev.load_after[r], (long long)want[r]);
}
