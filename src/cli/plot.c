/* Figures from result files (plot.h): the entry points. Everything is built
 * in memory first (data files, scripts: plot_<family>.c per study), so bad
 * input writes nothing; then each file is written atomically and gnuplot
 * renders the scripts (plot_gnuplot.c). */
#include "plot_internal.h"
#include "plot_advise.h"
#include "plot_frontier.h"
#include "plot_layers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"

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
    const cJSON *j = plot_field(root, "study");
    char guessed[16] = "";
    const char *name = NULL;
    if (j) {
        if (!cJSON_IsString(j) || !j->valuestring)
            return tsim_error_set(err, TSIM_E_INPUT, "\"study\" is not a string");
        name = j->valuestring;
    } else {
        const cJSON *cmd = plot_field(root, "command");
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
    char *shown = plot_label_dup(name);
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
    int rc = d && v ? tsim_plot_advise_text(root, d, v, err) : plot_oom(err);
    if ((d && fclose(d)) || (v && fclose(v)))
        rc = rc ? rc : plot_oom(err);
    /* the title: the trace and the settings' slot budgets (their memory axis) */
    const cJSON *params = plot_field(root, "params"), *trace = plot_field(params, "trace"), *k;
    char title[512], ks[160] = "";
    size_t used = 0;
    cJSON_ArrayForEach(k, plot_field(params, "slots"))
    {
        if (cJSON_IsNumber(k) && used < sizeof ks)
            used += (size_t)snprintf(ks + used, sizeof ks - used, "%s%.6g", used ? ", " : ", slot budgets K = ",
                                     k->valuedouble);
    }
    snprintf(title, sizeof title, "taotsim advise: %s%s", cJSON_IsString(trace) ? trace->valuestring : "?", ks);
    text *body = rc ? NULL : plot_add_dat(ps, "advise");
    if (!rc && !body)
        rc = err->code;
    if (body)
        plot_text_add(body, "%s", dat);
    for (int f = 0; f < 2 && !rc; f++) {
        text *t = plot_add_figure(ps, names[f], "advise", "advise.dat", title);
        if (!t) {
            rc = err->code;
            break;
        }
        plot_text_add(t, "XCOL = %d\nXLABEL = ", f + 1);
        plot_text_gp_string(t, xlabels[f]);
        plot_text_add(t, "\n%s", vars);
    }
    free(dat);
    free(vars);
    return rc;
}

/* replay --by-layer: replay_layers, built by plot_layers.c. */
static int plot_replay_layers(plotset *ps, const study *s, tsim_error *err)
{
    char *dat, *vars, ctx[192], title[320];
    plot_study_context(s, ctx, sizeof ctx);
    snprintf(title, sizeof title, "Balancedness per layer, before and after planning%s%s%s", ctx[0] ? " (" : "",
             ctx, ctx[0] ? ")" : "");
    int rc = tsim_plot_layers_build(s->results, &dat, &vars, err);
    text *d = rc ? NULL : plot_add_dat(ps, "replay_layers");
    text *v = d ? plot_add_figure(ps, "replay_layers", "replay_layers", "replay_layers.dat", title) : NULL;
    if (v) {
        plot_text_add(d, "%s", dat);
        plot_text_add(v, "%s", vars);
    }
    free(dat);
    free(vars);
    return rc ? rc : v ? TSIM_OK : err->code;
}

static int build(const cJSON *root, plotset *ps, const char **study_name, tsim_error *err)
{
    if (!cJSON_IsObject(root))
        return tsim_error_set(err, TSIM_E_INPUT, "not a result file: expected a JSON object");
    const cJSON *tool = plot_field(root, "tool");
    if (!cJSON_IsString(tool) || !tool->valuestring || strcmp(tool->valuestring, "taotsim") != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "not a taotsim result file (no \"tool\": \"taotsim\")");
    int rc = result_study(root, study_name, err);
    if (rc)
        return rc;
    const cJSON *results = plot_field(root, "results");
    if (!results)
        return tsim_error_set(err, TSIM_E_INPUT, "missing \"results\" (an array)");
    if (!cJSON_IsArray(results))
        return tsim_error_set(err, TSIM_E_INPUT, "\"results\" is not an array");
    int n = cJSON_GetArraySize(results);
    if (n == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "\"results\" is empty: nothing to plot");
    int na = 0;
    for (int i = 0; i < n; i++)
        if (cJSON_IsObject(cJSON_GetArrayItem(results, i)) && plot_result_na(cJSON_GetArrayItem(results, i)))
            na++;
    if (na == n)
        return tsim_error_set(err, TSIM_E_INPUT, "every result is n/a (has an \"error\"): nothing to plot");
    study s = {.root = root, .results = results, .n = n, .err = err};
    const char *name = *study_name;
    if (strcmp(name, "replay") == 0) {
        rc = plot_replay(ps, &s);
        if (!rc && tsim_plot_layers_present(results))
            rc = plot_replay_layers(ps, &s, err);
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
    plot_study_free(&s);
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
        rc = plot_read_template("terminal", &terminal, err);
    if (!rc && !(scripts = calloc(ps.nfig ? ps.nfig : 1, sizeof *scripts)))
        rc = plot_oom(err);
    const cJSON *cmd = plot_field(result, "command");
    const char *command = cJSON_IsString(cmd) ? cmd->valuestring : NULL;
    for (size_t i = 0; i < ps.nfig && !rc; i++)
        rc = plot_build_script(&ps.fig[i], study, command, terminal, &scripts[i], err);
    for (size_t i = 0; i < ps.ndat && !rc; i++)
        if (ps.dat[i].body.oom)
            rc = plot_oom(err);
    for (size_t i = 0; i < ps.nfig && !rc; i++)
        if (ps.fig[i].vars.oom || scripts[i].oom)
            rc = plot_oom(err);
    /* gnuplot is checked before anything is written, too. */
    char gnuplot[4096] = "";
    if (!rc && formats)
        rc = plot_check_gnuplot(formats, gnuplot, sizeof gnuplot, err);
    /* Everything is known good from here on: create and write. */
    if (!rc)
        rc = plot_mkdir_p(outdir, err);
    for (size_t i = 0; i < ps.ndat && !rc; i++)
        rc = plot_write_file(outdir, ps.dat[i].name, &ps.dat[i].body, written, err);
    for (size_t i = 0; i < ps.nfig && !rc; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s.gp", ps.fig[i].name);
        rc = plot_write_file(outdir, name, &scripts[i], written, err);
    }
    if (!rc && formats) {
        for (size_t i = 0; i < ps.nfig && !rc; i++) {
            if (formats & TSIM_PLOT_PNG)
                rc = plot_render(gnuplot, outdir, ps.fig[i].name, "png", log, written, err);
            if (!rc && (formats & TSIM_PLOT_SVG))
                rc = plot_render(gnuplot, outdir, ps.fig[i].name, "svg", log, written, err);
        }
        if (!rc && written)
            written->rendered = true;
    }
    if (!rc) /* table1 --bounds: the frontier figures (plot_frontier.c) */
        rc = tsim_plot_frontier(result, outdir, gnuplot, formats, log, written, err);
    if (scripts)
        for (size_t i = 0; i < ps.nfig; i++)
            plot_text_free(&scripts[i]);
    free(scripts);
    free(terminal);
    plot_plotset_free(&ps);
    return rc;
}

int tsim_plot_check(int formats, tsim_error *err)
{
    char gnuplot[4096];
    return formats ? plot_check_gnuplot(formats, gnuplot, sizeof gnuplot, err) : TSIM_OK;
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
    if (plot_read_whole(path, &buf, &len, &e))
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

