/* `taotsim bench`: planner latency (the plan call alone, median and p95 over
 * records generated in memory from a fixed seed) and, with --read, trace read
 * throughput. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_read.h"
#include "cli_common.h"
#include "commands.h"
#include "evaluate.h"
#include "external.h"
#include "options.h"
#include "parse.h"
#include "planner.h"
#include "registry.h"
#include "report.h"
#include "stats.h"
#include "taot.h"
#include "taot_planner.h"
#include "vector.h"

#define DEFAULT_SHAPES "16:128:2,32:128:2,64:256:2"
#define DEFAULT_RECORDS 10000
#define WARMUP_RECORDS 100
#define MAX_PLANNERS 32
#define MAX_SHAPES 16
/* Generator: 4096 tokens per rank, top-8 routing (32768 picks per source rank). */
#define TOKENS_PER_RANK 4096
#define TOP_K 8

static void bench_help(void)
{
    printf("usage: taotsim bench [options] [planner options]\n"
           "\n"
           "Planner latency: the wall time of the plan call alone, over records\n"
           "generated in memory from a fixed seed (a hot rank per record, initial\n"
           "imbalance drawn in 30-50%%, %d tokens per rank, top-%d), on one core.\n"
           "Each plan is checked by the evaluator (outside the timing). The first planner\n"
           "that fails (an error, an invalid plan, a timeout) ends the run: its full\n"
           "message goes to standard error, nothing to standard output, exit status 2\n"
           "(3 when a built-in planner returns an invalid plan: a bug).\n"
           "\n"
           "Options:\n"
           "  --planners LIST      comma-separated planners (default: every registered\n"
           "                       planner but none and the expensive ones); a bare 'taot' runs both phase-3\n"
           "                       variants (taot = auction, taot-split) unless\n"
           "                       --taot-phase3 is given or the list names its own\n"
           "                       'taot-split' (then only what the list names runs);\n"
           "                       LABEL=NAME:--opt=v runs a planner under a label with\n"
           "                       its own options\n"
           "  --records N          timed records per planner and shape (default %d;\n"
           "                       %d untimed warm-up records first)\n"
           "  --shapes LIST        R:E:K,... ranks, experts, guest slots\n"
           "                       (default " DEFAULT_SHAPES ")\n"
           "  --rpn N              ranks per node (default 8)\n"
           "  --seed N             generator seed (default 1)\n"
           "  --read FILE          also measure reading FILE (MB/s, records/s, peak RSS);\n"
           "                       alone (without --planners/--shapes) it runs only that\n"
           "  --format md|csv|json output format (default md)\n"
           "  -h, --help           this help\n"
           "\n"
           "With --taot-device gpu the taot rows plan on the GPU (one record per call)\n"
           "and, in markdown, a second table compares the GPU in launches of %d records\n"
           "with the CPU reference (every GPU plan checked; exit status 1 if any differs).\n"
           "\n",
           TOKENS_PER_RANK, TOP_K, DEFAULT_RECORDS, WARMUP_RECORDS, TSIM_TAOT_GPU_DEFAULT_BATCH);
    tsim_cli_planners_help(stdout);
    tsim_external_help(stdout);
}

