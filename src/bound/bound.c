/* Lower bounds per record (bound.h): the LP C(T) and the three searches over
 * T built on it. All amounts in the LP are divided by mean so that its
 * coefficients stay near 1 whatever the record's scale. */
#include "bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tsim_bounder {
    int R, E, K, rpn, nodes;
    int32_t *home;            /* [E] */
    tsim_bound_options opts;
    int64_t *tpe;             /* [E] this record */
    int64_t *load0;           /* [R] */
    int64_t total, lmin, lmax; /* tokens; lmin = ceil(total / R), lmax = max load0 */
    double mean;
    double *pieces;           /* [E + R + 1] scratch for the shed counts */
    int *elist;               /* [E] scratch: experts of a rank or node */
    int *row_expert, *row_load, *row_slots, *row_shed, *row_node, *row_count, *row_out; /* row index or -1 */
    int *orows;               /* [E + 1] one o(g) column's rows */
    int *room_of_pair;        /* [E * (R - 1)] room row of each pair, -1 when left out */
    int npairs;
    double *ovals;
    tsim_lp lp;
    tsim_bound_result *res;   /* the call's counters */
};

void tsim_bound_options_default(tsim_bound_options *o)
{
    o->lambda = 3.0;
    o->integer_tokens = true;
    o->solver = TSIM_LP_CLP;
    o->lp_limit = 24;
    o->iteration_limit = 200000;
    o->room_rows = false;
}

void tsim_bounder_free(tsim_bounder *b)
{
    if (!b)
        return;
    free(b->home);
    free(b->tpe);
    free(b->load0);
    free(b->pieces);
    free(b->elist);
    free(b->row_expert);
    free(b->row_load);
    free(b->row_slots);
    free(b->row_shed);
    free(b->row_node);
    free(b->row_count);
    free(b->row_out);
    free(b->orows);
    free(b->room_of_pair);
    free(b->ovals);
    tsim_lp_free(&b->lp);
    free(b);
}

