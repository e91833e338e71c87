/* --taot-device gpu where no GPU plans: these run with or without a GPU. With
 * none (no device, no driver, or a build without CUDA) and for R above the
 * kernels' limit, the planner must give the CPU plan plus
 * TSIM_NOTE_GPU_FALLBACK and a reason, through the library and through the
 * CLI; with a GPU, the same plans without the note. The GPU-only parity tests
 * are in test_gpu_parity.c, which skips as a whole (exit 77) without a GPU. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_fixture.h"
#include "test_options.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "random_records.h"
#include "taot_gpu.h"
#include "taot_planner.h"
#include "topology.h"
#include "tsim_config.h"

Test(gpu_fallback, available_says_why)
{
    char why[512];
    memset(why, 'x', sizeof why);
    const int ok = tsim_taot_gpu_available(why, sizeof why);
    cr_assert(memchr(why, '\0', sizeof why) != NULL, "why is not terminated");
    if (!TSIM_HAVE_CUDA) {
        cr_assert_eq(ok, 0);
        cr_assert(strstr(why, "without CUDA") != NULL, "%s", why);
    } else if (!ok) {
        cr_assert_gt(strlen(why), 0, "no reason given for the missing GPU");
        cr_log_info("no GPU here: %s", why);
    } else {
        cr_assert_eq(why[0], '\0', "a usable GPU comes with no reason: %s", why);
    }
}

/* R above the kernels' limit is refused before any CUDA call, with the reason. */
Test(gpu_fallback, rank_limit)
{
    tsim_topology topo;
    tsim_error err = {0};
    cr_assert_eq(tsim_topology_init(&topo, 128, 256, 8, 2, NULL, &err), TSIM_OK);
    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    tsim_taot_gpu *g = tsim_taot_gpu_create(&topo, &opts.common, TSIM_OPTS(opts, taot), 48, &err);
    cr_assert_null(g);
    cr_assert_eq(err.code, TSIM_E_INPUT);
    if (TSIM_HAVE_CUDA)
        cr_assert(strstr(err.msg, "R = 128") != NULL && strstr(err.msg, "64") != NULL, "%s", err.msg);
    else
        cr_assert(strstr(err.msg, "without CUDA") != NULL, "%s", err.msg);
    tsim_topology_free(&topo);
}

/* --taot-device gpu through the planner registry: the CPU plan, plus the
 * fallback note and a reason whenever the GPU planner could not be set up (no
 * GPU, no CUDA in the build, or R > 64). */
