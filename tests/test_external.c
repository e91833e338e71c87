/* External planners (issue 12): the --planners syntax, the exec protocol with
 * deliberately broken planners (each: its message, TSIM_E_INPUT, no process
 * left behind), pipelining, the example planners against each other on every
 * bundled trace (Python, C exec, C plugin, the test-only built-in), the
 * plugin loader's checks, and the test-only planner's registration. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "external.h"
#include "test_options.h"
#include "plan.h"
#include "planner.h"
#include "registry.h"
#include "session.h"
#include "trace.h"

/* ---- fixtures ----------------------------------------------------------------- */

static const char *env_dir(const char *name)
{
    const char *dir = getenv(name);
    cr_assert(dir && *dir, "%s is not set (run through meson test)", name);
    return dir;
}

typedef struct {
    tsim_record recs[64];
    int n;
    int ranks, experts, rpn;
    int32_t *home;
} trace_records;

static void trace_load(trace_records *t, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/traces/%s", env_dir("TSIM_SOURCE_ROOT"), name);
    memset(t, 0, sizeof *t);
    tsim_reader *r;
    tsim_read_options ro = {0};
    tsim_error err = {0};
    cr_assert_eq(tsim_reader_open(&r, path, &ro, &err), TSIM_OK, "%s", err.msg);
    const tsim_trace_header *h = tsim_reader_header(r);
    t->ranks = h->ep;
    t->experts = h->experts;
    t->rpn = h->ranks_per_node;
    if (h->home) {
        t->home = malloc(sizeof *t->home * (size_t)h->experts);
        memcpy(t->home, h->home, sizeof *t->home * (size_t)h->experts);
    }
    const tsim_record *rec;
    while (t->n < 64 && tsim_reader_next(r, &rec, &err) == 1) {
        tsim_record *dst = &t->recs[t->n++];
        cr_assert_eq(tsim_record_alloc(dst, rec->ranks, rec->experts, &err), TSIM_OK);
        int64_t *counts = dst->counts;
        *dst = *rec;
        dst->counts = counts;
        memcpy(counts, rec->counts, sizeof *counts * (size_t)rec->ranks * (size_t)rec->experts);
    }
    tsim_reader_close(r);
    cr_assert_gt(t->n, 0);
}

static void trace_free(trace_records *t)
{
    for (int i = 0; i < t->n; i++)
        tsim_record_free(&t->recs[i]);
    free(t->home);
}

/* Every plan of a run as text, in the order the session scored them. */
typedef struct {
    char *text;
    size_t len, cap;
} plan_log;

static void log_add(plan_log *l, const char *s)
{
    size_t n = strlen(s);
    if (l->len + n + 1 > l->cap) {
        l->cap = (l->len + n + 1) * 2;
        l->text = realloc(l->text, l->cap);
    }
    memcpy(l->text + l->len, s, n + 1);
    l->len += n;
}

static int log_hook(void *ctx, tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                    const tsim_metrics *m, tsim_error *err)
{
    (void)s;
    (void)err;
    plan_log *l = ctx;
    char buf[256];
    tsim_plan_sort(plan);
    snprintf(buf, sizeof buf, "r%lld p%d rho %.17g w %g:", (long long)rec->index, planner,
             m->v[TSIM_M_RHO_AFTER], m->v[TSIM_M_WEIGHTED]);
    log_add(l, buf);
    for (int i = 0; i < plan->count; i++) {
        const tsim_replica *rep = &plan->replicas[i];
        snprintf(buf, sizeof buf, " [%d,%d,%d,%lld]", rep->expert, rep->guest, rep->slot, (long long)rep->planned);
        log_add(l, buf);
        for (int r = 0; r < plan->ranks; r++)
            if (tsim_plan_alloc_row(plan, i)[r]) {
                snprintf(buf, sizeof buf, " %d:%lld", r, (long long)tsim_plan_alloc_row(plan, i)[r]);
                log_add(l, buf);
            }
    }
    log_add(l, "\n");
    return TSIM_OK;
}

typedef struct {
    int rc;
    bool init_failed;
    char msg[TSIM_ERROR_MSG_MAX];
    plan_log log;
} run_result;

