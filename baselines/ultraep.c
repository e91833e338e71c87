/* `ultraep` (ultraep.md): each node (NVLink domain) is planned alone. The
 * quota solver (section 3) tries thresholds near the node's mean and carves
 * each overloaded rank's excess into quotas for the node's ranks with the
 * most slack; each source then splits its own tokens over the instances.
 * The legacy CPU solver (section 4) fills every slot greedily and splits
 * round-robin. Integers are exact (64-bit, 128-bit products); the few float32
 * steps are those of the published kernel. Ties go to the lowest index. */
#include "ultraep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

__extension__ typedef __int128 i128;

struct tsim_ultraep {
    int R, E, hpr, G, K;
    tsim_ultraep_options opt;
    int64_t min_tokens;    /* the fallback floor, >= 1 */
    int32_t *home;         /* [E] copy of the home map */
    int32_t *rank_experts; /* [R * hpr] L_r ascending */
    int64_t *tpe;          /* [E] */
    int64_t *W;            /* [R] native loads */
    int *senders;          /* [G] the domain's ranks by W descending */
    int *expert_order;     /* [R * hpr] L_r by tpe descending */
    int *sort_tmp;         /* [max(G, hpr, cap)] */
    /* One build (3.3), indexed by rank - first rank of the domain. */
    int64_t *excess, *slack, *host_stamp;
    int *used;
    int64_t stamp;
    int cap;               /* exports or copies one domain can hold */
    int *ex_e, *ex_g;      /* [cap] exports in the order recorded */
    int64_t *ex_q;         /* [cap] */
    int nex;
    /* One expert's instances for the split (3.7): home first. */
    int *inst_host, *inst_rep;        /* [G] */
    int64_t *inst_q, *inst_f, *inst_cap, *inst_rho, *inst_share; /* [G] */
    /* Legacy solver (4), indexed by the domain's block-wise expert number. */
    int *count;            /* [G * hpr] */
    double *rank_weight;   /* [G] */
    int64_t *entry_key;    /* [G * hpr] weight bits (non-negative doubles order as integers) */
    int *entries;          /* [cap] */
    int *first_copy, *last_copy; /* [G * hpr] placement chain of each expert, -1 */
    int *next_copy, *copy_rank, *copy_slot; /* [cap] */
};

void tsim_ultraep_options_default(tsim_ultraep_options *opt)
{
    opt->solver = TSIM_ULTRAEP_QUOTA;
    opt->min_tokens = 1024;
    opt->oracle_eps = 0.01;
    opt->balance_threshold = 1.0;
    opt->locality = true;
    opt->zero_master = false;
}

int tsim_ultraep_parse_solver(const char *text, int *out, tsim_error *err)
{
    if (strcmp(text, "quota") == 0)
        *out = TSIM_ULTRAEP_QUOTA;
    else if (strcmp(text, "legacy") == 0)
        *out = TSIM_ULTRAEP_LEGACY;
    else
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: unknown --ultraep-solver '%s' (quota, legacy)", text);
    return TSIM_OK;
}

int tsim_ultraep_parse_on_off(const char *option, const char *text, bool *out, tsim_error *err)
{
    if (strcmp(text, "on") == 0)
        *out = true;
    else if (strcmp(text, "off") == 0)
        *out = false;
    else
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: %s takes on or off, not '%s'", option, text);
    return TSIM_OK;
}

void tsim_ultraep_free(tsim_ultraep *u)
{
    if (!u)
        return;
    void *arrays[] = {u->home, u->rank_experts, u->tpe, u->W, u->senders, u->expert_order, u->sort_tmp,
                      u->excess, u->slack, u->host_stamp, u->used, u->ex_e, u->ex_g, u->ex_q, u->inst_host,
                      u->inst_rep, u->inst_q, u->inst_f, u->inst_cap, u->inst_rho, u->inst_share, u->count, u->rank_weight,
                      u->entry_key, u->entries, u->first_copy, u->last_copy, u->next_copy, u->copy_rank,
                      u->copy_slot};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(arrays[i]);
    free(u);
}

