/* `taotsim table1`, `ablation`, `sweep`, `scaling`: parse, run the study,
 * print, check --fail-if gates, write plots. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "gates.h"
#include "registry.h"
#include "commands.h"
#include "experiments.h"
#include "external.h"
#include "datadir.h"
#include "failif.h"
#include "merge.h"
#include "fit.h"
#include "fit_print.h"
#include "study_print.h"
#include "options.h"
#include "outfile.h"
#include "parse.h"
#include "plot.h"
#include "report.h"
#include "report_html.h"

#define MAX_GATES 32

typedef enum { STUDY_TABLE1, STUDY_ABLATION, STUDY_SWEEP, STUDY_SCALING } study_kind;

static const char *const study_names[] = {"table1", "ablation", "sweep", "scaling"};

static void common_help(study_kind k)
{
    printf("Common options:\n"
           "  --planners LIST      planners (LABEL=NAME:--opt=v syntax as in replay)\n");
    /* what study_option_list gives this study; sweep and scaling have lists instead */
    if (k != STUDY_SCALING)
        printf("  --slots K            guest slots per rank (default 2)\n");
    if (k != STUDY_SWEEP)
        printf("  --lambda X           set both λ_plan and λ_eval (default 3)\n"
               "  --lambda-eval X      λ the evaluator charges (default 3)\n");
    printf("  -j, --jobs N         grid points in parallel (default: all cores); the same bytes for any N\n"
           "                       (JSON: all but \"command\", the command line as typed)\n"
           "  --shard I/N          run grid points I, I+N, ... only (I from 0) and write their partial\n"
           "                       result (JSON); 'taotsim merge' of all N prints the unsharded bytes\n"
           "                       (JSON: all but \"command\", see 'taotsim merge --help')\n"
           "  --std                show ± std beside means\n"
           "  --timing, --no-timing  measure plan time (wall clock: output no longer byte-reproducible);\n"
           "                       on by default for scaling only\n"
           "  --fail-if EXPR       exit 1 when EXPR holds, e.g. 'taot.weighted.mean > echo.weighted.mean'\n"
           "                       names: [KEY.]PLANNER.METRIC.STAT (KEY: a grid cell, e.g. ep16.imb70;\n"
           "                       without KEY the mean over the planner's cells); repeatable\n"
           "  --capacity-factor C  also count dropped_before/_after: tokens above\n"
           "                       floor(C x mean load) on a rank (JSON, CSV, --fail-if)\n"
           "  --plots DIR          also write gnuplot figures (PNG and SVG) into DIR\n"
           "  --report FILE        also write the HTML page 'taotsim report' makes of the\n"
           "                       result (tables and SVG figures inline), atomically\n");
    if (k != STUDY_SWEEP)
        printf("  --bounds             add excess_imbalance and excess_cost per planner: each plan\n"
               "                       against proven lower bounds at its own K (LPs: slow); n/a for\n"
               "                       planners without a slot limit or that re-home experts\n");
    printf("  --format md|csv|json output format (default md)\n"
           "  -o, --output FILE    write the result atomically to FILE (default stdout)\n"
           "  -h, --help           this help\n\n");
    tsim_cli_planners_help(stdout);
    tsim_external_help(stdout);
    if (k == STUDY_SCALING)
        fputs("\n" TSIM_STEP_MODEL_HELP, stdout);
}

static void gen_help(void)
{
    printf("Generated traces (as 'taotsim gen' makes them, calibrated per point):\n"
           "  --experts N (128)  --topk N (8)  --tokens N per rank (4096)  --rpn N (8)\n"
           "  --microbatches N (4)  --layers N (2)  --concentration X (200)  --seed N (1)\n\n");
}

