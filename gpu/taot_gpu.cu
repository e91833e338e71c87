/* TAOT kernels and their host launcher (the engine of gpu/taot_gpu.h).
 *
 * One thread block plans one record: Phase 0 (load statistics), Phase 1
 * (Sinkhorn, every round in the same launch), Phase 2 (all K rounds of the
 * column-first matching), Phase 3 (auction or split) and the compaction of the
 * plan, with the record's state in shared memory. One launch plans a batch of
 * records, one block each; the host side copies the counts in, launches and
 * copies the plans out on one stream, and replays that sequence as a CUDA graph.
 *
 * Bit parity with src/taot.c. Every float operation below is the CPU's
 * operation, in the CPU's order, written with the round-to-nearest intrinsics
 * (__fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn, __ll2float_rn, __int2float_rn)
 * that nvcc never contracts into an FMA nor replaces by an approximation (the
 * build also passes --fmad=false -prec-div=true -ftz=false). Where the GPU
 * computes the same value another way (parallel instead of sequential, a scan
 * instead of a stored matrix), the comment marked PARITY says why the result is
 * the same bit for bit. */
#define TSIM_TAOT_GPU_ENGINE_ONLY
#include "taot_gpu.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define FULL_MASK 0xffffffffu
#define NOTE_AUCTION_CAPPED 1u /* TSIM_NOTE_AUCTION_CAPPED of plan.h */
#define EPS 1e-8f              /* TSIM_TAOT_EPS of taot.h */

/* ------------------------------------------------------------------------- */
/* Single-precision helpers: the CPU's, one for one                            */

__device__ __forceinline__ float f_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float f_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float f_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float f_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float neg_inf(void) { return __int_as_float(0xff800000); }

/* The CPU's comparisons, so that a NaN gives the bound exactly as there. */
__device__ __forceinline__ float clamp0(float x) { return x > 0.0f ? x : 0.0f; }
__device__ __forceinline__ float at_least_eps(float x) { return x > EPS ? x : EPS; }
__device__ __forceinline__ float at_least_one(float x) { return x > 1.0f ? x : 1.0f; }
__device__ __forceinline__ float at_most_one(float x) { return x < 1.0f ? x : 1.0f; }
__device__ __forceinline__ float min2(float a, float b) { return a < b ? a : b; }

__device__ __forceinline__ uint32_t fnv(uint32_t h, uint32_t w) { return (h ^ w) * 16777619u; }

/* ------------------------------------------------------------------------- */
/* Kernel parameters and the shared-memory layout                              */

struct Params {
    int R, E, K, hpr, rpn;
    int phase3, flow_hint, iters, auction_rounds, diagnostics;
    float m_in, m_out, b_near, b_far, bonus_self, bonus_near, bonus_far;
    const int32_t *home;         /* [E] */
    const int32_t *rank_experts; /* [R * hpr] */
    const void *counts;          /* [n][R][E], uint32 or int64 */
    int wide;
    unsigned char *out;          /* [n] blocks of out_stride bytes */
    size_t out_stride;
    int64_t *scratch;            /* [n] blocks of scratch_stride int64 */
    size_t scratch_stride;
};

/* Byte offsets of every per-record array in dynamic shared memory. The same
 * function sizes it on the host. 8-byte arrays first, every array 8-aligned. */
struct Layout {
    size_t tpe, given, pmask, slot_planned, dem;                          /* 8-byte */
    size_t tpe_f, spill, rs, M, hterm, load, hot, spare, sup, u, v, colf; /* float */
    size_t rp, best_score, slot_amount, bid_val;                          /* float */
    size_t home, cand, sortbuf, stamp, best, active, matched, price;      /* int32 */
    size_t slot_expert, slot_ci, rep_slot, rep_x, live, bid_rank, kept;   /* int32 */
    size_t total;
};

__host__ __device__ static inline size_t take(size_t *cursor, size_t bytes)
{
    const size_t at = *cursor;
    *cursor += (bytes + 7) & ~(size_t)7;
    return at;
}

__host__ __device__ static inline void layout_make(Layout *L, int R, int E, int K)
{
    const size_t r = (size_t)R, e = (size_t)E, rk = (size_t)R * (size_t)(K > 0 ? K : 1);
    size_t c = 0;
    L->tpe = take(&c, 8 * e);
    L->given = take(&c, 8 * e);
    L->pmask = take(&c, 8 * e);
    L->slot_planned = take(&c, 8 * rk);
    L->dem = take(&c, 8 * rk);
    L->tpe_f = take(&c, 4 * e);
    L->spill = take(&c, 4 * e);
    L->rs = take(&c, 4 * e);
    L->M = take(&c, 4 * r * r);
    L->hterm = take(&c, 4 * r * r);
    L->load = take(&c, 4 * r);
    L->hot = take(&c, 4 * r);
    L->spare = take(&c, 4 * r);
    L->sup = take(&c, 4 * r);
    L->u = take(&c, 4 * r);
    L->v = take(&c, 4 * r);
    L->colf = take(&c, 4 * r);
    L->rp = take(&c, 4 * r);
    L->best_score = take(&c, 4 * r);
    L->slot_amount = take(&c, 4 * rk);
    L->bid_val = take(&c, 4 * rk);
    L->home = take(&c, 4 * e);
    L->cand = take(&c, 4 * e);
    L->sortbuf = take(&c, 4 * e);
    L->stamp = take(&c, 4 * e);
    L->best = take(&c, 4 * r);
    L->active = take(&c, 4 * r);
    L->matched = take(&c, 4 * r);
    L->price = take(&c, 4 * r);
    L->slot_expert = take(&c, 4 * rk);
    L->slot_ci = take(&c, 4 * rk);
    L->rep_slot = take(&c, 4 * rk);
    L->rep_x = take(&c, 4 * rk);
    L->live = take(&c, 4 * rk);
    L->bid_rank = take(&c, 4 * rk);
    L->kept = take(&c, 4 * rk);
    L->total = c;
}

/* Output block of one record: header, replicas [R*K], alloc rows [R*K][R]. */
__host__ __device__ static inline size_t out_replicas_offset(void)
{
    return sizeof(tsim_taot_gpu_record_out);
}

__host__ __device__ static inline size_t out_alloc_offset(int R, int K)
{
    const size_t rk = (size_t)R * (size_t)(K > 0 ? K : 1);
    return out_replicas_offset() + rk * sizeof(tsim_taot_gpu_replica);
}

__host__ __device__ static inline size_t out_stride_of(int R, int K)
{
    const size_t rk = (size_t)R * (size_t)(K > 0 ? K : 1);
    const size_t bytes = out_alloc_offset(R, K) + rk * (size_t)R * sizeof(int64_t);
    return (bytes + 255) & ~(size_t)255;
}

/* Per block global scratch: the auction's supply (or the split's per-source
 * leftovers) and the alloc rows before the empty replicas are dropped. */