/* Runs planner specs (comma-separated) over the records in one session, the
 * way replay does (pipelined when asked). */
static run_result run_specs(const char *list, const trace_records *t, bool pipeline)
{
    run_result out = {0};
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner planners[8];
    int n = 0;
    tsim_error err = {0};
    out.rc = tsim_planner_list_parse(list, &base, planners, 8, &n, &err);
    if (out.rc) {
        out.init_failed = true;
        snprintf(out.msg, sizeof out.msg, "%s", err.msg);
        return out;
    }
    tsim_session s;
    out.rc = tsim_session_init(&s, t->ranks, t->experts, t->rpn, 2, t->home, planners, n, 3.0, &err);
    if (out.rc) {
        out.init_failed = true;
        snprintf(out.msg, sizeof out.msg, "%s", err.msg);
        return out;
    }
    s.pipeline = pipeline;
    s.hook = log_hook;
    s.hook_ctx = &out.log;
    for (int i = 0; i < t->n && out.rc == TSIM_OK; i++)
        out.rc = tsim_session_record(&s, &t->recs[i], &err);
    if (out.rc == TSIM_OK)
        out.rc = tsim_session_drain(&s, &err);
    if (out.rc)
        snprintf(out.msg, sizeof out.msg, "%s", err.msg);
    tsim_session_free(&s);
    if (!out.log.text)
        log_add(&out.log, "");
    return out;
}

static void run_free(run_result *r)
{
    free(r->log.text);
}

static void setup(void)
{
    tsim_external_install();
}

static void teardown(void)
{
    tsim_external_cleanup();
}

/* The pids a broken planner wrote (its own, and a grandchild's) are gone. */
static void assert_no_process_left(const char *pidfile)
{
    FILE *f = fopen(pidfile, "r");
    cr_assert(f, "%s was not written", pidfile);
    long pid;
    int seen = 0;
    while (fscanf(f, "%ld\n", &pid) == 1) {
        seen++;
        errno = 0;
        cr_assert(kill((pid_t)pid, 0) != 0 && errno == ESRCH, "process %ld was left behind", pid);
    }
    fclose(f);
    cr_assert_gt(seen, 0, "no pid in %s", pidfile);
}

static void broken_spec(char *buf, size_t n, const char *mode, char *pidfile, size_t pn)
{
    snprintf(pidfile, pn, "/tmp/tsim-broken-%ld-%s.pid", (long)getpid(), mode);
    snprintf(buf, n, "b=exec:%s/broken_planner %s %s", env_dir("TSIM_TEST_PLANNERS"), mode, pidfile);
}

/* ---- the --planners syntax ---------------------------------------------------- */

TestSuite(spec, .init = setup, .fini = teardown);

Test(spec, a_colon_inside_an_option_value)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "g=lplb:--lplb-graph=torus:2x4", &base, &err), TSIM_OK, "%s", err.msg);
    cr_assert_str_eq(TSIM_OWN(p, lplb)->graph, "torus:2x4");
    cr_assert_eq(tsim_planner_spec_parse(&p, "g=lplb:--lplb-graph=torus:2x4:--lplb-solver=exact", &base, &err),
                 TSIM_OK, "%s", err.msg);
    cr_assert_str_eq(TSIM_OWN(p, lplb)->graph, "torus:2x4");
    cr_assert_eq(TSIM_OWN(p, lplb)->solver, TSIM_LPLB_EXACT);
    cr_assert_eq(tsim_planner_spec_parse(&p, "x=taot:--taot-no-flow-hint:--taot-iters=7", &base, &err), TSIM_OK);
    cr_assert(!TSIM_OWN(p, taot)->flow_hint);
    cr_assert_eq(TSIM_OWN(p, taot)->iters, 7);
    /* a value cannot swallow a malformed next option silently */
    cr_assert_eq(tsim_planner_spec_parse(&p, "x=taot:--taot-iters=7:taot-phase3=split", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "--taot-iters") != NULL, "%s", err.msg);
}

