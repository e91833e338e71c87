/* taotsim fit (fit.h): regime files, Table 1 on a regime, the fit's scoring,
 * ranking and determinism over a tiny grid. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>

#include "experiments.h"
#include "fit.h"
#include "fit_print.h"
#include "paper.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(fit, .init = setup);

static tsim_regime sample_regime(void)
{
    tsim_regime r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "sample");
    tsim_gen_params_default(&r.gen);
    tsim_error err = {0};
    cr_assert_eq(tsim_gen_hot_ranks_parse("per-node:1", &r.gen, &err), TSIM_OK);
    r.gen.hot_experts = 2;
    r.gen.hot_skew = 1.5;
    r.gen.concentration = 300;
    r.gen.tokens = 256;
    r.gen.microbatches = 1;
    r.gen.layers = 2;
    r.gen.seed = 9;
    return r;
}

Test(fit, regime_json_round_trip)
{
    tsim_regime r = sample_regime();
    cJSON *fit = cJSON_CreateObject();
    cJSON_AddStringToObject(fit, "command", "taotsim fit ...");
    cJSON *j = tsim_regime_json(&r, fit);
    cr_assert_not_null(j);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "format")), TSIM_REGIME_FORMAT);
    cr_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "generator"), "hot_ranks")), "per-node:1");
    tsim_regime back;
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_from_json(j, &back, &err), TSIM_OK, "%s", err.msg);
    cr_assert_str_eq(back.name, "sample");
    cr_assert_eq(back.gen.hot_placement, TSIM_HOT_PER_NODE);
    cr_assert_eq(back.gen.hot_ranks, 1);
    cr_assert_eq(back.gen.hot_experts, 2);
    cr_assert_float_eq(back.gen.hot_skew, 1.5, 0);
    cr_assert_float_eq(back.gen.concentration, 300, 0);
    cr_assert_eq(back.gen.tokens, 256);
    cr_assert_eq(back.gen.seed, 9);
    for (int ep = 16; ep <= 32; ep += 16) {
        tsim_gen_params a, b;
        cr_assert_eq(tsim_regime_params(&r, ep, &a, &err), TSIM_OK);
        cr_assert_eq(tsim_regime_params(&back, ep, &b, &err), TSIM_OK);
        cr_assert(tsim_gen_same_records(&a, &b));
    }
    char what[200];
    tsim_regime_describe(&back, what, sizeof what);
    cr_assert_str_eq(what, "hot ranks per-node:1, hot experts 2, skew 1.5, concentration 300, 256 tokens");
    cJSON_Delete(j);
    /* "all" hot experts is written as a string and read back as 0. */
    r.gen.hot_experts = 0;
    j = tsim_regime_json(&r, NULL);
    cr_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "generator"), "hot_experts")), "all");
    cr_assert_eq(tsim_regime_from_json(j, &back, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(back.gen.hot_experts, 0);
    cJSON_Delete(j);
}

/* Mutates one generator member of a valid regime and expects the message to
 * name `word`. */
static void expect_bad(const char *key, cJSON *value, const char *word)
{
    tsim_regime r = sample_regime();
    cJSON *j = tsim_regime_json(&r, NULL);
    cJSON *g = cJSON_GetObjectItem(j, "generator");
    if (value)
        cJSON_ReplaceItemInObject(g, key, value);
    else
        cJSON_DeleteItemFromObject(g, key);
    tsim_regime back;
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_from_json(j, &back, &err), TSIM_E_INPUT, "%s accepted", key);
    cr_assert(strstr(err.msg, word), "message '%s' does not name %s", err.msg, word);
    cJSON_Delete(j);
}

