/* taotsim validate and taotsim convert: parse arguments, drive the trace
 * reader and writer, print. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "evaluate.h"
#include "options.h"
#include "outfile.h"
#include "parse.h"
#include "report.h"
#include "stats.h"
#include "topology.h"
#include "session.h"
#include "trace.h"

typedef struct {
    int ep;
    int rpn;
    const char *dataset;
    const char *block;  /* Megatron directories */
    int experts;        /* Megatron directories */
    const char *tensor; /* safetensors */
    const char *array;  /* .npz */
    const char *megatron_parallel; /* Megatron directories */
    int num_layers, ep_group;      /* ep_group: N + 1, 0 when not given */
    const char *format;
    const char *positional[64];
    int npositional;
    bool help;
} trace_args;

enum { OPT_EP = 1, OPT_RPN, OPT_DATASET, OPT_BLOCK, OPT_EXPERTS, OPT_TENSOR, OPT_ARRAY, OPT_FORMAT, OPT_MEGATRON,
       OPT_NUM_LAYERS, OPT_EP_GROUP };

/* validate's options; convert's are the same without --format, the first. */
static const tsim_cli_option trace_options[] = {
    {"format", 0, true, OPT_FORMAT},   {"ep", 0, true, OPT_EP},           {"rpn", 0, true, OPT_RPN},
    {"ranks-per-node", 0, true, OPT_RPN}, {"dataset", 0, true, OPT_DATASET}, {"block", 0, true, OPT_BLOCK},
    {"experts", 0, true, OPT_EXPERTS}, {"tensor", 0, true, OPT_TENSOR},   {"array", 0, true, OPT_ARRAY},
    {"megatron-parallel", 0, true, OPT_MEGATRON}, {"num-layers", 0, true, OPT_NUM_LAYERS},
    {"ep-group", 0, true, OPT_EP_GROUP},
    {0},
};

static int trace_option(void *ctx, int id, const char *value, tsim_error *err)
{
    trace_args *a = ctx;
    tsim_format f;
    switch (id) {
    case OPT_EP:
        return tsim_parse_int(value, 1, TSIM_MAX_RANKS, &a->ep, "--ep", err);
    case OPT_RPN:
        return tsim_parse_int(value, 1, TSIM_MAX_RANKS, &a->rpn, "--rpn", err);
    case OPT_DATASET:
        a->dataset = value;
        return TSIM_OK;
    case OPT_BLOCK:
        if (strcmp(value, "decoder") != 0 && strcmp(value, "mtp") != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "--block: expected decoder or mtp, got '%s'", value);
        a->block = value;
        return TSIM_OK;
    case OPT_EXPERTS:
        return tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &a->experts, "--experts", err);
    case OPT_TENSOR:
        if (!value[0])
            return tsim_error_set(err, TSIM_E_INPUT, "--tensor: the name is empty");
        a->tensor = value;
        return TSIM_OK;
    case OPT_ARRAY:
        if (!value[0])
            return tsim_error_set(err, TSIM_E_INPUT, "--array: the name is empty");
        a->array = value;
        return TSIM_OK;
    case OPT_MEGATRON:
        a->megatron_parallel = value;
        return TSIM_OK;
    case OPT_NUM_LAYERS:
        return tsim_parse_int(value, 1, 1 << 30, &a->num_layers, "--num-layers", err);
    case OPT_EP_GROUP:
        if (tsim_parse_int(value, 0, TSIM_MAX_RANKS - 1, &a->ep_group, "--ep-group", err))
            return TSIM_E_INPUT;
        a->ep_group++;
        return TSIM_OK;
    case OPT_FORMAT:
        if (tsim_format_parse(value, &f, err))
            return TSIM_E_INPUT;
        a->format = value;
        return TSIM_OK;
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "option %d has no handler", id);
    }
}

