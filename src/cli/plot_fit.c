/* Residual heat maps of the fit (plot_fit.h). Same conventions as plot.c:
 * data and scripts built in memory first, then written atomically, then
 * rendered by gnuplot in the output directory; templates from
 * $TAOTSIM_PLOTS_DIR or the source tree's plots/, gnuplot from
 * $TAOTSIM_GNUPLOT or PATH. plot.h has no public entry for a figure it does
 * not know, hence the small gnuplot runner here. */
#include "datadir.h"
#include "plot_fit.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "plot.h"
#include "tsim_config.h"

#define FIGURES TSIM_FIT_PLANNERS

typedef struct {
    char *buf;
    size_t len;
    FILE *fp;
} membuf;

static int membuf_open(membuf *m)
{
    memset(m, 0, sizeof *m);
    m->fp = open_memstream(&m->buf, &m->len);
    return m->fp ? 0 : -1;
}

/* Closes the stream; the text stays in buf. */
static int membuf_close(membuf *m)
{
    if (!m->fp)
        return 0;
    int bad = ferror(m->fp);
    int rc = fclose(m->fp);
    m->fp = NULL;
    return bad || rc ? -1 : 0;
}

static void membuf_free(membuf *m)
{
    if (m->fp)
        fclose(m->fp);
    free(m->buf);
    memset(m, 0, sizeof *m);
}

static int read_template(const char *name, char **out, tsim_error *err)
{
    const char *env = getenv("TAOTSIM_PLOTS_DIR");
    const char *dir = env && env[0] ? env : tsim_plots_default_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gp", dir, name);
    *out = NULL;
    FILE *f = fopen(path, "rb");
    membuf m;
    if (!f || membuf_open(&m)) {
        int e = errno;
        if (f)
            fclose(f);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "cannot read the plot template %s: %s (set TAOTSIM_PLOTS_DIR to the plots/ directory "
                              "of the taotsim sources)",
                              path, strerror(e));
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m.fp);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (membuf_close(&m) || bad) {
        membuf_free(&m);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot read the plot template %s", path);
    }
    *out = m.buf;
    return TSIM_OK;
}

/* A gnuplot string literal (double quotes; backslash and quote escaped). */
static void gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_dat(FILE *f, const tsim_fit_regime *fr, int planner)
{
    fprintf(f, "# taotsim fit: residuals of %s, regime: ", tsim_fit_planner_names[planner]);
    char what[200];
    tsim_regime_describe(&fr->regime, what, sizeof what);
    fprintf(f, "%s\n# cell metric residual ours paper ours_label paper_label (metric 0 improve_pp, 1 intra, 2 inter)\n",
            what);
    for (int q = 0; q < TSIM_FIT_METRICS; q++) {
        for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
            const tsim_fit_entry *e = &fr->entries[cell][planner];
            char ours[32] = "NaN", ours_label[32] = "n/a";
            if (e->ok) {
                snprintf(ours, sizeof ours, "%.6g", e->ours[q]);
                snprintf(ours_label, sizeof ours_label, "%.1f", e->ours[q]);
            }
            fprintf(f, "%d %d %.6g %s %.6g \"%s\" \"%.1f\"\n", cell, q, e->resid[q], ours, e->paper[q], ours_label,
                    e->paper[q]);
        }
        fputc('\n', f);
    }
}

