/* --fail-if over a study's rows (study.h: tsim_study_lookup), as replay,
 * the studies and merge apply it. */
#ifndef TSIM_CLI_GATES_H
#define TSIM_CLI_GATES_H

#include <stdio.h>

#include "study.h"

/* Evaluates every --fail-if expression over the study's rows, printing
 * "taotsim CMD: ..." on log for each that holds or is malformed. Returns 0,
 * TSIM_E_CHECK when one held, TSIM_E_INPUT when one was malformed (that wins). */
int tsim_cli_check_gates(const tsim_study *s, const char *const *gates, int n, const char *cmd, FILE *log);

/* One more --fail-if expression for gates[*n] (room for max), parsed now so
 * that a malformed one is a usage error before any work. */
int tsim_cli_gate_add(const char **gates, int *n, int max, const char *expr, tsim_error *err);

#endif
