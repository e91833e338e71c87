/* The planner interface and the registry (architecture.md): one small table of
 * function pointers per planner, registered by name. A planner owns its scratch
 * memory, allocated once in init and reused for every record. */
#ifndef TSIM_PLANNER_H
#define TSIM_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

/* Options every planner may read, whatever its own block holds. */
typedef struct {
    double lambda_plan;  /* what a topology-aware planner believes (3) */
    /* This planner's slot budget K; 0: the topology's (the command's --slots). */
    int slots;
    /* An external planner's configuration (command or plugin, its options),
     * owned by the CLI layer that resolved its `exec:`/`plugin:` name; NULL
     * for every built-in planner. */
    const void *external;
} tsim_planner_common;

/* A planner's own options live in a block of at most this many bytes, stored
 * inline in a configured planner (the registry checks options_size). */
#define TSIM_OPTIONS_BLOCK_MAX 512
typedef union {
    max_align_t align;
    unsigned char bytes[TSIM_OPTIONS_BLOCK_MAX];
} tsim_options_block;

/* One planner option, as its descriptor lists it: everything the CLI parser,
 * `taotsim planners`, labelled planners, JSON results and the every-planner
 * tests need. The value lives at `offset` in the planner's own options block
 * (tsim_planner_common for the common options). */
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
    size_t offset;       /* into the planner's own block */
    size_t size;         /* TSIM_OPTION_STRING: the buffer's size */
    double lo, hi;       /* numbers: the accepted range */
    const char *choices; /* TSIM_OPTION_CHOICE: values separated by '|' */
    const char *arg;     /* the value's name in --help ("N", "X"); NULL for flags */
    const char *def;     /* the default, as typed on the command line; NULL for flags */
    const char *help;    /* one line; "(default ...)" is added unless it says it */
    /* Not recorded in JSON options: it changes where a planner runs, never
     * its plans (taot-device), so plans dumped anywhere stay byte-identical. */
    bool not_recorded;
} tsim_option_spec;

/* Options every planner may read (--lambda-plan), NULL-name terminated;
 * offsets into tsim_planner_common. */
extern const tsim_option_spec tsim_planner_common_options[];

/* Sets the option described by spec from its command-line text (NULL for a
 * flag). Messages name the option ("--taot-iters: ..."). */
int tsim_option_apply(const tsim_option_spec *spec, void *options, const char *value, tsim_error *err);

/* One option's value: its table entry, the JSON key it is recorded under
 * ("taot-iters" of taot -> "iters", "taot-no-flow-hint" -> "flow_hint") and
 * where the value lives. */
typedef struct {
    const tsim_option_spec *spec;
    char key[64];
    const void *value;
    bool is_default;     /* equal to the table's default */
    bool common;         /* one of tsim_planner_common_options */
} tsim_option_value;

/* The JSON key of option spec of planner `planner`. */
void tsim_option_key(const char *planner, const tsim_option_spec *spec, char *key, size_t n);
/* The value's text as the command line would take it ("auction", "50"); for
 * a flag "true" or "false" (true: not given). */
void tsim_option_value_text(const tsim_option_value *v, char *out, size_t n);

typedef void (*tsim_option_visit)(const tsim_option_value *v, void *ctx);

/* What a planner remembers between records: sessions, -j, shards and merge
 * read it rather than guessing. */
typedef enum {
    TSIM_STATE_NONE = 0,     /* stateless: every record alone */
    TSIM_STATE_WINDOW,       /* the last state_window records of the record's layer */
    TSIM_STATE_LAYER_PREFIX, /* every earlier record of the layer (layouts that chain) */
    TSIM_STATE_EVERY_RECORD, /* every record, in order, whatever its layer */
} tsim_state_contract;

/* How much a record costs to plan: bench and the studies' defaults leave
 * expensive planners out unless asked. */
typedef enum {
    TSIM_COST_CHEAP = 0,
    TSIM_COST_EXPENSIVE,
} tsim_cost_class;

