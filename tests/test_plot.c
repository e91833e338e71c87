/* taotsim plot: the data files of every study, exactly; the scripts' generated
 * variables; a missing or failing gnuplot; malformed results, which must write
 * nothing. Rendering images through gnuplot is test_plot_render.c (skipped as
 * a whole where gnuplot is missing). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "plot_fixture.h"

static void expect_file(const char *dir, const char *name, const char *want)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *got = tsim_plot_test_slurp(path, NULL);
    cr_assert_str_eq(got, want, "%s differs", name);
    free(got);
}

static bool file_contains(const char *dir, const char *name, const char *needle)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *got = tsim_plot_test_slurp(path, NULL);
    bool found = strstr(got, needle) != NULL;
    free(got);
    return found;
}

/* Writes data and scripts only (no gnuplot) and checks the list of files. */
static void write_data(const char *json, const char *dir, const char *const *want_files, size_t n_want)
{
    cJSON *root = tsim_plot_test_load(json);
    tsim_plot_files files;
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, &files, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(files.n, n_want, "%s: %zu files written, expected %zu", json, files.n, n_want);
    for (size_t i = 0; i < n_want; i++) {
        char want[4096];
        snprintf(want, sizeof want, "%s/%s", dir, want_files[i]);
        cr_assert_str_eq(files.paths[i], want);
    }
    cr_assert(!files.rendered);
    cr_assert_eq(tsim_plot_test_count_entries(dir), (int)n_want, "temporary files left behind");
    tsim_plot_files_free(&files);
    cJSON_Delete(root);
}

Test(plot, replay_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    static const char *const files[] = {"replay.dat", "replay.gp"};
    write_data("replay.json", dir, files, 2);
    expect_file(dir, "replay.dat",
                "# taotsim plot: replay: imbalance per record, % ((max load - mean) / mean)\n"
                "# record rho_before taot:rho_after echo:rho_after\n"
                "0 30 1 5\n"
                "1 50 2 4\n"
                "2 25 0 12.5\n");
    cr_assert(file_contains(dir, "replay.gp",
                            "FIGURE = \"replay\"\nDATA = \"replay.dat\"\nTITLE = \"Imbalance per record, before and "
                            "after planning (trace t.json, 3 records)\"\nPLANNERS = \"taot echo\"\nNP = 2\n"));
    /* No planner's line lies on "before planning": its legend entry is plain. */
    cr_assert(file_contains(dir, "replay.gp", "\nBEFORE_TITLE = \"before planning\"\n"));
    cr_assert(file_contains(dir, "replay.gp", "# Result of: taotsim replay traces/t.json --per-record --format json\n"));
    /* The terminal settings and the template follow the variables. */
    cr_assert(file_contains(dir, "replay.gp", "set terminal pngcairo"));
    cr_assert(file_contains(dir, "replay.gp", "set ylabel \"imbalance (max load - mean) / mean (%)\""));
    tsim_plot_test_remove_dir(dir);
}

/* An ordinary replay result (no --per-record) was refused ("needs per-record
 * values"); it draws what its summaries hold: per metric, a candlestick per
 * planner (min, p50, p95, max, mean), the imbalance with "before planning"
 * first; the n/a planner is named and left out. */
/* A planner that moves nothing (echo here, as FasterMoE on the bundled
 * traces) draws exactly the "before planning" line: the legend names it, and
 * the template draws "before planning" last, dashed, so both stay visible. */
