/* Studies: paper figures, break-even lambda, --fail-if lookups over study
 * rows, and determinism of the parallel grid (-j 1 vs -j 2). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "evaluate.h"
#include "experiments.h"
#include "study_print.h"
#include "failif.h"
#include "grid.h"
#include "paper.h"
#include "study.h"

Test(paper, break_even_on_the_papers_own_numbers)
{
    tsim_paper_cell taot, lplb;
    cr_assert(tsim_paper_table1(16, 0.7, "taot", &taot));
    cr_assert(tsim_paper_table1(16, 0.7, "lplb", &lplb));
    double ls;
    cr_assert_eq(tsim_break_even(taot.intra, taot.inter, lplb.intra, lplb.inter, &ls), 0);
    cr_assert_float_eq(ls, 3.83, 0.005, "EP16 70%%: lambda* = %.4f", ls);
    /* every cell of the paper satisfies weighted = intra + 3 inter */
    const char *m[4] = {"echo", "llep", "lplb", "taot"};
    const int eps[2] = {16, 32};
    const double imb[5] = {0.1, 0.2, 0.3, 0.5, 0.7};
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 5; i++)
            for (int k = 0; k < 4; k++) {
                tsim_paper_cell c;
                cr_assert(tsim_paper_table1(eps[e], imb[i], m[k], &c));
                cr_assert_float_eq(c.weighted, c.intra + 3 * c.inter, 1e-9, "%d %g %s", eps[e], imb[i], m[k]);
            }
    tsim_paper_ablation a;
    cr_assert(!tsim_paper_table2(true, false, &a), "the paper leaves out flow on / comm off");
    double s;
    cr_assert(tsim_paper_speedup("ep", 16, &s));
    cr_assert_float_eq(s, 1.79, 1e-12);
    cr_assert(!tsim_paper_speedup("ep", 64, &s));
}

static tsim_study two_row_study(void)
{
    tsim_study st;
    tsim_study_init(&st, "table1");
    const char *keys[2] = {"ep16.imb70", "ep32.imb70"};
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < 2; p++) {
            tsim_study_row *r = tsim_study_add(&st);
            snprintf(r->key, sizeof r->key, "%s", keys[i]);
            snprintf(r->planner, sizeof r->planner, "%s", p ? "echo" : "taot");
            r->ok = true;
            for (int m = 0; m < TSIM_M_COUNT; m++)
                r->metric_on[m] = m != TSIM_M_PLAN_NS;
            r->metrics[TSIM_M_WEIGHTED].mean = 10.0 * (i + 1) + p; /* taot 10, 20; echo 11, 21 */
            r->metrics[TSIM_M_RHO_AFTER].p95 = 0.01 * (i + 1);
        }
    return st;
}

Test(study, lookup_names)
{
    tsim_study st = two_row_study();
    double v;
    cr_assert_eq(tsim_study_lookup(&st, "ep16.imb70.taot.weighted.mean", &v), 0);
    cr_assert_eq(v, 10);
    cr_assert_eq(tsim_study_lookup(&st, "ep32.imb70.echo.weighted.mean", &v), 0);
    cr_assert_eq(v, 21);
    cr_assert_eq(tsim_study_lookup(&st, "taot.weighted.mean", &v), 0);
    cr_assert_eq(v, 15, "mean over cells");
    cr_assert_eq(tsim_study_lookup(&st, "taot.rho_after.p95", &v), 0);
    cr_assert_float_eq(v, 0.015, 1e-12);
    cr_assert_eq(tsim_study_lookup(&st, "taot.plan_ns.mean", &v), TSIM_FAILIF_UNMEASURED, "not measured");
    cr_assert_eq(tsim_study_lookup(&st, "lplb.weighted.mean", &v), -1);
    cr_assert_eq(tsim_study_lookup(&st, "taot.bogus.mean", &v), -1);
    cr_assert_eq(tsim_study_lookup(&st, "taot.weighted.p99", &v), -1);
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_check("taot.weighted.mean > echo.weighted.mean", tsim_study_lookup, &st, &err), 0);
    cr_assert_eq(tsim_failif_check("taot.weighted.mean < echo.weighted.mean", tsim_study_lookup, &st, &err),
                 TSIM_E_CHECK);
    cr_assert(strstr(err.msg, "taot.weighted.mean (15)") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_failif_check("taot.weighted.mean <", tsim_study_lookup, &st, &err), TSIM_E_INPUT);
    tsim_study_free(&st);
}

static int square_job(void *ctx, int i, tsim_error *err)
{
    int *out = ctx;
    if (i == 7 || i == 3)
        return tsim_error_set(err, TSIM_E_INPUT, "job %d failed", i);
    out[i] = i * i;
    return 0;
}

