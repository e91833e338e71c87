/* The greedy planner of the examples, on plain arrays: copy the hottest expert
 * of the hottest rank to slot 0 of the coldest rank; every source rank sends
 * that replica floor(count / divisor) of its tokens of the expert (divisor 2:
 * half). Ties go to the lowest index. greedy.py is the same in Python. */
#ifndef GREEDY_CORE_H
#define GREEDY_CORE_H

#include <stdint.h>

typedef struct {
    int replicas;   /* 0 or 1 */
    int expert, guest;
    int64_t planned;
} greedy_result;

/* counts[R * E], home[E]; scratch holds R + E values; alloc[R] receives the
 * tokens each source sends to the replica (when there is one). */
greedy_result greedy_plan(int ranks, int experts, int slots, const int32_t *home, const int64_t *counts,
                          int64_t divisor, int64_t *scratch, int64_t *alloc);

#endif