/* ------------------------------------------------------------------------- */
/* record generator                                                           */

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
    return (double)(mix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Record `index` of a shape: base popularity 1 +- 10% per expert, one hot rank
 * whose experts get a share f of every source's picks, f chosen so that the hot
 * rank's load is (1 + rho) times the mean for rho drawn in [0.3, 0.5], and
 * +-5% noise per (source, expert). Deterministic in (seed, shape, index). */
static void gen_record(const tsim_topology *t, uint64_t seed, int64_t index, tsim_record *rec, double *weights)
{
    const int R = t->ranks, E = t->experts;
    uint64_t s = seed ^ (UINT64_C(0x51ED2701) * (uint64_t)(R * 131 + E * 7 + t->slots)) ^
                 ((uint64_t)index * UINT64_C(0xD1B54A32D192ED03));
    mix64(&s);
    const double rho = 0.3 + 0.2 * unit(&s);
    const int hot = (int)(mix64(&s) % (uint64_t)R);
    const double f = R > 1 ? rho / (double)(R - 1) : 0.0;
    double wsum = 0.0;
    for (int e = 0; e < E; e++) {
        weights[e] = 1.0 + 0.2 * (unit(&s) - 0.5);
        wsum += weights[e];
    }
    const double picks = (double)TOKENS_PER_RANK * TOP_K;
    for (int r = 0; r < R; r++) {
        int64_t *row = rec->counts + (size_t)r * (size_t)E;
        for (int e = 0; e < E; e++) {
            double share = (1.0 - f) * weights[e] / wsum;
            if (t->home[e] == hot)
                share += f / (double)t->experts_per_rank;
            double noise = 1.0 + 0.1 * (unit(&s) - 0.5);
            row[e] = (int64_t)floor(picks * share * noise);
        }
    }
    rec->index = index;
    rec->microbatch = index;
    rec->layer = 0;
}

/* ------------------------------------------------------------------------- */
/* latency rows                                                               */

typedef struct {
    char label[TSIM_LABEL_MAX];
    const char *algorithm;
    int R, E, K;
    int64_t records;
    tsim_summary ns;          /* plan-call wall time */
    double replicas_mean;
    double rho_before_mean, rho_after_mean;
    double balancedness_before_mean, balancedness_after_mean;
    int64_t capped;           /* records with TSIM_NOTE_AUCTION_CAPPED */
    int64_t gpu_fallback;     /* records with TSIM_NOTE_GPU_FALLBACK */
    cJSON *options;
} bench_row;

/* Checks a plan as replay does: a plan from outside taotsim that breaks a
 * rule is bad input (exit 2), a built-in planner's is a bug. */
static int check_plan(const tsim_planner *p, tsim_evaluator *ev, const tsim_record *rec, const tsim_plan *plan,
                      tsim_metrics *m, tsim_error *err)
{
    int rc = tsim_evaluate(ev, rec, plan, 3.0, p->label, m, err);
    if (rc && p->desc->external)
        err->code = rc = TSIM_E_INPUT;
    return rc;
}

/* The timed loop of bench_one for a planner that takes windows of records:
 * warm-up and timing in batches of `window`. Fills row, or returns an error.
 * rec is the generator's record, copied into the batch. */
static int bench_batched(tsim_planner *p, const tsim_topology *t, int64_t n_records, uint64_t seed, int window,
                         bench_row *row, tsim_evaluator *ev, tsim_record *rec, double *weights, double *ns,
                         double *scratch, tsim_progress *progress, int64_t *progress_done, int64_t progress_total,
                         tsim_error *err)
{
    int rc = TSIM_OK;
    tsim_record *batch = calloc((size_t)window, sizeof *batch);
    const tsim_record **ptrs = calloc((size_t)window, sizeof *ptrs);
    tsim_plan *plans = calloc((size_t)window, sizeof *plans);
    int ready = 0;
    if (!batch || !ptrs || !plans) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto done;
    }
    for (; ready < window; ready++) {
        if ((rc = tsim_record_alloc(&batch[ready], t->ranks, t->experts, err)) ||
            (rc = tsim_plan_init(&plans[ready], t->ranks, t->ranks * (t->slots > 0 ? t->slots : 1), err)))
            goto done;
        ptrs[ready] = &batch[ready];
    }
    const size_t cells = (size_t)t->ranks * (size_t)t->experts;
    double replicas = 0.0, rho_b = 0.0, rho_a = 0.0, bal_b = 0.0, bal_a = 0.0;
    const int64_t warmup = n_records < WARMUP_RECORDS ? n_records : WARMUP_RECORDS;
    for (int pass = 0; pass < 2; pass++) {
        const int64_t total = pass == 0 ? warmup : n_records;
        for (int64_t start = 0; start < total; start += window) {
            const int m = total - start < window ? (int)(total - start) : window;
            for (int k = 0; k < m; k++) {
                gen_record(t, seed, start + k, rec, weights);
                int64_t *counts = batch[k].counts;
                batch[k] = *rec;
                batch[k].counts = counts;
                memcpy(counts, rec->counts, sizeof *counts * cells);
                tsim_plan_reset(&plans[k]);
            }
            const int64_t t0 = tsim_now_ns();
            rc = p->desc->plan_batch(p->state, ptrs, m, plans, err);
            const int64_t t1 = tsim_now_ns();
            if (rc) {
                tsim_error_prefix(err, "planner '%s'", p->label);
                goto done;
            }
            for (int k = 0; pass == 1 && k < m; k++) {
                ns[start + k] = (double)(t1 - t0) / m;
                tsim_metrics mt;
                if ((rc = check_plan(p, ev, &batch[k], &plans[k], &mt, err)))
                    goto done;
                replicas += plans[k].count;
                rho_b += mt.v[TSIM_M_RHO_BEFORE];
                rho_a += mt.v[TSIM_M_RHO_AFTER];
                bal_b += mt.v[TSIM_M_BALANCEDNESS_BEFORE];
                bal_a += mt.v[TSIM_M_BALANCEDNESS_AFTER];
            }
            if (pass == 1)
                tsim_progress_update(progress, *progress_done + start, progress_total);
        }
    }
    row->records = n_records;
    row->ns = tsim_summarize(ns, (size_t)n_records, scratch);
    row->replicas_mean = replicas / (double)n_records;
    row->rho_before_mean = rho_b / (double)n_records;
    row->rho_after_mean = rho_a / (double)n_records;
    row->balancedness_before_mean = bal_b / (double)n_records;
    row->balancedness_after_mean = bal_a / (double)n_records;
done:
    for (int k = 0; k < ready; k++) {
        tsim_record_free(&batch[k]);
        tsim_plan_free(&plans[k]);
    }
    if (ready < window && batch) /* a record allocated before its plan failed */
        tsim_record_free(&batch[ready]);
    free(batch);
    free(ptrs);
    free(plans);
    return rc;
}

