/* The production balancers (issue 22): moonep and ultraep. Every spec vector
 * (refusals included), the configuration errors, and properties over random
 * records: moonep's exact caps, ultraep's node wall and its ranks that never
 * both send and receive, evaluator acceptance, reuse of scratch across
 * records, and the explicit home array as a renumbering. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "moonep.h"
#include "plan.h"
#include "random_records.h"
#include "record.h"
#include "swift.h"
#include "topology.h"
#include "trtllm.h"
#include "ultraep.h"
#include "vector_check.h"

/* One configured balancer behind a common face, so the vector runner and the
 * property tests treat both alike. */
typedef struct {
    bool is_moonep;
    tsim_moonep *moonep;
    tsim_ultraep *ultraep;
    tsim_trtllm *trtllm;
    tsim_swift *swift;
} balancer;

static int balancer_plan(balancer *b, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    if (b->trtllm)
        return tsim_trtllm_plan(b->trtllm, rec, plan, err);
    if (b->swift)
        return tsim_swift_plan(b->swift, rec, plan, err);
    return b->is_moonep ? tsim_moonep_plan(b->moonep, rec, plan, err) : tsim_ultraep_plan(b->ultraep, rec, plan, err);
}

static void balancer_free(balancer *b)
{
    tsim_moonep_free(b->moonep);
    tsim_ultraep_free(b->ultraep);
    tsim_trtllm_free(b->trtllm);
    tsim_swift_free(b->swift);
    memset(b, 0, sizeof *b);
}

/* ---- vectors -------------------------------------------------------------- */

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf != NULL);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const cJSON *field(const cJSON *obj, const char *name, const char *path)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    cr_assert(v != NULL, "%s: no field %s", path, name);
    return v;
}

static int int_field(const cJSON *obj, const char *name, const char *path)
{
    const cJSON *v = field(obj, name, path);
    cr_assert(cJSON_IsNumber(v), "%s: %s is not a number", path, name);
    return (int)v->valuedouble;
}

static void load_counts(const cJSON *root, const char *path, tsim_record *rec)
{
    const cJSON *rows = field(root, "counts", path);
    const int R = cJSON_GetArraySize(rows), E = cJSON_GetArraySize(cJSON_GetArrayItem(rows, 0));
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    for (int r = 0; r < R; r++) {
        const cJSON *row = cJSON_GetArrayItem(rows, r);
        cr_assert_eq(cJSON_GetArraySize(row), E, "%s: ragged counts", path);
        for (int e = 0; e < E; e++)
            rec->counts[(size_t)r * (size_t)E + (size_t)e] = (int64_t)cJSON_GetArrayItem(row, e)->valuedouble;
    }
}

/* Configures the vector's planner from its options; returns init's status. */
static int configure(const char *planner, const cJSON *opts, const char *path, const tsim_topology *topo,
                     balancer *b, tsim_error *err)
{
    memset(b, 0, sizeof *b);
    const int slots = int_field(opts, "slots", path);
    if (strcmp(planner, "moonep") == 0) {
        tsim_moonep_options o;
        tsim_moonep_options_default(&o);
        const cJSON *order = field(opts, "slot_order", path);
        cr_assert_eq(tsim_moonep_parse_slot_order(order->valuestring, &o.slot_order, err), 0, "%s", err->msg);
        b->is_moonep = true;
        return tsim_moonep_init(&b->moonep, topo, slots, &o, err);
    }
    if (strcmp(planner, "trtllm") == 0) {
        tsim_trtllm_options o;
        tsim_trtllm_options_default(&o);
        cr_assert_eq(tsim_layout_history_parse("trtllm", field(opts, "history", path)->valuestring, &o.history, err), 0);
        o.decay = field(opts, "decay", path)->valuedouble;
        return tsim_trtllm_init(&b->trtllm, topo, slots, &o, err);
    }
    if (strcmp(planner, "swift") == 0) {
        tsim_swift_options o;
        tsim_swift_options_default(&o);
        cr_assert_eq(tsim_layout_history_parse("swift", field(opts, "history", path)->valuestring, &o.history, err), 0);
        o.tp = int_field(opts, "tp", path);
        return tsim_swift_init(&b->swift, topo, slots, &o, err);
    }
    cr_assert_str_eq(planner, "ultraep", "%s: unexpected planner", path);
    tsim_ultraep_options o;
    tsim_ultraep_options_default(&o);
    cr_assert_eq(tsim_ultraep_parse_solver(field(opts, "solver", path)->valuestring, &o.solver, err), 0);
    o.min_tokens = int_field(opts, "min_tokens", path);
    o.oracle_eps = field(opts, "oracle_eps", path)->valuedouble;
    o.balance_threshold = field(opts, "balance_threshold", path)->valuedouble;
    o.locality = cJSON_IsTrue(field(opts, "locality", path));
    o.zero_master = cJSON_IsTrue(field(opts, "zero_master", path));
    return tsim_ultraep_init(&b->ultraep, topo, slots, &o, err);
}

static void expected_plan(const cJSON *expect, const char *path, int R, tsim_plan *want)
{
    const cJSON *reps = field(expect, "replicas", path), *alloc = field(expect, "alloc", path);
    const int n = cJSON_GetArraySize(reps);
    cr_assert_eq(tsim_plan_init(want, R, n > 0 ? n : 1, NULL), 0);
    for (int i = 0; i < n; i++) {
        const cJSON *x = cJSON_GetArrayItem(reps, i);
        tsim_plan_add(want, (int)cJSON_GetArrayItem(x, 0)->valuedouble, (int)cJSON_GetArrayItem(x, 1)->valuedouble,
                      (int)cJSON_GetArrayItem(x, 2)->valuedouble, (int64_t)cJSON_GetArrayItem(x, 3)->valuedouble);
    }
    const cJSON *a;
    cJSON_ArrayForEach(a, alloc) {
        int v[5];
        for (int k = 0; k < 5; k++)
            v[k] = (int)cJSON_GetArrayItem(a, k)->valuedouble;
        int found = -1;
        for (int i = 0; i < want->count; i++)
            if (want->replicas[i].expert == v[1] && want->replicas[i].guest == v[2] && want->replicas[i].slot == v[3])
                found = i;
        cr_assert(found >= 0, "%s: alloc entry for a replica not listed", path);
        tsim_plan_alloc_row(want, found)[v[0]] = (int64_t)cJSON_GetArrayItem(a, 4)->valuedouble;
    }
}

