/* taotsim fit: a grid of generator regimes scored against the paper's Table 1
 * (fit.h); prints the best, optionally saves the best as a regime file and
 * draws residual heat maps. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "fit.h"
#include "fit_print.h"
#include "options.h"
#include "outfile.h"
#include "parse.h"
#include "plot.h"
#include "plot_fit.h"
#include "report.h"

static const char *const CMD = "fit";

static void list_text(char *buf, size_t n, const double *v, int count)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%g", i ? "," : "", v[i]);
}

static void usage(void)
{
    tsim_fit_grid g;
    tsim_fit_grid_default(&g);
    char placements[256] = "", experts[64] = "", skews[64], conc[64], tokens[64];
    size_t at = 0;
    for (int i = 0; i < g.n_placements; i++)
        at += (size_t)snprintf(placements + at, sizeof placements - at, "%s%s", i ? ", " : "", g.placements[i]);
    at = 0;
    for (int i = 0; i < g.n_hot_experts; i++) {
        if (g.hot_experts[i] > 0)
            at += (size_t)snprintf(experts + at, sizeof experts - at, "%s%d", i ? "," : "", g.hot_experts[i]);
        else
            at += (size_t)snprintf(experts + at, sizeof experts - at, "%sall", i ? "," : "");
    }
    list_text(skews, sizeof skews, g.skews, g.n_skews);
    list_text(conc, sizeof conc, g.concentrations, g.n_concentrations);
    double tok[TSIM_FIT_MAX_AXIS];
    for (int i = 0; i < g.n_tokens; i++)
        tok[i] = g.tokens[i];
    list_text(tokens, sizeof tokens, tok, g.n_tokens);
    printf("usage: taotsim fit [options]\n"
           "\n"
           "Which synthetic traces reproduce the paper's Table 1? For every regime of a\n"
           "grid (hot-rank placement x hot experts x hot skew x background concentration\n"
           "x tokens per rank), generates in memory the traces of the ten Table-1 cells\n"
           "(EP16, EP32 x 10/20/30/50/70%% initial imbalance, each calibrated within 0.5 pp),\n"
           "runs ECHO, LLEP, LPLB and TAOT on them, and scores the regime by\n"
           "\n"
           "  D = sqrt(mean over the 4 planners, 10 cells and 3 metrics of e^2)\n"
           "  e = (ours - paper) / (|paper| + s), metrics improve pp (s = 1 pp),\n"
           "      intra and inter replicas per record (s = 2)\n"
           "\n"
           "every planner weighing the same (a cell a planner cannot run counts e = 1).\n"
           "Prints the regimes ranked by D, the closest regime for each planner on its\n"
           "own, and the per-cell residuals of the best. The output is the same for any -j\n"
           "(JSON: all but \"command\", the command line as typed).\n"
           "\n"
           "Grid (each axis a list; default %d regimes):\n"
           "  --hot-ranks SPEC       a hot-rank placement (repeatable; the first replaces the\n"
           "                         defaults): N (ranks 0..N-1), per-node:N, or a list of\n"
           "                         ranks valid at EP16 and EP32\n"
           "                         (default %s)\n"
           "  --hot-experts LIST     hot experts per hot rank, 'all' or M (default %s)\n"
           "  --hot-skew LIST        hot skew S, see taotsim gen --help (default %s)\n"
           "  --concentration LIST   background Dirichlet concentration (default %s)\n"
           "  --tokens LIST          tokens per rank per record (default %s)\n"
           "Shape (fixed over the grid):\n"
           "  --experts N (%d)  --topk N (%d)  --rpn N (%d)  --microbatches N (%d)\n"
           "  --layers N (%d)  --drift D (%g)  --seed S (%llu)\n"
           "Evaluation:\n"
           "  --slots K              guest slots per rank (default 2)\n"
           "  --lambda X             λ of the planners and of the metric (default 3)\n"
           "Output:\n"
           "  --top N                regimes shown with per-cell residuals (default %d)\n"
           "  --format md|csv|json   output format (default md)\n"
           "  -o, --output FILE      write the result atomically to FILE (default stdout)\n"
           "  --save-regime FILE     write the best regime as a regime file (for\n"
           "                         table1 --regime), with the command that found it\n"
           "  --name NAME            its name (default: from FILE regime-NAME.json)\n"
           "  --plots DIR            residual heat map per planner for the best regime\n"
           "                         (PNG and SVG; plots/fit_residual.gp)\n"
           "  -j, --jobs N           (regime, cell) pairs in parallel (default: all cores)\n"
           "  -h, --help             this help\n",
           tsim_fit_grid_regimes(&g), placements, experts, skews, conc, tokens, g.base.experts, g.base.topk,
           g.base.ranks_per_node, g.base.microbatches, g.base.layers, g.base.drift,
           (unsigned long long)g.base.seed, g.top);
}

static void on_progress(void *ctx, int done, int total)
{
    tsim_progress_update(ctx, done, total);
}

static int parse_hot_experts(const char *s, tsim_fit_grid *g, tsim_error *err)
{
    g->n_hot_experts = 0;
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[32];
        if (len == 0 || len >= sizeof item)
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-experts '%s': expected a list of 'all' or M", s);
        memcpy(item, p, len);
        item[len] = '\0';
        if (g->n_hot_experts == TSIM_FIT_MAX_AXIS)
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-experts: at most %d values", TSIM_FIT_MAX_AXIS);
        int *v = &g->hot_experts[g->n_hot_experts++];
        if (strcmp(item, "all") == 0)
            *v = 0;
        else if (tsim_parse_int(item, 1, TSIM_MAX_EXPERTS, v, "--hot-experts", err))
            return TSIM_E_INPUT;
        if (!end)
            return TSIM_OK;
        p = end + 1;
    }
}

/* NAME from ".../regime-NAME.json", else "". */
static void name_from_path(const char *path, char *name, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    name[0] = '\0';
    if (strncmp(base, "regime-", 7) == 0 && len > 12 && strcmp(base + len - 5, ".json") == 0)
        snprintf(name, n, "%.*s", (int)(len - 12), base + 7);
}

