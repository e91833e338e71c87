/* taotsim plot, the figures people look at: a planner keeps one colour and
 * point type across every kind of figure (table1, sweep, scaling, ablation,
 * replay), whatever the other planners and their order; n/a cells are left
 * out; the Table 1 Pareto data file has one row per planner and the front. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "plot_fixture.h"
#include "registry.h"

#define HEAD "\"tool\":\"taotsim\",\"version\":\"test\",\"command\":\"taotsim test\""
/* Every metric any figure reads, with the given rho_after and weighted. */
#define METRICS(rho, rho_std, w, w_std)                                                                                \
    "\"metrics\":{\"rho_after\":{\"mean\":" rho ",\"std\":" rho_std "},\"weighted\":{\"mean\":" w ",\"std\":" w_std  \
    "},\"intra\":{\"mean\":4,\"std\":1},\"inter\":{\"mean\":2,\"std\":0.5}}"
#define NA(planner) "\"planner\":\"" planner "\",\"error\":\"planner '" planner "': cannot run here\""

static cJSON *parse(const char *json)
{
    cJSON *root = cJSON_Parse(json);
    cr_assert_not_null(root, "test JSON does not parse: %s", json);
    return root;
}

/* Data and scripts only: no gnuplot needed. */
static void write_plots(const char *json, const char *dir)
{
    cJSON *root = parse(json);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cJSON_Delete(root);
}

static char *read_in(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tsim_plot_test_slurp(path, NULL);
}

/* The value of `NAME = "..."` in a script, without the quotes (free it);
 * NULL when the script has no such line. */
static char *script_var(const char *script, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s = \"", name);
    const char *at = strstr(script, key);
    if (!at)
        return NULL;
    at += strlen(key);
    const char *end = strchr(at, '"');
    cr_assert_not_null(end);
    char *v = malloc((size_t)(end - at) + 1);
    memcpy(v, at, (size_t)(end - at));
    v[end - at] = '\0';
    return v;
}

/* Styles seen so far, by label, across every figure of every study. */
typedef struct {
    char label[64], colour[16];
    int point;
    int seen;
} style;

static style styles[32];
static size_t nstyles;

static void record_style(const char *figure, const char *label, const char *colour, int point)
{
    for (size_t i = 0; i < nstyles; i++) {
        if (strcmp(styles[i].label, label) == 0) {
            cr_assert_str_eq(colour, styles[i].colour, "%s: %s drawn in %s, elsewhere in %s", figure, label, colour,
                             styles[i].colour);
            cr_assert_eq(point, styles[i].point, "%s: %s drawn with point %d, elsewhere %d", figure, label, point,
                         styles[i].point);
            styles[i].seen++;
            return;
        }
    }
    cr_assert_lt(nstyles, sizeof styles / sizeof styles[0]);
    style *s = &styles[nstyles++];
    snprintf(s->label, sizeof s->label, "%s", label);
    snprintf(s->colour, sizeof s->colour, "%s", colour);
    s->point = point;
    s->seen = 1;
}

static const style *style_of(const char *label)
{
    for (size_t i = 0; i < nstyles; i++)
        if (strcmp(styles[i].label, label) == 0)
            return &styles[i];
    cr_assert_fail("no figure drew %s", label);
    return NULL;
}

/* Reads PLANNERS, COLORS and POINTS of DIR/FIGURE.gp into the style table. */
static void collect(const char *dir, const char *figure)
{
    char name[128];
    snprintf(name, sizeof name, "%s.gp", figure);
    char *script = read_in(dir, name);
    char *planners = script_var(script, "PLANNERS"), *colours = script_var(script, "COLORS"),
         *points = script_var(script, "POINTS");
    cr_assert(planners && colours && points, "%s: PLANNERS, COLORS and POINTS expected", figure);
    char *sp = NULL, *sc = NULL, *sq = NULL;
    char *p = strtok_r(planners, " ", &sp), *c = strtok_r(colours, " ", &sc), *q = strtok_r(points, " ", &sq);
    int n = 0;
    for (; p; p = strtok_r(NULL, " ", &sp), c = strtok_r(NULL, " ", &sc), q = strtok_r(NULL, " ", &sq), n++) {
        cr_assert(c && q, "%s: fewer colours or points than planners", figure);
        cr_assert_eq(strlen(c), 7, "%s: colour '%s' is not #rrggbb", figure, c);
        record_style(figure, p, c, atoi(q));
    }
    cr_assert_null(c, "%s: more colours than planners", figure);
    cr_assert_gt(n, 0);
    free(planners);
    free(colours);
    free(points);
    free(script);
}