static int trace_positional(void *ctx, const char *arg, tsim_error *err)
{
    trace_args *a = ctx;
    if (a->npositional == (int)(sizeof a->positional / sizeof a->positional[0]))
        return tsim_error_set(err, TSIM_E_INPUT, "too many files (at most %d)", a->npositional);
    a->positional[a->npositional++] = arg;
    return TSIM_OK;
}

/* Options may come before or after the files; "--name value" and
 * "--name=value" both work; "--" ends the options. */
static int parse_args(const char *cmd, int argc, char **argv, bool allow_format, trace_args *a)
{
    memset(a, 0, sizeof *a);
    a->format = "md";
    const tsim_cli_parser p = {.cmd = cmd,
                               .options = allow_format ? trace_options : trace_options + 1,
                               .on_option = trace_option,
                               .on_positional = trace_positional,
                               .ctx = a};
    int rc = tsim_cli_parse(&p, argc, argv);
    if (rc == TSIM_CLI_HELP) {
        a->help = true;
        return 0;
    }
    return rc;
}

static tsim_read_options read_options(const trace_args *a)
{
    tsim_read_options o = {.ep = a->ep,
                           .ranks_per_node = a->rpn,
                           .dataset = a->dataset,
                           .block = a->block,
                           .experts = a->experts,
                           .tensor = a->tensor,
                           .array = a->array,
                           .megatron_parallel = a->megatron_parallel,
                           .num_layers = a->num_layers,
                           .ep_group = a->ep_group};
    return o;
}

/* The format options, as both commands' help shows them. */
#define IMPORT_OPTIONS_HELP                                                                                            \
    "  --block decoder|mtp  Megatron directories: which router calls to read\n"                                        \
    "                                                        [default: decoder]\n"                                     \
    "  --experts N       Megatron directories: the number of experts\n"                                                \
    "                    [default: the largest id seen + 1, rounded up to a\n"                                         \
    "                    multiple of the ranks]\n"                                                                     \
    "  --tensor NAME     .safetensors: the tensor to read    [default: counts]\n"                                     \
    "  --array NAME      .npz: the array to read     [default: the only one]\n"                                     \
    "  --megatron-parallel tp=T,pp=P,ep=E[,cp=C][,etp=ET][,order=tp-cp-ep-dp-pp][,tokens=split|same]\n"             \
    "                    Megatron directories: the parallel layout; each pipeline\n"                                \
    "                    stage's layers are renumbered globally, expert-TP ranks\n"                                 \
    "                    summed (tokens=same: TP rank 0 only)  [default: one EP group]\n"                           \
    "  --num-layers N    with --megatron-parallel: the model's layers\n"                                            \
    "                    [default: from the largest layer id]\n"                                                    \
    "  --ep-group N      with --megatron-parallel: read expert data parallel group\n"                              \
    "                    N only                [default: all, tagged ep-group-N]\n"

static void print_warnings(const char *cmd, tsim_reader *r)
{
    const char *w;
    while ((w = tsim_reader_take_warning(r)))
        fprintf(stderr, "taotsim %s: warning: %s\n", cmd, w);
}

static void note_rebucket(const char *cmd, const char *path, tsim_reader *r)
{
    if (tsim_reader_rebucketed(r))
        fprintf(stderr, "taotsim %s: %s: rebucketing from ep %d to ep %d (per-expert totals kept, split evenly)\n", cmd,
                path, tsim_reader_source_ep(r), tsim_reader_header(r)->ep);
}

/* ---- validate ----------------------------------------------------------- */

