/* The planner interface and the registry (architecture.md): one small table of
 * function pointers per planner, registered by name. A planner owns its scratch
 * memory, allocated once in init and reused for every record. */
#ifndef TSIM_PLANNER_H
#define TSIM_PLANNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

enum { TSIM_TAOT_AUCTION = 0, TSIM_TAOT_SPLIT = 1 };
enum { TSIM_DEVICE_CPU = 0, TSIM_DEVICE_GPU = 1 };
enum { TSIM_LPLB_IPM = 0, TSIM_LPLB_EXACT = 1 };
enum { TSIM_LPLB_HISTORY_PREV = 0, TSIM_LPLB_HISTORY_NONE = 1, TSIM_LPLB_HISTORY_ORACLE = 2 };
enum { TSIM_LPLB_REHOME_NONE = 0, TSIM_LPLB_REHOME_EPLB = 1 };
enum { TSIM_EPLB_HISTORY_PREV = 0, TSIM_EPLB_HISTORY_ORACLE = 1, TSIM_EPLB_HISTORY_NONE = 2 };

typedef struct {
    int phase3;          /* TSIM_TAOT_AUCTION (default) or TSIM_TAOT_SPLIT */
    bool flow_hint;      /* Phase-1 Tn term in the score (default on) */
    bool comm_cost;      /* Phase-2 B term in the score (default on) */
    int iters;           /* Sinkhorn rounds (50) */
    double self_bonus;   /* auction bonus for the guest's own tokens (0) */
    int auction_rounds;  /* auction round cap (300) */
    int device;          /* TSIM_DEVICE_CPU (default) or TSIM_DEVICE_GPU */
} tsim_taot_options;

typedef struct {
    double alpha;        /* capacity factor (1.0) */
    int64_t min_chunk;   /* minimum piece m (1024) */
    double threshold;    /* activation threshold; 0 = off (default) */
} tsim_llep_options;

#define TSIM_LPLB_GRAPH_MAX 32
typedef struct {
    char graph[TSIM_LPLB_GRAPH_MAX]; /* auto, cube8, hypercube16, torus:MxN, ring8 */
    int solver;          /* TSIM_LPLB_IPM (default) or TSIM_LPLB_EXACT */
    int history;         /* TSIM_LPLB_HISTORY_* (prev default) */
    int rehome;          /* TSIM_LPLB_REHOME_NONE (default) or _EPLB: re-home with EPLB first (eplb.md 4) */
} tsim_lplb_options;

/* DeepSeek EPLB (eplb.md section 3); K is the common --slots. */
typedef struct {
    int groups;          /* EPLB's num_groups (1) */
    int history;         /* TSIM_EPLB_HISTORY_* (prev default) */
    int interval;        /* records of a layer between recomputations under prev (8) */
} tsim_eplb_options;

/* FasterMoE dynamic shadowing cost model, per token / per expert, in
 * microseconds (only their ratios matter). */
typedef struct {
    double comp_us;      /* compute one token of one expert (0.063) */
    double feat_us;      /* send one token's features to another rank (0.02) */
    double model_us;     /* send one expert's weights (shadow) to every rank (380) */
} tsim_fastermoe_options;

/* The `optimal` MIP yardstick. */
typedef struct {
    double mu;           /* weight of the weighted cost against imbalance (0.001) */
    int node_limit;      /* branch-and-bound subproblems per record (20000); deterministic, unlike a clock */
} tsim_optimal_options;

/* Every planner's options in one place: common ones plus one block per planner.
 * A planner reads its own block and ignores the others. */
typedef struct {
    double lambda_plan;  /* what a topology-aware planner believes (3) */
    tsim_taot_options taot;
    tsim_llep_options llep;
    tsim_lplb_options lplb;
    tsim_eplb_options eplb;
    tsim_fastermoe_options fastermoe;
    tsim_optimal_options optimal;
    /* An external planner's configuration (command or plugin, its options),
     * owned by the CLI layer that resolved its `exec:`/`plugin:` name; NULL
     * for every built-in planner. */
    const void *external;
} tsim_planner_options;




/* One planner option, as its descriptor lists it: everything the CLI parser,
 * --help, labelled planners and the every-planner tests need. The value lives
 * at `offset` in tsim_planner_options. */
