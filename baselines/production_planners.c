/* The registry entries of the production balancers (issue 22): MoonEP,
 * UltraEP, TensorRT-LLM's load balancer and SwiftBalancer. Each wraps its
 * library API (moonep.h, ultraep.h, trtllm.h, swift.h) in a descriptor with
 * the options its spec names and its state contract. */
#include <stddef.h>
#include <stdlib.h>

#include "moonep.h"
#include "planner.h"
#include "swift.h"
#include "trtllm.h"
#include "ultraep.h"

/* K for the library: this planner's own --slots, else the command's. */
static int planner_slots(const tsim_topology *topo, const tsim_planner_common *common)
{
    return common->slots > 0 ? common->slots : topo->slots;
}

/* ---- moonep ---------------------------------------------------------------- */

_Static_assert(sizeof(tsim_moonep_options) <= TSIM_OPTIONS_BLOCK_MAX, "moonep options block");

static int moonep_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                       tsim_error *err)
{
    return tsim_moonep_init((tsim_moonep **)state, topo, planner_slots(topo, common), own, err);
}

static int moonep_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return tsim_moonep_plan(state, rec, out, err);
}

static void moonep_free(void *state)
{
    tsim_moonep_free(state);
}

/* MoonEP needs one prefetch slot per home expert: K = E/R, unless a larger K
 * is asked for; a smaller one is refused before any record. */
static int moonep_slots(const tsim_topology *topo, int asked, int *k, tsim_error *err)
{
    const int need = tsim_moonep_needed_slots(topo);
    if (need > 1024)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "moonep: needs E/R = %d slots per rank (%d experts on %d ranks), above the limit of "
                              "1024 slots",
                              need, topo->experts, topo->ranks);
    if (asked > 0 && asked < need)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "moonep: needs --slots >= E/R = %d (one prefetch slot per home expert); got --slots %d",
                              need, asked);
    *k = asked > 0 ? asked : need;
    return TSIM_OK;
}

static const tsim_option_spec moonep_options[] = {
    {.name = "moonep-slot-order", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_moonep_options, slot_order),
     .choices = "expert|tokens", .arg = "expert|tokens", .def = "expert",
     .help = "MoonEP: a guest's slots by expert index or by descending tokens"},
    {0},
};

const tsim_planner_desc tsim_planner_moonep = {
    .name = "moonep",
    .summary = "MoonEP: exact balance in every microbatch, whole quotas to underloaded ranks (K = E/R)",
    .source = "MoonEP, zhumakhan/MoonEP @ 753befe",
    .options = moonep_options,
    .options_size = sizeof(tsim_moonep_options),
    .slots_rule = moonep_slots,
    .slots_help = "E/R (one prefetch slot per home expert); a larger --slots=K is taken, a smaller one refused",
    .init = moonep_init,
    .plan = moonep_plan,
    .free = moonep_free,
};

/* ---- ultraep --------------------------------------------------------------- */

/* The options as the command line gives them (on|off as choices), turned
 * into tsim_ultraep_options at init. */
typedef struct {
    int solver;
    int64_t min_tokens;
    double oracle_eps;
    double balance_threshold;
    int locality;    /* 0 off, 1 on */
    int zero_master; /* 0 off, 1 on */
} ultraep_block;

_Static_assert(sizeof(ultraep_block) <= TSIM_OPTIONS_BLOCK_MAX, "ultraep options block");

static int ultraep_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                        tsim_error *err)
{
    const ultraep_block *b = own;
    tsim_ultraep_options o = {.solver = b->solver, .min_tokens = b->min_tokens, .oracle_eps = b->oracle_eps,
                              .balance_threshold = b->balance_threshold, .locality = b->locality != 0,
                              .zero_master = b->zero_master != 0};
    return tsim_ultraep_init((tsim_ultraep **)state, topo, planner_slots(topo, common), &o, err);
}

static int ultraep_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return tsim_ultraep_plan(state, rec, out, err);
}

