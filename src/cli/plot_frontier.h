/* The --bounds figure of table1 (issue 23): per cell, every planner's
 * (weighted, rho_after) point against the frontier's lower bound, the least
 * rho_after any plan of at most that weighted cost can reach (mean over the
 * cell's records; the JSON result's "frontier" array). Files per cell:
 * DIR/table1_frontier_KEY.dat, .gp, and .png/.svg rendered by the gnuplot
 * that tsim_plot_write found and checked (plot_check_gnuplot), through the
 * same runner as plot.h's other figures. A result without "frontier" writes
 * nothing. */
#ifndef TSIM_PLOT_FRONTIER_H
#define TSIM_PLOT_FRONTIER_H

#include <stdio.h>

#include "error.h"
#include "plot.h"

struct cJSON;

/* Checks the "frontier" array (absent is fine): TSIM_E_INPUT naming the
 * field, before anything is written. */
int tsim_plot_frontier_check(const struct cJSON *result, tsim_error *err);

/* gnuplot: the checked path; unused when formats is 0. */
int tsim_plot_frontier(const struct cJSON *result, const char *outdir, const char *gnuplot, int formats, FILE *log,
                       tsim_plot_files *written, tsim_error *err);

#endif
