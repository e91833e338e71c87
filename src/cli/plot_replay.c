/* replay's figures (plot.h): imbalance per record before and after each
 * planner, or, without per-record values, a candlestick per planner of each
 * metric's summary. */
#include "plot_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the studies ---------- */

/* The summary figures of a replay without --per-record: one per metric, a
 * candlestick per planner (whiskers min to max, box median to p95, a point
 * at the mean), after a grey "before planning" one where the metric has a
 * value before planning. */
static const struct {
    const char *name;   /* figure replay_NAME */
    const char *metric; /* results[].metrics.METRIC */
    const char *before; /* its value before planning, or NULL */
    double scale;
    const char *title;
    const char *ylabel;
} summary_figures[] = {
    {"imbalance", "rho_after", "rho_before", 100, "Imbalance", "imbalance (max load - mean) / mean (%)"},
    {"weighted", "weighted", NULL, 1, "Weighted cost", "weighted cost per record (intra + λ_eval × inter transfers)"},
    {"intra", "intra", NULL, 1, "Intra-node transfers", "intra-node expert transfers per record"},
    {"inter", "inter", NULL, 1, "Inter-node transfers", "inter-node expert transfers per record"},
    {"offloaded", "offloaded", NULL, 1, "Tokens offloaded", "tokens sent to replicas per record"},
};

enum { SUMMARY_STATS = 5 };
static const char *const summary_stats[SUMMARY_STATS] = {"min", "p50", "p95", "max", "mean"};

/* The five statistics of results[i].metrics.NAME, scaled. */
static int need_summary(const cJSON *res, const char *where, const char *name, double scale, double *v,
                        tsim_error *err)
{
    const cJSON *metrics = plot_field(res, "metrics");
    if (!cJSON_IsObject(metrics))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"metrics\" (an object)", where);
    const cJSON *m = plot_field(metrics, name);
    if (!cJSON_IsObject(m))
        return tsim_error_set(err, TSIM_E_INPUT, "%s.metrics: missing \"%s\" (an object with \"min\", \"p50\", "
                              "\"p95\", \"max\" and \"mean\")", where, name);
    char sub[128];
    snprintf(sub, sizeof sub, "%s.metrics.%s", where, name);
    for (int k = 0; k < SUMMARY_STATS; k++) {
        int rc = plot_need_number(m, sub, summary_stats[k], &v[k], err);
        if (rc)
            return rc;
        v[k] *= scale;
    }
    return TSIM_OK;
}

/* One data row: x, the label, the colour as an integer (lc rgb variable),
 * then min p50 p95 max mean. */
static void summary_row(text *d, size_t x, const char *label, const char *colour, const double *v)
{
    plot_text_add(d, "%zu \"%s\" %ld", x, label, strtol(colour + 1, NULL, 16));
    for (int k = 0; k < SUMMARY_STATS; k++) {
        plot_text_add(d, " ");
        plot_text_num(d, v[k]);
    }
    plot_text_add(d, "\n");
}

static int summary_figure(plotset *ps, study *s, size_t f, const int *order, size_t n)
{
    tsim_error *err = s->err;
    char name[64], where[64];
    snprintf(name, sizeof name, "replay_%s", summary_figures[f].name);
    text *d = plot_add_dat(ps, name);
    if (!d)
        return err->code;
    plot_text_add(d, "# taotsim plot: replay: %s per planner, over the records (x label colour min p50 p95 max mean)\n",
                  summary_figures[f].metric);
    plot_write_na(d, s);
    double v[SUMMARY_STATS];
    size_t x = 0;
    int rc = TSIM_OK;
    if (summary_figures[f].before) {
        snprintf(where, sizeof where, "results[%d]", order[0]);
        rc = need_summary(cJSON_GetArrayItem(s->results, order[0]), where, summary_figures[f].before,
                          summary_figures[f].scale, v, err);
        if (rc)
            return rc;
        summary_row(d, x++, "before planning", "#999999", v);
    }
    for (size_t j = 0; j < n; j++) {
        snprintf(where, sizeof where, "results[%d]", order[j]);
        rc = need_summary(cJSON_GetArrayItem(s->results, order[j]), where, summary_figures[f].metric,
                          summary_figures[f].scale, v, err);
        if (rc)
            return rc;
        summary_row(d, x++, s->labels[j], tsim_plot_planner_colour(s->labels[j]), v);
    }
    char data[80], title[400], ctx[192];
    snprintf(data, sizeof data, "%s.dat", name);
    plot_study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "%s over the records (%s%sbox: median to p95, whiskers: min to max, point: mean)",
             summary_figures[f].title, ctx, ctx[0] ? "; " : "");
    text *vars = plot_add_figure(ps, name, "replay_summary", data, title);
    if (!vars)
        return err->code;
    plot_text_add(vars, "YLABEL = ");
    plot_text_gp_string(vars, summary_figures[f].ylabel);
    plot_text_add(vars, "\nNB = %zu\n", x);
    return TSIM_OK;
}

/* replay without per-record values: what the summaries hold. */
static int plot_replay_summary(plotset *ps, study *s)
{
    int *order = calloc((size_t)(s->n ? s->n : 1), sizeof *order);
    if (!order)
        return plot_oom(s->err);
    size_t n = 0;
    int rc = TSIM_OK;
    char where[96];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        size_t known = s->planners.n;
        if ((rc = plot_result_at(s, i, &res, where, sizeof where, &p)) || p < 0)
            continue;
        if (s->planners.n == known)
            rc = tsim_error_set(s->err, TSIM_E_INPUT, "%s: planner '%s' appears twice", where, s->planners.v[p]);
        else
            order[n++] = i;
    }
    if (!rc)
        rc = plot_make_labels(s);
    for (size_t f = 0; f < sizeof summary_figures / sizeof summary_figures[0] && !rc; f++)
        rc = summary_figure(ps, s, f, order, n);
    free(order);
    return rc;
}

