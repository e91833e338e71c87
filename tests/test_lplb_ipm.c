/* LPLB's shipped solver on a perfectly balanced record (issue 10, item 19):
 * `ipm` leaves about 0.33% imbalance where `exact` and `none` leave 0. This
 * pins that it is the five single-precision steps baselines.md asks for, run
 * faithfully, and not a slip in our port: the same five steps in double
 * precision (an independent dense implementation below) end at x = 0.5 for
 * every bundle (to 1e-9), a perfect balance, while single precision ends up
 * to 0.015 away from it. The normal equations A X^2 A^T are badly conditioned by step five
 * (the big-M column is near 1e-9), so float round-off, not the method, moves
 * x; the published kernel computes in float as well. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "test_options.h"
#include "lplb.h"
#include "planner.h"
#include "registry.h"

/* ---- the five steps in double precision, dense, straight from the spec ---- */

typedef struct {
    int G, D, nc, nv;
    double *a, *x; /* a: nc x nv row-major */
    bool converged;
    double dmax, artificial, residual;
} dense_ipm;

static double *at(dense_ipm *s, int i, int j)
{
    return &s->a[(size_t)i * (size_t)s->nv + (size_t)j];
}

/* Columns x_k (k < GD), y_k, s_i, t, M; rows rank i (< G), bundle k (G + k). */
static void dense_ipm_solve(dense_ipm *s, const tsim_lplb_graph *gr, const double *wb, const double *f)
{
    const int G = gr->group_size, D = gr->dups, GD = G * D, nc = G + GD, nv = 2 * GD + G + 2;
    s->G = G;
    s->D = D;
    s->nc = nc;
    s->nv = nv;
    s->a = calloc((size_t)nc * (size_t)nv, sizeof *s->a);
    s->x = malloc(sizeof *s->x * (size_t)nv);
    double *b = calloc((size_t)nc, sizeof *b), *c = calloc((size_t)nv, sizeof *c);
    double *m = malloc(sizeof *m * (size_t)nc * (size_t)nc), *w = malloc(sizeof *w * (size_t)nc);
    double *d = malloc(sizeof *d * (size_t)nv);
    cr_assert(s->a && s->x && b && c && m && w && d);
    for (int i = 0; i < G; i++) {
        for (int dd = 0; dd < D; dd++) {
            const int own = i * D + dd, o = tsim_lplb_r2o(gr, i, dd), hosted = o * D + dd;
            *at(s, i, own) = wb[own];
            *at(s, i, GD + hosted) = wb[hosted];
        }
        *at(s, i, 2 * GD + i) = 1.0;
        *at(s, i, 2 * GD + G) = -1.0;
        b[i] = -f[i];
    }
    for (int k = 0; k < GD; k++) {
        *at(s, G + k, k) = 1.0;
        *at(s, G + k, GD + k) = 1.0;
        b[G + k] = 1.0;
    }
    for (int i = 0; i < nc; i++) {
        double mcol = b[i];
        for (int j = 0; j < nv - 1; j++)
            mcol -= *at(s, i, j);
        *at(s, i, nv - 1) = mcol;
    }
    c[2 * GD + G] = 1.0;
    c[nv - 1] = 1000.0;
    for (int j = 0; j < nv; j++)
        s->x[j] = 1.0;
    bool ok = true;
    s->dmax = 0.0;
    for (int step = 0; step < TSIM_LPLB_IPM_STEPS && ok; step++) {
        /* (A X^2 A^T) w = A X^2 c by Cholesky */
        for (int i = 0; i < nc; i++) {
            for (int k = 0; k <= i; k++) {
                double sum = 0.0;
                for (int j = 0; j < nv; j++)
                    sum += *at(s, i, j) * s->x[j] * s->x[j] * *at(s, k, j);
                m[(size_t)i * (size_t)nc + (size_t)k] = sum;
            }
            double r = 0.0;
            for (int j = 0; j < nv; j++)
                r += *at(s, i, j) * s->x[j] * s->x[j] * c[j];
            w[i] = r;
        }
        for (int j = 0; j < nc && ok; j++) {
            double piv = m[(size_t)j * (size_t)nc + (size_t)j];
            for (int k = 0; k < j; k++)
                piv -= m[(size_t)j * (size_t)nc + (size_t)k] * m[(size_t)j * (size_t)nc + (size_t)k];
            if (!(piv > 0.0)) {
                ok = false;
                break;
            }
            piv = sqrt(piv);
            m[(size_t)j * (size_t)nc + (size_t)j] = piv;
            for (int i = j + 1; i < nc; i++) {
                double v = m[(size_t)i * (size_t)nc + (size_t)j];
                for (int k = 0; k < j; k++)
                    v -= m[(size_t)i * (size_t)nc + (size_t)k] * m[(size_t)j * (size_t)nc + (size_t)k];
                m[(size_t)i * (size_t)nc + (size_t)j] = v / piv;
            }
        }
        if (!ok)
            break;
        for (int i = 0; i < nc; i++) {
            for (int k = 0; k < i; k++)
                w[i] -= m[(size_t)i * (size_t)nc + (size_t)k] * w[k];
            w[i] /= m[(size_t)i * (size_t)nc + (size_t)i];
        }
        for (int i = nc - 1; i >= 0; i--) {
            for (int k = i + 1; k < nc; k++)
                w[i] -= m[(size_t)k * (size_t)nc + (size_t)i] * w[k];
            w[i] /= m[(size_t)i * (size_t)nc + (size_t)i];
        }
        /* d = X (c - A^T w), x *= 1 - 0.999 d / max(d) */
        double dmax = -INFINITY;
        for (int j = 0; j < nv; j++) {
            double atw = 0.0;
            for (int i = 0; i < nc; i++)
                atw += *at(s, i, j) * w[i];
            d[j] = s->x[j] * (c[j] - atw);
            dmax = d[j] > dmax ? d[j] : dmax;
        }
        s->dmax = dmax;
        if (!(dmax > 0.0))
            break;
        for (int j = 0; j < nv; j++)
            s->x[j] *= 1.0 - 0.999 * d[j] / dmax;
    }
    double residual = 0.0;
    for (int i = 0; i < nc; i++) {
        double ax = 0.0;
        for (int j = 0; j < nv; j++)
            ax += *at(s, i, j) * s->x[j];
        residual = fmax(residual, fabs(ax - b[i]));
    }
    s->residual = residual;
    s->artificial = s->x[nv - 1];
    s->converged = ok && s->dmax < 0.1 && s->artificial >= 0.0 && s->artificial < 1e-4 && residual < 0.05;
    free(b);
    free(c);
    free(m);
    free(w);
    free(d);
}