static void study_help(study_kind k)
{
    switch (k) {
    case STUDY_TABLE1:
        printf("usage: taotsim table1 [--traces DIR] [options]\n\n"
               "The paper's Table 1: EP16 and EP32 x initial imbalance 10/20/30/50/70%% x ECHO,\n"
               "LLEP, LPLB, TAOT with K = 2, 8 ranks per node, λ = 3, on the bundled traces\n"
               "(DIR/epNN-imbNN.jsonl.gz). Each cell: improvement pp, weighted, intra, inter\n"
               "(means), the paper's value and the difference; then the break-even λ* of TAOT\n"
               "against each baseline, ours and the paper's.\n\n"
               "  --traces DIR         trace directory (default: the bundled traces/)\n"
               "  --regime NAME|FILE   run on generated traces of a regime found by `taotsim fit`\n"
               "                       (NAME: traces/regime-NAME.json, e.g. paper) instead\n\n");
        break;
    case STUDY_ABLATION:
        printf("usage: taotsim ablation [options]\n\n"
               "The paper's Table 2: TAOT with the flow hint (Phase 1) and the communication\n"
               "cost (Phase 2) on and off, all four combinations, on generated traces, one per\n"
               "seed; mean over seeds of per-seed means ± std across seeds, paper beside ours.\n\n"
               "  --seeds LIST         trace seeds (default 1,2,3)\n"
               "  --ep N               EP size (default 32)\n"
               "  --imbalance X        initial imbalance target (default 0.7)\n\n");
        gen_help();
        break;
    case STUDY_SWEEP:
        printf("usage: taotsim sweep [FILE] [options]\n\n"
               "λ sensitivity: every planner at each λ_plan, scored at each λ_eval; the\n"
               "break-even λ* of every planner pair at each λ_plan. FILE defaults to the\n"
               "bundled EP32 50%% trace.\n\n"
               "  --lambda-plan LIST   λ_plan values (default 1,2,3,5,10); lists take a,b,c and lo-hi+step\n"
               "  --lambda-eval LIST   λ_eval values (default 1-10+1)\n"
               "  --lambda-from-bandwidth INTRA_GBPS,INTER_GBPS  set λ_plan and λ_eval to INTRA/INTER\n\n");
        break;
    case STUDY_SCALING:
        printf("usage: taotsim scaling [options]\n\n"
               "Scaling sweeps on traces generated on the fly with fixed seeds: EP size,\n"
               "initial imbalance and guest slots, one axis at a time around the base point;\n"
               "residual imbalance, costs, plan time (--timing), step-time model speedup\n"
               "(--step-model) beside the paper's Fig. 3.\n\n"
               "  --eps LIST           EP sizes (default 4,8,16,32,64)\n"
               "  --imbalances LIST    imbalance targets (default 0.3,0.5,0.7,0.9)\n"
               "  --slot-list LIST     guest slots K (default 1,2,4,8,16)\n"
               "  --base-ep N (16)  --base-imbalance X (0.5)  --base-slots K (2)\n\n");
        gen_help();
        break;
    }
    common_help(k);
}

static void on_progress(void *ctx, int done, int total)
{
    tsim_progress_update(ctx, done, total);
}

/* Seeds are 64-bit (like gen's --seed), so a list of them is parsed as
 * such rather than as ints. */
static int parse_u64_list(const char *s, uint64_t *out, int max, int *n, const char *what, tsim_error *err)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0 || len >= sizeof item)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: expected a comma-separated list of seeds, got '%s'", what,
                                  s);
        if (*n == max)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: at most %d seeds", what, max);
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t v;
        if (tsim_parse_int64(item, 0, INT64_MAX, &v, what, err))
            return TSIM_E_INPUT;
        out[(*n)++] = (uint64_t)v;
        if (!p[len])
            return TSIM_OK;
        p += len + 1;
    }
}

/* Study lists get the checks replay's single values get: every value in
 * [lo, hi], and no value twice (a duplicate grid point is a typo, and would
 * print the same row twice). */
static int check_double_list(const double *v, int n, double lo, double hi, const char *what, tsim_error *err)
{
    for (int i = 0; i < n; i++) {
        if (!(v[i] >= lo && v[i] <= hi))
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %g is out of range [%g, %g]", what, v[i], lo, hi);
        for (int j = 0; j < i; j++)
            if (v[j] == v[i])
                return tsim_error_set(err, TSIM_E_INPUT, "%s: %g appears twice", what, v[i]);
    }
    return TSIM_OK;
}

static int check_int_list(const int *v, int n, int lo, int hi, const char *what, tsim_error *err)
{
    for (int i = 0; i < n; i++) {
        if (v[i] < lo || v[i] > hi)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %d is out of range [%d, %d]", what, v[i], lo, hi);
        for (int j = 0; j < i; j++)
            if (v[j] == v[i])
                return tsim_error_set(err, TSIM_E_INPUT, "%s: %d appears twice", what, v[i]);
    }
    return TSIM_OK;
}

