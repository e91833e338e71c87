/* Synthetic routing traces: experiments.md, "Synthetic traces".
 *
 * Base routing. Layer l has a popularity vector p over the E experts, the
 * normalised form of E independent gamma variables g_e ~ Gamma(c, 1), i.e. a
 * symmetric Dirichlet(c, ..., c) draw (c = --concentration, per expert, so a
 * large c is close to uniform). Between microbatches it drifts by a gamma
 * autoregression with weight delta (--drift):
 *
 *     g_e <- B_e * g_e + N_e,  B_e ~ Beta(c (1 - delta), c delta),  N_e ~ Gamma(c delta, 1)
 *
 * independently per expert. A Beta(a, b) multiple of a Gamma(a + b) variable is
 * Gamma(a), so every g_e stays Gamma(c, 1) and p stays exactly Dirichlet(c) at
 * every microbatch (a plain convex mix with a fresh Dirichlet draw would shrink
 * the spread toward uniform as the trace goes on); consecutive g_e have
 * correlation 1 - delta. delta = 0 freezes the popularity, delta = 1 redraws it
 * every microbatch. Each token picks k distinct experts from p: sequential
 * sampling without replacement, done as Walker alias draws with rejection of
 * experts already taken (an exact conditional scan takes over after many
 * rejections, so very skewed popularities cannot stall it).
 *
 * Hotspot (the authors' injection). H = round(f T R) hot tokens per record,
 * split over the source ranks as evenly as possible (rank r takes
 * floor(H / R), plus one when r < H mod R): they are the first tokens of each
 * rank. The hot ranks are ranks 0..N-1 (--hot-ranks N, the default N = 1),
 * the first N ranks of every node (per-node:N) or a given list; the hot set is
 * the first M home experts of each hot rank (--hot-experts M, default all of
 * them), m experts in all. Hot expert e, the j-th (from 0) chosen on its rank,
 * weighs
 *
 *     w_e = p_e * (j + 1)^-S        (S = --hot-skew, default 0)
 *
 * so S = 0 spreads the hotspot as the base popularity does and a large S
 * piles it onto the first experts of each hot rank. With m > k a hot token
 * picks k distinct hot experts from w (sequentially without replacement, like
 * base tokens). With m <= k a token's k distinct picks could take every hot
 * expert, so there the skew acts on how many hot tokens each hot expert gets:
 * a hot token takes the j-th hot expert of each hot rank with probability
 * (j + 1)^-S (every one of them at S = 0; the first always), one uniform draw
 * from the hot stream per hot expert after the first, and its remaining picks
 * from p over the experts it has not taken. A skew needs two hot experts per
 * hot rank: with one, (j + 1)^-S is 1 whatever S, and the check refuses it.
 *
 * Random streams. Every (record, source rank) has two GSL mt19937 streams, one
 * for its hot tokens and one for its base tokens, seeded by hashing --seed with
 * the stream's kind, record and rank; the popularity has its own stream. So
 * changing H only moves tokens from the end of a base stream to the end of a
 * hot stream: the mean imbalance is a deterministic, nearly continuous
 * function of f, and the calibration's bracketing search converges.
 *
 * Version 2 (tsim_gen_params.version, gen --generator 2) keeps all of the
 * above but draws each rank's picks as capped multinomial counts instead of
 * token by token (count_rank below, gen_counts.c): a different distribution,
 * recorded in the meta. */
#define HAVE_INLINE 1

#include "gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <pthread.h>

#include "evaluate.h"
#include "gen_counts.h"
#include "topology.h"

enum { STREAM_POPULARITY = 1, STREAM_HOT = 2, STREAM_BASE = 3, STREAM_POISSON = 4, STREAM_KINDS };

/* Consecutive rejected alias draws before the exact scan takes over. */
#define MAX_REJECTIONS 64

static int64_t tokens_per_record(const tsim_gen_params *p)
{
    return (int64_t)p->tokens * p->ep;
}

static int64_t hot_tokens_for(const tsim_gen_params *p, double f)
{
    int64_t n = tokens_per_record(p);
    int64_t h = llround(f * (double)n);
    return h < 0 ? 0 : h > n ? n : h;
}

int64_t tsim_gen_hot_tokens(const tsim_gen_params *p)
{
    return hot_tokens_for(p, p->hot_fraction);
}

/* Walker alias table over a list of experts: slot i keeps its own expert when
 * the low 32 bits of the draw fall below thr[i], else gives alt[i]. weight[]
 * (normalised) serves the exact fallback scan. */
typedef struct {
    int n;
    uint32_t *thr;
    int32_t *own;
    int32_t *alt;
    double *weight;
    double *scaled; /* build scratch */
    int32_t *small, *large;
} alias_table;

static int alias_alloc(alias_table *a, int n)
{
    memset(a, 0, sizeof *a);
    a->n = n;
    a->thr = malloc(sizeof *a->thr * (size_t)n);
    a->own = malloc(sizeof *a->own * (size_t)n);
    a->alt = malloc(sizeof *a->alt * (size_t)n);
    a->weight = malloc(sizeof *a->weight * (size_t)n);
    a->scaled = malloc(sizeof *a->scaled * (size_t)n);
    a->small = malloc(sizeof *a->small * (size_t)n);
    a->large = malloc(sizeof *a->large * (size_t)n);
    return a->thr && a->own && a->alt && a->weight && a->scaled && a->small && a->large ? 0 : -1;
}

static void alias_free(alias_table *a)
{
    free(a->thr);
    free(a->own);
    free(a->alt);
    free(a->weight);
    free(a->scaled);
    free(a->small);
    free(a->large);
    memset(a, 0, sizeof *a);
}

/* Builds the table for experts[i] with popularity pop[experts[i]] (Vose's
 * method). A list whose popularities are all zero becomes uniform. */
