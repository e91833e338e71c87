/* TAOT CPU reference: the spec vectors, hand-checked cases per phase, plain
 * (naive) re-implementations of every phase written straight from taot.md that
 * the fast code must equal bit for bit, property tests over random records,
 * and the ablation switches. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "test_options.h"
#include "planner.h"
#include "registry.h"
#include "random_records.h"
#include "split.h"
#include "taot.h"
#include "taot_planner.h"
#include "taot_gpu.h"
#include "vector_check.h"

/* ------------------------------------------------------------------------- */
/* helpers                                                                    */

static void topo_make(tsim_topology *t, int R, int E, int rpn, int K)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(t, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
}

static void ctx_make(tsim_taot_ctx *c, const tsim_topology *t, const tsim_planner_options *o)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_taot_init(c, t, &o->common, tsim_planner_options_own_const(o, &tsim_planner_taot), &err), 0, "%s", err.msg);
}

static void plan_make(tsim_plan *p, const tsim_topology *t)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_plan_init(p, t->ranks, t->ranks * (t->slots > 0 ? t->slots : 1), &err), 0);
}

static void record_make(tsim_record *rec, int R, int E, const int64_t *counts)
{
    cr_assert_eq(tsim_record_alloc(rec, R, E, NULL), 0);
    memcpy(rec->counts, counts, sizeof *counts * (size_t)R * (size_t)E);
}

/* Runs the planner and the evaluator; returns the evaluator's loads in after. */
static void plan_and_check(tsim_taot_ctx *c, tsim_evaluator *ev, const tsim_record *rec, tsim_plan *p,
                           const char *label)
{
    tsim_error err = {0};
    tsim_metrics m;
    cr_assert_eq(tsim_taot_plan(c, rec, p, &err), 0, "%s: %s", label, err.msg);
    cr_assert(p->slot_limited, "%s: TAOT plans are slot limited", label);
    cr_assert_eq(tsim_evaluate(ev, rec, p, 3.0, label, &m, &err), 0, "%s", err.msg);
}

/* ------------------------------------------------------------------------- */
/* spec vectors                                                               */

#define MAX_VECTORS 128

static int count_vectors(void)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/vectors/taot", tsim_test_spec_dir());
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < MAX_VECTORS) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            n++;
    }
    closedir(d);
    return n;
}

ParameterizedTestParameters(taot_vectors, reproduce)
{
    static int idx[MAX_VECTORS];
    int n = count_vectors();
    for (int i = 0; i < n; i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, (size_t)n);
}

ParameterizedTest(int *i, taot_vectors, reproduce)
{
    static char paths[MAX_VECTORS][1024];
    int n = tsim_test_vector_files("taot", paths, MAX_VECTORS);
    cr_assert(*i < n);
    tsim_test_check_vector(paths[*i]);
}

Test(taot_vectors, all_present)
{
    static char paths[MAX_VECTORS][1024];
    int n = tsim_test_vector_files("taot", paths, MAX_VECTORS);
    cr_assert_geq(n, 18, "expected the 18 TAOT vectors of vectors/README.md, found %d", n);
}

/* ------------------------------------------------------------------------- */
/* Phase 0                                                                    */