static int check_options(const tsim_topology *topo, int slots, const tsim_ultraep_options *opt, tsim_error *err)
{
    const int R = topo->ranks, rpn = topo->ranks_per_node;
    if (rpn < R && R % rpn != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: %d ranks do not split into nodes of %d (replicas stay "
                              "inside a node)", R, rpn);
    if (slots < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: --slots must be >= 0");
    if (opt->solver != TSIM_ULTRAEP_QUOTA && opt->solver != TSIM_ULTRAEP_LEGACY)
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: unknown solver %d (quota, legacy)", opt->solver);
    if (!isfinite(opt->oracle_eps))
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: --ultraep-oracle-eps must be finite, got %g",
                              opt->oracle_eps);
    if (!isfinite(opt->balance_threshold))
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: --ultraep-balance-threshold must be finite, got %g",
                              opt->balance_threshold);
    return TSIM_OK;
}

int tsim_ultraep_init(tsim_ultraep **out, const tsim_topology *topo, int slots, const tsim_ultraep_options *opt,
                      tsim_error *err)
{
    *out = NULL;
    int rc = check_options(topo, slots, opt, err);
    if (rc != TSIM_OK)
        return rc;
    tsim_ultraep *u = calloc(1, sizeof *u);
    if (!u)
        return tsim_error_set(err, TSIM_E_INTERNAL, "ultraep: out of memory");
    const int R = topo->ranks, E = topo->experts, hpr = topo->experts_per_rank;
    const int G = topo->ranks_per_node < R ? topo->ranks_per_node : R;
    u->R = R;
    u->E = E;
    u->hpr = hpr;
    u->G = G;
    u->K = slots;
    u->opt = *opt;
    u->min_tokens = opt->min_tokens > 1 ? opt->min_tokens : 1;
    /* Quota: every export takes a slot and exhausts a sender's need, a
     * guest's slack or an expert, so at most min(K*G, 2G + G*hpr). Legacy: at
     * most K*G copies, G - 1 per expert. */
    const int64_t by_slots = (int64_t)slots * G;
    int64_t by_shape = (int64_t)G * hpr * (G - 1);
    if (by_shape < 2 * (int64_t)G + (int64_t)G * hpr)
        by_shape = 2 * (int64_t)G + (int64_t)G * hpr;
    u->cap = (int)(by_slots < by_shape ? by_slots : by_shape);
    const size_t nR = (size_t)R, nE = (size_t)E, nG = (size_t)G, nD = (size_t)G * (size_t)hpr;
    const size_t nC = (size_t)u->cap + 1;
    size_t ntmp = nG > (size_t)hpr ? nG : (size_t)hpr;
    if (ntmp < nC)
        ntmp = nC;
    u->home = malloc(sizeof *u->home * nE);
    u->rank_experts = malloc(sizeof *u->rank_experts * nE);
    u->tpe = malloc(sizeof *u->tpe * nE);
    u->W = malloc(sizeof *u->W * nR);
    u->senders = malloc(sizeof *u->senders * nG);
    u->expert_order = malloc(sizeof *u->expert_order * nE);
    u->sort_tmp = malloc(sizeof *u->sort_tmp * ntmp);
    u->excess = malloc(sizeof *u->excess * nG);
    u->slack = malloc(sizeof *u->slack * nG);
    u->host_stamp = calloc(nG, sizeof *u->host_stamp);
    u->used = malloc(sizeof *u->used * nG);
    u->ex_e = malloc(sizeof *u->ex_e * nC);
    u->ex_g = malloc(sizeof *u->ex_g * nC);
    u->ex_q = malloc(sizeof *u->ex_q * nC);
    u->inst_host = malloc(sizeof *u->inst_host * nG);
    u->inst_rep = malloc(sizeof *u->inst_rep * nG);
    u->inst_q = malloc(sizeof *u->inst_q * nG);
    u->inst_f = malloc(sizeof *u->inst_f * nG);
    u->inst_cap = malloc(sizeof *u->inst_cap * nG);
    u->inst_rho = malloc(sizeof *u->inst_rho * nG);
    u->inst_share = malloc(sizeof *u->inst_share * nG);
    u->count = malloc(sizeof *u->count * nD);
    u->rank_weight = malloc(sizeof *u->rank_weight * nG);
    u->entry_key = malloc(sizeof *u->entry_key * nD);
    u->entries = malloc(sizeof *u->entries * nC);
    u->first_copy = malloc(sizeof *u->first_copy * nD);
    u->last_copy = malloc(sizeof *u->last_copy * nD);
    u->next_copy = malloc(sizeof *u->next_copy * nC);
    u->copy_rank = malloc(sizeof *u->copy_rank * nC);
    u->copy_slot = malloc(sizeof *u->copy_slot * nC);
    if (!u->home || !u->rank_experts || !u->tpe || !u->W || !u->senders || !u->expert_order || !u->sort_tmp ||
        !u->excess || !u->slack || !u->host_stamp || !u->used || !u->ex_e || !u->ex_g || !u->ex_q ||
        !u->inst_host || !u->inst_rep || !u->inst_q || !u->inst_f || !u->inst_cap || !u->inst_rho || !u->inst_share || !u->count ||
        !u->rank_weight || !u->entry_key || !u->entries || !u->first_copy || !u->last_copy || !u->next_copy ||
        !u->copy_rank || !u->copy_slot) {
        tsim_ultraep_free(u);
        return tsim_error_set(err, TSIM_E_INTERNAL, "ultraep: out of memory for %d ranks and %d experts", R, E);
    }
    memcpy(u->home, topo->home, sizeof *u->home * nE);
    memcpy(u->rank_experts, topo->rank_experts, sizeof *u->rank_experts * nE);
    *out = u;
    return TSIM_OK;
}