static void dense_ipm_free(dense_ipm *s)
{
    free(s->a);
    free(s->x);
}

/* Rank loads of the group for kept shares x (exact arithmetic), and their
 * imbalance (max - mean) / mean. */
static double group_imbalance(const tsim_lplb_graph *gr, const double *wb, const double *f, const double *x)
{
    const int G = gr->group_size, D = gr->dups;
    double sum = 0.0, mx = -INFINITY;
    for (int i = 0; i < G; i++) {
        double load = f[i];
        for (int d = 0; d < D; d++) {
            const int o = tsim_lplb_r2o(gr, i, d);
            load += wb[i * D + d] * x[i * D + d] + wb[o * D + d] * (1.0 - x[o * D + d]);
        }
        sum += load;
        mx = load > mx ? load : mx;
    }
    const double mean = sum / G;
    return (mx - mean) / mean;
}

/* ---- solver level ---- */

/* cube8, every bundle and every non-replicated expert the record's largest
 * load (1 after scaling): E = 64 on 8 ranks, two bundles and six others per
 * rank (F = 6). */
Test(lplb_ipm_balanced, float_steps_leave_round_off_double_steps_stay_balanced)
{
    tsim_lplb_graph gr;
    tsim_lplb_ipm w;
    tsim_error err = {0};
    cr_assert_eq(tsim_lplb_graph_make(&gr, "cube8", &err), 0);
    cr_assert_eq(tsim_lplb_ipm_init(&w, &gr, &err), 0);
    float wb[16], f[8], xf[16];
    double wbd[16], fd[8], xd[16];
    for (int k = 0; k < 16; k++)
        wb[k] = 1.0f, wbd[k] = 1.0;
    for (int i = 0; i < 8; i++)
        f[i] = 6.0f, fd[i] = 6.0;

    tsim_lplb_ipm_state st;
    cr_assert(tsim_lplb_ipm_solve(&w, wb, f, xf, &st), "the balanced group falls back (residual %g)",
              (double)st.residual);
    cr_assert_eq(st.steps, 5, "a balanced record is solved, not skipped");
    double spread = 0.0;
    for (int k = 0; k < 16; k++) {
        xd[k] = (double)xf[k];
        spread = fmax(spread, fabs(xd[k] - 0.5));
    }
    const double rho_float = group_imbalance(&gr, wbd, fd, xd);

    dense_ipm ref = {0};
    dense_ipm_solve(&ref, &gr, wbd, fd);
    cr_assert(ref.converged, "double steps: dmax %g artificial %g residual %g", ref.dmax, ref.artificial,
              ref.residual);
    double ref_spread = 0.0;
    for (int k = 0; k < 16; k++)
        ref_spread = fmax(ref_spread, fabs(ref.x[k] - 0.5));
    const double rho_double = group_imbalance(&gr, wbd, fd, ref.x);
    fprintf(stderr,
            "lplb ipm, balanced cube8 group: float |x - 0.5| <= %.4f (residual %.3g), imbalance %.4f%%; "
            "double |x - 0.5| <= %.2g (residual %.3g), imbalance %.2g%%\n",
            spread, (double)st.residual, 100.0 * rho_float, ref_spread, ref.residual, 100.0 * rho_double);
    /* Exact arithmetic keeps the symmetry: every bundle half and half. */
    cr_assert(ref_spread < 1e-7, "double steps moved x off 0.5 by %g", ref_spread);
    cr_assert(rho_double < 1e-7);
    /* Single precision does not: the shipped behaviour, pinned. */
    cr_assert(spread > 5e-3 && spread < 0.05, "float |x - 0.5| up to %g", spread);
    cr_assert(rho_float > 1e-3 && rho_float < 1e-2, "float steps leave %g imbalance", rho_float);
    cr_assert(st.residual > 1e-3f && st.residual < 0.05f, "residual %g", (double)st.residual);
    dense_ipm_free(&ref);
    tsim_lplb_ipm_free(&w);
    tsim_lplb_graph_free(&gr);
}