Test(spec, external_names_need_a_plain_label)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "exec:./mine", &base, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "external planner 'exec:./mine' needs a label: LABEL=exec:./mine");
    cr_assert_eq(tsim_planner_spec_parse(&p, "taot=exec:./mine", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "'taot' is the name of a built-in planner") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_planner_spec_parse(&p, "my.planner=exec:./mine", &base, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "takes letters, digits") != NULL, "%s", err.msg);
    cr_assert_eq(tsim_planner_spec_parse(&p, "g=exec:", &base, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "planner 'g': exec: needs a command (LABEL=exec:CMD)");
}

Test(spec, the_exec_command_is_the_rest_of_the_entry)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "g=exec:python3 -c 'print(1)' --x=a:--y", &base, &err), TSIM_OK, "%s",
                 err.msg);
    cr_assert_str_eq(p.label, "g");
    cr_assert_str_eq(p.desc->name, "exec:python3 -c 'print(1)' --x=a:--y");
    const tsim_external_config *cfg = p.common.external;
    cr_assert_str_eq(cfg->target, "python3 -c 'print(1)' --x=a:--y");
    cr_assert(p.desc->external);
}

Test(spec, without_the_resolver_external_names_are_refused)
{
    tsim_planner_set_resolver(NULL);
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, "g=exec:./mine", &base, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "planner 'g': external planners (exec:, plugin:) run from the taotsim command only");
}

Test(spec, label_options_are_collected_for_external_labels_only)
{
    tsim_external_scan_list("echo,g=exec:./a,h-2=plugin:./b.so:--x=1");
    bool taken;
    tsim_error err = {0};
    cr_assert_eq(tsim_external_take_option("--g-depth=3", &taken, &err), TSIM_OK);
    cr_assert(taken);
    cr_assert_eq(tsim_external_take_option("--h-2-level=x:y", &taken, &err), TSIM_OK);
    cr_assert(taken);
    cr_assert_eq(tsim_external_take_option("--echo-x=1", &taken, &err), TSIM_OK);
    cr_assert(!taken, "echo is not external");
    cr_assert_eq(tsim_external_take_option("--gg-depth=3", &taken, &err), TSIM_OK);
    cr_assert(!taken);
    cr_assert_eq(tsim_external_take_option("--g-depth", &taken, &err), TSIM_E_INPUT);
    cr_assert(taken);
    cr_assert_str_eq(err.msg, "option '--g-depth': an external planner's options take their value after '=' "
                              "(--g-depth=VALUE)");
}

/* ---- the exec protocol, broken one way at a time -------------------------------- */

typedef struct {
    const char *mode;
    bool at_init;       /* fails in the handshake */
    const char *expect; /* a part of the message */
} broken_case;

static const broken_case broken_cases[] = {
    {"garbage", false, "planner 'b', record 0: the answer is not JSON (malformed at byte 0): 'this is not json'"},
    {"wrong-id", false, "planner 'b', record 0: the answer has id 100, but no record with that id was sent"},
    {"twice", false, "a second answer for id 0"}, /* named at record 0 or 1, as the window goes */
    {"invalid-plan", false, "planner 'b', record 0 (microbatch 0, layer 0): invalid plan: replica 0 puts expert 0 "
                            "on its home rank 0"},
    {"overdraw", false, "invalid plan: source rank 1 sends 1000000 tokens of expert 0 to replicas but has only"},
    {"bad-row", false, "planner 'b', record 0: replicas[0] is not [expert, guest, slot, planned] (4 integers)"},
    {"exit-early", false, "planner 'b', record 2: the planner exited with status 3"},
    {"crash", false, "planner 'b', record 1: the planner "},
    {"hang", false, "planner 'b', record 0: no answer within 1 s (--exec-timeout)"},
    {"hang-with-child", false, "planner 'b', record 0: no answer within 1 s (--exec-timeout)"},
    {"huge-line", false, "planner 'b', record 0: an answer line longer than"},
    {"error-answer", false, "planner 'b', record 0: the planner answered with an error: out of memory on the "
                            "planner's GPU"},
    {"error-number", false, "planner 'b', record 0: the planner answered with an \"error\" that is not a string: 5"},
    {"setsid-child-hang", false, "planner 'b', record 0: no answer within 1 s (--exec-timeout)"},
    {"stdout-before-handshake", true, "planner 'b': handshake: expected {\"ok\":true,...} as the first line of the "
                                      "planner's standard output, got 'hello from the planner'"},
    {"decline", true, "planner 'b': declined: this planner needs at least 8 ranks"},
    {"bad-version", true, "planner 'b': handshake: the planner speaks protocol version 2; taotsim speaks 1"},
    {"hang-handshake", true, "planner 'b': handshake: no answer within 1 s (--exec-timeout)"},
};

