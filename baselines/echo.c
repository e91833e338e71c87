/* `echo`: ECHO, elastic cloning of hot experts (baselines.md "echo").
 * Topology-blind: integer average, spill against it, then K = 1 approximate bin
 * packing with 8 FIFO buckets or K > 1 one-shot greedy, then the shared split. */
#include "echo.h"

#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "split.h"

typedef struct {
    int R, E, hpr, K;
    int32_t *home;         /* [E] copy of the home map */
    int32_t *rank_experts; /* [E] each rank's home experts, ascending */
    int64_t *tpe;          /* [E] */
    int64_t *load;         /* [R] native loads */
    int64_t *spill;        /* [E] */
    int64_t *spare;        /* [R] */
    int64_t *left;         /* [E] spill not yet placed (bin packing) */
    int *hot;              /* [E] experts with spill > 0, spill descending */
    int *cold;             /* [R] ranks with spare > 0, spare descending */
    int *sort_tmp;         /* [max(E, R)] merge-sort buffer */
    int *rank_buf;         /* [hpr] one rank's experts by tpe ascending */
    int *queue;            /* [BUCKETS * queue_cap] FIFO buckets of experts */
    int queue_cap;
    /* One-shot greedy pieces, in the order the intervals are laid out. */
    int *piece_expert;     /* [E + R] */
    int *piece_rank;       /* [E + R] */
    int64_t *piece_size;   /* [E + R]; set to -1 once a rank keeps it */
    tsim_split_scratch split;
} echo_state;


int tsim_echo_bucket(int64_t spill, int64_t avg)
{
    if (spill >= avg)
        return 0;
    int64_t step = avg / 7;
    if (step == 0)
        step = 1;
    int64_t b = (avg - spill) / step + 1;
    return b > TSIM_ECHO_BUCKETS - 1 ? TSIM_ECHO_BUCKETS - 1 : (int)b;
}

int64_t tsim_echo_spill(void *state, const int64_t *tpe, int64_t *load, int64_t *spill, int64_t *spare)
{
    echo_state *s = state;
    const int R = s->R, hpr = s->hpr;
    int64_t total = 0;
    for (int r = 0; r < R; r++) {
        const int32_t *mine = s->rank_experts + (size_t)r * (size_t)hpr;
        int64_t l = 0;
        for (int i = 0; i < hpr; i++)
            l += tpe[mine[i]];
        load[r] = l;
        total += l;
    }
    const int64_t avg = total / R;
    for (int r = 0; r < R; r++) {
        spare[r] = load[r] < avg ? avg - load[r] : 0;
        /* Running sums over the rank's experts by tpe ascending (ties: index),
         * minus avg, clamped at 0, then first differences: the largest experts
         * of a hot rank carry its excess, a cold rank's experts spill 0. */
        const int32_t *mine = s->rank_experts + (size_t)r * (size_t)hpr;
        for (int i = 0; i < hpr; i++)
            s->rank_buf[i] = mine[i];
        tsim_sort_stable_by_key(s->rank_buf, hpr, tpe, false, s->sort_tmp);
        int64_t run = 0, prev = 0;
        for (int i = 0; i < hpr; i++) {
            int e = s->rank_buf[i];
            run += tpe[e];
            int64_t over = run > avg ? run - avg : 0;
            spill[e] = over - prev;
            prev = over;
        }
    }
    return avg;
}

static int add_piece(tsim_plan *out, int expert, int guest, int slot, int64_t planned, tsim_error *err)
{
    if (tsim_plan_add(out, expert, guest, slot, planned) < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "echo: out of memory growing the plan");
    return TSIM_OK;
}

/* K = 1: ranks by descending spare each take the head of the lowest non-empty
 * bucket; a remainder rejoins at the tail of the bucket its new size falls in. */
