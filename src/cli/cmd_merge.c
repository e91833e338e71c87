/* `taotsim merge`: the partial results of `--shard I/N` runs of one command
 * (replay or a study) into the result of the whole run (merge.h). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "experiments.h"
#include "failif.h"
#include "gates.h"
#include "merge.h"
#include "options.h"
#include "outfile.h"
#include "plot.h"
#include "replay_output.h"
#include "study_print.h"
#include "report.h"
#include "report_html.h"
#include "shard_cli.h"

#define MAX_GATES 32

static void merge_help(void)
{
    printf("usage: taotsim merge PART.json... [-o OUT] [--format md|csv|json] [options]\n"
           "\n"
           "Combines the partial results written by 'taotsim COMMAND ... --shard I/N' (replay\n"
           "or any study; one file per shard, any order) into the result of the whole\n"
           "run, as COMMAND without --shard would print it. The parts must come from the\n"
           "same command line and taotsim build, cover every shard 0..N-1 once, and\n"
           "(replay) come from the same trace: each shard records the trace's size and\n"
           "a hash of all its records, and these must agree. Anything else is an error\n"
           "naming the files, and nothing is written.\n"
           "\n"
           "The result is byte-identical to the unsharded run's (JSON: all but \"command\",\n"
           "see below) for every study, and for a replay that keeps per-record values (at\n"
           "most %d records, or --per-record).\n"
           "A longer replay is merged from the shards' summaries: records, min, max, p50\n"
           "and p95 come out exactly as one run gives them; mean and std are combined by\n"
           "Chan et al.'s pairwise formula and may differ from one run's in the last\n"
           "digits (relative differences below 1e-12; 4e-14 at most on a 1,000,000-record\n"
           "replay in 64 shards). The \"command\" of a JSON result is the\n"
           "shards' command line without --shard, -o, --format and -j, followed by this\n"
           "merge's options: the command that gives the same result unsharded.\n"
           "\n"
           "Options:\n"
           "  --format md|csv|json output format (default md)\n"
           "  -o, --output FILE    write the result atomically to FILE (default stdout)\n"
           "  --std                studies: show ± std beside means\n"
           "  --fail-if EXPR       exit 1 when EXPR holds (names as in the merged command)\n"
           "  --plots DIR          also write gnuplot figures (PNG and SVG) into DIR\n"
           "  --report FILE        also write the HTML page 'taotsim report' makes of the\n"
           "                       merged result, atomically\n"
           "  -h, --help           this help\n",
           TSIM_SESSION_EXACT_RECORDS);
}

enum { OPT_FORMAT = 1, OPT_OUTPUT, OPT_STD, OPT_FAIL_IF, OPT_PLOTS, OPT_REPORT };

static const tsim_cli_option merge_options[] = {
    {"format", 0, true, OPT_FORMAT}, {"output", 'o', true, OPT_OUTPUT}, {"std", 0, false, OPT_STD},
    {"fail-if", 0, true, OPT_FAIL_IF}, {"plots", 0, true, OPT_PLOTS},   {"report", 0, true, OPT_REPORT},
    {0},
};

typedef struct {
    const char **parts;
    int n_parts;
    tsim_format format;
    const char *out_path, *plots_dir, *report_path;
    const char *gates[MAX_GATES];
    int n_gates;
    bool show_std;
} merge_args;

static int merge_option(void *ctx, int id, const char *val, tsim_error *err)
{
    merge_args *a = ctx;
    switch (id) {
    case OPT_FORMAT:
        return tsim_format_parse(val, &a->format, err);
    case OPT_OUTPUT:
        a->out_path = val;
        return TSIM_OK;
    case OPT_STD:
        a->show_std = true;
        return TSIM_OK;
    case OPT_PLOTS:
        a->plots_dir = val;
        return TSIM_OK;
    case OPT_REPORT:
        a->report_path = val;
        return TSIM_OK;
    case OPT_FAIL_IF:
        return tsim_cli_gate_add(a->gates, &a->n_gates, MAX_GATES, val, err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "merge: option %d has no handler", id);
    }
}

static int merge_positional(void *ctx, const char *arg, tsim_error *err)
{
    (void)err;
    merge_args *a = ctx;
    a->parts[a->n_parts++] = arg;
    return TSIM_OK;
}

/* The command line the merged result records: the shards' command (without
 * --shard, -o, --format, -j) and then this merge's options, as typed. */
