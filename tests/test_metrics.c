/* Metrics that match the serving stacks' (issue 24): balancedness per record
 * and in vLLM's aggregate form, capacity-limited drops, and the per-layer
 * breakdown; hand-checked on small records, then properties on random ones. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "evaluate.h"
#include "layers_print.h"
#include "plan.h"
#include "random_records.h"
#include "record.h"
#include "registry.h"
#include "session.h"
#include "study.h"
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

Test(dropped, tokens_above_c_times_the_mean)
{
    int64_t load[4] = {100, 40, 20, 12}; /* total 172, mean 43 */
    cr_assert_eq(tsim_capacity(172, 4, 1.0), 43);
    cr_assert_eq(tsim_dropped(load, 4, 1.0), 57);       /* 100 - 43 */
    cr_assert_eq(tsim_capacity(172, 4, 1.5), 64);       /* floor(64.5) */
    cr_assert_eq(tsim_dropped(load, 4, 1.5), 36);
    cr_assert_eq(tsim_dropped(load, 4, 0.5), 79 + 19);  /* cap 21: 100-21 + 40-21 */
    cr_assert_eq(tsim_dropped(load, 4, 3.0), 0);        /* cap 129 */
    cr_assert_eq(tsim_dropped(load, 4, 0.0), 0, "no factor: no limit");
    int64_t empty[3] = {0, 0, 0};
    cr_assert_eq(tsim_dropped(empty, 3, 1.0), 0);
}

Test(dropped, before_and_after_a_plan)
{
    tsim_topology t;
    tsim_record rec;
    tsim_evaluator ev;
    setup(&t, &rec, &ev);
    ev.capacity_factor = 1.25; /* cap floor(53.75) = 53 */
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
    cr_assert_eq(m.v[TSIM_M_DROPPED_BEFORE], 100 - 53);
    cr_assert_eq(m.v[TSIM_M_DROPPED_AFTER], (60 - 53) * 2); /* ranks 0 and 1 at 60 */
    cr_assert_eq(m.v[TSIM_M_LOAD_MEAN], 43);
    cr_assert_eq(m.v[TSIM_M_LOAD_MAX_BEFORE], 100);
    cr_assert_eq(m.v[TSIM_M_LOAD_MAX_AFTER], 60);
    ev.capacity_factor = 0;
    cr_assert_eq(tsim_evaluate(&ev, &rec, &p, 3.0, "hand", &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.v[TSIM_M_DROPPED_BEFORE], 0);
    cr_assert_eq(m.v[TSIM_M_DROPPED_AFTER], 0);
    tsim_plan_free(&p);
    teardown(&t, &rec, &ev);
}

/* A session of `none` over 4 ranks and 8 experts (2 per rank). */
static void none_session(tsim_session *s, const char *planners)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner list[8];
    int n = 0;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_list_parse(planners, &base, list, 8, &n, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_session_init(s, 4, 8, 2, 2, NULL, list, n, 3.0, &err), TSIM_OK, "%s", err.msg);
}

/* A record whose native loads (expert 2r carries them all) are `load`. */
static void record_of_loads(tsim_record *rec, const int64_t *load, int64_t layer, int64_t index)
{
    cr_assert_eq(tsim_record_alloc(rec, 4, 8, NULL), 0);
    memset(rec->counts, 0, sizeof *rec->counts * 32);
    for (int r = 0; r < 4; r++)
        rec->counts[2 * r] = load[r]; /* source 0 sends everything */
    rec->layer = layer;
    rec->index = index;
}

static double json_num(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(x), "no number %s", k);
    return x->valuedouble;
}

/* vLLM divides the sum over layers of the mean load by the sum over layers of
 * the max load; taotsim's balancedness is the mean over records of mean/max. */
