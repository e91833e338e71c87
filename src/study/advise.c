/* taotsim advise: the sweep (advise.h). The trace is read once into memory;
 * every setting is one grid point that replays it through one configured
 * planner in its own session, so -j and --shard work as in the other
 * studies and the rows never depend on the thread count. */
#include "advise.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "record_set.h"
#include "session.h"
#include "trace.h"

void tsim_advise_config_default(tsim_advise_config *c)
{
    memset(c, 0, sizeof *c);
    tsim_planner_options_default(&c->base);
    static const int ks[] = {1, 2, 3, 4};
    memcpy(c->slot_list, ks, sizeof ks);
    c->n_slots = 4;
    static const int iv[] = {1, 8, 32, 128, 512};
    memcpy(c->intervals, iv, sizeof iv);
    c->n_intervals = 5;
    snprintf(c->histories[0], TSIM_ADVISE_HISTORY_MAX, "prev");
    snprintf(c->histories[1], TSIM_ADVISE_HISTORY_MAX, "none");
    c->n_histories = 2;
    static const double lp[] = {1, 3, 10};
    memcpy(c->lambdas, lp, sizeof lp);
    c->n_lambdas = 3;
    c->lambda_eval = 3.0;
    c->expert_mb = 9.44;
    c->target = 0.95;
    c->threads = 1;
}

/* ---- settings ------------------------------------------------------------------ */

/* The planner option whose name ends in suffix ("-interval"), or NULL. */
static const tsim_option_spec *option_ending(const tsim_planner_desc *d, const char *suffix, tsim_option_type type)
{
    const size_t ls = strlen(suffix);
    for (const tsim_option_spec *o = d->options; o && o->name; o++) {
        size_t ln = strlen(o->name);
        if (o->type == type && ln > ls && strcmp(o->name + ln - ls, suffix) == 0)
            return o;
    }
    return NULL;
}

/* Whether value is one of the '|'-separated choices. */
static bool has_choice(const char *choices, const char *value)
{
    const size_t n = strlen(value);
    for (const char *p = choices; p && *p;) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, value, n) == 0)
            return true;
        p += len + (p[len] == '|');
    }
    return false;
}

typedef struct {
    int planner;              /* index into the configured planners */
    tsim_advise_setting set;
    char key[64];
} advise_point;

/* The key of a setting: parts "k2"/"kfree", "i8", "hprev", "lp2p5". */
static void setting_key(const tsim_advise_setting *s, char *key, size_t n)
{
    size_t used = s->slots > 0 ? (size_t)snprintf(key, n, "k%d", s->slots) : (size_t)snprintf(key, n, "kfree");
    if (s->interval > 0 && used < n)
        used += (size_t)snprintf(key + used, n - used, ".i%d", s->interval);
    if (s->history[0] && used < n)
        used += (size_t)snprintf(key + used, n - used, ".h%s", s->history);
    if (!isnan(s->lambda_plan) && used < n) {
        char num[32];
        snprintf(num, sizeof num, "%g", s->lambda_plan);
        for (char *p = num; *p; p++)
            if (*p == '.')
                *p = 'p';
        snprintf(key + used, n - used, ".lp%s", num);
    }
}

