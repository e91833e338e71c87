/* Shared helpers of the figure files (plot_internal.h): growable text,
 * ordered sets, reading a result's fields, the figures being built, the
 * planners' styles, gnuplot variables, and cells laid out in matrices. */
#include "plot_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------- growable text ---------- */


static bool text_reserve(text *t, size_t extra)
{
    if (t->oom)
        return false;
    if (t->len + extra + 1 <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + extra + 1)
        cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b) {
        t->oom = true;
        return false;
    }
    t->buf = b;
    t->cap = cap;
    return true;
}

void plot_text_addn(text *t, const char *s, size_t n)
{
    if (!text_reserve(t, n))
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void plot_text_add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = true;
        return;
    }
    if (!text_reserve(t, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void plot_text_free(text *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

/* A value in a data file: %.6g, and NaN (gnuplot skips it) for "none". */
void plot_text_num(text *t, double v)
{
    if (isnan(v))
        plot_text_add(t, "NaN");
    else if (isinf(v))
        plot_text_add(t, v > 0 ? "Inf" : "-Inf");
    else
        plot_text_add(t, "%.6g", v == 0 ? 0.0 : v); /* no "-0" */
}

/* A gnuplot double-quoted string. */
void plot_text_gp_string(text *t, const char *s)
{
    plot_text_add(t, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            plot_text_add(t, "\\%c", *s);
        else
            plot_text_addn(t, s, 1);
    }
    plot_text_add(t, "\"");
}

char *plot_str_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

/* Labels end up in gnuplot strings, tick lists (single quoted, where '%'
 * is a format) and data files: keep letters, digits, UTF-8 and a few
 * punctuation marks; anything else (whitespace, quotes, backquotes, which
 * gnuplot would run as a command, '@', '$', '#', control bytes) becomes '_'. */
char *plot_label_dup(const char *s)
{
    char *d = plot_str_dup(s);
    if (!d)
        return NULL;
    for (char *p = d; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool keep = c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("_-.,:;+=%()/<>[]!?*&^~", c) != NULL;
        if (!keep)
            *p = '_';
    }
    return d;
}

/* ---------- ordered sets ---------- */


/* Index of s, added at the end when new. -1 on out of memory. */
long plot_strset_index(strset *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], key) == 0)
            return (long)i;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    char *d = plot_str_dup(key);
    if (!d)
        return -1;
    s->v[s->n] = d;
    return (long)s->n++;
}

void plot_strset_free(strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}


long plot_numset_index(numset *s, double x)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == x)
            return (long)i;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = x;
    return (long)s->n++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void numset_sort(numset *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, cmp_double);
}

void plot_numset_free(numset *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---------- reading the result ---------- */

int plot_oom(tsim_error *err)
{
    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
}

const cJSON *plot_field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

int plot_need_number(const cJSON *obj, const char *where, const char *key, double *out, tsim_error *err)
{
    const cJSON *j = plot_field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (a number)", where, key);
    if (!cJSON_IsNumber(j))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not a number", where, key);
    *out = j->valuedouble;
    return TSIM_OK;
}

int plot_need_string(const cJSON *obj, const char *where, const char *key, const char **out, tsim_error *err)
{
    const cJSON *j = plot_field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (a string)", where, key);
    if (!cJSON_IsString(j) || !j->valuestring)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not a string", where, key);
    if (!j->valuestring[0])
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is empty", where, key);
    *out = j->valuestring;
    return TSIM_OK;
}

int plot_need_bool(const cJSON *obj, const char *where, const char *key, bool *out, tsim_error *err)
{
    const cJSON *j = plot_field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (true or false)", where, key);
    if (!cJSON_IsBool(j))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not true or false", where, key);
    *out = cJSON_IsTrue(j);
    return TSIM_OK;
}

/* results[i].metrics.NAME: "mean" is required, "std" defaults to 0. */
int plot_need_metric(const cJSON *res, const char *where, const char *name, double *mean, double *std,
                     tsim_error *err)
{
    const cJSON *metrics = plot_field(res, "metrics");
    if (!metrics)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"metrics\" (an object)", where);
    if (!cJSON_IsObject(metrics))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"metrics\" is not an object", where);
    const cJSON *m = plot_field(metrics, name);
    if (!cJSON_IsObject(m))
        return tsim_error_set(err, TSIM_E_INPUT, "%s.metrics: missing \"%s\" (an object with \"mean\" and \"std\")",
                              where, name);
    char sub[128];
    snprintf(sub, sizeof sub, "%s.metrics.%s", where, name);
    int rc = plot_need_number(m, sub, "mean", mean, err);
    if (rc)
        return rc;
    *std = 0;
    if (plot_field(m, "std"))
        return plot_need_number(m, sub, "std", std, err);
    return TSIM_OK;
}

