/* TAOT CPU reference: see taot.h for the phase functions and taot.md for the
 * behaviour. Comments at each step give the exact float evaluation order, which
 * the CUDA port must follow to return the same plan bit for bit. Shortcuts taken
 * here for speed (skipped zero terms, shared per-node sums, a fixed-point exit in
 * Sinkhorn, incremental proposals in Phase 2, per-node (price, rank) orders in
 * the auction) each give exactly the values of the plain formulas; the comments
 * say why. */
#include "taot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEG_SCORE (-INFINITY)

/* max(x, 0), max(x, EPS), max(x, 1), min(x, 1), min(a, b) as comparisons: a NaN x
 * gives the bound (as fmaxf does on the GPU). */
static inline float clamp0(float x)
{
    return x > 0.0f ? x : 0.0f;
}

static inline float at_least_eps(float x)
{
    return x > TSIM_TAOT_EPS ? x : TSIM_TAOT_EPS;
}

static inline float at_least_one(float x)
{
    return x > 1.0f ? x : 1.0f;
}

static inline float at_most_one(float x)
{
    return x < 1.0f ? x : 1.0f;
}

static inline float min2(float a, float b)
{
    return a < b ? a : b;
}

static inline int node_of(const tsim_taot_ctx *c, int r)
{
    return c->node_id[r];
}

/* ------------------------------------------------------------------------- */
/* init / free                                                                */

void tsim_taot_free(tsim_taot_ctx *c)
{
    if (!c)
        return;
    free(c->tpe);
    free(c->tpe_f);
    free(c->load);
    free(c->rank_tokens);
    free(c->hot);
    free(c->spare);
    free(c->spill);
    free(c->sup);
    free(c->u);
    free(c->v);
    free(c->col_factor);
    free(c->cand);
    free(c->cand_of);
    free(c->rs);
    free(c->rp);
    free(c->slot_expert);
    free(c->slot_amount);
    free(c->slot_planned);
    free(c->sort_a);
    free(c->sort_b);
    free(c->list);
    free(c->pin);
    free(c->pout);
    free(c->node_acc);
    free(c->colsum);
    free(c->v_prev);
    free(c->hot_index);
    free(c->hterm);
    free(c->score);
    free(c->best);
    free(c->best_score);
    free(c->round_expert);
    free(c->active);
    free(c->matched);
    free(c->prop_rank);
    free(c->prop_score);
    free(c->touched);
    free(c->accepted);
    free(c->given);
    free(c->x_of_expert);
    free(c->supply);
    free(c->node_id);
    free(c->head1);
    free(c->head2);
    free(c->best_node1);
    free(c->best_node2);
    free(c->heads_round);
    free(c->node_changed);
    free(c->avail_total);
    free(c->slot_x);
    free(c->demand);
    free(c->slot_active);
    free(c->price);
    free(c->order);
    free(c->bid_slot);
    free(c->bid_value);
    free(c->bidders);
    tsim_split_scratch_free(&c->split);
    memset(c, 0, sizeof *c);
}

/* calloc of n elements (at least one), counting failures. */
static void *zalloc(size_t n, size_t size, int *failed)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        (*failed)++;
    return p;
}