static void assert_close(double got, double want, const char *what, const char *path)
{
    const double tol = want == 0.0 ? 1e-12 : 1e-9 * (want < 0 ? -want : want);
    cr_assert(got - want <= tol && want - got <= tol, "%s: %s is %.17g, expected %.17g", path, what, got, want);
}

/* Flattens an array (of arrays) of integers; NULL when absent. *n gets the
 * number of rows (or of items for a flat array). */
static int64_t *flat_ints(const cJSON *obj, const char *name, int *n, int *total)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, name);
    *n = *total = 0;
    if (!a)
        return NULL;
    *n = cJSON_GetArraySize(a);
    int64_t *out = malloc(sizeof *out * 65536);
    const cJSON *x, *y;
    cJSON_ArrayForEach(x, a) {
        if (cJSON_IsArray(x)) {
            cJSON_ArrayForEach(y, x) out[(*total)++] = (int64_t)y->valuedouble;
        } else {
            out[(*total)++] = (int64_t)x->valuedouble;
        }
    }
    return out;
}

static int32_t *to_i32(const int64_t *v, int n)
{
    if (!v)
        return NULL;
    int32_t *out = malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        out[i] = (int32_t)v[i];
    return out;
}

/* Seeds a layout planner's layer 0 with the vector's window, layout and
 * placement (production-balancers.md 4); returns prev_placement (or NULL). */
static int32_t *prime_layout_planner(balancer *b, const cJSON *root, const char *path)
{
    int rows, total, lrows, ltotal, prow, ptotal;
    int64_t *window = flat_ints(root, "prev_window", &rows, &total);
    int64_t *layout = flat_ints(root, "prev_layout", &lrows, &ltotal);
    int64_t *placement = flat_ints(root, "prev_placement", &prow, &ptotal);
    int32_t *layout32 = to_i32(layout, ltotal), *placement32 = to_i32(placement, ptotal);
    tsim_error err = {0};
    int rc = -1;
    if (b->trtllm)
        rc = tsim_trtllm_prime(b->trtllm, 0, window, rows, layout32, placement32, &err);
    else
        rc = tsim_swift_prime(b->swift, 0, window, rows, layout32, placement32, &err);
    cr_assert_eq(rc, 0, "%s: prime: %s", path, err.msg);
    free(window);
    free(layout);
    free(placement);
    free(layout32);
    return placement32;
}

static void check_layout(const balancer *b, const cJSON *root, const char *path)
{
    const cJSON *check = cJSON_GetObjectItemCaseSensitive(root, "check");
    int rows, total;
    int64_t *want = check ? flat_ints(check, "layout", &rows, &total) : NULL;
    if (!want)
        return;
    int32_t got[65536];
    if (b->trtllm)
        cr_assert_eq(tsim_trtllm_layout(b->trtllm, 0, got), 0);
    else
        cr_assert_eq(tsim_swift_layout(b->swift, 0, got), 0);
    for (int p = 0; p < total; p++)
        cr_assert_eq(got[p], want[p], "%s: layout position %d holds %d, expected %lld", path, p, got[p],
                     (long long)want[p]);
    free(want);
}

/* Passes when the plan equals expect entry by entry and the metrics match;
 * a refusal vector passes when init refuses with exit 2 and its message. */
