/* taotsim gen: write a synthetic routing trace (experiments.md, "Synthetic
 * traces"; cli.md). Parses, calls gen.c and the trace writer, reports. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli_common.h"
#include "commands.h"
#include "gen.h"
#include "options.h"
#include "parse.h"
#include "topology.h"
#include "trace.h"

static const char *const CMD = "gen";

static void usage(FILE *out)
{
    tsim_gen_params d;
    tsim_gen_params_default(&d);
    fprintf(out,
            "usage: taotsim gen -o FILE [options]\n"
            "\n"
            "Writes a synthetic MoE routing trace: JSON, or JSON Lines when FILE ends in\n"
            ".jsonl or .jsonl.gz (gzip). Base routing: a symmetric Dirichlet expert\n"
            "popularity per layer, drifting between microbatches; every token picks top-k\n"
            "distinct experts. Hotspot: the first share f of every rank's tokens goes to\n"
            "the hot ranks' experts. f is found so that the mean initial imbalance of the\n"
            "trace is within 0.5 pp of --imbalance, or given with --hot-fraction. The same\n"
            "arguments give the same bytes.\n"
            "\n"
            "Options:\n"
            "  -o, --output FILE      output trace (required)\n"
            "  --experts N            routed experts E (default %d)\n"
            "  --ep N                 EP size R, dividing E (default %d)\n"
            "  --rpn N                ranks per node (default %d)\n"
            "  --topk N               distinct experts per token (default %d)\n"
            "  --tokens N             tokens per rank per microbatch and layer (default %d)\n"
            "  --microbatches N       microbatches (default %d)\n"
            "  --layers N             MoE layers; records = microbatches x layers (default %d)\n"
            "  --imbalance X          target mean initial imbalance, 0.3 = 30%% (default 0.3)\n"
            "  --hot-fraction F       set f in 0..1 directly instead of --imbalance\n"
            "  --hot-ranks SPEC       the hot ranks: N for ranks 0..N-1 (default %d),\n"
            "                         per-node:N for the first N ranks of every node, or\n"
            "                         a list of ranks such as 0,8,16,24 (one rank: ranks:5)\n"
            "  --hot-experts M|all    the hotspot loads the first M home experts of each\n"
            "                         hot rank (default all)\n"
            "  --hot-skew S           unevenness over the hot experts: the j-th (from 0) of\n"
            "                         a hot rank weighs popularity x (j + 1)^-S; 0 = as the\n"
            "                         base popularity (default), up to %g. When the hot\n"
            "                         experts are no more than --topk, a hot token takes\n"
            "                         the j-th with probability (j + 1)^-S instead. Needs\n"
            "                         at least 2 hot experts per hot rank\n"
            "  --concentration C      Dirichlet parameter per expert; larger is flatter\n"
            "                         (default %g)\n"
            "  --drift D              popularity drift per microbatch in 0..1: 0 frozen,\n"
            "                         1 redrawn each time (default %g)\n"
            "  --hot-move N           every N microbatches the hotspot moves on by one\n"
            "                         rank (rank r's hot experts become rank r+1's,\n"
            "                         wrapping around); 0 never moves it (default 0)\n"
            "  --seed S               random seed, 0..2^53-1 (default %llu)\n"
            "  --generator 1|2|3      1 (default): every token draws its k distinct\n"
            "                         experts; 2: each rank's counts are drawn at once\n"
            "                         as multinomials, each expert capped at the tokens\n"
            "                         that could pick it, a different (close)\n"
            "                         distribution; 3: version 2's distribution drawn\n"
            "                         from Poisson tables and blocks of picks, several\n"
            "                         times faster again; its --imbalance search runs\n"
            "                         on every 8th microbatch and is kept only if the\n"
            "                         whole trace meets the target (else it is redone\n"
            "                         on the whole trace). Recorded in the trace's meta\n"
            "  -j N                   threads sampling the source ranks; the bytes are the\n"
            "                         same at any N (default 1)\n"
            "  --gzip-level N         deflate level 0..9 of a .jsonl.gz (default 6); at\n"
            "                         level 6 deflate costs more than generating\n"
            "  --progress             progress lines on stderr even when it is not a\n"
            "                         terminal (one every 5 s)\n"
            "  -h, --help             this help\n"
            "\n"
            "A one-line summary (records, achieved imbalance, f) goes to stderr. Exit\n"
            "status 2 on a usage error or an unreachable --imbalance target.\n",
            d.experts, d.ep, d.ranks_per_node, d.topk, d.tokens, d.microbatches, d.layers, d.hot_ranks,
            TSIM_GEN_MAX_SKEW, d.concentration, d.drift, (unsigned long long)d.seed);
}

typedef struct {
    tsim_progress bar;
    char what[64];
    int trial;
    bool writing;
    bool lines;       /* --progress: whole lines, wherever stderr goes */
    double last_line; /* when the last such line was printed */
} progress_state;

