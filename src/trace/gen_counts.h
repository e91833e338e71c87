/* Multinomial counts for generator version 2 (gen_counts.c). Internal to the
 * trace layer. */
#ifndef TSIM_GEN_COUNTS_H
#define TSIM_GEN_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tsim_counts_sampler tsim_counts_sampler;

/* A sampler with scratch for tables of up to `entries` experts; -1 when out
 * of memory. */
int tsim_counts_sampler_init(tsim_counts_sampler **out, int entries);
void tsim_counts_sampler_free(tsim_counts_sampler *s);

/* One splitmix64 step (Steele, Lea and Flood): advances *state, returns a
 * well-mixed 64-bit value. */
uint64_t tsim_splitmix64(uint64_t *state);

/* Restarts the random stream from a 64-bit seed. */
void tsim_counts_seed(tsim_counts_sampler *s, uint64_t seed);

/* Binomial(n, p), p clamped to [0, 1]. */
int64_t tsim_counts_binomial(tsim_counts_sampler *s, double p, int64_t n);

/* got[i] = picks of entry i among n, multinomial with weights w[] (uniform
 * over entries with room when all those weigh 0), with got[i] <= room[i]:
 * picks above an entry's room are drawn again over those with room left. The
 * rooms must sum to at least n. */
void tsim_counts_multinomial(tsim_counts_sampler *s, int entries, const double *w, const int64_t *room, int64_t n,
                             int64_t *got);
/* The same, adding n more picks to got[] (already within the rooms). */
void tsim_counts_fill(tsim_counts_sampler *s, int entries, const double *w, const int64_t *room, int64_t n,
                      int64_t *got);

/* 32 random bits from the stream (for a caller's own alias table). */
uint32_t tsim_counts_u32(tsim_counts_sampler *s);

#endif