/* The double reference is the same method: on a well-conditioned group (the
 * mild spread load of test_lplb's convergence case) both precisions agree on
 * x and on convergence. */
Test(lplb_ipm_balanced, double_reference_agrees_on_a_mild_group)
{
    tsim_lplb_graph gr;
    tsim_lplb_ipm w;
    tsim_error err = {0};
    cr_assert_eq(tsim_lplb_graph_make(&gr, "cube8", &err), 0);
    cr_assert_eq(tsim_lplb_ipm_init(&w, &gr, &err), 0);
    float wb[16], f[8], xf[16];
    double wbd[16], fd[8];
    for (int k = 0; k < 16; k++) {
        wb[k] = 0.25f + 0.04f * (float)k;
        wbd[k] = (double)wb[k];
    }
    for (int i = 0; i < 8; i++) {
        f[i] = 1.0f + 0.1f * (float)i;
        fd[i] = (double)f[i];
    }
    tsim_lplb_ipm_state st;
    cr_assert(tsim_lplb_ipm_solve(&w, wb, f, xf, &st));
    dense_ipm ref = {0};
    dense_ipm_solve(&ref, &gr, wbd, fd);
    cr_assert(ref.converged);
    double diff = 0.0;
    for (int k = 0; k < 16; k++)
        diff = fmax(diff, fabs((double)xf[k] - ref.x[k]));
    fprintf(stderr, "lplb ipm, mild cube8 group: float and double x differ by at most %.2g\n", diff);
    cr_assert(diff < 1e-4, "float and double steps differ by %g", diff);
    dense_ipm_free(&ref);
    tsim_lplb_ipm_free(&w);
    tsim_lplb_graph_free(&gr);
}