static void alias_build(alias_table *a, const int32_t *experts, const double *pop)
{
    const int n = a->n;
    double total = 0.0;
    for (int i = 0; i < n; i++)
        total += pop[experts[i]];
    int nsmall = 0, nlarge = 0;
    for (int i = 0; i < n; i++) {
        a->own[i] = a->alt[i] = experts[i];
        a->weight[i] = total > 0.0 ? pop[experts[i]] / total : 1.0 / n;
        a->scaled[i] = a->weight[i] * n;
        if (a->scaled[i] < 1.0)
            a->small[nsmall++] = i;
        else
            a->large[nlarge++] = i;
    }
    while (nsmall > 0 && nlarge > 0) {
        int s = a->small[--nsmall], l = a->large[nlarge - 1];
        a->thr[s] = (uint32_t)(a->scaled[s] * 4294967296.0);
        a->alt[s] = experts[l];
        a->scaled[l] -= 1.0 - a->scaled[s];
        if (a->scaled[l] < 1.0) {
            nlarge--;
            a->small[nsmall++] = l;
        }
    }
    /* Left over (rounding): keep their own expert, unless it has no weight at
     * all, in which case the slot gives the heaviest expert. */
    int heaviest = 0;
    for (int i = 1; i < n; i++)
        if (a->weight[i] > a->weight[heaviest])
            heaviest = i;
    for (int i = 0; i < nlarge; i++)
        a->thr[a->large[i]] = UINT32_MAX;
    for (int i = 0; i < nsmall; i++) {
        int s = a->small[i];
        if (a->weight[s] > 0.0) {
            a->thr[s] = UINT32_MAX;
        } else {
            a->thr[s] = 0;
            a->alt[s] = experts[heaviest];
        }
    }
}

/* The token streams: GSL's mt19937, computed here so that it inlines and
 * twists its 624 words in one pass (the GSL call costs an indirect call and a
 * state check per output, most of gen's time). Output for output it equals
 * gsl_rng_mt19937 with the same seed; test_gen checks that against GSL. */
enum { MT_N = 624, MT_M = 397 };

typedef struct {
    uint32_t mt[MT_N];
    int mti;
} mt_stream;

static void mt_seed(mt_stream *s, unsigned long seed)
{
    uint32_t x = (uint32_t)(seed == 0 ? 4357 : seed); /* as GSL: 0 means 4357 */
    s->mt[0] = x;
    for (int i = 1; i < MT_N; i++) {
        x = UINT32_C(1812433253) * (x ^ (x >> 30)) + (uint32_t)i;
        s->mt[i] = x;
    }
    s->mti = MT_N;
}

static void mt_twist(mt_stream *s)
{
    uint32_t *mt = s->mt;
    int kk = 0;
    for (; kk < MT_N - MT_M; kk++) {
        uint32_t y = (mt[kk] & UINT32_C(0x80000000)) | (mt[kk + 1] & UINT32_C(0x7fffffff));
        mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ ((y & 1u) ? UINT32_C(0x9908b0df) : 0u);
    }
    for (; kk < MT_N - 1; kk++) {
        uint32_t y = (mt[kk] & UINT32_C(0x80000000)) | (mt[kk + 1] & UINT32_C(0x7fffffff));
        mt[kk] = mt[kk + MT_M - MT_N] ^ (y >> 1) ^ ((y & 1u) ? UINT32_C(0x9908b0df) : 0u);
    }
    uint32_t y = (mt[MT_N - 1] & UINT32_C(0x80000000)) | (mt[0] & UINT32_C(0x7fffffff));
    mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ ((y & 1u) ? UINT32_C(0x9908b0df) : 0u);
    s->mti = 0;
}

static inline uint32_t mt_next(mt_stream *s)
{
    if (s->mti >= MT_N)
        mt_twist(s);
    uint32_t k = s->mt[s->mti++];
    k ^= k >> 11;
    k ^= (k << 7) & UINT32_C(0x9d2c5680);
    k ^= (k << 15) & UINT32_C(0xefc60000);
    return k ^ (k >> 18);
}

/* gsl_rng_uniform for mt19937. */
static inline double mt_uniform(mt_stream *s)
{
    return mt_next(s) / 4294967296.0;
}

/* gsl_rng_uniform_int for mt19937 (range 2^32 - 1, 0 < n). */
static unsigned long mt_uniform_int(mt_stream *s, unsigned long n)
{
    const unsigned long scale = UINT32_MAX / n;
    unsigned long k;
    do
        k = mt_next(s) / scale;
    while (k >= n);
    return k;
}

int tsim_gen_mt19937_check(unsigned long seed, const uint32_t *expected, int n)
{
    mt_stream s;
    mt_seed(&s, seed);
    for (int i = 0; i < n; i++)
        if (mt_next(&s) != expected[i])
            return i;
    return -1;
}

static inline int32_t alias_draw(const alias_table *a, mt_stream *rng)
{
    uint64_t x = (uint64_t)mt_next(rng) * (uint64_t)a->n;
    int i = (int)(x >> 32);
    /* Branch-free select: the comparison is a coin flip the predictor loses. */
    int32_t keep = -(int32_t)((uint32_t)x < a->thr[i]);
    return (a->own[i] & keep) | (a->alt[i] & ~keep);
}

/* What one thread needs to sample a source rank's tokens. */
typedef struct {
    mt_stream rng;
    uint32_t *stamp;   /* [E]: == token id when taken (or excluded) for the current token */
    uint32_t token_id;
    tsim_counts_sampler *counts; /* versions 2 and 3 only */
    int64_t *room, *got;         /* [E] versions 2 and 3: the multinomial's caps and result */
    int64_t *room_hot;           /* [E] versions 2 and 3: every entry the rank's hot tokens */
    int64_t room_all, room_hot_all; /* the one value in all of room[] / room_hot[], -1: mixed */
    double *grid_u;              /* [GRID_ROWS E] version 3: uniforms of the Poisson rows */
    int64_t *grid;               /* [GRID_ROWS E] version 3: the Poisson rows */
} sampler;

typedef struct gen_pool gen_pool;

/* Version 3 draws the Poisson rows of up to this many source ranks together,
 * expert by expert (count_share_grid). */
#define GRID_ROWS 32

/* One rank's Poisson counts from the grid, their sum and largest. */
typedef struct {
    int64_t *counts;
    int64_t sum, top;
} poisson_row;

struct gen_pool {
    pthread_t *tids;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int64_t round;   /* bumped per record */
    int64_t record;  /* the record being sampled */
    int pending;     /* helper threads still sampling this round */
    bool quit;
};