/* Writes the best regime into out (opened here), flushed but not committed. */
static int save_regime(const tsim_fit_result *r, tsim_outfile *out, const char *path, const char *name,
                       tsim_error *err)
{
    memset(out, 0, sizeof *out);
    if (r->n == 0 || !r->regimes[r->order[0]].feasible)
        return tsim_error_set(err, TSIM_E_INPUT, "--save-regime: no feasible regime to save");
    tsim_regime best = r->regimes[r->order[0]].regime;
    snprintf(best.name, sizeof best.name, "%s", name);
    cJSON *j = tsim_regime_json(&best, tsim_fit_provenance(r, 0));
    if (!j)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = tsim_outfile_open(out, path, err);
    if (!rc && tsim_json_print(out->fp, j))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (!rc)
        rc = tsim_outfile_flush(out, err);
    cJSON_Delete(j);
    return rc;
}

/* Before minutes of work: every output can be written and no two are one file. */
static int check_outputs(const char *out_path, const char *save_path, const char *plots_dir, tsim_error *err)
{
    const char *outputs[] = {out_path, save_path, plots_dir};
    const char *flags[] = {"-o", "--save-regime", "--plots"};
    if (tsim_outfile_check_writable(out_path, err) || tsim_outfile_check_writable(save_path, err) ||
        tsim_cli_check_output_dir(plots_dir, "--plots", err) ||
        tsim_outfile_check_distinct(outputs, flags, 3, NULL, 0, err))
        return TSIM_E_INPUT;
    return plots_dir ? tsim_plot_check(TSIM_PLOT_PNG | TSIM_PLOT_SVG, err) : TSIM_OK;
}

/* The result, the regime file and the plots: nothing is renamed into place
 * until all of them are written, so a late failure leaves no file behind. */
static int write_outputs(const tsim_fit_result *result, tsim_format format, const char *out_path,
                         const char *save_path, const char *regime_name, const char *plots_dir, tsim_error *err)
{
    tsim_outfile out, saved = {0};
    int rc = tsim_outfile_open(&out, out_path, err);
    if (!rc && !(rc = tsim_fit_print(out.fp, result, format, err)))
        rc = tsim_outfile_flush(&out, err);
    if (!rc && save_path)
        rc = save_regime(result, &saved, save_path, regime_name, err);
    if (!rc && plots_dir)
        rc = tsim_plot_fit(result, plots_dir, TSIM_PLOT_PNG | TSIM_PLOT_SVG, stderr, err);
    if (!rc && save_path)
        rc = tsim_outfile_commit(&saved, err);
    if (!rc)
        rc = tsim_outfile_commit(&out, err);
    tsim_outfile_abort(&saved);
    tsim_outfile_abort(&out);
    return rc;
}