/* Runs one planner on one shape. Fills row, or returns the planner's error. */
static int bench_one(tsim_planner *p, const tsim_topology *t, int64_t n_records, uint64_t seed, bench_row *row,
                     tsim_progress *progress, int64_t *progress_done, int64_t progress_total, tsim_error *err)
{
    int rc = TSIM_OK;
    tsim_record rec = {0};
    tsim_plan plan = {0};
    tsim_evaluator ev = {0};
    double *ns = NULL, *scratch = NULL, *weights = NULL;
    bool started = false, have_plan = false, have_ev = false;
    snprintf(row->label, sizeof row->label, "%s", p->label);
    row->algorithm = p->desc->name;
    row->R = t->ranks;
    row->E = t->experts;
    row->K = t->slots;

    if ((rc = tsim_record_alloc(&rec, t->ranks, t->experts, err)))
        goto done;
    ns = malloc(sizeof *ns * (size_t)n_records);
    scratch = malloc(sizeof *scratch * (size_t)n_records);
    weights = malloc(sizeof *weights * (size_t)t->experts);
    if (!ns || !scratch || !weights) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto done;
    }
    if ((rc = tsim_plan_init(&plan, t->ranks, t->ranks * (t->slots > 0 ? t->slots : 1), err)))
        goto done;
    have_plan = true;
    if ((rc = tsim_evaluator_init(&ev, t, err)))
        goto done;
    have_ev = true;
    if ((rc = tsim_planner_start(p, t, err)))
        goto done;
    started = true;

    /* A pipelined planner (an exec planner's --exec-window) gets its window
     * of records per plan_batch call; each record's time is the batch's
     * divided evenly. */
    const int window = p->desc->window && p->desc->plan_batch ? p->desc->window(p->state) : 1;
    if (window > 1) {
        rc = bench_batched(p, t, n_records, seed, window, row, &ev, &rec, weights, ns, scratch, progress,
                           progress_done, progress_total, err);
        goto done;
    }
    /* Warm-up: caches, branch predictors, lazily touched pages. */
    for (int64_t i = 0; i < WARMUP_RECORDS && i < n_records; i++) {
        gen_record(t, seed, i, &rec, weights);
        if ((rc = p->desc->plan(p->state, &rec, &plan, err)))
            goto done;
    }
    double replicas = 0.0, rho_b = 0.0, rho_a = 0.0, bal_b = 0.0, bal_a = 0.0;
    int64_t capped = 0, gpu_fallback = 0;
    for (int64_t i = 0; i < n_records; i++) {
        gen_record(t, seed, i, &rec, weights);
        const int64_t t0 = tsim_now_ns();
        rc = p->desc->plan(p->state, &rec, &plan, err);
        const int64_t t1 = tsim_now_ns();
        if (rc)
            goto done;
        ns[i] = (double)(t1 - t0);
        tsim_metrics m;
        if ((rc = check_plan(p, &ev, &rec, &plan, &m, err)))
            goto done;
        replicas += plan.count;
        rho_b += m.v[TSIM_M_RHO_BEFORE];
        rho_a += m.v[TSIM_M_RHO_AFTER];
        bal_b += m.v[TSIM_M_BALANCEDNESS_BEFORE];
        bal_a += m.v[TSIM_M_BALANCEDNESS_AFTER];
        capped += (plan.notes & TSIM_NOTE_AUCTION_CAPPED) != 0;
        gpu_fallback += (plan.notes & TSIM_NOTE_GPU_FALLBACK) != 0;
        if ((i & 255) == 0)
            tsim_progress_update(progress, *progress_done + i, progress_total);
    }
    row->records = n_records;
    row->ns = tsim_summarize(ns, (size_t)n_records, scratch);
    row->replicas_mean = replicas / (double)n_records;
    row->rho_before_mean = rho_b / (double)n_records;
    row->rho_after_mean = rho_a / (double)n_records;
    row->balancedness_before_mean = bal_b / (double)n_records;
    row->balancedness_after_mean = bal_a / (double)n_records;
    row->capped = capped;
    row->gpu_fallback = gpu_fallback;
    if (gpu_fallback > 0) {
        char why[256] = "";
        if (strcmp(p->desc->name, "taot") == 0)
            tsim_taot_gpu_fell_back(p->state, why, sizeof why);
        fprintf(stderr, "taotsim bench: planner '%s' (%d:%d:%d): the GPU was asked for, %lld of %lld plans ran on the CPU%s%s\n",
                p->label, t->ranks, t->experts, t->slots, (long long)gpu_fallback, (long long)n_records,
                why[0] ? ": " : "", why);
    }
