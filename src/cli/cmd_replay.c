/* `taotsim replay` and `taotsim vector`. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "evaluate.h"
#include "failif.h"
#include "outfile.h"
#include "parse.h"
#include "planner.h"
#include "registry.h"
#include "replay_output.h"
#include "report.h"
#include "session.h"
#include "study.h"
#include "trace.h"
#include "vector.h"

#define DEFAULT_PLANNERS "taot,echo,llep,lplb"
#define MAX_PLANNERS 32

static void replay_help(void)
{
    printf("usage: taotsim replay FILE [options] [planner options]\n"
           "\n"
           "Runs planners over every record of a trace (JSON, JSONL, JSONL.gz or CSV)\n"
           "and prints the metrics of model.md per planner (means; JSON adds std, min,\n"
           "p50, p95, max).\n"
           "\n"
           "Options:\n"
           "  --planners LIST      comma-separated planners (default " DEFAULT_PLANNERS ");\n"
           "                       LABEL=NAME:--opt=v:--flag runs a planner under a label\n"
           "                       with its own options, e.g. taot-split=taot:--taot-phase3=split\n"
           "  --slots K            guest slots per rank (default 2)\n"
           "  --lambda-eval X      lambda the evaluator charges (default 3)\n"
           "  --lambda X           set both --lambda-plan and --lambda-eval\n"
           "  --ep N               replay at another EP size (rebucketing; needed for CSV)\n"
           "  --rpn N              ranks per node (default: the trace's, else 8)\n"
           "  --dataset NAME       CSV: only rows of this dataset\n"
           "  --per-record         also print every record's metrics\n"
           "  --dump-plans FILE    write every plan as a JSON line (vector format, \"got\")\n"
           "  --timing             measure plan_ns (wall time: output no longer reproducible)\n"
           "  --step-model         add the step-time model's step_ms and speedup (see below)\n"
           "  --fail-if EXPR       exit 1 when EXPR holds, e.g. 'taot.rho_after.p95 > 0.05'\n"
           "                       (names PLANNER.METRIC.STAT; repeatable)\n"
           "  --format md|csv|json output format (default md)\n"
           "  -o, --output FILE    write the result to FILE atomically (default stdout)\n"
           "  -h, --help           this help\n"
           "\n"
           "Memory stays flat on long traces: past %d records (unless --per-record\n"
           "is given) the metrics are summarised as they stream by. mean, std, min\n"
           "and max stay exact; p50 and p95 then come from a histogram and are\n"
           "within 1%% of the exact value (exact for small integers).\n"
           "\n",
           TSIM_SESSION_EXACT_RECORDS);
    tsim_planner_options_help(stdout);
    fputs("\n" TSIM_STEP_MODEL_HELP, stdout);
}

typedef struct {
    tsim_outfile dump;
    bool dumping;
    const char *trace_path;
} replay_hook_ctx;

static int dump_hook(void *ctx_, tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                     const tsim_metrics *m, tsim_error *err)
{
    replay_hook_ctx *ctx = ctx_;
    if (!ctx->dumping)
        return TSIM_OK;
    const tsim_planner *p = &s->planners[planner];
    char name[160];
    snprintf(name, sizeof name, "record-%lld", (long long)rec->index);
    cJSON *opts = tsim_vector_options_json(p->desc->name, s->topo.slots, s->topo.ranks_per_node, &p->opts);
    cJSON *j = tsim_vector_plan_json(name, p->desc->name, opts, rec, plan, s->ev.load_after, m, false);
    if (!j)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
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

/* --fail-if over a replay: names PLANNER.METRIC.STAT. */
static int check_gates(const tsim_session *s, const char *const *gates, int n)
{
    if (n == 0)
        return TSIM_OK;
    tsim_study study;
    tsim_study_init(&study, "replay");
    for (int p = 0; p < s->n_planners; p++) {
        tsim_study_row *row = tsim_study_add(&study);
        if (row)
            tsim_study_row_from_session(row, s, p);
    }
    int status = tsim_study_check_gates(&study, gates, n, "replay", stderr);
    tsim_study_free(&study);
    return status;
}