struct tsim_gen {
    tsim_gen_params p;
    tsim_topology topo;
    gsl_rng *pop_rng;
    double *gammas;     /* [L * E] drifting gamma variables, one row per layer */
    double *pop;        /* [E] the current record's popularity */
    alias_table base;   /* over all experts */
    alias_table hot;    /* over the hot set (used when m >= k) */
    int32_t *all_experts; /* 0..E-1 */
    int32_t *hot_experts; /* [m] */
    int32_t *hot_start;   /* [m]: the hot experts of microbatch 0 (--hot-move shifts them) */
    double *hot_factor;   /* [m]: (j + 1)^-S of each hot expert; NULL when S = 0 */
    double *hot_weight;   /* [E]: w_e for the hot experts (only with hot_factor) */
    double *hot_w;        /* [m]: version 2, the current record's hot-table weights */
    tsim_counts_poisson_tables poisson; /* version 3: the current record's Poisson(lambda p_e) */
    double *poisson_mu;   /* [E] version 3: their means */
    int64_t poisson_min;  /* version 3: parts of at least this many picks start from them (0: none) */
    sampler *samplers;  /* [threads]: one per thread sampling source ranks */
    int threads;
    gen_pool *pool;     /* NULL with one thread */
    int64_t *load;      /* [R] */
    tsim_record rec;
    int64_t hot_total;  /* H */
    int64_t next;       /* index of the next record */
    uint64_t key[STREAM_KINDS]; /* versions 2 and 3: the current record's record_key per stream kind */
};

static uint64_t mix64(uint64_t z)
{
    return tsim_splitmix64(&z);
}

/* A stream's 64-bit seed: (seed, kind, record, rank) hashed, in two steps
 * so that a record's streams can share the first. */
static uint64_t record_key(uint64_t seed, int kind, int64_t record)
{
    uint64_t h = mix64(seed);
    h = mix64(h ^ (uint64_t)kind);
    return mix64(h ^ (uint64_t)record);
}

static uint64_t rank_seed(uint64_t key, int rank)
{
    return mix64(key ^ (uint64_t)(uint32_t)rank);
}

static uint64_t stream_seed64(uint64_t seed, int kind, int64_t record, int rank)
{
    return rank_seed(record_key(seed, kind, record), rank);
}

/* mt19937 takes 32 bits of seed: the low half of the hash. */
static unsigned long stream_seed(uint64_t seed, int kind, int64_t record, int rank)
{
    return (unsigned long)(stream_seed64(seed, kind, record, rank) & UINT64_C(0xffffffff));
}

static void pool_stop(tsim_gen *g)
{
    gen_pool *pl = g->pool;
    if (!pl)
        return;
    pthread_mutex_lock(&pl->mu);
    pl->quit = true;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < pl->started; i++)
        pthread_join(pl->tids[i], NULL);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->go);
    pthread_cond_destroy(&pl->done);
    free(pl->tids);
    free(pl);
    g->pool = NULL;
}

typedef struct {
    tsim_gen *g;
    int id;
} pool_arg;

static void *pool_worker(void *arg);
static void sample_rank(const tsim_gen *g, sampler *s, int rank, int64_t record);

/* Helper threads 1..threads-1 (the caller samples share 0). */
static int pool_start(tsim_gen *g)
{
    gen_pool *pl = calloc(1, sizeof *pl);
    if (!pl)
        return -1;
    pl->tids = calloc((size_t)g->threads, sizeof *pl->tids);
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->go, NULL);
    pthread_cond_init(&pl->done, NULL);
    g->pool = pl;
    if (!pl->tids)
        return -1;
    for (int id = 1; id < g->threads; id++) {
        pool_arg *pa = malloc(sizeof *pa);
        if (!pa)
            return -1;
        pa->g = g;
        pa->id = id;
        if (pthread_create(&pl->tids[pl->started], NULL, pool_worker, pa) != 0) {
            free(pa);
            return -1;
        }
        pl->started++;
    }
    return 0;
}

void tsim_gen_close(tsim_gen *g)
{
    if (!g)
        return;
    if (g->pop_rng)
        gsl_rng_free(g->pop_rng);
    tsim_topology_free(&g->topo);
    free(g->gammas);
    free(g->pop);
    alias_free(&g->base);
    alias_free(&g->hot);
    free(g->all_experts);
    free(g->hot_experts);
    free(g->hot_start);
    free(g->hot_factor);
    free(g->hot_weight);
    free(g->hot_w);
    free(g->poisson_mu);
    tsim_counts_poisson_free(&g->poisson);
    pool_stop(g);
    for (int i = 0; g->samplers && i < g->threads; i++) {
        free(g->samplers[i].stamp);
        tsim_counts_sampler_free(g->samplers[i].counts);
        free(g->samplers[i].room);
        free(g->samplers[i].got);
        free(g->samplers[i].room_hot);
        free(g->samplers[i].grid_u);
        free(g->samplers[i].grid);
    }
    free(g->samplers);
    free(g->load);
    tsim_record_free(&g->rec);
    free(g);
}

/* GSL's default error handler aborts the process; the library turns it off
 * itself, once, before its first GSL call (status codes are checked instead). */
static pthread_once_t gsl_quiet_once = PTHREAD_ONCE_INIT;

static void gsl_quiet(void)
{
    gsl_set_error_handler_off();
}