/* results[i].paper.NAME: a number or {"mean": ...}; NaN when absent or null. */
int plot_paper_value(const cJSON *res, const char *where, const char *name, double *out, tsim_error *err)
{
    *out = NAN;
    const cJSON *paper = plot_field(res, "paper");
    if (!paper || cJSON_IsNull(paper))
        return TSIM_OK;
    if (!cJSON_IsObject(paper))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"paper\" is not an object", where);
    const cJSON *v = plot_field(paper, name);
    if (!v || cJSON_IsNull(v))
        return TSIM_OK;
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return TSIM_OK;
    }
    if (cJSON_IsObject(v) && cJSON_IsNumber(plot_field(v, "mean"))) {
        *out = plot_field(v, "mean")->valuedouble;
        return TSIM_OK;
    }
    return tsim_error_set(err, TSIM_E_INPUT, "%s.paper: \"%s\" is neither a number nor {\"mean\": ...}", where, name);
}

/* ---------- what gets written ---------- */





void plot_plotset_free(plotset *ps)
{
    for (size_t i = 0; i < ps->ndat; i++) {
        free(ps->dat[i].name);
        plot_text_free(&ps->dat[i].body);
    }
    for (size_t i = 0; i < ps->nfig; i++) {
        free(ps->fig[i].name);
        plot_text_free(&ps->fig[i].vars);
    }
}

/* A data file NAME.dat; NULL (err set) when there are too many. */
text *plot_add_dat(plotset *ps, const char *name)
{
    if (ps->ndat == MAX_FILES) {
        tsim_error_set(ps->err, TSIM_E_INPUT, "too many figures in one result (at most %d)", MAX_FILES);
        return NULL;
    }
    out_text *d = &ps->dat[ps->ndat];
    memset(d, 0, sizeof *d);
    size_t n = strlen(name);
    d->name = malloc(n + 5);
    if (!d->name) {
        plot_oom(ps->err);
        return NULL;
    }
    memcpy(d->name, name, n);
    memcpy(d->name + n, ".dat", 5);
    ps->ndat++;
    return &d->body;
}

/* A figure NAME drawn by plots/TMPL.gp from DATA.dat; its variables start
 * with FIGURE, DATA and TITLE. */
text *plot_add_figure(plotset *ps, const char *name, const char *tmpl, const char *data, const char *title)
{
    if (ps->nfig == MAX_FILES) {
        tsim_error_set(ps->err, TSIM_E_INPUT, "too many figures in one result (at most %d)", MAX_FILES);
        return NULL;
    }
    figure *f = &ps->fig[ps->nfig];
    memset(f, 0, sizeof *f);
    if (!(f->name = plot_str_dup(name))) {
        plot_oom(ps->err);
        return NULL;
    }
    f->tmpl = tmpl;
    ps->nfig++;
    text *v = &f->vars;
    plot_text_add(v, "FIGURE = ");
    plot_text_gp_string(v, name);
    plot_text_add(v, "\nDATA = ");
    plot_text_gp_string(v, data);
    plot_text_add(v, "\nTITLE = ");
    plot_text_gp_string(v, title);
    plot_text_add(v, "\n");
    return v;
}

/* ---------- one style per planner, in every figure ---------- */

/* Fixed colours and filled point types for the planners taotsim registers,
 * so a planner looks the same in every figure of every study: Okabe-Ito's
 * (readable by colour-blind eyes) for the first eight, then Paul Tol's muted
 * hues that neither set below uses. Every registered planner needs its own
 * colour here (test_plot_style walks the registry); a new one that hashes
 * instead could share a colour with another. Point type - 1 is the hollow
 * version of each. */
