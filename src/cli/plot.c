/* Figures from result files (plot.h). Everything is built in memory first
 * (data files, scripts), so bad input writes nothing; then each file is
 * written atomically and gnuplot renders the scripts. */
#include "datadir.h"
#include "plot.h"
#include "plot_frontier.h"
#include "plot_advise.h"
#include "plot_layers.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_strict.h"
#include "outfile.h"
#include "tsim_config.h"

/* ---------- growable text ---------- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} text;

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

static void text_addn(text *t, const char *s, size_t n)
{
    if (!text_reserve(t, n))
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text *t, const char *fmt, ...)
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

static void text_free(text *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

/* A value in a data file: %.6g, and NaN (gnuplot skips it) for "none". */
static void text_num(text *t, double v)
{
    if (isnan(v))
        text_add(t, "NaN");
    else if (isinf(v))
        text_add(t, v > 0 ? "Inf" : "-Inf");
    else
        text_add(t, "%.6g", v == 0 ? 0.0 : v); /* no "-0" */
}

/* A gnuplot double-quoted string. */
static void text_gp_string(text *t, const char *s)
{
    text_add(t, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            text_add(t, "\\%c", *s);
        else
            text_addn(t, s, 1);
    }
    text_add(t, "\"");
}

static char *str_dup(const char *s)
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
static char *label_dup(const char *s)
{
    char *d = str_dup(s);
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

typedef struct {
    char **v;
    size_t n, cap;
} strset;

/* Index of s, added at the end when new. -1 on out of memory. */
static long strset_index(strset *s, const char *key)
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
    char *d = str_dup(key);
    if (!d)
        return -1;
    s->v[s->n] = d;
    return (long)s->n++;
}

static void strset_free(strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

typedef struct {
    double *v;
    size_t n, cap;
} numset;

static long numset_index(numset *s, double x)
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

static void numset_free(numset *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---------- reading the result ---------- */

static int oom(tsim_error *err)
{
    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
}

static const cJSON *field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int need_number(const cJSON *obj, const char *where, const char *key, double *out, tsim_error *err)
{
    const cJSON *j = field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (a number)", where, key);
    if (!cJSON_IsNumber(j))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not a number", where, key);
    *out = j->valuedouble;
    return TSIM_OK;
}

static int need_string(const cJSON *obj, const char *where, const char *key, const char **out, tsim_error *err)
{
    const cJSON *j = field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (a string)", where, key);
    if (!cJSON_IsString(j) || !j->valuestring)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not a string", where, key);
    if (!j->valuestring[0])
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is empty", where, key);
    *out = j->valuestring;
    return TSIM_OK;
}

static int need_bool(const cJSON *obj, const char *where, const char *key, bool *out, tsim_error *err)
{
    const cJSON *j = field(obj, key);
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"%s\" (true or false)", where, key);
    if (!cJSON_IsBool(j))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"%s\" is not true or false", where, key);
    *out = cJSON_IsTrue(j);
    return TSIM_OK;
}

/* results[i].metrics.NAME: "mean" is required, "std" defaults to 0. */
static int need_metric(const cJSON *res, const char *where, const char *name, double *mean, double *std,
                       tsim_error *err)
{
    const cJSON *metrics = field(res, "metrics");
    if (!metrics)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"metrics\" (an object)", where);
    if (!cJSON_IsObject(metrics))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"metrics\" is not an object", where);
    const cJSON *m = field(metrics, name);
    if (!cJSON_IsObject(m))
        return tsim_error_set(err, TSIM_E_INPUT, "%s.metrics: missing \"%s\" (an object with \"mean\" and \"std\")",
                              where, name);
    char sub[128];
    snprintf(sub, sizeof sub, "%s.metrics.%s", where, name);
    int rc = need_number(m, sub, "mean", mean, err);
    if (rc)
        return rc;
    *std = 0;
    if (field(m, "std"))
        return need_number(m, sub, "std", std, err);
    return TSIM_OK;
}

/* results[i].paper.NAME: a number or {"mean": ...}; NaN when absent or null. */
static int paper_value(const cJSON *res, const char *where, const char *name, double *out, tsim_error *err)
{
    *out = NAN;
    const cJSON *paper = field(res, "paper");
    if (!paper || cJSON_IsNull(paper))
        return TSIM_OK;
    if (!cJSON_IsObject(paper))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: \"paper\" is not an object", where);
    const cJSON *v = field(paper, name);
    if (!v || cJSON_IsNull(v))
        return TSIM_OK;
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return TSIM_OK;
    }
    if (cJSON_IsObject(v) && cJSON_IsNumber(field(v, "mean"))) {
        *out = field(v, "mean")->valuedouble;
        return TSIM_OK;
    }
    return tsim_error_set(err, TSIM_E_INPUT, "%s.paper: \"%s\" is neither a number nor {\"mean\": ...}", where, name);
}

/* ---------- what gets written ---------- */

#define MAX_FILES 256

typedef struct {
    char *name; /* file name inside the output directory */
    text body;
} out_text;

typedef struct {
    char *name;       /* the figure: NAME.gp, NAME.png, NAME.svg */
    const char *tmpl; /* plots/TMPL.gp */
    text vars;        /* generated gnuplot variables */
} figure;

typedef struct {
    out_text dat[MAX_FILES];
    size_t ndat;
    figure fig[MAX_FILES];
    size_t nfig;
    tsim_error *err;
} plotset;

static void plotset_free(plotset *ps)
{
    for (size_t i = 0; i < ps->ndat; i++) {
        free(ps->dat[i].name);
        text_free(&ps->dat[i].body);
    }
    for (size_t i = 0; i < ps->nfig; i++) {
        free(ps->fig[i].name);
        text_free(&ps->fig[i].vars);
    }
}

/* A data file NAME.dat; NULL (err set) when there are too many. */
static text *add_dat(plotset *ps, const char *name)
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
        oom(ps->err);
        return NULL;
    }
    memcpy(d->name, name, n);
    memcpy(d->name + n, ".dat", 5);
    ps->ndat++;
    return &d->body;
}

/* A figure NAME drawn by plots/TMPL.gp from DATA.dat; its variables start
 * with FIGURE, DATA and TITLE. */
static text *add_figure(plotset *ps, const char *name, const char *tmpl, const char *data, const char *title)
{
    if (ps->nfig == MAX_FILES) {
        tsim_error_set(ps->err, TSIM_E_INPUT, "too many figures in one result (at most %d)", MAX_FILES);
        return NULL;
    }
    figure *f = &ps->fig[ps->nfig];
    memset(f, 0, sizeof *f);
    if (!(f->name = str_dup(name))) {
        oom(ps->err);
        return NULL;
    }
    f->tmpl = tmpl;
    ps->nfig++;
    text *v = &f->vars;
    text_add(v, "FIGURE = ");
    text_gp_string(v, name);
    text_add(v, "\nDATA = ");
    text_gp_string(v, data);
    text_add(v, "\nTITLE = ");
    text_gp_string(v, title);
    text_add(v, "\n");
    return v;
}

/* ---------- one style per planner, in every figure ---------- */

/* Fixed colours (Okabe-Ito, readable by colour-blind eyes) and filled point
 * types for the planners taotsim ships, so a planner looks the same in every
 * figure of every study. Point type - 1 is the hollow version of each. */
static const struct {
    const char *name;
    const char *colour;
    int point;
} known_styles[] = {
    {"taot", "#d55e00", 7},   {"echo", "#0072b2", 5},      {"llep", "#009e73", 9},    {"lplb", "#e69f00", 13},
    {"eplb", "#56b4e9", 15},  {"fastermoe", "#cc79a7", 11}, {"optimal", "#000000", 5}, {"none", "#999999", 9},
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
static void vars_planners_only(text *v, char *const *labels, size_t n)
{
    text_add(v, "PLANNERS = \"");
    for (size_t i = 0; i < n; i++)
        text_add(v, "%s%s", i ? " " : "", labels[i]);
    text_add(v, "\"\nNP = %zu\n", n);
}

/* Each planner's style: COLORS = "#d55e00 ..." and POINTS = "7 ...". */
static void vars_styles(text *v, char *const *labels, size_t n)
{
    text_add(v, "COLORS = \"");
    for (size_t i = 0; i < n; i++)
        text_add(v, "%s%s", i ? " " : "", tsim_plot_planner_colour(labels[i]));
    text_add(v, "\"\nPOINTS = \"");
    for (size_t i = 0; i < n; i++)
        text_add(v, "%s%d", i ? " " : "", tsim_plot_planner_point(labels[i]));
    text_add(v, "\"\n");
}

static void vars_planners(text *v, char *const *labels, size_t n)
{
    vars_planners_only(v, labels, n);
    vars_styles(v, labels, n);
}

/* NG and XTICS = '("label" 0, ...)' for bar charts. '%' in a tick label is
 * a format character to gnuplot, hence "%%". ", " and ": " break the line:
 * "\n" (the comma dropped), which gnuplot reads as a newline when it evals
 * the tick list. */
static void vars_groups(text *v, char *const *labels, size_t n)
{
    text_add(v, "NG = %zu\nXTICS = '(", n);
    for (size_t i = 0; i < n; i++) {
        text_add(v, "%s\"", i ? ", " : "");
        for (const char *p = labels[i]; *p; p++) {
            if (*p == '%') {
                text_add(v, "%%%%");
            } else if ((*p == ',' || *p == ':') && p[1] == ' ') {
                text_add(v, "%s\\n", *p == ':' ? ":" : "");
                p++;
            } else {
                text_addn(v, p, 1);
            }
        }
        text_add(v, "\" %zu", i);
    }
    text_add(v, ")'\n");
}

/* A word list of 1-based indices, e.g. PAPER = "1 3". */
static void vars_index_list(text *v, const char *name, const bool *on, size_t n)
{
    text_add(v, "%s = \"", name);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (on[i]) {
            text_add(v, "%s%zu", first ? "" : " ", i + 1);
            first = false;
        }
    }
    text_add(v, "\"\n");
}

