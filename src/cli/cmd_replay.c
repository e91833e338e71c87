/* `taotsim replay` and `taotsim vector`. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "evaluate.h"
#include "external.h"
#include "gates.h"
#include "options.h"
#include "failif.h"
#include "merge.h"
#include "outfile.h"
#include "parse.h"
#include "planner.h"
#include "registry.h"
#include "replay_output.h"
#include "replay_traffic.h"
#include "shard_cli.h"
#include "report.h"
#include "session.h"
#include "study.h"
#include "trace.h"
#include "trace_index.h"
#include "vector.h"

#define DEFAULT_PLANNERS "taot,echo,llep,lplb"
#define MAX_PLANNERS 32

static void replay_help(void)
{
    printf("usage: taotsim replay FILE [options] [planner options]\n"
           "\n"
           "Runs planners over every record of a trace (.json, .jsonl, .jsonl.gz, .csv,\n"
           ".csv.gz, .npy, .npz, .pt, .safetensors, or a directory of Megatron router\n"
           "traces, per-rank .pt/.npz files or TensorRT-LLM expert statistics; see\n"
           "docs/import.md) and prints the metrics of model.md per planner (means; JSON\n"
           "adds std, min, p50, p95, max).\n"
           "\n"
           "Options:\n"
           "  --planners LIST      comma-separated planners (default " DEFAULT_PLANNERS ");\n"
           "                       LABEL=NAME:--opt=v:--flag runs a planner under a label\n"
           "                       with its own options, e.g. taot-split=taot:--taot-phase3=split\n"
           "  --slots K            guest slots per rank (default 2)\n"
           "  --lambda-eval X      lambda the evaluator charges (default 3)\n"
           "  --lambda X           set both --lambda-plan and --lambda-eval\n"
           "  --ep N               replay at another EP size (rebucketing; needed for\n"
           "                       per-expert totals: CSV without a rank column, [L,E] and\n"
           "                       [T,L,E] arrays)\n"
           "  --rpn N              ranks per node: divides the EP size, or is at least it\n"
           "                       (default: the trace's; imports: 8, with a warning)\n"
           "  --dataset NAME       CSV: only rows of this dataset\n"
           "  --block decoder|mtp  Megatron router traces: which block (default decoder)\n"
           "  --experts N          Megatron router traces: number of experts (default: from the ids)\n"
           "  --tensor NAME        safetensors: the tensor to read (default counts)\n"
           "  --array NAME         .npz: the array to read (default: the only one)\n"
           "  --megatron-parallel tp=T,pp=P,ep=E[,cp=C][,etp=ET][,order=O][,tokens=split|same]\n"
           "                       Megatron router traces: the parallel layout (default:\n"
           "                       all files one EP group; see docs/import.md)\n"
           "  --num-layers N       with --megatron-parallel: the model's layers\n"
           "  --ep-group N         with --megatron-parallel: read expert DP group N only\n"
           "                       (default: every group, tagged ep-group-N)\n"
           "  --per-record         also print every record's metrics\n"
           "  --dump-plans FILE    write every plan as a JSON line (vector format, \"got\")\n"
           "  --timing             measure plan_ns (wall time: output no longer reproducible)\n"
           "  --step-model         add the step-time model's step_ms and speedup (see below)\n"
           "  --bounds             add excess_imbalance and excess_cost: each plan against\n"
           "                       proven lower bounds at its own K (LPs: slow; n/a for\n"
           "                       planners without a slot limit or that re-home experts)\n"
           "  --capacity-factor C  capacity-limited dispatch: a rank computes at most\n"
           "                       floor(C x the record's mean load over ranks) tokens; the\n"
           "                       rest count as dropped_before/_after (C > 0)\n"
           "  --by-layer           also break every metric down per layer (tables, CSV,\n"
           "                       JSON \"layers\"; 'taotsim plot' draws replay_layers;\n"
           "                       --fail-if names layerL.PLANNER.METRIC.STAT)\n"
           "  --fail-if EXPR       exit 1 when EXPR holds, e.g. 'taot.rho_after.p95 > 0.05'\n"
           "                       (names PLANNER.METRIC.STAT; repeatable)\n"
           "  --format md|csv|json output format (default md)\n"
           "  -o, --output FILE    write the result to FILE atomically (default stdout)\n"
           "  -j, --jobs N         N threads (default 1) plan, and parse .jsonl(.gz) records\n"
           "                       when idle; the same bytes for any N\n"
           "                       (JSON: all but \"command\", the command line as typed)\n"
           "  --shard I/N          run shard I (from 0) of N and write its partial result (JSON)\n"
           "                       for 'taotsim merge'; see below\n");
    fputs(TSIM_RX_HELP, stdout);
    printf("  -h, --help           this help\n"
           "\n"
           "Memory stays flat on long traces: past %d records (unless --per-record\n"
           "is given) the metrics are summarised as they stream by. mean, std, min\n"
           "and max stay exact; p50 and p95 then come from a histogram and are\n"
           "within 1%% of the exact value (exact for small integers).\n"
           "\n"
           "--shard I/N: shard I plans the I-th of N contiguous record ranges with the\n"
           "planners that remember nothing between records, and whole layers with those\n"
           "that do (LPLB's prev history, EPLB's window: layer d goes to shard\n"
           "(d + planner) mod N), so every plan is the unsharded one. With an index beside\n"
           "a .jsonl(.gz) trace ('taotsim index TRACE') it reads only its range (all of\n"
           "it for whole layers) and checks those blocks against the index (stale: exit\n"
           "2); without one it reads the whole trace twice (a count, then the records).\n"
           "'taotsim merge' then prints the same bytes\n"
           "as one run (JSON: all but \"command\") when the run keeps per-record values (up\n"
           "to %d records, or --per-record); beyond, mean and std may differ in the last\n"
           "digits.\n"
           "\n",
           TSIM_SESSION_EXACT_RECORDS, TSIM_SESSION_EXACT_RECORDS);
    tsim_cli_planners_help(stdout);
    tsim_external_help(stdout);
    fputs("\n" TSIM_STEP_MODEL_HELP, stdout);
}

typedef struct {
    tsim_outfile dump;
    bool dumping;
    const char *trace_path;
    const int32_t *home; /* the trace's explicit home map, or NULL */
    tsim_replay_extras *extras; /* --traffic, --export-layout */
} replay_hook_ctx;

