/* taotsim index: write or check a trace's sidecar index (trace_index.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "options.h"
#include "parse.h"
#include "trace_index.h"

static const char *const CMD = "index";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: taotsim index TRACE [-o INDEX] [--every N]\n"
            "       taotsim index --check TRACE [-o INDEX]\n"
            "\n"
            "Reads a .jsonl or .jsonl.gz trace (validating every record) and writes its\n"
            "index beside it (default TRACE" TSIM_INDEX_SUFFIX "): the record count, the records\n"
            "per layer, and seek points with a hash of each block's bytes: every N-th\n"
            "record of a .jsonl, every gzip member of a blocked .jsonl.gz (as gen and\n"
            "convert write). The trace's size and hash make a stale index detectable.\n"
            "'taotsim replay --shard I/N' uses the index beside its trace to read only\n"
            "its own records.\n"
            "\n"
            "Options:\n"
            "  -o, --output INDEX   the index file (default TRACE" TSIM_INDEX_SUFFIX ")\n"
            "  --every N            records per block of a .jsonl (default %d)\n"
            "  --check              check the index against the trace instead: exit 0\n"
            "                       when it is up to date, 2 when it is stale\n"
            "  -h, --help           this help\n",
            TSIM_INDEX_DEFAULT_EVERY);
}

static void print_summary(const char *trace, const tsim_trace_index *ix)
{
    printf("%s: %lld records, %lld bytes, %lld block%s (%s)\n", trace, (long long)ix->records,
           (long long)ix->trace_bytes, (long long)ix->n_blocks, ix->n_blocks == 1 ? "" : "s",
           ix->gzip ? "gzip members" : "record lines");
    for (int i = 0; i < ix->n_layers; i++)
        printf("  layer %lld: %lld records\n", (long long)ix->layers[i].layer, (long long)ix->layers[i].records);
}

enum { OPT_OUTPUT = 1, OPT_EVERY, OPT_CHECK };

static const tsim_cli_option index_options[] = {
    {"output", 'o', true, OPT_OUTPUT},
    {"every", 0, true, OPT_EVERY},
    {"check", 0, false, OPT_CHECK},
    {0},
};

typedef struct {
    const char *trace, *output;
    int every;
    bool check;
} index_args;

static int index_option(void *ctx, int id, const char *value, tsim_error *err)
{
    index_args *a = ctx;
    switch (id) {
    case OPT_OUTPUT:
        a->output = value;
        return TSIM_OK;
    case OPT_EVERY:
        return tsim_parse_int(value, 1, 1 << 30, &a->every, "--every", err);
    case OPT_CHECK:
        a->check = true;
        return TSIM_OK;
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "index: option %d has no handler", id);
    }
}

static int index_positional(void *ctx, const char *arg, tsim_error *err)
{
    index_args *a = ctx;
    if (a->trace)
        return tsim_error_set(err, TSIM_E_INPUT, "one trace at a time ('%s' and '%s')", a->trace, arg);
    a->trace = arg;
    return TSIM_OK;
}

int tsim_cmd_index(int argc, char **argv)
{
    index_args a = {.every = TSIM_INDEX_DEFAULT_EVERY};
    const tsim_cli_parser parser = {.cmd = CMD,
                                    .options = index_options,
                                    .on_option = index_option,
                                    .on_positional = index_positional,
                                    .ctx = &a};
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        usage(stdout);
        return 0;
    }
    if (parsed)
        return parsed;
    const char *trace = a.trace, *output = a.output;
    const int every = a.every;
    const bool check = a.check;
    tsim_error err = {0};
    if (!trace)
        return tsim_cli_usage_error(CMD, "no trace: give TRACE");
    char *path = NULL;
    if (!output) {
        size_t n = strlen(trace) + sizeof TSIM_INDEX_SUFFIX;
        if (!(path = malloc(n)))
            return tsim_cli_usage_error(CMD, "out of memory");
        snprintf(path, n, "%s%s", trace, TSIM_INDEX_SUFFIX);
        output = path;
    }
    tsim_trace_index ix;
    int rc;
    if (check) {
        rc = tsim_index_read(output, &ix, &err);
        if (!rc) {
            rc = tsim_index_check(&ix, trace, &err);
            if (!rc)
                printf("%s: the index %s is up to date (%lld records, %lld blocks)\n", trace, output,
                       (long long)ix.records, (long long)ix.n_blocks);
            tsim_index_free(&ix);
        }
    } else {
        rc = tsim_index_build(trace, every, &ix, &err);
        if (!rc) {
            rc = tsim_index_write(&ix, output, &err);
            if (!rc)
                print_summary(trace, &ix);
            tsim_index_free(&ix);
        }
    }
    free(path);
    return rc ? tsim_cli_fail(CMD, &err) : 0;
}
