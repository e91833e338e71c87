/* The frontier figure of table1 --bounds (plot_frontier.h). Data and script
 * are built in memory, written atomically, then rendered by gnuplot in the
 * output directory, as plot.c does for the other figures. */
#include "plot_frontier.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "plot_internal.h"

/* Appends path to the caller's list of written files. */
static int note_written(tsim_plot_files *w, const char *path, tsim_error *err)
{
    if (!w)
        return TSIM_OK;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        char **p = realloc(w->paths, sizeof *p * cap);
        if (!p)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        w->paths = p;
        w->cap = cap;
    }
    if (!(w->paths[w->n] = strdup(path)))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    w->n++;
    return TSIM_OK;
}

static int write_text(const char *outdir, const char *name, const char *body, size_t len, tsim_plot_files *w,
                      tsim_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (rc)
        return rc;
    if (len)
        fwrite(body, 1, len, f.fp);
    if ((rc = tsim_outfile_commit(&f, err)))
        return rc;
    return note_written(w, path, err);
}

/* The gnuplot to run: $TAOTSIM_GNUPLOT, else "gnuplot" found by execvp. */
static const char *gnuplot_name(void)
{
    const char *env = getenv("TAOTSIM_GNUPLOT");
    return env && env[0] ? env : "gnuplot";
}

/* Renders DIR/NAME.gp into DIR/NAME.FMT (through a temporary name). */
static int render(const char *outdir, const char *name, const char *fmt, FILE *log, tsim_plot_files *w,
                  tsim_error *err)
{
    char path[4096], script[200], vars[600];
    snprintf(path, sizeof path, "%s/%s.%s", outdir, name, fmt);
    snprintf(script, sizeof script, "%s.gp", name);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (rc)
        return rc;
    if (!f.tmp_path) {
        tsim_outfile_abort(&f);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: images need a directory of regular files", path);
    }
    const char *slash = strrchr(f.tmp_path, '/');
    snprintf(vars, sizeof vars, "fmt=\"%s\"; out=\"%s\"", fmt, slash ? slash + 1 : f.tmp_path);
    const char *gp = gnuplot_name();
    fflush(log);
    pid_t pid = fork();
    if (pid == 0) {
        int null_in = open("/dev/null", O_RDONLY);
        if (null_in >= 0)
            dup2(null_in, STDIN_FILENO);
        if (log)
            dup2(fileno(log), STDOUT_FILENO), dup2(fileno(log), STDERR_FILENO);
        if (chdir(outdir) != 0)
            _exit(126);
        execlp(gp, gp, "-e", vars, script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    struct stat sb;
    bool made = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && stat(f.tmp_path, &sb) == 0 && sb.st_size > 0;
    if (!made) {
        tsim_outfile_abort(&f);
        return tsim_error_set(err, TSIM_E_INPUT, "gnuplot (%s) failed on %s/%s (exit status %d)", gp, outdir, script,
                              pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    if ((rc = tsim_outfile_commit(&f, err)))
        return rc;
    return note_written(w, path, err);
}

/* A number of a result's metric summary, NaN when absent. */
static double metric_mean(const cJSON *res, const char *name)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "metrics"), name);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "mean");
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One cell's data and script into memory; the caller writes them. ctx (the
 * traces and K, as the other figures' titles name them) goes in the title. */
static int cell_files(const cJSON *cell, const cJSON *results, const char *ctx, const char *name, char **dat,
                      size_t *dat_len, char **gp, size_t *gp_len, tsim_error *err)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(cell, "weighted");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cell, "rho_after");
    if (!cJSON_IsString(key) || !cJSON_IsArray(ws) || !cJSON_IsArray(rs) ||
        cJSON_GetArraySize(ws) != cJSON_GetArraySize(rs))
        return tsim_error_set(err, TSIM_E_INPUT, "frontier: each cell needs \"key\" and \"weighted\" and "
                              "\"rho_after\" arrays of one length");
    FILE *d = open_memstream(dat, dat_len), *g = d ? open_memstream(gp, gp_len) : NULL;
    if (!d || !g) {
        if (d)
            fclose(d);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    fprintf(d, "# %s: the frontier's lower bound (mean per record)\n# weighted rho_after_pct\n", key->valuestring);
    for (int i = 0; i < cJSON_GetArraySize(ws); i++)
        fprintf(d, "%.10g %.10g\n", cJSON_GetArrayItem(ws, i)->valuedouble,
                100.0 * cJSON_GetArrayItem(rs, i)->valuedouble);
    fputs("\n\n# planners: weighted rho_after_pct (means per record)\n", d);
    fprintf(g, "# taotsim table1 --bounds: planners against the frontier, cell %s\n"
               "if (!exists(\"fmt\")) fmt = \"png\"\nif (!exists(\"out\")) out = \"%s.\" . fmt\n"
               "if (fmt eq \"svg\") set terminal svg size 800,560 dynamic; else set terminal pngcairo size 800,560\n"
               "set output out\nset termoption noenhanced\nset title \"Table 1 (%s), cell %s: planners against the proven frontier\"\n"
               "set xlabel \"weighted cost (mean per record)\"\nset ylabel \"rho after, %% (mean per record)\"\n"
               "set key top right\nset grid\nplot \"%s.dat\" index 0 using 1:2 with fsteps lw 2 lc rgb \"#404040\" "
               "title \"no plan below (lower bound)\"",
            key->valuestring, name, ctx, key->valuestring, name);
    int k = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next) {
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "key");
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(r, "planner");
        double w = metric_mean(r, "weighted"), rho = metric_mean(r, "rho_after");
        if (!cJSON_IsString(rk) || strcmp(rk->valuestring, key->valuestring) != 0 || !cJSON_IsString(pl) ||
            isnan(w) || isnan(rho))
            continue;
        const bool outside = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "bounds"));
        fprintf(d, "%.10g %.10g\n", w, 100.0 * rho);
        fprintf(g, ", \\\n  \"%s.dat\" index 1 every ::%d::%d using 1:2 with points pt %d ps 1.8 lc rgb \"%s\" "
                   "title \"%s%s\"",
                name, k, k, tsim_plot_planner_point(pl->valuestring) - (outside ? 1 : 0),
                tsim_plot_planner_colour(pl->valuestring), pl->valuestring, outside ? " (outside the bound's model)" : "");
        k++;
    }
    fputc('\n', g);
    int bad = fclose(d) | fclose(g);
    return bad ? tsim_error_set(err, TSIM_E_INTERNAL, "out of memory") : TSIM_OK;
}