static void validate_usage(void)
{
    printf("usage: taotsim validate FILE... [options]\n"
           "\n"
           "Reads every record of each trace (.json, .jsonl, .jsonl.gz, .csv, .csv.gz,\n"
           ".npy, .npz, .pt, .safetensors, or a directory of Megatron router traces or\n"
           "per-rank .pt/.npz files or TensorRT-LLM expert statistics; docs/import.md)\n"
           "and checks it against the trace format. Prints the number of records, the\n"
           "shape and the distribution of the initial imbalance rho_before over records.\n"
           "Stops at the first bad file with its message on stderr and exit status 2.\n"
           "\n"
           "Options:\n"
           "  --ep N            read at EP size N: per-expert totals kept, split evenly\n"
           "                    over N ranks (required for per-expert totals: CSV\n"
           "                    without a rank column, [L,E] and [T,L,E] arrays)\n"
           "                                                        [default: the trace's]\n"
           "  --rpn N           ranks per node (also --ranks-per-node): divides the EP\n"
           "                    size, or is at least it (one node)\n"
           "                    [default: the trace's; imports: 8, with a warning]\n"
           "  --dataset NAME    keep only records of this dataset (CSV rows, or records\n"
           "                    with a \"dataset\" tag)               [default: all]\n" IMPORT_OPTIONS_HELP
           "  --format md|csv|json  output format                   [default: md]\n"
           "  -h, --help        show this help\n");
}

typedef struct {
    int64_t records;
    tsim_summary rho;
} validate_result;

static int validate_one(const char *path, const trace_args *a, tsim_reader **out_r, validate_result *res,
                        tsim_error *err)
{
    tsim_read_options opts = read_options(a);
    tsim_reader *r = NULL;
    int rc = tsim_reader_open(&r, path, &opts, err);
    if (rc)
        return rc;
    *out_r = r;
    print_warnings("validate", r);
    note_rebucket("validate", path, r);
    const tsim_trace_header *h = tsim_reader_header(r);
    tsim_topology topo;
    rc = tsim_topology_init(&topo, h->ep, h->experts, h->ranks_per_node, 0, h->home, err);
    if (rc) {
        tsim_error_prefix(err, "%s", path);
        return rc;
    }
    int64_t *load = malloc(sizeof *load * (size_t)h->ep);
    tsim_series rho = {0};
    tsim_series_bound(&rho, TSIM_SESSION_EXACT_RECORDS); /* flat memory on huge traces */
    if (!load) {
        tsim_topology_free(&topo);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    tsim_progress prog;
    tsim_progress_start(&prog, path);
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, err)) == 1) {
        print_warnings("validate", r);
        tsim_native_loads(&topo, rec, load);
        if (tsim_series_push(&rho, tsim_imbalance(load, h->ep))) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            break;
        }
        int64_t done, total;
        tsim_reader_progress(r, &done, &total);
        tsim_progress_update(&prog, done, total);
    }
    tsim_progress_finish(&prog);
    print_warnings("validate", r);
    if (rc == 0) {
        res->records = tsim_reader_count(r);
        res->rho = tsim_series_summary(&rho);
    }
    tsim_series_free(&rho);
    free(load);
    tsim_topology_free(&topo);
    return rc;
}

static const char *const validate_columns[] = {"trace",           "records", "experts", "ep",  "rpn", "topk",
                                               "rho_before mean", "std",     "min",     "p50", "p95", "max"};
#define VALIDATE_NCOLS ((int)(sizeof validate_columns / sizeof validate_columns[0]))

static int oom(const char *cmd)
{
    tsim_error err;
    tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
    return tsim_cli_fail(cmd, &err);
}

