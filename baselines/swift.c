/* `swift` (production-balancers.md section 3): SwiftBalancer's update (3.3:
 * gate, originals, copy counts, extra copies, fill, swaps, accept, keep old
 * positions), home' as eplb picks it (1.4), and one copy per source rank and
 * expert for the tokens (3.5). Python sets of experts iterate in ascending
 * id; float32 where the spec marks it, float64 elsewhere. */
#include "swift.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "eplb_hosts.h"
#include "layout_layers.h"
#include "sort.h"

#define SWIFT_MAX_SWAP_ROUNDS 100
#define SWIFT_IMBALANCE_THRESHOLD 1.01
#define SWIFT_INCREMENT 0.01

struct tsim_swift {
    int R, E, S, P;
    tsim_swift_options opt;
    tsim_layout_layers layers; /* window: int64 w[E] */
    tsim_eplb_hosts hosts;
    int64_t *tpe;       /* [E] */
    double *w, *x;      /* [E] the window's tokens; the copy estimate of step 2 */
    int *extra, *n, *from; /* [E] extra copies a[e]; copies; rank of the original */
    float *u, *v;       /* [E] f32 estimates of steps 2 and 5 */
    int32_t *A;         /* [P] the layout being built, -1 = free */
    bool *on, *received; /* [R * E] */
    int *com;           /* [R * R] com[from * R + to] */
    int *free_pos;      /* [P] each rank's free positions, ascending j */
    int *free_lo, *free_hi; /* [R] its unused free positions are free_pos[r*S + lo .. hi) */
    int *entries, *sort_tmp; /* [P] */
    int64_t *entry_key; /* [E] */
    float *load;        /* [R] */
    int *rank_order;    /* [R] */
    int *on_h, *on_s;   /* [S] swap candidates */
    int32_t *next_layout; /* [P] step 8 */
    int64_t *stamp;     /* [E] step 8: old experts of the rank */
    int64_t stamp_now;
};

void tsim_swift_options_default(tsim_swift_options *opt)
{
    opt->history = TSIM_SWIFT_HISTORY_PREV;
    opt->interval = 8;
    opt->tp = 1;
    opt->layout[0] = '\0';
}

void tsim_swift_free(tsim_swift *s)
{
    if (!s)
        return;
    tsim_layout_layers_free(&s->layers);
    tsim_eplb_hosts_free(&s->hosts);
    void *arrays[] = {s->tpe, s->w, s->x, s->extra, s->n, s->from, s->u, s->v, s->A, s->on, s->received,
                      s->com, s->free_pos, s->free_lo, s->free_hi, s->entries, s->sort_tmp, s->entry_key,
                      s->load, s->rank_order, s->on_h, s->on_s, s->next_layout, s->stamp};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(arrays[i]);
    free(s);
}