enum {
    OPT_HOT_RANKS = 1, OPT_HOT_EXPERTS, OPT_HOT_SKEW, OPT_CONCENTRATION, OPT_TOKENS, OPT_EXPERTS, OPT_TOPK, OPT_RPN,
    OPT_MICROBATCHES, OPT_LAYERS, OPT_DRIFT, OPT_SEED, OPT_SLOTS, OPT_LAMBDA, OPT_TOP, OPT_FORMAT, OPT_OUTPUT,
    OPT_SAVE_REGIME, OPT_NAME, OPT_PLOTS, OPT_JOBS,
};

static const tsim_cli_option fit_options[] = {
    {"hot-ranks", 0, true, OPT_HOT_RANKS},
    {"hot-experts", 0, true, OPT_HOT_EXPERTS},
    {"hot-skew", 0, true, OPT_HOT_SKEW},
    {"concentration", 0, true, OPT_CONCENTRATION},
    {"tokens", 0, true, OPT_TOKENS},
    {"experts", 0, true, OPT_EXPERTS},
    {"topk", 0, true, OPT_TOPK},
    {"rpn", 0, true, OPT_RPN},
    {"ranks-per-node", 0, true, OPT_RPN},
    {"microbatches", 0, true, OPT_MICROBATCHES},
    {"layers", 0, true, OPT_LAYERS},
    {"drift", 0, true, OPT_DRIFT},
    {"seed", 0, true, OPT_SEED},
    {"slots", 0, true, OPT_SLOTS},
    {"lambda", 0, true, OPT_LAMBDA},
    {"top", 0, true, OPT_TOP},
    {"format", 0, true, OPT_FORMAT},
    {"output", 'o', true, OPT_OUTPUT},
    {"save-regime", 0, true, OPT_SAVE_REGIME},
    {"name", 0, true, OPT_NAME},
    {"plots", 0, true, OPT_PLOTS},
    {"jobs", 'j', true, OPT_JOBS},
    {0},
};

typedef struct {
    tsim_study_config c;
    tsim_fit_grid g;
    tsim_format format;
    const char *out_path, *plots_dir, *save_path, *name;
    bool placements_given;
} fit_args;

/* --hot-ranks: one more placement; the first replaces the default list. */
static int add_placement(fit_args *a, const char *val, tsim_error *err)
{
    tsim_fit_grid *g = &a->g;
    if (!a->placements_given)
        g->n_placements = 0;
    a->placements_given = true;
    if (g->n_placements == TSIM_FIT_MAX_AXIS)
        return tsim_error_set(err, TSIM_E_INPUT, "at most %d --hot-ranks placements", TSIM_FIT_MAX_AXIS);
    tsim_gen_params probe = g->base;
    if (strlen(val) >= sizeof g->placements[0])
        return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks '%s': too long", val);
    int rc = tsim_gen_hot_ranks_parse(val, &probe, err);
    if (!rc)
        tsim_gen_hot_ranks_format(&probe, g->placements[g->n_placements++], sizeof g->placements[0]);
    return rc;
}

