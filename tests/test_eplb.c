/* EPLB (eplb.md): the algorithm's three steps on hand-checked cases, the
 * README example of 2.5, EPLB's own output recorded in every vector, the
 * native choice of 3.3, the token split of 3.5, and a naive implementation
 * written straight from section 2 that the fast one must equal on 10,000+
 * random inputs. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eplb_hosts.h"
#include "test_options.h"
#include "eplb_layout.h"
#include "random_records.h"
#include "vector_check.h"

/* ---- a naive EPLB, straight from eplb.md section 2 ---- */

/* 2.3: returns pack and position of every item. Scans for the lightest pack,
 * sorts by insertion (stable), adds loads in float32. */
static void naive_pack(const float *x, int n, int m, int *pack_of, int *pos_of)
{
    if (n == m) {
        for (int i = 0; i < n; i++) {
            pack_of[i] = i;
            pos_of[i] = 0;
        }
        return;
    }
    int *order = malloc(sizeof *order * (size_t)n);
    for (int i = 0; i < n; i++) {
        int k = i;
        while (k > 0 && x[order[k - 1]] < x[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    float *load = calloc((size_t)m, sizeof *load);
    int *items = calloc((size_t)m, sizeof *items);
    for (int t = 0; t < n; t++) {
        int best = -1;
        for (int p = 0; p < m; p++)
            if (items[p] < n / m && (best < 0 || load[p] < load[best]))
                best = p;
        cr_assert(best >= 0);
        pack_of[order[t]] = best;
        pos_of[order[t]] = items[best]++;
        load[best] = load[best] + x[order[t]];
    }
    free(order);
    free(load);
    free(items);
}

static void naive_eplb(const int64_t *w, int E, int P, int G, int N, int R, int32_t *phy2log, int32_t *phyrank,
                       int32_t *logcnt)
{
    if (G % N != 0)
        G = N = 1; /* 2.2: the global policy */
    const int group_size = E / G, n = E / N, M = P / N, gpn = R / N, per_gpu = P / R;
    float *gw = malloc(sizeof *gw * (size_t)G);
    int *gpack = malloc(sizeof *gpack * (size_t)G), *gpos = malloc(sizeof *gpos * (size_t)G);
    for (int g = 0; g < G; g++) {
        int64_t s = 0;
        for (int k = 0; k < group_size; k++)
            s += w[g * group_size + k];
        gw[g] = (float)s;
    }
    naive_pack(gw, G, N, gpack, gpos);
    int *list = malloc(sizeof *list * (size_t)E);
    for (int g = 0; g < G; g++)
        for (int k = 0; k < group_size; k++)
            list[(gpack[g] * (G / N) + gpos[g]) * group_size + k] = g * group_size + k;

    int *cnt = malloc(sizeof *cnt * (size_t)n), *of = malloc(sizeof *of * (size_t)M),
        *rk = malloc(sizeof *rk * (size_t)M), *pk = malloc(sizeof *pk * (size_t)M),
        *ps = malloc(sizeof *ps * (size_t)M);
    float *x = malloc(sizeof *x * (size_t)M);
    for (int a = 0; a < N; a++) {
        const int *L = list + a * n;
        for (int j = 0; j < n; j++) {
            cnt[j] = 1;
            of[j] = j;
            rk[j] = 0;
        }
        for (int i = n; i < M; i++) {
            int best = 0;
            for (int j = 1; j < n; j++)
                if ((float)((float)w[L[j]] / (float)cnt[j]) > (float)((float)w[L[best]] / (float)cnt[best]))
                    best = j;
            of[i] = best;
            rk[i] = cnt[best];
            cnt[best]++;
        }
        for (int j = 0; j < n; j++)
            logcnt[L[j]] = cnt[j];
        for (int i = 0; i < M; i++)
            x[i] = (float)((float)w[L[of[i]]] / (float)cnt[of[i]]);
        naive_pack(x, M, gpn, pk, ps);
        for (int i = 0; i < M; i++) {
            int p = (a * gpn + pk[i]) * per_gpu + ps[i];
            phy2log[p] = L[of[i]];
            phyrank[p] = rk[i];
        }
    }
    free(gw);
    free(gpack);
    free(gpos);
    free(list);
    free(cnt);
    free(of);
    free(rk);
    free(pk);
    free(ps);
    free(x);
}

/* ---- running the fast one ---- */

typedef struct {
    tsim_eplb_workspace ws;
    int32_t *phy2log, *phyrank, *logcnt;
} layout_run;

static void run_fast(layout_run *out, const int64_t *w, int E, int P, int G, int N, int R)
{
    tsim_error err = {0};
    tsim_eplb_shape shape = {E, P, G, N, R};
    cr_assert_eq(tsim_eplb_workspace_init(&out->ws, &shape, &err), 0, "%s", err.msg);
    out->phy2log = malloc(sizeof *out->phy2log * (size_t)P);
    out->phyrank = malloc(sizeof *out->phyrank * (size_t)P);
    out->logcnt = malloc(sizeof *out->logcnt * (size_t)E);
    tsim_eplb_rebalance(&out->ws, w, out->phy2log, out->phyrank, out->logcnt);
}

static void run_free(layout_run *r)
{
    tsim_eplb_workspace_free(&r->ws);
    free(r->phy2log);
    free(r->phyrank);
    free(r->logcnt);
}

static void assert_ints(const int32_t *got, const int *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%d] is %d, expected %d", what, i, got[i], want[i]);
}

/* ---- step 3 alone: balanced packing (P = E, one node, no copies) ---- */

Test(eplb_pack, heaviest_first_to_lightest_pack)
{
    /* Order 1 (40), 2 (30), 3 (20), 0 (10): 1 -> GPU 0, 2 -> GPU 1, 3 -> the
     * lighter GPU 1 (30 < 40), and 0 to GPU 0, the only one with room. */
    const int64_t w[4] = {10, 40, 30, 20};
    layout_run r;
    run_fast(&r, w, 4, 4, 1, 1, 2);
    assert_ints(r.phy2log, (int[]){1, 0, 2, 3}, 4, "phy2log");
    assert_ints(r.phyrank, (int[]){0, 0, 0, 0}, 4, "phyrank");
    assert_ints(r.logcnt, (int[]){1, 1, 1, 1}, 4, "logcnt");
    run_free(&r);
}

Test(eplb_pack, equal_weights_keep_index_order_and_lower_pack)
{
    /* All equal: items in index order; every tie goes to the lower pack, so
     * the packs alternate: GPU 0 gets 0 and 2, GPU 1 gets 1 and 3. */
    const int64_t w[4] = {5, 5, 5, 5};
    layout_run r;
    run_fast(&r, w, 4, 4, 1, 1, 2);
    assert_ints(r.phy2log, (int[]){0, 2, 1, 3}, 4, "phy2log");
    run_free(&r);
}

Test(eplb_pack, one_item_per_pack_is_the_identity)
{
    /* n = m: item i to pack i whatever the weights (one expert per GPU). */
    const int64_t w[4] = {1, 50, 3, 70};
    layout_run r;
    run_fast(&r, w, 4, 4, 1, 1, 4);
    assert_ints(r.phy2log, (int[]){0, 1, 2, 3}, 4, "phy2log");
    run_free(&r);
}

Test(eplb_pack, float32_load_sums)
{
    /* 2^24 + 1 is not a float32: expert 0 weighs 2^24, as expert 3 does, and
     * 2^24 + 1 rounds back to 2^24 when a pack adds a 1. In exact integers
     * the 1s would go to GPU 1; in float32 the packs stay tied and they go to
     * the lower GPU 0. */
    const int64_t w[6] = {(INT64_C(1) << 24) + 1, 1, 1, (INT64_C(1) << 24), 0, 0};
    layout_run r;
    run_fast(&r, w, 6, 6, 1, 1, 2);
    /* Order 0, 3 (both 2^24 as floats, index order), 1, 2, 4, 5. 0 -> GPU 0,
     * 3 -> GPU 1, 1 -> GPU 0 (tie, lower pack; load stays 2^24 in float32),
     * 2 -> GPU 0 again (still tied), 4 and 5 -> GPU 1. */
    assert_ints(r.phy2log, (int[]){0, 1, 2, 3, 4, 5}, 6, "phy2log");
    run_free(&r);
}

/* ---- step 2 alone: copies by load per copy (one GPU) ---- */

Test(eplb_copies, by_load_per_copy_not_by_load)
{
    /* 100 and 60, two extra copies: the first goes to expert 0 (100 > 60),
     * leaving 50 per copy, so the second goes to expert 1 (60 > 50). */
    const int64_t w[2] = {100, 60};
    layout_run r;
    run_fast(&r, w, 2, 4, 1, 1, 1);
    assert_ints(r.logcnt, (int[]){2, 2}, 2, "logcnt");
    /* One GPU: physical order is step 3's sort of the loads per copy
     * (50, 30, 50, 30 for physical 0 (e0), 1 (e1), 2 (e0 rank 1), 3 (e1 rank 1)). */
    assert_ints(r.phy2log, (int[]){0, 0, 1, 1}, 4, "phy2log");
    assert_ints(r.phyrank, (int[]){0, 1, 0, 1}, 4, "phyrank");
    run_free(&r);
}

Test(eplb_copies, ties_go_to_the_lower_expert)
{
    /* 60 and 30: the first copy makes expert 0 30 per copy, tying expert 1;
     * the tie goes to the lower index, so expert 0 gets a third copy. */
    const int64_t w[2] = {60, 30};
    layout_run r;
    run_fast(&r, w, 2, 4, 1, 1, 1);
    assert_ints(r.logcnt, (int[]){3, 1}, 2, "logcnt");
    /* Loads per copy: physical 0 (e0) 20, 1 (e1) 30, 2 (e0 r1) 20, 3 (e0 r2) 20. */
    assert_ints(r.phy2log, (int[]){1, 0, 0, 0}, 4, "phy2log");
    assert_ints(r.phyrank, (int[]){0, 0, 1, 2}, 4, "phyrank");
    run_free(&r);
}

Test(eplb_copies, zero_weights_take_copies_by_index)
{
    /* All zero: every copy ties, so expert 0 takes them all (why the planner
     * keeps its layout on an all-zero window, 3.1). */
    const int64_t w[3] = {0, 0, 0};
    layout_run r;
    run_fast(&r, w, 3, 6, 1, 1, 1);
    assert_ints(r.logcnt, (int[]){4, 1, 1}, 3, "logcnt");
    run_free(&r);
}

/* ---- step 1 and the policy: hierarchical vs global ---- */

Test(eplb_policy, groups_equal_nodes_keep_every_node_block)
{
    /* G = N = 2: step 1 is the identity, so each node keeps its experts
     * whatever the weights; within a GPU, positions follow step 3's order
     * (heavier first). */
    const int64_t w[4] = {1, 2, 30, 40};
    layout_run r;
    run_fast(&r, w, 4, 4, 2, 2, 2);
    cr_assert(r.ws.hierarchical);
    assert_ints(r.phy2log, (int[]){1, 0, 3, 2}, 4, "phy2log");
    run_free(&r);
}

Test(eplb_policy, groups_not_a_multiple_of_nodes_is_global)
{
    /* G = 1, N = 2: global, experts cross nodes: order 3, 2, 1, 0; 3 -> GPU 0,
     * 2 -> GPU 1, 1 -> GPU 1 (30 < 40), 0 -> GPU 0. */
    const int64_t w[4] = {1, 2, 30, 40};
    layout_run r;
    run_fast(&r, w, 4, 4, 1, 2, 2);
    cr_assert(!r.ws.hierarchical);
    assert_ints(r.phy2log, (int[]){3, 0, 2, 1}, 4, "phy2log");
    run_free(&r);
}

Test(eplb_policy, whole_groups_move_between_nodes)
{
    /* G = 4, N = 2: group weights 2, 20, 10, 6. Order g1, g2, g3, g0: g1 ->
     * node 0, g2 -> node 1, g3 -> node 1 (10 < 20), g0 -> node 0. Node 0's
     * list is g1 then g0 (by position): experts 2, 3, 0, 1. */
    const int64_t w[8] = {1, 1, 10, 10, 5, 5, 3, 3};
    layout_run r;
    run_fast(&r, w, 8, 8, 4, 2, 2);
    cr_assert(r.ws.hierarchical);
    assert_ints(r.phy2log, (int[]){2, 3, 0, 1, 4, 5, 6, 7}, 8, "phy2log");
    run_free(&r);
}

Test(eplb_policy, readme_example)
{
    /* eplb.md 2.5 (the EPLB README). */
    const int64_t w[12] = {90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86};
    layout_run r;
    run_fast(&r, w, 12, 16, 4, 2, 8);
    cr_assert(r.ws.hierarchical);
    assert_ints(r.phy2log, (int[]){5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1}, 16, "phy2log");
    assert_ints(r.logcnt, (int[]){1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1}, 12, "logcnt");
    /* The second copies (rank 1) of 5, 4, 10 and 1. */
    assert_ints(r.phyrank, (int[]){0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0}, 16, "phyrank");
    run_free(&r);
}

Test(eplb_policy, bad_shapes_are_refused)
{
    tsim_eplb_workspace ws;
    tsim_error err = {0};
    cr_assert_eq(tsim_eplb_workspace_init(&ws, &(tsim_eplb_shape){128, 160, 3, 1, 16}, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "not a multiple of 3 groups"), "%s", err.msg);
    cr_assert_eq(tsim_eplb_workspace_init(&ws, &(tsim_eplb_shape){16, 16, 1, 3, 6}, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_eplb_workspace_init(&ws, &(tsim_eplb_shape){16, 18, 1, 1, 4}, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_eplb_workspace_init(&ws, &(tsim_eplb_shape){16, 8, 1, 1, 4}, &err), TSIM_E_INPUT);
}

/* ---- every vector's "check": EPLB's own output for the record ---- */

static int json_ints(const cJSON *arr, int32_t *out, int max)
{
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        cr_assert(n < max && cJSON_IsNumber(it));
        out[n++] = (int32_t)it->valuedouble;
    }
    return n;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    cJSON *doc = cJSON_Parse(buf);
    free(buf);
    cr_assert(doc, "%s is not JSON", path);
    return doc;
}

/* The weights of the EPLB call: prev_expert_counts (prev), else the record. */
static void vector_weights(const cJSON *doc, int R, int E, int64_t *w)
{
    const cJSON *prev = cJSON_GetObjectItem(doc, "prev_expert_counts");
    if (prev) {
        int e = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, prev) w[e++] = (int64_t)it->valuedouble;
        cr_assert_eq(e, E);
        return;
    }
    memset(w, 0, sizeof *w * (size_t)E);
    const cJSON *row;
    int r = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc, "counts"))
    {
        int e = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, row) w[e++] += (int64_t)it->valuedouble;
        r++;
    }
    cr_assert_eq(r, R);
}

