/* From an EPLB layout to a plan (eplb.md 3.2-3.5): the native copy of every
 * expert (home'), the replicas (one per expert and GPU away from home', copies
 * on one GPU merged into one host), their guest slots, and the rotating even
 * split of every source rank's tokens over an expert's copies. Pure: no
 * planner state, no allocation after init. */
#ifndef TSIM_EPLB_HOSTS_H
#define TSIM_EPLB_HOSTS_H

#include <stdint.h>

#include "error.h"

typedef struct {
    int ranks;           /* R */
    int experts;         /* E */
    int per_gpu;         /* hpr + K: physical experts per GPU */
    int ranks_per_node;  /* rpn */
    int physical;        /* P = R * per_gpu */
    int32_t *home;       /* [E]: home'(e) */
    int32_t *copy_start; /* [E + 1]: expert e's copies are copy_phys[copy_start[e] ..] */
    int32_t *copy_phys;  /* [P]: physical index of each copy, ascending per expert */
    int32_t *copy_host;  /* [P], same order: -1 for a copy at home', else its replica */
    int32_t *next_copy;  /* [E] scratch */
    int32_t *guests;     /* [R]: guests of each GPU */
    int replicas;        /* replicas of the layout */
    int32_t *replica_expert, *replica_gpu, *replica_slot; /* [P] by replica, GPU-major, slot order */
} tsim_eplb_hosts;

int tsim_eplb_hosts_init(tsim_eplb_hosts *h, int ranks, int experts, int per_gpu, int ranks_per_node,
                         tsim_error *err);
void tsim_eplb_hosts_free(tsim_eplb_hosts *h);

/* Builds home' (3.3: stay on prev(e)'s GPU if it holds a copy, else the
 * lowest GPU on prev(e)'s node holding one, else the lowest GPU holding one)
 * and the replicas (3.4: per GPU, guests in order of their first physical
 * position take slots 0, 1, ...) of phy2log[P], which must name every expert
 * at least once. prev[E] is home' before the recomputation. */
void tsim_eplb_hosts_build(tsim_eplb_hosts *h, const int32_t *phy2log, const int32_t *prev);

/* Copy j of c receives from a source rank r holding t tokens (3.5): t / c,
 * plus one when (j - r) mod c < t mod c, so the remainder starts at copy
 * r mod c. */
static inline int64_t tsim_eplb_share(int64_t t, int c, int r, int j)
{
    const int64_t q = t / c, m = t % c;
    int d = (j - r) % c;
    if (d < 0)
        d += c;
    return q + (d < m ? 1 : 0);
}

/* Splits one record's counts[R * E] over the copies: rows[i * R + r] receives
 * the tokens source r sends to replica i (every row written, zeros included).
 * Tokens of copies at home' stay home and appear nowhere. */
void tsim_eplb_hosts_tokens(const tsim_eplb_hosts *h, const int64_t *counts, int64_t *rows);

#endif