done:
    *progress_done += n_records;
    if (started)
        tsim_planner_stop(p);
    if (have_ev)
        tsim_evaluator_free(&ev);
    if (have_plan)
        tsim_plan_free(&plan);
    tsim_record_free(&rec);
    free(ns);
    free(scratch);
    free(weights);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* output                                                                     */

static void fmt_us(char *buf, size_t n, double ns)
{
    tsim_fmt_num(buf, n, ns / 1000.0, 2);
}

static int print_table(FILE *out, tsim_format fmt, const bench_row *rows, int n_rows,
                       const tsim_bench_read_result *rd, const char *read_path)
{
    if (n_rows > 0) {
        static const char *const headers[] = {"planner", "R", "E", "K", "records", "median_us", "p95_us", "mean_us",
                                              "replicas", "rho_before", "rho_after", "balancedness_before",
                                              "balancedness_after", "capped"};
        tsim_table tab;
        if (tsim_table_init(&tab, 14, headers))
            return -1;
        for (int i = 0; i < n_rows; i++) {
            const bench_row *r = &rows[i];
            char c[14][96];
            snprintf(c[0], sizeof c[0], "%s", r->label);
            snprintf(c[1], sizeof c[1], "%d", r->R);
            snprintf(c[2], sizeof c[2], "%d", r->E);
            snprintf(c[3], sizeof c[3], "%d", r->K);
            snprintf(c[4], sizeof c[4], "%lld", (long long)r->records);
            fmt_us(c[5], sizeof c[5], r->ns.p50);
            fmt_us(c[6], sizeof c[6], r->ns.p95);
            fmt_us(c[7], sizeof c[7], r->ns.mean);
            tsim_fmt_num(c[8], sizeof c[8], r->replicas_mean, 1);
            tsim_fmt_num(c[9], sizeof c[9], r->rho_before_mean, 4);
            tsim_fmt_num(c[10], sizeof c[10], r->rho_after_mean, 4);
            tsim_fmt_num(c[11], sizeof c[11], r->balancedness_before_mean, 4);
            tsim_fmt_num(c[12], sizeof c[12], r->balancedness_after_mean, 4);
            snprintf(c[13], sizeof c[13], "%lld", (long long)r->capped);
            const char *cells[14];
            for (int q = 0; q < 14; q++)
                cells[q] = c[q];
            if (tsim_table_add_row(&tab, cells)) {
                tsim_table_free(&tab);
                return -1;
            }
        }
        tsim_table_print(&tab, out, fmt);
        tsim_table_free(&tab);
    }
    if (rd) {
        if (n_rows > 0)
            fputc('\n', out);
        static const char *const headers[] = {"file", "records", "MB", "seconds", "MB_per_s", "records_per_s",
                                              "peak_rss_MB"};
        tsim_table tab;
        if (tsim_table_init(&tab, 7, headers))
            return -1;
        char c[7][96];
        snprintf(c[0], sizeof c[0], "%.90s", read_path);
        snprintf(c[1], sizeof c[1], "%lld", (long long)rd->records);
        tsim_fmt_num(c[2], sizeof c[2], (double)rd->bytes / 1e6, 1);
        tsim_fmt_num(c[3], sizeof c[3], rd->seconds, 3);
        tsim_fmt_num(c[4], sizeof c[4], rd->mb_per_s, 1);
        tsim_fmt_num(c[5], sizeof c[5], rd->records_per_s, 0);
        tsim_fmt_num(c[6], sizeof c[6], (double)rd->peak_rss_kb / 1024.0, 1);
        const char *cells[7];
        for (int q = 0; q < 7; q++)
            cells[q] = c[q];
        int rc = tsim_table_add_row(&tab, cells);
        if (!rc)
            tsim_table_print(&tab, out, fmt);
        tsim_table_free(&tab);
        if (rc)
            return -1;
    }
    return 0;
}