static void check_vector_layout(const char *path, int *checked)
{
    cJSON *doc = read_json(path);
    const cJSON *check = cJSON_GetObjectItem(doc, "check");
    const cJSON *call = cJSON_GetObjectItem(check, "eplb_call");
    if (!call) { /* a cold record: no EPLB call at all */
        cJSON_Delete(doc);
        return;
    }
    const cJSON *counts = cJSON_GetObjectItem(doc, "counts");
    const int R = cJSON_GetArraySize(counts), E = cJSON_GetArraySize(cJSON_GetArrayItem(counts, 0));
    const int P = cJSON_GetObjectItem(call, "num_replicas")->valueint;
    const int G = cJSON_GetObjectItem(call, "num_groups")->valueint;
    const int N = cJSON_GetObjectItem(call, "num_nodes")->valueint;
    cr_assert_eq(cJSON_GetObjectItem(call, "num_gpus")->valueint, R, "%s", path);
    int64_t *w = malloc(sizeof *w * (size_t)E);
    vector_weights(doc, R, E, w);
    layout_run run;
    run_fast(&run, w, E, P, G, N, R);
    const cJSON *policy = cJSON_GetObjectItem(check, "policy");
    if (!policy)
        policy = cJSON_GetObjectItem(check, "eplb_policy");
    cr_assert_str_eq(policy->valuestring, run.ws.hierarchical ? "hierarchical" : "global", "%s", path);
    int32_t *want = malloc(sizeof *want * (size_t)P);
    const cJSON *arr;
    if ((arr = cJSON_GetObjectItem(check, "phy2log"))) {
        cr_assert_eq(json_ints(arr, want, P), P);
        for (int p = 0; p < P; p++)
            cr_assert_eq(run.phy2log[p], want[p], "%s: phy2log[%d] %d, expected %d", path, p, run.phy2log[p], want[p]);
        cr_assert_eq(json_ints(cJSON_GetObjectItem(check, "phyrank"), want, P), P);
        for (int p = 0; p < P; p++)
            cr_assert_eq(run.phyrank[p], want[p], "%s: phyrank[%d]", path, p);
        cr_assert_eq(json_ints(cJSON_GetObjectItem(check, "logcnt"), want, P), E);
        for (int e = 0; e < E; e++)
            cr_assert_eq(run.logcnt[e], want[e], "%s: logcnt[%d]", path, e);
    } else {
        /* LPLB's call (P = E): the vector gives the placement p / hpr. */
        const cJSON *pl = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "expect"), "placement");
        cr_assert_eq(json_ints(pl, want, P), E);
        for (int p = 0; p < P; p++)
            cr_assert_eq(p / (E / R), want[run.phy2log[p]], "%s: expert %d", path, run.phy2log[p]);
    }
    (*checked)++;
    free(want);
    free(w);
    run_free(&run);
    cJSON_Delete(doc);
}