static int check_options(const tsim_topology *topo, int slots, const tsim_swift_options *opt, tsim_error *err)
{
    const int R = topo->ranks, E = topo->experts, hpr = topo->experts_per_rank;
    if (slots < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: --slots must be >= 0, got %d", slots);
    if (R < 2)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: needs 2 or more ranks (the balancer needs EP > 1)");
    if (slots > E - hpr)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "swift: --slots %d is more than E - E/R = %d (the initial layout would hold an expert "
                              "twice on a rank)",
                              slots, E - hpr);
    if (opt->interval < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: --swift-interval must be 1 or more, got %d", opt->interval);
    if (opt->tp < 1 || R % opt->tp != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: --swift-tp %d must be 1 or more and divide %d ranks",
                              opt->tp, R);
    if (opt->history < TSIM_SWIFT_HISTORY_PREV || opt->history > TSIM_SWIFT_HISTORY_NONE)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: unknown history %d (prev, oracle, none)", opt->history);
    return TSIM_OK;
}

int tsim_swift_init(tsim_swift **out, const tsim_topology *topo, int slots, const tsim_swift_options *opt,
                    tsim_error *err)
{
    *out = NULL;
    int rc = check_options(topo, slots, opt, err);
    if (rc != TSIM_OK)
        return rc;
    tsim_swift *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "swift: out of memory");
    const int R = topo->ranks, E = topo->experts;
    s->R = R;
    s->E = E;
    s->S = topo->experts_per_rank + slots;
    s->P = R * s->S;
    s->opt = *opt;
    rc = tsim_layout_layers_init(&s->layers, topo, slots, sizeof(int64_t) * (size_t)E, err);
    if (rc == TSIM_OK)
        rc = tsim_eplb_hosts_init(&s->hosts, R, E, s->S, topo->ranks_per_node, err);
    /* A fixed layout serves every record: no update ever runs. */
    if (rc == TSIM_OK && opt->layout[0]) {
        rc = tsim_layout_layers_load_fixed(&s->layers, "swift", opt->layout, err);
        s->opt.history = TSIM_SWIFT_HISTORY_NONE;
    }
    if (rc != TSIM_OK) {
        tsim_swift_free(s);
        return rc;
    }
    const size_t nE = (size_t)E, nR = (size_t)R, nP = (size_t)s->P, nS = (size_t)s->S;
    s->tpe = malloc(sizeof *s->tpe * nE);
    s->w = malloc(sizeof *s->w * nE);
    s->x = malloc(sizeof *s->x * nE);
    s->extra = malloc(sizeof *s->extra * nE);
    s->n = malloc(sizeof *s->n * nE);
    s->from = malloc(sizeof *s->from * nE);
    s->u = malloc(sizeof *s->u * nE);
    s->v = malloc(sizeof *s->v * nE);
    s->A = malloc(sizeof *s->A * nP);
    s->on = malloc(sizeof *s->on * nR * nE);
    s->received = malloc(sizeof *s->received * nR * nE);
    s->com = malloc(sizeof *s->com * nR * nR);
    s->free_pos = malloc(sizeof *s->free_pos * nP);
    s->free_lo = malloc(sizeof *s->free_lo * nR);
    s->free_hi = malloc(sizeof *s->free_hi * nR);
    s->entries = malloc(sizeof *s->entries * nP);
    s->sort_tmp = malloc(sizeof *s->sort_tmp * nP);
    s->entry_key = malloc(sizeof *s->entry_key * nE);
    s->load = malloc(sizeof *s->load * nR);
    s->rank_order = malloc(sizeof *s->rank_order * nR);
    s->on_h = malloc(sizeof *s->on_h * nS);
    s->on_s = malloc(sizeof *s->on_s * nS);
    s->next_layout = malloc(sizeof *s->next_layout * nP);
    s->stamp = calloc(nE, sizeof *s->stamp);
    if (!s->tpe || !s->w || !s->x || !s->extra || !s->n || !s->from || !s->u || !s->v || !s->A || !s->on ||
        !s->received || !s->com || !s->free_pos || !s->free_lo || !s->free_hi || !s->entries || !s->sort_tmp ||
        !s->entry_key || !s->load || !s->rank_order || !s->on_h || !s->on_s || !s->next_layout || !s->stamp) {
        tsim_swift_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "swift: out of memory for %d ranks and %d experts", R, E);
    }
    *out = s;
    return TSIM_OK;
}

/* Step 0: the imbalance of layout D under the estimate w/n; 0 when the layer
 * passes the gate as balanced. */
static double gate(tsim_swift *s, const int32_t *D)
{
    const int R = s->R, E = s->E, S = s->S;
    memset(s->n, 0, sizeof *s->n * (size_t)E);
    for (int p = 0; p < s->P; p++)
        s->n[D[p]]++;
    double total = 0.0, max = 0.0;
    for (int r = 0; r < R; r++) {
        double rank = 0.0;
        for (int j = 0; j < S; j++) {
            const int e = D[r * S + j];
            const double term = s->w[e] / s->n[e];
            rank += term;
            total += term;
        }
        if (r == 0 || rank > max)
            max = rank;
    }
    const double imb0 = fabs(total / R) < 1e-9 ? 1.0 : max / (total / R);
    return imb0 < SWIFT_IMBALANCE_THRESHOLD ? 0.0 : imb0;
}