Test(plot_style, a_planner_keeps_its_colour_in_every_kind_of_figure)
{
    nstyles = 0;
    char dir[64];
    /* Each study lists the planners in another order and with others beside
     * them; "my planner" (a label with a space) is sanitised to my_planner. */
    tsim_plot_test_tmpdir(dir, sizeof dir);
    write_plots("{" HEAD ",\"study\":\"table1\",\"results\":["
                "{\"ep\":16,\"imbalance\":0.1,\"planner\":\"taot\"," METRICS("0.01", "0", "17", "1") "},"
                "{\"ep\":16,\"imbalance\":0.1,\"planner\":\"echo\"," METRICS("0.02", "0", "24", "1") "},"
                "{\"ep\":16,\"imbalance\":0.1,\"planner\":\"x1\"," METRICS("0.03", "0", "20", "1") "},"
                "{\"ep\":16,\"imbalance\":0.1,\"planner\":\"my planner\"," METRICS("0.04", "0", "21", "1") "}]}",
                dir);
    static const char *const table1_figures[] = {"table1_weighted", "table1_residual", "table1_pareto_ep16_imb10"};
    for (size_t i = 0; i < 3; i++)
        collect(dir, table1_figures[i]);
    tsim_plot_test_remove_dir(dir);

    tsim_plot_test_tmpdir(dir, sizeof dir);
    write_plots("{" HEAD ",\"study\":\"sweep\",\"results\":["
                "{\"lambda_plan\":3,\"lambda_eval\":1,\"planner\":\"my planner\"," METRICS("0", "0", "10", "1") "},"
                "{\"lambda_plan\":3,\"lambda_eval\":1,\"planner\":\"lplb\"," METRICS("0", "0", "12", "1") "},"
                "{\"lambda_plan\":3,\"lambda_eval\":1,\"planner\":\"x1\"," METRICS("0", "0", "11", "1") "},"
                "{\"lambda_plan\":3,\"lambda_eval\":1,\"planner\":\"taot\"," METRICS("0", "0", "9", "1") "}]}",
                dir);
    collect(dir, "sweep_lp3");
    tsim_plot_test_remove_dir(dir);

    tsim_plot_test_tmpdir(dir, sizeof dir);
    write_plots("{" HEAD ",\"study\":\"scaling\",\"results\":["
                "{\"axis\":\"ep\",\"ep\":8,\"planner\":\"llep\"," METRICS("0.01", "0", "10", "1") "},"
                "{\"axis\":\"ep\",\"ep\":8,\"planner\":\"echo\"," METRICS("0.01", "0", "10", "1") "},"
                "{\"axis\":\"ep\",\"ep\":8,\"planner\":\"taot\"," METRICS("0.01", "0", "10", "1") "},"
                "{\"axis\":\"slots\",\"slots\":2,\"planner\":\"taot\"," METRICS("0.01", "0", "10", "1") "}]}",
                dir);
    collect(dir, "scaling_ep_residual");
    collect(dir, "scaling_ep_weighted");
    collect(dir, "scaling_slots_weighted");
    tsim_plot_test_remove_dir(dir);

    tsim_plot_test_tmpdir(dir, sizeof dir);
    write_plots("{" HEAD ",\"study\":\"ablation\",\"results\":["
                "{\"flow_hint\":true,\"comm_cost\":true,\"planner\":\"taot\"," METRICS("0.01", "0", "40", "1") "},"
                "{\"flow_hint\":false,\"comm_cost\":true,\"planner\":\"taot\"," METRICS("0.01", "0", "44", "1") "}]}",
                dir);
    collect(dir, "ablation");
    /* The bars are drawn in the planner's colour: GROUP_RGB per combination. */
    char *script = read_in(dir, "ablation.gp");
    char *rgb = script_var(script, "GROUP_RGB");
    char want[32];
    snprintf(want, sizeof want, "%ld %ld", strtol(style_of("taot")->colour + 1, NULL, 16),
             strtol(style_of("taot")->colour + 1, NULL, 16));
    cr_assert_str_eq(rgb, want);
    free(rgb);
    free(script);
    tsim_plot_test_remove_dir(dir);

    tsim_plot_test_tmpdir(dir, sizeof dir);
    write_plots("{" HEAD ",\"study\":\"replay\",\"results\":["
                "{\"planner\":\"x1\",\"records\":[{\"record\":0,\"rho_before\":0.3,\"rho_after\":0.01}]},"
                "{\"planner\":\"echo\",\"records\":[{\"record\":0,\"rho_before\":0.3,\"rho_after\":0.02}]}]}",
                dir);
    collect(dir, "replay");
    tsim_plot_test_remove_dir(dir);

    /* Shipped planners have their fixed colours; every figure agreed. */
    cr_assert_str_eq(style_of("taot")->colour, "#d55e00");
    cr_assert_str_eq(style_of("echo")->colour, "#0072b2");
    cr_assert_str_eq(style_of("llep")->colour, "#009e73");
    cr_assert_str_eq(style_of("lplb")->colour, "#e69f00");
    cr_assert_eq(style_of("taot")->seen, 8);
    cr_assert_eq(style_of("echo")->seen, 6);
    cr_assert_eq(style_of("x1")->seen, 5);
    cr_assert_eq(style_of("my_planner")->seen, 4);
    /* Other labels: the library's answer, and none of the fixed colours. */
    static const char *const fixed[] = {"#d55e00", "#0072b2", "#009e73", "#e69f00", "#56b4e9",
                                        "#cc79a7", "#000000", "#999999", "#117733", "#aa4499",
                                        "#44aa99", "#ddcc77", "#661100"};
    static const char *const others[] = {"x1", "my_planner"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_str_eq(style_of(others[i])->colour, tsim_plot_planner_colour(others[i]));
        for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
            cr_assert_str_neq(style_of(others[i])->colour, fixed[k], "%s has %s's colour", others[i], fixed[k]);
    }
}