Test(vllm, two_layer_aggregate_by_hand)
{
    tsim_session s;
    none_session(&s, "none");
    s.by_layer = true;
    const int64_t l0[4] = {100, 40, 20, 12}; /* mean 43, max 100 */
    const int64_t l1[4] = {10, 10, 10, 10};  /* mean 10, max 10 */
    tsim_record r0, r1;
    record_of_loads(&r0, l0, 0, 0);
    record_of_loads(&r1, l1, 1, 1);
    tsim_error err = {0};
    cr_assert_eq(tsim_session_record(&s, &r0, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_session_record(&s, &r1, &err), TSIM_OK, "%s", err.msg);
    const tsim_planner_result *res = &s.results[0];
    cr_assert_float_eq(tsim_series_mean(&res->metrics[TSIM_M_BALANCEDNESS_BEFORE]), (0.43 + 1.0) / 2, 1e-12);
    cJSON *v = tsim_vllm_balancedness_json(res->metrics);
    cr_assert_float_eq(json_num(v, "before"), (43.0 + 10.0) / (100.0 + 10.0), 1e-12);
    cr_assert_float_eq(json_num(v, "after"), 53.0 / 110.0, 1e-12, "none moves nothing");
    cJSON_Delete(v);
    /* Per layer, each form reduces to its one record's mean / max. */
    cJSON *layers = tsim_layers_json(&s, 0);
    cr_assert_eq(cJSON_GetArraySize(layers), 2);
    const cJSON *a = cJSON_GetArrayItem(layers, 0), *b = cJSON_GetArrayItem(layers, 1);
    cr_assert_eq(json_num(a, "layer"), 0);
    cr_assert_eq(json_num(b, "layer"), 1);
    cr_assert_float_eq(json_num(cJSON_GetObjectItem(a, "balancedness_vllm"), "before"), 0.43, 1e-12);
    cr_assert_float_eq(json_num(cJSON_GetObjectItem(b, "balancedness_vllm"), "before"), 1.0, 1e-12);
    const cJSON *bm = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "metrics"), "balancedness_before");
    cr_assert_float_eq(json_num(bm, "mean"), 0.43, 1e-12);
    cJSON_Delete(layers);
    tsim_record_free(&r0);
    tsim_record_free(&r1);
    tsim_session_free(&s);
}

/* Records with equal totals and equal maxima: the two forms agree. */
Test(vllm, equal_records_give_equal_forms)
{
    tsim_session s;
    none_session(&s, "none");
    const int64_t l[4] = {9, 3, 0, 0};
    tsim_error err = {0};
    for (int i = 0; i < 3; i++) {
        tsim_record r;
        record_of_loads(&r, l, i, i);
        cr_assert_eq(tsim_session_record(&s, &r, &err), TSIM_OK, "%s", err.msg);
        tsim_record_free(&r);
    }
    cJSON *v = tsim_vllm_balancedness_json(s.results[0].metrics);
    cr_assert_float_eq(json_num(v, "before"), 3.0 / 9.0, 1e-12);
    cr_assert_float_eq(tsim_series_mean(&s.results[0].metrics[TSIM_M_BALANCEDNESS_BEFORE]), 3.0 / 9.0, 1e-12);
    cJSON_Delete(v);
    tsim_session_free(&s);
}

/* Property: over random records and layers, each layer's records add up to
 * the whole (counts and sums of every metric), and -j 3 gives the very same
 * per-layer series as one thread. */