static const struct {
    const char *name;
    const char *colour;
    int point;
} known_styles[] = {
    {"taot", "#d55e00", 7},   {"echo", "#0072b2", 5},      {"llep", "#009e73", 9},    {"lplb", "#e69f00", 13},
    {"eplb", "#56b4e9", 15},  {"fastermoe", "#cc79a7", 11}, {"optimal", "#000000", 5}, {"none", "#999999", 9},
    {"moonep", "#117733", 5},  {"ultraep", "#aa4499", 9},   {"trtllm", "#44aa99", 13}, {"swift", "#ddcc77", 11},
    {"frontier", "#661100", 7},
};

/* Other labels (e.g. LABEL=taot:--opt=v) get a colour from a palette that
 * shares none of the hues above and a point type, both picked by a hash of
 * the label: the same label looks the same everywhere. */
static const char *const other_colours[] = {"#332288", "#882255", "#999933", "#8c510a", "#7b3294", "#01665e"};
static const int filled_points[] = {7, 5, 9, 11, 13, 15};

static uint32_t label_hash(const char *label)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)label; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h;
}

const char *tsim_plot_planner_colour(const char *label)
{
    for (size_t i = 0; i < sizeof known_styles / sizeof known_styles[0]; i++)
        if (strcmp(label, known_styles[i].name) == 0)
            return known_styles[i].colour;
    return other_colours[label_hash(label) % (sizeof other_colours / sizeof other_colours[0])];
}

int tsim_plot_planner_point(const char *label)
{
    for (size_t i = 0; i < sizeof known_styles / sizeof known_styles[0]; i++)
        if (strcmp(label, known_styles[i].name) == 0)
            return known_styles[i].point;
    uint32_t h = label_hash(label) / (sizeof other_colours / sizeof other_colours[0]);
    return filled_points[h % (sizeof filled_points / sizeof filled_points[0])];
}

/* PLANNERS = "a b c" and NP = 3 (labels are sanitised: no spaces). */
void plot_vars_planners_only(text *v, char *const *labels, size_t n)
{
    plot_text_add(v, "PLANNERS = \"");
    for (size_t i = 0; i < n; i++)
        plot_text_add(v, "%s%s", i ? " " : "", labels[i]);
    plot_text_add(v, "\"\nNP = %zu\n", n);
}

/* Each planner's style: COLORS = "#d55e00 ..." and POINTS = "7 ...". */
void plot_vars_styles(text *v, char *const *labels, size_t n)
{
    plot_text_add(v, "COLORS = \"");
    for (size_t i = 0; i < n; i++)
        plot_text_add(v, "%s%s", i ? " " : "", tsim_plot_planner_colour(labels[i]));
    plot_text_add(v, "\"\nPOINTS = \"");
    for (size_t i = 0; i < n; i++)
        plot_text_add(v, "%s%d", i ? " " : "", tsim_plot_planner_point(labels[i]));
    plot_text_add(v, "\"\n");
}

void plot_vars_planners(text *v, char *const *labels, size_t n)
{
    plot_vars_planners_only(v, labels, n);
    plot_vars_styles(v, labels, n);
}

/* NG and XTICS = '("label" 0, ...)' for bar charts. '%' in a tick label is
 * a format character to gnuplot, hence "%%". ", " and ": " break the line:
 * "\n" (the comma dropped), which gnuplot reads as a newline when it evals
 * the tick list. */
void plot_vars_groups(text *v, char *const *labels, size_t n)
{
    plot_text_add(v, "NG = %zu\nXTICS = '(", n);
    for (size_t i = 0; i < n; i++) {
        plot_text_add(v, "%s\"", i ? ", " : "");
        for (const char *p = labels[i]; *p; p++) {
            if (*p == '%') {
                plot_text_add(v, "%%%%");
            } else if ((*p == ',' || *p == ':') && p[1] == ' ') {
                plot_text_add(v, "%s\\n", *p == ':' ? ":" : "");
                p++;
            } else {
                plot_text_addn(v, p, 1);
            }
        }
        plot_text_add(v, "\" %zu", i);
    }
    plot_text_add(v, ")'\n");
}