int tsim_bounder_new(tsim_bounder **out, const tsim_topology *topo, const tsim_bound_options *opts,
                     tsim_error *err)
{
    *out = NULL;
    if (!isfinite(opts->lambda) || opts->lambda < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: lambda must be a finite number >= 0, got %g", opts->lambda);
    if (opts->lp_limit < 1 || opts->iteration_limit < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: the LP limit must be >= 1 and the iteration limit >= 0");
    if (opts->solver != TSIM_LP_CLP && opts->solver != TSIM_LP_GLPK)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: unknown LP solver %d", (int)opts->solver);
    tsim_bounder *b = calloc(1, sizeof *b);
    if (!b)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory");
    b->R = topo->ranks;
    b->E = topo->experts;
    b->K = topo->slots;
    b->rpn = topo->ranks_per_node;
    b->nodes = (b->R + b->rpn - 1) / b->rpn;
    b->opts = *opts;
    tsim_lp_init(&b->lp);
    const size_t E = (size_t)b->E, R = (size_t)b->R;
    b->home = malloc(sizeof *b->home * E);
    b->tpe = malloc(sizeof *b->tpe * E);
    b->load0 = malloc(sizeof *b->load0 * R);
    b->pieces = malloc(sizeof *b->pieces * (E + R + 1));
    b->elist = malloc(sizeof(int) * E);
    b->row_expert = malloc(sizeof(int) * E);
    b->row_count = malloc(sizeof(int) * E);
    b->row_load = malloc(sizeof(int) * R);
    b->row_slots = malloc(sizeof(int) * R);
    b->row_shed = malloc(sizeof(int) * R);
    b->row_node = malloc(sizeof(int) * (size_t)b->nodes);
    b->row_out = malloc(sizeof(int) * R);
    b->orows = malloc(sizeof(int) * (E + 1));
    b->room_of_pair = malloc(sizeof(int) * (E * R + 1));
    b->ovals = malloc(sizeof(double) * (E + 1));
    if (!b->home || !b->tpe || !b->load0 || !b->pieces || !b->elist || !b->row_expert || !b->row_count || !b->row_load ||
        !b->row_slots || !b->row_shed || !b->row_node || !b->row_out || !b->orows || !b->room_of_pair || !b->ovals) {
        tsim_bounder_free(b);
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory");
    }
    memcpy(b->home, topo->home, sizeof *b->home * E);
    *out = b;
    return TSIM_OK;
}

double tsim_bound_round_cost(double x, double lambda)
{
    if (!(x > 1e-9))
        return 0.0;
    if (isinf(x))
        return x;
    if (lambda <= 0.0)
        return ceil(x - 1e-9);
    double best = ceil(x - 1e-9);
    for (int nb = 1; nb <= (int)ceil(x / lambda) && nb < 1000000; nb++) {
        double rest = x - lambda * nb;
        double v = lambda * nb + (rest > 1e-9 ? ceil(rest - 1e-9) : 0.0);
        best = v < best ? v : best;
    }
    return best;
}

/* ---- the record ---- */

static int load_record(tsim_bounder *b, const tsim_record *rec, tsim_bound_result *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    b->res = out;
    if (rec->ranks != b->R || rec->experts != b->E)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: record %lld is %d x %d, set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, b->R, b->E);
    tsim_record_expert_totals(rec, b->tpe);
    b->total = 0;
    b->lmax = 0;
    for (int r = 0; r < b->R; r++)
        b->load0[r] = 0;
    for (int e = 0; e < b->E; e++)
        b->load0[b->home[e]] += b->tpe[e];
    for (int r = 0; r < b->R; r++) {
        b->total += b->load0[r];
        b->lmax = b->load0[r] > b->lmax ? b->load0[r] : b->lmax;
    }
    b->mean = (double)b->total / (double)b->R;
    b->lmin = (b->total + b->R - 1) / b->R;
    return TSIM_OK;
}

/* rho of a max load in tokens. */
static double rho_of(const tsim_bounder *b, double max_load)
{
    return b->total > 0 ? (max_load - b->mean) / b->mean : 0.0;
}

/* The least max load from rounding alone, in tokens. */
static double trivial_load(const tsim_bounder *b)
{
    return b->opts.integer_tokens ? (double)b->lmin : b->mean;
}

/* Fewest pieces of at most T (tokens) that carry X, the experts' tokens cut
 * into pieces of T (a replica holds at most T); n pieces of the n experts
 * given. Rounds down on ties, the safe side. */
static int fewest_pieces(tsim_bounder *b, const int *experts, int n, double X, double T)
{
    if (X <= 1e-9 * b->mean)
        return 0;
    double full = 0.0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        double t = (double)b->tpe[experts[i]];
        double k = floor(t / T);
        full += k;
        double rest = t - k * T;
        if (rest > 0.0)
            b->pieces[m++] = rest;
    }
    const double tol = 1e-9 * b->mean;
    if (full * T >= X - tol)
        return (int)ceil((X - tol) / T);
    /* Largest remainders first. */
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && b->pieces[j] > b->pieces[j - 1]; j--) {
            double s = b->pieces[j];
            b->pieces[j] = b->pieces[j - 1];
            b->pieces[j - 1] = s;
        }
    double carried = full * T;
    int count = (int)full;
    for (int i = 0; i < m && carried < X - tol; i++) {
        carried += b->pieces[i];
        count++;
    }
    return count;
}

/* ---- C(T): the LP ---- */

static int node_of(const tsim_bounder *b, int r)
{
    return r / b->rpn;
}

/* Adds the shed rows (bound.h) for max load T (tokens); rows with nothing to
 * shed are left out (-1). */
static void add_shed_rows(tsim_bounder *b, double T)
{
    const double inf = HUGE_VAL, mean = b->mean;
    for (int h = 0; h < b->R; h++) {
        int n = 0;
        for (int e = 0; e < b->E; e++)
            if (b->home[e] == h)
                b->elist[n++] = e;
        int need = fewest_pieces(b, b->elist, n, (double)b->load0[h] - T, T);
        b->row_shed[h] = need > 0 ? tsim_lp_add_row(&b->lp, need, inf) : -1;
    }
    for (int N = 0; N < b->nodes; N++) {
        b->row_node[N] = -1;
        if (b->nodes < 2)
            continue;
        int n = 0, size = 0;
        double load = 0.0;
        for (int e = 0; e < b->E; e++)
            if (node_of(b, b->home[e]) == N)
                b->elist[n++] = e;
        for (int r = N * b->rpn; r < b->R && r < (N + 1) * b->rpn; r++, size++)
            load += (double)b->load0[r];
        int need = fewest_pieces(b, b->elist, n, load - size * T, T);
        if (need > 0)
            b->row_node[N] = tsim_lp_add_row(&b->lp, need, inf);
    }
    for (int e = 0; e < b->E; e++) {
        double t = (double)b->tpe[e];
        int need = t > T ? (int)ceil(t / T - 1e-9) - 1 : 0;
        b->row_count[e] = need > 0 ? tsim_lp_add_row(&b->lp, need, inf) : -1;
    }
    (void)mean;
}

