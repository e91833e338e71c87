#include "experiments.h"

#include "taot.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "clock.h"
#include "grid.h"
#include "paper.h"
#include "record_set.h"
#include "registry.h"
#include "session.h"
#include "trace.h"
#include "tsim_config.h"

/* ---- records held in memory for one grid point (record_set.h) ------------- */

/* A calibrated synthetic trace (experiments.md), made in memory. */
static int record_set_generate(tsim_record_set *rs, const tsim_gen_params *base, double target, tsim_error *err)
{
    tsim_record_set_init(rs, base->ep, base->experts, base->ranks_per_node);
    tsim_gen_params p = *base;
    tsim_gen_calibration cal;
    int rc = tsim_gen_calibrate(&p, target, &cal, NULL, NULL, err);
    if (rc) {
        tsim_error_prefix(err, "generating EP%d at %.0f%% imbalance (seed %llu)", p.ep, target * 100,
                          (unsigned long long)p.seed);
        return rc;
    }
    p.hot_fraction = cal.hot_fraction;
    tsim_gen *g;
    if ((rc = tsim_gen_open(&g, &p, err)))
        return rc;
    const tsim_record *rec;
    while (tsim_gen_next(g, &rec, NULL) == 1)
        if ((rc = tsim_record_set_push(rs, rec, err)))
            break;
    tsim_gen_close(g);
    if (rc)
        tsim_record_set_free(rs);
    return rc;
}

/* Which generated trace an error came from (the grid has several). */
static void generated_prefix(tsim_error *err, int ep, double target, uint64_t seed)
{
    tsim_error_prefix(err, "generated EP%d at %.0f%% imbalance (seed %llu)", ep, target * 100,
                      (unsigned long long)seed);
}

/* ---- one grid point: every planner over a record set ------------------------ */

typedef struct {
    tsim_planner planners[32];
    int n;
} planner_list;

static int planner_list_parse(planner_list *pl, const char *list, const tsim_planner_options *base, tsim_error *err)
{
    return tsim_planner_list_parse(list, base, pl->planners, 32, &pl->n, err);
}

/* Runs one planner over the record set in its own session, so that one that
 * cannot fit this topology (LPLB's graphs) yields an n/a row instead of
 * failing the grid. With transfers (may be NULL), the per-record intra and
 * inter series are handed over to the caller (sweep re-weights them). */
static int run_planner(const tsim_record_set *rs, const tsim_planner *planner, int slots, double lambda_eval,
                       const tsim_study_config *c, tsim_study_row *row, tsim_series transfers[2], tsim_error *err)
{
    snprintf(row->planner, sizeof row->planner, "%s", planner->label);
    snprintf(row->method, sizeof row->method, "%s", planner->desc->name);
    tsim_session s;
    tsim_error init_err = {0};
    int rc = tsim_session_init(&s, rs->ranks, rs->experts, rs->ranks_per_node, slots, rs->home, planner, 1,
                               lambda_eval, &init_err);
    if (tsim_session_init_refused(planner, rc, &init_err)) {
        row->ok = false;
        snprintf(row->error, sizeof row->error, "%s", init_err.msg);
        return TSIM_OK;
    }
    if (rc) {
        *err = init_err;
        return rc;
    }
    s.timing = c->timing;
    s.step_model_on = c->step_model_on;
    s.step_model = c->step_model;
    if (c->bounds && (rc = tsim_session_enable_bounds(&s, err))) {
        tsim_session_free(&s);
        return rc;
    }
    s.capacity_factor = c->capacity_factor;
    s.pipeline = true; /* external planners get their window of records in flight */
    for (int i = 0; i < rs->n && rc == TSIM_OK; i++)
        rc = tsim_session_record(&s, &rs->recs[i], err);
    if (rc == TSIM_OK)
        rc = tsim_session_drain(&s, err);
    if (rc == TSIM_OK) {
        tsim_study_row_from_session(row, &s, 0);
        if (transfers) {
            transfers[0] = s.results[0].metrics[TSIM_M_INTRA];
            transfers[1] = s.results[0].metrics[TSIM_M_INTER];
            memset(&s.results[0].metrics[TSIM_M_INTRA], 0, sizeof(tsim_series));
            memset(&s.results[0].metrics[TSIM_M_INTER], 0, sizeof(tsim_series));
        }
    }
    tsim_session_free(&s);
    return rc;
}

