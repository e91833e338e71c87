/* Random records for property and parity tests: a small deterministic PRNG
 * (splitmix64) so every test run sees the same inputs. */
#ifndef TSIM_RANDOM_RECORDS_H
#define TSIM_RANDOM_RECORDS_H

#include <stdint.h>

#include "record.h"

typedef struct {
    int ranks, experts, slots, ranks_per_node;
} tsim_random_shape;

uint64_t tsim_rand_next(uint64_t *state);
/* Uniform integer in [lo, hi]. */
int64_t tsim_rand_range(uint64_t *state, int64_t lo, int64_t hi);
double tsim_rand_unit(uint64_t *state);

/* R in 2..max_ranks, E = R * {1..8}, K in 1..4, rpn in {1, 2, 4, 8}. */
void tsim_random_shape_draw(uint64_t *state, int max_ranks, tsim_random_shape *s);

/* Any shape of the property suite (test_every_planner). Three in five are
 * clusters (when max_ranks >= 4): R a power of two from 4 to max_ranks, rpn a
 * power of two dividing R, K 1 or 2 (2 twice as often: the paper's), 2 to 8
 * experts a rank. The others take anything in range: R in 1..max_ranks
 * (uniform up to a random power of two, so small R come often), rpn in 1..8
 * (dividing R or not), K in 0..4, 1 to 8 experts a rank. */
void tsim_random_shape_draw_any(uint64_t *state, int max_ranks, tsim_random_shape *s);

/* A balanced home map of the shape (every rank s->experts / s->ranks experts)
 * other than the contiguous one where the shape allows: a random shuffle. */
void tsim_random_home(uint64_t *state, const tsim_random_shape *s, int32_t *home);

/* Allocates rec (R x E) and fills it with one of several load patterns chosen
 * from the state: uniform, Zipf-skewed, one hot rank, a few hot experts, zero
 * rows and columns, all zero, tiny counts. */
void tsim_random_record(uint64_t *state, const tsim_random_shape *s, tsim_record *rec);

#endif