__host__ __device__ static inline size_t scratch_stride_of(int R, int K)
{
    const size_t rk = (size_t)R * (size_t)(K > 0 ? K : 1);
    return 2 * rk * (size_t)R;
}

/* The record's state: pointers into shared memory, plus scalars. */
struct State {
    int64_t *tpe, *given, *slot_planned, *dem;
    unsigned long long *pmask;
    float *tpe_f, *spill, *rs, *M, *hterm, *load, *hot, *spare, *sup, *u, *v, *colf;
    float *rp, *best_score, *slot_amount, *bid_val;
    int32_t *home, *cand, *sortbuf, *stamp, *best, *active, *matched, *price;
    int32_t *slot_expert, *slot_ci, *rep_slot, *rep_x, *live, *bid_rank, *kept;
    int64_t *supply, *alloc; /* global scratch of this block */
};

struct Scalars {
    float avg, supply_scale, alpha, hint_scale, a_near, a_far;
    int n_cand, n_rep, n_out, iters_computed, rounds_run;
    uint32_t notes;
    int warp_sums[WARPS + 1];
};

template <typename T> __device__ __forceinline__ T *at(unsigned char *base, size_t off)
{
    return reinterpret_cast<T *>(base + off);
}

__device__ __forceinline__ int64_t count_at(const Params &p, int rec, int r, int e)
{
    const size_t idx = ((size_t)rec * (size_t)p.R + (size_t)r) * (size_t)p.E + (size_t)e;
    if (p.wide)
        return static_cast<const int64_t *>(p.counts)[idx];
    return (int64_t) static_cast<const uint32_t *>(p.counts)[idx];
}

__device__ __forceinline__ int node_of(const Params &p, int r) { return r / p.rpn; }

/* Exclusive prefix of one flag per thread over the block; *total gets the sum.
 * Every thread of the block must call it. */
__device__ int block_prefix(int flag, Scalars &sc, int *total)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(FULL_MASK, flag);
    const int in_warp = __popc(ballot & ((1u << lane) - 1u));
    if (lane == 0)
        sc.warp_sums[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int w = 0; w < WARPS; w++) {
            const int c = sc.warp_sums[w];
            sc.warp_sums[w] = acc;
            acc += c;
        }
        sc.warp_sums[WARPS] = acc;
    }
    __syncthreads();
    const int pos = sc.warp_sums[warp] + in_warp;
    *total = sc.warp_sums[WARPS];
    __syncthreads(); /* warp_sums is reused by the next call */
    return pos;
}

/* ------------------------------------------------------------------------- */
/* Phase 0: load statistics (tsim_taot_stats)                                   */

/* Home-expert order for the spill: tpe ascending, ties by expert index. */
__device__ __forceinline__ bool spill_before(const float *tpe_f, int32_t a, int32_t b)
{
    return tpe_f[a] < tpe_f[b] || (tpe_f[a] == tpe_f[b] && a < b);
}

__device__ void phase0(const Params &p, State &s, Scalars &sc, int rec)
{
    const int R = p.R, E = p.E, hpr = p.hpr, tid = threadIdx.x;

    /* tpe: the exact 64-bit total, then the float tpe of taot.md exactly as the
     * CPU takes it: (float)total when total <= 2^24, else the float sum over
     * r = 0..R-1 one term at a time. One thread per expert. */
    const size_t rec_base = (size_t)rec * (size_t)R * (size_t)E;
    for (int e = tid; e < E; e += THREADS) {
        /* Integer sum: exact in any order, so the loads are unrolled. */
        int64_t total = 0;
        if (p.wide) {
            const int64_t *col = static_cast<const int64_t *>(p.counts) + rec_base + (size_t)e;
#pragma unroll 8
            for (int r = 0; r < R; r++)
                total += col[(size_t)r * (size_t)E];
        } else {
            const uint32_t *col = static_cast<const uint32_t *>(p.counts) + rec_base + (size_t)e;
#pragma unroll 8
            for (int r = 0; r < R; r++)
                total += (int64_t)col[(size_t)r * (size_t)E];
        }
        s.tpe[e] = total;
        if (total <= ((int64_t)1 << 24)) {
            s.tpe_f[e] = __ll2float_rn(total);
        } else {
            float acc = 0.0f;
            for (int r = 0; r < R; r++)
                acc = f_add(acc, __ll2float_rn(count_at(p, rec, r, e)));
            s.tpe_f[e] = acc;
        }
        s.home[e] = p.home[e];
    }
    __syncthreads();

    /* load[r]: r's home experts in ascending expert order (rank_experts is the
     * CPU's tsim_home_experts list), one thread per rank. */
    if (tid < R) {
        const int32_t *mine = p.rank_experts + (size_t)tid * (size_t)hpr;
        float l = 0.0f;
        for (int i = 0; i < hpr; i++)
            l = f_add(l, s.tpe_f[mine[i]]);
        s.load[tid] = l;
    }
    __syncthreads();

    /* The total in rank order, one thread; avg = total / R. */
    if (tid == 0) {
        float total = 0.0f;
        for (int r = 0; r < R; r++)
            total = f_add(total, s.load[r]);
        sc.avg = f_div(total, __int2float_rn(R));
    }
    __syncthreads();

    /* hot, spare; the spill of each rank's home experts. PARITY: the CPU sorts
     * with insertion or merge sort by size, this thread always by insertion; the
     * order (tpe ascending, then index) is strict and total on distinct experts
     * (tpe_f holds no NaN: it is a sum of counts), so every correct sort gives
     * the same permutation, and the running sums then follow it term by term. */
    if (tid < R) {
        const float avg = sc.avg;
        s.hot[tid] = clamp0(f_sub(s.load[tid], avg));
        s.spare[tid] = clamp0(f_sub(avg, s.load[tid]));
        int32_t *idx = s.sortbuf + (size_t)tid * (size_t)hpr;
        const int32_t *mine = p.rank_experts + (size_t)tid * (size_t)hpr;
        for (int i = 0; i < hpr; i++)
            idx[i] = mine[i];
        for (int a = 1; a < hpr; a++) {
            const int32_t x = idx[a];
            int j = a - 1;
            while (j >= 0 && spill_before(s.tpe_f, x, idx[j])) {
                idx[j + 1] = idx[j];
                j--;
            }
            idx[j + 1] = x;
        }
        float run = 0.0f, prev = 0.0f;
        for (int i = 0; i < hpr; i++) {
            const int e = idx[i];
            run = f_add(run, s.tpe_f[e]);
            const float cum = clamp0(f_sub(run, avg));
            s.spill[e] = f_sub(cum, prev);
            prev = cum;
        }
    }
    __syncthreads();
}

/* ------------------------------------------------------------------------- */
/* Phase 1: Sinkhorn-Knopp flow hint (tsim_taot_flow_hint)                      */

