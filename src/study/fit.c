/* taotsim fit (fit.h): generator regimes scored against the paper's Table 1,
 * and Table 1 on the traces of one regime. */
#include "fit.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "json_strict.h"
#include "paper.h"
#include "registry.h"
#include "session.h"
#include "sort.h"

static const int cell_eps[2] = {16, 32};
static const double cell_imbalances[5] = {0.1, 0.2, 0.3, 0.5, 0.7};

const char *const tsim_fit_planner_names[TSIM_FIT_PLANNERS] = {"echo", "llep", "lplb", "taot"};
const char *const tsim_fit_metric_names[TSIM_FIT_METRICS] = {"improve_pp", "intra", "inter"};
const double tsim_fit_metric_scale[TSIM_FIT_METRICS] = {1.0, 2.0, 2.0};
static const tsim_metric_id fit_metric_ids[TSIM_FIT_METRICS] = {TSIM_M_IMPROVE_PP, TSIM_M_INTRA, TSIM_M_INTER};

/* Grids above this many regimes are refused: the fit would run for days. */
#define MAX_REGIMES 4096

int tsim_fit_cell_ep(int cell)
{
    return cell_eps[cell / 5];
}

double tsim_fit_cell_imbalance(int cell)
{
    return cell_imbalances[cell % 5];
}

/* ---- regimes ----------------------------------------------------------------- */

int tsim_regime_params(const tsim_regime *r, int ep, tsim_gen_params *out, tsim_error *err)
{
    *out = r->gen;
    out->ep = ep;
    out->hot_fraction = 0.0;
    return tsim_gen_params_check(out, err);
}

int tsim_regime_open_cell(const tsim_regime *r, int ep, double imbalance, tsim_gen **out, tsim_gen_calibration *cal,
                          tsim_error *err)
{
    *out = NULL;
    tsim_gen_params p;
    int rc = tsim_regime_params(r, ep, &p, err);
    tsim_gen_calibration local;
    if (!cal)
        cal = &local;
    if (!rc)
        rc = tsim_gen_calibrate(&p, imbalance, cal, NULL, NULL, err);
    if (rc) {
        tsim_error_prefix(err, "EP%d at %.0f%% imbalance", ep, 100.0 * imbalance);
        return rc;
    }
    p.hot_fraction = cal->hot_fraction;
    return tsim_gen_open(out, &p, err);
}

void tsim_regime_describe(const tsim_regime *r, char *buf, size_t n)
{
    char spec[64], m[16];
    tsim_gen_hot_ranks_format(&r->gen, spec, sizeof spec);
    if (r->gen.hot_experts > 0)
        snprintf(m, sizeof m, "%d", r->gen.hot_experts);
    else
        snprintf(m, sizeof m, "all");
    snprintf(buf, n, "hot ranks %s, hot experts %s, skew %g, concentration %g, %d tokens", spec, m, r->gen.hot_skew,
             r->gen.concentration, r->gen.tokens);
}

cJSON *tsim_regime_json(const tsim_regime *r, cJSON *fit)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *g = NULL;
    char spec[64];
    tsim_gen_hot_ranks_format(&r->gen, spec, sizeof spec);
    const tsim_gen_params *p = &r->gen;
    bool ok = j && cJSON_AddStringToObject(j, "format", TSIM_REGIME_FORMAT) &&
              cJSON_AddNumberToObject(j, "version", TSIM_REGIME_VERSION) &&
              cJSON_AddStringToObject(j, "name", r->name) && (g = cJSON_AddObjectToObject(j, "generator")) &&
              cJSON_AddNumberToObject(g, "experts", p->experts) &&
              cJSON_AddNumberToObject(g, "ranks_per_node", p->ranks_per_node) &&
              cJSON_AddNumberToObject(g, "topk", p->topk) && cJSON_AddNumberToObject(g, "tokens", p->tokens) &&
              cJSON_AddNumberToObject(g, "microbatches", p->microbatches) &&
              cJSON_AddNumberToObject(g, "layers", p->layers) &&
              cJSON_AddNumberToObject(g, "concentration", p->concentration) &&
              cJSON_AddNumberToObject(g, "drift", p->drift) && cJSON_AddNumberToObject(g, "seed", (double)p->seed) &&
              cJSON_AddStringToObject(g, "hot_ranks", spec) &&
              (p->hot_experts > 0 ? cJSON_AddNumberToObject(g, "hot_experts", p->hot_experts) != NULL
                                  : cJSON_AddStringToObject(g, "hot_experts", "all") != NULL) &&
              cJSON_AddNumberToObject(g, "hot_skew", p->hot_skew);
    if (ok && fit)
        ok = cJSON_AddItemToObject(j, "fit", fit);
    else
        cJSON_Delete(fit);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* A whole number in [lo, hi] from a JSON member. */
