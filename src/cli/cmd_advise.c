/* `taotsim advise TRACE`: parse, run the sweep (study/advise.c), print,
 * check --fail-if gates, write the figure. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "cli_common.h"
#include "commands.h"
#include "experiments.h"
#include "external.h"
#include "failif.h"
#include "gates.h"
#include "merge.h"
#include "options.h"
#include "outfile.h"
#include "parse.h"
#include "plot.h"
#include "report.h"
#include "study_print.h"

#define MAX_GATES 32

static void advise_help(void)
{
    printf("usage: taotsim advise TRACE [options]\n\n"
           "What should I set? Replays TRACE through every planner at each of its\n"
           "deployment settings and recommends one:\n"
           "  - guest slots K (R x K redundant experts), for planners that keep to a slot\n"
           "    limit (one whose algorithm fixes K runs at it; one without a limit runs once\n"
           "    and its memory is the most guests any rank held);\n"
           "  - the rebalance interval and the history, for the planners that recompute a\n"
           "    layout (their --NAME-interval and --NAME-history options: eplb, trtllm,\n"
           "    swift; lplb has a history and is run with its EPLB re-homing on);\n"
           "  - lambda_plan, for the topology-aware planners that read it (taot).\n"
           "Each setting: balancedness (mean load / max load, mean and p5), rho after\n"
           "(mean and p95), weighted cost, re-homing moves, weight traffic (weighted +\n"
           "re-homed intra + lambda_eval x re-homed inter, per record) and memory\n"
           "(K x --expert-mb per rank). The Pareto set: no other setting has better or equal\n"
           "balance, memory and weight traffic, and better one. The recommendation: of the\n"
           "settings whose mean balancedness reaches the target, the least memory, then the\n"
           "least weight traffic, then the best balance. A history 'oracle' reads the\n"
           "record it plans: shown as a bound, never in the Pareto set or recommended.\n"
           "Expensive planners (optimal) are left out unless --planners names them.\n\n"
           "Options:\n"
           "  --planners LIST      planners (LABEL=NAME:--opt=v as in replay; default: every\n"
           "                       cheap built-in planner)\n"
           "  --slot-list LIST     guest slots K (default 1,2,3,4); lists take a,b,c and lo-hi+step\n"
           "  --intervals LIST     records of a layer between recomputations (default 1,8,32,128,512)\n"
           "  --histories LIST     prev, oracle, none (default prev,none); none never\n"
           "                       recomputes, so it has no interval\n"
           "  --lambda-plan LIST   lambda_plan of the planners that read it (default 1,3,10)\n"
           "  --lambda-eval X      lambda the evaluator charges (default 3)\n"
           "  --expert-mb X        one expert's weights in MB (default 9.44)\n"
           "  --target-balancedness X  the balancedness to reach, in (0, 1] (default 0.95)\n"
           "  -j, --jobs N         settings in parallel (default: all cores); the same bytes for any N\n"
           "                       (JSON: all but \"command\", the command line as typed)\n"
           "  --shard I/N          run settings I, I+N, ... only (I from 0) and write their partial\n"
           "                       result (JSON); 'taotsim merge' of all N prints the unsharded bytes\n"
           "  --fail-if EXPR       exit 1 when EXPR holds; names [KEY.]PLANNER.METRIC.STAT with KEY a\n"
           "                       setting as the JSON \"key\" spells it (k2.i8.hprev, k1.lp3, kfree)\n"
           "  --plots DIR          also write the figures (advise_memory, advise_traffic: PNG, SVG)\n"
           "  --export-layout FILE write the layout to load: of the settings that reach the target,\n"
           "                       in the recommendation's order, the first whose plans are layouts\n"
           "                       (eplb, trtllm, swift), replayed again; each layer's last layout\n"
           "  --export-format sglang|trtllm  SGLang's --init-expert-location JSON or TensorRT-LLM's\n"
           "                       initial_global_assignments (default sglang)\n"
           "  --format md|csv|json output format (default md)\n"
           "  -o, --output FILE    write the result atomically to FILE (default stdout)\n"
           "  -h, --help           this help\n\n");
    tsim_cli_planners_help(stdout);
    tsim_external_help(stdout);
}

enum {
    OPT_PLANNERS = 1, OPT_SLOT_LIST, OPT_INTERVALS, OPT_HISTORIES, OPT_LAMBDA_PLAN, OPT_LAMBDA_EVAL, OPT_EXPERT_MB,
    OPT_TARGET, OPT_JOBS, OPT_SHARD, OPT_FAIL_IF, OPT_PLOTS, OPT_FORMAT, OPT_OUTPUT, OPT_EXPORT, OPT_EXPORT_FORMAT,
};

static const tsim_cli_option advise_options[] = {
    {"planners", 0, true, OPT_PLANNERS},         {"slot-list", 0, true, OPT_SLOT_LIST},
    {"intervals", 0, true, OPT_INTERVALS},       {"histories", 0, true, OPT_HISTORIES},
    {"lambda-plan", 0, true, OPT_LAMBDA_PLAN},   {"lambda-eval", 0, true, OPT_LAMBDA_EVAL},
    {"expert-mb", 0, true, OPT_EXPERT_MB},       {"target-balancedness", 0, true, OPT_TARGET},
    {"jobs", 'j', true, OPT_JOBS},               {"shard", 0, true, OPT_SHARD},
    {"fail-if", 0, true, OPT_FAIL_IF},           {"plots", 0, true, OPT_PLOTS},
    {"format", 0, true, OPT_FORMAT},             {"output", 'o', true, OPT_OUTPUT},
    {"export-layout", 0, true, OPT_EXPORT},      {"export-format", 0, true, OPT_EXPORT_FORMAT},
    {0},
};

typedef struct {
    tsim_advise_config *c;
    tsim_format format;
    bool format_given;
    const char *out_path, *plots_dir;
    const char *export_path;
    tsim_layout_format export_format;
    bool export_format_given;
    const char *gates[MAX_GATES];
    int n_gates;
} advise_args;

/* Every value in [lo, hi] and none twice (a duplicate is a typo, and would
 * be the same setting twice). */
