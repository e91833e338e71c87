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

/* A Walker alias table over experts (gen.c builds it): slot i keeps own[i]
 * when the low 32 bits of the draw fall below thr[i], else gives alt[i]. */
typedef struct {
    int n;
    const uint32_t *thr;
    const int32_t *own, *alt;
} tsim_counts_alias;

/* Adds up to n picks drawn from the table to got[] (indexed by expert),
 * within room[]; a pick on a full expert is drawn again. Returns the picks
 * left after 64 misses in a row (for tsim_counts_fill), usually 0. */
int64_t tsim_counts_alias_picks(tsim_counts_sampler *s, const tsim_counts_alias *a, const int64_t *room, int64_t n,
                                int64_t *got);

#endif
