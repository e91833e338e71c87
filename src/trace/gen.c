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
 * rank. The hot set is the home experts of ranks 0..hot_ranks-1 (m of them).
 * With m >= k a hot token picks k distinct hot experts from p restricted to the
 * hot set; with m < k it picks all m and the remaining k - m from p over the
 * other experts.
 *
 * Random streams. Every (record, source rank) has two GSL mt19937 streams, one
 * for its hot tokens and one for its base tokens, seeded by hashing --seed with
 * the stream's kind, record and rank; the popularity has its own stream. So
 * changing H only moves tokens from the end of a base stream to the end of a
 * hot stream: the mean imbalance is a deterministic, nearly continuous
 * function of f, and the calibration's bracketing search converges. */
#define HAVE_INLINE 1

#include "gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "evaluate.h"
#include "topology.h"

enum { STREAM_POPULARITY = 1, STREAM_HOT = 2, STREAM_BASE = 3 };

/* Consecutive rejected alias draws before the exact scan takes over. */
#define MAX_REJECTIONS 64

void tsim_gen_params_default(tsim_gen_params *p)
{
    memset(p, 0, sizeof *p);
    p->experts = 128;
    p->ep = 16;
    p->ranks_per_node = 8;
    p->topk = 8;
    p->tokens = 4096;
    p->microbatches = 32;
    p->layers = 4;
    p->concentration = 200.0;
    p->drift = 0.05;
    p->hot_ranks = 1;
    p->hot_fraction = 0.0;
    p->seed = 1;
}

int tsim_gen_params_check(const tsim_gen_params *p, tsim_error *err)
{
    if (p->experts < 1 || p->experts > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d is out of range 1..%d", p->experts,
                              TSIM_MAX_EXPERTS);
    if (p->ep < 1 || p->ep > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "--ep %d is out of range 1..%d", p->ep, TSIM_MAX_RANKS);
    if (p->experts % p->ep != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d is not divisible by --ep %d", p->experts, p->ep);
    if ((int64_t)p->experts * p->ep > TSIM_GEN_MAX_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d x --ep %d is above the %d counts a record may hold",
                              p->experts, p->ep, TSIM_GEN_MAX_CELLS);
    if (p->ranks_per_node < 1 || p->ranks_per_node > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "--rpn %d is out of range 1..%d", p->ranks_per_node,
                              TSIM_MAX_RANKS);
    if (p->topk < 1 || p->topk > p->experts)
        return tsim_error_set(err, TSIM_E_INPUT, "--topk %d is out of range 1..%d (the number of experts)", p->topk,
                              p->experts);
    if (p->tokens < 1 || p->tokens > TSIM_GEN_MAX_TOKENS)
        return tsim_error_set(err, TSIM_E_INPUT, "--tokens %d is out of range 1..%d", p->tokens,
                              TSIM_GEN_MAX_TOKENS);
    if (p->microbatches < 1 || p->layers < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "--microbatches and --layers must be at least 1, got %d and %d",
                              p->microbatches, p->layers);
    if ((int64_t)p->microbatches * p->layers > TSIM_GEN_MAX_RECORDS)
        return tsim_error_set(err, TSIM_E_INPUT, "--microbatches %d x --layers %d is above %d records",
                              p->microbatches, p->layers, TSIM_GEN_MAX_RECORDS);
    if (!(p->concentration >= 1e-3 && p->concentration <= 1e9))
        return tsim_error_set(err, TSIM_E_INPUT, "--concentration %g is out of range 0.001..1e9", p->concentration);
    if (!(p->drift >= 0.0 && p->drift <= 1.0))
        return tsim_error_set(err, TSIM_E_INPUT, "--drift %g is out of range 0..1", p->drift);
    if (p->hot_ranks < 1 || p->hot_ranks > p->ep)
        return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks %d is out of range 1..%d (the EP size)", p->hot_ranks,
                              p->ep);
    if (!(p->hot_fraction >= 0.0 && p->hot_fraction <= 1.0))
        return tsim_error_set(err, TSIM_E_INPUT, "--hot-fraction %g is out of range 0..1", p->hot_fraction);
    if (p->seed > TSIM_GEN_MAX_SEED)
        return tsim_error_set(err, TSIM_E_INPUT, "--seed %llu is out of range 0..%llu", (unsigned long long)p->seed,
                              (unsigned long long)TSIM_GEN_MAX_SEED);
    return TSIM_OK;
}