static void ultraep_free(void *state)
{
    tsim_ultraep_free(state);
}

static const tsim_option_spec ultraep_options[] = {
    {.name = "ultraep-solver", .type = TSIM_OPTION_CHOICE, .offset = offsetof(ultraep_block, solver),
     .choices = "quota|legacy", .arg = "quota|legacy", .def = "quota",
     .help = "UltraEP: the quota solver or the legacy CPU solver"},
    {.name = "ultraep-min-tokens", .type = TSIM_OPTION_INT64, .offset = offsetof(ultraep_block, min_tokens), .lo = -1e15,
     .hi = 1e15, .arg = "N", .def = "1024", .help = "UltraEP: the fallback's floor (<= 1 acts as 1)"},
    {.name = "ultraep-oracle-eps", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(ultraep_block, oracle_eps),
     .lo = -1e9, .hi = 1e9, .arg = "F", .def = "0.01", .help = "UltraEP: the fast tries' margin (negative acts as 0)"},
    {.name = "ultraep-balance-threshold", .type = TSIM_OPTION_DOUBLE,
     .offset = offsetof(ultraep_block, balance_threshold), .lo = -1e9, .hi = 1e9, .arg = "F", .def = "1.0",
     .help = "UltraEP: raises the threshold to ceil(mean*F) (below 1 acts as 1)"},
    {.name = "ultraep-locality", .type = TSIM_OPTION_CHOICE, .offset = offsetof(ultraep_block, locality),
     .choices = "off|on", .arg = "on|off", .def = "on", .help = "UltraEP: the local fill of the split"},
    {.name = "ultraep-zero-master", .type = TSIM_OPTION_CHOICE, .offset = offsetof(ultraep_block, zero_master),
     .choices = "off|on", .arg = "on|off", .def = "off", .help = "UltraEP: a home may keep 0 tokens of an expert"},
    {0},
};

const tsim_planner_desc tsim_planner_ultraep = {
    .name = "ultraep",
    .summary = "UltraEP: quota-driven balancing inside each node, every microbatch (nothing crosses nodes)",
    .source = "UltraEP, arXiv 2606.04101, Dots-Infra/UltraEP @ 94cab09",
    .options = ultraep_options,
    .options_size = sizeof(ultraep_block),
    .init = ultraep_init,
    .plan = ultraep_plan,
    .free = ultraep_free,
};

/* ---- trtllm ---------------------------------------------------------------- */

_Static_assert(sizeof(tsim_trtllm_options) <= TSIM_OPTIONS_BLOCK_MAX, "trtllm options block");

static int trtllm_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                       tsim_error *err)
{
    return tsim_trtllm_init((tsim_trtllm **)state, topo, planner_slots(topo, common), own, err);
}

static int trtllm_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return tsim_trtllm_plan(state, rec, out, err);
}

static void trtllm_free(void *state)
{
    tsim_trtllm_free(state);
}

static int trtllm_prime(void *state, int64_t layer, const int64_t *history, const int32_t *placement, tsim_error *err)
{
    return tsim_trtllm_prime(state, layer, history, history ? 1 : 0, NULL, placement, err);
}

static int trtllm_prime_window(void *state, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                               const int32_t *placement, tsim_error *err)
{
    return tsim_trtllm_prime(state, layer, window, n, layout, placement, err);
}

static const tsim_option_spec trtllm_options[] = {
    {.name = "trtllm-history", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_trtllm_options, history),
     .choices = "prev|oracle|none", .arg = "prev|oracle|none", .def = "prev",
     .help = "TensorRT-LLM: what an update reads (none: the initial layout serves)"},
    {.name = "trtllm-interval", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_trtllm_options, interval), .lo = 1,
     .hi = 1073741824, .arg = "N", .def = "8", .help = "TensorRT-LLM: records of a layer between updates"},
    {.name = "trtllm-decay", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_trtllm_options, decay), .lo = 0,
     .hi = 1, .arg = "X", .def = "0.95", .help = "TensorRT-LLM: load-factor decay, read as float32"},
    {.name = "trtllm-layout", .type = TSIM_OPTION_STRING, .offset = offsetof(tsim_trtllm_options, layout),
     .size = sizeof(((tsim_trtllm_options *)0)->layout), .arg = "FILE", .def = "",
     .help = "TensorRT-LLM: serve this layout (SGLang or TensorRT-LLM JSON, docs/export.md), never update (default: none)"},
    {0},
};

