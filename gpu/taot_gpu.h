/* TAOT on the GPU (--taot-device gpu): the same plan as the CPU reference in
 * src/taot.c, bit for bit, computed by one CUDA thread block per record.
 *
 * Two layers, both plain C:
 *  - the public API (tsim_taot_gpu_*): topology, options, records and plans as
 *    the rest of the simulator knows them; gpu/taot_gpu_host.c when built with
 *    CUDA, gpu/taot_gpu_stub.c without (every call then reports "built without
 *    CUDA", available() is 0);
 *  - the engine (tsim_taot_gpu_engine_*): device buffers, pinned host buffers,
 *    the stream, CUDA graphs and the kernel, in gpu/taot_gpu.cu; plain types
 *    only, so that nvcc never compiles the simulator's headers. Only
 *    gpu/taot_gpu_host.c calls it.
 *
 * Limits (a shape outside them is refused by create with the reason, and the
 * planner runs on the CPU): R <= 64 (one thread owns a rank's row or column sum,
 * and a 64-bit mask holds a candidate's proposing ranks), and the per-record
 * state (about 56 E + 8 R^2 + 60 R K + 100 R bytes) must fit in the device's
 * shared memory per block (227 KiB on an H200: E up to about 3500 at R = 64). */
#ifndef TSIM_TAOT_GPU_H
#define TSIM_TAOT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSIM_TAOT_GPU_MAX_RANKS 64
/* Records per launch when the caller does not say (a microbatch's layers). */
#define TSIM_TAOT_GPU_DEFAULT_BATCH 48

/* ------------------------------------------------------------------------- */
/* Public API (needs the simulator's types)                                    */

#ifndef TSIM_TAOT_GPU_ENGINE_ONLY
#include "error.h"
#include "plan.h"
#include "planner.h"
#include "record.h"
#include "taot.h"
#include "topology.h"

typedef struct tsim_taot_gpu tsim_taot_gpu;

/* 1 when a CUDA device answers and can run the kernels; 0 otherwise, with the
 * reason in why (the CUDA error of the first call, or "built without CUDA"). */
int tsim_taot_gpu_available(char *why, size_t n);

typedef struct {
    int max_batch;     /* records per launch (>= 1) */
    bool use_graph;    /* replay each (batch size, count width) as a CUDA graph */
    bool diagnostics;  /* fill the per-record diagnostics (hashes of each phase) */
} tsim_taot_gpu_settings;

void tsim_taot_gpu_settings_default(tsim_taot_gpu_settings *s);

/* A GPU planner for this topology and these options (opts->device is
 * ignored). NULL with err set when the options are invalid (the CPU's message),
 * the shape is outside the limits above (TSIM_E_INPUT, the reason), or CUDA
 * fails (TSIM_E_INTERNAL, the CUDA error). */
tsim_taot_gpu *tsim_taot_gpu_create(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts, int max_batch,
                                    tsim_error *err);
tsim_taot_gpu *tsim_taot_gpu_create_ex(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts,
                                       const tsim_taot_gpu_settings *settings, tsim_error *err);

/* Plans n records (any n; launches of at most max_batch) into plans[0..n-1],
 * which the caller initialised with tsim_plan_init (they are reset and grown as
 * needed). Every record must be R x E of the topology. Returns TSIM_OK or an
 * error status: TSIM_E_INPUT for a record of the wrong shape, TSIM_E_INTERNAL
 * for a CUDA failure (the device is then unusable). */
int tsim_taot_gpu_plan_batch(tsim_taot_gpu *g, const tsim_record *const *recs, int n, tsim_plan *plans,
                             tsim_error *err);

/* Diagnostics of record i of the last launch (settings.diagnostics on); see
 * tsim_taot_gpu_record_out. Returns false when there is none. */
struct tsim_taot_gpu_record_out;
bool tsim_taot_gpu_diagnostics(const tsim_taot_gpu *g, int i, struct tsim_taot_gpu_record_out *out);

void tsim_taot_gpu_free(tsim_taot_gpu *g);

/* One shape of the benchmark below; times in microseconds per record, wall
 * clock per call, host packing and both copies included. */
typedef struct {
    int ranks, experts, slots, records;
    double cpu_us;          /* the CPU reference, mean */
    double latency_us;      /* one record per launch, p50 */
    double batched_us;      /* launches of TSIM_TAOT_GPU_DEFAULT_BATCH, p50 */
    double batched_mean_us; /* the same, mean */
    long mismatches;        /* GPU plans that differ from the CPU's */
} tsim_taot_gpu_bench_row;

#define TSIM_TAOT_GPU_BENCH_SHAPES 3

typedef struct {
    int records;   /* per shape */
    uint64_t seed;
    int n_rows;    /* shapes measured */
    tsim_taot_gpu_bench_row rows[TSIM_TAOT_GPU_BENCH_SHAPES];
    long mismatches; /* over every row */
} tsim_taot_gpu_bench_result;