static int dump_hook(void *ctx_, tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                     const tsim_metrics *m, tsim_error *err)
{
    replay_hook_ctx *ctx = ctx_;
    int rc = tsim_replay_extras_plan(ctx->extras, s, planner, rec, plan, err);
    if (rc || !ctx->dumping)
        return rc;
    const tsim_planner *p = &s->planners[planner];
    char name[160];
    snprintf(name, sizeof name, "record-%lld", (long long)rec->index);
    cJSON *opts = tsim_vector_options_json(p, s->ptopo[planner].slots, s->topo.ranks_per_node);
    /* Self-contained, as the vector format asks: the counts (and an explicit
     * home map) travel with the plan, so it can be checked without the trace. */
    cJSON *j = tsim_vector_plan_json(name, p->desc->name, opts, rec, plan, s->ev.load_after, m, true);
    if (!j)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (ctx->home) {
        cJSON *home = cJSON_CreateArray();
        for (int e = 0; home && e < rec->experts; e++)
            cJSON_AddItemToArray(home, cJSON_CreateNumber(ctx->home[e]));
        if (!home) {
            cJSON_Delete(j);
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        }
        cJSON_AddItemToObject(j, "home", home);
    }
    cJSON_AddStringToObject(j, "label", p->label);
    cJSON_AddNumberToObject(j, "record", (double)rec->index);
    cJSON_AddNumberToObject(j, "microbatch", (double)rec->microbatch);
    cJSON_AddNumberToObject(j, "layer", (double)rec->layer);
    char *line = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!line)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    fputs(line, ctx->dump.fp);
    fputc('\n', ctx->dump.fp);
    free(line);
    /* a full disk stops the replay at once rather than at the end */
    if (ferror(ctx->dump.fp))
        return tsim_outfile_flush(&ctx->dump, err);
    return TSIM_OK;
}

/* --fail-if over a replay: names PLANNER.METRIC.STAT, and with --by-layer
 * layerL.PLANNER.METRIC.STAT. */
static int check_gates(const tsim_session *s, const char *const *gates, int n)
{
    if (n == 0)
        return TSIM_OK;
    tsim_study study = {0}; /* freed on every path, even before a study is made */
    tsim_study_init(&study, "replay");
    for (int p = 0; p < s->n_planners; p++) {
        tsim_study_row *row = tsim_study_add(&study);
        if (row)
            tsim_study_row_from_session(row, s, p);
    }
    for (int p = 0; p < s->n_planners && s->by_layer; p++) /* "layerL.PLANNER.METRIC.STAT" */
        for (int l = 0; l < s->results[p].n_layers; l++) {
            tsim_study_row *row = tsim_study_add(&study);
            if (row)
                tsim_study_row_from_layer(row, s, p, l);
        }
    int status = tsim_cli_check_gates(&study, gates, n, "replay", stderr);
    tsim_study_free(&study);
    return status;
}

enum {
    OPT_PLANNERS = 1, OPT_SLOTS, OPT_LAMBDA_EVAL, OPT_LAMBDA, OPT_EP, OPT_RPN, OPT_RANKS_PER_NODE, OPT_DATASET,
    OPT_PER_RECORD, OPT_TIMING, OPT_STEP_MODEL, OPT_BOUNDS, OPT_FAIL_IF, OPT_DUMP_PLANS, OPT_FORMAT, OPT_OUTPUT,
    OPT_BLOCK, OPT_EXPERTS, OPT_TENSOR, OPT_JOBS, OPT_SHARD, OPT_ARRAY, OPT_MEGATRON, OPT_NUM_LAYERS, OPT_EP_GROUP,
    OPT_CAPACITY_FACTOR, OPT_BY_LAYER,
};

static const tsim_cli_option replay_options[] = {
    {"planners", 0, true, OPT_PLANNERS},
    {"slots", 0, true, OPT_SLOTS},
    {"lambda-eval", 0, true, OPT_LAMBDA_EVAL},
    {"lambda", 0, true, OPT_LAMBDA},
    {"ep", 0, true, OPT_EP},
    {"rpn", 0, true, OPT_RPN},
    {"ranks-per-node", 0, true, OPT_RANKS_PER_NODE},
    {"dataset", 0, true, OPT_DATASET},
    {"per-record", 0, false, OPT_PER_RECORD},
    {"timing", 0, false, OPT_TIMING},
    {"step-model", 0, false, OPT_STEP_MODEL},
    {"bounds", 0, false, OPT_BOUNDS},
    {"fail-if", 0, true, OPT_FAIL_IF},
    {"dump-plans", 0, true, OPT_DUMP_PLANS},
    {"format", 0, true, OPT_FORMAT},
    {"output", 'o', true, OPT_OUTPUT},
    {"block", 0, true, OPT_BLOCK},
    {"experts", 0, true, OPT_EXPERTS},
    {"tensor", 0, true, OPT_TENSOR},
    {"array", 0, true, OPT_ARRAY},
    {"megatron-parallel", 0, true, OPT_MEGATRON},
    {"num-layers", 0, true, OPT_NUM_LAYERS},
    {"ep-group", 0, true, OPT_EP_GROUP},
    {"jobs", 'j', true, OPT_JOBS},
    {"shard", 0, true, OPT_SHARD},
    TSIM_RX_OPTIONS,
    {"capacity-factor", 0, true, OPT_CAPACITY_FACTOR},
    {"by-layer", 0, false, OPT_BY_LAYER},
    {0},
};