Test(gpu_fallback, device_gpu_plans_like_cpu, .timeout = 600)
{
    char why_gpu[512];
    const bool have_gpu = tsim_taot_gpu_available(why_gpu, sizeof why_gpu);
    uint64_t st = UINT64_C(0x66616c6c);
    for (int s = 0; s < 9; s++) {
        tsim_random_shape sh;
        if (s < 8) {
            tsim_random_shape_draw(&st, TSIM_TAOT_GPU_MAX_RANKS, &sh);
        } else {
            sh.ranks = 128; /* above the kernels' limit: always the CPU */
            sh.experts = 256;
            sh.slots = 2;
            sh.ranks_per_node = 8;
        }
        tsim_topology topo;
        tsim_error err = {0};
        cr_assert_eq(tsim_topology_init(&topo, sh.ranks, sh.experts, sh.ranks_per_node, sh.slots, NULL, &err),
                     TSIM_OK);
        const tsim_gpu_config cfg = tsim_gpu_combo(s % 8, 3.0, 0.0, 50, 300);
        tsim_planner_options cpu_opts, gpu_opts;
        tsim_gpu_config_options(&cfg, &cpu_opts);
        gpu_opts = cpu_opts;
        TSIM_OPTS(gpu_opts, taot)->device = TSIM_DEVICE_GPU;
        void *cpu_state = NULL, *gpu_state = NULL;
        cr_assert_eq(tsim_planner_init_with(&tsim_planner_taot, &cpu_state, &topo, &cpu_opts, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq(tsim_planner_init_with(&tsim_planner_taot, &gpu_state, &topo, &gpu_opts, &err), TSIM_OK, "%s", err.msg);

        const bool expect_fallback = !have_gpu || sh.ranks > TSIM_TAOT_GPU_MAX_RANKS;
        char why[512];
        cr_assert_eq(tsim_taot_gpu_fell_back(gpu_state, why, sizeof why), expect_fallback,
                     "R = %d: fell back %d, expected %d (%s)", sh.ranks, !expect_fallback, expect_fallback, why);
        if (expect_fallback) {
            cr_assert_gt(strlen(why), 0, "a fallback without a reason");
            if (!TSIM_HAVE_CUDA)
                cr_assert(strstr(why, "without CUDA") != NULL, "%s", why);
            else if (sh.ranks > TSIM_TAOT_GPU_MAX_RANKS)
                cr_assert(strstr(why, "64") != NULL, "%s", why);
        }
        cr_assert_eq(tsim_taot_gpu_fell_back(cpu_state, why, sizeof why), false, "the CPU device never falls back");

        tsim_plan a, b;
        tsim_plan_init(&a, sh.ranks, sh.ranks * sh.slots, &err);
        tsim_plan_init(&b, sh.ranks, sh.ranks * sh.slots, &err);
        for (int i = 0; i < 60; i++) {
            tsim_record rec;
            tsim_random_record(&st, &sh, &rec);
            rec.index = i;
            cr_assert_eq(tsim_planner_taot.plan(cpu_state, &rec, &a, &err), TSIM_OK, "%s", err.msg);
            cr_assert_eq(tsim_planner_taot.plan(gpu_state, &rec, &b, &err), TSIM_OK, "%s", err.msg);
            char diff[512];
            cr_assert_not(tsim_gpu_plans_differ(&a, &b, diff, sizeof diff), "R = %d record %d: %s", sh.ranks, i,
                          diff);
            cr_assert_eq(a.notes & TSIM_NOTE_GPU_FALLBACK, 0u);
            cr_assert_eq((b.notes & TSIM_NOTE_GPU_FALLBACK) != 0, expect_fallback,
                         "R = %d record %d: notes 0x%x, fallback expected %d", sh.ranks, i, b.notes, expect_fallback);
            tsim_record_free(&rec);
        }
        tsim_plan_free(&a);
        tsim_plan_free(&b);
        tsim_planner_taot.free(cpu_state);
        tsim_planner_taot.free(gpu_state);
        tsim_topology_free(&topo);
    }
}

/* Runs cmd with the shell; returns its exit status (-1 when it died). */
static int run_shell(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The CLI: `replay --taot-device gpu` writes the same plans as the CPU run, and
 * reports the fallback note on every record exactly when no GPU answers. */
Test(gpu_fallback, cli_replay_device_gpu, .timeout = 300)
{
    const char *exe = getenv("TAOTSIM");
    const char *root = getenv("TSIM_SOURCE_ROOT");
    cr_assert_not_null(exe, "TAOTSIM is not set (run through meson test)");
    if (!root)
        root = TSIM_SOURCE_ROOT;
    char dir[] = "/tmp/tsim-gpu-cli-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char cmd[8192];
    const char *trace = "traces/tiny-4rank.json";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' replay %s --planners taot --taot-device gpu --format json --dump-plans '%s/gpu.jsonl' "
             "> '%s/gpu.json' 2> '%s/gpu.err'",
             root, exe, trace, dir, dir, dir);
    cr_assert_eq(run_shell(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' replay %s --planners taot --format json --dump-plans '%s/cpu.jsonl' > '%s/cpu.json' "
             "2> '%s/cpu.err'",
             root, exe, trace, dir, dir, dir);
    cr_assert_eq(run_shell(cmd), 0, "%s", cmd);

    char path[512];
    snprintf(path, sizeof path, "%s/gpu.jsonl", dir);
    char *gpu_plans = slurp(path);
    snprintf(path, sizeof path, "%s/cpu.jsonl", dir);
    char *cpu_plans = slurp(path);
    cr_assert_gt(strlen(cpu_plans), 0);
    /* the headers record the device asked for; the plans are the CPU's */
    for (char *at; (at = strstr(gpu_plans, ",\"device\":\"gpu\""));)
        memmove(at, at + 15, strlen(at + 15) + 1);
    cr_assert_str_eq(gpu_plans, cpu_plans, "--taot-device gpu dumped other plans than the CPU");

    snprintf(path, sizeof path, "%s/gpu.json", dir);
    char *text = slurp(path);
    cJSON *j = cJSON_Parse(text);
    cr_assert_not_null(j, "replay --format json is not JSON");
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "results"), 0);
    cr_assert_not_null(res);
    /* Records replayed: "trace": {"records": N} of cli.md. */
    const cJSON *records = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "trace"), "records");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(res, "notes");
    const cJSON *fb = notes ? cJSON_GetObjectItemCaseSensitive(notes, "gpu_fallback") : NULL;
    const double fallback_records = cJSON_IsNumber(fb) ? fb->valuedouble : 0.0;
    cr_assert(cJSON_IsNumber(records) && records->valuedouble > 0);
    char why[512];
    if (tsim_taot_gpu_available(why, sizeof why))
        cr_assert_eq(fallback_records, 0.0, "a GPU answers, yet %g records fell back", fallback_records);
    else
        cr_assert_eq(fallback_records, records->valuedouble, "no GPU (%s): %g of %g records noted as a fallback",
                     why, fallback_records, records->valuedouble);
    cJSON_Delete(j);
    free(text);
    free(gpu_plans);
    free(cpu_plans);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run_shell(cmd);
}

