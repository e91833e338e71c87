/* LPLB (baselines.md, section `lplb`): the replica graphs, the two solvers of
 * the per-group min-max LP, and a window into the planner's last solution for
 * tests and the quality report. The planner itself is tsim_planner_lplb. */
#ifndef TSIM_LPLB_H
#define TSIM_LPLB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "topology.h"

/* ---- graphs (lplb_graph.c) ---- */

#define TSIM_LPLB_NAME_MAX 32

/* r2o[g * dups + d] (group-local ranks): rank g hosts in slot d the replica of
 * rank r2o[g][d]'s d-th replicated bundle. Groups are consecutive blocks of
 * group_size ranks. */
typedef struct {
    int group_size;                /* G */
    int dups;                      /* D: replica slots per rank */
    int groups;                    /* R / G (0 until fitted to a topology) */
    int32_t *r2o;                  /* [G * D] */
    char name[TSIM_LPLB_NAME_MAX]; /* resolved name: "cube8", "torus:4x8", ... */
} tsim_lplb_graph;

/* Builds a named graph on its own (cube8, hypercube16, ring8, torus:MxN; not
 * auto) and checks it. TSIM_E_INPUT for an unknown or malformed name. */
int tsim_lplb_graph_make(tsim_lplb_graph *g, const char *name, tsim_error *err);

/* The graph `auto` picks for R ranks, rpn per node and K slots (its name into
 * name[n]): the paper's cube8 / torus:(R/8)x8 at rpn 8, else a torus of nodes x
 * ranks per node, cube8 blocks, any torus, or a ring for K = 1. */
int tsim_lplb_graph_auto(char *name, size_t n, int R, int rpn, int K, tsim_error *err);

/* Resolves `auto`, builds the graph and checks that it fits the topology:
 * D == K, G divides R, hpr >= D. TSIM_E_INPUT with a message otherwise. */
int tsim_lplb_graph_build(tsim_lplb_graph *g, const char *spec, const tsim_topology *topo, tsim_error *err);

/* Every column of r2o is a permutation of 0..G-1 without a fixed point (a rank
 * never hosts its own bundle). */
int tsim_lplb_graph_check(const tsim_lplb_graph *g, tsim_error *err);

void tsim_lplb_graph_free(tsim_lplb_graph *g);

static inline int tsim_lplb_r2o(const tsim_lplb_graph *g, int rank, int dup)
{
    return g->r2o[rank * g->dups + dup];
}

/* ---- ipm: LPLB's shipped solver (lplb_ipm.c) ---- */

#define TSIM_LPLB_IPM_STEPS 5

typedef struct {
    float dmax;       /* max(d) of the last step taken */
    float artificial; /* the big-M column's value at the end */
    float residual;   /* max |Ax - b| at the end */
    int steps;        /* steps taken (5 unless max(d) <= 0 stopped them) */
    bool converged;   /* the published test; false also for a bad pivot or a NaN */
} tsim_lplb_ipm_state;

/* Workspace for one group shape: the standard-form matrix and all scratch,
 * sized once. */
typedef struct {
    int G, D, nc, nv;
    int32_t *host;     /* [G * D]: group-local rank hosting bundle k */
    float *a;          /* [nc * nv] column-major */
    float *b, *c, *x;  /* [nc], [nv], [nv] */
    float *ax2;        /* [nc * nv] */
    float *m;          /* [nc * nc]: A X^2 A^T, then its Cholesky factor (lower) */
    float *rhs;        /* [nc]: A X^2 c, then w */
    float *r, *d;      /* [nc] scratch for Ax, [nv] the direction */
    int32_t *col_rows; /* [nv * nc]: rows with a structural non-zero, ascending */
    int32_t *col_len;  /* [nv] */
} tsim_lplb_ipm;

int tsim_lplb_ipm_init(tsim_lplb_ipm *w, const tsim_lplb_graph *g, tsim_error *err);
void tsim_lplb_ipm_free(tsim_lplb_ipm *w);

/* One group: wb[G * D] bundle loads and f[G] non-replicated loads, all already
 * divided by the record's largest expert load. Writes the kept share of every
 * bundle into x[G * D] (0.5 for all of them when the group falls back) and
 * returns whether it converged. */
bool tsim_lplb_ipm_solve(tsim_lplb_ipm *w, const float *wb, const float *f, float *x, tsim_lplb_ipm_state *st);

/* ---- exact: GLPK simplex (lplb_exact.c) ---- */

typedef struct {
    int G, D;
    const int32_t *r2o; /* borrowed from the graph */
} tsim_lplb_exact;

int tsim_lplb_exact_init(tsim_lplb_exact *w, const tsim_lplb_graph *g, tsim_error *err);
void tsim_lplb_exact_free(tsim_lplb_exact *w);

/* One group in tokens: wb[G * D], f[G]. Writes the kept share of every bundle
 * into x[G * D] (1 for a bundle without tokens) and the optimum into *t.
 * TSIM_E_INTERNAL with GLPK's status when it finds no optimum. */
int tsim_lplb_exact_solve(tsim_lplb_exact *w, const double *wb, const double *f, double *x, double *t,
                          tsim_error *err);

/* ---- the planner's last record (lplb.c) ---- */

/* state is what tsim_planner_lplb.init returned. */
const tsim_lplb_graph *tsim_lplb_state_graph(const void *state);
/* Expert of bundle (rank, d), global ranks: [R * D]. */
const int32_t *tsim_lplb_state_bundles(const void *state);
/* Kept share of every bundle as the floor rule used it: [R * D]. */
const double *tsim_lplb_state_x(const void *state);
/* ipm: the group's solver state (steps 0 when the solve was skipped). */
const tsim_lplb_ipm_state *tsim_lplb_state_ipm(const void *state, int group);
/* exact: the group's LP optimum in tokens. */
double tsim_lplb_state_optimum(const void *state, int group);
/* Layers the prev history holds. */
int tsim_lplb_state_layers(const void *state);

#endif