/* Every planner over the record set: rows[n] are filled. */
static int run_planners(const tsim_record_set *rs, const tsim_planner *planners, int n, int slots, double lambda_eval,
                        const tsim_study_config *c, tsim_study_row *rows, tsim_error *err)
{
    for (int p = 0; p < n; p++) {
        int rc = run_planner(rs, &planners[p], slots, lambda_eval, c, &rows[p], NULL, err);
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

static void set_key(tsim_study_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void set_key(tsim_study_row *row, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->key, sizeof row->key, fmt, ap);
    va_end(ap);
}

/* A number as a key part: 2.5 -> "2p5". */
static void key_num(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%g", v);
    for (char *p = buf; *p; p++)
        if (*p == '.')
            *p = 'p';
}

void tsim_study_config_default(tsim_study_config *c)
{
    memset(c, 0, sizeof *c);
    tsim_planner_options_default(&c->base);
    c->slots = 2;
    c->lambda_eval = 3.0;
    c->threads = tsim_cpu_count();
    tsim_step_model_default(&c->step_model);
    tsim_gen_params_default(&c->gen);
    c->gen.microbatches = 4;
    c->gen.layers = 2;
    c->seeds[0] = 1;
    c->seeds[1] = 2;
    c->seeds[2] = 3;
    c->n_seeds = 3;
    c->ablation_ep = 32;
    c->ablation_imbalance = 0.7;
    static const double lp[] = {1, 2, 3, 5, 10};
    memcpy(c->lambda_plans, lp, sizeof lp);
    c->n_lambda_plans = 5;
    for (int i = 0; i < 10; i++)
        c->lambda_evals[i] = i + 1;
    c->n_lambda_evals = 10;
    static const int eps[] = {4, 8, 16, 32, 64};
    memcpy(c->eps, eps, sizeof eps);
    c->n_eps = 5;
    static const double imb[] = {0.3, 0.5, 0.7, 0.9};
    memcpy(c->imbalances, imb, sizeof imb);
    c->n_imbalances = 4;
    static const int ks[] = {1, 2, 4, 8, 16};
    memcpy(c->slot_list, ks, sizeof ks);
    c->n_slot_list = 5;
    c->base_ep = 16;
    c->base_imbalance = 0.5;
    c->base_slots = 2;
}

void tsim_table1_trace_path(char *buf, size_t n, const char *dir, int ep, double imbalance)
{
    snprintf(buf, n, "%s/ep%d-imb%d.jsonl.gz", dir, ep, (int)lround(imbalance * 100));
}

/* ---- table1 ------------------------------------------------------------------ */

static const int table1_eps[2] = {16, 32};
static const double table1_imbalances[5] = {0.1, 0.2, 0.3, 0.5, 0.7};

typedef struct {
    const tsim_study_config *c;
    planner_list pl;
    tsim_study_row *rows; /* [cells * planners] */
    double *measured;     /* [cells] mean rho_before of the trace */
    double *frontier;     /* --bounds: [cells][2][TSIM_BOUNDS_BUDGETS] budgets, then the mean least rho_after */
} table1_ctx;

/* --bounds: budgets of a cell's frontier, 0 to 1.5x the costliest in-model
 * planner's mean weighted cost, evenly spaced. */
#define TSIM_BOUNDS_BUDGETS 25

static int cell_frontier(const tsim_record_set *rs, const tsim_study_row *rows, int n, const tsim_study_config *c,
                         double *out, tsim_error *err)
{
    double top = 1.0;
    for (int p = 0; p < n; p++)
        if (rows[p].ok && rows[p].bounds_fit == 0 && rows[p].metrics[TSIM_M_WEIGHTED].mean > top)
            top = rows[p].metrics[TSIM_M_WEIGHTED].mean;
    for (int j = 0; j < TSIM_BOUNDS_BUDGETS; j++)
        out[j] = 1.5 * top * j / (TSIM_BOUNDS_BUDGETS - 1);
    tsim_topology topo;
    int rc = tsim_topology_init(&topo, rs->ranks, rs->experts, rs->ranks_per_node, c->slots, rs->home, err);
    if (rc)
        return rc;
    rc = tsim_bounds_cell_frontier(rs->recs, rs->n, &topo, c->lambda_eval, out, TSIM_BOUNDS_BUDGETS,
                                   out + TSIM_BOUNDS_BUDGETS, err);
    tsim_topology_free(&topo);
    return rc;
}

static int table1_job(void *ctx_, int cell, tsim_error *err)
{
    table1_ctx *ctx = ctx_;
    int ep = table1_eps[cell / 5];
    double imb = table1_imbalances[cell % 5];
    char path[4096];
    tsim_table1_trace_path(path, sizeof path, ctx->c->traces_dir, ep, imb);
    tsim_record_set rs;
    int rc = tsim_record_set_read(&rs, path, err);
    if (rc)
        return rc;
    if (rs.ranks != ep) {
        const int got = rs.ranks; /* read before the free clears it */
        tsim_record_set_free(&rs);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: expected an EP%d trace, got EP%d", path, ep, got);
    }
    tsim_study_row *rows = ctx->rows + (size_t)cell * (size_t)ctx->pl.n;
    for (int p = 0; p < ctx->pl.n; p++) {
        rows[p].ep = ep;
        rows[p].imbalance = imb;
        rows[p].slots = ctx->c->slots;
        set_key(&rows[p], "ep%d.imb%d", ep, (int)lround(imb * 100));
    }
    rc = run_planners(&rs, ctx->pl.planners, ctx->pl.n, ctx->c->slots, ctx->c->lambda_eval, ctx->c, rows, err);
    if (rc == TSIM_OK && ctx->frontier)
        rc = cell_frontier(&rs, rows, ctx->pl.n, ctx->c, ctx->frontier + (size_t)cell * 2 * TSIM_BOUNDS_BUDGETS, err);
    tsim_record_set_free(&rs);
    if (rc) /* ten traces: say which one */
        tsim_error_prefix(err, "%s", path);
    return rc;
}

static void grid_progress(void *ctx_, int done, int total)
{
    const tsim_study_config *c = ctx_;
    if (c->progress)
        c->progress(c->progress_ctx, done, total);
}

/* Grid jobs get their study context first; the progress hook needs the config. */
typedef struct {
    tsim_grid_job job;
    void *job_ctx;
    const tsim_study_config *c;
} job_wrap;

static int wrapped_job(void *w_, int i, tsim_error *err)
{
    job_wrap *w = w_;
    return w->job(w->job_ctx, i, err);
}

static void wrapped_progress(void *w_, int done, int total)
{
    job_wrap *w = w_;
    grid_progress((void *)w->c, done, total);
}

static int run_grid(const tsim_study_config *c, int n, tsim_grid_job job, void *ctx, tsim_error *err)
{
    job_wrap w = {job, ctx, c};
    return tsim_grid_run_shard(n, c->shard_index, c->shard_count, c->threads, wrapped_job, wrapped_progress, &w, err);
}

/* The grid's rows into the study, point-major: every point's, or only the
 * shard's (a partial study, finished by taotsim merge). */
static int copy_points(tsim_study *out, const tsim_study_config *c, const tsim_study_row *rows, int points,
                       int rows_per_point, tsim_error *err)
{
    out->points = points;
    out->rows_per_point = rows_per_point;
    out->shard_index = c->shard_index;
    out->shard_count = c->shard_count;
    for (int i = 0; i < points; i++) {
        if (!tsim_grid_point_in_shard(i, c->shard_index, c->shard_count))
            continue;
        for (int k = 0; k < rows_per_point; k++) {
            tsim_study_row *r = tsim_study_add(out);
            if (!r)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            *r = rows[(size_t)i * (size_t)rows_per_point + (size_t)k];
        }
    }
    return TSIM_OK;
}

static void params_common(tsim_study *out, const tsim_study_config *c)
{
    cJSON_AddNumberToObject(out->params, "slots", c->slots);
    cJSON_AddNumberToObject(out->params, "lambda_plan", c->base.common.lambda_plan);
    cJSON_AddNumberToObject(out->params, "lambda_eval", c->lambda_eval);
    if (c->capacity_factor > 0)
        cJSON_AddNumberToObject(out->params, "capacity_factor", c->capacity_factor);
    if (c->step_model_on) {
        cJSON *m = cJSON_AddObjectToObject(out->params, "step_model");
        cJSON_AddNumberToObject(m, "us_per_token", c->step_model.us_per_token);
        cJSON_AddNumberToObject(m, "backward_ratio", c->step_model.backward_ratio);
        cJSON_AddNumberToObject(m, "expert_mb", c->step_model.expert_mb);
        cJSON_AddNumberToObject(m, "intra_gbps", c->step_model.intra_gbps);
        cJSON_AddNumberToObject(m, "inter_gbps", c->step_model.inter_gbps);
        cJSON_AddBoolToObject(m, "overlap", c->step_model.overlap);
    }
}

static cJSON *break_even_json(const char *a, const char *b, double intra_a, double inter_a, double intra_b,
                              double inter_b)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "a", a);
    cJSON_AddStringToObject(j, "b", b);
    double ls;
    if (!isnan(intra_a) && !isnan(intra_b) && tsim_break_even(intra_a, inter_a, intra_b, inter_b, &ls) == 0) {
        cJSON_AddNumberToObject(j, "lambda_star", ls);
        /* a is cheaper below lambda* when it moves more replicas across nodes */
        cJSON_AddStringToObject(j, "a_cheaper_when", inter_a > inter_b ? "lambda < lambda_star" : "lambda > lambda_star");
    } else {
        cJSON_AddNullToObject(j, "lambda_star");
        double d = intra_a - intra_b;
        cJSON_AddStringToObject(j, "a_cheaper_when", isnan(d) ? "n/a" : d < 0 ? "always" : d > 0 ? "never" : "equal");
    }
    return j;
}