/* ---------- cells: one per result, laid out in matrices ---------- */

#define MAXV 9

typedef struct {
    int result;   /* index in "results" */
    long part;    /* which figure family (sweep: lambda_plan; scaling: axis) */
    long group;   /* bar group, or x index of a curve */
    double x;     /* curve x value */
    long planner; /* index in the study's planners */
    double v[MAXV];
} cell;

typedef struct {
    const cJSON *root; /* the whole result: params and trace name the figures' context */
    const cJSON *results;
    int n;
    strset planners;
    char **labels; /* planners, sanitised for display */
    cell *c;
    size_t nc, capc;
    text na; /* the n/a cells, for a comment line in the data files */
    tsim_error *err;
} study;

/* Appends the planners that ran at a slot budget of their own (a study row's
 * planner_slots, MoonEP's E/R) to buf: " (moonep K = 8/4)", each K once. */
static void own_slot_budgets(const study *s, char *buf, size_t n)
{
    const cJSON *rows = field(s->root, "results"), *r, *q;
    bool any = false;
    int i = 0;
    cJSON_ArrayForEach(r, rows) {
        const cJSON *label = field(r, "planner"), *k = field(r, "planner_slots");
        i++;
        if (!cJSON_IsString(label) || !cJSON_IsNumber(k))
            continue;
        /* first row of this planner with this K */
        bool seen = false, same_planner = false;
        int j = 0;
        cJSON_ArrayForEach(q, rows) {
            if (++j >= i)
                break;
            const cJSON *ql = field(q, "planner"), *qk = field(q, "planner_slots");
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
static void study_context(const study *s, char *buf, size_t n)
{
    const cJSON *params = field(s->root, "params"), *trace = field(s->root, "trace");
    const cJSON *regime = field(params, "regime"), *slots = field(params, "slots");
    const cJSON *name = field(regime, "name"), *path = field(params, "trace"), *dir = field(params, "traces");
    if (!cJSON_IsString(path))
        path = field(trace, "path");
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

static void study_free(study *s)
{
    text_free(&s->na);
    if (s->labels)
        for (size_t i = 0; i < s->planners.n; i++)
            free(s->labels[i]);
    free(s->labels);
    strset_free(&s->planners);
    free(s->c);
}

/* A cell where the planner could not run (e.g. LPLB on a shape it has no
 * graph for): an "error" and no "metrics". The result's notes say why;
 * figures leave it out. */
static bool result_na(const cJSON *res)
{
    const cJSON *e = field(res, "error");
    const cJSON *m = field(res, "metrics");
    return cJSON_IsString(e) && (!m || cJSON_IsNull(m));
}

/* Result i, its name for messages, and its planner (added if new); -1 for
 * an n/a cell, which is noted once (pass == 0) in s->na. */
static int result_at_pass(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner, int pass)
{
    *res = cJSON_GetArrayItem(s->results, i);
    snprintf(where, wsize, "results[%d]", i);
    if (!cJSON_IsObject(*res))
        return tsim_error_set(s->err, TSIM_E_INPUT, "%s: not an object", where);
    const char *label = NULL;
    int rc = need_string(*res, where, "planner", &label, s->err);
    if (rc)
        return rc;
    if (result_na(*res)) {
        *planner = -1;
        if (pass == 0) {
            const cJSON *key = field(*res, "key");
            char *l = label_dup(label);
            char *k = cJSON_IsString(key) && key->valuestring ? label_dup(key->valuestring) : NULL;
            if (!l)
                s->na.oom = true;
            else
                text_add(&s->na, "%s %s%s%s", s->na.len ? "," : "# n/a, not plotted (the result's notes say why):",
                         l, k ? " at " : "", k ? k : "");
            free(l);
            free(k);
        }
        return TSIM_OK;
    }
    *planner = strset_index(&s->planners, label);
    return *planner < 0 ? oom(s->err) : TSIM_OK;
}

static int result_at(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner)
{
    return result_at_pass(s, i, res, where, wsize, planner, 0);
}

/* The n/a line of a data file, when there were n/a cells. */
static void write_na(text *d, const study *s)
{
    if (s->na.len)
        text_add(d, "%s\n", s->na.buf);
    if (s->na.oom)
        d->oom = true;
}

static cell *new_cell(study *s, int result, long planner)
{
    if (s->nc == s->capc) {
        size_t cap = s->capc ? s->capc * 2 : 16;
        cell *c = realloc(s->c, cap * sizeof *c);
        if (!c) {
            oom(s->err);
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

static int make_labels(study *s)
{
    s->labels = calloc(s->planners.n ? s->planners.n : 1, sizeof *s->labels);
    if (!s->labels)
        return oom(s->err);
    for (size_t i = 0; i < s->planners.n; i++)
        if (!(s->labels[i] = label_dup(s->planners.v[i])))
            return oom(s->err);
    return TSIM_OK;
}

/* The cells of one part as [group][column][nv], NaN where a column has no
 * cell. col maps a planner to its column (NULL: one column for all). Two
 * cells in the same place are an error naming what makes them the same. */
static double *matrix(study *s, long part, size_t ngroups, size_t ncols, const long *col, size_t nv,
                      const char *same_what)
{
    size_t slots = ngroups * ncols;
    double *m = malloc((slots * nv > 0 ? slots * nv : 1) * sizeof *m);
    int *first = malloc((slots ? slots : 1) * sizeof *first);
    if (!m || !first) {
        free(m);
        free(first);
        oom(s->err);
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

/* Bar groups: a label (the key) and two coordinates written beside it. */
typedef struct {
    strset keys;
    double (*coord)[2];
} groupset;

static long group_index(groupset *g, const char *key, double c0, double c1)
{
    size_t before = g->keys.n;
    long i = strset_index(&g->keys, key);
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

static void groupset_free(groupset *g)
{
    strset_free(&g->keys);
    free(g->coord);
}

/* One row per group: "label" c0 c1 then, per column, the first nv_out of
 * its nv values. */
static void write_bar_rows(text *d, const groupset *g, const double *m, size_t ncols, size_t nv, size_t nv_out)
{
    for (size_t i = 0; i < g->keys.n; i++) {
        text_add(d, "\"%s\" ", g->keys.v[i]);
        text_num(d, g->coord[i][0]);
        text_add(d, " ");
        text_num(d, g->coord[i][1]);
        for (size_t k = 0; k < ncols * nv; k++) {
            if (k % nv >= nv_out)
                continue;
            text_add(d, " ");
            text_num(d, m[i * ncols * nv + k]);
        }
        text_add(d, "\n");
    }
}

/* Curves: the sorted x values of a part, each cell's group set to its x's
 * index; col/labels list the planners present in the part. */
typedef struct {
    numset xs;
    long *col;      /* planner -> column, -1 when absent from the part */
    char **labels;  /* [ncols], borrowed from the study */
    size_t ncols;
} curves;

static void curves_free(curves *cv)
{
    numset_free(&cv->xs);
    free(cv->col);
    free(cv->labels);
}

static int curves_make(study *s, long part, curves *cv)
{
    memset(cv, 0, sizeof *cv);
    size_t np = s->planners.n;
    cv->col = malloc((np ? np : 1) * sizeof *cv->col);
    cv->labels = calloc(np ? np : 1, sizeof *cv->labels);
    if (!cv->col || !cv->labels)
        return oom(s->err);
    bool *present = calloc(np ? np : 1, sizeof *present);
    if (!present)
        return oom(s->err);
    for (size_t i = 0; i < s->nc; i++) {
        if (s->c[i].part != part)
            continue;
        present[s->c[i].planner] = true;
        if (numset_index(&cv->xs, s->c[i].x) < 0) {
            free(present);
            return oom(s->err);
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

static void write_curve_rows(text *d, const curves *cv, const double *m, size_t nv)
{
    for (size_t i = 0; i < cv->xs.n; i++) {
        text_num(d, cv->xs.v[i]);
        for (size_t k = 0; k < cv->ncols * nv; k++) {
            text_add(d, " ");
            text_num(d, m[i * cv->ncols * nv + k]);
        }
        text_add(d, "\n");
    }
}

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
    const cJSON *metrics = field(res, "metrics");
    if (!cJSON_IsObject(metrics))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"metrics\" (an object)", where);
    const cJSON *m = field(metrics, name);
    if (!cJSON_IsObject(m))
        return tsim_error_set(err, TSIM_E_INPUT, "%s.metrics: missing \"%s\" (an object with \"min\", \"p50\", "
                              "\"p95\", \"max\" and \"mean\")", where, name);
    char sub[128];
    snprintf(sub, sizeof sub, "%s.metrics.%s", where, name);
    for (int k = 0; k < SUMMARY_STATS; k++) {
        int rc = need_number(m, sub, summary_stats[k], &v[k], err);
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
    text_add(d, "%zu \"%s\" %ld", x, label, strtol(colour + 1, NULL, 16));
    for (int k = 0; k < SUMMARY_STATS; k++) {
        text_add(d, " ");
        text_num(d, v[k]);
    }
    text_add(d, "\n");
}

static int summary_figure(plotset *ps, study *s, size_t f, const int *order, size_t n)
{
    tsim_error *err = s->err;
    char name[64], where[64];
    snprintf(name, sizeof name, "replay_%s", summary_figures[f].name);
    text *d = add_dat(ps, name);
    if (!d)
        return err->code;
    text_add(d, "# taotsim plot: replay: %s per planner, over the records (x label colour min p50 p95 max mean)\n",
             summary_figures[f].metric);
    write_na(d, s);
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
    study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "%s over the records (%s%sbox: median to p95, whiskers: min to max, point: mean)",
             summary_figures[f].title, ctx, ctx[0] ? "; " : "");
    text *vars = add_figure(ps, name, "replay_summary", data, title);
    if (!vars)
        return err->code;
    text_add(vars, "YLABEL = ");
    text_gp_string(vars, summary_figures[f].ylabel);
    text_add(vars, "\nNB = %zu\n", x);
    return TSIM_OK;
}

/* replay without per-record values: what the summaries hold. */
static int plot_replay_summary(plotset *ps, study *s)
{
    int *order = calloc((size_t)(s->n ? s->n : 1), sizeof *order);
    if (!order)
        return oom(s->err);
    size_t n = 0;
    int rc = TSIM_OK;
    char where[96];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        size_t known = s->planners.n;
        if ((rc = result_at(s, i, &res, where, sizeof where, &p)) || p < 0)
            continue;
        if (s->planners.n == known)
            rc = tsim_error_set(s->err, TSIM_E_INPUT, "%s: planner '%s' appears twice", where, s->planners.v[p]);
        else
            order[n++] = i;
    }
    if (!rc)
        rc = make_labels(s);
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
    text_add(&t, "before planning");
    size_t j = 0, named = 0;
    for (int i = 0; i < s->n && j < s->planners.n; i++) {
        if (result_na(cJSON_GetArrayItem(s->results, i)))
            continue;
        if (same[i])
            text_add(&t, "%s%s", named++ ? ", " : " (= ", s->labels[j]);
        j++;
    }
    if (named)
        text_add(&t, ")");
    text_add(v, "BEFORE_TITLE = ");
    text_gp_string(v, t.oom ? "before planning" : t.buf);
    text_add(v, "\n");
    text_free(&t);
}

static int plot_replay(plotset *ps, study *s)
{
    if (!replay_has_records(s))
        return plot_replay_summary(ps, s);
    tsim_error *err = s->err;
    const cJSON **it = calloc((size_t)s->n, sizeof *it);
    bool *same = malloc((size_t)s->n * sizeof *same); /* after == before at every record */
    if (!it || !same) {
        free(it);
        free(same);
        return oom(err);
    }
    int rc = TSIM_OK;
    int nrec = -1, first = -1; /* first: the first result with records */
    char where[96];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        size_t known = s->planners.n;
        if ((rc = result_at(s, i, &res, where, sizeof where, &p)))
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
        rc = make_labels(s);
    text *d = NULL;
    if (!rc && !(d = add_dat(ps, "replay")))
        rc = err->code;
    if (!rc) {
        text_add(d, "# taotsim plot: replay: imbalance per record, %% ((max load - mean) / mean)\n# record rho_before");
        for (size_t j = 0; j < s->planners.n; j++)
            text_add(d, " %s:rho_after", s->labels[j]);
        text_add(d, "\n");
        write_na(d, s);
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
            if ((rc = need_number(x, where, "record", &rec_i, err)) ||
                (rc = need_number(x, where, "rho_before", &before, err)) ||
                (rc = need_number(x, where, "rho_after", &after, err)))
                break;
            if (i == first) {
                record = rec_i;
                text_num(d, record);
                text_add(d, " ");
                text_num(d, 100 * before);
            } else if (rec_i != record) {
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: record %.6g, but results[%d].records[%d] is record %.6g",
                                    where, rec_i, first, r, record);
                break;
            }
            text_add(d, " ");
            text_num(d, 100 * after);
            same[i] &= after == before;
        }
        text_add(d, "\n");
    }
    free(it);
    if (rc) {
        free(same);
        return rc;
    }
    char ctx[192], title[320];
    study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Imbalance per record, before and after planning (%s%s%d records)", ctx,
             ctx[0] ? ", " : "", nrec);
    text *v = add_figure(ps, "replay", "replay", "replay.dat", title);
    if (!v) {
        free(same);
        return err->code;
    }
    vars_planners(v, s->labels, s->planners.n);
    replay_before_title(v, s, same);
    free(same);
    return TSIM_OK;
}

/* A two-level x axis for table1's bar groups: imbalance ticks under each
 * group, the EP size centred under each run of groups with that EP size, a
 * gap and a dotted line between runs. Writes GX (the groups' x positions),
 * XTICS, XMIN, XMAX, OUTER_X, OUTER_LABELS and SEPS. */
static void vars_two_level_axis(text *v, const groupset *g)
{
    enum { GAP_TENTHS = 6 }; /* the gap between runs, in tenths of a group */
    size_t n = g->keys.n;
    text gx = {0}, ticks = {0}, outer_x = {0}, outer_l = {0}, seps = {0};
    long at = 0; /* x position in tenths */
    size_t run_start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool run_ends = i == n || (i > 0 && g->coord[i][0] != g->coord[i - 1][0]);
        if (i > 0 && run_ends) {
            long first_x = at - 10 * (long)(i - run_start);
            double centre = (first_x + (at - 10)) / 20.0;
            text_add(&outer_x, "%s%.6g", outer_x.len ? " " : "", centre);
            text_add(&outer_l, "%sEP%.6g", outer_l.len ? " " : "", g->coord[i - 1][0]);
            if (i < n) {
                text_add(&seps, "%s%.6g", seps.len ? " " : "", (at - 10 + at + GAP_TENTHS) / 20.0);
                at += GAP_TENTHS;
            }
            run_start = i;
        }
        if (i == n)
            break;
        text_add(&gx, "%s%.6g", i ? " " : "", at / 10.0);
        text_add(&ticks, "%s\"%.6g%%%%\" %.6g", i ? ", " : "", g->coord[i][1], at / 10.0);
        at += 10;
    }
    text_add(v, "NG = %zu\nGX = \"%s\"\nXTICS = '(%s)'\nXMIN = -0.6\nXMAX = %.6g\n", n, gx.buf ? gx.buf : "",
             ticks.buf ? ticks.buf : "", (at - 10) / 10.0 + 0.6);
    text_add(v, "OUTER_X = \"%s\"\nOUTER_LABELS = \"%s\"\nSEPS = \"%s\"\n", outer_x.buf ? outer_x.buf : "",
             outer_l.buf ? outer_l.buf : "", seps.buf ? seps.buf : "");
    if (gx.oom || ticks.oom || outer_x.oom || outer_l.oom || seps.oom)
        v->oom = true;
    text_free(&gx);
    text_free(&ticks);
    text_free(&outer_x);
    text_free(&outer_l);
    text_free(&seps);
}

/* The paper's residual imbalance (%) of a table1 cell: its "rho_after" when
 * given, else the initial imbalance plus its improvement (pp); NaN: none. */
static int paper_residual(const cJSON *res, const char *where, double imbalance, double *out, tsim_error *err)
{
    double rho = NAN, improve = NAN;
    int rc = paper_value(res, where, "rho_after", &rho, err);
    if (!rc)
        rc = paper_value(res, where, "improve_pp", &improve, err);
    *out = !isnan(rho) ? 100 * rho : 100 * imbalance + improve;
    return rc;
}

/* One table1 cell's Pareto figure: residual imbalance (x) against weighted
 * cost (y), a point per planner with its std as error bars, the paper's
 * points hollow, our Pareto front dashed. cell_v: [np][NV] of the group. */
static int pareto_figure(plotset *ps, study *s, double ep, double imb_pct, const double *cell_v, size_t nv)
{
    tsim_error *err = s->err;
    size_t np = s->planners.n;
    char name[96], data[112], title[400];
    snprintf(name, sizeof name, "table1_pareto_ep%.6g_imb%.6g", ep, imb_pct);
    snprintf(data, sizeof data, "%s.dat", name);
    char ctx[192];
    study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Table 1%s%s%s, EP%.6g at %.6g%% initial imbalance: residual imbalance vs weighted cost",
             ctx[0] ? " (" : "", ctx, ctx[0] ? ")" : "", ep, imb_pct);
    char **labels = calloc(np ? np : 1, sizeof *labels);
    const double **rows = calloc(np ? np : 1, sizeof *rows);
    bool *paper = calloc(np ? np : 1, sizeof *paper);
    if (!labels || !rows || !paper) {
        free(labels);
        free(rows);
        free(paper);
        return oom(err);
    }
    size_t n = 0;
    for (size_t j = 0; j < np; j++) {
        const double *v = cell_v + j * nv;
        if (isnan(v[0]))
            continue; /* no result for this planner here */
        paper[n] = !isnan(v[4]) && !isnan(v[5]);
        labels[n] = s->labels[j];
        rows[n++] = v;
    }
    int rc = TSIM_OK;
    text *d = add_dat(ps, name);
    if (!d)
        rc = err->code;
    if (!rc) {
        text_add(d,
                 "# taotsim plot: table1 Pareto at EP%.6g, %.6g%% initial imbalance: residual imbalance (%%) and "
                 "weighted cost, mean and std; paper: the paper's Table 1 (residual: initial imbalance + its "
                 "improvement pp; NaN: none)\n",
                 ep, imb_pct);
        write_na(d, s);
        text_add(d, "# planner rho_after rho_after_std weighted weighted_std paper_rho_after paper_weighted\n");
        for (size_t k = 0; k < n; k++) {
            const double *v = rows[k];
            const double cols[6] = {v[2], v[3], v[0], v[1], v[5], v[4]};
            text_add(d, "\"%s\"", labels[k]);
            for (int c = 0; c < 6; c++) {
                text_add(d, " ");
                text_num(d, cols[c]);
            }
            text_add(d, "\n");
        }
        /* Index 1: the front, by residual imbalance. A planner is on it when
         * no other is at most as imbalanced and as costly, and better in one. */
        text_add(d, "\n\n# Pareto front of ours: rho_after weighted\n");
        double last_x = NAN;
        for (;;) {
            long best = -1;
            for (size_t k = 0; k < n; k++) {
                const double *a = rows[k];
                bool dominated = false;
                for (size_t o = 0; o < n && !dominated; o++) {
                    const double *b = rows[o];
                    dominated = o != k && b[2] <= a[2] && b[0] <= a[0] && (b[2] < a[2] || b[0] < a[0]);
                }
                if (dominated || (!isnan(last_x) && a[2] <= last_x))
                    continue;
                if (best < 0 || a[2] < rows[best][2] || (a[2] == rows[best][2] && a[0] < rows[best][0]))
                    best = (long)k;
            }
            if (best < 0)
                break;
            text_num(d, rows[best][2]);
            text_add(d, " ");
            text_num(d, rows[best][0]);
            text_add(d, "\n");
            last_x = rows[best][2];
        }
    }
    text *v = NULL;
    if (!rc && !(v = add_figure(ps, name, "table1_pareto", data, title)))
        rc = err->code;
    if (!rc) {
        vars_planners(v, labels, n);
        vars_index_list(v, "PAPER", paper, n);
    }
    free(labels);
    free(rows);
    free(paper);
    return rc;
}

/* table1: bars per (EP, imbalance) group, one per planner, and a Pareto
 * figure per group. Values per planner: weighted mean, std, rho_after mean
 * %, std %, paper weighted (the five in table1.dat), paper rho_after %. */
static int plot_table1(plotset *ps, study *s)
{
    enum { NV = 6 };
    tsim_error *err = s->err;
    groupset groups = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        double ep = 0, imb = 0, rho = 0, rho_std = 0;
        if ((rc = result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = need_number(res, where, "ep", &ep, err)) || (rc = need_number(res, where, "imbalance", &imb, err)))
            continue;
        char label[64];
        snprintf(label, sizeof label, "EP%.6g %.6g%%", ep, 100 * imb);
        long g = group_index(&groups, label, ep, 100 * imb);
        cell *c = g < 0 ? NULL : new_cell(s, i, p);
        if (!c) {
            rc = g < 0 ? oom(err) : err->code;
            break;
        }
        c->group = g;
        if ((rc = need_metric(res, where, "weighted", &c->v[0], &c->v[1], err)) ||
            (rc = need_metric(res, where, "rho_after", &rho, &rho_std, err)) ||
            (rc = paper_value(res, where, "weighted", &c->v[4], err)) ||
            (rc = paper_residual(res, where, imb, &c->v[5], err)))
            break;
        c->v[2] = 100 * rho;
        c->v[3] = 100 * rho_std;
    }
    if (!rc)
        rc = make_labels(s);
    size_t np = s->planners.n;
    long *col = malloc((np ? np : 1) * sizeof *col);
    bool *paper = calloc(np ? np : 1, sizeof *paper);
    bool *paper_rho = calloc(np ? np : 1, sizeof *paper_rho);
    double *m = NULL;
    if (!rc && (!col || !paper || !paper_rho))
        rc = oom(err);
    for (size_t j = 0; !rc && j < np; j++)
        col[j] = (long)j;
    if (!rc && !(m = matrix(s, 0, groups.keys.n, np, col, NV, "ep and imbalance")))
        rc = err->code;
    text *d = NULL;
    if (!rc && !(d = add_dat(ps, "table1")))
        rc = err->code;
    if (!rc) {
        text_add(d, "# taotsim plot: table1: mean and std; imbalance and rho_after in %%; paper: the "
                    "paper's Table 1 (NaN: none)\n");
        write_na(d, s);
        text_add(d, "# group ep imbalance");
        for (size_t j = 0; j < np; j++) {
            const char *l = s->labels[j];
            text_add(d, " %s:weighted %s:weighted_std %s:rho_after %s:rho_after_std %s:paper_weighted %s:paper_rho_after",
                     l, l, l, l, l, l);
        }
        text_add(d, "\n");
        write_bar_rows(d, &groups, m, np, NV, NV);
        for (size_t g = 0; g < groups.keys.n; g++)
            for (size_t j = 0; j < np; j++) {
                paper[j] |= !isnan(m[(g * np + j) * NV + 4]);
                paper_rho[j] |= !isnan(m[(g * np + j) * NV + 5]);
            }
    }
    char ctx[192], title[320];
    study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Table 1%s%s%s: weighted communication cost (mean ± std)", ctx[0] ? " (" : "", ctx,
             ctx[0] ? ")" : "");
    text *v = NULL;
    if (!rc && !(v = add_figure(ps, "table1_weighted", "table1_weighted", "table1.dat", title)))
        rc = err->code;
    if (!rc) {
        vars_planners(v, s->labels, np);
        vars_two_level_axis(v, &groups);
        vars_index_list(v, "PAPER", paper, np);
        snprintf(title, sizeof title, "Table 1%s%s%s: residual imbalance after planning (mean ± std)",
                 ctx[0] ? " (" : "", ctx, ctx[0] ? ")" : "");
        if (!(v = add_figure(ps, "table1_residual", "table1_residual", "table1.dat", title)))
            rc = err->code;
    }
    if (!rc) {
        vars_planners(v, s->labels, np);
        vars_two_level_axis(v, &groups);
        vars_index_list(v, "PAPER", paper_rho, np);
    }
    for (size_t g = 0; g < groups.keys.n && !rc; g++)
        rc = pareto_figure(ps, s, groups.coord[g][0], groups.coord[g][1], m + g * np * NV, NV);
    free(m);
    free(col);
    free(paper);
    free(paper_rho);
    groupset_free(&groups);
    return rc;
}

/* ablation: bars of intra, inter, weighted per combination of TAOT's flow
 * hint and comm cost (and planner, when there are several). Values: mean,
 * std, paper, for each of the three. */
static int plot_ablation(plotset *ps, study *s)
{
    enum { NV = 9 };
    static const char *const series[3] = {"intra", "inter", "weighted"};
    tsim_error *err = s->err;
    int rc = TSIM_OK;
    char where[64];
    /* Planners first: with more than one, group labels name the planner. */
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        rc = result_at(s, i, &res, where, sizeof where, &p);
    }

    if (!rc)
        rc = make_labels(s);
    groupset groups = {0};
    bool several = s->planners.n > 1;
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        bool hint = false, cost = false;
        if ((rc = result_at_pass(s, i, &res, where, sizeof where, &p, 1)) || p < 0 ||
            (rc = need_bool(res, where, "flow_hint", &hint, err)) || (rc = need_bool(res, where, "comm_cost", &cost, err)))
            continue;
        char label[192];
        snprintf(label, sizeof label, "%s%sflow hint %s, comm cost %s", several ? s->labels[p] : "",
                 several ? ": " : "", hint ? "on" : "off", cost ? "on" : "off");
        long g = group_index(&groups, label, hint, cost);
        cell *c = g < 0 ? NULL : new_cell(s, i, p);
        if (!c) {
            rc = g < 0 ? oom(err) : err->code;
            break;
        }
        c->group = g;
        for (int k = 0; k < 3 && !rc; k++)
            if (!(rc = need_metric(res, where, series[k], &c->v[3 * k], &c->v[3 * k + 1], err)))
                rc = paper_value(res, where, series[k], &c->v[3 * k + 2], err);
    }
    double *m = NULL;
    if (!rc && !(m = matrix(s, 0, groups.keys.n, 1, NULL, NV, "flow_hint and comm_cost")))
        rc = err->code;
    text *d = NULL;
    if (!rc && !(d = add_dat(ps, "ablation")))
        rc = err->code;
    bool paper[3] = {false, false, false};
    if (!rc) {
        text_add(d, "# taotsim plot: ablation: expert transfers per record, mean and std; paper: the "
                    "paper's Table 2 (NaN: none)\n");
        write_na(d, s);
        text_add(d, "# group flow_hint comm_cost intra intra_std paper_intra inter inter_std paper_inter weighted "
                    "weighted_std paper_weighted\n");
        write_bar_rows(d, &groups, m, 1, NV, NV);
        for (size_t g = 0; g < groups.keys.n; g++)
            for (int k = 0; k < 3; k++)
                if (!isnan(m[g * NV + 3 * (size_t)k + 2]))
                    paper[k] = true;
    }
    text *v = NULL;
    if (!rc && !(v = add_figure(ps, "ablation", "ablation", "ablation.dat",
                                "Ablation: expert transfers per record by TAOT phase (mean ± std)")))
        rc = err->code;
    if (!rc) {
        vars_planners(v, s->labels, s->planners.n);
        vars_groups(v, groups.keys.v, groups.keys.n);
        vars_index_list(v, "PAPER", paper, 3);
        /* Bars take their planner's colour (a shade per series), as 0xRRGGBB
         * numbers for gnuplot's "lc rgb variable". */
        text_add(v, "GROUP_RGB = \"");
        for (size_t g = 0; g < groups.keys.n; g++) {
            long planner = 0;
            for (size_t i = 0; i < s->nc; i++)
                if (s->c[i].group == (long)g)
                    planner = s->c[i].planner;
            const char *hex = tsim_plot_planner_colour(s->labels[planner]);
            text_add(v, "%s%ld", g ? " " : "", strtol(hex + 1, NULL, 16));
        }
        text_add(v, "\"\n");
    }
    free(m);
    groupset_free(&groups);
    return rc;
}

/* One break-even entry of a sweep. */
typedef struct {
    const char *a, *b;
    double lambda_plan; /* NaN: every lambda_plan */
    double lambda_star; /* NaN: the costs never cross */
} break_even;

static int read_break_even(const cJSON *root, break_even **out, size_t *n, tsim_error *err)
{
    *out = NULL;
    *n = 0;
    const cJSON *be = field(root, "break_even");
    if (!be || cJSON_IsNull(be))
        return TSIM_OK;
    if (!cJSON_IsArray(be))
        return tsim_error_set(err, TSIM_E_INPUT, "\"break_even\" is not an array");
    int count = cJSON_GetArraySize(be);
    if (count == 0)
        return TSIM_OK;
    break_even *list = calloc((size_t)count, sizeof *list);
    if (!list)
        return oom(err);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, be)
    {
        char where[48];
        snprintf(where, sizeof where, "break_even[%d]", i);
        break_even *b = &list[i++];
        int rc = TSIM_OK;
        if (!cJSON_IsObject(e))
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: not an object", where);
        if (!rc && !(rc = need_string(e, where, "a", &b->a, err)))
            rc = need_string(e, where, "b", &b->b, err);
        b->lambda_plan = NAN;
        if (!rc && field(e, "lambda_plan"))
            rc = need_number(e, where, "lambda_plan", &b->lambda_plan, err);
        const cJSON *star = field(e, "lambda_star");
        b->lambda_star = NAN;
        if (!rc && !star)
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: missing \"lambda_star\" (a number or null)", where);
        if (!rc && !cJSON_IsNull(star)) {
            if (cJSON_IsNumber(star))
                b->lambda_star = star->valuedouble;
            else
                rc = tsim_error_set(err, TSIM_E_INPUT, "%s: \"lambda_star\" is neither a number nor null", where);
        }
        if (rc) {
            free(list);
            return rc;
        }
    }
    *out = list;
    *n = (size_t)count;
    return TSIM_OK;
}