int tsim_gen_open(tsim_gen **out, const tsim_gen_params *p, tsim_error *err)
{
    pthread_once(&gsl_quiet_once, gsl_quiet);
    *out = NULL;
    int rc = tsim_gen_params_check(p, err);
    if (rc)
        return rc;
    tsim_gen *g = calloc(1, sizeof *g);
    if (!g)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    g->p = *p;
    rc = tsim_topology_init(&g->topo, p->ep, p->experts, p->ranks_per_node, 0, NULL, err);
    if (rc) {
        tsim_gen_close(g);
        return rc;
    }
    const int E = p->experts;
    int *hot_ranks = malloc(sizeof *hot_ranks * (size_t)p->ep);
    if (!hot_ranks) {
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the generator");
    }
    const int n_hot = tsim_gen_hot_rank_list(p, hot_ranks);
    const int per_rank = tsim_gen_hot_experts_per_rank(p);
    const int m = n_hot * per_rank;
    rc = tsim_record_alloc(&g->rec, p->ep, E, err);
    if (rc) {
        free(hot_ranks);
        tsim_gen_close(g);
        return rc;
    }
    g->pop_rng = gsl_rng_alloc(gsl_rng_mt19937);
    g->gammas = malloc(sizeof *g->gammas * (size_t)E * (size_t)p->layers);
    g->pop = malloc(sizeof *g->pop * (size_t)E);
    g->all_experts = malloc(sizeof *g->all_experts * (size_t)E);
    g->hot_experts = malloc(sizeof *g->hot_experts * (size_t)m);
    g->hot_start = malloc(sizeof *g->hot_start * (size_t)m);
    g->threads = p->threads > 1 ? (p->threads < p->ep ? p->threads : p->ep) : 1;
    g->samplers = calloc((size_t)g->threads, sizeof *g->samplers);
    bool stamps = g->samplers != NULL;
    for (int i = 0; stamps && i < g->threads; i++)
        stamps = (g->samplers[i].stamp = calloc((size_t)E, sizeof(uint32_t))) != NULL;
    if (TSIM_GEN_DRAWS_COUNTS(p->version)) {
        g->hot_w = malloc(sizeof *g->hot_w * (size_t)(m > 0 ? m : 1));
        g->poisson_mu = malloc(sizeof *g->poisson_mu * (size_t)E);
        const double most = (double)p->tokens * p->topk;
        stamps = stamps && g->hot_w && g->poisson_mu &&
                 tsim_counts_poisson_init(&g->poisson, E, tsim_counts_poisson_bound(most, E)) == 0;
        for (int i = 0; stamps && i < g->threads; i++) {
            sampler *s = &g->samplers[i];
            s->room = malloc(sizeof *s->room * (size_t)E);
            s->room_hot = malloc(sizeof *s->room_hot * (size_t)E);
            s->got = malloc(sizeof *s->got * (size_t)E);
            s->room_all = s->room_hot_all = -1;
            stamps = s->room && s->room_hot && s->got && tsim_counts_sampler_init(&s->counts, E) == 0;
            if (stamps && p->version == TSIM_GEN_VERSION_BLOCKS) {
                /* rows for the ranks this thread samples, at most GRID_ROWS */
                const int share = (p->ep + g->threads - 1) / g->threads;
                const size_t rows = (size_t)(share < GRID_ROWS ? share : GRID_ROWS);
                s->grid_u = malloc(sizeof *s->grid_u * rows * (size_t)E);
                s->grid = malloc(sizeof *s->grid * rows * (size_t)E);
                stamps = s->grid_u && s->grid;
            }
        }
    }
    g->load = calloc((size_t)p->ep, sizeof *g->load);
    bool skewed = p->hot_skew > 0.0;
    if (skewed) {
        g->hot_factor = malloc(sizeof *g->hot_factor * (size_t)m);
        g->hot_weight = calloc((size_t)E, sizeof *g->hot_weight);
    }
    if (!g->pop_rng || !g->gammas || !g->pop || !g->all_experts || !g->hot_experts || !g->hot_start || !stamps ||
        !g->load || alias_alloc(&g->base, E) || alias_alloc(&g->hot, m) ||
        (skewed && (!g->hot_factor || !g->hot_weight))) {
        free(hot_ranks);
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the generator");
    }
    for (int e = 0; e < E; e++)
        g->all_experts[e] = e;
    int n = 0;
    for (int h = 0; h < n_hot; h++) {
        const int32_t *home = tsim_home_experts(&g->topo, hot_ranks[h]);
        for (int j = 0; j < per_rank; j++) {
            if (skewed)
                g->hot_factor[n] = pow((double)(j + 1), -p->hot_skew);
            g->hot_experts[n++] = home[j];
        }
    }
    free(hot_ranks);
    memcpy(g->hot_start, g->hot_experts, sizeof *g->hot_start * (size_t)m);
    if (g->threads > 1 && pool_start(g)) {
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "could not start %d generator threads", g->threads);
    }
    tsim_gen_rewind(g, p->hot_fraction);
    *out = g;
    return TSIM_OK;
}

static void set_hot_tokens(tsim_gen *g, int64_t hot_total)
{
    g->hot_total = hot_total;
    g->next = 0;
    gsl_rng_set(g->pop_rng, stream_seed(g->p.seed, STREAM_POPULARITY, 0, 0));
}

void tsim_gen_rewind(tsim_gen *g, double hot_fraction)
{
    if (!(hot_fraction >= 0.0))
        hot_fraction = 0.0;
    if (hot_fraction > 1.0)
        hot_fraction = 1.0;
    g->p.hot_fraction = hot_fraction;
    set_hot_tokens(g, hot_tokens_for(&g->p, hot_fraction));
}

/* Beta(a, b) as a ratio of gammas; both underflowing to 0 (tiny a and b)
 * gives the mean. */
static double draw_beta(gsl_rng *rng, double a, double b)
{
    double x = gsl_ran_gamma(rng, a, 1.0), y = gsl_ran_gamma(rng, b, 1.0);
    return x + y > 0.0 ? x / (x + y) : a / (a + b);
}

/* The popularity of (microbatch, layer): draws from the popularity stream in
 * record order. */
static void next_popularity(tsim_gen *g, int64_t microbatch, int layer)
{
    const int E = g->p.experts;
    const double c = g->p.concentration, delta = g->p.drift;
    double *gam = g->gammas + (size_t)layer * (size_t)E;
    if (microbatch == 0 || delta >= 1.0) {
        for (int e = 0; e < E; e++)
            gam[e] = gsl_ran_gamma(g->pop_rng, c, 1.0);
    } else if (delta > 0.0) {
        for (int e = 0; e < E; e++) {
            double keep = draw_beta(g->pop_rng, c * (1.0 - delta), c * delta);
            gam[e] = keep * gam[e] + gsl_ran_gamma(g->pop_rng, c * delta, 1.0);
        }
    }
    double total = 0.0;
    for (int e = 0; e < E; e++)
        total += gam[e];
    for (int e = 0; e < E; e++)
        g->pop[e] = total > 0.0 ? gam[e] / total : 1.0 / E;
}

/* Exact draw from the table's weights over the experts not stamped for the
 * current token (uniform among them when none has weight). */