__device__ void phase1(const Params &p, State &s, Scalars &sc)
{
    const int R = p.R, tid = threadIdx.x;

    /* The kernel matrix M[i][j] = exp(-W/lambda): m_in within a node (the
     * diagonal included), m_out across. Symmetric, since node equality is. */
    for (int idx = tid; idx < R * R; idx += THREADS) {
        const int i = idx / R, j = idx % R;
        s.M[idx] = node_of(p, i) == node_of(p, j) ? p.m_in : p.m_out;
    }
    /* s = min(sum(spare) / max(sum(hot), 1), 1), both sums in rank order. */
    if (tid == 0) {
        float sum_spare = 0.0f, sum_hot = 0.0f;
        for (int r = 0; r < R; r++) {
            sum_spare = f_add(sum_spare, s.spare[r]);
            sum_hot = f_add(sum_hot, s.hot[r]);
        }
        sc.supply_scale = at_most_one(f_div(sum_spare, at_least_one(sum_hot)));
        sc.iters_computed = 0;
    }
    __syncthreads();
    if (tid < R) {
        s.sup[tid] = f_mul(s.hot[tid], sc.supply_scale);
        s.u[tid] = 1.0f;
        s.v[tid] = 1.0f;
    }
    __syncthreads();

    /* Exactly `iters` rounds, stopping at a fixed point as the CPU does (once a
     * round returns v unchanged bit for bit, every later round would too).
     * PARITY: the CPU forms, per node, the sum over j ascending of
     * (m * v[j]) for the j with v[j] != 0, and gives it to every rank of the
     * node; here thread i forms sum over j ascending, v[j] != 0, of
     * M[i][j] * v[j]: the same products (M[i][j] is that m, and a float product
     * is commutative) added in the same order. Thread i reads M[j][i] (= M[i][j],
     * M symmetric) so that a warp reads consecutive words. */
    for (int it = 0; it < p.iters; it++) {
        if (tid < R) {
            const int i = tid;
            float acc = 0.0f;
            for (int j = 0; j < R; j++)
                if (s.v[j] != 0.0f)
                    acc = f_add(acc, f_mul(s.M[j * R + i], s.v[j]));
            s.u[i] = f_div(s.sup[i], at_least_eps(acc));
        }
        __syncthreads();
        int changed = 0;
        if (tid < R) {
            const int j = tid;
            float acc = 0.0f;
            for (int i = 0; i < R; i++)
                if (s.u[i] != 0.0f)
                    acc = f_add(acc, f_mul(s.M[i * R + j], s.u[i]));
            const float nv = f_div(s.spare[j], at_least_eps(acc));
            const float old = s.v[j];
            changed = nv != old || signbit(nv) != signbit(old);
            s.v[j] = nv;
        }
        if (tid == 0)
            sc.iters_computed = it + 1;
        if (!__syncthreads_or(changed))
            break;
    }
    __syncthreads();

    /* Column sums of T[i][j] = (u[i] * M[i][j]) * v[j] over i ascending (rows
     * with u[i] == 0 skipped, as on the CPU), then
     * col_factor[j] = min(spare[j] / max(colsum[j], EPS), 1). */
    if (tid < R) {
        const int j = tid;
        float cs = 0.0f;
        for (int i = 0; i < R; i++) {
            const float ui = s.u[i];
            if (ui == 0.0f)
                continue;
            cs = f_add(cs, f_mul(f_mul(ui, s.M[i * R + j]), s.v[j]));
        }
        s.colf[j] = at_most_one(f_div(s.spare[j], at_least_eps(cs)));
    }
    __syncthreads();
}

/* hterm[h][r] = (0.1f * alpha) * Tn[h][r], Tn as tsim_taot_tn computes it:
 * ((u[h] * m) * v[r]) * col_factor[r] / max(hot[h], 1), and 0 without Phase 1.
 * PARITY: the CPU fills rows only for candidate homes; rows for other ranks are
 * computed here and never read. */
__device__ void hint_rows(const Params &p, State &s, Scalars &sc)
{
    const int R = p.R;
    for (int idx = threadIdx.x; idx < R * R; idx += THREADS) {
        const int h = idx / R, r = idx % R;
        float tn = 0.0f;
        if (p.flow_hint) {
            const float m = node_of(p, h) == node_of(p, r) ? p.m_in : p.m_out;
            float t = f_mul(f_mul(s.u[h], m), s.v[r]);
            t = f_mul(t, s.colf[r]);
            tn = f_div(t, at_least_one(s.hot[h]));
        }
        s.hterm[idx] = f_mul(sc.hint_scale, tn);
    }
}

/* ------------------------------------------------------------------------- */
/* Phase 2: column-first matching (tsim_taot_match)                             */

/* pair_score of the CPU: the score of candidate ci on rank r in round k, or -inf
 * when the pair is not valid (r is the home, no spill left, or r holds the
 * expert in an earlier slot). score = (eff + alpha*B) + (0.1f*alpha)*Tn. */
__device__ __forceinline__ float pair_score(const Params &p, const State &s, const Scalars &sc, int ci, int r, int k)
{
    const int e = s.cand[ci], h = s.home[e];
    const float rs = s.rs[ci];
    if (r == h || !(rs > 0.0f))
        return neg_inf();
    const int32_t *slots = s.slot_expert + (size_t)r * (size_t)p.K;
    for (int kk = 0; kk < k; kk++)
        if (slots[kk] == e)
            return neg_inf();
    const float eff = min2(rs, s.rp[r]);
    const float alpha_b = node_of(p, h) == node_of(p, r) ? sc.a_near : sc.a_far;
    return f_add(f_add(eff, alpha_b), s.hterm[(size_t)h * (size_t)p.R + (size_t)r]);
}

/* Best candidate of rank r over all C candidates: highest score, lowest index on
 * ties, -1 when no pair is valid; the whole warp calls it and every lane gets
 * the answer. PARITY: the CPU scans its row in ascending order with a strict >
 * from -inf, which selects the lowest index among the maximal scores (a NaN or
 * -inf never wins). Each lane does that over its own indices; the butterfly
 * then keeps, of two lane winners, the higher score and on equal scores the
 * lower index. That is a total order on the valid pairs (scores are finite:
 * eff > 0, alpha*B and the hint are finite), so the reduction returns the same
 * (index, score) as the sequential scan. */