/* --progress: a line every 5 s (a log file or a batch job's output). */
static void progress_line(progress_state *ps, int64_t done, int64_t total)
{
    double now = tsim_now_seconds();
    if (done < total && now - ps->last_line < 5.0)
        return;
    ps->last_line = now;
    fprintf(stderr, "%s: %lld/%lld records (%.0f%%) %.1fs\n", ps->what, (long long)done, (long long)total,
            total > 0 ? 100.0 * (double)done / (double)total : 0.0, now - ps->bar.start);
    fflush(stderr);
}

static void on_progress(void *ctx, int trial, int64_t done, int64_t total)
{
    progress_state *ps = ctx;
    if (trial != ps->trial) {
        ps->trial = trial;
        if (trial > 0)
            snprintf(ps->what, sizeof ps->what, "gen: calibrating f, trial %d", trial);
        else
            snprintf(ps->what, sizeof ps->what, "gen: %s", ps->writing ? "writing" : "measuring");
    }
    if (ps->lines)
        progress_line(ps, done, total);
    else
        tsim_progress_update(&ps->bar, done, total);
}

/* Option ids are positions in gen_options (+1): messages name the option as typed. */
enum {
    OPT_OUTPUT = 1, OPT_EXPERTS, OPT_EP, OPT_RPN, OPT_RANKS_PER_NODE, OPT_TOPK, OPT_TOKENS, OPT_MICROBATCHES,
    OPT_LAYERS, OPT_HOT_RANKS, OPT_HOT_EXPERTS, OPT_HOT_SKEW, OPT_IMBALANCE, OPT_HOT_FRACTION, OPT_CONCENTRATION,
    OPT_DRIFT, OPT_HOT_MOVE, OPT_SEED, OPT_JOBS, OPT_GZIP_LEVEL, OPT_PROGRESS, OPT_GENERATOR,
};

static const tsim_cli_option gen_options[] = {
    {"output", 'o', true, OPT_OUTPUT},
    {"experts", 0, true, OPT_EXPERTS},
    {"ep", 0, true, OPT_EP},
    {"rpn", 0, true, OPT_RPN},
    {"ranks-per-node", 0, true, OPT_RANKS_PER_NODE},
    {"topk", 0, true, OPT_TOPK},
    {"tokens", 0, true, OPT_TOKENS},
    {"microbatches", 0, true, OPT_MICROBATCHES},
    {"layers", 0, true, OPT_LAYERS},
    {"hot-ranks", 0, true, OPT_HOT_RANKS},
    {"hot-experts", 0, true, OPT_HOT_EXPERTS},
    {"hot-skew", 0, true, OPT_HOT_SKEW},
    {"imbalance", 0, true, OPT_IMBALANCE},
    {"hot-fraction", 0, true, OPT_HOT_FRACTION},
    {"concentration", 0, true, OPT_CONCENTRATION},
    {"drift", 0, true, OPT_DRIFT},
    {"hot-move", 0, true, OPT_HOT_MOVE},
    {"seed", 0, true, OPT_SEED},
    {"jobs", 'j', true, OPT_JOBS},
    {"gzip-level", 0, true, OPT_GZIP_LEVEL},
    {"progress", 0, false, OPT_PROGRESS},
    {"generator", 0, true, OPT_GENERATOR},
    {0},
};

typedef struct {
    tsim_gen_params p;
    const char *output;
    double target;
    bool have_target, have_fraction;
    bool progress_lines; /* --progress */
    int gzip_level;      /* --gzip-level */
} gen_args;

