/* Solve time and strength of the per-record lower bounds (issue 23): for
 * each record of a trace, the objective bound (rho_after + mu * weighted),
 * the least-imbalance bound at a few cost budgets, and the least-cost bound
 * at a target imbalance, with CPU time per call, the LPs and iterations they
 * took, and how often each beats the trivial bound (rounding only for rho,
 * 0 for cost).
 *
 *   bound_timing TRACE [--solver clp|glpk] [--k K] [--lambda L] [--mu MU]
 *                [--lps N] [--records N] [--rho R] [--room 0|1]
 *
 * Times are this thread's CPU time. The EP64 trace of issue 23 (E = 256):
 *   build/taotsim gen -o ep64-imb50.jsonl.gz --ep 64 --experts 256 \
 *     --imbalance 0.5 --microbatches 4 --layers 2
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bound.h"
#include "trace.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double secs, secs_max;
    long lps, its;
    int beats, n, budget_hit;
    double sum;
} tally;

static void count(tally *t, const tsim_bound_result *r, double secs, bool beats)
{
    t->secs += secs;
    t->secs_max = secs > t->secs_max ? secs : t->secs_max;
    t->lps += r->lps;
    t->its += r->iterations;
    t->beats += beats;
    t->budget_hit += r->status == TSIM_BOUND_BUDGET;
    t->sum += isfinite(r->value) ? r->value : 0.0;
    t->n++;
}

static void show(const char *what, const tally *t)
{
    printf("%-24s %8.1f ms mean %8.1f ms max  %5.1f LPs %8.0f its  beats trivial %3d/%d  budget hit %d  mean value %.6g\n",
           what, 1e3 * t->secs / t->n, 1e3 * t->secs_max, (double)t->lps / t->n, (double)t->its / t->n, t->beats,
           t->n, t->budget_hit, t->sum / t->n);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bound_timing TRACE [--solver clp|glpk] [--k K] [--lambda L] [--mu MU] [--lps N] "
                        "[--records N] [--rho R] [--room 0|1]\n");
        return 2;
    }
    tsim_bound_options o;
    tsim_bound_options_default(&o);
    int K = 2, max_records = 1 << 30;
    double mu = 0.001, rho_target = 0.001;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--solver"))
            o.solver = strcmp(argv[i + 1], "glpk") ? TSIM_LP_CLP : TSIM_LP_GLPK;
        else if (!strcmp(argv[i], "--k"))
            K = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lambda"))
            o.lambda = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--mu"))
            mu = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--lps"))
            o.lp_limit = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--records"))
            max_records = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--room"))
            o.room_rows = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--rho"))
            rho_target = atof(argv[i + 1]);
    }
    tsim_error err = {0};
    tsim_reader *rd;
    tsim_read_options ro = {0};
    if (tsim_reader_open(&rd, argv[1], &ro, &err)) {
        fprintf(stderr, "bound_timing: %s\n", err.msg);
        return 2;
    }
    const tsim_trace_header *h = tsim_reader_header(rd);
    tsim_topology topo;
    tsim_bounder *b = NULL;
    if (tsim_topology_init(&topo, h->ep, h->experts, h->ranks_per_node, K, h->home, &err) ||
        tsim_bounder_new(&b, &topo, &o, &err)) {
        fprintf(stderr, "bound_timing: %s\n", err.msg);
        return 2;
    }
    static const double budgets[] = {4, 8, 16, 32};
    enum { NB = sizeof budgets / sizeof budgets[0] };
    tally obj = {0}, cost = {0}, rho[NB] = {{0}};
    const tsim_record *rec;
    int rc, n = 0;
    while (n < max_records && (rc = tsim_reader_next(rd, &rec, &err)) == 1) {
        tsim_bound_result r;
        double t0 = cpu_s();
        if (tsim_bound_objective(b, rec, mu, &r, &err))
            break;
        count(&obj, &r, cpu_s() - t0, r.value > r.trivial + 1e-12);
        for (int i = 0; i < NB; i++) {
            t0 = cpu_s();
            if (tsim_bound_min_rho(b, rec, budgets[i], &r, &err))
                break;
            count(&rho[i], &r, cpu_s() - t0, r.value > r.trivial + 1e-12);
        }
        t0 = cpu_s();
        if (tsim_bound_min_cost(b, rec, rho_target, &r, &err))
            break;
        count(&cost, &r, cpu_s() - t0, r.value > 0.0);
        n++;
    }
    if (err.msg[0]) {
        fprintf(stderr, "bound_timing: %s\n", err.msg);
        return 2;
    }
    printf("%s: R %d E %d rpn %d K %d lambda %g mu %g solver %s, LP limit %d, %d records\n", argv[1], h->ep,
           h->experts, h->ranks_per_node, K, o.lambda, mu, tsim_lp_solver_name(o.solver), o.lp_limit, n);
    show("objective", &obj);
    for (int i = 0; i < NB; i++) {
        char what[64];
        snprintf(what, sizeof what, "min_rho B=%g", budgets[i]);
        show(what, &rho[i]);
    }
    char what[64];
    snprintf(what, sizeof what, "min_cost rho<=%g", rho_target);
    show(what, &cost);
    tsim_bounder_free(b);
    tsim_topology_free(&topo);
    tsim_reader_close(rd);
    return 0;
}