int tsim_advise_setting_parse(const char *key, tsim_advise_setting *out)
{
    *out = (tsim_advise_setting){.slots = -1, .lambda_plan = NAN};
    char buf[64];
    if (strlen(key) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", key);
    char *save = NULL;
    for (char *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        char *end;
        if (strcmp(part, "kfree") == 0) {
            out->slots = 0;
        } else if (part[0] == 'k') {
            out->slots = (int)strtol(part + 1, &end, 10);
            if (*end || out->slots < 1)
                return -1;
        } else if (part[0] == 'i') {
            out->interval = (int)strtol(part + 1, &end, 10);
            if (*end || out->interval < 1)
                return -1;
        } else if (part[0] == 'h' && strlen(part + 1) < sizeof out->history) {
            snprintf(out->history, sizeof out->history, "%s", part + 1);
        } else if (strncmp(part, "lp", 2) == 0) {
            for (char *p = part; *p; p++)
                if (*p == 'p' && p > part + 1)
                    *p = '.';
            out->lambda_plan = strtod(part + 2, &end);
            if (*end)
                return -1;
        } else {
            return -1;
        }
    }
    return out->slots >= 0 ? 0 : -1;
}

typedef struct {
    const tsim_advise_config *c;
    const tsim_record_set *t;
    tsim_planner *planners; /* configured, not started */
    int n_planners;
    advise_point *points;
    int n_points, cap_points;
    tsim_study_row *rows;   /* [n_points] */
} advise_ctx;

static int add_point(advise_ctx *x, int planner, const tsim_advise_setting *s, tsim_error *err)
{
    if (x->n_points == x->cap_points) {
        int cap = x->cap_points ? x->cap_points * 2 : 64;
        advise_point *p = realloc(x->points, sizeof *p * (size_t)cap);
        if (!p)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        x->points = p;
        x->cap_points = cap;
    }
    advise_point *p = &x->points[x->n_points++];
    p->planner = planner;
    p->set = *s;
    setting_key(s, p->key, sizeof p->key);
    return TSIM_OK;
}

/* Configures planner pl for a setting: its own --slots, interval, history,
 * lambda_plan, and re-homing on where it has a switch for it (lplb). */
static int configure(tsim_planner *pl, const tsim_advise_setting *s, tsim_error *err)
{
    const tsim_planner_desc *d = pl->desc;
    char v[32];
    if (s->slots > 0)
        pl->common.slots = s->slots;
    if (!isnan(s->lambda_plan))
        pl->common.lambda_plan = s->lambda_plan;
    const tsim_option_spec *o;
    if (s->interval > 0 && (o = option_ending(d, "-interval", TSIM_OPTION_INT))) {
        snprintf(v, sizeof v, "%d", s->interval);
        if (tsim_planner_option_set(pl, o->name, v, err))
            return TSIM_E_INPUT;
    }
    if (s->history[0] && (o = option_ending(d, "-history", TSIM_OPTION_CHOICE)) &&
        tsim_planner_option_set(pl, o->name, s->history, err))
        return TSIM_E_INPUT;
    if ((o = option_ending(d, "-rehome", TSIM_OPTION_CHOICE))) {
        /* the first choice other than "none": the published flow */
        const char *p = o->choices;
        size_t len = strcspn(p, "|");
        if (len == 4 && strncmp(p, "none", 4) == 0 && p[len] == '|')
            p += len + 1, len = strcspn(p, "|");
        snprintf(v, sizeof v, "%.*s", (int)len, p);
        if (tsim_planner_option_set(pl, o->name, v, err))
            return TSIM_E_INPUT;
    }
    return TSIM_OK;
}

/* ---- one setting over the trace ---------------------------------------------------- */

typedef struct {
    int32_t *guests;   /* [R] replicas per guest rank in the current plan */
    int ranks;
    int peak;          /* the most replicas any rank hosted in one record */
    bool unlimited;    /* some plan was not slot-limited */
} guest_count;

static int count_guests(void *ctx, struct tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                        const tsim_metrics *m, tsim_error *err)
{
    (void)s, (void)planner, (void)rec, (void)m, (void)err;
    guest_count *g = ctx;
    memset(g->guests, 0, sizeof *g->guests * (size_t)g->ranks);
    for (int i = 0; i < plan->count; i++) {
        int r = plan->replicas[i].guest;
        if (r >= 0 && r < g->ranks && ++g->guests[r] > g->peak)
            g->peak = g->guests[r];
    }
    if (!plan->slot_limited)
        g->unlimited = true;
    return TSIM_OK;
}

/* Replays n records through planner pl (configured) at slots K into row;
 * g (may be NULL) counts guests. A planner that refuses the topology gives
 * a row that is not ok. */
static int replay_setting(const advise_ctx *x, const tsim_planner *pl, int slots, int n, tsim_study_row *row,
                          tsim_plan_hook hook, void *hook_ctx, tsim_error *err)
{
    const tsim_record_set *t = x->t;
    tsim_session s;
    tsim_error init_err = {0};
    int rc = tsim_session_init(&s, t->ranks, t->experts, t->ranks_per_node, slots > 0 ? slots : 1, t->home, pl, 1,
                               x->c->lambda_eval, &init_err);
    if (tsim_session_init_refused(pl, rc, &init_err)) {
        row->ok = false;
        snprintf(row->error, sizeof row->error, "%s", init_err.msg);
        return TSIM_OK;
    }
    if (rc) {
        *err = init_err;
        return rc;
    }
    s.pipeline = true; /* external planners get their window of records in flight */
    s.hook = hook;
    s.hook_ctx = hook_ctx;
    for (int i = 0; i < n && rc == TSIM_OK; i++)
        rc = tsim_session_record(&s, &t->recs[i], err);
    if (rc == TSIM_OK)
        rc = tsim_session_drain(&s, err);
    if (rc == TSIM_OK)
        tsim_study_row_from_session(row, &s, 0);
    tsim_session_free(&s);
    return rc;
}

static int advise_job(void *ctx_, int i, tsim_error *err)
{
    advise_ctx *x = ctx_;
    const advise_point *pt = &x->points[i];
    tsim_planner pl = x->planners[pt->planner];
    tsim_study_row *row = &x->rows[i];
    int rc = configure(&pl, &pt->set, err);
    guest_count g = {.ranks = x->t->ranks};
    if (rc == TSIM_OK && !(g.guests = calloc((size_t)g.ranks, sizeof *g.guests)))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (rc == TSIM_OK)
        rc = replay_setting(x, &pl, pt->set.slots, x->t->n, row, count_guests, &g, err);
    free(g.guests);
    if (rc)
        tsim_error_prefix(err, "%s (%s)", pl.label, pt->key);
    /* the coordinates the row keeps; without a slot limit, the peak guests stand for K */
    snprintf(row->planner, sizeof row->planner, "%s", pl.label);
    snprintf(row->method, sizeof row->method, "%s", pl.desc->name);
    snprintf(row->key, sizeof row->key, "%s", pt->key);
    row->ep = x->t->ranks;
    row->imbalance = NAN;
    row->slots = pt->set.slots > 0 ? pt->set.slots : -1;
    if (pt->set.slots == 0)
        row->planner_slots = g.peak;
    row->lambda_plan = pt->set.lambda_plan;
    row->lambda_eval = x->c->lambda_eval;
    row->flow_hint = row->comm_cost = -1;
    row->seeds = 1;
    return rc;
}

/* K is swept only for a planner that keeps to a slot limit: one whose
 * descriptor fixes K runs at that K; one whose plans ignore the limit (LLEP,
 * FasterMoE) or that placed no replica at all (none) runs once. Found by
 * planning the first records at K = 1 (16 of them, so that the periodic
 * planners have made a layout from history). */
static int slot_kind(advise_ctx *x, int p, int *fixed, bool *unlimited, tsim_error *err)
{
    const tsim_planner *pl = &x->planners[p];
    *fixed = 0;
    *unlimited = false;
    if (pl->desc->slots_rule) {
        tsim_topology topo;
        int rc = tsim_topology_init(&topo, x->t->ranks, x->t->experts, x->t->ranks_per_node, 1, x->t->home, err);
        if (rc)
            return rc;
        rc = tsim_planner_slots(pl, &topo, fixed, err);
        tsim_topology_free(&topo);
        return rc;
    }
    tsim_planner probe = *pl;
    probe.common.slots = 1;
    tsim_study_row row = {0};
    guest_count g = {.ranks = x->t->ranks};
    if (!(g.guests = calloc((size_t)g.ranks, sizeof *g.guests)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int rc = replay_setting(x, &probe, 1, x->t->n < 16 ? x->t->n : 16, &row, count_guests, &g, err);
    free(g.guests);
    *unlimited = g.unlimited || (row.ok && g.peak == 0);
    return rc;
}

/* Every setting of planner p, in a fixed order: K, then interval and
 * history, then lambda_plan. */
static int planner_points(advise_ctx *x, int p, tsim_error *err)
{
    const tsim_advise_config *c = x->c;
    const tsim_planner_desc *d = x->planners[p].desc;
    int fixed;
    bool unlimited;
    int rc = slot_kind(x, p, &fixed, &unlimited, err);
    if (rc)
        return rc;
    const int nk = fixed || unlimited ? 1 : c->n_slots;
    const tsim_option_spec *iv = option_ending(d, "-interval", TSIM_OPTION_INT);
    const tsim_option_spec *hi = option_ending(d, "-history", TSIM_OPTION_CHOICE);
    const int nh = hi ? c->n_histories : 1;
    const int nl = d->reads_lambda_plan ? c->n_lambdas : 1;
    for (int k = 0; k < nk && rc == TSIM_OK; k++)
        for (int h = 0; h < nh && rc == TSIM_OK; h++) {
            if (hi && !has_choice(hi->choices, c->histories[h]))
                continue;
            /* a layout that is never recomputed has no interval */
            const bool never = hi && strcmp(c->histories[h], "none") == 0;
            const int ni = iv && !never ? c->n_intervals : 1;
            for (int i = 0; i < ni && rc == TSIM_OK; i++)
                for (int l = 0; l < nl && rc == TSIM_OK; l++) {
                    tsim_advise_setting s = {
                        .slots = fixed ? fixed : unlimited ? 0 : c->slot_list[k],
                        .interval = iv && !never ? c->intervals[i] : 0,
                        .lambda_plan = d->reads_lambda_plan ? c->lambdas[l] : NAN,
                    };
                    if (hi)
                        snprintf(s.history, sizeof s.history, "%s", c->histories[h]);
                    rc = add_point(x, p, &s, err);
                }
        }
    return rc;
}

/* The planners: the user's list, or every cheap built-in one. */
static int advise_planners(advise_ctx *x, tsim_error *err)
{
    const tsim_advise_config *c = x->c;
    x->planners = calloc(TSIM_REGISTRY_MAX, sizeof *x->planners);
    if (!x->planners)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (c->planners)
        return tsim_planner_list_parse(c->planners, &c->base, x->planners, TSIM_REGISTRY_MAX, &x->n_planners, err);
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        if ((*d)->cost == TSIM_COST_CHEAP && !(*d)->external)
            tsim_planner_configure(&x->planners[x->n_planners++], *d, NULL, &c->base);
    return TSIM_OK;
}

static void progress_of(void *ctx, int done, int total)
{
    const tsim_advise_config *c = ((const advise_ctx *)ctx)->c;
    if (c->progress)
        c->progress(c->progress_ctx, done, total);
}

static void advise_params(tsim_study *out, const tsim_advise_config *c, const tsim_record_set *t)
{
    cJSON *p = out->params;
    cJSON_AddStringToObject(p, "trace", c->trace);
    cJSON_AddNumberToObject(p, "records", t->n);
    cJSON_AddNumberToObject(p, "ep", t->ranks);
    cJSON_AddNumberToObject(p, "experts", t->experts);
    cJSON_AddNumberToObject(p, "ranks_per_node", t->ranks_per_node);
    cJSON *a = cJSON_AddArrayToObject(p, "slots");
    for (int i = 0; i < c->n_slots; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(c->slot_list[i]));
    a = cJSON_AddArrayToObject(p, "intervals");
    for (int i = 0; i < c->n_intervals; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(c->intervals[i]));
    a = cJSON_AddArrayToObject(p, "histories");
    for (int i = 0; i < c->n_histories; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(c->histories[i]));
    a = cJSON_AddArrayToObject(p, "lambda_plan");
    for (int i = 0; i < c->n_lambdas; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(c->lambdas[i]));
    cJSON_AddNumberToObject(p, "lambda_eval", c->lambda_eval);
    cJSON_AddNumberToObject(p, "expert_mb", c->expert_mb);
    cJSON_AddNumberToObject(p, "target_balancedness", c->target);
}

int tsim_run_advise(const tsim_advise_config *c, tsim_study *out, tsim_error *err)
{
    tsim_study_init(out, "advise");
    tsim_record_set t;
    int rc = tsim_record_set_read(&t, c->trace, err);
    if (rc)
        return rc;
    advise_ctx x = {.c = c, .t = &t};
    if (t.n == 0)
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: no records", c->trace);
    if (rc == TSIM_OK)
        rc = advise_planners(&x, err);
    for (int p = 0; p < x.n_planners && rc == TSIM_OK; p++)
        rc = planner_points(&x, p, err);
    if (rc == TSIM_OK && !(x.rows = calloc((size_t)(x.n_points ? x.n_points : 1), sizeof *x.rows)))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (rc == TSIM_OK)
        rc = tsim_grid_run_shard(x.n_points, c->shard_index, c->shard_count, c->threads, advise_job, progress_of, &x,
                                 err);
    out->points = x.n_points;
    out->rows_per_point = 1;
    out->shard_index = c->shard_index;
    out->shard_count = c->shard_count;
    for (int i = 0; i < x.n_points && rc == TSIM_OK; i++) {
        if (!tsim_grid_point_in_shard(i, c->shard_index, c->shard_count))
            continue;
        tsim_study_row *r = tsim_study_add(out);
        if (!r)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        else
            *r = x.rows[i];
    }
    if (rc == TSIM_OK)
        advise_params(out, c, &t);
    free(x.rows);
    free(x.points);
    free(x.planners);
    tsim_record_set_free(&t);
    if (rc == TSIM_OK && !c->shard_count)
        rc = tsim_advise_finish(out, err);
    return rc;
}

/* ---- the layout to load (--export-layout) --------------------------------------------- */

static int collect_layout(void *ctx, struct tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                          const tsim_metrics *m, tsim_error *err)
{
    (void)s, (void)planner, (void)m;
    return tsim_layout_collector_add(ctx, rec, plan, err);
}

/* Replays row r's setting again into col when its planner plans layouts;
 * *usable: every layer ended with one. */
static int row_layout(advise_ctx *x, const tsim_study_row *r, tsim_layout_collector *col, bool *usable,
                      tsim_error *err)
{
    *usable = false;
    tsim_advise_setting set;
    int p = 0;
    while (p < x->n_planners && strcmp(x->planners[p].label, r->planner) != 0)
        p++;
    if (p == x->n_planners || tsim_advise_setting_parse(r->key, &set))
        return tsim_error_set(err, TSIM_E_INTERNAL, "advise: row %s %s is not one of this sweep's", r->planner,
                              r->key);
    tsim_planner pl = x->planners[p];
    if (!tsim_planner_has_layouts(&pl))
        return TSIM_OK;
    int rc = configure(&pl, &set, err);
    tsim_study_row row = {0};
    tsim_layout_collector_init(col);
    if (rc == TSIM_OK)
        rc = replay_setting(x, &pl, set.slots, x->t->n, &row, collect_layout, col, err);
    const tsim_layout_table *t;
    tsim_error unused = {0};
    *usable = rc == TSIM_OK && row.ok && tsim_layout_collector_finish(col, pl.label, &t, &unused) == TSIM_OK;
    if (!*usable)
        tsim_layout_collector_free(col);
    return rc;
}

int tsim_advise_layout(const tsim_advise_config *c, const tsim_study *s, tsim_layout_collector *layouts, int *row,
                       tsim_error *err)
{
    *row = -1;
    int *order = malloc(sizeof *order * (size_t)(s->n ? s->n : 1));
    if (!order)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    const int n = tsim_advise_ranked(s, order);
    tsim_record_set t;
    int rc = tsim_record_set_read(&t, c->trace, err);
    advise_ctx x = {.c = c, .t = &t};
    if (rc == TSIM_OK)
        rc = advise_planners(&x, err);
    for (int k = 0; k < n && rc == TSIM_OK && *row < 0; k++) {
        bool usable;
        rc = row_layout(&x, &s->rows[order[k]], layouts, &usable, err);
        if (rc == TSIM_OK && usable)
            *row = order[k];
    }
    if (rc == TSIM_OK && *row < 0)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "--export-layout: no setting that reaches balancedness %g ends every layer with a layout "
                            "(eplb, trtllm and swift plan layouts): lower --target-balancedness or add them to "
                            "--planners",
                            c->target);
    free(x.planners);
    tsim_record_set_free(&t);
    free(order);
    return rc;
}