__device__ void warp_best(const Params &p, const State &s, const Scalars &sc, int r, int k, int *best_out,
                          float *score_out)
{
    const int lane = threadIdx.x & 31, C = sc.n_cand;
    int b = -1;
    float bs = neg_inf();
    for (int ci = lane; ci < C; ci += 32) {
        const float v = pair_score(p, s, sc, ci, r, k);
        if (v > bs) {
            bs = v;
            b = ci;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float os = __shfl_xor_sync(FULL_MASK, bs, off);
        const int ob = __shfl_xor_sync(FULL_MASK, b, off);
        if (ob >= 0 && (b < 0 || os > bs || (os == bs && ob < b))) {
            bs = os;
            b = ob;
        }
    }
    *best_out = b;
    *score_out = bs;
}

/* Phase 2 setup: the hint factors, empty slots, the hint rows, and the
 * candidates (experts with a hot home and spill > 0, ascending) with their
 * spill left (rs) and each rank's spare room (rp). */
__device__ void phase2_candidates(const Params &p, State &s, Scalars &sc)
{
    const int R = p.R, E = p.E, K = p.K, tid = threadIdx.x;
    const int RK = R * K;

    /* alpha = avg / hpr, the hint factor 0.1f * alpha, alpha * B per class. */
    if (tid == 0) {
        sc.alpha = f_div(sc.avg, __int2float_rn(p.hpr));
        sc.hint_scale = f_mul(0.1f, sc.alpha);
        sc.a_near = f_mul(sc.alpha, p.b_near);
        sc.a_far = f_mul(sc.alpha, p.b_far);
    }
    for (int q = tid; q < RK; q += THREADS) {
        s.slot_expert[q] = -1;
        s.slot_ci[q] = -1;
        s.slot_amount[q] = 0.0f;
        s.slot_planned[q] = 0;
    }
    __syncthreads();
    hint_rows(p, s, sc);

    /* Candidates: experts with a hot home and spill > 0, in ascending expert
     * order (so that ascending candidate index is ascending expert index). */
    int base = 0;
    for (int start = 0; start < E; start += THREADS) {
        const int e = start + tid;
        const int flag = e < E && s.hot[s.home[e]] > 0.0f && s.spill[e] > 0.0f;
        int total;
        const int pos = block_prefix(flag, sc, &total);
        if (flag)
            s.cand[base + pos] = e;
        base += total;
    }
    if (tid == 0)
        sc.n_cand = base;
    __syncthreads();
    const int C = sc.n_cand;
    for (int ci = tid; ci < C; ci += THREADS) {
        s.rs[ci] = s.spill[s.cand[ci]];
        s.given[ci] = 0;
        s.stamp[ci] = -1;
        s.pmask[ci] = 0ull;
    }
    if (tid < R)
        s.rp[tid] = s.spare[tid];
    __syncthreads();
}

/* Phase 2's K rounds of matching ranks to candidates (C > 0). */
__device__ void phase2_rounds(const Params &p, State &s, Scalars &sc, int C)
{
    const int R = p.R, K = p.K, tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;

    /* The rounds of taot.md. Per inner iteration: every active rank proposes to
     * its best candidate (column step), every candidate accepts its best
     * proposer (row step), the accepted pairs move their tokens. PARITY with the
     * CPU's incremental form: the CPU keeps a score matrix and, for an unmatched
     * rank, rescans its row only when its best candidate was accepted; here the
     * rank's best and its score are kept, and such a rank rescans with freshly
     * computed scores. Between iterations only accepted candidates (their rs)
     * and matched ranks change, so the fresh scores are the CPU's stored ones,
     * and a kept best is the CPU's kept best with the same stored score. */
    for (int k = 0; k < K; k++) {
        if (tid < R) {
            s.matched[tid] = 0;
            s.active[tid] = 0;
            s.best[tid] = -1;
        }
        __syncthreads();
        for (int r = warp; r < R; r += WARPS) {
            if (!(s.rp[r] > 0.0f))
                continue;
            int b;
            float bs;
            warp_best(p, s, sc, r, k, &b, &bs);
            if (lane == 0) {
                s.best[r] = b;
                s.best_score[r] = bs;
                s.active[r] = b >= 0;
            }
        }
        for (int it = 0; it < R; it++) {
            const int now = k * R + it; /* unique per (round, iteration) */
            /* active[] was written by other warps (the scans above): the
             * predicate of __syncthreads_or is read before its barrier, so a
             * barrier must come first. */
            __syncthreads();
            if (!__syncthreads_or(tid < R && s.active[tid]))
                break;
            /* Column step: each active rank marks itself in its best candidate's
             * proposer mask (R <= 64 ranks: one bit each). */
            if (tid < R && s.active[tid])
                atomicOr(&s.pmask[s.best[tid]], 1ull << tid);
            __syncthreads();
            /* Row step and the move, one thread per proposed-to candidate.
             * PARITY: the CPU walks the active ranks in ascending order: the
             * first proposer is kept, a later one replaces it only with a
             * strictly higher score. Walking the mask's bits from the lowest is
             * the same sequence with the same comparison. The accepted pairs are
             * disjoint in rank and candidate, so applying them in parallel is
             * applying them one after another: g = min(rs, rp) from the state
             * at the start of the iteration. */
            for (int ci = tid; ci < C; ci += THREADS) {
                unsigned long long m = s.pmask[ci];
                if (m == 0ull)
                    continue;
                s.pmask[ci] = 0ull;
                int pr = -1;
                float ps = 0.0f;
                while (m) {
                    const int r = __ffsll((long long)m) - 1;
                    m &= m - 1ull;
                    const float sc_r = s.best_score[r];
                    if (pr < 0 || sc_r > ps) {
                        pr = r;
                        ps = sc_r;
                    }
                }
                const float g = min2(s.rs[ci], s.rp[pr]);
                const int q = pr * K + k;
                s.slot_expert[q] = s.cand[ci];
                s.slot_ci[q] = ci;
                s.slot_amount[q] = g;
                s.rs[ci] = clamp0(f_sub(s.rs[ci], g));
                s.rp[pr] = clamp0(f_sub(s.rp[pr], g));
                s.matched[pr] = 1;
                s.stamp[ci] = now;
            }
            __syncthreads();
            /* Matched ranks leave; an unmatched rank whose best was accepted
             * rescans; a rank with no valid pair left leaves. One warp per rank;
             * every lane reads the decision before lane 0 writes. */
            for (int r = warp; r < R; r += WARPS) {
                const int is_active = s.active[r];
                const int is_matched = s.matched[r];
                const int b_old = s.best[r];
                const int rescan = is_active && !is_matched && s.stamp[b_old] == now;
                __syncwarp();
                if (!is_active)
                    continue;
                if (is_matched) {
                    if (lane == 0)
                        s.active[r] = 0;
                    continue;
                }
                if (!rescan)
                    continue;
                int b;
                float bs;
                warp_best(p, s, sc, r, k, &b, &bs);
                if (lane == 0) {
                    s.best[r] = b;
                    s.best_score[r] = bs;
                    s.active[r] = b >= 0;
                }
            }
        }
        __syncthreads();
    }
}

/* Phase 2's planned counts per slot (one thread). */
__device__ void phase2_planned(const Params &p, State &s)
{
    const int RK = p.R * p.K, tid = threadIdx.x;

    /* Planned counts, in slot order (one thread, as the CPU): truncate each
     * slot's float amount; clamp to the expert's tokens not yet planned. */
    if (tid == 0) {
        for (int q = 0; q < RK; q++) {
            const int e = s.slot_expert[q];
            if (e < 0)
                continue;
            const int ci = s.slot_ci[q];
            const float a = s.slot_amount[q];
            const int64_t left = s.tpe[e] - s.given[ci];
            int64_t d;
            if (!(a >= 1.0f))
                d = 0;
            else if ((double)a >= __ll2double_rn(left))
                d = left;
            else
                d = __float2ll_rz(a);
            if (d < 0)
                d = 0;
            s.given[ci] += d;
            s.slot_planned[q] = d;
        }
    }
    __syncthreads();
}

__device__ void phase2(const Params &p, State &s, Scalars &sc)
{
    phase2_candidates(p, s, sc);
    const int C = sc.n_cand;
    if (C == 0 || p.K == 0)
        return;
    phase2_rounds(p, s, sc, C);
    phase2_planned(p, s);
}

/* ------------------------------------------------------------------------- */
/* Phase 3: auction and split (tsim_taot_assign)                                */

/* The auction (the CPU's auction(), with bid_scan as its rule): replica i is
 * slot rep_slot[i]; replicas are in slot order g*K + k, so "lowest slot" is
 * "lowest i". supply rows are per expert, kept in the row of the expert's first
 * replica (rep_x). */
__device__ void auction(const Params &p, State &s, Scalars &sc, int rec)
{
    const int R = p.R, K = p.K, n = sc.n_rep, tid = threadIdx.x;

    for (int idx = tid; idx < n * R; idx += THREADS) {
        const int i = idx / R, r = idx % R;
        s.alloc[idx] = 0;
        if (s.rep_x[i] == i)
            s.supply[idx] = count_at(p, rec, r, s.slot_expert[s.rep_slot[i]]);
    }
    if (tid < R)
        s.price[tid] = 0;
    for (int i = tid; i < n; i += THREADS) {
        s.live[i] = 1;
        s.dem[i] = s.slot_planned[s.rep_slot[i]];
    }
    __syncthreads();

    bool ran_out = true;
    int round;
    for (round = 0; round < p.auction_rounds; round++) {
        /* 1. Every live slot bids for the rank with supply of highest
         * bonus - price, lowest rank on ties (strict > over ranks ascending, the
         * CPU's bid_scan); a slot with no such rank never bids again. PARITY:
         * the CPU uses an ordered walk (bid_ordered) where it proved it equal to
         * bid_scan, and bid_scan otherwise; this is bid_scan itself. */
        int bid = 0;
        for (int i = tid; i < n; i += THREADS) {
            if (!s.live[i])
                continue;
            const int q = s.rep_slot[i], g = q / K, ng = node_of(p, g);
            const int64_t *sup = s.supply + (size_t)s.rep_x[i] * (size_t)R;
            int best = -1;
            float bv = 0.0f;
            for (int r = 0; r < R; r++) {
                if (sup[r] <= 0)
                    continue;
                const float bonus = r == g ? p.bonus_self : node_of(p, r) == ng ? p.bonus_near : p.bonus_far;
                const float v = f_sub(bonus, __int2float_rn(s.price[r]));
                if (best < 0 || v > bv) {
                    best = r;
                    bv = v;
                }
            }
            if (best < 0) {
                s.live[i] = 0;
            } else {
                s.bid_rank[i] = best;
                s.bid_val[i] = bv;
                bid = 1;
            }
        }
        if (!__syncthreads_or(bid)) {
            ran_out = false;
            break;
        }
        /* 2. Each rank serves the bidder of highest value, lowest slot on ties
         * (the CPU walks the bidding slots in ascending order with a strict >),
         * min(supply, demand); 3. its price rises by 1. A rank serves one slot
         * and a slot bids one rank, so the ranks work in parallel. */
        if (tid < R) {
            const int r = tid;
            int w = -1;
            float wv = 0.0f;
            for (int i = 0; i < n; i++) {
                if (s.live[i] && s.bid_rank[i] == r) {
                    const float v = s.bid_val[i];
                    if (w < 0 || v > wv) {
                        w = i;
                        wv = v;
                    }
                }
            }
            if (w >= 0) {
                int64_t *sup = s.supply + (size_t)s.rep_x[w] * (size_t)R + (size_t)r;
                const int64_t amount = *sup < s.dem[w] ? *sup : s.dem[w];
                s.alloc[(size_t)w * (size_t)R + (size_t)r] += amount;
                *sup -= amount;
                s.dem[w] -= amount;
                s.price[r]++;
            }
        }
        __syncthreads();
        for (int i = tid; i < n; i += THREADS)
            if (s.live[i] && s.dem[i] <= 0)
                s.live[i] = 0;
        __syncthreads();
    }
    /* The cap cut service short when a slot that bid in the last round still
     * wants tokens and some rank still has its expert's tokens. */
    uint32_t notes = 0;
    if (ran_out) {
        int capped = 0;
        for (int i = tid; i < n; i += THREADS) {
            if (!s.live[i])
                continue;
            const int64_t *sup = s.supply + (size_t)s.rep_x[i] * (size_t)R;
            for (int r = 0; r < R; r++)
                if (sup[r] > 0)
                    capped = 1;
        }
        if (__syncthreads_or(capped))
            notes = NOTE_AUCTION_CAPPED;
    }
    if (tid == 0) {
        sc.rounds_run = round;
        sc.notes = notes;
    }
    __syncthreads();
}

/* The split (tsim_split_plan): per expert, proportional single-precision floors
 * then the leftovers laid end to end. One thread per expert (the thread of the
 * expert's first replica), its replicas in slot order: the CPU's order after
 * its sort by (expert, slot order). Experts are independent. */
__device__ void split(const Params &p, State &s, Scalars &sc, int rec)
{
    const int R = p.R, n = sc.n_rep;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        if (s.rep_x[i] != i)
            continue;
        const int e = s.slot_expert[s.rep_slot[i]];
        int64_t *left = s.supply + (size_t)i * (size_t)R; /* source_left */
        for (int r = 0; r < R; r++)
            left[r] = count_at(p, rec, r, e);
        const int64_t tpe = s.tpe[e];
        const float total = __ll2float_rn(tpe);

        for (int q = i; q < n; q++) {
            if (s.rep_x[q] != i)
                continue;
            int64_t *row = s.alloc + (size_t)q * (size_t)R;
            int64_t demand = s.slot_planned[s.rep_slot[q]];
            for (int r = 0; r < R; r++)
                row[r] = 0;
            if (tpe == 0)
                continue;
            const float d = __ll2float_rn(demand);
            for (int r = 0; r < R && demand > 0; r++) {
                const int64_t c = count_at(p, rec, r, e);
                if (c == 0)
                    continue;
                const float share = f_div(__ll2float_rn(c), total);
                const float product = f_mul(share, d);
                int64_t f = (int64_t)floorf(product);
                if (f > left[r])
                    f = left[r];
                if (f > demand)
                    f = demand;
                if (f < 0)
                    f = 0;
                row[r] = f;
                left[r] -= f;
                demand -= f;
            }
        }

        int r = 0;
        for (int q = i; q < n; q++) {
            if (s.rep_x[q] != i)
                continue;
            int64_t *row = s.alloc + (size_t)q * (size_t)R;
            int64_t want = s.slot_planned[s.rep_slot[q]];
            for (int rr = 0; rr < R; rr++)
                want -= row[rr];
            while (want > 0 && r < R) {
                const int64_t take_n = left[r] < want ? left[r] : want;
                row[r] += take_n;
                left[r] -= take_n;
                want -= take_n;
                if (left[r] == 0)
                    r++;
            }
        }
    }
    if (threadIdx.x == 0) {
        sc.rounds_run = 0;
        sc.notes = 0;
    }
    __syncthreads();
}