Test(plot, replay_before_line_names_identical_planners)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load("replay.json");
    const cJSON *recs = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "results"), 1), "records");
    const cJSON *r;
    cJSON_ArrayForEach(r, recs)
    {
        double before = cJSON_GetObjectItem(r, "rho_before")->valuedouble;
        cJSON_SetNumberValue(cJSON_GetObjectItem(r, "rho_after"), before);
    }
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert(file_contains(dir, "replay.gp", "\nBEFORE_TITLE = \"before planning (= echo)\"\n"));
    cr_assert(file_contains(dir, "replay.gp", "title BEFORE_TITLE"));
    cr_assert(file_contains(dir, "replay.gp", "lw 2.5 dt (8, 6) lc rgb \"black\" title BEFORE_TITLE\n"));
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot, replay_summary_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    static const char *const files[] = {"replay_imbalance.dat", "replay_weighted.dat", "replay_intra.dat",
                                        "replay_inter.dat",     "replay_offloaded.dat", "replay_imbalance.gp",
                                        "replay_weighted.gp",   "replay_intra.gp",      "replay_inter.gp",
                                        "replay_offloaded.gp"};
    write_data("replay_summary.json", dir, files, 10);
    expect_file(dir, "replay_imbalance.dat",
                "# taotsim plot: replay: rho_after per planner, over the records (x label colour min p50 p95 max "
                "mean)\n"
                "# n/a, not plotted (the result's notes say why): lplb\n"
                "0 \"before planning\" 10066329 25 50 75 100 50\n"
                "1 \"taot\" 13983232 0 6.25 12.5 25 9.375\n"
                "2 \"echo\" 29362 0 0 3.125 6.25 1.5625\n");
    expect_file(dir, "replay_offloaded.dat",
                "# taotsim plot: replay: offloaded per planner, over the records (x label colour min p50 p95 max "
                "mean)\n"
                "# n/a, not plotted (the result's notes say why): lplb\n"
                "0 \"taot\" 13983232 10 20 40 50 25\n"
                "1 \"echo\" 29362 20 30 50 60 35\n");
    cr_assert(file_contains(dir, "replay_weighted.gp",
                            "FIGURE = \"replay_weighted\"\nDATA = \"replay_weighted.dat\"\nTITLE = \"Weighted cost "
                            "over the records (trace t.json, K = 2; box: median to p95, whiskers: min to max, point: "
                            "mean)\"\nYLABEL = "
                            "\"weighted cost per record (intra + λ_eval × inter transfers)\"\nNB = 2\n"));
    cr_assert(file_contains(dir, "replay_imbalance.gp", "NB = 3\n"));
    cr_assert(file_contains(dir, "replay_imbalance.gp", "with candlesticks"));
    tsim_plot_test_remove_dir(dir);
}