/* Builds C(T)'s LP for max load T (tokens). Beyond the rows of bound.h, a
 * room row per pair: a guest g that sends out o(g) tokens can take at most
 * room(g) = T - load0(g) + o(g), so f - o(g) <= min(tpe(e), max(0, T -
 * load0(g))) y (with y = 1 it is the load row; with y = 0, f = 0 <= o(g)).
 * o(g) is a column tied to g's outgoing f by an equality row. */
static int build_lp(tsim_bounder *b, double T, tsim_error *err)
{
    const int R = b->R, E = b->E;
    const double inf = HUGE_VAL, mean = b->mean, Tn = T / mean;
    int moving = 0;
    for (int e = 0; e < E; e++)
        moving += b->tpe[e] > 0;
    const int pairs = moving * (R - 1);
    int rc = tsim_lp_reserve(&b->lp, 2 * pairs + R, 2 * pairs + 4 * E + 4 * R + b->nodes, 13 * pairs + 2 * R, err);
    if (rc)
        return rc;
    tsim_lp_clear(&b->lp);
    for (int e = 0; e < E; e++)
        b->row_expert[e] = b->tpe[e] > 0 ? tsim_lp_add_row(&b->lp, -inf, (double)b->tpe[e] / mean) : -1;
    for (int r = 0; r < R; r++) {
        b->row_load[r] = tsim_lp_add_row(&b->lp, -inf, Tn - (double)b->load0[r] / mean);
        b->row_slots[r] = tsim_lp_add_row(&b->lp, -inf, (double)b->K);
        b->row_out[r] = tsim_lp_add_row(&b->lp, 0.0, 0.0);
    }
    add_shed_rows(b, T);
    b->npairs = 0;
    int rows[6];
    double vals[6];
    for (int e = 0; e < E; e++) {
        if (b->tpe[e] == 0)
            continue;
        const int h = b->home[e];
        const double cap = fmin((double)b->tpe[e], T) / mean;
        for (int g = 0; g < R; g++) {
            if (g == h)
                continue;
            const bool across = node_of(b, g) != node_of(b, h);
            const double room = fmin((double)b->tpe[e], fmax(0.0, T - (double)b->load0[g])) / mean;
            /* A room row at least as loose as the link row adds nothing. */
            const bool use_room = b->opts.room_rows && room < cap * (1.0 - 1e-12);
            int link = tsim_lp_add_row(&b->lp, -inf, 0.0);
            int roomrow = use_room ? tsim_lp_add_row(&b->lp, -inf, 0.0) : -1;
            b->room_of_pair[b->npairs++] = roomrow;
            int n = 0;
            rows[n] = link, vals[n++] = -cap;
            if (use_room)
                rows[n] = roomrow, vals[n++] = -room;
            rows[n] = b->row_slots[g], vals[n++] = 1.0;
            if (b->row_shed[h] >= 0)
                rows[n] = b->row_shed[h], vals[n++] = 1.0;
            if (across && b->row_node[node_of(b, h)] >= 0)
                rows[n] = b->row_node[node_of(b, h)], vals[n++] = 1.0;
            if (b->row_count[e] >= 0)
                rows[n] = b->row_count[e], vals[n++] = 1.0;
            tsim_lp_add_col(&b->lp, across ? b->opts.lambda : 1.0, 0.0, 1.0, n, rows, vals);
            n = 0;
            rows[n] = link, vals[n++] = 1.0;
            if (use_room)
                rows[n] = roomrow, vals[n++] = 1.0;
            rows[n] = b->row_expert[e], vals[n++] = 1.0;
            rows[n] = b->row_load[g], vals[n++] = 1.0;
            rows[n] = b->row_load[h], vals[n++] = -1.0;
            rows[n] = b->row_out[h], vals[n++] = -1.0;
            tsim_lp_add_col(&b->lp, 0.0, 0.0, cap, n, rows, vals);
        }
    }
    /* o(g): +1 in its equality row, -1 in the room row of every pair into g. */
    for (int g = 0; g < R; g++) {
        int n = 0, p = 0;
        b->orows[n] = b->row_out[g], b->ovals[n++] = 1.0;
        for (int e = 0; e < E; e++) {
            if (b->tpe[e] == 0)
                continue;
            for (int q = 0; q < R; q++) {
                if (q == b->home[e])
                    continue;
                if (q == g && b->room_of_pair[p] >= 0)
                    b->orows[n] = b->room_of_pair[p], b->ovals[n++] = -1.0;
                p++;
            }
        }
        tsim_lp_add_col(&b->lp, 0.0, 0.0, inf, n, b->orows, b->ovals);
    }
    return TSIM_OK;
}