static int print_json(FILE *out, const bench_row *rows, int n_rows, int64_t records, uint64_t seed, int rpn,
                      const tsim_bench_read_result *rd, const char *read_path)
{
    cJSON *j = tsim_result_json_new();
    if (!j)
        return -1;
    cJSON *params = n_rows > 0 ? cJSON_AddObjectToObject(j, "params") : cJSON_CreateObject();
    cJSON_AddNumberToObject(params, "records", (double)records);
    cJSON_AddNumberToObject(params, "warmup_records", records < WARMUP_RECORDS ? (double)records : WARMUP_RECORDS);
    cJSON_AddNumberToObject(params, "seed", (double)seed);
    cJSON_AddNumberToObject(params, "ranks_per_node", rpn);
    cJSON_AddNumberToObject(params, "tokens_per_rank", TOKENS_PER_RANK);
    cJSON_AddNumberToObject(params, "topk", TOP_K);
    cJSON_AddStringToObject(params, "imbalance", "one hot rank per record, target drawn in [0.3, 0.5]");
    if (n_rows == 0)
        cJSON_Delete(params);
    cJSON *lat = cJSON_AddArrayToObject(j, "latency");
    for (int i = 0; i < n_rows; i++) {
        const bench_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "planner", r->label);
        cJSON_AddStringToObject(o, "algorithm", r->algorithm);
        if (r->options)
            cJSON_AddItemReferenceToObject(o, "options", r->options);
        cJSON_AddNumberToObject(o, "ep", r->R);
        cJSON_AddNumberToObject(o, "experts", r->E);
        cJSON_AddNumberToObject(o, "slots", r->K);
        cJSON_AddNumberToObject(o, "records", (double)r->records);
        cJSON *p = cJSON_AddObjectToObject(o, "plan_us");
        cJSON_AddNumberToObject(p, "mean", r->ns.mean / 1000.0);
        cJSON_AddNumberToObject(p, "std", r->ns.std / 1000.0);
        cJSON_AddNumberToObject(p, "min", r->ns.min / 1000.0);
        cJSON_AddNumberToObject(p, "p50", r->ns.p50 / 1000.0);
        cJSON_AddNumberToObject(p, "p95", r->ns.p95 / 1000.0);
        cJSON_AddNumberToObject(p, "max", r->ns.max / 1000.0);
        cJSON_AddNumberToObject(o, "replicas_mean", r->replicas_mean);
        cJSON_AddNumberToObject(o, "rho_before_mean", r->rho_before_mean);
        cJSON_AddNumberToObject(o, "rho_after_mean", r->rho_after_mean);
        cJSON_AddNumberToObject(o, "balancedness_before_mean", r->balancedness_before_mean);
        cJSON_AddNumberToObject(o, "balancedness_after_mean", r->balancedness_after_mean);
        cJSON_AddNumberToObject(o, "auction_capped", (double)r->capped);
        cJSON_AddNumberToObject(o, "gpu_fallback", (double)r->gpu_fallback);
        cJSON_AddItemToArray(lat, o);
    }
    if (rd) {
        cJSON *o = cJSON_AddObjectToObject(j, "read");
        cJSON_AddStringToObject(o, "path", read_path);
        cJSON_AddNumberToObject(o, "records", (double)rd->records);
        cJSON_AddNumberToObject(o, "bytes", (double)rd->bytes);
        cJSON_AddNumberToObject(o, "file_bytes", (double)rd->file_bytes);
        cJSON_AddNumberToObject(o, "seconds", rd->seconds);
        cJSON_AddNumberToObject(o, "mb_per_s", rd->mb_per_s);
        cJSON_AddNumberToObject(o, "records_per_s", rd->records_per_s);
        cJSON_AddNumberToObject(o, "peak_rss_kb", (double)rd->peak_rss_kb);
    }
    int rc = tsim_json_print(out, j);
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* the command                                                                */

