/* Megatron-LM router trace reader: the state shared by its two files,
 * trace_megatron.c (rank files, records, layouts, checks across ranks) and
 * trace_megatron_parse.c (the strict parser of one router call line). */
#ifndef TSIM_TRACE_MEGATRON_INTERNAL_H
#define TSIM_TRACE_MEGATRON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_internal.h"
#include "trace_megatron_layout.h"

#define PREFIX "router_trace_rank"
/* An MTP call's layer is mtp_idx * 2^32 + layer (see docs/import.md), so
 * layers stay below 2^32 and depths below 2^16. */
#define MAX_LAYER ((INT64_C(1) << 32) - 1)
#define MAX_MTP_IDX 65535
#define MAX_STAGE_WARNINGS 8

enum { BLOCK_DECODER, BLOCK_MTP, BLOCK_OTHER };

typedef struct {
    char *path; /* DIR/router_trace_rankN.jsonl(.gz) */
    bool gz;
    tsim_gzline lines;
    bool open;
} rank_file;

/* Calls of one layer in the current step (a hash set emptied per step). */
typedef struct {
    int64_t layer;
    int64_t calls;
    uint64_t gen;
} layer_slot;

/* One call of the current step: its layer, the hash of its ids on every file
 * of the unit, and where the unit's first file has it. A later call with the
 * same layer and hash repeats it (a recomputed router call). */
typedef struct {
    int64_t layer;
    uint64_t hash;
    long line;
    uint64_t gen;
} call_slot;

typedef struct {
    int ranks;
    rank_file *files;
    int64_t experts; /* 0 while unknown (the first pass) */
    bool experts_given; /* by --experts */
    int block;       /* BLOCK_DECODER or BLOCK_MTP */
    int64_t topk;    /* ids per token, 0 while unknown */
    int64_t total_size;

    /* microbatch numbering */
    bool have_step;
    int64_t step, mb_base, step_calls;
    layer_slot *slots; /* open addressing; slots of older generations are empty */
    size_t cap, used;
    uint64_t gen;
    call_slot *calls_seen; /* this step's calls, emptied like slots */
    size_t calls_cap, calls_used;
    uint64_t *hashes; /* [rows * per_row] ids hashes of the current call's files */
    /* Without a layout: same_prev[j], file j routed the same tokens as file
     * j - 1 in every call so far (tensor parallelism without sequence
     * parallelism shows so); any_tokens, some call had tokens. */
    bool *same_prev;
    bool any_tokens;
    int64_t kept; /* calls kept so far (rank 0) */

    /* a token's ids are distinct: seen[id] == row_stamp for the ids of the
     * row being parsed (no clearing per row) */
    uint32_t *seen;
    uint32_t row_stamp;
    /* ids per token: the first call that had tokens, and where */
    int64_t topk_seen; /* -1 while unknown */
    int topk_rank;
    long topk_line;

    char warned_stage[MAX_STAGE_WARNINGS][32];
    int n_warned_stage;
    /* a first-pass thread's copy: warns nothing, marks dirty instead */
    bool quiet, dirty;

    /* The files are read one unit at a time: without --megatron-parallel one
     * unit of every file, row j = rank j; with it, one unit per expert data
     * parallel group and pipeline stage, row j = EP rank j, the sum of its
     * per_row expert-TP ranks' files. */
    int rows, per_row;
    int *unit_files; /* [rows * per_row] file indices of the current unit */
    int unit, units;
    bool layout;
    tsim_megatron_layout lay;
    tsim_megatron_place *places; /* [ranks] */
    int groups, first_group;
    int64_t layers_per_stage; /* local layer ids are below it */
    int64_t layer_offset;     /* of the current unit's stage */
    int64_t max_layer;        /* the largest local decoder layer id (first pass) */
    int64_t *add;             /* [E] one summed file's counts */
    char tag[TSIM_TAG_MAX];
} megatron;

/* One parsed call. */
typedef struct {
    int64_t step, layer, rank, num_tokens, topk, mtp_idx;
    bool has_rank, has_num_tokens, has_topk, has_mtp_idx;
    int block;
    char stage[32]; /* "" when absent; "?" when not plain text */
    int64_t rows, row_len, max_id;
    /* the first id out of range 0..E-1 (checked only when the call is kept:
     * the other block may well have more experts) */
    int64_t bad_id, bad_row;
    size_t bad_at;
    /* the first id a token picks twice (-1: none), reported like bad_id */
    int64_t dup_id, dup_row;
    size_t dup_at;
    /* of the ids in order, token by token: equal calls have equal hashes
     * (recomputed calls, TP ranks that route the same tokens) */
    uint64_t ids_hash;
    /* the line and where its "top_indices" value is (valid until the file's
     * next line is read) */
    const char *text;
    size_t ids_at, ids_end;
} call;

typedef struct {
    tsim_reader *r;
    const rank_file *f;
    const char *line;
    size_t len;
    long lineno;
    tsim_error *err;
} line_ctx;

/* Parses one line. row (E zeros, or NULL) receives the counts. Returns 0 or
 * an error; k holds the call. */
int tsim_megatron_parse_call(const line_ctx *c, megatron *m, int64_t *row, call *k);

/* A problem at byte `at` of the line (the JSON problem when the line is not
 * even valid JSON); returns TSIM_E_INPUT. */
int tsim_megatron_line_fail(const line_ctx *c, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
