/* Synthetic routing traces (experiments.md, "Synthetic traces"): a base
 * routing drawn from a drifting symmetric Dirichlet popularity per layer, and
 * the authors' hotspot injection (the first share f of every rank's tokens goes
 * to the hot ranks' experts). The generator produces one record at a time, so
 * memory stays flat however long the trace is, and the calibration finds f for
 * a target mean initial imbalance. GSL mt19937 random numbers: the same
 * parameters give the same records, bit for bit. The library never prints. */
#ifndef TSIM_GEN_H
#define TSIM_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "record.h"

struct cJSON;

/* Version of the generating algorithm, recorded in every trace's meta: it
 * changes whenever the same parameters would give different records. */
#define TSIM_GEN_NAME "taotsim gen"
#define TSIM_GEN_VERSION 1
/* Version 2 draws each rank's counts as multinomials (gen_counts.c): much
 * faster, a different distribution; chosen with tsim_gen_params.version. */
#define TSIM_GEN_VERSION_COUNTS 2
/* Version 3: version 2's law, its picks drawn in blocks over interleaved
 * streams (gen_counts.c): the same distribution, other bytes, faster. */
#define TSIM_GEN_VERSION_BLOCKS 3
/* Versions 2 and up draw counts, not tokens. */
#define TSIM_GEN_DRAWS_COUNTS(version) ((version) >= TSIM_GEN_VERSION_COUNTS)

/* Limits checked by tsim_gen_params_check (beyond those of topology.h). */
#define TSIM_GEN_MAX_TOKENS (1 << 24)      /* per source rank and record */
#define TSIM_GEN_MAX_RECORDS 10000000      /* microbatches x layers */
#define TSIM_GEN_MAX_CELLS (1 << 24)       /* ep x experts: one record's matrix */
#define TSIM_GEN_MAX_SEED ((UINT64_C(1) << 53) - 1) /* exact in the JSON meta */
#define TSIM_GEN_MAX_HOT_LIST 256          /* explicit hot ranks (--hot-ranks LIST) */
#define TSIM_GEN_MAX_SKEW 16.0             /* --hot-skew */
#define TSIM_GEN_MAX_THREADS 256           /* -j */

/* Where the hot ranks are (--hot-ranks). */
typedef enum {
    TSIM_HOT_FIRST = 0,    /* "N": ranks 0..N-1 (today's default, N = 1) */
    TSIM_HOT_PER_NODE = 1, /* "per-node:N": the first N ranks of every node */
    TSIM_HOT_LIST = 2,     /* "a,b,c" or "ranks:a": these ranks (kept sorted, distinct) */
} tsim_gen_hot_placement;

typedef struct {
    int experts;          /* E (default 128) */
    int ep;               /* R source and home ranks (16); R divides E */
    int ranks_per_node;   /* rpn (8): only recorded in the header */
    int topk;             /* k distinct experts per token (8) */
    int tokens;           /* T tokens per source rank per record (4096) */
    int microbatches;     /* N (32) */
    int layers;           /* L (4) */
    double concentration; /* c: every Dirichlet parameter alpha_e = c (200) */
    double drift;         /* delta in [0, 1]: popularity drift per microbatch (0.05), see gen.c */
    tsim_gen_hot_placement hot_placement; /* (TSIM_HOT_FIRST) */
    int hot_ranks;        /* FIRST: ranks 0..hot_ranks-1 (1); PER_NODE: hot ranks per node; LIST: unused */
    int hot_list[TSIM_GEN_MAX_HOT_LIST]; /* LIST: the hot ranks, ascending */
    int n_hot_list;
    int hot_experts;      /* M: the hotspot loads the first M home experts of each hot rank; 0 = all (0) */
    double hot_skew;      /* S >= 0: hot expert j (0-based within its rank) weighs (j + 1)^-S (0: even) */
    double hot_fraction;  /* f in [0, 1]: share of every rank's tokens sent to the hot ranks (0) */
    int hot_move;         /* N >= 0: every N microbatches the hotspot moves on by one rank (0: never) */
    uint64_t seed;        /* seeds every GSL mt19937 stream (1); at most TSIM_GEN_MAX_SEED */
    int threads;          /* threads sampling source ranks (1); never changes the records */
    int version;          /* TSIM_GEN_VERSION (tokens, the default), _COUNTS or _BLOCKS */
} tsim_gen_params;

/* The defaults of cli.md (f = 0). */
void tsim_gen_params_default(tsim_gen_params *p);

/* Every parameter in range: TSIM_E_INPUT with a message naming the option. */
int tsim_gen_params_check(const tsim_gen_params *p, tsim_error *err);

/* Parses a --hot-ranks value into p: "N", "per-node:N", a comma list of
 * ranks "a,b,..." or "ranks:a[,b...]" (sorted; duplicates are an error).
 * Ranges against the EP size are checked by tsim_gen_params_check. */
int tsim_gen_hot_ranks_parse(const char *s, tsim_gen_params *p, tsim_error *err);

/* The canonical --hot-ranks text of p ("1", "per-node:2", "0,8,16,24",
 * "ranks:5"); parsing it gives the same placement. */
void tsim_gen_hot_ranks_format(const tsim_gen_params *p, char *buf, size_t n);

/* The hot ranks for p's EP size and ranks per node, ascending: their count,
 * written to ranks[] (room for TSIM_MAX_RANKS; may be NULL). p must pass
 * tsim_gen_params_check. */
int tsim_gen_hot_rank_list(const tsim_gen_params *p, int *ranks);