typedef struct {
    int R, E, K;
} bench_shape;

static int parse_shapes(const char *arg, bench_shape *shapes, int *n, tsim_error *err)
{
    char list[1024];
    if (strlen(arg) >= sizeof list)
        return tsim_error_set(err, TSIM_E_INPUT, "--shapes list is too long");
    snprintf(list, sizeof list, "%s", arg);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_SHAPES)
            return tsim_error_set(err, TSIM_E_INPUT, "--shapes: at most %d shapes", MAX_SHAPES);
        char *a = tok, *b = strchr(a, ':');
        char *c = b ? strchr(b + 1, ':') : NULL;
        if (!b || !c)
            return tsim_error_set(err, TSIM_E_INPUT, "--shapes: '%s' is not R:E:K", tok);
        *b++ = '\0';
        *c++ = '\0';
        bench_shape *s = &shapes[*n];
        if (tsim_parse_int(a, 1, 4096, &s->R, "--shapes R", err) || tsim_parse_int(b, 1, 65536, &s->E, "--shapes E", err) ||
            tsim_parse_int(c, 0, 1024, &s->K, "--shapes K", err))
            return TSIM_E_INPUT;
        if (s->E % s->R != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "--shapes: experts %d is not divisible by ranks %d", s->E, s->R);
        (*n)++;
    }
    if (*n == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--shapes is empty");
    return TSIM_OK;
}

/* Whether an entry of the list carries this label (LABEL=..., the '='
 * before any ':', as tsim_planner_spec_parse reads it). */
static bool entry_has_label(const char *entry, const char *label)
{
    size_t n = strlen(label);
    return strncmp(entry, label, n) == 0 && entry[n] == '=';
}

/* The planner specs to run: the user's list, or every cheap planner but none; a
 * bare "taot" becomes the auction and the split variants (both_variants: no
 * --taot-phase3 on the command line), unless the list names its own
 * 'taot-split': bench adds only what the user did not name. */
static int build_planner_list(const char *arg, const tsim_planner_options *base, bool both_variants,
                              tsim_planner *planners, int *n, tsim_error *err)
{
    char list[2048] = "";
    if (arg) {
        if (strlen(arg) >= sizeof list)
            return tsim_error_set(err, TSIM_E_INPUT, "--planners list is too long");
        snprintf(list, sizeof list, "%s", arg);
    } else {
        for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
            /* an expensive planner (optimal's MIP) is a yardstick for small shapes,
             * not a latency contender */
            if (strcmp((*d)->name, "none") == 0 || (*d)->cost == TSIM_COST_EXPENSIVE)
                continue;
            if (list[0])
                strncat(list, ",", sizeof list - strlen(list) - 1);
            strncat(list, (*d)->name, sizeof list - strlen(list) - 1);
        }
    }
    char scan[sizeof list];
    memcpy(scan, list, sizeof scan);
    char *save = NULL;
    for (char *tok = strtok_r(scan, ",", &save); tok && both_variants; tok = strtok_r(NULL, ",", &save))
        if (entry_has_label(tok, "taot-split"))
            both_variants = false;
    *n = 0;
    save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const char *specs[2] = {tok, NULL};
        if (strcmp(tok, "taot") == 0 && both_variants)
            specs[1] = "taot-split=taot:--taot-phase3=split";
        for (int q = 0; q < 2 && specs[q]; q++) {
            if (tsim_planner_list_add(planners, MAX_PLANNERS, n, specs[q], base, err))
                return TSIM_E_INPUT;
            if (q == 0 && specs[1] && tsim_planner_option_set(&planners[*n - 1], "taot-phase3", "auction", err))
                return TSIM_E_INPUT;
        }
    }
    if (*n == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--planners is empty");
    return TSIM_OK;
}

