/* The counts sampler of generator version 2 (gen --generator 2).
 *
 * Version 1 draws every token's k distinct experts, so a record costs
 * T x k draws per source rank (32,768 at 4096 tokens and top-8). Version 2
 * draws a rank's picks from a table as one multinomial: n picks over the
 * table's experts with its weights, by conditional binomials (expert i gets
 * Binomial(n_left, w_i / W_left), W_left the weight of experts i and after),
 * so a rank costs one binomial per expert whatever T is (or, for fewer
 * picks than twice the experts, one categorical draw per pick).
 *
 * Distinctness survives as a cap: within one part (a rank's base tokens, or
 * its hot tokens) an expert cannot get more picks than the part has tokens,
 * since no token picks an expert twice. Picks drawn above an expert's room go
 * back into the pool and are drawn again over the experts that still have
 * room (uniformly when none of those has weight), until none is left. Counts
 * within every room and summing to tokens x k can always be dealt out as
 * tokens of k distinct experts, so every record is a possible routing. The
 * marginals are those of sampling with replacement (expert i's mean is
 * n w_i / W), close to version 1's sequential sampling without replacement
 * when k w_i / W is small, and capped where it is not.
 *
 * Random numbers: xoshiro256** (Blackman and Vigna), seeded per stream
 * through splitmix64 (four steps, where mt19937 fills 624 words). Binomials
 * by inversion for small means and Hormann's BTRS otherwise: GSL's sampler
 * took 146 ns a variate here, over two thirds of a record's time. */
#include "gen_counts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    uint64_t s[4];
} xoshiro_state;

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro_next(xoshiro_state *x)
{
    uint64_t *s = x->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t tsim_splitmix64(uint64_t *z)
{
    uint64_t x = (*z += UINT64_C(0x9e3779b97f4a7c15));
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void xoshiro_set(xoshiro_state *x, uint64_t seed)
{
    uint64_t z = seed;
    for (int i = 0; i < 4; i++)
        x->s[i] = tsim_splitmix64(&z); /* never all zero: splitmix64 is a bijection of distinct inputs */
}

static double xoshiro_get_double(xoshiro_state *x)
{
    return (double)(xoshiro_next(x) >> 11) * 0x1.0p-53;
}

/* log(k!) for k below LOG_FACT_TABLE, Stirling's series above. */
#define LOG_FACT_TABLE 32

struct tsim_counts_sampler {
    xoshiro_state rng;
    double log_fact[LOG_FACT_TABLE];
    int cap;         /* entries of the scratch arrays */
    double *suffix;  /* [cap + 1] weight of the active entries from i on */
    int *active;     /* [cap] entries that still have room */
};

int tsim_counts_sampler_init(tsim_counts_sampler **out, int entries)
{
    tsim_counts_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->cap = entries;
    s->suffix = malloc(sizeof *s->suffix * ((size_t)entries + 1));
    s->active = malloc(sizeof *s->active * (size_t)(entries > 0 ? entries : 1));
    if (!s->suffix || !s->active) {
        tsim_counts_sampler_free(s);
        return -1;
    }
    for (int k = 1; k < LOG_FACT_TABLE; k++)
        s->log_fact[k] = s->log_fact[k - 1] + log((double)k);
    *out = s;
    return 0;
}

void tsim_counts_sampler_free(tsim_counts_sampler *s)
{
    if (!s)
        return;
    free(s->suffix);
    free(s->active);
    free(s);
}

void tsim_counts_seed(tsim_counts_sampler *s, uint64_t seed)
{
    xoshiro_set(&s->rng, seed);
}

static inline double uniform(tsim_counts_sampler *s)
{
    return xoshiro_get_double(&s->rng);
}

/* log(k!): exact sums below the table's end, else Stirling's series to 1/x^5
 * (relative error far below what the acceptance test below can see). */
static double log_factorial(const tsim_counts_sampler *s, int64_t k)
{
    if (k < LOG_FACT_TABLE)
        return s->log_fact[k];
    const double x = (double)k + 1.0, r = 1.0 / x, r2 = r * r;
    return (x - 0.5) * log(x) - x + 0.91893853320467274178 + r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 / 1260.0));
}

/* Binomial(n, p) for n p < 10 and p <= 1/2 by inversion: walk up the
 * probabilities from P(0) = q^n with P(x) = P(x - 1) (n - x + 1) p / (x q). */
static int64_t binomial_inversion(tsim_counts_sampler *s, double p, int64_t n)
{
    const double q = 1.0 - p, ratio = p / q;
    double u = uniform(s), prob = exp((double)n * log1p(-p));
    int64_t x = 0;
    while (u > prob && x < n) {
        u -= prob;
        x++;
        prob *= ratio * (double)(n - x + 1) / (double)x;
    }
    return x;
}

/* Binomial(n, p) for n p >= 10 and p <= 1/2: Hormann's BTRS, transformed
 * rejection with a squeeze (W. Hormann, "The generation of binomial random
 * variates", J. Statist. Comput. Simul. 46, 1993). About 1.2 pairs of
 * uniforms per variate, rarely a logarithm. */