static int json_int(const cJSON *g, const char *key, int lo, int hi, int *out, tsim_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return tsim_error_set(err, TSIM_E_INPUT, "generator.%s: expected a whole number in %d..%d", key, lo, hi);
    *out = (int)v->valuedouble;
    return TSIM_OK;
}

static int json_double(const cJSON *g, const char *key, double lo, double hi, double *out, tsim_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return tsim_error_set(err, TSIM_E_INPUT, "generator.%s: expected a number in %g..%g", key, lo, hi);
    *out = v->valuedouble;
    return TSIM_OK;
}

static bool valid_name(const char *s)
{
    if (!s[0] || strlen(s) >= TSIM_REGIME_NAME_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return false;
    return true;
}

int tsim_regime_from_json(const cJSON *j, tsim_regime *out, tsim_error *err)
{
    static const char *const keys[] = {"experts", "ranks_per_node", "topk", "tokens", "microbatches", "layers",
                                       "concentration", "drift", "seed", "hot_ranks", "hot_experts", "hot_skew"};
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(j))
        return tsim_error_set(err, TSIM_E_INPUT, "not a regime: expected a JSON object");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, TSIM_REGIME_FORMAT) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "not a regime: \"format\" is not \"%s\"", TSIM_REGIME_FORMAT);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != TSIM_REGIME_VERSION)
        return tsim_error_set(err, TSIM_E_INPUT, "\"version\": expected %d", TSIM_REGIME_VERSION);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (!cJSON_IsString(name) || (name->valuestring[0] && !valid_name(name->valuestring)))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "\"name\": expected letters, digits, '-' and '_' (at most %d characters)",
                              TSIM_REGIME_NAME_MAX - 1);
    snprintf(out->name, sizeof out->name, "%s", name->valuestring);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "generator");
    if (!cJSON_IsObject(g))
        return tsim_error_set(err, TSIM_E_INPUT, "\"generator\": expected an object");
    for (const cJSON *m = g->child; m; m = m->next) {
        bool known = false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            known = known || strcmp(m->string, keys[k]) == 0;
        if (!known)
            return tsim_error_set(err, TSIM_E_INPUT, "generator.%s: unknown key", m->string);
    }
    tsim_gen_params *p = &out->gen;
    tsim_gen_params_default(p);
    double seed = 0;
    int rc = json_int(g, "experts", 1, TSIM_MAX_EXPERTS, &p->experts, err);
    if (!rc)
        rc = json_int(g, "ranks_per_node", 1, TSIM_MAX_RANKS, &p->ranks_per_node, err);
    if (!rc)
        rc = json_int(g, "topk", 1, TSIM_MAX_EXPERTS, &p->topk, err);
    if (!rc)
        rc = json_int(g, "tokens", 1, TSIM_GEN_MAX_TOKENS, &p->tokens, err);
    if (!rc)
        rc = json_int(g, "microbatches", 1, TSIM_GEN_MAX_RECORDS, &p->microbatches, err);
    if (!rc)
        rc = json_int(g, "layers", 1, TSIM_GEN_MAX_RECORDS, &p->layers, err);
    if (!rc)
        rc = json_double(g, "concentration", 1e-3, 1e9, &p->concentration, err);
    if (!rc)
        rc = json_double(g, "drift", 0.0, 1.0, &p->drift, err);
    if (!rc)
        rc = json_double(g, "seed", 0.0, (double)TSIM_GEN_MAX_SEED, &seed, err);
    if (!rc && seed != floor(seed))
        rc = tsim_error_set(err, TSIM_E_INPUT, "generator.seed: expected a whole number");
    p->seed = (uint64_t)seed;
    if (!rc)
        rc = json_double(g, "hot_skew", 0.0, TSIM_GEN_MAX_SKEW, &p->hot_skew, err);
    if (rc)
        return rc;
    const cJSON *hr = cJSON_GetObjectItemCaseSensitive(g, "hot_ranks");
    if (!cJSON_IsString(hr))
        return tsim_error_set(err, TSIM_E_INPUT, "generator.hot_ranks: expected a string such as \"per-node:1\"");
    if ((rc = tsim_gen_hot_ranks_parse(hr->valuestring, p, err))) {
        tsim_error_prefix(err, "generator.hot_ranks");
        return rc;
    }
    const cJSON *he = cJSON_GetObjectItemCaseSensitive(g, "hot_experts");
    if (cJSON_IsString(he) && strcmp(he->valuestring, "all") == 0)
        p->hot_experts = 0;
    else if ((rc = json_int(g, "hot_experts", 1, TSIM_MAX_EXPERTS, &p->hot_experts, err)))
        return tsim_error_set(err, TSIM_E_INPUT, "generator.hot_experts: expected \"all\" or a whole number >= 1");
    /* Valid at both EP sizes of Table 1. */
    for (int e = 0; e < 2; e++) {
        tsim_gen_params q;
        if ((rc = tsim_regime_params(out, cell_eps[e], &q, err))) {
            tsim_error_prefix(err, "generator at EP%d", cell_eps[e]);
            return rc;
        }
    }
    return TSIM_OK;
}

