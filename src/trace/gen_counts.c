/* The counts samplers of generator versions 2 and 3 (gen --generator 2|3).
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
 * took 146 ns a variate here, over two thirds of a record's time.
 *
 * Version 3 draws the same law faster (gen.c decides what goes where): the
 * bulk of a rank's picks as Poisson counts from per-record tables with a
 * guide (tsim_counts_poisson_*), the rest as alias picks in blocks over
 * interleaved streams, capped after each round
 * (tsim_counts_alias_block_picks). */
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

static double xoshiro_get_double(xoshiro_state *x)
{
    return (double)(xoshiro_next(x) >> 11) * 0x1.0p-53;
}

/* log(k!) for k below LOG_FACT_TABLE, Stirling's series above. */
#define LOG_FACT_TABLE 32

/* Version 3's pick lanes: LANES streams stepped side by side, so a block of
 * picks is not one chain of dependent steps (a step's latency, not its work,
 * bounded version 2's loop at about 3 ns a pick). */
#define LANES 2
/* Picks drawn per block: small enough to stay in L1, large enough that the
 * loops run long. */
#define BLOCK 512

struct tsim_counts_sampler {
    xoshiro_state rng;
    xoshiro_state lane[LANES];
    uint64_t main_seed; /* the current stream's seed */
    bool main_set;      /* rng seeded from it */
    uint64_t lane_seed; /* splitmix64 state after rng's seeding: the lanes' seeds */
    bool lanes_set;     /* lanes seeded for the current stream */
    uint32_t block[BLOCK];
    int32_t pick[BLOCK];
    uint64_t wide[BLOCK / 2]; /* 64-bit draws of the Poisson rows */
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

/* splitmix64 adds this to its state at every step */
#define SPLITMIX_GAMMA UINT64_C(0x9e3779b97f4a7c15)

void tsim_counts_seed(tsim_counts_sampler *s, uint64_t seed)
{
    /* The main stream takes splitmix64's first four outputs and the lanes
     * the next eight, each seeded only when first used (version 3 seldom
     * uses the main stream; version 2's streams stay as they were). */
    s->main_seed = seed;
    s->main_set = false;
    s->lane_seed = seed + 4 * SPLITMIX_GAMMA;
    s->lanes_set = false;
}

static void seed_main(tsim_counts_sampler *s)
{
    uint64_t z = s->main_seed;
    for (int i = 0; i < 4; i++)
        s->rng.s[i] = tsim_splitmix64(&z);
    s->main_set = true;
}

static void seed_lanes(tsim_counts_sampler *s)
{
    uint64_t z = s->lane_seed;
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < 4; i++)
            s->lane[l].s[i] = tsim_splitmix64(&z);
    s->lanes_set = true;
}

