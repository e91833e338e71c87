/* Per-record plan latency of the production balancers (issue 22): moonep at
 * its own K = E/R, ultraep at K = 2, and trtllm and swift at K = 2 between
 * updates (history none) and updating at every record (history oracle), all
 * with 8 ranks per node. Records are synthetic:
 * Dirichlet expert popularity (alpha 5) with one hot rank whose experts weigh
 * 1.5x, and every source rank draws 32768 routed entries from it
 * (multinomial). The planner call alone is timed; the evaluator then checks
 * every plan and gives the mean imbalance and replica count. Fixed seed.
 *
 *   production_latency [--records N] [--passes P] [--seed S] [--only PLANNER]
 *
 * On a shared machine read the CPU column: the wall clock also counts the
 * time other processes held the core.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "evaluate.h"
#include "moonep.h"
#include "swift.h"
#include "trtllm.h"
#include "ultraep.h"

#define ENTRIES_PER_SOURCE 32768

/* This thread's CPU time: on a shared machine the wall clock also counts the
 * time other processes held the core. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct {
    const char *planner;
    int R, E, K;
    const char *history; /* trtllm, swift: oracle = an update every record, none = between updates */
} config;

/* One configured planner of any of the four kinds. */
typedef struct {
    tsim_moonep *moonep;
    tsim_ultraep *ultraep;
    tsim_trtllm *trtllm;
    tsim_swift *swift;
} planner;

static int planner_init(planner *p, const config *c, const tsim_topology *topo, tsim_error *err)
{
    memset(p, 0, sizeof *p);
    if (strcmp(c->planner, "moonep") == 0) {
        tsim_moonep_options o;
        tsim_moonep_options_default(&o);
        return tsim_moonep_init(&p->moonep, topo, c->K, &o, err);
    }
    if (strcmp(c->planner, "ultraep") == 0) {
        tsim_ultraep_options o;
        tsim_ultraep_options_default(&o);
        return tsim_ultraep_init(&p->ultraep, topo, c->K, &o, err);
    }
    if (strcmp(c->planner, "trtllm") == 0) {
        tsim_trtllm_options o;
        tsim_trtllm_options_default(&o);
        int rc = tsim_layout_history_parse("trtllm", c->history, &o.history, err);
        return rc ? rc : tsim_trtllm_init(&p->trtllm, topo, c->K, &o, err);
    }
    tsim_swift_options o;
    tsim_swift_options_default(&o);
    int rc = tsim_layout_history_parse("swift", c->history, &o.history, err);
    return rc ? rc : tsim_swift_init(&p->swift, topo, c->K, &o, err);
}

static int planner_plan(planner *p, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    if (p->moonep)
        return tsim_moonep_plan(p->moonep, rec, plan, err);
    if (p->ultraep)
        return tsim_ultraep_plan(p->ultraep, rec, plan, err);
    if (p->trtllm)
        return tsim_trtllm_plan(p->trtllm, rec, plan, err);
    return tsim_swift_plan(p->swift, rec, plan, err);
}

static void planner_free(planner *p)
{
    tsim_moonep_free(p->moonep);
    tsim_ultraep_free(p->ultraep);
    tsim_trtllm_free(p->trtllm);
    tsim_swift_free(p->swift);
}

static void make_records(gsl_rng *rng, int R, int E, int n, tsim_record *recs)
{
    double *alpha = malloc(sizeof *alpha * (size_t)E), *p = malloc(sizeof *p * (size_t)E);
    unsigned *draw = malloc(sizeof *draw * (size_t)E);
    const int hpr = E / R;
    for (int e = 0; e < E; e++)
        alpha[e] = 5.0;
    for (int i = 0; i < n; i++) {
        tsim_record_alloc(&recs[i], R, E, NULL);
        recs[i].index = i;
        gsl_ran_dirichlet(rng, (size_t)E, alpha, p);
        const int hot = (int)gsl_rng_uniform_int(rng, (unsigned long)R);
        for (int e = hot * hpr; e < (hot + 1) * hpr; e++)
            p[e] *= 1.5;
        for (int r = 0; r < R; r++) {
            gsl_ran_multinomial(rng, (size_t)E, ENTRIES_PER_SOURCE, p, draw);
            for (int e = 0; e < E; e++)
                recs[i].counts[(size_t)r * (size_t)E + (size_t)e] = draw[e];
        }
    }
    free(alpha);
    free(p);
    free(draw);
}