Test(taot_phase0, spill_example_from_spec)
{
    /* Rank 0 owns experts 0..2 with tpe 100, 10, 50 (so loads 10, 50, 100 once
     * sorted); rank 1 has nothing: avg = 160 / 2 = 80. */
    tsim_topology t;
    topo_make(&t, 2, 6, 8, 2);
    const int64_t counts[2 * 6] = {60, 4, 20, 0, 0, 0, /* source rank 0 */
                                   40, 6, 30, 0, 0, 0};
    tsim_record rec;
    record_make(&rec, 2, 6, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    cr_assert_eq(c.tpe[0], 100);
    cr_assert_eq(c.load[0], 160.0f);
    cr_assert_eq(c.load[1], 0.0f);
    cr_assert_eq(c.avg, 80.0f);
    cr_assert_eq(c.hot[0], 80.0f);
    cr_assert_eq(c.hot[1], 0.0f);
    cr_assert_eq(c.spare[0], 0.0f);
    cr_assert_eq(c.spare[1], 80.0f);
    /* Sorted 10 (e1), 50 (e2), 100 (e0): spills 0, 0, 80. */
    cr_assert_eq(c.spill[1], 0.0f);
    cr_assert_eq(c.spill[2], 0.0f);
    cr_assert_eq(c.spill[0], 80.0f);
    for (int e = 3; e < 6; e++)
        cr_assert_eq(c.spill[e], 0.0f);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase0, spill_ties_sorted_by_index)
{
    /* Rank 0: experts 0 and 1 with 60 tokens each, rank 1 empty: avg 60. Equal
     * tpe sort by index, so expert 0 comes first and expert 1 carries the spill. */
    tsim_topology t;
    topo_make(&t, 2, 4, 8, 1);
    const int64_t counts[2 * 4] = {60, 60, 0, 0, 0, 0, 0, 0};
    tsim_record rec;
    record_make(&rec, 2, 4, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    cr_assert_eq(c.spill[0], 0.0f);
    cr_assert_eq(c.spill[1], 60.0f);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase0, many_home_experts_merge_sort)
{
    /* hpr = 40 takes the merge-sort path: spills must still follow the
     * (tpe ascending, index) order. Rank 0 has tpe e + 1 for e = 0..39 except
     * that experts 10 and 30 tie at 11; rank 1 is empty. */
    const int R = 2, E = 80;
    tsim_topology t;
    topo_make(&t, R, E, 8, 1);
    int64_t counts[2 * 80] = {0};
    for (int e = 0; e < 40; e++)
        counts[e] = e + 1;
    counts[30] = 11;
    tsim_record rec;
    record_make(&rec, R, E, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    /* Reference: selection of the order by hand, then the running sums. */
    int order[40];
    bool taken[40] = {false};
    for (int q = 0; q < 40; q++) {
        int b = -1;
        for (int e = 0; e < 40; e++)
            if (!taken[e] && (b < 0 || counts[e] < counts[b]))
                b = e;
        taken[b] = true;
        order[q] = b;
    }
    float run = 0.0f, prev = 0.0f;
    for (int q = 0; q < 40; q++) {
        run += (float)counts[order[q]];
        float cum = run - c.avg > 0.0f ? run - c.avg : 0.0f;
        cr_assert_eq(c.spill[order[q]], cum - prev, "expert %d", order[q]);
        prev = cum;
    }
    float sum = 0.0f;
    for (int e = 0; e < 40; e++)
        sum += c.spill[e];
    cr_assert_float_eq(sum, c.hot[0], 1e-3f);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase0, tpe_accumulated_in_float_above_2_24)
{
    /* 2^24 + 1 + 1 in float, one term at a time, stays 2^24 (ties to even),
     * while the exact total 2^24 + 2 is a float: the phase must use the former. */
    tsim_topology t;
    topo_make(&t, 3, 3, 8, 1);
    const int64_t big = INT64_C(1) << 24;
    const int64_t counts[3 * 3] = {big, 0, 0, 1, 0, 0, 1, 0, 0};
    tsim_record rec;
    record_make(&rec, 3, 3, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    cr_assert_eq(c.tpe[0], big + 2);
    cr_assert_eq(c.tpe_f[0], 16777216.0f);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* ------------------------------------------------------------------------- */
/* Phase 1                                                                    */

Test(taot_phase1, kernel_constants)
{
    const double lambdas[] = {3.0, 5.0, 1.5, 10.0};
    tsim_topology t;
    topo_make(&t, 4, 4, 2, 1);
    for (size_t i = 0; i < sizeof lambdas / sizeof lambdas[0]; i++) {
        const double l = lambdas[i];
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        o.common.lambda_plan = l;
        tsim_taot_ctx c;
        ctx_make(&c, &t, &o);
        /* The exponent is rounded to float first, then exp in double, rounded
         * once (taot.md precision rules, as the published code). */
        cr_assert_eq(c.m_in, (float)exp((double)(float)(-1.0 / l)));
        cr_assert_eq(c.m_out, (float)exp(-1.0));
        cr_assert_eq(c.inv_lambda, (float)(1.0 / l));
        /* Within a node is preferred by exp((lambda - 1) / lambda). */
        cr_assert_float_eq((double)c.m_in / (double)c.m_out, exp((l - 1.0) / l), 1e-6 * exp((l - 1.0) / l));
        tsim_taot_free(&c);
    }
    tsim_topology_free(&t);
}

/* taot.md's worked value: at lambda 3 the kernel constant is 0x3f376e98
 * (0.7165313), not (float)exp(-1.0/3) = 0.71653134 (vector 18 depends on it). */
Test(taot_phase1, kernel_constant_bits_at_lambda_3)
{
    tsim_topology t;
    topo_make(&t, 4, 4, 2, 1);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    uint32_t bits;
    memcpy(&bits, &c.m_in, sizeof bits);
    cr_assert_eq(bits, 0x3f376e98u, "M_in bits 0x%08x", bits);
    cr_assert_neq(c.m_in, (float)exp(-1.0 / 3.0));
    tsim_taot_free(&c);
    tsim_topology_free(&t);
}

Test(taot_phase1, sinkhorn_two_by_two)
{
    /* Ranks 0,1 on node 0 and 2,3 on node 1. Ranks 0 and 2 are hot by h = 60,
     * ranks 1 and 3 have h spare: a 2x2 transport with kernel [[a, b], [b, a]],
     * a = exp(-1/3), b = exp(-1), supply = demand = h. By symmetry the Sinkhorn
     * plan is h/(a+b) * [[a, b], [b, a]], and nothing flows to hot columns. */
    const int R = 4, E = 4;
    tsim_topology t;
    topo_make(&t, R, E, 2, 1);
    const int64_t counts[4 * 4] = {160, 40, 160, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    tsim_record rec;
    record_make(&rec, R, E, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    cr_assert_eq(c.avg, 100.0f);
    cr_assert_eq(c.hot[0], 60.0f);
    cr_assert_eq(c.spare[3], 60.0f);
    tsim_taot_flow_hint(&c);
    cr_assert_eq(c.supply_scale, 1.0f);
    const double a = exp(-1.0 / 3.0), b = exp(-1.0), h = 60.0;
    /* Tn = T / hot: a/(a+b) to the same node, b/(a+b) across. */
    cr_assert_float_eq(tsim_taot_tn(&c, 0, 1), a / (a + b), 1e-5);
    cr_assert_float_eq(tsim_taot_tn(&c, 0, 3), b / (a + b), 1e-5);
    cr_assert_float_eq(tsim_taot_tn(&c, 2, 3), a / (a + b), 1e-5);
    cr_assert_float_eq(tsim_taot_tn(&c, 2, 1), b / (a + b), 1e-5);
    cr_assert_eq(tsim_taot_tn(&c, 0, 0), 0.0f);
    cr_assert_eq(tsim_taot_tn(&c, 0, 2), 0.0f);
    cr_assert_eq(tsim_taot_tn(&c, 1, 3), 0.0f); /* a cold row carries nothing */
    /* Ratio within / across equals the kernel ratio exp((lambda-1)/lambda). */
    cr_assert_float_eq((double)tsim_taot_tn(&c, 0, 1) / (double)tsim_taot_tn(&c, 0, 3), a / b, 1e-5);
    (void)h;
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* Sinkhorn exactly as taot.md writes it: full R x R sums over every j (zeros
 * included), all `iters` rounds, T materialised, then Tn. Fills tn[h*R + r]. */
static void naive_flow_hint(const tsim_taot_ctx *c, float *tn)
{
    const int R = c->R, rpn = c->rpn;
    float *M = malloc(sizeof *M * (size_t)R * (size_t)R);
    float *T = malloc(sizeof *T * (size_t)R * (size_t)R);
    float *u = malloc(sizeof *u * (size_t)R), *v = malloc(sizeof *v * (size_t)R), *sup = malloc(sizeof *sup * (size_t)R);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++)
            M[i * R + j] = i / rpn == j / rpn ? c->m_in : c->m_out;
    float sum_spare = 0.0f, sum_hot = 0.0f;
    for (int r = 0; r < R; r++) {
        sum_spare += c->spare[r];
        sum_hot += c->hot[r];
    }
    float s = sum_spare / fmaxf(sum_hot, 1.0f);
    s = fminf(s, 1.0f);
    for (int r = 0; r < R; r++) {
        sup[r] = c->hot[r] * s;
        u[r] = v[r] = 1.0f;
    }
    for (int it = 0; it < c->iters; it++) {
        for (int i = 0; i < R; i++) {
            float acc = 0.0f;
            for (int j = 0; j < R; j++)
                acc += M[i * R + j] * v[j];
            u[i] = sup[i] / fmaxf(acc, TSIM_TAOT_EPS);
        }
        for (int j = 0; j < R; j++) {
            float acc = 0.0f;
            for (int i = 0; i < R; i++)
                acc += M[i * R + j] * u[i];
            v[j] = c->spare[j] / fmaxf(acc, TSIM_TAOT_EPS);
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++)
            T[i * R + j] = (u[i] * M[i * R + j]) * v[j];
    for (int j = 0; j < R; j++) {
        float col = 0.0f;
        for (int i = 0; i < R; i++)
            col += T[i * R + j];
        float f = fminf(c->spare[j] / fmaxf(col, TSIM_TAOT_EPS), 1.0f);
        for (int i = 0; i < R; i++)
            T[i * R + j] *= f;
    }
    for (int h = 0; h < R; h++)
        for (int r = 0; r < R; r++)
            tn[h * R + r] = T[h * R + r] / fmaxf(c->hot[h], 1.0f);
    free(M);
    free(T);
    free(u);
    free(v);
    free(sup);
}

/* ------------------------------------------------------------------------- */
/* Phase 2: the naive matching, straight from taot.md                         */

/* Every inner iteration recomputes every score of every (e, r) from the state
 * at its start. Writes slot_expert / slot_amount [R*K]. Uses the context's
 * Phase-0 results and its Tn (checked against naive_flow_hint separately). */
static void naive_match(const tsim_taot_ctx *c, int32_t *slot_expert, float *slot_amount)
{
    const int R = c->R, E = c->E, K = c->K;
    const int32_t *home = c->topo->home;
    float *rs = malloc(sizeof *rs * (size_t)E), *rp = malloc(sizeof *rp * (size_t)R);
    bool *used = calloc((size_t)E * (size_t)R, 1);
    bool *matched = malloc((size_t)R);
    int *prop_e = malloc(sizeof *prop_e * (size_t)R);
    float *prop_s = malloc(sizeof *prop_s * (size_t)R);
    int *acc_r = malloc(sizeof *acc_r * (size_t)E);
    float *acc_s = malloc(sizeof *acc_s * (size_t)E);
    const float alpha = c->avg / (float)c->hpr;
    const float hint = 0.1f * alpha;
    for (int e = 0; e < E; e++)
        rs[e] = c->spill[e];
    for (int r = 0; r < R; r++)
        rp[r] = c->spare[r];
    for (int s = 0; s < R * K; s++) {
        slot_expert[s] = -1;
        slot_amount[s] = 0.0f;
    }
    for (int k = 0; k < K; k++) {
        memset(matched, 0, (size_t)R);
        for (int it = 0; it < R; it++) {
            bool any = false;
            for (int r = 0; r < R; r++) {
                prop_e[r] = -1;
                if (matched[r])
                    continue;
                float bs = -INFINITY;
                for (int e = 0; e < E; e++) {
                    const int h = home[e];
                    if (!(c->hot[h] > 0.0f) || r == h || used[(size_t)e * R + r] || !(rp[r] > 0.0f) ||
                        !(rs[e] > 0.0f))
                        continue;
                    const float eff = fminf(rs[e], rp[r]);
                    const float B = r / c->rpn == h / c->rpn ? c->b_near : c->b_far;
                    const float score = (eff + alpha * B) + (hint * tsim_taot_tn(c, h, r));
                    if (score > bs) {
                        bs = score;
                        prop_e[r] = e;
                    }
                }
                prop_s[r] = bs;
                any = any || prop_e[r] >= 0;
            }
            if (!any)
                break;
            for (int e = 0; e < E; e++)
                acc_r[e] = -1;
            for (int r = 0; r < R; r++) {
                const int e = prop_e[r];
                if (e < 0)
                    continue;
                if (acc_r[e] < 0 || prop_s[r] > acc_s[e]) {
                    acc_r[e] = r;
                    acc_s[e] = prop_s[r];
                }
            }
            for (int e = 0; e < E; e++) {
                const int r = acc_r[e];
                if (r < 0)
                    continue;
                const float g = fminf(rs[e], rp[r]);
                slot_expert[r * K + k] = e;
                slot_amount[r * K + k] = g;
                rs[e] = fmaxf(rs[e] - g, 0.0f);
                rp[r] = fmaxf(rp[r] - g, 0.0f);
                matched[r] = true;
            }
        }
        for (int r = 0; r < R; r++)
            if (slot_expert[r * K + k] >= 0)
                used[(size_t)slot_expert[r * K + k] * R + r] = true;
    }
    free(rs);
    free(rp);
    free(used);
    free(matched);
    free(prop_e);
    free(prop_s);
    free(acc_r);
    free(acc_s);
}

static void assert_match_equals_naive(const tsim_taot_ctx *c, const char *label)
{
    const size_t n = (size_t)c->R * (size_t)c->K;
    int32_t *se = malloc(sizeof *se * (n ? n : 1));
    float *sa = malloc(sizeof *sa * (n ? n : 1));
    naive_match(c, se, sa);
    for (size_t s = 0; s < n; s++) {
        cr_assert_eq(c->slot_expert[s], se[s], "%s: slot %zu holds expert %d, naive matching says %d", label, s,
                     c->slot_expert[s], se[s]);
        cr_assert(memcmp(&c->slot_amount[s], &sa[s], sizeof(float)) == 0,
                  "%s: slot %zu amount %.9g, naive matching says %.9g", label, s, (double)c->slot_amount[s],
                  (double)sa[s]);
    }
    free(se);
    free(sa);
}

/* ------------------------------------------------------------------------- */
/* Phase 3: the naive auction and the naive split, straight from taot.md       */

/* Builds into want the plan the auction of taot.md gives for the context's
 * slot table (planned >= 1, slot order g*K+k): every round every slot scans
 * every rank. Returns whether the cap cut service short. */
static bool naive_auction(const tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *want)
{
    const int R = c->R, E = c->E, K = c->K;
    tsim_plan_reset(want);
    int64_t *sup = malloc(sizeof *sup * (size_t)R * (size_t)E);
    memcpy(sup, rec->counts, sizeof *sup * (size_t)R * (size_t)E);
    const int n_slots = R * K;
    int *slot_of = malloc(sizeof *slot_of * (size_t)(n_slots ? n_slots : 1));
    int64_t *dem = malloc(sizeof *dem * (size_t)(n_slots ? n_slots : 1));
    int n = 0;
    for (int g = 0; g < R; g++)
        for (int k = 0; k < K; k++)
            if (c->slot_planned[g * K + k] > 0) {
                tsim_plan_add(want, c->slot_expert[g * K + k], g, k, c->slot_planned[g * K + k]);
                dem[n] = c->slot_planned[g * K + k];
                slot_of[n++] = g * K + k;
            }
    int *price = calloc((size_t)R, sizeof *price);
    int *bid = malloc(sizeof *bid * (size_t)(n ? n : 1));
    float *bid_v = malloc(sizeof *bid_v * (size_t)(n ? n : 1));
    bool capped = false;
    int round;
    for (round = 0; round < c->auction_rounds; round++) {
        for (int i = 0; i < n; i++) {
            bid[i] = -1;
            if (dem[i] <= 0)
                continue;
            const int x = want->replicas[i].expert, g = want->replicas[i].guest;
            for (int r = 0; r < R; r++) {
                if (sup[(size_t)r * E + x] <= 0)
                    continue;
                const float bonus = r == g ? c->bonus_self : (r / c->rpn == g / c->rpn ? 1.0f : c->inv_lambda);
                const float v = bonus - (float)price[r];
                if (bid[i] < 0 || v > bid_v[i]) {
                    bid[i] = r;
                    bid_v[i] = v;
                }
            }
        }
        bool gave = false;
        for (int r = 0; r < R; r++) {
            int best = -1;
            for (int i = 0; i < n; i++)
                if (bid[i] == r && (best < 0 || bid_v[i] > bid_v[best]))
                    best = i;
            if (best < 0)
                continue;
            const int x = want->replicas[best].expert;
            int64_t *s = &sup[(size_t)r * E + x];
            const int64_t amount = *s < dem[best] ? *s : dem[best];
            tsim_plan_alloc_row(want, best)[r] += amount;
            *s -= amount;
            dem[best] -= amount;
            price[r]++;
            gave = true;
        }
        if (!gave)
            break;
    }
    if (round == c->auction_rounds) {
        for (int i = 0; i < n && !capped; i++) {
            if (dem[i] <= 0)
                continue;
            for (int r = 0; r < R; r++)
                if (sup[(size_t)r * E + want->replicas[i].expert] > 0)
                    capped = true;
        }
    }
    tsim_plan_drop_empty(want);
    free(sup);
    free(slot_of);
    free(dem);
    free(price);
    free(bid);
    free(bid_v);
    return capped;
}

/* The split of taot.md for the context's slot table, into want. */
static void naive_split(const tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *want)
{
    const int R = c->R, E = c->E, K = c->K;
    tsim_plan_reset(want);
    int64_t *left = malloc(sizeof *left * (size_t)R);
    for (int e = 0; e < E; e++) {
        int first = want->count;
        for (int g = 0; g < R; g++)
            for (int k = 0; k < K; k++)
                if (c->slot_expert[g * K + k] == e && c->slot_planned[g * K + k] > 0)
                    tsim_plan_add(want, e, g, k, c->slot_planned[g * K + k]);
        if (want->count == first)
            continue;
        int64_t tpe = 0;
        for (int r = 0; r < R; r++) {
            left[r] = rec->counts[(size_t)r * E + e];
            tpe += left[r];
        }
        for (int i = first; i < want->count; i++) {
            int64_t *row = tsim_plan_alloc_row(want, i);
            for (int r = 0; r < R && tpe > 0; r++) {
                const float share = (float)rec->counts[(size_t)r * E + e] / (float)tpe;
                const int64_t f = (int64_t)floorf(share * (float)want->replicas[i].planned);
                row[r] = f;
                left[r] -= f;
            }
        }
        /* Intervals end to end: sources in rank order, slots in slot order. */
        int64_t src_start = 0, slot_start = 0;
        int r = 0;
        int64_t r_end = left[0];
        for (int i = first; i < want->count; i++) {
            int64_t *row = tsim_plan_alloc_row(want, i);
            int64_t want_i = want->replicas[i].planned;
            for (int q = 0; q < R; q++)
                want_i -= row[q];
            const int64_t slot_end = slot_start + want_i;
            while (r < R) {
                const int64_t lo = src_start > slot_start ? src_start : slot_start;
                const int64_t hi = r_end < slot_end ? r_end : slot_end;
                if (hi > lo)
                    row[r] += hi - lo;
                if (r_end > slot_end)
                    break; /* this source continues into the next slot */
                r++;
                src_start = r_end;
                if (r < R)
                    r_end = src_start + left[r];
            }
            slot_start = slot_end;
        }
    }
    tsim_plan_drop_empty(want);
    free(left);
}

/* ------------------------------------------------------------------------- */
/* Phase 2 and 3 hand-checked cases                                           */

Test(taot_phase2, ties_go_to_lowest_index)
{
    /* One node of 4 ranks, one expert each. Ranks 0 and 1 hold 40 tokens each,
     * ranks 2 and 3 none: avg 20, spills 20 and 20, spares 20 and 20. Every
     * score ties (symmetric flow hint, same node), so in the first iteration
     * ranks 2 and 3 both propose to expert 0 (lowest e) and expert 0 accepts
     * rank 2 (lowest r); rank 3 then takes expert 1. */
    tsim_topology t;
    topo_make(&t, 4, 4, 4, 1);
    const int64_t counts[4 * 4] = {40, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    tsim_record rec;
    record_make(&rec, 4, 4, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    TSIM_OPTS(o, taot)->phase3 = TSIM_TAOT_SPLIT;
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    tsim_taot_flow_hint(&c);
    cr_assert_eq(tsim_taot_tn(&c, 0, 2), tsim_taot_tn(&c, 1, 2));
    cr_assert_eq(tsim_taot_tn(&c, 0, 3), tsim_taot_tn(&c, 0, 2));
    tsim_taot_match(&c);
    cr_assert_eq(c.slot_expert[2], 0);
    cr_assert_eq(c.slot_expert[3], 1);
    cr_assert_eq(c.slot_amount[2], 20.0f);
    cr_assert_eq(c.slot_amount[3], 20.0f);
    cr_assert_eq(c.slot_expert[0], -1);
    cr_assert_eq(c.slot_expert[1], -1);
    assert_match_equals_naive(&c, "ties");
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase2, one_expert_per_rank_per_round_and_no_repeat)
{
    /* One hot rank (0, one expert) and K = 2: round 0 gives each cold rank a
     * piece; round 1 cannot give the same expert to the same rank again. */
    tsim_topology t;
    topo_make(&t, 4, 4, 2, 2);
    const int64_t counts[4 * 4] = {400, 10, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    tsim_record rec;
    record_make(&rec, 4, 4, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_taot_stats(&c, &rec);
    tsim_taot_flow_hint(&c);
    tsim_taot_match(&c);
    for (int r = 1; r < 4; r++) {
        cr_assert_eq(c.slot_expert[r * 2 + 0], 0, "rank %d slot 0", r);
        cr_assert_eq(c.slot_expert[r * 2 + 1], -1, "rank %d slot 1 must stay empty", r);
    }
    assert_match_equals_naive(&c, "no repeat");
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* Auction fixture: 4 ranks on 2 nodes, one expert each; expert 0 has 10, 5, 7, 0
 * tokens on sources 0..3; slots (expert 0) on guests 1, 2, 3 want 8, 9, 4. */
static void auction_fixture(tsim_topology *t, tsim_record *rec, tsim_taot_ctx *c, double self_bonus, int rounds)
{
    topo_make(t, 4, 4, 2, 1);
    const int64_t counts[4 * 4] = {10, 0, 0, 0, 5, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0};
    record_make(rec, 4, 4, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    TSIM_OPTS(o, taot)->self_bonus = self_bonus;
    TSIM_OPTS(o, taot)->auction_rounds = rounds;
    ctx_make(c, t, &o);
    tsim_taot_stats(c, rec);
    for (int s = 0; s < 4; s++) {
        c->slot_expert[s] = -1;
        c->slot_planned[s] = 0;
    }
    const int64_t want[4] = {0, 8, 9, 4};
    for (int g = 1; g < 4; g++) {
        c->slot_expert[g] = 0;
        c->slot_planned[g] = want[g];
    }
}

static const int64_t *row_of(const tsim_plan *p, int guest)
{
    for (int i = 0; i < p->count; i++)
        if (p->replicas[i].guest == guest)
            return tsim_plan_alloc_row_c(p, i);
    cr_assert_fail("no replica on guest %d", guest);
    return NULL;
}

Test(taot_phase3, auction_by_hand)
{
    /* Round 1 (prices 0): guest 1 bids source 0 (same node, 1), guest 2 bids
     * source 0 (1/3, lowest rank among 0 and 1), guest 3 bids source 2 (1).
     * Source 0 serves guest 1 (value 1 > 1/3): 8; source 2 serves guest 3: 4.
     * Round 2: guest 2 bids source 1 (1/3 beats 1/3-1 and 0-1): 5.
     * Round 3: source 0 (1/3-1 beats 0-1): 2. Round 4: source 2 (itself): 2. */
    tsim_topology t;
    tsim_record rec;
    tsim_taot_ctx c;
    auction_fixture(&t, &rec, &c, 0.0, 300);
    tsim_plan p;
    plan_make(&p, &t);
    tsim_error err = {0};
    cr_assert_eq(tsim_taot_assign(&c, &rec, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.count, 3);
    const int64_t *a = row_of(&p, 1), *b = row_of(&p, 2), *d = row_of(&p, 3);
    cr_assert(a[0] == 8 && a[1] == 0 && a[2] == 0 && a[3] == 0);
    cr_assert(b[0] == 2 && b[1] == 5 && b[2] == 2 && b[3] == 0, "guest 2 got %lld %lld %lld %lld", (long long)b[0],
              (long long)b[1], (long long)b[2], (long long)b[3]);
    cr_assert(d[0] == 0 && d[1] == 0 && d[2] == 4 && d[3] == 0);
    cr_assert_eq(c.auction_rounds_run, 4);
    cr_assert_eq(p.notes & TSIM_NOTE_AUCTION_CAPPED, 0u);
    tsim_plan_free(&p);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase3, auction_self_bonus_by_hand)
{
    /* self_bonus 2: round 1 guest 1 takes its own 5, guest 2 its own 7 (source 2
     * prefers guest 2's bid, 2 > 1). Round 2: source 0 serves guest 1 (1 beats
     * 1/3): 3. Round 3: guests 2 and 3 tie at 1/3 - 1 on source 0: slot 2 first,
     * 2 tokens. Round 4: guest 3 gets 4 from source 0. */
    tsim_topology t;
    tsim_record rec;
    tsim_taot_ctx c;
    auction_fixture(&t, &rec, &c, 2.0, 300);
    tsim_plan p;
    plan_make(&p, &t);
    tsim_error err = {0};
    cr_assert_eq(tsim_taot_assign(&c, &rec, &p, &err), 0, "%s", err.msg);
    const int64_t *a = row_of(&p, 1), *b = row_of(&p, 2), *d = row_of(&p, 3);
    cr_assert(a[0] == 3 && a[1] == 5 && a[2] == 0);
    cr_assert(b[0] == 2 && b[1] == 0 && b[2] == 7);
    cr_assert(d[0] == 4 && d[1] == 0 && d[2] == 0);
    tsim_plan_free(&p);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase3, auction_round_cap)
{
    /* Same case with 2 and 3 rounds: guest 2 is still short while sources 0 and
     * 2 have its expert's tokens, so the cap cut in; with 4 rounds it did not. */
    const int caps[] = {2, 3, 4};
    const int64_t guest2_total[] = {5, 7, 9};
    for (int q = 0; q < 3; q++) {
        tsim_topology t;
        tsim_record rec;
        tsim_taot_ctx c;
        auction_fixture(&t, &rec, &c, 0.0, caps[q]);
        tsim_plan p;
        plan_make(&p, &t);
        tsim_error err = {0};
        cr_assert_eq(tsim_taot_assign(&c, &rec, &p, &err), 0, "%s", err.msg);
        const int64_t *b = row_of(&p, 2);
        cr_assert_eq(b[0] + b[1] + b[2] + b[3], guest2_total[q], "cap %d", caps[q]);
        cr_assert_eq((p.notes & TSIM_NOTE_AUCTION_CAPPED) != 0, q < 2, "cap %d: capped note", caps[q]);
        tsim_plan_free(&p);
        tsim_taot_free(&c);
        tsim_record_free(&rec);
        tsim_topology_free(&t);
    }
}

Test(taot_phase3, auction_replica_receiving_nothing_is_left_out)
{
    /* Cap 1: only guests 1 and 3 are served in round 1; guest 2's replica got
     * nothing and is not listed. */
    tsim_topology t;
    tsim_record rec;
    tsim_taot_ctx c;
    auction_fixture(&t, &rec, &c, 0.0, 1);
    tsim_plan p;
    plan_make(&p, &t);
    tsim_error err = {0};
    cr_assert_eq(tsim_taot_assign(&c, &rec, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.count, 2);
    for (int i = 0; i < p.count; i++)
        cr_assert_neq(p.replicas[i].guest, 2);
    cr_assert(p.notes & TSIM_NOTE_AUCTION_CAPPED);
    tsim_plan_free(&p);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_phase3, auction_huge_bonus_uses_plain_scan)
{
    /* lambda tiny makes 1/lambda = 1e8: bonus - price ties between prices, so the
     * ordered walk is not exact and the plain scan runs. Both must equal the naive
     * auction. */
    uint64_t st = 99;
    for (int rep = 0; rep < 60; rep++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&st, 24, &sh);
        tsim_topology t;
        topo_make(&t, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots);
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        o.common.lambda_plan = 1e-8;
        TSIM_OPTS(o, taot)->self_bonus = rep % 2 ? 3e7 : 0.0;
        tsim_taot_ctx c;
        ctx_make(&c, &t, &o);
        tsim_record rec;
        tsim_random_record(&st, &sh, &rec);
        tsim_plan p, want;
        plan_make(&p, &t);
        plan_make(&want, &t);
        tsim_error err = {0};
        cr_assert_eq(tsim_taot_plan(&c, &rec, &p, &err), 0);
        bool capped = naive_auction(&c, &rec, &want);
        cr_assert_eq((p.notes & TSIM_NOTE_AUCTION_CAPPED) != 0, capped);
        tsim_test_assert_plans_equal(&p, &want, "huge bonus");
        tsim_plan_free(&p);
        tsim_plan_free(&want);
        tsim_record_free(&rec);
        tsim_taot_free(&c);
        tsim_topology_free(&t);
    }
}

Test(taot_phase3, split_single_precision_floor)
{
    /* vectors/README.md: 6332 * 19849 / 99670 = 1260.99998 exactly, but the
     * float share times the float demand is 1261.0, so the floor is 1261. */
    tsim_topology t;
    topo_make(&t, 2, 2, 8, 1);
    const int64_t counts[2 * 2] = {99670 - 6332, 0, 6332, 0};
    tsim_record rec;
    record_make(&rec, 2, 2, counts);
    tsim_plan p;
    plan_make(&p, &t);
    tsim_split_scratch s;
    tsim_error err = {0};
    cr_assert_eq(tsim_split_scratch_init(&s, 2, 2, &err), 0);
    tsim_plan_reset(&p);
    tsim_plan_add(&p, 0, 1, 0, 19849);
    const int64_t tpe[2] = {99670, 0};
    cr_assert_eq(tsim_split_plan(&rec, tpe, 1, &p, &s, &err), 0);
    const int64_t *row = tsim_plan_alloc_row(&p, 0);
    cr_assert_eq(row[1], 1261, "source 1 sends %lld", (long long)row[1]);
    cr_assert_eq(row[0] + row[1], 19849);
    cr_assert_eq((int64_t)floorf(((float)6332 / (float)99670) * (float)19849), 1261);
    tsim_split_scratch_free(&s);
    tsim_plan_free(&p);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

/* ------------------------------------------------------------------------- */
/* whole planner: edge cases                                                  */

static void plan_counts(int R, int E, int rpn, int K, const int64_t *counts, int phase3, tsim_plan *p,
                        uint32_t *notes)
{
    tsim_topology t;
    topo_make(&t, R, E, rpn, K);
    tsim_record rec;
    record_make(&rec, R, E, counts);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    TSIM_OPTS(o, taot)->phase3 = phase3;
    tsim_taot_ctx c;
    ctx_make(&c, &t, &o);
    tsim_evaluator ev;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluator_init(&ev, &t, &err), 0);
    plan_make(p, &t);
    plan_and_check(&c, &ev, &rec, p, "edge");
    if (notes)
        *notes = p->notes;
    tsim_evaluator_free(&ev);
    tsim_taot_free(&c);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_plan, cold_record_gives_empty_plan)
{
    int64_t counts[8 * 16];
    for (int i = 0; i < 8 * 16; i++)
        counts[i] = 37;
    for (int v = 0; v < 2; v++) {
        tsim_plan p;
        plan_counts(8, 16, 4, 2, counts, v, &p, NULL);
        cr_assert_eq(p.count, 0);
        tsim_plan_free(&p);
    }
}

Test(taot_plan, zero_record_gives_empty_plan)
{
    int64_t counts[4 * 8] = {0};
    for (int v = 0; v < 2; v++) {
        tsim_plan p;
        plan_counts(4, 8, 2, 2, counts, v, &p, NULL);
        cr_assert_eq(p.count, 0);
        tsim_plan_free(&p);
    }
}

Test(taot_plan, no_slots_gives_empty_plan)
{
    int64_t counts[4 * 4] = {500, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    tsim_plan p;
    plan_counts(4, 4, 2, 0, counts, TSIM_TAOT_AUCTION, &p, NULL);
    cr_assert_eq(p.count, 0);
    tsim_plan_free(&p);
}

Test(taot_plan, single_rank)
{
    int64_t counts[1 * 4] = {5, 9, 0, 3};
    tsim_plan p;
    plan_counts(1, 4, 8, 2, counts, TSIM_TAOT_AUCTION, &p, NULL);
    cr_assert_eq(p.count, 0);
    tsim_plan_free(&p);
}

Test(taot_plan, counts_above_2_24_stay_valid)
{
    /* Float counts are approximate above 2^24; the plan must still be valid
     * and lower the maximum load. */
    const int R = 8, E = 16;
    int64_t counts[8 * 16];
    uint64_t st = 7;
    for (int r = 0; r < R; r++)
        for (int e = 0; e < E; e++)
            counts[r * E + e] = tsim_rand_range(&st, 0, INT64_C(1) << 30) * (e < 2 ? 7 : 1);
    for (int v = 0; v < 2; v++) {
        tsim_topology t;
        topo_make(&t, R, E, 4, 2);
        tsim_record rec;
        record_make(&rec, R, E, counts);
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        TSIM_OPTS(o, taot)->phase3 = v;
        tsim_taot_ctx c;
        ctx_make(&c, &t, &o);
        tsim_evaluator ev;
        tsim_error err = {0};
        cr_assert_eq(tsim_evaluator_init(&ev, &t, &err), 0);
        tsim_plan p;
        plan_make(&p, &t);
        plan_and_check(&c, &ev, &rec, &p, "large counts");
        cr_assert_gt(p.count, 0);
        int64_t before = 0, after = 0;
        for (int r = 0; r < R; r++) {
            before = ev.load_before[r] > before ? ev.load_before[r] : before;
            after = ev.load_after[r] > after ? ev.load_after[r] : after;
        }
        cr_assert_lt(after, before);
        tsim_plan_free(&p);
        tsim_evaluator_free(&ev);
        tsim_taot_free(&c);
        tsim_record_free(&rec);
        tsim_topology_free(&t);
    }
}

Test(taot_plan, gpu_device_same_plan_or_cpu_fallback)
{
    /* --taot-device gpu: the CUDA planner when a device answers, else the CPU
     * reference with TSIM_NOTE_GPU_FALLBACK; the plan is the same either way. */
    const int R = 8, E = 16;
    int64_t counts[8 * 16];
    uint64_t st = 3;
    for (int i = 0; i < R * E; i++)
        counts[i] = tsim_rand_range(&st, 0, 100) * (i % E < 2 ? 5 : 1);
    tsim_topology t;
    topo_make(&t, R, E, 4, 2);
    tsim_record rec;
    record_make(&rec, R, E, counts);
    tsim_plan cpu, gpu;
    plan_make(&cpu, &t);
    plan_make(&gpu, &t);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_error err = {0};
    void *cpu_state = NULL, *gpu_state = NULL;
    cr_assert_eq(tsim_planner_init_with(&tsim_planner_taot, &cpu_state, &t, &o, &err), 0, "%s", err.msg);
    cr_assert_not(tsim_taot_gpu_fell_back(cpu_state, NULL, 0));
    cr_assert_eq(tsim_planner_taot.plan(cpu_state, &rec, &cpu, &err), 0);
    TSIM_OPTS(o, taot)->device = TSIM_DEVICE_GPU;
    cr_assert_eq(tsim_planner_init_with(&tsim_planner_taot, &gpu_state, &t, &o, &err), 0, "%s", err.msg);
    char why[256], fell_why[256];
    const bool device = tsim_taot_gpu_available(why, sizeof why) != 0;
    cr_assert_eq(tsim_planner_taot.plan(gpu_state, &rec, &gpu, &err), 0, "%s", err.msg);
    const bool fell_back = tsim_taot_gpu_fell_back(gpu_state, fell_why, sizeof fell_why);
    if (device) {
        cr_assert_not(fell_back, "a device answers, yet: %s", fell_why);
        cr_assert_eq(gpu.notes & TSIM_NOTE_GPU_FALLBACK, 0u);
    } else {
        cr_assert(fell_back);
        cr_assert(fell_why[0] != '\0');
        cr_assert(gpu.notes & TSIM_NOTE_GPU_FALLBACK);
    }
    cr_assert_eq(cpu.notes & TSIM_NOTE_GPU_FALLBACK, 0u);
    cr_assert_gt(cpu.count, 0);
    tsim_test_assert_plans_equal(&gpu, &cpu, "gpu device");
    tsim_planner_taot.free(cpu_state);
    tsim_planner_taot.free(gpu_state);
    tsim_plan_free(&cpu);
    tsim_plan_free(&gpu);
    tsim_record_free(&rec);
    tsim_topology_free(&t);
}

Test(taot_plan, registry_entry)
{
    const tsim_planner_desc *d = tsim_planner_find("taot");
    cr_assert_not_null(d);
    cr_assert_eq(d, &tsim_planner_taot);
    tsim_topology t;
    topo_make(&t, 4, 8, 2, 2);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    o.common.lambda_plan = -1.0;
    void *state = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_init_with(d, &state, &t, &o, &err), TSIM_E_INPUT);
    tsim_planner_options_default(&o);
    cr_assert_eq(tsim_planner_init_with(d, &state, &t, &o, &err), 0, "%s", err.msg);
    d->free(state);
    tsim_topology_free(&t);
}

/* ------------------------------------------------------------------------- */
/* property tests over random records                                         */

typedef struct {
    int records, nonempty, capped, scan_rounds, sinkhorn_checked;
} prop_stats;

static void assert_loads_equal(const int64_t *a, const int64_t *b, int R, const char *label)
{
    for (int r = 0; r < R; r++)
        cr_assert_eq(a[r], b[r], "%s: rank %d load %lld vs %lld", label, r, (long long)a[r], (long long)b[r]);
}

Test(taot_property, random_records, .timeout = 900)
{
    uint64_t st = UINT64_C(0x7a07);
    prop_stats ps = {0};
    const int target = 10000, per_shape = 4;
    int shape_no = 0;
    while (ps.records < target) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&st, 64, &sh);
        const int R = sh.ranks, K = sh.slots;
        tsim_topology t;
        topo_make(&t, R, sh.experts, sh.ranks_per_node, K);
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        /* Mostly defaults; sometimes another lambda, self bonus or a low cap. */
        const int64_t pick = tsim_rand_range(&st, 0, 9);
        if (pick == 0)
            o.common.lambda_plan = 1.5;
        else if (pick == 1)
            o.common.lambda_plan = 5.0;
        if (tsim_rand_range(&st, 0, 4) == 0)
            TSIM_OPTS(o, taot)->self_bonus = tsim_rand_range(&st, 0, 1) ? 2.0 : -1.0;
        if (tsim_rand_range(&st, 0, 3) == 0)
            TSIM_OPTS(o, taot)->auction_rounds = (int)tsim_rand_range(&st, 1, 6);
        if (tsim_rand_range(&st, 0, 9) == 0)
            TSIM_OPTS(o, taot)->iters = (int)tsim_rand_range(&st, 0, 3);
        tsim_planner_options os = o;
        TSIM_OPTS(os, taot)->phase3 = TSIM_TAOT_SPLIT;
        tsim_taot_ctx ca, cs;
        ctx_make(&ca, &t, &o);
        ctx_make(&cs, &t, &os);
        tsim_evaluator ev;
        tsim_error err = {0};
        cr_assert_eq(tsim_evaluator_init(&ev, &t, &err), 0);
        tsim_plan pa, ps_plan, want, first;
        plan_make(&pa, &t);
        plan_make(&ps_plan, &t);
        plan_make(&want, &t);
        plan_make(&first, &t);
        tsim_record rec0 = {0};
        int64_t *loads_a = malloc(sizeof *loads_a * (size_t)R);
        char label[96];

        for (int q = 0; q < per_shape; q++) {
            tsim_record rec;
            tsim_random_record(&st, &sh, &rec);
            rec.index = ps.records;
            snprintf(label, sizeof label, "shape %d (R %d E %d K %d rpn %d) record %d", shape_no, R, sh.experts, K,
                     sh.ranks_per_node, q);

            /* auction */
            plan_and_check(&ca, &ev, &rec, &pa, label);
            int64_t max_before = 0, max_after = 0;
            for (int r = 0; r < R; r++) {
                max_before = ev.load_before[r] > max_before ? ev.load_before[r] : max_before;
                max_after = ev.load_after[r] > max_after ? ev.load_after[r] : max_after;
            }
            cr_assert_leq(max_after, max_before, "%s: max load rose", label);
            memcpy(loads_a, ev.load_after, sizeof *loads_a * (size_t)R);
            int *per_guest = calloc((size_t)R, sizeof *per_guest);
            for (int i = 0; i < pa.count; i++) {
                cr_assert_lt(++per_guest[pa.replicas[i].guest], K + 1, "%s: more than K guests", label);
                cr_assert_gt(pa.replicas[i].planned, 0, "%s", label);
            }
            free(per_guest);
            const bool capped = (pa.notes & TSIM_NOTE_AUCTION_CAPPED) != 0;
            ps.nonempty += pa.count > 0;
            ps.capped += capped;

            /* Phase 2 against the naive matching; Phase 1 against the naive
             * Sinkhorn on every 8th record (it is R^2 * iters). */
            assert_match_equals_naive(&ca, label);
            if (ps.records % 8 == 0) {
                float *tn = malloc(sizeof *tn * (size_t)R * (size_t)R);
                naive_flow_hint(&ca, tn);
                for (int h = 0; h < R; h++)
                    for (int r = 0; r < R; r++) {
                        float got = tsim_taot_tn(&ca, h, r);
                        cr_assert(memcmp(&got, &tn[h * R + r], sizeof got) == 0, "%s: Tn[%d][%d] %.9g vs naive %.9g",
                                  label, h, r, (double)got, (double)tn[h * R + r]);
                    }
                free(tn);
                ps.sinkhorn_checked++;
            }
            /* Phase 3 auction against the naive auction. */
            bool naive_capped = naive_auction(&ca, &rec, &want);
            cr_assert_eq(capped, naive_capped, "%s: capped %d, naive %d", label, capped, naive_capped);
            tsim_test_assert_plans_equal(&pa, &want, label);

            /* split: same Phase 2, its own Phase 3 against the naive split, and
             * the same per-rank loads as the auction unless the cap cut in. */
            plan_and_check(&cs, &ev, &rec, &ps_plan, label);
            cr_assert(memcmp(cs.slot_expert, ca.slot_expert, sizeof *cs.slot_expert * (size_t)(R * K)) == 0, "%s",
                      label);
            cr_assert(memcmp(cs.slot_planned, ca.slot_planned, sizeof *cs.slot_planned * (size_t)(R * K)) == 0,
                      "%s", label);
            if (!capped)
                assert_loads_equal(ev.load_after, loads_a, R, label);
            naive_split(&cs, &rec, &want);
            tsim_test_assert_plans_equal(&ps_plan, &want, label);

            if (q == 0) {
                tsim_plan_reset(&first);
                for (int i = 0; i < pa.count; i++) {
                    int j = tsim_plan_add(&first, pa.replicas[i].expert, pa.replicas[i].guest, pa.replicas[i].slot,
                                          pa.replicas[i].planned);
                    memcpy(tsim_plan_alloc_row(&first, j), tsim_plan_alloc_row(&pa, i), sizeof(int64_t) * (size_t)R);
                }
                first.notes = pa.notes;
                rec0 = rec;
            } else {
                tsim_record_free(&rec);
            }
            ps.records++;
        }

        /* Reused state (after three other records) and a fresh context give
         * the first record's plan again. */
        tsim_error e2 = {0};
        cr_assert_eq(tsim_taot_plan(&ca, &rec0, &pa, &e2), 0);
        cr_assert_eq(pa.notes, first.notes);
        tsim_test_assert_plans_equal(&pa, &first, "reused state");
        tsim_taot_ctx fresh;
        ctx_make(&fresh, &t, &o);
        cr_assert_eq(tsim_taot_plan(&fresh, &rec0, &pa, &e2), 0);
        tsim_test_assert_plans_equal(&pa, &first, "fresh state");
        tsim_taot_free(&fresh);

        tsim_record_free(&rec0);
        free(loads_a);
        tsim_plan_free(&pa);
        tsim_plan_free(&ps_plan);
        tsim_plan_free(&want);
        tsim_plan_free(&first);
        tsim_evaluator_free(&ev);
        tsim_taot_free(&ca);
        tsim_taot_free(&cs);
        tsim_topology_free(&t);
        shape_no++;
    }
    /* The inputs must exercise the planner, not just empty plans. */
    cr_assert_gt(ps.nonempty, ps.records / 3, "only %d of %d plans non-empty", ps.nonempty, ps.records);
    cr_assert_gt(ps.capped, 0, "the auction cap never cut in");
    cr_assert_gt(ps.sinkhorn_checked, 1000);
}

/* ------------------------------------------------------------------------- */
/* ablation switches                                                          */

/* Plans rec with phases run one by one; tweak runs between Phase 1 and 2. */
static void plan_by_phases(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *p, int tweak)
{
    tsim_error err = {0};
    const float b_near = c->b_near, b_far = c->b_far;
    tsim_taot_stats(c, rec);
    if (c->flow_hint)
        tsim_taot_flow_hint(c);
    if (tweak == 1) { /* every B = 0 */
        c->b_near = 0.0f;
        c->b_far = 0.0f;
    } else if (tweak == 2) { /* Tn = 0: u = 0 makes every T[i][j] = 0 */
        for (int r = 0; r < c->R; r++)
            c->u[r] = 0.0f;
    }
    tsim_taot_match(c);
    c->b_near = b_near;
    c->b_far = b_far;
    cr_assert_eq(tsim_taot_assign(c, rec, p, &err), 0);
}

Test(taot_ablation, switches_equal_zeroed_terms)
{
    uint64_t st = 4242;
    int differ_b = 0, differ_tn = 0, n = 0;
    while (n < 1500) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&st, 48, &sh);
        tsim_topology t;
        topo_make(&t, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots);
        tsim_planner_options on, no_b, no_hint;
        tsim_planner_options_default(&on);
        TSIM_OPTS(on, taot)->phase3 = (int)tsim_rand_range(&st, 0, 1);
        no_b = on;
        TSIM_OPTS(no_b, taot)->comm_cost = false;
        no_hint = on;
        TSIM_OPTS(no_hint, taot)->flow_hint = false;
        tsim_taot_ctx c_on, c_b, c_hint;
        ctx_make(&c_on, &t, &on);
        ctx_make(&c_b, &t, &no_b);
        ctx_make(&c_hint, &t, &no_hint);
        tsim_plan p1, p2, p3;
        plan_make(&p1, &t);
        plan_make(&p2, &t);
        plan_make(&p3, &t);
        for (int q = 0; q < 5; q++, n++) {
            tsim_record rec;
            tsim_random_record(&st, &sh, &rec);
            tsim_error err = {0};
            /* comm_cost off == B forced to 0 */
            cr_assert_eq(tsim_taot_plan(&c_b, &rec, &p1, &err), 0);
            plan_by_phases(&c_on, &rec, &p2, 1);
            tsim_test_assert_plans_equal(&p1, &p2, "comm_cost off vs B = 0");
            plan_by_phases(&c_on, &rec, &p3, 0);
            differ_b += !tsim_plan_equal(&p1, &p3);
            /* flow_hint off == Tn forced to 0 */
            cr_assert_eq(tsim_taot_plan(&c_hint, &rec, &p1, &err), 0);
            cr_assert(!c_hint.hint_ready);
            plan_by_phases(&c_on, &rec, &p2, 2);
            tsim_test_assert_plans_equal(&p1, &p2, "flow_hint off vs Tn = 0");
            differ_tn += !tsim_plan_equal(&p1, &p3);
            tsim_record_free(&rec);
        }
        tsim_plan_free(&p1);
        tsim_plan_free(&p2);
        tsim_plan_free(&p3);
        tsim_taot_free(&c_on);
        tsim_taot_free(&c_b);
        tsim_taot_free(&c_hint);
        tsim_topology_free(&t);
    }
    /* The switches must matter somewhere, or the comparison proves nothing. */
    cr_assert_gt(differ_b, 0);
    cr_assert_gt(differ_tn, 0);
}