Test(plot, replay_records_after_the_record_count)
{
    /* replay writes "records" twice with --per-record: the count, then the
     * array; the array is the one to plot. */
    cJSON *root = cJSON_Parse("{\"tool\":\"taotsim\",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\","
                              "\"records\":2,\"records\":[{\"record\":4,\"rho_before\":0.5,\"rho_after\":0.25},"
                              "{\"record\":5,\"rho_before\":0.125,\"rho_after\":0}]}]}");
    cr_assert_not_null(root);
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    expect_file(dir, "replay.dat",
                "# taotsim plot: replay: imbalance per record, % ((max load - mean) / mean)\n"
                "# record rho_before taot:rho_after\n"
                "4 50 25\n"
                "5 12.5 0\n");
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot, table1_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    /* Data files first, then the scripts: the two bar figures, then one
     * Pareto figure per (EP, imbalance) cell in the result's order. */
    static const char *const files[] = {
        "table1.dat",         "table1_pareto_ep16_imb10.dat", "table1_pareto_ep16_imb70.dat",
        "table1_pareto_ep32_imb10.dat", "table1_weighted.gp", "table1_residual.gp",
        "table1_pareto_ep16_imb10.gp",  "table1_pareto_ep16_imb70.gp", "table1_pareto_ep32_imb10.gp"};
    write_data("table1.json", dir, files, 9);
    expect_file(dir, "table1.dat",
                "# taotsim plot: table1: mean and std; imbalance and rho_after in %; paper: the "
                "paper's Table 1 (NaN: none)\n"
                "# group ep imbalance taot:weighted taot:weighted_std taot:rho_after taot:rho_after_std "
                "taot:paper_weighted taot:paper_rho_after echo:weighted echo:weighted_std echo:rho_after "
                "echo:rho_after_std echo:paper_weighted echo:paper_rho_after\n"
                "\"EP16 10%\" 16 10 17.25 1.5 0.6 0.2 17 0.6 24 2 1.1 0.3 24 0.6\n"
                "\"EP16 70%\" 16 70 27 2.5 2.6 0.4 27 1.1 42 3 2.1 0.5 NaN NaN\n"
                "\"EP32 10%\" 32 10 38 3 1.6 0.2 38 0.5 NaN NaN NaN NaN NaN NaN\n");
    /* Both bar figures share the planners' styles (taot and echo keep their
     * colours everywhere) and the two-level axis: EP16's two groups, a 0.6
     * gap, EP32's one. Both mark the paper's values: the residual chart its
     * residual imbalance (initial imbalance + improvement), column 5. */
    static const char axis[] = "PLANNERS = \"taot echo\"\nNP = 2\n"
                               "COLORS = \"#d55e00 #0072b2\"\nPOINTS = \"7 5\"\n"
                               "NG = 3\nGX = \"0 1 2.6\"\n"
                               "XTICS = '(\"10%%\" 0, \"70%%\" 1, \"10%%\" 2.6)'\nXMIN = -0.6\nXMAX = 3.2\n"
                               "OUTER_X = \"0.5 2.6\"\nOUTER_LABELS = \"EP16 EP32\"\nSEPS = \"1.8\"\n";
    char want[1024];
    snprintf(want, sizeof want, "DATA = \"table1.dat\"\nTITLE = \"Table 1: weighted communication cost (mean ± std)\"\n%s"
             "PAPER = \"1 2\"\n\n", axis);
    cr_assert(file_contains(dir, "table1_weighted.gp", want));
    snprintf(want, sizeof want, "DATA = \"table1.dat\"\nTITLE = \"Table 1: residual imbalance after planning (mean ± "
             "std)\"\n%sPAPER = \"1 2\"\n\n", axis);
    cr_assert(file_contains(dir, "table1_residual.gp", want));
    cr_assert(file_contains(dir, "table1_residual.gp", "(column(C(int(word(PAPER, k)), 5))) with points pt 13"));

    /* Pareto cells. The paper's residual is the initial imbalance plus its
     * improvement: 10 - 9.4 = 0.6, 70 - 68.9 = 1.1, 10 - 9.5 = 0.5. At EP16
     * 10% taot is better on both axes, so the front is taot alone; at 70%
     * echo is less imbalanced (2.1 < 2.6) but costlier (42 > 27): both,
     * by residual imbalance. echo has no EP32 result, so it is left out
     * there, and the styles follow the planners that remain. */
    static const char head[] =
        "# taotsim plot: table1 Pareto at EP%s, %s%% initial imbalance: residual imbalance (%%) and weighted cost, "
        "mean and std; paper: the paper's Table 1 (residual: initial imbalance + its improvement pp; NaN: none)\n"
        "# planner rho_after rho_after_std weighted weighted_std paper_rho_after paper_weighted\n";
    char h[512];
    snprintf(h, sizeof h, head, "16", "10");
    snprintf(want, sizeof want, "%s\"taot\" 0.6 0.2 17.25 1.5 0.6 17\n\"echo\" 1.1 0.3 24 2 0.6 24\n\n\n"
             "# Pareto front of ours: rho_after weighted\n0.6 17.25\n", h);
    expect_file(dir, "table1_pareto_ep16_imb10.dat", want);
    snprintf(h, sizeof h, head, "16", "70");
    snprintf(want, sizeof want, "%s\"taot\" 2.6 0.4 27 2.5 1.1 27\n\"echo\" 2.1 0.5 42 3 NaN NaN\n\n\n"
             "# Pareto front of ours: rho_after weighted\n2.1 42\n2.6 27\n", h);
    expect_file(dir, "table1_pareto_ep16_imb70.dat", want);
    snprintf(h, sizeof h, head, "32", "10");
    snprintf(want, sizeof want, "%s\"taot\" 1.6 0.2 38 3 0.5 38\n\n\n"
             "# Pareto front of ours: rho_after weighted\n1.6 38\n", h);
    expect_file(dir, "table1_pareto_ep32_imb10.dat", want);
    cr_assert(file_contains(dir, "table1_pareto_ep16_imb10.gp",
                            "FIGURE = \"table1_pareto_ep16_imb10\"\nDATA = \"table1_pareto_ep16_imb10.dat\"\n"
                            "TITLE = \"Table 1, EP16 at 10% initial imbalance: residual imbalance vs weighted cost\"\n"
                            "PLANNERS = \"taot echo\"\nNP = 2\nCOLORS = \"#d55e00 #0072b2\"\nPOINTS = \"7 5\"\n"
                            "PAPER = \"1 2\"\n\n"));
    cr_assert(file_contains(dir, "table1_pareto_ep16_imb70.gp",
                            "PLANNERS = \"taot echo\"\nNP = 2\nCOLORS = \"#d55e00 #0072b2\"\nPOINTS = \"7 5\"\n"
                            "PAPER = \"1\"\n\n"));
    cr_assert(file_contains(dir, "table1_pareto_ep32_imb10.gp",
                            "TITLE = \"Table 1, EP32 at 10% initial imbalance: residual imbalance vs weighted cost\"\n"
                            "PLANNERS = \"taot\"\nNP = 1\nCOLORS = \"#d55e00\"\nPOINTS = \"7\"\nPAPER = \"1\"\n\n"));
    tsim_plot_test_remove_dir(dir);
}