static int set_command_line(const tsim_partial *part, int argc, char **argv, const merge_args *a)
{
    char **line = calloc((size_t)part->argc + (size_t)argc + 2, sizeof *line);
    if (!line)
        return -1;
    int n = 0;
    line[n++] = "taotsim";
    for (int i = 0; i < part->argc; i++)
        line[n++] = part->argv[i];
    for (int i = 1; i < argc; i++) {
        bool is_part = false;
        for (int k = 0; k < a->n_parts && !is_part; k++)
            is_part = argv[i] == a->parts[k];
        if (!is_part)
            line[n++] = argv[i];
    }
    tsim_report_set_command_line(n, line);
    free(line);
    return 0;
}

/* The gates over a replay's planners, as replay checks them. */
static int replay_gates(const tsim_session *s, const merge_args *a)
{
    if (a->n_gates == 0)
        return TSIM_OK;
    tsim_study study = {0}; /* freed on every path, even before a study is made */
    tsim_study_init(&study, "replay");
    for (int p = 0; p < s->n_planners; p++) {
        tsim_study_row *row = tsim_study_add(&study);
        if (row)
            tsim_study_row_from_session(row, s, p);
    }
    int status = tsim_cli_check_gates(&study, a->gates, a->n_gates, "merge", stderr);
    tsim_study_free(&study);
    return status;
}

/* Prints (through out), checks the gates and writes the plots of a merged
 * result; json is the result as JSON (for the plots; may be NULL without). */
static int write_result(const char *cmd, const merge_args *a, int (*print)(FILE *, const void *, const merge_args *,
                                                                               tsim_error *),
                        const void *result, int (*gates)(const void *, const merge_args *),
                        cJSON *(*to_json)(const void *))
{
    tsim_error err = {0};
    /* gates first: one that names nothing is exit 2, and exit 2 writes nothing */
    int gate_status = gates(result, a);
    if (gate_status == TSIM_E_INPUT)
        return gate_status;
    /* renamed into place after the plots, so a late failure leaves no -o or
     * --report file */
    tsim_outfile out, report = {0};
    int rc = tsim_outfile_open(&out, a->out_path, &err);
    if (!rc && !(rc = print(out.fp, result, a, &err)))
        rc = tsim_outfile_flush(&out, &err);
    if (!rc && (a->plots_dir || a->report_path)) {
        cJSON *j = to_json(result);
        if (!j)
            rc = tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        if (!rc && a->plots_dir)
            rc = tsim_plot_result(j, a->plots_dir, TSIM_PLOT_PNG | TSIM_PLOT_SVG, stderr, &err);
        if (!rc && a->report_path)
            rc = tsim_report_write(&report, a->report_path, j, &err);
        cJSON_Delete(j);
    }
    if (!rc)
        rc = tsim_outfile_commit(&out, &err);
    if (!rc && a->report_path)
        rc = tsim_outfile_commit(&report, &err);
    tsim_outfile_abort(&report);
    tsim_outfile_abort(&out);
    return rc ? tsim_cli_fail(cmd, &err) : gate_status;
}

/* ---- replay ---------------------------------------------------------------------- */

typedef struct {
    tsim_session s;
    tsim_replay_output_options oo;
} merged_replay;