/* sweep: per lambda_plan, weighted cost (mean, std) against lambda_eval. */
static int plot_sweep(plotset *ps, study *s, const cJSON *root)
{
    enum { NV = 2 };
    tsim_error *err = s->err;
    numset parts = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        double lp = 0, le = 0;
        if ((rc = result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = need_number(res, where, "lambda_plan", &lp, err)) ||
            (rc = need_number(res, where, "lambda_eval", &le, err)))
            continue;
        long part = numset_index(&parts, lp);
        cell *c = part < 0 ? NULL : new_cell(s, i, p);
        if (!c) {
            rc = part < 0 ? oom(err) : err->code;
            break;
        }
        c->part = part;
        c->x = le;
        rc = need_metric(res, where, "weighted", &c->v[0], &c->v[1], err);
    }
    break_even *be = NULL;
    size_t nbe = 0;
    if (!rc)
        rc = read_break_even(root, &be, &nbe, err);
    if (!rc)
        rc = make_labels(s);
    for (size_t part = 0; part < parts.n && !rc; part++) {
        double lp = parts.v[part];
        curves cv;
        double *m = NULL;
        text *d = NULL, *v = NULL;
        char name[64], title[320];
        snprintf(name, sizeof name, "sweep_lp%.6g", lp);
        rc = curves_make(s, (long)part, &cv);
        if (!rc && !(m = matrix(s, (long)part, cv.xs.n, cv.ncols, cv.col, NV, "lambda_plan and lambda_eval")))
            rc = err->code;
        if (!rc && !(d = add_dat(ps, name)))
            rc = err->code;
        if (!rc) {
            text_add(d, "# taotsim plot: sweep at lambda_plan = %.6g: weighted cost per record, mean and std\n", lp);
            bool any = false;
            for (size_t k = 0; k < nbe; k++) {
                if (!isnan(be[k].lambda_plan) && be[k].lambda_plan != lp)
                    continue;
                char *a = label_dup(be[k].a), *b = label_dup(be[k].b);
                if (a && b) {
                    text_add(d, "%s %s/%s ", any ? "," : "# break-even lambda* (equal weighted cost):", a, b);
                    if (isnan(be[k].lambda_star))
                        text_add(d, "none");
                    else
                        text_num(d, be[k].lambda_star);
                } else {
                    d->oom = true;
                }
                free(a);
                free(b);
                any = true;
            }
            if (any)
                text_add(d, "\n");
            write_na(d, s);
            text_add(d, "# lambda_eval");
            for (size_t j = 0; j < cv.ncols; j++)
                text_add(d, " %s:weighted %s:weighted_std", cv.labels[j], cv.labels[j]);
            text_add(d, "\n");
            write_curve_rows(d, &cv, m, NV);
            char ctx[192];
            study_context(s, ctx, sizeof ctx);
            snprintf(title, sizeof title, "Weighted cost vs λ_eval at λ_plan = %.6g (%s%smean ± std)", lp, ctx,
                     ctx[0] ? "; " : "");
            char data[80];
            snprintf(data, sizeof data, "%s.dat", name);
            if (!(v = add_figure(ps, name, "sweep", data, title)))
                rc = err->code;
        }
        if (!rc) {
            vars_planners_only(v, cv.labels, cv.ncols);
            /* Break-even marks inside the plotted lambda_eval range. */
            size_t marks = 0;
            for (size_t k = 0; k < nbe; k++) {
                double x = be[k].lambda_star;
                if ((!isnan(be[k].lambda_plan) && be[k].lambda_plan != lp) || isnan(x) || x < cv.xs.v[0] ||
                    x > cv.xs.v[cv.xs.n - 1])
                    continue;
                marks++;
                text_add(v, "BE_X%zu = ", marks);
                text_num(v, x);
                char *a = label_dup(be[k].a), *b = label_dup(be[k].b);
                if (!a || !b) {
                    free(a);
                    free(b);
                    rc = oom(err);
                    break;
                }
                char label[160];
                snprintf(label, sizeof label, "λ* %s/%s = %.3g", a, b, x);
                text_add(v, "\nBE_LABEL%zu = ", marks);
                text_gp_string(v, label);
                text_add(v, "\n");
                free(a);
                free(b);
            }
            text_add(v, "NBE = %zu\n", marks);
            vars_styles(v, cv.labels, cv.ncols);
        }
        free(m);
        curves_free(&cv);
    }
    free(be);
    numset_free(&parts);
    return rc;
}