static int gen_option(tsim_study_config *c, const char *name, const char *val, bool *handled, tsim_error *err)
{
    *handled = true;
    tsim_gen_params *g = &c->gen;
    if (strcmp(name, "experts") == 0)
        return tsim_parse_int(val, 1, 65536, &g->experts, "--experts", err);
    if (strcmp(name, "topk") == 0)
        return tsim_parse_int(val, 1, 65536, &g->topk, "--topk", err);
    if (strcmp(name, "tokens") == 0)
        return tsim_parse_int(val, 1, 1 << 24, &g->tokens, "--tokens", err);
    if (strcmp(name, "rpn") == 0 || strcmp(name, "ranks-per-node") == 0)
        return tsim_parse_int(val, 1, 4096, &g->ranks_per_node, "--rpn", err);
    if (strcmp(name, "microbatches") == 0)
        return tsim_parse_int(val, 1, 1000000, &g->microbatches, "--microbatches", err);
    if (strcmp(name, "layers") == 0)
        return tsim_parse_int(val, 1, 10000, &g->layers, "--layers", err);
    if (strcmp(name, "concentration") == 0)
        return tsim_parse_double(val, 1e-6, 1e9, &g->concentration, "--concentration", err);
    if (strcmp(name, "seed") == 0) {
        int64_t s;
        int rc = tsim_parse_int64(val, 0, INT64_MAX, &s, "--seed", err);
        g->seed = (uint64_t)s;
        return rc;
    }
    *handled = false;
    return TSIM_OK;
}

static int study_option(study_kind k, tsim_study_config *c, const char *name, const char *val, bool *handled,
                        tsim_error *err)
{
    *handled = true;
    if (k == STUDY_TABLE1 && strcmp(name, "traces") == 0) {
        c->traces_dir = val;
        return TSIM_OK;
    }
    if (k == STUDY_ABLATION) {
        if (strcmp(name, "seeds") == 0)
        {
            int rc = parse_u64_list(val, c->seeds, TSIM_STUDY_LIST_MAX, &c->n_seeds, "--seeds", err);
            for (int i = 0; rc == TSIM_OK && i < c->n_seeds; i++)
                for (int j = 0; j < i; j++)
                    if (c->seeds[j] == c->seeds[i])
                        return tsim_error_set(err, TSIM_E_INPUT, "--seeds: %llu appears twice",
                                              (unsigned long long)c->seeds[i]);
            return rc;
        }
        if (strcmp(name, "ep") == 0)
            return tsim_parse_int(val, 1, 4096, &c->ablation_ep, "--ep", err);
        if (strcmp(name, "imbalance") == 0)
            return tsim_parse_double(val, 0, 1000, &c->ablation_imbalance, "--imbalance", err);
    }
    if (k == STUDY_SWEEP) {
        if (strcmp(name, "lambda-plan") == 0)
            return tsim_parse_double_list(val, c->lambda_plans, TSIM_STUDY_LIST_MAX, &c->n_lambda_plans,
                                          "--lambda-plan", err) ||
                           check_double_list(c->lambda_plans, c->n_lambda_plans, 1e-9, 1e9, "--lambda-plan", err)
                       ? TSIM_E_INPUT
                       : TSIM_OK;
        if (strcmp(name, "lambda-eval") == 0)
            return tsim_parse_double_list(val, c->lambda_evals, TSIM_STUDY_LIST_MAX, &c->n_lambda_evals,
                                          "--lambda-eval", err) ||
                           check_double_list(c->lambda_evals, c->n_lambda_evals, 0, 1e9, "--lambda-eval", err)
                       ? TSIM_E_INPUT
                       : TSIM_OK;
        if (strcmp(name, "lambda-from-bandwidth") == 0) {
            double bw[2];
            int n;
            int rc = tsim_parse_double_list(val, bw, 2, &n, "--lambda-from-bandwidth", err);
            if (rc)
                return rc;
            if (n != 2 || !(bw[0] > 0) || !(bw[1] > 0))
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "--lambda-from-bandwidth: expected INTRA_GBPS,INTER_GBPS, both positive");
            c->lambda_plans[0] = c->lambda_evals[0] = bw[0] / bw[1];
            c->n_lambda_plans = c->n_lambda_evals = 1;
            return TSIM_OK;
        }
    }
    if (k == STUDY_SCALING) {
        if (strcmp(name, "eps") == 0)
            return tsim_parse_int_list(val, c->eps, TSIM_STUDY_LIST_MAX, &c->n_eps, "--eps", err) ||
                           check_int_list(c->eps, c->n_eps, 1, 4096, "--eps", err)
                       ? TSIM_E_INPUT
                       : TSIM_OK;
        if (strcmp(name, "imbalances") == 0)
            return tsim_parse_double_list(val, c->imbalances, TSIM_STUDY_LIST_MAX, &c->n_imbalances, "--imbalances",
                                          err) ||
                           check_double_list(c->imbalances, c->n_imbalances, 0, 1000, "--imbalances", err)
                       ? TSIM_E_INPUT
                       : TSIM_OK;
        if (strcmp(name, "slot-list") == 0)
            return tsim_parse_int_list(val, c->slot_list, TSIM_STUDY_LIST_MAX, &c->n_slot_list, "--slot-list", err) ||
                           check_int_list(c->slot_list, c->n_slot_list, 0, 1024, "--slot-list", err)
                       ? TSIM_E_INPUT
                       : TSIM_OK;
        if (strcmp(name, "base-ep") == 0)
            return tsim_parse_int(val, 1, 4096, &c->base_ep, "--base-ep", err);
        if (strcmp(name, "base-imbalance") == 0)
            return tsim_parse_double(val, 0, 1000, &c->base_imbalance, "--base-imbalance", err);
        if (strcmp(name, "base-slots") == 0)
            return tsim_parse_int(val, 0, 1024, &c->base_slots, "--base-slots", err);
    }
    if (k == STUDY_ABLATION || k == STUDY_SCALING) {
        int rc = gen_option(c, name, val, handled, err);
        if (*handled)
            return rc;
    }
    *handled = false;
    return TSIM_OK;
}

