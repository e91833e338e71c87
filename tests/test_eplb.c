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
    int32_t prev[6];
    tsim_eplb_static_map(R, E, prev);
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