int tsim_taot_init(tsim_taot_ctx *c, const tsim_topology *topo, const tsim_planner_common *opts,
                   const tsim_taot_options *o, tsim_error *err)
{
    memset(c, 0, sizeof *c);
    if (!(opts->lambda_plan > 0.0) || !isfinite(opts->lambda_plan))
        return tsim_error_set(err, TSIM_E_INPUT, "taot: lambda_plan must be a positive number, got %g",
                              opts->lambda_plan);
    if (o->iters < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "taot: iters must be >= 0, got %d", o->iters);
    if (o->auction_rounds < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "taot: auction rounds must be >= 1, got %d", o->auction_rounds);
    if (o->phase3 != TSIM_TAOT_AUCTION && o->phase3 != TSIM_TAOT_SPLIT)
        return tsim_error_set(err, TSIM_E_INPUT, "taot: unknown phase3 variant %d", o->phase3);
    if (!isfinite(o->self_bonus))
        return tsim_error_set(err, TSIM_E_INPUT, "taot: self_bonus must be finite");

    c->topo = topo;
    c->R = topo->ranks;
    c->E = topo->experts;
    c->K = topo->slots;
    c->hpr = topo->experts_per_rank;
    c->rpn = topo->ranks_per_node;
    c->nodes = (c->R + c->rpn - 1) / c->rpn;
    c->phase3 = o->phase3;
    c->flow_hint = o->flow_hint;
    c->comm_cost = o->comm_cost;
    c->iters = o->iters;
    c->auction_rounds = o->auction_rounds;
    c->device = o->device;


    /* Constants depending on lambda: double, rounded once to float (never expf).
     * The exponent is rounded to float before exp, as the published code takes
     * it from a float32 tensor: at lambda 3 this is 0x3f376e98, one ulp below
     * (float)exp(-1.0/3), and that bit decides Phase-2 near-ties (taot.md). */
    const double lambda = opts->lambda_plan;
    const float exponent_in = (float)(-1.0 / lambda);
    c->m_in = (float)exp((double)exponent_in);
    c->m_out = (float)exp(-1.0);
    c->inv_lambda = (float)(1.0 / lambda);
    c->b_near = o->comm_cost ? 1.0f : 0.0f;
    c->b_far = o->comm_cost ? c->inv_lambda : 0.0f;
    c->bonus_self = (float)o->self_bonus;
    c->bonus_near = 1.0f;
    c->bonus_far = c->inv_lambda;

    const size_t R = (size_t)c->R, E = (size_t)c->E, K = (size_t)(c->K > 0 ? c->K : 1);
    const size_t RK = R * K, N = (size_t)c->nodes;
    c->max_x = (int)(E < RK ? E : RK);
    const size_t X = (size_t)c->max_x;
    int failed = 0;
    c->tpe = zalloc(E, sizeof *c->tpe, &failed);
    c->tpe_f = zalloc(E, sizeof *c->tpe_f, &failed);
    c->load = zalloc(R, sizeof *c->load, &failed);
    c->rank_tokens = zalloc(R, sizeof *c->rank_tokens, &failed);
    c->hot = zalloc(R, sizeof *c->hot, &failed);
    c->spare = zalloc(R, sizeof *c->spare, &failed);
    c->spill = zalloc(E, sizeof *c->spill, &failed);
    c->sup = zalloc(R, sizeof *c->sup, &failed);
    c->u = zalloc(R, sizeof *c->u, &failed);
    c->v = zalloc(R, sizeof *c->v, &failed);
    c->col_factor = zalloc(R, sizeof *c->col_factor, &failed);
    c->cand = zalloc(E, sizeof *c->cand, &failed);
    c->cand_of = zalloc(E, sizeof *c->cand_of, &failed);
    c->rs = zalloc(E, sizeof *c->rs, &failed);
    c->rp = zalloc(R, sizeof *c->rp, &failed);
    c->slot_expert = zalloc(RK, sizeof *c->slot_expert, &failed);
    c->slot_amount = zalloc(RK, sizeof *c->slot_amount, &failed);
    c->slot_planned = zalloc(RK, sizeof *c->slot_planned, &failed);
    c->sort_a = zalloc((size_t)c->hpr, sizeof *c->sort_a, &failed);
    c->sort_b = zalloc((size_t)c->hpr, sizeof *c->sort_b, &failed);
    c->list = zalloc(R, sizeof *c->list, &failed);
    c->pin = zalloc(R, sizeof *c->pin, &failed);
    c->pout = zalloc(R, sizeof *c->pout, &failed);
    c->node_acc = zalloc(N, sizeof *c->node_acc, &failed);
    c->colsum = zalloc(R, sizeof *c->colsum, &failed);
    c->v_prev = zalloc(R, sizeof *c->v_prev, &failed);
    c->hot_index = zalloc(R, sizeof *c->hot_index, &failed);
    c->hterm = zalloc(R * R, sizeof *c->hterm, &failed);
    c->score = zalloc(E * R, sizeof *c->score, &failed);
    c->best = zalloc(R, sizeof *c->best, &failed);
    c->best_score = zalloc(R, sizeof *c->best_score, &failed);
    c->round_expert = zalloc(RK, sizeof *c->round_expert, &failed);
    c->active = zalloc(R, sizeof *c->active, &failed);
    c->matched = zalloc(R, sizeof *c->matched, &failed);
    c->prop_rank = zalloc(E, sizeof *c->prop_rank, &failed);
    c->prop_score = zalloc(E, sizeof *c->prop_score, &failed);
    c->touched = zalloc(E, sizeof *c->touched, &failed);
    c->accepted = zalloc(E, sizeof *c->accepted, &failed);
    c->given = zalloc(E, sizeof *c->given, &failed);
    c->x_of_expert = zalloc(E, sizeof *c->x_of_expert, &failed);
    c->supply = zalloc(X * R, sizeof *c->supply, &failed);
    c->node_id = zalloc(R, sizeof *c->node_id, &failed);
    c->head1 = zalloc(X * N, sizeof *c->head1, &failed);
    c->head2 = zalloc(X * N, sizeof *c->head2, &failed);
    c->best_node1 = zalloc(X, sizeof *c->best_node1, &failed);
    c->best_node2 = zalloc(X, sizeof *c->best_node2, &failed);
    c->heads_round = zalloc(X, sizeof *c->heads_round, &failed);
    c->node_changed = zalloc(N, sizeof *c->node_changed, &failed);
    c->avail_total = zalloc(X, sizeof *c->avail_total, &failed);
    c->slot_x = zalloc(RK, sizeof *c->slot_x, &failed);
    c->demand = zalloc(RK, sizeof *c->demand, &failed);
    c->slot_active = zalloc(RK, sizeof *c->slot_active, &failed);
    c->price = zalloc(R, sizeof *c->price, &failed);
    c->order = zalloc(R, sizeof *c->order, &failed);
    c->bid_slot = zalloc(R, sizeof *c->bid_slot, &failed);
    c->bid_value = zalloc(R, sizeof *c->bid_value, &failed);
    c->bidders = zalloc(R, sizeof *c->bidders, &failed);
    if (failed) {
        tsim_taot_free(c);
        return tsim_error_set(err, TSIM_E_INTERNAL, "taot: out of memory for %d ranks x %d experts", (int)R,
                              (int)E);
    }
    int rc = tsim_split_scratch_init(&c->split, (int)R, (int)RK, err);
    if (rc) {
        tsim_taot_free(c);
        return rc;
    }
    for (size_t e = 0; e < E; e++) {
        c->cand_of[e] = -1;
        c->x_of_expert[e] = -1;
        c->prop_rank[e] = -1;
    }
    for (size_t r = 0; r < R; r++) {
        c->hot_index[r] = -1;
        c->bid_slot[r] = -1;
        c->node_id[r] = (int32_t)(r / (size_t)c->rpn);
    }
    return TSIM_OK;
}