/* Every option a study command may take, by name; a command's table is the
 * subset that applies to it, so an option a study would ignore is refused. */
static const struct {
    const char *name;
    int short_name;
    bool has_value;
    unsigned kinds; /* bit per study_kind */
} study_option_list[] = {
#define ALL_STUDIES 0xfu
#define ONLY(k) (1u << (k))
    {"planners", 0, true, ALL_STUDIES},
    /* sweep and table1/ablation plan at one K; scaling varies it (--base-slots, --slot-list) */
    {"slots", 0, true, ONLY(STUDY_TABLE1) | ONLY(STUDY_ABLATION) | ONLY(STUDY_SWEEP)},
    /* sweep takes lists (--lambda-plan, --lambda-eval) instead */
    {"lambda", 0, true, ONLY(STUDY_TABLE1) | ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"lambda-eval", 0, true, ALL_STUDIES},
    {"jobs", 'j', true, ALL_STUDIES},
    {"shard", 0, true, ALL_STUDIES},
    {"std", 0, false, ALL_STUDIES},
    {"timing", 0, false, ALL_STUDIES},
    {"no-timing", 0, false, ALL_STUDIES},
    /* only scaling's tables show the step-time model; the others refuse it (step_hint) */
    {"step-model", 0, false, ONLY(STUDY_SCALING)},
    {"fail-if", 0, true, ALL_STUDIES},
    /* sweep re-weights one run's costs per lambda_eval; the bounds hold at one */
    {"bounds", 0, false, ONLY(STUDY_TABLE1) | ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"capacity-factor", 0, true, ALL_STUDIES},
    {"plots", 0, true, ALL_STUDIES},
    {"report", 0, true, ALL_STUDIES},
    {"format", 0, true, ALL_STUDIES},
    {"output", 'o', true, ALL_STUDIES},
    {"traces", 0, true, ONLY(STUDY_TABLE1)},
    {"regime", 0, true, ONLY(STUDY_TABLE1)},
    {"seeds", 0, true, ONLY(STUDY_ABLATION)},
    {"ep", 0, true, ONLY(STUDY_ABLATION)},
    {"imbalance", 0, true, ONLY(STUDY_ABLATION)},
    {"lambda-plan", 0, true, ONLY(STUDY_SWEEP)},
    {"lambda-from-bandwidth", 0, true, ONLY(STUDY_SWEEP)},
    {"eps", 0, true, ONLY(STUDY_SCALING)},
    {"imbalances", 0, true, ONLY(STUDY_SCALING)},
    {"slot-list", 0, true, ONLY(STUDY_SCALING)},
    {"base-ep", 0, true, ONLY(STUDY_SCALING)},
    {"base-imbalance", 0, true, ONLY(STUDY_SCALING)},
    {"base-slots", 0, true, ONLY(STUDY_SCALING)},
    {"experts", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"topk", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"tokens", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"rpn", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"ranks-per-node", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"microbatches", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"layers", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"concentration", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
    {"seed", 0, true, ONLY(STUDY_ABLATION) | ONLY(STUDY_SCALING)},
#undef ONLY
#undef ALL_STUDIES
};

/* The command's option table: ids are 1 + the index in study_option_list. */
static void study_options_for(study_kind kind, tsim_cli_option *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof study_option_list / sizeof study_option_list[0] && n + 1 < cap; i++)
        if (study_option_list[i].kinds & (1u << kind))
            out[n++] = (tsim_cli_option){study_option_list[i].name, study_option_list[i].short_name,
                                         study_option_list[i].has_value, (int)i + 1};
    out[n] = (tsim_cli_option){0};
}

