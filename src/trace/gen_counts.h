/* Multinomial counts for generator version 2 (gen_counts.c). Internal to the
 * trace layer. */
#ifndef TSIM_GEN_COUNTS_H
#define TSIM_GEN_COUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tsim_counts_sampler tsim_counts_sampler;

/* A sampler with scratch for tables of up to `entries` experts; -1 when out
 * of memory. */
int tsim_counts_sampler_init(tsim_counts_sampler **out, int entries);
void tsim_counts_sampler_free(tsim_counts_sampler *s);

/* One splitmix64 step (Steele, Lea and Flood): advances *state, returns a
 * well-mixed 64-bit value. Inline: every rank's streams are seeded from it
 * for every record. */
static inline uint64_t tsim_splitmix64(uint64_t *state)
{
    uint64_t x = (*state += UINT64_C(0x9e3779b97f4a7c15));
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

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

/* Moves the picks above their rooms out of got[]; returns how many. */
int64_t tsim_counts_clip(int entries, const int64_t *room, int64_t *got);

/* Poisson tables for n means at once (version 3 builds one per record and
 * draws from it for every rank): P(X <= k) near each mode with a guide
 * table, so a draw is one uniform and a comparison or two. */
#define TSIM_POISSON_RECIPROCALS 1024
typedef struct {
    int n;
    int64_t *lo;         /* [n] the value of each table's first entry */
    int32_t *len, *off;  /* [n] each table's length and place in cdf[] */
    double *cdf;         /* [cap] */
    int32_t *guide;      /* [cap] */
    int32_t *mark;       /* [cap + 1] scratch of the guides' builds, all 0 between them */
    double *mu;          /* [n] the means */
    double *last_term;   /* [n] P(X = the table's last value), to walk on past it */
    size_t cap;
    double inv[TSIM_POISSON_RECIPROCALS]; /* 1/k */
} tsim_counts_poisson_tables;
/* Entries enough for any n means summing to at most lambda. */
size_t tsim_counts_poisson_bound(double lambda, int n);
int tsim_counts_poisson_init(tsim_counts_poisson_tables *t, int n, size_t cap);
void tsim_counts_poisson_free(tsim_counts_poisson_tables *t);
/* Tables for mu[0..n); -1 when they would not fit the cap. */
int tsim_counts_poisson_build(tsim_counts_poisson_tables *t, const double *mu);
/* got[e] = one Poisson(mu[e]) draw for every e; returns their sum, and
 * their largest in *top. */
int64_t tsim_counts_poisson_row(tsim_counts_sampler *s, const tsim_counts_poisson_tables *t, int64_t *got,
                                int64_t *top);

/* n uniforms in [0, 1) into u[], from streams seeded with `seed` alone. */
void tsim_counts_uniforms(uint64_t seed, int n, double *u);
/* out[r n + e] = the Poisson(mu[e]) draw of uniform u[r n + e], for `rows`
 * rows, expert by expert so that each table stays in cache for every row;
 * each row's sum and largest into sum[r] and top[r]. */
void tsim_counts_poisson_grid(const tsim_counts_poisson_tables *t, int rows, const double *u, int64_t *out,
                              int64_t *sum, int64_t *top);

/* Version 3: the same law as tsim_counts_alias_picks, drawn in blocks over
 * interleaved streams (two picks per 64-bit output) and capped after each
 * block round. got[] has `entries` experts. `safe`: how many picks every
 * entry can take without passing its room (the caller knows; 0 if not), so
 * that the first round need not look. Returns the picks left after a few
 * rounds (for tsim_counts_fill). */
int64_t tsim_counts_alias_block_picks(tsim_counts_sampler *s, const tsim_counts_alias *a, const int64_t *room,
                                      int entries, int64_t n, int64_t safe, int64_t *got);

#endif