/* Steps 1-3: originals, copy counts, the list of extra copies (returned:
 * its length) and the loads of the originals. */
static int originals_and_counts(tsim_swift *s, const int32_t *D)
{
    const int R = s->R, E = s->E, S = s->S;
    for (int e = 0; e < E; e++)
        s->from[e] = -1;
    for (int r = 0; r < R; r++)
        s->free_lo[r] = s->free_hi[r] = 0;
    int m = 0;
    memcpy(s->A, D, sizeof *s->A * (size_t)s->P);
    for (int j = 0; j < S; j++)
        for (int r = 0; r < R; r++) {
            const int e = D[r * S + j];
            if (s->from[e] < 0) {
                s->from[e] = r;
            } else {
                s->free_pos[r * S + s->free_hi[r]++] = j;
                s->A[r * S + j] = -1;
                m++;
            }
        }
    for (int e = 0; e < E; e++) {
        s->x[e] = s->w[e];
        s->extra[e] = 0;
    }
    for (int i = 0; i < m; i++) {
        int best = -1;
        for (int e = 0; e < E; e++)
            if (s->extra[e] + 1 < R && (best < 0 || s->x[e] >= s->x[best])) /* ties to the higher id */
                best = e;
        if (best < 0)
            break;
        s->x[best] = s->x[best] * (s->extra[best] + 2) / (s->extra[best] + 3);
        s->extra[best]++;
    }
    int n = 0;
    for (int e = 0; e < E; e++) {
        s->u[e] = (float)s->x[e];
        const double key = (double)s->u[e];
        memcpy(&s->entry_key[e], &key, sizeof key); /* >= 0: the bits order as the value */
        for (int c = 0; c < s->extra[e]; c++)
            s->entries[n++] = e;
    }
    tsim_sort_stable_by_key(s->entries, n, s->entry_key, true, s->sort_tmp);
    memset(s->on, 0, sizeof *s->on * (size_t)R * (size_t)E);
    memset(s->received, 0, sizeof *s->received * (size_t)R * (size_t)E);
    memset(s->com, 0, sizeof *s->com * (size_t)R * (size_t)R);
    for (int r = 0; r < R; r++) {
        float load = 0.0f;
        for (int j = 0; j < S; j++) {
            const int e = s->A[r * S + j];
            if (e >= 0) {
                load += s->u[e];
                s->on[(size_t)r * (size_t)E + (size_t)e] = true;
            }
        }
        s->load[r] = load;
    }
    return n;
}

static void receive(tsim_swift *s, int r, int pos, int e)
{
    s->A[r * s->S + pos] = e;
    s->on[(size_t)r * (size_t)s->E + (size_t)e] = true;
    s->received[(size_t)r * (size_t)s->E + (size_t)e] = true;
    s->com[s->from[e] * s->R + r]++;
}

/* Step 4: each extra copy to the lightest allowed rank's last free position. */
static void place_extra(tsim_swift *s, int n)
{
    const int R = s->R, E = s->E;
    for (int i = 0; i < n; i++) {
        const int e = s->entries[i];
        int best = -1;
        for (int r = 0; r < R; r++) {
            if (s->free_lo[r] >= s->free_hi[r] || s->on[(size_t)r * (size_t)E + (size_t)e] ||
                s->com[s->from[e] * R + r] >= 1)
                continue;
            if (best < 0 || s->load[r] < s->load[best])
                best = r;
        }
        if (best < 0)
            continue; /* dropped */
        const int pos = s->free_pos[best * s->S + --s->free_hi[best]];
        receive(s, best, pos, e);
        s->load[best] += s->u[e];
    }
}

/* Step 5: fills the positions left free; returns whether it ran (then the
 * swap weights are v). */
