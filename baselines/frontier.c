/* `frontier`: node-local replicas first, cross-node only where node totals
 * force them, each kept only if it is worth its cost (frontier.h). */
#include "frontier.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "split.h"

struct tsim_frontier {
    int R, E, hpr, K, rpn, nodes;
    double lambda, mu;
    int32_t *home;         /* [E] */
    int32_t *rank_experts; /* [R * hpr] */
    int64_t *tpe;          /* [E] */
    /* The plan as built: loads, tokens sent per expert, slots per rank and
     * the replica index in each slot. */
    int64_t *load0;        /* [R] native loads */
    int64_t *load;         /* [R] */
    int64_t *sent;         /* [E] */
    int *used;             /* [R] */
    int *slot_rep;         /* [R * K] */
    /* The cross-node sequence as if every piece were kept: it never looks at
     * lambda, so lambda only filters it (the monotonicity argument). */
    int64_t *vload;        /* [R] */
    int64_t *vsent;        /* [E] */
    int *vused;            /* [R] */
    int32_t *vslot;        /* [R * K] expert in each virtual slot */
    int64_t *node_cap;     /* [nodes] cross-node tokens a node may still import */
    int64_t *node_export;  /* [nodes] cross-node tokens a node must still export */
    int *tried;            /* [E] stamp: expert tried for the current piece */
    int *blocked;          /* [R] stamp: rank that found no receiver in this stage */
    int stamp;
    int dear;              /* cross-node pieces of the last plan_level worth less than their cost at lambda_plan */
    tsim_replica *best;    /* [R * K] the best candidate plan's replicas */
    tsim_split_scratch split;
};

void tsim_frontier_options_default(tsim_frontier_options *opt)
{
    opt->mu = 1e-3;
}

void tsim_frontier_free(tsim_frontier *f)
{
    if (!f)
        return;
    free(f->home);
    free(f->rank_experts);
    free(f->tpe);
    free(f->load0);
    free(f->load);
    free(f->sent);
    free(f->used);
    free(f->slot_rep);
    free(f->vload);
    free(f->vsent);
    free(f->vused);
    free(f->vslot);
    free(f->node_cap);
    free(f->node_export);
    free(f->tried);
    free(f->blocked);
    free(f->best);
    tsim_split_scratch_free(&f->split);
    free(f);
}

