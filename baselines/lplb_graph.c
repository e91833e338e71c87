/* LPLB replica graphs (baselines.md, `lplb`, "Graphs"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lplb.h"
#include "parse.h"

static int graph_alloc(tsim_lplb_graph *g, const char *name, int group_size, int dups, tsim_error *err)
{
    memset(g, 0, sizeof *g);
    g->r2o = malloc(sizeof *g->r2o * (size_t)group_size * (size_t)dups);
    if (!g->r2o)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb graph %s", name);
    g->group_size = group_size;
    g->dups = dups;
    snprintf(g->name, sizeof g->name, "%s", name);
    return TSIM_OK;
}

/* "MxN" with both factors in 1..TSIM_MAX_RANKS; anything else is rejected. */
static int parse_torus(const char *dims, int *m, int *n, tsim_error *err)
{
    const char *x = strchr(dims, 'x');
    char left[16], right[16];
    size_t ll = x ? (size_t)(x - dims) : 0;
    if (!x || ll == 0 || ll >= sizeof left || strlen(x + 1) == 0 || strlen(x + 1) >= sizeof right)
        return tsim_error_set(err, TSIM_E_INPUT, "lplb graph 'torus:%s': expected torus:MxN, e.g. torus:4x8", dims);
    memcpy(left, dims, ll);
    left[ll] = '\0';
    snprintf(right, sizeof right, "%s", x + 1);
    int rc = tsim_parse_int(left, 0, TSIM_MAX_RANKS, m, "lplb torus M", err);
    if (!rc)
        rc = tsim_parse_int(right, 0, TSIM_MAX_RANKS, n, "lplb torus N", err);
    if (rc)
        return rc;
    if (*m < 2 || *n < 2)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "lplb graph torus:%dx%d: a torus needs M >= 2 and N >= 2, else a rank would host its "
                              "own bundle",
                              *m, *n);
    if ((int64_t)*m * *n > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT, "lplb graph torus:%dx%d has more than %d ranks", *m, *n,
                              TSIM_MAX_RANKS);
    return TSIM_OK;
}

int tsim_lplb_graph_make(tsim_lplb_graph *g, const char *name, tsim_error *err)
{
    int rc;
    memset(g, 0, sizeof *g);
    if (strcmp(name, "cube8") == 0) {
        if ((rc = graph_alloc(g, name, 8, 2, err)))
            return rc;
        for (int r = 0; r < 8; r++) {
            g->r2o[r * 2 + 0] = 4 * (r / 4) + (r + 3) % 4;
            g->r2o[r * 2 + 1] = r >= 4 ? r - 4 : 4 + (r + 2) % 4;
        }
    } else if (strcmp(name, "hypercube16") == 0) {
        if ((rc = graph_alloc(g, name, 16, 2, err)))
            return rc;
        for (int r = 0; r < 16; r++) {
            g->r2o[r * 2 + 0] = 4 * (r / 4) + (r + 3) % 4;
            g->r2o[r * 2 + 1] = (r + 12) % 16;
        }
    } else if (strcmp(name, "ring8") == 0) {
        if ((rc = graph_alloc(g, name, 8, 1, err)))
            return rc;
        for (int r = 0; r < 8; r++)
            g->r2o[r] = (r + 1) % 8;
    } else if (strncmp(name, "ring:", 5) == 0) {
        /* ring8 of any size (an extension: auto's choice for K = 1). */
        int size;
        if ((rc = tsim_parse_int(name + 5, 2, TSIM_MAX_RANKS, &size, "lplb ring size", err)))
            return rc;
        char canon[TSIM_LPLB_NAME_MAX];
        snprintf(canon, sizeof canon, "ring:%d", size);
        if ((rc = graph_alloc(g, canon, size, 1, err)))
            return rc;
        for (int r = 0; r < size; r++)
            g->r2o[r] = (r + 1) % size;
    } else if (strncmp(name, "torus:", 6) == 0) {
        int m, n;
        if ((rc = parse_torus(name + 6, &m, &n, err)))
            return rc;
        char canon[TSIM_LPLB_NAME_MAX];
        snprintf(canon, sizeof canon, "torus:%dx%d", m, n);
        if ((rc = graph_alloc(g, canon, m * n, 2, err)))
            return rc;
        /* Rank i*N + j: slot 0 holds the next row's same column (the same local
         * GPU of the next node when N = rpn), slot 1 the next column. */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                int r = i * n + j;
                g->r2o[r * 2 + 0] = ((i + 1) % m) * n + j;
                g->r2o[r * 2 + 1] = i * n + (j + 1) % n;
            }
    } else {
        return tsim_error_set(err, TSIM_E_INPUT,
                              "unknown lplb graph '%s' (known: auto, cube8, hypercube16, ring8, ring:N, torus:MxN)", name);
    }
    if ((rc = tsim_lplb_graph_check(g, err))) {
        tsim_lplb_graph_free(g);
        return rc;
    }
    return TSIM_OK;
}