static int run(const config *c, int records, int passes, gsl_rng *rng)
{
    tsim_error err = {0};
    tsim_topology topo;
    if (tsim_topology_init(&topo, c->R, c->E, 8, c->K, NULL, &err) != TSIM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    tsim_record *recs = calloc((size_t)records, sizeof *recs);
    make_records(rng, c->R, c->E, records, recs);
    planner pl;
    int rc = planner_init(&pl, c, &topo, &err);
    tsim_plan plan;
    tsim_evaluator ev;
    if (rc == TSIM_OK)
        rc = tsim_plan_init(&plan, c->R, c->R * c->K, &err);
    if (rc == TSIM_OK)
        rc = tsim_evaluator_init(&ev, &topo, &err);
    if (rc != TSIM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    /* Pass 0 checks every plan with the evaluator; the timed passes call the
     * planner alone, with one clock reading per pass. */
    double rho_before = 0, rho_after = 0, replicas = 0, inter = 0;
    for (int i = 0; i < records; i++) {
        rc = planner_plan(&pl, &recs[i], &plan, &err);
        tsim_metrics met;
        if (rc == TSIM_OK)
            rc = tsim_evaluate_placed(&ev, &recs[i], &plan, NULL, 3.0, c->planner, &met, &err);
        if (rc != TSIM_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 3;
        }
        rho_before += met.v[TSIM_M_RHO_BEFORE] / records;
        rho_after += met.v[TSIM_M_RHO_AFTER] / records;
        replicas += (double)plan.count / records;
        inter += met.v[TSIM_M_INTER] / records;
    }
    const int64_t t0 = tsim_now_ns(), c0 = cpu_ns();
    for (int pass = 0; pass < passes; pass++)
        for (int i = 0; i < records; i++)
            planner_plan(&pl, &recs[i], &plan, &err);
    const int64_t cpu = cpu_ns() - c0, ns = tsim_now_ns() - t0;
    const double n = (double)records * passes;
    printf("| %-7s | %-6s | %3d | %4d | %d | %8.2f | %8.2f | %6.3f -> %6.4f | %5.1f (%4.1f inter) |\n", c->planner,
           c->history ? c->history : "-", c->R, c->E, c->K, (double)ns / 1000.0 / n, (double)cpu / 1000.0 / n,
           rho_before, rho_after, replicas, inter);
    for (int i = 0; i < records; i++)
        tsim_record_free(&recs[i]);
    free(recs);
    planner_free(&pl);
    tsim_plan_free(&plan);
    tsim_evaluator_free(&ev);
    tsim_topology_free(&topo);
    return 0;
}

int main(int argc, char **argv)
{
    int records = 500, passes = 20;
    unsigned long seed = 22;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--records") == 0)
            records = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--passes") == 0)
            passes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];
        else {
            fprintf(stderr, "usage: production_latency [--records N] [--passes P] [--seed S] [--only PLANNER]\n");
            return 2;
        }
    }
    if (records < 1 || passes < 1) {
        fprintf(stderr, "production_latency: --records and --passes must be >= 1\n");
        return 2;
    }
    static const config configs[] = {
        {"moonep", 16, 128, 8, NULL}, {"moonep", 32, 128, 4, NULL}, {"moonep", 64, 256, 4, NULL},
        {"ultraep", 16, 128, 2, NULL}, {"ultraep", 32, 128, 2, NULL}, {"ultraep", 64, 256, 2, NULL},
        {"trtllm", 32, 128, 2, "none"}, {"trtllm", 32, 128, 2, "oracle"},
        {"swift", 32, 128, 2, "none"}, {"swift", 32, 128, 2, "oracle"},
    };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    printf("| planner | history | R | E | K | wall us/record | cpu us/record | rho before -> after | replicas |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0] && rc == 0; i++)
        if (!only || strcmp(only, configs[i].planner) == 0)
            rc = run(&configs[i], records, passes, rng);
    gsl_rng_free(rng);
    return rc;
}