/* Each cell: a key and two number arrays of one length. */
int tsim_plot_frontier_check(const cJSON *result, tsim_error *err)
{
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(result, "frontier");
    if (!cells)
        return TSIM_OK;
    if (!cJSON_IsArray(cells))
        return tsim_error_set(err, TSIM_E_INPUT, "\"frontier\" is not an array");
    int i = 0;
    for (const cJSON *cell = cells->child; cell; cell = cell->next, i++) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
        const cJSON *a[2] = {cJSON_GetObjectItemCaseSensitive(cell, "weighted"),
                             cJSON_GetObjectItemCaseSensitive(cell, "rho_after")};
        if (!cJSON_IsString(key))
            return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d]: missing \"key\"", i);
        for (int k = 0; k < 2; k++) {
            if (!cJSON_IsArray(a[k]) || cJSON_GetArraySize(a[k]) != cJSON_GetArraySize(a[0]))
                return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d]: \"%s\" must be an array as long as "
                                      "\"weighted\"", i, k ? "rho_after" : "weighted");
            for (const cJSON *v = a[k]->child; v; v = v->next)
                if (!cJSON_IsNumber(v))
                    return tsim_error_set(err, TSIM_E_INPUT, "frontier[%d].%s: not a number", i,
                                          k ? "rho_after" : "weighted");
        }
    }
    return TSIM_OK;
}

int tsim_plot_frontier(const cJSON *result, const char *outdir, int formats, FILE *log, tsim_plot_files *written,
                       tsim_error *err)
{
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(result, "frontier");
    if (!cJSON_IsArray(cells))
        return TSIM_OK;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(result, "results");
    char ctx[192];
    plot_study_context(&(study){.root = result}, ctx, sizeof ctx);
    int rc = TSIM_OK;
    for (const cJSON *cell = cells->child; cell && rc == TSIM_OK; cell = cell->next) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(cell, "key");
        char name[160], file[200];
        snprintf(name, sizeof name, "table1_frontier_%s", cJSON_IsString(key) ? key->valuestring : "cell");
        for (char *p = name; *p; p++)
            *p = *p == '.' ? '_' : *p;
        char *dat = NULL, *gp = NULL;
        size_t dl = 0, gl = 0;
        rc = cell_files(cell, results, ctx, name, &dat, &dl, &gp, &gl, err);
        if (rc == TSIM_OK) {
            snprintf(file, sizeof file, "%s.dat", name);
            rc = write_text(outdir, file, dat, dl, written, err);
        }
        if (rc == TSIM_OK) {
            snprintf(file, sizeof file, "%s.gp", name);
            rc = write_text(outdir, file, gp, gl, written, err);
        }
        if (rc == TSIM_OK && (formats & TSIM_PLOT_PNG))
            rc = render(outdir, name, "png", log, written, err);
        if (rc == TSIM_OK && (formats & TSIM_PLOT_SVG))
            rc = render(outdir, name, "svg", log, written, err);
        free(dat);
        free(gp);
    }
    return rc;
}
