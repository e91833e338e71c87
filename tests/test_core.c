/* Unit tests of the core: topology, even split, plan, evaluator, stats,
 * break-even lambda, list parsing, the shared split rule, atomic output. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evaluate.h"
#include "test_options.h"
#include "outfile.h"
#include "parse.h"
#include "plan.h"
#include "planner.h"
#include "random_records.h"
#include "registry.h"
#include "search.h"
#include "record.h"
#include "split.h"
#include "stats.h"
#include "topology.h"

static void set_counts(tsim_record *rec, const int64_t *vals)
{
    memcpy(rec->counts, vals, sizeof *vals * (size_t)rec->ranks * (size_t)rec->experts);
}

Test(topology, contiguous_home_and_nodes)
{
    tsim_topology t;
    cr_assert_eq(tsim_topology_init(&t, 4, 8, 2, 2, NULL, NULL), 0);
    cr_assert_eq(t.experts_per_rank, 2);
    cr_assert_eq(t.home[5], 2);
    cr_assert_eq(tsim_home_experts(&t, 3)[1], 7);
    cr_assert(tsim_same_node(&t, 0, 1));
    cr_assert(!tsim_same_node(&t, 1, 2));
    cr_assert_eq(tsim_cost(&t, 0, 3, 3.0), 3.0);
    cr_assert_eq(tsim_cost(&t, 2, 2, 3.0), 1.0);
    tsim_topology_free(&t);
}

Test(topology, rejects_bad_shapes)
{
    tsim_topology t;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&t, 3, 8, 8, 2, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "experts 8 is not divisible by ep 3");
    int32_t uneven[4] = {0, 0, 0, 1};
    cr_assert_eq(tsim_topology_init(&t, 2, 4, 8, 2, uneven, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "more than 2 experts") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_topology_init(&t, 5000, 5000, 8, 2, NULL, &err), TSIM_E_INPUT);
}

Test(topology, explicit_home_lists_rank_experts_in_order)
{
    tsim_topology t;
    int32_t home[4] = {1, 0, 1, 0};
    cr_assert_eq(tsim_topology_init(&t, 2, 4, 8, 1, home, NULL), 0);
    cr_assert_eq(tsim_home_experts(&t, 0)[0], 1);
    cr_assert_eq(tsim_home_experts(&t, 0)[1], 3);
    cr_assert_eq(tsim_home_experts(&t, 1)[0], 0);
    tsim_topology_free(&t);
}

Test(record, even_split_rule)
{
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 3, NULL), 0);
    int64_t tpe[3] = {10, 3, 0};
    tsim_record_split_even(&rec, tpe);
    /* 10 = 2 each + remainder 2 to ranks 0 and 1; 3 = 0 each + 1 to ranks 0..2. */
    int64_t want[12] = {3, 1, 0, 3, 1, 0, 2, 1, 0, 2, 0, 0};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(rec.counts[i], want[i], "cell %d", i);
    int64_t back[3];
    tsim_record_expert_totals(&rec, back);
    cr_assert_eq(back[0], 10);
    cr_assert_eq(back[1], 3);
    tsim_record_free(&rec);
}

Test(plan, add_grow_sort_drop)
{
    tsim_plan p;
    cr_assert_eq(tsim_plan_init(&p, 3, 1, NULL), 0);
    for (int i = 0; i < 9; i++) {
        int idx = tsim_plan_add(&p, 9 - i, i % 3, 0, i);
        cr_assert_eq(idx, i);
        tsim_plan_alloc_row(&p, idx)[i % 3] = i % 2; /* odd ones send a token */
    }
    cr_assert_geq(p.capacity, 9);
    tsim_plan_sort(&p);
    for (int i = 1; i < p.count; i++)
        cr_assert_lt(p.replicas[i - 1].expert, p.replicas[i].expert);
    /* rows moved with their replicas */
    for (int i = 0; i < p.count; i++) {
        int orig = (int)p.replicas[i].planned;
        cr_assert_eq(tsim_plan_alloc_row(&p, i)[orig % 3], orig % 2);
    }
    tsim_plan_drop_empty(&p);
    cr_assert_eq(p.count, 4);
    tsim_plan_free(&p);
}