typedef enum {
    TSIM_OPTION_DOUBLE, /* double in [lo, hi] */
    TSIM_OPTION_INT,    /* int in [lo, hi] */
    TSIM_OPTION_INT64,  /* int64_t in [lo, hi] */
    TSIM_OPTION_CHOICE, /* int: the index of the value in `choices` ("auction|split") */
    TSIM_OPTION_STRING, /* char[size] */
    TSIM_OPTION_CLEAR,  /* a flag without a value: sets a bool (default true) to false */
} tsim_option_type;

typedef struct {
    const char *name;    /* CLI name without dashes, prefixed by the planner: "taot-iters" */
    tsim_option_type type;
    size_t offset;       /* into tsim_planner_options */
    size_t size;         /* TSIM_OPTION_STRING: the buffer's size */
    double lo, hi;       /* numbers: the accepted range */
    const char *choices; /* TSIM_OPTION_CHOICE: values separated by '|' */
    const char *arg;     /* the value's name in --help ("N", "X"); NULL for flags */
    const char *def;     /* the default, as typed on the command line; NULL for flags */
    const char *help;    /* one line; "(default ...)" is added unless it says it */
} tsim_option_spec;

/* Options every planner may read (--lambda-plan), NULL-name terminated. */
extern const tsim_option_spec tsim_planner_common_options[];

/* Sets the option described by spec from its command-line text (NULL for a
 * flag). Messages name the option ("--taot-iters: ..."). */
int tsim_option_apply(const tsim_option_spec *spec, void *options, const char *value, tsim_error *err);
/* Writes spec's --help line. */
void tsim_option_help_line(const tsim_option_spec *spec, FILE *out);

typedef struct tsim_planner_desc {
    const char *name;
    const char *summary; /* one line for --help */
    /* Its options (NULL-name terminated; NULL when it has none). Parsing,
     * defaults, --help and labelled planners all come from this table. */
    const tsim_option_spec *options;
    /* Allocates state and all scratch for this topology. */
    int (*init)(void **state, const tsim_topology *topo, const tsim_planner_options *opts, tsim_error *err);
    /* Plans one record into out (reset by the callee). No allocation except
     * plan growth for planners without a slot limit. */
    int (*plan)(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err);
    void (*free)(void *state);
    /* Optional: true (with a reason) when the planner runs somewhere other
     * than asked, e.g. TAOT on the CPU because no GPU answered. The CLI says
     * so once. */
    bool (*fell_back)(const void *state, char *why, size_t n);
    /* Optional: one line worth telling the user about this configured
     * planner (e.g. which graph LPLB's `auto` chose); false when none. */
    bool (*note)(const void *state, char *line, size_t n);
    /* Optional: plans n records at once into plans[0..n-1] (initialised by the
     * caller), with results identical to n calls of plan. Planners that gain
     * from batches (TAOT on the GPU) set it; callers fall back to plan. */
    int (*plan_batch)(void *state, const tsim_record *const *recs, int n, tsim_plan *plans, tsim_error *err);
    /* Optional, for planners with memory across records (test vectors with a
     * history): seeds a layer as if its earlier records had been planned.
     * history[E] is what the layer's next record takes as its history (NULL:
     * none); placement[E] the placement in force (NULL: the static map). */
    int (*prime)(void *state, int64_t layer, const int64_t *history, const int32_t *placement, tsim_error *err);
    /* Optional: how many records this configured planner wants per
     * plan_batch call (an external planner's pipelining window). Absent or
     * <= 1: sessions give it one record at a time, as before. */
    int (*window)(const void *state);
    /* Its plans come from outside taotsim (a process or a plugin): a plan the
     * evaluator rejects is an input error (exit 2), not a bug (exit 3). */
    bool external;
    /* Optional, for result files: option i of this configured planner that
     * lives outside tsim_planner_options (an external planner's own), as its
     * key and its value's text; false past the last. */
    bool (*given_option)(const tsim_planner_options *opts, int i, const char **key, char *value, size_t n);
} tsim_planner_desc;


/* A configured planner: a registry entry, a label, its options and state. */
#define TSIM_LABEL_MAX 64
typedef struct {
    const tsim_planner_desc *desc;
    char label[TSIM_LABEL_MAX];
    tsim_planner_options opts;
    void *state;
} tsim_planner;

int tsim_planner_start(tsim_planner *p, const tsim_topology *topo, tsim_error *err);
void tsim_planner_stop(tsim_planner *p);




#endif