int64_t tsim_gen_record_count(const tsim_gen_params *p)
{
    return (int64_t)p->microbatches * p->layers;
}

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

static inline int32_t alias_draw(const alias_table *a, gsl_rng *rng)
{
    uint64_t x = (uint64_t)gsl_rng_get(rng) * (uint64_t)a->n;
    int i = (int)(x >> 32);
    return (uint32_t)x < a->thr[i] ? a->own[i] : a->alt[i];
}

struct tsim_gen {
    tsim_gen_params p;
    tsim_topology topo;
    gsl_rng *pop_rng;
    gsl_rng *tok_rng;
    double *gammas;     /* [L * E] drifting gamma variables, one row per layer */
    double *pop;        /* [E] the current record's popularity */
    alias_table base;   /* over all experts */
    alias_table hot;    /* over the hot set (used when m >= k) */
    int32_t *all_experts; /* 0..E-1 */
    int32_t *hot_experts; /* [m] */
    uint32_t *stamp;    /* [E]: == token id when taken (or excluded) for the current token */
    uint32_t token_id;
    int64_t *load;      /* [R] */
    tsim_record rec;
    int64_t hot_total;  /* H */
    int64_t next;       /* index of the next record */
};

static uint64_t mix64(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* mt19937 takes 32 bits of seed; the hash spreads (seed, kind, record, rank)
 * over them. */
static unsigned long stream_seed(uint64_t seed, int kind, int64_t record, int rank)
{
    uint64_t h = mix64(seed);
    h = mix64(h ^ (uint64_t)kind);
    h = mix64(h ^ (uint64_t)record);
    h = mix64(h ^ (uint64_t)(uint32_t)rank);
    return (unsigned long)(h & UINT64_C(0xffffffff));
}

void tsim_gen_close(tsim_gen *g)
{
    if (!g)
        return;
    if (g->pop_rng)
        gsl_rng_free(g->pop_rng);
    if (g->tok_rng)
        gsl_rng_free(g->tok_rng);
    tsim_topology_free(&g->topo);
    free(g->gammas);
    free(g->pop);
    alias_free(&g->base);
    alias_free(&g->hot);
    free(g->all_experts);
    free(g->hot_experts);
    free(g->stamp);
    free(g->load);
    tsim_record_free(&g->rec);
    free(g);
}

int tsim_gen_open(tsim_gen **out, const tsim_gen_params *p, tsim_error *err)
{
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
    const int m = p->hot_ranks * (E / p->ep);
    rc = tsim_record_alloc(&g->rec, p->ep, E, err);
    if (rc) {
        tsim_gen_close(g);
        return rc;
    }
    g->pop_rng = gsl_rng_alloc(gsl_rng_mt19937);
    g->tok_rng = gsl_rng_alloc(gsl_rng_mt19937);
    g->gammas = malloc(sizeof *g->gammas * (size_t)E * (size_t)p->layers);
    g->pop = malloc(sizeof *g->pop * (size_t)E);
    g->all_experts = malloc(sizeof *g->all_experts * (size_t)E);
    g->hot_experts = malloc(sizeof *g->hot_experts * (size_t)m);
    g->stamp = calloc((size_t)E, sizeof *g->stamp);
    g->load = calloc((size_t)p->ep, sizeof *g->load);
    if (!g->pop_rng || !g->tok_rng || !g->gammas || !g->pop || !g->all_experts || !g->hot_experts || !g->stamp ||
        !g->load || alias_alloc(&g->base, E) || alias_alloc(&g->hot, m)) {
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the generator");
    }
    /* The uniform-to-index step needs 32 random bits per draw. */
    if (gsl_rng_max(g->tok_rng) != UINT32_MAX || gsl_rng_min(g->tok_rng) != 0) {
        tsim_gen_close(g);
        return tsim_error_set(err, TSIM_E_INTERNAL, "gsl mt19937 does not give 32-bit outputs");
    }
    for (int e = 0; e < E; e++)
        g->all_experts[e] = e;
    int n = 0;
    for (int r = 0; r < p->hot_ranks; r++) {
        const int32_t *home = tsim_home_experts(&g->topo, r);
        for (int i = 0; i < g->topo.experts_per_rank; i++)
            g->hot_experts[n++] = home[i];
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
static int32_t scan_draw(tsim_gen *g, const alias_table *a)
{
    const uint32_t id = g->token_id;
    double mass = 0.0;
    int free_count = 0;
    for (int i = 0; i < a->n; i++) {
        if (g->stamp[a->own[i]] != id) {
            mass += a->weight[i];
            free_count++;
        }
    }
    if (mass > 0.0) {
        double u = gsl_rng_uniform(g->tok_rng) * mass, acc = 0.0;
        int32_t last = -1;
        for (int i = 0; i < a->n; i++) {
            if (g->stamp[a->own[i]] == id || a->weight[i] <= 0.0)
                continue;
            last = a->own[i];
            acc += a->weight[i];
            if (u < acc)
                return last;
        }
        return last;
    }
    unsigned long pick = gsl_rng_uniform_int(g->tok_rng, (unsigned long)free_count);
    for (int i = 0; i < a->n; i++)
        if (g->stamp[a->own[i]] != id && pick-- == 0)
            return a->own[i];
    return a->own[0]; /* unreachable: callers leave at least one expert free */
}

/* `picks` distinct experts from the table, none already stamped for this token. */
static void pick_distinct(tsim_gen *g, const alias_table *a, int picks, int64_t *row)
{
    const uint32_t id = g->token_id;
    for (int j = 0; j < picks; j++) {
        int32_t e = -1;
        for (int tries = 0; tries < MAX_REJECTIONS; tries++) {
            int32_t d = alias_draw(a, g->tok_rng);
            if (g->stamp[d] != id) {
                e = d;
                break;
            }
        }
        if (e < 0)
            e = scan_draw(g, a);
        g->stamp[e] = id;
        row[e]++;
    }
}

static void sample_rank(tsim_gen *g, int rank, int64_t record)
{
    const tsim_gen_params *p = &g->p;
    const int E = p->experts, k = p->topk, m = g->hot.n;
    int64_t *row = g->rec.counts + (size_t)rank * (size_t)E;
    memset(row, 0, sizeof *row * (size_t)E);
    memset(g->stamp, 0, sizeof *g->stamp * (size_t)E);
    g->token_id = 0;

    int64_t hot = g->hot_total / p->ep + (rank < g->hot_total % p->ep ? 1 : 0);
    gsl_rng_set(g->tok_rng, stream_seed(p->seed, STREAM_HOT, record, rank));
    for (int64_t t = 0; t < hot; t++) {
        g->token_id++;
        if (m >= k) {
            pick_distinct(g, &g->hot, k, row);
        } else {
            for (int i = 0; i < m; i++) {
                g->stamp[g->hot_experts[i]] = g->token_id;
                row[g->hot_experts[i]]++;
            }
            pick_distinct(g, &g->base, k - m, row);
        }
    }
    gsl_rng_set(g->tok_rng, stream_seed(p->seed, STREAM_BASE, record, rank));
    for (int64_t t = hot; t < p->tokens; t++) {
        g->token_id++;
        pick_distinct(g, &g->base, k, row);
    }
}

int tsim_gen_next(tsim_gen *g, const tsim_record **rec, double *imbalance)
{
    const int L = g->p.layers;
    if (g->next >= tsim_gen_record_count(&g->p))
        return 0;
    const int64_t index = g->next++;
    const int64_t microbatch = index / L;
    const int layer = (int)(index % L);
    next_popularity(g, microbatch, layer);
    alias_build(&g->base, g->all_experts, g->pop);
    alias_build(&g->hot, g->hot_experts, g->pop);
    for (int r = 0; r < g->p.ep; r++)
        sample_rank(g, r, index);
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

/* Mean initial imbalance of the whole trace with the generator's current H. */
static double trace_mean(tsim_gen *g, int trial, tsim_gen_progress_fn progress, void *ctx)
{
    const int64_t n = tsim_gen_record_count(&g->p);
    double sum = 0.0, rho;
    const tsim_record *rec;
    int64_t done = 0;
    while (tsim_gen_next(g, &rec, &rho) == 1) {
        sum += rho;
        done++;
        if (progress)
            progress(ctx, trial, done, n);
    }
    return sum / (double)n;
}

int tsim_gen_mean_imbalance(const tsim_gen_params *p, double *mean, tsim_gen_progress_fn progress, void *ctx,
                            tsim_error *err)
{
    tsim_gen *g;
    int rc = tsim_gen_open(&g, p, err);
    if (rc)
        return rc;
    *mean = trace_mean(g, 0, progress, ctx);
    tsim_gen_close(g);
    return TSIM_OK;
}

typedef struct {
    int64_t h;
    double rho;
} probe;

static probe evaluate_at(tsim_gen *g, int64_t h, tsim_gen_calibration *cal, probe *best,
                         tsim_gen_progress_fn progress, void *ctx)
{
    set_hot_tokens(g, h);
    cal->trials++;
    probe pr = {h, trace_mean(g, cal->trials, progress, ctx)};
    if (best->h < 0 || fabs(pr.rho - cal->target) < fabs(best->rho - cal->target))
        *best = pr;
    return pr;
}

int tsim_gen_calibrate(const tsim_gen_params *p, double target, tsim_gen_calibration *out,
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

    probe lo = evaluate_at(g, 0, out, &best, progress, ctx);
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
        /* A hot token lifts a hot rank by about min(k, m) / hot_ranks picks
         * where a base token gives it k / R; the mean load is T k. */
        const int k = p->topk, m = p->hot_ranks * (p->experts / p->ep);
        double gain = (double)(k < m ? k : m) / p->hot_ranks - (double)k / p->ep;
        if (gain < 0.05 * k)
            gain = 0.05 * k;
        double guess = target * (double)p->tokens * k / gain;
        int64_t h = guess < 1.0 ? 1 : guess > (double)n ? n : (int64_t)llround(guess);
        for (int step = 0; step < 200; step++) {
            probe cur = evaluate_at(g, h, out, &best, progress, ctx);
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
    tsim_gen_close(g);
    return TSIM_OK;
}

cJSON *tsim_gen_meta(const tsim_gen_params *p, const tsim_gen_calibration *cal, double achieved)
{
    cJSON *meta = cJSON_CreateObject();
    if (!meta)
        return NULL;
    bool ok = cJSON_AddStringToObject(meta, "source", "synthetic") != NULL;
    cJSON *gen = ok ? cJSON_AddObjectToObject(meta, "generator") : NULL;
    ok = gen && cJSON_AddStringToObject(gen, "name", TSIM_GEN_NAME) &&
         cJSON_AddNumberToObject(gen, "version", TSIM_GEN_VERSION) &&
         cJSON_AddNumberToObject(gen, "seed", (double)p->seed) &&
         cJSON_AddNumberToObject(gen, "experts", p->experts) && cJSON_AddNumberToObject(gen, "ep", p->ep) &&
         cJSON_AddNumberToObject(gen, "ranks_per_node", p->ranks_per_node) &&
         cJSON_AddNumberToObject(gen, "topk", p->topk) && cJSON_AddNumberToObject(gen, "tokens", p->tokens) &&
         cJSON_AddNumberToObject(gen, "microbatches", p->microbatches) &&
         cJSON_AddNumberToObject(gen, "layers", p->layers) &&
         cJSON_AddNumberToObject(gen, "concentration", p->concentration) &&
         cJSON_AddNumberToObject(gen, "drift", p->drift) && cJSON_AddNumberToObject(gen, "hot_ranks", p->hot_ranks) &&
         cJSON_AddNumberToObject(gen, "hot_fraction", p->hot_fraction) &&
         cJSON_AddNumberToObject(gen, "hot_tokens_per_record", (double)tsim_gen_hot_tokens(p)) &&
         cJSON_AddNumberToObject(gen, "imbalance_achieved", achieved);
    if (ok && cal)
        ok = cJSON_AddNumberToObject(gen, "imbalance_target", cal->target) &&
             cJSON_AddNumberToObject(gen, "imbalance_base", cal->base) &&
             cJSON_AddNumberToObject(gen, "calibration_trials", cal->trials);
    if (!ok) {
        cJSON_Delete(meta);
        return NULL;
    }
    return meta;
}
