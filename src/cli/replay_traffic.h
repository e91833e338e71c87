/* replay's traffic matrices (--traffic, --hidden-bytes, --expert-mb,
 * --traffic-out, --plots) and layout export (--export-layout,
 * --export-format): issue 24 items 2 and 4, kept out of cmd_replay.c. */
#ifndef TSIM_REPLAY_TRAFFIC_H
#define TSIM_REPLAY_TRAFFIC_H

#include <stdbool.h>
#include <stdio.h>

#include "layout_export.h"
#include "layout_io.h"
#include "outfile.h"
#include "report.h"
#include "session.h"
#include "traffic.h"

/* Option ids: cmd_replay.c's table lists these names with these ids. */
enum {
    TSIM_RX_TRAFFIC = 1000, TSIM_RX_HIDDEN_BYTES, TSIM_RX_EXPERT_MB, TSIM_RX_TRAFFIC_OUT, TSIM_RX_PLOTS,
    TSIM_RX_PLOT_FORMAT, TSIM_RX_EXPORT_LAYOUT, TSIM_RX_EXPORT_FORMAT,
};

#define TSIM_RX_OPTIONS                                                                                            \
    {"traffic", 0, true, TSIM_RX_TRAFFIC}, {"hidden-bytes", 0, true, TSIM_RX_HIDDEN_BYTES},                     \
        {"expert-mb", 0, true, TSIM_RX_EXPERT_MB}, {"traffic-out", 0, true, TSIM_RX_TRAFFIC_OUT},                 \
        {"plots", 0, true, TSIM_RX_PLOTS}, {"plot-format", 0, true, TSIM_RX_PLOT_FORMAT},                         \
        {"export-layout", 0, true, TSIM_RX_EXPORT_LAYOUT}, {"export-format", 0, true, TSIM_RX_EXPORT_FORMAT}

#define TSIM_RX_HELP                                                                                               \
    "  --traffic node|rank  token traffic matrices before and after each plan (node x node\n"                      \
    "                       or rank x rank, summed over records): a table naming the\n"                           \
    "                       hottest link, JSON with --traffic-out (docs/export.md)\n"                              \
    "  --hidden-bytes N     bytes per token in the traffic matrices (default: tokens only)\n"                      \
    "  --expert-mb X        MB per expert copy in the weight matrices (default: copies only)\n"                    \
    "  --traffic-out FILE   write the matrices as JSON, atomically (needs --traffic)\n"                            \
    "  --plots DIR          one traffic heat map per planner into DIR (needs --traffic)\n"                         \
    "  --plot-format F      png, svg, both or none (default png)\n"                                               \
    "  --export-layout FILE write the layout the run ended with (eplb, trtllm or swift:\n"                         \
    "                       exactly one in --planners), for SGLang or TensorRT-LLM\n"                             \
    "  --export-format sglang|trtllm  the file's form (default sglang): SGLang's\n"                                \
    "                       --init-expert-location JSON, or TensorRT-LLM's\n"                                      \
    "                       MoeLoadBalancerConfig with initial_global_assignments\n"

typedef struct {
    tsim_traffic_level level;
    double hidden_bytes, expert_mb;
    bool hidden_given, expert_given;
    const char *traffic_out, *plots_dir, *export_path;
    int plot_formats;
    bool plot_format_given;
    tsim_layout_format export_format;
    bool export_format_given;
    /* run state */
    int export_planner;         /* index in the session, -1 none */
    tsim_traffic traffic;
    bool traffic_ready;
    tsim_layout_collector layouts; /* the export planner's last layout per layer */
    tsim_outfile traffic_file, export_file;
    bool traffic_open, export_open;
} tsim_replay_extras;

void tsim_replay_extras_default(tsim_replay_extras *x);
/* One of the TSIM_RX_* options. */
int tsim_replay_extras_option(tsim_replay_extras *x, int id, const char *val, tsim_error *err);
/* What the options rule out together (a usage error: TSIM_E_INPUT). */
int tsim_replay_extras_check(const tsim_replay_extras *x, bool sharded, tsim_error *err);
/* The output files of these options, for the writable/distinct checks. */
int tsim_replay_extras_outputs(const tsim_replay_extras *x, const char **paths, const char **flags);
/* After the session starts: the export planner found, the matrices set up,
 * gnuplot checked. */
int tsim_replay_extras_start(tsim_replay_extras *x, const tsim_session *s, tsim_error *err);
/* From the session's hook, per evaluated plan in record order. */
int tsim_replay_extras_plan(tsim_replay_extras *x, const tsim_session *s, int planner, const tsim_record *rec,
                            const tsim_plan *plan, tsim_error *err);
/* Writes and flushes --traffic-out and --export-layout (not yet renamed). */
int tsim_replay_extras_write(tsim_replay_extras *x, const tsim_session *s, const char *trace_path, tsim_error *err);
/* Renames them into place, then draws --plots. */
int tsim_replay_extras_commit(tsim_replay_extras *x, const tsim_session *s, const char *trace_path, tsim_error *err);
void tsim_replay_extras_free(tsim_replay_extras *x);

#endif