int tsim_regime_path(const char *arg, const char *traces_dir, char *buf, size_t n, tsim_error *err)
{
    size_t len = strlen(arg);
    if (strchr(arg, '/') || (len >= 5 && strcmp(arg + len - 5, ".json") == 0)) {
        if ((size_t)snprintf(buf, n, "%s", arg) >= n)
            return tsim_error_set(err, TSIM_E_INPUT, "--regime: the file name is too long");
        return TSIM_OK;
    }
    if (!valid_name(arg))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--regime '%s': expected a name (letters, digits, '-', '_') or a .json file", arg);
    if ((size_t)snprintf(buf, n, "%s/regime-%s.json", traces_dir, arg) >= n)
        return tsim_error_set(err, TSIM_E_INPUT, "--regime: the file name is too long");
    return TSIM_OK;
}

int tsim_regime_load(const char *arg, const char *traces_dir, tsim_regime *out, tsim_error *err)
{
    char path[4096];
    int rc = tsim_regime_path(arg, traces_dir, path, sizeof path, err);
    if (rc)
        return rc;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read the regime: %s", path, strerror(errno));
    /* Regime files are a few hundred bytes; 1 MiB bounds a wrong file. */
    enum { MAX_BYTES = 1 << 20 };
    char *buf = malloc(MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    size_t len = fread(buf, 1, MAX_BYTES + 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || len > MAX_BYTES) {
        free(buf);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s", path, bad ? "read error" : "too large for a regime");
    }
    buf[len] = '\0';
    /* strict: a NUL byte and garbage after the regime are errors */
    cJSON *j = tsim_json_parse_strict(buf, len, path, err);
    free(buf);
    if (!j)
        return err ? err->code : TSIM_E_INPUT;
    rc = tsim_regime_from_json(j, out, err);
    cJSON_Delete(j);
    if (rc)
        tsim_error_prefix(err, "%s", path);
    return rc;
}

/* ---- one cell: every planner over a regime's generated records ------------------ */

/* Streams the cell's records through one session per planner (so a planner
 * that cannot fit the topology, LPLB's graphs, gives an n/a row rather than
 * failing the cell); rows[p] receive the results. */
static int run_cell(const tsim_study_config *c, const tsim_regime *r, int cell, const tsim_planner *planners, int n,
                    tsim_study_row *rows, tsim_gen_calibration *cal, tsim_error *err)
{
    const int ep = tsim_fit_cell_ep(cell);
    const double imb = tsim_fit_cell_imbalance(cell);
    tsim_gen *g = NULL;
    int rc = tsim_regime_open_cell(r, ep, imb, &g, cal, err);
    if (rc)
        return rc;
    tsim_session *s = calloc((size_t)n, sizeof *s);
    bool *live = calloc((size_t)n, sizeof *live);
    if (!s || !live) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto done;
    }
    for (int p = 0; p < n && !rc; p++) {
        snprintf(rows[p].planner, sizeof rows[p].planner, "%s", planners[p].label);
        tsim_error init_err = {0};
        rc = tsim_session_init(&s[p], ep, r->gen.experts, r->gen.ranks_per_node, c->slots, NULL, &planners[p], 1,
                               c->lambda_eval, &init_err);
        if (tsim_session_init_refused(&planners[p], rc, &init_err)) {
            rows[p].ok = false;
            snprintf(rows[p].error, sizeof rows[p].error, "%s", init_err.msg);
            rc = TSIM_OK;
            continue;
        }
        if (rc) {
            *err = init_err;
            break;
        }
        live[p] = true;
        s[p].timing = c->timing;
        s[p].step_model_on = c->step_model_on;
        s[p].step_model = c->step_model;
        if (c->bounds && (rc = tsim_session_enable_bounds(&s[p], err)))
            break;
    }
    const tsim_record *rec;
    while (!rc && tsim_gen_next(g, &rec, NULL) == 1)
        for (int p = 0; p < n && !rc; p++)
            if (live[p])
                rc = tsim_session_record(&s[p], rec, err);
    if (rc) /* say which generated trace, as table1 names its trace file */
        tsim_error_prefix(err, "generated EP%d at %.0f%% imbalance", ep, 100.0 * imb);
    for (int p = 0; p < n && !rc; p++)
        if (live[p])
            tsim_study_row_from_session(&rows[p], &s[p], 0);
done:
    for (int p = 0; s && p < n; p++)
        if (live && live[p])
            tsim_session_free(&s[p]);
    free(s);
    free(live);
    tsim_gen_close(g);
    return rc;
}