static void write_script(FILE *f, const char *name, const char *command, const tsim_fit_regime *fr, int planner,
                         int rank, const char *terminal, const char *tmpl)
{
    fprintf(f, "# taotsim plot: %s, from a 'fit' result, made from the template plots/fit_residual.gp.\n", name);
    if (command && command[0]) {
        fprintf(f, "# Result of: ");
        for (const char *p = command; *p && p - command < 400; p++)
            fputc((unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
        fprintf(f, "%s\n", strlen(command) > 400 ? "..." : "");
    }
    fprintf(f, "# Render in this directory: gnuplot %s.gp (PNG), gnuplot -e 'fmt=\"svg\"' %s.gp (SVG).\n\n", name,
            name);
    char data[96], title[400], what[200];
    snprintf(data, sizeof data, "%s.dat", name);
    tsim_regime_describe(&fr->regime, what, sizeof what);
    snprintf(title, sizeof title, "fit: %s against the paper (rank %d, distance %.3f, %s %.3f)\\n%s",
             tsim_fit_planner_names[planner], rank + 1, fr->distance, tsim_fit_planner_names[planner],
             fr->planner_distance[planner], what);
    fprintf(f, "FIGURE = ");
    gp_string(f, name);
    fprintf(f, "\nDATA = ");
    gp_string(f, data);
    /* The title keeps its "\n" escape: a line break in gnuplot's double quotes. */
    fprintf(f, "\nTITLE = \"%s\"\n", title);
    fprintf(f, "NCELLS = %d\nXTICS = '(", TSIM_FIT_CELLS);
    for (int cell = 0; cell < TSIM_FIT_CELLS; cell++)
        fprintf(f, "%s\"EP%d\\n%d%%%%\" %d", cell ? ", " : "", tsim_fit_cell_ep(cell),
                (int)lround(100 * tsim_fit_cell_imbalance(cell)), cell);
    fprintf(f, ")'\n\n%s", terminal);
    if (terminal[0] && terminal[strlen(terminal) - 1] != '\n')
        fputc('\n', f);
    fprintf(f, "\n%s", tmpl);
    if (tmpl[0] && tmpl[strlen(tmpl) - 1] != '\n')
        fputc('\n', f);
}

static int write_file(const char *outdir, const char *name, const membuf *body, tsim_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (rc)
        return rc;
    if (body->len)
        fwrite(body->buf, 1, body->len, f.fp);
    return tsim_outfile_commit(&f, err);
}

static int make_dir(const char *dir, tsim_error *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s", dir) >= sizeof path)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: path too long", dir);
    for (char *q = path + 1;; q++) {
        if (*q != '/' && *q != '\0')
            continue;
        char saved = *q;
        *q = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot create directory: %s", path, strerror(errno));
        *q = saved;
        if (!saved)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: not a directory", dir);
    return TSIM_OK;
}

/* $TAOTSIM_GNUPLOT or "gnuplot" on PATH: 0 with its path in out. */
static int find_gnuplot(char *out, size_t size, const char **asked)
{
    const char *env = getenv("TAOTSIM_GNUPLOT");
    const char *name = env && env[0] ? env : "gnuplot";
    *asked = name;
    struct stat st;
    if (strchr(name, '/')) {
        snprintf(out, size, "%s", name);
        return access(name, X_OK) == 0 && stat(name, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
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

/* Renders DIR/NAME.gp into DIR/NAME.FMT through a temporary name; gnuplot's
 * own output goes to log when it succeeds, into the error when it fails. */
static int render(const char *gnuplot, const char *outdir, const char *name, const char *fmt, FILE *log,
                  tsim_error *err)
{
    char path[4096], script[160];
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
    char vars[512];
    snprintf(vars, sizeof vars, "fmt=\"%s\"; out=\"%s\"", fmt, slash ? slash + 1 : f.tmp_path);
    char *argv[] = {"gnuplot", "-e", vars, script, NULL};
    int fds[2];
    if (pipe(fds) != 0) {
        tsim_outfile_abort(&f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "cannot run %s: %s", gnuplot, strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        close(fds[0]);
        int null_in = open("/dev/null", O_RDONLY);
        if (null_in >= 0)
            dup2(null_in, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        if (chdir(outdir) != 0)
            _exit(126);
        execv(gnuplot, argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        tsim_outfile_abort(&f);
        return tsim_error_set(err, TSIM_E_INTERNAL, "cannot run %s: %s", gnuplot, strerror(errno));
    }
    char said[2048];
    size_t got = 0;
    for (;;) {
        char buf[1024];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = (size_t)n < sizeof said - 1 - got ? (size_t)n : sizeof said - 1 - got;
        memcpy(said + got, buf, keep);
        got += keep;
    }
    said[got] = '\0';
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    struct stat sb;
    bool made = stat(f.tmp_path, &sb) == 0 && sb.st_size > 0;
    if (status != 0 || !made) {
        char *nl = strchr(said, '\n');
        while (said[0] == '\n' && nl == said) {
            memmove(said, said + 1, strlen(said));
            nl = strchr(said, '\n');
        }
        if (nl)
            *nl = '\0';
        tsim_outfile_abort(&f);
        return tsim_error_set(err, TSIM_E_INPUT, "gnuplot failed on %s/%s (exit status %d%s): %s", outdir, script,
                              status, made ? "" : ", no output", said[0] ? said : "no message");
    }
    if (got && log)
        fprintf(log, "gnuplot (%s/%s): %s%s", outdir, script, said, said[got - 1] == '\n' ? "" : "\n");
    return tsim_outfile_commit(&f, err);
}

int tsim_plot_fit(const tsim_fit_result *r, const char *outdir, int formats, FILE *log, tsim_error *err)
{
    if (!outdir || !outdir[0])
        return tsim_error_set(err, TSIM_E_INPUT, "--plots: no output directory given");
    if (r->n == 0 || !r->regimes[r->order[0]].feasible)
        return tsim_error_set(err, TSIM_E_INPUT, "--plots: no feasible regime to plot");
    const tsim_fit_regime *best = &r->regimes[r->order[0]];
    char *terminal = NULL, *tmpl = NULL;
    /* A gnuplot that cannot draw is found before anything is written (plot.h). */
    int rc = tsim_plot_check(formats, err);
    if (!rc)
        rc = read_template("terminal", &terminal, err);
    if (!rc)
        rc = read_template("fit_residual", &tmpl, err);
    membuf dat[FIGURES], gp[FIGURES];
    memset(dat, 0, sizeof dat);
    memset(gp, 0, sizeof gp);
    char names[FIGURES][64];
    for (int p = 0; p < FIGURES && !rc; p++) {
        snprintf(names[p], sizeof names[p], "fit_residual_%s", tsim_fit_planner_names[p]);
        if (membuf_open(&dat[p]) || membuf_open(&gp[p])) {
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            break;
        }
        write_dat(dat[p].fp, best, p);
        write_script(gp[p].fp, names[p], tsim_report_command_line(), best, p, 0, terminal, tmpl);
        if (membuf_close(&dat[p]) || membuf_close(&gp[p]))
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    if (!rc)
        rc = make_dir(outdir, err);
    for (int p = 0; p < FIGURES && !rc; p++) {
        char file[96];
        snprintf(file, sizeof file, "%s.dat", names[p]);
        rc = write_file(outdir, file, &dat[p], err);
        snprintf(file, sizeof file, "%s.gp", names[p]);
        if (!rc)
            rc = write_file(outdir, file, &gp[p], err);
    }
    if (!rc && formats) {
        char gnuplot[4096];
        const char *asked = NULL;
        if (find_gnuplot(gnuplot, sizeof gnuplot, &asked) != 0)
            rc = tsim_error_set(err, TSIM_E_INPUT, "gnuplot (%s) disappeared while the figures were written", asked);
        for (int p = 0; p < FIGURES && !rc; p++) {
            if (formats & TSIM_PLOT_PNG)
                rc = render(gnuplot, outdir, names[p], "png", log, err);
            if (!rc && (formats & TSIM_PLOT_SVG))
                rc = render(gnuplot, outdir, names[p], "svg", log, err);
        }
    }
    for (int p = 0; p < FIGURES; p++) {
        membuf_free(&dat[p]);
        membuf_free(&gp[p]);
    }
    free(terminal);
    free(tmpl);
    return rc;
}
