/* `frontier` against TAOT (issue 23, item 3): both plan every record of each
 * trace at the same K and lambda_plan; the evaluator checks every plan and
 * scores it at lambda_eval 1, 3 and 10. Prints per trace the mean rho_after
 * (%) and weighted cost of both at each lambda_eval, the mean inter-node
 * replicas, and the planner call's mean CPU microseconds (thread CPU time
 * over P calls per record, default 20: one call is too short to time).
 *
 *   frontier_vs_taot [--slots K] [--lambda-plan X] [--mu X] [--passes P] TRACE...
 *
 * The goals checked per cell: rho_after <= TAOT's + 0.1 pp and weighted <=
 * 0.8 x TAOT's ("ok" or which one missed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evaluate.h"
#include "frontier.h"
#include "registry.h"
#include "trace.h"

#define NLAMBDA 3
static const double lambda_eval[NLAMBDA] = {1.0, 3.0, 10.0};

typedef struct {
    double rho[NLAMBDA], weighted[NLAMBDA], inter, ns;
} sums;

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int score(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, const char *label, sums *s,
                 tsim_error *err)
{
    for (int l = 0; l < NLAMBDA; l++) {
        tsim_metrics m;
        int rc = tsim_evaluate(ev, rec, plan, lambda_eval[l], label, &m, err);
        if (rc)
            return rc;
        s->rho[l] += m.v[TSIM_M_RHO_AFTER];
        s->weighted[l] += m.v[TSIM_M_WEIGHTED];
        if (l == 0)
            s->inter += m.v[TSIM_M_INTER];
    }
    return TSIM_OK;
}

typedef struct {
    int slots;
    int passes; /* plan calls timed per record and planner (the last one is scored) */
    double lambda_plan;
    tsim_frontier_options fopt;
} settings;

static void print_row(const char *path, const char *who, const sums *s, double n)
{
    printf("%-28s %-8s", path, who);
    for (int l = 0; l < NLAMBDA; l++)
        printf(" %7.3f %7.2f", 100.0 * s->rho[l] / n, s->weighted[l] / n);
    printf(" %6.2f %8.2f\n", s->inter / n, s->ns / n / 1000.0);
}

/* Plans and scores every record with both; 0, or 2 on any error. */
static int bench_trace(const char *path, const settings *cfg)
{
    tsim_error err = {0};
    tsim_reader *rd = NULL;
    tsim_read_options ro = {0};
    tsim_topology topo = {0};
    tsim_planner taot = {0};
    tsim_frontier *fr = NULL;
    tsim_plan plan = {0};
    tsim_evaluator ev = {0};
    sums st = {0}, sf = {0};
    int64_t n = 0;
    int rc = tsim_reader_open(&rd, path, &ro, &err);
    if (!rc) {
        const tsim_trace_header *h = tsim_reader_header(rd);
        rc = tsim_topology_init(&topo, h->ep, h->experts, h->ranks_per_node, cfg->slots, h->home, &err);
    }
    if (!rc) {
        taot.desc = tsim_planner_find("taot");
        snprintf(taot.label, sizeof taot.label, "taot");
        tsim_planner_options_default(&taot.opts);
        taot.opts.lambda_plan = cfg->lambda_plan;
        rc = tsim_planner_start(&taot, &topo, &err);
    }
    if (!rc)
        rc = tsim_frontier_init(&fr, &topo, cfg->slots, cfg->lambda_plan, &cfg->fopt, &err);
    if (!rc)
        rc = tsim_plan_init(&plan, topo.ranks, topo.ranks * (cfg->slots > 0 ? cfg->slots : 1), &err);
    if (!rc)
        rc = tsim_evaluator_init(&ev, &topo, &err);
    const tsim_record *rec;
    while (!rc && (rc = tsim_reader_next(rd, &rec, &err)) == 1) {
        rc = TSIM_OK;
        int64_t t0 = cpu_ns();
        for (int p = 0; !rc && p < cfg->passes; p++)
            rc = taot.desc->plan(taot.state, rec, &plan, &err);
        st.ns += (double)(cpu_ns() - t0) / cfg->passes;
        if (!rc)
            rc = score(&ev, rec, &plan, "taot", &st, &err);
        if (!rc) {
            t0 = cpu_ns();
            for (int p = 0; !rc && p < cfg->passes; p++)
                rc = tsim_frontier_plan(fr, rec, &plan, &err);
            sf.ns += (double)(cpu_ns() - t0) / cfg->passes;
        }
        if (!rc)
            rc = score(&ev, rec, &plan, "frontier", &sf, &err);
        n++;
    }
    if (rc)
        fprintf(stderr, "frontier_vs_taot: %s: %s\n", path, err.msg);
    else if (n > 0) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        print_row(base, "taot", &st, (double)n);
        print_row(base, "frontier", &sf, (double)n);
        printf("%-28s %-8s", base, "goals");
        for (int l = 0; l < NLAMBDA; l++) {
            bool rho_ok = sf.rho[l] <= st.rho[l] + 0.001 * (double)n;
            bool cost_ok = sf.weighted[l] <= 0.8 * st.weighted[l];
            printf(" %15s", rho_ok && cost_ok ? "ok" : !rho_ok && !cost_ok ? "MISS rho+cost" : !rho_ok ? "MISS rho" : "MISS cost");
        }
        printf("\n");
    }
    tsim_evaluator_free(&ev);
    tsim_plan_free(&plan);
    tsim_frontier_free(fr);
    if (taot.state)
        tsim_planner_stop(&taot);
    tsim_topology_free(&topo);
    if (rd)
        tsim_reader_close(rd);
    return rc ? 2 : 0;
}

int main(int argc, char **argv)
{
    settings cfg = {.slots = 2, .passes = 20, .lambda_plan = 3.0};
    tsim_frontier_options_default(&cfg.fopt);
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--slots") == 0)
            cfg.slots = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--lambda-plan") == 0)
            cfg.lambda_plan = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--passes") == 0)
            cfg.passes = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
        else if (strcmp(argv[i], "--mu") == 0)
            cfg.fopt.mu = atof(argv[i + 1]);
        else {
            fprintf(stderr, "frontier_vs_taot: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: frontier_vs_taot [--slots K] [--lambda-plan X] [--mu X] [--passes P] TRACE...\n");
        return 2;
    }
    printf("# K=%d lambda_plan=%g mu=%g; per lambda_eval 1, 3, 10: rho_after %% and weighted; then inter, us/plan\n",
           cfg.slots, cfg.lambda_plan, cfg.fopt.mu);
    printf("%-28s %-8s %15s %15s %15s %6s %8s\n", "trace", "planner", "l=1 rho  wtd", "l=3 rho  wtd",
           "l=10 rho  wtd", "inter", "us/plan");
    int status = 0;
    for (; i < argc; i++)
        if (bench_trace(argv[i], &cfg))
            status = 2;
    return status;
}
