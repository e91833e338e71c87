/* Issue 24, items 2 and 4: traffic matrices and layouts the stacks load.
 * Properties over random records and every registered planner: the node
 * matrices' off-diagonal sums are the evaluator's traffic_inter_before/after
 * on every record, the rank matrices' column sums are the loads before and
 * after, replica copies split into intra/inter and re-homes into
 * rehomed_intra/inter exactly; the hottest link on hand-checked matrices;
 * layout files written, read back and refused with their messages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout_export.h"
#include "layout_io.h"
#include "planner_configs.h"
#include "random_records.h"
#include "registry.h"
#include "session.h"
#include "traffic.h"

#define MAX_CONFIGS 256

typedef struct {
    tsim_traffic node, rank;
    int64_t *before, *after; /* one record's node matrices */
    int64_t *rb, *ra;        /* one record's rank matrices */
    int64_t checked;
} check_ctx;

static int64_t weights_total(const tsim_traffic_planner *p, int n, bool crossing, const int64_t *m)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if ((i != j) == crossing)
                s += m[(size_t)i * (size_t)n + (size_t)j];
    (void)p;
    return s;
}

/* Called for every evaluated plan: the record's own matrices against the
 * evaluator's metrics, and the running matrices' growth against intra/inter
 * and rehomed_*. */
static int check_hook(void *ctx_, tsim_session *s, int planner, const tsim_record *rec, tsim_plan *plan,
                      const tsim_metrics *m, tsim_error *err)
{
    check_ctx *c = ctx_;
    const tsim_topology *t = &s->topo;
    const int n = c->node.n, R = t->ranks;
    memset(c->before, 0, sizeof *c->before * (size_t)n * (size_t)n);
    memset(c->after, 0, sizeof *c->after * (size_t)n * (size_t)n);
    tsim_traffic_record(t, TSIM_TRAFFIC_NODE, rec, plan, c->before, c->after);
    cr_assert_eq((double)tsim_traffic_crossing(c->before, n), m->v[TSIM_M_TRAFFIC_INTER_BEFORE],
                 "planner %s record %lld: node crossing before", s->planners[planner].label, (long long)rec->index);
    cr_assert_eq((double)tsim_traffic_crossing(c->after, n), m->v[TSIM_M_TRAFFIC_INTER_AFTER],
                 "planner %s record %lld: node crossing after", s->planners[planner].label, (long long)rec->index);
    memset(c->rb, 0, sizeof *c->rb * (size_t)R * (size_t)R);
    memset(c->ra, 0, sizeof *c->ra * (size_t)R * (size_t)R);
    tsim_traffic_record(t, TSIM_TRAFFIC_RANK, rec, plan, c->rb, c->ra);
    for (int g = 0; g < R; g++) {
        int64_t before = 0, after = 0;
        for (int r = 0; r < R; r++) {
            before += c->rb[(size_t)r * (size_t)R + (size_t)g];
            after += c->ra[(size_t)r * (size_t)R + (size_t)g];
            cr_assert_geq(c->ra[(size_t)r * (size_t)R + (size_t)g], 0);
        }
        cr_assert_eq(before, s->ev.load_before[g], "planner %s: rank %d's load before", s->planners[planner].label, g);
        cr_assert_eq(after, s->ev.load_after[g], "planner %s: rank %d's load after", s->planners[planner].label, g);
    }
    /* The running node matrices grow by exactly this record's copies. */
    tsim_traffic_planner *p = &c->node.p[planner];
    const int64_t w_in = weights_total(p, n, false, p->weights), w_x = weights_total(p, n, true, p->weights);
    const int64_t h_in = weights_total(p, n, false, p->rehomed), h_x = weights_total(p, n, true, p->rehomed);
    int64_t host = 0;
    for (int r = 0; r < R; r++)
        host -= p->host[r];
    int rc = tsim_traffic_add(&c->node, planner, t, rec, plan, err);
    rc = rc ? rc : tsim_traffic_add(&c->rank, planner, t, rec, plan, err);
    cr_assert_eq(rc, TSIM_OK, "%s", err->msg);
    for (int r = 0; r < R; r++)
        host += p->host[r];
    const double intra = (double)(weights_total(p, n, false, p->weights) - w_in);
    const double inter = (double)(weights_total(p, n, true, p->weights) - w_x);
    const double rh_in = (double)(weights_total(p, n, false, p->rehomed) - h_in);
    const double rh_x = (double)(weights_total(p, n, true, p->rehomed) - h_x);
    if (p->from_host) {
        cr_assert_eq(intra + inter + rh_in + rh_x, 0.0, "host planners copy nothing GPU to GPU");
        cr_assert_eq((double)host, m->v[TSIM_M_INTRA] + m->v[TSIM_M_INTER] + m->v[TSIM_M_REHOMED_INTRA] +
                                       m->v[TSIM_M_REHOMED_INTER]);
    } else {
        cr_assert_eq(intra, m->v[TSIM_M_INTRA], "planner %s: intra", s->planners[planner].label);
        cr_assert_eq(inter, m->v[TSIM_M_INTER], "planner %s: inter", s->planners[planner].label);
        cr_assert_eq(rh_in, m->v[TSIM_M_REHOMED_INTRA], "planner %s: rehomed intra", s->planners[planner].label);
        cr_assert_eq(rh_x, m->v[TSIM_M_REHOMED_INTER], "planner %s: rehomed inter", s->planners[planner].label);
        cr_assert_eq(host, 0);
    }
    c->checked++;
    return TSIM_OK;
}