/* Everything replay's command line sets. */
typedef struct {
    tsim_planner_options base;
    const char *path, *planners_arg, *out_path, *dump_path;
    bool planners_given;
    const char *gates[32];
    int n_gates;
    tsim_read_options ropts;
    tsim_replay_output_options oo;
    int slots;
    double lambda_eval;
    bool timing, step_model_on, bounds;
    double capacity_factor; /* 0: no capacity limit */
    bool by_layer;
    tsim_step_model step_model;
    int jobs;
    tsim_shard shard;
    bool format_given;
    tsim_replay_extras extras;
} replay_args;

static int replay_option(void *ctx, int id, const char *val, tsim_error *err)
{
    replay_args *a = ctx;
    switch (id) {
    case OPT_PLANNERS:
        a->planners_arg = val;
        a->planners_given = true;
        return TSIM_OK;
    case OPT_SLOTS:
        return tsim_parse_int(val, 0, 1024, &a->slots, "--slots", err);
    case OPT_LAMBDA_EVAL:
        return tsim_parse_double(val, 0, 1e9, &a->lambda_eval, "--lambda-eval", err);
    case OPT_LAMBDA: {
        int rc = tsim_parse_double(val, 1e-9, 1e9, &a->lambda_eval, "--lambda", err);
        a->base.common.lambda_plan = a->lambda_eval;
        return rc;
    }
    case OPT_EP:
        return tsim_parse_int(val, 1, 4096, &a->ropts.ep, "--ep", err);
    case OPT_RPN:
    case OPT_RANKS_PER_NODE:
        return tsim_parse_int(val, 1, 4096, &a->ropts.ranks_per_node, "--rpn", err);
    case OPT_DATASET:
        a->ropts.dataset = val;
        return TSIM_OK;
    case OPT_PER_RECORD:
        a->oo.per_record = true;
        return TSIM_OK;
    case OPT_TIMING:
        a->timing = true;
        return TSIM_OK;
    case OPT_STEP_MODEL:
        a->step_model_on = true;
        return TSIM_OK;
    case OPT_BOUNDS:
        a->bounds = true;
        return TSIM_OK;
    case OPT_CAPACITY_FACTOR:
        return tsim_parse_double(val, 1e-6, 1e6, &a->capacity_factor, "--capacity-factor", err);
    case OPT_BY_LAYER:
        a->by_layer = true;
        return TSIM_OK;
    case OPT_FAIL_IF:
        return tsim_cli_gate_add(a->gates, &a->n_gates, 32, val, err);
    case OPT_DUMP_PLANS:
        a->dump_path = val;
        return TSIM_OK;
    case OPT_FORMAT:
        a->format_given = true;
        return tsim_format_parse(val, &a->oo.format, err);
    case OPT_JOBS:
        return tsim_parse_int(val, 1, 1024, &a->jobs, "--jobs", err);
    case OPT_SHARD:
        return tsim_shard_parse(val, &a->shard, err);
    case OPT_OUTPUT:
        a->out_path = val;
        return TSIM_OK;
    /* Importers' options (docs/import.md); the reader rejects one that does
     * not apply to the trace's format. */
    case OPT_BLOCK:
        if (strcmp(val, "decoder") != 0 && strcmp(val, "mtp") != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "--block: expected decoder or mtp, got '%s'", val);
        a->ropts.block = val;
        return TSIM_OK;
    case OPT_EXPERTS:
        return tsim_parse_int(val, 1, TSIM_MAX_EXPERTS, &a->ropts.experts, "--experts", err);
    case OPT_TENSOR:
        a->ropts.tensor = val;
        return TSIM_OK;
    case OPT_ARRAY:
        a->ropts.array = val;
        return TSIM_OK;
    case TSIM_RX_TRAFFIC:
    case TSIM_RX_HIDDEN_BYTES:
    case TSIM_RX_EXPERT_MB:
    case TSIM_RX_TRAFFIC_OUT:
    case TSIM_RX_PLOTS:
    case TSIM_RX_PLOT_FORMAT:
    case TSIM_RX_EXPORT_LAYOUT:
    case TSIM_RX_EXPORT_FORMAT:
        return tsim_replay_extras_option(&a->extras, id, val, err);
    case OPT_MEGATRON:
        a->ropts.megatron_parallel = val;
        return TSIM_OK;
    case OPT_NUM_LAYERS:
        return tsim_parse_int(val, 1, 1 << 30, &a->ropts.num_layers, "--num-layers", err);
    case OPT_EP_GROUP:
        if (tsim_parse_int(val, 0, TSIM_MAX_RANKS - 1, &a->ropts.ep_group, "--ep-group", err))
            return TSIM_E_INPUT;
        a->ropts.ep_group++;
        return TSIM_OK;
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "replay: option %d has no handler", id);
    }
}

static int replay_positional(void *ctx, const char *arg, tsim_error *err)
{
    replay_args *a = ctx;
    if (a->path)
        return tsim_error_set(err, TSIM_E_INPUT, "one trace file only (got '%s' and '%s')", a->path, arg);
    a->path = arg;
    return TSIM_OK;
}

/* The reader's notes (skipped all-zero rows, Megatron stages) on stderr. */
static void print_reader_warnings(tsim_reader *r)
{
    const char *w;
    while ((w = tsim_reader_take_warning(r)))
        fprintf(stderr, "taotsim replay: warning: %s\n", w);
}

/* Parses a replay command line (argv[0] is "replay"). Returns 0,
 * TSIM_CLI_HELP, or 2 after printing the usage error. */