/* scaling: per axis, residual imbalance and weighted cost against the axis
 * value. Values per planner: rho_after mean %, std %, weighted mean, std. */
static int plot_scaling(plotset *ps, study *s)
{
    enum { NV = 4 };
    static const char *const axes[3] = {"ep", "imbalance", "slots"};
    static const char *const axis_label[3] = {"EP size (ranks)", "initial imbalance (%)", "guest slots per rank (K)"};
    static const char *const axis_title[3] = {"EP size", "initial imbalance", "guest slots per rank"};
    tsim_error *err = s->err;
    strset parts = {0};
    int rc = TSIM_OK;
    char where[64];
    for (int i = 0; i < s->n && !rc; i++) {
        const cJSON *res;
        long p = 0;
        const char *axis = NULL;
        if ((rc = result_at(s, i, &res, where, sizeof where, &p)) || p < 0 ||
            (rc = need_string(res, where, "axis", &axis, err)))
            continue;
        int a = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(axis, axes[k]) == 0)
                a = k;
        if (a < 0) {
            char *shown = label_dup(axis);
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: unknown \"axis\" '%s' (expected ep, imbalance or slots)", where,
                                shown ? shown : "?");
            free(shown);
            break;
        }
        double x = 0, rho = 0, rho_std = 0;
        if ((rc = need_number(res, where, axes[a], &x, err)))
            break;
        long part = strset_index(&parts, axis);
        cell *c = part < 0 ? NULL : new_cell(s, i, p);
        if (!c) {
            rc = part < 0 ? oom(err) : err->code;
            break;
        }
        c->part = part;
        c->x = a == 1 ? 100 * x : x;
        if ((rc = need_metric(res, where, "rho_after", &rho, &rho_std, err)) ||
            (rc = need_metric(res, where, "weighted", &c->v[2], &c->v[3], err)))
            break;
        c->v[0] = 100 * rho;
        c->v[1] = 100 * rho_std;
    }
    if (!rc)
        rc = make_labels(s);
    for (size_t part = 0; part < parts.n && !rc; part++) {
        int a = 0;
        for (int k = 0; k < 3; k++)
            if (strcmp(parts.v[part], axes[k]) == 0)
                a = k;
        curves cv;
        double *m = NULL;
        text *d = NULL;
        char name[64], data[80], fig[96], title[160];
        snprintf(name, sizeof name, "scaling_%s", axes[a]);
        snprintf(data, sizeof data, "%s.dat", name);
        rc = curves_make(s, (long)part, &cv);
        char same[32];
        snprintf(same, sizeof same, "axis and %s", axes[a]);
        if (!rc && !(m = matrix(s, (long)part, cv.xs.n, cv.ncols, cv.col, NV, same)))
            rc = err->code;
        if (!rc && !(d = add_dat(ps, name)))
            rc = err->code;
        if (!rc) {
            text_add(d, "# taotsim plot: scaling along %s: mean and std; %srho_after in %%\n", axes[a],
                     a == 1 ? "imbalance and " : "");
            write_na(d, s);
            text_add(d, "# %s", axes[a]);
            for (size_t j = 0; j < cv.ncols; j++) {
                const char *l = cv.labels[j];
                text_add(d, " %s:rho_after %s:rho_after_std %s:weighted %s:weighted_std", l, l, l, l);
            }
            text_add(d, "\n");
            write_curve_rows(d, &cv, m, NV);
        }
        /* A log2 axis for EP sizes and slot counts (powers of two, mostly). */
        bool logx = a != 1 && cv.xs.n > 0 && cv.xs.v[0] > 0;
        for (int f = 0; f < 2 && !rc; f++) {
            snprintf(fig, sizeof fig, "%s_%s", name, f == 0 ? "residual" : "weighted");
            snprintf(title, sizeof title, "%s vs %s (mean ± std)",
                     f == 0 ? "Residual imbalance" : "Weighted communication cost", axis_title[a]);
            text *v = add_figure(ps, fig, f == 0 ? "scaling_residual" : "scaling_weighted", data, title);
            if (!v) {
                rc = err->code;
                break;
            }
            text_add(v, "XLABEL = \"%s\"\nLOGX = %d\n", axis_label[a], logx ? 1 : 0);
            vars_planners(v, cv.labels, cv.ncols);
        }
        free(m);
        curves_free(&cv);
    }
    strset_free(&parts);
    return rc;
}