int tsim_cmd_validate(int argc, char **argv)
{
    trace_args a;
    int rc = parse_args("validate", argc, argv, true, &a);
    if (rc)
        return rc;
    if (a.help) {
        validate_usage();
        return 0;
    }
    if (a.npositional == 0)
        return tsim_cli_usage_error("validate", "no trace given");
    tsim_format fmt = TSIM_FORMAT_MD;
    tsim_format_parse(a.format, &fmt, NULL);
    /* Everything is printed at the end: a bad file leaves stdout empty. */
    tsim_table table;
    if (tsim_table_init(&table, VALIDATE_NCOLS, validate_columns))
        return oom("validate");
    cJSON *doc = tsim_result_json_new();
    cJSON *traces = doc ? cJSON_AddArrayToObject(doc, "traces") : NULL;
    if (!traces) {
        cJSON_Delete(doc);
        tsim_table_free(&table);
        return oom("validate");
    }
    for (int i = 0; i < a.npositional; i++) {
        const char *path = a.positional[i];
        tsim_reader *r = NULL;
        validate_result res = {0};
        tsim_error err = {0};
        rc = validate_one(path, &a, &r, &res, &err);
        if (rc) {
            tsim_reader_close(r);
            cJSON_Delete(doc);
            tsim_table_free(&table);
            return tsim_cli_fail("validate", &err);
        }
        const tsim_trace_header *h = tsim_reader_header(r);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddItemToArray(traces, t);
        cJSON_AddStringToObject(t, "path", path);
        cJSON_AddNumberToObject(t, "records", (double)res.records);
        cJSON_AddNumberToObject(t, "experts", h->experts);
        cJSON_AddNumberToObject(t, "ep", h->ep);
        cJSON_AddNumberToObject(t, "source_ep", tsim_reader_source_ep(r));
        cJSON_AddBoolToObject(t, "rebucketed", tsim_reader_rebucketed(r));
        cJSON_AddNumberToObject(t, "ranks_per_node", h->ranks_per_node);
        if (h->topk > 0)
            cJSON_AddNumberToObject(t, "topk", h->topk);
        else
            cJSON_AddNullToObject(t, "topk");
        cJSON_AddItemToObject(t, "meta", h->meta ? cJSON_Duplicate(h->meta, 1) : cJSON_CreateObject());
        cJSON_AddItemToObject(t, "rho_before", tsim_summary_json(&res.rho));

        char cells[VALIDATE_NCOLS][48];
        snprintf(cells[1], sizeof cells[1], "%lld", (long long)res.records);
        snprintf(cells[2], sizeof cells[2], "%d", h->experts);
        snprintf(cells[3], sizeof cells[3], "%d", h->ep);
        snprintf(cells[4], sizeof cells[4], "%d", h->ranks_per_node);
        if (h->topk > 0)
            snprintf(cells[5], sizeof cells[5], "%d", h->topk);
        else
            snprintf(cells[5], sizeof cells[5], "-");
        const double v[6] = {res.rho.mean, res.rho.std, res.rho.min, res.rho.p50, res.rho.p95, res.rho.max};
        for (int k = 0; k < 6; k++)
            tsim_fmt_num(cells[6 + k], sizeof cells[6 + k], v[k], 4);
        const char *row[VALIDATE_NCOLS];
        row[0] = path;
        for (int k = 1; k < VALIDATE_NCOLS; k++)
            row[k] = cells[k];
        if (tsim_table_add_row(&table, row)) {
            tsim_reader_close(r);
            cJSON_Delete(doc);
            tsim_table_free(&table);
            return oom("validate");
        }
        tsim_reader_close(r);
    }
    if (fmt == TSIM_FORMAT_JSON)
        rc = tsim_json_print(stdout, doc) ? oom("validate") : 0;
    else
        tsim_table_print(&table, stdout, fmt);
    cJSON_Delete(doc);
    tsim_table_free(&table);
    if (rc)
        return rc;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        tsim_error err;
        tsim_error_set(&err, TSIM_E_INPUT, "error writing to standard output");
        return tsim_cli_fail("validate", &err);
    }
    return 0;
}

/* ---- convert ------------------------------------------------------------ */

static void convert_usage(void)
{
    printf("usage: taotsim convert IN OUT [options]\n"
           "\n"
           "Converts a trace between the JSON document (.json) and JSON Lines (.jsonl,\n"
           ".jsonl.gz) forms, or imports CSV (.csv, .csv.gz), NumPy .npy/.npz, torch .pt,\n"
           ".safetensors or a directory (Megatron router traces, per-rank .pt or .npz)\n"
           "into either (docs/import.md). The format of each file comes from its name, a\n"
           "directory's from the files it holds. Records are\n"
           "written with \"counts\" (per source rank). OUT is written to a temporary file\n"
           "and renamed into place, so nothing is left behind on an error; OUT may not\n"
           "be IN under any name (a link to it).\n"
           "\n"
           "Options:\n"
           "  --ep N            write at EP size N: per-expert totals kept, split evenly\n"
           "                    over N ranks (required for per-expert totals: CSV\n"
           "                    without a rank column, [L,E] and [T,L,E] arrays)\n"
           "                                                        [default: the trace's]\n"
           "  --rpn N           ranks per node (also --ranks-per-node): divides the EP\n"
           "                    size, or is at least it (one node)\n"
           "                    [default: the trace's; imports: 8, with a warning]\n"
           "  --dataset NAME    keep only records of this dataset   [default: all]\n" IMPORT_OPTIONS_HELP
           "  -h, --help        show this help\n");
}

