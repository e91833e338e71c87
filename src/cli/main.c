/* taotsim: git-style subcommands. Only dispatch lives here. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "registry.h"
#include "report.h"
#include "commands.h"
#include "external.h"
#include "signals.h"
#include "tsim_config.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"gen", tsim_cmd_gen, "write a synthetic routing trace"},
    {"validate", tsim_cmd_validate, "check traces; print shape and initial-imbalance distribution"},
    {"convert", tsim_cmd_convert, "convert between JSON, JSONL(.gz), and from CSV"},
    {"index", tsim_cmd_index, "write or check a trace's sidecar index (seek points, block hashes)"},
    {"replay", tsim_cmd_replay, "run planners over a trace and print the metrics"},
    {"table1", tsim_cmd_table1, "the paper's Table 1 on the bundled traces, ours beside the paper's"},
    {"ablation", tsim_cmd_ablation, "the paper's Table 2: TAOT flow hint x communication cost"},
    {"sweep", tsim_cmd_sweep, "lambda_plan x lambda_eval grid and break-even lambda"},
    {"scaling", tsim_cmd_scaling, "EP size, imbalance and guest-slot sweeps on generated traces"},
    {"advise", tsim_cmd_advise, "which K, rebalance interval and history reach a target balance (Pareto set)"},
    {"fit", tsim_cmd_fit, "which generator regime reproduces the paper's Table 1"},
    {"vector", tsim_cmd_vector, "run a planner on test-vector files and print the plans ('got')"},
    {"bench", tsim_cmd_bench, "planner latency and trace read throughput"},
    {"plot", tsim_cmd_plot, "gnuplot figures from a result file"},
    {"report", tsim_cmd_report, "one self-contained HTML page: the tables and figures of result files"},
    {"merge", tsim_cmd_merge, "combine the partial results of --shard I/N runs into the whole result"},
    {"planners", tsim_cmd_planners, "every planner: what it does, its source, options and contracts"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: taotsim COMMAND [options]\n"
                 "\n"
                 "Replays MoE routing traces through expert-replica planners and measures\n"
                 "residual imbalance and weighted communication cost.\n"
                 "Planners:");
    /* from the registry, so a new planner is listed without editing this */
    int col = 9; /* "Planners:" */
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        const int w = (int)strlen((*d)->name) + 2; /* ", name" or " name," */
        const bool first = d == tsim_planner_all(), wrap = col + w > 76;
        fprintf(out, "%s%s", first ? " " : wrap ? ",\n" : ", ", (*d)->name);
        col = (wrap ? 0 : col) + w; /* wrapped, so that a longer list stays readable */
    }
    fprintf(out, ",\nand your own as exec:CMD or plugin:LIB.so ('taotsim replay --help').\n"
                 "\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "'taotsim COMMAND --help' describes a command. Exit status: 0 success,\n"
            "1 a --fail-if check held, 2 usage or input error, 3 internal error.\n");
}

int main(int argc, char **argv)
{
    tsim_cli_install_signal_cleanup();
    tsim_report_set_command_line(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("taotsim %s\n", TSIM_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* LABEL=exec:CMD and LABEL=plugin:LIB.so wherever a planner is named */
            tsim_external_install();
            int status = commands[i].run(argc - 1, argv + 1);
            /* commands that write files end their exec planners first; this
             * catches a bad end in the others */
            tsim_error err = {0};
            if (tsim_external_finish(&err) && status != TSIM_E_INPUT) {
                fprintf(stderr, "taotsim %s: %s\n", argv[1], err.msg);
                status = TSIM_E_INPUT;
            }
            tsim_external_cleanup();
            return status;
        }
    fprintf(stderr, "taotsim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