/* ---------- templates, scripts, files ---------- */

static int read_whole(const char *path, char **out, size_t *len, int *errno_out)
{
    *out = NULL;
    *len = 0;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        *errno_out = errno;
        return -1;
    }
    text t = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        text_addn(&t, buf, n);
    int bad = ferror(f);
    *errno_out = bad ? EIO : 0;
    if (f != stdin)
        fclose(f);
    if (bad || t.oom) {
        *errno_out = t.oom ? ENOMEM : EIO;
        text_free(&t);
        return -1;
    }
    if (!t.buf)
        text_addn(&t, "", 0);
    if (t.oom) {
        *errno_out = ENOMEM;
        return -1;
    }
    *out = t.buf;
    *len = t.len;
    return 0;
}

static const char *templates_dir(void)
{
    const char *env = getenv("TAOTSIM_PLOTS_DIR");
    return env && env[0] ? env : tsim_plots_default_dir();
}

static int read_template(const char *name, char **out, tsim_error *err)
{
    const char *dir = templates_dir();
    size_t need = strlen(dir) + strlen(name) + 8;
    char *path = malloc(need);
    if (!path)
        return oom(err);
    snprintf(path, need, "%s/%s.gp", dir, name);
    size_t len;
    int e = 0;
    if (read_whole(path, out, &len, &e)) {
        tsim_error_set(err, TSIM_E_INPUT, "cannot read the plot template %s: %s (set TAOTSIM_PLOTS_DIR to the plots/ "
                       "directory of the taotsim sources)", path, strerror(e));
        free(path);
        return TSIM_E_INPUT;
    }
    free(path);
    return TSIM_OK;
}