const tsim_planner_desc tsim_planner_trtllm = {
    .name = "trtllm",
    .summary = "TensorRT-LLM's MoE load balancer: decayed load factor, replication, then placement",
    .source = "NVIDIA/TensorRT-LLM @ 65b31db (moeLoadBalancer.cpp)",
    .options = trtllm_options,
    .options_size = sizeof(tsim_trtllm_options),
    .state = TSIM_STATE_LAYER_PREFIX,
    .init = trtllm_init,
    .plan = trtllm_plan,
    .free = trtllm_free,
    .prime = trtllm_prime,
    .prime_window = trtllm_prime_window,
    .weights_from_host = true,
};

/* ---- swift ----------------------------------------------------------------- */

_Static_assert(sizeof(tsim_swift_options) <= TSIM_OPTIONS_BLOCK_MAX, "swift options block");

static int swift_init(void **state, const tsim_topology *topo, const tsim_planner_common *common, const void *own,
                      tsim_error *err)
{
    return tsim_swift_init((tsim_swift **)state, topo, planner_slots(topo, common), own, err);
}

static int swift_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    return tsim_swift_plan(state, rec, out, err);
}

static void swift_free(void *state)
{
    tsim_swift_free(state);
}

static int swift_prime(void *state, int64_t layer, const int64_t *history, const int32_t *placement, tsim_error *err)
{
    return tsim_swift_prime(state, layer, history, history ? 1 : 0, NULL, placement, err);
}

static int swift_prime_window(void *state, int64_t layer, const int64_t *window, int n, const int32_t *layout,
                              const int32_t *placement, tsim_error *err)
{
    return tsim_swift_prime(state, layer, window, n, layout, placement, err);
}

static const tsim_option_spec swift_options[] = {
    {.name = "swift-history", .type = TSIM_OPTION_CHOICE, .offset = offsetof(tsim_swift_options, history),
     .choices = "prev|oracle|none", .arg = "prev|oracle|none", .def = "prev",
     .help = "SwiftBalancer: what an update reads (none: the initial layout serves)"},
    {.name = "swift-interval", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_swift_options, interval), .lo = 1,
     .hi = 1073741824, .arg = "N", .def = "8", .help = "SwiftBalancer: records of a layer between updates"},
    {.name = "swift-tp", .type = TSIM_OPTION_INT, .offset = offsetof(tsim_swift_options, tp), .lo = 1,
     .hi = 1073741824, .arg = "N", .def = "1", .help = "SwiftBalancer: attention TP size inside EP"},
    {.name = "swift-layout", .type = TSIM_OPTION_STRING, .offset = offsetof(tsim_swift_options, layout),
     .size = sizeof(((tsim_swift_options *)0)->layout), .arg = "FILE", .def = "",
     .help = "SwiftBalancer: serve this layout (SGLang or TensorRT-LLM JSON, docs/export.md), never update (default: none)"},
    {0},
};

const tsim_planner_desc tsim_planner_swift = {
    .name = "swift",
    .summary = "vllm-ascend's SwiftBalancer: incremental layouts that keep old slots",
    .source = "vllm-project/vllm-ascend @ 182b75e (policy_swift_balancer.py)",
    .options = swift_options,
    .options_size = sizeof(tsim_swift_options),
    .state = TSIM_STATE_LAYER_PREFIX,
    .init = swift_init,
    .plan = swift_plan,
    .free = swift_free,
    .prime = swift_prime,
    .prime_window = swift_prime_window,
};
