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
#include "topology.h"
#include "ultraep.h"
#include "vector_check.h"

/* One configured balancer behind a common face, so the vector runner and the
 * property tests treat both alike. */
typedef struct {
    bool is_moonep;
    tsim_moonep *moonep;
    tsim_ultraep *ultraep;
} balancer;

static int balancer_plan(balancer *b, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    return b->is_moonep ? tsim_moonep_plan(b->moonep, rec, plan, err) : tsim_ultraep_plan(b->ultraep, rec, plan, err);
}

static void balancer_free(balancer *b)
{
    tsim_moonep_free(b->moonep);
    tsim_ultraep_free(b->ultraep);
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
        tsim_plan got, want;
        cr_assert_eq(tsim_plan_init(&got, R, R * (topo.slots > 0 ? topo.slots : 1), &err), 0);
        cr_assert_eq(balancer_plan(&b, &rec, &got, &err), 0, "%s: %s", path, err.msg);
        tsim_evaluator ev;
        tsim_metrics m;
        cr_assert_eq(tsim_evaluator_init(&ev, &topo, &err), 0);
        cr_assert_eq(tsim_evaluate(&ev, &rec, &got, 3.0, planner, &m, &err), 0, "%s: %s", path, err.msg);
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
