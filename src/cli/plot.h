/* Figures from result files: the JSON that replay, table1, ablation, sweep and
 * scaling print with --format json.
 *
 * For each figure the library writes, into an output directory:
 *   NAME.dat  whitespace-separated data, '#' comment lines naming the columns;
 *   NAME.gp   a gnuplot script: generated variables (data file, title, planner
 *             names, tick labels...) followed by plots/terminal.gp and the
 *             figure's template plots/TEMPLATE.gp;
 *   NAME.png / NAME.svg, rendered by running gnuplot on NAME.gp.
 * A script renders by itself: `cd DIR && gnuplot NAME.gp` writes NAME.png,
 * `gnuplot -e 'fmt="svg"' NAME.gp` writes NAME.svg.
 *
 * Figures per study (files named after the study):
 *   replay    replay: imbalance per record, before and after each planner
 *             (needs replay --per-record)
 *   table1    table1_weighted, table1_residual (data table1.dat): grouped bars
 *             per (EP, imbalance), one bar per planner, paper values as points
 *   ablation  ablation: grouped bars of intra, inter, weighted per combination
 *   sweep     sweep_lpX per lambda_plan X: weighted cost vs lambda_eval, one
 *             curve per planner, break-even lambda* as dashed vertical lines
 *   scaling   scaling_AXIS_residual, scaling_AXIS_weighted per axis (data
 *             scaling_AXIS.dat): residual imbalance and weighted cost vs the
 *             axis value, one curve per planner
 * Groups and planners keep the order of their first appearance in "results";
 * x values of curves are sorted. Imbalances are shown in %; error bars are
 * the result's "std" (over records, or across seeds for seeded grids).
 *
 * Templates come from $TAOTSIM_PLOTS_DIR, else TSIM_SOURCE_ROOT/plots.
 * gnuplot is $TAOTSIM_GNUPLOT, else "gnuplot" on PATH. When it cannot be
 * found, the data files and scripts are still written and one line on the log
 * says how to render them; that is not an error. */
#ifndef TSIM_PLOT_H
#define TSIM_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

struct cJSON;

/* Image formats, a bit mask; 0 writes data files and scripts only. */
enum { TSIM_PLOT_PNG = 1, TSIM_PLOT_SVG = 2, TSIM_PLOT_BOTH = 3 };

/* "png", "svg", "both" or "none". */
int tsim_plot_formats_parse(const char *s, int *formats, tsim_error *err);

/* The files a call wrote, in order (paths are outdir joined with the name). */
typedef struct {
    char **paths;
    size_t n, cap;
    bool rendered; /* false when gnuplot was not found (or formats was 0) */
} tsim_plot_files;

void tsim_plot_files_free(tsim_plot_files *files);

/* Writes the figures of a result into outdir (created if missing). Bad input
 * (unknown study, missing or mistyped fields) is TSIM_E_INPUT and writes
 * nothing; messages name the offending field, e.g. "results[2].metrics:
 * missing \"weighted\"". log (may be NULL) receives the note about a missing
 * gnuplot and anything gnuplot prints. written may be NULL. */
int tsim_plot_write(const struct cJSON *result, const char *outdir, int formats, FILE *log,
                    tsim_plot_files *written, tsim_error *err);

/* tsim_plot_write, with errors about the result's content prefixed by
 * "SOURCE: " (the result file's name; NULL for none). */
int tsim_plot_write_named(const struct cJSON *result, const char *source, const char *outdir, int formats,
                          FILE *log, tsim_plot_files *written, tsim_error *err);

/* tsim_plot_write without the list of files, for the study commands' --plots. */
int tsim_plot_result(const struct cJSON *result, const char *outdir, int formats, FILE *log, tsim_error *err);

/* Reads and parses a JSON file ("-" is standard input). Errors name the file
 * and, for bad JSON, the line and column. */
int tsim_plot_read_json(const char *path, struct cJSON **out, tsim_error *err);

#endif
