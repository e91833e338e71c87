/* What the figure files of plot.c share (plot.h): growable text, ordered
 * sets, reading a result, the figures and data files being built, cells laid
 * out in matrices, and the one gnuplot runner (plot_gnuplot.c), which the
 * fit (plot_fit.c), frontier (plot_frontier.c) and traffic (plot_traffic.c)
 * figures use too. One file per figure family: plot_replay.c,
 * plot_table1.c, plot_ablation.c, plot_sweep.c, plot_scaling.c. Internal to
 * the plot files of the CLI. */
#ifndef TSIM_PLOT_INTERNAL_H
#define TSIM_PLOT_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "plot.h"

/* The most figures or data files of one result; values per cell. */
#define MAXV 9
#define MAX_FILES 256

/* Growable text; an allocation failure sets oom and later adds do nothing. */
typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} text;

/* Ordered sets: an index per distinct key, in order of first appearance. */
typedef struct {
    char **v;
    size_t n, cap;
} strset;

typedef struct {
    double *v;
    size_t n, cap;
} numset;

/* What gets written: data files and figures, built in memory first. */
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

/* A cell: one result's values, placed in a figure family, group and column. */
typedef struct {
    int result;   /* index in "results" */
    long part;    /* which figure family (sweep: lambda_plan; scaling: axis) */
    long group;   /* bar group, or x index of a curve */
    double x;     /* curve x value */
    long planner; /* index in the study's planners */
    double v[MAXV];
} cell;

/* A result being turned into figures. */
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

/* Bar groups: a label (the key) and two coordinates written beside it. */
typedef struct {
    strset keys;
    double (*coord)[2];
} groupset;

/* Curves: the sorted x values of a part, each cell's group set to its x's
 * index; col/labels list the planners present in the part. */
typedef struct {
    numset xs;
    long *col;      /* planner -> column, -1 when absent from the part */
    char **labels;  /* [ncols], borrowed from the study */
    size_t ncols;
} curves;

/* ---------- helpers (plot_common.c) ---------- */

void plot_text_addn(text *t, const char *s, size_t n);

void plot_text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void plot_text_free(text *t);

/* A value in a data file: %.6g, and NaN (gnuplot skips it) for "none". */
void plot_text_num(text *t, double v);

/* A gnuplot double-quoted string. */
void plot_text_gp_string(text *t, const char *s);

char *plot_str_dup(const char *s);

/* Labels end up in gnuplot strings, tick lists (single quoted, where '%'
 * is a format) and data files: keep letters, digits, UTF-8 and a few
 * punctuation marks; anything else (whitespace, quotes, backquotes, which
 * gnuplot would run as a command, '@', '$', '#', control bytes) becomes '_'. */
char *plot_label_dup(const char *s);

/* Index of s, added at the end when new. -1 on out of memory. */
long plot_strset_index(strset *s, const char *key);

void plot_strset_free(strset *s);

long plot_numset_index(numset *s, double x);

void plot_numset_free(numset *s);

int plot_oom(tsim_error *err);

const cJSON *plot_field(const cJSON *obj, const char *key);

int plot_need_number(const cJSON *obj, const char *where, const char *key, double *out, tsim_error *err);

int plot_need_string(const cJSON *obj, const char *where, const char *key, const char **out, tsim_error *err);

int plot_need_bool(const cJSON *obj, const char *where, const char *key, bool *out, tsim_error *err);

/* results[i].metrics.NAME: "mean" is required, "std" defaults to 0. */
int plot_need_metric(const cJSON *res, const char *where, const char *name, double *mean, double *std,
                     tsim_error *err);

/* results[i].paper.NAME: a number or {"mean": ...}; NaN when absent or null. */
int plot_paper_value(const cJSON *res, const char *where, const char *name, double *out, tsim_error *err);

void plot_plotset_free(plotset *ps);

/* A data file NAME.dat; NULL (err set) when there are too many. */
text *plot_add_dat(plotset *ps, const char *name);

/* A figure NAME drawn by plots/TMPL.gp from DATA.dat; its variables start
 * with FIGURE, DATA and TITLE. */
text *plot_add_figure(plotset *ps, const char *name, const char *tmpl, const char *data, const char *title);

/* PLANNERS = "a b c" and NP = 3 (labels are sanitised: no spaces). */
void plot_vars_planners_only(text *v, char *const *labels, size_t n);

/* Each planner's style: COLORS = "#d55e00 ..." and POINTS = "7 ...". */
void plot_vars_styles(text *v, char *const *labels, size_t n);

