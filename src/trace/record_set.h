/* A whole trace held in memory (the studies that plan every record several
 * times: one grid point's records, advise's replays): one counts buffer for
 * all records, grown by doubling, never one allocation per record. */
#ifndef TSIM_RECORD_SET_H
#define TSIM_RECORD_SET_H

#include <stdint.h>

#include "error.h"
#include "record.h"

typedef struct {
    tsim_record *recs; /* [n]; recs[i].counts points into counts */
    int64_t *counts;   /* [cap * ranks * experts] */
    int n, cap;
    int ranks, experts, ranks_per_node;
    int32_t *home; /* the trace header's homes; NULL: contiguous */
} tsim_record_set;

/* An empty set for records of ranks x experts. */
void tsim_record_set_init(tsim_record_set *rs, int ranks, int experts, int ranks_per_node);

/* Appends a copy of rec (of the set's shape). */
int tsim_record_set_push(tsim_record_set *rs, const tsim_record *rec, tsim_error *err);

/* Every record of a trace file, read with default options; the set is
 * empty (and freed) on an error. */
int tsim_record_set_read(tsim_record_set *rs, const char *path, tsim_error *err);

void tsim_record_set_free(tsim_record_set *rs);

#endif