Test(fit, bad_regimes_are_rejected_naming_the_key)
{
    expect_bad("tokens", NULL, "generator.tokens");
    expect_bad("tokens", cJSON_CreateNumber(2.5), "generator.tokens");
    expect_bad("concentration", cJSON_CreateString("x"), "generator.concentration");
    expect_bad("hot_ranks", cJSON_CreateString("0,20"), "rank 20");      /* beyond EP16 */
    expect_bad("hot_ranks", cJSON_CreateString("per-node:0"), "hot_ranks");
    expect_bad("hot_experts", cJSON_CreateNumber(5), "--hot-experts"); /* EP32 has 4 per rank */
    expect_bad("hot_experts", cJSON_CreateString("most"), "generator.hot_experts");
    expect_bad("hot_skew", cJSON_CreateNumber(-1), "generator.hot_skew");
    expect_bad("seed", cJSON_CreateNumber(1.5), "generator.seed");

    tsim_regime r = sample_regime();
    cJSON *j = tsim_regime_json(&r, NULL);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(j, "generator"), "hot_fraction", 0.1);
    tsim_regime back;
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_from_json(j, &back, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "generator.hot_fraction: unknown key"), "%s", err.msg);
    cJSON_Delete(j);
    j = tsim_regime_json(&r, NULL);
    cJSON_ReplaceItemInObject(j, "format", cJSON_CreateString("moe-routing-trace"));
    cr_assert_eq(tsim_regime_from_json(j, &back, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "not a regime"), "%s", err.msg);
    cJSON_Delete(j);
}

Test(fit, regime_paths_and_files)
{
    char buf[256];
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_path("paper", "/d/traces", buf, sizeof buf, &err), TSIM_OK);
    cr_assert_str_eq(buf, "/d/traces/regime-paper.json");
    cr_assert_eq(tsim_regime_path("x/y", "/d", buf, sizeof buf, &err), TSIM_OK);
    cr_assert_str_eq(buf, "x/y");
    cr_assert_eq(tsim_regime_path("mine.json", "/d", buf, sizeof buf, &err), TSIM_OK);
    cr_assert_str_eq(buf, "mine.json");
    cr_assert_eq(tsim_regime_path("no good", "/d", buf, sizeof buf, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--regime 'no good'"), "%s", err.msg);

    tsim_regime r;
    cr_assert_eq(tsim_regime_load("/nonexistent/regime.json", ".", &r, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "/nonexistent/regime.json"), "%s", err.msg);

    /* Written and read back through a file; a broken file names itself. */
    char path[] = "/tmp/tsim-test-regime-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    tsim_regime s = sample_regime();
    cJSON *j = tsim_regime_json(&s, NULL);
    char *text = cJSON_Print(j);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(j);
    cr_assert_eq(tsim_regime_load(path, ".", &r, &err), TSIM_OK, "%s", err.msg); /* has a '/': a file */
    cr_assert_eq(r.gen.tokens, 256);
    f = fopen(path, "w");
    fputs("{\"format\": ", f);
    fclose(f);
    cr_assert_eq(tsim_regime_load(path, ".", &r, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "malformed JSON"), "%s", err.msg);
    remove(path);
}

/* The regime file shipped in traces/ loads by name. */
Test(fit, bundled_regime_loads_by_name)
{
    const char *root = getenv("TSIM_SOURCE_ROOT");
    if (!root)
        cr_skip_test("TSIM_SOURCE_ROOT is not set");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/traces", root);
    tsim_regime r;
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_load("paper", dir, &r, &err), TSIM_OK, "%s", err.msg);
    cr_assert_str_eq(r.name, "paper");
}

static tsim_fit_grid tiny_grid(void)
{
    tsim_fit_grid g;
    tsim_fit_grid_default(&g);
    g.base.microbatches = 1;
    g.base.layers = 2;
    snprintf(g.placements[0], sizeof g.placements[0], "1");
    snprintf(g.placements[1], sizeof g.placements[1], "per-node:1");
    snprintf(g.placements[2], sizeof g.placements[2], "0,1");
    snprintf(g.placements[3], sizeof g.placements[3], "2");
    g.n_placements = 4;
    g.hot_experts[0] = 0;
    g.n_hot_experts = 1;
    g.skews[0] = 0;
    g.n_skews = 1;
    g.concentrations[0] = 200;
    g.n_concentrations = 1;
    g.tokens[0] = 256;
    g.n_tokens = 1;
    g.top = 2;
    return g;
}

static tsim_fit_result run_fit(int threads)
{
    tsim_study_config c;
    tsim_study_config_default(&c);
    c.threads = threads;
    tsim_fit_grid g = tiny_grid();
    tsim_fit_result r;
    tsim_error err = {0};
    cr_assert_eq(tsim_fit_run(&c, &g, &r, &err), TSIM_OK, "%s", err.msg);
    return r;
}