/* A word list of 1-based indices, e.g. PAPER = "1 3". */
void plot_vars_index_list(text *v, const char *name, const bool *on, size_t n)
{
    plot_text_add(v, "%s = \"", name);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (on[i]) {
            plot_text_add(v, "%s%zu", first ? "" : " ", i + 1);
            first = false;
        }
    }
    plot_text_add(v, "\"\n");
}

/* ---------- cells: one per result, laid out in matrices ---------- */




/* A row's own slot budget: its planner_slots (the studies), else a replay
 * row's slots where they differ from the command's; NULL when it has none. */
static const cJSON *row_own_slots(const cJSON *root, const cJSON *row)
{
    const cJSON *k = plot_field(row, "planner_slots"), *rk = plot_field(row, "slots");
    const cJSON *cmd = plot_field(plot_field(root, "params"), "slots");
    if (cJSON_IsNumber(k))
        return k;
    return cJSON_IsNumber(rk) && cJSON_IsNumber(cmd) && rk->valuedouble != cmd->valuedouble ? rk : NULL;
}

/* Appends the planners that ran at a slot budget of their own (a study row's
 * planner_slots, MoonEP's E/R) to buf: " (moonep K = 8/4)", each K once. */
static void own_slot_budgets(const study *s, char *buf, size_t n)
{
    const cJSON *rows = plot_field(s->root, "results"), *r, *q;
    bool any = false;
    int i = 0;
    cJSON_ArrayForEach(r, rows) {
        const cJSON *label = plot_field(r, "planner"), *k = row_own_slots(s->root, r);
        i++;
        if (!cJSON_IsString(label) || !cJSON_IsNumber(k))
            continue;
        /* first row of this planner with this K */
        bool seen = false, same_planner = false;
        int j = 0;
        cJSON_ArrayForEach(q, rows) {
            if (++j >= i)
                break;
            const cJSON *ql = plot_field(q, "planner"), *qk = row_own_slots(s->root, q);
            if (cJSON_IsString(ql) && cJSON_IsNumber(qk) && strcmp(ql->valuestring, label->valuestring) == 0) {
                same_planner = true;
                seen |= qk->valuedouble == k->valuedouble;
            }
        }
        if (seen)
            continue;
        size_t used = strlen(buf);
        if (used + 1 >= n)
            return;
        if (same_planner)
            snprintf(buf + used, n - used, "/%.6g", k->valuedouble);
        else
            snprintf(buf + used, n - used, "%s%s K = %.6g", any ? ", " : " (", label->valuestring, k->valuedouble);
        any = true;
    }
    size_t used = strlen(buf);
    if (any && used + 1 < n)
        snprintf(buf + used, n - used, ")");
}

/* What a figure's numbers come from, for its title: the regime, trace or
 * trace folder, and the guest slots per rank, e.g. "regime paper, K = 2";
 * "" when the result says neither. */
void plot_study_context(const study *s, char *buf, size_t n)
{
    const cJSON *params = plot_field(s->root, "params"), *trace = plot_field(s->root, "trace");
    const cJSON *regime = plot_field(params, "regime"), *slots = plot_field(params, "slots");
    const cJSON *name = plot_field(regime, "name"), *path = plot_field(params, "trace");
    const cJSON *dir = plot_field(params, "traces");
    if (!cJSON_IsString(path))
        path = plot_field(trace, "path");
    char what[160] = "";
    if (cJSON_IsString(name) && name->valuestring) {
        snprintf(what, sizeof what, "regime %s", name->valuestring);
    } else if (cJSON_IsString(path) && path->valuestring) {
        const char *base = strrchr(path->valuestring, '/');
        snprintf(what, sizeof what, "trace %s", base ? base + 1 : path->valuestring);
    } else if (cJSON_IsString(dir) && dir->valuestring) {
        const char *base = strrchr(dir->valuestring, '/');
        base = base ? base + 1 : dir->valuestring;
        snprintf(what, sizeof what, strcmp(base, "traces") == 0 ? "bundled traces" : "traces in %s", base);
    }
    if (cJSON_IsNumber(slots))
        snprintf(buf, n, "%s%sK = %.6g", what, what[0] ? ", " : "", slots->valuedouble);
    else
        snprintf(buf, n, "%s", what);
    own_slot_budgets(s, buf, n);
}