Test(by_layer, layers_partition_the_records_at_any_j)
{
    uint64_t seed = 24;
    tsim_random_shape shape = {.ranks = 8, .experts = 32, .slots = 2, .ranks_per_node = 4};
    enum { N = 60 };
    tsim_record recs[N];
    for (int i = 0; i < N; i++) {
        tsim_random_record(&seed, &shape, &recs[i]);
        recs[i].index = i;
        recs[i].layer = (int64_t)tsim_rand_range(&seed, 0, 4) * 3; /* layers 0, 3, ..., 12 in any order */
        recs[i].microbatch = i;
    }
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner list[4];
    int n = 0;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_list_parse("none,taot,eplb", &base, list, 4, &n, &err), TSIM_OK, "%s", err.msg);
    tsim_session one, many;
    cr_assert_eq(tsim_session_init(&one, 8, 32, 4, 2, NULL, list, n, 3.0, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_session_init(&many, 8, 32, 4, 2, NULL, list, n, 3.0, &err), TSIM_OK, "%s", err.msg);
    one.by_layer = many.by_layer = true;
    one.capacity_factor = many.capacity_factor = 1.1;
    for (int i = 0; i < N; i++)
        cr_assert_eq(tsim_session_record(&one, &recs[i], &err), TSIM_OK, "%s", err.msg);
    tsim_session_jobs *j;
    cr_assert_eq(tsim_session_jobs_start(&j, &many, 3, &err), TSIM_OK, "%s", err.msg);
    for (int i = 0; i < N; i++)
        cr_assert_eq(tsim_session_jobs_record(j, &recs[i], NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_session_jobs_finish(j, &err), TSIM_OK, "%s", err.msg);
    tsim_session_jobs_free(j);
    for (int p = 0; p < n; p++) {
        const tsim_planner_result *a = &one.results[p], *b = &many.results[p];
        cr_assert_eq(a->n_layers, b->n_layers);
        int64_t records = 0;
        for (int l = 0; l < a->n_layers; l++) {
            cr_assert_eq(a->layers[l].layer, b->layers[l].layer);
            cr_assert(l == 0 || a->layers[l].layer > a->layers[l - 1].layer, "ascending layers");
            records += a->layers[l].records;
            for (int m = 0; m < TSIM_M_COUNT; m++) {
                if (m == TSIM_M_PLAN_NS)
                    continue;
                const tsim_series *x = &a->layers[l].metrics[m], *y = &b->layers[l].metrics[m];
                cr_assert_eq(x->n, y->n);
                for (size_t i = 0; i < x->n; i++)
                    cr_assert_eq(x->values[i], y->values[i], "%s layer %lld %s", one.planners[p].label,
                                 (long long)a->layers[l].layer, tsim_metric_names[m]);
            }
        }
        cr_assert_eq(records, a->records);
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            double whole = 0, parts = 0;
            for (size_t i = 0; i < a->metrics[m].n; i++)
                whole += a->metrics[m].values[i];
            for (int l = 0; l < a->n_layers; l++)
                for (size_t i = 0; i < a->layers[l].metrics[m].n; i++)
                    parts += a->layers[l].metrics[m].values[i];
            cr_assert_float_eq(parts, whole, 1e-9 * (1 + fabs(whole)), "%s", tsim_metric_names[m]);
        }
        /* Per record: some rank drops exactly when the largest load passes
         * the capacity floor(C * mean), and at least that excess. */
        for (size_t i = 0; i < a->metrics[TSIM_M_DROPPED_AFTER].n; i++) {
            const double cap = floor(1.1 * a->metrics[TSIM_M_LOAD_MEAN].values[i]);
            const double top = a->metrics[TSIM_M_LOAD_MAX_AFTER].values[i];
            const double dropped = a->metrics[TSIM_M_DROPPED_AFTER].values[i];
            cr_assert_eq(dropped > 0, top > cap, "record %zu: max %g, cap %g, dropped %g", i, top, cap, dropped);
            cr_assert(dropped >= top - cap);
        }
    }
    tsim_session_free(&one);
    tsim_session_free(&many);
    for (int i = 0; i < N; i++)
        tsim_record_free(&recs[i]);
}

/* --fail-if over a replay with --by-layer: a planner's row without a key is
 * the whole run, its layer rows answer only to their key. */
Test(by_layer, fail_if_names_layers_and_the_whole_run)
{
    tsim_study st;
    tsim_study_init(&st, "replay");
    const char *keys[3] = {"", "layer0", "layer7"};
    const double rho[3] = {0.5, 0.1, 2.0};
    for (int i = 0; i < 3; i++) {
        tsim_study_row *r = tsim_study_add(&st);
        cr_assert(r);
        snprintf(r->key, sizeof r->key, "%s", keys[i]);
        snprintf(r->planner, sizeof r->planner, "taot");
        r->ok = true;
        r->metric_on[TSIM_M_RHO_AFTER] = true;
        r->metrics[TSIM_M_RHO_AFTER].mean = rho[i];
    }
    double v;
    cr_assert_eq(tsim_study_lookup(&st, "taot.rho_after.mean", &v), 0);
    cr_assert_eq(v, 0.5, "the whole run, not the mean of its rows (got %g)", v);
    cr_assert_eq(tsim_study_lookup(&st, "layer7.taot.rho_after.mean", &v), 0);
    cr_assert_eq(v, 2.0);
    cr_assert_eq(tsim_study_lookup(&st, "layer3.taot.rho_after.mean", &v), -1, "no such layer");
    /* A study's cells all have keys: without one, their mean, as before. */
    snprintf(st.rows[0].key, sizeof st.rows[0].key, "ep16");
    cr_assert_eq(tsim_study_lookup(&st, "taot.rho_after.mean", &v), 0);
    cr_assert_float_eq(v, (0.5 + 0.1 + 2.0) / 3, 1e-12);
    tsim_study_free(&st);
}