static int32_t scan_draw(sampler *s, const alias_table *a)
{
    const uint32_t id = s->token_id;
    double mass = 0.0;
    int free_count = 0;
    for (int i = 0; i < a->n; i++) {
        if (s->stamp[a->own[i]] != id) {
            mass += a->weight[i];
            free_count++;
        }
    }
    if (mass > 0.0) {
        double u = mt_uniform(&s->rng) * mass, acc = 0.0;
        int32_t last = -1;
        for (int i = 0; i < a->n; i++) {
            if (s->stamp[a->own[i]] == id || a->weight[i] <= 0.0)
                continue;
            last = a->own[i];
            acc += a->weight[i];
            if (u < acc)
                return last;
        }
        return last;
    }
    unsigned long pick = mt_uniform_int(&s->rng, (unsigned long)free_count);
    for (int i = 0; i < a->n; i++)
        if (s->stamp[a->own[i]] != id && pick-- == 0)
            return a->own[i];
    return a->own[0]; /* unreachable: callers leave at least one expert free */
}

/* `picks` distinct experts from the table, none already stamped for this token. */
static void pick_distinct(sampler *s, const alias_table *a, int picks, int64_t *row)
{
    const uint32_t id = s->token_id;
    for (int j = 0; j < picks; j++) {
        int32_t e = -1;
        for (int tries = 0; tries < MAX_REJECTIONS; tries++) {
            int32_t d = alias_draw(a, &s->rng);
            if (s->stamp[d] != id) {
                e = d;
                break;
            }
        }
        if (e < 0)
            e = scan_draw(s, a);
        s->stamp[e] = id;
        row[e]++;
    }
}

static void sample_rank(const tsim_gen *g, sampler *s, int rank, int64_t record)
{
    const tsim_gen_params *p = &g->p;
    const int E = p->experts, k = p->topk, m = g->hot.n;
    int64_t *row = g->rec.counts + (size_t)rank * (size_t)E;
    memset(row, 0, sizeof *row * (size_t)E);
    memset(s->stamp, 0, sizeof *s->stamp * (size_t)E);
    s->token_id = 0;

    int64_t hot = g->hot_total / p->ep + (rank < g->hot_total % p->ep ? 1 : 0);
    mt_seed(&s->rng, stream_seed(p->seed, STREAM_HOT, record, rank));
    for (int64_t t = 0; t < hot; t++) {
        s->token_id++;
        if (m > k || (m == k && !g->hot_factor)) {
            pick_distinct(s, &g->hot, k, row);
        } else {
            /* Every hot expert, or (skewed) the j-th of each rank with
             * probability (j + 1)^-S; the first (factor 1) draws nothing. */
            int taken = 0;
            for (int i = 0; i < m; i++) {
                if (g->hot_factor && g->hot_factor[i] < 1.0 && mt_uniform(&s->rng) >= g->hot_factor[i])
                    continue;
                s->stamp[g->hot_experts[i]] = s->token_id;
                row[g->hot_experts[i]]++;
                taken++;
            }
            pick_distinct(s, &g->base, k - taken, row);
        }
    }
    mt_seed(&s->rng, stream_seed(p->seed, STREAM_BASE, record, rank));
    for (int64_t t = hot; t < p->tokens; t++) {
        s->token_id++;
        pick_distinct(s, &g->base, k, row);
    }
}

/* Whether a part of n picks starts from the record's Poisson tables
 * (version 3 only sets poisson_min). */
static bool starts_from_poisson(const tsim_gen *g, int64_t n)
{
    return g->poisson_min > 0 && n >= g->poisson_min;
}

/* Version 3 with many picks per expert: the picks as independent
 * Poisson(lambda p_e) counts (lambda a little below n, one table per record,
 * g->poisson), a sum above n drawn again (about 1 rank in 40). Given
 * their sum S these are Multinomial(S, p), so the n - S picks still to be
 * drawn one by one make Multinomial(n, p) exactly. Returns n - S. */
static int64_t poisson_picks(const tsim_gen *g, sampler *s, int64_t n, int64_t *top)
{
    int64_t drawn;
    do
        drawn = tsim_counts_poisson_row(s->counts, &g->poisson, s->got, top);
    while (drawn > n);
    return n - drawn;
}

/* n more picks over the popularity into got[], within room[]: alias picks
 * (version 3 in blocks; `safe` picks fit every entry's headroom), the rest
 * by conditional binomials. Up to 16 picks per expert one alias draw each
 * (about 2 ns, where a binomial at a mean of 16 costs some 80); a pick on a
 * full expert is drawn again, and after 64 such misses in a row (or beyond
 * 16 per expert) the binomials place the rest. */
static void place_picks(const tsim_gen *g, sampler *s, int64_t n, const int64_t *room, int64_t safe, int64_t *got)
{
    const int E = g->p.experts;
    const bool blocks = g->p.version == TSIM_GEN_VERSION_BLOCKS;
    int64_t left = n;
    if (blocks || n <= 16 * (int64_t)E) {
        const tsim_counts_alias table = {g->base.n, g->base.thr, g->base.own, g->base.alt};
        left = blocks ? tsim_counts_alias_block_picks(s->counts, &table, room, E, left, safe, got)
                      : tsim_counts_alias_picks(s->counts, &table, room, left, got);
    }
    tsim_counts_fill(s->counts, E, g->pop, room, left, got);
}

/* n picks over the popularity, within s->room (each at least room_min);
 * returns the counts: s->got, or ready's row, added to in place. Version 3
 * from g->poisson_min picks on starts with Poisson counts: `ready` ones
 * (drawn with the other ranks') when given, unless they sum above n. */
static int64_t *picks_over_p(const tsim_gen *g, sampler *s, int64_t n, int64_t room_min, const poisson_row *ready)
{
    const int E = g->p.experts;
    const bool poisson = starts_from_poisson(g, n);
    int64_t *got = s->got, left = n, top = 0;
    if (poisson && ready && ready->sum <= n) {
        got = ready->counts;
        top = ready->top;
        left = n - ready->sum;
    } else {
        memset(got, 0, sizeof *got * (size_t)E);
        if (poisson)
            left = poisson_picks(g, s, n, &top);
    }
    place_picks(g, s, left, s->room, room_min - top, got);
    return got;
}

/* room[] all set to v, unless it is already (*all == v). */
static void fill_room(int64_t *room, int64_t *all, int E, int64_t v)
{
    if (*all == v)
        return;
    for (int e = 0; e < E; e++)
        room[e] = v;
    *all = v;
}