/* C(T) in *cost: the least cost of a plan with max load <= T (tokens),
 * rounded up to a reachable cost; INFINITY when no plan reaches T; 0 when
 * the LP was cut by its iteration limit (it proves nothing then). */
static int cost_at(tsim_bounder *b, double T, double *cost, tsim_error *err)
{
    *cost = 0.0;
    if (T >= (double)b->lmax)
        return TSIM_OK; /* the native placement */
    if (b->K == 0 || b->R < 2)
        return *cost = INFINITY, TSIM_OK;
    int rc = build_lp(b, T, err);
    if (rc)
        return rc;
    tsim_lp_status st;
    double obj;
    int its;
    rc = tsim_lp_solve(&b->lp, b->opts.solver, b->opts.iteration_limit, &st, &obj, &its, err);
    if (rc)
        return rc;
    b->res->lps++;
    b->res->iterations += its;
    if (st == TSIM_LP_INFEASIBLE)
        *cost = INFINITY;
    else if (st == TSIM_LP_LIMIT)
        b->res->lp_limited++;
    else
        *cost = tsim_bound_round_cost(obj - 1e-7 * fmax(1.0, fabs(obj)), b->opts.lambda);
    return TSIM_OK;
}

/* ---- the searches ---- */

/* Next candidate max load above a (tokens): a whole token more with integer
 * tokens, else the same point (intervals share their ends). */
static double step_above(const tsim_bounder *b, double a)
{
    return b->opts.integer_tokens ? a + 1.0 : a;
}

static double midpoint(const tsim_bounder *b, double lo, double hi)
{
    double m = lo + (hi - lo) / 2.0;
    return b->opts.integer_tokens ? floor(m) : m;
}

/* Bisection done: lo and hi a token apart, or a hair. */
static bool settled(const tsim_bounder *b, double lo, double hi)
{
    return b->opts.integer_tokens ? hi - lo <= 1.0 : hi - lo <= 1e-9 * b->mean;
}

/* Nothing to split: a single max load, or a hair wide. */
static bool point(const tsim_bounder *b, double lo, double hi)
{
    return b->opts.integer_tokens ? hi - lo < 0.5 : hi - lo <= 1e-9 * b->mean;
}

int tsim_bound_min_cost(tsim_bounder *b, const tsim_record *rec, double rho_target, tsim_bound_result *out,
                        tsim_error *err)
{
    int rc = load_record(b, rec, out, err);
    if (rc)
        return rc;
    if (!isfinite(rho_target))
        return tsim_error_set(err, TSIM_E_INPUT, "bound: the target imbalance must be finite, got %g", rho_target);
    out->status = TSIM_BOUND_EXACT;
    if (b->total == 0 || rho_of(b, (double)b->lmax) <= rho_target)
        return TSIM_OK; /* the native placement meets it at cost 0 */
    /* Any plan with rho_after <= target has max load <= T; a hair of slack
     * keeps a plan exactly at the target inside. */
    double T = (1.0 + rho_target) * b->mean * (1.0 + 1e-12) + 1e-9;
    if (b->opts.integer_tokens)
        T = floor(T);
    if (T < trivial_load(b) * (1.0 - 1e-12)) {
        out->status = TSIM_BOUND_INFEASIBLE;
        out->value = INFINITY;
        return TSIM_OK;
    }
    rc = cost_at(b, T, &out->value, err);
    if (rc)
        return rc;
    out->status = isinf(out->value) ? TSIM_BOUND_INFEASIBLE : TSIM_BOUND_DONE;
    return TSIM_OK;
}