int tsim_frontier_init(tsim_frontier **out, const tsim_topology *topo, int slots, double lambda_plan,
                       const tsim_frontier_options *opt, tsim_error *err)
{
    *out = NULL;
    if (slots < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: slots must be >= 0, got %d", slots);
    if (!(lambda_plan > 0) || !isfinite(lambda_plan))
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: lambda_plan must be finite and > 0, got %g", lambda_plan);
    if (!(opt->mu >= 0) || !isfinite(opt->mu))
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: mu must be finite and >= 0, got %g", opt->mu);
    tsim_frontier *f = calloc(1, sizeof *f);
    if (!f)
        return tsim_error_set(err, TSIM_E_INTERNAL, "frontier: out of memory");
    const int R = topo->ranks, E = topo->experts;
    f->R = R;
    f->E = E;
    f->hpr = topo->experts_per_rank;
    f->K = slots;
    f->rpn = topo->ranks_per_node;
    f->nodes = (R + f->rpn - 1) / f->rpn;
    f->lambda = lambda_plan;
    f->mu = opt->mu;
    const size_t nE = (size_t)E, nR = (size_t)R, nRK = nR * (size_t)(slots > 0 ? slots : 1);
    const size_t nN = (size_t)f->nodes;
    f->home = malloc(sizeof *f->home * nE);
    f->rank_experts = malloc(sizeof *f->rank_experts * nE);
    f->tpe = malloc(sizeof *f->tpe * nE);
    f->load0 = malloc(sizeof *f->load0 * nR);
    f->load = malloc(sizeof *f->load * nR);
    f->sent = malloc(sizeof *f->sent * nE);
    f->used = malloc(sizeof *f->used * nR);
    f->slot_rep = malloc(sizeof *f->slot_rep * nRK);
    f->vload = malloc(sizeof *f->vload * nR);
    f->vsent = malloc(sizeof *f->vsent * nE);
    f->vused = malloc(sizeof *f->vused * nR);
    f->vslot = malloc(sizeof *f->vslot * nRK);
    f->node_cap = malloc(sizeof *f->node_cap * nN);
    f->node_export = malloc(sizeof *f->node_export * nN);
    f->tried = calloc(nE, sizeof *f->tried);
    f->blocked = calloc(nR, sizeof *f->blocked);
    f->best = malloc(sizeof *f->best * nRK);
    if (!f->home || !f->rank_experts || !f->tpe || !f->load0 || !f->load || !f->sent || !f->used || !f->slot_rep || !f->vload ||
        !f->vsent || !f->vused || !f->vslot || !f->node_cap || !f->node_export || !f->tried || !f->blocked ||
        !f->best) {
        tsim_frontier_free(f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "frontier: out of memory for %d ranks and %d experts", R, E);
    }
    memcpy(f->home, topo->home, sizeof *f->home * nE);
    memcpy(f->rank_experts, topo->rank_experts, sizeof *f->rank_experts * nE);
    int rc = tsim_split_scratch_init(&f->split, R, (int)nRK, err);
    if (rc) {
        tsim_frontier_free(f);
        return rc;
    }
    *out = f;
    return TSIM_OK;
}

static int node_of(const tsim_frontier *f, int r)
{
    return r / f->rpn;
}

static int node_first(const tsim_frontier *f, int n)
{
    return n * f->rpn;
}

static int node_end(const tsim_frontier *f, int n)
{
    int end = (n + 1) * f->rpn;
    return end < f->R ? end : f->R;
}

/* The next new stamp; wraps by clearing the stamp arrays. */
static int next_stamp(tsim_frontier *f)
{
    if (f->stamp == INT32_MAX) {
        memset(f->tried, 0, sizeof *f->tried * (size_t)f->E);
        memset(f->blocked, 0, sizeof *f->blocked * (size_t)f->R);
        f->stamp = 0;
    }
    return ++f->stamp;
}

/* The untried home expert of h with the most tokens left (ties: lower
 * index), or -1. sent is the real or virtual record of tokens already sent. */
static int largest_untried(const tsim_frontier *f, int h, const int64_t *sent, int stamp)
{
    const int32_t *mine = f->rank_experts + (size_t)h * (size_t)f->hpr;
    int best = -1;
    int64_t best_left = 0;
    for (int i = 0; i < f->hpr; i++) {
        int e = mine[i];
        int64_t left = f->tpe[e] - sent[e];
        if (f->tried[e] != stamp && left > best_left) {
            best = e;
            best_left = left;
        }
    }
    return best;
}

/* Best fit: among candidates with room >= want the smallest room, else the
 * largest room (ties: lower rank). Folds one candidate into (*best, *best_room). */
static void best_fit(int c, int64_t room, int64_t want, int *best, int64_t *best_room)
{
    if (room <= 0)
        return;
    if (*best < 0) {
        *best = c;
        *best_room = room;
        return;
    }
    bool fits = room >= want, best_fits = *best_room >= want;
    if (fits != best_fits) {
        if (fits) {
            *best = c;
            *best_room = room;
        }
        return;
    }
    if (fits ? room < *best_room : room > *best_room) {
        *best = c;
        *best_room = room;
    }
}

static bool virtually_holds(const tsim_frontier *f, int c, int e)
{
    for (int k = 0; k < f->vused[c]; k++)
        if (f->vslot[(size_t)c * (size_t)f->K + (size_t)k] == e)
            return true;
    return false;
}

/* Receiver for a cross-node piece of e from node n: a rank on another node
 * below level with a free virtual slot, not already holding e, whose node
 * may still import. */
static int cross_receiver(const tsim_frontier *f, int e, int n, int64_t level, int64_t want, int64_t *room)
{
    int best = -1;
    int64_t best_room = 0;
    for (int m = 0; m < f->nodes; m++) {
        if (m == n || f->node_cap[m] <= 0)
            continue;
        for (int c = node_first(f, m); c < node_end(f, m); c++) {
            if (f->vused[c] >= f->K || f->vload[c] >= level || virtually_holds(f, c, e))
                continue;
            int64_t spare = level - f->vload[c];
            best_fit(c, spare < f->node_cap[m] ? spare : f->node_cap[m], want, &best, &best_room);
        }
    }
    *room = best_room;
    return best;
}

static int add_replica(tsim_frontier *f, tsim_plan *plan, int e, int g, int64_t a, tsim_error *err)
{
    int slot = f->used[g];
    int i = tsim_plan_add(plan, e, g, slot, a);
    if (i < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "frontier: out of memory growing the plan");
    f->slot_rep[(size_t)g * (size_t)f->K + (size_t)slot] = i;
    f->used[g]++;
    f->load[g] += a;
    f->load[f->home[e]] -= a;
    f->sent[e] += a;
    return TSIM_OK;
}

/* The hottest rank of node n above level that is not blocked, or -1. */
static int hottest(const tsim_frontier *f, int n, const int64_t *load, int64_t level, int stamp)
{
    int best = -1;
    for (int r = node_first(f, n); r < node_end(f, n); r++)
        if (load[r] > level && f->blocked[r] != stamp && (best < 0 || load[r] > load[best]))
            best = r;
    return best;
}

/* One cross-node piece out of node n: the hottest rank's largest expert that
 * finds a receiver. Returns false when no rank of the node can send. */
static bool cross_piece(tsim_frontier *f, int n, int64_t level, int stamp, int *pe, int *pc, int64_t *pa)
{
    for (;;) {
        int h = hottest(f, n, f->vload, level, stamp);
        if (h < 0)
            return false;
        int try_stamp = next_stamp(f);
        for (int e; (e = largest_untried(f, h, f->vsent, try_stamp)) >= 0;) {
            f->tried[e] = try_stamp;
            int64_t want = f->node_export[n];
            int64_t excess = f->vload[h] - level, left = f->tpe[e] - f->vsent[e];
            if (excess < want)
                want = excess;
            if (left < want)
                want = left;
            int64_t room;
            int c = cross_receiver(f, e, n, level, want, &room);
            if (c < 0)
                continue;
            *pe = e;
            *pc = c;
            *pa = want < room ? want : room;
            return true;
        }
        f->blocked[h] = stamp;
    }
}

/* Stage 1: every node whose ranks exceed the level in total exports the
 * surplus, largest surplus first. Pieces are generated on the virtual state;
 * a piece is kept when a / (ranks of node * mean) > mu * lambda. */
static int cross_stage(tsim_frontier *f, tsim_plan *plan, int64_t level, double mean, double lambda, tsim_error *err)
{
    for (int n = 0; n < f->nodes; n++) {
        int64_t net = 0;
        for (int r = node_first(f, n); r < node_end(f, n); r++)
            net += f->vload[r] - level;
        f->node_export[n] = net > 0 ? net : 0;
        f->node_cap[n] = net < 0 ? -net : 0;
    }
    int stamp = next_stamp(f);
    for (;;) {
        int n = -1;
        for (int m = 0; m < f->nodes; m++)
            if (f->node_export[m] > 0 && (n < 0 || f->node_export[m] > f->node_export[n]))
                n = m;
        if (n < 0)
            return TSIM_OK;
        int e, c;
        int64_t a;
        if (!cross_piece(f, n, level, stamp, &e, &c, &a)) {
            f->node_export[n] = 0; /* nothing more can leave this node */
            continue;
        }
        int h = f->home[e];
        f->vload[h] -= a;
        f->vload[c] += a;
        f->vsent[e] += a;
        f->vslot[(size_t)c * (size_t)f->K + (size_t)f->vused[c]++] = e;
        f->node_cap[node_of(f, c)] -= a;
        f->node_export[n] -= a;
        double unit = f->mu * (double)(node_end(f, n) - node_first(f, n)) * mean;
        if ((double)a <= unit * f->lambda)
            f->dear++;
        if ((double)a > unit * lambda) {
            int rc = add_replica(f, plan, e, c, a, err);
            if (rc)
                return rc;
        }
    }
}

/* The replica of e already on c, or -1. */
static int replica_on(const tsim_frontier *f, const tsim_plan *plan, int c, int e)
{
    for (int k = 0; k < f->used[c]; k++) {
        int i = f->slot_rep[(size_t)c * (size_t)f->K + (size_t)k];
        if (plan->replicas[i].expert == e)
            return i;
    }
    return -1;
}

/* Receiver in node n for a piece of e: a rank below the node's level that
 * already holds e (free: no new transfer), else best fit among ranks with a
 * free slot. *merge gets the replica to extend, or -1. */
static int local_receiver(const tsim_frontier *f, const tsim_plan *plan, int e, int n, int64_t level, int64_t want,
                          int64_t *room, int *merge)
{
    int best = -1;
    int64_t best_room = 0;
    *merge = -1;
    for (int c = node_first(f, n); c < node_end(f, n); c++) {
        if (f->load[c] >= level || c == f->home[e])
            continue;
        int i = replica_on(f, plan, c, e);
        if (i >= 0) {
            *merge = i;
            *room = level - f->load[c];
            return c;
        }
        if (f->used[c] < f->K)
            best_fit(c, level - f->load[c], want, &best, &best_room);
    }
    *room = best_room;
    return best;
}

/* Stage 2: water-fills node n to max(level, ceil(node mean)) with pieces
 * inside the node, hottest rank first, its largest expert first. */
static int local_stage(tsim_frontier *f, tsim_plan *plan, int n, int64_t level, double mean, tsim_error *err)
{
    int64_t sum = 0;
    int count = node_end(f, n) - node_first(f, n);
    for (int r = node_first(f, n); r < node_end(f, n); r++)
        sum += f->load[r];
    int64_t node_level = (sum + count - 1) / count;
    if (node_level < level)
        node_level = level;
    int stamp = next_stamp(f);
    for (int h; (h = hottest(f, n, f->load, node_level, stamp)) >= 0;) {
        /* An excess below mu * mean is worth less than one replica. */
        if ((double)(f->load[h] - node_level) < f->mu * mean) {
            f->blocked[h] = stamp;
            continue;
        }
        int try_stamp = next_stamp(f);
        bool placed = false;
        for (int e; !placed && (e = largest_untried(f, h, f->sent, try_stamp)) >= 0;) {
            f->tried[e] = try_stamp;
            int64_t want = f->load[h] - node_level, left = f->tpe[e] - f->sent[e];
            if (left < want)
                want = left;
            int64_t room;
            int merge;
            int c = local_receiver(f, plan, e, n, node_level, want, &room, &merge);
            if (c < 0)
                continue;
            int64_t a = want < room ? want : room;
            if (merge >= 0) {
                plan->replicas[merge].planned += a;
                f->load[c] += a;
                f->load[h] -= a;
                f->sent[e] += a;
            } else {
                int rc = add_replica(f, plan, e, c, a, err);
                if (rc)
                    return rc;
            }
            placed = true;
        }
        if (!placed)
            f->blocked[h] = stamp;
    }
    return TSIM_OK;
}

/* One plan for level L: cross-node pieces priced at lambda (0: keep every
 * piece), then node-local water-filling. */
static int plan_level(tsim_frontier *f, tsim_plan *plan, int64_t level, double mean, double lambda, tsim_error *err)
{
    tsim_plan_reset(plan);
    plan->slot_limited = true;
    memcpy(f->load, f->load0, sizeof *f->load * (size_t)f->R);
    memcpy(f->vload, f->load0, sizeof *f->vload * (size_t)f->R);
    memset(f->used, 0, sizeof *f->used * (size_t)f->R);
    memset(f->vused, 0, sizeof *f->vused * (size_t)f->R);
    memset(f->sent, 0, sizeof *f->sent * (size_t)f->E);
    memset(f->vsent, 0, sizeof *f->vsent * (size_t)f->E);
    f->dear = 0;
    int rc = f->nodes > 1 ? cross_stage(f, plan, level, mean, lambda, err) : TSIM_OK;
    for (int n = 0; rc == TSIM_OK && n < f->nodes; n++)
        rc = local_stage(f, plan, n, level, mean, err);
    return rc;
}

/* The objective rho + mu * replicas of the plan just built (every replica at
 * cost 1: the level choice must not depend on lambda). */
static double objective(const tsim_frontier *f, const tsim_plan *plan, double mean)
{
    int64_t mx = 0;
    for (int r = 0; r < f->R; r++)
        mx = f->load[r] > mx ? f->load[r] : mx;
    return ((double)mx - mean) / mean + f->mu * (double)plan->count;
}

/* The best plan of the level search so far. */
typedef struct {
    int64_t level;
    double objective;
    int count, dear;
} candidate;

/* Plans at level (every cross-node piece kept) and keeps the plan when its
 * objective beats the best (ties keep the earlier, smaller slack). A level
 * already tried is skipped. */
static int try_level(tsim_frontier *f, tsim_plan *plan, int64_t level, double mean, candidate *best, tsim_error *err)
{
    if (level == best->level)
        return TSIM_OK;
    int rc = plan_level(f, plan, level, mean, 0.0, err);
    if (rc)
        return rc;
    double j = objective(f, plan, mean);
    if (best->level < 0 || j < best->objective) {
        *best = (candidate){.level = level, .objective = j, .count = plan->count, .dear = f->dear};
        memcpy(f->best, plan->replicas, sizeof *f->best * (size_t)plan->count);
    }
    return TSIM_OK;
}

int tsim_frontier_plan(tsim_frontier *f, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    tsim_plan_reset(plan);
    plan->slot_limited = true;
    if (rec->ranks != f->R || rec->experts != f->E)
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, f->R, f->E);
    if (plan->ranks != f->R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "frontier: plan rows have %d ranks, expected %d", plan->ranks,
                              f->R);
    tsim_record_expert_totals(rec, f->tpe);
    int64_t total = 0;
    for (int r = 0; r < f->R; r++) {
        const int32_t *mine = f->rank_experts + (size_t)r * (size_t)f->hpr;
        int64_t l = 0;
        for (int i = 0; i < f->hpr; i++)
            l += f->tpe[mine[i]];
        f->load0[r] = l;
        total += l;
    }
    if (f->K < 1 || total == 0 || f->R < 2)
        return TSIM_OK;
    const double mean = (double)total / f->R;
    const int64_t floor_level = (total + f->R - 1) / f->R;
    /* The level: ceil(mean) plus a slack of s * mu * mean, s = 0, 1, 2, 4, ...
     * for the least objective rho + mu * replicas. A slack s costs about
     * s * mu of imbalance, so s above the replica count at s = 0 never pays:
     * the search stops there. Ties keep the smaller slack. */
    candidate best = {.level = -1};
    int rc = try_level(f, plan, floor_level, mean, &best, err);
    const int limit = plan->count;
    double s_best = 0;
    for (int s = 1; rc == TSIM_OK && s <= limit; s *= 2) {
        int64_t level = floor_level + (int64_t)floor((double)s * f->mu * mean);
        int64_t before = best.level;
        rc = try_level(f, plan, level, mean, &best, err);
        if (best.level != before)
            s_best = s;
    }
    /* Then halfway to either neighbour of the best slack found (0.5 when the
     * best is no slack at all). */
    const double refine[2] = {s_best > 0 ? 0.75 * s_best : 0.5, 1.5 * s_best};
    for (int i = 0; rc == TSIM_OK && i < 2; i++)
        if (refine[i] > 0 && refine[i] <= limit)
            rc = try_level(f, plan, floor_level + (int64_t)floor(refine[i] * f->mu * mean), mean, &best, err);
    if (rc)
        return rc;
    const int64_t best_level = best.level;
    const int best_count = best.count, best_dear = best.dear;
    if (best_dear > 0) {
        /* Some cross-node piece is not worth lambda_plan: plan again without it. */
        rc = plan_level(f, plan, best_level, mean, f->lambda, err);
    } else {
        tsim_plan_reset(plan);
        plan->slot_limited = true;
        for (int i = 0; rc == TSIM_OK && i < best_count; i++)
            if (tsim_plan_add(plan, f->best[i].expert, f->best[i].guest, f->best[i].slot, f->best[i].planned) < 0)
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "frontier: out of memory growing the plan");
    }
    if (rc)
        return rc;
    return tsim_split_plan(rec, f->tpe, f->K, plan, &f->split, err);
}