/* The hot tokens' other picks over the popularity, when the hot experts
 * took c of them each (row[] holds the c, the largest `top`). Each expert
 * is capped at the hot tokens that have not taken it: hot - c for a hot
 * expert, hot for the others, which is row[e] <= hot with the picks added
 * to row[] itself (no separate counts, rooms per expert or pass to add
 * them). Version 3's Poisson path, for hot parts as large as a base part,
 * keeps the counts apart. */
static void other_hot_picks(const tsim_gen *g, sampler *s, int64_t *row, int64_t hot, int64_t picks, int64_t top)
{
    const int E = g->p.experts;
    if (!starts_from_poisson(g, picks)) {
        fill_room(s->room_hot, &s->room_hot_all, E, hot);
        place_picks(g, s, picks, s->room_hot, hot - top, row);
        return;
    }
    fill_room(s->room, &s->room_all, E, hot);
    for (int i = 0; i < g->hot.n; i++)
        s->room[g->hot_experts[i]] -= row[g->hot_experts[i]];
    s->room_all = -1;
    const int64_t *got = picks_over_p(g, s, picks, hot - top, NULL);
    for (int e = 0; e < E; e++)
        row[e] += got[e];
}

/* Version 2 (gen_counts.c): a rank's picks as multinomial counts, in two
 * parts as in version 1. Its H hot tokens: with m > k (or m = k, unskewed)
 * H k picks over the hot table, at most H per hot expert; else hot expert i
 * goes to Binomial(H, (i + 1)^-S) of them (all H unskewed, always for the
 * first) and their other picks go over p, each expert capped at the hot
 * tokens that have not taken it. Its B base tokens: B k picks over p, at
 * most B per expert. Pooling the two parts' picks over p would be one
 * multinomial less but would let hot tokens' other picks land on the hot
 * experts they took (2 points more imbalance at EP32, f = 0.05). */
static void count_rank(const tsim_gen *g, sampler *s, int rank, const poisson_row *ready)
{
    const tsim_gen_params *p = &g->p;
    const int E = p->experts, k = p->topk, m = g->hot.n;
    int64_t *row = g->rec.counts + (size_t)rank * (size_t)E;
    memset(row, 0, sizeof *row * (size_t)E);
    const int64_t hot = g->hot_total / p->ep + (rank < g->hot_total % p->ep ? 1 : 0);
    const int64_t base = p->tokens - hot;
    if (hot > 0) {
        tsim_counts_seed(s->counts, rank_seed(g->key[STREAM_HOT], rank));
        if (m > k || (m == k && !g->hot_factor)) {
            for (int i = 0; i < m; i++)
                s->room[i] = hot;
            s->room_all = -1;
            tsim_counts_multinomial(s->counts, m, g->hot_w, s->room, hot * k, s->got);
            for (int i = 0; i < m; i++)
                row[g->hot_experts[i]] += s->got[i];
        } else {
            int64_t picks = hot * k, top = 0;
            for (int i = 0; i < m; i++) {
                const bool some = g->hot_factor && g->hot_factor[i] < 1.0;
                const int64_t c = some ? tsim_counts_binomial(s->counts, g->hot_factor[i], hot) : hot;
                row[g->hot_experts[i]] = c; /* the hot experts are distinct */
                top = c > top ? c : top;
                picks -= c;
            }
            other_hot_picks(g, s, row, hot, picks, top);
        }
    }
    tsim_counts_seed(s->counts, rank_seed(g->key[STREAM_BASE], rank));
    fill_room(s->room, &s->room_all, E, base);
    const int64_t *got = picks_over_p(g, s, base * k, base, ready);
    for (int e = 0; e < E; e++)
        row[e] += got[e];
}

/* Version 3: the share's ranks GRID_ROWS at a time, their Poisson rows
 * drawn expert by expert (one table in cache for all rows; rank by rank,
 * every row would walk all E tables, which do not fit in L1), each from its
 * own stream, then each rank counted as usual. */
static void count_share_grid(const tsim_gen *g, sampler *s, int id)
{
    const int E = g->p.experts;
    int ranks[GRID_ROWS];
    for (int r = id; r < g->p.ep;) {
        int rows = 0;
        for (; rows < GRID_ROWS && r < g->p.ep; r += g->threads)
            ranks[rows++] = r;
        for (int i = 0; i < rows; i++)
            tsim_counts_uniforms(rank_seed(g->key[STREAM_POISSON], ranks[i]), E,
                                 s->grid_u + (size_t)i * (size_t)E);
        int64_t sum[GRID_ROWS], top[GRID_ROWS];
        tsim_counts_poisson_grid(&g->poisson, rows, s->grid_u, s->grid, sum, top);
        for (int i = 0; i < rows; i++) {
            const poisson_row ready = {s->grid + (size_t)i * (size_t)E, sum[i], top[i]};
            count_rank(g, s, ranks[i], &ready);
        }
    }
}

/* Threads (-j): source rank r of every record is sampled by sampler
 * r mod threads into its own row. Each rank has its own seeded streams, so the
 * records do not depend on the number of threads. */

static void sample_share(const tsim_gen *g, int id, int64_t record)
{
    sampler *s = &g->samplers[id];
    if (g->poisson_min > 0) /* version 3 */
        count_share_grid(g, s, id);
    else
        for (int r = id; r < g->p.ep; r += g->threads) {
            if (TSIM_GEN_DRAWS_COUNTS(g->p.version))
                count_rank(g, s, r, NULL);
            else
                sample_rank(g, s, r, record);
        }
}

static void *pool_worker(void *arg)
{
    pool_arg *pa = arg;
    tsim_gen *g = pa->g;
    const int id = pa->id;
    free(pa);
    gen_pool *pl = g->pool;
    int64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        while (pl->round == seen && !pl->quit)
            pthread_cond_wait(&pl->go, &pl->mu);
        if (pl->quit) {
            pthread_mutex_unlock(&pl->mu);
            return NULL;
        }
        seen = pl->round;
        int64_t record = pl->record;
        pthread_mutex_unlock(&pl->mu);
        sample_share(g, id, record);
        pthread_mutex_lock(&pl->mu);
        if (--pl->pending == 0)
            pthread_cond_signal(&pl->done);
        pthread_mutex_unlock(&pl->mu);
    }
}

