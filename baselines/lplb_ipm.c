/* LPLB's shipped LP solver (baselines.md, `lplb`, "Solvers", ipm): the group's
 * min-max LP in standard form, solved by exactly five steps of primal affine
 * scaling in single precision from a big-M start.
 *
 * Standard form (the published kernel's layout), G ranks, D bundles per rank,
 * bundle k = o * D + d belongs to rank o:
 *   columns  x_k       k < GD        share of bundle k kept on its original
 *            y_k       GD + k        share sent to its replica
 *            s_i       2GD + i       slack of rank row i
 *            t         2GD + G       the max load
 *            M         2GD + G + 1   big-M artificial, cost 1000
 *   rows     rank i    i < G         sum_d Wb[i][d] x_(i,d) + sum_d Wb[o][d] y_(o,d) + s_i - t = -F[i]
 *                                    (o = r2o[i][d])
 *            bundle k  G + k         x_k + y_k = 1
 * The M column is b - A 1 (accumulated left to right), so x = 1 is strictly
 * feasible; the cost is 1 on t, 1000 on M, 0 elsewhere.
 *
 * Operation order (the reference's, which makes the vector's plan bit-exact):
 * every sum is sequential in increasing index order with each product rounded
 * before the add (the build passes -ffp-contract=off: no FMA); X^2 is applied
 * as (a * x) * x; entry (i, k) of A X^2 A^T is sum_j ((a_ij x_j) x_j) a_kj for
 * i >= k (the lower triangle the Cholesky reads); the Cholesky subtracts
 * its terms from the entry one by one, k ascending, and divides by the pivot;
 * the forward solve subtracts k ascending, the backward solve k descending.
 * Matrices are stored column-major so the loops run over contiguous rows, which
 * changes no entry's order. Structural zeros are skipped: adding an exact zero
 * leaves a float sum unchanged, so the result is the dense computation's.
 * The big-M sum b - A 1 and every threshold follow the published kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lplb.h"

#define AT(w, i, j) ((size_t)(j) * (size_t)(w)->nc + (size_t)(i)) /* column-major nc x nv */

int tsim_lplb_ipm_init(tsim_lplb_ipm *w, const tsim_lplb_graph *g, tsim_error *err)
{
    memset(w, 0, sizeof *w);
    const int G = g->group_size, D = g->dups, GD = G * D;
    const int nc = G + GD, nv = 2 * GD + G + 2;
    w->G = G;
    w->D = D;
    w->nc = nc;
    w->nv = nv;
    size_t ncv = (size_t)nc * (size_t)nv;
    w->host = malloc(sizeof *w->host * (size_t)GD);
    w->a = calloc(ncv, sizeof *w->a);
    w->ax2 = calloc(ncv, sizeof *w->ax2);
    w->m = calloc((size_t)nc * (size_t)nc, sizeof *w->m);
    w->b = calloc((size_t)nc, sizeof *w->b);
    w->rhs = calloc((size_t)nc, sizeof *w->rhs);
    w->c = calloc((size_t)nv, sizeof *w->c);
    w->x = calloc((size_t)nv, sizeof *w->x);
    w->r = calloc((size_t)nc, sizeof *w->r);
    w->d = calloc((size_t)nv, sizeof *w->d);
    w->col_rows = malloc(sizeof *w->col_rows * ncv);
    w->col_len = calloc((size_t)nv, sizeof *w->col_len);
    if (!w->host || !w->a || !w->ax2 || !w->m || !w->b || !w->rhs || !w->c || !w->x || !w->r || !w->d ||
        !w->col_rows || !w->col_len) {
        tsim_lplb_ipm_free(w);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the lplb ipm workspace");
    }
    for (int h = 0; h < G; h++)
        for (int d = 0; d < D; d++)
            w->host[tsim_lplb_r2o(g, h, d) * D + d] = h;

    /* Column structure (rows ascending), fixed for the graph. */
    for (int k = 0; k < GD; k++) {
        int32_t *xr = w->col_rows + (size_t)k * (size_t)nc;
        xr[0] = k / D;
        xr[1] = G + k;
        w->col_len[k] = 2;
        int32_t *yr = w->col_rows + (size_t)(GD + k) * (size_t)nc;
        yr[0] = w->host[k];
        yr[1] = G + k;
        w->col_len[GD + k] = 2;
    }
    for (int i = 0; i < G; i++) {
        w->col_rows[(size_t)(2 * GD + i) * (size_t)nc] = i;
        w->col_len[2 * GD + i] = 1;
    }
    int32_t *tr = w->col_rows + (size_t)(2 * GD + G) * (size_t)nc;
    for (int i = 0; i < G; i++)
        tr[i] = i;
    w->col_len[2 * GD + G] = G;
    int32_t *mr = w->col_rows + (size_t)(nv - 1) * (size_t)nc;
    for (int i = 0; i < nc; i++)
        mr[i] = i;
    w->col_len[nv - 1] = nc;

    /* The parts of A, b and c that never change. */
    for (int i = 0; i < G; i++) {
        w->a[AT(w, i, 2 * GD + i)] = 1.0f;
        w->a[AT(w, i, 2 * GD + G)] = -1.0f;
    }
    for (int k = 0; k < GD; k++) {
        w->a[AT(w, G + k, k)] = 1.0f;
        w->a[AT(w, G + k, GD + k)] = 1.0f;
        w->b[G + k] = 1.0f;
    }
    w->c[2 * GD + G] = 1.0f;
    w->c[nv - 1] = 1000.0f;
    return TSIM_OK;
}