typedef struct tsim_planner_desc {
    const char *name;
    const char *summary; /* one line for --help */
    const char *source;  /* the paper or system it follows, with its version */
    /* Its options (NULL-name terminated; NULL when it has none), with offsets
     * into its own block of options_size bytes. Parsing, defaults, `taotsim
     * planners`, labelled planners and JSON options all come from this table. */
    const tsim_option_spec *options;
    size_t options_size;
    tsim_state_contract state;
    int state_window;    /* TSIM_STATE_WINDOW: how many records */
    tsim_cost_class cost;
    /* Optional: the slot budget this planner runs at on topo, where its
     * algorithm fixes one. asked is the planner's explicit --slots (0: none
     * given): the rule either takes it, or refuses it naming the K it needs.
     * Absent: the planner runs at the command's --slots or its own. */
    int (*slots_rule)(const tsim_topology *topo, int asked, int *k, tsim_error *err);
    const char *slots_help; /* one line for `taotsim planners` when slots_rule is set */
    /* Allocates state and all scratch for this topology. own is the planner's
     * block (options_size bytes, defaults from its table, then overrides). */
    int (*init)(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                tsim_error *err);
    /* Plans one record into out (reset by the callee). No allocation except
     * plan growth for planners without a slot limit. */
    int (*plan)(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err);
    void (*free)(void *state);
    /* Optional: true (with a reason) when the planner runs somewhere other
     * than asked, e.g. TAOT on the CPU because no GPU answered. The CLI says
     * so once. */
    bool (*fell_back)(const void *state, char *why, size_t n);
    /* Optional: one line worth telling the user about this configured
     * planner (e.g. a choice its options left to it); false when none. */
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
    /* Optional, for planners whose history is a window of records and a
     * layout (trtllm, swift): window holds n rows of E counts, oldest first;
     * layout (NULL: the initial one) and placement (NULL: the static map)
     * are in force. */
    int (*prime_window)(void *state, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                        const int32_t *placement, tsim_error *err);
    /* Optional: how many records this configured planner wants per
     * plan_batch call (an external planner's pipelining window). Absent or
     * <= 1: sessions give it one record at a time, as before. */
    int (*window)(const void *state);
    /* Its plans come from outside taotsim (a process or a plugin): a plan the
     * evaluator rejects is an input error (exit 2), not a bug (exit 3). */
    bool external;
    /* It reads lambda_plan (recorded in its JSON options). */
    bool reads_lambda_plan;
    /* Its copies' weights come from host memory, not from another GPU
     * (TensorRT-LLM's HostMemoryMoeWeightUpdater): --traffic shows them as
     * host traffic per rank. */
    bool weights_from_host;
    /* Optional, for planners whose table is not static (plugins): calls fn
     * for each of this configured planner's options. */
    void (*options_each)(const tsim_planner_common *common, tsim_option_visit fn, void *ctx);
} tsim_planner_desc;


/* A configured planner: a registry entry, a label, its options and state. */
#define TSIM_LABEL_MAX 64
typedef struct {
    const tsim_planner_desc *desc;
    char label[TSIM_LABEL_MAX];
    tsim_planner_common common;
    tsim_options_block own; /* desc->options_size bytes used */
    void *state;
} tsim_planner;

int tsim_planner_start(tsim_planner *p, const tsim_topology *topo, tsim_error *err);
void tsim_planner_stop(tsim_planner *p);

/* The slot budget K configured planner p runs at on topo (whose slots is the
 * command's --slots): the descriptor's slots_rule when it has one (given p's
 * own --slots=K, or 0), else p's own --slots=K, else topo->slots. */
int tsim_planner_slots(const tsim_planner *p, const tsim_topology *topo, int *k, tsim_error *err);

/* Sets every option of table in block to its default (flags: true). */
void tsim_option_table_defaults(const tsim_option_spec *table, void *block);

/* Calls fn for every option of p: the common ones, then its own table in
 * order. External planners list theirs through
 * desc->options_each. */
void tsim_planner_options_each(const tsim_planner *p, tsim_option_visit fn, void *ctx);
/* Calls fn for option o of a planner called planner (the prefix its key
 * drops), whose value lives in block. */
void tsim_option_visit_one(const char *planner, const tsim_option_spec *o, const void *block, tsim_option_visit fn,
                           void *ctx);




#endif
