/* `frontier` (issue 23, item 3): hand-checked plans, the configuration
 * errors, and properties over random records: every plan passes the
 * evaluator and never raises the max load, more lambda_plan never gives more
 * cross-node replicas, and plans are deterministic across instances and
 * reused scratch. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "evaluate.h"
#include "frontier.h"
#include "plan.h"
#include "random_records.h"
#include "record.h"
#include "topology.h"

static void topo_or_die(tsim_topology *t, int R, int E, int rpn, int K)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(t, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
}

/* A record whose source rank 0 holds every token: cnt[0][e] = tpe[e]. */
static void record_from_totals(tsim_record *rec, int R, int E, const int64_t *tpe)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    for (int e = 0; e < E; e++)
        rec->counts[e] = tpe[e];
}

/* Plans rec with (lambda, mu), checks the evaluator accepts it and returns
 * its metrics at lambda_eval 3. */
static tsim_metrics plan_and_score(const tsim_topology *t, const tsim_record *rec, double lambda, double mu,
                                   tsim_plan *plan)
{
    tsim_frontier_options o;
    tsim_frontier_options_default(&o);
    o.mu = mu;
    tsim_frontier *f;
    tsim_error err = {0};
    cr_assert_eq(tsim_frontier_init(&f, t, t->slots, lambda, &o, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_plan_init(plan, t->ranks, t->ranks * (t->slots > 0 ? t->slots : 1), &err), 0);
    cr_assert_eq(tsim_frontier_plan(f, rec, plan, &err), 0, "%s", err.msg);
    tsim_evaluator ev;
    cr_assert_eq(tsim_evaluator_init(&ev, t, &err), 0);
    tsim_metrics m;
    cr_assert_eq(tsim_evaluate(&ev, rec, plan, 3.0, "frontier", &m, &err), 0, "%s", err.msg);
    tsim_evaluator_free(&ev);
    tsim_frontier_free(f);
    return m;
}

static void assert_replica(const tsim_plan *p, int i, int e, int g, int k, int64_t planned)
{
    cr_assert_lt(i, p->count);
    const tsim_replica *r = &p->replicas[i];
    cr_assert(r->expert == e && r->guest == g && r->slot == k && r->planned == planned,
              "replica %d is (%d, %d, %d, %lld), expected (%d, %d, %d, %lld)", i, r->expert, r->guest, r->slot,
              (long long)r->planned, e, g, k, (long long)planned);
}

/* Node 0 = ranks 0, 1 with 100 + 20 tokens, node 1 = ranks 2, 3 with 20 + 20:
 * mean 40. Node 0 must export 40: expert 0 goes to ranks 2 and 3 (20 each,
 * no rank fits 40 so the largest room first, ties to the lower rank), then
 * 20 more to rank 1 inside the node. Every load ends at 40. */
Test(frontier, hand_checked_cross_node_surplus)
{
    tsim_topology t;
    topo_or_die(&t, 4, 4, 2, 1);
    const int64_t tpe[4] = {100, 20, 20, 20};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 3.0, 1e-4, &p);
    cr_assert_eq(p.count, 3);
    assert_replica(&p, 0, 0, 2, 0, 20);
    assert_replica(&p, 1, 0, 3, 0, 20);
    assert_replica(&p, 2, 0, 1, 0, 20);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 0.0, 1e-12);
    cr_assert_float_eq(m.v[TSIM_M_INTER], 2.0, 1e-12);
    cr_assert_float_eq(m.v[TSIM_M_INTRA], 1.0, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* The same record with mu 0.01: a cross-node piece of 20 tokens is worth it
 * when 20 / (2 ranks * mean 40) = 0.25 > 0.01 * lambda, i.e. lambda < 25. At
 * lambda 30 both are dropped and node 0 only evens itself out (60, 60). */
Test(frontier, cross_node_pieces_dropped_when_lambda_makes_them_too_dear)
{
    tsim_topology t;
    topo_or_die(&t, 4, 4, 2, 1);
    const int64_t tpe[4] = {100, 20, 20, 20};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 24.0, 0.01, &p);
    cr_assert_float_eq(m.v[TSIM_M_INTER], 2.0, 1e-12);
    tsim_plan_free(&p);
    m = plan_and_score(&t, &rec, 30.0, 0.01, &p);
    cr_assert_eq(p.count, 1);
    assert_replica(&p, 0, 0, 1, 0, 40);
    cr_assert_float_eq(m.v[TSIM_M_INTER], 0.0, 1e-12);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 0.5, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* Node totals already balanced: ranks 0, 1 = 60, 20 and ranks 2, 3 = 40, 40.
 * One node-local replica, never a cross-node one, even though rank 2 and 3
 * are no hotter than rank 1. */
Test(frontier, node_local_when_node_totals_balance)
{
    tsim_topology t;
    topo_or_die(&t, 4, 4, 2, 2);
    const int64_t tpe[4] = {60, 20, 40, 40};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 3.0, 1e-4, &p);
    cr_assert_eq(p.count, 1);
    assert_replica(&p, 0, 0, 1, 0, 20);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 0.0, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* Best fit, one node, level 50: rank 0 has 30 too many and cold ranks 1, 2, 3
 * have room 40, 30, 10. The piece goes to the smallest room that takes all
 * 30 at once (rank 2), not the largest (rank 1). Then rank 4 (+25) fits in
 * rank 1; rank 5 (+25) fits nowhere, so the largest room first (rank 1's
 * second slot, 15), then rank 3 (10). */
Test(frontier, best_fit_receiver_takes_the_whole_piece)
{
    tsim_topology t;
    topo_or_die(&t, 6, 6, 8, 2);
    const int64_t tpe[6] = {80, 10, 20, 40, 75, 75};
    tsim_record rec;
    record_from_totals(&rec, 6, 6, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 3.0, 0.0, &p);
    cr_assert_eq(p.count, 4);
    assert_replica(&p, 0, 0, 2, 0, 30);
    assert_replica(&p, 1, 4, 1, 0, 25);
    assert_replica(&p, 2, 5, 1, 1, 15);
    assert_replica(&p, 3, 5, 3, 0, 10);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 0.0, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* The marginal rule inside a node, mean 40: rank 0 is 20 over, rank 1 only
 * 3. With mu 0.1 a replica is worth 4 tokens of imbalance, more than the 3
 * it would fix on rank 1: only rank 0 sheds (to rank 2, room 23), and rho
 * stays 3/40 (objective 0.175 against 0.2 for either plan that fixes both).
 * With mu 0.05 (2 tokens) rank 1's 3 tokens pay for a second replica. */
Test(frontier, node_local_piece_only_when_worth_a_replica)
{
    tsim_topology t;
    topo_or_die(&t, 4, 4, 4, 2);
    const int64_t tpe[4] = {60, 43, 17, 40};
    tsim_record rec;
    record_from_totals(&rec, 4, 4, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 3.0, 0.1, &p);
    cr_assert_eq(p.count, 1);
    assert_replica(&p, 0, 0, 2, 0, 20);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 3.0 / 40, 1e-12);
    tsim_plan_free(&p);
    m = plan_and_score(&t, &rec, 3.0, 0.05, &p);
    cr_assert_eq(p.count, 2);
    assert_replica(&p, 0, 0, 2, 0, 20);
    assert_replica(&p, 1, 1, 2, 1, 3);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], 0.0, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(frontier, refuses_bad_configuration)
{
    tsim_topology t;
    topo_or_die(&t, 4, 8, 2, 2);
    tsim_frontier_options o;
    tsim_frontier_options_default(&o);
    tsim_frontier *f = (tsim_frontier *)&o;
    tsim_error err = {0};
    cr_assert_eq(tsim_frontier_init(&f, &t, 2, 0.0, &o, &err), TSIM_E_INPUT);
    cr_assert_null(f);
    cr_assert(strstr(err.msg, "lambda_plan") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_frontier_init(&f, &t, 2, NAN, &o, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_frontier_init(&f, &t, -1, 3.0, &o, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "slots") != NULL, "%s", err.msg);
    o.mu = -1;
    cr_assert_eq(tsim_frontier_init(&f, &t, 2, 3.0, &o, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "mu") != NULL, "%s", err.msg);
    tsim_frontier_options_default(&o);
    cr_assert_eq(tsim_frontier_init(&f, &t, 2, 3.0, &o, &err), 0, "%s", err.msg);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 4, NULL), 0);
    tsim_plan p;
    cr_assert_eq(tsim_plan_init(&p, 4, 8, NULL), 0);
    cr_assert_eq(tsim_frontier_plan(f, &rec, &p, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "4 x 4") != NULL, "%s", err.msg);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_frontier_free(f);
    tsim_topology_free(&t);
}

