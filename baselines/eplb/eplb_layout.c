/* EPLB's rebalance_experts (eplb.md section 2). The published code picks the
 * lightest pack and the heaviest load per copy by scanning; here both are
 * binary heaps ordered by (value, index), a strict total order, so the root is
 * exactly the element the scan would pick (first extremum) and a call costs
 * O(P log P) instead of O(P * R). The naive scan lives in tests/test_eplb.c
 * and must agree on every input. */
#include "eplb_layout.h"

#include <stdlib.h>
#include <string.h>

int tsim_eplb_workspace_init(tsim_eplb_workspace *ws, const tsim_eplb_shape *shape, tsim_error *err)
{
    memset(ws, 0, sizeof *ws);
    const int E = shape->experts, P = shape->physical, G = shape->groups, N = shape->nodes, R = shape->gpus;
    if (E < 1 || P < 1 || R < 1 || G < 1 || N < 1)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "eplb: experts %d, physical %d, groups %d, nodes %d and GPUs %d must all be positive",
                              E, P, G, N, R);
    if (E % G != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d experts are not a multiple of %d groups", E, G);
    if (R % N != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d GPUs are not a multiple of %d nodes", R, N);
    if (P % R != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d physical experts do not fill %d GPUs evenly", P, R);
    if (P < E)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d physical experts cannot hold %d experts", P, E);
    ws->shape = *shape;
    ws->hierarchical = tsim_eplb_is_hierarchical(G, N);
    ws->eff_groups = ws->hierarchical ? G : 1;
    ws->eff_nodes = ws->hierarchical ? N : 1;
    const size_t n_node = (size_t)(E / ws->eff_nodes), m_node = (size_t)(P / ws->eff_nodes);
    const size_t gpus_per_node = (size_t)(R / ws->eff_nodes);
    const size_t items = m_node > (size_t)ws->eff_groups ? m_node : (size_t)ws->eff_groups;
    const size_t packs = gpus_per_node > (size_t)ws->eff_nodes ? gpus_per_node : (size_t)ws->eff_nodes;
    ws->item_weight = malloc(sizeof *ws->item_weight * items);
    ws->order = malloc(sizeof *ws->order * items);
    ws->order_tmp = malloc(sizeof *ws->order_tmp * items);
    ws->pack_of = malloc(sizeof *ws->pack_of * items);
    ws->pos_of = malloc(sizeof *ws->pos_of * items);
    ws->pack_load = malloc(sizeof *ws->pack_load * packs);
    ws->pack_count = malloc(sizeof *ws->pack_count * packs);
    ws->pack_heap = malloc(sizeof *ws->pack_heap * packs);
    ws->group_sum = malloc(sizeof *ws->group_sum * (size_t)ws->eff_groups);
    ws->node_list = malloc(sizeof *ws->node_list * (size_t)E);
    ws->expert_f = malloc(sizeof *ws->expert_f * n_node);
    ws->copy_cnt = malloc(sizeof *ws->copy_cnt * n_node);
    ws->copy_value = malloc(sizeof *ws->copy_value * n_node);
    ws->copy_heap = malloc(sizeof *ws->copy_heap * n_node);
    ws->copy_of = malloc(sizeof *ws->copy_of * m_node);
    ws->copy_rank = malloc(sizeof *ws->copy_rank * m_node);
    if (!ws->item_weight || !ws->order || !ws->order_tmp || !ws->pack_of || !ws->pos_of || !ws->pack_load ||
        !ws->pack_count || !ws->pack_heap || !ws->group_sum || !ws->node_list || !ws->expert_f || !ws->copy_cnt ||
        !ws->copy_value || !ws->copy_heap || !ws->copy_of || !ws->copy_rank) {
        tsim_eplb_workspace_free(ws);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for EPLB's workspace (%d physical experts)", P);
    }
    return TSIM_OK;
}

void tsim_eplb_workspace_free(tsim_eplb_workspace *ws)
{
    free(ws->item_weight);
    free(ws->order);
    free(ws->order_tmp);
    free(ws->pack_of);
    free(ws->pos_of);
    free(ws->pack_load);
    free(ws->pack_count);
    free(ws->pack_heap);
    free(ws->group_sum);
    free(ws->node_list);
    free(ws->expert_f);
    free(ws->copy_cnt);
    free(ws->copy_value);
    free(ws->copy_heap);
    free(ws->copy_of);
    free(ws->copy_rank);
    memset(ws, 0, sizeof *ws);
}

/* Stable merge sort of order[0..n) by descending w: equal weights keep the
 * lower index first, as a stable sort does (2.6). */
static void sort_descending(int32_t *order, int32_t *tmp, const float *w, int n)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = w[order[j]] > w[order[i]] ? order[j++] : order[i++];
            while (i < mid)
                tmp[k++] = order[i++];
            while (j < hi)
                tmp[k++] = order[j++];
        }
        memcpy(order, tmp, sizeof *order * (size_t)n);
    }
}

/* Pack a before pack b: lighter, ties to the lower pack (Python's min). */
static bool pack_before(const float *load, int32_t a, int32_t b)
{
    return load[a] < load[b] || (load[a] == load[b] && a < b);
}

static void pack_sift_down(int32_t *heap, int size, const float *load, int at)
{
    for (;;) {
        int best = at, l = 2 * at + 1, r = l + 1;
        if (l < size && pack_before(load, heap[l], heap[best]))
            best = l;
        if (r < size && pack_before(load, heap[r], heap[best]))
            best = r;
        if (best == at)
            return;
        int32_t t = heap[at];
        heap[at] = heap[best];
        heap[best] = t;
        at = best;
    }
}