Test(plot, ablation_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    static const char *const files[] = {"ablation.dat", "ablation.gp"};
    write_data("ablation.json", dir, files, 2);
    expect_file(dir, "ablation.dat",
                "# taotsim plot: ablation: expert transfers per record, mean and std; paper: the "
                "paper's Table 2 (NaN: none)\n"
                "# group flow_hint comm_cost intra intra_std paper_intra inter inter_std paper_inter weighted "
                "weighted_std paper_weighted\n"
                "\"flow hint off, comm cost off\" 0 0 4.5 1.5 4.67 18 1 18.33 58.5 2 59.67\n"
                "\"flow hint off, comm cost on\" 0 1 14 1 14.67 10 1.5 10 44 3 44.67\n"
                "\"flow hint on, comm cost on\" 1 1 15 0.5 NaN 9.5 1 NaN 43.5 2 NaN\n");
    cr_assert(file_contains(dir, "ablation.gp",
                            "NG = 3\nXTICS = '(\"flow hint off\\ncomm cost off\" 0, \"flow hint off\\ncomm cost on\" "
                            "1, \"flow hint on\\ncomm cost on\" 2)'\nPAPER = \"1 2 3\"\n"));
    tsim_plot_test_remove_dir(dir);
}

Test(plot, ablation_with_several_planners_names_them)
{
    cJSON *root = tsim_plot_test_load("ablation.json");
    cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    cJSON *copy = cJSON_Duplicate(cJSON_GetArrayItem(results, 2), 1);
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "planner", cJSON_CreateString("taot split"));
    cJSON_AddItemToArray(results, copy);
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    /* The space in the label becomes '_': labels go into gnuplot word lists. */
    cr_assert(file_contains(dir, "ablation.dat", "\n\"taot: flow hint on, comm cost on\" 1 1 15 0.5 NaN"));
    cr_assert(file_contains(dir, "ablation.dat", "\n\"taot_split: flow hint on, comm cost on\" 1 1 15 0.5 NaN"));
    cr_assert(file_contains(dir, "ablation.gp", "\"taot:\\nflow hint off\\ncomm cost off\" 0, "));
    cr_assert(file_contains(dir, "ablation.gp", ", \"taot_split:\\nflow hint on\\ncomm cost on\" 3)'\n"));
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

/* Figures name where their numbers come from: table1 on a regime says which
 * regime, on the bundled traces says so; the guest slots are K. */
static void table1_titles(cJSON *params, const char *ctx)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load("table1.json");
    cJSON_AddItemToObject(root, "params", params);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    char want[512];
    snprintf(want, sizeof want, "TITLE = \"Table 1 (%s): weighted communication cost (mean ± std)\"\n", ctx);
    cr_assert(file_contains(dir, "table1_weighted.gp", want), "no %s", want);
    snprintf(want, sizeof want, "TITLE = \"Table 1 (%s): residual imbalance after planning (mean ± std)\"\n", ctx);
    cr_assert(file_contains(dir, "table1_residual.gp", want), "no %s", want);
    snprintf(want, sizeof want,
             "TITLE = \"Table 1 (%s), EP16 at 10%% initial imbalance: residual imbalance vs weighted cost\"\n", ctx);
    cr_assert(file_contains(dir, "table1_pareto_ep16_imb10.gp", want), "no %s", want);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot, table1_titles_name_the_regime_or_traces)
{
    cJSON *p = cJSON_Parse("{\"slots\": 2, \"regime\": {\"name\": \"paper\"}, \"ranks_per_node\": 8}");
    table1_titles(p, "regime paper, K = 2");
    table1_titles(cJSON_Parse("{\"slots\": 4, \"traces\": \"/usr/share/taotsim/traces\"}"), "bundled traces, K = 4");
    table1_titles(cJSON_Parse("{\"slots\": 2, \"traces\": \"mine/q3\"}"), "traces in q3, K = 2");
}

