/* The HTML page of `taotsim report` and of the study commands' --report:
 * for each result its command, version, parameters and trace, every table it
 * holds, its notes and its figures inline as SVG (drawn by plot.c through
 * gnuplot's svg terminal). The page loads nothing: no network, no other file. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"
#include "plot.h"
#include "report_html.h"

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A JSON value in a table cell: numbers to 4 significant digits. */
static void cell(FILE *f, const cJSON *v)
{
    if (cJSON_IsNumber(v))
        fprintf(f, "%.4g", v->valuedouble);
    else if (cJSON_IsString(v))
        esc(f, v->valuestring);
    else if (cJSON_IsBool(v))
        fputs(cJSON_IsTrue(v) ? "on" : "off", f);
    else if (v && !cJSON_IsNull(v)) {
        char *s = cJSON_PrintUnformatted(v);
        esc(f, s);
        free(s);
    }
}

static void pre_json(FILE *f, const char *heading, const cJSON *v)
{
    if (!v)
        return;
    char *s = cJSON_Print(v);
    fprintf(f, "<h3>%s</h3>\n<pre>", heading);
    esc(f, s ? s : "?");
    fputs("</pre>\n", f);
    free(s);
}

/* Adds the member names of obj (or of obj[sub]) not yet in names. */
static void collect(cJSON *names, const cJSON *obj, const char *sub)
{
    const cJSON *m, *from = sub ? cJSON_GetObjectItemCaseSensitive(obj, sub) : obj;
    cJSON_ArrayForEach(m, from)
    {
        if (m->string && !cJSON_GetObjectItemCaseSensitive(names, m->string))
            cJSON_AddTrueToObject(names, m->string);
    }
}

/* The results table: the grid point and planner, each metric's mean ± std,
 * the paper's values, notes or the error of an n/a result. */
