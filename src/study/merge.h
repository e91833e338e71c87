/* --shard I/N and taotsim merge: which part of a run a shard does, the
 * partial result it writes (JSON), and combining the partial results of one
 * command into the result of the whole run.
 *
 * replay: shard I plans records [lo, hi) of the I-th of N contiguous ranges
 * (tsim_shard_range) with every planner that keeps no memory across records;
 * a planner with per-layer memory (LPLB's prev history, EPLB's window) plans
 * whole layers instead, the layers whose order of first appearance d has
 * (d + planner) mod N = I, so its history is exactly the unsharded one; an
 * external planner runs whole in shard (planner mod N). The partial keeps
 * every per-record value when the unsharded run would (at most
 * TSIM_SESSION_EXACT_RECORDS records, or --per-record), and the merge then
 * pushes them in record order: the same bytes as one run. Otherwise it keeps
 * the bounded summary of stats.h (the log-bin sketch), merged exactly for
 * n, min, max, p50 and p95, and by Chan et al.'s formula for mean and std
 * (last-bit differences from one pass).
 *
 * Studies: shard I runs grid points I, I+N, ...; its rows are exact
 * summaries, so the merged study is byte-identical to the unsharded one. */
#ifndef TSIM_MERGE_H
#define TSIM_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "planner.h"
#include "session.h"
#include "study.h"
#include "trace.h"
#include "trace_index.h"

struct cJSON;

/* Format number of the partial results this build writes and reads. */
#define TSIM_PARTIAL_FORMAT 2

typedef struct {
    int index, count; /* count 0: not sharded */
} tsim_shard;

/* "I/N" with 0 <= I < N <= TSIM_SHARD_MAX. */
#define TSIM_SHARD_MAX 100000
int tsim_shard_parse(const char *text, tsim_shard *out, tsim_error *err);

/* The I-th of N contiguous ranges of total records: [*lo, *hi), sizes
 * differing by at most one, the larger ones first; together they cover
 * 0..total-1 once. */
void tsim_shard_range(int64_t total, tsim_shard shard, int64_t *lo, int64_t *hi);

/* What a planner remembers between records, which decides how records may be
 * split between threads and shards. */
typedef enum {
    TSIM_MEMORY_NONE,  /* each record alone: any order, any thread */
    TSIM_MEMORY_LAYER, /* per layer (state window or layer prefix): a layer's records in order */
    TSIM_MEMORY_ALL,   /* every record in order (state every record: external planners) */
} tsim_planner_memory;
tsim_planner_memory tsim_planner_memory_of(const tsim_planner_desc *d);

/* The shard that plans a record of the layer first seen d-th (0, 1, ...)
 * with planner p of the given memory kind, the record being the seq-th of
 * total (TSIM_MEMORY_NONE uses the range, the others ignore seq). */
int tsim_shard_owner(tsim_planner_memory memory, int planner, int64_t dense_layer, int64_t seq, int64_t total,
                     int shard_count);

/* A command line without the options that do not change a result: --shard,
 * -o/--output, --format and -j/--jobs (with their values, in any spelling:
 * "--opt V", "--opt=V", "-oV"). Returns a NULL-terminated copy (free with
 * tsim_argv_free), or NULL when out of memory. */
char **tsim_argv_identity(int argc, char *const *argv, int *out_argc);
void tsim_argv_free(char **argv);

/* ---- which trace a shard read ------------------------------------------------------ */

/* tsim_trace_digest (a hash of a trace's records): trace_index.h. */

/* ---- writing partial results ---------------------------------------------------- */

typedef struct {
    tsim_shard shard;
    char *const *argv;      /* the identity command line (tsim_argv_identity), argv[0] the command */
    int argc;
    const char *trace_path;
    const tsim_trace_header *header;
    int64_t records;        /* records in the whole trace */
    /* Which trace it was: every shard reads the whole trace once to count
     * its records, so each hashes all of them and all shards must agree.
     * (The scale issue's index will carry per-block hashes instead, so a
     * shard will not have to read the whole trace to prove this.) */
    tsim_trace_digest digest;
    int64_t bytes;          /* the trace's size in bytes (compressed for .gz) */
    bool per_record;
    bool values;            /* keep per-record values (the unsharded run would) */
} tsim_replay_partial_info;

/* A replay shard's partial result. The session must have kept indices
 * (keep_indices) when info->values is set. NULL when out of memory. */
struct cJSON *tsim_replay_partial_json(const tsim_session *s, const tsim_replay_partial_info *info, tsim_error *err);

/* A study shard's partial result (a study run with shard_count > 0). */
struct cJSON *tsim_study_partial_json(const tsim_study *st, char *const *argv, int argc, tsim_error *err);

/* ---- reading and merging ------------------------------------------------------------- */

typedef struct {
    char *path;
    struct cJSON *root;
    const char *study;   /* "replay", "table1", ... (into root) */
    tsim_shard shard;
    char **argv;         /* the identity command line, NULL-terminated (owned) */
    int argc;
} tsim_partial;

/* Reads a partial result. Errors (TSIM_E_INPUT) name the file. */
int tsim_partial_load(tsim_partial *p, const char *path, tsim_error *err);
void tsim_partial_free(tsim_partial *p);

/* Checks that parts[0..n-1] are the N shards of one command: the same tool
 * version, command line, parameters and trace, each shard once, none
 * missing. Errors (TSIM_E_INPUT) name the files. */
int tsim_partials_check(const tsim_partial *parts, int n, tsim_error *err);
/* The same, a part at a time: p against the first part (p == first checks
 * the first alone), then that shards index[0..n-1] (of count) are each
 * there once (paths name them in messages). */
int tsim_partial_check_pair(const tsim_partial *first, const tsim_partial *p, tsim_error *err);
int tsim_shards_check_cover(char *const *paths, const int *index, int n, int count, tsim_error *err);

/* What the shards' replay ran: the planners' labels in order, and the
 * session's switches. The trace header gets a copy of the shards' (meta and
 * home included; free with tsim_trace_header_free). */
typedef struct {
    char labels[64][TSIM_LABEL_MAX];
    int n_planners;
    bool timing, step_model, per_record, values;
    int64_t records;
    const char *trace_path;   /* into the first part */
    tsim_trace_header header;
} tsim_replay_partial_setup;
int tsim_replay_partial_setup_get(const tsim_partial *part, tsim_replay_partial_setup *out, tsim_error *err);

/* Fills a session made by tsim_session_init_results with the shards'
 * planners (in the setup's order) with the merged results: series, notes,
 * record counts, rehoming, ids. */
int tsim_replay_merge(tsim_session *s, const tsim_partial *parts, int n, tsim_error *err);

/* The same merge fed one part at a time, in shard order (a streaming merge
 * holds one part at a time): start with the first part (its setup) and the
 * number of parts, add every part once, then finish. */
typedef struct tsim_replay_merger tsim_replay_merger;
int tsim_replay_merger_start(tsim_replay_merger **out, tsim_session *s, const tsim_partial *first, int n_parts,
                             tsim_error *err);
int tsim_replay_merger_add(tsim_replay_merger *m, const tsim_partial *part, tsim_error *err);
int tsim_replay_merger_finish(tsim_replay_merger *m, tsim_error *err);
void tsim_replay_merger_free(tsim_replay_merger *m);

/* The merged study (finished with tsim_study_finish). */
int tsim_study_merge(tsim_study *out, const tsim_partial *parts, int n, tsim_error *err);

#endif