static bool fill(tsim_swift *s)
{
    const int R = s->R, E = s->E, S = s->S;
    bool any = false;
    for (int r = 0; r < R; r++)
        any |= s->free_lo[r] < s->free_hi[r];
    if (!any)
        return false;
    memset(s->n, 0, sizeof *s->n * (size_t)E);
    for (int p = 0; p < s->P; p++)
        if (s->A[p] >= 0)
            s->n[s->A[p]]++;
    for (int e = 0; e < E; e++)
        s->v[e] = (float)(s->w[e] / s->n[e]);
    for (int r = 0; r < R; r++)
        for (; s->free_lo[r] < s->free_hi[r]; s->free_lo[r]++) {
            const bool *on = s->on + (size_t)r * (size_t)E;
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!on[e] && (best < 0 || s->v[e] >= s->v[best])) /* ties to the higher id */
                    best = e;
            receive(s, r, s->free_pos[r * S + s->free_lo[r]], best);
            s->v[best] = (float)((double)s->v[best] * ((double)s->n[best] / (s->n[best] + 1)));
            s->n[best]++;
        }
    for (int r = 0; r < R; r++) {
        float load = 0.0f;
        for (int j = 0; j < S; j++)
            load += s->v[s->A[r * S + j]];
        s->load[r] = load;
    }
    return true;
}

/* The experts of rank a that are not on rank b and that a did not receive,
 * ascending. */
static int swap_candidates(const tsim_swift *s, int a, int b, int *out)
{
    const int E = s->E, S = s->S;
    int n = 0;
    for (int j = 0; j < S; j++) {
        const int e = s->A[a * S + j];
        if (e < 0 || s->on[(size_t)b * (size_t)E + (size_t)e] || s->received[(size_t)a * (size_t)E + (size_t)e])
            continue;
        int k = n++;
        while (k > 0 && out[k - 1] > e) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = e;
    }
    return n;
}

static void swap_experts(tsim_swift *s, int h, int x, int r, int y, const float *W)
{
    const int E = s->E, S = s->S;
    for (int j = 0; j < S; j++) {
        if (s->A[h * S + j] == x)
            s->A[h * S + j] = y;
        if (s->A[r * S + j] == y)
            s->A[r * S + j] = x;
    }
    s->load[h] += (float)((double)W[y] - (double)W[x]);
    s->load[r] += (float)((double)W[x] - (double)W[y]);
    s->on[(size_t)h * (size_t)E + (size_t)x] = s->on[(size_t)r * (size_t)E + (size_t)y] = false;
    s->on[(size_t)h * (size_t)E + (size_t)y] = s->on[(size_t)r * (size_t)E + (size_t)x] = true;
    s->received[(size_t)h * (size_t)E + (size_t)y] = s->received[(size_t)r * (size_t)E + (size_t)x] = true;
    s->com[r * s->R + h]++;
    s->com[h * s->R + r]++;
}

/* One rank pair of step 6: the best swap of h with r, if it gains thr. */
static bool try_swap(tsim_swift *s, int h, int r, double thr, const float *W)
{
    const double H = (double)s->load[h], L = (double)s->load[r];
    const int nx = swap_candidates(s, h, r, s->on_h), ny = swap_candidates(s, r, h, s->on_s);
    double best = H;
    int bx = -1, by = -1;
    for (int i = 0; i < nx; i++)
        for (int k = 0; k < ny; k++) {
            const int x = s->on_h[i], y = s->on_s[k];
            const double a = H - (double)W[x] + (double)W[y], b = L - (double)W[y] + (double)W[x];
            const double worst = a > b ? a : b;
            if (worst < best) {
                best = worst;
                bx = x;
                by = y;
            }
        }
    if (bx < 0 || H - best < thr)
        return false;
    swap_experts(s, h, bx, r, by, W);
    return true;
}

