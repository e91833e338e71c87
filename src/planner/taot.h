/* TAOT, the CPU reference (taot.md): Phase 0 load statistics, Phase 1
 * Sinkhorn-Knopp flow hint, Phase 2 column-first matching, Phase 3 token
 * assignment (auction or split).
 *
 * Every phase is a public function working on one context, so that tests and
 * the GPU parity tests can check each phase alone. The context's fields are
 * public for the same reason: a phase reads what the previous ones wrote.
 *
 *   tsim_taot_stats(ctx, rec)        Phase 0: tpe, load, avg, hot, spare, spill
 *   tsim_taot_flow_hint(ctx)         Phase 1: u, v, col_factor (Tn via tsim_taot_tn)
 *   tsim_taot_match(ctx)             Phase 2: slot_expert, slot_amount, slot_planned
 *   tsim_taot_assign(ctx, rec, plan) Phase 3: the plan
 *   tsim_taot_plan(ctx, rec, plan)   all four, as the planner registry calls them
 *
 * Arithmetic is single precision with the summation orders and tie rules of
 * taot.md (documented at each step in taot.c), compiled with -ffp-contract=off,
 * so that the CUDA port can return the same plan bit for bit. */
#ifndef TSIM_TAOT_H
#define TSIM_TAOT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "plan.h"
#include "planner.h"
#include "record.h"
#include "split.h"
#include "topology.h"

/* EPS of taot.md, as a float. */
#define TSIM_TAOT_EPS 1e-8f

enum { TSIM_TAOT_AUCTION = 0, TSIM_TAOT_SPLIT = 1 };
enum { TSIM_DEVICE_CPU = 0, TSIM_DEVICE_GPU = 1 };

/* The `taot` planner's own options block. */
typedef struct {
    int phase3;          /* TSIM_TAOT_AUCTION (default) or TSIM_TAOT_SPLIT */
    bool flow_hint;      /* Phase-1 Tn term in the score (default on) */
    bool comm_cost;      /* Phase-2 B term in the score (default on) */
    int iters;           /* Sinkhorn rounds (50) */
    double self_bonus;   /* auction bonus for the guest's own tokens (0) */
    int auction_rounds;  /* auction round cap (300) */
    int device;          /* TSIM_DEVICE_CPU (default) or TSIM_DEVICE_GPU */
} tsim_taot_options;

