#include "planner.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

void tsim_planner_options_default(tsim_planner_options *o)
{
    memset(o, 0, sizeof *o);
    o->lambda_plan = 3.0;
    o->taot = (tsim_taot_options){
        .phase3 = TSIM_TAOT_AUCTION, .flow_hint = true, .comm_cost = true, .iters = 50,
        .self_bonus = 0.0, .auction_rounds = 300, .device = TSIM_DEVICE_CPU,
    };
    o->llep = (tsim_llep_options){.alpha = 1.0, .min_chunk = 1024, .threshold = 0.0};
    snprintf(o->lplb.graph, sizeof o->lplb.graph, "auto");
    o->lplb.solver = TSIM_LPLB_IPM;
    o->lplb.history = TSIM_LPLB_HISTORY_PREV;
    o->lplb.rehome = TSIM_LPLB_REHOME_NONE;
    o->eplb = (tsim_eplb_options){.groups = 1, .history = TSIM_EPLB_HISTORY_PREV, .interval = 8};
    o->fastermoe = (tsim_fastermoe_options){.comp_us = 0.063, .feat_us = 0.02, .model_us = 380.0};
    o->optimal = (tsim_optimal_options){.mu = 0.001, .node_limit = 20000};
}

void tsim_planner_options_help(FILE *out)
{
    fputs("Planner options (prefixed by the planner they belong to):\n"
          "  --lambda-plan X           lambda the topology-aware planners believe (default 3)\n"
          "  --taot-phase3 auction|split  TAOT token assignment (default auction)\n"
          "  --taot-no-flow-hint       drop the Phase-1 Sinkhorn term from the score\n"
          "  --taot-no-comm-cost       drop the Phase-2 topology term from the score\n"
          "  --taot-iters N            Sinkhorn rounds (default 50)\n"
          "  --taot-self-bonus X       auction bonus for the guest's own tokens (default 0)\n"
          "  --taot-auction-rounds N   auction round cap (default 300)\n"
          "  --taot-device cpu|gpu     where TAOT runs (default cpu; gpu falls back to cpu)\n"
          "  --llep-alpha X            LLEP capacity factor (default 1.0)\n"
          "  --llep-min-chunk N        LLEP minimum spill piece in tokens (default 1024)\n"
          "  --llep-threshold X        LLEP activation threshold max/mean, 0 = off (default 0)\n"
          "  --lplb-graph G            auto|cube8|hypercube16|ring8|torus:MxN (default auto)\n"
          "  --lplb-solver ipm|exact   LPLB LP solver (default ipm)\n"
          "  --lplb-history prev|none|oracle  LPLB replicated-expert choice (default prev)\n"
          "  --lplb-rehome none|eplb   LPLB: re-home experts with EPLB before replicating (default none)\n"
          "  --eplb-groups G           EPLB: the router's expert groups, num_groups (default 1)\n"
          "  --eplb-history prev|oracle|none  EPLB: what the layout is computed from (default prev)\n"
          "  --eplb-interval N         EPLB: records of a layer between recomputations (default 8)\n"
          "  --fastermoe-comp-us X     FasterMoE: compute per token, us (default 0.063)\n"
          "  --fastermoe-feat-us X     FasterMoE: send one token's features, us (default 0.02)\n"
          "  --fastermoe-model-us X    FasterMoE: send one expert's weights, us (default 380)\n"
          "  --optimal-mu X            optimal: weight of the weighted cost against imbalance (default 0.001)\n"
          "  --optimal-node-limit N    optimal: branch-and-bound subproblems per record (default 20000)\n",
          out);
}

static int need_value(const char *name, const char *value, tsim_error *err)
{
    if (!value || !*value)
        return tsim_error_set(err, TSIM_E_INPUT, "--%s needs a value", name);
    return TSIM_OK;
}

static int no_value(const char *name, const char *value, tsim_error *err)
{
    if (value)
        return tsim_error_set(err, TSIM_E_INPUT, "--%s takes no value", name);
    return TSIM_OK;
}

