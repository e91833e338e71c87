/* Megatron-Core's rank layout under tensor, pipeline, context, expert and
 * data parallelism (--megatron-parallel), for the router trace reader. */
#ifndef TSIM_TRACE_MEGATRON_LAYOUT_H
#define TSIM_TRACE_MEGATRON_LAYOUT_H

#include <stdbool.h>

#include "error.h"

typedef struct {
    int tp, pp, ep, cp, etp; /* etp: expert tensor parallel (default tp) */
    char order[5];           /* 'T' 'C' 'E' 'D' 'P', fastest first */
    bool tp_same;            /* every TP rank routes the same tokens: read TP rank 0 only */
} tsim_megatron_layout;

/* Where one global rank sits on the expert grid. */
typedef struct {
    int etp_rank, ep_rank, group, stage; /* group: the expert data parallel index */
} tsim_megatron_place;

/* "tp=2,pp=2,ep=4[,cp=C][,etp=ET][,order=tp-cp-ep-dp-pp][,tokens=split|same]" */
int tsim_megatron_layout_parse(const char *spec, tsim_megatron_layout *l, tsim_error *err);
/* Places every one of `world` global ranks; *groups is the number of expert
 * data parallel groups. An error when world does not fit the sizes. */
int tsim_megatron_layout_map(const tsim_megatron_layout *l, int world, tsim_megatron_place *places, int *groups,
                             tsim_error *err);

#endif