static void check_vector(const char *path)
{
    char *text = read_all(path);
    cJSON *root = cJSON_Parse(text);
    cr_assert(root != NULL, "%s: bad JSON", path);
    const char *planner = field(root, "planner", path)->valuestring;
    const cJSON *opts = field(root, "options", path), *expect = field(root, "expect", path);
    tsim_record rec;
    load_counts(root, path, &rec);
    const int R = rec.ranks;
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, R, rec.experts, int_field(opts, "ranks_per_node", path),
                                    int_field(opts, "slots", path), NULL, &err), 0, "%s: %s", path, err.msg);
    balancer b;
    const int rc = configure(planner, opts, path, &topo, &b, &err);
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(expect, "error");
    if (error) {
        cr_assert_eq(rc, int_field(expect, "exit", path), "%s: init returned %d, expected a refusal", path, rc);
        cr_assert_str_eq(err.msg, error->valuestring, "%s: message", path);
    } else {
        cr_assert_eq(rc, 0, "%s: %s", path, err.msg);
        const bool layout_planner = b.trtllm != NULL || b.swift != NULL;
        int32_t *previous = layout_planner ? prime_layout_planner(&b, root, path) : NULL;
        tsim_plan got, want;
        cr_assert_eq(tsim_plan_init(&got, R, R * (topo.slots > 0 ? topo.slots : 1), &err), 0);
        cr_assert_eq(balancer_plan(&b, &rec, &got, &err), 0, "%s: %s", path, err.msg);
        tsim_evaluator ev;
        tsim_metrics m;
        cr_assert_eq(tsim_evaluator_init(&ev, &topo, &err), 0);
        cr_assert_eq(tsim_evaluate_placed(&ev, &rec, &got, previous, 3.0, planner, &m, &err), 0, "%s: %s", path,
                     err.msg);
        if (layout_planner) {
            check_layout(&b, root, path);
            int n, total;
            int64_t *home = flat_ints(expect, "placement", &n, &total);
            cr_assert(home != NULL && total == rec.experts, "%s: expect has no placement", path);
            cr_assert(tsim_plan_has_placement(&got), "%s: the plan carries no placement", path);
            for (int e = 0; e < total; e++)
                cr_assert_eq(got.placement[e], home[e], "%s: home'(%d) is %d, expected %lld", path, e,
                             got.placement[e], (long long)home[e]);
            cr_assert_eq((int)m.v[TSIM_M_REHOMED_INTRA], int_field(expect, "rehomed_intra", path), "%s: rehomed_intra",
                         path);
            cr_assert_eq((int)m.v[TSIM_M_REHOMED_INTER], int_field(expect, "rehomed_inter", path), "%s: rehomed_inter",
                         path);
            free(home);
        }
        free(previous);
        const cJSON *loads = field(expect, "loads_after", path);
        for (int r = 0; r < R; r++)
            cr_assert_eq(ev.load_after[r], (int64_t)cJSON_GetArrayItem(loads, r)->valuedouble,
                         "%s: load of rank %d is %lld", path, r, (long long)ev.load_after[r]);
        expected_plan(expect, path, R, &want);
        tsim_test_assert_plans_equal(&got, &want, path);
        assert_close(m.v[TSIM_M_RHO_BEFORE], field(expect, "rho_before", path)->valuedouble, "rho_before", path);
        assert_close(m.v[TSIM_M_RHO_AFTER], field(expect, "rho_after", path)->valuedouble, "rho_after", path);
        cr_assert_eq((int)m.v[TSIM_M_INTRA], int_field(expect, "intra", path), "%s: intra", path);
        cr_assert_eq((int)m.v[TSIM_M_INTER], int_field(expect, "inter", path), "%s: inter", path);
        tsim_evaluator_free(&ev);
        tsim_plan_free(&got);
        tsim_plan_free(&want);
    }
    balancer_free(&b);
    tsim_topology_free(&topo);
    tsim_record_free(&rec);
    cJSON_Delete(root);
    free(text);
}

static void check_all_vectors(const char *sub, int expected)
{
    static char paths[64][1024];
    const int n = tsim_test_vector_files(sub, paths, 64);
    cr_assert_eq(n, expected, "%d %s vectors, expected %d", n, sub, expected);
    for (int i = 0; i < n; i++)
        check_vector(paths[i]);
}

Test(moonep, every_vector_passes_including_the_refusal)
{
    check_all_vectors("moonep", 8);
}

Test(ultraep, every_vector_passes)
{
    check_all_vectors("ultraep", 8);
}

Test(trtllm, every_vector_passes)
{
    check_all_vectors("trtllm", 8);
}

Test(swift, every_vector_passes)
{
    check_all_vectors("swift", 8);
}

/* ---- configuration errors --------------------------------------------------- */

static void topo_or_die(tsim_topology *t, int R, int E, int rpn, int K, const int32_t *home)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(t, R, E, rpn, K, home, &err), 0, "%s", err.msg);
}