/* Replicas: every slot with planned count >= 1, in slot order; Phase 3; then
 * only the replicas that receive tokens, in order, into the output block. */
__device__ void phase3_and_output(const Params &p, State &s, Scalars &sc, int rec, unsigned char *out)
{
    const int R = p.R, K = p.K, RK = R * K, tid = threadIdx.x;

    int base = 0;
    for (int start = 0; start < RK; start += THREADS) {
        const int q = start + tid;
        const int flag = q < RK && s.slot_planned[q] > 0;
        int total;
        const int pos = block_prefix(flag, sc, &total);
        if (flag)
            s.rep_slot[base + pos] = q;
        base += total;
    }
    if (tid == 0) {
        sc.n_rep = base;
        sc.rounds_run = 0;
        sc.notes = 0;
    }
    __syncthreads();
    const int n = sc.n_rep;

    if (n > 0) {
        /* rep_x[i]: the first replica of the same expert (the supply row). */
        for (int i = tid; i < n; i += THREADS) {
            const int e = s.slot_expert[s.rep_slot[i]];
            int x = i;
            for (int j = 0; j < i; j++) {
                if (s.slot_expert[s.rep_slot[j]] == e) {
                    x = j;
                    break;
                }
            }
            s.rep_x[i] = x;
        }
        __syncthreads();
        if (p.phase3 == 1)
            split(p, s, sc, rec);
        else
            auction(p, s, sc, rec);
    }

    /* tsim_plan_drop_empty: keep the replicas whose alloc row has a token. */
    base = 0;
    for (int start = 0; start < n; start += THREADS) {
        const int i = start + tid;
        int flag = 0;
        if (i < n) {
            const int64_t *row = s.alloc + (size_t)i * (size_t)R;
            for (int r = 0; r < R; r++)
                if (row[r] != 0)
                    flag = 1;
        }
        int total;
        const int pos = block_prefix(flag, sc, &total);
        if (flag)
            s.kept[base + pos] = i;
        base += total;
    }
    const int n_out = base;
    __syncthreads(); /* kept[] is read below by other threads */

    tsim_taot_gpu_replica *reps = reinterpret_cast<tsim_taot_gpu_replica *>(out + out_replicas_offset());
    int64_t *alloc_out = reinterpret_cast<int64_t *>(out + out_alloc_offset(R, K));
    for (int j = tid; j < n_out; j += THREADS) {
        const int q = s.rep_slot[s.kept[j]];
        tsim_taot_gpu_replica rp;
        rp.expert = s.slot_expert[q];
        rp.guest = q / K;
        rp.slot = q % K;
        rp.reserved = 0;
        rp.planned = s.slot_planned[q];
        reps[j] = rp;
    }
    for (int idx = tid; idx < n_out * R; idx += THREADS) {
        const int j = idx / R, r = idx % R;
        alloc_out[idx] = s.alloc[(size_t)s.kept[j] * (size_t)R + (size_t)r];
    }
    if (tid == 0)
        sc.n_out = n_out;
    __syncthreads();
}