static void check_broken(const broken_case *c, bool pipeline)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    tsim_error err = {0};
    cr_assert_eq(tsim_external_set_timeout("1", &err), TSIM_OK);
    char spec[4096], pidfile[256];
    broken_spec(spec, sizeof spec, c->mode, pidfile, sizeof pidfile);
    run_result r = run_specs(spec, &t, pipeline);
    cr_assert_eq(r.rc, TSIM_E_INPUT, "%s: rc %d (%s)", c->mode, r.rc, r.msg);
    cr_assert_eq(r.init_failed, c->at_init, "%s: %s", c->mode, r.msg);
    cr_assert(strstr(r.msg, c->expect) != NULL, "%s: '%s' lacks '%s'", c->mode, r.msg, c->expect);
    if (strcmp(c->mode, "crash") == 0)
        cr_assert(strstr(r.msg, "Segmentation fault") != NULL, "%s", r.msg);
    assert_no_process_left(pidfile);
    unlink(pidfile);
    run_free(&r);
    trace_free(&t);
}

Test(exec, each_broken_planner_fails_the_run_and_leaves_nothing, .init = setup, .fini = teardown, .timeout = 120)
{
    for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; i++)
        check_broken(&broken_cases[i], false);
}

Test(exec, the_same_pipelined, .init = setup, .fini = teardown, .timeout = 120)
{
    for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; i++)
        check_broken(&broken_cases[i], true);
}

Test(exec, answers_are_matched_by_id, .init = setup, .fini = teardown, .timeout = 60)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    char spec[4096], pidfile[256];
    broken_spec(spec, sizeof spec, "reverse", pidfile, sizeof pidfile);
    char list[4200];
    snprintf(list, sizeof list, "none,%s", spec);
    run_result r = run_specs(list, &t, true);
    cr_assert_eq(r.rc, TSIM_OK, "%s", r.msg);
    /* its empty plans score like none's, record by record */
    run_result none = run_specs("none,n2=none", &t, false);
    cr_assert_str_eq(r.log.text, none.log.text);
    assert_no_process_left(pidfile);
    /* one record in flight: the planner waits for a second that never comes */
    tsim_error err = {0};
    cr_assert_eq(tsim_external_set_window("1", &err), TSIM_OK);
    cr_assert_eq(tsim_external_set_timeout("0.5", &err), TSIM_OK);
    run_result one = run_specs(spec, &t, true);
    cr_assert_eq(one.rc, TSIM_E_INPUT);
    cr_assert(strstr(one.msg, "record 0: no answer within 0.5 s") != NULL, "%s", one.msg);
    assert_no_process_left(pidfile);
    unlink(pidfile);
    run_free(&r);
    run_free(&none);
    run_free(&one);
    trace_free(&t);
}

Test(exec, the_handshake_carries_topology_and_label_options, .init = setup, .fini = teardown)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    char spec[4096], pidfile[256];
    broken_spec(spec, sizeof spec, "options", pidfile, sizeof pidfile);
    tsim_external_scan_list(spec);
    bool taken;
    tsim_error err = {0};
    cr_assert_eq(tsim_external_take_option("--b-depth=3", &taken, &err), TSIM_OK);
    cr_assert_eq(tsim_external_take_option("--b-mode=a:b c", &taken, &err), TSIM_OK);
    cr_assert_eq(tsim_external_take_option("--b-depth=4", &taken, &err), TSIM_OK);
    run_result r = run_specs(spec, &t, true);
    cr_assert_eq(r.rc, TSIM_OK, "%s", r.msg);
    FILE *f = fopen(pidfile, "r");
    char line[4096] = "";
    cr_assert(f);
    while (fgets(line, sizeof line, f) && line[0] != '{')
        ;
    fclose(f);
    cr_assert_str_eq(line, "{\"protocol\":\"taotsim-planner\",\"version\":1,\"label\":\"b\",\"topology\":{\"ranks\":4,"
                           "\"experts\":16,\"ranks_per_node\":2,\"slots\":2,\"lambda_plan\":3,\"home\":[0,0,0,0,1,"
                           "1,1,1,2,2,2,2,3,3,3,3]},\"options\":{\"depth\":\"4\",\"mode\":\"a:b c\"}}\n");
    unlink(pidfile);
    run_free(&r);
    trace_free(&t);
}