/* Options of other studies that a user may expect here: say what to use. */
static const char *step_hint(const char *name)
{
    if (strcmp(name, "step-model") == 0 || tsim_step_model_option_exists(name))
        return "only 'taotsim scaling' shows the step-time model (and 'taotsim replay --step-model')";
    return NULL;
}

static const char *sweep_hint(const char *name)
{
    if (strcmp(name, "lambda") == 0)
        return "sweep takes lists, --lambda-plan LIST and --lambda-eval LIST";
    return step_hint(name);
}

static const char *scaling_hint(const char *name)
{
    if (strcmp(name, "slots") == 0)
        return "scaling varies K: --base-slots K for the other axes, --slot-list LIST for its own";
    return NULL;
}

typedef struct {
    study_kind kind;
    tsim_study_config *c;
    tsim_format format;
    const char *out_path, *plots_dir, *report_path;
    const char *gates[MAX_GATES];
    int n_gates;
    bool show_std;
    const char *regime; /* table1 --regime NAME|FILE */
    bool format_given;
} study_args;

static int study_on_trace(void *ctx, const char *arg, tsim_error *err)
{
    (void)err;
    study_args *a = ctx;
    a->c->trace = arg;
    return TSIM_OK;
}

static int study_on_option(void *ctx, int id, const char *val, tsim_error *err)
{
    study_args *a = ctx;
    tsim_study_config *c = a->c;
    const char *name = study_option_list[id - 1].name;
    bool handled;
    int rc = study_option(a->kind, c, name, val, &handled, err);
    if (rc || handled)
        return rc;
    if (strcmp(name, "std") == 0)
        a->show_std = true;
    else if (strcmp(name, "regime") == 0)
        a->regime = val;
    else if (strcmp(name, "timing") == 0)
        c->timing = true;
    else if (strcmp(name, "no-timing") == 0)
        c->timing = false;
    else if (strcmp(name, "step-model") == 0)
        c->step_model_on = true;
    else if (strcmp(name, "bounds") == 0)
        c->bounds = true;
    else if (strcmp(name, "capacity-factor") == 0)
        rc = tsim_parse_double(val, 1e-6, 1e6, &c->capacity_factor, "--capacity-factor", err);
    else if (strcmp(name, "planners") == 0)
        c->planners = val;
    else if (strcmp(name, "slots") == 0)
        rc = tsim_parse_int(val, 0, 1024, &c->slots, "--slots", err);
    else if (strcmp(name, "lambda") == 0) {
        rc = tsim_parse_double(val, 1e-9, 1e9, &c->lambda_eval, "--lambda", err);
        c->base.common.lambda_plan = c->lambda_eval;
    } else if (strcmp(name, "lambda-eval") == 0)
        rc = tsim_parse_double(val, 0, 1e9, &c->lambda_eval, "--lambda-eval", err);
    else if (strcmp(name, "jobs") == 0)
        rc = tsim_parse_int(val, 1, 1024, &c->threads, "--jobs", err);
    else if (strcmp(name, "format") == 0) {
        a->format_given = true;
        rc = tsim_format_parse(val, &a->format, err);
    } else if (strcmp(name, "shard") == 0) {
        tsim_shard shard;
        rc = tsim_shard_parse(val, &shard, err);
        c->shard_index = shard.index;
        c->shard_count = shard.count;
    }
    else if (strcmp(name, "output") == 0)
        a->out_path = val;
    else if (strcmp(name, "plots") == 0)
        a->plots_dir = val;
    else if (strcmp(name, "report") == 0)
        a->report_path = val;
    else if (strcmp(name, "fail-if") == 0)
        rc = tsim_cli_gate_add(a->gates, &a->n_gates, MAX_GATES, val, err);
    else
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "%s: option --%s has no handler", study_names[a->kind], name);
    return rc;
}