/* The sweep figure names its trace (the file name) and K. */
Test(plot, sweep_title_names_the_trace)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load("sweep.json");
    cJSON_AddItemToObject(root, "params", cJSON_Parse("{\"slots\": 2, \"trace\": \"/data/runs/ep32-imb50.jsonl.gz\"}"));
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert(file_contains(dir, "sweep_lp3.gp",
                            "TITLE = \"Weighted cost vs λ_eval at λ_plan = 3 (trace ep32-imb50.jsonl.gz, K = 2; mean ± "
                            "std)\"\n"));
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot, sweep_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    static const char *const files[] = {"sweep_lp3.dat", "sweep_lp10.dat", "sweep_lp3.gp", "sweep_lp10.gp"};
    write_data("sweep.json", dir, files, 4);
    expect_file(dir, "sweep_lp3.dat",
                "# taotsim plot: sweep at lambda_plan = 3: weighted cost per record, mean and std\n"
                "# break-even lambda* (equal weighted cost): taot/lplb 3.83, taot/echo 12.5\n"
                "# lambda_eval taot:weighted taot:weighted_std lplb:weighted lplb:weighted_std\n"
                "1 13 1 32 0\n"
                "3 17 1.5 32 0\n"
                "10 31 2 32 0\n");
    expect_file(dir, "sweep_lp10.dat",
                "# taotsim plot: sweep at lambda_plan = 10: weighted cost per record, mean and std\n"
                "# break-even lambda* (equal weighted cost): taot/lplb none\n"
                "# lambda_eval taot:weighted taot:weighted_std\n"
                "1 20 1\n"
                "3 22 1\n"
                "10 27 2\n");
    /* Only lambda* inside the plotted lambda_eval range is marked. */
    cr_assert(file_contains(dir, "sweep_lp3.gp",
                            "PLANNERS = \"taot lplb\"\nNP = 2\nBE_X1 = 3.83\nBE_LABEL1 = \"λ* taot/lplb = 3.83\"\n"
                            "NBE = 1\n"));
    cr_assert(file_contains(dir, "sweep_lp10.gp", "PLANNERS = \"taot\"\nNP = 1\nNBE = 0\n"));
    tsim_plot_test_remove_dir(dir);
}

Test(plot, scaling_data)
{
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    static const char *const files[] = {
        "scaling_ep.dat",           "scaling_imbalance.dat",          "scaling_slots.dat",
        "scaling_ep_residual.gp",   "scaling_ep_weighted.gp",         "scaling_imbalance_residual.gp",
        "scaling_imbalance_weighted.gp", "scaling_slots_residual.gp", "scaling_slots_weighted.gp"};
    write_data("scaling.json", dir, files, 9);
    expect_file(dir, "scaling_ep.dat",
                "# taotsim plot: scaling along ep: mean and std; rho_after in %\n"
                "# ep taot:rho_after taot:rho_after_std taot:weighted taot:weighted_std echo:rho_after "
                "echo:rho_after_std echo:weighted echo:weighted_std\n"
                "4 0.5 0.1 6 0.5 0.8 0.2 9 1\n"
                "8 1 0.2 10 1 NaN NaN NaN NaN\n"
                "16 2 0.3 17 1.5 3 0.4 24 2\n");
    expect_file(dir, "scaling_imbalance.dat",
                "# taotsim plot: scaling along imbalance: mean and std; imbalance and rho_after in %\n"
                "# imbalance taot:rho_after taot:rho_after_std taot:weighted taot:weighted_std\n"
                "30 1.2 0.2 15 1\n"
                "50 1.8 0.3 18 1.2\n");
    expect_file(dir, "scaling_slots.dat",
                "# taotsim plot: scaling along slots: mean and std; rho_after in %\n"
                "# slots taot:rho_after taot:rho_after_std taot:weighted taot:weighted_std echo:rho_after "
                "echo:rho_after_std echo:weighted echo:weighted_std\n"
                "1 4 1 12 1 5 1 20 2\n"
                "2 2 0.5 17 1.5 3 1 24 2\n");
    cr_assert(file_contains(dir, "scaling_ep_weighted.gp",
                            "DATA = \"scaling_ep.dat\"\nTITLE = \"Weighted communication cost vs EP size (mean ± "
                            "std)\"\nXLABEL = \"EP size (ranks)\"\nLOGX = 1\nPLANNERS = \"taot echo\"\n"));
    cr_assert(file_contains(dir, "scaling_imbalance_residual.gp",
                            "XLABEL = \"initial imbalance (%)\"\nLOGX = 0\nPLANNERS = \"taot\"\nNP = 1\n"));
    tsim_plot_test_remove_dir(dir);
}