Test(moonep, refuses_slots_below_experts_per_rank_naming_the_k_it_needs)
{
    tsim_topology t;
    topo_or_die(&t, 16, 128, 8, 2, NULL);
    tsim_moonep_options o;
    tsim_moonep_options_default(&o);
    tsim_moonep *m = (tsim_moonep *)&t; /* must be reset to NULL on refusal */
    tsim_error err = {0};
    cr_assert_eq(tsim_moonep_init(&m, &t, 2, &o, &err), TSIM_E_INPUT);
    cr_assert_null(m);
    cr_assert_str_eq(err.msg, "moonep: needs --slots >= E/R = 8 (one prefetch slot per home expert: a guest may "
                              "receive every expert of one home rank); got --slots 2");
    cr_assert_eq(tsim_moonep_needed_slots(&t), 8);
    cr_assert_eq(tsim_moonep_init(&m, &t, 7, &o, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_moonep_init(&m, &t, 8, &o, &err), 0, "%s", err.msg);
    tsim_moonep_free(m);
    tsim_topology_free(&t);
}

Test(moonep, slot_order_values)
{
    tsim_error err = {0};
    int v = -1;
    cr_assert_eq(tsim_moonep_parse_slot_order("expert", &v, &err), 0);
    cr_assert_eq(v, TSIM_MOONEP_SLOTS_EXPERT);
    cr_assert_eq(tsim_moonep_parse_slot_order("tokens", &v, &err), 0);
    cr_assert_eq(v, TSIM_MOONEP_SLOTS_TOKENS);
    cr_assert_eq(tsim_moonep_parse_slot_order("load", &v, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "moonep: unknown --moonep-slot-order 'load' (expert, tokens)");
}

Test(ultraep, configuration_errors)
{
    tsim_ultraep_options o;
    tsim_ultraep_options_default(&o);
    tsim_ultraep *u = NULL;
    tsim_error err = {0};
    tsim_topology t;
    topo_or_die(&t, 12, 24, 8, 2, NULL);
    cr_assert_eq(tsim_ultraep_init(&u, &t, 2, &o, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "ultraep: 12 ranks do not split into nodes of 8 (replicas stay inside a node)");
    tsim_topology_free(&t);
    topo_or_die(&t, 12, 24, 16, 2, NULL); /* one node holds every rank */
    cr_assert_eq(tsim_ultraep_init(&u, &t, 2, &o, &err), 0, "%s", err.msg);
    tsim_ultraep_free(u);
    cr_assert_eq(tsim_ultraep_init(&u, &t, -1, &o, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "ultraep: --slots must be >= 0");
    o.oracle_eps = 1.0 / 0.0;
    cr_assert_eq(tsim_ultraep_init(&u, &t, 2, &o, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--ultraep-oracle-eps") != NULL, "%s", err.msg);
    tsim_ultraep_options_default(&o);
    o.balance_threshold = 0.0 / 0.0;
    cr_assert_eq(tsim_ultraep_init(&u, &t, 2, &o, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--ultraep-balance-threshold") != NULL, "%s", err.msg);
    tsim_topology_free(&t);
    int s = -1;
    cr_assert_eq(tsim_ultraep_parse_solver("lp", &s, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "ultraep: unknown --ultraep-solver 'lp' (quota, legacy)");
    cr_assert_eq(tsim_ultraep_parse_solver("legacy", &s, &err), 0);
    cr_assert_eq(s, TSIM_ULTRAEP_LEGACY);
    bool flag = false;
    cr_assert_eq(tsim_ultraep_parse_on_off("--ultraep-locality", "maybe", &flag, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "ultraep: --ultraep-locality takes on or off, not 'maybe'");
    cr_assert_eq(tsim_ultraep_parse_on_off("--ultraep-zero-master", "on", &flag, &err), 0);
    cr_assert(flag);
}

/* ---- properties over random records ------------------------------------------ */

/* A random shape whose nodes split R (ultraep refuses the others). */
static void draw_shape(uint64_t *rng, int max_ranks, tsim_random_shape *s)
{
    tsim_random_shape_draw(rng, max_ranks, s);
    if (s->ranks_per_node < s->ranks && s->ranks % s->ranks_per_node != 0)
        s->ranks_per_node = tsim_rand_range(rng, 0, 1) ? s->ranks : 1;
}

/* Plans rec, asserts the evaluator accepts the plan and returns it in plan. */
static void plan_checked(balancer *b, const tsim_topology *t, const tsim_record *rec, tsim_plan *plan,
                         tsim_evaluator *ev, const char *what)
{
    tsim_error err = {0};
    tsim_metrics m;
    cr_assert_eq(balancer_plan(b, rec, plan, &err), 0, "%s: %s", what, err.msg);
    cr_assert_eq(tsim_evaluate(ev, rec, plan, 3.0, what, &m, &err), 0, "%s (R %d E %d rpn %d K %d): %s", what,
                 t->ranks, t->experts, t->ranks_per_node, t->slots, err.msg);
    for (int i = 0; i < plan->count; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        int64_t sum = 0;
        for (int r = 0; r < t->ranks; r++)
            sum += row[r];
        cr_assert_eq(plan->replicas[i].planned, sum, "%s: planned is what the replica receives", what);
    }
}

static void moonep_assert_caps(const tsim_topology *t, const tsim_record *rec, const tsim_plan *plan,
                               const tsim_evaluator *ev, int32_t *sender_of)
{
    const int R = t->ranks;
    int64_t total = 0;
    for (size_t i = 0; i < (size_t)R * (size_t)t->experts; i++)
        total += rec->counts[i];
    for (int r = 0; r < R; r++) {
        const int64_t cap = total / R + (r < total % R ? 1 : 0);
        cr_assert_eq(ev->load_after[r], cap, "moonep: rank %d computes %lld, cap %lld (R %d E %d)", r,
                     (long long)ev->load_after[r], (long long)cap, R, t->experts);
        sender_of[r] = -1;
    }
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *x = &plan->replicas[i];
        cr_assert_gt(x->planned, 0, "moonep lists only replicas that receive tokens");
        cr_assert_lt(x->slot, t->experts_per_rank, "moonep uses at most E/R slots");
        const int h = t->home[x->expert];
        cr_assert(sender_of[x->guest] < 0 || sender_of[x->guest] == h, "moonep: guest %d has two senders", x->guest);
        sender_of[x->guest] = h;
    }
}

Test(moonep, loads_equal_the_caps_on_random_records)
{
    uint64_t rng = 22;
    int replicas = 0;
    for (int n = 0; n < 3000; n++) {
        tsim_random_shape s;
        draw_shape(&rng, 40, &s);
        const int hpr = s.experts / s.ranks;
        const int K = hpr + (int)tsim_rand_range(&rng, 0, 2);
        tsim_topology t;
        topo_or_die(&t, s.ranks, s.experts, s.ranks_per_node, K, NULL);
        tsim_record rec;
        tsim_random_record(&rng, &s, &rec);
        tsim_evaluator ev;
        cr_assert_eq(tsim_evaluator_init(&ev, &t, NULL), 0);
        tsim_plan plan[2];
        int32_t sender_of[64];
        for (int order = 0; order < 2; order++) {
            tsim_moonep_options o = {.slot_order = order};
            balancer b = {.is_moonep = true};
            cr_assert_eq(tsim_moonep_init(&b.moonep, &t, K, &o, NULL), 0);
            cr_assert_eq(tsim_plan_init(&plan[order], t.ranks, t.ranks * K, NULL), 0);
            plan_checked(&b, &t, &rec, &plan[order], &ev, "moonep");
            moonep_assert_caps(&t, &rec, &plan[order], &ev, sender_of);
            balancer_free(&b);
        }
        /* The slot order changes only the labels k. */
        cr_assert_eq(plan[0].count, plan[1].count);
        replicas += plan[0].count;
        for (int i = 0; i < plan[0].count; i++) {
            int j = 0;
            while (j < plan[1].count && (plan[1].replicas[j].expert != plan[0].replicas[i].expert ||
                                         plan[1].replicas[j].guest != plan[0].replicas[i].guest))
                j++;
            cr_assert_lt(j, plan[1].count, "slot orders disagree on which replicas exist");
            cr_assert_arr_eq(tsim_plan_alloc_row(&plan[0], i), tsim_plan_alloc_row(&plan[1], j),
                             sizeof(int64_t) * (size_t)t.ranks);
        }
        tsim_plan_free(&plan[0]);
        tsim_plan_free(&plan[1]);
        tsim_evaluator_free(&ev);
        tsim_record_free(&rec);
        tsim_topology_free(&t);
    }
    cr_assert_gt(replicas, 10000, "too few replicas (%d) to mean anything", replicas);
}

static void ultraep_random_options(uint64_t *rng, tsim_ultraep_options *o)
{
    tsim_ultraep_options_default(o);
    if (tsim_rand_range(rng, 0, 2) == 0) {
        o->min_tokens = tsim_rand_range(rng, -1, 64);
        o->oracle_eps = (double)tsim_rand_range(rng, -10, 30) / 100.0;
        o->balance_threshold = 0.8 + (double)tsim_rand_range(rng, 0, 40) / 100.0;
        o->locality = tsim_rand_range(rng, 0, 1) == 0;
        o->zero_master = tsim_rand_range(rng, 0, 1) == 0;
    }
    if (tsim_rand_range(rng, 0, 4) == 0)
        o->solver = TSIM_ULTRAEP_LEGACY;
}

Test(ultraep, stays_inside_nodes_and_never_sends_and_receives)
{
    uint64_t rng = 2606;
    bool sends[64], receives[64];
    int quota_replicas = 0, legacy_replicas = 0;
    for (int n = 0; n < 3000; n++) {
        tsim_random_shape s;
        draw_shape(&rng, 40, &s);
        const int K = (int)tsim_rand_range(&rng, 0, 4);
        tsim_topology t;
        topo_or_die(&t, s.ranks, s.experts, s.ranks_per_node, K, NULL);
        tsim_record rec;
        tsim_random_record(&rng, &s, &rec);
        tsim_ultraep_options o;
        ultraep_random_options(&rng, &o);
        balancer b = {0};
        tsim_error err = {0};
        cr_assert_eq(tsim_ultraep_init(&b.ultraep, &t, K, &o, &err), 0, "%s", err.msg);
        tsim_evaluator ev;
        cr_assert_eq(tsim_evaluator_init(&ev, &t, NULL), 0);
        tsim_plan plan;
        cr_assert_eq(tsim_plan_init(&plan, t.ranks, t.ranks * (K > 0 ? K : 1), NULL), 0);
        plan_checked(&b, &t, &rec, &plan, &ev, "ultraep");
        memset(sends, 0, sizeof sends);
        memset(receives, 0, sizeof receives);
        const int G = t.ranks_per_node < t.ranks ? t.ranks_per_node : t.ranks;
        for (int i = 0; i < plan.count; i++) {
            const tsim_replica *x = &plan.replicas[i];
            const int h = t.home[x->expert];
            cr_assert_eq(x->guest / G, h / G, "ultraep: expert %d (home %d) has a replica on rank %d, another node",
                         x->expert, h, x->guest);
            sends[h] = receives[x->guest] = true;
        }
        *(o.solver == TSIM_ULTRAEP_QUOTA ? &quota_replicas : &legacy_replicas) += plan.count;
        if (o.solver == TSIM_ULTRAEP_QUOTA)
            for (int r = 0; r < t.ranks; r++)
                cr_assert(!(sends[r] && receives[r]), "ultraep: rank %d both sends and receives", r);
        tsim_plan_free(&plan);
        tsim_evaluator_free(&ev);
        balancer_free(&b);
        tsim_record_free(&rec);
        tsim_topology_free(&t);
    }
    cr_assert_gt(quota_replicas, 3000, "too few quota replicas (%d) to mean anything", quota_replicas);
    cr_assert_gt(legacy_replicas, 1000, "too few legacy replicas (%d) to mean anything", legacy_replicas);
}

/* Scratch is reused: planning A, then B, then A again gives A's plan. */
Test(production, plans_do_not_depend_on_earlier_records)
{
    uint64_t rng = 7;
    for (int n = 0; n < 300; n++) {
        tsim_random_shape s;
        draw_shape(&rng, 32, &s);
        const int K = s.experts / s.ranks + 1;
        tsim_topology t;
        topo_or_die(&t, s.ranks, s.experts, s.ranks_per_node, K, NULL);
        tsim_record a, c;
        tsim_random_record(&rng, &s, &a);
        tsim_random_record(&rng, &s, &c);
        for (int which = 0; which < 2; which++) {
            balancer b = {.is_moonep = which == 0};
            tsim_moonep_options mo;
            tsim_moonep_options_default(&mo);
            tsim_ultraep_options uo;
            ultraep_random_options(&rng, &uo);
            if (which == 0)
                cr_assert_eq(tsim_moonep_init(&b.moonep, &t, K, &mo, NULL), 0);
            else
                cr_assert_eq(tsim_ultraep_init(&b.ultraep, &t, K, &uo, NULL), 0);
            tsim_plan first, other, again;
            cr_assert_eq(tsim_plan_init(&first, t.ranks, 1, NULL), 0);
            cr_assert_eq(tsim_plan_init(&other, t.ranks, 1, NULL), 0);
            cr_assert_eq(tsim_plan_init(&again, t.ranks, 1, NULL), 0);
            cr_assert_eq(balancer_plan(&b, &a, &first, NULL), 0);
            cr_assert_eq(balancer_plan(&b, &c, &other, NULL), 0);
            cr_assert_eq(balancer_plan(&b, &a, &again, NULL), 0);
            cr_assert(tsim_plan_equal(&first, &again), "%s: plan changed after another record",
                      which == 0 ? "moonep" : "ultraep");
            tsim_plan_free(&first);
            tsim_plan_free(&other);
            tsim_plan_free(&again);
            balancer_free(&b);
        }
        tsim_record_free(&a);
        tsim_record_free(&c);
        tsim_topology_free(&t);
    }
}

/* moonep.md 3.7, ultraep.md 3.9: with a trace home array, the plan is the
 * published algorithm on the experts renumbered block-wise in that order. */
Test(production, home_array_plans_as_the_renumbered_experts)
{
    uint64_t rng = 37;
    int planned_replicas = 0;
    for (int n = 0; n < 400; n++) {
        tsim_random_shape s;
        draw_shape(&rng, 24, &s);
        const int R = s.ranks, E = s.experts, hpr = E / R, K = hpr + 1;
        int32_t *home = malloc(sizeof *home * (size_t)E);
        for (int e = 0; e < E; e++)
            home[e] = e / hpr;
        for (int e = E - 1; e > 0; e--) {
            const int j = (int)tsim_rand_range(&rng, 0, e);
            const int32_t x = home[e];
            home[e] = home[j];
            home[j] = x;
        }
        tsim_topology mapped, blocks;
        topo_or_die(&mapped, R, E, s.ranks_per_node, K, home);
        topo_or_die(&blocks, R, E, s.ranks_per_node, K, NULL);
        int *renum = malloc(sizeof *renum * (size_t)E); /* expert -> block-wise number */
        for (int i = 0; i < E; i++)
            renum[mapped.rank_experts[i]] = i;
        tsim_record rec, rec2;
        tsim_random_record(&rng, &s, &rec);
        cr_assert_eq(tsim_record_alloc(&rec2, R, E, NULL), 0);
        for (int r = 0; r < R; r++)
            for (int e = 0; e < E; e++)
                rec2.counts[(size_t)r * (size_t)E + (size_t)renum[e]] = tsim_count(&rec, r, e);
        for (int which = 0; which < 2; which++) {
            tsim_moonep_options mo;
            tsim_moonep_options_default(&mo);
            mo.slot_order = (int)tsim_rand_range(&rng, 0, 1);
            tsim_ultraep_options uo;
            ultraep_random_options(&rng, &uo);
            balancer b1 = {.is_moonep = which == 0}, b2 = {.is_moonep = which == 0};
            if (which == 0) {
                cr_assert_eq(tsim_moonep_init(&b1.moonep, &mapped, K, &mo, NULL), 0);
                cr_assert_eq(tsim_moonep_init(&b2.moonep, &blocks, K, &mo, NULL), 0);
            } else {
                cr_assert_eq(tsim_ultraep_init(&b1.ultraep, &mapped, K, &uo, NULL), 0);
                cr_assert_eq(tsim_ultraep_init(&b2.ultraep, &blocks, K, &uo, NULL), 0);
            }
            tsim_plan p1, p2;
            tsim_evaluator ev;
            cr_assert_eq(tsim_plan_init(&p1, R, R * K, NULL), 0);
            cr_assert_eq(tsim_plan_init(&p2, R, R * K, NULL), 0);
            cr_assert_eq(tsim_evaluator_init(&ev, &mapped, NULL), 0);
            plan_checked(&b1, &mapped, &rec, &p1, &ev, which == 0 ? "moonep home array" : "ultraep home array");
            cr_assert_eq(balancer_plan(&b2, &rec2, &p2, NULL), 0);
            for (int i = 0; i < p1.count; i++)
                p1.replicas[i].expert = renum[p1.replicas[i].expert];
            tsim_test_assert_plans_equal(&p1, &p2, which == 0 ? "moonep renumbered" : "ultraep renumbered");
            planned_replicas += p1.count;
            tsim_evaluator_free(&ev);
            tsim_plan_free(&p1);
            tsim_plan_free(&p2);
            balancer_free(&b1);
            balancer_free(&b2);
        }
        tsim_record_free(&rec);
        tsim_record_free(&rec2);
        free(renum);
        free(home);
        tsim_topology_free(&mapped);
        tsim_topology_free(&blocks);
    }
    cr_assert_gt(planned_replicas, 1000, "the comparison saw too few replicas to mean anything");
}

/* Edge cases of moonep.md 7 and ultraep.md 9. */
Test(production, empty_record_single_rank_and_fewer_tokens_than_ranks)
{
    tsim_topology t;
    topo_or_die(&t, 4, 8, 2, 2, NULL);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 4, 8, NULL), 0);
    tsim_moonep_options mo;
    tsim_moonep_options_default(&mo);
    tsim_ultraep_options uo;
    tsim_ultraep_options_default(&uo);
    balancer m = {.is_moonep = true}, u = {0};
    cr_assert_eq(tsim_moonep_init(&m.moonep, &t, 2, &mo, NULL), 0);
    cr_assert_eq(tsim_ultraep_init(&u.ultraep, &t, 2, &uo, NULL), 0);
    tsim_plan p;
    tsim_evaluator ev;
    cr_assert_eq(tsim_plan_init(&p, 4, 8, NULL), 0);
    cr_assert_eq(tsim_evaluator_init(&ev, &t, NULL), 0);
    plan_checked(&m, &t, &rec, &p, &ev, "moonep empty");
    cr_assert_eq(p.count, 0);
    plan_checked(&u, &t, &rec, &p, &ev, "ultraep empty");
    cr_assert_eq(p.count, 0);
    /* T = 3 < R: caps 1, 1, 1, 0, all three tokens on expert 7 (rank 3). */
    rec.counts[7] = 2;
    rec.counts[8 + 7] = 1;
    plan_checked(&m, &t, &rec, &p, &ev, "moonep T < R");
    const int64_t caps[4] = {1, 1, 1, 0};
    cr_assert_arr_eq(ev.load_after, caps, sizeof caps);
    /* ultraep, node {2, 3}: lo = ceil(3 / 2) = 2, t0 = ceil(2 * 1.01) = 3, so
     * rank 3's 3 tokens are within the margin: no replica. */
    plan_checked(&u, &t, &rec, &p, &ev, "ultraep T < R");
    cr_assert_eq(p.count, 0);
    balancer_free(&m);
    balancer_free(&u);
    tsim_plan_free(&p);
    tsim_evaluator_free(&ev);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* ---- trtllm and swift over record sequences ------------------------------------ */

static int layout_planner_layout(const balancer *b, int64_t layer, int32_t *out)
{
    return b->trtllm ? tsim_trtllm_layout(b->trtllm, layer, out) : tsim_swift_layout(b->swift, layer, out);
}

/* Every expert keeps a copy, and swift never holds an expert twice on a rank
 * nor moves an expert that stays on its rank. */
static void assert_layout_rules(const balancer *b, const int32_t *before, const int32_t *after, int R, int E, int S)
{
    int copies[1024] = {0};
    for (int p = 0; p < R * S; p++) {
        cr_assert(after[p] >= 0 && after[p] < E, "position %d holds expert %d", p, after[p]);
        copies[after[p]]++;
    }
    for (int e = 0; e < E; e++)
        cr_assert_gt(copies[e], 0, "expert %d lost its last copy", e);
    if (!b->swift)
        return;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < S; j++) {
            const int e = before[r * S + j];
            bool stays = false;
            for (int k = 0; k < S; k++) {
                if (k != j)
                    cr_assert_neq(after[r * S + j], after[r * S + k], "swift: expert twice on rank %d", r);
                stays |= after[r * S + k] == e;
            }
            if (stays)
                cr_assert_eq(after[r * S + j], e, "swift: expert %d stays on rank %d but moved from position %d", e,
                             r, j);
        }
}

static void run_sequence(uint64_t *rng, bool swift, int *updates_seen)
{
    tsim_random_shape s;
    tsim_random_shape_draw(rng, 16, &s);
    if (s.ranks < 2)
        s.ranks = 2;
    s.experts = s.ranks * (int)tsim_rand_range(rng, 1, 6);
    const int R = s.ranks, E = s.experts, hpr = E / R;
    const int max_k = E - hpr < 3 ? E - hpr : 3;
    const int K = (int)tsim_rand_range(rng, 0, max_k), S = hpr + K, L = (int)tsim_rand_range(rng, 1, 3);
    s.slots = K;
    tsim_topology t;
    topo_or_die(&t, R, E, s.ranks_per_node, K, NULL);
    balancer b = {0};
    const int history = (int)tsim_rand_range(rng, 0, 9) < 6 ? 0 : (int)tsim_rand_range(rng, 1, 2);
    const int interval = (int)tsim_rand_range(rng, 1, 4);
    if (swift) {
        tsim_swift_options o = {.history = history, .interval = interval, .tp = 1};
        if (R % 2 == 0 && tsim_rand_range(rng, 0, 3) == 0)
            o.tp = 2;
        cr_assert_eq(tsim_swift_init(&b.swift, &t, K, &o, NULL), 0);
    } else {
        tsim_trtllm_options o = {.history = history, .interval = interval, .decay = 0.95};
        cr_assert_eq(tsim_trtllm_init(&b.trtllm, &t, K, &o, NULL), 0);
    }
    tsim_evaluator ev;
    cr_assert_eq(tsim_evaluator_init(&ev, &t, NULL), 0);
    tsim_plan plan;
    cr_assert_eq(tsim_plan_init(&plan, R, 1, NULL), 0);
    int32_t *prev_home = malloc(sizeof *prev_home * (size_t)(E * L)), *before = malloc(sizeof *before * (size_t)(R * S));
    int32_t *after = malloc(sizeof *after * (size_t)(R * S));
    bool *seen = calloc((size_t)L, sizeof *seen);
    for (int i = 0; i < 14; i++) {
        tsim_record rec;
        tsim_random_record(rng, &s, &rec);
        rec.layer = i % L;
        rec.index = i;
        const bool had = layout_planner_layout(&b, rec.layer, before) == 0;
        tsim_error err = {0};
        tsim_metrics m;
        cr_assert_eq(balancer_plan(&b, &rec, &plan, &err), 0, "%s", err.msg);
        cr_assert_eq(tsim_evaluate_placed(&ev, &rec, &plan, seen[rec.layer] ? prev_home + rec.layer * E : NULL, 3.0,
                                          swift ? "swift" : "trtllm", &m, &err),
                     0, "%s (R %d E %d K %d rpn %d)", err.msg, R, E, K, s.ranks_per_node);
        cr_assert(tsim_plan_has_placement(&plan));
        memcpy(prev_home + rec.layer * E, plan.placement, sizeof *prev_home * (size_t)E);
        seen[rec.layer] = true;
        cr_assert_eq(layout_planner_layout(&b, rec.layer, after), 0);
        if (had) {
            assert_layout_rules(&b, before, after, R, E, S);
            *updates_seen += memcmp(before, after, sizeof *after * (size_t)(R * S)) != 0;
        }
        tsim_record_free(&rec);
    }
    free(seen);
    free(after);
    free(before);
    free(prev_home);
    tsim_plan_free(&plan);
    tsim_evaluator_free(&ev);
    balancer_free(&b);
    tsim_topology_free(&t);
}

Test(trtllm, keeps_every_expert_and_the_capacity_over_sequences)
{
    uint64_t rng = 65;
    int changed = 0;
    for (int n = 0; n < 400; n++)
        run_sequence(&rng, false, &changed);
    cr_assert_gt(changed, 300, "too few layout changes (%d) to mean anything", changed);
}

Test(swift, keeps_every_expert_capacity_and_the_positions_of_stayers)
{
    uint64_t rng = 182;
    int changed = 0;
    for (int n = 0; n < 400; n++)
        run_sequence(&rng, true, &changed);
    cr_assert_gt(changed, 200, "too few layout changes (%d) to mean anything", changed);
}

/* prime is the state the layer's earlier records leave: records 0 and 1 in
 * order give record 1 the plan that prime(window = record 0) gives it. */
Test(production, prime_equals_planning_the_earlier_records)
{
    uint64_t rng = 11;
    for (int n = 0; n < 200; n++) {
        tsim_random_shape s;
        tsim_random_shape_draw(&rng, 16, &s);
        const int R = s.ranks, E = s.experts, K = E / R > 1 ? 1 : 0;
        tsim_topology t;
        topo_or_die(&t, R, E, s.ranks_per_node, K, NULL);
        tsim_record r0, r1;
        tsim_random_record(&rng, &s, &r0);
        tsim_random_record(&rng, &s, &r1);
        r1.index = 1;
        int64_t *tpe = malloc(sizeof *tpe * (size_t)E);
        tsim_record_expert_totals(&r0, tpe);
        for (int which = 0; which < 2; which++) {
            balancer seq = {0}, primed = {0};
            if (which == 0) {
                tsim_trtllm_options o;
                tsim_trtllm_options_default(&o);
                cr_assert_eq(tsim_trtllm_init(&seq.trtllm, &t, K, &o, NULL), 0);
                cr_assert_eq(tsim_trtllm_init(&primed.trtllm, &t, K, &o, NULL), 0);
                cr_assert_eq(tsim_trtllm_prime(primed.trtllm, 0, tpe, 1, NULL, NULL, NULL), 0);
            } else {
                tsim_swift_options o;
                tsim_swift_options_default(&o);
                cr_assert_eq(tsim_swift_init(&seq.swift, &t, K, &o, NULL), 0);
                cr_assert_eq(tsim_swift_init(&primed.swift, &t, K, &o, NULL), 0);
                cr_assert_eq(tsim_swift_prime(primed.swift, 0, tpe, 1, NULL, NULL, NULL), 0);
            }
            tsim_plan a, c;
            cr_assert_eq(tsim_plan_init(&a, R, 1, NULL), 0);
            cr_assert_eq(tsim_plan_init(&c, R, 1, NULL), 0);
            cr_assert_eq(balancer_plan(&seq, &r0, &a, NULL), 0);
            cr_assert_eq(balancer_plan(&seq, &r1, &a, NULL), 0);
            cr_assert_eq(balancer_plan(&primed, &r1, &c, NULL), 0);
            cr_assert(tsim_plan_equal(&a, &c), "%s: prime differs from planning record 0",
                      which == 0 ? "trtllm" : "swift");
            tsim_plan_free(&a);
            tsim_plan_free(&c);
            balancer_free(&seq);
            balancer_free(&primed);
        }
        free(tpe);
        tsim_record_free(&r0);
        tsim_record_free(&r1);
        tsim_topology_free(&t);
    }
}

Test(production, layout_planner_configuration_errors)
{
    tsim_topology t;
    tsim_error err = {0};
    tsim_trtllm_options to;
    tsim_swift_options so;
    tsim_trtllm *tr = NULL;
    tsim_swift *sw = NULL;
    topo_or_die(&t, 1, 4, 8, 1, NULL);
    tsim_trtllm_options_default(&to);
    tsim_swift_options_default(&so);
    cr_assert_eq(tsim_trtllm_init(&tr, &t, 1, &to, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "2 or more ranks") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_swift_init(&sw, &t, 1, &so, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "2 or more ranks") != NULL, "%s", err.msg);
    tsim_topology_free(&t);
    topo_or_die(&t, 4, 2048, 8, 1, NULL);
    cr_assert_eq(tsim_trtllm_init(&tr, &t, 1, &to, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "at most 1024 experts") != NULL, "%s", err.msg);
    tsim_topology_free(&t);
    topo_or_die(&t, 4, 8, 2, 1, NULL);
    cr_assert_eq(tsim_trtllm_init(&tr, &t, -1, &to, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_swift_init(&sw, &t, -1, &so, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_swift_init(&sw, &t, 7, &so, &err), TSIM_E_INPUT); /* K > E - hpr = 6 */
    cr_assert(strstr(err.msg, "E - E/R = 6") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_swift_init(&sw, &t, 6, &so, &err), 0, "%s", err.msg);
    tsim_swift_free(sw);
    cr_assert_eq(tsim_trtllm_init(&tr, &t, 7, &to, &err), 0, "K > E - hpr is allowed: %s", err.msg);
    tsim_trtllm_free(tr);
    to.decay = 1.5;
    cr_assert_eq(tsim_trtllm_init(&tr, &t, 1, &to, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--trtllm-decay") != NULL, "%s", err.msg);
    tsim_trtllm_options_default(&to);
    to.interval = 0;
    cr_assert_eq(tsim_trtllm_init(&tr, &t, 1, &to, &err), TSIM_E_INPUT);
    so.interval = 0;
    cr_assert_eq(tsim_swift_init(&sw, &t, 1, &so, &err), TSIM_E_INPUT);
    tsim_swift_options_default(&so);
    so.tp = 3;
    cr_assert_eq(tsim_swift_init(&sw, &t, 1, &so, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--swift-tp 3") != NULL, "%s", err.msg);
    int h = -1;
    cr_assert_eq(tsim_layout_history_parse("trtllm", "oracle", &h, &err), 0);
    cr_assert_eq(h, TSIM_TRTLLM_HISTORY_ORACLE);
    cr_assert_eq(tsim_layout_history_parse("swift", "lru", &h, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "swift: unknown --swift-history 'lru' (prev, oracle, none)");
    tsim_topology_free(&t);
}