static void row_defaults(tsim_study_row *row, int cell, int slots)
{
    memset(row, 0, sizeof *row);
    row->ep = tsim_fit_cell_ep(cell);
    row->imbalance = tsim_fit_cell_imbalance(cell);
    row->slots = slots;
    row->lambda_plan = row->lambda_eval = NAN;
    row->flow_hint = row->comm_cost = -1;
    row->seeds = 1;
    snprintf(row->key, sizeof row->key, "ep%d.imb%d", row->ep, (int)lround(row->imbalance * 100));
}

static void grid_progress(void *ctx, int done, int total)
{
    const tsim_study_config *c = ctx;
    if (c->progress)
        c->progress(c->progress_ctx, done, total);
}

/* ---- table1 on a regime ------------------------------------------------------------ */

typedef struct {
    const tsim_study_config *c;
    const tsim_regime *r;
    tsim_planner planners[32];
    int n;
    tsim_study_row *rows; /* [cells * n] */
} table1_ctx;

typedef struct {
    tsim_grid_job job;
    void *ctx;
    const tsim_study_config *c;
} job_wrap;

static int wrapped_job(void *w_, int i, tsim_error *err)
{
    job_wrap *w = w_;
    return w->job(w->ctx, i, err);
}

static void wrapped_progress(void *w_, int done, int total)
{
    job_wrap *w = w_;
    grid_progress((void *)w->c, done, total);
}

static int run_grid(const tsim_study_config *c, int n, tsim_grid_job job, void *ctx, tsim_error *err)
{
    job_wrap w = {job, ctx, c};
    return tsim_grid_run(n, c->threads, wrapped_job, wrapped_progress, &w, err);
}

static int table1_job(void *ctx_, int cell, tsim_error *err)
{
    table1_ctx *ctx = ctx_;
    tsim_study_row *rows = ctx->rows + (size_t)cell * (size_t)ctx->n;
    for (int p = 0; p < ctx->n; p++)
        row_defaults(&rows[p], cell, ctx->c->slots);
    int rc = run_cell(ctx->c, ctx->r, cell, ctx->planners, ctx->n, rows, NULL, err);
    if (rc && ctx->r->name[0])
        tsim_error_prefix(err, "regime '%s'", ctx->r->name);
    return rc;
}

