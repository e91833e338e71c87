#include "evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

const char *const tsim_metric_names[TSIM_M_COUNT] = {
    "rho_before", "rho_after", "balancedness_before", "balancedness_after", "improve_pp", "intra", "inter",
    "weighted",
    "offloaded", "traffic_inter_before", "traffic_inter_after", "plan_ns", "step_ms", "speedup",
    "rehomed_intra", "rehomed_inter", "excess_imbalance", "excess_cost", "dropped_before", "dropped_after", "load_mean", "load_max_before",
    "load_max_after",
};

int tsim_evaluator_init(tsim_evaluator *ev, const tsim_topology *topo, tsim_error *err)
{
    memset(ev, 0, sizeof *ev);
    ev->topo = topo;
    size_t R = (size_t)topo->ranks, E = (size_t)topo->experts, K = (size_t)(topo->slots > 0 ? topo->slots : 1);
    /* A rank with a placement has up to hpr + K slots (all guests, no natives). */
    size_t slots_max = (size_t)topo->experts_per_rank + K;
    ev->load_before = malloc(sizeof *ev->load_before * R);
    ev->load_after = malloc(sizeof *ev->load_after * R);
    ev->sent = calloc(R * E, sizeof *ev->sent);
    ev->slot_owner = malloc(sizeof *ev->slot_owner * R * slots_max);
    ev->pair_cap = R * K + 16;
    ev->pair_keys = malloc(sizeof *ev->pair_keys * ev->pair_cap);
    ev->guest_tokens = malloc(sizeof *ev->guest_tokens * R);
    ev->guest_intra = malloc(sizeof *ev->guest_intra * R);
    ev->guest_inter = malloc(sizeof *ev->guest_inter * R);
    ev->natives = malloc(sizeof *ev->natives * R);
    ev->guests = malloc(sizeof *ev->guests * R);
    ev->home_used = topo->home;
    if (!ev->natives || !ev->guests || !ev->guest_tokens || !ev->guest_intra || !ev->guest_inter || !ev->load_before || !ev->load_after || !ev->sent || !ev->slot_owner || !ev->pair_keys) {
        tsim_evaluator_free(ev);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the evaluator");
    }
    return TSIM_OK;
}

void tsim_evaluator_free(tsim_evaluator *ev)
{
    free(ev->load_before);
    free(ev->load_after);
    free(ev->sent);
    free(ev->slot_owner);
    free(ev->pair_keys);
    free(ev->guest_tokens);
    free(ev->guest_intra);
    free(ev->guest_inter);
    free(ev->natives);
    free(ev->guests);
    memset(ev, 0, sizeof *ev);
}

void tsim_native_loads(const tsim_topology *topo, const tsim_record *rec, int64_t *load)
{
    const int R = topo->ranks, E = topo->experts;
    memset(load, 0, sizeof *load * (size_t)R);
    if (E == 0)
        return;
    /* Sums over runs of experts with the same home (home maps are mostly
     * contiguous) in a register: adding each count to load[] in memory
     * made every add wait for the one before it. */
    for (int r = 0; r < R; r++) {
        const int64_t *row = rec->counts + (size_t)r * (size_t)E;
        int32_t home = topo->home[0];
        int64_t run = 0;
        for (int e = 0; e < E; e++) {
            if (topo->home[e] != home) {
                load[home] += run;
                run = 0;
                home = topo->home[e];
            }
            run += row[e];
        }
        load[home] += run;
    }
}

double tsim_imbalance(const int64_t *load, int ranks)
{
    int64_t total = 0, max = 0;
    for (int r = 0; r < ranks; r++) {
        total += load[r];
        if (load[r] > max)
            max = load[r];
    }
    if (total == 0)
        return 0.0;
    double mean = (double)total / (double)ranks;
    return ((double)max - mean) / mean;
}

double tsim_balancedness(const int64_t *load, int ranks)
{
    int64_t total = 0, max = 0;
    for (int r = 0; r < ranks; r++) {
        total += load[r];
        if (load[r] > max)
            max = load[r];
    }
    if (max == 0)
        return 0.0;
    return (double)total / (double)ranks / (double)max;
}

