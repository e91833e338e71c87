/* DeepSeek EPLB's `rebalance_experts` (eplb.md section 2): from per-expert
 * weights, a layout of P physical experts over R GPUs, with redundant copies
 * of the heavy experts. Pure arithmetic: float32 exactly as published, stable
 * orders, ties to the lowest index. The caller owns one workspace per call
 * shape, allocated once; a call allocates nothing. */
#ifndef TSIM_EPLB_LAYOUT_H
#define TSIM_EPLB_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* The call shape: EPLB(w[E], P, G, N, R). */
typedef struct {
    int experts;  /* E (logical experts) */
    int physical; /* P = physical experts, P / R per GPU */
    int groups;   /* G: num_groups */
    int nodes;    /* N: num_nodes */
    int gpus;     /* R: num_gpus */
} tsim_eplb_shape;

typedef struct {
    tsim_eplb_shape shape;
    bool hierarchical; /* G mod N == 0; else the global policy (G = N = 1) */
    int eff_groups, eff_nodes; /* the G and N the steps run with */
    /* Scratch, sized for the largest of the three packings. */
    float *item_weight;    /* [items]: what pack() packs */
    int32_t *order, *order_tmp; /* [items]: pack order, merge scratch */
    int32_t *pack_of, *pos_of;  /* [items]: pack() results */
    float *pack_load;      /* [packs] */
    int32_t *pack_count;   /* [packs] */
    int32_t *pack_heap;    /* [packs]: packs with room, lightest first */
    int64_t *group_sum;    /* [G] exact integer group weights */
    int32_t *node_list;    /* [E]: L_a of every node, node after node */
    float *expert_f;       /* [E / N]: f(L_a[j]) of the node being copied */
    int32_t *copy_cnt;     /* [E / N]: cnt[j] of the node being copied */
    float *copy_value;     /* [E / N]: f / cnt, the key of copy_heap */
    int32_t *copy_heap;    /* [E / N]: heaviest load per copy first */
    int32_t *copy_of;      /* [P / N]: j of each physical expert of the node */
    int32_t *copy_rank;    /* [P / N]: its replica number */
} tsim_eplb_workspace;

/* Checks EPLB's preconditions (E, P, R >= 1, G and N >= 1, E mod G = 0,
 * N divides R, R divides P, P >= E) and allocates the scratch. TSIM_E_INPUT
 * with a message naming the broken condition; TSIM_E_INTERNAL when out of
 * memory. */
int tsim_eplb_workspace_init(tsim_eplb_workspace *ws, const tsim_eplb_shape *shape, tsim_error *err);
void tsim_eplb_workspace_free(tsim_eplb_workspace *ws);

/* The policy for a shape: hierarchical when G mod N == 0 (2.2). */
static inline bool tsim_eplb_is_hierarchical(int groups, int nodes)
{
    return groups % nodes == 0;
}

/* rebalance_experts for weights w[E] (non-negative): phy2log[P] (logical
 * expert of each physical one), phyrank[P] (replica number, 0 for the
 * original), logcnt[E] (copies per expert). Physical p lives on GPU
 * p / (P / R). */
void tsim_eplb_rebalance(tsim_eplb_workspace *ws, const int64_t *weights, int32_t *phy2log, int32_t *phyrank,
                         int32_t *logcnt);

#endif