/* Benchmark for `taotsim bench --taot-device gpu`: at (R, E, K) = (16,128,2),
 * (32,128,2) and (64,256,2), 8 ranks per node, TAOT options from base, `records` synthetic skewed
 * records per shape (<= 0: 960) from `seed`: the CPU reference per record, the
 * GPU latency of one record (a launch of 1), and the GPU time per record in
 * launches of 48, every GPU plan checked against the CPU's. Fills *out (the
 * caller formats it; nothing is printed). Returns TSIM_OK; TSIM_E_CHECK when
 * a GPU plan differed from the CPU's (out counts them); TSIM_E_INPUT with the
 * reason when no GPU answers or the build has no CUDA (out->n_rows 0); on any
 * other error out holds the shapes measured before it. */
int tsim_taot_gpu_bench(tsim_taot_gpu_bench_result *out, const tsim_planner_common *common,
                        const tsim_taot_options *base, int records, uint64_t seed, tsim_error *err);
#endif /* TSIM_TAOT_GPU_ENGINE_ONLY */

/* ------------------------------------------------------------------------- */
/* Engine (gpu/taot_gpu.cu): plain types, used by gpu/taot_gpu_host.c only     */

typedef struct {
    int ranks, experts, slots, experts_per_rank, ranks_per_node;
    int phase3;         /* 0 auction, 1 split (TSIM_TAOT_AUCTION / TSIM_TAOT_SPLIT) */
    int flow_hint;      /* Phase 1 and the Tn term */
    int iters;          /* Sinkhorn rounds */
    int auction_rounds; /* auction round cap */
    /* The CPU reference's constants, taken from its context (tsim_taot_ctx), so
     * that both sides use the very same floats. */
    float m_in, m_out, b_near, b_far, bonus_self, bonus_near, bonus_far;
    const int32_t *home;         /* [E] (copied at create) */
    const int32_t *rank_experts; /* [R * hpr] each rank's home experts, ascending (copied) */
    int max_batch;
    int use_graph;
    int diagnostics;
} tsim_taot_gpu_config;

/* Per record, at the start of its output block. */
typedef struct tsim_taot_gpu_record_out {
    int32_t count;              /* replicas in the plan (those that receive tokens) */
    uint32_t notes;             /* TSIM_NOTE_AUCTION_CAPPED when the round cap cut in */
    int32_t iters_computed;     /* Sinkhorn rounds run before the fixed point (0 without Phase 1) */
    int32_t auction_rounds_run; /* auction rounds run (0 for split or no replica) */
    float avg;                  /* Phase 0 avg */
    float alpha;                /* Phase 2 alpha */
    /* Diagnostics only (0 otherwise): FNV-1a (32-bit, offset 2166136261, prime
     * 16777619) over 32-bit words, in this order:
     *   phase0: tpe_f[0..E-1], load[0..R-1], hot[..], spare[..], spill[0..E-1] (float bits);
     *   phase1: u[0..R-1], v[..], col_factor[..] (float bits; 0 when the hint is off);
     *   phase2: for s = 0..R*K-1: slot_expert[s], bits of slot_amount[s], low then
     *           high word of slot_planned[s]. */
    uint32_t hash_phase0, hash_phase1, hash_phase2;
    uint32_t reserved[7];
} tsim_taot_gpu_record_out;

/* One replica of the output, in plan order. */
typedef struct {
    int32_t expert, guest, slot, reserved;
    int64_t planned;
} tsim_taot_gpu_replica;

typedef struct tsim_taot_gpu_engine tsim_taot_gpu_engine;

/* Status of the engine calls. */
enum { TSIM_GPU_OK = 0, TSIM_GPU_UNSUPPORTED = 1, TSIM_GPU_CUDA = 2 };

/* 1 when a device answers and has a kernel image for this build, else 0 and why. */
int tsim_taot_gpu_engine_probe(char *why, size_t n);
/* Shared memory one block needs for this shape, in bytes. */
size_t tsim_taot_gpu_engine_shared_bytes(int ranks, int experts, int slots);
int tsim_taot_gpu_engine_create(const tsim_taot_gpu_config *cfg, tsim_taot_gpu_engine **out, char *why, size_t n);
/* Pinned slot of record i's counts in the next launch: R*E uint32 (wide = 0)
 * or int64 (wide = 1), row r = source rank r. */
void *tsim_taot_gpu_engine_input(tsim_taot_gpu_engine *g, int record, int wide);
/* Copies n records in, runs the kernel, copies the plans out; waits for it. */
int tsim_taot_gpu_engine_run(tsim_taot_gpu_engine *g, int n, int wide, char *why, size_t why_n);
/* Record i of the last run: its header, replicas [count] and alloc rows [count][R]. */
const tsim_taot_gpu_record_out *tsim_taot_gpu_engine_result(const tsim_taot_gpu_engine *g, int record,
                                                           const tsim_taot_gpu_replica **replicas,
                                                           const int64_t **alloc);
void tsim_taot_gpu_engine_free(tsim_taot_gpu_engine *g);

#ifdef __cplusplus
}
#endif

#endif