/* ------------------------------------------------------------------------- */
/* Phase 0: load statistics                                                   */

/* Home-expert order for the spill: tpe ascending, ties by expert index. */
static inline bool spill_before(const float *tpe_f, int32_t a, int32_t b)
{
    return tpe_f[a] < tpe_f[b] || (tpe_f[a] == tpe_f[b] && a < b);
}

/* Sorts idx[0..n-1] by spill_before: insertion sort for the usual few home
 * experts, a bottom-up merge sort (scratch tmp) for many. */
static void sort_home_experts(const float *tpe_f, int32_t *idx, int32_t *tmp, int n)
{
    if (n <= 16) {
        for (int a = 1; a < n; a++) {
            int32_t x = idx[a];
            int j = a - 1;
            while (j >= 0 && spill_before(tpe_f, x, idx[j])) {
                idx[j + 1] = idx[j];
                j--;
            }
            idx[j + 1] = x;
        }
        return;
    }
    int32_t *src = idx, *dst = tmp;
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = spill_before(tpe_f, src[b], src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, sizeof *idx * (size_t)n);
}

void tsim_taot_stats(tsim_taot_ctx *c, const tsim_record *rec)
{
    const int R = c->R, E = c->E, hpr = c->hpr;
    const tsim_topology *t = c->topo;
    c->hint_ready = false;

    /* tpe: exact 64-bit totals first (also used by the split). The float tpe of
     * taot.md is sum over r = 0..R-1 of (float)cnt[r][e], one term at a time. When
     * the exact total is at most 2^24 every partial sum is an integer a float
     * holds exactly, so that float sum equals (float)total; only larger totals
     * need the float loop itself. */
    memset(c->tpe, 0, sizeof *c->tpe * (size_t)E);
    for (int r = 0; r < R; r++) {
        const int64_t *row = rec->counts + (size_t)r * (size_t)E;
        for (int e = 0; e < E; e++)
            c->tpe[e] += row[e];
    }
    for (int e = 0; e < E; e++) {
        if (c->tpe[e] <= (INT64_C(1) << 24)) {
            c->tpe_f[e] = (float)c->tpe[e];
        } else {
            float acc = 0.0f;
            for (int r = 0; r < R; r++)
                acc += (float)rec->counts[(size_t)r * (size_t)E + (size_t)e];
            c->tpe_f[e] = acc;
        }
    }

    /* load[r]: tpe of r's home experts in ascending expert order; the total in
     * rank order; avg = total / R. */
    float total = 0.0f;
    for (int r = 0; r < R; r++) {
        const int32_t *home = tsim_home_experts(t, r);
        float l = 0.0f;
        int64_t exact = 0;
        for (int i = 0; i < hpr; i++) {
            l += c->tpe_f[home[i]];
            exact += c->tpe[home[i]];
        }
        c->load[r] = l;
        c->rank_tokens[r] = exact;
        total += l;
    }
    c->avg = total / (float)R;
    for (int r = 0; r < R; r++) {
        c->hot[r] = clamp0(c->load[r] - c->avg);
        c->spare[r] = clamp0(c->avg - c->load[r]);
    }

    /* Spill: per rank, home experts by tpe ascending (ties by index); running
     * sum S += tpe in that order, cum = max(S - avg, 0), spill = cum - previous
     * cum. A cold rank (load <= avg) whose tokens are at most 2^24 has exact
     * integer running sums <= load <= avg, so every cum and spill is +0: its
     * sort is skipped. Larger loads are computed as written. */
    for (int r = 0; r < R; r++) {
        if (!(c->hot[r] > 0.0f) && c->rank_tokens[r] <= (INT64_C(1) << 24)) {
            const int32_t *home = tsim_home_experts(t, r);
            for (int i = 0; i < hpr; i++)
                c->spill[home[i]] = 0.0f;
            continue;
        }
        memcpy(c->sort_a, tsim_home_experts(t, r), sizeof *c->sort_a * (size_t)hpr);
        sort_home_experts(c->tpe_f, c->sort_a, c->sort_b, hpr);
        float run = 0.0f, prev = 0.0f;
        for (int i = 0; i < hpr; i++) {
            int e = c->sort_a[i];
            run += c->tpe_f[e];
            float cum = clamp0(run - c->avg);
            c->spill[e] = cum - prev;
            prev = cum;
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Phase 1: Sinkhorn-Knopp flow hint                                          */

/* For every node n: acc[n] = sum over idx = 0..n_list-1 (list ascending) of
 * (node(list[idx]) == n ? pin : pout)[list[idx]], one term at a time from 0.
 *
 * This is sum_j M[i][j] x[j] for every i on node n: M[i][j] depends only on
 * whether j is on i's node, so every rank of a node adds the same terms in the
 * same order and gets the same float. Ranks missing from the list have x = 0:
 * their term M * 0 = +0 leaves a non-negative sum unchanged. */
static void node_sums(tsim_taot_ctx *c, int n_list)
{
    const int N = c->nodes;
    float *acc = c->node_acc;
    for (int n = 0; n < N; n++)
        acc[n] = 0.0f;
    for (int idx = 0; idx < n_list; idx++) {
        int j = c->list[idx];
        int nj = c->node_id[j];
        float in = c->pin[j], out = c->pout[j];
        for (int n = 0; n < N; n++)
            acc[n] += n == nj ? in : out;
    }
}

void tsim_taot_flow_hint(tsim_taot_ctx *c)
{
    const int R = c->R, rpn = c->rpn;
    const float m_in = c->m_in, m_out = c->m_out;

    /* s = min(sum(spare) / max(sum(hot), 1), 1); sums in rank order. */
    float sum_spare = 0.0f, sum_hot = 0.0f;
    for (int r = 0; r < R; r++) {
        sum_spare += c->spare[r];
        sum_hot += c->hot[r];
    }
    c->supply_scale = at_most_one(sum_spare / at_least_one(sum_hot));
    for (int r = 0; r < R; r++) {
        c->sup[r] = c->hot[r] * c->supply_scale;
        c->u[r] = 1.0f;
        c->v[r] = 1.0f;
    }

    /* Exactly `iters` rounds: u[i] = sup[i] / max(sum_j M[i][j] v[j], EPS), then
     * v[j] = spare[j] / max(sum_i M[i][j] u[i], EPS) with the new u. Each product
     * M * x is rounded, then added in increasing index order. A round maps v to
     * the next v deterministically, so once a round returns v unchanged (bit for
     * bit) every later round does too: stopping there gives the same u and v. */
    c->iters_computed = 0;
    for (int it = 0; it < c->iters; it++) {
        int n = 0;
        for (int j = 0; j < R; j++) {
            c->pin[j] = m_in * c->v[j];
            c->pout[j] = m_out * c->v[j];
        }
        for (int j = 0; j < R; j++) {
            c->list[n] = j;
            n += c->v[j] != 0.0f;
        }
        node_sums(c, n);
        for (int i = 0; i < R; i++)
            c->u[i] = c->sup[i] / at_least_eps(c->node_acc[c->node_id[i]]);

        n = 0;
        for (int i = 0; i < R; i++) {
            c->pin[i] = m_in * c->u[i];
            c->pout[i] = m_out * c->u[i];
        }
        for (int i = 0; i < R; i++) {
            c->list[n] = i;
            n += c->u[i] != 0.0f;
        }
        node_sums(c, n);
        bool same = true;
        for (int j = 0; j < R; j++) {
            float nv = c->spare[j] / at_least_eps(c->node_acc[c->node_id[j]]);
            if (nv != c->v[j] || signbit(nv) != signbit(c->v[j]))
                same = false;
            c->v[j] = nv;
        }
        c->iters_computed = it + 1;
        if (same)
            break;
    }

    /* T[i][j] = (u[i] * M[i][j]) * v[j]; column sums over i = 0..R-1 in order
     * (rows with u[i] = 0 are all +0 and are skipped); then
     * col_factor[j] = min(spare[j] / max(colsum[j], EPS), 1), and the capped
     * T[i][j] * col_factor[j] is what tsim_taot_tn returns (divided by max(hot,1)). */
    for (int j = 0; j < R; j++)
        c->colsum[j] = 0.0f;
    for (int i = 0; i < R; i++) {
        const float ui = c->u[i];
        if (ui == 0.0f)
            continue;
        const float a_in = ui * m_in, a_out = ui * m_out;
        const int lo = c->node_id[i] * rpn, hi = lo + rpn;
        for (int j = 0; j < R; j++)
            c->colsum[j] += ((j >= lo && j < hi) ? a_in : a_out) * c->v[j];
    }
    for (int j = 0; j < R; j++)
        c->col_factor[j] = at_most_one(c->spare[j] / at_least_eps(c->colsum[j]));
    c->hint_ready = true;
}

float tsim_taot_tn(const tsim_taot_ctx *c, int h, int r)
{
    if (!c->hint_ready)
        return 0.0f;
    const float m = node_of(c, h) == node_of(c, r) ? c->m_in : c->m_out;
    float t = (c->u[h] * m) * c->v[r];
    t = t * c->col_factor[r];
    return t / at_least_one(c->hot[h]);
}

/* ------------------------------------------------------------------------- */
/* Phase 2: column-first iterative matching                                   */

/* The score of candidate ci on rank r from the current rs and rp, for a pair
 * known to be valid apart from rs (NEG_SCORE once the candidate has no spill). */
static inline float live_score(const tsim_taot_ctx *c, int ci, int r, float a_near, float a_far)
{
    const float rs = c->rs[ci];
    if (!(rs > 0.0f))
        return NEG_SCORE;
    const int h = c->topo->home[c->cand[ci]];
    const float alpha_b = c->node_id[h] == c->node_id[r] ? a_near : a_far;
    return tsim_taot_score(min2(rs, c->rp[r]), alpha_b, c->hterm[(size_t)c->hot_index[h] * (size_t)c->R + (size_t)r]);
}

/* Best candidate of rank r from the stored scores: highest, lowest index on
 * ties (strict >), -1 when none is valid (a NaN score never wins). */
static inline int best_of_rank(const tsim_taot_ctx *c, int r, int n_cand)
{
    const float *col = c->score + (size_t)r;
    int b = -1;
    float bs = NEG_SCORE;
    for (int ci = 0; ci < n_cand; ci++) {
        const float v = col[(size_t)ci * (size_t)c->R];
        if (v > bs) {
            bs = v;
            b = ci;
        }
    }
    return b;
}

/* Forgets the previous record's candidates, hint rows and slots. */
static void match_reset(tsim_taot_ctx *c)
{
    const int R = c->R, K = c->K;
    for (int ci = 0; ci < c->n_cand; ci++)
        c->cand_of[c->cand[ci]] = -1;
    for (int r = 0; r < R; r++)
        c->hot_index[r] = -1;
    for (int s = 0; s < R * K; s++) {
        c->slot_expert[s] = -1;
        c->slot_amount[s] = 0.0f;
        c->slot_planned[s] = 0;
    }
}

/* Candidates: experts that can ever be in a valid pair (hot home, spill > 0),
 * in ascending expert order, so that scanning them in order gives lowest-e ties. */
static int match_candidates(tsim_taot_ctx *c)
{
    const tsim_topology *t = c->topo;
    int C = 0;
    for (int e = 0; e < c->E; e++) {
        if (c->hot[t->home[e]] > 0.0f && c->spill[e] > 0.0f) {
            c->cand[C] = e;
            c->cand_of[e] = C;
            c->rs[C] = c->spill[e];
            c->given[C] = 0;
            C++;
        }
    }
    c->n_cand = C;
    return C;
}

/* The hint term (0.1f * alpha) * Tn[h][r], one row per hot home of a candidate. */
static void match_hint_rows(tsim_taot_ctx *c, int C)
{
    const int R = c->R;
    const tsim_topology *t = c->topo;
    int n_rows = 0;
    for (int ci = 0; ci < C; ci++) {
        int h = t->home[c->cand[ci]];
        if (c->hot_index[h] >= 0)
            continue;
        c->hot_index[h] = n_rows;
        float *row = c->hterm + (size_t)n_rows * (size_t)R;
        if (c->hint_ready) {
            /* tsim_taot_tn(c, h, r) for every r, as one loop. */
            const float uh_in = c->u[h] * c->m_in, uh_out = c->u[h] * c->m_out;
            const float denom = at_least_one(c->hot[h]);
            const int nh = node_of(c, h);
            for (int r = 0; r < R; r++) {
                float tr = (c->node_id[r] == nh ? uh_in : uh_out) * c->v[r];
                tr = tr * c->col_factor[r];
                row[r] = c->hint_scale * (tr / denom);
            }
        } else {
            for (int r = 0; r < R; r++)
                row[r] = c->hint_scale * 0.0f;
        }
        n_rows++;
    }
}

/* Every score of round k, candidate by candidate (score[ci*R + r]): valid when
 * rp[r] > 0, r is not the home, rs > 0 and (e, r) was not used in an earlier
 * round; NEG_SCORE otherwise. Then each rank's best candidate, candidates in
 * ascending order with strict > (lowest e). Returns the active ranks' count. */
static int round_scores(tsim_taot_ctx *c, int k, int C, float a_near, float a_far)
{
    const int R = c->R;
    const tsim_topology *t = c->topo;
    for (int r = 0; r < R; r++) {
        c->matched[r] = 0;
        c->best[r] = -1;
        c->best_score[r] = NEG_SCORE;
    }
    for (int ci = 0; ci < C; ci++) {
        const int e = c->cand[ci], h = t->home[e], nh = c->node_id[h];
        const float rs = c->rs[ci];
        float *srow = c->score + (size_t)ci * (size_t)R;
        if (!(rs > 0.0f)) {
            for (int r = 0; r < R; r++)
                srow[r] = NEG_SCORE;
            continue;
        }
        const float *hrow = c->hterm + (size_t)c->hot_index[h] * (size_t)R;
        for (int r = 0; r < R; r++) {
            const float eff = min2(rs, c->rp[r]);
            const float alpha_b = c->node_id[r] == nh ? a_near : a_far;
            const float sc = tsim_taot_score(eff, alpha_b, hrow[r]);
            srow[r] = (c->rp[r] > 0.0f && r != h) ? sc : NEG_SCORE;
        }
        for (int kk = 0; kk < k; kk++) {
            const int32_t *prev = c->round_expert + (size_t)kk * (size_t)R;
            for (int r = 0; r < R; r++)
                srow[r] = prev[r] == e ? NEG_SCORE : srow[r];
        }
        for (int r = 0; r < R; r++) {
            const bool better = srow[r] > c->best_score[r];
            c->best_score[r] = better ? srow[r] : c->best_score[r];
            c->best[r] = better ? ci : c->best[r];
        }
    }
    int n_active = 0;
    for (int r = 0; r < R; r++) {
        c->round_expert[(size_t)k * (size_t)R + (size_t)r] = -1;
        if (c->best[r] >= 0)
            c->active[n_active++] = r;
    }
    return n_active;
}

/* The proposals of round k until no rank is active (at most R iterations). */
static void round_iterate(tsim_taot_ctx *c, int k, int C, int n_active, float a_near, float a_far)
{
    const int R = c->R, K = c->K;
    for (int it = 0; it < R && n_active > 0; it++) {
        /* Column step: every active rank (ascending) proposes to its best
         * candidate. Row step: each candidate keeps the highest-scoring
         * proposer, the lowest rank on ties (strict >). */
        int n_touched = 0;
        for (int a = 0; a < n_active; a++) {
            const int r = c->active[a], ci = c->best[r];
            const float sc = c->score[(size_t)ci * (size_t)R + (size_t)r];
            if (c->prop_rank[ci] < 0) {
                c->prop_rank[ci] = r;
                c->prop_score[ci] = sc;
                c->touched[n_touched++] = ci;
            } else if (sc > c->prop_score[ci]) {
                c->prop_rank[ci] = r;
                c->prop_score[ci] = sc;
            }
        }
        /* Accepted pairs are disjoint in rank and expert, so applying them one
         * after another equals applying them together: g = min(rs, rp) from
         * the state at the start of the iteration. */
        for (int q = 0; q < n_touched; q++) {
            const int ci = c->touched[q], r = c->prop_rank[ci];
            const float g = min2(c->rs[ci], c->rp[r]);
            c->slot_expert[(size_t)r * (size_t)K + (size_t)k] = c->cand[ci];
            c->round_expert[(size_t)k * (size_t)R + (size_t)r] = c->cand[ci];
            c->slot_amount[(size_t)r * (size_t)K + (size_t)k] = g;
            c->rs[ci] = clamp0(c->rs[ci] - g);
            c->rp[r] = clamp0(c->rp[r] - g);
            c->matched[r] = 1;
            c->accepted[ci] = 1;
        }
        int kept = 0;
        for (int a = 0; a < n_active; a++) {
            const int r = c->active[a];
            if (c->matched[r])
                continue;
            for (int q = 0; q < n_touched; q++) {
                const int ci = c->touched[q];
                float *sc = &c->score[(size_t)ci * (size_t)R + (size_t)r];
                if (*sc != NEG_SCORE) /* else invalid for a reason that still holds */
                    *sc = live_score(c, ci, r, a_near, a_far);
            }
            if (c->accepted[c->best[r]])
                c->best[r] = best_of_rank(c, r, C);
            if (c->best[r] >= 0)
                c->active[kept++] = r;
        }
        n_active = kept;
        for (int q = 0; q < n_touched; q++) {
            c->prop_rank[c->touched[q]] = -1;
            c->accepted[c->touched[q]] = 0;
        }
    }
}

/* Planned counts: truncate each slot's float amount; clamp to the tokens of
 * the expert not yet planned (slot order), which only matters above 2^24. */
static void match_counts(tsim_taot_ctx *c)
{
    const int R = c->R, K = c->K;
    for (int s = 0; s < R * K; s++) {
        const int e = c->slot_expert[s];
        if (e < 0)
            continue;
        const int ci = c->cand_of[e];
        const float a = c->slot_amount[s];
        const int64_t left = c->tpe[e] - c->given[ci];
        int64_t d;
        if (!(a >= 1.0f))
            d = 0;
        else if ((double)a >= (double)left)
            d = left;
        else
            d = (int64_t)a;
        if (d < 0)
            d = 0;
        c->given[ci] += d;
        c->slot_planned[s] = d;
    }
}

void tsim_taot_match(tsim_taot_ctx *c)
{
    match_reset(c);
    /* alpha = avg / hpr; the hint factor 0.1f * alpha; alpha * B per topology class. */
    c->alpha = c->avg / (float)c->hpr;
    c->hint_scale = 0.1f * c->alpha;
    const float a_near = c->alpha * c->b_near;
    const float a_far = c->alpha * c->b_far;
    const int C = match_candidates(c);
    if (C == 0 || c->K == 0)
        return;
    match_hint_rows(c, C);
    for (int r = 0; r < c->R; r++)
        c->rp[r] = c->spare[r];

    /* Incremental form of the round of taot.md. Scores are stored per
     * (candidate, rank). Between inner iterations only the accepted pairs change the
     * state: their ranks become matched, their experts' rs falls (rp of a matched
     * rank no longer matters in this round). A score only falls when rs falls
     * (eff = min(rs, rp) and each rounded add is monotone), so an unmatched rank
     * keeps its best candidate unless that candidate was accepted; only those
     * ranks rescan, and only the accepted candidates' scores are recomputed. This
     * gives exactly the proposals of recomputing every score at every iteration. */
    for (int k = 0; k < c->K; k++)
        round_iterate(c, k, C, round_scores(c, k, C, a_near, a_far), a_near, a_far);
    match_counts(c);
}

/* ------------------------------------------------------------------------- */
/* Phase 3: auction                                                           */

/* The bid of slot i (guest g on node ng, expert row x) by the rule of taot.md:
 * the rank r with supply maximising bonus(r) - (float)price[r], lowest r on ties.
 * Plain scan over every rank. */
static int bid_scan(const tsim_taot_ctx *c, int g, int x, float *value)
{
    const int R = c->R, ng = node_of(c, g);
    const int64_t *sup = c->supply + (size_t)x * (size_t)R;
    int best = -1;
    float bv = 0.0f;
    for (int r = 0; r < R; r++) {
        if (sup[r] <= 0)
            continue;
        const float bonus = r == g ? c->bonus_self : node_of(c, r) == ng ? c->bonus_near : c->bonus_far;
        const float v = bonus - (float)c->price[r];
        if (best < 0 || v > bv) {
            best = r;
            bv = v;
        }
    }
    *value = bv;
    return best;
}

/* The ordered form of the same bid. The ranks of each node are kept sorted by
 * (price, rank) in order[] (node n's ranks occupy positions n*rpn.. as they do
 * in rank order). Within one bonus class (near ranks, far ranks; the guest alone
 * is the self class) the value bonus - price falls strictly as the price rises
 * while |bonus| + price < 2^22 (prices are integers below the round count; the
 * caller checks the bound), so a class's best rank is its lowest (price, rank)
 * with supply. Once per round and expert, heads() finds per node the first two
 * ranks with supply and the two best nodes; a slot's near candidate is its node's
 * first rank other than the guest, its far candidate the first rank of the best
 * other node. The three class winners are compared by value, lowest rank on
 * ties, which is the argmax of bid_scan.
 *
 * order_key: (price, rank) as one integer, price in the high half. */
static inline int64_t order_key(const int32_t *price, int r)
{
    return (int64_t)((uint64_t)(uint32_t)price[r] << 32 | (uint32_t)r);
}

static inline bool order_before(const int32_t *price, int a, int b)
{
    return order_key(price, a) < order_key(price, b);
}

static void heads(tsim_taot_ctx *c, int x, int round)
{
    const int R = c->R, N = c->nodes, rpn = c->rpn;
    const int64_t *sup = c->supply + (size_t)x * (size_t)R;
    int32_t *h1 = c->head1 + (size_t)x * (size_t)N, *h2 = c->head2 + (size_t)x * (size_t)N;
    const int since = c->heads_round[x];
    int best1 = -1, best2 = -1;
    for (int n = 0; n < N; n++) {
        /* A node's heads change only when one of its ranks sent something (its
         * price rose, its supply fell) since they were found. */
        if (since < 0 || c->node_changed[n] >= since) {
            const int lo = n * rpn, hi = lo + rpn < R ? lo + rpn : R;
            int a = -1, b = -1;
            for (int idx = lo; idx < hi; idx++) {
                const int r = c->order[idx];
                if (sup[r] <= 0)
                    continue;
                if (a < 0) {
                    a = r;
                } else {
                    b = r;
                    break;
                }
            }
            h1[n] = a;
            h2[n] = b;
        }
        const int a = h1[n];
        if (a < 0)
            continue;
        if (best1 < 0 || order_before(c->price, a, h1[best1])) {
            best2 = best1;
            best1 = n;
        } else if (best2 < 0 || order_before(c->price, a, h1[best2])) {
            best2 = n;
        }
    }
    c->best_node1[x] = best1;
    c->best_node2[x] = best2;
    c->heads_round[x] = round;
}

static int bid_ordered(const tsim_taot_ctx *c, int g, int x, float *value)
{
    const int N = c->nodes, ng = c->node_id[g];
    const int64_t *sup = c->supply + (size_t)x * (size_t)c->R;
    const int32_t *h1 = c->head1 + (size_t)x * (size_t)N, *h2 = c->head2 + (size_t)x * (size_t)N;
    const int near = h1[ng] == g ? h2[ng] : h1[ng];
    const int far_node = c->best_node1[x] != ng ? c->best_node1[x] : c->best_node2[x];
    const int far = far_node >= 0 ? h1[far_node] : -1;
    const int cand_r[3] = {sup[g] > 0 ? g : -1, near, far};
    const float cand_b[3] = {c->bonus_self, c->bonus_near, c->bonus_far};
    int best = -1;
    float bv = 0.0f;
    for (int q = 0; q < 3; q++) {
        const int r = cand_r[q];
        if (r < 0)
            continue;
        const float v = cand_b[q] - (float)c->price[r];
        if (best < 0 || v > bv || (v == bv && r < best)) {
            best = r;
            bv = v;
        }
    }
    *value = bv;
    return best;
}

static void auction(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *out)
{
    const int R = c->R, E = rec->experts, N = c->nodes, rpn = c->rpn, n = out->count;

    /* One supply row per expert that has slots: sup[r][x] = cnt[r][x]. */
    int nx = 0;
    int n_active = 0;
    for (int i = 0; i < n; i++) {
        const int e = out->replicas[i].expert;
        if (c->x_of_expert[e] < 0) {
            const int x = nx++;
            c->x_of_expert[e] = x;
            int64_t *sup = c->supply + (size_t)x * (size_t)R;
            int total = 0;
            for (int r = 0; r < R; r++) {
                const int64_t s = rec->counts[(size_t)r * (size_t)E + (size_t)e];
                sup[r] = s;
                total += s > 0;
            }
            c->avail_total[x] = total;
            c->heads_round[x] = -1;
        }
        c->slot_x[i] = c->x_of_expert[e];
        c->demand[i] = out->replicas[i].planned;
        c->slot_active[n_active++] = i;
    }
    for (int r = 0; r < R; r++) {
        c->price[r] = 0;
        c->order[r] = r;
    }
    for (int nd = 0; nd < N; nd++)
        c->node_changed[nd] = -1;

    float bound = fabsf(c->bonus_self);
    if (fabsf(c->bonus_near) > bound)
        bound = fabsf(c->bonus_near);
    if (fabsf(c->bonus_far) > bound)
        bound = fabsf(c->bonus_far);

    /* Replicas were added in slot order s = g*K + k, so replica index order is
     * slot order: "lowest s" is "lowest i". */
    int round = 0;
    bool ran_out = true;
    for (round = 0; round < c->auction_rounds; round++) {
        /* Prices are at most `round` here. */
        const bool ordered = (double)bound + (double)round < 4194304.0;
        int n_bidders = 0, kept = 0;
        /* 1. Every slot with demand bids for its best rank with supply. */
        for (int a = 0; a < n_active; a++) {
            const int i = c->slot_active[a];
            const int g = out->replicas[i].guest, x = c->slot_x[i];
            float v;
            int r;
            if (ordered) {
                if (c->heads_round[x] != round)
                    heads(c, x, round);
                r = bid_ordered(c, g, x, &v);
            } else {
                r = bid_scan(c, g, x, &v);
            }
            if (r < 0)
                continue; /* no source has its expert's tokens: it never bids again */
            c->slot_active[kept++] = i;
            /* 2. Each rank keeps the bidder of highest value, lowest slot on ties. */
            if (c->bid_slot[r] < 0) {
                c->bid_slot[r] = i;
                c->bid_value[r] = v;
                c->bidders[n_bidders++] = r;
            } else if (v > c->bid_value[r]) {
                c->bid_slot[r] = i;
                c->bid_value[r] = v;
            }
        }
        n_active = kept;
        if (n_bidders == 0) {
            ran_out = false;
            break;
        }
        /* 2. Serve min(supply, demand); 3. the price of every sender rises by 1.
         * A rank serves one slot and a slot bids one rank, so order is free. */
        for (int b = 0; b < n_bidders; b++) {
            const int r = c->bidders[b], i = c->bid_slot[r], x = c->slot_x[i];
            int64_t *sup = c->supply + (size_t)x * (size_t)R + (size_t)r;
            const int64_t amount = *sup < c->demand[i] ? *sup : c->demand[i];
            tsim_plan_alloc_row(out, i)[r] += amount;
            *sup -= amount;
            c->demand[i] -= amount;
            c->price[r]++;
            c->bid_slot[r] = -1;
            c->node_changed[node_of(c, r)] = round;
            if (*sup == 0)
                c->avail_total[x]--;
        }
        kept = 0;
        for (int a = 0; a < n_active; a++)
            if (c->demand[c->slot_active[a]] > 0)
                c->slot_active[kept++] = c->slot_active[a];
        n_active = kept;
        /* Restore the (price, rank) order of every node whose prices rose:
         * insertion sort of a nearly sorted segment. */
        for (int nd = 0; nd < N; nd++) {
            if (c->node_changed[nd] != round)
                continue;
            const int lo = nd * rpn, hi = lo + rpn < R ? lo + rpn : R;
            for (int a = lo + 1; a < hi; a++) {
                const int r = c->order[a];
                int j = a - 1;
                while (j >= lo && order_before(c->price, r, c->order[j])) {
                    c->order[j + 1] = c->order[j];
                    j--;
                }
                c->order[j + 1] = r;
            }
        }
    }
    c->auction_rounds_run = round;
    /* The cap cut service short when a slot would still have bid. */
    if (ran_out) {
        for (int a = 0; a < n_active; a++) {
            if (c->avail_total[c->slot_x[c->slot_active[a]]] > 0) {
                c->notes |= TSIM_NOTE_AUCTION_CAPPED;
                break;
            }
        }
    }
    for (int i = 0; i < n; i++)
        c->x_of_expert[out->replicas[i].expert] = -1;
}

/* ------------------------------------------------------------------------- */
/* Phase 3 entry and the whole planner                                        */

int tsim_taot_assign(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    const int R = c->R, K = c->K;
    tsim_plan_reset(out);
    out->slot_limited = true;
    c->notes = 0;
    c->auction_rounds_run = 0;
    /* Every slot whose planned count is at least 1, in slot order g*K + k. */
    for (int g = 0; g < R; g++) {
        for (int k = 0; k < K; k++) {
            const size_t s = (size_t)g * (size_t)K + (size_t)k;
            if (c->slot_planned[s] <= 0)
                continue;
            if (tsim_plan_add(out, c->slot_expert[s], g, k, c->slot_planned[s]) < 0)
                return tsim_error_set(err, TSIM_E_INTERNAL, "taot: out of memory growing the plan");
        }
    }
    if (out->count > 0) {
        if (c->phase3 == TSIM_TAOT_SPLIT) {
            int rc = tsim_split_plan(rec, c->tpe, K, out, &c->split, err);
            if (rc)
                return rc;
        } else {
            auction(c, rec, out);
        }
        /* Only replicas that receive tokens are listed. */
        tsim_plan_drop_empty(out);
    }
    out->notes = c->notes;
    return TSIM_OK;
}

int tsim_taot_plan(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    if (rec->ranks != c->R || rec->experts != c->E)
        return tsim_error_set(err, TSIM_E_INTERNAL, "taot: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, c->R, c->E);
    tsim_taot_stats(c, rec);
    if (c->flow_hint)
        tsim_taot_flow_hint(c);
    tsim_taot_match(c);
    return tsim_taot_assign(c, rec, out, err);
}