int tsim_cmd_convert(int argc, char **argv)
{
    trace_args a;
    int rc = parse_args("convert", argc, argv, false, &a);
    if (rc)
        return rc;
    if (a.help) {
        convert_usage();
        return 0;
    }
    if (a.npositional != 2)
        return tsim_cli_usage_error("convert", "expected IN and OUT, got %d file name%s", a.npositional,
                                    a.npositional == 1 ? "" : "s");
    const char *in = a.positional[0], *out = a.positional[1];
    tsim_error err = {0};
    tsim_trace_format out_fmt;
    if (tsim_trace_format_from_path(out, &out_fmt, &err))
        return tsim_cli_usage_error("convert", "%s", err.msg);
    if (out_fmt == TSIM_FMT_CSV)
        return tsim_cli_usage_error("convert", "%s: CSV is an import format only; write .json, .jsonl or .jsonl.gz",
                                    out);
    if (tsim_trace_format_import_only(out_fmt))
        return tsim_cli_usage_error("convert", "%s: %s is an import format only; write .json, .jsonl or .jsonl.gz",
                                    out,
                                    out_fmt == TSIM_FMT_NPY ? ".npy"
                                    : out_fmt == TSIM_FMT_PT ? ".pt"
                                    : out_fmt == TSIM_FMT_NPZ ? ".npz"
                                                             : ".safetensors");

    /* Writing over the input would lose it (by device and inode: links and
     * other names of one file count too). */
    const char *flag = "OUT";
    if (tsim_outfile_check_distinct(&out, &flag, 1, &in, 1, &err))
        return tsim_cli_fail("convert", &err);

    tsim_read_options opts = read_options(&a);
    tsim_reader *r = NULL;
    tsim_writer *w = NULL;
    rc = tsim_reader_open(&r, in, &opts, &err);
    if (rc)
        return tsim_cli_fail("convert", &err);
    print_warnings("convert", r);
    note_rebucket("convert", in, r);
    rc = tsim_writer_open(&w, out, tsim_reader_header(r), &err);
    if (rc) {
        tsim_reader_close(r);
        return tsim_cli_fail("convert", &err);
    }
    tsim_progress prog;
    tsim_progress_start(&prog, in);
    const tsim_record *rec;
    while ((rc = tsim_reader_next(r, &rec, &err)) == 1) {
        print_warnings("convert", r);
        rc = tsim_writer_write(w, rec, &err);
        if (rc)
            break;
        int64_t done, total;
        tsim_reader_progress(r, &done, &total);
        tsim_progress_update(&prog, done, total);
    }
    tsim_progress_finish(&prog);
    print_warnings("convert", r);
    int64_t records = tsim_reader_count(r);
    const tsim_trace_header *h = tsim_reader_header(r);
    int experts = h->experts, ep = h->ep;
    tsim_reader_close(r);
    if (rc) {
        tsim_writer_close(w, false, NULL);
        return tsim_cli_fail("convert", &err);
    }
    rc = tsim_writer_close(w, true, &err);
    if (rc)
        return tsim_cli_fail("convert", &err);
    fprintf(stderr, "taotsim convert: wrote %lld record%s (experts %d, ep %d) to %s\n", (long long)records,
            records == 1 ? "" : "s", experts, ep, out);
    return 0;
}