int tsim_run_table1_regime(const tsim_study_config *c, const tsim_regime *r, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "table1");
    table1_ctx ctx = {.c = c, .r = r};
    int rc = tsim_planner_list_parse(c->planners ? c->planners : "echo,llep,lplb,taot", &c->base, ctx.planners, 32,
                                     &ctx.n, err);
    if (rc)
        return rc;
    ctx.rows = calloc((size_t)TSIM_FIT_CELLS * (size_t)ctx.n, sizeof *ctx.rows);
    if (!ctx.rows)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    /* table1 --regime takes --shard like every study (tsim_study_finish has nothing to add) */
    job_wrap w = {table1_job, &ctx, c};
    rc = tsim_grid_run_shard(TSIM_FIT_CELLS, c->shard_index, c->shard_count, c->threads, wrapped_job,
                             wrapped_progress, &w, err);
    out->points = TSIM_FIT_CELLS;
    out->rows_per_point = ctx.n;
    out->shard_index = c->shard_index;
    out->shard_count = c->shard_count;
    for (int i = 0; rc == TSIM_OK && i < TSIM_FIT_CELLS * ctx.n; i++) {
        if (!tsim_grid_point_in_shard(i / ctx.n, c->shard_index, c->shard_count))
            continue;
        tsim_study_row *row = tsim_study_add(out);
        if (!row)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        else
            *row = ctx.rows[i];
    }
    free(ctx.rows);
    if (rc)
        return rc;
    cJSON_AddNumberToObject(out->params, "slots", c->slots);
    cJSON_AddNumberToObject(out->params, "lambda_plan", c->base.common.lambda_plan);
    cJSON_AddNumberToObject(out->params, "lambda_eval", c->lambda_eval);
    cJSON *rj = tsim_regime_json(r, NULL);
    if (!rj)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    cJSON_AddItemToObject(out->params, "regime", rj);
    cJSON_AddNumberToObject(out->params, "ranks_per_node", r->gen.ranks_per_node);
    return TSIM_OK;
}

/* ---- the grid ------------------------------------------------------------------------ */

/* The default grid spans the regimes the probe pointed at: one hot
 * rank, the first two, one or two per node (the hot load inside one node or
 * spread over all of them); every expert of a hot rank, the first two or only
 * the first; an even or a strongly skewed hotspot (S = 0, 2; a single hot
 * expert per rank takes no skew, see grid_pair_valid); the generator's
 * default background and a nearly uniform one (Dirichlet 200, 1000 per
 * expert: 50 or 100 already give more than 10% base imbalance at EP32, which
 * the 10% cells cannot take); 1024 and 4096 tokens per rank. 4 x (3 x 2 - 1)
 * x 2 x 2 = 80 regimes of 16 records per cell (4 microbatches x 4 layers),
 * pairwise distinct; cells that repeat another regime's records (a grid
 * given "2" and "0,1") are run once. */
void tsim_fit_grid_default(tsim_fit_grid *g)
{
    memset(g, 0, sizeof *g);
    tsim_gen_params_default(&g->base);
    g->base.microbatches = 4;
    g->base.layers = 4;
    static const char *const placements[] = {"1", "2", "per-node:1", "per-node:2"};
    for (size_t i = 0; i < sizeof placements / sizeof placements[0]; i++)
        snprintf(g->placements[i], sizeof g->placements[i], "%s", placements[i]);
    g->n_placements = 4;
    g->hot_experts[0] = 0;
    g->hot_experts[1] = 2;
    g->hot_experts[2] = 1;
    g->n_hot_experts = 3;
    g->skews[0] = 0.0;
    g->skews[1] = 2.0;
    g->n_skews = 2;
    g->concentrations[0] = 200;
    g->concentrations[1] = 1000;
    g->n_concentrations = 2;
    g->tokens[0] = 1024;
    g->tokens[1] = 4096;
    g->n_tokens = 2;
    g->top = 3;
}

/* Whether hot experts m and skew s make a regime: the generator refuses a
 * skew with one hot expert per hot rank (at either EP size), which would
 * only repeat the skew-0 regime. */
static bool grid_pair_valid(const tsim_fit_grid *g, int m, int s)
{
    if (!(g->skews[s] > 0.0))
        return true;
    for (int e = 0; e < 2; e++) {
        int per_rank = g->hot_experts[m] > 0 ? g->hot_experts[m] : g->base.experts / cell_eps[e];
        if (per_rank < 2)
            return false;
    }
    return true;
}

/* The valid (hot experts, skew) pairs; with q >= 0, sets *m and *s to the
 * q-th of them (hot experts major, as the axes are listed). */
static int grid_pairs(const tsim_fit_grid *g, int q, int *m, int *s)
{
    int n = 0;
    for (int i = 0; i < g->n_hot_experts; i++)
        for (int j = 0; j < g->n_skews; j++) {
            if (!grid_pair_valid(g, i, j))
                continue;
            if (n++ == q) {
                *m = i;
                *s = j;
            }
        }
    return n;
}