/* extra.frontier: per cell, the budgets and the mean least rho_after. */
static void frontier_json(tsim_study *out, const double *frontier, int cells)
{
    cJSON *arr = cJSON_AddArrayToObject(out->extra, "frontier");
    for (int cell = 0; cell < cells; cell++) {
        const double *f = frontier + (size_t)cell * 2 * TSIM_BOUNDS_BUDGETS;
        cJSON *j = cJSON_CreateObject();
        char key[64];
        snprintf(key, sizeof key, "ep%d.imb%d", table1_eps[cell / 5], (int)lround(table1_imbalances[cell % 5] * 100));
        cJSON_AddStringToObject(j, "key", key);
        cJSON_AddItemToObject(j, "weighted", cJSON_CreateDoubleArray(f, TSIM_BOUNDS_BUDGETS));
        cJSON_AddItemToObject(j, "rho_after", cJSON_CreateDoubleArray(f + TSIM_BOUNDS_BUDGETS, TSIM_BOUNDS_BUDGETS));
        cJSON_AddItemToArray(arr, j);
    }
}

int tsim_run_table1(const tsim_study_config *c, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "table1");
    table1_ctx ctx = {.c = c};
    int rc = planner_list_parse(&ctx.pl, c->planners ? c->planners : "echo,llep,lplb,taot", &c->base, err);
    if (rc)
        return rc;
    int cells = 10;
    ctx.rows = calloc((size_t)cells * (size_t)ctx.pl.n, sizeof *ctx.rows);
    if (!ctx.rows)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; i < cells * ctx.pl.n; i++) {
        ctx.rows[i].flow_hint = ctx.rows[i].comm_cost = -1;
        ctx.rows[i].lambda_plan = ctx.rows[i].lambda_eval = NAN;
        ctx.rows[i].seeds = 1;
    }
    /* The frontier figure's data: whole runs only (a shard's merge would drop it). */
    if (c->bounds && c->shard_count == 0 &&
        !(ctx.frontier = calloc((size_t)cells * 2 * TSIM_BOUNDS_BUDGETS, sizeof *ctx.frontier))) {
        free(ctx.rows);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    rc = run_grid(c, cells, table1_job, &ctx, err);
    if (rc == TSIM_OK)
        rc = copy_points(out, c, ctx.rows, cells, ctx.pl.n, err);
    if (rc == TSIM_OK && ctx.frontier)
        frontier_json(out, ctx.frontier, cells);
    free(ctx.frontier);
    free(ctx.rows);
    if (rc)
        return rc;
    params_common(out, c);
    cJSON_AddStringToObject(out->params, "traces", c->traces_dir);
    cJSON_AddNumberToObject(out->params, "ranks_per_node", 8);
    return c->shard_count ? TSIM_OK : tsim_study_finish(out, err);
}