void plot_study_free(study *s)
{
    plot_text_free(&s->na);
    if (s->labels)
        for (size_t i = 0; i < s->planners.n; i++)
            free(s->labels[i]);
    free(s->labels);
    plot_strset_free(&s->planners);
    free(s->c);
}

/* A cell where the planner could not run (e.g. LPLB on a shape it has no
 * graph for): an "error" and no "metrics". The result's notes say why;
 * figures leave it out. */
bool plot_result_na(const cJSON *res)
{
    const cJSON *e = plot_field(res, "error");
    const cJSON *m = plot_field(res, "metrics");
    return cJSON_IsString(e) && (!m || cJSON_IsNull(m));
}

/* Result i, its name for messages, and its planner (added if new); -1 for
 * an n/a cell, which is noted once (pass == 0) in s->na. */
int plot_result_at_pass(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner, int pass)
{
    *res = cJSON_GetArrayItem(s->results, i);
    snprintf(where, wsize, "results[%d]", i);
    if (!cJSON_IsObject(*res))
        return tsim_error_set(s->err, TSIM_E_INPUT, "%s: not an object", where);
    const char *label = NULL;
    int rc = plot_need_string(*res, where, "planner", &label, s->err);
    if (rc)
        return rc;
    if (plot_result_na(*res)) {
        *planner = -1;
        if (pass == 0) {
            const cJSON *key = plot_field(*res, "key");
            char *l = plot_label_dup(label);
            char *k = cJSON_IsString(key) && key->valuestring ? plot_label_dup(key->valuestring) : NULL;
            if (!l)
                s->na.oom = true;
            else
                plot_text_add(&s->na, "%s %s%s%s", s->na.len ? "," : "# n/a, not plotted (the result's notes say why):",
                              l, k ? " at " : "", k ? k : "");
            free(l);
            free(k);
        }
        return TSIM_OK;
    }
    *planner = plot_strset_index(&s->planners, label);
    return *planner < 0 ? plot_oom(s->err) : TSIM_OK;
}

int plot_result_at(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner)
{
    return plot_result_at_pass(s, i, res, where, wsize, planner, 0);
}

/* The n/a line of a data file, when there were n/a cells. */
void plot_write_na(text *d, const study *s)
{
    if (s->na.len)
        plot_text_add(d, "%s\n", s->na.buf);
    if (s->na.oom)
        d->oom = true;
}

cell *plot_new_cell(study *s, int result, long planner)
{
    if (s->nc == s->capc) {
        size_t cap = s->capc ? s->capc * 2 : 16;
        cell *c = realloc(s->c, cap * sizeof *c);
        if (!c) {
            plot_oom(s->err);
            return NULL;
        }
        s->c = c;
        s->capc = cap;
    }
    cell *c = &s->c[s->nc++];
    memset(c, 0, sizeof *c);
    c->result = result;
    c->planner = planner;
    return c;
}

int plot_make_labels(study *s)
{
    s->labels = calloc(s->planners.n ? s->planners.n : 1, sizeof *s->labels);
    if (!s->labels)
        return plot_oom(s->err);
    for (size_t i = 0; i < s->planners.n; i++)
        if (!(s->labels[i] = plot_label_dup(s->planners.v[i])))
            return plot_oom(s->err);
    return TSIM_OK;
}

/* The cells of one part as [group][column][nv], NaN where a column has no
 * cell. col maps a planner to its column (NULL: one column for all). Two
 * cells in the same place are an error naming what makes them the same. */
