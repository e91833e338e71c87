#include "eplb_hosts.h"

#include <stdlib.h>
#include <string.h>

int tsim_eplb_hosts_init(tsim_eplb_hosts *h, int ranks, int experts, int per_gpu, int ranks_per_node,
                         tsim_error *err)
{
    memset(h, 0, sizeof *h);
    if (ranks < 1 || experts < 1 || per_gpu < 1 || ranks_per_node < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "eplb: %d ranks, %d experts, %d per GPU, %d per node", ranks,
                              experts, per_gpu, ranks_per_node);
    h->ranks = ranks;
    h->experts = experts;
    h->per_gpu = per_gpu;
    h->ranks_per_node = ranks_per_node;
    h->physical = ranks * per_gpu;
    const size_t E = (size_t)experts, P = (size_t)h->physical, R = (size_t)ranks;
    h->home = malloc(sizeof *h->home * E);
    h->copy_start = malloc(sizeof *h->copy_start * (E + 1));
    h->copy_phys = malloc(sizeof *h->copy_phys * P);
    h->copy_host = malloc(sizeof *h->copy_host * P);
    h->next_copy = malloc(sizeof *h->next_copy * E);
    h->guests = malloc(sizeof *h->guests * R);
    h->replica_expert = malloc(sizeof *h->replica_expert * P);
    h->replica_gpu = malloc(sizeof *h->replica_gpu * P);
    h->replica_slot = malloc(sizeof *h->replica_slot * P);
    if (!h->home || !h->copy_start || !h->copy_phys || !h->copy_host || !h->next_copy || !h->guests ||
        !h->replica_expert || !h->replica_gpu || !h->replica_slot) {
        tsim_eplb_hosts_free(h);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for EPLB's hosts (%zu physical experts)", P);
    }
    return TSIM_OK;
}

void tsim_eplb_hosts_free(tsim_eplb_hosts *h)
{
    free(h->home);
    free(h->copy_start);
    free(h->copy_phys);
    free(h->copy_host);
    free(h->next_copy);
    free(h->guests);
    free(h->replica_expert);
    free(h->replica_gpu);
    free(h->replica_slot);
    memset(h, 0, sizeof *h);
}

/* 3.3: copies are in ascending physical order, so ascending GPU order. */
static int32_t choose_native(const tsim_eplb_hosts *h, int e, int32_t prev)
{
    const int32_t *phys = h->copy_phys + h->copy_start[e];
    const int c = h->copy_start[e + 1] - h->copy_start[e];
    const int prev_node = prev / h->ranks_per_node;
    int32_t on_node = -1;
    for (int k = 0; k < c; k++) {
        const int32_t gpu = phys[k] / h->per_gpu;
        if (gpu == prev)
            return gpu;
        if (on_node < 0 && gpu / h->ranks_per_node == prev_node)
            on_node = gpu;
    }
    return on_node >= 0 ? on_node : phys[0] / h->per_gpu;
}

void tsim_eplb_hosts_build(tsim_eplb_hosts *h, const int32_t *phy2log, const int32_t *prev)
{
    const int E = h->experts, P = h->physical;
    memset(h->next_copy, 0, sizeof *h->next_copy * (size_t)E);
    for (int p = 0; p < P; p++)
        h->next_copy[phy2log[p]]++;
    h->copy_start[0] = 0;
    for (int e = 0; e < E; e++) {
        h->copy_start[e + 1] = h->copy_start[e] + h->next_copy[e];
        h->next_copy[e] = h->copy_start[e];
    }
    for (int p = 0; p < P; p++)
        h->copy_phys[h->next_copy[phy2log[p]]++] = p;
    for (int e = 0; e < E; e++)
        h->home[e] = choose_native(h, e, prev[e]);

    /* Hosts in physical order: a copy on the GPU of the expert's previous
     * copy joins that host (copies on one GPU are consecutive). */
    memset(h->guests, 0, sizeof *h->guests * (size_t)h->ranks);
    for (int e = 0; e < E; e++)
        h->next_copy[e] = h->copy_start[e];
    h->replicas = 0;
    for (int p = 0; p < P; p++) {
        const int e = phy2log[p], at = h->next_copy[e]++, gpu = p / h->per_gpu;
        if (gpu == h->home[e]) {
            h->copy_host[at] = -1;
        } else if (at > h->copy_start[e] && h->copy_phys[at - 1] / h->per_gpu == gpu) {
            h->copy_host[at] = h->copy_host[at - 1];
        } else {
            const int i = h->replicas++;
            h->replica_expert[i] = e;
            h->replica_gpu[i] = gpu;
            h->replica_slot[i] = h->guests[gpu]++;
            h->copy_host[at] = i;
        }
    }
}

void tsim_eplb_hosts_tokens(const tsim_eplb_hosts *h, const int64_t *counts, int64_t *rows)
{
    const int R = h->ranks, E = h->experts;
    memset(rows, 0, sizeof *rows * (size_t)h->replicas * (size_t)R);
    for (int e = 0; e < E; e++) {
        const int first = h->copy_start[e], c = h->copy_start[e + 1] - first;
        if (c == 1)
            continue; /* the only copy is at home' */
        const int32_t *host = h->copy_host + first;
        for (int r = 0; r < R; r++) {
            const int64_t t = counts[(size_t)r * (size_t)E + (size_t)e];
            if (t == 0)
                continue;
            for (int j = 0; j < c; j++)
                if (host[j] >= 0)
                    rows[(size_t)host[j] * (size_t)R + (size_t)r] += tsim_eplb_share(t, c, r, j);
        }
    }
}