/* Step 6; returns H read at the start of the last round. */
static double swaps(tsim_swift *s, double thr, const float *W)
{
    const int R = s->R;
    bool swapped = true;
    double H = 0.0;
    for (int round = 0; round < SWIFT_MAX_SWAP_ROUNDS; round++) {
        for (int i = 0; i < R; i++) {
            int k = i;
            while (k > 0 && s->load[s->rank_order[k - 1]] > s->load[i]) {
                s->rank_order[k] = s->rank_order[k - 1];
                k--;
            }
            s->rank_order[k] = i;
        }
        const int h = s->rank_order[R - 1];
        H = (double)s->load[h];
        if (!swapped)
            break;
        swapped = false;
        for (int i = 0; i < R - 1 && !swapped; i++) {
            const int r = s->rank_order[i];
            if (s->com[r * R + h] < 1 && s->com[h * R + r] < 1)
                swapped = try_swap(s, h, r, thr, W);
        }
    }
    return H;
}

/* Step 8: experts that stay keep their positions of D; the new ones fill the
 * freed positions in ascending j, in ascending id. */
static void keep_positions(tsim_swift *s, int32_t *D)
{
    const int R = s->R, E = s->E, S = s->S;
    for (int r = 0; r < R; r++) {
        const int32_t *old = D + r * S;
        int32_t *next = s->next_layout + r * S;
        const int64_t stamp = ++s->stamp_now;
        for (int j = 0; j < S; j++)
            s->stamp[old[j]] = stamp;
        int fresh = 0; /* the rank's new experts, ascending, in on_h */
        for (int j = 0; j < S; j++) {
            const int e = s->A[r * S + j];
            if (s->stamp[e] == stamp)
                continue;
            int k = fresh++;
            while (k > 0 && s->on_h[k - 1] > e) {
                s->on_h[k] = s->on_h[k - 1];
                k--;
            }
            s->on_h[k] = e;
        }
        int taken = 0;
        for (int j = 0; j < S; j++)
            next[j] = s->on[(size_t)r * (size_t)E + (size_t)old[j]] ? old[j] : s->on_h[taken++];
    }
    memcpy(D, s->next_layout, sizeof *D * (size_t)s->P);
}

/* 3.3 on the layer's layout D (changed in place when accepted). */
static void update(tsim_swift *s, int32_t *D)
{
    const double imb0 = gate(s, D);
    if (imb0 == 0.0)
        return;
    double sum = 0.0;
    for (int e = 0; e < s->E; e++)
        sum += s->w[e];
    const double ave = sum / s->R, thr = SWIFT_INCREMENT * ave;
    const int n = originals_and_counts(s, D);
    place_extra(s, n);
    const float *W = fill(s) ? s->v : s->u;
    const double H = swaps(s, thr, W);
    if (H / ave < imb0)
        keep_positions(s, D);
}

int tsim_swift_prime(tsim_swift *s, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                     const int32_t *placement, tsim_error *err)
{
    tsim_layout_layer *l = tsim_layout_layers_get(&s->layers, layer, err);
    if (!l)
        return TSIM_E_INTERNAL;
    for (int p = 0; layout && p < s->P; p++)
        if (layout[p] < 0 || layout[p] >= s->E)
            return tsim_error_set(err, TSIM_E_INPUT, "swift: layout position %d holds expert %d, not in 0..%d", p,
                                  layout[p], s->E - 1);
    for (int e = 0; placement && e < s->E; e++)
        if (placement[e] < 0 || placement[e] >= s->R)
            return tsim_error_set(err, TSIM_E_INPUT, "swift: placement puts expert %d on rank %d, not in 0..%d", e,
                                  placement[e], s->R - 1);
    memcpy(l->layout, layout ? layout : s->layers.d0, sizeof *l->layout * (size_t)s->P);
    memcpy(l->home, placement ? placement : s->layers.static_home, sizeof *l->home * (size_t)s->E);
    int64_t *w = l->window;
    memset(w, 0, sizeof *w * (size_t)s->E);
    for (int i = 0; i < n; i++)
        for (int e = 0; e < s->E; e++)
            w[e] += window[(size_t)i * (size_t)s->E + (size_t)e];
    l->seen = 1; /* the next record is record 1: an update under prev */
    return TSIM_OK;
}