Test(eplb_vectors, layout_matches_every_check)
{
    static char paths[64][1024];
    int checked = 0;
    int n = tsim_test_vector_files("eplb", paths, 64);
    cr_assert_geq(n, 8);
    for (int i = 0; i < n; i++)
        check_vector_layout(paths[i], &checked);
    cr_assert_eq(checked, n - 1, "every eplb vector but the cold one calls EPLB");
    n = tsim_test_vector_files("lplb", paths, 64);
    for (int i = 0; i < n; i++)
        if (strstr(paths[i], "rehome-eplb"))
            check_vector_layout(paths[i], &checked);
}

/* ---- 3.3 the native choice, 3.4 the guest slots, 3.5 the split ---- */

Test(eplb_hosts, native_choice_stay_node_lowest)
{
    /* R 4, rpn 2, 2 physical experts per GPU (hpr 1, K 1). GPUs hold
     * [1,0], [2,0], [3,3], [2,1]; prev = [0, 1, 2, 0].
     * e0: GPU 0 holds it: stays. e1: GPU 1 does not; GPU 0, its node, does.
     * e2: GPU 2 does not; GPU 3 on its node does (GPU 1 is lower but on the
     * other node). e3: nothing on node 0, so the lowest GPU with a copy, 2. */
    tsim_eplb_hosts h;
    cr_assert_eq(tsim_eplb_hosts_init(&h, 4, 4, 2, 2, NULL), 0);
    const int32_t phy2log[8] = {1, 0, 2, 0, 3, 3, 2, 1};
    const int32_t prev[4] = {0, 1, 2, 0};
    tsim_eplb_hosts_build(&h, phy2log, prev);
    assert_ints(h.home, (int[]){0, 0, 3, 2}, 4, "home'");
    /* GPU 1 hosts e2 (slot 0, first position) and e0 (slot 1); GPU 2's two
     * copies of e3 are one native host; GPU 3 hosts e1. */
    cr_assert_eq(h.replicas, 3);
    assert_ints(h.replica_expert, (int[]){2, 0, 1}, 3, "replica expert");
    assert_ints(h.replica_gpu, (int[]){1, 1, 3}, 3, "replica gpu");
    assert_ints(h.replica_slot, (int[]){0, 1, 0}, 3, "replica slot");
    tsim_eplb_hosts_free(&h);
}