/* A 4-rank, 2-node record of 8 experts (2 per rank) used by evaluator tests. */
static void small_setup(tsim_topology *t, tsim_record *rec, tsim_evaluator *ev)
{
    cr_assert_eq(tsim_topology_init(t, 4, 8, 2, 2, NULL, NULL), 0);
    cr_assert_eq(tsim_record_alloc(rec, 4, 8, NULL), 0);
    /* rank r sends cnt to expert e; native loads: rank0 = 60+40=100 ... */
    int64_t c[32] = {
        30, 20, 5, 5, 2, 2, 1, 1, /* source 0 */
        10, 10, 5, 5, 2, 2, 1, 1, /* source 1 */
        10, 5, 5, 5, 3, 3, 2, 2,  /* source 2 */
        10, 5, 5, 5, 3, 3, 2, 2,  /* source 3 */
    };
    set_counts(rec, c);
    cr_assert_eq(tsim_evaluator_init(ev, t, NULL), 0);
}

Test(evaluate, metrics_by_hand)
{
    tsim_topology t;
    tsim_record rec;
    tsim_evaluator ev;
    small_setup(&t, &rec, &ev);
    /* native loads: rank0 = 60+40 = 100, rank1 = 20+20 = 40, rank2 = 10+10 = 20, rank3 = 6+6 = 12; mean 43 */
    tsim_plan p;
    tsim_plan_init(&p, 4, 8, NULL);
    int a = tsim_plan_add(&p, 0, 1, 0, 20); /* intra (ranks 0,1 on node 0) */
    int b = tsim_plan_add(&p, 0, 3, 0, 25); /* inter */
    tsim_plan_alloc_row(&p, a)[0] = 20;     /* source 0 -> rank 1: same node */
    tsim_plan_alloc_row(&p, b)[1] = 10;     /* source 1 -> rank 3: cross node */
    tsim_plan_alloc_row(&p, b)[3] = 10;     /* source 3 -> rank 3: local to the guest */
    tsim_metrics m;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 3.0, "hand", &m, &err), 0, "%s", err.msg);
    cr_assert_eq(ev.load_after[0], 60);
    cr_assert_eq(ev.load_after[1], 60);
    cr_assert_eq(ev.load_after[3], 32);
    double mean = 172.0 / 4.0;
    cr_assert_float_eq(m.v[TSIM_M_RHO_BEFORE], (100 - mean) / mean, 1e-12);
    cr_assert_float_eq(m.v[TSIM_M_RHO_AFTER], (60 - mean) / mean, 1e-12);
    cr_assert_float_eq(m.v[TSIM_M_IMPROVE_PP], 100 * (60 - 100) / mean, 1e-9);
    cr_assert_eq(m.v[TSIM_M_INTRA], 1);
    cr_assert_eq(m.v[TSIM_M_INTER], 1);
    cr_assert_eq(m.v[TSIM_M_WEIGHTED], 4);
    cr_assert_eq(m.v[TSIM_M_OFFLOADED], 40);
    /* Cross-node tokens before: sources 2,3 sending to experts 0..3 (node 0) and
     * sources 0,1 sending to experts 4..7 (node 1). */
    double before = (10 + 5 + 5 + 5) * 2 + (2 + 2 + 1 + 1) * 2;
    cr_assert_eq(m.v[TSIM_M_TRAFFIC_INTER_BEFORE], before);
    /* After: source 3's 10 tokens of expert 0 now stay on node 1 (-10), source 1's
     * 10 tokens now cross to rank 3 (+10); source 0 -> rank 1 stays intra. */
    cr_assert_eq(m.v[TSIM_M_TRAFFIC_INTER_AFTER], before);
    /* weighted is linear in lambda */
    cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 10.0, "hand", &m, &err), 0);
    cr_assert_eq(m.v[TSIM_M_WEIGHTED], 11);
    tsim_plan_free(&p);
    tsim_evaluator_free(&ev);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

