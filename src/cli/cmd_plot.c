/* taotsim plot RESULT.json: gnuplot figures from a result file. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "options.h"
#include "plot.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: taotsim plot RESULT.json [-o DIR] [--format png|svg|both|none]\n"
            "\n"
            "Draws the figures of a result file: the JSON that replay, table1, ablation,\n"
            "sweep and scaling print with --format json ('-' reads it from standard\n"
            "input). Writes into DIR, for each figure, the data (NAME.dat),\n"
            "a gnuplot script (NAME.gp, from the templates in plots/) and the image that\n"
            "gnuplot renders from it (NAME.png, NAME.svg). Prints the files written.\n"
            "\n"
            "Options:\n"
            "  -o, --output DIR  output directory, created if missing (default: the result\n"
            "                    file's path without .json plus '-plots', e.g.\n"
            "                    out/table1.json -> out/table1-plots; ./taotsim-plots for '-')\n"
            "  --format F        png, svg, both, or none: data and scripts only (default: png)\n"
            "  -h, --help        this help\n"
            "\n"
            "Figures: replay (imbalance per record, from replay --per-record) or, from an\n"
            "ordinary replay result, replay_imbalance, replay_weighted, replay_intra,\n"
            "replay_inter and replay_offloaded (per planner: min, median, p95, max and\n"
            "mean over the records), table1_weighted and table1_residual,\n"
            "table1_pareto_epE_imbI (one per Table 1 cell: residual imbalance against\n"
            "weighted cost, the paper's points hollow), ablation, sweep_lpX (one per\n"
            "lambda_plan X), scaling_AXIS_residual and scaling_AXIS_weighted (one pair per\n"
            "axis). A planner has the same colour in every figure. Cells where a planner\n"
            "could not run (n/a in the result) are left out.\n"
            "\n"
            "PNG needs gnuplot with the pngcairo terminal (Debian and Ubuntu: gnuplot-nox);\n"
            "without it the exit status is 2 and nothing is written. --format none writes\n"
            "the data and scripts alone; to render a figure by hand:\n"
            "  cd DIR && gnuplot NAME.gp                     (writes NAME.png)\n"
            "  cd DIR && gnuplot -e 'fmt=\"svg\"' NAME.gp      (writes NAME.svg)\n"
            "\n"
            "Environment: TAOTSIM_GNUPLOT (the gnuplot to run, default gnuplot on PATH),\n"
            "TAOTSIM_PLOTS_DIR (the templates, default the source tree's plots/).\n"
            "Exit status: 0 success, 2 usage or input error or no usable gnuplot, 3 internal\n"
            "error.\n");
}

/* out/table1.json -> out/table1-plots; "-" -> taotsim-plots. */
static char *default_outdir(const char *result)
{
    if (strcmp(result, "-") == 0)
        return strdup("taotsim-plots");
    size_t n = strlen(result);
    if (n > 5 && strcmp(result + n - 5, ".json") == 0)
        n -= 5;
    char *dir = malloc(n + 7);
    if (dir) {
        memcpy(dir, result, n);
        memcpy(dir + n, "-plots", 7);
    }
    return dir;
}

enum { OPT_OUTPUT = 1, OPT_FORMAT };

static const tsim_cli_option plot_options[] = {
    {"output", 'o', true, OPT_OUTPUT},
    {"format", 0, true, OPT_FORMAT},
    {0},
};

typedef struct {
    const char *result, *outdir;
    int formats;
} plot_args;

static int plot_option(void *ctx, int id, const char *value, tsim_error *err)
{
    plot_args *a = ctx;
    if (id == OPT_FORMAT)
        return tsim_plot_formats_parse(value, &a->formats, err);
    if (!value[0])
        return tsim_error_set(err, TSIM_E_INPUT, "-o needs a directory");
    a->outdir = value;
    return TSIM_OK;
}

static int plot_positional(void *ctx, const char *arg, tsim_error *err)
{
    plot_args *a = ctx;
    if (a->result)
        return tsim_error_set(err, TSIM_E_INPUT, "one result file only, got '%s' and '%s'", a->result, arg);
    a->result = arg;
    return TSIM_OK;
}

int tsim_cmd_plot(int argc, char **argv)
{
    const char *cmd = "plot";
    tsim_error err = {0};
    plot_args a = {.result = NULL, .outdir = NULL, .formats = TSIM_PLOT_PNG};
    const tsim_cli_parser parser = {.cmd = cmd, .options = plot_options, .on_option = plot_option,
                                    .on_positional = plot_positional, .ctx = &a};
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        usage(stdout);
        return 0;
    }
    if (parsed)
        return parsed;
    const char *result = a.result, *outdir = a.outdir;
    const int formats = a.formats;
    if (!result)
        return tsim_cli_usage_error(cmd, "no result file given");

    cJSON *root = NULL;
    if (tsim_plot_read_json(result, &root, &err))
        return tsim_cli_fail(cmd, &err);
    char *own_dir = NULL;
    if (!outdir) {
        own_dir = default_outdir(result);
        if (!own_dir) {
            cJSON_Delete(root);
            tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
            return tsim_cli_fail(cmd, &err);
        }
        outdir = own_dir;
    }
    tsim_plot_files files;
    const char *source = strcmp(result, "-") == 0 ? "standard input" : result;
    int rc = tsim_plot_write_named(root, source, outdir, formats, stderr, &files, &err);
    cJSON_Delete(root);
    /* What was written is listed even when a later step failed. */
    for (size_t i = 0; i < files.n; i++)
        printf("%s\n", files.paths[i]);
    tsim_plot_files_free(&files);
    free(own_dir);
    if (fflush(stdout) != 0 && !rc)
        rc = tsim_error_set(&err, TSIM_E_INPUT, "error writing to standard output");
    if (rc)
        return tsim_cli_fail(cmd, &err);
    return 0;
}