/* One planner on one random shape: every record checked. false when the
 * planner refuses the shape (an input error at start). */
static bool run_one(const char *spec, const tsim_random_shape *sh, uint64_t *rng, int records, int64_t *checked)
{
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner p;
    tsim_error err = {0};
    cr_assert_eq(tsim_planner_spec_parse(&p, spec, &base, &err), TSIM_OK, "%s: %s", spec, err.msg);
    if (p.desc->external || planner_is_expensive(p.desc))
        return false;
    tsim_session s;
    if (tsim_session_init(&s, sh->ranks, sh->experts, sh->ranks_per_node, sh->slots, NULL, &p, 1, 3.0, &err))
        return false;
    check_ctx c = {0};
    cr_assert_eq(tsim_traffic_init(&c.node, TSIM_TRAFFIC_NODE, &s, &err), TSIM_OK);
    cr_assert_eq(tsim_traffic_init(&c.rank, TSIM_TRAFFIC_RANK, &s, &err), TSIM_OK);
    const size_t nn = (size_t)c.node.n * (size_t)c.node.n, RR = (size_t)sh->ranks * (size_t)sh->ranks;
    c.before = calloc(nn, sizeof *c.before);
    c.after = calloc(nn, sizeof *c.after);
    c.rb = calloc(RR, sizeof *c.rb);
    c.ra = calloc(RR, sizeof *c.ra);
    s.hook = check_hook;
    s.hook_ctx = &c;
    for (int i = 0; i < records; i++) {
        tsim_record rec;
        tsim_random_record(rng, sh, &rec);
        rec.index = i;
        rec.layer = i % 2;
        rec.microbatch = i / 2;
        int rc = tsim_session_record(&s, &rec, &err);
        cr_assert_eq(rc, TSIM_OK, "%s on R=%d E=%d K=%d rpn=%d: %s", spec, sh->ranks, sh->experts, sh->slots,
                     sh->ranks_per_node, err.msg);
        tsim_record_free(&rec);
    }
    cr_assert_eq(tsim_session_drain(&s, &err), TSIM_OK);
    /* Both levels saw the same tokens: the sums of all cells agree. */
    int64_t node_sum = 0, rank_sum = 0;
    for (size_t k = 0; k < nn; k++)
        node_sum += c.node.p[0].after[k];
    for (size_t k = 0; k < RR; k++)
        rank_sum += c.rank.p[0].after[k];
    cr_assert_eq(node_sum, rank_sum);
    *checked += c.checked;
    tsim_traffic_free(&c.node);
    tsim_traffic_free(&c.rank);
    free(c.before);
    free(c.after);
    free(c.rb);
    free(c.ra);
    tsim_session_free(&s);
    return true;
}