int tsim_bound_min_rho(tsim_bounder *b, const tsim_record *rec, double budget, tsim_bound_result *out,
                       tsim_error *err)
{
    int rc = load_record(b, rec, out, err);
    if (rc)
        return rc;
    if (!isfinite(budget) || budget < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: the cost budget must be a finite number >= 0, got %g",
                              budget);
    double lo = trivial_load(b), hi = (double)b->lmax;
    out->trivial = out->value = rho_of(b, lo);
    out->status = TSIM_BOUND_EXACT;
    if (b->total == 0 || lo >= hi)
        return TSIM_OK;
    double c;
    if ((rc = cost_at(b, lo, &c, err)))
        return rc;
    if (c <= budget)
        return out->status = TSIM_BOUND_DONE, TSIM_OK; /* the LP reaches the rounding bound */
    /* Invariant: C(lo) > budget (no plan in budget has max load <= lo) and
     * C(hi) <= budget (hi = native max load, or a T the LP cannot exclude). */
    while (!settled(b, lo, hi) && out->lps < b->opts.lp_limit) {
        double m = midpoint(b, lo, hi);
        if ((rc = cost_at(b, m, &c, err)))
            return rc;
        if (c > budget)
            lo = m;
        else
            hi = m;
    }
    out->value = rho_of(b, step_above(b, lo));
    out->status = settled(b, lo, hi) ? TSIM_BOUND_DONE : TSIM_BOUND_BUDGET;
    return TSIM_OK;
}

/* One interval of max loads [lo, hi] (tokens) and the least cost C(hi) of a
 * plan in it. */
typedef struct {
    double lo, hi, cost;
} interval;

static double interval_bound(const tsim_bounder *b, const interval *v, double mu)
{
    return isinf(v->cost) ? INFINITY : rho_of(b, v->lo) + (v->cost > 0.0 ? mu * v->cost : 0.0);
}

/* The interval with the least bound (ties: the lowest), -1 when none. */
static int least_interval(const tsim_bounder *b, const interval *v, int n, double mu)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (best < 0 || interval_bound(b, &v[i], mu) < interval_bound(b, &v[best], mu))
            best = i;
    return best;
}

