/* Heat maps of replay --traffic ... --plots DIR: one figure per planner,
 * traffic_LABEL.{dat,gp,png|svg}, the token matrix before and after its plans
 * side by side (rows: source node or rank, columns: where the tokens are
 * computed), drawn by plots/traffic.gp with plots/terminal.gp. With images
 * asked for, a gnuplot that cannot draw them is found before the replay runs
 * (tsim_plot_check). */
#ifndef TSIM_PLOT_TRAFFIC_H
#define TSIM_PLOT_TRAFFIC_H

#include <stdio.h>

#include "error.h"
#include "session.h"
#include "traffic.h"

int tsim_plot_traffic(const tsim_traffic *t, const tsim_session *s, const char *trace_path, const char *outdir,
                      int formats, FILE *log, tsim_error *err);

#endif