/* Diagnostics: FNV-1a hashes of each phase's results (taot_gpu.h). */
__device__ void diagnostics(const Params &p, const State &s, tsim_taot_gpu_record_out *h)
{
    const int R = p.R, E = p.E, RK = p.R * p.K;
    uint32_t a = 2166136261u;
    for (int e = 0; e < E; e++)
        a = fnv(a, __float_as_uint(s.tpe_f[e]));
    for (int r = 0; r < R; r++)
        a = fnv(a, __float_as_uint(s.load[r]));
    for (int r = 0; r < R; r++)
        a = fnv(a, __float_as_uint(s.hot[r]));
    for (int r = 0; r < R; r++)
        a = fnv(a, __float_as_uint(s.spare[r]));
    for (int e = 0; e < E; e++)
        a = fnv(a, __float_as_uint(s.spill[e]));
    h->hash_phase0 = a;
    uint32_t b = 0;
    if (p.flow_hint) {
        b = 2166136261u;
        for (int r = 0; r < R; r++)
            b = fnv(b, __float_as_uint(s.u[r]));
        for (int r = 0; r < R; r++)
            b = fnv(b, __float_as_uint(s.v[r]));
        for (int r = 0; r < R; r++)
            b = fnv(b, __float_as_uint(s.colf[r]));
    }
    h->hash_phase1 = b;
    uint32_t c = 2166136261u;
    for (int q = 0; q < RK; q++) {
        c = fnv(c, (uint32_t)s.slot_expert[q]);
        c = fnv(c, __float_as_uint(s.slot_amount[q]));
        c = fnv(c, (uint32_t)((uint64_t)s.slot_planned[q] & 0xffffffffu));
        c = fnv(c, (uint32_t)((uint64_t)s.slot_planned[q] >> 32));
    }
    h->hash_phase2 = c;
}

__global__ void __launch_bounds__(THREADS) taot_plan_kernel(const Params p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ Scalars sc;
    const int rec = blockIdx.x;

    Layout L;
    layout_make(&L, p.R, p.E, p.K);
    State s;
    s.tpe = at<int64_t>(smem, L.tpe);
    s.given = at<int64_t>(smem, L.given);
    s.pmask = at<unsigned long long>(smem, L.pmask);
    s.slot_planned = at<int64_t>(smem, L.slot_planned);
    s.dem = at<int64_t>(smem, L.dem);
    s.tpe_f = at<float>(smem, L.tpe_f);
    s.spill = at<float>(smem, L.spill);
    s.rs = at<float>(smem, L.rs);
    s.M = at<float>(smem, L.M);
    s.hterm = at<float>(smem, L.hterm);
    s.load = at<float>(smem, L.load);
    s.hot = at<float>(smem, L.hot);
    s.spare = at<float>(smem, L.spare);
    s.sup = at<float>(smem, L.sup);
    s.u = at<float>(smem, L.u);
    s.v = at<float>(smem, L.v);
    s.colf = at<float>(smem, L.colf);
    s.rp = at<float>(smem, L.rp);
    s.best_score = at<float>(smem, L.best_score);
    s.slot_amount = at<float>(smem, L.slot_amount);
    s.bid_val = at<float>(smem, L.bid_val);
    s.home = at<int32_t>(smem, L.home);
    s.cand = at<int32_t>(smem, L.cand);
    s.sortbuf = at<int32_t>(smem, L.sortbuf);
    s.stamp = at<int32_t>(smem, L.stamp);
    s.best = at<int32_t>(smem, L.best);
    s.active = at<int32_t>(smem, L.active);
    s.matched = at<int32_t>(smem, L.matched);
    s.price = at<int32_t>(smem, L.price);
    s.slot_expert = at<int32_t>(smem, L.slot_expert);
    s.slot_ci = at<int32_t>(smem, L.slot_ci);
    s.rep_slot = at<int32_t>(smem, L.rep_slot);
    s.rep_x = at<int32_t>(smem, L.rep_x);
    s.live = at<int32_t>(smem, L.live);
    s.bid_rank = at<int32_t>(smem, L.bid_rank);
    s.kept = at<int32_t>(smem, L.kept);
    const size_t rkr = (size_t)p.R * (size_t)(p.K > 0 ? p.K : 1) * (size_t)p.R;
    s.supply = p.scratch + (size_t)rec * p.scratch_stride;
    s.alloc = s.supply + rkr;

    if (threadIdx.x == 0) {
        sc.iters_computed = 0;
        sc.rounds_run = 0;
        sc.notes = 0;
        sc.n_rep = 0;
        sc.n_out = 0;
    }
    __syncthreads();

    phase0(p, s, sc, rec);
    if (p.flow_hint)
        phase1(p, s, sc);
    phase2(p, s, sc);
    unsigned char *out = p.out + (size_t)rec * p.out_stride;
    phase3_and_output(p, s, sc, rec, out);

    if (threadIdx.x == 0) {
        tsim_taot_gpu_record_out h;
        memset(&h, 0, sizeof h);
        h.count = sc.n_out;
        h.notes = sc.notes;
        h.iters_computed = p.flow_hint ? sc.iters_computed : 0;
        h.auction_rounds_run = sc.rounds_run;
        h.avg = sc.avg;
        h.alpha = sc.alpha;
        if (p.diagnostics)
            diagnostics(p, s, &h);
        *reinterpret_cast<tsim_taot_gpu_record_out *>(out) = h;
    }
}