static int replay_parse(int argc, char **argv, replay_args *a)
{
    *a = (replay_args){.planners_arg = DEFAULT_PLANNERS, .oo = {.format = TSIM_FORMAT_MD}, .slots = 2,
                       .lambda_eval = 3.0, .jobs = 1};
    tsim_planner_options_default(&a->base);
    tsim_step_model_default(&a->step_model);
    tsim_replay_extras_default(&a->extras);
    const tsim_cli_parser parser = {
        .cmd = "replay", .options = replay_options, .planner = &a->base, .step_model = &a->step_model,
        .on_option = replay_option, .on_positional = replay_positional, .ctx = a,
    };
    return tsim_cli_parse(&parser, argc, argv);
}

int tsim_replay_config_parse(int argc, char **argv, tsim_replay_merge_config *out, tsim_error *err)
{
    replay_args a;
    int parsed = replay_parse(argc, argv, &a);
    if (parsed)
        return tsim_error_set(err, TSIM_E_INPUT, "the shards' command line does not parse (see above)");
    memset(out, 0, sizeof *out);
    if (tsim_planner_list_parse(a.planners_arg, &a.base, out->planners, TSIM_MERGE_PLANNERS_MAX, &out->n_planners,
                                err))
        return TSIM_E_INPUT;
    out->slots = a.slots;
    out->lambda_eval = a.lambda_eval;
    out->timing = a.timing;
    out->step_model_on = a.step_model_on;
    out->capacity_factor = a.capacity_factor;
    out->step_model = a.step_model;
    out->per_record = a.oo.per_record;
    out->planners_given = a.planners_given;
    return TSIM_OK;
}

/* Layers in order of first appearance (the dense numbers shards split
 * layers by), kept sorted by layer id for lookup. */
typedef struct {
    int64_t *layer, *dense;
    int64_t n, cap;
} layer_order;

static int64_t layer_order_find(const layer_order *lo, int64_t layer)
{
    int64_t a = 0, b = lo->n;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (lo->layer[mid] < layer)
            a = mid + 1;
        else
            b = mid;
    }
    return a < lo->n && lo->layer[a] == layer ? a : -a - 1;
}

static int layer_order_add(layer_order *lo, int64_t layer, tsim_error *err)
{
    int64_t at = layer_order_find(lo, layer);
    if (at >= 0)
        return TSIM_OK;
    at = -at - 1;
    if (lo->n == lo->cap) {
        int64_t cap = lo->cap ? 2 * lo->cap : 64;
        int64_t *l = realloc(lo->layer, sizeof *l * (size_t)cap);
        if (l)
            lo->layer = l;
        int64_t *d = l ? realloc(lo->dense, sizeof *d * (size_t)cap) : NULL;
        if (!d)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the trace's layers");
        lo->dense = d;
        lo->cap = cap;
    }
    memmove(lo->layer + at + 1, lo->layer + at, sizeof *lo->layer * (size_t)(lo->n - at));
    memmove(lo->dense + at + 1, lo->dense + at, sizeof *lo->dense * (size_t)(lo->n - at));
    lo->layer[at] = layer;
    lo->dense[at] = lo->n;
    lo->n++;
    return TSIM_OK;
}

/* A shard's first pass: the records in the trace, its layers' order, and
 * which trace it is (a hash of every record, and the file's size). */
static int count_records(const char *path, const tsim_read_options *ropts, int64_t *total, layer_order *lo,
                         tsim_trace_digest *digest, int64_t *bytes, tsim_error *err)
{
    tsim_reader *r;
    int rc = tsim_reader_open(&r, path, ropts, err);
    if (rc)
        return rc;
    tsim_progress progress;
    tsim_progress_start(&progress, "replay (counting records)");
    tsim_trace_digest_init(digest);
    for (;;) {
        const tsim_record *rec;
        int got = tsim_reader_next(r, &rec, err);
        if (got == 0)
            break;
        if (got != 1) {
            rc = got < 0 ? TSIM_E_INPUT : got;
            break;
        }
        if ((rc = layer_order_add(lo, rec->layer, err)))
            break;
        tsim_trace_digest_add(digest, rec);
        int64_t done_bytes, total_bytes;
        tsim_reader_progress(r, &done_bytes, &total_bytes);
        tsim_progress_update(&progress, done_bytes, total_bytes);
        /* warnings come out once, in the pass that plans */
        while (tsim_reader_take_warning(r))
            ;
    }
    tsim_progress_finish(&progress);
    *total = tsim_reader_count(r);
    int64_t done_bytes;
    tsim_reader_progress(r, &done_bytes, bytes);
    tsim_reader_close(r);
    return rc;
}

/* One replay, from its parsed command line to its output. */
typedef struct {
    replay_args a;
    char **id_argv; /* the command line as typed (tsim_argv_identity), for a shard's partial result */
    int id_argc;
    bool sharded;
    tsim_planner planners[MAX_PLANNERS];
    int n_planners;
    /* a shard's first pass (count_records) */
    layer_order layers;
    int64_t total, trace_bytes;
    tsim_trace_digest digest;
    tsim_trace_index ix; /* the trace's index, when a shard uses it */
    bool indexed;
    bool whole_trace;  /* some planner takes whole layers: a shard reads every record */
    int64_t first_seq; /* the first record read (an indexed shard starts at its range) */
    bool keep_values; /* a shard keeps its per-record values */
    tsim_reader *reader;
    const tsim_trace_header *h;
    tsim_session s;
    bool session_ready;
    replay_hook_ctx hctx;
    tsim_outfile out;
    tsim_session_jobs *jobs;
    tsim_error err;
} replay_run;

/* A shard of a JSON Lines trace with an index (TRACE.tsidx) takes its record
 * count, layers and records' hash from it instead of reading the whole trace
 * first. Without one it reads as before and says an index would help; with
 * --dataset or --ep (records other than the index's) the index is not used.
 * A damaged index is an error (exit 2). */