int tsim_fit_grid_regimes(const tsim_fit_grid *g)
{
    int m, s;
    int64_t n = (int64_t)g->n_placements * grid_pairs(g, -1, &m, &s) * g->n_concentrations * g->n_tokens;
    return n > MAX_REGIMES ? MAX_REGIMES + 1 : (int)n;
}

int tsim_fit_grid_regime(const tsim_fit_grid *g, int i, tsim_regime *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    out->gen = g->base;
    int t = i % g->n_tokens;
    i /= g->n_tokens;
    int c = i % g->n_concentrations;
    i /= g->n_concentrations;
    int m = 0, s = 0;
    const int pairs = grid_pairs(g, -1, &m, &s);
    if (pairs < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "the grid has no regime");
    grid_pairs(g, i % pairs, &m, &s);
    i /= pairs;
    int p = i;
    int rc = tsim_gen_hot_ranks_parse(g->placements[p], &out->gen, err);
    if (rc)
        return rc;
    out->gen.hot_experts = g->hot_experts[m];
    out->gen.hot_skew = g->skews[s];
    out->gen.concentration = g->concentrations[c];
    out->gen.tokens = g->tokens[t];
    return TSIM_OK;
}

int tsim_fit_grid_check(const tsim_fit_grid *g, tsim_error *err)
{
    if (g->n_placements < 1 || g->n_hot_experts < 1 || g->n_skews < 1 || g->n_concentrations < 1 || g->n_tokens < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "every axis of the grid needs at least one value");
    if (tsim_fit_grid_regimes(g) == 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "the grid has no regime: a --hot-skew above 0 needs at least 2 hot experts per hot "
                              "rank (give --hot-skew 0 too, or --hot-experts 2 or more)");
    if (tsim_fit_grid_regimes(g) > MAX_REGIMES)
        return tsim_error_set(err, TSIM_E_INPUT, "the grid has more than %d regimes; narrow the axes", MAX_REGIMES);
    if (g->top < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "--top must be at least 1");
    /* Each axis value on its own, at both EP sizes, so the message names it. */
    tsim_regime r;
    memset(&r, 0, sizeof r);
    for (int p = 0; p < g->n_placements; p++) {
        r.gen = g->base;
        int rc = tsim_gen_hot_ranks_parse(g->placements[p], &r.gen, err);
        for (int e = 0; !rc && e < 2; e++) {
            tsim_gen_params q;
            rc = tsim_regime_params(&r, cell_eps[e], &q, err);
            if (rc)
                tsim_error_prefix(err, "EP%d", cell_eps[e]);
        }
        if (rc)
            return rc;
    }
    for (int m = 0; m < g->n_hot_experts; m++) {
        r.gen = g->base;
        r.gen.hot_experts = g->hot_experts[m];
        for (int e = 0; e < 2; e++) {
            tsim_gen_params q;
            int rc = tsim_regime_params(&r, cell_eps[e], &q, err);
            if (rc) {
                tsim_error_prefix(err, "EP%d", cell_eps[e]);
                return rc;
            }
        }
    }
    for (int i = 0; i < tsim_fit_grid_regimes(g); i++) {
        int rc = tsim_fit_grid_regime(g, i, &r, err);
        for (int e = 0; !rc && e < 2; e++) {
            tsim_gen_params q;
            rc = tsim_regime_params(&r, cell_eps[e], &q, err);
        }
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

/* ---- the fit ------------------------------------------------------------------------------ */

typedef struct {
    const tsim_study_config *c;
    const tsim_fit_grid *g;
    tsim_planner planners[TSIM_FIT_PLANNERS];
    tsim_fit_regime *regimes;
    tsim_study_row *rows; /* [jobs * planners] */
    bool *infeasible;     /* [jobs] */
    char (*why)[288];     /* [jobs] */
    int *copy_of;         /* [jobs]: an earlier job with the same records, or -1 */
} fit_ctx;

static int fit_job(void *ctx_, int job, tsim_error *err)
{
    fit_ctx *ctx = ctx_;
    const int regime = job / TSIM_FIT_CELLS, cell = job % TSIM_FIT_CELLS;
    tsim_fit_regime *fr = &ctx->regimes[regime];
    if (ctx->copy_of[job] >= 0)
        return TSIM_OK; /* filled in from the job it repeats */
    tsim_study_row *rows = ctx->rows + (size_t)job * TSIM_FIT_PLANNERS;
    for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
        row_defaults(&rows[p], cell, ctx->c->slots);
    tsim_gen_calibration cal;
    memset(&cal, 0, sizeof cal);
    tsim_error cell_err = {0};
    int rc = run_cell(ctx->c, &fr->regime, cell, ctx->planners, TSIM_FIT_PLANNERS, rows, &cal, &cell_err);
    if (rc == TSIM_E_INPUT) {
        /* This regime cannot make this cell: the regime is out, the fit goes on. */
        ctx->infeasible[job] = true;
        snprintf(ctx->why[job], sizeof ctx->why[job], "%s", cell_err.msg);
        return TSIM_OK;
    }
    if (rc) {
        *err = cell_err;
        char what[200];
        tsim_regime_describe(&fr->regime, what, sizeof what);
        tsim_error_prefix(err, "regime %d (%s)", regime + 1, what);
        return rc;
    }
    fr->achieved[cell] = cal.achieved;
    fr->hot_fraction[cell] = cal.hot_fraction;
    return TSIM_OK;
}

/* Residuals and distances of one regime from its rows. */
static void score(tsim_fit_regime *fr, const tsim_study_row *rows /* [cells * planners] */)
{
    double planner_sum[TSIM_FIT_PLANNERS] = {0};
    for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
        for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
            const tsim_study_row *row = &rows[cell * TSIM_FIT_PLANNERS + p];
            tsim_fit_entry *e = &fr->entries[cell][p];
            tsim_paper_cell pc;
            tsim_paper_table1(tsim_fit_cell_ep(cell), tsim_fit_cell_imbalance(cell), tsim_fit_planner_names[p], &pc);
            const double paper[TSIM_FIT_METRICS] = {pc.improve_pp, pc.intra, pc.inter};
            e->ok = row->ok;
            for (int q = 0; q < TSIM_FIT_METRICS; q++) {
                e->paper[q] = paper[q];
                if (row->ok) {
                    e->ours[q] = row->metrics[fit_metric_ids[q]].mean;
                    e->resid[q] = (e->ours[q] - paper[q]) / (fabs(paper[q]) + tsim_fit_metric_scale[q]);
                } else {
                    e->ours[q] = NAN;
                    e->resid[q] = 1.0;
                }
                planner_sum[p] += e->resid[q] * e->resid[q];
            }
        }
    }
    double total = 0.0;
    for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
        fr->planner_distance[p] = sqrt(planner_sum[p] / (TSIM_FIT_CELLS * TSIM_FIT_METRICS));
        total += fr->planner_distance[p] * fr->planner_distance[p];
    }
    fr->distance = sqrt(total / TSIM_FIT_PLANNERS);
}

