/* `moonep` (moonep.md section 3): caps, a balancer that fills the deepest
 * deficit from the largest surplus in one step, a split of each sender's
 * quotas over its heaviest experts, and one cut of each expert's tokens in
 * source order against segments in rank order. Exact 64-bit integers; ties to
 * the lowest index everywhere (the published argmax/argmin). */
#include "moonep.h"

#include <stdlib.h>
#include <string.h>

struct tsim_moonep {
    int R, E, hpr, slots;
    tsim_moonep_options opt;
    int32_t *home;         /* [E] copy of the home map */
    int32_t *rank_experts; /* [R * hpr] L_h: each rank's home experts, ascending */
    int64_t *tpe;          /* [E] */
    int64_t *load0;        /* [R] native loads */
    int64_t *bal;          /* [R] balance against the cap */
    int64_t *moved;        /* [R] load change the quotas make (check of 6) */
    int *q_from, *q_to;    /* [R] quotas in balancer order */
    int64_t *q_amt;        /* [R] */
    int *recv;             /* [R] one sender's receivers */
    int64_t *recv_left;    /* [R] their quotas not yet filled */
    bool *sender_done;     /* [R] */
    int64_t *rem;          /* [hpr] tokens of each home expert not yet given away */
    int64_t *amt;          /* [hpr * R] tokens of local expert j computed on rank d */
    int *replica_of;       /* [hpr * R] plan index of the replica (j, d) */
    int *order;            /* [hpr] one guest's experts in slot order */
};

void tsim_moonep_options_default(tsim_moonep_options *opt)
{
    opt->slot_order = TSIM_MOONEP_SLOTS_EXPERT;
}

int tsim_moonep_parse_slot_order(const char *text, int *out, tsim_error *err)
{
    if (strcmp(text, "expert") == 0)
        *out = TSIM_MOONEP_SLOTS_EXPERT;
    else if (strcmp(text, "tokens") == 0)
        *out = TSIM_MOONEP_SLOTS_TOKENS;
    else
        return tsim_error_set(err, TSIM_E_INPUT, "moonep: unknown --moonep-slot-order '%s' (expert, tokens)", text);
    return TSIM_OK;
}

int tsim_moonep_needed_slots(const tsim_topology *topo)
{
    return topo->experts_per_rank;
}

void tsim_moonep_free(tsim_moonep *m)
{
    if (!m)
        return;
    free(m->home);
    free(m->rank_experts);
    free(m->tpe);
    free(m->load0);
    free(m->bal);
    free(m->moved);
    free(m->q_from);
    free(m->q_to);
    free(m->q_amt);
    free(m->recv);
    free(m->recv_left);
    free(m->sender_done);
    free(m->rem);
    free(m->amt);
    free(m->replica_of);
    free(m->order);
    free(m);
}

int tsim_moonep_init(tsim_moonep **out, const tsim_topology *topo, int slots, const tsim_moonep_options *opt,
                     tsim_error *err)
{
    *out = NULL;
    const int hpr = topo->experts_per_rank;
    if (opt->slot_order != TSIM_MOONEP_SLOTS_EXPERT && opt->slot_order != TSIM_MOONEP_SLOTS_TOKENS)
        return tsim_error_set(err, TSIM_E_INPUT, "moonep: unknown slot order %d (expert, tokens)", opt->slot_order);
    /* moonep.md 4: a guest may receive every expert of one home rank. */
    if (slots < hpr)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "moonep: needs --slots >= E/R = %d (one prefetch slot per home expert: a guest may "
                              "receive every expert of one home rank); got --slots %d",
                              hpr, slots);
    tsim_moonep *m = calloc(1, sizeof *m);
    if (!m)
        return tsim_error_set(err, TSIM_E_INTERNAL, "moonep: out of memory");
    const int R = topo->ranks, E = topo->experts;
    const size_t nR = (size_t)R, nE = (size_t)E, nH = (size_t)hpr;
    m->R = R;
    m->E = E;
    m->hpr = hpr;
    m->slots = slots;
    m->opt = *opt;
    m->home = malloc(sizeof *m->home * nE);
    m->rank_experts = malloc(sizeof *m->rank_experts * nE);
    m->tpe = malloc(sizeof *m->tpe * nE);
    m->load0 = malloc(sizeof *m->load0 * nR);
    m->bal = malloc(sizeof *m->bal * nR);
    m->moved = malloc(sizeof *m->moved * nR);
    m->q_from = malloc(sizeof *m->q_from * nR);
    m->q_to = malloc(sizeof *m->q_to * nR);
    m->q_amt = malloc(sizeof *m->q_amt * nR);
    m->recv = malloc(sizeof *m->recv * nR);
    m->recv_left = malloc(sizeof *m->recv_left * nR);
    m->sender_done = malloc(sizeof *m->sender_done * nR);
    m->rem = malloc(sizeof *m->rem * nH);
    m->amt = calloc(nH * nR, sizeof *m->amt);
    m->replica_of = malloc(sizeof *m->replica_of * nH * nR);
    m->order = malloc(sizeof *m->order * nH);
    if (!m->home || !m->rank_experts || !m->tpe || !m->load0 || !m->bal || !m->moved || !m->q_from || !m->q_to || !m->q_amt ||
        !m->recv || !m->recv_left || !m->sender_done || !m->rem || !m->amt || !m->replica_of || !m->order) {
        tsim_moonep_free(m);
        return tsim_error_set(err, TSIM_E_INTERNAL, "moonep: out of memory for %d ranks and %d experts", R, E);
    }
    memcpy(m->home, topo->home, sizeof *m->home * nE);
    memcpy(m->rank_experts, topo->rank_experts, sizeof *m->rank_experts * nE);
    *out = m;
    return TSIM_OK;
}