/* pack(x[0..n), m) of 2.3 on ws->item_weight, into ws->pack_of and ws->pos_of.
 * A pack's load adds its items in float32, in assignment order. */
static void pack(tsim_eplb_workspace *ws, int n, int m)
{
    if (n == m) {
        for (int i = 0; i < n; i++) {
            ws->pack_of[i] = i;
            ws->pos_of[i] = 0;
        }
        return;
    }
    const int per_pack = n / m;
    sort_descending(ws->order, ws->order_tmp, ws->item_weight, n);
    /* All loads 0: packs in index order already form a heap. */
    for (int k = 0; k < m; k++) {
        ws->pack_load[k] = 0.0f;
        ws->pack_count[k] = 0;
        ws->pack_heap[k] = k;
    }
    int open = m;
    for (int t = 0; t < n; t++) {
        const int item = ws->order[t];
        const int32_t p = ws->pack_heap[0];
        ws->pack_of[item] = p;
        ws->pos_of[item] = ws->pack_count[p];
        ws->pack_load[p] += ws->item_weight[item];
        if (++ws->pack_count[p] == per_pack)
            ws->pack_heap[0] = ws->pack_heap[--open]; /* full: no longer a candidate */
        pack_sift_down(ws->pack_heap, open, ws->pack_load, 0);
    }
}

/* Copy j before copy k: heavier load per copy, ties to the lower j (torch's
 * max returns the first maximum). */
static bool copy_before(const float *value, int32_t j, int32_t k)
{
    return value[j] > value[k] || (value[j] == value[k] && j < k);
}

static void copy_sift_down(int32_t *heap, int size, const float *value, int at)
{
    for (;;) {
        int best = at, l = 2 * at + 1, r = l + 1;
        if (l < size && copy_before(value, heap[l], heap[best]))
            best = l;
        if (r < size && copy_before(value, heap[r], heap[best]))
            best = r;
        if (best == at)
            return;
        int32_t t = heap[at];
        heap[at] = heap[best];
        heap[best] = t;
        at = best;
    }
}

/* Step 1: groups to nodes; fills node_list with every node's L_a. */
static void groups_to_nodes(tsim_eplb_workspace *ws, const int64_t *w)
{
    const int G = ws->eff_groups, N = ws->eff_nodes, group_size = ws->shape.experts / G;
    for (int g = 0; g < G; g++) {
        int64_t sum = 0; /* exact; torch's float32 sum agrees below 2^24 */
        for (int k = 0; k < group_size; k++)
            sum += w[g * group_size + k];
        ws->group_sum[g] = sum;
        ws->item_weight[g] = (float)sum;
    }
    pack(ws, G, N);
    const int groups_per_node = G / N;
    for (int g = 0; g < G; g++) {
        const int block = ws->pack_of[g] * groups_per_node + ws->pos_of[g];
        for (int k = 0; k < group_size; k++)
            ws->node_list[block * group_size + k] = g * group_size + k;
    }
}

/* Step 2 for one node: n originals, then M - n copies, each of the expert
 * with the heaviest load per copy. */
static void copies_within_node(tsim_eplb_workspace *ws, const int32_t *list, const int64_t *w, int n, int m)
{
    for (int j = 0; j < n; j++) {
        ws->expert_f[j] = (float)w[list[j]];
        ws->copy_cnt[j] = 1;
        ws->copy_value[j] = ws->expert_f[j];
        ws->copy_heap[j] = j;
        ws->copy_of[j] = j;
        ws->copy_rank[j] = 0;
    }
    for (int at = n / 2 - 1; at >= 0; at--)
        copy_sift_down(ws->copy_heap, n, ws->copy_value, at);
    for (int i = n; i < m; i++) {
        const int32_t j = ws->copy_heap[0];
        ws->copy_of[i] = j;
        ws->copy_rank[i] = ws->copy_cnt[j];
        ws->copy_cnt[j]++;
        ws->copy_value[j] = ws->expert_f[j] / (float)ws->copy_cnt[j];
        copy_sift_down(ws->copy_heap, n, ws->copy_value, 0);
    }
}

void tsim_eplb_rebalance(tsim_eplb_workspace *ws, const int64_t *weights, int32_t *phy2log, int32_t *phyrank,
                         int32_t *logcnt)
{
    const int E = ws->shape.experts, P = ws->shape.physical, R = ws->shape.gpus, N = ws->eff_nodes;
    const int n = E / N, m = P / N, gpus_per_node = R / N, per_gpu = P / R;
    groups_to_nodes(ws, weights);
    for (int a = 0; a < N; a++) {
        const int32_t *list = ws->node_list + (size_t)a * (size_t)n;
        copies_within_node(ws, list, weights, n, m);
        for (int j = 0; j < n; j++)
            logcnt[list[j]] = ws->copy_cnt[j];
        /* Step 3: every physical expert weighs its expert's load per copy,
         * final counts. */
        for (int i = 0; i < m; i++) {
            const int j = ws->copy_of[i];
            ws->item_weight[i] = ws->expert_f[j] / (float)ws->copy_cnt[j];
        }
        pack(ws, m, gpus_per_node);
        for (int i = 0; i < m; i++) {
            const int gpu = a * gpus_per_node + ws->pack_of[i];
            const int p = gpu * per_gpu + ws->pos_of[i];
            phy2log[p] = list[ws->copy_of[i]];
            phyrank[p] = ws->copy_rank[i];
        }
    }
}