static int bin_pack(echo_state *s, int nhot, int ncold, int64_t avg, tsim_plan *out, tsim_error *err)
{
    int head[TSIM_ECHO_BUCKETS], tail[TSIM_ECHO_BUCKETS];
    for (int b = 0; b < TSIM_ECHO_BUCKETS; b++)
        head[b] = tail[b] = 0;
    for (int i = 0; i < nhot; i++) {
        int e = s->hot[i];
        int b = tsim_echo_bucket(s->left[e], avg);
        s->queue[b * s->queue_cap + tail[b]++] = e;
    }
    for (int c = 0; c < ncold; c++) {
        int b = 0;
        while (b < TSIM_ECHO_BUCKETS && head[b] == tail[b])
            b++;
        if (b == TSIM_ECHO_BUCKETS)
            break; /* every bucket is empty */
        int e = s->queue[b * s->queue_cap + head[b]++];
        int g = s->cold[c];
        int64_t give = s->left[e] < s->spare[g] ? s->left[e] : s->spare[g];
        int rc = add_piece(out, e, g, 0, give, err);
        if (rc)
            return rc;
        s->left[e] -= give;
        if (s->left[e] > 0) {
            int nb = tsim_echo_bucket(s->left[e], avg);
            s->queue[nb * s->queue_cap + tail[nb]++] = e;
        }
    }
    return TSIM_OK;
}

/* K > 1: spills and spares laid end to end, each (expert, rank) pair gets the
 * overlap of their intervals; each rank keeps its K largest pieces (ties to the
 * earlier piece), the largest in slot 0. */
static int greedy(echo_state *s, int nhot, int ncold, tsim_plan *out, tsim_error *err)
{
    int n = 0, i = 0, j = 0;
    int64_t spill_left = nhot > 0 ? s->left[s->hot[0]] : 0;
    int64_t room = ncold > 0 ? s->spare[s->cold[0]] : 0;
    while (i < nhot && j < ncold) {
        int64_t c = spill_left < room ? spill_left : room;
        s->piece_expert[n] = s->hot[i];
        s->piece_rank[n] = s->cold[j];
        s->piece_size[n] = c;
        n++;
        spill_left -= c;
        room -= c;
        if (spill_left == 0 && ++i < nhot)
            spill_left = s->left[s->hot[i]];
        if (room == 0 && ++j < ncold)
            room = s->spare[s->cold[j]];
    }
    /* A rank's pieces are contiguous because ranks are consumed in order. */
    for (int begin = 0; begin < n;) {
        int end = begin;
        while (end < n && s->piece_rank[end] == s->piece_rank[begin])
            end++;
        for (int k = 0; k < s->K; k++) {
            int best = -1;
            for (int p = begin; p < end; p++)
                if (s->piece_size[p] > 0 && (best < 0 || s->piece_size[p] > s->piece_size[best]))
                    best = p;
            if (best < 0)
                break;
            int rc = add_piece(out, s->piece_expert[best], s->piece_rank[best], k, s->piece_size[best], err);
            if (rc)
                return rc;
            s->piece_size[best] = -1;
        }
        begin = end;
    }
    return TSIM_OK;
}

int tsim_echo_assign(void *state, const int64_t *spill, const int64_t *spare, int64_t avg, tsim_plan *out,
                     tsim_error *err)
{
    echo_state *s = state;
    tsim_plan_reset(out);
    out->slot_limited = true;
    if (s->K < 1)
        return TSIM_OK;
    int nhot = 0, ncold = 0;
    for (int e = 0; e < s->E; e++) {
        s->left[e] = spill[e];
        if (spill[e] > 0)
            s->hot[nhot++] = e;
    }
    for (int r = 0; r < s->R; r++) {
        s->spare[r] = spare[r];
        if (spare[r] > 0)
            s->cold[ncold++] = r;
    }
    tsim_sort_stable_by_key(s->hot, nhot, s->left, true, s->sort_tmp);
    tsim_sort_stable_by_key(s->cold, ncold, s->spare, true, s->sort_tmp);
    if (s->K == 1)
        return bin_pack(s, nhot, ncold, avg, out, err);
    return greedy(s, nhot, ncold, out, err);
}

static void echo_free(void *state)
{
    echo_state *s = state;
    if (!s)
        return;
    free(s->home);
    free(s->rank_experts);
    free(s->tpe);
    free(s->load);
    free(s->spill);
    free(s->spare);
    free(s->left);
    free(s->hot);
    free(s->cold);
    free(s->sort_tmp);
    free(s->rank_buf);
    free(s->queue);
    free(s->piece_expert);
    free(s->piece_rank);
    free(s->piece_size);
    tsim_split_scratch_free(&s->split);
    free(s);
}

