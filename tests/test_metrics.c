/* Metrics that match the serving stacks' (issue 24): balancedness per record
 * and in vLLM's aggregate form, hand-checked on small records. */
#include <criterion/criterion.h>
#include <string.h>

#include "evaluate.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

/* 4 ranks, 2 per node, 8 experts (2 per rank), K = 2. Native loads:
 * rank 0 = 60 + 40 = 100, rank 1 = 20 + 20 = 40, rank 2 = 10 + 10 = 20,
 * rank 3 = 6 + 6 = 12; total 172, mean 43. */
static void setup(tsim_topology *t, tsim_record *rec, tsim_evaluator *ev)
{
    cr_assert_eq(tsim_topology_init(t, 4, 8, 2, 2, NULL, NULL), 0);
    cr_assert_eq(tsim_record_alloc(rec, 4, 8, NULL), 0);
    static const int64_t c[32] = {
        30, 20, 5, 5, 2, 2, 1, 1, /* source 0 */
        10, 10, 5, 5, 2, 2, 1, 1, /* source 1 */
        10, 5,  5, 5, 3, 3, 2, 2, /* source 2 */
        10, 5,  5, 5, 3, 3, 2, 2, /* source 3 */
    };
    memcpy(rec->counts, c, sizeof c);
    cr_assert_eq(tsim_evaluator_init(ev, t, NULL), 0);
}

static void teardown(tsim_topology *t, tsim_record *rec, tsim_evaluator *ev)
{
    tsim_evaluator_free(ev);
    tsim_record_free(rec);
    tsim_topology_free(t);
}

Test(balancedness, mean_over_max_of_small_loads)
{
    int64_t skewed[4] = {100, 40, 20, 12}; /* mean 43 */
    cr_assert_float_eq(tsim_balancedness(skewed, 4), 43.0 / 100.0, 1e-15);
    int64_t even[3] = {7, 7, 7};
    cr_assert_eq(tsim_balancedness(even, 3), 1.0);
    int64_t one_hot[4] = {0, 0, 8, 0}; /* mean 2 */
    cr_assert_float_eq(tsim_balancedness(one_hot, 4), 0.25, 1e-15);
    int64_t empty[2] = {0, 0};
    cr_assert_eq(tsim_balancedness(empty, 2), 0.0, "an empty record is 0, as vLLM logs it");
}

Test(balancedness, before_and_after_a_plan)
{
    tsim_topology t;
    tsim_record rec;
    tsim_evaluator ev;
    setup(&t, &rec, &ev);
    tsim_plan p;
    tsim_plan_init(&p, 4, 8, NULL);
    int a = tsim_plan_add(&p, 0, 1, 0, 20);
    int b = tsim_plan_add(&p, 0, 3, 0, 25);
    tsim_plan_alloc_row(&p, a)[0] = 20;
    tsim_plan_alloc_row(&p, b)[1] = 10;
    tsim_plan_alloc_row(&p, b)[3] = 10;
    tsim_metrics m;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 3.0, "hand", &m, &err), 0, "%s", err.msg);
    /* after: rank 0 = 100 - 40 = 60, rank 1 = 60, rank 2 = 20, rank 3 = 32 */
    cr_assert_float_eq(m.v[TSIM_M_BALANCEDNESS_BEFORE], 43.0 / 100.0, 1e-15);
    cr_assert_float_eq(m.v[TSIM_M_BALANCEDNESS_AFTER], 43.0 / 60.0, 1e-15);
    /* The two forms of the same record agree: balancedness = 1 / (1 + rho). */
    cr_assert_float_eq(m.v[TSIM_M_BALANCEDNESS_AFTER], 1.0 / (1.0 + m.v[TSIM_M_RHO_AFTER]), 1e-12);
    tsim_plan_free(&p);
    teardown(&t, &rec, &ev);
}

Test(balancedness, names_sit_beside_rho)
{
    cr_assert_str_eq(tsim_metric_names[TSIM_M_BALANCEDNESS_BEFORE], "balancedness_before");
    cr_assert_str_eq(tsim_metric_names[TSIM_M_BALANCEDNESS_AFTER], "balancedness_after");
    cr_assert_eq(TSIM_M_BALANCEDNESS_BEFORE, TSIM_M_RHO_AFTER + 1);
}