Test(fit, scores_are_the_documented_distance)
{
    tsim_fit_result r = run_fit(2);
    cr_assert_eq(r.n, 4);
    for (int i = 0; i < r.n; i++) {
        const tsim_fit_regime *fr = &r.regimes[i];
        cr_assert(fr->feasible, "regime %d: %s", i, fr->error);
        double total = 0;
        for (int p = 0; p < TSIM_FIT_PLANNERS; p++) {
            double sum = 0;
            for (int cell = 0; cell < TSIM_FIT_CELLS; cell++) {
                const tsim_fit_entry *e = &fr->entries[cell][p];
                cr_assert_leq(fabs(fr->achieved[cell] - tsim_fit_cell_imbalance(cell)), TSIM_GEN_TOLERANCE);
                tsim_paper_cell pc;
                cr_assert(tsim_paper_table1(tsim_fit_cell_ep(cell), tsim_fit_cell_imbalance(cell),
                                            tsim_fit_planner_names[p], &pc));
                const double paper[3] = {pc.improve_pp, pc.intra, pc.inter};
                const double s[3] = {1, 2, 2};
                for (int q = 0; q < 3; q++) {
                    cr_assert_float_eq(e->paper[q], paper[q], 0);
                    double want = e->ok ? (e->ours[q] - paper[q]) / (fabs(paper[q]) + s[q]) : 1.0;
                    cr_assert_float_eq(e->resid[q], want, 1e-12);
                    sum += want * want;
                }
            }
            cr_assert_float_eq(fr->planner_distance[p], sqrt(sum / 30), 1e-12);
            total += sum;
        }
        cr_assert_float_eq(fr->distance, sqrt(total / 120), 1e-12);
    }
    /* Ranked by distance; ties in grid order. */
    for (int k = 1; k < r.n; k++) {
        const tsim_fit_regime *a = &r.regimes[r.order[k - 1]], *b = &r.regimes[r.order[k]];
        cr_assert(a->distance < b->distance || (a->distance == b->distance && r.order[k - 1] < r.order[k]));
    }
    /* "0,1" and "2" are one placement: the same numbers. */
    cr_assert_float_eq(r.regimes[2].distance, r.regimes[3].distance, 0);
    cr_assert(memcmp(r.regimes[2].entries, r.regimes[3].entries, sizeof r.regimes[2].entries) == 0);
    for (int p = 0; p < TSIM_FIT_PLANNERS; p++)
        for (int i = 0; i < r.n; i++)
            cr_assert_leq(r.regimes[r.closest[p]].planner_distance[p], r.regimes[i].planner_distance[p]);
    tsim_fit_result_free(&r);
}

Test(fit, same_result_for_any_number_of_threads)
{
    tsim_fit_result a = run_fit(1), b = run_fit(3);
    cr_assert_eq(a.n, b.n);
    cr_assert(memcmp(a.order, b.order, sizeof *a.order * (size_t)a.n) == 0);
    for (int i = 0; i < a.n; i++) {
        cr_assert(a.regimes[i].distance == b.regimes[i].distance);
        cr_assert(memcmp(a.regimes[i].entries, b.regimes[i].entries, sizeof a.regimes[i].entries) == 0);
    }
    cJSON *ja = tsim_fit_json(&a), *jb = tsim_fit_json(&b);
    char *sa = cJSON_PrintUnformatted(ja), *sb = cJSON_PrintUnformatted(jb);
    cr_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    tsim_fit_result_free(&a);
    tsim_fit_result_free(&b);
}