static int int_list(const char *val, int *out, int *n, int lo, int hi, const char *what, tsim_error *err)
{
    if (tsim_parse_int_list(val, out, TSIM_ADVISE_LIST_MAX, n, what, err))
        return TSIM_E_INPUT;
    for (int i = 0; i < *n; i++) {
        if (out[i] < lo || out[i] > hi)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %d is out of range [%d, %d]", what, out[i], lo, hi);
        for (int j = 0; j < i; j++)
            if (out[j] == out[i])
                return tsim_error_set(err, TSIM_E_INPUT, "%s: %d appears twice", what, out[i]);
    }
    return TSIM_OK;
}

static int lambda_list(const char *val, tsim_advise_config *c, tsim_error *err)
{
    if (tsim_parse_double_list(val, c->lambdas, TSIM_ADVISE_LIST_MAX, &c->n_lambdas, "--lambda-plan", err))
        return TSIM_E_INPUT;
    for (int i = 0; i < c->n_lambdas; i++) {
        if (!(c->lambdas[i] >= 1e-9 && c->lambdas[i] <= 1e9))
            return tsim_error_set(err, TSIM_E_INPUT, "--lambda-plan: %g is out of range [1e-09, 1e+09]",
                                  c->lambdas[i]);
        for (int j = 0; j < i; j++)
            if (c->lambdas[j] == c->lambdas[i])
                return tsim_error_set(err, TSIM_E_INPUT, "--lambda-plan: %g appears twice", c->lambdas[i]);
    }
    return TSIM_OK;
}

static int history_list(const char *val, tsim_advise_config *c, tsim_error *err)
{
    static const char *const known[] = {"prev", "oracle", "none"};
    c->n_histories = 0;
    for (const char *p = val;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < 3; k++)
            if (strlen(known[k]) == len && strncmp(p, known[k], len) == 0)
                found = k;
        if (found < 0)
            return tsim_error_set(err, TSIM_E_INPUT, "--histories: '%.*s' is not prev, oracle or none", (int)len, p);
        for (int j = 0; j < c->n_histories; j++)
            if (strcmp(c->histories[j], known[found]) == 0)
                return tsim_error_set(err, TSIM_E_INPUT, "--histories: %s appears twice", known[found]);
        snprintf(c->histories[c->n_histories++], TSIM_ADVISE_HISTORY_MAX, "%s", known[found]);
        if (!p[len])
            return TSIM_OK;
        p += len + 1;
    }
}

static int advise_on_trace(void *ctx, const char *arg, tsim_error *err)
{
    advise_args *a = ctx;
    if (a->c->trace)
        return tsim_error_set(err, TSIM_E_INPUT, "one trace only (got '%s' and '%s')", a->c->trace, arg);
    a->c->trace = arg;
    return TSIM_OK;
}