static void expect_reject(tsim_plan *p, bool slot_limited, const char *needle)
{
    tsim_topology t;
    tsim_record rec;
    tsim_evaluator ev;
    small_setup(&t, &rec, &ev);
    p->slot_limited = slot_limited;
    tsim_metrics m;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluate(&ev, &rec, p, 3.0, "bad", &m, &err), TSIM_E_INTERNAL, "expected a rejection: %s",
                 needle);
    cr_assert(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    cr_assert(strstr(err.msg, "planner 'bad'") != NULL, "%s", err.msg);
    tsim_evaluator_free(&ev);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(evaluate, rejects_every_broken_rule)
{
    tsim_plan p;
    tsim_plan_init(&p, 4, 8, NULL);
    tsim_plan_add(&p, 0, 0, 0, 1);
    expect_reject(&p, true, "on its home rank 0");

    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 1, 2, 1);
    expect_reject(&p, true, "uses slot 2, but K = 2");

    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 1, 0, 1);
    tsim_plan_add(&p, 2, 2, 0, 1);
    tsim_plan_add(&p, 4, 1, 0, 1);
    expect_reject(&p, true, "slot 0 of rank 1 holds both expert 0 and expert 4");

    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 1, 0, 1);
    tsim_plan_add(&p, 0, 1, 1, 1);
    expect_reject(&p, true, "expert 0 has two replicas on rank 1");

    tsim_plan_reset(&p);
    int i = tsim_plan_add(&p, 0, 1, 0, 1);
    tsim_plan_alloc_row(&p, i)[2] = 11; /* source 2 has only 10 of expert 0 */
    expect_reject(&p, true, "source rank 2 sends 11 tokens of expert 0 to replicas but has only 10");

    tsim_plan_reset(&p);
    i = tsim_plan_add(&p, 0, 1, 0, 1);
    int j = tsim_plan_add(&p, 0, 2, 0, 1);
    tsim_plan_alloc_row(&p, i)[2] = 6;
    tsim_plan_alloc_row(&p, j)[2] = 6; /* 12 > 10 over two replicas */
    expect_reject(&p, true, "has only 10");

    tsim_plan_reset(&p);
    i = tsim_plan_add(&p, 0, 1, 0, 1);
    tsim_plan_alloc_row(&p, i)[0] = -1;
    expect_reject(&p, true, "negative");

    tsim_plan_reset(&p);
    tsim_plan_add(&p, 9, 1, 0, 1);
    expect_reject(&p, true, "names expert 9");

    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 7, 0, 1);
    expect_reject(&p, true, "guest rank 7");

    /* LLEP-style plans have no K bound but still no duplicates */
    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 1, 5, 1);
    tsim_plan_add(&p, 0, 1, 6, 1);
    expect_reject(&p, false, "two replicas on rank 1");
    tsim_plan_free(&p);
}

Test(evaluate, slot_limit_off_allows_high_slot_index)
{
    tsim_topology t;
    tsim_record rec;
    tsim_evaluator ev;
    small_setup(&t, &rec, &ev);
    tsim_plan p;
    tsim_plan_init(&p, 4, 8, NULL);
    p.slot_limited = false;
    int i = tsim_plan_add(&p, 0, 2, 5, 1);
    tsim_plan_alloc_row(&p, i)[0] = 30;
    tsim_metrics m;
    cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 3.0, "llep", &m, NULL), 0);
    cr_assert_eq(m.v[TSIM_M_INTER], 1);
    tsim_plan_free(&p);
    tsim_evaluator_free(&ev);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(evaluate, empty_record_has_zero_imbalance)
{
    int64_t load[3] = {0, 0, 0};
    cr_assert_eq(tsim_imbalance(load, 3), 0.0);
    int64_t even[2] = {5, 5};
    cr_assert_eq(tsim_imbalance(even, 2), 0.0);
}

/* Native loads, summed over runs of experts with the same home, against
 * adding count by count: random shapes with shuffled home maps (runs of 1
 * to E / R experts) and contiguous ones. */
Test(evaluate, native_loads_match_count_by_count)
{
    uint64_t state = 99;
    for (int trial = 0; trial < 300; trial++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&state, 16, &s);
        int32_t *home = malloc(sizeof *home * (size_t)s.experts);
        tsim_random_home(&state, &s, home);
        tsim_topology t;
        tsim_error err;
        cr_assert_eq(tsim_topology_init(&t, s.ranks, s.experts, s.ranks_per_node, 0, trial % 3 ? home : NULL, &err),
                     0, "%s", err.msg);
        tsim_record rec;
        tsim_random_record(&state, &s, &rec);
        int64_t *load = malloc(sizeof *load * (size_t)s.ranks), *want = calloc((size_t)s.ranks, sizeof *want);
        tsim_native_loads(&t, &rec, load);
        for (int r = 0; r < s.ranks; r++)
            for (int e = 0; e < s.experts; e++)
                want[t.home[e]] += rec.counts[(size_t)r * (size_t)s.experts + (size_t)e];
        for (int r = 0; r < s.ranks; r++)
            cr_assert_eq(load[r], want[r], "trial %d rank %d", trial, r);
        free(load);
        free(want);
        free(home);
        tsim_record_free(&rec);
        tsim_topology_free(&t);
    }
}