void plot_vars_planners(text *v, char *const *labels, size_t n);

/* NG and XTICS = '("label" 0, ...)' for bar charts. '%' in a tick label is
 * a format character to gnuplot, hence "%%". ", " and ": " break the line:
 * "\n" (the comma dropped), which gnuplot reads as a newline when it evals
 * the tick list. */
void plot_vars_groups(text *v, char *const *labels, size_t n);

/* A word list of 1-based indices, e.g. PAPER = "1 3". */
void plot_vars_index_list(text *v, const char *name, const bool *on, size_t n);

/* What a figure's numbers come from, for its title: the regime, trace or
 * trace folder, and the guest slots per rank, e.g. "regime paper, K = 2";
 * "" when the result says neither. */
void plot_study_context(const study *s, char *buf, size_t n);

void plot_study_free(study *s);

/* A cell where the planner could not run (e.g. LPLB on a shape it has no
 * graph for): an "error" and no "metrics". The result's notes say why;
 * figures leave it out. */
bool plot_result_na(const cJSON *res);

/* Result i, its name for messages, and its planner (added if new); -1 for
 * an n/a cell, which is noted once (pass == 0) in s->na. */
int plot_result_at_pass(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner, int pass);

int plot_result_at(study *s, int i, const cJSON **res, char *where, size_t wsize, long *planner);

/* The n/a line of a data file, when there were n/a cells. */
void plot_write_na(text *d, const study *s);

cell *plot_new_cell(study *s, int result, long planner);

int plot_make_labels(study *s);

/* The cells of one part as [group][column][nv], NaN where a column has no
 * cell. col maps a planner to its column (NULL: one column for all). Two
 * cells in the same place are an error naming what makes them the same. */
double *plot_matrix(study *s, long part, size_t ngroups, size_t ncols, const long *col, size_t nv,
                    const char *same_what);

long plot_group_index(groupset *g, const char *key, double c0, double c1);

void plot_groupset_free(groupset *g);

/* One row per group: "label" c0 c1 then, per column, the first nv_out of
 * its nv values. */
void plot_write_bar_rows(text *d, const groupset *g, const double *m, size_t ncols, size_t nv, size_t nv_out);

void plot_curves_free(curves *cv);

int plot_curves_make(study *s, long part, curves *cv);

void plot_write_curve_rows(text *d, const curves *cv, const double *m, size_t nv);

/* ---------- the figure families (plot_<family>.c) ---------- */

int plot_replay(plotset *ps, study *s);

/* table1: bars per (EP, imbalance) group, one per planner, and a Pareto
 * figure per group. Values per planner: weighted mean, std, rho_after mean
 * %, std %, paper weighted (the five in table1.dat), paper rho_after %. */
int plot_table1(plotset *ps, study *s);

/* ablation: bars of intra, inter, weighted per combination of TAOT's flow
 * hint and comm cost (and planner, when there are several). Values: mean,
 * std, paper, for each of the three. */
int plot_ablation(plotset *ps, study *s);

/* sweep: per lambda_plan, weighted cost (mean, std) against lambda_eval. */
int plot_sweep(plotset *ps, study *s, const cJSON *root);

/* scaling: per axis, residual imbalance and weighted cost against the axis
 * value. Values per planner: rho_after mean %, std %, weighted mean, std. */
int plot_scaling(plotset *ps, study *s);

/* ---------- templates, files and the gnuplot runner (plot_gnuplot.c) ---------- */

int plot_read_whole(const char *path, char **out, size_t *len, int *errno_out);

int plot_read_template(const char *name, char **out, tsim_error *err);

/* The script of a figure: a header, its variables, terminal.gp, its template. */
int plot_build_script(const figure *f, const char *study, const char *command, const char *terminal,
                      text *out, tsim_error *err);

int plot_mkdir_p(const char *dir, tsim_error *err);

int plot_write_file(const char *outdir, const char *name, const text *body, tsim_plot_files *w, tsim_error *err);

/* Finds gnuplot and checks, before anything is written, that it runs and
 * has the terminals the formats need (pngcairo, svg). A gnuplot that is
 * missing or cannot draw is a problem of the machine, not a bug: TSIM_E_INPUT
 * with what to install. */
int plot_check_gnuplot(int formats, char *gnuplot, size_t size, tsim_error *err);

/* Renders FIGURE.gp into FIGURE.fmt, through a temporary name. */
int plot_render(const char *gnuplot, const char *outdir, const char *figure_name, const char *fmt, FILE *log,
                tsim_plot_files *w, tsim_error *err);

#endif