static int advise_on_option(void *ctx, int id, const char *val, tsim_error *err)
{
    advise_args *a = ctx;
    tsim_advise_config *c = a->c;
    switch (id) {
    case OPT_PLANNERS:
        c->planners = val;
        return TSIM_OK;
    case OPT_SLOT_LIST:
        return int_list(val, c->slot_list, &c->n_slots, 1, 1024, "--slot-list", err);
    case OPT_INTERVALS:
        return int_list(val, c->intervals, &c->n_intervals, 1, 1 << 30, "--intervals", err);
    case OPT_HISTORIES:
        return history_list(val, c, err);
    case OPT_LAMBDA_PLAN:
        return lambda_list(val, c, err);
    case OPT_LAMBDA_EVAL:
        return tsim_parse_double(val, 0, 1e9, &c->lambda_eval, "--lambda-eval", err);
    case OPT_EXPERT_MB:
        return tsim_parse_double(val, 0, 1e9, &c->expert_mb, "--expert-mb", err);
    case OPT_TARGET:
        if (tsim_parse_double(val, 0, 1, &c->target, "--target-balancedness", err))
            return TSIM_E_INPUT;
        return c->target > 0 ? TSIM_OK
                             : tsim_error_set(err, TSIM_E_INPUT, "--target-balancedness: 0 is reached by anything");
    case OPT_JOBS:
        return tsim_parse_int(val, 1, 1024, &c->threads, "--jobs", err);
    case OPT_SHARD: {
        tsim_shard shard;
        int rc = tsim_shard_parse(val, &shard, err);
        c->shard_index = shard.index;
        c->shard_count = shard.count;
        return rc;
    }
    case OPT_FAIL_IF:
        return tsim_cli_gate_add(a->gates, &a->n_gates, MAX_GATES, val, err);
    case OPT_PLOTS:
        a->plots_dir = val;
        return TSIM_OK;
    case OPT_FORMAT:
        a->format_given = true;
        return tsim_format_parse(val, &a->format, err);
    case OPT_OUTPUT:
        a->out_path = val;
        return TSIM_OK;
    case OPT_EXPORT:
        a->export_path = val;
        return TSIM_OK;
    case OPT_EXPORT_FORMAT:
        a->export_format_given = true;
        return tsim_layout_format_parse(val, &a->export_format, err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "advise: option %d has no handler", id);
    }
}

static void on_progress(void *ctx, int done, int total)
{
    tsim_progress_update(ctx, done, total);
}

/* A shard's partial result (JSON), for taotsim merge. */
static int write_partial(const tsim_study *study, const char *out_path, char **id_argv, int id_argc)
{
    tsim_error err = {0};
    cJSON *j = tsim_study_partial_json(study, id_argv, id_argc, &err);
    tsim_outfile out;
    if (!j || tsim_outfile_open(&out, out_path, &err)) {
        cJSON_Delete(j);
        return tsim_cli_fail("advise", &err);
    }
    int rc = tsim_json_print(out.fp, j);
    cJSON_Delete(j);
    if (rc) {
        tsim_outfile_abort(&out);
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory printing JSON");
        return tsim_cli_fail("advise", &err);
    }
    return tsim_outfile_commit(&out, &err) ? tsim_cli_fail("advise", &err) : TSIM_OK;
}

/* The exported layout, atomically, and which setting it is on stderr. */
static int write_layout(const advise_args *a, const tsim_study_row *r, const tsim_layout_collector *col, int status)
{
    tsim_error err = {0};
    tsim_outfile out = {0};
    const tsim_layout_table *layouts = NULL;
    int rc = tsim_layout_collector_finish(col, r->planner, &layouts, &err);
    if (!rc)
        rc = tsim_outfile_open(&out, a->export_path, &err);
    if (!rc && !(rc = tsim_layout_write(out.fp, layouts, a->export_format, &err)))
        rc = tsim_outfile_commit(&out, &err);
    if (rc) {
        tsim_outfile_abort(&out);
        tsim_error_prefix(&err, "--export-layout %s", a->export_path);
        return tsim_cli_fail("advise", &err);
    }
    fprintf(stderr, "taotsim advise: wrote the %s layout of %s %s (%d layer%s, %d positions each) to %s\n",
            tsim_layout_format_names[a->export_format], r->planner, r->key, layouts->count, layouts->count == 1 ? "" : "s", layouts->physical,
            a->export_path);
    return status;
}