static void results_table(FILE *f, const cJSON *results)
{
    static const char *const keys[] = {"key",     "axis",    "ep",        "imbalance", "slots", "lambda_plan",
                                       "lambda_eval", "flow_hint", "comm_cost", "seed",  "planner"};
    cJSON *metrics = cJSON_CreateObject(), *paper = cJSON_CreateObject();
    bool has[sizeof keys / sizeof keys[0]] = {0};
    const cJSON *r, *m;
    cJSON_ArrayForEach(r, results)
    {
        collect(metrics, r, "metrics");
        collect(paper, r, "paper");
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            has[k] |= cJSON_GetObjectItemCaseSensitive(r, keys[k]) != NULL;
    }
    fputs("<table>\n<tr>", f);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (has[k])
            fprintf(f, "<th>%s</th>", keys[k]);
    cJSON_ArrayForEach(m, metrics) { fprintf(f, "<th>%s<br>mean ± std</th>", m->string); }
    cJSON_ArrayForEach(m, paper) { fprintf(f, "<th>paper<br>%s</th>", m->string); }
    fputs("<th>notes</th></tr>\n", f);
    cJSON_ArrayForEach(r, results)
    {
        fputs("<tr>", f);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (!has[k])
                continue;
            fputs("<td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(r, keys[k]));
            fputs("</td>", f);
        }
        const cJSON *rm = cJSON_GetObjectItemCaseSensitive(r, "metrics");
        cJSON_ArrayForEach(m, metrics)
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(rm, m->string);
            const cJSON *mean = cJSON_GetObjectItemCaseSensitive(s, "mean"), *sd = cJSON_GetObjectItemCaseSensitive(s, "std");
            fputs("<td>", f);
            if (cJSON_IsNumber(mean))
                fprintf(f, "%.4g", mean->valuedouble);
            if (cJSON_IsNumber(sd))
                fprintf(f, " ± %.3g", sd->valuedouble);
            fputs("</td>", f);
        }
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(r, "paper");
        cJSON_ArrayForEach(m, paper)
        {
            fputs("<td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(rp, m->string));
            fputs("</td>", f);
        }
        fputs("<td>", f);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error"), *n;
        if (e) {
            fputs("n/a: ", f);
            cell(f, e);
        }
        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(r, "notes"))
        {
            cell(f, n);
            fputs("<br>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    cJSON_Delete(metrics);
    cJSON_Delete(paper);
}

/* Any other array of objects (break_even): one column per member. */
static void object_table(FILE *f, const char *heading, const cJSON *rows)
{
    if (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) == 0)
        return;
    cJSON *cols = cJSON_CreateObject();
    const cJSON *r, *c;
    cJSON_ArrayForEach(r, rows) { collect(cols, r, NULL); }
    fprintf(f, "<h3>%s</h3>\n<table>\n<tr>", heading);
    cJSON_ArrayForEach(c, cols) { fprintf(f, "<th>%s</th>", c->string); }
    fputs("</tr>\n", f);
    cJSON_ArrayForEach(r, rows)
    {
        fputs("<tr>", f);
        cJSON_ArrayForEach(c, cols)
        {
            fputs("<td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(r, c->string));
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    cJSON_Delete(cols);
}

/* replay --by-layer: one row per planner and layer, each metric's mean ± std
 * over the layer's records, and vLLM's balancedness after planning. */
static void layers_table(FILE *f, const cJSON *results)
{
    cJSON *metrics = cJSON_CreateObject();
    const cJSON *r, *e, *m;
    bool any = false;
    cJSON_ArrayForEach(r, results)
    {
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "layers"))
        {
            collect(metrics, e, "metrics");
            any = true;
        }
    }
    if (any) {
        fputs("<h3>Per layer</h3>\n<table>\n<tr><th>planner</th><th>layer</th><th>records</th>", f);
        cJSON_ArrayForEach(m, metrics) { fprintf(f, "<th>%s<br>mean ± std</th>", m->string); }
        fputs("<th>balancedness (vLLM's form)<br>after</th></tr>\n", f);
    }
    cJSON_ArrayForEach(r, results)
    {
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "layers"))
        {
            fputs("<tr><td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(r, "planner"));
            fputs("</td><td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(e, "layer"));
            fputs("</td><td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(e, "record_count"));
            fputs("</td>", f);
            const cJSON *em = cJSON_GetObjectItemCaseSensitive(e, "metrics");
            cJSON_ArrayForEach(m, metrics)
            {
                const cJSON *s = cJSON_GetObjectItemCaseSensitive(em, m->string);
                const cJSON *mean = cJSON_GetObjectItemCaseSensitive(s, "mean");
                const cJSON *sd = cJSON_GetObjectItemCaseSensitive(s, "std");
                fputs("<td>", f);
                if (cJSON_IsNumber(mean))
                    fprintf(f, "%.4g", mean->valuedouble);
                if (cJSON_IsNumber(sd))
                    fprintf(f, " ± %.3g", sd->valuedouble);
                fputs("</td>", f);
            }
            fputs("<td>", f);
            cell(f, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "balancedness_vllm"), "after"));
            fputs("</td></tr>\n", f);
        }
    }
    if (any)
        fputs("</table>\n", f);
    cJSON_Delete(metrics);
}

/* taotsim advise: the setting it recommends and why, then every setting it
 * tried with its cost, balancedness and whether it is on the Pareto set. */
static void advise_tables(FILE *f, const cJSON *root)
{
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(root, "recommendation");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(rec, "reason");
    if (cJSON_IsObject(rec)) {
        fputs("<h3>Recommendation</h3>\n<p>", f);
        if (cJSON_IsString(reason))
            esc(f, reason->valuestring);
        else
            fputs("no setting reaches the target balancedness", f);
        fputs("</p>\n", f);
    }
    object_table(f, "Settings (pareto: on the Pareto set of memory, weight traffic and balancedness)",
                 cJSON_GetObjectItemCaseSensitive(root, "settings"));
}

/* Copies an SVG file inline: from "<svg" on (no XML prolog or DOCTYPE, whose
 * DTD is a URL), without the namespace attributes, which HTML does not need
 * and which look like links. */
static int inline_svg(FILE *f, const char *path, tsim_error *err)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read the figure gnuplot wrote", path);
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, in)) > 0) {
        n += got;
        if (n == cap) {
            char *more = realloc(buf, 2 * cap + 1);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(in);
    if (!buf)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    buf[n] = '\0';
    const char *svg = strstr(buf, "<svg");
    if (!svg) {
        free(buf);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not an SVG image", path);
    }
    static const char *const drop[] = {" xmlns=\"http://www.w3.org/2000/svg\"",
                                       " xmlns:xlink=\"http://www.w3.org/1999/xlink\""};
    for (const char *p = svg; *p;) {
        bool skipped = false;
        for (size_t k = 0; k < 2; k++) {
            size_t len = strlen(drop[k]);
            if (strncmp(p, drop[k], len) == 0) {
                p += len;
                skipped = true;
            }
        }
        if (!skipped)
            fputc(*p++, f);
    }
    fputc('\n', f);
    free(buf);
    return TSIM_OK;
}

/* The scratch directory is removed before the message is shown: name the
 * figure that failed without pointing at it. */
static void scrub_scratch(tsim_error *err, const char *dir)
{
    static const char kept[] = "; the data and scripts are in ";
    char out[sizeof err->msg];
    size_t n = 0;
    const size_t dl = strlen(dir);
    for (const char *p = err->msg; *p && n + 1 < sizeof out;) {
        if (strncmp(p, kept, sizeof kept - 1) == 0 && strncmp(p + sizeof kept - 1, dir, dl) == 0) {
            n += (size_t)snprintf(out + n, sizeof out - n, "; check the templates in TAOTSIM_PLOTS_DIR, if set, "
                                                           "and the free space in TMPDIR");
            break;
        }
        if (strncmp(p, dir, dl) == 0 && p[dl] == '/') {
            p += dl + 1;
            continue;
        }
        out[n++] = *p++;
    }
    out[n < sizeof out ? n : sizeof out - 1] = '\0';
    snprintf(err->msg, sizeof err->msg, "the report's figures: %s", out);
}

/* Draws the result's figures as SVG in a scratch directory, inlines them,
 * removes the directory. */
static int figures(FILE *f, const cJSON *root, const char *source, tsim_error *err)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/taotsim-report-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    if (!mkdtemp(dir))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot make a scratch directory", dir);
    tsim_plot_files files;
    int rc = tsim_plot_write_named(root, source, dir, TSIM_PLOT_SVG, stderr, &files, err);
    if (!rc)
        fputs("<h3>Figures</h3>\n", f);
    for (size_t i = 0; i < files.n && !rc; i++) {
        size_t len = strlen(files.paths[i]);
        if (len > 4 && strcmp(files.paths[i] + len - 4, ".svg") == 0) {
            fputs("<figure>\n", f);
            rc = inline_svg(f, files.paths[i], err);
            fputs("</figure>\n", f);
        }
    }
    tsim_plot_files_free(&files);
    if (rc && strstr(err->msg, dir))
        scrub_scratch(err, dir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[4400];
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name), unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return rc;
}