/* The first two of names[0..n) drawn in one colour (a colour alone tells
 * the planners apart in a legend; point types repeat), or false. */
static bool shared_style(const char *const *names, size_t n, size_t *a, size_t *b)
{
    for (*a = 0; *a < n; (*a)++)
        for (*b = 0; *b < *a; (*b)++)
            if (strcmp(tsim_plot_planner_colour(names[*a]), tsim_plot_planner_colour(names[*b])) == 0)
                return true;
    return false;
}

Test(plot_style, every_registered_planner_has_its_own_style)
{
    /* From the registry, so a planner added later is checked too (the test
     * programs also register the test-only planner greedy). */
    const char *names[TSIM_REGISTRY_MAX];
    size_t n = 0;
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        names[n++] = (*d)->name;
    cr_assert_geq(n, 13, "the registry lists %zu planners", n);
    for (size_t i = 0; i < n; i++) {
        int pt = tsim_plot_planner_point(names[i]);
        cr_assert(pt == 5 || pt == 7 || pt == 9 || pt == 11 || pt == 13 || pt == 15,
                  "%s: point %d has no hollow twin at %d", names[i], pt, pt - 1);
    }
    size_t a, b;
    cr_assert_not(shared_style(names, n, &a, &b), "%s and %s share %s", names[a], names[b],
                  tsim_plot_planner_colour(names[a]));
}

Test(plot_style, the_style_check_finds_a_shared_colour)
{
    /* trtllm and ultraep once hashed to one colour: the check must see such
     * a pair. Two hashed labels of one colour stand in for them. */
    char labels[8][16];
    const char *names[8];
    for (size_t i = 0; i < 8; i++) {
        snprintf(labels[i], sizeof labels[i], "planner%zu", i);
        names[i] = labels[i];
    }
    size_t a, b;
    cr_assert(shared_style(names, 8, &a, &b), "8 labels over 6 hashed colours must share one");
    cr_assert_str_eq(tsim_plot_planner_colour(names[a]), tsim_plot_planner_colour(names[b]));
    cr_assert_neq(a, b);
}

Test(plot_style, other_labels_spread_over_the_second_palette)
{
    /* Deterministic, and 40 labels use more than one colour and point. */
    char label[16];
    const char *first = NULL;
    bool other_colour = false, other_point = false;
    int first_point = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(label, sizeof label, "planner%d", i);
        const char *c = tsim_plot_planner_colour(label);
        cr_assert_str_eq(c, tsim_plot_planner_colour(label));
        cr_assert_eq(tsim_plot_planner_point(label), tsim_plot_planner_point(label));
        if (!first) {
            first = c;
            first_point = tsim_plot_planner_point(label);
        }
        other_colour |= strcmp(c, first) != 0;
        other_point |= tsim_plot_planner_point(label) != first_point;
    }
    cr_assert(other_colour && other_point);
}

/* Two Table 1 cells; at EP16 30%: TAOT and ECHO with the paper's values,
 * LLEP (no paper value) dominated by ECHO, a labelled planner x1 cheapest
 * but most imbalanced, LPLB n/a. At EP32 30%: TAOT alone. */