/* Whether any result carries per-record values (a "records" array). */
static bool replay_has_records(const study *s)
{
    for (int i = 0; i < s->n; i++) {
        const cJSON *member;
        cJSON_ArrayForEach(member, cJSON_GetArrayItem(s->results, i))
        {
            if (member->string && strcmp(member->string, "records") == 0 && cJSON_IsArray(member))
                return true;
        }
    }
    return false;
}

/* replay: imbalance per record from "records" (replay --per-record); without
 * them, the summary figures. */
/* The "before planning" line's legend entry names the planners whose line
 * lies exactly on it (FasterMoE shadowing nothing), which would hide it:
 * BEFORE_TITLE = "before planning (= fastermoe)". same: per result. */
static void replay_before_title(text *v, const study *s, const bool *same)
{
    text t = {0};
    plot_text_add(&t, "before planning");
    size_t j = 0, named = 0;
    for (int i = 0; i < s->n && j < s->planners.n; i++) {
        if (plot_result_na(cJSON_GetArrayItem(s->results, i)))
            continue;
        if (same[i])
            plot_text_add(&t, "%s%s", named++ ? ", " : " (= ", s->labels[j]);
        j++;
    }
    if (named)
        plot_text_add(&t, ")");
    plot_text_add(v, "BEFORE_TITLE = ");
    plot_text_gp_string(v, t.oom ? "before planning" : t.buf);
    plot_text_add(v, "\n");
    plot_text_free(&t);
}

int plot_replay(plotset *ps, study *s)
{
    if (!replay_has_records(s))
        return plot_replay_summary(ps, s);
    tsim_error *err = s->err;
    const cJSON **it = calloc((size_t)s->n, sizeof *it);
    bool *same = malloc((size_t)s->n * sizeof *same); /* after == before at every record */
    if (!it || !same) {
        free(it);
        free(same);
        return plot_oom(err);
    }
    int rc = TSIM_OK;
    int nrec = -1, first = -1; /* first: the first result with records */
    char where[96];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        size_t known = s->planners.n;
        if ((rc = plot_result_at(s, i, &res, where, sizeof where, &p)))
            break;
        if (p < 0)
            continue;
        if (s->planners.n == known) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: planner '%s' appears twice", where, s->planners.v[p]);
            break;
        }
        /* Replay results may carry "records" twice: the count (a number) and,
         * with --per-record, the array. Take the array. */
        const cJSON *recs = NULL, *member;
        cJSON_ArrayForEach(member, res)
        {
            if (member->string && strcmp(member->string, "records") == 0 && (!recs || cJSON_IsArray(member)))
                recs = member;
        }
        if (!recs || cJSON_IsNumber(recs)) {
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: no \"records\": the replay plot needs per-record values (replay "
                                "--per-record --format json)",
                                where);
            break;
        }
        if (!cJSON_IsArray(recs)) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"records\" is not an array", where);
            break;
        }
        int k = cJSON_GetArraySize(recs);
        if (k == 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"records\" is empty", where);
        else if (nrec >= 0 && k != nrec)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %d records, but results[%d] has %d", where, k, first, nrec);
        nrec = k;
        if (first < 0)
            first = i;
        it[i] = recs->child;
        same[i] = true;
    }
    if (!rc)
        rc = plot_make_labels(s);
    text *d = NULL;
    if (!rc && !(d = plot_add_dat(ps, "replay")))
        rc = err->code;
    if (!rc) {
        plot_text_add(d, "# taotsim plot: replay: imbalance per record, %% ((max load - mean) / mean)\n"
                      "# record rho_before");
        for (size_t j = 0; j < s->planners.n; j++)
            plot_text_add(d, " %s:rho_after", s->labels[j]);
        plot_text_add(d, "\n");
        plot_write_na(d, s);
    }
    for (int r = 0; r < nrec && !rc; r++) {
        double record = 0;
        for (int i = 0; i < s->n; i++) {
            if (!it[i]) /* an n/a result */
                continue;
            const cJSON *x = it[i];
            it[i] = x->next;
            snprintf(where, sizeof where, "results[%d].records[%d]", i, r);
            if (!cJSON_IsObject(x)) {
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: not an object", where);
                break;
            }
            double rec_i = 0, before = 0, after = 0;
            if ((rc = plot_need_number(x, where, "record", &rec_i, err)) ||
                (rc = plot_need_number(x, where, "rho_before", &before, err)) ||
                (rc = plot_need_number(x, where, "rho_after", &after, err)))
                break;
            if (i == first) {
                record = rec_i;
                plot_text_num(d, record);
                plot_text_add(d, " ");
                plot_text_num(d, 100 * before);
            } else if (rec_i != record) {
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: record %.6g, but results[%d].records[%d] is record %.6g",
                                    where, rec_i, first, r, record);
                break;
            }
            plot_text_add(d, " ");
            plot_text_num(d, 100 * after);
            same[i] &= after == before;
        }
        plot_text_add(d, "\n");
    }
    free(it);
    if (rc) {
        free(same);
        return rc;
    }
    char ctx[192], title[320];
    plot_study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Imbalance per record, before and after planning (%s%s%d records)", ctx,
             ctx[0] ? ", " : "", nrec);
    text *v = plot_add_figure(ps, "replay", "replay", "replay.dat", title);
    if (!v) {
        free(same);
        return err->code;
    }
    plot_vars_planners(v, s->labels, s->planners.n);
    replay_before_title(v, s, same);
    free(same);
    return TSIM_OK;
}