typedef struct {
    /* ---- set by init ---------------------------------------------------- */
    const tsim_topology *topo;
    int R, E, K, hpr, rpn;
    int nodes;             /* ceil(R / rpn) */
    int phase3;            /* TSIM_TAOT_AUCTION or TSIM_TAOT_SPLIT */
    bool flow_hint, comm_cost;
    int iters;             /* Sinkhorn rounds */
    int auction_rounds;    /* auction round cap */
    int device;            /* what was asked for (TSIM_DEVICE_*) */
    /* Constants depending on lambda: computed in double, rounded once to float. */
    float m_in;            /* (float)exp(-1/lambda): kernel within a node */
    float m_out;           /* (float)exp(-1): kernel across nodes */
    float inv_lambda;      /* (float)(1/lambda) */
    /* Phase-2 topology preference B (0 for the home rank itself). Both 0 when
     * comm_cost is off; tests may zero them to force B = 0. */
    float b_near;          /* 1: same node as home(e) */
    float b_far;           /* 1/lambda: another node */
    /* Phase-3 auction bonuses of a source rank for a slot on guest g. */
    float bonus_self;      /* r == g: self_bonus */
    float bonus_near;      /* same node, r != g: 1 */
    float bonus_far;       /* other node: 1/lambda */

    /* ---- Phase 0 ---------------------------------------------------------- */
    int64_t *tpe;          /* [E] exact tokens per expert (for phase-3 split and clamps) */
    float *tpe_f;          /* [E] float, accumulated over r = 0..R-1 */
    float *load;           /* [R] sum of tpe_f over home experts, in expert order */
    float avg;             /* (sum_r load[r]) / R */
    float *hot, *spare;    /* [R] */
    float *spill;          /* [E] */

    /* ---- Phase 1 ---------------------------------------------------------- */
    float supply_scale;    /* s = min(sum(spare) / max(sum(hot), 1), 1) */
    float *sup;            /* [R] hot * s */
    float *u, *v;          /* [R] Sinkhorn scalings after the last round */
    float *col_factor;     /* [R] min(spare / max(column sum of T, EPS), 1) */
    int iters_computed;    /* rounds computed before (u, v) reached a fixed point */
    bool hint_ready;       /* Phase 1 ran for the current record */

    /* ---- Phase 2 ---------------------------------------------------------- */
    float alpha;           /* avg / hpr */
    float hint_scale;      /* 0.1f * alpha */
    int n_cand;            /* candidate experts: hot home and spill > 0, ascending */
    int32_t *cand;         /* [E] */
    int32_t *cand_of;      /* [E] expert -> candidate index, -1 (kept at -1 between records) */
    float *rs;             /* [E] remaining spill, by candidate index */
    float *rp;             /* [R] remaining spare */
    int32_t *slot_expert;  /* [R*K] expert in guest slot (g, k) at g*K+k, -1 when unused */
    float *slot_amount;    /* [R*K] planned tokens g moved by the accepted pair */
    int64_t *slot_planned; /* [R*K] truncated (and clamped) planned count, 0 when unused */

    /* ---- Phase 3 ---------------------------------------------------------- */
    uint32_t notes;        /* TSIM_NOTE_* of the last record */
    int auction_rounds_run;

    /* ---- scratch (allocated in init, never per record) -------------------- */
    int32_t *sort_a, *sort_b; /* [hpr] */
    int64_t *rank_tokens;  /* [R] exact native load per rank */
    int32_t *list;         /* [R] */
    float *pin, *pout;     /* [R] */
    float *node_acc;       /* [nodes] */
    float *colsum;         /* [R] */
    float *v_prev;         /* [R] */
    int32_t *hot_index;    /* [R] rank -> row of hterm, -1 */
    float *hterm;          /* [R*R] (0.1f*alpha) * Tn[h][r] for hot homes h */
    float *score;          /* [E*R] Phase-2 scores by (candidate, rank), -inf when invalid */
    int32_t *best;         /* [R] best candidate of each rank */
    float *best_score;     /* [R] */
    int32_t *round_expert; /* [K*R] expert each rank took in round k, -1 */
    int32_t *active;       /* [R] */
    uint8_t *matched;      /* [R] */
    int32_t *prop_rank;    /* [E] by candidate */
    float *prop_score;     /* [E] */
    int32_t *touched;      /* [E] */
    uint8_t *accepted;     /* [E] */
    int64_t *given;        /* [E] by candidate: planned counts handed out */
    int max_x;             /* min(E, R*K): experts that can hold slots */
    int32_t *x_of_expert;  /* [E] expert -> auction supply row, -1 (kept at -1 between records) */
    int64_t *supply;       /* [max_x * R] auction supply sup[r][x] */
    int32_t *avail_total;  /* [max_x] ranks with supply */
    int32_t *head1, *head2; /* [max_x * nodes] first two ranks with supply per node, by (price, rank) */
    int32_t *best_node1, *best_node2; /* [max_x] nodes with the best and second-best head1 */
    int32_t *heads_round;  /* [max_x] round the heads were last brought up to date */
    int32_t *node_changed; /* [nodes] last auction round in which a rank of the node sent */
    int32_t *node_id;      /* [R] node(r) = r / rpn */
    int32_t *slot_x;       /* [R*K] by plan replica: auction expert row */
    int64_t *demand;       /* [R*K] */
    int32_t *slot_active;  /* [R*K] */
    int32_t *price;        /* [R] */
    int32_t *order;        /* [R] each node's ranks by (price, rank), at the node's positions */
    int32_t *bid_slot;     /* [R] */
    float *bid_value;      /* [R] */
    int32_t *bidders;      /* [R] */
    tsim_split_scratch split;

} tsim_taot_ctx;

/* Allocates every scratch array for this topology. The CPU algorithm only: the
 * `taot` planner entry (src/registry/taot_planner.c) picks the device. */
int tsim_taot_init(tsim_taot_ctx *c, const tsim_topology *topo, const tsim_planner_common *common,
                   const tsim_taot_options *o, tsim_error *err);
void tsim_taot_free(tsim_taot_ctx *c);

/* Phase 0. rec must be R x E of the topology. */
void tsim_taot_stats(tsim_taot_ctx *c, const tsim_record *rec);
/* Phase 1 (needs Phase 0). */
void tsim_taot_flow_hint(tsim_taot_ctx *c);
/* Tn[e][r] for an expert whose home is h: T[h][r] / max(hot[h], 1), computed
 * from u, v, col_factor exactly as Phase 2 uses it; 0 without Phase 1. */
float tsim_taot_tn(const tsim_taot_ctx *c, int h, int r);
/* Phase 2 (needs Phase 0, and Phase 1 when flow_hint is on). */
void tsim_taot_match(tsim_taot_ctx *c);
/* Phase 3: resets out, lists the replicas with planned count >= 1 and fills
 * their alloc rows with the configured variant. */
int tsim_taot_assign(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *out, tsim_error *err);
/* All phases for one record. */
int tsim_taot_plan(tsim_taot_ctx *c, const tsim_record *rec, tsim_plan *out, tsim_error *err);

/* The Phase-2 score of taot.md, in its exact evaluation order. */
static inline float tsim_taot_score(float eff, float alpha_b, float hint)
{
    return (eff + alpha_b) + hint;
}

extern const tsim_planner_desc tsim_planner_taot;

#endif