static inline double uniform(tsim_counts_sampler *s)
{
    if (!s->main_set)
        seed_main(s);
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

/* Slot i's expert for the coin u: own below the threshold, else alt. A
 * mask, not a branch: the coin is a fair guess for the branch predictor, and
 * its misses cost more than all the rest of a pick. */
static inline int32_t coin(const tsim_counts_alias *a, int i, uint32_t u)
{
    const int32_t own = a->own[i], alt = a->alt[i];
    const int32_t keep = -(int32_t)(u < a->thr[i]);
    return alt ^ ((own ^ alt) & keep);
}

int64_t tsim_counts_alias_picks(tsim_counts_sampler *s, const tsim_counts_alias *a, const int64_t *room, int64_t n,
                                int64_t *got)
{
    if (!s->main_set)
        seed_main(s);
    int64_t left = n;
    for (int misses = 0; left > 0 && misses < MISSES_MAX;) {
        /* one 32-bit draw: its product with the table size picks the slot
         * (high half) and the coin between the slot's two experts (low half) */
        const uint64_t x = (xoshiro_next(&s->rng) >> 32) * (uint64_t)a->n;
        const int i = (int)(x >> 32);
        const int32_t e = coin(a, i, (uint32_t)x);
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
    if (n <= 0)
        return;
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

/* n 32-bit draws into s->block, two from each 64-bit output, the lanes in
 * turn (n a multiple of 2 LANES, at most BLOCK). */
static void fill_block(tsim_counts_sampler *s, int n)
{
    xoshiro_state *lane = s->lane;
    for (int j = 0; j < n; j += 2 * LANES)
        for (int l = 0; l < LANES; l++) {
            const uint64_t x = xoshiro_next(&lane[l]);
            s->block[j + 2 * l] = (uint32_t)x;
            s->block[j + 2 * l + 1] = (uint32_t)(x >> 32);
        }
}

/* Rounds of block picks before the rest goes to tsim_counts_fill: a round
 * only redraws picks that landed on full experts. */
#define ROUNDS_MAX 8

int64_t tsim_counts_alias_block_picks(tsim_counts_sampler *s, const tsim_counts_alias *a, const int64_t *room,
                                      int entries, int64_t n, int64_t safe, int64_t *got)
{
    if (!s->lanes_set)
        seed_lanes(s);
    int64_t left = n;
    /* round 0 runs even with no picks when got[] may come in above its rooms */
    for (int round = 0; (round == 0 && safe < 0) || (left > 0 && round < ROUNDS_MAX); round++) {
        /* Every pick of the round lands; those above a room come back as
         * the next round's picks (the same law as drawing each again at
         * once: a pick on a full expert is redrawn until it lands on one
         * with room, and which picks are redrawn does not matter). Only
         * the picked entries can pass their rooms, unless got[] came in
         * above them (safe < 0), and none can when the picks fit the
         * headroom. */
        const bool whole = round == 0 && safe < 0;
        const bool check = !whole && !(round == 0 && left <= safe);
        int64_t over = 0;
        for (int64_t done = 0; done < left;) {
            const int want = (int)(left - done < BLOCK ? left - done : BLOCK);
            const int m = (want + 2 * LANES - 1) / (2 * LANES) * (2 * LANES);
            fill_block(s, m);
            /* the slot from the draw's product with the table size (high
             * half), the coin between its two experts (low half) */
            for (int j = 0; j < m; j++) {
                const uint64_t x = (uint64_t)s->block[j] * (uint64_t)a->n;
                const int i = (int)(x >> 32);
                s->pick[j] = coin(a, i, (uint32_t)x);
            }
            for (int j = 0; j < want; j++) /* draws past `want` are not used */
                got[s->pick[j]]++;
            for (int j = 0; check && j < want; j++) {
                const int32_t e = s->pick[j];
                if (got[e] > room[e]) { /* counted once: the entry is at its room after */
                    over += got[e] - room[e];
                    got[e] = room[e];
                }
            }
            done += want;
        }
        left = whole ? tsim_counts_clip(entries, room, got) : over;
    }
    return left;
}

int64_t tsim_counts_clip(int entries, const int64_t *room, int64_t *got)
{
    int64_t over = 0;
    for (int e = 0; e < entries; e++) {
        const int64_t extra = got[e] - room[e];
        const int64_t cut = extra > 0 ? extra : 0; /* branch-free: almost never above */
        over += cut;
        got[e] -= cut;
    }
    return over;
}

/* Poisson tables: for each mean, P(X <= k) for k within about 10 standard
 * deviations of the mode (the mass beyond is far below a double's 2^-53
 * resolution of the uniform) and a guide (Chen and Asau) giving, for u in
 * [i/G, (i+1)/G), the first k that can be the answer, so a draw is one
 * uniform, one guide lookup and usually one or two comparisons. */
/* Entries past each table's end that stop a walk without a bounds check. A
 * uniform above the table's last sum (rounding: under 1e-15) lands on the
 * first, one past the table's last value. */
#define POISSON_SENTINELS 2

static int64_t poisson_reach(double mu)
{
    return (int64_t)(10.0 * sqrt(mu)) + 24;
}

size_t tsim_counts_poisson_bound(double lambda, int n)
{
    /* sum over the means of 2 reach + 1 + sentinels <= 20 sqrt(lambda n) + 51 n
     * (Cauchy-Schwarz) */
    return (size_t)(20.0 * sqrt(lambda * (double)n) + (49.0 + POISSON_SENTINELS) * n) + 64;
}

int tsim_counts_poisson_init(tsim_counts_poisson_tables *t, int n, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    t->cap = cap;
    t->lo = malloc(sizeof *t->lo * (size_t)n);
    t->len = malloc(sizeof *t->len * (size_t)n);
    t->off = malloc(sizeof *t->off * (size_t)n);
    t->cdf = malloc(sizeof *t->cdf * cap);
    t->guide = malloc(sizeof *t->guide * cap);
    t->mark = calloc(cap + 1, sizeof *t->mark); /* all 0 between guides: poisson_guide */
    t->mu = malloc(sizeof *t->mu * (size_t)n);
    t->last_term = malloc(sizeof *t->last_term * (size_t)n);
    if (!t->lo || !t->len || !t->off || !t->cdf || !t->guide || !t->mark || !t->mu || !t->last_term)
        return -1;
    for (int k = 1; k < TSIM_POISSON_RECIPROCALS; k++)
        t->inv[k] = 1.0 / (double)k;
    return 0;
}

void tsim_counts_poisson_free(tsim_counts_poisson_tables *t)
{
    free(t->lo);
    free(t->len);
    free(t->off);
    free(t->cdf);
    free(t->guide);
    free(t->mark);
    free(t->mu);
    free(t->last_term);
    memset(t, 0, sizeof *t);
}

/* Terms below this cannot be told apart from 0 by a 53-bit uniform, so the
 * table stops there on either side (or at the reach, or at 0). */
#define POISSON_NEGLIGIBLE 1e-18
/* A table ends this many standard deviations (plus 2) past the mode,
 * where the tail's odds are about 1e-3 (at a mean of 15); a draw that
 * lands beyond walks on term by term (poisson_tail), with the same sums
 * the table would hold. Only speed depends on it: at 32 draws per table
 * (EP32), the entries a longer table builds cost more than the walks. */
#define POISSON_TABLE_SIGMAS 3.0

/* Means below this start their table at 0 from exp(-mu) (no underflow);
 * larger ones at the mode, from lgamma. */
#define POISSON_FROM_ZERO 50.0

/* The guide: guide[i] = the first j with cdf[j] > i / len, found without a
 * search (no branch to mispredict): the number of j whose bucket
 * c_j = floor(cdf[j] len) + 1 is at most i. The sums rise, so the buckets
 * do, and that number is one past the last j in any bucket up to i: each j
 * marks its bucket (a later j overwrites; plain stores, where counting them
 * would chain a load and a store per entry), then a running maximum.
 * mark[] is scratch of len + 1 entries, all 0 on entry and left so (the
 * scan clears what it read: a memset call per table cost more). */
static void poisson_guide(const double *cdf, int64_t len, int32_t *guide, int32_t *mark)
{
    for (int64_t j = 0; j < len; j++) {
        const double x = cdf[j] * (double)len;
        const int64_t c = x < (double)len ? (int64_t)x + 1 : len;
        mark[c] = (int32_t)(j + 1);
    }
    int32_t below = 0;
    for (int64_t i = 0; i < len; i++) {
        below = mark[i] > below ? mark[i] : below;
        mark[i] = 0;
        guide[i] = below < len ? below : (int32_t)(len - 1);
    }
    mark[len] = 0;
}

/* 1/k: the tables' ratio recurrence multiplies where it would divide. */
static inline double reciprocal(const tsim_counts_poisson_tables *t, int64_t k)
{
    return k < TSIM_POISSON_RECIPROCALS ? t->inv[k] : 1.0 / (double)k;
}

/* One mean's table at cdf[0..len): the terms by the ratio recurrence (no
 * factorials), from 0 for small means, else from the mode outwards, each
 * side stopping where the terms no longer count; then summed from the low
 * end. */
static int64_t poisson_table(const tsim_counts_poisson_tables *t, double mu, double *cdf, int32_t *guide,
                             int64_t *lo_out, double *last)
{
    if (!(mu > 0.0)) {
        cdf[0] = 1.0;
        cdf[1] = cdf[2] = 2.0;
        guide[0] = 0;
        *lo_out = 0;
        *last = 0.0;
        return 1;
    }
    const int64_t mode = (int64_t)floor(mu), reach = poisson_reach(mu);
    /* the table's last value */
    const int64_t top = mode + (int64_t)(POISSON_TABLE_SIGMAS * sqrt(mu)) + 2;
    int64_t lo = 0, len;
    if (mu < POISSON_FROM_ZERO) { /* the terms and their sums in one pass */
        double term = exp(-mu), sum = term;
        cdf[0] = sum;
        for (len = 1; len <= top; len++) {
            term *= mu * reciprocal(t, len);
            cdf[len] = sum += term;
        }
        *last = term;
    } else {
        /* terms from the mode down, stored backwards at the far end of the
         * room, then moved to the front in order */
        const double inv_mu = 1.0 / mu;
        const double peak = exp((double)mode * log(mu) - mu - lgamma((double)mode + 1.0));
        double *down = cdf + 2 * reach; /* down[-d] = P(X = mode - d) */
        down[0] = peak;
        int64_t below = 0;
        for (double term = peak; below < reach && below < mode && term >= POISSON_NEGLIGIBLE;) {
            term *= (double)(mode - below) * inv_mu;
            below++;
            down[-below] = term;
        }
        lo = mode - below;
        memmove(cdf, down - below, sizeof *cdf * (size_t)(below + 1));
        len = below + 1;
        double term = peak;
        for (; lo + len <= top; len++)
            cdf[len] = term *= mu * reciprocal(t, lo + len);
        *last = term;
        double sum = 0.0;
        for (int64_t j = 0; j < len; j++)
            cdf[j] = sum += cdf[j];
    }
    for (int i = 0; i < POISSON_SENTINELS; i++)
        cdf[len + i] = 2.0; /* above any uniform: a walk stops there */
    poisson_guide(cdf, len, guide, t->mark);
    *lo_out = lo;
    return len;
}

int tsim_counts_poisson_build(tsim_counts_poisson_tables *t, const double *mu)
{
    size_t used = 0;
    for (int e = 0; e < t->n; e++) {
        const double m = mu[e] > 0.0 ? mu[e] : 0.0;
        const size_t need = (m > 0.0 ? (size_t)(2 * poisson_reach(m) + 1) : 1) + POISSON_SENTINELS;
        if (need > t->cap - used)
            return -1; /* means summing above the bound they were sized for */
        t->off[e] = (int32_t)used;
        t->mu[e] = m;
        t->len[e] = (int32_t)poisson_table(t, m, t->cdf + used, t->guide + used, &t->lo[e], &t->last_term[e]);
        used += (size_t)t->len[e] + POISSON_SENTINELS;
    }
    return 0;
}

/* n 64-bit outputs into s->wide, the lanes in turn (n a multiple of LANES,
 * at most BLOCK / 2). */
static void fill_wide(tsim_counts_sampler *s, int n)
{
    xoshiro_state *lane = s->lane;
    for (int j = 0; j < n; j += LANES)
        for (int l = 0; l < LANES; l++)
            s->wide[j + l] = xoshiro_next(&lane[l]);
}

/* Past a table's end: the terms on from its last. */
static int64_t poisson_tail(const tsim_counts_poisson_tables *t, int e, double u)
{
    const double mu = t->mu[e];
    int64_t k = t->lo[e] + t->len[e] - 1;
    double term = t->last_term[e], cdf = t->cdf[t->off[e] + t->len[e] - 1];
    for (;;) {
        k++;
        term *= mu * reciprocal(t, k);
        const double next = cdf + term;
        if (u < next || !(next > cdf))
            return k; /* u within this term, or nothing left to add */
        cdf = next;
    }
}

/* One table's fields, read once per table (the int64 stores of the draws
 * could alias t->lo[], which the compiler would otherwise reload per draw). */
typedef struct {
    const double *cdf;
    const int32_t *guide;
    int32_t len;
    int64_t lo;
} poisson_view;

static inline poisson_view view_of(const tsim_counts_poisson_tables *t, int e)
{
    return (poisson_view){t->cdf + t->off[e], t->guide + t->off[e], t->len[e], t->lo[e]};
}

/* One draw from table e for the uniform u: the guide's start j, then the
 * next two entries compared at once (the sums rise, so the count of those
 * at or below u is the number of steps, when the answer is within two:
 * nearly always; two loads side by side, not one after the other), then a
 * loop for the rare longer walk; the sentinels past the end stop both. */
static inline int64_t poisson_draw(const tsim_counts_poisson_tables *t, int e, poisson_view v, double u)
{
    int32_t j = v.guide[(int32_t)(u * (double)v.len)];
    j += (v.cdf[j] <= u) + (v.cdf[j + 1] <= u);
    while (v.cdf[j] <= u)
        j++;
    return j < v.len ? v.lo + j : poisson_tail(t, e, u);
}

static inline double to_uniform(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

int64_t tsim_counts_poisson_row(tsim_counts_sampler *s, const tsim_counts_poisson_tables *t, int64_t *got,
                                int64_t *top)
{
    if (!s->lanes_set)
        seed_lanes(s);
    int64_t sum = 0, most = 0;
    for (int from = 0; from < t->n; from += BLOCK / 2) {
        const int m = t->n - from < BLOCK / 2 ? t->n - from : BLOCK / 2;
        fill_wide(s, (m + LANES - 1) / LANES * LANES);
        for (int i = 0; i < m; i++) {
            const int64_t x = poisson_draw(t, from + i, view_of(t, from + i), to_uniform(s->wide[i]));
            got[from + i] = x;
            sum += x;
            most = x > most ? x : most;
        }
    }
    *top = most;
    return sum;
}

void tsim_counts_uniforms(uint64_t seed, int n, double *u)
{
    xoshiro_state lane[LANES];
    uint64_t z = seed;
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < 4; i++)
            lane[l].s[i] = tsim_splitmix64(&z);
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++)
            u[j + l] = to_uniform(xoshiro_next(&lane[l]));
    for (int l = 0; j < n; j++, l++)
        u[j] = to_uniform(xoshiro_next(&lane[l]));
}

void tsim_counts_poisson_grid(const tsim_counts_poisson_tables *t, int rows, const double *u, int64_t *out,
                              int64_t *sum, int64_t *top)
{
    const size_t n = (size_t)t->n;
    for (int e = 0; e < t->n; e++) {
        const poisson_view v = view_of(t, e);
        for (int r = 0; r < rows; r++)
            out[(size_t)r * n + (size_t)e] = poisson_draw(t, e, v, u[(size_t)r * n + (size_t)e]);
    }
    /* the sums and maxima row by row afterwards: in the loop above they
     * would be a load and a store each per draw */
    for (int r = 0; r < rows; r++) {
        const int64_t *row = out + (size_t)r * n;
        int64_t s = 0, most = 0;
        for (size_t e = 0; e < n; e++) {
            s += row[e];
            most = row[e] > most ? row[e] : most;
        }
        sum[r] = s;
        top[r] = most;
    }
}