enum { OPT_PLANNERS = 1, OPT_RECORDS, OPT_SHAPES, OPT_RPN, OPT_SEED, OPT_READ, OPT_FORMAT };

static const tsim_cli_option bench_options[] = {
    {"planners", 0, true, OPT_PLANNERS},
    {"records", 0, true, OPT_RECORDS},
    {"shapes", 0, true, OPT_SHAPES},
    {"rpn", 0, true, OPT_RPN},
    {"ranks-per-node", 0, true, OPT_RPN},
    {"seed", 0, true, OPT_SEED},
    {"read", 0, true, OPT_READ},
    {"format", 0, true, OPT_FORMAT},
    {0},
};

typedef struct {
    const char *planners_arg, *shapes_arg, *read_path;
    int64_t records, seed;
    int rpn;
    tsim_format fmt;
    bool phase3_given;
} bench_args;

static int bench_option(void *ctx, int id, const char *val, tsim_error *err)
{
    bench_args *a = ctx;
    switch (id) {
    case OPT_PLANNERS:
        a->planners_arg = val;
        return TSIM_OK;
    case OPT_RECORDS:
        return tsim_parse_int64(val, 1, INT64_C(100000000), &a->records, "--records", err);
    case OPT_SHAPES:
        a->shapes_arg = val;
        return TSIM_OK;
    case OPT_RPN:
        return tsim_parse_int(val, 1, 4096, &a->rpn, "--rpn", err);
    case OPT_SEED:
        return tsim_parse_int64(val, 0, INT64_MAX, &a->seed, "--seed", err);
    case OPT_READ:
        a->read_path = val;
        return TSIM_OK;
    case OPT_FORMAT:
        return tsim_format_parse(val, &a->fmt, err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "bench: option %d has no handler", id);
    }
}

/* An explicit --taot-phase3 benches that variant only (else both). */
static void bench_planner_option(void *ctx, const tsim_option_spec *spec)
{
    bench_args *a = ctx;
    a->phase3_given = a->phase3_given || strcmp(spec->name, "taot-phase3") == 0;
}

/* The batched GPU comparison as markdown: the shapes measured, and what
 * the numbers are. */
static void print_gpu_table(FILE *out, const tsim_taot_gpu_bench_result *g)
{
    if (g->n_rows == 0)
        return;
    fprintf(out, "\nTAOT on the GPU against the CPU reference (same run): %d records per shape, seed %llu, 8 ranks "
                 "per node, lambda 3, auction, 50 Sinkhorn rounds.\n"
                 "Times are wall clock per call, host packing and both copies included.\n\n",
            g->records, (unsigned long long)g->seed);
    fprintf(out, "| R | E | K | records | CPU us/record | GPU latency us (1 record, p50) | GPU us/record (launches "
                 "of %d, p50) | GPU us/record (launches of %d, mean) | speedup (CPU / batched p50) | plans "
                 "differing |\n",
            TSIM_TAOT_GPU_DEFAULT_BATCH, TSIM_TAOT_GPU_DEFAULT_BATCH);
    fprintf(out, "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < g->n_rows; i++) {
        const tsim_taot_gpu_bench_row *r = &g->rows[i];
        fprintf(out, "| %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.1fx | %ld |\n", r->ranks, r->experts,
                r->slots, r->records, r->cpu_us, r->latency_us, r->batched_us, r->batched_mean_us,
                r->batched_us > 0.0 ? r->cpu_us / r->batched_us : 0.0, r->mismatches);
    }
    if (g->n_rows == TSIM_TAOT_GPU_BENCH_SHAPES)
        fprintf(out, "\nTarget: under 5 us per record in launches of 48 at (32,128,2) on an H200.\n");
}