/* Regimes of a grid often make the same traces in some cell: a skew does
 * nothing when a cell's hot set has at most k experts, "2" and "0,1" are one
 * placement. Such a (regime, cell) job repeats the first job with the same
 * records; running it again would give the same rows. */
static int find_repeats(const tsim_fit_regime *regimes, int n, int *copy_of, tsim_error *err)
{
    tsim_gen_params *params = malloc(sizeof *params * (size_t)n);
    if (!params)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int e = 0; e < 2; e++) {
        int rc = TSIM_OK;
        for (int i = 0; i < n && !rc; i++)
            rc = tsim_regime_params(&regimes[i].regime, cell_eps[e], &params[i], err);
        if (rc) {
            free(params);
            return rc;
        }
        for (int i = 0; i < n; i++) {
            int same = -1;
            for (int j = 0; j < i && same < 0; j++)
                if (tsim_gen_same_records(&params[j], &params[i]))
                    same = j;
            for (int k = 0; k < 5; k++) {
                const int cell = e * 5 + k;
                copy_of[i * TSIM_FIT_CELLS + cell] = same < 0 ? -1 : same * TSIM_FIT_CELLS + cell;
            }
        }
    }
    free(params);
    return TSIM_OK;
}

/* Non-negative doubles (and +inf) order like their IEEE bit patterns, which
 * lets the stable integer-key sort rank distances. */
static int64_t distance_key(double d)
{
    int64_t k;
    memcpy(&k, &d, sizeof k);
    return k;
}