Test(traffic, matrices_match_the_evaluator_on_every_record, .timeout = 600)
{
    static tsim_config_spec specs[MAX_CONFIGS];
    const int n = tsim_registry_configs(specs, MAX_CONFIGS, false);
    uint64_t rng = 24;
    int64_t checked = 0;
    int ran = 0;
    for (int round = 0; round < 6; round++) {
        tsim_random_shape sh;
        tsim_random_shape_draw(&rng, 16, &sh);
        for (int i = 0; i < n; i++)
            ran += run_one(specs[i], &sh, &rng, 6, &checked);
    }
    cr_assert_gt(ran, 30, "only %d planner runs", ran);
    cr_assert_gt(checked, 180);
}

Test(traffic, hottest_link_by_hand)
{
    /* 3 nodes: the diagonal is local and never a link; 2->0 carries 50 of 100. */
    const int64_t m[9] = {900, 10, 20, 5, 900, 15, 50, 0, 900};
    tsim_traffic_link l = tsim_traffic_hottest(m, 3);
    cr_assert_eq(l.src, 2);
    cr_assert_eq(l.dst, 0);
    cr_assert_eq(l.value, 50);
    cr_assert_eq(l.total, 100);
    cr_assert_float_eq(l.share, 0.5, 1e-15);
    cr_assert_eq(tsim_traffic_crossing(m, 3), 100);
    /* ties go to the lowest source, then destination; nothing crossing: none */
    const int64_t tie[4] = {0, 7, 7, 0}, local[4] = {3, 0, 0, 4};
    l = tsim_traffic_hottest(tie, 2);
    cr_assert(l.src == 0 && l.dst == 1);
    l = tsim_traffic_hottest(local, 2);
    cr_assert_eq(l.src, -1);
    cr_assert_eq(l.share, 0.0);
}

/* ---- layout files ---------------------------------------------------------- */

static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/tsim-layout-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static char *written(const tsim_layout_table *t, tsim_layout_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    tsim_error err = {0};
    cr_assert_eq(tsim_layout_write(m, t, fmt, &err), TSIM_OK, "%s", err.msg);
    fclose(m);
    return buf;
}