static inline int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0 ? 1 : 0); /* a >= 0, b > 0 */
}

/* a * b / d and its remainder for a, b >= 0, d > 0, exact. The split divides
 * once per (source, instance): 32-bit division when the numbers fit (several
 * times faster), 128-bit only when the product overflows. */
static inline int64_t mul_div(int64_t a, int64_t b, int64_t d, int64_t *rem)
{
    uint64_t prod;
    if (!__builtin_mul_overflow((uint64_t)a, (uint64_t)b, &prod)) {
        if (prod <= UINT32_MAX && (uint64_t)d <= UINT32_MAX) {
            const uint32_t p32 = (uint32_t)prod, d32 = (uint32_t)d;
            *rem = p32 % d32;
            return p32 / d32;
        }
        *rem = (int64_t)(prod % (uint64_t)d);
        return (int64_t)(prod / (uint64_t)d);
    }
    const i128 wide = (i128)a * b;
    *rem = (int64_t)(wide % d);
    return (int64_t)(wide / d);
}

static inline int64_t min3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* 3.3: one attempt at threshold t over the domain of ranks first..first+G-1.
 * fixed selects the fixed floor (min_tokens) over the dynamic one. Fills
 * ex_* and returns whether it succeeded. */
static bool build(tsim_ultraep *u, int first, int64_t t, bool fixed)
{
    const int G = u->G, K = u->K, hpr = u->hpr;
    int64_t sum_excess = 0, sum_slack = 0;
    for (int i = 0; i < G; i++) {
        const int64_t w = u->W[first + i];
        u->excess[i] = w > t ? w - t : 0;
        u->slack[i] = w < t ? t - w : 0;
        u->used[i] = 0;
        sum_excess += u->excess[i];
        sum_slack += u->slack[i];
    }
    u->nex = 0;
    if (sum_excess == 0)
        return true;
    if (sum_excess > sum_slack)
        return false;
    for (int si = 0; si < G; si++) {
        const int s = u->senders[si];
        int64_t need = u->excess[s - first];
        if (need <= 0)
            continue;
        const int *experts = u->expert_order + (size_t)s * (size_t)hpr;
        for (int x = 0; x < hpr && need > 0; x++) {
            const int e = experts[x];
            const int64_t keep = (u->tpe[e] > 0 && !u->opt.zero_master) ? 1 : 0;
            int64_t left = u->tpe[e] - keep;
            const int64_t stamp = ++u->stamp; /* hosts(e): marked with this stamp */
            u->host_stamp[s - first] = stamp;
            while (need > 0 && left > 0) {
                int eligible = 0;
                for (int i = 0; i < G; i++)
                    if (u->slack[i] > 0 && u->used[i] < K && u->host_stamp[i] != stamp)
                        eligible++;
                if (!fixed && eligible == 0)
                    break;
                int64_t floor_q = fixed ? u->min_tokens : ceil_div(need, eligible);
                if (floor_q < 1)
                    floor_q = 1;
                int best = -1;
                for (int i = 0; i < G; i++) {
                    if (!(u->slack[i] > 0 && u->used[i] < K && u->host_stamp[i] != stamp))
                        continue;
                    if (min3(need, u->slack[i], left) < floor_q)
                        continue;
                    if (best < 0 || u->slack[i] > u->slack[best])
                        best = i;
                }
                if (best < 0)
                    break;
                const int64_t q = min3(need, u->slack[best], left);
                u->ex_e[u->nex] = e;
                u->ex_g[u->nex] = first + best;
                u->ex_q[u->nex] = q;
                u->nex++;
                u->slack[best] -= q;
                u->used[best]++;
                u->host_stamp[best] = stamp;
                need -= q;
                left -= q;
            }
        }
        if (need > 0)
            return false;
    }
    return true;
}

