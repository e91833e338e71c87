/* How far LPLB's shipped five-step ipm lands from the LP optimum (baselines.md,
 * `lplb`, "Solvers"): the same records planned with `ipm` and `exact`, at EP16
 * and EP32 (E 128, K 2, 8 ranks per node, graph auto), and the distribution of
 * max_ipm / max_exact - 1 over the records, the share within 2%, how often ipm
 * falls back, and each solver's plan latency.
 *
 * Records are synthetic and hot-skewed, with several layers interleaved so the
 * `prev` history (the previous record of the same layer) is informative but
 * not exact: each layer has lognormal expert popularities that drift a little
 * per microbatch, each record adds fresh noise, and every source rank draws
 * Poisson counts around its share. Fixed seed: the same numbers every run.
 *
 *   lplb_ipm_quality [--records N] [--seed S] [--history prev|none|oracle] [--layers L]
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evaluate.h"
#include "planner.h"
#include "registry.h"
#include "stats.h"

#define EXPERTS 128
#define TOKENS_PER_RANK 4096
#define TOP_K 8

typedef struct {
    int records, layers;
    unsigned long seed;
    int history;
} settings;

typedef struct {
    tsim_planner p;
    tsim_plan plan;
    tsim_evaluator ev;
    double *plan_ns;
} solver_run;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int64_t max_load(const tsim_evaluator *ev, int ranks)
{
    int64_t mx = 0;
    for (int r = 0; r < ranks; r++)
        mx = ev->load_after[r] > mx ? ev->load_after[r] : mx;
    return mx;
}

static int start(solver_run *s, const tsim_topology *topo, int solver, int history, int records, tsim_error *err)
{
    memset(s, 0, sizeof *s);
    s->p.desc = tsim_planner_find("lplb");
    snprintf(s->p.label, sizeof s->p.label, "lplb-%s", solver == TSIM_LPLB_IPM ? "ipm" : "exact");
    tsim_planner_options_default(&s->p.opts);
    s->p.opts.lplb.solver = solver;
    s->p.opts.lplb.history = history;
    int rc = tsim_planner_start(&s->p, topo, err);
    if (!rc)
        rc = tsim_plan_init(&s->plan, topo->ranks, topo->ranks * topo->slots, err);
    if (!rc)
        rc = tsim_evaluator_init(&s->ev, topo, err);
    s->plan_ns = malloc(sizeof *s->plan_ns * (size_t)records);
    if (!rc && !s->plan_ns)
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    return rc;
}

static void stop(solver_run *s)
{
    tsim_evaluator_free(&s->ev);
    tsim_plan_free(&s->plan);
    tsim_planner_stop(&s->p);
    free(s->plan_ns);
}

/* Plans and evaluates; returns the max load after, or -1 on an error. */
static int64_t run_one(solver_run *s, const tsim_record *rec, int index, tsim_error *err)
{
    double t0 = now_ns();
    int rc = s->p.desc->plan(s->p.state, rec, &s->plan, err);
    s->plan_ns[index] = now_ns() - t0;
    tsim_metrics m;
    if (!rc)
        rc = tsim_evaluate(&s->ev, rec, &s->plan, 3.0, s->p.label, &m, err);
    return rc ? -1 : max_load(&s->ev, s->ev.topo->ranks);
}

static double quantile(double *sorted, int n, double q)
{
    return tsim_quantile_sorted(sorted, (size_t)n, q);
}