static int shard_index(replay_run *x)
{
    const replay_args *a = &x->a;
    tsim_trace_format fmt;
    tsim_error ignored;
    if (tsim_trace_format_from_path(a->path, &fmt, &ignored) || (fmt != TSIM_FMT_JSONL && fmt != TSIM_FMT_JSONL_GZ))
        return TSIM_OK;
    bool found;
    int rc = tsim_index_find(a->path, &x->ix, &found, &x->err);
    if (rc || !found) {
        if (!rc && a->shard.count > 1) /* one shard reads everything anyway */
            fprintf(stderr,
                    "taotsim replay: note: %s has no index, so this shard reads the whole trace (twice); 'taotsim "
                    "index %s' lets each shard read only its own records\n",
                    a->path, a->path);
        return rc;
    }
    if (a->ropts.dataset || a->ropts.ep > 0) {
        fprintf(stderr, "taotsim replay: note: the index of %s is not used with --dataset or --ep: this shard reads "
                        "the whole trace\n", a->path);
        tsim_index_free(&x->ix);
        return TSIM_OK;
    }
    x->indexed = true;
    x->total = x->ix.records;
    x->digest = x->ix.digest;
    x->trace_bytes = x->ix.trace_bytes;
    for (int i = 0; i < x->ix.n_layers; i++)
        if ((rc = layer_order_add(&x->layers, x->ix.layers[i].layer, &x->err)))
            return rc;
    return TSIM_OK;
}

/* After the session: whether a planner takes whole layers (then a shard
 * reads every record), and an indexed shard's reader moved to its range,
 * the blocks it reads checked against the index (all of them when it reads
 * everything). */
/* An idle planning thread parses a line the reader has read ahead. */
static bool help_parse(void *reader)
{
    return tsim_reader_help(reader);
}

static int shard_seek(replay_run *x)
{
    for (int p = 0; p < x->s.n_planners; p++)
        x->whole_trace = x->whole_trace || tsim_planner_memory_of(x->s.planners[p].desc) != TSIM_MEMORY_NONE;
    if (!x->indexed)
        return TSIM_OK;
    if (x->whole_trace)
        return tsim_index_check_blocks(&x->ix, x->a.path, 0, x->ix.n_blocks - 1, &x->err);
    int64_t lo = 0, hi = 0;
    tsim_shard_range(x->total, x->a.shard, &lo, &hi);
    x->first_seq = lo;
    return tsim_index_seek_range(&x->ix, x->reader, x->a.path, lo, hi, &x->err);
}

/* Parse: the command line, and what its options rule out together. Returns
 * 0, TSIM_CLI_HELP, or 2 after printing the usage error. */
static int replay_parse_checked(int argc, char **argv, replay_args *a)
{
    int parsed = replay_parse(argc, argv, a);
    if (parsed)
        return parsed;
    if (!a->path)
        return tsim_cli_usage_error("replay", "missing trace FILE");
    if (a->shard.count > 0) {
        /* A shard's output is the partial result merge reads; what only the
         * whole result can say goes on the merge. */
        if (a->format_given && a->oo.format != TSIM_FORMAT_JSON)
            return tsim_cli_usage_error("replay", "--shard writes a partial result (JSON) for 'taotsim merge': "
                                                  "give --format md|csv to the merge");
        if (a->n_gates)
            return tsim_cli_usage_error("replay", "--fail-if goes on 'taotsim merge', which sees the whole result");
        if (a->dump_path)
            return tsim_cli_usage_error("replay", "--dump-plans does not combine with --shard");
        if (a->bounds) /* merge keeps no bound state: refuse rather than drop the metrics */
            return tsim_cli_usage_error("replay", "--bounds does not combine with --shard");
        if (a->by_layer)
            return tsim_cli_usage_error("replay", "--by-layer does not combine with --shard (the partial results "
                                                  "carry no per-layer summaries)");
    }
    tsim_error err = {0};
    if (tsim_replay_extras_check(&a->extras, a->shard.count > 0, &err))
        return tsim_cli_usage_error("replay", "%s", err.msg);
    return 0;
}

/* The session over the trace's topology. The default list runs on every
 * trace it can: when LPLB alone cannot (no graph fits, e.g. R = 1), it is
 * left out with one note. An explicit --planners lplb still fails with the
 * reason. */
static int replay_session_init(replay_run *x)
{
    const tsim_trace_header *h = x->h;
    int rc = tsim_session_init(&x->s, h->ep, h->experts, h->ranks_per_node, x->a.slots, h->home, x->planners,
                               x->n_planners, x->a.lambda_eval, &x->err);
    if (rc && !x->a.planners_given && strncmp(x->err.msg, "planner 'lplb'", 14) == 0) {
        fprintf(stderr, "taotsim replay: note: lplb left out of the default planners: %s\n", x->err.msg);
        int kept = 0;
        for (int i = 0; i < x->n_planners; i++)
            if (strcmp(x->planners[i].label, "lplb") != 0)
                x->planners[kept++] = x->planners[i];
        x->n_planners = kept;
        x->err = (tsim_error){0};
        rc = tsim_session_init(&x->s, h->ep, h->experts, h->ranks_per_node, x->a.slots, h->home, x->planners,
                               x->n_planners, x->a.lambda_eval, &x->err);
    }
    x->session_ready = rc == TSIM_OK;
    return rc;
}

/* Set up: the planners, the outputs checked, a shard's first pass, the reader,
 * the session, --dump-plans and the -j workers. Returns 0 or the exit status
 * after printing the error. */