/* 3.5 step 2: the probe search for the least threshold above c that builds
 * with the fixed floor, exactly in the published probe order. */
static int64_t fallback_search(tsim_ultraep *u, int first, int64_t c, int64_t hi)
{
    int64_t a = c + 1 < hi ? c + 1 : hi, b = hi;
    while (a < b) {
        const int64_t n = b - a;
        if (n <= 4) {
            int64_t found = b;
            for (int64_t p = a; p < a + 4 && p < b; p++)
                if (build(u, first, p, true)) {
                    found = p;
                    break;
                }
            a = b = found;
        } else {
            int64_t probe[4];
            int hit = -1;
            for (int w = 0; w < 4; w++)
                probe[w] = a + (int64_t)((i128)n * (w + 1) / 5);
            for (int w = 0; w < 4 && hit < 0; w++)
                if (build(u, first, probe[w], true))
                    hit = w;
            if (hit < 0) {
                a = probe[3] + 1;
            } else {
                b = probe[hit];
                if (hit > 0)
                    a = probe[hit - 1] + 1;
            }
        }
    }
    return a;
}

/* 3.2-3.5: leaves the final build's exports in ex_* and returns its
 * threshold. */
static int64_t solve_quota(tsim_ultraep *u, int first)
{
    const int G = u->G;
    int64_t total = 0, max_w = 0;
    for (int i = 0; i < G; i++) {
        total += u->W[first + i];
        if (u->W[first + i] > max_w)
            max_w = u->W[first + i];
    }
    float bt = (float)u->opt.balance_threshold;
    if (!(bt >= 1.0f))
        bt = 1.0f;
    const float mean32 = (float)total / (float)G;
    const float lo32 = mean32 * bt;
    const int64_t lo = (int64_t)ceil((double)lo32);
    const int64_t hi = max_w > lo ? max_w : lo;
    const double eps = u->opt.oracle_eps > 0.0 ? u->opt.oracle_eps : 0.0;
    const float margin = 1.0f + (float)eps;
    const float t0_32 = (float)lo * margin;
    int64_t t0 = (int64_t)ceil((double)t0_32);
    if (t0 < lo)
        t0 = lo;
    const int64_t step = (hi + 99) / 100 > 1 ? (hi + 99) / 100 : 1;
    const int64_t t1 = t0 + step < hi ? t0 + step : hi;
    const int64_t t2 = t1 + step < hi ? t1 + step : hi;
    if (build(u, first, t0, false))
        return t0;
    if (build(u, first, t1, false))
        return t1;
    if (build(u, first, t2, false))
        return t2;
    int64_t c = ceil_div(total, G);
    if (c < lo)
        c = lo;
    if (build(u, first, c, true))
        return c;
    const int64_t a = fallback_search(u, first, c, hi);
    build(u, first, a, true);
    return a;
}

/* Section 7: a rank above t computes exactly t by quota, every other rank
 * between its native load and t. A miss is a planner bug (internal error). */
