/* The --traffic text table of replay (traffic.h has the matrices). */
#ifndef TSIM_TRAFFIC_PRINT_H
#define TSIM_TRAFFIC_PRINT_H

#include <stdio.h>

#include "report.h"
#include "traffic.h"

/* The text table (md or csv) naming each planner's hottest link before and
 * after; 0, or -1 when out of memory. */
int tsim_traffic_print(FILE *out, const tsim_traffic *t, const tsim_session *s, tsim_format format);

#endif