/* table1 --regime runs the same cells as the fit: the same means. */
Test(fit, table1_on_a_regime_matches_the_fit)
{
    tsim_fit_result r = run_fit(2);
    const tsim_fit_regime *best = &r.regimes[r.order[0]];
    tsim_study_config c;
    tsim_study_config_default(&c);
    c.threads = 2;
    tsim_study s;
    tsim_error err = {0};
    cr_assert_eq(tsim_run_table1_regime(&c, &best->regime, &s, &err), TSIM_OK, "%s", err.msg);
    cr_assert_str_eq(s.study, "table1");
    cr_assert_eq(s.n, TSIM_FIT_CELLS * TSIM_FIT_PLANNERS);
    const tsim_metric_id ids[3] = {TSIM_M_IMPROVE_PP, TSIM_M_INTRA, TSIM_M_INTER};
    for (int i = 0; i < s.n; i++) {
        const tsim_study_row *row = &s.rows[i];
        const int cell = i / TSIM_FIT_PLANNERS, p = i % TSIM_FIT_PLANNERS;
        char key[32];
        snprintf(key, sizeof key, "ep%d.imb%d", tsim_fit_cell_ep(cell), (int)lround(100 * tsim_fit_cell_imbalance(cell)));
        cr_assert_str_eq(row->key, key);
        cr_assert_str_eq(row->planner, tsim_fit_planner_names[p]);
        cr_assert_eq(row->ep, tsim_fit_cell_ep(cell));
        cr_assert(row->ok);
        cr_assert_eq(row->records, 2);
        for (int q = 0; q < 3; q++)
            cr_assert(row->metrics[ids[q]].mean == best->entries[cell][p].ours[q], "%s %s metric %d", key,
                      row->planner, q);
        cr_assert(row->metrics[TSIM_M_RHO_BEFORE].mean == best->achieved[cell]);
    }
    cJSON *regime = cJSON_GetObjectItem(s.params, "regime");
    cr_assert(cJSON_IsObject(regime));
    tsim_study_free(&s);
    tsim_fit_result_free(&r);
}

Test(fit, grid_values_are_checked_at_both_ep_sizes)
{
    tsim_fit_grid g = tiny_grid();
    tsim_error err = {0};
    cr_assert_eq(tsim_fit_grid_check(&g, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_fit_grid_regimes(&g), 4);
    tsim_fit_grid h = g;
    snprintf(h.placements[0], sizeof h.placements[0], "0,20");
    cr_assert_eq(tsim_fit_grid_check(&h, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "EP16: --hot-ranks: rank 20"), "%s", err.msg);
    h = g;
    h.hot_experts[0] = 8; /* fine at EP16, not at EP32 */
    cr_assert_eq(tsim_fit_grid_check(&h, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "EP32") && strstr(err.msg, "--hot-experts"), "%s", err.msg);
    h = g;
    h.n_tokens = 0;
    cr_assert_eq(tsim_fit_grid_check(&h, &err), TSIM_E_INPUT);
    h = g;
    for (int i = 0; i < 17; i++)
        h.tokens[i] = 256 + i;
    h.n_tokens = 17;
    h.concentrations[1] = 300;
    h.n_concentrations = 16;
    for (int i = 0; i < 16; i++)
        h.concentrations[i] = 200 + i;
    h.n_skews = 4;
    cr_assert_eq(tsim_fit_grid_check(&h, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "more than"), "%s", err.msg);
}

/* One record of a cell's trace at a fixed hot fraction, hashed (FNV-1a). */
static uint64_t cell_trace_hash(const tsim_regime *r, int ep)
{
    tsim_gen_params p;
    tsim_error err = {0};
    cr_assert_eq(tsim_regime_params(r, ep, &p, &err), TSIM_OK, "%s", err.msg);
    p.microbatches = 1;
    p.layers = 1;
    p.hot_fraction = 0.3;
    tsim_gen *g = NULL;
    cr_assert_eq(tsim_gen_open(&g, &p, &err), TSIM_OK, "%s", err.msg);
    const tsim_record *rec;
    uint64_t h = UINT64_C(1469598103934665603);
    while (tsim_gen_next(g, &rec, NULL) == 1) {
        const unsigned char *b = (const unsigned char *)rec->counts;
        for (size_t i = 0; i < sizeof *rec->counts * (size_t)p.ep * (size_t)p.experts; i++)
            h = (h ^ b[i]) * UINT64_C(1099511628211);
    }
    tsim_gen_close(g);
    return h;
}

/* The default grid had five pairs of regimes (more, counted per cell) that
 * generated the same traces: a skew over at most k hot experts, or over one
 * hot expert per rank, did nothing. Every regime of the grid now generates
 * its own traces at both EP sizes. */
Test(fit, default_grid_regimes_generate_distinct_traces)
{
    tsim_fit_grid g;
    tsim_fit_grid_default(&g);
    tsim_error err = {0};
    cr_assert_eq(tsim_fit_grid_check(&g, &err), TSIM_OK, "%s", err.msg);
    const int n = tsim_fit_grid_regimes(&g);
    cr_assert_eq(n, 80, "4 placements x (3 x 2 - 1) hot experts and skews x 2 x 2");
    tsim_regime *r = calloc((size_t)n, sizeof *r);
    uint64_t *hash = calloc((size_t)n * 2, sizeof *hash);
    cr_assert(r && hash);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tsim_fit_grid_regime(&g, i, &r[i], &err), TSIM_OK, "%s", err.msg);
        for (int e = 0; e < 2; e++)
            hash[i * 2 + e] = cell_trace_hash(&r[i], e == 0 ? 16 : 32);
    }
    for (int e = 0; e < 2; e++) {
        const int ep = e == 0 ? 16 : 32;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++) {
                char a[200], b[200];
                tsim_regime_describe(&r[i], a, sizeof a);
                tsim_regime_describe(&r[j], b, sizeof b);
                cr_assert_neq(hash[i * 2 + e], hash[j * 2 + e], "EP%d: '%s' and '%s' generate the same trace", ep, a, b);
                tsim_gen_params pi, pj;
                cr_assert_eq(tsim_regime_params(&r[i], ep, &pi, &err), TSIM_OK);
                cr_assert_eq(tsim_regime_params(&r[j], ep, &pj, &err), TSIM_OK);
                cr_assert_not(tsim_gen_same_records(&pi, &pj), "EP%d: '%s' and '%s'", ep, a, b);
            }
    }
    free(r);
    free(hash);
}

