/* Trace index (taotsim index): a sidecar file beside a .jsonl or .jsonl.gz
 * trace with its record count, per-layer counts and seek points: the byte
 * offset of every N-th record (.jsonl) or of every gzip member that starts at
 * a record boundary (.jsonl.gz, blocked gzip), each with the first record it
 * holds and a hash of its bytes, plus the trace's size and hash, so a stale
 * index is detected. Format: docs/trace-format.md, "Trace index". */
#ifndef TSIM_TRACE_INDEX_H
#define TSIM_TRACE_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "record.h"

#define TSIM_INDEX_SUFFIX ".tsidx"
#define TSIM_INDEX_VERSION 2
#define TSIM_INDEX_DEFAULT_EVERY 4096 /* records per block of a .jsonl */

/* A content hash of a trace's records as they were read: 64-bit FNV-1a
 * style over 64-bit words (trace_index.c), the words being each record's parsed
 * values in order (microbatch, layer, R, E, the counts, the tag's length and
 * bytes). It depends only on the records, not on -j, the machine or the
 * file's encoding. */
typedef struct {
    uint64_t hash;
    int64_t records;
} tsim_trace_digest;

void tsim_trace_digest_init(tsim_trace_digest *d);
void tsim_trace_digest_add(tsim_trace_digest *d, const tsim_record *rec);

typedef struct {
    int64_t offset;       /* byte offset in the trace file where the block starts */
    int64_t bytes;        /* its length in the file */
    int64_t first_record; /* index (from 0) of its first record */
    int64_t records;      /* records starting in it */
    uint64_t hash;        /* FNV-1a 64 of its bytes */
    int64_t first_line;   /* the line number (from 1) of the first line starting in it */
} tsim_index_block;

typedef struct {
    int64_t layer;
    int64_t records;
} tsim_index_layer;

typedef struct {
    bool gzip;            /* blocks are gzip members */
    int64_t trace_bytes;  /* the trace file's size */
    uint64_t trace_hash;  /* FNV-1a 64 of the whole file */
    int64_t records;
    tsim_trace_digest digest; /* of the records as read with default options (what a shard records) */
    tsim_index_layer *layers; /* in order of first appearance */
    int n_layers;
    tsim_index_block *blocks;
    int64_t n_blocks;
} tsim_trace_index;

/* Reads the whole trace (validating every record) and builds its index;
 * every: records per block of a .jsonl (ignored for .jsonl.gz). */
int tsim_index_build(const char *trace, int64_t every, tsim_trace_index *out, tsim_error *err);

/* Writes the index as JSON, atomically. */
int tsim_index_write(const tsim_trace_index *ix, const char *path, tsim_error *err);

/* Reads an index file; TSIM_E_INPUT naming the file when it is not one. */
int tsim_index_read(const char *path, tsim_trace_index *out, tsim_error *err);

/* Whether the index describes the trace as it is now: its size, then the
 * hash of every block and of the whole file. TSIM_E_INPUT naming what
 * differs (a stale index). */
int tsim_index_check(const tsim_trace_index *ix, const char *trace, tsim_error *err);

/* What a shard needs: the file's size, and the hash of blocks from..to
 * (inclusive) only. TSIM_E_INPUT naming the stale block. */
int tsim_index_check_blocks(const tsim_trace_index *ix, const char *trace, int64_t from, int64_t to, tsim_error *err);

/* The block holding record `record` (from 0; the last block past the end). */
int64_t tsim_index_block_of(const tsim_trace_index *ix, int64_t record);

/* The index beside a trace (TRACE.tsidx): *found false when there is none;
 * TSIM_E_INPUT naming the file when it is not a current index. */
int tsim_index_find(const char *trace, tsim_trace_index *ix, bool *found, tsim_error *err);

struct tsim_reader;
/* Points a reader just opened on the indexed trace at record lo, to read
 * records lo..hi-1: checks the file's size and the hashes of the blocks
 * holding them (a stale index is TSIM_E_INPUT naming the block), seeks to
 * the block of lo and passes over the records before lo unparsed. */
int tsim_index_seek_range(const tsim_trace_index *ix, struct tsim_reader *r, const char *trace, int64_t lo, int64_t hi,
                          tsim_error *err);

/* FNV-1a 64, continued from h (start with TSIM_FNV_START). */
#define TSIM_FNV_START UINT64_C(0xcbf29ce484222325)
uint64_t tsim_fnv1a(uint64_t h, const void *data, size_t n);


void tsim_index_free(tsim_trace_index *ix);

#endif