int tsim_report_html_section(FILE *f, const cJSON *root, const char *source, bool draw, tsim_error *err)
{
    const cJSON *study = cJSON_GetObjectItemCaseSensitive(root, "study");
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    if (cJSON_IsString(study) && strcmp(study->valuestring, "fit") == 0 && !results)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: a 'fit' result ranks regimes and has no results table for the report; "
                              "its figures come from 'taotsim fit --plots DIR'",
                              source ? source : "result");
    if (!cJSON_IsString(study) || !cJSON_IsArray(results))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a taotsim result (no \"study\" or \"results\")",
                              source ? source : "result");
    fputs("<section>\n<h2>", f);
    esc(f, study->valuestring);
    if (source) {
        fputs(": ", f);
        esc(f, source);
    }
    fputs("</h2>\n<p>Command: <code>", f);
    cell(f, cJSON_GetObjectItemCaseSensitive(root, "command"));
    fputs("</code><br>taotsim version ", f);
    cell(f, cJSON_GetObjectItemCaseSensitive(root, "version"));
    fputs("</p>\n", f);
    pre_json(f, "Parameters", cJSON_GetObjectItemCaseSensitive(root, "params"));
    pre_json(f, "Trace", cJSON_GetObjectItemCaseSensitive(root, "trace"));
    fputs("<h3>Results</h3>\n", f);
    results_table(f, results);
    object_table(f, "Break-even λ*", cJSON_GetObjectItemCaseSensitive(root, "break_even"));
    layers_table(f, results);
    advise_tables(f, root);
    int rc = draw ? figures(f, root, source, err) : TSIM_OK;
    fputs("</section>\n", f);
    return rc;
}

static const char style[] =
    "body{font-family:sans-serif;margin:2em;max-width:1400px}"
    "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
    "th,td{border:1px solid #bbb;padding:2px 6px;text-align:right;vertical-align:top}"
    "th{background:#eee}pre{background:#f6f6f6;padding:0.5em;overflow:auto;max-height:20em}"
    "figure{margin:1em 0}figure svg{max-width:100%;height:auto}";

void tsim_report_html_begin(FILE *f)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<title>taotsim report</title>\n<style>%s</style>\n</head>\n<body>\n<h1>taotsim report</h1>\n",
            style);
}

void tsim_report_html_end(FILE *f)
{
    fputs("</body>\n</html>\n", f);
}

int tsim_report_check(const char *path, tsim_error *err)
{
    if (!path)
        return TSIM_OK;
    if (strcmp(path, "-") == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--report needs a file, not standard output");
    int rc = tsim_outfile_check_writable(path, err);
    return rc ? rc : tsim_plot_check(TSIM_PLOT_SVG, err);
}

int tsim_report_write(tsim_outfile *out, const char *path, const cJSON *result, tsim_error *err)
{
    int rc = tsim_outfile_open(out, path, err);
    if (rc)
        return rc;
    tsim_report_html_begin(out->fp);
    rc = tsim_report_html_section(out->fp, result, NULL, true, err);
    tsim_report_html_end(out->fp);
    return rc ? rc : tsim_outfile_flush(out, err);
}