/* The reader takes any valid JSON the protocol allows, and refuses numbers
 * that are not integers. */
Test(exec, answers_may_use_all_of_json, .init = setup, .fini = teardown)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    char spec[4096], pidfile[256];
    broken_spec(spec, sizeof spec, "odd-valid", pidfile, sizeof pidfile);
    run_result r = run_specs(spec, &t, true);
    cr_assert_eq(r.rc, TSIM_OK, "%s", r.msg);
    int plans = 0;
    for (const char *at = r.log.text; (at = strstr(at, ": [0,3,0,2] 1:2\n")); at++)
        plans++;
    cr_assert_eq(plans, t.n, "every record's plan read whole:\n%s", r.log.text);
    run_free(&r);
    broken_spec(spec, sizeof spec, "fraction", pidfile, sizeof pidfile);
    r = run_specs(spec, &t, true);
    cr_assert_eq(r.rc, TSIM_E_INPUT);
    cr_assert_str_eq(r.msg, "planner 'b', record 0: alloc[0] is not [source, expert, guest, slot, tokens] (5 integers)");
    run_free(&r);
    broken_spec(spec, sizeof spec, "error-escaped", pidfile, sizeof pidfile);
    r = run_specs(spec, &t, false);
    cr_assert_eq(r.rc, TSIM_E_INPUT);
    cr_assert_str_eq(r.msg, "planner 'b', record 0: the planner answered with an error: bad \"input\" second line ?");
    assert_no_process_left(pidfile);
    unlink(pidfile);
    run_free(&r);
    trace_free(&t);
}

/* A signal that ends taotsim ends its planners too (signals.c kills their
 * process groups). The test process adopts the orphans to see them die. */
Test(exec, a_signal_takes_the_planners_along, .timeout = 60)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    char pidfile[256], cmd[8192];
    snprintf(pidfile, sizeof pidfile, "/tmp/tsim-signal-%ld.pid", (long)getpid());
    unlink(pidfile);
    snprintf(cmd, sizeof cmd,
             "\"%s\" replay \"%s/traces/tiny-4rank.json\" --planners 'b=exec:%s/broken_planner hang-with-child %s' "
             "--exec-timeout 60 -o %s.md 2>/dev/null & pid=$!; i=0; "
             "while [ $(wc -l < %s 2>/dev/null || echo 0) -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
             "sleep 0.2; kill -TERM $pid; wait $pid",
             env_dir("TAOTSIM"), env_dir("TSIM_SOURCE_ROOT"), env_dir("TSIM_TEST_PLANNERS"), pidfile, pidfile, pidfile);
    int status = system(cmd);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 143, "taotsim: status %d", status);
    FILE *f = fopen(pidfile, "r");
    cr_assert(f);
    long pid;
    int seen = 0;
    while (fscanf(f, "%ld\n", &pid) == 1) {
        seen++;
        /* killed, it becomes our zombie (we adopted it): reap it, then it is gone */
        bool reaped = false;
        for (int i = 0; i < 200 && !reaped; i++) {
            reaped = waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
            if (!reaped)
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
        cr_assert(reaped, "planner process %ld outlived taotsim", pid);
    }
    fclose(f);
    cr_assert_eq(seen, 2);
    char out[300];
    snprintf(out, sizeof out, "%s.md", pidfile);
    cr_assert(access(out, F_OK) != 0, "no output after a signal");
    unlink(pidfile);
}

/* ---- the examples against each other ------------------------------------------------ */

/* The end of a run (issue 20 items 16, 17): a planner that exits non-zero
 * or writes after its last answer fails the run when the command ends its
 * planners, before it writes anything; one that leaves a daemon holding its
 * pipes ends at once, daemon killed. */