static int gen_option(void *ctx, int id, const char *value, tsim_error *err)
{
    gen_args *a = ctx;
    tsim_gen_params *p = &a->p;
    char name[40];
    snprintf(name, sizeof name, "--%s", gen_options[id - 1].name);
    switch (id) {
    case OPT_OUTPUT:
        a->output = value;
        return TSIM_OK;
    case OPT_EXPERTS:
        return tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p->experts, name, err);
    case OPT_EP:
        return tsim_parse_int(value, 1, TSIM_MAX_RANKS, &p->ep, name, err);
    case OPT_RPN:
    case OPT_RANKS_PER_NODE:
        return tsim_parse_int(value, 1, TSIM_MAX_RANKS, &p->ranks_per_node, name, err);
    case OPT_TOPK:
        return tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p->topk, name, err);
    case OPT_TOKENS:
        return tsim_parse_int(value, 1, TSIM_GEN_MAX_TOKENS, &p->tokens, name, err);
    case OPT_MICROBATCHES:
        return tsim_parse_int(value, 1, TSIM_GEN_MAX_RECORDS, &p->microbatches, name, err);
    case OPT_LAYERS:
        return tsim_parse_int(value, 1, TSIM_GEN_MAX_RECORDS, &p->layers, name, err);
    case OPT_HOT_RANKS:
        return tsim_gen_hot_ranks_parse(value, p, err);
    case OPT_HOT_EXPERTS:
        if (strcmp(value, "all") == 0) {
            p->hot_experts = 0;
            return TSIM_OK;
        }
        return tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p->hot_experts, name, err);
    case OPT_HOT_SKEW:
        return tsim_parse_double(value, 0.0, TSIM_GEN_MAX_SKEW, &p->hot_skew, name, err);
    case OPT_IMBALANCE:
        a->have_target = true;
        return tsim_parse_double(value, 0.0, TSIM_MAX_RANKS, &a->target, name, err);
    case OPT_HOT_FRACTION:
        a->have_fraction = true;
        return tsim_parse_double(value, 0.0, 1.0, &p->hot_fraction, name, err);
    case OPT_CONCENTRATION:
        return tsim_parse_double(value, 1e-3, 1e9, &p->concentration, name, err);
    case OPT_DRIFT:
        return tsim_parse_double(value, 0.0, 1.0, &p->drift, name, err);
    case OPT_HOT_MOVE:
        return tsim_parse_int(value, 0, TSIM_GEN_MAX_RECORDS, &p->hot_move, name, err);
    case OPT_SEED: {
        int64_t seed;
        int rc = tsim_parse_int64(value, 0, (int64_t)TSIM_GEN_MAX_SEED, &seed, name, err);
        p->seed = (uint64_t)seed;
        return rc;
    }
    case OPT_JOBS:
        return tsim_parse_int(value, 1, TSIM_GEN_MAX_THREADS, &p->threads, name, err);
    case OPT_GZIP_LEVEL:
        return tsim_parse_int(value, 0, 9, &a->gzip_level, name, err);
    case OPT_GENERATOR:
        return tsim_parse_int(value, TSIM_GEN_VERSION, TSIM_GEN_VERSION_BLOCKS, &p->version, name, err);
    case OPT_PROGRESS:
        a->progress_lines = true;
        return TSIM_OK;
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "gen: option %d has no handler", id);
    }
}

/* Parses and checks the command line. Returns 0, TSIM_CLI_HELP, or 2 after
 * printing the usage error. */
static int gen_parse(int argc, char **argv, gen_args *a)
{
    tsim_gen_params_default(&a->p);
    a->output = NULL;
    a->target = 0.3;
    a->have_target = a->have_fraction = false;
    a->progress_lines = false;
    a->gzip_level = 6;
    const tsim_cli_parser parser = {.cmd = CMD, .options = gen_options, .on_option = gen_option, .ctx = a};
    int rc = tsim_cli_parse(&parser, argc, argv);
    if (rc)
        return rc;
    tsim_error err = {0};
    if (!a->output)
        return tsim_cli_usage_error(CMD, "no output file: give -o FILE");
    if (a->have_target && a->have_fraction)
        return tsim_cli_usage_error(CMD, "give --imbalance or --hot-fraction, not both");
    if (tsim_gen_params_check(&a->p, &err))
        return tsim_cli_usage_error(CMD, "%s", err.msg);
    return 0;
}

/* One run of gen: its parameters, f's provenance and the achieved mean. */
typedef struct {
    gen_args a;
    tsim_gen_params p;
    tsim_gen_calibration cal;
    double achieved;
    int64_t records;
    progress_state ps;
    bool missed; /* f from a sample missed the target on the whole trace */
} gen_run;

/* f from a sample's calibration (version 3) holds only if the whole trace
 * also meets the target. */
static bool misses_target(const gen_run *run)
{
    return !run->a.have_fraction && fabs(run->achieved - run->a.target) > TSIM_GEN_TOLERANCE;
}