int tsim_bound_objective(tsim_bounder *b, const tsim_record *rec, double mu, tsim_bound_result *out,
                         tsim_error *err)
{
    int rc = load_record(b, rec, out, err);
    if (rc)
        return rc;
    if (!isfinite(mu) || mu < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: mu must be a finite number >= 0, got %g", mu);
    const double lo = trivial_load(b), hi = (double)b->lmax;
    out->trivial = out->value = rho_of(b, lo);
    out->status = TSIM_BOUND_EXACT;
    if (b->total == 0 || lo >= hi)
        return TSIM_OK;
    interval *v = malloc(sizeof *v * (size_t)(b->opts.lp_limit + 2));
    if (!v)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory");
    int n = 1;
    v[0] = (interval){lo, hi, 0.0};
    bool done = false;
    while (!done && out->lps < b->opts.lp_limit) {
        int i = least_interval(b, v, n, mu);
        if (i < 0 || point(b, v[i].lo, v[i].hi)) {
            done = true;
            break;
        }
        double m = midpoint(b, v[i].lo, v[i].hi), c;
        if ((rc = cost_at(b, m, &c, err))) {
            free(v);
            return rc;
        }
        /* Max load in [lo, m] costs >= C(m); in [above m, hi] >= C(hi). */
        v[n++] = (interval){step_above(b, m), v[i].hi, v[i].cost};
        v[i].hi = m;
        v[i].cost = c;
    }
    int i = least_interval(b, v, n, mu);
    if (!done && i >= 0 && point(b, v[i].lo, v[i].hi))
        done = true;
    double best = i >= 0 ? interval_bound(b, &v[i], mu) : INFINITY;
    /* Never below the trivial bound (every interval starts at or above it). */
    out->value = best > out->trivial ? best : out->trivial;
    out->status = done ? TSIM_BOUND_DONE : TSIM_BOUND_BUDGET;
    free(v);
    return TSIM_OK;
}

/* ---- the curve: one grid per record, refined per query ---- */

void tsim_bound_curve_free(tsim_bound_curve *c)
{
    free(c->T);
    free(c->C);
    memset(c, 0, sizeof *c);
}

int tsim_bound_curve_build(tsim_bounder *b, const tsim_record *rec, int points, tsim_bound_curve *c,
                           tsim_error *err)
{
    tsim_bound_result res;
    int rc = load_record(b, rec, &res, err);
    if (rc)
        return rc;
    if (points < 2)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: a curve needs at least 2 points, got %d", points);
    if (c->cap < points) {
        double *T = realloc(c->T, sizeof *T * (size_t)points), *C = T ? realloc(c->C, sizeof *C * (size_t)points) : NULL;
        if (T)
            c->T = T;
        if (!T || !C)
            return tsim_error_set(err, TSIM_E_INTERNAL, "bound: out of memory for a curve of %d points", points);
        c->C = C;
        c->cap = points;
    }
    c->n = 0;
    c->lps = 0;
    c->mean = b->mean;
    c->lmin = trivial_load(b);
    c->lmax = (double)b->lmax;
    c->record_index = rec->index;
    /* Quadratic spacing from ceil(mean) up: most plans end near the bottom.
     * The native max load itself costs nothing and needs no point. */
    const double span = c->lmax - c->lmin;
    for (int i = 0; i < points && span > 0; i++) {
        double x = (double)i / (double)(points - 1);
        double T = c->lmin + span * x * x;
        T = b->opts.integer_tokens ? floor(T) : T;
        if (T >= c->lmax || (c->n > 0 && T <= c->T[c->n - 1]))
            continue;
        double cost;
        if ((rc = cost_at(b, T, &cost, err)))
            return rc;
        c->T[c->n] = T;
        c->C[c->n++] = cost;
    }
    c->lps = res.lps;
    return TSIM_OK;
}

static int curve_check(const tsim_bound_curve *c, const tsim_record *rec, tsim_error *err)
{
    if (rec->index != c->record_index)
        return tsim_error_set(err, TSIM_E_INTERNAL, "bound: curve of record %lld queried for record %lld",
                              (long long)c->record_index, (long long)rec->index);
    return TSIM_OK;
}

int tsim_bound_curve_min_rho(tsim_bounder *b, const tsim_record *rec, const tsim_bound_curve *c, double budget,
                             int refine_lps, tsim_bound_result *out, tsim_error *err)
{
    int rc = load_record(b, rec, out, err);
    if (rc || (rc = curve_check(c, rec, err)))
        return rc;
    if (!isfinite(budget) || budget < 0.0)
        return tsim_error_set(err, TSIM_E_INPUT, "bound: the cost budget must be a finite number >= 0, got %g",
                              budget);
    out->trivial = out->value = rho_of(b, c->lmin);
    out->status = TSIM_BOUND_EXACT;
    if (b->total == 0 || c->n == 0)
        return TSIM_OK;
    /* The bracket: lo the largest grid load every plan in budget exceeds,
     * hi the next grid load the LP cannot exclude (or the native max). */
    int at = -1;
    for (int i = 0; i < c->n; i++)
        if (c->C[i] > budget)
            at = i;
    out->status = TSIM_BOUND_DONE;
    if (at < 0)
        return TSIM_OK; /* the LP reaches the rounding bound within budget */
    double lo = c->T[at], hi = c->lmax;
    for (int i = at + 1; i < c->n; i++)
        if (c->C[i] <= budget) {
            hi = c->T[i];
            break;
        }
    while (!settled(b, lo, hi) && out->lps < refine_lps) {
        double m = midpoint(b, lo, hi), cost;
        if ((rc = cost_at(b, m, &cost, err)))
            return rc;
        if (cost > budget)
            lo = m;
        else
            hi = m;
    }
    out->value = rho_of(b, step_above(b, lo));
    out->status = settled(b, lo, hi) ? TSIM_BOUND_DONE : TSIM_BOUND_BUDGET;
    return TSIM_OK;
}

int tsim_bound_curve_min_cost(tsim_bounder *b, const tsim_record *rec, const tsim_bound_curve *c, double rho,
                              tsim_bound_result *out, tsim_error *err)
{
    int rc = load_record(b, rec, out, err);
    if (rc || (rc = curve_check(c, rec, err)))
        return rc;
    if (!isfinite(rho))
        return tsim_error_set(err, TSIM_E_INPUT, "bound: the target imbalance must be finite, got %g", rho);
    out->status = TSIM_BOUND_EXACT;
    if (b->total == 0 || rho_of(b, c->lmax) <= rho)
        return TSIM_OK;
    double T = (1.0 + rho) * b->mean * (1.0 + 1e-12) + 1e-9;
    T = b->opts.integer_tokens ? floor(T) : T;
    if (T < c->lmin * (1.0 - 1e-12)) {
        out->status = TSIM_BOUND_INFEASIBLE;
        out->value = INFINITY;
        return TSIM_OK;
    }
    out->status = TSIM_BOUND_DONE;
    for (int i = 0; i < c->n; i++)
        if (c->T[i] == T)
            return out->value = c->C[i], TSIM_OK;
    rc = cost_at(b, T, &out->value, err);
    if (rc == TSIM_OK && isinf(out->value))
        out->status = TSIM_BOUND_INFEASIBLE;
    return rc;
}
