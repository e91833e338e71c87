/* `llep`: Least-Loaded Expert Parallelism (baselines.md "llep"). Experts by
 * descending load; the native rank keeps what fits under the capacity while
 * its own pending experts stay reserved; the rest goes in chunks to the
 * currently least-loaded ranks. No slot limit: slot = order of arrival on the
 * helper. */
#include "llep.h"

#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

typedef struct {
    int R, E;
    tsim_llep_options opt;
    int32_t *home;        /* [E] copy of the home map */
    int64_t *tpe;         /* [E] */
    int64_t *load0;       /* [R] native loads */
    int64_t *pending;     /* [R] native load of experts not processed yet */
    int64_t *assigned;    /* [R] tokens assigned so far */
    int *expert_order;    /* [E] experts with t > 0, t descending */
    int *sort_tmp;        /* [max(E, R)] merge-sort buffer */
    int *rank_order;      /* [R] ranks by eff ascending, ties lower rank */
    int *rank_pos;        /* [R] position of each rank in rank_order */
    int *next_slot;       /* [R] replicas each helper has received */
    int *helper_replica;  /* [R] replica of the current expert on a helper, -1 */
    int *piece_replica;   /* [R + 1] the current expert's pieces, in assignment order */
    int64_t *piece_tokens; /* [R + 1] */
} llep_state;


int64_t tsim_llep_capacity(int64_t total, int ranks, double alpha)
{
    int64_t per_rank = total / ranks;
    if (per_rank == 0)
        return total; /* as the published code does */
    double scaled = floor(alpha * (double)per_rank);
    /* Any cap >= total lets every native keep everything, so clamping there
     * changes no plan and keeps a huge alpha from overflowing int64. */
    if (scaled >= (double)total)
        return total;
    int64_t cap = (int64_t)scaled;
    return cap > 1 ? cap : 1;
}

bool tsim_llep_active(const int64_t *load0, int ranks, double threshold)
{
    int64_t total = 0, max = 0;
    for (int r = 0; r < ranks; r++) {
        total += load0[r];
        if (load0[r] > max)
            max = load0[r];
    }
    if (total == 0)
        return false; /* an empty record never plans */
    if (threshold <= 0.0)
        return true;
    return (double)max / ((double)total / (double)ranks) >= threshold;
}

static inline int64_t eff(const llep_state *s, int g)
{
    return s->assigned[g] + s->pending[g];
}

static inline bool ranks_before(const llep_state *s, int a, int b)
{
    int64_t ea = eff(s, a), eb = eff(s, b);
    return ea < eb || (ea == eb && a < b);
}

/* Restores rank_order after eff[x] changed (x moves one way only). */
static void reposition(llep_state *s, int x)
{
    int p = s->rank_pos[x];
    while (p > 0 && ranks_before(s, x, s->rank_order[p - 1])) {
        s->rank_order[p] = s->rank_order[p - 1];
        s->rank_pos[s->rank_order[p]] = p;
        p--;
    }
    while (p < s->R - 1 && ranks_before(s, s->rank_order[p + 1], x)) {
        s->rank_order[p] = s->rank_order[p + 1];
        s->rank_pos[s->rank_order[p]] = p;
        p++;
    }
    s->rank_order[p] = x;
    s->rank_pos[x] = p;
}

/* Takes the next n tokens of expert e in global source order (source 0's,
 * then source 1's, ...) from the cursor (*r, *used), adding them to row (when
 * not NULL). */
static void take_range(const tsim_record *rec, int e, int64_t n, int *r, int64_t *used, int64_t *row)
{
    while (n > 0 && *r < rec->ranks) {
        int64_t left = tsim_count(rec, *r, e) - *used;
        if (left <= 0) {
            (*r)++;
            *used = 0;
            continue;
        }
        int64_t take = left < n ? left : n;
        if (row)
            row[*r] += take;
        *used += take;
        n -= take;
    }
}

/* Spills rem tokens of expert e (native n) to helpers; records the pieces.
 * Returns the number of pieces, or -1 when the plan cannot grow. */