/* A skew over one hot expert per rank is left out of a grid; a grid of
 * nothing else is refused. */
Test(fit, grid_leaves_out_a_skew_over_one_hot_expert)
{
    tsim_fit_grid g = tiny_grid();
    g.hot_experts[0] = 1;
    g.hot_experts[1] = 2;
    g.n_hot_experts = 2;
    g.skews[0] = 0;
    g.skews[1] = 1.5;
    g.n_skews = 2;
    tsim_error err = {0};
    cr_assert_eq(tsim_fit_grid_check(&g, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(tsim_fit_grid_regimes(&g), 4 * 3);
    /* Placement-major, then (hot experts, skew): (1, 0), (2, 0), (2, 1.5). */
    const int want_m[] = {1, 2, 2};
    const double want_s[] = {0, 0, 1.5};
    for (int i = 0; i < 12; i++) {
        tsim_regime r;
        cr_assert_eq(tsim_fit_grid_regime(&g, i, &r, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq(r.gen.hot_experts, want_m[i % 3]);
        cr_assert(r.gen.hot_skew == want_s[i % 3]);
    }
    g.n_hot_experts = 1;
    g.skews[0] = 2;
    g.n_skews = 1;
    cr_assert_eq(tsim_fit_grid_regimes(&g), 0);
    cr_assert_eq(tsim_fit_grid_check(&g, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "the grid has no regime: a --hot-skew above 0 needs at least 2 hot experts per hot "
                              "rank (give --hot-skew 0 too, or --hot-experts 2 or more)");
}

/* A regime whose base routing alone exceeds a cell's target is infeasible:
 * ranked last with the reason, and the fit goes on. */
Test(fit, infeasible_regimes_rank_last_with_the_reason)
{
    tsim_study_config c;
    tsim_study_config_default(&c);
    c.threads = 2;
    tsim_fit_grid g = tiny_grid();
    g.n_placements = 1;
    g.concentrations[0] = 20; /* uneven background: far above 10% at EP32 */
    g.concentrations[1] = 200;
    g.n_concentrations = 2;
    tsim_fit_result r;
    tsim_error err = {0};
    cr_assert_eq(tsim_fit_run(&c, &g, &r, &err), TSIM_OK, "%s", err.msg);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.order[0], 1);
    cr_assert_not(r.regimes[0].feasible);
    cr_assert(isinf(r.regimes[0].distance));
    cr_assert(strstr(r.regimes[0].error, "below") && strstr(r.regimes[0].error, "at 10% imbalance"), "%s",
              r.regimes[0].error);
    tsim_fit_result_free(&r);
}