int tsim_fit_run(const tsim_study_config *c, const tsim_fit_grid *g, tsim_fit_result *out, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = tsim_fit_grid_check(g, err);
    if (rc)
        return rc;
    out->grid = *g;
    out->slots = c->slots;
    out->lambda_eval = c->lambda_eval;
    out->lambda_plan = c->base.common.lambda_plan;
    const int n = tsim_fit_grid_regimes(g);
    const int jobs = n * TSIM_FIT_CELLS;
    fit_ctx ctx = {.c = c, .g = g};
    int np = 0;
    rc = tsim_planner_list_parse("echo,llep,lplb,taot", &c->base, ctx.planners, TSIM_FIT_PLANNERS, &np, err);
    if (rc)
        return rc;
    out->n = n;
    out->regimes = calloc((size_t)n, sizeof *out->regimes);
    out->order = calloc((size_t)n, sizeof *out->order);
    ctx.regimes = out->regimes;
    ctx.rows = calloc((size_t)jobs * TSIM_FIT_PLANNERS, sizeof *ctx.rows);
    ctx.infeasible = calloc((size_t)jobs, sizeof *ctx.infeasible);
    ctx.why = calloc((size_t)jobs, sizeof *ctx.why);
    ctx.copy_of = calloc((size_t)jobs, sizeof *ctx.copy_of);
    int64_t *keys = calloc((size_t)n, sizeof *keys);
    int *tmp = calloc((size_t)n, sizeof *tmp);
    if (!out->regimes || !out->order || !ctx.rows || !ctx.infeasible || !ctx.why || !ctx.copy_of || !keys ||
        !tmp) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && !rc; i++)
        rc = tsim_fit_grid_regime(g, i, &out->regimes[i].regime, err);
    if (!rc)
        rc = find_repeats(out->regimes, n, ctx.copy_of, err);
    if (!rc)
        rc = run_grid(c, jobs, fit_job, &ctx, err);
    if (rc)
        goto done;
    for (int job = 0; job < jobs; job++) {
        int from = ctx.copy_of[job];
        if (from < 0)
            continue;
        memcpy(ctx.rows + (size_t)job * TSIM_FIT_PLANNERS, ctx.rows + (size_t)from * TSIM_FIT_PLANNERS,
               sizeof *ctx.rows * TSIM_FIT_PLANNERS);
        ctx.infeasible[job] = ctx.infeasible[from];
        memcpy(ctx.why[job], ctx.why[from], sizeof ctx.why[job]);
        const int cell = job % TSIM_FIT_CELLS;
        out->regimes[job / TSIM_FIT_CELLS].achieved[cell] = out->regimes[from / TSIM_FIT_CELLS].achieved[cell];
        out->regimes[job / TSIM_FIT_CELLS].hot_fraction[cell] =
            out->regimes[from / TSIM_FIT_CELLS].hot_fraction[cell];
    }
    for (int i = 0; i < n; i++) {
        tsim_fit_regime *fr = &out->regimes[i];
        fr->feasible = true;
        for (int cell = 0; cell < TSIM_FIT_CELLS && fr->feasible; cell++) {
            if (ctx.infeasible[i * TSIM_FIT_CELLS + cell]) {
                fr->feasible = false;
                snprintf(fr->error, sizeof fr->error, "%s", ctx.why[i * TSIM_FIT_CELLS + cell]);
            }
        }
        if (fr->feasible) {
            score(fr, ctx.rows + (size_t)i * TSIM_FIT_CELLS * TSIM_FIT_PLANNERS);
        } else {
            fr->distance = INFINITY;
            for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
                fr->planner_distance[p] = INFINITY;
        }
        out->order[i] = i;
        keys[i] = distance_key(fr->distance);
    }
    tsim_sort_stable_by_key(out->order, n, keys, false, tmp);
    for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (out->regimes[i].planner_distance[p] < out->regimes[best].planner_distance[p])
                best = i;
        out->closest[p] = best;
    }
done:
    free(ctx.rows);
    free(ctx.infeasible);
    free(ctx.why);
    free(ctx.copy_of);
    free(keys);
    free(tmp);
    if (rc)
        tsim_fit_result_free(out);
    return rc;
}

void tsim_fit_result_free(tsim_fit_result *r)
{
    free(r->regimes);
    free(r->order);
    memset(r, 0, sizeof *r);
}