Test(evaluate, break_even_lambda_paper_example)
{
    /* model.md: EP16 70%, TAOT 9 intra + 6 inter, LPLB 32 + 0: 23/6 = 3.83 */
    double ls;
    cr_assert_eq(tsim_break_even(9, 6, 32, 0, &ls), 0);
    cr_assert_float_eq(ls, 23.0 / 6.0, 1e-12);
    /* above it LPLB is cheaper, below it TAOT */
    cr_assert_lt(32 + 4.0 * 0, 9 + 4.0 * 6);
    cr_assert_gt(32 + 3.0 * 0, 9 + 3.0 * 6);
    cr_assert_eq(tsim_break_even(1, 2, 3, 2, &ls), -1);
}

Test(stats, summary_nearest_rank)
{
    double v[20], scratch[20];
    for (int i = 0; i < 20; i++)
        v[i] = 20 - i; /* 20..1 */
    tsim_summary s = tsim_summarize(v, 20, scratch);
    cr_assert_float_eq(s.mean, 10.5, 1e-12);
    cr_assert_float_eq(s.std, sqrt((20.0 * 20.0 - 1.0) / 12.0), 1e-12); /* population std of 1..20 */
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.max, 20);
    cr_assert_eq(s.p50, 10); /* ceil(0.5*20) = 10th */
    cr_assert_eq(s.p95, 19); /* ceil(0.95*20) = 19th */
    double one[1] = {7};
    s = tsim_summarize(one, 1, scratch);
    cr_assert_eq(s.p50, 7);
    cr_assert_eq(s.p95, 7);
    cr_assert_eq(s.std, 0);
    double three[3] = {1, 2, 3};
    s = tsim_summarize(three, 3, scratch);
    cr_assert_eq(s.p50, 2); /* ceil(1.5) = 2 */
    cr_assert_eq(s.p95, 3);
}