int64_t tsim_capacity(int64_t total, int ranks, double capacity_factor)
{
    /* long double keeps totals up to 2^63 exact in the product */
    return (int64_t)floorl((long double)capacity_factor * (long double)total / (long double)ranks);
}

int64_t tsim_dropped(const int64_t *load, int ranks, double capacity_factor)
{
    if (capacity_factor <= 0)
        return 0;
    int64_t total = 0;
    for (int r = 0; r < ranks; r++)
        total += load[r];
    const int64_t cap = tsim_capacity(total, ranks, capacity_factor);
    int64_t dropped = 0;
    for (int r = 0; r < ranks; r++)
        if (load[r] > cap)
            dropped += load[r] - cap;
    return dropped;
}

/* Largest load and the mean over ranks. */
static void load_extremes(const int64_t *load, int ranks, double *mean, double *max)
{
    int64_t total = 0, top = 0;
    for (int r = 0; r < ranks; r++) {
        total += load[r];
        if (load[r] > top)
            top = load[r];
    }
    *mean = (double)total / (double)ranks;
    *max = (double)top;
}

#define REJECT(...)                                                                                         \
    do {                                                                                                    \
        tsim_error_set(err, TSIM_E_INTERNAL, __VA_ARGS__);                                                 \
        tsim_error_prefix(err, "planner '%s', record %lld (microbatch %lld, layer %lld): invalid plan", label, \
                          (long long)rec->index, (long long)rec->microbatch, (long long)rec->layer);       \
        rc = TSIM_E_INTERNAL;                                                                               \
        goto done;                                                                                          \
    } while (0)

int tsim_evaluate(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, double lambda_eval,
                  const char *label, tsim_metrics *out, tsim_error *err)
{
    return tsim_evaluate_placed(ev, rec, plan, NULL, lambda_eval, label, out, err);
}

/* Rules of eplb.md 1.3 that precede the token rules: the placement itself,
 * natives + guests per rank. Fills ev->natives and ev->guests. */
static int check_placement(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, const char *label,
                           tsim_error *err)
{
    const tsim_topology *t = ev->topo;
    const int R = t->ranks, E = t->experts, limit = t->experts_per_rank + t->slots;
    int rc = TSIM_OK;
    if (plan->placement_experts != E)
        REJECT("the placement has %d entries, expected one per expert (%d)", plan->placement_experts, E);
    memset(ev->natives, 0, sizeof *ev->natives * (size_t)R);
    memset(ev->guests, 0, sizeof *ev->guests * (size_t)R);
    for (int e = 0; e < E; e++) {
        if (plan->placement[e] < 0 || plan->placement[e] >= R)
            REJECT("the placement puts expert %d on rank %d, not in 0..%d", e, plan->placement[e], R - 1);
        ev->natives[plan->placement[e]]++;
    }
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rep = &plan->replicas[i];
        if (rep->expert < 0 || rep->expert >= E)
            REJECT("replica %d names expert %d, not in 0..%d", i, rep->expert, E - 1);
        if (rep->guest < 0 || rep->guest >= R)
            REJECT("replica %d of expert %d names guest rank %d, not in 0..%d", i, rep->expert, rep->guest, R - 1);
        ev->guests[rep->guest]++;
    }
    if (plan->slot_limited)
        for (int r = 0; r < R; r++)
            if (ev->natives[r] + ev->guests[r] > limit)
                REJECT("rank %d hosts %d natives + %d guests > hpr + K = %d", r, ev->natives[r], ev->guests[r],
                       limit);
done:
    return rc;
}

/* What one evaluation needs besides the evaluator's buffers. */
typedef struct {
    const tsim_record *rec;
    const tsim_plan *plan;
    const char *label;
    const int32_t *home_of; /* home' of every expert: the placement, or the static map */
    bool placed;
    int slot_stride;        /* slots per rank: K, or hpr + K with a placement */
} eval_case;

