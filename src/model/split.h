/* The source split shared by TAOT (phase 3 "split") and ECHO (taot.md section 3):
 * proportional single-precision floors, then the remainders laid end to end. */
#ifndef TSIM_SPLIT_H
#define TSIM_SPLIT_H

#include <stdint.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

typedef struct {
    int64_t *source_left; /* [R] remaining tokens per source of the current expert */
    int *order;           /* [capacity] replica indices grouped by expert */
    int capacity;
} tsim_split_scratch;

int tsim_split_scratch_init(tsim_split_scratch *s, int ranks, int max_replicas, tsim_error *err);
void tsim_split_scratch_free(tsim_split_scratch *s);

/* Fills the alloc rows of every replica in plan from its planned count d:
 * source r first sends floorf((float)cnt/(float)tpe * (float)d) (clamped to
 * what is left on both sides), then per expert the leftover per-source tokens
 * (rank order) and leftover demands (slot order g*K+k) are laid end to end and
 * each pair gets the overlap of its intervals. tpe[E] are the expert totals.
 * slots is K, used only for the slot order. */
int tsim_split_plan(const tsim_record *rec, const int64_t *tpe, int slots, tsim_plan *plan, tsim_split_scratch *s,
                    tsim_error *err);

#endif