int tsim_planner_options_set(tsim_planner_options *o, const char *name, const char *value, bool *known,
                             tsim_error *err)
{
    *known = true;
    int rc;
    if (strcmp(name, "lambda-plan") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_double(value, 1e-9, 1e9, &o->lambda_plan, "--lambda-plan", err);
    }
    if (strcmp(name, "taot-phase3") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "auction") == 0)
            o->taot.phase3 = TSIM_TAOT_AUCTION;
        else if (strcmp(value, "split") == 0)
            o->taot.phase3 = TSIM_TAOT_SPLIT;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--taot-phase3: expected auction or split, got '%s'", value);
        return TSIM_OK;
    }
    if (strcmp(name, "taot-no-flow-hint") == 0) {
        o->taot.flow_hint = false;
        return no_value(name, value, err);
    }
    if (strcmp(name, "taot-no-comm-cost") == 0) {
        o->taot.comm_cost = false;
        return no_value(name, value, err);
    }
    if (strcmp(name, "taot-iters") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int(value, 0, 100000, &o->taot.iters, "--taot-iters", err);
    }
    if (strcmp(name, "taot-self-bonus") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_double(value, -1e6, 1e6, &o->taot.self_bonus, "--taot-self-bonus", err);
    }
    if (strcmp(name, "taot-auction-rounds") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int(value, 1, 100000000, &o->taot.auction_rounds, "--taot-auction-rounds", err);
    }
    if (strcmp(name, "taot-device") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "cpu") == 0)
            o->taot.device = TSIM_DEVICE_CPU;
        else if (strcmp(value, "gpu") == 0)
            o->taot.device = TSIM_DEVICE_GPU;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--taot-device: expected cpu or gpu, got '%s'", value);
        return TSIM_OK;
    }
    if (strcmp(name, "llep-alpha") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_double(value, 1e-9, 1e9, &o->llep.alpha, "--llep-alpha", err);
    }
    if (strcmp(name, "llep-min-chunk") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int64(value, 0, INT64_C(1) << 50, &o->llep.min_chunk, "--llep-min-chunk", err);
    }
    if (strcmp(name, "llep-threshold") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_double(value, 0, 1e9, &o->llep.threshold, "--llep-threshold", err);
    }
    if (strcmp(name, "optimal-node-limit") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int(value, 1, 1000000000, &o->optimal.node_limit, "--optimal-node-limit", err);
    }
    if (strcmp(name, "lplb-graph") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strlen(value) >= sizeof o->lplb.graph)
            return tsim_error_set(err, TSIM_E_INPUT, "--lplb-graph: '%s' is too long", value);
        snprintf(o->lplb.graph, sizeof o->lplb.graph, "%s", value);
        return TSIM_OK;
    }
    if (strcmp(name, "lplb-solver") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "ipm") == 0)
            o->lplb.solver = TSIM_LPLB_IPM;
        else if (strcmp(value, "exact") == 0)
            o->lplb.solver = TSIM_LPLB_EXACT;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--lplb-solver: expected ipm or exact, got '%s'", value);
        return TSIM_OK;
    }
    if (strcmp(name, "lplb-history") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "prev") == 0)
            o->lplb.history = TSIM_LPLB_HISTORY_PREV;
        else if (strcmp(value, "none") == 0)
            o->lplb.history = TSIM_LPLB_HISTORY_NONE;
        else if (strcmp(value, "oracle") == 0)
            o->lplb.history = TSIM_LPLB_HISTORY_ORACLE;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--lplb-history: expected prev, none or oracle, got '%s'",
                                  value);
        return TSIM_OK;
    }
    if (strcmp(name, "lplb-rehome") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "none") == 0)
            o->lplb.rehome = TSIM_LPLB_REHOME_NONE;
        else if (strcmp(value, "eplb") == 0)
            o->lplb.rehome = TSIM_LPLB_REHOME_EPLB;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--lplb-rehome: expected none or eplb, got '%s'", value);
        return TSIM_OK;
    }
    if (strcmp(name, "eplb-groups") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int(value, 1, 1 << 30, &o->eplb.groups, "--eplb-groups", err);
    }
    if (strcmp(name, "eplb-interval") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        return tsim_parse_int(value, 1, 1 << 30, &o->eplb.interval, "--eplb-interval", err);
    }
    if (strcmp(name, "eplb-history") == 0) {
        if ((rc = need_value(name, value, err)))
            return rc;
        if (strcmp(value, "prev") == 0)
            o->eplb.history = TSIM_EPLB_HISTORY_PREV;
        else if (strcmp(value, "oracle") == 0)
            o->eplb.history = TSIM_EPLB_HISTORY_ORACLE;
        else if (strcmp(value, "none") == 0)
            o->eplb.history = TSIM_EPLB_HISTORY_NONE;
        else
            return tsim_error_set(err, TSIM_E_INPUT, "--eplb-history: expected prev, oracle or none, got '%s'",
                                  value);
        return TSIM_OK;
    }
    static const struct {
        const char *name;
        size_t offset;
        double lo, hi;
    } doubles[] = {
        {"fastermoe-comp-us", offsetof(tsim_planner_options, fastermoe.comp_us), 0, 1e9},
        {"fastermoe-feat-us", offsetof(tsim_planner_options, fastermoe.feat_us), 0, 1e9},
        {"fastermoe-model-us", offsetof(tsim_planner_options, fastermoe.model_us), 0, 1e12},
        {"optimal-mu", offsetof(tsim_planner_options, optimal.mu), 0, 1e9},
    };
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        if (strcmp(name, doubles[i].name) != 0)
            continue;
        if ((rc = need_value(name, value, err)))
            return rc;
        char what[64];
        snprintf(what, sizeof what, "--%s", name);
        return tsim_parse_double(value, doubles[i].lo, doubles[i].hi, (double *)((char *)o + doubles[i].offset), what,
                                 err);
    }
    *known = false;
    return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s", name);
}

int tsim_planner_start(tsim_planner *p, const tsim_topology *topo, tsim_error *err)
{
    int rc = p->desc->init(&p->state, topo, &p->opts, err);
    if (rc)
        tsim_error_prefix(err, "planner '%s'", p->label);
    return rc;
}

void tsim_planner_stop(tsim_planner *p)
{
    if (p->desc && p->state)
        p->desc->free(p->state);
    p->state = NULL;
}

static const char *const option_names[] = {
    "lambda-plan", "taot-phase3", "taot-no-flow-hint", "taot-no-comm-cost", "taot-iters", "taot-self-bonus",
    "taot-auction-rounds", "taot-device", "llep-alpha", "llep-min-chunk", "llep-threshold", "lplb-graph",
    "lplb-solver", "lplb-history", "lplb-rehome", "eplb-groups", "eplb-history", "eplb-interval", "fastermoe-comp-us", "fastermoe-feat-us", "fastermoe-model-us", "optimal-mu",
    "optimal-node-limit", NULL,
};

bool tsim_planner_option_is_flag(const char *name)
{
    return strcmp(name, "taot-no-flow-hint") == 0 || strcmp(name, "taot-no-comm-cost") == 0;
}

bool tsim_planner_option_exists(const char *name)
{
    for (const char *const *n = option_names; *n; n++)
        if (strcmp(*n, name) == 0)
            return true;
    return false;
}