/* The trace's meta: the parameters, the calibration unless f was given,
 * and the achieved mean. NULL when out of memory. */
static cJSON *run_meta(const gen_run *run)
{
    return tsim_gen_meta(&run->p, run->a.have_fraction ? NULL : &run->cal, run->achieved);
}

/* A writer's close after the run's rc: its error counts only if the run had
 * none. */
static int after_close(int rc, int close_rc, const tsim_error *close_err, tsim_error *err)
{
    if (!rc && close_rc) {
        *err = *close_err;
        return close_rc;
    }
    return rc;
}

static tsim_trace_header gen_header(const tsim_gen_params *p, cJSON *meta)
{
    return (tsim_trace_header){.experts = p->experts,
                               .ep = p->ep,
                               .ranks_per_node = p->ranks_per_node,
                               .topk = p->topk,
                               .home = NULL,
                               .meta = meta};
}

/* Writes every record of g through w, summing the records' imbalance in
 * their order (the order of the measuring pass, so the mean is the same
 * number to the bit). */
static int write_records(gen_run *run, tsim_gen *g, tsim_writer *w, double *sum, tsim_error *err)
{
    int rc = TSIM_OK;
    int64_t written = 0;
    *sum = 0.0;
    run->ps.writing = true;
    run->ps.trial = -1;
    while (!rc) {
        const tsim_record *rec;
        double rho;
        if (tsim_gen_next(g, &rec, &rho) != 1)
            break;
        rc = tsim_writer_write(w, rec, err);
        *sum += rho;
        written++;
        on_progress(&run->ps, 0, written, run->records);
    }
    return rc;
}

/* The writing pass after a measuring one (or a calibration): f and the
 * achieved mean are known. */
static int write_known(gen_run *run, tsim_error *err)
{
    const tsim_gen_params *p = &run->p;
    int rc;
    cJSON *meta = run_meta(run);
    if (!meta)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the trace meta");
    tsim_trace_header header = gen_header(p, meta);
    tsim_gen *g = NULL;
    tsim_writer *w = NULL;
    rc = tsim_gen_open(&g, p, err);
    if (!rc)
        rc = tsim_writer_open(&w, run->a.output, &header, err);
    if (!rc)
        rc = tsim_writer_set_gzip_level(w, run->a.gzip_level, err);
    double sum = 0.0;
    if (!rc)
        rc = write_records(run, g, w, &sum, err);
    /* The written records must be the ones measured: same streams, same sums. */
    if (!rc && sum / (double)run->records != run->achieved)
        rc = tsim_error_set(err, TSIM_E_INTERNAL,
                            "the written trace's mean imbalance %.17g differs from the measured %.17g",
                            sum / (double)run->records, run->achieved);
    if (w) {
        tsim_error close_err = {0};
        rc = after_close(rc, tsim_writer_close(w, rc == TSIM_OK, &close_err), &close_err, err);
    }
    tsim_gen_close(g);
    cJSON_Delete(meta);
    return rc;
}

/* A known f (given, or a sample's) and a plain .json or .jsonl file: one
 * pass. With a sample's f, the file is dropped (run->missed) when the whole
 * trace misses the target. The records go to a scratch file while their
 * imbalance is summed; the header, with the mean, is written at close and
 * the records appended: the same bytes as two passes. */
static int gen_one_pass(gen_run *run, tsim_error *err)
{
    const tsim_gen_params *p = &run->p;
    tsim_gen *g = NULL;
    tsim_writer *w = NULL;
    int rc = tsim_gen_open(&g, p, err);
    if (!rc)
        rc = tsim_writer_open_body(&w, run->a.output, p->ep, p->experts, err);
    double sum = 0.0;
    if (!rc)
        rc = write_records(run, g, w, &sum, err);
    tsim_gen_close(g);
    run->achieved = sum / (double)run->records;
    run->missed = !rc && misses_target(run);
    cJSON *meta = NULL;
    if (!rc && !(meta = run_meta(run)))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the trace meta");
    tsim_trace_header header = gen_header(p, meta);
    if (w) {
        tsim_error close_err = {0};
        const bool commit = rc == TSIM_OK && !run->missed;
        rc = after_close(rc, tsim_writer_close_with_header(w, &header, commit, &close_err), &close_err, err);
    }
    cJSON_Delete(meta);
    return rc;
}