static int fit_option(void *ctx, int id, const char *val, tsim_error *err)
{
    fit_args *a = ctx;
    tsim_fit_grid *g = &a->g;
    int64_t seed;
    int rc;
    switch (id) {
    case OPT_HOT_RANKS:
        return add_placement(a, val, err);
    case OPT_HOT_EXPERTS:
        return parse_hot_experts(val, g, err);
    case OPT_HOT_SKEW:
        return tsim_parse_double_list(val, g->skews, TSIM_FIT_MAX_AXIS, &g->n_skews, "--hot-skew", err);
    case OPT_CONCENTRATION:
        return tsim_parse_double_list(val, g->concentrations, TSIM_FIT_MAX_AXIS, &g->n_concentrations,
                                      "--concentration", err);
    case OPT_TOKENS:
        return tsim_parse_int_list(val, g->tokens, TSIM_FIT_MAX_AXIS, &g->n_tokens, "--tokens", err);
    case OPT_EXPERTS:
        return tsim_parse_int(val, 1, TSIM_MAX_EXPERTS, &g->base.experts, "--experts", err);
    case OPT_TOPK:
        return tsim_parse_int(val, 1, TSIM_MAX_EXPERTS, &g->base.topk, "--topk", err);
    case OPT_RPN:
        return tsim_parse_int(val, 1, TSIM_MAX_RANKS, &g->base.ranks_per_node, "--rpn", err);
    case OPT_MICROBATCHES:
        return tsim_parse_int(val, 1, TSIM_GEN_MAX_RECORDS, &g->base.microbatches, "--microbatches", err);
    case OPT_LAYERS:
        return tsim_parse_int(val, 1, TSIM_GEN_MAX_RECORDS, &g->base.layers, "--layers", err);
    case OPT_DRIFT:
        return tsim_parse_double(val, 0.0, 1.0, &g->base.drift, "--drift", err);
    case OPT_SEED:
        rc = tsim_parse_int64(val, 0, (int64_t)TSIM_GEN_MAX_SEED, &seed, "--seed", err);
        g->base.seed = (uint64_t)seed;
        return rc;
    case OPT_SLOTS:
        return tsim_parse_int(val, 0, 1024, &a->c.slots, "--slots", err);
    case OPT_LAMBDA:
        rc = tsim_parse_double(val, 1e-9, 1e9, &a->c.lambda_eval, "--lambda", err);
        a->c.base.common.lambda_plan = a->c.lambda_eval;
        return rc;
    case OPT_TOP:
        return tsim_parse_int(val, 1, 4096, &g->top, "--top", err);
    case OPT_FORMAT:
        return tsim_format_parse(val, &a->format, err);
    case OPT_OUTPUT:
        a->out_path = val;
        return TSIM_OK;
    case OPT_SAVE_REGIME:
        a->save_path = val;
        return TSIM_OK;
    case OPT_NAME:
        a->name = val;
        return TSIM_OK;
    case OPT_PLOTS:
        a->plots_dir = val;
        return TSIM_OK;
    case OPT_JOBS:
        return tsim_parse_int(val, 1, 1024, &a->c.threads, "--jobs", err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "fit: option %d has no handler", id);
    }
}

/* After parsing: the checks, the fit, and its outputs. */
static int fit_main(fit_args *a)
{
    tsim_error err = {0};
    tsim_study_config c = a->c;
    tsim_fit_grid g = a->g;
    const tsim_format format = a->format;
    const char *out_path = a->out_path, *plots_dir = a->plots_dir, *save_path = a->save_path, *name = a->name;
    char regime_name[TSIM_REGIME_NAME_MAX] = "";
    if (name) {
        snprintf(regime_name, sizeof regime_name, "%s", name);
    } else if (save_path) {
        name_from_path(save_path, regime_name, sizeof regime_name);
        if (!regime_name[0])
            snprintf(regime_name, sizeof regime_name, "fit");
    }
    if (name || save_path) {
        /* The name must be one --regime NAME can find. */
        char probe[256];
        if (!save_path)
            return tsim_cli_usage_error(CMD, "--name needs --save-regime FILE");
        if (tsim_regime_path(regime_name, ".", probe, sizeof probe, &err) || strchr(regime_name, '/') ||
            strstr(regime_name, ".json"))
            return tsim_cli_usage_error(CMD, "--name '%s': letters, digits, '-' and '_' only", regime_name);
    }
    if (tsim_fit_grid_check(&g, &err))
        return tsim_cli_usage_error(CMD, "%s", err.msg);
    /* Before minutes of work, not after. */
    if (check_outputs(out_path, save_path, plots_dir, &err))
        return tsim_cli_fail(CMD, &err);

    tsim_progress progress;
    tsim_progress_start(&progress, CMD);
    c.progress = on_progress;
    c.progress_ctx = &progress;
    tsim_fit_result result;
    int rc = tsim_fit_run(&c, &g, &result, &err);
    tsim_progress_finish(&progress);
    if (rc)
        return tsim_cli_fail(CMD, &err);

    rc = write_outputs(&result, format, out_path, save_path, regime_name, plots_dir, &err);
    tsim_fit_result_free(&result);
    return rc ? tsim_cli_fail(CMD, &err) : 0;
}

int tsim_cmd_fit(int argc, char **argv)
{
    tsim_error err = {0};
    fit_args *a = calloc(1, sizeof *a);
    if (!a) {
        tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
        return tsim_cli_fail(CMD, &err);
    }
    tsim_study_config_default(&a->c);
    tsim_fit_grid_default(&a->g);
    a->format = TSIM_FORMAT_MD;
    const tsim_cli_parser parser = {.cmd = CMD, .options = fit_options, .on_option = fit_option, .ctx = a};
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP)
        usage();
    int status = parsed == TSIM_CLI_HELP ? 0 : parsed ? parsed : fit_main(a);
    free(a);
    return status;
}