static inline int64_t cap_of(int64_t total, int R, int r)
{
    return total / R + (r < total % R ? 1 : 0);
}

/* 3.2: the largest balance fills the smallest in one step, lowest index on
 * ties. Returns the number of quotas. */
static int balance(tsim_moonep *m, int64_t total)
{
    const int R = m->R;
    for (int r = 0; r < R; r++)
        m->bal[r] = m->load0[r] - cap_of(total, R, r);
    int nq = 0;
    for (;;) {
        int h = 0, u = 0;
        for (int r = 1; r < R; r++) {
            if (m->bal[r] > m->bal[h])
                h = r;
            if (m->bal[r] < m->bal[u])
                u = r;
        }
        if (m->bal[h] <= 0)
            break;
        const int64_t need = -m->bal[u];
        m->q_from[nq] = h;
        m->q_to[nq] = u;
        m->q_amt[nq] = need;
        nq++;
        m->bal[h] -= need;
        m->bal[u] = 0;
    }
    return nq;
}

/* Takes the next n tokens of expert e in source order from the cursor
 * (*r, *used), adding them to row (NULL: the home keeps them). */
static void take_range(const tsim_record *rec, int e, int64_t n, int *r, int64_t *used, int64_t *row)
{
    while (n > 0 && *r < rec->ranks) {
        const int64_t left = tsim_count(rec, *r, e) - *used;
        if (left <= 0) {
            (*r)++;
            *used = 0;
            continue;
        }
        const int64_t take = left < n ? left : n;
        if (row)
            row[*r] += take;
        *used += take;
        n -= take;
    }
}

/* 3.3 for sender h with nrecv receivers: fills amt[j][d]. */
static int split_sender(tsim_moonep *m, int h, int nrecv, tsim_error *err)
{
    const int R = m->R, hpr = m->hpr;
    const int32_t *L = m->rank_experts + (size_t)h * (size_t)hpr;
    for (int j = 0; j < hpr; j++)
        m->rem[j] = m->tpe[L[j]];
    for (;;) {
        int best = 0;
        for (int i = 1; i < nrecv; i++)
            if (m->recv_left[i] > m->recv_left[best] ||
                (m->recv_left[i] == m->recv_left[best] && m->recv[i] < m->recv[best]))
                best = i;
        if (m->recv_left[best] <= 0)
            return TSIM_OK;
        int j = 0;
        for (int k = 1; k < hpr; k++)
            if (m->rem[k] > m->rem[j])
                j = k;
        if (m->rem[j] <= 0)
            return tsim_error_set(err, TSIM_E_INTERNAL, "moonep: rank %d's quotas exceed its native load", h);
        const int64_t t = m->rem[j] < m->recv_left[best] ? m->rem[j] : m->recv_left[best];
        m->amt[(size_t)j * (size_t)R + (size_t)m->recv[best]] += t;
        m->rem[j] -= t;
        m->recv_left[best] -= t;
    }
}

/* 3.5: guest d's replicas (all of sender h's experts) with their slots. */
static int add_guest_replicas(tsim_moonep *m, int h, int d, tsim_plan *plan)
{
    const int R = m->R, hpr = m->hpr;
    const int32_t *L = m->rank_experts + (size_t)h * (size_t)hpr;
    int n = 0;
    for (int j = 0; j < hpr; j++)
        if (m->amt[(size_t)j * (size_t)R + (size_t)d] > 0)
            m->order[n++] = j;
    if (m->opt.slot_order == TSIM_MOONEP_SLOTS_TOKENS) {
        /* Descending tokens, ties to the higher expert (L is ascending). */
        for (int a = 1; a < n; a++) {
            const int j = m->order[a];
            const int64_t v = m->amt[(size_t)j * (size_t)R + (size_t)d];
            int b = a;
            while (b > 0) {
                const int pj = m->order[b - 1];
                const int64_t pv = m->amt[(size_t)pj * (size_t)R + (size_t)d];
                if (pv > v || (pv == v && pj > j))
                    break;
                m->order[b] = pj;
                b--;
            }
            m->order[b] = j;
        }
    }
    for (int k = 0; k < n; k++) {
        const int j = m->order[k];
        const size_t cell = (size_t)j * (size_t)R + (size_t)d;
        const int idx = tsim_plan_add(plan, L[j], d, k, m->amt[cell]);
        if (idx < 0)
            return -1;
        m->replica_of[cell] = idx;
    }
    return 0;
}