/* Break-even lambda of TAOT against each baseline, ours and the paper's. */
static int table1_finish(tsim_study *out, tsim_error *err)
{
    cJSON *be = cJSON_AddArrayToObject(out->extra, "break_even");
    if (!be)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; i < out->n; i++) {
        const tsim_study_row *a = &out->rows[i];
        if (strcmp(a->planner, "taot") != 0 || !a->ok)
            continue;
        for (int k = 0; k < out->n; k++) {
            const tsim_study_row *b = &out->rows[k];
            if (b == a || strcmp(b->key, a->key) != 0)
                continue;
            cJSON *j = break_even_json(a->planner, b->planner, a->metrics[TSIM_M_INTRA].mean,
                                       a->metrics[TSIM_M_INTER].mean, b->ok ? b->metrics[TSIM_M_INTRA].mean : NAN,
                                       b->ok ? b->metrics[TSIM_M_INTER].mean : NAN);
            cJSON_AddNumberToObject(j, "ep", a->ep);
            cJSON_AddNumberToObject(j, "imbalance", a->imbalance);
            tsim_paper_cell pa, pb;
            double ls;
            if (tsim_paper_table1(a->ep, a->imbalance, tsim_study_row_method(a), &pa) &&
                tsim_paper_table1(b->ep, b->imbalance, tsim_study_row_method(b), &pb) &&
                tsim_break_even(pa.intra, pa.inter, pb.intra, pb.inter, &ls) == 0)
                cJSON_AddNumberToObject(j, "paper_lambda_star", ls);
            else
                cJSON_AddNullToObject(j, "paper_lambda_star");
            cJSON_AddItemToArray(be, j);
        }
    }
    return TSIM_OK;
}