static int check_quotas(tsim_ultraep *u, const tsim_record *rec, int first, int64_t t, tsim_error *err)
{
    int64_t *quota_load = u->slack; /* free after the build */
    for (int i = 0; i < u->G; i++)
        quota_load[i] = u->W[first + i];
    for (int x = 0; x < u->nex; x++) {
        quota_load[u->home[u->ex_e[x]] - first] -= u->ex_q[x];
        quota_load[u->ex_g[x] - first] += u->ex_q[x];
    }
    for (int i = 0; i < u->G; i++) {
        const int64_t w = u->W[first + i], q = quota_load[i];
        if (w > t ? q != t : (q > t || q < w))
            return tsim_error_set(err, TSIM_E_INTERNAL,
                                  "ultraep: record %lld (microbatch %lld, layer %lld): rank %d quota load %lld, "
                                  "threshold %lld",
                                  (long long)rec->index, (long long)rec->microbatch, (long long)rec->layer, first + i,
                                  (long long)q, (long long)t);
    }
    return TSIM_OK;
}

/* 3.7, locality on, for source r with m0 tokens: shares[j] of each instance. */
static void split_locality(tsim_ultraep *u, int C, int r, int64_t m0, int64_t *shares)
{
    int own = -1;
    for (int j = 0; j < C; j++) {
        shares[j] = 0;
        if (u->inst_host[j] == r)
            own = j;
    }
    int64_t m = m0;
    if (own >= 0) {
        shares[own] = u->inst_f[own];
        m = m0 - u->inst_f[own];
        if (m < 0)
            m = 0;
    }
    if (m <= 0)
        return;
    int64_t sum_cap = 0;
    for (int j = 0; j < C; j++)
        if (j != own && u->inst_cap[j] > 0)
            sum_cap += u->inst_cap[j];
    if (sum_cap <= 0)
        return; /* cannot happen (3.7 step 3); the caller's conservation check catches it */
    int64_t given = 0;
    for (int j = 0; j < C; j++) {
        u->inst_rho[j] = -1;
        if (j == own || u->inst_cap[j] <= 0)
            continue;
        const int64_t part = mul_div(m, u->inst_cap[j], sum_cap, &u->inst_rho[j]);
        shares[j] += part;
        given += part;
    }
    for (int64_t left = m - given; left > 0; left--) {
        int best = -1;
        for (int j = 0; j < C; j++) {
            if (u->inst_rho[j] < 0)
                continue;
            if (best < 0 || u->inst_rho[j] > u->inst_rho[best] ||
                (u->inst_rho[j] == u->inst_rho[best] && u->inst_host[j] < u->inst_host[best]))
                best = j;
        }
        shares[best]++;
        u->inst_rho[best] = -1;
    }
}

/* 3.7, locality off: proportional to the quotas, largest remainder, ties to
 * the lower instance. */
static void split_proportional(tsim_ultraep *u, int C, int64_t m0, int64_t sum_q, int64_t *shares)
{
    int64_t given = 0;
    for (int j = 0; j < C; j++) {
        shares[j] = mul_div(m0, u->inst_q[j], sum_q, &u->inst_rho[j]);
        given += shares[j];
    }
    for (int64_t left = m0 - given; left > 0; left--) {
        int best = 0;
        for (int j = 1; j < C; j++)
            if (u->inst_rho[j] > u->inst_rho[best])
                best = j;
        shares[best]++;
        u->inst_rho[best] = -1;
    }
}

/* Every source's tokens of expert e over its C instances (home first). */
static void split_expert(tsim_ultraep *u, const tsim_record *rec, int e, int C, int64_t *shares, tsim_plan *plan)
{
    int64_t sum_q = 0;
    for (int j = 0; j < C; j++) {
        const int64_t own = tsim_count(rec, u->inst_host[j], e);
        u->inst_f[j] = own < u->inst_q[j] ? own : u->inst_q[j];
        u->inst_cap[j] = u->inst_q[j] - u->inst_f[j];
        sum_q += u->inst_q[j];
    }
    for (int r = 0; r < u->R; r++) {
        const int64_t m0 = tsim_count(rec, r, e);
        if (m0 == 0)
            continue;
        if (u->opt.locality)
            split_locality(u, C, r, m0, shares);
        else
            split_proportional(u, C, m0, sum_q, shares);
        for (int j = 1; j < C; j++)
            tsim_plan_alloc_row(plan, u->inst_rep[j])[r] += shares[j];
    }
}