/* ---------- without gnuplot ---------- */

/* What to do, the end of every message about an unusable gnuplot. */
#define FIX                                                                                                        \
    "install gnuplot with its cairo terminals (Debian and Ubuntu: apt-get install gnuplot-nox) or set "            \
    "TAOTSIM_GNUPLOT to one; `taotsim plot RESULT.json --format none` writes the data and scripts without it"

/* gnuplot is checked before anything is written: an unusable one is a
 * problem of the machine (TSIM_E_INPUT), the output directory is not even
 * created, nothing is listed and nothing is logged. */
static void expect_unusable_gnuplot(const char *json, int formats, const char *want_msg)
{
    char dir[64], out[128];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/figures", dir);
    cJSON *root = tsim_plot_test_load(json);
    tsim_plot_files files;
    tsim_error err = {0};
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    cr_assert_eq(tsim_plot_write(root, out, formats, log, &files, &err), TSIM_E_INPUT, "%s", err.msg);
    cr_assert_str_eq(err.msg, want_msg);
    cr_assert_eq(files.n, 0);
    cr_assert(!files.rendered);
    cr_assert_eq(tsim_plot_test_count_entries(dir), 0, "%s: something was written", json);
    fflush(log);
    cr_assert_eq(ftell(log), 0L);
    fclose(log);
    /* The same through the study commands' entry point, into an existing directory. */
    cr_assert_eq(tsim_plot_result(root, dir, formats, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, want_msg);
    cr_assert_eq(tsim_plot_test_count_entries(dir), 0);
    tsim_plot_files_free(&files);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_no_gnuplot, missing_gnuplot_writes_nothing_and_says_what_to_install)
{
    setenv("TAOTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
    expect_unusable_gnuplot("table1.json", TSIM_PLOT_BOTH,
                            "gnuplot not found (TAOTSIM_GNUPLOT=/nonexistent/gnuplot is not an executable file): " FIX);
    /* A directory is not an executable file either. */
    setenv("TAOTSIM_GNUPLOT", "/tmp", 1);
    expect_unusable_gnuplot("replay.json", TSIM_PLOT_PNG,
                            "gnuplot not found (TAOTSIM_GNUPLOT=/tmp is not an executable file): " FIX);
}

Test(plot_no_gnuplot, missing_gnuplot_on_path)
{
    unsetenv("TAOTSIM_GNUPLOT");
    setenv("PATH", "/nonexistent", 1);
    expect_unusable_gnuplot("ablation.json", TSIM_PLOT_PNG, "gnuplot not found on PATH: " FIX);
}

Test(plot_no_gnuplot, without_images_gnuplot_is_not_needed)
{
    setenv("TAOTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    cJSON *root = tsim_plot_test_load("ablation.json");
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_result(root, dir, 0, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert(tsim_plot_test_exists(dir, "ablation.dat") && tsim_plot_test_exists(dir, "ablation.gp"));
    cr_assert_eq(tsim_plot_test_count_entries(dir), 2);
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_no_gnuplot, a_failing_gnuplot_is_refused_before_anything_is_written)
{
    /* "false" runs and fails the terminal check, as a broken gnuplot would:
     * exit status 1 and not a word. */
    setenv("TAOTSIM_GNUPLOT", "/bin/false", 1);
    expect_unusable_gnuplot("ablation.json", TSIM_PLOT_PNG,
                            "/bin/false does not work as gnuplot (exit status 1: no message): " FIX);
}

/* ---------- bad input ---------- */

/* Parses json, expects TSIM_E_INPUT with msg, and nothing created. */
static void expect_bad(const char *json, const char *want_msg)
{
    cJSON *root = cJSON_Parse(json);
    cr_assert_not_null(root, "test JSON does not parse: %s", json);
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    char out[128];
    snprintf(out, sizeof out, "%s/out", dir);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write_named(root, "r.json", out, TSIM_PLOT_PNG, NULL, NULL, &err), TSIM_E_INPUT,
                 "accepted: %s", json);
    cr_assert_str_eq(err.msg, want_msg);
    cr_assert(!tsim_plot_test_exists(dir, "out"), "output directory created for bad input");
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

#define HEAD "\"tool\":\"taotsim\",\"version\":\"0\",\"command\":\"taotsim x\""
#define M(name, v) "\"" name "\":{\"mean\":" #v ",\"std\":0}"

Test(plot_bad, not_a_result)
{
    expect_bad("[1, 2]", "r.json: not a result file: expected a JSON object");
    expect_bad("{\"tool\":\"other\",\"study\":\"table1\",\"results\":[]}",
               "r.json: not a taotsim result file (no \"tool\": \"taotsim\")");
    expect_bad("{" HEAD ",\"study\":\"heatmap\",\"results\":[{}]}",
               "r.json: unknown study 'heatmap' (expected replay, table1, ablation, sweep or scaling)");
    expect_bad("{" HEAD ",\"results\":[{}]}",
               "r.json: missing \"study\" (replay, table1, ablation, sweep or scaling)");
    expect_bad("{" HEAD ",\"study\":\"table1\"}", "r.json: missing \"results\" (an array)");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":{}}", "r.json: \"results\" is not an array");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[]}", "r.json: \"results\" is empty: nothing to plot");
    expect_bad("{" HEAD ",\"study\":7,\"results\":[{}]}", "r.json: \"study\" is not a string");
}

Test(plot_bad, missing_fields)
{
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[3]}", "r.json: results[0]: not an object");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"ep\":16}]}",
               "r.json: results[0]: missing \"planner\" (a string)");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":16}]}",
               "r.json: results[0]: missing \"imbalance\" (a number)");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":\"16\",\"imbalance\":0.1}]}",
               "r.json: results[0]: \"ep\" is not a number");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1}]}",
               "r.json: results[0]: missing \"metrics\" (an object)");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1,"
               "\"metrics\":{" M("rho_after", 0.01) "}}]}",
               "r.json: results[0].metrics: missing \"weighted\" (an object with \"mean\" and \"std\")");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1,"
               "\"metrics\":{\"weighted\":{\"std\":1}," M("rho_after", 0.01) "}}]}",
               "r.json: results[0].metrics.weighted: missing \"mean\" (a number)");
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":[{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1,"
               "\"metrics\":{" M("weighted", 17) "," M("rho_after", 0.01) "},\"paper\":{\"weighted\":\"17\"}}]}",
               "r.json: results[0].paper: \"weighted\" is neither a number nor {\"mean\": ...}");
    expect_bad("{" HEAD ",\"study\":\"ablation\",\"results\":[{\"planner\":\"taot\",\"flow_hint\":1,"
               "\"comm_cost\":true}]}",
               "r.json: results[0]: \"flow_hint\" is not true or false");
    expect_bad("{" HEAD ",\"study\":\"scaling\",\"results\":[{\"planner\":\"taot\",\"axis\":\"tokens\"}]}",
               "r.json: results[0]: unknown \"axis\" 'tokens' (expected ep, imbalance or slots)");
    expect_bad("{" HEAD ",\"study\":\"scaling\",\"results\":[{\"planner\":\"taot\",\"axis\":\"slots\",\"ep\":4}]}",
               "r.json: results[0]: missing \"slots\" (a number)");
    expect_bad("{" HEAD ",\"study\":\"sweep\",\"results\":[{\"planner\":\"taot\",\"lambda_plan\":3,"
               "\"lambda_eval\":3,\"metrics\":{" M("weighted", 17) "}}],\"break_even\":[{\"a\":\"taot\","
               "\"b\":\"lplb\"}]}",
               "r.json: break_even[0]: missing \"lambda_star\" (a number or null)");
}

