/* Heat maps of the traffic matrices (plot_traffic.h). Data and scripts are
 * written atomically into DIR, then gnuplot renders each script there into a
 * temporary name that is renamed into place. */
#include "plot_traffic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datadir.h"
#include "outfile.h"
#include "plot.h"

/* The template NAME.gp from $TAOTSIM_PLOTS_DIR or the data directory, into
 * out (malloc'd). */
static int read_template(const char *name, char **out, tsim_error *err)
{
    const char *env = getenv("TAOTSIM_PLOTS_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gp", env && env[0] ? env : tsim_plots_default_dir(), name);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = f ? open_memstream(&buf, &len) : NULL;
    if (!m) {
        int e = errno;
        if (f)
            fclose(f);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot read the plot template %s: %s", path, strerror(e));
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    const bool bad = ferror(f) != 0;
    fclose(f);
    if (fclose(m) != 0 || bad) {
        free(buf);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot read the plot template %s", path);
    }
    *out = buf;
    return TSIM_OK;
}

/* A file name part from a planner label (labels are identifiers already;
 * '+' becomes 'p' so every shell and gnuplot takes it). */
static void file_label(const char *label, char *out, size_t n)
{
    size_t k = 0;
    for (; label[k] && k + 1 < n; k++)
        out[k] = label[k] == '+' ? 'p' : label[k];
    out[k] = '\0';
}

static int write_text(const char *outdir, const char *name, const char *text, size_t len, tsim_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (rc)
        return rc;
    fwrite(text, 1, len, f.fp);
    return tsim_outfile_commit(&f, err);
}

/* The data file: one line per (source, destination), a blank line after
 * each source row, as gnuplot's `with image` reads a grid. */
static int write_data(const tsim_traffic *t, int i, const char *outdir, const char *name, int64_t *min,
                      int64_t *max, tsim_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    const tsim_traffic_planner *p = &t->p[i];
    fprintf(m, "# source destination tokens_before tokens_after\n");
    for (int a = 0; a < t->n; a++) {
        for (int b = 0; b < t->n; b++) {
            const size_t k = (size_t)a * (size_t)t->n + (size_t)b;
            fprintf(m, "%d %d %lld %lld\n", a, b, (long long)p->before[k], (long long)p->after[k]);
            for (int side = 0; side < 2; side++) {
                const int64_t v = side ? p->after[k] : p->before[k];
                *max = v > *max ? v : *max;
                *min = *min < 0 || v < *min ? v : *min;
            }
        }
        fputc('\n', m);
    }
    if (fclose(m) != 0) {
        free(buf);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int rc = write_text(outdir, name, buf, len, err);
    free(buf);
    return rc;
}

static int write_script(const tsim_traffic *t, const char *label, const char *base, int64_t min, int64_t max,
                        const char *terminal, const char *tmpl, const char *outdir, tsim_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    const char *unit = t->level == TSIM_TRAFFIC_RANK ? "rank" : "node";
    fprintf(m, "# taotsim replay --traffic %s: heat map of planner %s, from the template plots/traffic.gp.\n", unit,
            label);
    fprintf(m, "# Render in this directory: gnuplot %s.gp (PNG), gnuplot -e 'fmt=\"svg\"' %s.gp (SVG).\n\n", base,
            base);
    fprintf(m, "FIGURE = \"%s\"\nDATA = \"%s.dat\"\nUNIT = \"%s\"\nN = %d\nCBMIN = %lld\nCBMAX = %lld\n", base, base,
            unit, t->n, (long long)min, (long long)max);
    fprintf(m, "TITLE = \"%s: tokens %s x %s, summed over %lld records\"\n\n%s\n%s", label, unit, unit,
            (long long)t->p[0].records, terminal, tmpl);
    if (fclose(m) != 0) {
        free(buf);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    char name[256];
    snprintf(name, sizeof name, "%s.gp", base);
    int rc = write_text(outdir, name, buf, len, err);
    free(buf);
    return rc;
}

/* gnuplot BASE.gp in outdir, writing BASE.FMT through a temporary name. */
static int render(const char *outdir, const char *base, const char *fmt, FILE *log, tsim_error *err)
{
    const char *env = getenv("TAOTSIM_GNUPLOT");
    const char *gnuplot = env && env[0] ? env : "gnuplot";
    char vars[512], script[300], tmp[300], path[4096], final[4096];
    snprintf(tmp, sizeof tmp, ".%s.%s.tmp", base, fmt);
    snprintf(vars, sizeof vars, "fmt=\"%s\"; out=\"%s\"", fmt, tmp);
    snprintf(script, sizeof script, "%s.gp", base);
    pid_t pid = fork();
    if (pid < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "cannot run %s: %s", gnuplot, strerror(errno));
    if (pid == 0) {
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            dup2(null_fd, STDIN_FILENO);
            if (!log)
                dup2(null_fd, STDOUT_FILENO);
        }
        if (log)
            dup2(fileno(log), STDOUT_FILENO);
        if (chdir(outdir) != 0)
            _exit(126);
        execlp(gnuplot, gnuplot, "-e", vars, script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    snprintf(path, sizeof path, "%s/%s", outdir, tmp);
    snprintf(final, sizeof final, "%s/%s.%s", outdir, base, fmt);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(path);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: gnuplot failed on %s.gp", outdir, base);
    }
    if (rename(path, final) != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot write: %s", final, strerror(errno));
    return TSIM_OK;
}

int tsim_plot_traffic(const tsim_traffic *t, const tsim_session *s, const char *trace_path, const char *outdir,
                      int formats, FILE *log, tsim_error *err)
{
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot create directory: %s", outdir, strerror(errno));
    char *terminal = NULL, *tmpl = NULL;
    int rc = read_template("terminal", &terminal, err);
    if (!rc)
        rc = read_template("traffic", &tmpl, err);
    for (int i = 0; !rc && i < t->n_planners; i++) {
        char label[TSIM_LABEL_MAX], base[TSIM_LABEL_MAX + 16], dat[TSIM_LABEL_MAX + 24];
        file_label(s->planners[i].label, label, sizeof label);
        snprintf(base, sizeof base, "traffic_%s", label);
        snprintf(dat, sizeof dat, "%s.dat", base);
        int64_t min = -1, max = 0;
        rc = write_data(t, i, outdir, dat, &min, &max, err);
        char who[TSIM_LABEL_MAX + 300]; /* the title names the planner, the trace and the planner's K */
        snprintf(who, sizeof who, "%s (trace %s, K = %d)", s->planners[i].label,
                 strrchr(trace_path, '/') ? strrchr(trace_path, '/') + 1 : trace_path, s->ptopo[i].slots);
        if (!rc)
            rc = write_script(t, who, base, min < 0 ? 0 : min, max, terminal, tmpl, outdir, err);
        if (!rc && (formats & TSIM_PLOT_PNG))
            rc = render(outdir, base, "png", log, err);
        if (!rc && (formats & TSIM_PLOT_SVG))
            rc = render(outdir, base, "svg", log, err);
    }
    free(terminal);
    free(tmpl);
    return rc;
}