/* The script of a figure: a header, its variables, terminal.gp, its template. */
static int build_script(const figure *f, const char *study, const char *command, const char *terminal,
                        text *out, tsim_error *err)
{
    char *tmpl = NULL;
    int rc = read_template(f->tmpl, &tmpl, err);
    if (rc)
        return rc;
    text_add(out, "# taotsim plot: %s, from a '%s' result, made from the template plots/%s.gp.\n", f->name, study,
             f->tmpl);
    if (command) {
        text_add(out, "# Result of: ");
        size_t n = 0;
        for (const char *p = command; *p && n < 400; p++, n++) {
            char c = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
            text_addn(out, &c, 1);
        }
        text_add(out, "%s\n", strlen(command) > 400 ? "..." : "");
    }
    text_add(out, "# Render in this directory: gnuplot %s.gp (PNG), gnuplot -e 'fmt=\"svg\"' %s.gp (SVG).\n\n",
             f->name, f->name);
    text_addn(out, f->vars.buf ? f->vars.buf : "", f->vars.len);
    text_add(out, "\n");
    text_add(out, "%s", terminal);
    if (terminal[0] && terminal[strlen(terminal) - 1] != '\n')
        text_add(out, "\n");
    text_add(out, "\n%s", tmpl);
    if (tmpl[0] && tmpl[strlen(tmpl) - 1] != '\n')
        text_add(out, "\n");
    free(tmpl);
    return TSIM_OK;
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + b + 2);
    if (p)
        snprintf(p, a + b + 2, "%s%s%s", dir, slash ? "/" : "", name);
    return p;
}

static int mkdir_p(const char *dir, tsim_error *err)
{
    char *p = str_dup(dir);
    if (!p)
        return oom(err);
    for (char *q = p + 1; ; q++) {
        if (*q != '/' && *q != '\0')
            continue;
        char saved = *q;
        *q = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            tsim_error_set(err, TSIM_E_INPUT, "%s: cannot create directory: %s", p, strerror(e));
            free(p);
            return TSIM_E_INPUT;
        }
        *q = saved;
        if (!saved)
            break;
    }
    free(p);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a directory", dir);
    return TSIM_OK;
}

static int files_push(tsim_plot_files *w, const char *path)
{
    if (!w)
        return TSIM_OK;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        char **p = realloc(w->paths, cap * sizeof *p);
        if (!p)
            return -1;
        w->paths = p;
        w->cap = cap;
    }
    if (!(w->paths[w->n] = str_dup(path)))
        return -1;
    w->n++;
    return TSIM_OK;
}

void tsim_plot_files_free(tsim_plot_files *files)
{
    if (!files)
        return;
    for (size_t i = 0; i < files->n; i++)
        free(files->paths[i]);
    free(files->paths);
    memset(files, 0, sizeof *files);
}

static int write_file(const char *outdir, const char *name, const text *body, tsim_plot_files *w, tsim_error *err)
{
    char *path = path_join(outdir, name);
    if (!path)
        return oom(err);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (!rc) {
        if (body->len)
            fwrite(body->buf, 1, body->len, f.fp);
        rc = tsim_outfile_commit(&f, err);
    }
    if (!rc && files_push(w, path))
        rc = oom(err);
    free(path);
    return rc;
}

