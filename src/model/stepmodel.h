/* A step-time model: an ESTIMATE of one MoE layer's forward + backward time
 * under a plan, from per-rank token loads and guest-weight transfers. It is a
 * first-order model (compute proportional to tokens, transfers at nominal
 * bandwidth), not a measurement. */
#ifndef TSIM_STEPMODEL_H
#define TSIM_STEPMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef struct {
    double us_per_token;   /* forward compute per routed token on one rank, microseconds */
    double backward_ratio; /* backward compute relative to forward (2: two GEMMs per forward one) */
    double expert_mb;      /* one expert's weights, MB (1e6 bytes); gradients are the same size */
    double intra_gbps;     /* GB/s within a node (NVLink) */
    double inter_gbps;     /* GB/s across nodes (InfiniBand) */
    bool overlap;          /* weight transfers hidden behind the rank's home-expert compute */
} tsim_step_model;

/* Defaults: Qwen3-30B-A3B-sized experts (3 x 2048 x 768 bf16 = 9.44 MB), about
 * 150 TFLOP/s effective on A800-class GPUs (0.063 us per token-expert),
 * NVLink 400 GB/s, InfiniBand 25 GB/s, overlap on. */
void tsim_step_model_default(tsim_step_model *m);

/* Step time (ms) of one layer, forward + backward, given per rank: the tokens
 * computed for its home experts, the tokens computed in its guest slots, and
 * the guest replicas it hosts from its own node and from other nodes.
 * forward(r)  = fetch(r) + home(r) + guest(r), or max(fetch(r), home(r)) + guest(r) with overlap
 * backward(r) = the same with compute x backward_ratio and the gradients sent back
 * step = max_r forward(r) + max_r backward(r)  (all ranks wait for the slowest at each all-to-all) */
double tsim_step_time_ms(const tsim_step_model *m, int ranks, const int64_t *home_tokens, const int64_t *guest_tokens,
                         const int32_t *guest_intra, const int32_t *guest_inter);

/* Step time with no replicas (plain EP): loads only. */
double tsim_step_time_static_ms(const tsim_step_model *m, int ranks, const int64_t *loads);

/* Parses one --step-model related option ("us-per-token", "expert-mb",
 * "intra-gbps", "inter-gbps", "backward-ratio", "overlap", "no-overlap");
 * *known false when name is none of them. */
int tsim_step_model_option(tsim_step_model *m, const char *name, const char *value, bool *known, tsim_error *err);
bool tsim_step_model_option_is_flag(const char *name);
bool tsim_step_model_option_exists(const char *name);
/* The i-th option name (the list above), NULL past the end: for parsers. */
const char *tsim_step_model_option_name(int i);

#define TSIM_STEP_MODEL_HELP                                                                  \
    "Step-time model (an estimate, enabled by --step-model):\n"                                \
    "  --step-model              add step_ms and speedup (over plain EP) to the metrics\n"     \
    "  --us-per-token X          forward compute per token on a rank, us (default 0.063)\n"   \
    "  --backward-ratio X        backward compute / forward compute (default 2)\n"            \
    "  --expert-mb X             one expert's weights in MB (default 9.44)\n"                 \
    "  --intra-gbps X            bandwidth within a node, GB/s (default 400)\n"               \
    "  --inter-gbps X            bandwidth across nodes, GB/s (default 25)\n"                 \
    "  --overlap / --no-overlap  hide weight transfers behind home-expert compute (default on)\n"

#endif