/* f and the achieved mean from a calibration. */
static void take_calibration(gen_run *run)
{
    run->p.hot_fraction = run->cal.hot_fraction;
    run->achieved = run->cal.achieved;
}

/* The whole run. f is given, or calibrated: on the whole trace (versions 1
 * and 2), whose mean is then known; or on a sample (version 3), kept only
 * if a pass over the whole trace meets the target, else calibrated in full.
 * That pass writes the file where the header can come last (`one_pass`: a
 * plain .json or .jsonl), else it only measures the mean, which a
 * .jsonl.gz header needs first (its first gzip member holds the header and
 * the first records together). */
static int gen_trace(gen_run *run, bool one_pass, tsim_error *err)
{
    int rc;
    if (!run->a.have_fraction) {
        if ((rc = tsim_gen_calibrate_sampled(&run->p, run->a.target, &run->cal, on_progress, &run->ps, err)))
            return rc;
        take_calibration(run);
        if (run->cal.trial_records == run->records)
            return write_known(run, err);
    }
    if (one_pass) {
        rc = gen_one_pass(run, err);
        if (rc || !run->missed)
            return rc;
        run->missed = false;
    } else {
        if ((rc = tsim_gen_mean_imbalance(&run->p, &run->achieved, on_progress, &run->ps, err)))
            return rc;
        if (!misses_target(run))
            return write_known(run, err);
    }
    if ((rc = tsim_gen_calibrate(&run->p, run->a.target, &run->cal, on_progress, &run->ps, err)))
        return rc;
    take_calibration(run);
    return write_known(run, err);
}

/* The one-line summary on stderr. */
static void gen_report(const gen_run *run, double start)
{
    const tsim_gen_params *p = &run->p;
    const tsim_gen_calibration *cal = &run->cal;
    const int64_t records = run->records;
    const int64_t hot = tsim_gen_hot_tokens(p);
    char how[160];
    if (run->a.have_fraction)
        snprintf(how, sizeof how, "hot fraction given");
    else
        snprintf(how, sizeof how, "target %.2f%%, base routing %.2f%%, %d calibration trials%s", 100.0 * cal->target,
                 100.0 * cal->base, cal->trials, cal->trial_records < records ? " on a sample of the records" : "");
    char regime[160] = "";
    if (!tsim_gen_default_regime(p)) {
        char spec[64];
        tsim_gen_hot_ranks_format(p, spec, sizeof spec);
        snprintf(regime, sizeof regime, "; hot ranks %s, %d hot experts each, skew %g", spec,
                 tsim_gen_hot_experts_per_rank(p), p->hot_skew);
    }
    fprintf(stderr,
            "taotsim gen: wrote %lld record%s (EP%d, %d experts, top-%d, %d tokens per rank%s) to %s: mean initial "
            "imbalance %.2f%% (%s), f = %.6f (%lld of %lld tokens per record hot), %.1f s\n",
            (long long)records, records == 1 ? "" : "s", p->ep, p->experts, p->topk, p->tokens, regime,
            run->a.output, 100.0 * run->achieved, how, p->hot_fraction, (long long)hot,
            (long long)p->tokens * p->ep, tsim_now_seconds() - start);
}

int tsim_cmd_gen(int argc, char **argv)
{
    gen_run run;
    memset(&run, 0, sizeof run);
    int parsed = gen_parse(argc, argv, &run.a);
    if (parsed == TSIM_CLI_HELP) {
        usage(stdout);
        return 0;
    }
    if (parsed)
        return parsed;
    run.p = run.a.p;
    const char *output = run.a.output;
    tsim_error err = {0};
    tsim_trace_format fmt;
    if (tsim_trace_format_from_path(output, &fmt, &err))
        return tsim_cli_fail(CMD, &err);
    if (fmt == TSIM_FMT_CSV)
        return tsim_cli_usage_error(CMD, "%s: gen writes .json, .jsonl or .jsonl.gz, not CSV", output);

    const double start = tsim_now_seconds();
    run.records = tsim_gen_record_count(&run.p);
    progress_state *ps = &run.ps;
    ps->trial = -1;
    tsim_progress_start(&ps->bar, ps->what);
    ps->lines = run.a.progress_lines;
    ps->last_line = ps->bar.start;

    int rc = gen_trace(&run, tsim_writer_can_defer_header(output), &err);
    tsim_progress_finish(&ps->bar);
    if (rc)
        return tsim_cli_fail(CMD, &err);
    gen_report(&run, start);
    return 0;
}