void tsim_lplb_ipm_free(tsim_lplb_ipm *w)
{
    free(w->host);
    free(w->a);
    free(w->ax2);
    free(w->m);
    free(w->b);
    free(w->rhs);
    free(w->c);
    free(w->x);
    free(w->r);
    free(w->d);
    free(w->col_rows);
    free(w->col_len);
    memset(w, 0, sizeof *w);
}

/* The rank rows' load coefficients, b, and the big-M column. */
static void build_lp(tsim_lplb_ipm *w, const float *wb, const float *f)
{
    const int G = w->G, D = w->D, GD = G * D, nc = w->nc, nv = w->nv;
    for (int k = 0; k < GD; k++) {
        w->a[AT(w, k / D, k)] = wb[k];
        w->a[AT(w, w->host[k], GD + k)] = wb[k];
    }
    for (int i = 0; i < G; i++)
        w->b[i] = -f[i];
    /* M_i = b_i - a_i0 - a_i1 - ... - a_i(nv-2), left to right. */
    float *mcol = w->a + AT(w, 0, nv - 1);
    memcpy(mcol, w->b, sizeof *mcol * (size_t)nc);
    for (int j = 0; j < nv - 1; j++) {
        const float *col = w->a + AT(w, 0, j);
        for (int i = 0; i < nc; i++)
            mcol[i] -= col[i];
    }
}

/* In-place Cholesky of the lower triangle of m (n x n, column-major: entry
 * (i, j) at m[j * n + i]), then L y = rhs and L^T w = y in rhs. Returns false
 * on a non-positive pivot or a NaN. */
static bool cholesky_solve(float *m, float *rhs, int n)
{
    for (int j = 0; j < n; j++) {
        float *cj = m + (size_t)j * (size_t)n;
        /* Entry (i, j), i >= j, loses L_ik L_jk for k = 0, 1, ..., j-1 in turn. */
        for (int k = 0; k < j; k++) {
            const float *ck = m + (size_t)k * (size_t)n;
            const float ljk = ck[j];
            for (int i = j; i < n; i++)
                cj[i] -= ck[i] * ljk;
        }
        if (!(cj[j] > 0.0f))
            return false;
        const float piv = sqrtf(cj[j]);
        cj[j] = piv;
        for (int i = j + 1; i < n; i++)
            cj[i] = cj[i] / piv;
    }
    /* L y = rhs: y_i = (rhs_i - L_i0 y_0 - L_i1 y_1 - ...) / L_ii. */
    for (int k = 0; k < n; k++) {
        const float *ck = m + (size_t)k * (size_t)n;
        const float yk = rhs[k] / ck[k];
        rhs[k] = yk;
        for (int i = k + 1; i < n; i++)
            rhs[i] -= ck[i] * yk;
    }
    /* L^T w = y: each w_i takes its terms from the bottom up (k = n-1 down to
     * i+1), the column-oriented order. */
    for (int k = n - 1; k >= 0; k--) {
        const float *ck = m + (size_t)k * (size_t)n;
        const float wk = rhs[k] / ck[k];
        rhs[k] = wk;
        for (int i = 0; i < k; i++)
            rhs[i] -= m[(size_t)i * (size_t)n + (size_t)k] * wk;
    }
    for (int i = 0; i < n; i++)
        if (isnan(rhs[i]))
            return false;
    return true;
}

/* One affine-scaling direction: d = X (c - A^T w), (A X^2 A^T) w = A X^2 c.
 * Returns false when the Cholesky fails. */