int tsim_cmd_replay(int argc, char **argv)
{
    const char *cmd = "replay";
    tsim_error err = {0};
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    const char *path = NULL, *planners_arg = DEFAULT_PLANNERS, *out_path = NULL, *dump_path = NULL;
    const char *gates[32];
    int n_gates = 0;
    tsim_read_options ropts = {0};
    tsim_replay_output_options oo = {.format = TSIM_FORMAT_MD};
    int slots = 2;
    double lambda_eval = 3.0;
    bool timing = false, step_model_on = false;
    tsim_step_model step_model;
    tsim_step_model_default(&step_model);

    tsim_argiter it = {argc, argv, 1};
    const char *name, *inl;
    int kind;
    while ((kind = tsim_arg_next(&it, &name, &inl)) != TSIM_ARG_END) {
        if (kind == TSIM_ARG_POSITIONAL) {
            if (path)
                return tsim_cli_usage_error(cmd, "one trace file only (got '%s' and '%s')", path, name);
            path = name;
            continue;
        }
        if (strcmp(name, "h") == 0 || strcmp(name, "help") == 0) {
            replay_help();
            return 0;
        }
        if (strcmp(name, "per-record") == 0) {
            oo.per_record = true;
            continue;
        }
        if (strcmp(name, "timing") == 0) {
            timing = true;
            continue;
        }
        if (strcmp(name, "step-model") == 0) {
            step_model_on = true;
            continue;
        }
        if (tsim_step_model_option_exists(name) && tsim_step_model_option_is_flag(name)) {
            bool known;
            tsim_step_model_option(&step_model, name, NULL, &known, &err);
            continue;
        }
        if (tsim_planner_option_exists(name) && tsim_planner_option_is_flag(name)) {
            bool known;
            if (inl || tsim_planner_options_set(&base, name, NULL, &known, &err))
                return tsim_cli_usage_error(cmd, "--%s takes no value", name);
            continue;
        }
        const char *val = tsim_arg_value(&it, inl);
        if (!val)
            return tsim_cli_usage_error(cmd, "option -%s%s needs a value", name[1] ? "-" : "", name);
        int rc = TSIM_OK;
        if (strcmp(name, "planners") == 0)
            planners_arg = val;
        else if (strcmp(name, "slots") == 0)
            rc = tsim_parse_int(val, 0, 1024, &slots, "--slots", &err);
        else if (strcmp(name, "lambda-eval") == 0)
            rc = tsim_parse_double(val, 0, 1e9, &lambda_eval, "--lambda-eval", &err);
        else if (strcmp(name, "lambda") == 0) {
            rc = tsim_parse_double(val, 1e-9, 1e9, &lambda_eval, "--lambda", &err);
            base.lambda_plan = lambda_eval;
        } else if (strcmp(name, "ep") == 0)
            rc = tsim_parse_int(val, 1, 4096, &ropts.ep, "--ep", &err);
        else if (strcmp(name, "rpn") == 0 || strcmp(name, "ranks-per-node") == 0)
            rc = tsim_parse_int(val, 1, 4096, &ropts.ranks_per_node, "--rpn", &err);
        else if (strcmp(name, "dataset") == 0)
            ropts.dataset = val;
        else if (strcmp(name, "fail-if") == 0) {
            tsim_failif *f;
            if (n_gates == 32)
                return tsim_cli_usage_error(cmd, "at most 32 --fail-if expressions");
            if (tsim_failif_parse(val, &f, &err))
                return tsim_cli_usage_error(cmd, "%s", err.msg);
            tsim_failif_free(f);
            gates[n_gates++] = val;
        } else if (strcmp(name, "dump-plans") == 0)
            dump_path = val;
        else if (strcmp(name, "format") == 0)
            rc = tsim_format_parse(val, &oo.format, &err);
        else if (strcmp(name, "o") == 0 || strcmp(name, "output") == 0)
            out_path = val;
        else if (tsim_planner_option_exists(name)) {
            bool known;
            rc = tsim_planner_options_set(&base, name, val, &known, &err);
        } else if (tsim_step_model_option_exists(name)) {
            bool known;
            rc = tsim_step_model_option(&step_model, name, val, &known, &err);
        } else
            return tsim_cli_usage_error(cmd, "unknown option '%s'", it.argv[it.i - (inl ? 1 : 2)]);
        if (rc)
            return tsim_cli_usage_error(cmd, "%s", err.msg);
    }
    if (!path)
        return tsim_cli_usage_error(cmd, "missing trace FILE");

    tsim_planner planners[MAX_PLANNERS];
    int n_planners = 0;
    if (tsim_planner_list_parse(planners_arg, &base, planners, MAX_PLANNERS, &n_planners, &err))
        return tsim_cli_usage_error(cmd, "%s", err.msg);

    tsim_reader *reader = NULL;
    if (tsim_reader_open(&reader, path, &ropts, &err))
        return tsim_cli_fail(cmd, &err);
    const tsim_trace_header *h = tsim_reader_header(reader);
    if (tsim_reader_rebucketed(reader))
        fprintf(stderr, "taotsim replay: %s: rebucketed to EP %d (per-expert totals kept, sources split evenly)\n",
                path, h->ep);

    tsim_session s;
    if (tsim_session_init(&s, h->ep, h->experts, h->ranks_per_node, slots, h->home, planners, n_planners,
                          lambda_eval, &err)) {
        tsim_reader_close(reader);
        return tsim_cli_fail(cmd, &err);
    }
    tsim_planner_report_fallbacks(s.planners, s.n_planners, stderr);
    s.timing = timing;
    s.step_model_on = step_model_on;
    s.step_model = step_model;
    s.keep_ids = oo.per_record;
    /* Flat memory however long the trace: past TSIM_SESSION_EXACT_RECORDS
     * records (and without --per-record) the metric series switch to the
     * bounded summary of stats.h; shorter replays keep every value and print
     * exactly what they always did. */
    tsim_session_bound_memory(&s, TSIM_SESSION_EXACT_RECORDS);
    replay_hook_ctx hctx = {.trace_path = path};
    int status = TSIM_OK;
    tsim_outfile out = {0};
    if (dump_path) {
        if (tsim_outfile_open(&hctx.dump, dump_path, &err)) {
            status = tsim_cli_fail(cmd, &err);
            goto done;
        }
        hctx.dumping = true;
    }
    s.hook = dump_hook;
    s.hook_ctx = &hctx;

    tsim_progress progress;
    tsim_progress_start(&progress, "replay");
    for (;;) {
        const tsim_record *rec;
        int got = tsim_reader_next(reader, &rec, &err);
        if (got == 0)
            break;
        if (got < 0 || got > 1) {
            status = tsim_cli_fail(cmd, &err);
            goto done;
        }
        if (tsim_session_record(&s, rec, &err)) {
            status = tsim_cli_fail(cmd, &err);
            goto done;
        }
        int64_t done_bytes, total_bytes;
        tsim_reader_progress(reader, &done_bytes, &total_bytes);
        tsim_progress_update(&progress, done_bytes, total_bytes);
    }
    tsim_progress_finish(&progress);

    if (tsim_outfile_open(&out, out_path, &err)) {
        status = tsim_cli_fail(cmd, &err);
        goto done;
    }
    oo.trace_path = path;
    oo.header = h;
    oo.records = tsim_reader_count(reader);
    /* Both files written and flushed before either is renamed into place: a
     * full disk under either leaves neither behind. */
    if (tsim_replay_output_print(out.fp, &s, &oo, &err) || tsim_outfile_flush(&out, &err) ||
        (hctx.dumping && tsim_outfile_flush(&hctx.dump, &err))) {
        status = tsim_cli_fail(cmd, &err);
        goto done;
    }
    if (hctx.dumping && tsim_outfile_commit(&hctx.dump, &err)) {
        hctx.dumping = false;
        status = tsim_cli_fail(cmd, &err);
        goto done;
    }
    hctx.dumping = false;
    if (tsim_outfile_commit(&out, &err)) {
        status = tsim_cli_fail(cmd, &err);
        goto done;
    }
    status = check_gates(&s, gates, n_gates);
done:
    if (hctx.dumping)
        tsim_outfile_abort(&hctx.dump);
    tsim_outfile_abort(&out);
    tsim_session_free(&s);
    tsim_reader_close(reader);
    return status;
}