Test(parse, lists_and_ranges)
{
    double v[64];
    int n;
    cr_assert_eq(tsim_parse_double_list("1,2.5,3", v, 64, &n, "x", NULL), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(v[1], 2.5);
    cr_assert_eq(tsim_parse_double_list("1-10+1", v, 64, &n, "x", NULL), 0);
    cr_assert_eq(n, 10);
    cr_assert_eq(v[9], 10);
    cr_assert_eq(tsim_parse_double_list("1-2+0.25,5", v, 64, &n, "x", NULL), 0);
    cr_assert_eq(n, 6);
    cr_assert_eq(v[4], 2.0);
    cr_assert_eq(v[5], 5.0);
    tsim_error err = {0};
    cr_assert_eq(tsim_parse_double_list("1,,2", v, 64, &n, "--lambda", &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_parse_double_list("5-1", v, 64, &n, "--lambda", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "backwards") != NULL);
    cr_assert_eq(tsim_parse_double_list("abc", v, 64, &n, "--lambda", &err), TSIM_E_INPUT);
    int iv[8];
    cr_assert_eq(tsim_parse_int_list("4,8,16", iv, 8, &n, "--ep", NULL), 0);
    cr_assert_eq(iv[2], 16);
    cr_assert_eq(tsim_parse_int_list("1.5", iv, 8, &n, "--ep", &err), TSIM_E_INPUT);
    int x;
    cr_assert_eq(tsim_parse_int("12x", 0, 100, &x, "--slots", &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_parse_int("101", 0, 100, &x, "--slots", &err), TSIM_E_INPUT);
}

/* Integers are range-checked, never wrapped or truncated (issue 10 item 16). */
Test(parse, integers_never_wrap_or_truncate)
{
    tsim_error err = {0};
    int x = -1;
    int64_t y = -1;
    cr_assert_eq(tsim_parse_int("4294967297", 0, 1024, &x, "--slots", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--slots: 4294967297 is out of range 0..1024");
    cr_assert_eq(tsim_parse_int("1e300", 0, 1024, &x, "--slots", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--slots: 1e300 is out of range 0..1024");
    cr_assert_eq(tsim_parse_int("1.5", 0, 1024, &x, "--slots", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--slots: 1.5 is not a whole number");
    cr_assert_eq(tsim_parse_int64("99999999999999999999", 0, INT64_MAX, &y, "--seed", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "out of range") != NULL, "%s", err.msg);
    cr_assert_eq(x, -1, "nothing stored on error");
    /* a whole number in float notation is that integer */
    cr_assert_eq(tsim_parse_int64("2e9", 0, INT64_MAX, &y, "--seeds", &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(y, INT64_C(2000000000));
    cr_assert_eq(tsim_parse_int("1024.0", 0, 1024, &x, "--slots", &err), TSIM_OK);
    cr_assert_eq(x, 1024);
}

Test(planner, spec_with_label_and_options)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "taot-split=taot:--taot-phase3=split:--taot-no-flow-hint", &base, &err),
                 0, "%s", err.msg);
    cr_assert_str_eq(p.label, "taot-split");
    cr_assert_str_eq(p.desc->name, "taot");
    cr_assert_eq(TSIM_OWN(p, taot)->phase3, TSIM_TAOT_SPLIT);
    cr_assert(!TSIM_OWN(p, taot)->flow_hint);
    cr_assert(TSIM_OPTS(base, taot)->flow_hint, "base options untouched");
    cr_assert_eq(tsim_planner_spec_parse(&p, "echo", &base, &err), 0);
    cr_assert_str_eq(p.label, "echo");
    cr_assert_eq(tsim_planner_spec_parse(&p, "nope", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "unknown planner 'nope'") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_planner_spec_parse(&p, "x=taot:--taot-iters=abc", &base, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_planner_spec_parse(&p, "x=taot:--taot-bogus=1", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "unknown option --taot-bogus") != NULL, "%s", err.msg);
}

/* The descriptors' option tables: every default parses under its own rules,
 * every option is named after the planner that owns it, no name twice. */
Test(planner, option_tables_are_consistent)
{
    int n = 0;
    for (const tsim_option_spec *o; (o = tsim_planner_option_at(n)); n++) {
        cr_assert(o->help && *o->help, "--%s has no help", o->name);
        cr_assert_eq(tsim_planner_option_find(o->name), o, "--%s is listed twice", o->name);
        if (o->type == TSIM_OPTION_CLEAR) {
            cr_assert_null(o->def, "flag --%s has a default text", o->name);
            continue;
        }
        cr_assert(o->def && o->arg, "--%s needs a default and an argument name", o->name);
        tsim_options_block opts;
        memset(&opts, 0, sizeof opts);
        tsim_error err = {0};
        cr_assert_eq(tsim_option_apply(o, opts.bytes, o->def, &err), TSIM_OK, "--%s default '%s': %s", o->name, o->def,
                     err.msg);
    }
    cr_assert_geq(n, 20, "only %d options found", n);
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++) {
            size_t len = strlen((*d)->name);
            cr_assert(strncmp(o->name, (*d)->name, len) == 0 && o->name[len] == '-',
                      "--%s does not start with its planner's name '%s-'", o->name, (*d)->name);
        }
}

Test(planner, option_apply_checks_type_range_and_flags)
{
    const tsim_option_spec *iters = tsim_planner_option_find("taot-iters");
    const tsim_option_spec *phase3 = tsim_planner_option_find("taot-phase3");
    const tsim_option_spec *hint = tsim_planner_option_find("taot-no-flow-hint");
    cr_assert(iters && phase3 && hint);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_options *t = TSIM_OPTS(o, taot);
    cr_assert_eq(t->iters, 50);
    cr_assert(t->flow_hint);
    tsim_error err = {0};
    cr_assert_eq(tsim_option_apply(iters, t, "7", &err), TSIM_OK);
    cr_assert_eq(t->iters, 7);
    cr_assert_eq(tsim_option_apply(iters, t, "100001", &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_option_apply(iters, t, "1.5", &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_option_apply(iters, t, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--taot-iters needs a value");
    cr_assert_eq(tsim_option_apply(phase3, t, "split", &err), TSIM_OK);
    cr_assert_eq(t->phase3, TSIM_TAOT_SPLIT);
    cr_assert_eq(tsim_option_apply(phase3, t, "both", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--taot-phase3: expected auction or split, got 'both'");
    cr_assert_eq(tsim_option_apply(hint, t, "no", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--taot-no-flow-hint takes no value");
    cr_assert(t->flow_hint, "a rejected flag changes nothing");
    cr_assert_eq(tsim_option_apply(hint, t, NULL, &err), TSIM_OK);
    cr_assert_not(t->flow_hint);
    /* Set by name, each option lands in its own planner's block only. */
    bool known;
    cr_assert_eq(tsim_planner_options_set(&o, "llep-alpha", "2.5", &known, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(TSIM_OPTS(o, llep)->alpha, 2.5);
    cr_assert_eq(t->iters, 7, "taot's block untouched");
    cr_assert_eq(tsim_planner_options_set(&o, "lambda-plan", "4", &known, &err), TSIM_OK);
    cr_assert_eq(o.common.lambda_plan, 4.0);
}

/* Every planner owns its block: its size fits the inline storage and every
 * option of its table lies inside it. */
Test(planner, option_blocks_hold_their_tables)
{
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        cr_assert_leq((*d)->options_size, (size_t)TSIM_OPTIONS_BLOCK_MAX, "%s: block too large", (*d)->name);
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++) {
            size_t w = o->type == TSIM_OPTION_DOUBLE || o->type == TSIM_OPTION_INT64 ? 8
                       : o->type == TSIM_OPTION_STRING                               ? o->size
                       : o->type == TSIM_OPTION_CLEAR                                ? sizeof(bool)
                                                                                     : sizeof(int);
            cr_assert_leq(o->offset + w, (*d)->options_size, "%s: --%s lies outside its block of %zu bytes",
                          (*d)->name, o->name, (*d)->options_size);
        }
    }
}

typedef struct {
    int count;
    char keys[64][64];
} seen_options;

static void remember_option(const tsim_option_value *v, void *ctx)
{
    seen_options *s = ctx;
    if (s->count < 64)
        snprintf(s->keys[s->count++], 64, "%s", v->key);
}

/* JSON results record every option of every planner from its table. */
Test(planner, options_each_walks_every_table)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        tsim_planner p;
        tsim_planner_configure(&p, *d, NULL, &base);
        seen_options seen = {0};
        tsim_planner_options_each(&p, remember_option, &seen);
        int want = 1; /* lambda_plan, common to all */
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++)
            want++;
        cr_assert_eq(seen.count, want, "%s: %d options visited, %d expected", (*d)->name, seen.count, want);
    }
    tsim_planner p;
    tsim_planner_configure(&p, &tsim_planner_taot, "t", &base);
    seen_options seen = {0};
    tsim_planner_options_each(&p, remember_option, &seen);
    cr_assert_str_eq(seen.keys[0], "lambda_plan");
    cr_assert_str_eq(seen.keys[1], "phase3");
    cr_assert_str_eq(seen.keys[2], "flow_hint", "a flag is recorded under its positive name");
}

Test(planner, label_refuses_another_planners_option)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "t=taot:--llep-alpha=2", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--llep-alpha is an option of llep, not of taot") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_planner_spec_parse(&p, "t=taot:--lambda-plan=2", &base, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(p.common.lambda_plan, 2.0);
}

/* The contracts sessions, -j, shards and bench read: a planner that can be
 * seeded with a history keeps one; optimal is expensive. */
Test(planner, contracts_are_declared)
{
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        cr_assert((*d)->source && *(*d)->source, "%s names no source", (*d)->name);
        if ((*d)->prime)
            cr_assert_neq((*d)->state, TSIM_STATE_NONE, "%s takes a history but declares no state", (*d)->name);
        if ((*d)->state == TSIM_STATE_WINDOW)
            cr_assert_gt((*d)->state_window, 0, "%s: a window of no records", (*d)->name);
    }
    cr_assert_eq(tsim_planner_optimal.cost, TSIM_COST_EXPENSIVE);
    cr_assert_eq(tsim_planner_taot.cost, TSIM_COST_CHEAP);
    cr_assert_eq(tsim_planner_eplb.state, TSIM_STATE_LAYER_PREFIX);
    cr_assert_eq(tsim_planner_taot.state, TSIM_STATE_NONE);
}

Test(split, proportional_floors_then_intervals)
{
    /* One expert (0) with 3 sources holding 5, 3, 2 tokens (tpe 10); two
     * replicas want 4 (rank 1 slot 0) and 3 (rank 2 slot 0). */
    tsim_record rec;
    tsim_record_alloc(&rec, 3, 3, NULL);
    int64_t c[9] = {5, 0, 0, 3, 0, 0, 2, 0, 0};
    set_counts(&rec, c);
    int64_t tpe[3] = {10, 0, 0};
    tsim_plan p;
    tsim_plan_init(&p, 3, 4, NULL);
    int b = tsim_plan_add(&p, 0, 2, 0, 3);
    int a = tsim_plan_add(&p, 0, 1, 0, 4);
    tsim_split_scratch s;
    cr_assert_eq(tsim_split_scratch_init(&s, 3, 4, NULL), 0);
    cr_assert_eq(tsim_split_plan(&rec, tpe, 1, &p, &s, NULL), 0);
    /* floors for d=4: 2, 1, 0 (0.8 -> 0); d=3: 1, 0, 0 (1.5, 0.9, 0.6).
     * leftovers per source: 5-2-1 = 2, 3-1 = 2, 2; demands left: rank1 1, rank2 2.
     * end to end: rank 1 takes 1 from source 0; rank 2 takes 1 from source 0 and 1 from source 1. */
    const int64_t *ra = tsim_plan_alloc_row(&p, a), *rb = tsim_plan_alloc_row(&p, b);
    cr_assert_eq(ra[0], 3);
    cr_assert_eq(ra[1], 1);
    cr_assert_eq(ra[2], 0);
    cr_assert_eq(rb[0], 2);
    cr_assert_eq(rb[1], 1);
    cr_assert_eq(rb[2], 0);
    tsim_split_scratch_free(&s);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
}

Test(split, float_floor_rounds_up_as_published)
{
    /* vectors/README: 6332 * 19849 / 99670 = 1260.99998 becomes 1261 in float. */
    float share = (float)6332 / (float)99670;
    float prod = share * (float)19849;
    cr_assert_eq((long)floorf(prod), 1261);
}

Test(outfile, commit_renames_and_abort_leaves_nothing)
{
    char dir[] = "/tmp/tsim-outfile-XXXXXX";
    cr_assert(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/result.txt", dir);
    tsim_outfile f;
    cr_assert_eq(tsim_outfile_open(&f, path, NULL), 0);
    fputs("hello\n", f.fp);
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "target must not exist before commit");
    cr_assert_eq(tsim_outfile_commit(&f, NULL), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 6);

    snprintf(path, sizeof path, "%s/aborted.txt", dir);
    cr_assert_eq(tsim_outfile_open(&f, path, NULL), 0);
    fputs("partial", f.fp);
    tsim_outfile_abort(&f);
    cr_assert_neq(stat(path, &st), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
    cr_assert_eq(system(cmd), 0, "only result.txt remains");

    tsim_error err = {0};
    cr_assert_eq(tsim_outfile_open(&f, "/dev/full", &err), 0);
    for (int i = 0; i < 10000; i++)
        fputs("data data data data\n", f.fp);
    cr_assert_eq(tsim_outfile_commit(&f, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "/dev/full: write failed") != NULL, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

#include "stepmodel.h"

Test(stepmodel, hand_computed_cases)
{
    tsim_step_model m = {.us_per_token = 1.0, .backward_ratio = 2.0, .expert_mb = 10.0, .intra_gbps = 10.0,
                         .inter_gbps = 1.0, .overlap = false};
    int64_t home[2] = {1000, 200}, guest[2] = {0, 300};
    int32_t intra[2] = {0, 0}, inter[2] = {0, 1};
    /* rank 1 fetches 10 MB at 1 GB/s = 10 ms; fwd 10 + 0.2 + 0.3, bwd 10 + 0.4 + 0.6 */
    cr_assert_float_eq(tsim_step_time_ms(&m, 2, home, guest, intra, inter), 21.5, 1e-12);
    m.overlap = true; /* fwd max(10, 0.2) + 0.3, bwd max(10, 0.4) + 0.6 */
    cr_assert_float_eq(tsim_step_time_ms(&m, 2, home, guest, intra, inter), 20.9, 1e-12);
    intra[1] = 1;
    inter[1] = 0; /* 1 ms within the node */
    m.overlap = false; /* rank 1: fwd 1.5, bwd 2.0; rank 0: fwd 1, bwd 2 */
    cr_assert_float_eq(tsim_step_time_ms(&m, 2, home, guest, intra, inter), 3.5, 1e-12);
    m.overlap = true; /* rank 1: fwd 1.3, bwd 1.6; rank 0 sets bwd 2 */
    cr_assert_float_eq(tsim_step_time_ms(&m, 2, home, guest, intra, inter), 3.3, 1e-12);
    int64_t loads[2] = {1000, 500};
    cr_assert_float_eq(tsim_step_time_static_ms(&m, 2, loads), 3.0, 1e-12);
}

Test(stepmodel, options)
{
    tsim_step_model m;
    tsim_step_model_default(&m);
    bool known;
    tsim_error err = {0};
    cr_assert_eq(tsim_step_model_option(&m, "inter-gbps", "50", &known, &err), 0);
    cr_assert_eq(m.inter_gbps, 50);
    cr_assert_eq(tsim_step_model_option(&m, "no-overlap", NULL, &known, &err), 0);
    cr_assert(!m.overlap);
    cr_assert_eq(tsim_step_model_option(&m, "intra-gbps", "0", &known, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_step_model_option(&m, "bogus", "1", &known, &err), TSIM_E_INPUT);
    cr_assert(!known);
}

#include "sort.h"

Test(sort, heap_sort_of_int64_and_stable_index_sort)
{
    uint64_t x = 12345;
    int64_t a[257];
    for (int n = 0; n <= 257; n += 32) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            a[i] = (int64_t)(x >> 40) % 50 - 25;
        }
        tsim_sort_i64(a, (size_t)n);
        for (int i = 1; i < n; i++)
            cr_assert_leq(a[i - 1], a[i]);
    }
    int64_t key[6] = {3, 1, 3, 2, 1, 3};
    int idx[6] = {0, 1, 2, 3, 4, 5}, tmp[6];
    tsim_sort_stable_by_key(idx, 6, key, true, tmp);
    int want[6] = {0, 2, 5, 3, 1, 4}; /* ties keep input order */
    for (int i = 0; i < 6; i++)
        cr_assert_eq(idx[i], want[i]);
}

#include "cli_common.h"

/* Out of memory is the machine's limit, not a bug (issue 10 item 8): the CLI
 * says what to do instead of "please report it"; real bugs still say bug. */
static char *fail_text(const char *msg, int code, int *status)
{
    char path[] = "/tmp/tsim-cli-fail-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    tsim_error err = {0};
    tsim_error_set(&err, code, "%s", msg);
    *status = tsim_cli_fail("replay", &err);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char text[512];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

Test(cli, out_of_memory_is_not_reported_as_a_bug)
{
    int status;
    const char *t = fail_text("out of memory for the evaluator", TSIM_E_INTERNAL, &status);
    cr_assert_eq(status, 3);
    cr_assert(strstr(t, "a bug") == NULL, "%s", t);
    cr_assert(strstr(t, "not enough memory; free some") != NULL, "%s", t);
    t = fail_text("plan check failed", TSIM_E_INTERNAL, &status);
    cr_assert_eq(status, 3);
    cr_assert(strstr(t, "a bug, please report it") != NULL, "%s", t);
}

#include "utf8.h"

/* JSON output stays UTF-8 whatever bytes a file name has (issue 10 item 17). */
Test(utf8, invalid_bytes_become_replacement_escapes)
{
    char ok[] = "{\"path\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}";
    cr_assert_eq(tsim_utf8_repair_json(ok), ok, "valid text is returned as is");
    char bad[] = "{\"path\": \"a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xe2\x82\"}";
    char *fixed = tsim_utf8_repair_json(bad);
    cr_assert_str_eq(fixed, "{\"path\": \"a\\ufffdb\\ufffd\\ufffdc\\ufffd\\ufffd\\ufffdd\\ufffd\\ufffd\"}");
    free(fixed);
}

static int64_t key_of(const void *keys, int i)
{
    return ((const int64_t *)keys)[i];
}

Test(search, finds_keys_and_insertion_points)
{
    const int64_t keys[] = {2, 5, 9};
    cr_assert_eq(tsim_search_sorted(3, 2, key_of, keys), 0);
    cr_assert_eq(tsim_search_sorted(3, 9, key_of, keys), 2);
    /* absent: -(insertion point) - 1 */
    cr_assert_eq(tsim_search_sorted(3, 1, key_of, keys), -1);
    cr_assert_eq(tsim_search_sorted(3, 6, key_of, keys), -3);
    cr_assert_eq(tsim_search_sorted(3, 10, key_of, keys), -4);
    cr_assert_eq(tsim_search_sorted(0, 4, key_of, keys), -1);
}

/* Slots per planner: LABEL=NAME:--slots=K for any planner; MoonEP's rule
 * runs at E/R by default and refuses a smaller explicit K, naming the K. */
Test(planner, slots_per_planner)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_topology t;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&t, 4, 32, 2, 2, NULL, &err), 0);
    tsim_planner p;
    int k = -1;
    cr_assert_eq(tsim_planner_spec_parse(&p, "e=echo:--slots=3", &base, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_planner_slots(&p, &t, &k, &err), 0);
    cr_assert_eq(k, 3);
    cr_assert_eq(tsim_planner_spec_parse(&p, "echo", &base, &err), 0);
    cr_assert_eq(tsim_planner_slots(&p, &t, &k, &err), 0);
    cr_assert_eq(k, 2, "the command's K");
    cr_assert_eq(tsim_planner_spec_parse(&p, "moonep", &base, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_planner_slots(&p, &t, &k, &err), 0);
    cr_assert_eq(k, 8, "E/R");
    cr_assert_eq(tsim_planner_spec_parse(&p, "m=moonep:--slots=9", &base, &err), 0);
    cr_assert_eq(tsim_planner_slots(&p, &t, &k, &err), 0);
    cr_assert_eq(k, 9);
    cr_assert_eq(tsim_planner_spec_parse(&p, "m=moonep:--slots=4", &base, &err), 0);
    cr_assert_eq(tsim_planner_slots(&p, &t, &k, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "needs --slots >= E/R = 8") != NULL, "%s", err.msg);
    tsim_topology_free(&t);
}
