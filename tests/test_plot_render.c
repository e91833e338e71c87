/* taotsim plot rendering through gnuplot: PNG and SVG for every study with no
 * warning from the templates, and PNG alone when asked. Every test here needs
 * gnuplot with its pngcairo and svg terminals, so main() checks first: without
 * them it prints "skipped: <why>" and exits 77, which meson counts as a
 * skipped suite, not a passed one. What a missing or failing gnuplot does is
 * tested in test_plot.c, which runs everywhere. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "plot.h"
#include "plot_fixture.h"

static void expect_png(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    char *buf = tsim_plot_test_slurp(path, &len);
    cr_assert(len > 1000, "%s: only %zu bytes", name, len);
    cr_assert(memcmp(buf, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", name);
    free(buf);
}

static void expect_svg(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *buf = tsim_plot_test_slurp(path, NULL);
    cr_assert(strstr(buf, "<svg") != NULL, "%s is not an SVG", name);
    free(buf);
}

static void render_study(const char *json, const char *const *figures, size_t n)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load(json);
    tsim_plot_files files;
    tsim_error err = {0};
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    cr_assert_eq(tsim_plot_write(root, dir, TSIM_PLOT_BOTH, log, &files, &err), TSIM_OK, "%s", err.msg);
    cr_assert(files.rendered);
    /* gnuplot had nothing to say: no warnings from the templates. */
    fflush(log);
    cr_assert_eq(ftell(log), 0L, "gnuplot printed warnings for %s", json);
    fclose(log);
    for (size_t i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.png", figures[i]);
        expect_png(dir, name);
        snprintf(name, sizeof name, "%s.svg", figures[i]);
        expect_svg(dir, name);
    }
    /* Images are listed after the data and scripts, PNG then SVG. */
    char want[4096];
    snprintf(want, sizeof want, "%s/%s.svg", dir, figures[n - 1]);
    cr_assert_str_eq(files.paths[files.n - 1], want);
    tsim_plot_files_free(&files);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_render, replay)
{
    static const char *const figs[] = {"replay"};
    render_study("replay.json", figs, 1);
}

Test(plot_render, replay_summary)
{
    static const char *const figs[] = {"replay_imbalance", "replay_weighted", "replay_intra", "replay_inter",
                                       "replay_offloaded"};
    render_study("replay_summary.json", figs, 5);
}

Test(plot_render, table1)
{
    /* The bar figures, then one Pareto figure per (EP, imbalance) cell. */
    static const char *const figs[] = {"table1_weighted", "table1_residual", "table1_pareto_ep16_imb10",
                                       "table1_pareto_ep16_imb70", "table1_pareto_ep32_imb10"};
    render_study("table1.json", figs, 5);
}

Test(plot_render, ablation)
{
    static const char *const figs[] = {"ablation"};
    render_study("ablation.json", figs, 1);
}

Test(plot_render, sweep)
{
    static const char *const figs[] = {"sweep_lp3", "sweep_lp10"};
    render_study("sweep.json", figs, 2);
}

Test(plot_render, scaling)
{
    static const char *const figs[] = {"scaling_ep_residual",        "scaling_ep_weighted",
                                       "scaling_imbalance_residual", "scaling_imbalance_weighted",
                                       "scaling_slots_residual",     "scaling_slots_weighted"};
    render_study("scaling.json", figs, 6);
}

Test(plot_render, png_only_writes_no_svg)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load("ablation.json");
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_result(root, dir, TSIM_PLOT_PNG, NULL, &err), TSIM_OK, "%s", err.msg);
    expect_png(dir, "ablation.png");
    cr_assert(!tsim_plot_test_exists(dir, "ablation.svg"));
    cr_assert_eq(tsim_plot_test_count_entries(dir), 3);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

/* NULL when the gnuplot that taotsim would run ($TAOTSIM_GNUPLOT, else
 * gnuplot on PATH) draws with pngcairo and svg; else why not. */
static const char *gnuplot_missing(void)
{
    static char why[600];
    FILE *p = popen("g=${TAOTSIM_GNUPLOT:-gnuplot}; "
                    "command -v \"$g\" >/dev/null 2>&1 || { printf %s \"$g\"; exit 127; }; "
                    "\"$g\" -e 'set terminal pngcairo; set terminal svg' </dev/null 2>&1",
                    "r");
    if (!p)
        return "cannot start a shell to look for gnuplot";
    char said[512] = "";
    const size_t n = fread(said, 1, sizeof said - 1, p);
    said[n] = '\0';
    const int st = pclose(p);
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127) {
        snprintf(why, sizeof why, "gnuplot not found (%s)", said);
        return why;
    }
    if (st != 0 || n > 0) {
        /* gnuplot's message is its last line. */
        size_t end = n;
        while (end > 0 && (said[end - 1] == '\n' || said[end - 1] == ' '))
            said[--end] = '\0';
        const char *last = strrchr(said, '\n');
        if (said[0])
            snprintf(why, sizeof why, "gnuplot cannot draw with pngcairo and svg: %s", last ? last + 1 : said);
        else
            snprintf(why, sizeof why, "gnuplot cannot draw with pngcairo and svg (exit status %d, no message)",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return why;
    }
    return NULL;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    /* 0: --help, --version, --list or a bad option, already answered. */
    if (criterion_handle_args(argc, argv, true)) {
        const char *why = gnuplot_missing();
        if (why) {
            printf("skipped: %s\n", why);
            status = 77; /* meson's "skipped" */
        } else {
            status = criterion_run_all_tests(tests) ? 0 : 1;
        }
    }
    criterion_finalize(tests);
    return status;
}