/* ---- ablation ------------------------------------------------------------------ */

static const int ablation_flow[4] = {0, 0, 1, 1};
static const int ablation_comm[4] = {0, 1, 1, 0};

typedef struct {
    const tsim_study_config *c;
    tsim_planner variants[4];
    tsim_study_row *rows; /* [seeds * 4] */
} ablation_ctx;

static int ablation_job(void *ctx_, int seed_index, tsim_error *err)
{
    ablation_ctx *ctx = ctx_;
    tsim_gen_params p = ctx->c->gen;
    p.ep = ctx->c->ablation_ep;
    p.seed = ctx->c->seeds[seed_index];
    tsim_record_set rs;
    int rc = record_set_generate(&rs, &p, ctx->c->ablation_imbalance, err);
    if (rc)
        return rc;
    tsim_study_row *rows = ctx->rows + (size_t)seed_index * 4;
    rc = run_planners(&rs, ctx->variants, 4, ctx->c->slots, ctx->c->lambda_eval, ctx->c, rows, err);
    tsim_record_set_free(&rs);
    if (rc)
        generated_prefix(err, p.ep, ctx->c->ablation_imbalance, p.seed);
    /* what ablation_finish puts on the combined rows */
    for (int v = 0; v < 4; v++) {
        rows[v].ep = ctx->c->ablation_ep;
        rows[v].imbalance = ctx->c->ablation_imbalance;
        rows[v].slots = ctx->c->slots;
    }
    return rc;
}

int tsim_run_ablation(const tsim_study_config *c, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "ablation");
    ablation_ctx ctx = {.c = c};
    for (int v = 0; v < 4; v++) {
        tsim_planner *p = &ctx.variants[v];
        tsim_planner_configure(p, &tsim_planner_taot, "taot", &c->base);
        tsim_taot_options *o = (tsim_taot_options *)p->own.bytes;
        o->flow_hint = ablation_flow[v];
        o->comm_cost = ablation_comm[v];
    }
    int S = c->n_seeds;
    ctx.rows = calloc((size_t)S * 4, sizeof *ctx.rows);
    if (!ctx.rows)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = run_grid(c, S, ablation_job, &ctx, err);
    if (rc == TSIM_OK)
        rc = copy_points(out, c, ctx.rows, S, 4, err);
    free(ctx.rows);
    if (rc)
        return rc;
    params_common(out, c);
    cJSON_AddNumberToObject(out->params, "ep", c->ablation_ep);
    cJSON_AddNumberToObject(out->params, "imbalance", c->ablation_imbalance);
    cJSON *seeds = cJSON_AddArrayToObject(out->params, "seeds");
    for (int s = 0; s < S; s++)
        cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)c->seeds[s]));
    cJSON_AddNumberToObject(out->params, "experts", c->gen.experts);
    cJSON_AddNumberToObject(out->params, "tokens", c->gen.tokens);
    cJSON_AddNumberToObject(out->params, "microbatches", c->gen.microbatches);
    cJSON_AddNumberToObject(out->params, "layers", c->gen.layers);
    return c->shard_count ? TSIM_OK : tsim_study_finish(out, err);
}