Test(exec, a_bad_end_fails_the_run, .init = setup, .fini = teardown, .timeout = 60)
{
    static const struct {
        const char *mode, *expect;
    } ends[] = {
        {"exit-status", "planner 'b': it exited with status 4 after its last answer"},
        {"late-answer", "planner 'b': it wrote after its last answer, when its standard input had closed: "
                        "'{\"id\":5,\"replicas\":[[0,0,0]],\"alloc\":[]}'"},
        {"setsid-child", NULL},
    };
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    tsim_error err = {0};
    cr_assert_eq(tsim_external_set_timeout("30", &err), TSIM_OK);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        char spec[4096], pidfile[256];
        broken_spec(spec, sizeof spec, ends[i].mode, pidfile, sizeof pidfile);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        run_result r = run_specs(spec, &t, true);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_assert_eq(r.rc, TSIM_OK, "%s: %s", ends[i].mode, r.msg);
        cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "%s: the end waited for --exec-timeout", ends[i].mode);
        int rc = tsim_external_finish(&err);
        if (ends[i].expect) {
            cr_assert_eq(rc, TSIM_E_INPUT, "%s", ends[i].mode);
            cr_assert(strstr(err.msg, ends[i].expect) != NULL, "%s: '%s' lacks '%s'", ends[i].mode, err.msg,
                      ends[i].expect);
        } else {
            cr_assert_eq(rc, TSIM_OK, "%s: %s", ends[i].mode, err.msg);
        }
        cr_assert_eq(tsim_external_finish(&err), TSIM_OK, "reported once");
        assert_no_process_left(pidfile);
        unlink(pidfile);
        run_free(&r);
    }
    trace_free(&t);
}

static const char *const bundled[] = {
    "tiny-4rank.json",     "ep16-imb10.jsonl.gz", "ep16-imb20.jsonl.gz", "ep16-imb30.jsonl.gz",
    "ep16-imb50.jsonl.gz", "ep16-imb70.jsonl.gz", "ep32-imb10.jsonl.gz", "ep32-imb20.jsonl.gz",
    "ep32-imb30.jsonl.gz", "ep32-imb50.jsonl.gz", "ep32-imb70.jsonl.gz",
};

/* The plans of one spec over a trace, pipelined or not. */
static char *plans_of(const char *spec, const char *trace, bool pipeline)
{
    trace_records t;
    trace_load(&t, trace);
    run_result r = run_specs(spec, &t, pipeline);
    cr_assert_eq(r.rc, TSIM_OK, "%s on %s: %s", spec, trace, r.msg);
    trace_free(&t);
    return r.log.text;
}

static void assert_same_plans(const char *a, const char *b, bool pipeline_b)
{
    for (size_t i = 0; i < sizeof bundled / sizeof bundled[0]; i++) {
        char *pa = plans_of(a, bundled[i], false);
        char *pb = plans_of(b, bundled[i], pipeline_b);
        cr_assert(strlen(pa) > 0);
        cr_assert_str_eq(pa, pb, "%s: '%s' and '%s' differ", bundled[i], a, b);
        free(pa);
        free(pb);
    }
}

Test(examples, plugin_equals_the_built_in_and_the_exec_twin, .init = setup, .fini = teardown, .timeout = 300)
{
    char plugin[4096], exec[4096];
    snprintf(plugin, sizeof plugin, "g=plugin:%s/libgreedy_plugin.so", env_dir("TSIM_EXAMPLE_PLANNERS"));
    snprintf(exec, sizeof exec, "g=exec:%s/greedy", env_dir("TSIM_EXAMPLE_PLANNERS"));
    assert_same_plans("g=greedy", plugin, false);
    assert_same_plans("g=greedy", exec, true);
    /* an option, the same way to both */
    strncat(plugin, ":--divisor=3", sizeof plugin - strlen(plugin) - 1);
    tsim_external_scan_list(exec);
    bool taken;
    tsim_error err = {0};
    cr_assert_eq(tsim_external_take_option("--g-divisor=3", &taken, &err), TSIM_OK);
    assert_same_plans(plugin, exec, true);
    char *half = plans_of("g=greedy", "ep16-imb70.jsonl.gz", false);
    char *third = plans_of(plugin, "ep16-imb70.jsonl.gz", false);
    cr_assert_str_neq(half, third, "the divisor changes the plans");
    free(half);
    free(third);
}