/* ---- the registry entry --------------------------------------------------------- */

static int frontier_desc_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                              const void *own, tsim_error *err)
{
    /* topo->slots is already this planner's K (tsim_planner_slots). */
    return tsim_frontier_init((tsim_frontier **)state, topo, topo->slots, common->lambda_plan, own, err);
}

static int frontier_desc_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return tsim_frontier_plan(state, rec, out, err);
}

static void frontier_desc_free(void *state)
{
    tsim_frontier_free(state);
}

/* --frontier-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec frontier_options[] = {
    {.name = "frontier-mu", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_frontier_options, mu), .lo = 0,
     .hi = 1000000000.0, .arg = "X", .def = "0.001",
     .help = "frontier: imbalance one unit of weighted cost is worth (as optimal-mu)"},
    {0},
};

const tsim_planner_desc tsim_planner_frontier = {
    .name = "frontier",
    .source = "taotsim's own (issue 23): node-local first, cross-node only where node totals force it",
    .summary = "node-local replicas first, cross-node only where node totals force it and it pays at lambda_plan",
    .options = frontier_options,
    .options_size = sizeof(tsim_frontier_options),
    .state = TSIM_STATE_NONE,
    .cost = TSIM_COST_CHEAP,
    .reads_lambda_plan = true,
    .init = frontier_desc_init,
    .plan = frontier_desc_plan,
    .free = frontier_desc_free,
};