static const char *const pareto_json =
    "{" HEAD ",\"study\":\"table1\",\"results\":["
    "{\"ep\":16,\"imbalance\":0.3,\"key\":\"ep16.imb30\",\"planner\":\"taot\"," METRICS("0.01", "0.002", "18", "1.5")
    ",\"paper\":{\"improve_pp\":-28.7,\"weighted\":18}},"
    "{\"ep\":16,\"imbalance\":0.3,\"key\":\"ep16.imb30\",\"planner\":\"echo\"," METRICS("0.002", "0.001", "24", "2")
    ",\"paper\":{\"improve_pp\":-27.7,\"weighted\":24}},"
    "{\"ep\":16,\"imbalance\":0.3,\"key\":\"ep16.imb30\",\"planner\":\"llep\"," METRICS("0.004", "0", "30", "3") "},"
    "{\"ep\":16,\"imbalance\":0.3,\"key\":\"ep16.imb30\"," NA("lplb") "},"
    "{\"ep\":16,\"imbalance\":0.3,\"key\":\"ep16.imb30\",\"planner\":\"x1\"," METRICS("0.05", "0", "12", "0") "},"
    "{\"ep\":32,\"imbalance\":0.3,\"key\":\"ep32.imb30\",\"planner\":\"taot\"," METRICS("0.02", "0.01", "40", "4")
    ",\"paper\":{\"improve_pp\":-28.4,\"weighted\":37}}]}";