Test(eplb_hosts, split_example_of_3_5)
{
    /* Expert 0's copies on GPUs [2, 2, 5], home' 2 (static home 0 holds no
     * copy; one node, so the lowest GPU holding one). Source 4 with 8
     * tokens: q 2, m 2; (j - 4) mod 3 = 2, 0, 1, so copies 1 and 2 get 3 and
     * copy 0 gets 2: GPU 2 keeps 5, GPU 5 receives 3. */
    tsim_eplb_hosts h;
    const int R = 6, E = 6;
    cr_assert_eq(tsim_eplb_hosts_init(&h, R, E, 2, 8, NULL), 0);
    const int32_t phy2log[12] = {1, 2, 3, 4, 0, 0, 5, 1, 2, 3, 0, 4};
    const int32_t prev[6] = {0, 1, 2, 3, 4, 5}; /* the static map, hpr 1 */
    tsim_eplb_hosts_build(&h, phy2log, prev);
    cr_assert_eq(h.home[0], 2);
    cr_assert_eq(tsim_eplb_share(8, 3, 4, 0), 2);
    cr_assert_eq(tsim_eplb_share(8, 3, 4, 1), 3);
    cr_assert_eq(tsim_eplb_share(8, 3, 4, 2), 3);
    int64_t counts[6 * 6] = {0};
    counts[4 * E + 0] = 8;
    int64_t *rows = calloc((size_t)h.replicas * (size_t)R, sizeof *rows);
    tsim_eplb_hosts_tokens(&h, counts, rows);
    int found = 0;
    for (int i = 0; i < h.replicas; i++) {
        if (h.replica_expert[i] != 0)
            continue;
        found++;
        cr_assert_eq(h.replica_gpu[i], 5);
        for (int r = 0; r < R; r++)
            cr_assert_eq(rows[i * R + r], r == 4 ? 3 : 0);
    }
    cr_assert_eq(found, 1, "expert 0 has one replica: GPU 5");
    free(rows);
    tsim_eplb_hosts_free(&h);
}