Test(layout_io, both_formats_round_trip)
{
    tsim_layout_table t;
    tsim_layout_table_init(&t, 6);
    const int32_t l1[6] = {3, 0, 1, 2, 3, 3}, l0[6] = {0, 1, 2, 3, 0, 1};
    tsim_error err = {0};
    cr_assert_eq(tsim_layout_table_put(&t, 1, l1, &err), TSIM_OK);
    cr_assert_eq(tsim_layout_table_put(&t, 0, l0, &err), TSIM_OK);
    char *sg = written(&t, TSIM_LAYOUT_SGLANG);
    cr_assert_str_eq(sg, "{\"physical_to_logical_map\": [\n  [0, 1, 2, 3, 0, 1],\n  [3, 0, 1, 2, 3, 3]\n]}\n");
    char *tr = written(&t, TSIM_LAYOUT_TRTLLM);
    cr_assert_str_eq(tr, "{\"num_slots\": 6, \"layer_updates_per_iter\": 0, \"initial_global_assignments\": {\n"
                         "  \"0\": [0, 1, 2, 3, 0, 1],\n  \"1\": [3, 0, 1, 2, 3, 3]\n}}\n");
    const char *texts[2] = {sg, tr};
    for (int f = 0; f < 2; f++) {
        char *path = write_temp(texts[f]);
        tsim_layout_table back;
        tsim_layout_format fmt;
        cr_assert_eq(tsim_layout_read(path, &back, &fmt, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq((int)fmt, f);
        cr_assert_eq(back.count, 2);
        cr_assert_eq(back.physical, 6);
        cr_assert_arr_eq(tsim_layout_table_find(&back, 1), l1, sizeof l1);
        cr_assert_arr_eq(tsim_layout_table_find(&back, 0), l0, sizeof l0);
        /* 2 ranks x 3 positions, 4 experts: every expert has a copy */
        cr_assert_eq(tsim_layout_check(&back, 2, 3, 4, path, &err), TSIM_OK, "%s", err.msg);
        cr_assert_eq(tsim_layout_check(&back, 3, 3, 4, path, &err), TSIM_E_INPUT);
        cr_assert_eq(tsim_layout_check(&back, 2, 3, 5, path, &err), TSIM_E_INPUT);
        cr_assert(strstr(err.msg, "layer 0: expert 4 has no copy"), "%s", err.msg);
        tsim_layout_table_free(&back);
        unlink(path);
        free(path);
    }
    free(sg);
    free(tr);
    tsim_layout_table_free(&t);
}

Test(layout_io, sglang_needs_layers_from_zero)
{
    tsim_layout_table t;
    tsim_layout_table_init(&t, 2);
    const int32_t row[2] = {0, 1};
    tsim_error err = {0};
    cr_assert_eq(tsim_layout_table_put(&t, 0, row, &err), TSIM_OK);
    cr_assert_eq(tsim_layout_table_put(&t, 2, row, &err), TSIM_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert_eq(tsim_layout_write(m, &t, TSIM_LAYOUT_SGLANG, &err), TSIM_E_INPUT);
    fclose(m);
    cr_assert_eq(len, 0, "nothing written");
    cr_assert(strstr(err.msg, "layer 1 has no layout"), "%s", err.msg);
    free(buf);
    tsim_layout_table_free(&t);
}

Test(layout_io, bad_files_are_named)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"logical_count\": [[1]]}", "not a layout"},
        {"{\"physical_to_logical_map\": [[0, 1], [0]]}", "physical_to_logical_map[1]: 1 entries, but the first row has 2"},
        {"{\"physical_to_logical_map\": [[0, -1]]}", "physical_to_logical_map[0][1]: expected an expert id"},
        {"{\"physical_to_logical_map\": [[0, 1.5]]}", "physical_to_logical_map[0][1]: expected an expert id"},
        {"{\"initial_global_assignments\": {\"x\": [0]}}", "key \"x\" is not a layer index"},
        {"{\"num_slots\": 3, \"initial_global_assignments\": {\"0\": [0, 1]}}", "num_slots is not the length"},
        {"{\"physical_to_logical_map\": [[0, 1]]} x", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = write_temp(cases[i].text);
        tsim_layout_table t;
        tsim_error err = {0};
        cr_assert_eq(tsim_layout_read(path, &t, NULL, &err), TSIM_E_INPUT, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, path), "case %zu names the file: %s", i, err.msg);
        unlink(path);
        free(path);
    }
}

Test(layout_io, collector_keeps_each_layers_last_layout)
{
    tsim_layout_collector c;
    tsim_layout_collector_init(&c);
    tsim_plan plan;
    tsim_error err = {0};
    cr_assert_eq(tsim_plan_init(&plan, 2, 4, &err), TSIM_OK);
    tsim_record rec = {.layer = 3, .ranks = 2, .experts = 2};
    /* a plan without a layout (eplb while cold) marks the layer only */
    cr_assert_eq(tsim_layout_collector_add(&c, &rec, &plan, &err), TSIM_OK);
    const tsim_layout_table *out = NULL;
    cr_assert_eq(tsim_layout_collector_finish(&c, "e", &out, &err), TSIM_E_INPUT);
    cr_assert(strstr(err.msg, "planner 'e' ended layer 3 without a layout"), "%s", err.msg);
    for (int k = 0; k < 2; k++) {
        int32_t *l = tsim_plan_layout(&plan, 4);
        const int32_t rows[2][4] = {{0, 1, 1, 0}, {1, 0, 0, 1}};
        memcpy(l, rows[k], sizeof rows[k]);
        cr_assert_eq(tsim_layout_collector_add(&c, &rec, &plan, &err), TSIM_OK);
    }
    cr_assert_eq(tsim_layout_collector_finish(&c, "e", &out, &err), TSIM_OK);
    cr_assert_eq(out->count, 1);
    const int32_t want[4] = {1, 0, 0, 1};
    cr_assert_arr_eq(tsim_layout_table_find(out, 3), want, sizeof want);
    /* a reset drops the layout: the next plan has none until filled */
    tsim_plan_reset(&plan);
    cr_assert_eq(plan.layout_positions, 0);
    tsim_plan_free(&plan);
    tsim_layout_collector_free(&c);
}
