/* Figures of `taotsim fit --plots DIR`: one residual heat map per planner for
 * the best regime (cells x {improve pp, intra, inter}, colour = normalised
 * residual e, each square labelled ours/paper), drawn by plots/fit_residual.gp
 * the way plot.h draws the other studies: DIR/fit_residual_PLANNER.dat, .gp,
 * and .png/.svg. With images asked for, a gnuplot that cannot draw them is
 * TSIM_E_INPUT before anything is written (tsim_plot_check). */
#ifndef TSIM_PLOT_FIT_H
#define TSIM_PLOT_FIT_H

#include <stdio.h>

#include "error.h"
#include "fit.h"

int tsim_plot_fit(const tsim_fit_result *r, const char *outdir, int formats, FILE *log, tsim_error *err);

#endif