int tsim_cmd_bench(int argc, char **argv)
{
    const char *cmd = "bench";
    tsim_error err = {0};
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    bench_args a = {.records = DEFAULT_RECORDS, .seed = 1, .rpn = 8, .fmt = TSIM_FORMAT_MD};
    const tsim_cli_parser parser = {
        .cmd = cmd, .options = bench_options, .planner = &base, .on_option = bench_option,
        .on_planner_option = bench_planner_option, .ctx = &a,
    };
    int parsed = tsim_cli_parse(&parser, argc, argv);
    if (parsed == TSIM_CLI_HELP) {
        bench_help();
        return 0;
    }
    if (parsed)
        return parsed;
    const char *planners_arg = a.planners_arg, *shapes_arg = a.shapes_arg, *read_path = a.read_path;
    const int64_t records = a.records, seed = a.seed;
    const int rpn = a.rpn;
    const tsim_format fmt = a.fmt;
    const bool phase3_given = a.phase3_given;

    const bool run_latency = !read_path || planners_arg || shapes_arg;
    bench_shape shapes[MAX_SHAPES];
    int n_shapes = 0;
    static tsim_planner planners[MAX_PLANNERS];
    int n_planners = 0;
    if (run_latency) {
        if (parse_shapes(shapes_arg ? shapes_arg : DEFAULT_SHAPES, shapes, &n_shapes, &err))
            return tsim_cli_usage_error(cmd, "%s", err.msg);
        if (build_planner_list(planners_arg, &base, !phase3_given, planners, &n_planners, &err))
            return tsim_cli_usage_error(cmd, "%s", err.msg);
    }

    tsim_bench_read_result rd = {0};
    bool have_read = false;
    if (read_path) {
        if (tsim_bench_read(read_path, &rd, &err))
            return tsim_cli_fail(cmd, &err);
        have_read = true;
    }

    bench_row *rows = NULL;
    int n_rows = 0;
    int status = 0;
    if (run_latency) {
        rows = calloc((size_t)(n_shapes * n_planners), sizeof *rows);
        if (!rows) {
            tsim_error_set(&err, TSIM_E_INTERNAL, "out of memory");
            return tsim_cli_fail(cmd, &err);
        }
        tsim_progress progress;
        tsim_progress_start(&progress, "bench");
        int64_t done = 0, total = records * n_shapes * n_planners;
        for (int s = 0; s < n_shapes; s++) {
            tsim_topology topo;
            if (tsim_topology_init(&topo, shapes[s].R, shapes[s].E, rpn, shapes[s].K, NULL, &err)) {
                status = tsim_cli_usage_error(cmd, "%s", err.msg);
                goto out;
            }
            for (int p = 0; p < n_planners; p++) {
                bench_row *row = &rows[n_rows++];
                row->options = tsim_vector_options_json(&planners[p], topo.slots, topo.ranks_per_node);
                if (bench_one(&planners[p], &topo, records, (uint64_t)seed, row, &progress, &done, total, &err)) {
                    /* The first failure ends the run, as in every command. */
                    tsim_progress_finish(&progress);
                    tsim_topology_free(&topo);
                    tsim_error_prefix(&err, "shape %d:%d:%d", shapes[s].R, shapes[s].E, shapes[s].K);
                    status = tsim_cli_fail(cmd, &err);
                    goto out;
                }
            }
            tsim_topology_free(&topo);
        }
        tsim_progress_finish(&progress);
    }

    int prc = fmt == TSIM_FORMAT_JSON
                  ? print_json(stdout, rows, n_rows, records, (uint64_t)seed, rpn, have_read ? &rd : NULL, read_path)
                  : print_table(stdout, fmt, rows, n_rows, have_read ? &rd : NULL, read_path);
    if (prc || fflush(stdout)) {
        tsim_error_set(&err, TSIM_E_INTERNAL, "cannot write the results");
        status = tsim_cli_fail(cmd, &err);
        goto out;
    }
    /* The batched GPU comparison (gpu/taot_gpu.h), markdown only. */
    const tsim_taot_options *taot = tsim_planner_options_own(&base, &tsim_planner_taot);
    if (run_latency && taot && taot->device == TSIM_DEVICE_GPU) {
        if (fmt != TSIM_FORMAT_MD) {
            fprintf(stderr, "taotsim bench: the batched GPU table is printed with --format md only\n");
        } else {
            char why[512];
            if (!tsim_taot_planner_gpu_available(why, sizeof why)) {
                fprintf(stderr, "taotsim bench: no batched GPU table: %s\n", why);
            } else {
                const int gpu_records = records < 100000 ? (int)records : 100000;
                tsim_taot_gpu_bench_result gpu;
                int rc = tsim_taot_planner_gpu_bench(&gpu, &base.common, taot, gpu_records, (uint64_t)seed, &err);
                print_gpu_table(stdout, &gpu);
                fflush(stdout);
                if (rc)
                    status = tsim_cli_fail(cmd, &err);
            }
        }
    }
out:
    for (int i = 0; i < n_rows; i++)
        cJSON_Delete(rows[i].options);
    free(rows);
    return status;
}