static int print_replay(FILE *fp, const void *r_, const merge_args *a, tsim_error *err)
{
    const merged_replay *r = r_;
    tsim_replay_output_options oo = r->oo;
    oo.format = a->format;
    return tsim_replay_output_print(fp, &r->s, &oo, err);
}

static int gates_replay(const void *r_, const merge_args *a)
{
    return replay_gates(&((const merged_replay *)r_)->s, a);
}

static cJSON *json_replay(const void *r_)
{
    const merged_replay *r = r_;
    return tsim_replay_json(&r->s, &r->oo);
}

/* The planners the shards' command runs, in its order. Like replay, the
 * default list leaves lplb out where it cannot run on the trace's topology
 * (no graph fits); an explicit --planners keeps every one. */
static int expected_planners(const tsim_replay_merge_config *config, const tsim_trace_header *h, tsim_planner *out,
                             int *n_out, tsim_error *err)
{
    *n_out = 0;
    for (int q = 0; q < config->n_planners; q++) {
        const tsim_planner *pl = &config->planners[q];
        if (!config->planners_given && strcmp(pl->label, "lplb") == 0) {
            tsim_session probe;
            tsim_error probe_err = {0};
            int rc = tsim_session_init(&probe, h->ep, h->experts, h->ranks_per_node, config->slots, h->home, pl, 1,
                                       config->lambda_eval, &probe_err);
            if (rc == TSIM_OK)
                tsim_session_free(&probe);
            else if (rc == TSIM_E_INPUT)
                continue; /* replay left it out, with a note */
            else
                return tsim_error_set(err, rc, "%s", probe_err.msg);
        }
        out[(*n_out)++] = *pl;
    }
    return TSIM_OK;
}

static void join_labels(char *buf, size_t n, char (*labels)[TSIM_LABEL_MAX], const tsim_planner *planners,
                        int count)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? "," : "", labels ? labels[i] : planners[i].label);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Every part must hold exactly the command's planners, in its order: a
 * damaged part that lost one must not merge into a result without it. */
static int check_part_planners(const tsim_partial *parts, int n, const tsim_planner *planners, int n_planners,
                               tsim_error *err)
{
    for (int i = 0; i < n; i++) {
        tsim_replay_partial_setup setup;
        if (tsim_replay_partial_setup_get(&parts[i], &setup, err))
            return TSIM_E_INPUT;
        tsim_trace_header_free(&setup.header);
        bool same = setup.n_planners == n_planners;
        for (int p = 0; same && p < n_planners; p++)
            same = strcmp(setup.labels[p], planners[p].label) == 0;
        if (!same) {
            char have[1024], want[1024];
            join_labels(have, sizeof have, setup.labels, NULL, setup.n_planners);
            join_labels(want, sizeof want, NULL, planners, n_planners);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: damaged partial result: it holds planners '%s', its command runs '%s'",
                                  parts[i].path, have, want);
        }
    }
    return TSIM_OK;
}

/* Pass 1 of a streaming merge: every part checked against the first (the
 * same command, trace and build) and against the command's planners, one part
 * in memory at a time besides the first; then each shard there once. */
static int check_parts(const tsim_partial *first, const merge_args *a, const tsim_planner *planners, int n_planners,
                       int *index, tsim_error *err)
{
    index[0] = first->shard.index;
    if (tsim_partial_check_pair(first, first, err) || check_part_planners(first, 1, planners, n_planners, err))
        return TSIM_E_INPUT;
    for (int i = 1; i < a->n_parts; i++) {
        tsim_partial p;
        if (tsim_partial_load(&p, a->parts[i], err))
            return TSIM_E_INPUT;
        int bad = tsim_partial_check_pair(first, &p, err) || check_part_planners(&p, 1, planners, n_planners, err);
        index[i] = p.shard.index;
        tsim_partial_free(&p);
        if (bad)
            return TSIM_E_INPUT;
    }
    return tsim_shards_check_cover((char *const *)a->parts, index, a->n_parts, first->shard.count, err);
}