static int spill_expert(llep_state *s, int e, int n, int64_t rem, int64_t cap, tsim_plan *out)
{
    const int64_t m = s->opt.min_chunk;
    int npieces = 0;
    while (rem > 0) {
        int g = -1;
        int64_t c = 0;
        for (int p = 0; p < s->R; p++) {
            int cand = s->rank_order[p];
            if (cand == n)
                continue;
            int64_t room = cap - eff(s, cand);
            int64_t piece = rem < room ? rem : room;
            if (piece <= 0)
                continue;
            if (piece < m && rem > piece)
                continue; /* a piece below m only as the last one */
            g = cand;
            c = piece;
            break;
        }
        if (g < 0) {
            /* Forced: the whole remainder on the least-loaded other rank of the
             * current order, over capacity. */
            g = s->rank_order[0] != n ? s->rank_order[0] : s->rank_order[1];
            c = rem;
        }
        s->assigned[g] += c;
        reposition(s, g);
        int idx = s->helper_replica[g];
        if (idx >= 0) {
            /* One replica per (expert, helper): the forced piece joins it. */
            out->replicas[idx].planned += c;
        } else {
            idx = tsim_plan_add(out, e, g, s->next_slot[g], c);
            if (idx < 0)
                return -1;
            s->next_slot[g]++;
            s->helper_replica[g] = idx;
        }
        s->piece_replica[npieces] = idx;
        s->piece_tokens[npieces] = c;
        npieces++;
        rem -= c;
    }
    return npieces;
}

static int llep_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    llep_state *s = state;
    const int R = s->R, E = s->E;
    tsim_plan_reset(out);
    out->slot_limited = false;
    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INPUT, "llep: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (out->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "llep: plan rows have %d ranks, expected %d", out->ranks, R);

    tsim_record_expert_totals(rec, s->tpe);
    memset(s->load0, 0, sizeof *s->load0 * (size_t)R);
    int64_t total = 0;
    for (int e = 0; e < E; e++) {
        s->load0[s->home[e]] += s->tpe[e];
        total += s->tpe[e];
    }
    if (!tsim_llep_active(s->load0, R, s->opt.threshold)) {
        if (s->opt.threshold > 0.0)
            out->notes |= TSIM_NOTE_THRESHOLD_SKIP;
        return TSIM_OK;
    }
    if (R == 1)
        return TSIM_OK; /* no other rank: every token stays home */
    const int64_t cap = tsim_llep_capacity(total, R, s->opt.alpha);

    for (int r = 0; r < R; r++) {
        s->pending[r] = s->load0[r];
        s->assigned[r] = 0;
        s->next_slot[r] = 0;
        s->helper_replica[r] = -1;
        s->rank_order[r] = r;
        s->rank_pos[r] = r;
    }
    tsim_sort_stable_by_key(s->rank_order, R, s->load0, false, s->sort_tmp);
    for (int p = 0; p < R; p++)
        s->rank_pos[s->rank_order[p]] = p;

    int nexp = 0;
    for (int e = 0; e < E; e++)
        if (s->tpe[e] > 0)
            s->expert_order[nexp++] = e;
    tsim_sort_stable_by_key(s->expert_order, nexp, s->tpe, true, s->sort_tmp);

    for (int i = 0; i < nexp; i++) {
        const int e = s->expert_order[i], n = s->home[e];
        const int64_t t = s->tpe[e];
        s->pending[n] -= t;
        int64_t room = cap - eff(s, n);
        int64_t kept = room >= t ? t : (room > 0 ? room : 0);
        s->assigned[n] += kept;
        reposition(s, n);
        if (kept == t)
            continue;
        int npieces = spill_expert(s, e, n, t - kept, cap, out);
        if (npieces < 0)
            return tsim_error_set(err, TSIM_E_INTERNAL, "llep: out of memory growing the plan");
        /* Global source order: the native keeps the first range, each helper
         * takes the next range in assignment order (rows read after every add,
         * since the plan may have moved while growing). */
        int r = 0;
        int64_t used = 0;
        take_range(rec, e, kept, &r, &used, NULL);
        for (int p = 0; p < npieces; p++) {
            int idx = s->piece_replica[p];
            take_range(rec, e, s->piece_tokens[p], &r, &used, tsim_plan_alloc_row(out, idx));
            s->helper_replica[out->replicas[idx].guest] = -1;
        }
    }
    return TSIM_OK;
}