Test(eplb_hosts, split_rotates_the_remainder)
{
    /* 3 copies, 1 token: source r's token goes to copy r mod 3, so no copy is
     * favoured; every source's shares add up to its tokens. */
    for (int r = 0; r < 7; r++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(tsim_eplb_share(1, 3, r, j), j == r % 3 ? 1 : 0);
    for (int64_t t = 0; t < 50; t++)
        for (int c = 1; c < 9; c++)
            for (int r = 0; r < 20; r++) {
                int64_t s = 0;
                for (int j = 0; j < c; j++) {
                    int64_t sh = tsim_eplb_share(t, c, r, j);
                    cr_assert(sh == t / c || sh == t / c + 1);
                    s += sh;
                }
                cr_assert_eq(s, t);
            }
}

/* ---- the naive implementation equals the fast one ---- */

static int64_t random_weight(uint64_t *st, int pattern, int e, int E)
{
    switch (pattern) {
    case 0:
        return tsim_rand_range(st, 0, 3); /* many ties */
    case 1:
        return tsim_rand_range(st, 0, 100000);
    case 2:
        return e % 5 == 1 ? tsim_rand_range(st, 1000, 50000) : tsim_rand_range(st, 0, 100);
    case 3:
        return 0;
    case 4:
        return 777; /* all equal */
    case 5: /* above 2^24: float rounding decides */
        return (INT64_C(1) << 24) + tsim_rand_range(st, 0, 64);
    case 6:
        return (int64_t)(200000.0 / (1.0 + (double)((e * 37) % E)));
    default:
        return tsim_rand_range(st, 0, INT64_C(1) << 34);
    }
}

Test(eplb_naive, equals_fast_on_random_inputs, .timeout = 600)
{
    uint64_t st = 0xE9B1ULL;
    static const int rpns[] = {1, 2, 3, 4, 8};
    int hierarchical = 0, global = 0;
    for (int iter = 0; iter < 12000; iter++) {
        const int R = (int)tsim_rand_range(&st, 2, 64);
        const int hpr = (int)tsim_rand_range(&st, 1, 8);
        const int E = R * hpr, K = (int)tsim_rand_range(&st, 0, 4);
        const int rpn = rpns[tsim_rand_range(&st, 0, 4)];
        int N = R <= rpn ? 1 : R / rpn;
        if (R > rpn && R % rpn != 0)
            N = 1;
        /* groups: 1, the node count, or a random divisor of E */
        int G;
        int which = (int)tsim_rand_range(&st, 0, 2);
        if (which == 0)
            G = 1;
        else if (which == 1 && E % N == 0)
            G = N;
        else {
            do
                G = (int)tsim_rand_range(&st, 1, E);
            while (E % G != 0);
        }
        const int P = E + R * K;
        const int pattern = (int)tsim_rand_range(&st, 0, 7);
        int64_t *w = malloc(sizeof *w * (size_t)E);
        for (int e = 0; e < E; e++)
            w[e] = random_weight(&st, pattern, e, E);
        layout_run fast;
        run_fast(&fast, w, E, P, G, N, R);
        if (fast.ws.hierarchical)
            hierarchical++;
        else
            global++;
        int32_t *p2l = malloc(sizeof *p2l * (size_t)P), *pr = malloc(sizeof *pr * (size_t)P),
                *lc = malloc(sizeof *lc * (size_t)E);
        naive_eplb(w, E, P, G, N, R, p2l, pr, lc);
        for (int p = 0; p < P; p++)
            cr_assert(fast.phy2log[p] == p2l[p] && fast.phyrank[p] == pr[p],
                      "iter %d (E %d P %d G %d N %d R %d): physical %d is %d/%d, naive %d/%d", iter, E, P, G, N, R,
                      p, fast.phy2log[p], fast.phyrank[p], p2l[p], pr[p]);
        int64_t total = 0;
        for (int e = 0; e < E; e++) {
            cr_assert_eq(fast.logcnt[e], lc[e], "iter %d: logcnt[%d]", iter, e);
            cr_assert_geq(lc[e], 1);
            total += lc[e];
        }
        cr_assert_eq(total, P);
        free(p2l);
        free(pr);
        free(lc);
        free(w);
        run_free(&fast);
    }
    cr_assert(hierarchical > 1000 && global > 1000, "both policies drawn: %d, %d", hierarchical, global);
}

/* ==== the planner (eplb.md section 3) ==== */

#include <math.h>

#include "eplb.h"
#include "evaluate.h"
#include "registry.h"
#include "session.h"
#include "vector.h"

typedef struct {
    tsim_session s;
} planner_run;

static void open_session(tsim_session *s, int R, int E, int rpn, int K, const tsim_planner_options *opts)
{
    tsim_planner p = {0};
    p.desc = tsim_planner_find("eplb");
    cr_assert(p.desc != NULL, "eplb is registered");
    snprintf(p.label, sizeof p.label, "eplb");
    tsim_planner_configure(&p, p.desc, "eplb", opts);
    tsim_error err = {0};
    cr_assert_eq(tsim_session_init(s, R, E, rpn, K, NULL, &p, 1, 3.0, &err), 0, "%s", err.msg);
}

static double last_metric(const tsim_session *s, int m)
{
    const tsim_series *x = &s->results[0].metrics[m];
    return x->values[x->n - 1];
}

static void check_eplb_vector(const char *path)
{
    tsim_vector v;
    tsim_error err = {0};
    cr_assert_eq(tsim_vector_load(&v, path, &err), 0, "%s", err.msg);
    cr_assert_str_eq(v.planner, "eplb");
    cr_assert(v.has_expect && v.has_rehomed && tsim_plan_has_placement(&v.expect), "%s: a full expect", v.name);
    tsim_session s;
    open_session(&s, v.record.ranks, v.record.experts, v.ranks_per_node, v.slots, &v.opts);
    cr_assert_eq(tsim_vector_run(&s, &v, &err), 0, "%s: %s", v.name, err.msg);
    cr_assert(tsim_plan_has_placement(&s.plan));
    for (int e = 0; e < v.record.experts; e++)
        cr_assert_eq(s.plan.placement[e], v.expect.placement[e], "%s: home'(%d) is %d, expected %d", v.name, e,
                     s.plan.placement[e], v.expect.placement[e]);
    tsim_test_assert_plans_equal(&s.plan, &v.expect, v.name);
    for (int r = 0; r < v.record.ranks; r++)
        cr_assert_eq(s.ev.load_after[r], v.loads_after[r], "%s: load of rank %d", v.name, r);
    cr_assert(fabs(last_metric(&s, TSIM_M_RHO_BEFORE) - v.rho_before) <= 1e-9 * fabs(v.rho_before));
    cr_assert(fabs(last_metric(&s, TSIM_M_RHO_AFTER) - v.rho_after) <= 1e-9 * fabs(v.rho_after) + 1e-15);
    cr_assert_eq((int64_t)last_metric(&s, TSIM_M_INTRA), v.intra, "%s: intra", v.name);
    cr_assert_eq((int64_t)last_metric(&s, TSIM_M_INTER), v.inter, "%s: inter", v.name);
    cr_assert_eq((int64_t)last_metric(&s, TSIM_M_REHOMED_INTRA), v.rehomed_intra, "%s: rehomed_intra", v.name);
    cr_assert_eq((int64_t)last_metric(&s, TSIM_M_REHOMED_INTER), v.rehomed_inter, "%s: rehomed_inter", v.name);
    cr_assert(tsim_session_metric_on(&s, TSIM_M_REHOMED_INTRA), "eplb re-homes: the metrics are reported");
    tsim_session_free(&s);
    tsim_vector_free(&v);
}

Test(eplb_vectors, every_plan_exactly)
{
    static char paths[64][1024];
    int n = tsim_test_vector_files("eplb", paths, 64);
    cr_assert_geq(n, 8);
    for (int i = 0; i < n; i++)
        check_eplb_vector(paths[i]);
}

/* ---- 3.1: when the layout changes ---- */

typedef struct {
    tsim_session s;
    tsim_record rec;
    int R, E, P;
    int32_t *phy2log, *home;
} schedule_rig;

static void schedule_open(schedule_rig *g, int history, int interval)
{
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    TSIM_OPTS(o, eplb)->history = history;
    TSIM_OPTS(o, eplb)->interval = interval;
    g->R = 4;
    g->E = 8;
    g->P = 12;
    open_session(&g->s, g->R, g->E, 2, 1, &o);
    cr_assert_eq(tsim_record_alloc(&g->rec, g->R, g->E, NULL), 0);
    g->phy2log = malloc(sizeof *g->phy2log * (size_t)g->P);
    g->home = malloc(sizeof *g->home * (size_t)g->E);
}

static void schedule_close(schedule_rig *g)
{
    tsim_session_free(&g->s);
    tsim_record_free(&g->rec);
    free(g->phy2log);
    free(g->home);
}

/* Record with tokens per expert tpe (split evenly) in layer; returns whether
 * the planner recomputed. */
static bool schedule_step(schedule_rig *g, int64_t layer, const int64_t *tpe)
{
    tsim_record_split_even(&g->rec, tpe);
    g->rec.layer = layer;
    tsim_error err = {0};
    cr_assert_eq(tsim_session_record(&g->s, &g->rec, &err), 0, "%s", err.msg);
    return tsim_eplb_state_recomputed(g->s.planners[0].state);
}

/* The layout in force equals EPLB of w (global policy: groups 1, 2 nodes). */
static void assert_layout_of(schedule_rig *g, int64_t layer, const int64_t *w)
{
    cr_assert(tsim_eplb_state_layout(g->s.planners[0].state, layer, g->phy2log, g->home));
    layout_run want;
    run_fast(&want, w, g->E, g->P, 1, 2, g->R);
    for (int p = 0; p < g->P; p++)
        cr_assert_eq(g->phy2log[p], want.phy2log[p], "physical %d", p);
    run_free(&want);
}

static void random_tpe(uint64_t *st, int64_t *tpe, int E)
{
    for (int e = 0; e < E; e++)
        tpe[e] = tsim_rand_range(st, 0, 400) * (e == 3 ? 5 : 1);
}

Test(eplb_schedule, prev_cold_then_every_interval_per_layer)
{
    schedule_rig g;
    schedule_open(&g, TSIM_EPLB_HISTORY_PREV, 2);
    uint64_t st = 17;
    int64_t tpe[8], window[8] = {0}, other[8];
    /* Layer 0's records i = 0..6, with a layer-1 record between each: layer 1
     * keeps its own count (cold at its first record). */
    for (int i = 0; i < 7; i++) {
        random_tpe(&st, tpe, 8);
        bool recomputed = schedule_step(&g, 0, tpe);
        const bool due = i >= 1 && (i - 1) % 2 == 0;
        cr_assert_eq(recomputed, due, "record %d of layer 0", i);
        if (i == 0) {
            cr_assert_eq(g.s.plan.count, 0, "cold: no replicas");
            cr_assert(tsim_plan_has_placement(&g.s.plan));
            for (int e = 0; e < 8; e++)
                cr_assert_eq(g.s.plan.placement[e], e / 2, "cold: the static map");
        } else {
            cr_assert_gt(g.s.plan.count, 0, "a layout's replicas are listed in every record");
        }
        if (due)
            assert_layout_of(&g, 0, window); /* record 0 alone, then the 2 records before i */
        if (due)
            memset(window, 0, sizeof window);
        for (int e = 0; e < 8; e++)
            window[e] += tpe[e];
        random_tpe(&st, other, 8);
        cr_assert_eq(schedule_step(&g, 1, other), i == 1 || i == 3 || i == 5, "layer 1, its record %d", i);
    }
    schedule_close(&g);
}

Test(eplb_schedule, oracle_every_record_none_never)
{
    uint64_t st = 5;
    int64_t tpe[8];
    schedule_rig g;
    schedule_open(&g, TSIM_EPLB_HISTORY_ORACLE, 8);
    for (int i = 0; i < 4; i++) {
        random_tpe(&st, tpe, 8);
        cr_assert(schedule_step(&g, 0, tpe));
        assert_layout_of(&g, 0, tpe);
    }
    schedule_close(&g);

    schedule_open(&g, TSIM_EPLB_HISTORY_NONE, 1);
    for (int i = 0; i < 4; i++) {
        random_tpe(&st, tpe, 8);
        cr_assert(!schedule_step(&g, 0, tpe));
        cr_assert_eq(g.s.plan.count, 0);
        cr_assert_eq(last_metric(&g.s, TSIM_M_RHO_AFTER), last_metric(&g.s, TSIM_M_RHO_BEFORE));
        cr_assert_eq(last_metric(&g.s, TSIM_M_REHOMED_INTRA) + last_metric(&g.s, TSIM_M_REHOMED_INTER), 0.0);
    }
    schedule_close(&g);
}

Test(eplb_schedule, all_zero_windows_keep_the_layout)
{
    schedule_rig g;
    schedule_open(&g, TSIM_EPLB_HISTORY_PREV, 1);
    const int64_t hot[8] = {500, 10, 10, 10, 10, 10, 10, 10}, zero[8] = {0};
    int32_t kept[12];
    /* A zero first record: the window at i = 1 is all zero, still cold. */
    cr_assert(!schedule_step(&g, 0, zero));
    cr_assert(!schedule_step(&g, 0, hot));
    cr_assert(!tsim_eplb_state_layout(g.s.planners[0].state, 0, g.phy2log, g.home), "still cold");
    cr_assert_eq(g.s.plan.count, 0);
    /* i = 2 recomputes from the hot record; i = 3 from a zero one keeps it. */
    cr_assert(schedule_step(&g, 0, zero));
    assert_layout_of(&g, 0, hot);
    memcpy(kept, g.phy2log, sizeof kept);
    int replicas = g.s.plan.count;
    cr_assert(!schedule_step(&g, 0, hot), "the zero window kept the layout");
    cr_assert_eq(g.s.plan.count, replicas);
    cr_assert(tsim_eplb_state_layout(g.s.planners[0].state, 0, g.phy2log, g.home));
    cr_assert_arr_eq(g.phy2log, kept, sizeof kept);
    cr_assert_eq(last_metric(&g.s, TSIM_M_REHOMED_INTRA) + last_metric(&g.s, TSIM_M_REHOMED_INTER), 0.0);
    schedule_close(&g);

    /* Oracle: an all-zero record while cold stays cold. */
    schedule_open(&g, TSIM_EPLB_HISTORY_ORACLE, 8);
    cr_assert(!schedule_step(&g, 0, zero));
    cr_assert_eq(g.s.plan.count, 0);
    schedule_close(&g);
}

/* ---- section 5: configuration errors ---- */

static void assert_init_error(int R, int E, int rpn, int K, int groups, int interval, int history, const char *want)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, R, E, rpn, K, NULL, &err), 0, "%s", err.msg);
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    TSIM_OPTS(o, eplb)->groups = groups;
    TSIM_OPTS(o, eplb)->interval = interval;
    TSIM_OPTS(o, eplb)->history = history;
    void *state = NULL;
    cr_assert_eq(tsim_planner_init_with(&tsim_planner_eplb, &state, &topo, &o, &err), TSIM_E_INPUT, "expected: %s", want);
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
    cr_assert_null(state);
    tsim_topology_free(&topo);
}