/* The checks: every rule of a valid plan, in the order they are reported.
 * Moves each replica's tokens from home' to the guest in load_after and
 * counts them in sent and guest_tokens; *offloaded gets their total. */
static int check_replicas(tsim_evaluator *ev, const eval_case *c, int64_t *offloaded, tsim_error *err)
{
    const tsim_topology *t = ev->topo;
    const tsim_record *rec = c->rec;
    const tsim_plan *plan = c->plan;
    const char *label = c->label;
    const int R = t->ranks, E = t->experts, K = t->slots;
    int rc = TSIM_OK;
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rep = &plan->replicas[i];
        if (rep->expert < 0 || rep->expert >= E)
            REJECT("replica %d names expert %d, not in 0..%d", i, rep->expert, E - 1);
        if (rep->guest < 0 || rep->guest >= R)
            REJECT("replica %d of expert %d names guest rank %d, not in 0..%d", i, rep->expert, rep->guest, R - 1);
        int home = c->home_of[rep->expert];
        if (rep->guest == home)
            REJECT("replica %d puts expert %d on its home rank %d", i, rep->expert, home);
        if (rep->slot < 0)
            REJECT("replica %d of expert %d on rank %d has negative slot %d", i, rep->expert, rep->guest, rep->slot);
        if (plan->slot_limited) {
            if (!c->placed && rep->slot >= K)
                REJECT("replica %d of expert %d on rank %d uses slot %d, but K = %d", i, rep->expert, rep->guest,
                       rep->slot, K);
            if (c->placed && rep->slot >= c->slot_stride - ev->natives[rep->guest])
                REJECT("replica %d of expert %d on rank %d uses slot %d, but hpr + K - natives = %d", i, rep->expert,
                       rep->guest, rep->slot, c->slot_stride - ev->natives[rep->guest]);
            int32_t *owner = &ev->slot_owner[(size_t)rep->guest * (size_t)c->slot_stride + (size_t)rep->slot];
            if (*owner >= 0)
                REJECT("slot %d of rank %d holds both expert %d and expert %d", rep->slot, rep->guest, *owner,
                       rep->expert);
            *owner = rep->expert;
        }
        ev->pair_keys[i] = (int64_t)rep->guest * E + rep->expert;

        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        for (int r = 0; r < R; r++) {
            int64_t a = row[r];
            if (a == 0)
                continue;
            if (a < 0)
                REJECT("source rank %d sends %lld tokens (negative) to expert %d on rank %d", r, (long long)a,
                       rep->expert, rep->guest);
            int64_t *s = &ev->sent[(size_t)r * (size_t)E + (size_t)rep->expert];
            *s += a;
            if (*s > tsim_count(rec, r, rep->expert))
                REJECT("source rank %d sends %lld tokens of expert %d to replicas but has only %lld", r,
                       (long long)*s, rep->expert, (long long)tsim_count(rec, r, rep->expert));
            ev->load_after[home] -= a;
            ev->load_after[rep->guest] += a;
            ev->guest_tokens[rep->guest] += a;
            *offloaded += a;
        }
    }

    /* No expert twice on the same rank. */
    tsim_sort_i64(ev->pair_keys, (size_t)plan->count); /* no allocation per record */
    for (int i = 1; i < plan->count; i++)
        if (ev->pair_keys[i] == ev->pair_keys[i - 1])
            REJECT("expert %lld has two replicas on rank %lld", (long long)(ev->pair_keys[i] % E),
                   (long long)(ev->pair_keys[i] / E));

    int64_t total_before = 0, total_after = 0;
    for (int r = 0; r < R; r++) {
        total_before += ev->load_before[r];
        total_after += ev->load_after[r];
        if (ev->load_after[r] < 0)
            REJECT("rank %d ends with negative load %lld", r, (long long)ev->load_after[r]);
    }
    if (total_before != total_after)
        REJECT("tokens not conserved: %lld before, %lld after", (long long)total_before, (long long)total_after);
done:
    return rc;
}

