/* One record: a microbatch of one MoE layer as an R x E count matrix. */
#ifndef TSIM_RECORD_H
#define TSIM_RECORD_H

#include <stdint.h>

#include "error.h"

#define TSIM_TAG_MAX 64

typedef struct {
    int64_t microbatch;
    int64_t layer;
    int64_t index;  /* 0-based position in the trace */
    long line;      /* line of the source file where the record starts (0 if unknown) */
    int ranks;      /* R: rows of counts */
    int experts;    /* E: columns of counts */
    int64_t *counts; /* [R * E], row r = source rank r */
    char tag[TSIM_TAG_MAX]; /* CSV "dataset" column; empty otherwise */
} tsim_record;

/* Allocates counts for an R x E record (zeroed). */
int tsim_record_alloc(tsim_record *rec, int ranks, int experts, tsim_error *err);
void tsim_record_free(tsim_record *rec);

static inline int64_t tsim_count(const tsim_record *rec, int rank, int expert)
{
    return rec->counts[(size_t)rank * (size_t)rec->experts + (size_t)expert];
}

/* The even split of model.md: cnt[r][e] = floor(tpe/R), remainder one token each
 * to ranks 0, 1, 2, ... Writes R rows into rec->counts (already allocated). */
void tsim_record_split_even(tsim_record *rec, const int64_t *tokens_per_expert);

/* Totals per expert into tpe[E] (exact, 64-bit). */
void tsim_record_expert_totals(const tsim_record *rec, int64_t *tpe);

#endif