int tsim_lplb_graph_check(const tsim_lplb_graph *g, tsim_error *err)
{
    const int G = g->group_size, D = g->dups;
    if (G < 2 || D < 1 || !g->r2o)
        return tsim_error_set(err, TSIM_E_INTERNAL, "lplb graph %s: %d ranks, %d slots", g->name, G, D);
    char *seen = calloc((size_t)G, 1);
    if (!seen)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory checking the lplb graph %s", g->name);
    int rc = TSIM_OK;
    for (int d = 0; d < D && !rc; d++) {
        memset(seen, 0, (size_t)G);
        for (int r = 0; r < G && !rc; r++) {
            int o = g->r2o[r * D + d];
            if (o < 0 || o >= G)
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "lplb graph %s: r2o[%d][%d] = %d is out of range", g->name,
                                    r, d, o);
            else if (o == r)
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "lplb graph %s: rank %d would host its own bundle %d",
                                    g->name, r, d);
            else if (seen[o]++)
                rc = tsim_error_set(err, TSIM_E_INTERNAL,
                                    "lplb graph %s: column %d of r2o is not a permutation (%d appears twice)",
                                    g->name, d, o);
        }
    }
    free(seen);
    return rc;
}

/* The smallest factor >= 2 of n whose cofactor is also >= 2 (0 if none). */
static int torus_rows(int n)
{
    for (int m = 2; m * 2 <= n; m++)
        if (n % m == 0)
            return m;
    return 0;
}

int tsim_lplb_graph_auto(char *name, size_t n, int R, int rpn, int K, tsim_error *err)
{
    /* The paper's setting, exactly as baselines.md defines auto: 8 ranks per
     * node, whatever K (a K other than 2 is then refused by the D == K check). */
    if (rpn == 8 && R % 8 == 0) {
        if (R == 8 || R == 16)
            snprintf(name, n, "cube8");
        else
            snprintf(name, n, "torus:%dx8", R / 8);
        return TSIM_OK;
    }
    /* Other shapes (an extension of the spec's auto, so that the default
     * planner list runs on any trace it can): K = 2 takes a torus over the
     * nodes (rows) and the ranks of a node (columns) when both are at least 2,
     * then cube8 blocks, then any torus R = M x N; K = 1 takes a ring over
     * all ranks. Other K have no graph. */
    if (K == 2) {
        const int nodes = rpn > 0 ? R / rpn : 0;
        if (rpn >= 2 && R % rpn == 0 && nodes >= 2)
            snprintf(name, n, "torus:%dx%d", nodes, rpn);
        else if (R % 8 == 0)
            snprintf(name, n, "cube8");
        else if (torus_rows(R))
            snprintf(name, n, "torus:%dx%d", torus_rows(R), R / torus_rows(R));
        else
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "lplb graph auto: no graph with 2 replica slots fits R = %d ranks (a torus needs "
                                  "R = M x N with M, N >= 2)",
                                  R);
        return TSIM_OK;
    }
    if (K == 1) {
        if (R < 2)
            return tsim_error_set(err, TSIM_E_INPUT, "lplb graph auto: a ring needs at least 2 ranks (R = %d)", R);
        if (R % 8 == 0)
            snprintf(name, n, "ring8");
        else
            snprintf(name, n, "ring:%d", R);
        return TSIM_OK;
    }
    return tsim_error_set(err, TSIM_E_INPUT,
                          "lplb graph auto: LPLB's graphs have 1 or 2 replica slots per rank, not K = %d: use "
                          "--slots 1 or 2",
                          K);
}

int tsim_lplb_graph_build(tsim_lplb_graph *g, const char *spec, const tsim_topology *topo, tsim_error *err)
{
    const int R = topo->ranks, rpn = topo->ranks_per_node;
    char name[TSIM_LPLB_NAME_MAX];
    memset(g, 0, sizeof *g);
    if (strcmp(spec, "auto") == 0) {
        int rc = tsim_lplb_graph_auto(name, sizeof name, R, rpn, topo->slots, err);
        if (rc)
            return rc;
    } else {
        snprintf(name, sizeof name, "%s", spec);
    }
    int rc = tsim_lplb_graph_make(g, name, err);
    if (rc)
        return rc;
    if (g->dups != topo->slots)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "lplb graph %s has D = %d replica slots per rank, but K = %d: use --slots %d", g->name,
                            g->dups, topo->slots, g->dups);
    else if (R % g->group_size != 0)
        rc = tsim_error_set(err, TSIM_E_INPUT, "lplb graph %s has groups of %d ranks, but R = %d is not a multiple",
                            g->name, g->group_size, R);
    else if (topo->experts_per_rank < g->dups)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "lplb graph %s replicates %d experts per rank, but each rank has only %d (E / R)", g->name,
                            g->dups, topo->experts_per_rank);
    if (rc) {
        tsim_lplb_graph_free(g);
        return rc;
    }
    g->groups = R / g->group_size;
    return TSIM_OK;
}

void tsim_lplb_graph_free(tsim_lplb_graph *g)
{
    free(g->r2o);
    memset(g, 0, sizeof *g);
}