Test(eplb_errors, configuration)
{
    assert_init_error(16, 128, 8, 2, 3, 8, TSIM_EPLB_HISTORY_PREV,
                      "eplb: 128 experts are not a multiple of --eplb-groups 3");
    assert_init_error(16, 128, 8, 2, 0, 8, TSIM_EPLB_HISTORY_PREV, "--eplb-groups must be 1 or more");
    assert_init_error(16, 128, 8, 2, 1, 0, TSIM_EPLB_HISTORY_PREV, "--eplb-interval must be 1 or more");
    assert_init_error(16, 128, 8, 2, 1, 8, 7, "unknown history");
    assert_init_error(12, 48, 8, 2, 1, 8, TSIM_EPLB_HISTORY_PREV, "EPLB needs equal nodes");
    /* Allowed: K = 0, and fewer ranks than a node. */
    tsim_planner_options o;
    tsim_planner_options_default(&o);
    tsim_session s;
    open_session(&s, 4, 8, 8, 0, &o);
    tsim_session_free(&s);
    /* The option parser names the option. */
    tsim_error err = {0};
    bool known;
    cr_assert_eq(tsim_planner_options_set(&o, "eplb-history", "sometimes", &known, &err), TSIM_E_INPUT);
    cr_assert(known && strstr(err.msg, "--eplb-history"), "%s", err.msg);
    cr_assert_eq(tsim_planner_options_set(&o, "eplb-interval", "0", &known, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_planner_options_set(&o, "eplb-groups", "4", &known, &err), 0);
    cr_assert_eq(TSIM_OPTS(o, eplb)->groups, 4);
}

/* ---- properties over random records and shapes ---- */

typedef struct {
    const tsim_topology *topo;
    int per_gpu;
    int32_t *phy2log, *home, *prev_home; /* [P], [E], [E * layers] */
    bool *seen_layer;
    int64_t *tpe, *model_load;           /* [E], [R] */
    int64_t records;
} property_ctx;

/* After every plan: the evaluator has accepted it (the session checked);
 * loads equal the copies' shares of EPLB's model within the integer split and
 * exactly an independent split copy by copy; the re-homing counts equal a
 * count from the two consecutive placements. */
static int property_hook(void *vctx, tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                         const tsim_metrics *m, tsim_error *err)
{
    (void)planner;
    (void)err;
    property_ctx *c = vctx;
    const tsim_topology *t = c->topo;
    const int R = t->ranks, E = t->experts, P = R * c->per_gpu;
    cr_assert(tsim_plan_has_placement(plan));
    int32_t *prev = c->prev_home + (size_t)rec->layer * (size_t)E;
    if (!c->seen_layer[rec->layer]) {
        memcpy(prev, t->home, sizeof *prev * (size_t)E);
        c->seen_layer[rec->layer] = true;
    }
    int64_t moved_intra = 0, moved_inter = 0;
    for (int e = 0; e < E; e++)
        if (plan->placement[e] != prev[e]) {
            if (plan->placement[e] / t->ranks_per_node == prev[e] / t->ranks_per_node)
                moved_intra++;
            else
                moved_inter++;
        }
    cr_assert_eq((int64_t)m->v[TSIM_M_REHOMED_INTRA], moved_intra, "record %lld", (long long)rec->index);
    cr_assert_eq((int64_t)m->v[TSIM_M_REHOMED_INTER], moved_inter, "record %lld", (long long)rec->index);
    memcpy(prev, plan->placement, sizeof *prev * (size_t)E);

    tsim_record_expert_totals(rec, c->tpe);
    if (!tsim_eplb_state_layout(s->planners[0].state, rec->layer, c->phy2log, c->home)) {
        /* Cold: the static map and no replicas. */
        cr_assert_eq(plan->count, 0);
        for (int e = 0; e < E; e++)
            cr_assert_eq(plan->placement[e], t->home[e]);
        c->records++;
        return 0;
    }
    for (int e = 0; e < E; e++)
        cr_assert_eq(plan->placement[e], c->home[e]);
    /* Every expert has a copy at home'; copies per expert from phy2log. */
    int32_t *copies = calloc((size_t)E, sizeof *copies), *seen = calloc((size_t)E, sizeof *seen);
    for (int p = 0; p < P; p++)
        copies[c->phy2log[p]]++;
    for (int e = 0; e < E; e++) {
        bool at_home = false;
        for (int p = 0; p < P; p++)
            at_home |= c->phy2log[p] == e && p / c->per_gpu == c->home[e];
        cr_assert(at_home, "expert %d has no copy on home' %d", e, c->home[e]);
    }
    /* Independent split, copy by copy in physical order (3.5), and the
     * model's real-valued shares tpe * copies_on_g / c. */
    memset(c->model_load, 0, sizeof *c->model_load * (size_t)R);
    double *model = calloc((size_t)R, sizeof *model), *slack = calloc((size_t)R, sizeof *slack);
    for (int p = 0; p < P; p++) {
        const int e = c->phy2log[p], g = p / c->per_gpu, j = seen[e]++, n = copies[e];
        for (int r = 0; r < R; r++) {
            const int64_t tk = tsim_count(rec, r, e);
            const int64_t share = tk / n + (((j - r) % n + n) % n < tk % n ? 1 : 0);
            c->model_load[g] += share;
        }
        model[g] += (double)c->tpe[e] / (double)n;
        slack[g] += (double)R; /* each source's share of one copy is off by less than 1 */
    }
    int64_t total = 0;
    for (int r = 0; r < R; r++) {
        cr_assert_eq(s->ev.load_after[r], c->model_load[r], "rank %d: load %lld, split copy by copy %lld", r,
                     (long long)s->ev.load_after[r], (long long)c->model_load[r]);
        cr_assert(fabs((double)s->ev.load_after[r] - model[r]) <= slack[r] + 1e-6,
                  "rank %d: load %lld, EPLB's model %.3f", r, (long long)s->ev.load_after[r], model[r]);
        total += s->ev.load_after[r];
    }
    int64_t want_total = 0;
    for (int e = 0; e < E; e++)
        want_total += c->tpe[e];
    cr_assert_eq(total, want_total);
    /* Replicas: R * K less the extra copies on a GPU that already holds one. */
    int64_t dup = 0;
    for (int p = 0; p < P; p++)
        for (int q = (p / c->per_gpu) * c->per_gpu; q < p; q++)
            if (c->phy2log[q] == c->phy2log[p]) {
                dup++;
                break;
            }
    cr_assert_eq(plan->count, (int64_t)R * t->slots - dup);
    free(copies);
    free(seen);
    free(model);
    free(slack);
    c->records++;
    return 0;
}

Test(eplb_props, random_records_and_shapes, .timeout = 900)
{
    uint64_t st = 0x5EED;
    int64_t records = 0, shapes = 0, refused = 0;
    while (records < 10000) {
        tsim_random_shape shape;
        tsim_random_shape_draw(&st, 64, &shape);
        shape.slots = (int)tsim_rand_range(&st, 0, 4);
        shape.ranks_per_node = (int)tsim_rand_range(&st, 1, 8);
        const int R = shape.ranks, E = shape.experts, rpn = shape.ranks_per_node;
        tsim_planner_options o;
        tsim_planner_options_default(&o);
        const int nodes = R > rpn ? R / rpn : 1;
        TSIM_OPTS(o, eplb)->groups = tsim_rand_range(&st, 0, 1) ? 1 : nodes;
        TSIM_OPTS(o, eplb)->history = (int)tsim_rand_range(&st, 0, 2);
        TSIM_OPTS(o, eplb)->interval = (int)tsim_rand_range(&st, 1, 4);
        if (R > rpn && R % rpn != 0) {
            assert_init_error(R, E, rpn, shape.slots, 1, 8, TSIM_EPLB_HISTORY_PREV, "EPLB needs equal nodes");
            refused++;
            continue;
        }
        if (E % TSIM_OPTS(o, eplb)->groups != 0)
            TSIM_OPTS(o, eplb)->groups = 1;
        tsim_session s;
        open_session(&s, R, E, rpn, shape.slots, &o);
        const int layers = (int)tsim_rand_range(&st, 1, 3), n = (int)tsim_rand_range(&st, 4, 12);
        property_ctx c = {.topo = &s.topo, .per_gpu = E / R + shape.slots};
        c.phy2log = malloc(sizeof *c.phy2log * (size_t)(R * c.per_gpu));
        c.home = malloc(sizeof *c.home * (size_t)E);
        c.prev_home = malloc(sizeof *c.prev_home * (size_t)E * (size_t)layers);
        c.seen_layer = calloc((size_t)layers, sizeof *c.seen_layer);
        c.tpe = malloc(sizeof *c.tpe * (size_t)E);
        c.model_load = malloc(sizeof *c.model_load * (size_t)R);
        s.hook = property_hook;
        s.hook_ctx = &c;
        for (int i = 0; i < n; i++) {
            tsim_record rec;
            tsim_random_record(&st, &shape, &rec);
            rec.layer = i % layers;
            rec.index = i;
            tsim_error err = {0};
            cr_assert_eq(tsim_session_record(&s, &rec, &err), 0, "R %d E %d K %d rpn %d: %s", R, E, shape.slots, rpn,
                         err.msg);
            tsim_record_free(&rec);
        }
        records += c.records;
        shapes++;
        free(c.phy2log);
        free(c.home);
        free(c.prev_home);
        free(c.seen_layer);
        free(c.tpe);
        free(c.model_load);
        tsim_session_free(&s);
    }
    cr_assert_geq(records, 10000);
    cr_assert_gt(refused, 0, "unequal nodes were drawn and refused");
    cr_log_info("%lld records over %lld shapes", (long long)records, (long long)shapes);
}

/* ---- placements in the evaluator (eplb.md 1.2, 1.3) ---- */

typedef struct {
    tsim_topology topo;
    tsim_evaluator ev;
    tsim_plan plan;
    tsim_record rec;
} eval_rig;

/* R 4, E 8 (hpr 2), K 1, rpn 2; expert e gets 10 * (e + 1) tokens from
 * source 0 only. */
static void eval_open(eval_rig *g)
{
    cr_assert_eq(tsim_topology_init(&g->topo, 4, 8, 2, 1, NULL, NULL), 0);
    cr_assert_eq(tsim_evaluator_init(&g->ev, &g->topo, NULL), 0);
    cr_assert_eq(tsim_plan_init(&g->plan, 4, 4, NULL), 0);
    cr_assert_eq(tsim_record_alloc(&g->rec, 4, 8, NULL), 0);
    for (int e = 0; e < 8; e++)
        g->rec.counts[e] = 10 * (e + 1);
}

static void eval_close(eval_rig *g)
{
    tsim_record_free(&g->rec);
    tsim_plan_free(&g->plan);
    tsim_evaluator_free(&g->ev);
    tsim_topology_free(&g->topo);
}

static void set_placement(tsim_plan *p, const int32_t *home)
{
    int32_t *pl = tsim_plan_placement(p, 8);
    cr_assert(pl != NULL);
    memcpy(pl, home, sizeof *pl * 8);
}

Test(eplb_evaluate, loads_traffic_and_moves_use_home_prime)
{
    eval_rig g;
    eval_open(&g);
    /* Experts 0 and 7 swap ranks 0 and 3 (across nodes); expert 1 moves to
     * rank 1 (same node): rank 0 has 1 native, rank 1 three (full: hpr + K
     * = 3). Expert 7 (80 tokens) has a replica on rank 2, which keeps its 2
     * natives and so has one slot, slot 0. */
    const int32_t home[8] = {3, 1, 1, 1, 2, 2, 3, 0};
    set_placement(&g.plan, home);
    int i = tsim_plan_add(&g.plan, 7, 2, 0, 30);
    tsim_plan_alloc_row(&g.plan, i)[0] = 30;
    tsim_metrics m;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluate(&g.ev, &g.rec, &g.plan, 3.0, "hand", &m, &err), 0, "%s", err.msg);
    /* Static loads 30, 70, 110, 150: rho_before from them. */
    cr_assert_float_eq(m.v[TSIM_M_RHO_BEFORE], (150.0 - 90.0) / 90.0, 1e-12);
    /* home' loads: rank 0 expert 7 (80 - 30), rank 1 20+30+40, rank 2 50+60+30, rank 3 10+70. */
    const int64_t want[4] = {50, 90, 140, 80};
    for (int r = 0; r < 4; r++)
        cr_assert_eq(g.ev.load_after[r], want[r], "rank %d", r);
    cr_assert_eq(m.v[TSIM_M_OFFLOADED], 30.0);
    /* Replica on rank 2 (node 1) of an expert at home' 0 (node 0): inter. */
    cr_assert_eq(m.v[TSIM_M_INTER], 1.0);
    cr_assert_eq(m.v[TSIM_M_INTRA], 0.0);
    /* Source 0 is on node 0: before, experts 4..7 cross (50+60+70+80); after,
     * experts 0, 4, 5, 6 at home' on node 1 and the 30 tokens to rank 2. */
    cr_assert_eq(m.v[TSIM_M_TRAFFIC_INTER_BEFORE], 260.0);
    cr_assert_eq(m.v[TSIM_M_TRAFFIC_INTER_AFTER], 10.0 + 50 + 60 + 70 + 30);
    /* Moves from the static map: 0 (0 -> 3) and 7 (3 -> 0) cross nodes; 1
     * (0 -> 1) stays on node 0. */
    cr_assert_eq(m.v[TSIM_M_REHOMED_INTRA], 1.0);
    cr_assert_eq(m.v[TSIM_M_REHOMED_INTER], 2.0);
    cr_assert_eq(m.v[TSIM_M_WEIGHTED], 3.0, "moves are not in weighted");
    /* Against the same placement as the previous one: no moves. */
    cr_assert_eq(tsim_evaluate_placed(&g.ev, &g.rec, &g.plan, home, 3.0, "hand", &m, &err), 0);
    cr_assert_eq(m.v[TSIM_M_REHOMED_INTRA] + m.v[TSIM_M_REHOMED_INTER], 0.0);
    /* A plan without a placement after a re-homed one moves experts back. */
    tsim_plan_reset(&g.plan);
    cr_assert(!tsim_plan_has_placement(&g.plan));
    cr_assert_eq(tsim_evaluate_placed(&g.ev, &g.rec, &g.plan, home, 3.0, "hand", &m, &err), 0);
    cr_assert_eq(m.v[TSIM_M_REHOMED_INTER], 2.0);
    eval_close(&g);
}