/* ------------------------------------------------------------------------- */
/* Host side: the engine                                                       */

struct tsim_taot_gpu_engine {
    tsim_taot_gpu_config cfg;
    Params base;            /* kernel parameters less counts/wide */
    size_t smem;            /* dynamic shared memory per block */
    cudaStream_t stream;
    int32_t *d_home, *d_rank_experts;
    void *d_counts;
    unsigned char *d_out;
    int64_t *d_scratch;
    void *h_counts;         /* pinned, max_batch * R * E * 8 bytes */
    unsigned char *h_out;   /* pinned, max_batch * out_stride */
    cudaGraphExec_t *graphs; /* [2][max_batch + 1]: by count width and batch size */
    int last_n;
};

static void say(char *why, size_t n, const char *fmt, ...)
{
    if (!why || n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

/* Runs a CUDA call; on failure fills why with the call and CUDA's message. */
#define CUDA_TRY(call)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            say(why, why_n, "%s: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_));                     \
            return TSIM_GPU_CUDA;                                                                                      \
        }                                                                                                              \
    } while (0)

extern "C" size_t tsim_taot_gpu_engine_shared_bytes(int ranks, int experts, int slots)
{
    Layout L;
    layout_make(&L, ranks, experts, slots);
    return L.total;
}

static int probe(char *why, size_t why_n, int *device)
{
    int count = 0;
    CUDA_TRY(cudaGetDeviceCount(&count));
    if (count < 1) {
        say(why, why_n, "no CUDA device");
        return TSIM_GPU_CUDA;
    }
    CUDA_TRY(cudaGetDevice(device));
    cudaFuncAttributes fa;
    CUDA_TRY(cudaFuncGetAttributes(&fa, taot_plan_kernel));
    return TSIM_GPU_OK;
}

extern "C" int tsim_taot_gpu_engine_probe(char *why, size_t n)
{
    int device = 0;
    return probe(why, n, &device) == TSIM_GPU_OK;
}