/* id_argv: the command line as typed (tsim_argv_identity), for a shard's
 * partial result. */
/* Runs the study of the given kind into *study. */
static int run_kind(study_kind kind, tsim_study_config *cfg, const char *regime_path, tsim_study *study,
                    tsim_error *err)
{
    int rc;
    switch (kind) {
    case STUDY_TABLE1:
        if (regime_path) {
            /* generated traces of a fitted regime (taotsim fit), not the bundled ones */
            tsim_regime regime;
            rc = tsim_regime_load(regime_path, cfg->traces_dir, &regime, err);
            if (rc == TSIM_OK)
                rc = tsim_run_table1_regime(cfg, &regime, study, err);
        } else {
            rc = tsim_run_table1(cfg, study, err);
        }
        break;
    case STUDY_ABLATION:
        rc = tsim_run_ablation(cfg, study, err);
        break;
    case STUDY_SWEEP:
        rc = tsim_run_sweep(cfg, study, err);
        break;
    default:
        rc = tsim_run_scaling(cfg, study, err);
        break;
    }
    return rc;
}

static int study_main(study_kind kind, int argc, char **argv, char **id_argv, int id_argc)
{
    const char *cmd = study_names[kind];
    tsim_error err = {0};
    tsim_study_config c;
    tsim_study_config_default(&c);
    static char traces_dir[4200];
    snprintf(traces_dir, sizeof traces_dir, "%s/traces", tsim_cli_data_dir());
    c.traces_dir = traces_dir;
    char default_trace[4096];
    tsim_table1_trace_path(default_trace, sizeof default_trace, c.traces_dir, 32, 0.5);
    c.trace = default_trace;
    /* Plan time is one of the scaling study's outputs, so it is measured by
     * default there (--no-timing gives byte-reproducible output). */
    c.timing = kind == STUDY_SCALING;
    study_args a = {.kind = kind, .c = &c, .format = TSIM_FORMAT_MD};
    tsim_cli_option options[64];
    study_options_for(kind, options, sizeof options / sizeof options[0]);
    const tsim_cli_parser parser = {
        .cmd = cmd, .options = options, .planner = &c.base,
        .step_model = kind == STUDY_SCALING ? &c.step_model : NULL,
        .on_option = study_on_option, .on_positional = kind == STUDY_SWEEP ? study_on_trace : NULL, .ctx = &a,
        .hint = kind == STUDY_SWEEP ? sweep_hint : kind == STUDY_SCALING ? scaling_hint : step_hint,
    };
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        study_help(kind);
        return 0;
    }
    if (parsed)
        return parsed;
    const tsim_format format = a.format;
    const char *out_path = a.out_path, *plots_dir = a.plots_dir, *report_path = a.report_path;
    const char *const *gates = a.gates;
    const int n_gates = a.n_gates;
    const bool show_std = a.show_std;
    if (c.shard_count) {
        /* A shard's output is the partial result merge reads; what only the
         * whole result can say goes on the merge. */
        if (a.format_given && format != TSIM_FORMAT_JSON)
            return tsim_cli_usage_error(cmd, "--shard writes a partial result (JSON) for 'taotsim merge': "
                                             "give --format md|csv to the merge");
        if (n_gates || plots_dir || report_path || show_std)
            return tsim_cli_usage_error(cmd, "--%s goes on 'taotsim merge', which sees the whole result",
                                        n_gates      ? "fail-if"
                                        : plots_dir  ? "plots"
                                        : report_path ? "report"
                                                      : "std");
        if (c.bounds) /* the merge keeps no bound state: refuse rather than drop it */
            return tsim_cli_usage_error(cmd, "--bounds does not combine with --shard");
    }
    {
        /* Before any work: every output can be written, none is the trace
         * or another output (exit 2 must leave nothing written). */
        const char *outputs[] = {out_path, plots_dir, report_path};
        const char *flags[] = {"-o", "--plots", "--report"};
        const char *inputs[] = {kind == STUDY_SWEEP ? c.trace : NULL};
        if (tsim_outfile_check_writable(out_path, &err) || tsim_cli_check_output_dir(plots_dir, "--plots", &err) ||
            tsim_outfile_check_distinct(outputs, flags, 3, inputs, 1, &err) || tsim_report_check(report_path, &err))
            return tsim_cli_fail(cmd, &err);
        /* a missing gnuplot fails before the work, not after it */
        if (plots_dir && tsim_plot_check(TSIM_PLOT_PNG | TSIM_PLOT_SVG, &err))
            return tsim_cli_fail(cmd, &err);
    }
    tsim_progress progress;
    tsim_progress_start(&progress, cmd);
    c.progress = on_progress;
    c.progress_ctx = &progress;
    tsim_study study = {0}; /* freed on every path, even before a study is made */
    int rc = run_kind(kind, &c, a.regime, &study, &err);
    tsim_progress_finish(&progress);
    if (!rc)
        rc = tsim_external_finish(&err); /* exec planners' ends, before a file is written */
    if (rc) {
        tsim_study_free(&study);
        return tsim_cli_fail(cmd, &err);
    }
    if (c.shard_count) {
        cJSON *j = tsim_study_partial_json(&study, id_argv, id_argc, &err);
        tsim_outfile out;
        if (!j || tsim_outfile_open(&out, out_path, &err)) {
            cJSON_Delete(j);
            tsim_study_free(&study);
            return tsim_cli_fail(cmd, &err);
        }
        rc = tsim_json_print(out.fp, j);
        cJSON_Delete(j);
        tsim_study_free(&study);
        if (rc) {
            tsim_outfile_abort(&out);
            tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory printing JSON");
            return tsim_cli_fail(cmd, &err);
        }
        if (tsim_outfile_commit(&out, &err))
            return tsim_cli_fail(cmd, &err);
        return TSIM_OK;
    }

    /* Gates first: one that names nothing in the result is exit 2, and exit 2
     * means nothing was written. */
    int gate_status = tsim_cli_check_gates(&study, gates, n_gates, cmd, stderr);
    if (gate_status == TSIM_E_INPUT) {
        tsim_study_free(&study);
        return gate_status;
    }
    /* The result and the report are renamed into place only after the plots
     * are drawn, so a late failure there leaves neither file behind. */
    tsim_outfile out, report = {0};
    rc = tsim_outfile_open(&out, out_path, &err);
    if (!rc && !(rc = tsim_study_print(out.fp, &study, format, show_std, &err)))
        rc = tsim_outfile_flush(&out, &err);
    if (!rc && (plots_dir || report_path)) {
        cJSON *j = tsim_study_json(&study);
        if (!j)
            rc = tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        if (!rc && plots_dir)
            rc = tsim_plot_result(j, plots_dir, TSIM_PLOT_PNG | TSIM_PLOT_SVG, stderr, &err);
        if (!rc && report_path)
            rc = tsim_report_write(&report, report_path, j, &err);
        cJSON_Delete(j);
    }
    if (!rc)
        rc = tsim_outfile_commit(&out, &err);
    if (!rc && report_path)
        rc = tsim_outfile_commit(&report, &err);
    tsim_outfile_abort(&report);
    tsim_outfile_abort(&out);
    tsim_study_free(&study);
    return rc ? tsim_cli_fail(cmd, &err) : gate_status;
}

static int study_main_of(int argc, char **argv, char **id_argv, int id_argc, void *ctx)
{
    return study_main(*(const study_kind *)ctx, argc, argv, id_argv, id_argc);
}

static int run_study(study_kind kind, int argc, char **argv)
{
    return tsim_cli_run_with_identity(study_names[kind], argc, argv, study_main_of, &kind);
}

int tsim_cmd_table1(int argc, char **argv)
{
    return run_study(STUDY_TABLE1, argc, argv);
}

int tsim_cmd_ablation(int argc, char **argv)
{
    return run_study(STUDY_ABLATION, argc, argv);
}

int tsim_cmd_sweep(int argc, char **argv)
{
    return run_study(STUDY_SWEEP, argc, argv);
}

int tsim_cmd_scaling(int argc, char **argv)
{
    return run_study(STUDY_SCALING, argc, argv);
}