static int report_ep(int R, const settings *cfg)
{
    tsim_error err = {0};
    tsim_topology topo;
    if (tsim_topology_init(&topo, R, EXPERTS, 8, 2, NULL, &err)) {
        fprintf(stderr, "lplb_ipm_quality: %s\n", err.msg);
        return 2;
    }
    solver_run ipm, exact;
    int rc = start(&ipm, &topo, TSIM_LPLB_IPM, cfg->history, cfg->records, &err);
    if (!rc)
        rc = start(&exact, &topo, TSIM_LPLB_EXACT, cfg->history, cfg->records, &err);
    tsim_record rec;
    if (!rc)
        rc = tsim_record_alloc(&rec, R, EXPERTS, &err);
    if (rc) {
        fprintf(stderr, "lplb_ipm_quality: %s\n", err.msg);
        return rc;
    }

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, cfg->seed + (unsigned long)R);
    const int L = cfg->layers;
    double *logit = malloc(sizeof *logit * (size_t)L * EXPERTS);
    double *gap = malloc(sizeof *gap * (size_t)cfg->records);
    double share[EXPERTS];
    for (int i = 0; i < L * EXPERTS; i++)
        logit[i] = gsl_ran_gaussian(rng, 1.0);

    int fallbacks = 0, within2 = 0;
    for (int i = 0; i < cfg->records && !rc; i++) {
        const int layer = i % L;
        double *z = logit + (size_t)layer * EXPERTS;
        if (layer == 0) /* a new microbatch: every layer's popularity drifts */
            for (int k = 0; k < L * EXPERTS; k++)
                logit[k] += gsl_ran_gaussian(rng, 0.1);
        double total = 0.0;
        for (int e = 0; e < EXPERTS; e++) {
            share[e] = exp(z[e] + gsl_ran_gaussian(rng, 0.3));
            total += share[e];
        }
        for (int r = 0; r < R; r++)
            for (int e = 0; e < EXPERTS; e++) {
                double mean = (double)TOKENS_PER_RANK * TOP_K * share[e] / total;
                rec.counts[(size_t)r * EXPERTS + (size_t)e] = (int64_t)gsl_ran_poisson(rng, mean);
            }
        rec.layer = layer;
        rec.microbatch = i / L;
        rec.index = i;
        int64_t mi = run_one(&ipm, &rec, i, &err);
        int64_t me = mi < 0 ? -1 : run_one(&exact, &rec, i, &err);
        if (mi < 0 || me <= 0) {
            fprintf(stderr, "lplb_ipm_quality: record %d: %s\n", i, err.msg);
            rc = TSIM_E_INTERNAL;
            break;
        }
        gap[i] = (double)mi / (double)me - 1.0;
        within2 += gap[i] <= 0.02;
        fallbacks += (ipm.plan.notes & TSIM_NOTE_IPM_FALLBACK) != 0;
    }
    if (!rc) {
        const int n = cfg->records;
        qsort(gap, (size_t)n, sizeof *gap, cmp_double);
        qsort(ipm.plan_ns, (size_t)n, sizeof *ipm.plan_ns, cmp_double);
        qsort(exact.plan_ns, (size_t)n, sizeof *exact.plan_ns, cmp_double);
        printf("| EP%d | %d | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.1f%% | %d (%.1f%%) | %.1f / %.1f | %.1f / %.1f |\n", R,
               n, 100.0 * quantile(gap, n, 0.5), 100.0 * quantile(gap, n, 0.95), 100.0 * quantile(gap, n, 0.99),
               100.0 * gap[n - 1], 100.0 * within2 / n, fallbacks, 100.0 * fallbacks / n,
               quantile(ipm.plan_ns, n, 0.5) / 1e3, quantile(ipm.plan_ns, n, 0.95) / 1e3,
               quantile(exact.plan_ns, n, 0.5) / 1e3, quantile(exact.plan_ns, n, 0.95) / 1e3);
    }
    gsl_rng_free(rng);
    free(logit);
    free(gap);
    tsim_record_free(&rec);
    stop(&ipm);
    stop(&exact);
    tsim_topology_free(&topo);
    return rc;
}

static int usage(FILE *out, int status)
{
    fputs("usage: lplb_ipm_quality [--records N] [--seed S] [--history prev|none|oracle] [--layers L]\n"
          "Plans the same synthetic E=128 records with LPLB ipm and exact at EP16 and EP32 and reports\n"
          "max_ipm/max_exact - 1 (p50, p95, p99, max), the share within 2%, ipm fallbacks, and plan latency.\n",
          out);
    return status;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    settings cfg = {.records = 1000, .layers = 6, .seed = 20240611ul, .history = TSIM_LPLB_HISTORY_PREV};
    const char *hist_name = "prev";
    /* options come in pairs: NAME VALUE */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return usage(stdout, 0);
        if (!v)
            return usage(stderr, 2);
        if (strcmp(a, "--records") == 0)
            cfg.records = atoi(v);
        else if (strcmp(a, "--seed") == 0)
            cfg.seed = strtoul(v, NULL, 10);
        else if (strcmp(a, "--layers") == 0)
            cfg.layers = atoi(v);
        else if (strcmp(a, "--history") == 0) {
            hist_name = v;
            if (strcmp(v, "prev") == 0)
                cfg.history = TSIM_LPLB_HISTORY_PREV;
            else if (strcmp(v, "none") == 0)
                cfg.history = TSIM_LPLB_HISTORY_NONE;
            else if (strcmp(v, "oracle") == 0)
                cfg.history = TSIM_LPLB_HISTORY_ORACLE;
            else
                return usage(stderr, 2);
        } else
            return usage(stderr, 2);
    }
    if (cfg.records < 1 || cfg.layers < 1)
        return usage(stderr, 2);
    printf("lplb ipm vs exact: E %d, K 2, rpn 8, graph auto, history %s, %d records, %d layers, seed %lu\n\n",
           EXPERTS, hist_name, cfg.records, cfg.layers, cfg.seed);
    printf("| EP | records | gap p50 | gap p95 | gap p99 | gap max | within 2%% | ipm fallbacks | ipm us p50/p95 | "
           "exact us p50/p95 |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    int rc = report_ep(16, &cfg);
    if (!rc)
        rc = report_ep(32, &cfg);
    printf("\ngap = max_load(ipm) / max_load(exact) - 1 per record (nearest-rank quantiles).\n");
    return rc;
}