int tsim_swift_layout(const tsim_swift *s, int64_t layer, int32_t *out)
{
    const tsim_layout_layer *l = tsim_layout_layers_find(&s->layers, layer);
    if (!l)
        return -1;
    memcpy(out, l->layout, sizeof *out * (size_t)s->P);
    return 0;
}

/* 3.5: source r sends all its tokens of e to one copy (copies one per rank,
 * ascending rank). */
static void route_tokens(const tsim_swift *s, const tsim_record *rec, tsim_plan *plan)
{
    const tsim_eplb_hosts *h = &s->hosts;
    const int R = s->R, E = s->E, T = s->opt.tp;
    memset(plan->alloc, 0, sizeof *plan->alloc * (size_t)h->replicas * (size_t)R);
    for (int e = 0; e < E; e++) {
        const int first = h->copy_start[e], c = h->copy_start[e + 1] - first;
        if (c == 1)
            continue;
        for (int r = 0; r < R; r++) {
            const int64_t t = tsim_count(rec, r, e);
            const int j = T > 1 ? ((r % T) + (r / T) + e) % c : r % c;
            const int host = h->copy_host[first + j];
            if (t > 0 && host >= 0)
                plan->alloc[(size_t)host * (size_t)R + (size_t)r] += t;
        }
    }
}

int tsim_swift_plan(tsim_swift *s, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    const int R = s->R, E = s->E;
    tsim_plan_reset(plan);
    plan->slot_limited = true;
    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INPUT, "swift: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (plan->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "swift: plan rows have %d ranks, expected %d", plan->ranks, R);
    tsim_layout_layer *l = tsim_layout_layers_get(&s->layers, rec->layer, err);
    if (!l)
        return err->code ? err->code : TSIM_E_INTERNAL; /* a fixed layout may lack the layer */
    tsim_record_expert_totals(rec, s->tpe);
    int64_t *window = l->window;
    const bool oracle = s->opt.history == TSIM_SWIFT_HISTORY_ORACLE;
    const bool due = oracle || (s->opt.history == TSIM_SWIFT_HISTORY_PREV && l->seen >= 1 &&
                                (l->seen - 1) % s->opt.interval == 0);
    if (due) {
        for (int e = 0; e < E; e++)
            s->w[e] = (double)(oracle ? s->tpe[e] : window[e]);
        update(s, l->layout);
    }
    tsim_eplb_hosts_build(&s->hosts, l->layout, l->home); /* prev(e): home' before */
    memcpy(l->home, s->hosts.home, sizeof *l->home * (size_t)E);
    if (s->opt.history == TSIM_SWIFT_HISTORY_PREV) {
        if (due)
            memset(window, 0, sizeof *window * (size_t)E);
        for (int e = 0; e < E; e++)
            window[e] += s->tpe[e];
    }
    l->seen++;

    int32_t *placement = tsim_plan_placement(plan, E);
    if (!placement)
        return tsim_error_set(err, TSIM_E_INTERNAL, "swift: out of memory for a placement");
    memcpy(placement, l->home, sizeof *placement * (size_t)E);
    int32_t *layout = tsim_plan_layout(plan, s->P); /* for --export-layout */
    if (!layout)
        return tsim_error_set(err, TSIM_E_INTERNAL, "swift: out of memory for a layout");
    memcpy(layout, l->layout, sizeof *layout * (size_t)s->P);
    const tsim_eplb_hosts *h = &s->hosts;
    for (int i = 0; i < h->replicas; i++)
        if (tsim_plan_add(plan, h->replica_expert[i], h->replica_gpu[i], h->replica_slot[i], 0) != i)
            return tsim_error_set(err, TSIM_E_INTERNAL, "swift: out of memory growing the plan");
    route_tokens(s, rec, plan);
    for (int i = 0; i < h->replicas; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        int64_t planned = 0;
        for (int r = 0; r < R; r++)
            planned += row[r];
        plan->replicas[i].planned = planned;
    }
    return TSIM_OK;
}