static void llep_free(void *state)
{
    llep_state *s = state;
    if (!s)
        return;
    free(s->home);
    free(s->tpe);
    free(s->load0);
    free(s->pending);
    free(s->assigned);
    free(s->expert_order);
    free(s->sort_tmp);
    free(s->rank_order);
    free(s->rank_pos);
    free(s->next_slot);
    free(s->helper_replica);
    free(s->piece_replica);
    free(s->piece_tokens);
    free(s);
}

static int llep_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                       const void *own, tsim_error *err)
{
    *state = NULL;
    (void)common;
    const tsim_llep_options *o = own;
    if (!(o->alpha > 0.0))
        return tsim_error_set(err, TSIM_E_INPUT, "llep: alpha must be positive, got %g", o->alpha);
    if (o->min_chunk < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "llep: min chunk must be non-negative, got %lld",
                              (long long)o->min_chunk);
    llep_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "llep: out of memory");
    const int R = topo->ranks, E = topo->experts;
    const size_t nE = (size_t)E, nR = (size_t)R;
    s->R = R;
    s->E = E;
    s->opt = *o;
    s->home = malloc(sizeof *s->home * nE);
    s->tpe = malloc(sizeof *s->tpe * nE);
    s->load0 = malloc(sizeof *s->load0 * nR);
    s->pending = malloc(sizeof *s->pending * nR);
    s->assigned = malloc(sizeof *s->assigned * nR);
    s->expert_order = malloc(sizeof *s->expert_order * nE);
    s->sort_tmp = malloc(sizeof *s->sort_tmp * (nE > nR ? nE : nR));
    s->rank_order = malloc(sizeof *s->rank_order * nR);
    s->rank_pos = malloc(sizeof *s->rank_pos * nR);
    s->next_slot = malloc(sizeof *s->next_slot * nR);
    s->helper_replica = malloc(sizeof *s->helper_replica * nR);
    s->piece_replica = malloc(sizeof *s->piece_replica * (nR + 1));
    s->piece_tokens = malloc(sizeof *s->piece_tokens * (nR + 1));
    if (!s->home || !s->tpe || !s->load0 || !s->pending || !s->assigned || !s->expert_order || !s->sort_tmp ||
        !s->rank_order || !s->rank_pos || !s->next_slot || !s->helper_replica || !s->piece_replica ||
        !s->piece_tokens) {
        llep_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "llep: out of memory for %d ranks and %d experts", R, E);
    }
    memcpy(s->home, topo->home, sizeof *s->home * nE);
    *state = s;
    return TSIM_OK;
}

/* --llep-* options: parsed, defaulted and listed in --help from here. */
static const tsim_option_spec llep_options[] = {
    {.name = "llep-alpha", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_llep_options, alpha), .lo = 1e-09, .hi = 1000000000.0, .arg = "X", .def = "1.0", .help = "LLEP capacity factor"},
    {.name = "llep-min-chunk", .type = TSIM_OPTION_INT64, .offset = offsetof(tsim_llep_options, min_chunk), .lo = 0, .hi = 1125899906842624.0, .arg = "N", .def = "1024", .help = "LLEP minimum spill piece in tokens"},
    {.name = "llep-threshold", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_llep_options, threshold), .lo = 0, .hi = 1000000000.0, .arg = "X", .def = "0", .help = "LLEP activation threshold max/mean, 0 = off"},
    {0},
};

const tsim_planner_desc tsim_planner_llep = {
    .name = "llep",
    .source = "LLEP, Nguyen et al., ICML 2026",
    .options_size = sizeof(tsim_llep_options),
    .options = llep_options,
    .summary = "LLEP: spills hot experts in chunks to the least-loaded ranks under a capacity (no slot limit)",
    .init = llep_init,
    .plan = llep_plan,
    .free = llep_free,
};