/* Pass 2: the parts added in shard order, each loaded, added and freed. */
static int add_parts(tsim_session *s, const tsim_partial *first, const merge_args *a, const int *index,
                     tsim_error *err)
{
    tsim_replay_merger *m;
    int rc = tsim_replay_merger_start(&m, s, first, a->n_parts, err);
    for (int k = 0; !rc && k < first->shard.count; k++) {
        int i = 0;
        while (index[i] != k)
            i++; /* every shard is there once (check_parts) */
        if (i == 0) {
            rc = tsim_replay_merger_add(m, first, err);
            continue;
        }
        tsim_partial p;
        rc = tsim_partial_load(&p, a->parts[i], err);
        if (!rc) {
            rc = tsim_replay_merger_add(m, &p, err);
            tsim_partial_free(&p);
        }
    }
    if (!rc)
        rc = tsim_replay_merger_finish(m, err);
    tsim_replay_merger_free(m);
    return rc;
}

/* A replay's shards, merged a part at a time: memory holds the first part,
 * the one being read and the merged result, however many parts there are. */
static int merge_replay(const tsim_partial *first, const merge_args *a, int argc, char **argv)
{
    const char *cmd = "merge";
    tsim_error err = {0};
    tsim_replay_partial_setup setup;
    if (tsim_replay_partial_setup_get(first, &setup, &err))
        return tsim_cli_fail(cmd, &err);
    /* the shards' own command line gives every planner its options (parsed
     * from a copy of the pointers: getopt reorders them, and every part is
     * compared with the first's as it was written) */
    static tsim_replay_merge_config config;
    char **args = calloc((size_t)first->argc + 1, sizeof *args);
    if (args)
        memcpy(args, first->argv, sizeof *args * (size_t)first->argc);
    if (!args || tsim_replay_config_parse(first->argc, args, &config, &err)) {
        free(args);
        if (!args)
            tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        tsim_trace_header_free(&setup.header);
        tsim_error_prefix(&err, "%s", first->path);
        return tsim_cli_fail(cmd, &err);
    }
    free(args);
    tsim_planner planners[TSIM_MERGE_PLANNERS_MAX];
    int n_planners = 0;
    int *index = malloc(sizeof *index * (size_t)a->n_parts);
    if (!index)
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
    if (!index || expected_planners(&config, &setup.header, planners, &n_planners, &err) ||
        check_parts(first, a, planners, n_planners, index, &err) || set_command_line(first, argc, argv, a)) {
        if (!err.code)
            tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        free(index);
        tsim_trace_header_free(&setup.header);
        return tsim_cli_fail(cmd, &err);
    }
    merged_replay r = {0};
    const tsim_trace_header *h = &setup.header;
    if (tsim_session_init_results(&r.s, h->ep, h->experts, h->ranks_per_node, config.slots, h->home, planners,
                                  n_planners, config.lambda_eval, &err)) {
        free(index);
        tsim_trace_header_free(&setup.header);
        return tsim_cli_fail(cmd, &err);
    }
    r.s.timing = config.timing;
    r.s.step_model_on = config.step_model_on;
    r.s.capacity_factor = config.capacity_factor;
    r.s.step_model = config.step_model;
    r.s.keep_ids = setup.per_record;
    tsim_session_bound_memory(&r.s, TSIM_SESSION_EXACT_RECORDS);
    int status;
    if (add_parts(&r.s, first, a, index, &err)) {
        status = tsim_cli_fail(cmd, &err);
    } else {
        r.oo = (tsim_replay_output_options){.format = a->format, .per_record = setup.per_record,
                                            .trace_path = setup.trace_path, .header = h, .records = setup.records};
        status = write_result(cmd, a, print_replay, &r, gates_replay, json_replay);
    }
    free(index);
    tsim_session_free(&r.s);
    tsim_trace_header_free(&setup.header);
    return status;
}