static int engine_init(tsim_taot_gpu_engine *g, const tsim_taot_gpu_config *cfg, char *why, size_t why_n)
{
    const int R = cfg->ranks, E = cfg->experts, K = cfg->slots;
    int device = 0;
    int rc = probe(why, why_n, &device);
    if (rc)
        return rc;
    if (R < 1 || R > TSIM_TAOT_GPU_MAX_RANKS) {
        say(why, why_n, "R = %d ranks is outside the GPU kernels' limit of 1..%d (a thread per rank, a 64-bit rank mask)",
            R, TSIM_TAOT_GPU_MAX_RANKS);
        return TSIM_GPU_UNSUPPORTED;
    }
    if (E < R || K < 0 || cfg->experts_per_rank < 1 || cfg->ranks_per_node < 1 || cfg->max_batch < 1) {
        say(why, why_n, "shape R = %d, E = %d, K = %d, batch %d not supported", R, E, K, cfg->max_batch);
        return TSIM_GPU_UNSUPPORTED;
    }
    int optin = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cudaFuncAttributes fa;
    CUDA_TRY(cudaFuncGetAttributes(&fa, taot_plan_kernel));
    const size_t smem = tsim_taot_gpu_engine_shared_bytes(R, E, K);
    if (smem + fa.sharedSizeBytes > (size_t)optin) {
        say(why, why_n,
            "R = %d, E = %d, K = %d needs %zu bytes of shared memory per record, the device allows %d per block", R,
            E, K, smem + fa.sharedSizeBytes, optin);
        return TSIM_GPU_UNSUPPORTED;
    }
    /* The attribute is per kernel, not per engine: allow the device's whole
     * opt-in budget, so that engines of different shapes never undercut each
     * other (a launch uses only its own smem). */
    CUDA_TRY(cudaFuncSetAttribute(taot_plan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  optin - (int)fa.sharedSizeBytes));

    g->cfg = *cfg;
    g->cfg.home = NULL;
    g->cfg.rank_experts = NULL;
    g->smem = smem;
    const size_t B = (size_t)cfg->max_batch;
    const size_t in_bytes = B * (size_t)R * (size_t)E * sizeof(int64_t);
    const size_t out_stride = out_stride_of(R, K);
    const size_t scratch_stride = scratch_stride_of(R, K);
    const size_t hpr = (size_t)cfg->experts_per_rank;

    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaMalloc((void **)&g->d_home, sizeof(int32_t) * (size_t)E));
    CUDA_TRY(cudaMalloc((void **)&g->d_rank_experts, sizeof(int32_t) * (size_t)R * hpr));
    CUDA_TRY(cudaMalloc(&g->d_counts, in_bytes));
    CUDA_TRY(cudaMalloc((void **)&g->d_out, B * out_stride));
    CUDA_TRY(cudaMalloc((void **)&g->d_scratch, B * scratch_stride * sizeof(int64_t)));
    CUDA_TRY(cudaMallocHost(&g->h_counts, in_bytes));
    CUDA_TRY(cudaMallocHost((void **)&g->h_out, B * out_stride));
    CUDA_TRY(cudaMemcpy(g->d_home, cfg->home, sizeof(int32_t) * (size_t)E, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(g->d_rank_experts, cfg->rank_experts, sizeof(int32_t) * (size_t)R * hpr,
                        cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemset(g->d_out, 0, B * out_stride));
    memset(g->h_out, 0, B * out_stride);
    g->graphs = (cudaGraphExec_t *)calloc(2 * (B + 1), sizeof *g->graphs);
    if (!g->graphs) {
        say(why, why_n, "out of memory");
        return TSIM_GPU_CUDA;
    }

    Params &p = g->base;
    memset(&p, 0, sizeof p);
    p.R = R;
    p.E = E;
    p.K = K;
    p.hpr = cfg->experts_per_rank;
    p.rpn = cfg->ranks_per_node;
    p.phase3 = cfg->phase3;
    p.flow_hint = cfg->flow_hint;
    p.iters = cfg->iters;
    p.auction_rounds = cfg->auction_rounds;
    p.diagnostics = cfg->diagnostics;
    p.m_in = cfg->m_in;
    p.m_out = cfg->m_out;
    p.b_near = cfg->b_near;
    p.b_far = cfg->b_far;
    p.bonus_self = cfg->bonus_self;
    p.bonus_near = cfg->bonus_near;
    p.bonus_far = cfg->bonus_far;
    p.home = g->d_home;
    p.rank_experts = g->d_rank_experts;
    p.counts = g->d_counts;
    p.out = g->d_out;
    p.out_stride = out_stride;
    p.scratch = g->d_scratch;
    p.scratch_stride = scratch_stride;
    return TSIM_GPU_OK;
}

extern "C" void tsim_taot_gpu_engine_free(tsim_taot_gpu_engine *g)
{
    if (!g)
        return;
    if (g->graphs) {
        for (int i = 0; i < 2 * (g->cfg.max_batch + 1); i++)
            if (g->graphs[i])
                cudaGraphExecDestroy(g->graphs[i]);
        free(g->graphs);
    }
    if (g->stream)
        cudaStreamSynchronize(g->stream);
    cudaFree(g->d_home);
    cudaFree(g->d_rank_experts);
    cudaFree(g->d_counts);
    cudaFree(g->d_out);
    cudaFree(g->d_scratch);
    cudaFreeHost(g->h_counts);
    cudaFreeHost(g->h_out);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    free(g);
}

extern "C" int tsim_taot_gpu_engine_create(const tsim_taot_gpu_config *cfg, tsim_taot_gpu_engine **out, char *why,
                                           size_t n)
{
    *out = NULL;
    tsim_taot_gpu_engine *g = (tsim_taot_gpu_engine *)calloc(1, sizeof *g);
    if (!g) {
        say(why, n, "out of memory");
        return TSIM_GPU_CUDA;
    }
    g->cfg.max_batch = cfg->max_batch; /* for free() of a half-built engine */
    int rc = engine_init(g, cfg, why, n);
    if (rc) {
        tsim_taot_gpu_engine_free(g);
        return rc;
    }
    *out = g;
    return TSIM_GPU_OK;
}

extern "C" void *tsim_taot_gpu_engine_input(tsim_taot_gpu_engine *g, int record, int wide)
{
    const size_t per = (size_t)g->cfg.ranks * (size_t)g->cfg.experts * (wide ? sizeof(int64_t) : sizeof(uint32_t));
    return (unsigned char *)g->h_counts + (size_t)record * per;
}

/* The captured sequence: copy in, kernel, copy out. No allocation, no sync. */
static int enqueue(tsim_taot_gpu_engine *g, int n, int wide, char *why, size_t why_n)
{
    const size_t per = (size_t)g->cfg.ranks * (size_t)g->cfg.experts * (wide ? sizeof(int64_t) : sizeof(uint32_t));
    Params p = g->base;
    p.wide = wide;
    CUDA_TRY(cudaMemcpyAsync(g->d_counts, g->h_counts, (size_t)n * per, cudaMemcpyHostToDevice, g->stream));
    taot_plan_kernel<<<n, THREADS, g->smem, g->stream>>>(p);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpyAsync(g->h_out, g->d_out, (size_t)n * p.out_stride, cudaMemcpyDeviceToHost, g->stream));
    return TSIM_GPU_OK;
}

static int graph_for(tsim_taot_gpu_engine *g, int n, int wide, cudaGraphExec_t *exec, char *why, size_t why_n)
{
    cudaGraphExec_t *slot = &g->graphs[(size_t)(wide ? 1 : 0) * (size_t)(g->cfg.max_batch + 1) + (size_t)n];
    if (*slot) {
        *exec = *slot;
        return TSIM_GPU_OK;
    }
    CUDA_TRY(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    int rc = enqueue(g, n, wide, why, why_n);
    cudaGraph_t graph = NULL;
    cudaError_t end = cudaStreamEndCapture(g->stream, &graph);
    if (rc) {
        if (graph)
            cudaGraphDestroy(graph);
        return rc;
    }
    if (end != cudaSuccess) {
        say(why, why_n, "cudaStreamEndCapture: %s (%s)", cudaGetErrorString(end), cudaGetErrorName(end));
        return TSIM_GPU_CUDA;
    }
    cudaError_t inst = cudaGraphInstantiate(slot, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) {
        *slot = NULL;
        say(why, why_n, "cudaGraphInstantiate: %s (%s)", cudaGetErrorString(inst), cudaGetErrorName(inst));
        return TSIM_GPU_CUDA;
    }
    *exec = *slot;
    return TSIM_GPU_OK;
}

extern "C" int tsim_taot_gpu_engine_run(tsim_taot_gpu_engine *g, int n, int wide, char *why, size_t why_n)
{
    if (n < 1 || n > g->cfg.max_batch) {
        say(why, why_n, "batch of %d records (1..%d)", n, g->cfg.max_batch);
        return TSIM_GPU_UNSUPPORTED;
    }
    wide = wide ? 1 : 0;
    if (g->cfg.use_graph) {
        cudaGraphExec_t exec = NULL;
        int rc = graph_for(g, n, wide, &exec, why, why_n);
        if (rc)
            return rc;
        CUDA_TRY(cudaGraphLaunch(exec, g->stream));
    } else {
        int rc = enqueue(g, n, wide, why, why_n);
        if (rc)
            return rc;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    g->last_n = n;
    return TSIM_GPU_OK;
}

extern "C" const tsim_taot_gpu_record_out *tsim_taot_gpu_engine_result(const tsim_taot_gpu_engine *g, int record,
                                                                      const tsim_taot_gpu_replica **replicas,
                                                                      const int64_t **alloc)
{
    if (record < 0 || record >= g->last_n)
        return NULL;
    const unsigned char *out = g->h_out + (size_t)record * g->base.out_stride;
    if (replicas)
        *replicas = reinterpret_cast<const tsim_taot_gpu_replica *>(out + out_replicas_offset());
    if (alloc)
        *alloc = reinterpret_cast<const int64_t *>(out + out_alloc_offset(g->cfg.ranks, g->cfg.slots));
    return reinterpret_cast<const tsim_taot_gpu_record_out *>(out);
}