Test(grid, reports_the_lowest_failure_and_starts_nothing_after_it)
{
    for (int threads = 1; threads <= 4; threads++) {
        int out[16] = {0};
        tsim_error err = {0};
        cr_assert_eq(tsim_grid_run(16, threads, square_job, NULL, out, &err), TSIM_E_INPUT);
        cr_assert_str_eq(err.msg, "job 3 failed", "-j %d", threads);
        cr_assert_eq(out[2], 4, "jobs before the failure ran");
        /* one thread: nothing after the failure starts (more threads may
         * have started a few more, which then stand) */
        for (int i = 4; threads == 1 && i < 16; i++)
            cr_assert_eq(out[i], 0, "job %d started after job 3 failed", i);
    }
}

static char *scaling_json(int threads)
{
    tsim_study_config c;
    tsim_study_config_default(&c);
    c.threads = threads;
    c.planners = "taot,echo,llep,lplb";
    c.n_eps = 2;
    c.eps[0] = 8;
    c.eps[1] = 16;
    c.n_imbalances = 1;
    c.imbalances[0] = 0.3;
    c.n_slot_list = 2;
    c.slot_list[0] = 1;
    c.slot_list[1] = 2;
    c.base_ep = 16;
    c.base_imbalance = 0.3;
    c.gen.experts = 64;
    c.gen.tokens = 256;
    c.gen.microbatches = 2;
    c.gen.layers = 1;
    c.step_model_on = true;
    tsim_study st;
    tsim_error err = {0};
    cr_assert_eq(tsim_run_scaling(&c, &st, &err), 0, "%s", err.msg);
    cJSON *j = tsim_study_json(&st);
    cJSON_DeleteItemFromObject(j, "command");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    /* LPLB cannot run K = 1 with its D = 2 graphs: an n/a row, not a failure */
    bool lplb_na = false;
    for (int i = 0; i < st.n; i++)
        if (strcmp(st.rows[i].planner, "lplb") == 0 && st.rows[i].slots == 1)
            lplb_na = !st.rows[i].ok;
    cr_assert(lplb_na, "lplb at K = 1 is n/a");
    tsim_study_free(&st);
    return s;
}

Test(grid, scaling_is_identical_for_any_thread_count, .timeout = 120)
{
    char *a = scaling_json(1), *b = scaling_json(2);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
}

/* A hand-made Table 1 cell: taot, and eplb (re-homing, no paper value). */
static tsim_study table1_cell(bool eplb_rehomes, const char *regime)
{
    tsim_study st;
    tsim_study_init(&st, "table1");
    const char *planners[2] = {"taot", "eplb"};
    for (int p = 0; p < 2; p++) {
        tsim_study_row *r = tsim_study_add(&st);
        snprintf(r->key, sizeof r->key, "ep16.imb10");
        snprintf(r->planner, sizeof r->planner, "%s", planners[p]);
        r->ep = 16;
        r->imbalance = 0.1;
        r->ok = true;
        for (int m = 0; m < TSIM_M_COUNT; m++)
            r->metric_on[m] = m != TSIM_M_PLAN_NS && m != TSIM_M_STEP_MS && m != TSIM_M_SPEEDUP &&
                              ((m != TSIM_M_REHOMED_INTRA && m != TSIM_M_REHOMED_INTER) || (p == 1 && eplb_rehomes));
        r->metrics[TSIM_M_INTRA].mean = 8 + p;
        r->metrics[TSIM_M_INTER].mean = 3 + p;
        r->metrics[TSIM_M_REHOMED_INTRA].mean = p ? 1.5 : 0;
        r->metrics[TSIM_M_REHOMED_INTER].mean = p ? 2.5 : 0;
    }
    cJSON *be = cJSON_AddArrayToObject(st.extra, "break_even");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "a", "taot");
    cJSON_AddStringToObject(j, "b", "eplb");
    cJSON_AddNullToObject(j, "lambda_star");
    cJSON_AddStringToObject(j, "a_cheaper_when", "always");
    cJSON_AddNumberToObject(j, "ep", 16);
    cJSON_AddNumberToObject(j, "imbalance", 0.1);
    cJSON_AddNullToObject(j, "paper_lambda_star");
    cJSON_AddItemToArray(be, j);
    if (regime) {
        cJSON *r = cJSON_AddObjectToObject(st.params, "regime");
        cJSON_AddStringToObject(r, "name", regime);
    }
    return st;
}

static char *print_study(const tsim_study *st, tsim_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    tsim_error err = {0};
    cr_assert_eq(tsim_study_print(f, st, fmt, false, &err), TSIM_OK, "%s", err.msg);
    fclose(f);
    return buf;
}