Test(plot_bad, replay_needs_records_or_summaries)
{
    /* Without --per-record "records" is only the count: the summary figures,
     * which need every statistic. */
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"metrics\":{}}]}",
               "r.json: results[0].metrics: missing \"rho_before\" (an object with \"min\", \"p50\", \"p95\", "
               "\"max\" and \"mean\")");
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"records\":3}]}",
               "r.json: results[0]: missing \"metrics\" (an object)");
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"metrics\":{\"rho_before\":"
               "{\"min\":0,\"p50\":0,\"p95\":0,\"max\":0,\"mean\":0},\"rho_after\":{\"min\":0,\"p50\":0,"
               "\"max\":0,\"mean\":0}}}]}",
               "r.json: results[0].metrics.rho_after: missing \"p95\" (a number)");
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"error\":\"no\"}]}",
               "r.json: every result is n/a (has an \"error\"): nothing to plot");
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"records\":[{\"record\":0,"
               "\"rho_before\":0.3,\"rho_after\":0.1}]},{\"planner\":\"echo\",\"records\":[]}]}",
               "r.json: results[1]: \"records\" is empty");
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\",\"records\":[{\"record\":0,"
               "\"rho_before\":0.3}]}]}",
               "r.json: results[0].records[0]: missing \"rho_after\" (a number)");
}