Test(plot_style, pareto_data_per_table1_cell)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = parse(pareto_json);
    tsim_plot_files files;
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, &files, &err), TSIM_OK, "%s", err.msg);
    static const char *const want[] = {"table1.dat",
                                       "table1_pareto_ep16_imb30.dat",
                                       "table1_pareto_ep32_imb30.dat",
                                       "table1_weighted.gp",
                                       "table1_residual.gp",
                                       "table1_pareto_ep16_imb30.gp",
                                       "table1_pareto_ep32_imb30.gp"};
    cr_assert_eq(files.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < files.n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, want[i]);
        cr_assert_str_eq(files.paths[i], path);
    }
    tsim_plot_files_free(&files);
    cJSON_Delete(root);

    /* Residual imbalance in %; the paper's is the initial imbalance plus its
     * improvement: 30 - 28.7 = 1.3 and 30 - 27.7 = 2.3. The front, by
     * residual: ECHO (0.2, 24), TAOT (1, 18), x1 (5, 12); LLEP (0.4, 30) is
     * beaten by ECHO on both. */
    char *got = read_in(dir, "table1_pareto_ep16_imb30.dat");
    cr_assert_str_eq(got,
                     "# taotsim plot: table1 Pareto at EP16, 30% initial imbalance: residual imbalance (%) and "
                     "weighted cost, mean and std; paper: the paper's Table 1 (residual: initial imbalance + its "
                     "improvement pp; NaN: none)\n"
                     "# n/a, not plotted (the result's notes say why): lplb at ep16.imb30\n"
                     "# planner rho_after rho_after_std weighted weighted_std paper_rho_after paper_weighted\n"
                     "\"taot\" 1 0.2 18 1.5 1.3 18\n"
                     "\"echo\" 0.2 0.1 24 2 2.3 24\n"
                     "\"llep\" 0.4 0 30 3 NaN NaN\n"
                     "\"x1\" 5 0 12 0 NaN NaN\n"
                     "\n\n"
                     "# Pareto front of ours: rho_after weighted\n"
                     "0.2 24\n"
                     "1 18\n"
                     "5 12\n");
    free(got);
    char *script = read_in(dir, "table1_pareto_ep16_imb30.gp");
    cr_assert_not_null(strstr(script, "\nPLANNERS = \"taot echo llep x1\"\nNP = 4\n"));
    cr_assert_not_null(strstr(script, "\nPAPER = \"1 2\"\n"), "the paper's points: TAOT and ECHO");
    cr_assert_not_null(strstr(script, "\nDATA = \"table1_pareto_ep16_imb30.dat\"\n"));
    free(script);

    got = read_in(dir, "table1_pareto_ep32_imb30.dat");
    cr_assert_not_null(strstr(got, "\n\"taot\" 2 1 40 4 1.6 37\n\n\n# Pareto front of ours: rho_after weighted\n2 40\n"),
                       "%s", got);
    free(got);
    script = read_in(dir, "table1_pareto_ep32_imb30.gp");
    cr_assert_not_null(strstr(script, "\nPLANNERS = \"taot\"\nNP = 1\n"));
    free(script);

    /* The bar charts leave LPLB out entirely: it never ran. */
    script = read_in(dir, "table1_weighted.gp");
    cr_assert_not_null(strstr(script, "\nPLANNERS = \"taot echo llep x1\"\n"));
    /* Two-level axis: imbalance ticks, EP labels under each run. */
    cr_assert_not_null(strstr(script, "\nGX = \"0 1.6\"\nXTICS = '(\"30%%\" 0, \"30%%\" 1.6)'\n"), "%s", script);
    cr_assert_not_null(strstr(script, "\nOUTER_X = \"0 1.6\"\nOUTER_LABELS = \"EP16 EP32\"\nSEPS = \"0.8\"\n"));
    free(script);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_style, na_cells_are_left_out_of_every_study)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    /* scaling with LPLB n/a at EP4 (no graph) and at K = 1. */
    write_plots("{" HEAD ",\"study\":\"scaling\",\"results\":["
                "{\"axis\":\"ep\",\"ep\":4,\"key\":\"ep4\",\"planner\":\"taot\"," METRICS("0.1", "0", "6", "0") "},"
                "{\"axis\":\"ep\",\"ep\":4,\"key\":\"ep4\"," NA("lplb") "},"
                "{\"axis\":\"ep\",\"ep\":8,\"key\":\"ep8\",\"planner\":\"taot\"," METRICS("0.02", "0", "9", "1") "},"
                "{\"axis\":\"ep\",\"ep\":8,\"key\":\"ep8\",\"planner\":\"lplb\"," METRICS("0.3", "0", "32", "0") "},"
                "{\"axis\":\"slots\",\"slots\":1,\"key\":\"k1\"," NA("lplb") "},"
                "{\"axis\":\"slots\",\"slots\":1,\"key\":\"k1\",\"planner\":\"taot\"," METRICS("0.04", "0", "8", "1")
                "}]}",
                dir);
    char *got = read_in(dir, "scaling_ep.dat");
    cr_assert_str_eq(got, "# taotsim plot: scaling along ep: mean and std; rho_after in %\n"
                          "# n/a, not plotted (the result's notes say why): lplb at ep4, lplb at k1\n"
                          "# ep taot:rho_after taot:rho_after_std taot:weighted taot:weighted_std lplb:rho_after "
                          "lplb:rho_after_std lplb:weighted lplb:weighted_std\n"
                          "4 10 0 6 0 NaN NaN NaN NaN\n"
                          "8 2 0 9 1 30 0 32 0\n");
    free(got);
    /* Along slots only TAOT ran: LPLB is not a curve there. */
    got = read_in(dir, "scaling_slots_residual.gp");
    cr_assert_not_null(strstr(got, "\nPLANNERS = \"taot\"\nNP = 1\n"));
    free(got);
    tsim_plot_test_remove_dir(dir);

    /* A result where nothing ran is an input error, and writes nothing. */
    tsim_plot_test_tmpdir(dir, sizeof dir);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/out", dir);
    cJSON *root = parse("{" HEAD ",\"study\":\"table1\",\"results\":[{\"ep\":16,\"imbalance\":0.1," NA("lplb") "}]}");
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, sub, 0, NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "every result is n/a (has an \"error\"): nothing to plot");
    cr_assert_eq(tsim_plot_test_count_entries(dir), 0);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_style, an_unusable_gnuplot_writes_nothing_and_says_what_to_install)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/out", dir);
    cJSON *root = parse(pareto_json);
    tsim_error err = {0};
    setenv("TAOTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
    cr_assert_eq(tsim_plot_write(root, sub, TSIM_PLOT_PNG, NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_not_null(strstr(err.msg, "gnuplot not found (TAOTSIM_GNUPLOT=/nonexistent/gnuplot"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "apt-get install gnuplot-nox"), "%s", err.msg);
    cr_assert_eq(tsim_plot_check(TSIM_PLOT_PNG, &err), TSIM_E_INPUT);
    /* "false" runs and fails, as a broken gnuplot would. */
    setenv("TAOTSIM_GNUPLOT", "/bin/false", 1);
    cr_assert_eq(tsim_plot_write(root, sub, TSIM_PLOT_BOTH, NULL, NULL, &err), TSIM_E_INPUT);
    cr_assert_not_null(strstr(err.msg, "/bin/false does not work as gnuplot (exit status 1"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "gnuplot-nox"), "%s", err.msg);
    cr_assert_eq(tsim_plot_test_count_entries(dir), 0, "nothing may be written");
    /* Data and scripts alone need no gnuplot. */
    cr_assert_eq(tsim_plot_check(0, &err), TSIM_OK);
    cr_assert_eq(tsim_plot_write(root, sub, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    unsetenv("TAOTSIM_GNUPLOT");
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(sub);
    tsim_plot_test_remove_dir(dir);
}