static void assert_rejected(eval_rig *g, const char *want)
{
    tsim_metrics m;
    tsim_error err = {0};
    cr_assert_eq(tsim_evaluate(&g->ev, &g->rec, &g->plan, 3.0, "eplb", &m, &err), TSIM_E_INTERNAL, "expected: %s",
                 want);
    cr_assert(strstr(err.msg, want) && strstr(err.msg, "eplb") && strstr(err.msg, "record"), "'%s' lacks '%s'",
              err.msg, want);
    tsim_plan_reset(&g->plan);
}

Test(eplb_evaluate, placement_rules_of_1_3)
{
    eval_rig g;
    eval_open(&g);
    const int32_t fine[8] = {0, 0, 1, 1, 2, 2, 3, 3}, crowded[8] = {1, 1, 1, 3, 2, 2, 3, 3};
    const int32_t off[8] = {0, 0, 1, 1, 2, 2, 3, 4};
    set_placement(&g.plan, off);
    assert_rejected(&g, "expert 7 on rank 4");
    set_placement(&g.plan, fine);
    g.plan.placement_experts = 7;
    assert_rejected(&g, "the placement has 7 entries");
    /* Rank 1: 3 natives + 1 guest > hpr + K = 3. */
    set_placement(&g.plan, crowded);
    tsim_plan_add(&g.plan, 4, 1, 0, 0);
    assert_rejected(&g, "rank 1 hosts 3 natives + 1 guests > hpr + K = 3");
    /* Rank 0 has no natives: slots 0..2. Slot 3 is too far, slot 0 twice clashes. */
    set_placement(&g.plan, crowded);
    tsim_plan_add(&g.plan, 4, 0, 3, 0);
    assert_rejected(&g, "uses slot 3, but hpr + K - natives = 3");
    set_placement(&g.plan, crowded);
    tsim_plan_add(&g.plan, 4, 0, 0, 0);
    tsim_plan_add(&g.plan, 6, 0, 0, 0);
    assert_rejected(&g, "slot 0 of rank 0 holds both");
    /* A guest at home': expert 4 lives on rank 2. */
    set_placement(&g.plan, crowded);
    tsim_plan_add(&g.plan, 4, 2, 0, 0);
    assert_rejected(&g, "on its home rank 2");
    /* Its static home is a fine guest now: rank 0, slot 2 of 3. */
    set_placement(&g.plan, crowded);
    int i = tsim_plan_add(&g.plan, 0, 0, 2, 5);
    tsim_plan_alloc_row(&g.plan, i)[0] = 5;
    tsim_metrics m;
    cr_assert_eq(tsim_evaluate(&g.ev, &g.rec, &g.plan, 3.0, "eplb", &m, NULL), 0);
    cr_assert_eq(g.ev.load_after[0], 5);
    cr_assert_eq(m.v[TSIM_M_INTRA], 1.0);
    eval_close(&g);
}