/* 3.4: each moved expert's tokens in source order, cut into segments in rank
 * order, the home's kept segment at its own index. */
static void cut_sources(tsim_moonep *m, const tsim_record *rec, int h, int nrecv, tsim_plan *plan)
{
    const int R = m->R, hpr = m->hpr;
    const int32_t *L = m->rank_experts + (size_t)h * (size_t)hpr;
    for (int j = 0; j < hpr; j++) {
        const int e = L[j];
        if (m->rem[j] == m->tpe[e])
            continue; /* nothing moved */
        int r = 0;
        int64_t used = 0;
        bool home_done = false;
        for (int i = 0; i < nrecv; i++) {
            const int d = m->recv[i];
            const size_t cell = (size_t)j * (size_t)R + (size_t)d;
            if (!home_done && d > h) {
                take_range(rec, e, m->rem[j], &r, &used, NULL);
                home_done = true;
            }
            if (m->amt[cell] > 0)
                take_range(rec, e, m->amt[cell], &r, &used, tsim_plan_alloc_row(plan, m->replica_of[cell]));
        }
    }
}

/* 3.3-3.5 for one sender: its quotas are those of q_* naming it. */
static int plan_sender(tsim_moonep *m, const tsim_record *rec, int h, int nq, tsim_plan *plan, tsim_error *err)
{
    const int R = m->R, hpr = m->hpr;
    int nrecv = 0;
    for (int i = 0; i < nq; i++)
        if (m->q_from[i] == h) {
            m->recv[nrecv] = m->q_to[i];
            m->recv_left[nrecv] = m->q_amt[i];
            nrecv++;
        }
    int rc = split_sender(m, h, nrecv, err);
    if (rc != TSIM_OK)
        return rc;
    /* Receivers in rank order: the segments of 3.4 (quotas are spent now). */
    for (int a = 1; a < nrecv; a++) {
        const int d = m->recv[a];
        int b = a;
        while (b > 0 && m->recv[b - 1] > d) {
            m->recv[b] = m->recv[b - 1];
            b--;
        }
        m->recv[b] = d;
    }
    for (int i = 0; i < nrecv; i++)
        if (add_guest_replicas(m, h, m->recv[i], plan) < 0)
            return tsim_error_set(err, TSIM_E_INTERNAL, "moonep: out of memory growing the plan");
    cut_sources(m, rec, h, nrecv, plan);
    for (int i = 0; i < nrecv; i++)
        for (int j = 0; j < hpr; j++)
            m->amt[(size_t)j * (size_t)R + (size_t)m->recv[i]] = 0;
    return TSIM_OK;
}

/* Section 6: every rank computes exactly its cap. A miss is a planner bug. */
static int check_caps(tsim_moonep *m, const tsim_record *rec, int nq, int64_t total, tsim_error *err)
{
    const int R = m->R;
    memset(m->moved, 0, sizeof *m->moved * (size_t)R);
    for (int i = 0; i < nq; i++) {
        m->moved[m->q_from[i]] -= m->q_amt[i];
        m->moved[m->q_to[i]] += m->q_amt[i];
    }
    for (int r = 0; r < R; r++) {
        const int64_t load = m->load0[r] + m->moved[r], cap = cap_of(total, R, r);
        if (load != cap)
            return tsim_error_set(err, TSIM_E_INTERNAL,
                                  "moonep: record %lld (microbatch %lld, layer %lld): rank %d computes %lld tokens, "
                                  "cap %lld",
                                  (long long)rec->index, (long long)rec->microbatch, (long long)rec->layer, r,
                                  (long long)load, (long long)cap);
    }
    return TSIM_OK;
}

int tsim_moonep_plan(tsim_moonep *m, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    const int R = m->R, E = m->E;
    tsim_plan_reset(plan);
    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INPUT, "moonep: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (plan->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "moonep: plan rows have %d ranks, expected %d", plan->ranks, R);
    tsim_record_expert_totals(rec, m->tpe);
    memset(m->load0, 0, sizeof *m->load0 * (size_t)R);
    int64_t total = 0;
    for (int e = 0; e < E; e++) {
        m->load0[m->home[e]] += m->tpe[e];
        total += m->tpe[e];
    }
    if (total == 0)
        return TSIM_OK;
    const int nq = balance(m, total);
    int rc = check_caps(m, rec, nq, total, err);
    if (rc != TSIM_OK)
        return rc;
    memset(m->sender_done, 0, sizeof *m->sender_done * (size_t)R);
    for (int i = 0; i < nq; i++) {
        const int h = m->q_from[i];
        if (m->sender_done[h])
            continue;
        m->sender_done[h] = true;
        rc = plan_sender(m, rec, h, nq, plan, err);
        if (rc != TSIM_OK)
            return rc;
    }
    return TSIM_OK;
}
