/* taotsim report RESULT.json... -o report.html: one self-contained HTML page
 * (no network, no external asset) of the results; the page is report_html.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_common.h"
#include "commands.h"
#include "options.h"
#include "outfile.h"
#include "plot.h"
#include "report_html.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: taotsim report RESULT.json... [-o report.html] [--no-figures]\n"
            "\n"
            "Writes one self-contained HTML page from result files (the JSON that replay,\n"
            "table1, ablation, sweep and scaling print with --format json): for each\n"
            "result its command line, version, parameters and trace, every table it holds\n"
            "(per result: its grid point, planner, each metric's mean ± std, the paper's\n"
            "values where it has them, its notes; break-even λ*), and its figures inline\n"
            "as SVG. The page loads nothing from the network or from other files.\n"
            "table1, ablation, sweep, scaling and merge write the same page with\n"
            "--report FILE.\n"
            "\n"
            "Options:\n"
            "  -o, --output FILE  the HTML file (default: standard output); written\n"
            "                     atomically\n"
            "  --no-figures       tables only (no gnuplot needed)\n"
            "  -h, --help         this help\n"
            "\n"
            "Figures need gnuplot with the svg terminal (Debian: gnuplot-nox); without it\n"
            "the exit status is 2 and nothing is written (or use --no-figures).\n"
            "Exit status: 0 success, 2 usage or input error, 3 internal error.\n");
}

enum { OPT_OUTPUT = 1, OPT_NO_FIGURES };

static const tsim_cli_option report_options[] = {
    {"output", 'o', true, OPT_OUTPUT},
    {"no-figures", 0, false, OPT_NO_FIGURES},
    {0},
};

typedef struct {
    const char *output;
    const char **inputs;
    int n;
    bool draw;
} report_args;

static int report_option(void *ctx, int id, const char *value, tsim_error *err)
{
    report_args *a = ctx;
    if (id == OPT_NO_FIGURES) {
        a->draw = false;
        return TSIM_OK;
    }
    if (!value[0])
        return tsim_error_set(err, TSIM_E_INPUT, "-o needs a file");
    a->output = value;
    return TSIM_OK;
}

static int report_positional(void *ctx, const char *arg, tsim_error *err)
{
    (void)err;
    report_args *a = ctx;
    a->inputs[a->n++] = arg;
    return TSIM_OK;
}

int tsim_cmd_report(int argc, char **argv)
{
    const char *cmd = "report";
    report_args a = {.output = "-", .inputs = calloc((size_t)argc, sizeof *a.inputs), .n = 0, .draw = true};
    if (!a.inputs)
        return tsim_cli_usage_error(cmd, "out of memory");
    const tsim_cli_parser parser = {.cmd = cmd, .options = report_options, .on_option = report_option,
                                    .on_positional = report_positional, .ctx = &a};
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP)
        usage(stdout);
    if (parsed) {
        free(a.inputs);
        return parsed == TSIM_CLI_HELP ? 0 : parsed;
    }
    const char **inputs = a.inputs, *output = a.output;
    const int n = a.n;
    const bool draw = a.draw;
    if (n == 0) {
        free(inputs);
        return tsim_cli_usage_error(cmd, "no result file given");
    }
    tsim_error err = {0};
    tsim_outfile out = {0};
    const char *outs[1] = {output}, *flags[1] = {"-o"};
    int rc = tsim_outfile_check_distinct(outs, flags, 1, inputs, n, &err);
    if (!rc && draw)
        rc = tsim_plot_check(TSIM_PLOT_SVG, &err);
    if (!rc)
        rc = tsim_outfile_open(&out, output, &err);
    if (!rc) {
        tsim_report_html_begin(out.fp);
        for (int i = 0; i < n && !rc; i++) {
            cJSON *root = NULL;
            rc = tsim_plot_read_json(inputs[i], &root, &err);
            if (!rc)
                rc = tsim_report_html_section(out.fp, root, inputs[i], draw, &err);
            cJSON_Delete(root);
        }
        tsim_report_html_end(out.fp);
        rc = rc ? rc : tsim_outfile_commit(&out, &err);
        if (rc)
            tsim_outfile_abort(&out);
    }
    free(inputs);
    return rc ? tsim_cli_fail(cmd, &err) : 0;
}