/* 3.6-3.7: the final exports of a domain into replicas and allocations. */
static int emit_quota(tsim_ultraep *u, const tsim_record *rec, int first, tsim_plan *plan)
{
    int64_t *shares = u->inst_share;
    for (int i = 0; i < u->G; i++)
        u->used[i] = 0;
    int x = 0;
    while (x < u->nex) {
        const int e = u->ex_e[x];
        int C = 1;
        int64_t sent = 0;
        u->inst_host[0] = u->home[e];
        for (; x < u->nex && u->ex_e[x] == e; x++, C++) {
            const int g = u->ex_g[x];
            const int idx = tsim_plan_add(plan, e, g, u->used[g - first]++, 0);
            if (idx < 0)
                return -1;
            u->inst_host[C] = g;
            u->inst_rep[C] = idx;
            u->inst_q[C] = u->ex_q[x];
            sent += u->ex_q[x];
        }
        u->inst_q[0] = u->tpe[e] - sent;
        split_expert(u, rec, e, C, shares, plan);
    }
    return 0;
}

/* Section 4 step 1: copies per expert (count), greedy on tpe/count. */
static void legacy_counts(tsim_ultraep *u, int first, int64_t total)
{
    const int G = u->G, hpr = u->hpr, n = G * hpr;
    const int32_t *dexp = u->rank_experts + (size_t)first * (size_t)hpr; /* block-wise numbering */
    const double avg = (double)total / (double)n;
    const double stop_at = avg * (double)(float)u->opt.balance_threshold;
    for (int i = 0; i < n; i++)
        u->count[i] = 1;
    for (int64_t round = 0; round < (int64_t)u->K * G; round++) {
        int best = -1;
        double best_score = 0.0;
        for (int i = 0; i < n; i++) {
            if (u->count[i] - 1 >= G - 1)
                continue;
            const double score = (double)u->tpe[dexp[i]] / (double)u->count[i];
            if (best < 0 || score > best_score) {
                best = i;
                best_score = score;
            }
        }
        if (best < 0)
            break;
        if (u->opt.balance_threshold > 1.0 && avg > 0.0 && best_score <= stop_at)
            break;
        u->count[best]++;
    }
}

/* Section 4 steps 2-3: LPT packing of the copies, round-robin split. */
static int legacy_domain(tsim_ultraep *u, const tsim_record *rec, int first, int64_t total, tsim_plan *plan)
{
    const int G = u->G, hpr = u->hpr, n = G * hpr;
    const int32_t *dexp = u->rank_experts + (size_t)first * (size_t)hpr;
    legacy_counts(u, first, total);
    int ne = 0;
    for (int i = 0; i < n; i++) {
        const double w = (double)u->tpe[dexp[i]] / (double)u->count[i];
        int64_t bits;
        memcpy(&bits, &w, sizeof bits); /* w >= 0: its bits order as the value */
        for (int c = 1; c < u->count[i]; c++) {
            u->entries[ne] = i;
            u->entry_key[i] = bits;
            ne++;
        }
        u->first_copy[i] = u->last_copy[i] = -1;
    }
    tsim_sort_stable_by_key(u->entries, ne, u->entry_key, true, u->sort_tmp);
    for (int g = 0; g < G; g++) {
        double w = 0.0;
        for (int k = 0; k < hpr; k++)
            w += (double)u->tpe[dexp[g * hpr + k]] / (double)u->count[g * hpr + k];
        u->rank_weight[g] = w;
        u->used[g] = 0;
    }
    int placed = 0;
    for (int x = 0; x < ne; x++) {
        const int i = u->entries[x];
        const int home = i / hpr;
        int best = -1;
        for (int g = 0; g < G; g++) {
            if (g == home || u->used[g] >= u->K)
                continue;
            bool holds = false;
            for (int p = u->first_copy[i]; p >= 0 && !holds; p = u->next_copy[p])
                holds = u->copy_rank[p] == g;
            if (holds)
                continue;
            if (best < 0 || u->rank_weight[g] < u->rank_weight[best])
                best = g;
        }
        if (best < 0)
            continue; /* dropped: the expert keeps one copy fewer */
        u->copy_rank[placed] = best;
        u->copy_slot[placed] = u->used[best]++;
        u->next_copy[placed] = -1;
        if (u->last_copy[i] >= 0)
            u->next_copy[u->last_copy[i]] = placed;
        else
            u->first_copy[i] = placed;
        u->last_copy[i] = placed;
        u->rank_weight[best] += (double)u->tpe[dexp[i]] / (double)u->count[i];
        placed++;
    }
    for (int i = 0; i < n; i++) {
        const int e = dexp[i];
        int C = 1;
        for (int p = u->first_copy[i]; p >= 0; p = u->next_copy[p], C++) {
            const int idx = tsim_plan_add(plan, e, first + u->copy_rank[p], u->copy_slot[p], 0);
            if (idx < 0)
                return -1;
            u->inst_rep[C] = idx;
        }
        for (int j = 1; j < C; j++) {
            int64_t *row = tsim_plan_alloc_row(plan, u->inst_rep[j]);
            for (int r = 0; r < u->R; r++) {
                const int64_t m0 = tsim_count(rec, r, e);
                row[r] = m0 > j ? (m0 - j + C - 1) / C : 0;
            }
        }
    }
    return 0;
}

