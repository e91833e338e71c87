#include "vector_check.h"
#include "test_options.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "registry.h"
#include "tsim_config.h"

const char *tsim_test_spec_dir(void)
{
    static char buf[1024];
    const char *env = getenv("TSIM_SPEC_DIR");
    if (env && *env)
        return env;
    snprintf(buf, sizeof buf, "%s/tests/spec", TSIM_SOURCE_ROOT);
    return buf;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int tsim_test_vector_files(const char *sub, char (*paths)[1024], int max)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/vectors/%s", tsim_test_spec_dir(), sub);
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "cannot open vector directory %s", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            snprintf(paths[n++], 1024, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof paths[0], cmp_path);
    return n;
}

void tsim_test_run_vector(const tsim_vector *v, const char *planner, tsim_plan *plan, tsim_metrics *m,
                          int64_t *loads_after)
{
    tsim_error err = {0};
    tsim_topology topo;
    const char *name = planner ? planner : v->planner;
    cr_assert_eq(tsim_topology_init(&topo, v->record.ranks, v->record.experts, v->ranks_per_node, v->slots, NULL, &err),
                 0, "%s: %s", v->name, err.msg);
    tsim_planner p = {0};
    p.desc = tsim_planner_find(name);
    cr_assert(p.desc != NULL, "no planner %s", name);
    snprintf(p.label, sizeof p.label, "%s", name);
    tsim_planner_configure(&p, p.desc, name, &v->opts);
    cr_assert_eq(tsim_planner_start(&p, &topo, &err), 0, "%s: %s", v->name, err.msg);
    cr_assert_eq(tsim_plan_init(plan, topo.ranks, topo.ranks * (topo.slots > 0 ? topo.slots : 1), &err), 0);
    cr_assert_eq(p.desc->plan(p.state, &v->record, plan, &err), 0, "%s: plan failed: %s", v->name, err.msg);
    tsim_evaluator ev;
    cr_assert_eq(tsim_evaluator_init(&ev, &topo, &err), 0);
    cr_assert_eq(tsim_evaluate(&ev, &v->record, plan, 3.0, name, m, &err), 0, "%s: %s", v->name, err.msg);
    memcpy(loads_after, ev.load_after, sizeof *loads_after * (size_t)topo.ranks);
    tsim_evaluator_free(&ev);
    tsim_planner_stop(&p);
    tsim_topology_free(&topo);
}

void tsim_test_assert_plans_equal(tsim_plan *got, tsim_plan *want, const char *label)
{
    tsim_plan_sort(got);
    tsim_plan_sort(want);
    int n = got->count < want->count ? got->count : want->count;
    for (int i = 0; i < n; i++) {
        const tsim_replica *g = &got->replicas[i], *w = &want->replicas[i];
        cr_assert(g->expert == w->expert && g->guest == w->guest && g->slot == w->slot && g->planned == w->planned,
                  "%s: replica %d is [%d,%d,%d,%lld], expected [%d,%d,%d,%lld]", label, i, g->expert, g->guest,
                  g->slot, (long long)g->planned, w->expert, w->guest, w->slot, (long long)w->planned);
        const int64_t *gr = tsim_plan_alloc_row_c(got, i), *wr = tsim_plan_alloc_row_c(want, i);
        for (int r = 0; r < got->ranks; r++)
            cr_assert_eq(gr[r], wr[r], "%s: source %d sends %lld to expert %d on rank %d slot %d, expected %lld",
                         label, r, (long long)gr[r], g->expert, g->guest, g->slot, (long long)wr[r]);
    }
    cr_assert_eq(got->count, want->count, "%s: %d replicas, expected %d", label, got->count, want->count);
}

static void assert_rel(double got, double want, const char *what, const char *label)
{
    double tol = 1e-9 * fmax(fabs(want), 1e-300);
    if (want == 0.0)
        tol = 1e-12;
    cr_assert(fabs(got - want) <= tol, "%s: %s is %.17g, expected %.17g", label, what, got, want);
}

void tsim_test_check_vector(const char *path)
{
    tsim_vector v;
    tsim_error err = {0};
    cr_assert_eq(tsim_vector_load(&v, path, &err), 0, "%s", err.msg);
    cr_assert(v.has_expect, "%s has no expect", path);
    tsim_plan plan;
    tsim_metrics m;
    int64_t *loads = calloc((size_t)v.record.ranks, sizeof *loads);
    tsim_test_run_vector(&v, NULL, &plan, &m, loads);
    tsim_test_assert_plans_equal(&plan, &v.expect, v.name);
    for (int r = 0; r < v.record.ranks; r++)
        cr_assert_eq(loads[r], v.loads_after[r], "%s: load of rank %d is %lld, expected %lld", v.name, r,
                     (long long)loads[r], (long long)v.loads_after[r]);
    assert_rel(m.v[TSIM_M_RHO_BEFORE], v.rho_before, "rho_before", v.name);
    assert_rel(m.v[TSIM_M_RHO_AFTER], v.rho_after, "rho_after", v.name);
    cr_assert_eq((int64_t)m.v[TSIM_M_INTRA], v.intra, "%s: intra", v.name);
    cr_assert_eq((int64_t)m.v[TSIM_M_INTER], v.inter, "%s: inter", v.name);
    free(loads);
    tsim_plan_free(&plan);
    tsim_vector_free(&v);
}