/* ---- through the planner ---- */

typedef struct {
    double rho_after;
    uint32_t notes;
    int steps;
} balanced_run;

/* R = 8, rpn 8 (auto = cube8), K = 2, history none; every (source, expert)
 * count is `per_source`, so the record is perfectly balanced. */
static balanced_run run_balanced(const char *planner, int E, int solver, int64_t per_source)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 8, E, 8, 2, NULL, &err), 0, "%s", err.msg);
    tsim_planner p = {0};
    p.desc = tsim_planner_find(planner);
    cr_assert_not_null(p.desc);
    snprintf(p.label, sizeof p.label, "%s", planner);
    tsim_test_defaults(&p);
    TSIM_OWN(p, lplb)->solver = solver;
    TSIM_OWN(p, lplb)->history = TSIM_LPLB_HISTORY_NONE;
    cr_assert_eq(tsim_planner_start(&p, &topo, &err), 0, "%s", err.msg);
    tsim_record rec;
    cr_assert_eq(tsim_record_alloc(&rec, 8, E, &err), 0);
    for (size_t i = 0; i < (size_t)8 * (size_t)E; i++)
        rec.counts[i] = per_source;
    tsim_plan plan;
    tsim_evaluator ev;
    tsim_metrics m;
    cr_assert_eq(tsim_plan_init(&plan, 8, 16, &err), 0);
    cr_assert_eq(tsim_evaluator_init(&ev, &topo, &err), 0);
    cr_assert_eq(p.desc->plan(p.state, &rec, &plan, &err), 0, "%s", err.msg);
    cr_assert_eq(tsim_evaluate(&ev, &rec, &plan, 3.0, planner, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.v[TSIM_M_RHO_BEFORE], 0.0);
    balanced_run out = {.rho_after = m.v[TSIM_M_RHO_AFTER], .notes = plan.notes};
    if (strcmp(planner, "lplb") == 0 && solver == TSIM_LPLB_IPM)
        out.steps = tsim_lplb_state_ipm(p.state, 0)->steps;
    tsim_evaluator_free(&ev);
    tsim_plan_free(&plan);
    tsim_record_free(&rec);
    tsim_planner_stop(&p);
    tsim_topology_free(&topo);
    return out;
}

/* The reported case: E = 64, 1024 tokens per (source, expert). ipm converges
 * and leaves 0.33% (the float steps' round-off, above); exact and none leave
 * 0. With E = 128 (F = 14) the float steps miss the residual test, the group
 * falls back to x = 0.5 and the balance is perfect again. */
Test(lplb_ipm_balanced, planner_pins_the_shipped_imbalance)
{
    balanced_run ipm = run_balanced("lplb", 64, TSIM_LPLB_IPM, 1024);
    fprintf(stderr, "lplb ipm on a balanced R 8, E 64 record: rho_after %.4f%%\n", 100.0 * ipm.rho_after);
    cr_assert_eq(ipm.steps, 5, "a balanced record is solved (only a zero one skips the solve)");
    cr_assert_eq(ipm.notes & TSIM_NOTE_IPM_FALLBACK, 0u, "the balanced E = 64 group converges");
    cr_assert(ipm.rho_after > 0.0030 && ipm.rho_after < 0.0036, "ipm rho_after %.6f, pinned near 0.33%%",
              ipm.rho_after);

    balanced_run exact = run_balanced("lplb", 64, TSIM_LPLB_EXACT, 1024);
    cr_assert_eq(exact.rho_after, 0.0, "exact leaves %g", exact.rho_after);
    balanced_run none = run_balanced("none", 64, TSIM_LPLB_IPM, 1024);
    cr_assert_eq(none.rho_after, 0.0);

    balanced_run wide = run_balanced("lplb", 128, TSIM_LPLB_IPM, 1024);
    cr_assert(wide.notes & TSIM_NOTE_IPM_FALLBACK, "the E = 128 group was expected to fall back");
    cr_assert_eq(wide.rho_after, 0.0, "x = 0.5 on even counts splits exactly");
}