Test(plot_bad, duplicates)
{
    expect_bad("{" HEAD ",\"study\":\"table1\",\"results\":["
               "{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1,\"metrics\":{" M("weighted", 1) "," M("rho_after", 0) "}},"
               "{\"planner\":\"echo\",\"ep\":16,\"imbalance\":0.1,\"metrics\":{" M("weighted", 1) "," M("rho_after", 0) "}},"
               "{\"planner\":\"taot\",\"ep\":16,\"imbalance\":0.1,\"metrics\":{" M("weighted", 2) "," M("rho_after", 0) "}}]}",
               "r.json: results[2]: a second result for planner 'taot' with the same ep and imbalance as results[0]");
#define REC "\"records\":[{\"record\":0,\"rho_before\":0.3,\"rho_after\":0.1}]"
    expect_bad("{" HEAD ",\"study\":\"replay\",\"results\":[{\"planner\":\"taot\"," REC "},"
               "{\"planner\":\"taot\"," REC "}]}",
               "r.json: results[1]: planner 'taot' appears twice");
}

Test(plot_bad, study_from_the_command_when_the_field_is_missing)
{
    /* Results written before "study" existed: the subcommand names it. */
    cJSON *root = tsim_plot_test_load("ablation.json");
    cJSON_DeleteItemFromObjectCaseSensitive(root, "study");
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_write(root, dir, 0, NULL, NULL, &err), TSIM_OK, "%s", err.msg);
    cr_assert(tsim_plot_test_exists(dir, "ablation.dat"));
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_bad, missing_templates_write_nothing)
{
    setenv("TAOTSIM_PLOTS_DIR", "/nonexistent/plots", 1);
    char dir[64];
    tsim_plot_test_tmpdir(dir, sizeof dir);
    char out[128];
    snprintf(out, sizeof out, "%s/out", dir);
    cJSON *root = tsim_plot_test_load("table1.json");
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_result(root, out, TSIM_PLOT_PNG, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "cannot read the plot template /nonexistent/plots/terminal.gp: No such file or "
                              "directory (set TAOTSIM_PLOTS_DIR to the plots/ directory of the taotsim sources)");
    cr_assert(!tsim_plot_test_exists(dir, "out"));
    cJSON_Delete(root);
    tsim_plot_test_remove_dir(dir);
}

Test(plot_bad, read_json_errors)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/plot/not_json.json", tsim_plot_test_root());
    cJSON *root = (cJSON *)&root;
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_read_json(path, &root, &err), TSIM_E_INPUT);
    cr_assert_null(root);
    char want[4200];
    snprintf(want, sizeof want, "%s:5:15: malformed JSON near \",}\"", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(tsim_plot_read_json("/nonexistent.json", &root, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "/nonexistent.json: cannot read: No such file or directory");
}

Test(plot_bad, formats)
{
    int f = -1;
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_formats_parse("both", &f, &err), TSIM_OK);
    cr_assert_eq(f, TSIM_PLOT_PNG | TSIM_PLOT_SVG);
    cr_assert_eq(tsim_plot_formats_parse("none", &f, &err), TSIM_OK);
    cr_assert_eq(f, 0);
    cr_assert_eq(tsim_plot_formats_parse("pdf", &f, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--format: expected png, svg, both or none, got 'pdf'");
}