/* The gates, then the result and its figures (renamed into place last, so a
 * late failure leaves no -o file behind). */
static int write_result(const tsim_study *study, const advise_args *a)
{
    tsim_error err = {0};
    int gate_status = tsim_cli_check_gates(study, a->gates, a->n_gates, "advise", stderr);
    if (gate_status == TSIM_E_INPUT)
        return gate_status;
    tsim_outfile out;
    int rc = tsim_outfile_open(&out, a->out_path, &err);
    if (!rc && !(rc = tsim_study_print(out.fp, study, a->format, false, &err)))
        rc = tsim_outfile_flush(&out, &err);
    if (!rc && a->plots_dir) {
        cJSON *j = tsim_study_json(study);
        rc = j ? tsim_plot_result(j, a->plots_dir, TSIM_PLOT_PNG | TSIM_PLOT_SVG, stderr, &err)
               : tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        cJSON_Delete(j);
    }
    if (!rc)
        rc = tsim_outfile_commit(&out, &err);
    tsim_outfile_abort(&out);
    return rc ? tsim_cli_fail("advise", &err) : gate_status;
}

static int advise_main(int argc, char **argv, char **id_argv, int id_argc, void *ctx)
{
    (void)ctx;
    const char *cmd = "advise";
    tsim_error err = {0};
    tsim_advise_config c;
    tsim_advise_config_default(&c);
    c.threads = tsim_cpu_count();
    advise_args a = {.c = &c, .format = TSIM_FORMAT_MD};
    const tsim_cli_parser parser = {
        .cmd = cmd, .options = advise_options, .planner = &c.base, .on_option = advise_on_option,
        .on_positional = advise_on_trace, .ctx = &a,
    };
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        advise_help();
        return 0;
    }
    if (parsed)
        return parsed;
    if (!c.trace)
        return tsim_cli_usage_error(cmd, "no trace given (taotsim advise TRACE)");
    if (c.shard_count && ((a.format_given && a.format != TSIM_FORMAT_JSON) || a.n_gates || a.plots_dir))
        return tsim_cli_usage_error(cmd, "--shard writes a partial result (JSON) for 'taotsim merge': give "
                                         "--format, --fail-if and --plots to the merge");
    if (c.shard_count && a.export_path)
        return tsim_cli_usage_error(cmd, "--export-layout needs the whole sweep: run it without --shard");
    if (a.export_format_given && !a.export_path)
        return tsim_cli_usage_error(cmd, "--export-format needs --export-layout FILE");
    /* Before any work: every output can be written, none is the trace or
     * another output, and gnuplot can draw (exit 2 leaves nothing written). */
    const char *outputs[] = {a.out_path, a.plots_dir, a.export_path};
    const char *flags[] = {"-o", "--plots", "--export-layout"};
    const char *inputs[] = {c.trace};
    if (tsim_outfile_check_writable(a.out_path, &err) || tsim_outfile_check_writable(a.export_path, &err) ||
        tsim_cli_check_output_dir(a.plots_dir, "--plots", &err) ||
        tsim_outfile_check_distinct(outputs, flags, 3, inputs, 1, &err) ||
        (a.plots_dir && tsim_plot_check(TSIM_PLOT_PNG | TSIM_PLOT_SVG, &err)))
        return tsim_cli_fail(cmd, &err);
    tsim_progress progress;
    tsim_progress_start(&progress, cmd);
    c.progress = on_progress;
    c.progress_ctx = &progress;
    tsim_study study = {0};
    int rc = tsim_run_advise(&c, &study, &err);
    tsim_progress_finish(&progress);
    if (!rc)
        rc = tsim_external_finish(&err);
    /* the layout is found before anything is written: no setting with one is exit 2 */
    tsim_layout_collector layouts;
    tsim_layout_collector_init(&layouts);
    int row = -1;
    if (!rc && a.export_path)
        rc = tsim_advise_layout(&c, &study, &layouts, &row, &err);
    int status = rc                ? tsim_cli_fail(cmd, &err)
                 : c.shard_count ? write_partial(&study, a.out_path, id_argv, id_argc)
                                   : write_result(&study, &a);
    if (row >= 0 && (status == 0 || status == 1))
        status = write_layout(&a, &study.rows[row], &layouts, status);
    tsim_layout_collector_free(&layouts);
    tsim_study_free(&study);
    return status;
}

int tsim_cmd_advise(int argc, char **argv)
{
    return tsim_cli_run_with_identity("advise", argc, argv, advise_main, NULL);
}