/* ---------- gnuplot ---------- */

/* The gnuplot to run: $TAOTSIM_GNUPLOT or "gnuplot", searched on PATH
 * unless it contains a '/'. 0 and the path in out when it is executable. */
static int find_gnuplot(char *out, size_t size, const char **asked)
{
    const char *env = getenv("TAOTSIM_GNUPLOT");
    const char *name = env && env[0] ? env : "gnuplot";
    *asked = name;
    struct stat st;
    if (strchr(name, '/')) {
        if (access(name, X_OK) == 0 && stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(out, size, "%s", name);
            return 0;
        }
        return -1;
    }
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        int n = len ? snprintf(out, size, "%.*s/%s", (int)len, path, name) : snprintf(out, size, "./%s", name);
        if (n > 0 && (size_t)n < size && access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
        path += len + (end ? 1 : 0);
    }
    return -1;
}

/* Runs gnuplot with args (after argv[0]) in dir (NULL: here); its output
 * (stdout and stderr, the first few KB) lands in said. -1 with errno when it
 * cannot be started; the child exits 127 when exec fails. */
static int run_gnuplot(const char *gnuplot, const char *dir, char *const *args, text *said, int *status)
{
    char *argv[8] = {"gnuplot"};
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        close(fds[0]);
        int null_in = open("/dev/null", O_RDONLY);
        if (null_in >= 0)
            dup2(null_in, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        if (dir && chdir(dir) != 0)
            _exit(126);
        execv(gnuplot, argv);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (said->len < 8192)
            text_addn(said, buf, (size_t)n);
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}

/* The first non-blank line of what gnuplot said, for a message. */
static void first_line(const text *said, char *out, size_t size)
{
    size_t k = 0;
    const char *p = said->buf ? said->buf : "";
    while (*p == '\n' || *p == ' ')
        p++;
    for (; *p && *p != '\n' && k + 1 < size; p++)
        out[k++] = (unsigned char)*p < 0x20 ? ' ' : *p;
    out[k] = '\0';
}

/* What to do about a gnuplot that is missing or cannot draw. */
#define GNUPLOT_FIX                                                                                                    \
    "install gnuplot with its cairo terminals (Debian and Ubuntu: apt-get install gnuplot-nox) or set "              \
    "TAOTSIM_GNUPLOT to one; `taotsim plot RESULT.json --format none` writes the data and scripts without it"

/* Finds gnuplot and checks, before anything is written, that it runs and
 * has the terminals the formats need (pngcairo, svg). A gnuplot that is
 * missing or cannot draw is a problem of the machine, not a bug: TSIM_E_INPUT
 * with what to install. */
static int check_gnuplot(int formats, char *gnuplot, size_t size, tsim_error *err)
{
    const char *asked = NULL;
    if (find_gnuplot(gnuplot, size, &asked) != 0) {
        if (strchr(asked, '/') || getenv("TAOTSIM_GNUPLOT"))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "gnuplot not found (TAOTSIM_GNUPLOT=%s is not an executable file): " GNUPLOT_FIX,
                                  asked);
        return tsim_error_set(err, TSIM_E_INPUT, "gnuplot not found on PATH: " GNUPLOT_FIX);
    }
    char probe[64] = "";
    snprintf(probe, sizeof probe, "%s%s%s", (formats & TSIM_PLOT_PNG) ? "set terminal pngcairo" : "",
             (formats & TSIM_PLOT_PNG) && (formats & TSIM_PLOT_SVG) ? "; " : "",
             (formats & TSIM_PLOT_SVG) ? "set terminal svg" : "");
    char *args[] = {"-e", probe, NULL};
    text said = {0};
    int status = 0;
    if (run_gnuplot(gnuplot, NULL, args, &said, &status) != 0) {
        int e = errno;
        text_free(&said);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot start %s: %s (free memory or processes and retry)", gnuplot,
                              strerror(e));
    }
    char first[300];
    first_line(&said, first, sizeof first);
    bool no_terminal = said.buf && strstr(said.buf, "unknown or ambiguous terminal");
    text_free(&said);
    if (status == 127)
        return tsim_error_set(err, TSIM_E_INPUT, "cannot run %s: " GNUPLOT_FIX, gnuplot);
    if (no_terminal)
        return tsim_error_set(err, TSIM_E_INPUT, "%s has no %s terminal (it says: %s): " GNUPLOT_FIX, gnuplot,
                              (formats & TSIM_PLOT_PNG) ? "pngcairo" : "svg", first);
    if (status != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s does not work as gnuplot (exit status %d: %s): " GNUPLOT_FIX,
                              gnuplot, status, first[0] ? first : "no message");
    return TSIM_OK;
}

/* Renders FIGURE.gp into FIGURE.fmt, through a temporary name. */
static int render(const char *gnuplot, const char *outdir, const char *figure_name, const char *fmt, FILE *log,
                  tsim_plot_files *w, tsim_error *err)
{
    char name[160], script[160];
    snprintf(name, sizeof name, "%s.%s", figure_name, fmt);
    snprintf(script, sizeof script, "%s.gp", figure_name);
    char *path = path_join(outdir, name);
    if (!path)
        return oom(err);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (rc) {
        free(path);
        return rc;
    }
    if (!f.tmp_path) { /* a device such as /dev/null: gnuplot cannot write there through a rename */
        tsim_outfile_abort(&f);
        rc = tsim_error_set(err, TSIM_E_INPUT, "%s: images need a directory of regular files", path);
        free(path);
        return rc;
    }
    const char *slash = strrchr(f.tmp_path, '/');
    const char *tmp_name = slash ? slash + 1 : f.tmp_path;
    char vars[512];
    snprintf(vars, sizeof vars, "fmt=\"%s\"; out=\"%s\"", fmt, tmp_name);
    char *args[] = {"-e", vars, script, NULL};
    text said = {0};
    int status = 0;
    if (run_gnuplot(gnuplot, outdir, args, &said, &status) != 0) {
        int e = errno;
        rc = tsim_error_set(err, TSIM_E_INPUT, "cannot start %s: %s (free memory or processes and retry)", gnuplot,
                            strerror(e));
    } else {
        struct stat st;
        bool made = stat(f.tmp_path, &st) == 0 && st.st_size > 0;
        char first[400];
        first_line(&said, first, sizeof first);
        /* It drew the terminal check, so a failure here comes from the
         * script (an edited template) or the machine (a full disk). */
        if (status != 0 || !made) {
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "gnuplot failed on %s/%s (exit status %d%s): %s; the data and scripts are in %s "
                                "(check the templates in TAOTSIM_PLOTS_DIR, if set, and the free space)",
                                outdir, script, status, made ? "" : ", no output", first[0] ? first : "no message",
                                outdir);
        } else if (said.len && log) {
            fprintf(log, "gnuplot (%s/%s): %s", outdir, script, said.buf);
            if (said.buf[said.len - 1] != '\n')
                fputc('\n', log);
        }
    }
    text_free(&said);
    if (rc) {
        tsim_outfile_abort(&f);
    } else {
        rc = tsim_outfile_commit(&f, err);
        if (!rc && files_push(w, path))
            rc = oom(err);
    }
    free(path);
    return rc;
}

/* ---------- the entry points ---------- */

int tsim_plot_formats_parse(const char *s, int *formats, tsim_error *err)
{
    static const struct {
        const char *name;
        int mask;
    } names[] = {{"png", TSIM_PLOT_PNG}, {"svg", TSIM_PLOT_SVG}, {"both", TSIM_PLOT_BOTH}, {"none", 0}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (s && strcmp(s, names[i].name) == 0) {
            *formats = names[i].mask;
            return TSIM_OK;
        }
    }
    return tsim_error_set(err, TSIM_E_INPUT, "--format: expected png, svg, both or none, got '%s'", s ? s : "");
}

/* The study a result is from: "study", or the subcommand in "command" for
 * results written before the field existed. */
static int result_study(const cJSON *root, const char **study, tsim_error *err)
{
    static const char *const known[] = {"replay", "table1", "ablation", "sweep", "scaling", "advise"};
    const cJSON *j = field(root, "study");
    char guessed[16] = "";
    const char *name = NULL;
    if (j) {
        if (!cJSON_IsString(j) || !j->valuestring)
            return tsim_error_set(err, TSIM_E_INPUT, "\"study\" is not a string");
        name = j->valuestring;
    } else {
        const cJSON *cmd = field(root, "command");
        const char *c = cJSON_IsString(cmd) && cmd->valuestring ? cmd->valuestring : "";
        const char *sp = strchr(c, ' ');
        if (sp) {
            size_t k = 0;
            for (sp++; *sp && *sp != ' ' && k + 1 < sizeof guessed; sp++)
                guessed[k++] = *sp;
            guessed[k] = '\0';
        }
        name = guessed;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(name, known[i]) == 0) {
            *study = known[i];
            return TSIM_OK;
        }
    }
    if (!j)
        return tsim_error_set(err, TSIM_E_INPUT, "missing \"study\" (replay, table1, ablation, sweep or scaling)");
    char *shown = label_dup(name);
    tsim_error_set(err, TSIM_E_INPUT, "unknown study '%s' (expected replay, table1, ablation, sweep or scaling)",
                   shown ? shown : "?");
    free(shown);
    return TSIM_E_INPUT;
}