static int replay_setup(replay_run *x)
{
    const char *cmd = "replay";
    replay_args *a = &x->a;
    if (tsim_planner_list_parse(a->planners_arg, &a->base, x->planners, MAX_PLANNERS, &x->n_planners, &x->err))
        return tsim_cli_usage_error(cmd, "%s", x->err.msg);
    /* Outputs are checked before any work: each one writable, none the same
     * file as the trace or as the other. */
    const char *outputs[4] = {a->out_path, a->dump_path};
    const char *flags[4] = {"-o", "--dump-plans"};
    const int n_out = 2 + tsim_replay_extras_outputs(&a->extras, outputs + 2, flags + 2);
    for (int i = 0; i < n_out; i++)
        if (tsim_outfile_check_writable(outputs[i], &x->err))
            return tsim_cli_fail(cmd, &x->err);
    if (tsim_outfile_check_distinct(outputs, flags, n_out, &a->path, 1, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    /* A shard needs the record count for its range, and the layers' order
     * for the planners that take whole layers. */
    if (x->sharded && (shard_index(x) ||
                       (!x->indexed && count_records(a->path, &a->ropts, &x->total, &x->layers, &x->digest,
                                                     &x->trace_bytes, &x->err))))
        return tsim_cli_fail(cmd, &x->err);
    if (tsim_reader_open(&x->reader, a->path, &a->ropts, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    x->h = tsim_reader_header(x->reader);
    if (tsim_reader_rebucketed(x->reader))
        fprintf(stderr, "taotsim replay: %s: rebucketed to EP %d (per-expert totals kept, sources split evenly)\n",
                a->path, x->h->ep);
    print_reader_warnings(x->reader);
    if (replay_session_init(x))
        return tsim_cli_fail(cmd, &x->err);
    tsim_session *s = &x->s;
    tsim_cli_report_fallbacks(s->planners, s->n_planners, stderr);
    s->timing = a->timing;
    s->step_model_on = a->step_model_on;
    s->step_model = a->step_model;
    if (a->bounds && tsim_session_enable_bounds(s, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    s->capacity_factor = a->capacity_factor;
    s->by_layer = a->by_layer;
    s->keep_ids = a->oo.per_record;
    /* A shard keeps its per-record values when the whole run would, so the
     * merge can put them back in record order. */
    x->keep_values = a->oo.per_record || x->total <= TSIM_SESSION_EXACT_RECORDS;
    s->keep_indices = x->sharded && x->keep_values;
    /* Flat memory however long the trace: past TSIM_SESSION_EXACT_RECORDS
     * records (and without --per-record) the metric series switch to the
     * bounded summary of stats.h; shorter replays keep every value and print
     * exactly what they always did. */
    tsim_session_bound_memory(s, TSIM_SESSION_EXACT_RECORDS);
    s->pipeline = true; /* external planners get --exec-window records in flight; drained below */
    x->hctx = (replay_hook_ctx){.trace_path = a->path, .home = x->h->home, .extras = &a->extras};
    if (tsim_replay_extras_start(&a->extras, s, &x->err)) {
        if (x->err.code == TSIM_E_INPUT && a->extras.export_path && a->extras.export_planner < 0)
            return tsim_cli_usage_error(cmd, "%s", x->err.msg);
        return tsim_cli_fail(cmd, &x->err);
    }
    if (a->dump_path) {
        if (tsim_outfile_open(&x->hctx.dump, a->dump_path, &x->err))
            return tsim_cli_fail(cmd, &x->err);
        x->hctx.dumping = true;
    }
    s->hook = dump_hook;
    s->hook_ctx = &x->hctx;
    if (shard_seek(x))
        return tsim_cli_fail(cmd, &x->err);
    /* -j N: JSON Lines records are read ahead and the N - 1 planning threads
     * parse them whenever no planning task waits (no more threads than -j) */
    if (a->jobs > 1 && tsim_reader_share_parsing(x->reader, a->jobs - 1, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    /* -j and shards plan through the threaded path (one thread with -j 1). */
    if ((a->jobs > 1 || x->sharded) && tsim_session_jobs_start(&x->jobs, s, a->jobs, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    if (x->jobs) {
        tsim_session_jobs_skip(x->jobs, x->first_seq);
        tsim_session_jobs_set_idle(x->jobs, help_parse, x->reader);
    }
    return 0;
}

/* Run: every record (a shard's, or all) through the planners, then every
 * exec planner drained. Returns 0 or the exit status after the error. */
static int replay_records(replay_run *x)
{
    const char *cmd = "replay";
    tsim_session *s = &x->s;
    tsim_planner_memory memory[MAX_PLANNERS];
    bool want[MAX_PLANNERS];
    const bool whole_trace = x->whole_trace;
    for (int p = 0; p < s->n_planners; p++)
        memory[p] = tsim_planner_memory_of(s->planners[p].desc);
    const tsim_shard shard = x->a.shard;
    int64_t range_lo = 0, range_hi = 0;
    tsim_shard_range(x->total, shard, &range_lo, &range_hi);
    tsim_progress progress;
    tsim_progress_start(&progress, "replay");
    for (int64_t seq = x->first_seq;; seq++) {
        if (x->sharded && !whole_trace && seq >= range_hi)
            break; /* the rest is other shards' */
        const tsim_record *rec;
        int got = tsim_reader_next(x->reader, &rec, &x->err);
        if (got == 0)
            break;
        if (got < 0 || got > 1)
            return tsim_cli_fail(cmd, &x->err);
        if (x->sharded) {
            int64_t at = layer_order_find(&x->layers, rec->layer);
            if (at < 0 || seq >= x->total) {
                tsim_error_set(&x->err, TSIM_E_INPUT, "%s: the trace changed while it was read (record %lld)",
                               x->a.path, (long long)seq);
                return tsim_cli_fail(cmd, &x->err);
            }
            for (int p = 0; p < s->n_planners; p++)
                want[p] = tsim_shard_owner(memory[p], p, x->layers.dense[at], seq, x->total, shard.count) ==
                          shard.index;
        }
        int rc;
        if (x->jobs && tsim_reader_lends_counts(x->reader)) {
            int64_t *counts = rec->counts;
            rc = tsim_session_jobs_record_move(x->jobs, rec, x->sharded ? want : NULL, &counts, &x->err);
            tsim_reader_replace_counts(x->reader, counts);
        } else {
            rc = x->jobs ? tsim_session_jobs_record(x->jobs, rec, x->sharded ? want : NULL, &x->err)
                         : tsim_session_record(s, rec, &x->err);
        }
        if (rc)
            return tsim_cli_fail(cmd, &x->err);
        int64_t done_bytes, total_bytes;
        tsim_reader_progress(x->reader, &done_bytes, &total_bytes);
        tsim_progress_update(&progress, done_bytes, total_bytes);
    }
    /* every exec planner ended (exit 0, nothing more written) before a file is */
    if ((x->jobs ? tsim_session_jobs_finish(x->jobs, &x->err) : tsim_session_drain(s, &x->err)) ||
        tsim_external_finish(&x->err))
        return tsim_cli_fail(cmd, &x->err);
    tsim_progress_finish(&progress);
    print_reader_warnings(x->reader);
    return 0;
}

/* A shard's output: its partial result for `taotsim merge`. */
static int replay_emit_partial(replay_run *x)
{
    tsim_replay_partial_info info = {
        .shard = x->a.shard, .argv = x->id_argv, .argc = x->id_argc, .trace_path = x->a.path, .header = x->h,
        .records = x->total, .digest = x->digest, .bytes = x->trace_bytes, .per_record = x->a.oo.per_record,
        .values = x->keep_values,
    };
    cJSON *j = tsim_replay_partial_json(&x->s, &info, &x->err);
    int rc = j ? tsim_json_print(x->out.fp, j) : TSIM_E_INTERNAL;
    if (j && rc)
        tsim_error_set(&x->err, TSIM_E_INTERNAL, "out of memory printing JSON");
    cJSON_Delete(j);
    /* merge reads partials up to the JSON document limit: say so now,
     * not after every shard has run */
    long size = rc ? -1 : ftell(x->out.fp);
    if (size > 0 && (uint64_t)size > TSIM_JSON_DOC_MAX)
        rc = tsim_error_set(&x->err, TSIM_E_INPUT,
                            "the partial result has %ld MiB, more than taotsim merge reads (%zu MiB): split the "
                            "replay into more shards",
                            size >> 20, TSIM_JSON_DOC_MAX >> 20);
    if (rc || tsim_outfile_commit(&x->out, &x->err))
        return tsim_cli_fail("replay", &x->err);
    return TSIM_OK;
}

/* Emit: the result (or a shard's partial), the --fail-if gates, and the files
 * renamed into place. Returns the exit status. */
static int replay_emit(replay_run *x)
{
    const char *cmd = "replay";
    if (tsim_outfile_open(&x->out, x->a.out_path, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    if (x->sharded)
        return replay_emit_partial(x);
    tsim_replay_output_options *oo = &x->a.oo;
    oo->trace_path = x->a.path;
    oo->header = x->h;
    oo->records = tsim_reader_count(x->reader);
    oo->traffic = x->a.extras.traffic_ready ? &x->a.extras.traffic : NULL;
    /* Both files written and flushed before either is renamed into place: a
     * full disk under either leaves neither behind. */
    if (tsim_replay_output_print(x->out.fp, &x->s, oo, &x->err) || tsim_outfile_flush(&x->out, &x->err) ||
        (x->hctx.dumping && tsim_outfile_flush(&x->hctx.dump, &x->err)) ||
        tsim_replay_extras_write(&x->a.extras, &x->s, x->a.path, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    /* The gates are checked before anything is renamed into place: a gate
     * that names nothing in the result is a usage error (exit 2), and exit 2
     * means nothing was written. A gate that holds (exit 1) keeps the files. */
    int gate_status = check_gates(&x->s, x->a.gates, x->a.n_gates);
    if (gate_status == TSIM_E_INPUT)
        return gate_status;
    if (x->hctx.dumping && tsim_outfile_commit(&x->hctx.dump, &x->err)) {
        x->hctx.dumping = false;
        return tsim_cli_fail(cmd, &x->err);
    }
    x->hctx.dumping = false;
    if (tsim_replay_extras_commit(&x->a.extras, &x->s, x->a.path, &x->err) ||
        tsim_outfile_commit(&x->out, &x->err))
        return tsim_cli_fail(cmd, &x->err);
    return gate_status;
}

static void replay_free(replay_run *x)
{
    tsim_session_jobs_free(x->jobs);
    tsim_replay_extras_free(&x->a.extras);
    if (x->hctx.dumping)
        tsim_outfile_abort(&x->hctx.dump);
    tsim_outfile_abort(&x->out);
    if (x->session_ready)
        tsim_session_free(&x->s);
    tsim_reader_close(x->reader);
    free(x->layers.layer);
    free(x->layers.dense);
    tsim_index_free(&x->ix);
}

/* Parse, set up, run and emit. */
static int replay_main(int argc, char **argv, char **id_argv, int id_argc, void *ctx)
{
    (void)ctx;
    replay_run *x = calloc(1, sizeof *x);
    if (!x) {
        tsim_error err = {0};
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        return tsim_cli_fail("replay", &err);
    }
    int status = replay_parse_checked(argc, argv, &x->a);
    if (status == TSIM_CLI_HELP) {
        replay_help();
        status = 0;
    } else if (status == 0) {
        x->id_argv = id_argv;
        x->id_argc = id_argc;
        x->sharded = x->a.shard.count > 0;
        status = replay_setup(x);
        if (status == 0)
            status = replay_records(x);
        if (status == 0)
            status = replay_emit(x);
    }
    replay_free(x);
    free(x);
    return status;
}

int tsim_cmd_replay(int argc, char **argv)
{
    return tsim_cli_run_with_identity("replay", argc, argv, replay_main, NULL);
}

static void vector_help(void)
{
    printf("usage: taotsim vector FILE... [--planner NAME] [-o OUT]\n"
           "\n"
           "Reads planner test vectors (the format of tests/spec/vectors/README.md),\n"
           "runs the vector's planner (or --planner) with the vector's options on its\n"
           "counts, and prints each vector back as one JSON line with \"got\" (its plan,\n"
           "loads and metrics) in place of \"expect\". λ_eval is 3.\n"
           "\n"
           "Options:\n"
           "  --planner NAME       run this planner instead of the vector's\n"
           "  -o, --output FILE    write to FILE atomically (default stdout)\n"
           "  -h, --help           this help\n");
}

static int run_one_vector(const char *file, const char *planner_override, FILE *out, tsim_error *err)
{
    tsim_vector v;
    int rc = tsim_vector_load(&v, file, err);
    if (rc)
        return rc;
    const char *pname = planner_override ? planner_override : v.planner;
    tsim_planner p = {0};
    if (planner_override && strchr(planner_override, '=')) {
        /* LABEL=NAME[:--opt=v] on the vector's options: external planners too */
        if ((rc = tsim_planner_spec_parse(&p, planner_override, &v.opts, err))) {
            tsim_vector_free(&v);
            return rc;
        }
        pname = p.label;
    } else {
        p.desc = tsim_planner_find(pname);
        if (!p.desc) {
            /* the message first: pname may point into v, which the free clears */
            tsim_error_set(err, TSIM_E_INPUT, "%s: unknown planner '%s'", file, pname);
            tsim_vector_free(&v);
            return TSIM_E_INPUT;
        }
        tsim_planner_configure(&p, p.desc, pname, &v.opts);
    }
    tsim_session s;
    if ((rc = tsim_session_init(&s, v.record.ranks, v.record.experts, v.ranks_per_node, v.slots, NULL, &p, 1, 3.0,
                                err))) {
        tsim_error_prefix(err, "%s", file);
        tsim_vector_free(&v);
        return rc;
    }
    if ((rc = tsim_vector_run(&s, &v, err))) {
        tsim_error_prefix(err, "%s", file);
    } else {
        tsim_metrics m;
        for (int k = 0; k < TSIM_M_COUNT; k++)
            m.v[k] = s.results[0].metrics[k].values[0];
        cJSON *doc = cJSON_Duplicate(v.root, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(doc, "expect");
        cJSON *gotdoc = tsim_vector_plan_json(v.name, pname, NULL, &v.record, &s.plan, s.ev.load_after, &m, false);
        cJSON *got = cJSON_DetachItemFromObjectCaseSensitive(gotdoc, "got");
        cJSON_AddItemToObject(doc, "got", got);
        char *line = cJSON_PrintUnformatted(doc);
        if (line) {
            fputs(line, out);
            fputc('\n', out);
            free(line);
        } else
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        cJSON_Delete(doc);
        cJSON_Delete(gotdoc);
    }
    tsim_session_free(&s);
    tsim_vector_free(&v);
    return rc;
}

enum { VOPT_PLANNER = 1, VOPT_OUTPUT, VOPT_EXEC_WINDOW, VOPT_EXEC_TIMEOUT };

static const tsim_cli_option vector_options[] = {
    {"planner", 0, true, VOPT_PLANNER},
    {"output", 'o', true, VOPT_OUTPUT},
    {"exec-window", 0, true, VOPT_EXEC_WINDOW},
    {"exec-timeout", 0, true, VOPT_EXEC_TIMEOUT},
    {0},
};

typedef struct {
    const char *files[1024];
    int nfiles;
    const char *planner, *out_path;
} vector_args;

static int vector_option(void *ctx, int id, const char *val, tsim_error *err)
{
    vector_args *a = ctx;
    switch (id) {
    case VOPT_PLANNER:
        a->planner = val;
        return TSIM_OK;
    case VOPT_OUTPUT:
        a->out_path = val;
        return TSIM_OK;
    case VOPT_EXEC_WINDOW:
        return tsim_external_set_window(val, err);
    case VOPT_EXEC_TIMEOUT:
        return tsim_external_set_timeout(val, err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "vector: option %d has no handler", id);
    }
}

static int vector_positional(void *ctx, const char *arg, tsim_error *err)
{
    vector_args *a = ctx;
    if (a->nfiles == 1024)
        return tsim_error_set(err, TSIM_E_INPUT, "at most 1024 files");
    a->files[a->nfiles++] = arg;
    return TSIM_OK;
}

int tsim_cmd_vector(int argc, char **argv)
{
    const char *cmd = "vector";
    tsim_error err = {0};
    /* an external --planner's --LABEL-KEY=VALUE options (external.h) */
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--planner") == 0)
            tsim_external_scan_list(argv[i + 1]);
        else if (strncmp(argv[i], "--planner=", 10) == 0)
            tsim_external_scan_list(argv[i] + 10);
    vector_args a = {.nfiles = 0};
    const tsim_cli_parser parser = {.cmd = cmd, .options = vector_options, .on_option = vector_option,
                                    .on_positional = vector_positional, .ctx = &a};
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        vector_help();
        return 0;
    }
    if (parsed)
        return parsed;
    const char *const *files = a.files;
    const int nfiles = a.nfiles;
    const char *planner = a.planner, *out_path = a.out_path;
    if (nfiles == 0)
        return tsim_cli_usage_error(cmd, "missing vector FILE");
    tsim_outfile out;
    if (tsim_outfile_open(&out, out_path, &err))
        return tsim_cli_fail(cmd, &err);
    for (int i = 0; i < nfiles; i++) {
        if (run_one_vector(files[i], planner, out.fp, &err)) {
            tsim_outfile_abort(&out);
            return tsim_cli_fail(cmd, &err);
        }
    }
    if (tsim_outfile_commit(&out, &err))
        return tsim_cli_fail(cmd, &err);
    return 0;
}