/* Loads before the plan, and after re-homing (the replicas move more later). */
static void native_loads_both(tsim_evaluator *ev, const eval_case *c)
{
    const tsim_topology *t = ev->topo;
    const int R = t->ranks, E = t->experts;
    tsim_native_loads(t, c->rec, ev->load_before);
    if (!c->placed) {
        memcpy(ev->load_after, ev->load_before, sizeof *ev->load_after * (size_t)R);
        return;
    }
    memset(ev->load_after, 0, sizeof *ev->load_after * (size_t)R);
    for (int r = 0; r < R; r++) {
        const int64_t *row = c->rec->counts + (size_t)r * (size_t)E;
        for (int e = 0; e < E; e++)
            ev->load_after[c->home_of[e]] += row[e];
    }
}

/* Replica copies within and across nodes (per guest rank too). */
static void count_transfers(tsim_evaluator *ev, const eval_case *c, int64_t *intra, int64_t *inter)
{
    const tsim_topology *t = ev->topo;
    for (int i = 0; i < c->plan->count; i++) {
        const tsim_replica *rep = &c->plan->replicas[i];
        if (tsim_same_node(t, c->home_of[rep->expert], rep->guest)) {
            (*intra)++;
            ev->guest_intra[rep->guest]++;
        } else {
            (*inter)++;
            ev->guest_inter[rep->guest]++;
        }
    }
}

/* Token traffic across nodes: source node against the node that computes. */
static void count_traffic(const tsim_evaluator *ev, const eval_case *c, int64_t *before, int64_t *after)
{
    const tsim_topology *t = ev->topo;
    const int R = t->ranks, E = t->experts;
    for (int r = 0; r < R; r++) {
        const int64_t *row = c->rec->counts + (size_t)r * (size_t)E;
        const int64_t *sent = ev->sent + (size_t)r * (size_t)E;
        for (int e = 0; e < E; e++) {
            if (!tsim_same_node(t, r, t->home[e]))
                *before += row[e];
            if (!tsim_same_node(t, r, c->home_of[e]))
                *after += row[e] - sent[e];
        }
    }
    for (int i = 0; i < c->plan->count; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(c->plan, i);
        int g = c->plan->replicas[i].guest;
        for (int r = 0; r < R; r++)
            if (row[r] && !tsim_same_node(t, r, g))
                *after += row[r];
    }
}

/* Weight moves since this planner's previous record of the layer. */
static void count_rehomed(const tsim_topology *t, const eval_case *c, const int32_t *previous, int64_t *intra,
                          int64_t *inter)
{
    if (!c->placed && !previous)
        return;
    const int32_t *before = previous ? previous : t->home;
    for (int e = 0; e < t->experts; e++) {
        if (before[e] == c->home_of[e])
            continue;
        if (tsim_same_node(t, before[e], c->home_of[e]))
            (*intra)++;
        else
            (*inter)++;
    }
}

/* Clears the evaluator's per-record buffers for this plan. */
static int evaluation_reset(tsim_evaluator *ev, const eval_case *c, tsim_error *err)
{
    const int R = ev->topo->ranks;
    memset(ev->guest_tokens, 0, sizeof *ev->guest_tokens * (size_t)R);
    memset(ev->guest_intra, 0, sizeof *ev->guest_intra * (size_t)R);
    memset(ev->guest_inter, 0, sizeof *ev->guest_inter * (size_t)R);
    if (c->plan->slot_limited)
        for (size_t i = 0; i < (size_t)R * (size_t)(c->slot_stride > 0 ? c->slot_stride : 1); i++)
            ev->slot_owner[i] = -1;
    if ((size_t)c->plan->count > ev->pair_cap) {
        /* Only plans without a slot limit (LLEP) can outgrow R*K pairs. */
        size_t cap = (size_t)c->plan->count * 2;
        int64_t *keys = realloc(ev->pair_keys, sizeof *keys * cap);
        if (!keys)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory in the evaluator");
        ev->pair_keys = keys;
        ev->pair_cap = cap;
    }
    return TSIM_OK;
}

