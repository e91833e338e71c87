/* The figures of an advise result (`taotsim advise --plots DIR`, `taotsim plot
 * RESULT.json`): balancedness of every setting against its memory per rank
 * (advise_memory) and against its weight traffic per record (advise_traffic),
 * one colour per planner, the Pareto set ringed, the recommendation starred
 * and the target as a dashed line, drawn by plots/advise.gp from advise.dat.
 * plot.c writes and renders them like every study's figures; this file only
 * turns the result's "settings" into the data and the script's variables. */
#ifndef TSIM_PLOT_ADVISE_H
#define TSIM_PLOT_ADVISE_H

#include <stdio.h>

#include "error.h"

struct cJSON;

/* Writes advise.dat's text to dat, and to vars the gnuplot variables the
 * template reads besides FIGURE, DATA, TITLE and XCOL (PLANNERS, NP, COLORS,
 * POINTS, TARGET). TSIM_E_INPUT naming the field of a malformed result. */
int tsim_plot_advise_text(const struct cJSON *root, FILE *dat, FILE *vars, tsim_error *err);

#endif