static void pool_run(tsim_gen *g, int64_t record)
{
    gen_pool *pl = g->pool;
    pthread_mutex_lock(&pl->mu);
    pl->record = record;
    pl->pending = g->threads - 1;
    pl->round++;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    sample_share(g, 0, record);
    pthread_mutex_lock(&pl->mu);
    while (pl->pending > 0)
        pthread_cond_wait(&pl->done, &pl->mu);
    pthread_mutex_unlock(&pl->mu);
}

/* --hot-move: the hotspot of a microbatch sits (microbatch / N) ranks past
 * where it started, wrapping around, so layouts learnt from history go stale. */
static void place_hotspot(tsim_gen *g, int64_t microbatch)
{
    if (g->p.hot_move <= 0)
        return;
    const int E = g->p.experts, hpr = E / g->p.ep;
    const int64_t shift = (microbatch / g->p.hot_move) % g->p.ep * hpr;
    for (int i = 0; i < g->hot.n; i++)
        g->hot_experts[i] = (int32_t)((g->hot_start[i] + shift) % E);
}

/* Version 3's Poisson tables for the record: lambda = n - 2 sqrt(n) for
 * the fewest base picks of any rank (n), so that a rank's Poisson sum
 * exceeds its picks about once in 40 (the row is drawn again) and its
 * top-up is about 2 sqrt(n) picks. Below 8 picks per expert the block
 * picks alone are cheaper. */
static void poisson_tables(tsim_gen *g)
{
    const int E = g->p.experts;
    const int64_t most_hot = (g->hot_total + g->p.ep - 1) / g->p.ep;
    const int64_t n = ((int64_t)g->p.tokens - most_hot) * g->p.topk;
    g->poisson_min = n >= 8 * (int64_t)E ? n : 0;
    if (!g->poisson_min)
        return;
    const double lambda = (double)n - 2.0 * sqrt((double)n);
    double total = 0.0;
    for (int e = 0; e < E; e++)
        total += g->pop[e];
    for (int e = 0; e < E; e++)
        g->poisson_mu[e] = lambda * (total > 0.0 ? g->pop[e] / total : 1.0 / E);
    if (tsim_counts_poisson_build(&g->poisson, g->poisson_mu))
        g->poisson_min = 0; /* cannot happen (sized for all T k picks); the alias picks alone are the same law */
}

/* The next record's popularity and hotspot (every record needs them, drawn
 * or skipped: the popularity walks on from one microbatch to the next). */
static int64_t advance(tsim_gen *g)
{
    const int L = g->p.layers;
    const int64_t index = g->next++;
    next_popularity(g, index / L, (int)(index % L));
    place_hotspot(g, index / L);
    return index;
}

int tsim_gen_next(tsim_gen *g, const tsim_record **rec, double *imbalance)
{
    const int L = g->p.layers;
    if (g->next >= tsim_gen_record_count(&g->p))
        return 0;
    const int64_t index = advance(g);
    const int64_t microbatch = index / L;
    const int layer = (int)(index % L);
    if (g->hot_factor)
        for (int i = 0; i < g->hot.n; i++)
            g->hot_weight[g->hot_experts[i]] = g->pop[g->hot_experts[i]] * g->hot_factor[i];
    const double *hot_weights = g->hot_factor ? g->hot_weight : g->pop;
    alias_build(&g->base, g->all_experts, g->pop);
    if (TSIM_GEN_DRAWS_COUNTS(g->p.version)) {
        for (int i = 0; i < g->hot.n; i++)
            g->hot_w[i] = hot_weights[g->hot_experts[i]];
        for (int kind = STREAM_HOT; kind < STREAM_KINDS; kind++)
            g->key[kind] = record_key(g->p.seed, kind, index);
        if (g->p.version == TSIM_GEN_VERSION_BLOCKS)
            poisson_tables(g);
    } else {
        alias_build(&g->hot, g->hot_experts, hot_weights);
    }
    if (g->pool)
        pool_run(g, index);
    else
        sample_share(g, 0, index);
    g->rec.microbatch = microbatch;
    g->rec.layer = layer;
    g->rec.index = index;
    g->rec.line = 0;
    g->rec.tag[0] = '\0';
    if (imbalance) {
        tsim_native_loads(&g->topo, &g->rec, g->load);
        *imbalance = tsim_imbalance(g->load, g->p.ep);
    }
    *rec = &g->rec;
    return 1;
}

/* Mean initial imbalance with the generator's current H, over the records
 * of every stride-th microbatch (1: the whole trace); the others are
 * skipped, their popularity advanced but nothing drawn. */
static double trace_mean(tsim_gen *g, int stride, int trial, tsim_gen_progress_fn progress, void *ctx)
{
    const int64_t n = tsim_gen_record_count(&g->p), L = g->p.layers;
    const int64_t sampled = tsim_gen_trial_records(&g->p, stride);
    double sum = 0.0, rho;
    const tsim_record *rec;
    int64_t done = 0;
    while (g->next < n) {
        if (g->next / L % stride != 0) {
            advance(g);
            continue;
        }
        tsim_gen_next(g, &rec, &rho);
        sum += rho;
        done++;
        if (progress)
            progress(ctx, trial, done, sampled);
    }
    return sum / (double)sampled;
}

int tsim_gen_mean_imbalance(const tsim_gen_params *p, double *mean, tsim_gen_progress_fn progress, void *ctx,
                            tsim_error *err)
{
    tsim_gen *g;
    int rc = tsim_gen_open(&g, p, err);
    if (rc)
        return rc;
    *mean = trace_mean(g, 1, 0, progress, ctx);
    tsim_gen_close(g);
    return TSIM_OK;
}

typedef struct {
    int64_t h;
    double rho;
} probe;

static probe evaluate_at(tsim_gen *g, int64_t h, int stride, tsim_gen_calibration *cal, probe *best,
                         tsim_gen_progress_fn progress, void *ctx)
{
    set_hot_tokens(g, h);
    cal->trials++;
    probe pr = {h, trace_mean(g, stride, cal->trials, progress, ctx)};
    if (best->h < 0 || fabs(pr.rho - cal->target) < fabs(best->rho - cal->target))
        *best = pr;
    return pr;
}

