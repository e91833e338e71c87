/* The one gnuplot runner of the CLI (plot_internal.h): templates, the
 * figure scripts, atomic files, finding and checking gnuplot, and rendering a
 * script into PNG or SVG through a temporary name. Every figure of the CLI
 * draws through it: plot.c's families, fit's, frontier's and traffic's. */
#include "plot_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datadir.h"
#include "outfile.h"

/* ---------- templates, scripts, files ---------- */

int plot_read_whole(const char *path, char **out, size_t *len, int *errno_out)
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
        plot_text_addn(&t, buf, n);
    int bad = ferror(f);
    *errno_out = bad ? EIO : 0;
    if (f != stdin)
        fclose(f);
    if (bad || t.oom) {
        *errno_out = t.oom ? ENOMEM : EIO;
        plot_text_free(&t);
        return -1;
    }
    if (!t.buf)
        plot_text_addn(&t, "", 0);
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

int plot_read_template(const char *name, char **out, tsim_error *err)
{
    const char *dir = templates_dir();
    size_t need = strlen(dir) + strlen(name) + 8;
    char *path = malloc(need);
    if (!path)
        return plot_oom(err);
    snprintf(path, need, "%s/%s.gp", dir, name);
    size_t len;
    int e = 0;
    if (plot_read_whole(path, out, &len, &e)) {
        tsim_error_set(err, TSIM_E_INPUT, "cannot read the plot template %s: %s (set TAOTSIM_PLOTS_DIR to the plots/ "
                       "directory of the taotsim sources)", path, strerror(e));
        free(path);
        return TSIM_E_INPUT;
    }
    free(path);
    return TSIM_OK;
}

/* The script of a figure: a header, its variables, terminal.gp, its template. */
int plot_build_script(const figure *f, const char *study, const char *command, const char *terminal,
                      text *out, tsim_error *err)
{
    char *tmpl = NULL;
    int rc = plot_read_template(f->tmpl, &tmpl, err);
    if (rc)
        return rc;
    plot_text_add(out, "# taotsim plot: %s, from a '%s' result, made from the template plots/%s.gp.\n", f->name, study,
                  f->tmpl);
    if (command) {
        plot_text_add(out, "# Result of: ");
        size_t n = 0;
        for (const char *p = command; *p && n < 400; p++, n++) {
            char c = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
            plot_text_addn(out, &c, 1);
        }
        plot_text_add(out, "%s\n", strlen(command) > 400 ? "..." : "");
    }
    plot_text_add(out, "# Render in this directory: gnuplot %s.gp (PNG), gnuplot -e 'fmt=\"svg\"' %s.gp (SVG).\n\n",
                  f->name, f->name);
    plot_text_addn(out, f->vars.buf ? f->vars.buf : "", f->vars.len);
    plot_text_add(out, "\n");
    plot_text_add(out, "%s", terminal);
    if (terminal[0] && terminal[strlen(terminal) - 1] != '\n')
        plot_text_add(out, "\n");
    plot_text_add(out, "\n%s", tmpl);
    if (tmpl[0] && tmpl[strlen(tmpl) - 1] != '\n')
        plot_text_add(out, "\n");
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

int plot_mkdir_p(const char *dir, tsim_error *err)
{
    char *p = plot_str_dup(dir);
    if (!p)
        return plot_oom(err);
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
    if (!(w->paths[w->n] = plot_str_dup(path)))
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

int plot_write_file(const char *outdir, const char *name, const text *body, tsim_plot_files *w, tsim_error *err)
{
    char *path = path_join(outdir, name);
    if (!path)
        return plot_oom(err);
    tsim_outfile f;
    int rc = tsim_outfile_open(&f, path, err);
    if (!rc) {
        if (body->len)
            fwrite(body->buf, 1, body->len, f.fp);
        rc = tsim_outfile_commit(&f, err);
    }
    if (!rc && files_push(w, path))
        rc = plot_oom(err);
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
            plot_text_addn(said, buf, (size_t)n);
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
int plot_check_gnuplot(int formats, char *gnuplot, size_t size, tsim_error *err)
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
        plot_text_free(&said);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot start %s: %s (free memory or processes and retry)", gnuplot,
                              strerror(e));
    }
    char first[300];
    first_line(&said, first, sizeof first);
    bool no_terminal = said.buf && strstr(said.buf, "unknown or ambiguous terminal");
    plot_text_free(&said);
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
int plot_render(const char *gnuplot, const char *outdir, const char *figure_name, const char *fmt, FILE *log,
                tsim_plot_files *w, tsim_error *err)
{
    char name[160], script[160];
    snprintf(name, sizeof name, "%s.%s", figure_name, fmt);
    snprintf(script, sizeof script, "%s.gp", figure_name);
    char *path = path_join(outdir, name);
    if (!path)
        return plot_oom(err);
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
    plot_text_free(&said);
    if (rc) {
        tsim_outfile_abort(&f);
    } else {
        rc = tsim_outfile_commit(&f, err);
        if (!rc && files_push(w, path))
            rc = plot_oom(err);
    }
    free(path);
    return rc;
}