static void vector_help(void)
{
    printf("usage: taotsim vector FILE... [--planner NAME] [-o OUT]\n"
           "\n"
           "Reads planner test vectors (shared/spec/vectors format), runs the vector's\n"
           "planner (or --planner) with the vector's options on its counts, and prints\n"
           "each vector back as one JSON line with \"got\" (its plan, loads and metrics)\n"
           "in place of \"expect\". λ_eval is 3.\n"
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
    p.desc = tsim_planner_find(pname);
    if (!p.desc) {
        tsim_vector_free(&v);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: unknown planner '%s'", file, pname);
    }
    snprintf(p.label, sizeof p.label, "%s", pname);
    p.opts = v.opts;
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

int tsim_cmd_vector(int argc, char **argv)
{
    const char *cmd = "vector";
    const char *files[1024];
    int nfiles = 0;
    const char *planner = NULL, *out_path = NULL;
    tsim_argiter it = {argc, argv, 1};
    const char *name, *inl;
    int kind;
    while ((kind = tsim_arg_next(&it, &name, &inl)) != TSIM_ARG_END) {
        if (kind == TSIM_ARG_POSITIONAL) {
            if (nfiles == 1024)
                return tsim_cli_usage_error(cmd, "at most 1024 files");
            files[nfiles++] = name;
            continue;
        }
        if (strcmp(name, "h") == 0 || strcmp(name, "help") == 0) {
            vector_help();
            return 0;
        }
        const char *val = tsim_arg_value(&it, inl);
        if (!val)
            return tsim_cli_usage_error(cmd, "option '%s' needs a value", name);
        if (strcmp(name, "planner") == 0)
            planner = val;
        else if (strcmp(name, "o") == 0 || strcmp(name, "output") == 0)
            out_path = val;
        else
            return tsim_cli_usage_error(cmd, "unknown option '--%s'", name);
    }
    if (nfiles == 0)
        return tsim_cli_usage_error(cmd, "missing vector FILE");
    tsim_error err = {0};
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