/* ---- studies ---------------------------------------------------------------------- */

static int print_study(FILE *fp, const void *st, const merge_args *a, tsim_error *err)
{
    return tsim_study_print(fp, st, a->format, a->show_std, err);
}

static int gates_study(const void *st, const merge_args *a)
{
    return tsim_cli_check_gates(st, a->gates, a->n_gates, "merge", stderr);
}

static cJSON *json_study(const void *st)
{
    return tsim_study_json(st);
}

static int merge_study(const tsim_partial *parts, int n, const merge_args *a)
{
    tsim_error err = {0};
    tsim_study study = {0}; /* freed on every path, even before a study is made */
    int status;
    if (tsim_study_merge(&study, parts, n, &err))
        status = tsim_cli_fail("merge", &err);
    else
        status = write_result("merge", a, print_study, &study, gates_study, json_study);
    tsim_study_free(&study);
    return status;
}

int tsim_cmd_merge(int argc, char **argv)
{
    const char *cmd = "merge";
    tsim_error err = {0};
    merge_args a = {.format = TSIM_FORMAT_MD};
    a.parts = calloc((size_t)argc, sizeof *a.parts);
    if (!a.parts) {
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        return tsim_cli_fail(cmd, &err);
    }
    const tsim_cli_parser parser = {
        .cmd = cmd, .options = merge_options, .on_option = merge_option, .on_positional = merge_positional,
        .ctx = &a,
    };
    int status = tsim_cli_parse(&parser, argc, argv);
    if (status == TSIM_CLI_HELP) {
        merge_help();
        free(a.parts);
        return 0;
    }
    if (status == 0 && a.n_parts == 0)
        status = tsim_cli_usage_error(cmd, "no partial results given (PART.json...)");
    if (status) {
        free(a.parts);
        return status;
    }
    /* Before any work: the result can be written and is none of the parts;
     * a missing gnuplot fails now, not after the merge. */
    const char *outputs[] = {a.out_path, a.plots_dir, a.report_path};
    const char *flags[] = {"-o", "--plots", "--report"};
    if (tsim_outfile_check_writable(a.out_path, &err) || tsim_cli_check_output_dir(a.plots_dir, "--plots", &err) ||
        tsim_outfile_check_distinct(outputs, flags, 3, a.parts, a.n_parts, &err) ||
        (a.plots_dir && tsim_plot_check(TSIM_PLOT_PNG | TSIM_PLOT_SVG, &err)) ||
        tsim_report_check(a.report_path, &err)) {
        free(a.parts);
        return tsim_cli_fail(cmd, &err);
    }
    tsim_partial *parts = calloc((size_t)a.n_parts, sizeof *parts);
    if (!parts) {
        free(a.parts);
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        return tsim_cli_fail(cmd, &err);
    }
    /* A replay streams its parts (merge_replay); a study's parts are small
     * (one row per grid point) and are all read first. */
    int loaded = tsim_partial_load(&parts[0], a.parts[0], &err) ? 0 : 1;
    bool replay = loaded && strcmp(parts[0].study, "replay") == 0;
    for (; loaded && !replay && loaded < a.n_parts; loaded++)
        if (tsim_partial_load(&parts[loaded], a.parts[loaded], &err))
            break;
    if (replay)
        status = merge_replay(&parts[0], &a, argc, argv);
    else if (loaded < a.n_parts || tsim_partials_check(parts, a.n_parts, &err))
        status = tsim_cli_fail(cmd, &err);
    else if (set_command_line(&parts[0], argc, argv, &a))
        status = tsim_cli_fail(cmd, &(tsim_error){.code = TSIM_E_INTERNAL, .msg = "out of memory"});
    else
        status = merge_study(parts, a.n_parts, &a);
    for (int i = 0; i < loaded; i++)
        tsim_partial_free(&parts[i]);
    free(parts);
    free(a.parts);
    return status;
}
