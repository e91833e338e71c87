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
 *             (from replay --per-record); without per-record values,
 *             replay_imbalance, _weighted, _intra, _inter, _offloaded: a
 *             candlestick per planner of the summary (min, p50, p95, max,
 *             mean), imbalance with "before planning" first
 *   table1    table1_weighted, table1_residual (data table1.dat): grouped bars
 *             per (EP, imbalance), one bar per planner, paper values as points,
 *             on a two-level axis (imbalance, then EP size); and per cell
 *             table1_pareto_epE_imbI (its own data): residual imbalance (x)
 *             against weighted cost (y), a point per planner with std error
 *             bars, the paper's points hollow, our Pareto front dashed
 *   ablation  ablation: grouped bars of intra, inter, weighted per combination
 *   sweep     sweep_lpX per lambda_plan X: weighted cost vs lambda_eval, one
 *             curve per planner, break-even lambda* as dashed vertical lines
 *   scaling   scaling_AXIS_residual, scaling_AXIS_weighted per axis (data
 *             scaling_AXIS.dat): residual imbalance and weighted cost vs the
 *             axis value, one curve per planner
 * Groups and planners keep the order of their first appearance in "results";
 * x values of curves are sorted. Imbalances are shown in %; error bars are
 * the result's "std" (over records, or across seeds for seeded grids).
 * Results that are n/a (an "error" and no "metrics": a planner that cannot
 * run on that cell, which the result's notes explain) are left out of the
 * figures and named on a comment line of the data files.
 * A planner has one colour and point type in every figure of every study
 * (tsim_plot_planner_colour/point).
 *
 * Templates come from $TAOTSIM_PLOTS_DIR, else the data directory's plots/ (datadir.h).
 * gnuplot is $TAOTSIM_GNUPLOT, else "gnuplot" on PATH. When images are asked
 * for, a gnuplot that is missing, does not run or lacks the pngcairo (PNG) or
 * svg terminal is TSIM_E_INPUT, found before anything is written, with a
 * message that says what to install; formats 0 needs no gnuplot. */
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
    bool rendered; /* false when formats was 0 */
} tsim_plot_files;

void tsim_plot_files_free(tsim_plot_files *files);

/* Writes the figures of a result into outdir (created if missing). Bad input
 * (unknown study, missing or mistyped fields) and an unusable gnuplot are
 * TSIM_E_INPUT and write nothing; messages name the offending field, e.g.
 * "results[2].metrics: missing \"weighted\"". A gnuplot that fails on one
 * script leaves the data files and scripts written (TSIM_E_INPUT). log (may
 * be NULL) receives anything gnuplot prints. written may be NULL. */
int tsim_plot_write(const struct cJSON *result, const char *outdir, int formats, FILE *log,
                    tsim_plot_files *written, tsim_error *err);

/* tsim_plot_write, with errors about the result's content prefixed by
 * "SOURCE: " (the result file's name; NULL for none). */
int tsim_plot_write_named(const struct cJSON *result, const char *source, const char *outdir, int formats,
                          FILE *log, tsim_plot_files *written, tsim_error *err);

/* tsim_plot_write without the list of files, for the study commands' --plots. */
int tsim_plot_result(const struct cJSON *result, const char *outdir, int formats, FILE *log, tsim_error *err);

/* Checks that gnuplot can draw the formats (0: no gnuplot needed), as
 * tsim_plot_write does before writing: study commands call it before the
 * work starts. TSIM_E_INPUT with what to install when it cannot. */
int tsim_plot_check(int formats, tsim_error *err);

/* The colour ("#rrggbb") and gnuplot point type (a filled one; minus 1 is
 * its hollow twin) a planner label is drawn with in every figure: fixed and
 * distinct for every planner taotsim registers, else picked by a hash of the
 * label from a palette of other hues. */
const char *tsim_plot_planner_colour(const char *label);
int tsim_plot_planner_point(const char *label);

/* Reads and parses a JSON file ("-" is standard input). Errors name the file
 * and, for bad JSON, the line and column. */
int tsim_plot_read_json(const char *path, struct cJSON **out, tsim_error *err);

#endif