static int calibrate_every(const tsim_gen_params *p, double target, int stride, tsim_gen_calibration *out,
                           tsim_gen_progress_fn progress, void *ctx, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(target >= 0.0 && target <= (double)TSIM_MAX_RANKS))
        return tsim_error_set(err, TSIM_E_INPUT, "--imbalance %g is out of range 0..%d", target, TSIM_MAX_RANKS);
    tsim_gen *g;
    int rc = tsim_gen_open(&g, p, err);
    if (rc)
        return rc;
    out->target = target;
    const int64_t n = tokens_per_record(p);
    probe best = {-1, 0.0};

    probe lo = evaluate_at(g, 0, stride, out, &best, progress, ctx);
    out->base = lo.rho;
    if (lo.rho > target + TSIM_GEN_TOLERANCE) {
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--imbalance %.2f%% is below the %.2f%% mean imbalance the base routing alone gives "
                              "(f = 0) with these parameters; choose a higher target, or flatten the base routing "
                              "with a larger --concentration or more --tokens",
                              100.0 * target, 100.0 * lo.rho);
    }

    /* Bracketing search on the integer H in [0, n]: lo has rho < target, hi
     * (once found) rho > target. Before a bracket exists, extrapolate along the
     * secant through the last two points below (a linear guess first); after,
     * false position with the Illinois rule (an end kept twice in a row counts
     * half), and a plain bisection after any such step that failed to halve
     * the bracket. It stops within TSIM_GEN_AIM or when the bracket is one token
     * wide. */
    probe prev = lo, hi = {-1, 0.0};
    double ylo = lo.rho - target, yhi = 0.0;
    int kept = 0;              /* +n: hi kept n steps in a row, -n: lo kept */
    int64_t width_before = -1; /* bracket width before the last false-position step */
    if (fabs(lo.rho - target) > TSIM_GEN_AIM && lo.rho < target) {
        /* A hot token lifts a hot rank by about min(k, m) / n_hot picks
         * where a base token gives it k / R; the mean load is T k. */
        const int n_hot = tsim_gen_hot_rank_list(p, NULL);
        const int k = p->topk, m = n_hot * tsim_gen_hot_experts_per_rank(p);
        double gain = (double)(k < m ? k : m) / n_hot - (double)k / p->ep;
        if (gain < 0.05 * k)
            gain = 0.05 * k;
        double guess = target * (double)p->tokens * k / gain;
        int64_t h = guess < 1.0 ? 1 : guess > (double)n ? n : (int64_t)llround(guess);
        for (int step = 0; step < 200; step++) {
            probe cur = evaluate_at(g, h, stride, out, &best, progress, ctx);
            if (fabs(cur.rho - target) <= TSIM_GEN_AIM)
                break;
            if (cur.rho < target) {
                prev = lo;
                lo = cur;
                ylo = cur.rho - target;
                kept = kept > 0 ? kept + 1 : 1;
                if (hi.h >= 0 && kept >= 2)
                    yhi *= 0.5;
            } else {
                hi = cur;
                yhi = cur.rho - target;
                kept = kept < 0 ? kept - 1 : -1;
                if (kept <= -2)
                    ylo *= 0.5;
            }
            if (hi.h < 0) {
                if (lo.h >= n)
                    break; /* f = 1 stays below the target */
                double slope = lo.h > prev.h ? (lo.rho - prev.rho) / (double)(lo.h - prev.h) : 0.0;
                double next = slope > 0.0 ? (double)lo.h + (target - lo.rho) / slope : 2.0 * (double)lo.h;
                double cap = 8.0 * (double)lo.h + 8.0;
                if (next > cap)
                    next = cap;
                if (next > (double)n)
                    next = (double)n;
                h = (int64_t)ceil(next);
                if (h <= lo.h)
                    h = lo.h + 1;
                continue;
            }
            int64_t width = hi.h - lo.h;
            if (width <= 1)
                break;
            bool poor = width_before >= 0 && 2 * width > width_before;
            if (poor) {
                h = lo.h + width / 2;
                width_before = -1;
            } else {
                h = lo.h + (int64_t)llround(-ylo * (double)width / (yhi - ylo));
                width_before = width;
            }
            if (h <= lo.h)
                h = lo.h + 1;
            if (h >= hi.h)
                h = hi.h - 1;
        }
    }

    if (fabs(best.rho - target) > TSIM_GEN_TOLERANCE) {
        int64_t h_lo = lo.h, h_hi = hi.h;
        double r_lo = lo.rho, r_hi = hi.rho;
        tsim_gen_close(g);
        if (h_hi < 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "--imbalance %.2f%% is above the %.2f%% mean imbalance the hotspot reaches with "
                                  "every token hot (f = 1); choose a lower target or fewer --hot-ranks",
                                  100.0 * target, 100.0 * r_lo);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--imbalance %.2f%% cannot be met within %.1f pp: %lld and %lld hot tokens per record "
                              "give %.2f%% and %.2f%%; use more --tokens",
                              100.0 * target, 100.0 * TSIM_GEN_TOLERANCE, (long long)h_lo, (long long)h_hi,
                              100.0 * r_lo, 100.0 * r_hi);
    }
    out->hot_tokens = best.h;
    out->hot_fraction = (double)best.h / (double)n;
    out->achieved = best.rho;
    out->trial_records = tsim_gen_trial_records(p, stride);
    tsim_gen_close(g);
    return TSIM_OK;
}

int tsim_gen_calibrate(const tsim_gen_params *p, double target, tsim_gen_calibration *out,
                       tsim_gen_progress_fn progress, void *ctx, tsim_error *err)
{
    return calibrate_every(p, target, 1, out, progress, ctx, err);
}

int tsim_gen_calibrate_sampled(const tsim_gen_params *p, double target, tsim_gen_calibration *out,
                               tsim_gen_progress_fn progress, void *ctx, tsim_error *err)
{
    /* the trials' records are the whole trace's: streams are seeded per
     * record index, and the popularity walks through every microbatch */
    const bool sample = p->version == TSIM_GEN_VERSION_BLOCKS &&
                        p->microbatches >= TSIM_GEN_SAMPLE_STRIDE * TSIM_GEN_SAMPLE_MIN;
    return calibrate_every(p, target, sample ? TSIM_GEN_SAMPLE_STRIDE : 1, out, progress, ctx, err);
}