static int64_t binomial_btrs(tsim_counts_sampler *s, double p, int64_t n)
{
    const double q = 1.0 - p, spq = sqrt((double)n * p * q);
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = (double)n * p + 0.5;
    const double v_r = 0.92 - 4.2 / b;
    /* what only the exact test needs, computed the first time it is */
    bool ready = false;
    double alpha = 0.0, lpq = 0.0, h = 0.0;
    int64_t mode = 0;
    for (;;) {
        const double u = uniform(s) - 0.5, v = uniform(s), us = 0.5 - fabs(u);
        const double kf = floor((2.0 * a / us + b) * u + c);
        if (kf < 0.0 || kf > (double)n)
            continue;
        const int64_t k = (int64_t)kf;
        if (us >= 0.07 && v <= v_r)
            return k;
        if (!ready) {
            alpha = (2.83 + 5.1 / b) * spq;
            lpq = log(p / q);
            mode = (int64_t)floor((double)(n + 1) * p);
            h = log_factorial(s, mode) + log_factorial(s, n - mode);
            ready = true;
        }
        const double lv = log(v * alpha / (a / (us * us) + b));
        if (lv <= h - log_factorial(s, k) - log_factorial(s, n - k) + (double)(k - mode) * lpq)
            return k;
    }
}

int64_t tsim_counts_binomial(tsim_counts_sampler *s, double p, int64_t n)
{
    if (n <= 0 || !(p > 0.0))
        return 0;
    if (p >= 1.0)
        return n;
    if (p > 0.5)
        return n - tsim_counts_binomial(s, 1.0 - p, n);
    return (double)n * p < 10.0 ? binomial_inversion(s, p, n) : binomial_btrs(s, p, n);
}

/* One round: `n` picks over the active entries by conditional binomials,
 * added to got[]. Weights w (or 1 each when `uniform`). */
static void draw_round(tsim_counts_sampler *s, const double *w, bool uniform, int n_active, int64_t n, int64_t *got)
{
    s->suffix[n_active] = 0.0;
    for (int a = n_active - 1; a >= 0; a--)
        s->suffix[a] = s->suffix[a + 1] + (uniform ? 1.0 : w[s->active[a]]);
    int64_t left = n;
    for (int a = 0; a < n_active && left > 0; a++) {
        const int i = s->active[a];
        const double wi = uniform ? 1.0 : w[i];
        /* the last entry with weight takes the rest (no rounding loss) */
        const int64_t x = !(s->suffix[a + 1] > 0.0) ? left : tsim_counts_binomial(s, wi / s->suffix[a], left);
        got[i] += x;
        left -= x;
    }
}

/* Few picks over many entries: one categorical draw per pick (a binary
 * search of the cumulative weights), a pick on a full entry drawn again. Gives
 * up after MISSES_MAX misses in a row (rooms nearly full, or no weight left
 * where there is room) and returns the picks not placed; the rounds below
 * place those. */
#define MISSES_MAX 64

/* One drawn pick: kept when the entry has room (one fewer left), else a miss. */
static inline bool place_pick(int64_t *got, const int64_t *room, int e, int64_t *left)
{
    if (got[e] >= room[e])
        return false;
    got[e]++;
    (*left)--;
    return true;
}

static int64_t draw_picks(tsim_counts_sampler *s, int entries, const double *w, const int64_t *room, int64_t n,
                          int64_t *got)
{
    double *cum = s->suffix;
    double total = 0.0;
    for (int i = 0; i < entries; i++)
        cum[i] = total += w[i];
    if (!(total > 0.0))
        return n;
    int64_t left = n;
    for (int misses = 0; left > 0 && misses < MISSES_MAX;) {
        const double u = uniform(s) * total;
        int lo = 0, hi = entries - 1;
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (cum[mid] > u)
                hi = mid;
            else
                lo = mid + 1;
        }
        misses = w[lo] > 0.0 && place_pick(got, room, lo, &left) ? 0 : misses + 1;
    }
    return left;
}

int64_t tsim_counts_alias_picks(tsim_counts_sampler *s, const tsim_counts_alias *a, const int64_t *room, int64_t n,
                                int64_t *got)
{
    int64_t left = n;
    for (int misses = 0; left > 0 && misses < MISSES_MAX;) {
        /* one 32-bit draw: its product with the table size picks the slot
         * (high half) and the coin between the slot's two experts (low half) */
        const uint64_t x = (xoshiro_next(&s->rng) >> 32) * (uint64_t)a->n;
        const int i = (int)(x >> 32);
        const int32_t e = (uint32_t)x < a->thr[i] ? a->own[i] : a->alt[i];
        misses = place_pick(got, room, e, &left) ? 0 : misses + 1;
    }
    return left;
}

void tsim_counts_multinomial(tsim_counts_sampler *s, int entries, const double *w, const int64_t *room, int64_t n,
                             int64_t *got)
{
    memset(got, 0, sizeof *got * (size_t)entries);
    tsim_counts_fill(s, entries, w, room, n, got);
}

void tsim_counts_fill(tsim_counts_sampler *s, int entries, const double *w, const int64_t *room, int64_t n,
                      int64_t *got)
{
    /* a pick costs about a third of a binomial */
    int64_t pool = n <= 2 * (int64_t)entries ? draw_picks(s, entries, w, room, n, got) : n;
    while (pool > 0) {
        int n_active = 0;
        double weight = 0.0;
        for (int i = 0; i < entries; i++)
            if (got[i] < room[i]) {
                s->active[n_active++] = i;
                weight += w[i];
            }
        if (n_active == 0)
            return; /* callers give rooms summing to at least n */
        draw_round(s, w, !(weight > 0.0), n_active, pool, got);
        pool = 0;
        for (int a = 0; a < n_active; a++) {
            const int i = s->active[a];
            if (got[i] > room[i]) {
                pool += got[i] - room[i];
                got[i] = room[i];
            }
        }
    }
}