/* Per combination: the mean over seeds of per-seed means, and the standard
 * deviation across seeds (model.md). The rows in are seed-major, 4 a seed. */
static int ablation_finish(tsim_study *out, tsim_error *err)
{
    const int S = out->points;
    tsim_study_row *raw = out->rows;
    out->rows = NULL;
    out->n = out->cap = 0;
    double *vals = malloc(sizeof *vals * (size_t)(S > 0 ? S : 1) * 2);
    int rc = vals ? TSIM_OK : tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int v = 0; v < 4 && rc == TSIM_OK && S > 0; v++) {
        tsim_study_row *row = tsim_study_add(out);
        if (!row) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            break;
        }
        const tsim_study_row *first = &raw[v];
        *row = *first;
        row->lambda_plan = row->lambda_eval = NAN;
        row->flow_hint = ablation_flow[v];
        row->comm_cost = ablation_comm[v];
        row->seeds = S;
        set_key(row, "flow-%s.comm-%s", row->flow_hint ? "on" : "off", row->comm_cost ? "on" : "off");
        row->records = 0;
        memset(row->notes, 0, sizeof row->notes);
        for (int s = 0; s < S; s++) {
            row->records += raw[(size_t)s * 4 + (size_t)v].records;
            for (int b = 0; b < TSIM_NOTE_KINDS; b++)
                row->notes[b] += raw[(size_t)s * 4 + (size_t)v].notes[b];
        }
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            for (int s = 0; s < S; s++)
                vals[s] = raw[(size_t)s * 4 + (size_t)v].metrics[m].mean;
            row->metrics[m] = tsim_summarize(vals, (size_t)S, vals + S);
        }
    }
    free(vals);
    free(raw);
    return rc;
}

/* ---- sweep ------------------------------------------------------------------------ */

typedef struct {
    const tsim_study_config *c;
    const tsim_record_set *rs;
    planner_list pl;
    /* per lambda_plan point: the rows of every lambda_eval x planner, weighted
     * re-derived from each planner's per-record intra and inter */
    tsim_study_row *rows; /* [n_lambda_plans * n_lambda_evals * planners] */
} sweep_ctx;

static int sweep_job(void *ctx_, int lp, tsim_error *err)
{
    sweep_ctx *ctx = ctx_;
    const tsim_study_config *c = ctx->c;
    const int n = ctx->pl.n, nle = c->n_lambda_evals;
    const size_t nrec = (size_t)ctx->rs->n;
    tsim_study_row *rows = ctx->rows + (size_t)lp * (size_t)nle * (size_t)n;
    double *w = malloc(sizeof *w * (nrec ? nrec : 1) * 2);
    if (!w)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    char lp_key[32], le_key[32];
    key_num(lp_key, sizeof lp_key, c->lambda_plans[lp]);
    int rc = TSIM_OK;
    for (int p = 0; p < n && rc == TSIM_OK; p++) {
        tsim_planner pl = ctx->pl.planners[p];
        pl.common.lambda_plan = c->lambda_plans[lp];
        tsim_study_row src = {0};
        tsim_series ii[2] = {{0}, {0}};
        rc = run_planner(ctx->rs, &pl, c->slots, c->lambda_eval, c, &src, ii, err);
        if (rc)
            tsim_error_prefix(err, "%s", c->trace);
        for (int le = 0; le < nle && rc == TSIM_OK; le++) {
            tsim_study_row *row = &rows[(size_t)le * (size_t)n + (size_t)p];
            *row = src;
            row->ep = ctx->rs->ranks;
            row->slots = c->slots;
            row->lambda_plan = c->lambda_plans[lp];
            row->lambda_eval = c->lambda_evals[le];
            row->flow_hint = row->comm_cost = -1;
            row->imbalance = NAN;
            key_num(le_key, sizeof le_key, c->lambda_evals[le]);
            set_key(row, "lp%s.le%s", lp_key, le_key);
            if (!row->ok)
                continue;
            for (size_t i = 0; i < ii[0].n; i++)
                w[i] = ii[0].values[i] + c->lambda_evals[le] * ii[1].values[i];
            row->metrics[TSIM_M_WEIGHTED] = tsim_summarize(w, ii[0].n, w + nrec);
        }
        tsim_series_free(&ii[0]);
        tsim_series_free(&ii[1]);
    }
    free(w);
    return rc;
}

