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
            "  --seed S               random seed, 0..2^53-1 (default %llu)\n"
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
} progress_state;

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
    tsim_progress_update(&ps->bar, done, total);
}

/* "--name=value" or "--name value": the value, advancing *i; NULL if absent. */
static const char *option_value(int argc, char **argv, int *i, const char *eq)
{
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

int tsim_cmd_gen(int argc, char **argv)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    const char *output = NULL;
    double target = 0.3;
    bool have_target = false, have_fraction = false;
    tsim_error err = {0};

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(arg, "-o") == 0) {
            if (i + 1 >= argc)
                return tsim_cli_usage_error(CMD, "-o needs a file name");
            output = argv[++i];
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return tsim_cli_usage_error(CMD, "unexpected argument '%s'", arg);
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        char name[64];
        if (name_len >= sizeof name)
            return tsim_cli_usage_error(CMD, "unknown option '%s'", arg);
        memcpy(name, arg, name_len);
        name[name_len] = '\0';
        const char *value = option_value(argc, argv, &i, eq);
        if (!value)
            return tsim_cli_usage_error(CMD, "%s needs a value", name);

        int rc = TSIM_OK;
        if (strcmp(name, "--output") == 0) {
            output = value;
        } else if (strcmp(name, "--experts") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p.experts, name, &err);
        } else if (strcmp(name, "--ep") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_MAX_RANKS, &p.ep, name, &err);
        } else if (strcmp(name, "--rpn") == 0 || strcmp(name, "--ranks-per-node") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_MAX_RANKS, &p.ranks_per_node, name, &err);
        } else if (strcmp(name, "--topk") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p.topk, name, &err);
        } else if (strcmp(name, "--tokens") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_GEN_MAX_TOKENS, &p.tokens, name, &err);
        } else if (strcmp(name, "--microbatches") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_GEN_MAX_RECORDS, &p.microbatches, name, &err);
        } else if (strcmp(name, "--layers") == 0) {
            rc = tsim_parse_int(value, 1, TSIM_GEN_MAX_RECORDS, &p.layers, name, &err);
        } else if (strcmp(name, "--hot-ranks") == 0) {
            rc = tsim_gen_hot_ranks_parse(value, &p, &err);
        } else if (strcmp(name, "--hot-experts") == 0) {
            if (strcmp(value, "all") == 0)
                p.hot_experts = 0;
            else
                rc = tsim_parse_int(value, 1, TSIM_MAX_EXPERTS, &p.hot_experts, name, &err);
        } else if (strcmp(name, "--hot-skew") == 0) {
            rc = tsim_parse_double(value, 0.0, TSIM_GEN_MAX_SKEW, &p.hot_skew, name, &err);
        } else if (strcmp(name, "--imbalance") == 0) {
            rc = tsim_parse_double(value, 0.0, TSIM_MAX_RANKS, &target, name, &err);
            have_target = true;
        } else if (strcmp(name, "--hot-fraction") == 0) {
            rc = tsim_parse_double(value, 0.0, 1.0, &p.hot_fraction, name, &err);
            have_fraction = true;
        } else if (strcmp(name, "--concentration") == 0) {
            rc = tsim_parse_double(value, 1e-3, 1e9, &p.concentration, name, &err);
        } else if (strcmp(name, "--drift") == 0) {
            rc = tsim_parse_double(value, 0.0, 1.0, &p.drift, name, &err);
        } else if (strcmp(name, "--seed") == 0) {
            int64_t seed;
            rc = tsim_parse_int64(value, 0, (int64_t)TSIM_GEN_MAX_SEED, &seed, name, &err);
            p.seed = (uint64_t)seed;
        } else {
            return tsim_cli_usage_error(CMD, "unknown option '%s'", name);
        }
        if (rc)
            return tsim_cli_usage_error(CMD, "%s", err.msg);
    }
    if (!output)
        return tsim_cli_usage_error(CMD, "no output file: give -o FILE");
    if (have_target && have_fraction)
        return tsim_cli_usage_error(CMD, "give --imbalance or --hot-fraction, not both");
    if (tsim_gen_params_check(&p, &err))
        return tsim_cli_usage_error(CMD, "%s", err.msg);
    tsim_trace_format fmt;
    if (tsim_trace_format_from_path(output, &fmt, &err))
        return tsim_cli_fail(CMD, &err);
    if (fmt == TSIM_FMT_CSV)
        return tsim_cli_usage_error(CMD, "%s: gen writes .json, .jsonl or .jsonl.gz, not CSV", output);

    const double start = tsim_now_seconds();
    const int64_t records = tsim_gen_record_count(&p);
    progress_state ps;
    memset(&ps, 0, sizeof ps);
    ps.trial = -1;
    tsim_progress_start(&ps.bar, ps.what);

    /* The header carries the achieved mean, so it is known before writing:
     * from the calibration, or from one measuring pass for a given f. */
    tsim_gen_calibration cal;
    double achieved;
    if (!have_fraction) {
        int rc = tsim_gen_calibrate(&p, target, &cal, on_progress, &ps, &err);
        if (rc) {
            tsim_progress_finish(&ps.bar);
            return tsim_cli_fail(CMD, &err);
        }
        p.hot_fraction = cal.hot_fraction;
        achieved = cal.achieved;
    } else {
        int rc = tsim_gen_mean_imbalance(&p, &achieved, on_progress, &ps, &err);
        if (rc) {
            tsim_progress_finish(&ps.bar);
            return tsim_cli_fail(CMD, &err);
        }
    }

    cJSON *meta = tsim_gen_meta(&p, have_fraction ? NULL : &cal, achieved);
    if (!meta) {
        tsim_progress_finish(&ps.bar);
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory for the trace meta");
        return tsim_cli_fail(CMD, &err);
    }
    tsim_trace_header header = {.experts = p.experts,
                                .ep = p.ep,
                                .ranks_per_node = p.ranks_per_node,
                                .topk = p.topk,
                                .home = NULL,
                                .meta = meta};
    tsim_gen *g = NULL;
    tsim_writer *w = NULL;
    int rc = tsim_gen_open(&g, &p, &err);
    if (!rc)
        rc = tsim_writer_open(&w, output, &header, &err);
    double sum = 0.0;
    ps.writing = true;
    ps.trial = -1;
    int64_t written = 0;
    while (!rc) {
        const tsim_record *rec;
        double rho;
        if (tsim_gen_next(g, &rec, &rho) != 1)
            break;
        rc = tsim_writer_write(w, rec, &err);
        sum += rho;
        written++;
        on_progress(&ps, 0, written, records);
    }
    /* The written records must be the ones measured: same streams, same sums. */
    if (!rc && sum / (double)records != achieved)
        rc = tsim_error_set(&err, TSIM_E_INTERNAL,
                            "the written trace's mean imbalance %.17g differs from the measured %.17g",
                            sum / (double)records, achieved);
    if (w) {
        tsim_error close_err = {0};
        int crc = tsim_writer_close(w, rc == TSIM_OK, &close_err);
        if (!rc && crc) {
            rc = crc;
            err = close_err;
        }
    }
    tsim_gen_close(g);
    cJSON_Delete(meta);
    tsim_progress_finish(&ps.bar);
    if (rc)
        return tsim_cli_fail(CMD, &err);

    const int64_t hot = tsim_gen_hot_tokens(&p);
    char how[160];
    if (have_fraction)
        snprintf(how, sizeof how, "hot fraction given");
    else
        snprintf(how, sizeof how, "target %.2f%%, base routing %.2f%%, %d calibration trials", 100.0 * cal.target,
                 100.0 * cal.base, cal.trials);
    char regime[160] = "";
    if (!tsim_gen_default_regime(&p)) {
        char spec[64];
        tsim_gen_hot_ranks_format(&p, spec, sizeof spec);
        snprintf(regime, sizeof regime, "; hot ranks %s, %d hot experts each, skew %g", spec,
                 tsim_gen_hot_experts_per_rank(&p), p.hot_skew);
    }
    fprintf(stderr,
            "taotsim gen: wrote %lld record%s (EP%d, %d experts, top-%d, %d tokens per rank%s) to %s: mean initial "
            "imbalance %.2f%% (%s), f = %.6f (%lld of %lld tokens per record hot), %.1f s\n",
            (long long)records, records == 1 ? "" : "s", p.ep, p.experts, p.topk, p.tokens, regime, output, 100.0 * achieved, how,
            p.hot_fraction, (long long)hot, (long long)p.tokens * p.ep, tsim_now_seconds() - start);
    return 0;
}