Test(study_print, table1_rehomed_columns_only_when_some_row_rehomes)
{
    tsim_study st = table1_cell(true, NULL);
    char *md = print_study(&st, TSIM_FORMAT_MD);
    cr_assert(strstr(md, "| inter | paper |   Δ | balancedness before | balancedness after | rehomed intra | rehomed "
                         "inter |\n"),
              "%s", md);
    /* eplb: our values, "-" for the paper's, the rehomed means after inter and balancedness */
    cr_assert(strstr(md, "| eplb   |        0.0 |     - |    - |      0.0 |     - |     - |   9.0 |     - |   - |   "
                         "4.0 |     - |   - |               0.000 |              0.000 |           1.5 |           2.5 |\n"),
              "%s", md);
    cr_assert(strstr(md, "| taot   |") && strstr(md, "|           0.0 |           0.0 |\n"), "%s", md);
    /* break-even against a method the paper does not run: "-", not "none" */
    cr_assert(strstr(md, "| eplb    | none    | always            |        - |\n"), "%s", md);
    cr_assert(strstr(md, "\nrehomed intra/inter: experts whose home rank changed"), "%s", md);
    cr_assert(strstr(md, "Ours: the bundled synthetic traces (traces/README.md), so"), "%s", md);
    free(md);
    char *csv = print_study(&st, TSIM_FORMAT_CSV);
    cr_assert(strstr(csv, ",eplb,rehomed_intra,1.5,"), "%s", csv);
    cr_assert(!strstr(csv, ",taot,rehomed_intra,"), "%s", csv);
    free(csv);
    tsim_study_free(&st);

    st = table1_cell(false, NULL);
    md = print_study(&st, TSIM_FORMAT_MD);
    cr_assert(!strstr(md, "rehomed"), "%s", md);
    cr_assert(strstr(md, "| inter | paper |   Δ | balancedness before | balancedness after |\n"), "%s", md);
    free(md);
    tsim_study_free(&st);
}

Test(study_print, table1_footnote_names_the_regime)
{
    tsim_study st = table1_cell(false, "paper");
    char *md = print_study(&st, TSIM_FORMAT_MD);
    cr_assert(strstr(md, "Ours: synthetic traces generated from the regime 'paper' (params.regime of the JSON "
                         "output), so the numbers are comparable in regime, not identical."),
              "%s", md);
    cr_assert(!strstr(md, "bundled"), "%s", md);
    free(md);
    tsim_study_free(&st);
    st = table1_cell(false, "");
    md = print_study(&st, TSIM_FORMAT_MD);
    cr_assert(strstr(md, "Ours: synthetic traces generated from an unnamed regime"), "%s", md);
    free(md);
    tsim_study_free(&st);
}

/* --plots DIR is checked before any work (issue 20): a file, a path through
 * one and a directory that cannot be written are refused. */
Test(output_dir, files_and_paths_through_files_are_refused)
{
    char root[] = "/tmp/tsim-outdir-XXXXXX";
    cr_assert(mkdtemp(root));
    char file[256], under[256], fresh[256], deep[256];
    snprintf(file, sizeof file, "%s/AFILE", root);
    snprintf(under, sizeof under, "%s/AFILE/sub/deeper", root);
    snprintf(fresh, sizeof fresh, "%s/figs", root);
    snprintf(deep, sizeof deep, "%s/a/b/c/", root);
    FILE *f = fopen(file, "w");
    cr_assert(f);
    fclose(f);
    tsim_error err = {0};
    cr_assert_eq(tsim_cli_check_output_dir(file, "--plots", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "exists and is not a directory"), "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir(under, "--plots", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "AFILE is not a directory"), "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir("", "--plots", &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_cli_check_output_dir(fresh, "--plots", &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir(deep, "--plots", &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir(root, "--plots", &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir(NULL, "--plots", &err), TSIM_OK);
    cr_assert_eq(access(fresh, F_OK), -1, "the check creates nothing");
    unlink(file);
    rmdir(root);
}

Test(output_dir, read_only_directory_is_refused)
{
    if (geteuid() == 0)
        cr_skip_test("root writes into read-only directories; the path-through-a-file case covers the check");
    char root[] = "/tmp/tsim-outdir-XXXXXX";
    cr_assert(mkdtemp(root));
    char sub[256];
    snprintf(sub, sizeof sub, "%s/figs", root);
    cr_assert_eq(chmod(root, 0555), 0);
    tsim_error err = {0};
    cr_assert_eq(tsim_cli_check_output_dir(sub, "--plots", &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "cannot write into"), "%s", err.msg);
    cr_assert_eq(tsim_cli_check_output_dir(root, "--plots", &err), TSIM_E_INPUT);
    chmod(root, 0755);
    rmdir(root);
}

/* Paper values belong to the planner's name, not its label (echo=llep is LLEP). */
Test(study, paper_values_follow_the_planner_name_not_the_label)
{
    tsim_study st = table1_cell(false, NULL);
    snprintf(st.rows[1].planner, sizeof st.rows[1].planner, "echo");
    snprintf(st.rows[1].method, sizeof st.rows[1].method, "llep");
    cJSON *j = tsim_study_json(&st);
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 1);
    const cJSON *paper = cJSON_GetObjectItem(row, "paper");
    tsim_paper_cell llep;
    cr_assert(tsim_paper_table1(16, 0.1, "llep", &llep));
    cr_assert(paper, "echo=llep has LLEP's paper values");
    cr_assert_float_eq(cJSON_GetObjectItem(paper, "weighted")->valuedouble, llep.weighted, 1e-12);
    cJSON_Delete(j);
    tsim_study_free(&st);
}