/* ---- properties over random records --------------------------------------- */

static const double lambdas[] = {0.5, 1.0, 1.5, 3.0, 10.0, 30.0, 100.0, 1e4};
#define NL ((int)(sizeof lambdas / sizeof lambdas[0]))

static double max_load(const tsim_evaluator *ev)
{
    int64_t mx = 0;
    for (int r = 0; r < ev->topo->ranks; r++)
        mx = ev->load_after[r] > mx ? ev->load_after[r] : mx;
    return (double)mx;
}

static void check_one(uint64_t *rng, int max_ranks)
{
    tsim_random_shape s;
    tsim_random_shape_draw(rng, max_ranks, &s);
    tsim_topology t;
    topo_or_die(&t, s.ranks, s.experts, s.ranks_per_node, s.slots);
    tsim_record rec;
    tsim_random_record(rng, &s, &rec);
    /* mu from 0 to 0.1 so the lambda filter bites on some records. */
    tsim_frontier_options o = {.mu = tsim_rand_range(rng, 0, 3) == 0 ? 0.0 : pow(10.0, -(double)tsim_rand_range(rng, 1, 5))};
    tsim_evaluator ev;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluator_init(&ev, &t, &err), 0);
    tsim_plan p, again;
    cr_assert_eq(tsim_plan_init(&p, t.ranks, 1, &err), 0);
    cr_assert_eq(tsim_plan_init(&again, t.ranks, 1, &err), 0);
    int64_t native_max = 0;
    double prev_inter = INFINITY;
    for (int l = 0; l < NL; l++) {
        tsim_frontier *f, *g;
        cr_assert_eq(tsim_frontier_init(&f, &t, s.slots, lambdas[l], &o, &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_frontier_init(&g, &t, s.slots, lambdas[l], &o, &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_frontier_plan(f, &rec, &p, &err), 0, "%s", err.msg);
        tsim_metrics m;
        cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 3.0, "frontier", &m, &err), 0,
                     "R %d E %d rpn %d K %d lambda %g mu %g: %s", t.ranks, t.experts, t.ranks_per_node, t.slots,
                     lambdas[l], o.mu, err.msg);
        if (l == 0)
            for (int r = 0; r < t.ranks; r++)
                native_max = ev.load_before[r] > native_max ? ev.load_before[r] : native_max;
        cr_assert_leq(max_load(&ev), (double)native_max, "a plan raised the max load");
        cr_assert_leq(m.v[TSIM_M_INTER], prev_inter, "R %d E %d rpn %d K %d mu %g: inter %g at lambda %g > %g before",
                      t.ranks, t.experts, t.ranks_per_node, t.slots, o.mu, m.v[TSIM_M_INTER], lambdas[l], prev_inter);
        prev_inter = m.v[TSIM_M_INTER];
        /* Determinism: a fresh instance, and the same one on a second record
         * in between (scratch reuse), give the identical plan. */
        cr_assert_eq(tsim_frontier_plan(g, &rec, &again, &err), 0, "%s", err.msg);
        cr_assert(tsim_plan_equal(&p, &again), "a fresh instance planned differently");
        tsim_record other;
        tsim_random_record(rng, &s, &other);
        cr_assert_eq(tsim_frontier_plan(f, &other, &again, &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_frontier_plan(f, &rec, &again, &err), 0, "%s", err.msg);
        cr_assert(tsim_plan_equal(&p, &again), "reused scratch planned differently");
        tsim_record_free(&other);
        tsim_frontier_free(f);
        tsim_frontier_free(g);
    }
    tsim_plan_free(&p);
    tsim_plan_free(&again);
    tsim_evaluator_free(&ev);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(frontier, random_records_valid_monotone_in_lambda_and_deterministic)
{
    uint64_t rng = 0xf407;
    for (int i = 0; i < 600; i++)
        check_one(&rng, 16);
}

Test(frontier, random_records_at_larger_sizes)
{
    uint64_t rng = 0x23f0;
    for (int i = 0; i < 60; i++)
        check_one(&rng, 64);
}

/* With ample slots and mu 0 a plan reaches the level ceil(mean) on the
 * shape of the paper (one node's worth of hot ranks, the rest cold). */
Test(frontier, reaches_the_rounding_bound_when_slots_allow)
{
    tsim_topology t;
    topo_or_die(&t, 16, 64, 8, 4);
    int64_t tpe[64];
    for (int e = 0; e < 64; e++)
        tpe[e] = e < 8 ? 1000 + 37 * e : 300 + (e * 7919) % 200;
    tsim_record rec;
    record_from_totals(&rec, 16, 64, tpe);
    tsim_plan p;
    tsim_metrics m = plan_and_score(&t, &rec, 3.0, 0.0, &p);
    int64_t total = 0;
    for (int e = 0; e < 64; e++)
        total += tpe[e];
    const double mean = (double)total / 16, ceil_mean = (double)((total + 15) / 16);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], (ceil_mean - mean) / mean, 1e-12);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}
