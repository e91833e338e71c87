/* Figures published in the TAOT paper (arXiv 2608.03676), printed beside ours.
 * Facts to compare with, never targets. */
#ifndef TSIM_PAPER_H
#define TSIM_PAPER_H

#include <stdbool.h>

/* Table 1: improvement pp / weighted / intra / inter. */
typedef struct {
    double improve_pp, weighted, intra, inter;
} tsim_paper_cell;

/* ep 16 or 32, imbalance 0.1/0.2/0.3/0.5/0.7, method echo/llep/lplb/taot.
 * Returns false when the paper has no value: other cells, other labels, and
 * eplb, which the paper does not run (tables print "-" for it). LPLB's value
 * is its published one whatever --lplb-rehome says: the paper counts only
 * LPLB's 2R static replicas (eplb.md 4). */
bool tsim_paper_table1(int ep, double imbalance, const char *method, tsim_paper_cell *out);

/* Table 2 (EP32, 70%): mean and std of final imbalance (fraction), intra, inter, weighted. */
typedef struct {
    double rho_after, rho_after_std, intra, intra_std, inter, inter_std, weighted, weighted_std;
} tsim_paper_ablation;
bool tsim_paper_table2(bool flow_hint, bool comm_cost, tsim_paper_ablation *out);

/* Fig. 3 end-to-end speedups over Megatron-LM: axis "ep", "imbalance" or "slots". */
bool tsim_paper_speedup(const char *axis, double value, double *speedup);

#endif