static int echo_init(void **state, const tsim_topology *topo, const tsim_planner_common *common,
                       const void *own, tsim_error *err)
{
    (void)common;
    (void)own; /* ECHO has no options */
    *state = NULL;
    echo_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsim_error_set(err, TSIM_E_INTERNAL, "echo: out of memory");
    const int R = topo->ranks, E = topo->experts;
    s->R = R;
    s->E = E;
    s->hpr = topo->experts_per_rank;
    s->K = topo->slots;
    const size_t nE = (size_t)E, nR = (size_t)R, npiece = nE + nR;
    /* Every expert enters a bucket once, plus at most one remainder per rank. */
    s->queue_cap = E + R;
    s->home = malloc(sizeof *s->home * nE);
    s->rank_experts = malloc(sizeof *s->rank_experts * nE);
    s->tpe = malloc(sizeof *s->tpe * nE);
    s->load = malloc(sizeof *s->load * nR);
    s->spill = malloc(sizeof *s->spill * nE);
    s->spare = malloc(sizeof *s->spare * nR);
    s->left = malloc(sizeof *s->left * nE);
    s->hot = malloc(sizeof *s->hot * nE);
    s->cold = malloc(sizeof *s->cold * nR);
    s->sort_tmp = malloc(sizeof *s->sort_tmp * (nE > nR ? nE : nR));
    s->rank_buf = malloc(sizeof *s->rank_buf * (size_t)(s->hpr > 0 ? s->hpr : 1));
    s->queue = malloc(sizeof *s->queue * (size_t)TSIM_ECHO_BUCKETS * (size_t)s->queue_cap);
    s->piece_expert = malloc(sizeof *s->piece_expert * npiece);
    s->piece_rank = malloc(sizeof *s->piece_rank * npiece);
    s->piece_size = malloc(sizeof *s->piece_size * npiece);
    if (!s->home || !s->rank_experts || !s->tpe || !s->load || !s->spill || !s->spare || !s->left || !s->hot ||
        !s->cold || !s->sort_tmp || !s->rank_buf || !s->queue || !s->piece_expert || !s->piece_rank ||
        !s->piece_size) {
        echo_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "echo: out of memory for %d ranks and %d experts", R, E);
    }
    memcpy(s->home, topo->home, sizeof *s->home * nE);
    memcpy(s->rank_experts, topo->rank_experts, sizeof *s->rank_experts * nE);
    int rc = tsim_split_scratch_init(&s->split, R, R * (s->K > 0 ? s->K : 1), err);
    if (rc) {
        echo_free(s);
        return rc;
    }
    *state = s;
    return TSIM_OK;
}

static int echo_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    echo_state *s = state;
    tsim_plan_reset(out);
    out->slot_limited = true;
    if (rec->ranks != s->R || rec->experts != s->E)
        return tsim_error_set(err, TSIM_E_INPUT, "echo: record %lld is %d x %d, planner set up for %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, s->R, s->E);
    if (out->ranks != s->R)
        return tsim_error_set(err, TSIM_E_INTERNAL, "echo: plan rows have %d ranks, expected %d", out->ranks, s->R);
    tsim_record_expert_totals(rec, s->tpe);
    int64_t avg = tsim_echo_spill(s, s->tpe, s->load, s->spill, s->spare);
    int rc = tsim_echo_assign(s, s->spill, s->spare, avg, out, err);
    if (rc)
        return rc;
    /* Planned count = tokens given to the piece; sources by the shared split. */
    rc = tsim_split_plan(rec, s->tpe, s->K, out, &s->split, err);
    if (rc)
        return rc;
    tsim_plan_drop_empty(out);
    return TSIM_OK;
}

const tsim_planner_desc tsim_planner_echo = {
    .name = "echo",
    .source = "ECHO, Megatron-LM pull request \"MoE ECHO: Elastic Cloning for Hot Experts\"",
    .summary = "ECHO: clones hot experts onto under-loaded ranks (bin packing K=1, greedy K>1)",
    .init = echo_init,
    .plan = echo_plan,
    .free = echo_free,
};