/* Per record: orders, then each domain on its own. */
static int plan_domain(tsim_ultraep *u, const tsim_record *rec, int first, tsim_plan *plan, tsim_error *err)
{
    const int G = u->G, hpr = u->hpr;
    int64_t total = 0;
    for (int i = 0; i < G; i++) {
        u->senders[i] = first + i;
        total += u->W[first + i];
    }
    if (u->K == 0 || G == 1)
        return TSIM_OK;
    /* The legacy greedy fills every slot, even of an idle domain. */
    if (u->opt.solver == TSIM_ULTRAEP_LEGACY && legacy_domain(u, rec, first, total, plan) < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "ultraep: out of memory growing the plan");
    if (u->opt.solver == TSIM_ULTRAEP_LEGACY || total == 0)
        return TSIM_OK;
    tsim_sort_stable_by_key(u->senders, G, u->W, true, u->sort_tmp);
    for (int i = 0; i < G; i++) {
        int *order = u->expert_order + (size_t)(first + i) * (size_t)hpr;
        const int32_t *L = u->rank_experts + (size_t)(first + i) * (size_t)hpr;
        for (int k = 0; k < hpr; k++)
            order[k] = L[k];
        tsim_sort_stable_by_key(order, hpr, u->tpe, true, u->sort_tmp);
    }
    const int64_t t = solve_quota(u, first);
    const int rc = check_quotas(u, rec, first, t, err);
    if (rc != TSIM_OK)
        return rc;
    if (emit_quota(u, rec, first, plan) < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "ultraep: out of memory growing the plan");
    return TSIM_OK;
}

int tsim_ultraep_plan(tsim_ultraep *u, const tsim_record *rec, tsim_plan *plan, tsim_error *err)
{
    const int R = u->R, E = u->E;
    tsim_plan_reset(plan);
    if (rec->ranks != R || rec->experts != E)
        return tsim_error_set(err, TSIM_E_INPUT, "ultraep: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, R, E);
    if (plan->ranks != R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "ultraep: plan rows have %d ranks, expected %d", plan->ranks, R);
    tsim_record_expert_totals(rec, u->tpe);
    memset(u->W, 0, sizeof *u->W * (size_t)R);
    for (int e = 0; e < E; e++)
        u->W[u->home[e]] += u->tpe[e];
    for (int first = 0; first < R; first += u->G) {
        const int rc = plan_domain(u, rec, first, plan, err);
        if (rc != TSIM_OK)
            return rc;
    }
    /* A replica's planned count is what it receives (3.7). */
    for (int i = 0; i < plan->count; i++) {
        const int64_t *row = tsim_plan_alloc_row_c(plan, i);
        int64_t sum = 0;
        for (int r = 0; r < R; r++)
            sum += row[r];
        plan->replicas[i].planned = sum;
    }
    return TSIM_OK;
}