Test(examples, python_equals_its_c_twin, .init = setup, .fini = teardown, .timeout = 600)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0)
        cr_skip_test("no python3");
    char python[4096], exec[4096];
    snprintf(python, sizeof python, "g=exec:python3 %s/examples/planners/greedy.py", env_dir("TSIM_SOURCE_ROOT"));
    snprintf(exec, sizeof exec, "g=exec:%s/greedy", env_dir("TSIM_EXAMPLE_PLANNERS"));
    assert_same_plans(exec, python, true);
}

Test(examples, pipelining_changes_nothing_but_speed, .init = setup, .fini = teardown, .timeout = 120)
{
    char list[4096];
    snprintf(list, sizeof list, "echo,g=exec:%s/greedy,none", env_dir("TSIM_EXAMPLE_PLANNERS"));
    tsim_error err = {0};
    for (int w = 1; w <= 64; w *= 4) {
        char text[16];
        snprintf(text, sizeof text, "%d", w);
        cr_assert_eq(tsim_external_set_window(text, &err), TSIM_OK);
        char *one = plans_of(list, "ep32-imb50.jsonl.gz", false);
        char *many = plans_of(list, "ep32-imb50.jsonl.gz", true);
        cr_assert_str_eq(one, many, "window %d", w);
        free(one);
        free(many);
    }
}

/* ---- the plugin loader ------------------------------------------------------------ */

typedef struct {
    const char *file;   /* in TSIM_TEST_PLANNERS */
    const char *stage;  /* "load", "init" or "plan" */
    const char *expect;
} plugin_case;

static const plugin_case plugin_cases[] = {
    {"libbad_abi.so", "load", "libbad_abi.so: built for planner ABI 99, this taotsim speaks ABI 1 (rebuild"},
    {"libbad_size.so", "load", "libbad_size.so: its descriptor is"},
    {"libbad_no_entry.so", "load", "libbad_no_entry.so does not export taotsim_planner_entry"},
    {"libbad_null.so", "load", "libbad_null.so: taotsim_planner_entry() returned no descriptor"},
    {"libbad_no_plan.so", "load", "the descriptor of 'bad' has no plan function"},
    {"libbad_offset.so", "load", "option 'level' lies at offset 4096 (4 bytes), outside or misaligned in the "
                                 "4-byte options block"},
    {"libbad_default.so", "load", "the default of option 'level' does not parse: --b-level:"},
    {"libnosuch.so", "load", "cannot load"},
    {"libbad_decline.so", "init", "planner 'b': plugin 'bad' declined: this plugin needs at least 8 ranks, got 4"},
    {"libbad_fail.so", "plan", "planner 'b', record 2: plugin 'bad' failed: cannot plan layer 0"},
    {"libbad_invalid.so", "plan", "planner 'b', record 0 (microbatch 0, layer 0): invalid plan: replica 0 puts "
                                  "expert 0 on its home rank 0"},
    {"libbad_overfull.so", "plan", "planner 'b', record 0: plugin 'bad' returned 9 replicas, capacity 8"},
    /* sizes and buffers are taotsim's: overwriting them is refused, never trusted */
    {"libbad_ranks.so", "plan", "planner 'b', record 0: plugin 'bad' changed the plan's 'ranks', which only taotsim "
                                "sets"},
    {"libbad_capacity.so", "plan", "planner 'b', record 0: plugin 'bad' changed the plan's 'capacity'"},
    {"libbad_replicas.so", "plan", "planner 'b', record 0: plugin 'bad' changed the plan's 'replicas'"},
    {"libbad_huge_batch.so", "load", "'bad' asks for batches of 2147483647 records; at most 4096"},
};