static bool direction(tsim_lplb_ipm *w)
{
    const int nc = w->nc, nv = w->nv;
    const float *a = w->a, *x = w->x;
    float *ax2 = w->ax2, *m = w->m;
    for (int j = 0; j < nv; j++) {
        const int32_t *rows = w->col_rows + (size_t)j * (size_t)nc;
        for (int p = 0; p < w->col_len[j]; p++)
            ax2[AT(w, rows[p], j)] = a[AT(w, rows[p], j)] * x[j] * x[j];
    }
    /* Lower triangle of A X^2 A^T, column-major: entry (i, k), i >= k, sums
     * ax2_ij a_kj over the columns j in increasing order. */
    memset(m, 0, sizeof *m * (size_t)nc * (size_t)nc);
    for (int j = 0; j < nv; j++) {
        const int32_t *rows = w->col_rows + (size_t)j * (size_t)nc;
        const int len = w->col_len[j];
        const float *acol = a + AT(w, 0, j), *xcol = ax2 + AT(w, 0, j);
        if (len == nc) { /* the dense M column: contiguous rows */
            for (int k = 0; k < nc; k++) {
                float *mk = m + (size_t)k * (size_t)nc;
                const float akj = acol[k];
                for (int i = k; i < nc; i++)
                    mk[i] += xcol[i] * akj;
            }
            continue;
        }
        for (int q = 0; q < len; q++) {
            const int k = rows[q];
            float *mk = m + (size_t)k * (size_t)nc;
            const float akj = acol[k];
            for (int p = q; p < len; p++)
                mk[rows[p]] += xcol[rows[p]] * akj;
        }
    }
    /* A X^2 c: c is non-zero only on t (1) and M (1000), in that order. */
    const float *xt = ax2 + AT(w, 0, nv - 2), *xm = ax2 + AT(w, 0, nv - 1);
    for (int i = 0; i < nc; i++) {
        float s = 0.0f;
        if (i < w->G)
            s += xt[i] * w->c[nv - 2];
        w->rhs[i] = s + xm[i] * w->c[nv - 1];
    }
    if (!cholesky_solve(m, w->rhs, nc))
        return false;
    for (int j = 0; j < nv; j++) {
        const int32_t *rows = w->col_rows + (size_t)j * (size_t)nc;
        const float *acol = a + AT(w, 0, j);
        float s = 0.0f;
        for (int p = 0; p < w->col_len[j]; p++)
            s += w->rhs[rows[p]] * acol[rows[p]];
        w->d[j] = x[j] * (w->c[j] - s);
    }
    return true;
}

bool tsim_lplb_ipm_solve(tsim_lplb_ipm *w, const float *wb, const float *f, float *xout, tsim_lplb_ipm_state *st)
{
    const int nc = w->nc, nv = w->nv, GD = w->G * w->D;
    memset(st, 0, sizeof *st);
    build_lp(w, wb, f);
    for (int j = 0; j < nv; j++)
        w->x[j] = 1.0f;
    bool ok = true;
    for (int step = 0; step < TSIM_LPLB_IPM_STEPS; step++) {
        if (!direction(w)) {
            ok = false;
            break;
        }
        /* The published kernel reduces max(d) wrongly: each lane keeps the last
         * d it wrote (d_max = d[j] = ...) before the warp max, so it is the max
         * over the last 32 entries only. The spec asks for the true maximum,
         * which is what this computes. */
        float dmax = w->d[0];
        for (int j = 1; j < nv; j++)
            dmax = w->d[j] > dmax ? w->d[j] : dmax;
        st->dmax = dmax;
        if (isnan(dmax)) {
            ok = false;
            break;
        }
        if (!(dmax > 0.0f))
            break; /* no descent left: test the current x */
        st->steps = step + 1;
        /* alpha = 0.999 / max(d): a double literal over a float, rounded once. */
        const float alpha = (float)(0.999 / (double)dmax);
        for (int j = 0; j < nv; j++)
            w->x[j] *= 1.0f - alpha * w->d[j];
    }
    /* max |Ax - b|, each row summed over all columns left to right. */
    float *ax = w->r;
    memset(ax, 0, sizeof *ax * (size_t)nc);
    for (int j = 0; j < nv; j++) {
        const float *col = w->a + AT(w, 0, j);
        for (int i = 0; i < nc; i++)
            ax[i] += col[i] * w->x[j];
    }
    float residual = 0.0f;
    for (int i = 0; i < nc; i++) {
        const float dev = fabsf(ax[i] - w->b[i]);
        residual = dev > residual ? dev : residual;
        if (isnan(dev))
            ok = false;
    }
    for (int j = 0; j < nv; j++)
        if (!isfinite(w->x[j]))
            ok = false;
    st->residual = residual;
    st->artificial = w->x[nv - 1];
    /* The published thresholds are double literals compared with floats. */
    st->converged = ok && (double)st->dmax < 0.1 && st->artificial >= 0.0f && (double)st->artificial < 1e-4 &&
                    (double)residual < 0.05;
    for (int k = 0; k < GD; k++)
        xout[k] = st->converged ? w->x[k] : 0.5f;
    return st->converged;
}