int tsim_run_sweep(const tsim_study_config *c, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "sweep");
    sweep_ctx ctx = {.c = c};
    int rc = planner_list_parse(&ctx.pl, c->planners ? c->planners : "taot,echo,llep,lplb", &c->base, err);
    if (rc)
        return rc;
    tsim_record_set rs;
    if ((rc = tsim_record_set_read(&rs, c->trace, err)))
        return rc;
    ctx.rs = &rs;
    const int per_point = c->n_lambda_evals * ctx.pl.n;
    ctx.rows = calloc((size_t)c->n_lambda_plans * (size_t)per_point, sizeof *ctx.rows);
    if (!ctx.rows) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto done;
    }
    if ((rc = run_grid(c, c->n_lambda_plans, sweep_job, &ctx, err)))
        goto done;
    if ((rc = copy_points(out, c, ctx.rows, c->n_lambda_plans, per_point, err)))
        goto done;
    params_common(out, c);
    cJSON_DeleteItemFromObject(out->params, "lambda_plan");
    cJSON_DeleteItemFromObject(out->params, "lambda_eval");
    cJSON_AddStringToObject(out->params, "trace", c->trace);
    cJSON_AddNumberToObject(out->params, "records", rs.n);
    cJSON *lps = cJSON_AddArrayToObject(out->params, "lambda_plan");
    for (int i = 0; i < c->n_lambda_plans; i++)
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(c->lambda_plans[i]));
    cJSON *les = cJSON_AddArrayToObject(out->params, "lambda_eval");
    for (int i = 0; i < c->n_lambda_evals; i++)
        cJSON_AddItemToArray(les, cJSON_CreateNumber(c->lambda_evals[i]));
    if (!c->shard_count)
        rc = tsim_study_finish(out, err);
done:
    free(ctx.rows);
    tsim_record_set_free(&rs);
    return rc;
}

/* lambda* of every planner pair at each lambda_plan, from the point's first
 * lambda_eval rows (intra and inter do not depend on lambda_eval). */
static int sweep_finish(tsim_study *out, tsim_error *err)
{
    cJSON *be = cJSON_AddArrayToObject(out->extra, "break_even");
    const cJSON *les = cJSON_GetObjectItemCaseSensitive(out->params, "lambda_eval");
    const int nle = cJSON_GetArraySize(les);
    if (!be || nle < 1 || out->rows_per_point % nle != 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "sweep: %d rows per point for %d lambda_eval values",
                              out->rows_per_point, nle);
    const int n = out->rows_per_point / nle;
    for (int lp = 0; lp < out->points; lp++) {
        const tsim_study_row *first = out->rows + (size_t)lp * (size_t)out->rows_per_point;
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                const tsim_study_row *ra = &first[a], *rb = &first[b];
                cJSON *j = break_even_json(ra->planner, rb->planner, ra->ok ? ra->metrics[TSIM_M_INTRA].mean : NAN,
                                           ra->ok ? ra->metrics[TSIM_M_INTER].mean : NAN,
                                           rb->ok ? rb->metrics[TSIM_M_INTRA].mean : NAN,
                                           rb->ok ? rb->metrics[TSIM_M_INTER].mean : NAN);
                cJSON_AddNumberToObject(j, "lambda_plan", ra->lambda_plan);
                cJSON_AddItemToArray(be, j);
            }
    }
    return TSIM_OK;
}

/* ---- scaling ------------------------------------------------------------------------ */

typedef struct {
    const char *axis;
    int ep;
    double imbalance;
    int slots;
} scaling_point;

typedef struct {
    const tsim_study_config *c;
    planner_list pl;
    scaling_point *points;
    tsim_study_row *rows; /* [points * planners] */
} scaling_ctx;