Test(plugin, every_broken_plugin_is_refused_clearly, .init = setup, .fini = teardown)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    for (size_t i = 0; i < sizeof plugin_cases / sizeof plugin_cases[0]; i++) {
        const plugin_case *c = &plugin_cases[i];
        char spec[4096];
        snprintf(spec, sizeof spec, "b=plugin:%s/%s", env_dir("TSIM_TEST_PLANNERS"), c->file);
        run_result r = run_specs(spec, &t, false);
        cr_assert_eq(r.rc, TSIM_E_INPUT, "%s: rc %d: %s", c->file, r.rc, r.msg);
        cr_assert_eq(r.init_failed, strcmp(c->stage, "plan") != 0, "%s: %s", c->file, r.msg);
        cr_assert(strstr(r.msg, c->expect) != NULL, "%s: '%s' lacks '%s'", c->file, r.msg, c->expect);
        if (strcmp(c->stage, "load") == 0)
            cr_assert(strncmp(r.msg, "planner 'b': ", 13) == 0, "%s", r.msg);
        run_free(&r);
    }
    trace_free(&t);
}

Test(plugin, options_are_checked_like_built_in_ones, .init = setup, .fini = teardown)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    char spec[4096];
    snprintf(spec, sizeof spec, "b=plugin:%s/libbad_batch.so:--level=12", env_dir("TSIM_TEST_PLANNERS"));
    run_result r = run_specs(spec, &t, false);
    cr_assert_eq(r.rc, TSIM_E_INPUT);
    cr_assert(strstr(r.msg, "planner 'b': --b-level:") != NULL, "%s", r.msg);
    run_free(&r);
    snprintf(spec, sizeof spec, "b=plugin:%s/libbad_batch.so:--nope=1", env_dir("TSIM_TEST_PLANNERS"));
    r = run_specs(spec, &t, false);
    cr_assert_eq(r.rc, TSIM_E_INPUT);
    cr_assert(strstr(r.msg, "unknown option --b-nope (plugin 'bad' takes --b-level)") != NULL, "%s", r.msg);
    run_free(&r);
    trace_free(&t);
}

Test(plugin, batches_of_its_own_size, .init = setup, .fini = teardown)
{
    trace_records t;
    trace_load(&t, "tiny-4rank.json");
    char list[4096];
    snprintf(list, sizeof list, "none,b=plugin:%s/libbad_batch.so", env_dir("TSIM_TEST_PLANNERS"));
    run_result batched = run_specs(list, &t, true);
    cr_assert_eq(batched.rc, TSIM_OK, "%s", batched.msg);
    run_result none = run_specs("none,n2=none", &t, false);
    cr_assert_str_eq(batched.log.text, none.log.text);
    run_free(&batched);
    run_free(&none);
    trace_free(&t);
}

/* ---- the test-only planner ------------------------------------------------------ */

Test(registry, a_test_only_planner_is_registered_like_a_built_in)
{
    const tsim_planner_desc *d = tsim_planner_find("greedy");
    cr_assert(d, "tests/planners/test_registry.c registers greedy");
    bool listed = false;
    for (const tsim_planner_desc *const *p = tsim_planner_all(); *p; p++)
        listed = listed || *p == d;
    cr_assert(listed);
    cr_assert(tsim_planner_find("taot"), "the built-ins stay");
    cr_assert(!d->external);
}

/* ---- temporary outputs ---------------------------------------------------------- */

#include "outfile.h"

/* The signal handler's list of temporaries has no limit: every one of 100
 * open outputs is removed (there were 64 places, the 65th was dropped). */
Test(outfile, every_pending_temporary_is_removed)
{
    char dir[] = "/tmp/tsim-outfile-XXXXXX";
    cr_assert(mkdtemp(dir));
    enum { N = 100 };
    static tsim_outfile files[N];
    for (int i = 0; i < N; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/out%d.md", dir, i);
        tsim_error err = {0};
        cr_assert_eq(tsim_outfile_open(&files[i], path, &err), TSIM_OK, "%d: %s", i, err.msg);
        cr_assert_eq(access(files[i].tmp_path, F_OK), 0);
    }
    tsim_outfile_unlink_pending();
    for (int i = 0; i < N; i++) {
        cr_assert_neq(access(files[i].tmp_path, F_OK), 0, "%s is left", files[i].tmp_path);
        tsim_outfile_abort(&files[i]);
    }
    tsim_error err = {0};
    cr_assert_eq(tsim_outfile_check_writable("", &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "empty file name (give a path, or - for standard output)");
    cr_assert_eq(rmdir(dir), 0, "the directory is empty");
}