/* Hot experts per hot rank: M, or every home expert when hot_experts is 0. */
int tsim_gen_hot_experts_per_rank(const tsim_gen_params *p);

/* Whether p's hotspot is today's default shape (first N ranks, all their
 * experts, no skew): such traces' meta carries no regime fields, so their
 * bytes stay those of generator version 1 before the regimes existed. */
bool tsim_gen_default_regime(const tsim_gen_params *p);

/* Whether two checked parameter sets give the same records: equal shape,
 * routing and seed, the same hot ranks (however placed), the same M, and
 * skews that give the same weights (j + 1)^-S. */
bool tsim_gen_same_records(const tsim_gen_params *a, const tsim_gen_params *b);

/* Records in the trace: microbatches x layers (microbatch-major). */
int64_t tsim_gen_record_count(const tsim_gen_params *p);
/* The records of every stride-th microbatch (1: the whole trace), all their
 * layers: what one calibration trial at that stride generates. */
int64_t tsim_gen_trial_records(const tsim_gen_params *p, int stride);

/* Hot tokens per record, summed over source ranks: round(f * T * R). Source
 * rank r sends floor(H / R) of them, plus one more when r < H mod R. */
int64_t tsim_gen_hot_tokens(const tsim_gen_params *p);

typedef struct tsim_gen tsim_gen;

/* A generator for the parameters (checked). */
int tsim_gen_open(tsim_gen **out, const tsim_gen_params *p, tsim_error *err);

/* The next record, in a buffer the generator owns (valid until the next call
 * or tsim_gen_close), with microbatch, layer and index set. Returns 1 with
 * *rec set, 0 after the last record. *imbalance (may be NULL) receives the
 * record's initial imbalance rho_before (model.md). */
int tsim_gen_next(tsim_gen *g, const tsim_record **rec, double *imbalance);

/* Back to the first record with another hot share f (in [0, 1]); everything
 * else stays, so the records differ only in their hot tokens. */
void tsim_gen_rewind(tsim_gen *g, double hot_fraction);

void tsim_gen_close(tsim_gen *g);

/* Test hook: the generator's own mt19937 (the token streams) seeded with seed
 * against n outputs of GSL's: -1 when all agree, else the first index that
 * differs. */
int tsim_gen_mt19937_check(unsigned long seed, const uint32_t *expected, int n);

/* Progress of long work: done out of total records (total > 0) of a pass over
 * the trace; trial is the calibration trial (from 1), 0 outside calibration. */
typedef void (*tsim_gen_progress_fn)(void *ctx, int trial, int64_t done, int64_t total);

/* Mean initial imbalance over the whole trace for p (p->hot_fraction). */
int tsim_gen_mean_imbalance(const tsim_gen_params *p, double *mean, tsim_gen_progress_fn progress, void *ctx,
                            tsim_error *err);

/* Accepted distance between the target and the achieved mean imbalance. */
#define TSIM_GEN_TOLERANCE 0.005
/* The search stops early once it is this close. */
#define TSIM_GEN_AIM 0.001

typedef struct {
    double target;        /* X */
    double hot_fraction;  /* f = H / (T * R) */
    int64_t hot_tokens;   /* H per record */
    double achieved;      /* mean initial imbalance of the trace made with f */
    double base;          /* mean initial imbalance with f = 0 */
    int trials;           /* evaluations made */
    int64_t trial_records; /* records each evaluation ran over: the whole trace, or a sample */
} tsim_gen_calibration;

/* Finds f so that the mean initial imbalance over the full trace is within
 * TSIM_GEN_TOLERANCE of target (p->hot_fraction is ignored). Every trial
 * replays the same random streams, so the mean is a deterministic function of
 * f and the bracketing search converges. TSIM_E_INPUT when the target is below
 * what the base routing gives (f = 0), above what f = 1 gives, or between two
 * adjacent hot-token counts too far apart (too few tokens). */
int tsim_gen_calibrate(const tsim_gen_params *p, double target, tsim_gen_calibration *out,
                       tsim_gen_progress_fn progress, void *ctx, tsim_error *err);

/* Version 3: the same search over every TSIM_GEN_SAMPLE_STRIDE-th
 * microbatch (when that leaves at least TSIM_GEN_SAMPLE_MIN of them; else,
 * and for versions 1 and 2, whose traces keep their bytes, over the whole
 * trace). The others are skipped but for their popularity, so the sample
 * spans the trace's drift. The result is a guess for the whole trace: the
 * caller measures the whole trace at that f and calibrates in full when it
 * misses the tolerance. */
#define TSIM_GEN_SAMPLE_STRIDE 8
#define TSIM_GEN_SAMPLE_MIN 25
int tsim_gen_calibrate_sampled(const tsim_gen_params *p, double target, tsim_gen_calibration *out,
                               tsim_gen_progress_fn progress, void *ctx, tsim_error *err);

/* The trace's meta object: {"source": "synthetic", "generator": {name,
 * version, every parameter, f, and the calibration when cal is not NULL}}.
 * "hot_ranks" is the number of hot ranks; a regime other than the default
 * shape (tsim_gen_default_regime) adds "hot_placement" (the --hot-ranks
 * text), "hot_rank_list", "hot_experts" (M, resolved) and "hot_skew".
 * achieved is the mean initial imbalance of the records written. NULL when out
 * of memory. */
struct cJSON *tsim_gen_meta(const tsim_gen_params *p, const tsim_gen_calibration *cal, double achieved);

#endif