static int scaling_job(void *ctx_, int i, tsim_error *err)
{
    scaling_ctx *ctx = ctx_;
    const scaling_point *pt = &ctx->points[i];
    tsim_gen_params p = ctx->c->gen;
    p.ep = pt->ep;
    tsim_record_set rs;
    int rc = record_set_generate(&rs, &p, pt->imbalance, err);
    if (rc)
        return rc;
    tsim_study_row *rows = ctx->rows + (size_t)i * (size_t)ctx->pl.n;
    for (int k = 0; k < ctx->pl.n; k++) {
        rows[k].axis = pt->axis;
        rows[k].ep = pt->ep;
        rows[k].imbalance = pt->imbalance;
        rows[k].slots = pt->slots;
        rows[k].lambda_plan = rows[k].lambda_eval = NAN;
        rows[k].flow_hint = rows[k].comm_cost = -1;
        rows[k].seeds = 1;
        if (strcmp(pt->axis, "ep") == 0)
            set_key(&rows[k], "ep%d", pt->ep);
        else if (strcmp(pt->axis, "slots") == 0)
            set_key(&rows[k], "k%d", pt->slots);
        else
            set_key(&rows[k], "imb%d", (int)lround(pt->imbalance * 100));
    }
    rc = run_planners(&rs, ctx->pl.planners, ctx->pl.n, pt->slots, ctx->c->lambda_eval, ctx->c, rows, err);
    tsim_record_set_free(&rs);
    if (rc)
        generated_prefix(err, p.ep, pt->imbalance, p.seed);
    return rc;
}

int tsim_run_scaling(const tsim_study_config *c, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "scaling");
    scaling_ctx ctx = {.c = c};
    int rc = planner_list_parse(&ctx.pl, c->planners ? c->planners : "taot,echo,llep,lplb", &c->base, err);
    if (rc)
        return rc;
    int np = c->n_eps + c->n_imbalances + c->n_slot_list;
    ctx.points = calloc((size_t)np, sizeof *ctx.points);
    ctx.rows = calloc((size_t)np * (size_t)ctx.pl.n, sizeof *ctx.rows);
    if (!ctx.points || !ctx.rows) {
        free(ctx.points);
        free(ctx.rows);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < c->n_eps; i++)
        ctx.points[k++] = (scaling_point){"ep", c->eps[i], c->base_imbalance, c->base_slots};
    for (int i = 0; i < c->n_imbalances; i++)
        ctx.points[k++] = (scaling_point){"imbalance", c->base_ep, c->imbalances[i], c->base_slots};
    for (int i = 0; i < c->n_slot_list; i++)
        ctx.points[k++] = (scaling_point){"slots", c->base_ep, c->base_imbalance, c->slot_list[i]};
    rc = run_grid(c, np, scaling_job, &ctx, err);
    if (rc == TSIM_OK)
        rc = copy_points(out, c, ctx.rows, np, ctx.pl.n, err);
    free(ctx.points);
    free(ctx.rows);
    if (rc)
        return rc;
    params_common(out, c);
    cJSON_DeleteItemFromObject(out->params, "slots");
    cJSON_AddNumberToObject(out->params, "base_ep", c->base_ep);
    cJSON_AddNumberToObject(out->params, "base_imbalance", c->base_imbalance);
    cJSON_AddNumberToObject(out->params, "base_slots", c->base_slots);
    cJSON_AddNumberToObject(out->params, "experts", c->gen.experts);
    cJSON_AddNumberToObject(out->params, "topk", c->gen.topk);
    cJSON_AddNumberToObject(out->params, "tokens", c->gen.tokens);
    cJSON_AddNumberToObject(out->params, "microbatches", c->gen.microbatches);
    cJSON_AddNumberToObject(out->params, "layers", c->gen.layers);
    cJSON_AddNumberToObject(out->params, "seed", (double)c->gen.seed);
    return c->shard_count ? TSIM_OK : tsim_study_finish(out, err);
}

int tsim_study_finish(tsim_study *s, tsim_error *err)
{
    if (s->shard_count)
        return tsim_error_set(err, TSIM_E_INTERNAL, "finishing a partial %s study", s->study);
    if (strcmp(s->study, "ablation") == 0)
        return ablation_finish(s, err);
    if (strcmp(s->study, "sweep") == 0)
        return sweep_finish(s, err);
    if (strcmp(s->study, "advise") == 0)
        return tsim_advise_finish(s, err);
    /* table1 on a fitted regime (fit.c) has no paper lambda* to set beside */
    if (strcmp(s->study, "table1") == 0 && !cJSON_GetObjectItemCaseSensitive(s->params, "regime"))
        return table1_finish(s, err);
    return TSIM_OK; /* scaling: the grid's rows are the result */
}