/* taotsim advise: two figures of one data file, whose text plot_advise.c makes. */
static int plot_advise(plotset *ps, const cJSON *root, tsim_error *err)
{
    static const char *const names[2] = {"advise_memory", "advise_traffic"};
    static const char *const xlabels[2] = {
        "memory per rank (MB): guest slots × one expert's weights",
        "weight traffic per record: weighted + re-homed intra + λ_eval × re-homed inter"};
    char *dat = NULL, *vars = NULL;
    size_t nd = 0, nv = 0;
    FILE *d = open_memstream(&dat, &nd), *v = open_memstream(&vars, &nv);
    int rc = d && v ? tsim_plot_advise_text(root, d, v, err) : oom(err);
    if ((d && fclose(d)) || (v && fclose(v)))
        rc = rc ? rc : oom(err);
    const cJSON *trace = field(field(root, "params"), "trace");
    char title[512];
    snprintf(title, sizeof title, "taotsim advise: %s", cJSON_IsString(trace) ? trace->valuestring : "?");
    text *body = rc ? NULL : add_dat(ps, "advise");
    if (!rc && !body)
        rc = err->code;
    if (body)
        text_add(body, "%s", dat);
    for (int f = 0; f < 2 && !rc; f++) {
        text *t = add_figure(ps, names[f], "advise", "advise.dat", title);
        if (!t) {
            rc = err->code;
            break;
        }
        text_add(t, "XCOL = %d\nXLABEL = ", f + 1);
        text_gp_string(t, xlabels[f]);
        text_add(t, "\n%s", vars);
    }
    free(dat);
    free(vars);
    return rc;
}

/* replay --by-layer: replay_layers, built by plot_layers.c. */
static int plot_replay_layers(plotset *ps, const cJSON *results, tsim_error *err)
{
    char *dat, *vars;
    int rc = tsim_plot_layers_build(results, &dat, &vars, err);
    text *d = rc ? NULL : add_dat(ps, "replay_layers");
    text *v = d ? add_figure(ps, "replay_layers", "replay_layers", "replay_layers.dat",
                             "Balancedness per layer, before and after planning")
                : NULL;
    if (v) {
        text_add(d, "%s", dat);
        text_add(v, "%s", vars);
    }
    free(dat);
    free(vars);
    return rc ? rc : v ? TSIM_OK : err->code;
}

static int build(const cJSON *root, plotset *ps, const char **study_name, tsim_error *err)
{
    if (!cJSON_IsObject(root))
        return tsim_error_set(err, TSIM_E_INPUT, "not a result file: expected a JSON object");
    const cJSON *tool = field(root, "tool");
    if (!cJSON_IsString(tool) || !tool->valuestring || strcmp(tool->valuestring, "taotsim") != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "not a taotsim result file (no \"tool\": \"taotsim\")");
    int rc = result_study(root, study_name, err);
    if (rc)
        return rc;
    const cJSON *results = field(root, "results");
    if (!results)
        return tsim_error_set(err, TSIM_E_INPUT, "missing \"results\" (an array)");
    if (!cJSON_IsArray(results))
        return tsim_error_set(err, TSIM_E_INPUT, "\"results\" is not an array");
    int n = cJSON_GetArraySize(results);
    if (n == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "\"results\" is empty: nothing to plot");
    int na = 0;
    for (int i = 0; i < n; i++)
        if (cJSON_IsObject(cJSON_GetArrayItem(results, i)) && result_na(cJSON_GetArrayItem(results, i)))
            na++;
    if (na == n)
        return tsim_error_set(err, TSIM_E_INPUT, "every result is n/a (has an \"error\"): nothing to plot");
    study s = {.root = root, .results = results, .n = n, .err = err};
    const char *name = *study_name;
    if (strcmp(name, "replay") == 0) {
        rc = plot_replay(ps, &s);
        if (!rc && tsim_plot_layers_present(results))
            rc = plot_replay_layers(ps, results, err);
    }
    else if (strcmp(name, "table1") == 0)
        rc = plot_table1(ps, &s);
    else if (strcmp(name, "ablation") == 0)
        rc = plot_ablation(ps, &s);
    else if (strcmp(name, "sweep") == 0)
        rc = plot_sweep(ps, &s, root);
    else if (strcmp(name, "advise") == 0)
        rc = plot_advise(ps, root, err);
    else
        rc = plot_scaling(ps, &s);
    study_free(&s);
    return rc;
}

int tsim_plot_write(const cJSON *result, const char *outdir, int formats, FILE *log, tsim_plot_files *written,
                    tsim_error *err)
{
    return tsim_plot_write_named(result, NULL, outdir, formats, log, written, err);
}

int tsim_plot_write_named(const cJSON *result, const char *source, const char *outdir, int formats, FILE *log,
                          tsim_plot_files *written, tsim_error *err)
{
    if (written)
        memset(written, 0, sizeof *written);
    if (!outdir || !outdir[0])
        return tsim_error_set(err, TSIM_E_INPUT, "no output directory given");
    plotset ps = {.err = err};
    const char *study = NULL;
    text *scripts = NULL;
    char *terminal = NULL;
    int rc = build(result, &ps, &study, err);
    if (!rc)
        rc = tsim_plot_frontier_check(result, err);
    if (rc == TSIM_E_INPUT && source)
        tsim_error_prefix(err, "%s", source);
    if (!rc)
        rc = read_template("terminal", &terminal, err);
    if (!rc && !(scripts = calloc(ps.nfig ? ps.nfig : 1, sizeof *scripts)))
        rc = oom(err);
    const cJSON *cmd = field(result, "command");
    const char *command = cJSON_IsString(cmd) ? cmd->valuestring : NULL;
    for (size_t i = 0; i < ps.nfig && !rc; i++)
        rc = build_script(&ps.fig[i], study, command, terminal, &scripts[i], err);
    for (size_t i = 0; i < ps.ndat && !rc; i++)
        if (ps.dat[i].body.oom)
            rc = oom(err);
    for (size_t i = 0; i < ps.nfig && !rc; i++)
        if (ps.fig[i].vars.oom || scripts[i].oom)
            rc = oom(err);
    /* gnuplot is checked before anything is written, too. */
    char gnuplot[4096] = "";
    if (!rc && formats)
        rc = check_gnuplot(formats, gnuplot, sizeof gnuplot, err);
    /* Everything is known good from here on: create and write. */
    if (!rc)
        rc = mkdir_p(outdir, err);
    for (size_t i = 0; i < ps.ndat && !rc; i++)
        rc = write_file(outdir, ps.dat[i].name, &ps.dat[i].body, written, err);
    for (size_t i = 0; i < ps.nfig && !rc; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s.gp", ps.fig[i].name);
        rc = write_file(outdir, name, &scripts[i], written, err);
    }
    if (!rc && formats) {
        for (size_t i = 0; i < ps.nfig && !rc; i++) {
            if (formats & TSIM_PLOT_PNG)
                rc = render(gnuplot, outdir, ps.fig[i].name, "png", log, written, err);
            if (!rc && (formats & TSIM_PLOT_SVG))
                rc = render(gnuplot, outdir, ps.fig[i].name, "svg", log, written, err);
        }
        if (!rc && written)
            written->rendered = true;
    }
    if (!rc) /* table1 --bounds: the frontier figures (plot_frontier.c) */
        rc = tsim_plot_frontier(result, outdir, formats, log, written, err);
    if (scripts)
        for (size_t i = 0; i < ps.nfig; i++)
            text_free(&scripts[i]);
    free(scripts);
    free(terminal);
    plotset_free(&ps);
    return rc;
}

int tsim_plot_check(int formats, tsim_error *err)
{
    char gnuplot[4096];
    return formats ? check_gnuplot(formats, gnuplot, sizeof gnuplot, err) : TSIM_OK;
}

int tsim_plot_result(const cJSON *result, const char *outdir, int formats, FILE *log, tsim_error *err)
{
    return tsim_plot_write(result, outdir, formats, log, NULL, err);
}

int tsim_plot_read_json(const char *path, cJSON **out, tsim_error *err)
{
    *out = NULL;
    const char *shown = strcmp(path, "-") == 0 ? "standard input" : path;
    char *buf = NULL;
    size_t len = 0;
    int e = 0;
    if (read_whole(path, &buf, &len, &e))
        return tsim_error_set(err, e == ENOMEM ? TSIM_E_INTERNAL : TSIM_E_INPUT, "%s: cannot read: %s", shown,
                              strerror(e));
    /* strict, like every JSON taotsim reads */
    cJSON *root = tsim_json_parse_strict(buf, len, shown, err);
    free(buf);
    if (!root)
        return err ? err->code : TSIM_E_INPUT;
    *out = root;
    return TSIM_OK;
}