int tsim_evaluate_placed(tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan, const int32_t *previous,
                         double lambda_eval, const char *label, tsim_metrics *out, tsim_error *err)
{
    const tsim_topology *t = ev->topo;
    const int R = t->ranks, E = t->experts;
    memset(out, 0, sizeof *out);
    const bool placed = tsim_plan_has_placement(plan);
    const eval_case c = {
        .rec = rec,
        .plan = plan,
        .label = label ? label : "?",
        .home_of = placed ? plan->placement : t->home,
        .placed = placed,
        /* with a placement the bound is hpr + K - natives of the guest rank */
        .slot_stride = placed ? t->experts_per_rank + t->slots : t->slots,
    };
    ev->home_used = t->home;

    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INTERNAL, "record %lld is %d x %d, topology is %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (plan->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "planner '%s': plan rows have %d ranks, expected %d", c.label,
                              plan->ranks, R);
    int rc;
    if (placed && (rc = check_placement(ev, rec, plan, c.label, err)))
        return rc;
    native_loads_both(ev, &c);
    if (placed)
        ev->home_used = plan->placement;
    if ((rc = evaluation_reset(ev, &c, err)))
        return rc;

    int64_t offloaded = 0;
    rc = check_replicas(ev, &c, &offloaded, err);
    if (rc == TSIM_OK) {
        int64_t intra = 0, inter = 0, traffic_before = 0, traffic_after = 0, rehomed_intra = 0, rehomed_inter = 0;
        count_transfers(ev, &c, &intra, &inter);
        count_traffic(ev, &c, &traffic_before, &traffic_after);
        count_rehomed(t, &c, previous, &rehomed_intra, &rehomed_inter);
        out->v[TSIM_M_RHO_BEFORE] = tsim_imbalance(ev->load_before, R);
        out->v[TSIM_M_RHO_AFTER] = tsim_imbalance(ev->load_after, R);
        out->v[TSIM_M_BALANCEDNESS_BEFORE] = tsim_balancedness(ev->load_before, R);
        out->v[TSIM_M_BALANCEDNESS_AFTER] = tsim_balancedness(ev->load_after, R);
        out->v[TSIM_M_DROPPED_BEFORE] = (double)tsim_dropped(ev->load_before, R, ev->capacity_factor);
        out->v[TSIM_M_DROPPED_AFTER] = (double)tsim_dropped(ev->load_after, R, ev->capacity_factor);
        load_extremes(ev->load_before, R, &out->v[TSIM_M_LOAD_MEAN], &out->v[TSIM_M_LOAD_MAX_BEFORE]);
        double mean_after;
        load_extremes(ev->load_after, R, &mean_after, &out->v[TSIM_M_LOAD_MAX_AFTER]);
        out->v[TSIM_M_IMPROVE_PP] = 100.0 * (out->v[TSIM_M_RHO_AFTER] - out->v[TSIM_M_RHO_BEFORE]);
        out->v[TSIM_M_INTRA] = (double)intra;
        out->v[TSIM_M_INTER] = (double)inter;
        out->v[TSIM_M_WEIGHTED] = (double)intra + lambda_eval * (double)inter;
        out->v[TSIM_M_OFFLOADED] = (double)offloaded;
        out->v[TSIM_M_TRAFFIC_INTER_BEFORE] = (double)traffic_before;
        out->v[TSIM_M_TRAFFIC_INTER_AFTER] = (double)traffic_after;
        out->v[TSIM_M_REHOMED_INTRA] = (double)rehomed_intra;
        out->v[TSIM_M_REHOMED_INTER] = (double)rehomed_inter;
    }

    /* Leave the sent matrix zeroed for the next record: only touched cells. */
    for (int i = 0; i < plan->count; i++) {
        int e = plan->replicas[i].expert;
        if (e < 0 || e >= E)
            continue;
        for (int r = 0; r < R; r++)
            ev->sent[(size_t)r * (size_t)E + (size_t)e] = 0;
    }
    return rc;
}

int tsim_break_even(double intra_a, double inter_a, double intra_b, double inter_b, double *lambda_star)
{
    double den = inter_a - inter_b;
    if (den == 0.0)
        return -1;
    *lambda_star = (intra_b - intra_a) / den;
    return 0;
}