double *plot_matrix(study *s, long part, size_t ngroups, size_t ncols, const long *col, size_t nv,
                    const char *same_what)
{
    size_t slots = ngroups * ncols;
    double *m = malloc((slots * nv > 0 ? slots * nv : 1) * sizeof *m);
    int *first = malloc((slots ? slots : 1) * sizeof *first);
    if (!m || !first) {
        free(m);
        free(first);
        plot_oom(s->err);
        return NULL;
    }
    for (size_t i = 0; i < slots * nv; i++)
        m[i] = NAN;
    for (size_t i = 0; i < slots; i++)
        first[i] = -1;
    for (size_t i = 0; i < s->nc; i++) {
        const cell *c = &s->c[i];
        if (c->part != part)
            continue;
        size_t at = (size_t)c->group * ncols + (col ? (size_t)col[c->planner] : 0);
        if (first[at] >= 0) {
            tsim_error_set(s->err, TSIM_E_INPUT,
                           "results[%d]: a second result for planner '%s' with the same %s as results[%d]",
                           c->result, s->planners.v[c->planner], same_what, first[at]);
            free(m);
            free(first);
            return NULL;
        }
        first[at] = c->result;
        memcpy(m + at * nv, c->v, nv * sizeof *m);
    }
    free(first);
    return m;
}


long plot_group_index(groupset *g, const char *key, double c0, double c1)
{
    size_t before = g->keys.n;
    long i = plot_strset_index(&g->keys, key);
    if (i < 0 || g->keys.n == before)
        return i;
    double(*coord)[2] = realloc(g->coord, g->keys.n * sizeof *coord);
    if (!coord)
        return -1;
    g->coord = coord;
    g->coord[i][0] = c0;
    g->coord[i][1] = c1;
    return i;
}

void plot_groupset_free(groupset *g)
{
    plot_strset_free(&g->keys);
    free(g->coord);
}

/* One row per group: "label" c0 c1 then, per column, the first nv_out of
 * its nv values. */
void plot_write_bar_rows(text *d, const groupset *g, const double *m, size_t ncols, size_t nv, size_t nv_out)
{
    for (size_t i = 0; i < g->keys.n; i++) {
        plot_text_add(d, "\"%s\" ", g->keys.v[i]);
        plot_text_num(d, g->coord[i][0]);
        plot_text_add(d, " ");
        plot_text_num(d, g->coord[i][1]);
        for (size_t k = 0; k < ncols * nv; k++) {
            if (k % nv >= nv_out)
                continue;
            plot_text_add(d, " ");
            plot_text_num(d, m[i * ncols * nv + k]);
        }
        plot_text_add(d, "\n");
    }
}


void plot_curves_free(curves *cv)
{
    plot_numset_free(&cv->xs);
    free(cv->col);
    free(cv->labels);
}

int plot_curves_make(study *s, long part, curves *cv)
{
    memset(cv, 0, sizeof *cv);
    size_t np = s->planners.n;
    cv->col = malloc((np ? np : 1) * sizeof *cv->col);
    cv->labels = calloc(np ? np : 1, sizeof *cv->labels);
    if (!cv->col || !cv->labels)
        return plot_oom(s->err);
    bool *present = calloc(np ? np : 1, sizeof *present);
    if (!present)
        return plot_oom(s->err);
    for (size_t i = 0; i < s->nc; i++) {
        if (s->c[i].part != part)
            continue;
        present[s->c[i].planner] = true;
        if (plot_numset_index(&cv->xs, s->c[i].x) < 0) {
            free(present);
            return plot_oom(s->err);
        }
    }
    for (size_t j = 0; j < np; j++) {
        cv->col[j] = present[j] ? (long)cv->ncols : -1;
        if (present[j])
            cv->labels[cv->ncols++] = s->labels[j];
    }
    free(present);
    numset_sort(&cv->xs);
    for (size_t i = 0; i < s->nc; i++) {
        if (s->c[i].part != part)
            continue;
        for (size_t k = 0; k < cv->xs.n; k++)
            if (cv->xs.v[k] == s->c[i].x)
                s->c[i].group = (long)k;
    }
    return TSIM_OK;
}

void plot_write_curve_rows(text *d, const curves *cv, const double *m, size_t nv)
{
    for (size_t i = 0; i < cv->xs.n; i++) {
        plot_text_num(d, cv->xs.v[i]);
        for (size_t k = 0; k < cv->ncols * nv; k++) {
            plot_text_add(d, " ");
            plot_text_num(d, m[i * cv->ncols * nv + k]);
        }
        plot_text_add(d, "\n");
    }
}
