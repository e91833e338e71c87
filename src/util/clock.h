/* Monotonic clocks and the machine's core count: the few facts about the
 * running machine the library needs (timing plans, sizing worker pools). */
#ifndef TSIM_CLOCK_H
#define TSIM_CLOCK_H

#include <stdint.h>

double tsim_now_seconds(void);
int64_t tsim_now_ns(void);
/* Number of online CPU cores (at least 1). */
int tsim_cpu_count(void);

#endif