/* The benchmark entry of `taotsim bench --taot-device gpu`, reached through
 * the registry's taot entry (issue 21): numbers, not text. Without a GPU a
 * clear refusal and no rows; with one, the three shapes, their times and no
 * differing plan (the full-size run is gpu_parity/bench). */
Test(gpu_fallback, bench_entry, .timeout = 600)
{
    tsim_error err = {0};
    tsim_planner_options bench_opts;
    tsim_planner_options_default(&bench_opts);
    tsim_taot_gpu_bench_result res;
    memset(&res, 0xff, sizeof res); /* every field must be set */
    const int rc = tsim_taot_planner_gpu_bench(&res, &bench_opts.common, TSIM_OPTS(bench_opts, taot), 96, 7, &err);
    char why[512];
    if (tsim_taot_planner_gpu_available(why, sizeof why)) {
        cr_assert_eq(rc, TSIM_OK, "%s", err.msg);
        cr_assert_eq(res.n_rows, TSIM_TAOT_GPU_BENCH_SHAPES);
        cr_assert_eq(res.records, 96);
        cr_assert_eq(res.seed, 7);
        cr_assert_eq(res.mismatches, 0);
        const int shapes[3][3] = {{16, 128, 2}, {32, 128, 2}, {64, 256, 2}};
        for (int i = 0; i < 3; i++) {
            const tsim_taot_gpu_bench_row *r = &res.rows[i];
            cr_assert(r->ranks == shapes[i][0] && r->experts == shapes[i][1] && r->slots == shapes[i][2],
                      "row %d is (%d,%d,%d)", i, r->ranks, r->experts, r->slots);
            cr_assert_eq(r->records, 96);
            cr_assert(r->cpu_us > 0 && r->latency_us > 0 && r->batched_us > 0 && r->batched_mean_us > 0,
                      "row %d: times %g %g %g %g", i, r->cpu_us, r->latency_us, r->batched_us, r->batched_mean_us);
            cr_assert_eq(r->mismatches, 0);
        }
    } else {
        cr_assert_eq(rc, TSIM_E_INPUT);
        cr_assert(strstr(err.msg, "no usable GPU") != NULL, "%s", err.msg);
        cr_assert_eq(res.n_rows, 0);
        cr_assert_eq(res.mismatches, 0);
    }
}
