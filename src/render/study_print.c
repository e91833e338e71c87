/* Markdown and CSV output of the studies. */
#include "study_print.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "advise_print.h"
#include "experiments.h"
#include "paper.h"

#define CELL 64

/* "12.34" or "12.34 ± 0.56" */
/* The registry name of the planner labelled `label` (its rows share it). */
static const char *method_of(const tsim_study *s, const char *label)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->rows[i].planner, label) == 0)
            return tsim_study_row_method(&s->rows[i]);
    return label;
}

static void ours(char *buf, const tsim_summary *s, double scale, int dec, bool show_std)
{
    char m[32], sd[32];
    tsim_fmt_num(m, sizeof m, s->mean * scale, dec);
    if (show_std) {
        tsim_fmt_num(sd, sizeof sd, s->std * scale, dec);
        snprintf(buf, CELL, "%s ± %s", m, sd);
    } else
        snprintf(buf, CELL, "%s", m);
}

static void num(char *buf, double v, int dec)
{
    tsim_fmt_num(buf, CELL, v, dec);
}

/* When A is cheaper than B, in words, for physical lambda (>= 1: across nodes
 * never costs less than within). */
static void cheaper_when(char *buf, const cJSON *lambda_star, const char *when)
{
    if (!cJSON_IsNumber(lambda_star)) {
        snprintf(buf, CELL, "%s", when);
        return;
    }
    double ls = lambda_star->valuedouble;
    bool below = strchr(when, '<') != NULL;
    if (ls <= 1.0)
        snprintf(buf, CELL, "%s", below ? "never (λ ≥ 1)" : "always (λ ≥ 1)");
    else
        snprintf(buf, CELL, "λ %s %.2f", below ? "<" : ">", ls);
}

/* Whether some row that ran has metric m. Rehomed columns appear only when
 * some planner re-homed experts (eplb.md 1.2), dropped ones only with
 * --capacity-factor, so studies without them keep their bytes. */
static bool any_row_has(const tsim_study *s, tsim_metric_id m)
{
    for (int i = 0; i < s->n; i++)
        if (s->rows[i].ok && s->rows[i].metric_on[m])
            return true;
    return false;
}

/* Cells from..to-1 all say `text` (the columns of a row whose planner failed). */
static void fill_cells(char (*c)[CELL], int from, int to, const char *text)
{
    for (int k = from; k < to; k++)
        snprintf(c[k], CELL, "%s", text);
}

/* "16" and "50%": the EP and init columns of table1, its break-even table
 * and scaling. */
static void ep_init_cells(char *ep_cell, char *init_cell, int ep, double imbalance)
{
    snprintf(ep_cell, CELL, "%d", ep);
    snprintf(init_cell, CELL, "%d%%", (int)lround(imbalance * 100));
}

/* Headers of the optional columns (rehomed, then dropped) after h[0..nh-1];
 * returns the new count. optional_cells fills them in the same order. */
static int optional_headers(const char **h, int nh, bool rehomed, bool dropped)
{
    if (rehomed) {
        h[nh++] = "rehomed intra";
        h[nh++] = "rehomed inter";
    }
    if (dropped) {
        h[nh++] = "dropped before";
        h[nh++] = "dropped after";
    }
    return nh;
}

/* The cells under optional_headers' columns from c[k]; returns the next column. */
static int optional_cells(char (*c)[CELL], int k, const tsim_study_row *r, bool rehomed, bool dropped)
{
    if (rehomed) {
        num(c[k++], r->metrics[TSIM_M_REHOMED_INTRA].mean, 2);
        num(c[k++], r->metrics[TSIM_M_REHOMED_INTER].mean, 2);
    }
    if (dropped) {
        num(c[k++], r->metrics[TSIM_M_DROPPED_BEFORE].mean, 1);
        num(c[k++], r->metrics[TSIM_M_DROPPED_AFTER].mean, 1);
    }
    return k;
}

/* λ* (or "none") and when A is cheaper, from one entry of extra.break_even:
 * the columns both break-even tables (table1, sweep) share. */
static void break_even_cells(char *star, char *when, const cJSON *j)
{
    const cJSON *ls = cJSON_GetObjectItem(j, "lambda_star");
    if (cJSON_IsNumber(ls))
        num(star, ls->valuedouble, 2);
    else
        snprintf(star, CELL, "none");
    cheaper_when(when, ls, cJSON_GetObjectItem(j, "a_cheaper_when")->valuestring);
}

/* Prints the heading (a printf format) and the table as markdown, then frees
 * the table. */
static void print_section(FILE *out, tsim_table *t, const char *heading, ...) __attribute__((format(printf, 3, 4)));
static void print_section(FILE *out, tsim_table *t, const char *heading, ...)
{
    va_list ap;
    va_start(ap, heading);
    vfprintf(out, heading, ap);
    va_end(ap);
    tsim_table_print(t, out, TSIM_FORMAT_MD);
    tsim_table_free(t);
}

static void print_rehomed_note(FILE *out)
{
    fputs("\nrehomed intra/inter: experts whose home rank changed since the planner's previous record of the "
          "layer (mean per record), within a node or across nodes; weight moves at a rebalance, not part of "
          "weighted.\n",
          out);
}

/* "the bundled synthetic traces (traces/README.md)", or the regime the traces
 * were generated from (table1 on a regime, fit.h). */
static void traces_phrase(char *buf, size_t n, const tsim_study *s)
{
    const cJSON *regime = cJSON_GetObjectItemCaseSensitive(s->params, "regime");
    if (!cJSON_IsObject(regime)) {
        snprintf(buf, n, "the bundled synthetic traces (traces/README.md)");
        return;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(regime, "name");
    if (cJSON_IsString(name) && name->valuestring[0])
        snprintf(buf, n, "synthetic traces generated from the regime '%s' (params.regime of the JSON output)",
                 name->valuestring);
    else
        snprintf(buf, n, "synthetic traces generated from an unnamed regime (params.regime of the JSON output)");
}

static void print_notes(FILE *out, const tsim_study *s)
{
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok) {
            fprintf(out, "- %s %s: n/a (%s)\n", r->key, r->planner, r->error);
            continue;
        }
        for (int b = 0; b < TSIM_NOTE_KINDS; b++)
            if (r->notes[b])
                fprintf(out, "- %s %s: %s in %lld of %lld records\n", r->key, r->planner, tsim_note_names[b],
                        (long long)r->notes[b], (long long)r->records);
    }
}

/* Planners whose own rule sets another slot budget than the study's (MoonEP
 * runs at E/R): named once each with their K, since the table compares them
 * with planners at the study's K. */
static void print_slot_budgets(FILE *out, const tsim_study *s)
{
    bool any = false;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok || r->planner_slots == 0)
            continue;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = s->rows[k].ok && s->rows[k].planner_slots == r->planner_slots &&
                   strcmp(s->rows[k].planner, r->planner) == 0 && s->rows[k].ep == r->ep;
        if (seen)
            continue;
        fprintf(out, "%s%s at EP%d: K = %d", any ? "; " : "\nSlot budget per planner (the others run at the study's K): ",
                r->planner, r->ep, r->planner_slots);
        any = true;
    }
    if (any)
        fputs(".\n", out);
}

static int print_csv(FILE *out, const tsim_study *s)
{
    fputs("study,key,axis,ep,imbalance,slots,lambda_plan,lambda_eval,flow_hint,comm_cost,planner,metric,mean,std,"
          "min,p50,p95,max\n",
          out);
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        char coords[256];
        char ep[16] = "", imb[32] = "", k[16] = "", lp[32] = "", le[32] = "", fh[8] = "", cc[8] = "";
        if (r->ep >= 0)
            snprintf(ep, sizeof ep, "%d", r->ep);
        if (!isnan(r->imbalance))
            snprintf(imb, sizeof imb, "%g", r->imbalance);
        if (r->slots >= 0)
            snprintf(k, sizeof k, "%d", r->slots);
        if (!isnan(r->lambda_plan))
            snprintf(lp, sizeof lp, "%g", r->lambda_plan);
        if (!isnan(r->lambda_eval))
            snprintf(le, sizeof le, "%g", r->lambda_eval);
        if (r->flow_hint >= 0)
            snprintf(fh, sizeof fh, "%d", r->flow_hint);
        if (r->comm_cost >= 0)
            snprintf(cc, sizeof cc, "%d", r->comm_cost);
        snprintf(coords, sizeof coords, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", s->study, r->key, r->axis ? r->axis : "", ep,
                 imb, k, lp, le, fh, cc);
        if (!r->ok) {
            fprintf(out, "%s,%s,n/a,,,,,,\n", coords, r->planner);
            continue;
        }
        for (int m = 0; m < TSIM_M_COUNT; m++) {
            if (!r->metric_on[m])
                continue;
            const tsim_summary *x = &r->metrics[m];
            fprintf(out, "%s,%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", coords, r->planner, tsim_metric_names[m],
                    x->mean, x->std, x->min, x->p50, x->p95, x->max);
        }
    }
    return 0;
}

static int print_table1(FILE *out, const tsim_study *s, bool show_std)
{
    /* The last two only when some row re-homed. */
    const char *h[] = {"EP",    "init",  "measured init %", "method", "improve pp", "paper",
                       "Δ",     "weighted", "paper", "Δ", "intra", "paper", "Δ", "inter", "paper", "Δ",
                       "balancedness before", "balancedness after", "rehomed intra", "rehomed inter"};
    const bool rehomed = any_row_has(s, TSIM_M_REHOMED_INTRA);
    const int ncols = rehomed ? 20 : 18;
    /* The paper measured K = 2 and λ = 3: beside any other setting its values
     * are not comparable, so they are left out (and the note says why). */
    const bool comparable = tsim_study_paper_comparable(s);
    const cJSON *slots_j = cJSON_GetObjectItemCaseSensitive(s->params, "slots");
    const cJSON *lp_j = cJSON_GetObjectItemCaseSensitive(s->params, "lambda_plan");
    const cJSON *le_j = cJSON_GetObjectItemCaseSensitive(s->params, "lambda_eval");
    const double run_slots = cJSON_IsNumber(slots_j) ? slots_j->valuedouble : 2;
    const double run_lp = cJSON_IsNumber(lp_j) ? lp_j->valuedouble : 3;
    const double run_le = cJSON_IsNumber(le_j) ? le_j->valuedouble : 3;
    tsim_table t;
    if (tsim_table_init(&t, ncols, h))
        return -1;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        char c[20][CELL];
        ep_init_cells(c[0], c[1], r->ep, r->imbalance);
        snprintf(c[3], CELL, "%s", r->planner);
        tsim_paper_cell pc;
        bool have = comparable && tsim_paper_table1(r->ep, r->imbalance, tsim_study_row_method(r), &pc);
        double paper[4] = {pc.improve_pp, pc.weighted, pc.intra, pc.inter};
        const int metric[4] = {TSIM_M_IMPROVE_PP, TSIM_M_WEIGHTED, TSIM_M_INTRA, TSIM_M_INTER};
        if (!r->ok) {
            snprintf(c[2], CELL, "-");
            for (int k = 4; k < 16; k++)
                snprintf(c[k], CELL, k % 3 == 1 ? "n/a" : "");
            fill_cells(c, 16, 20, "n/a");
        } else {
            ours(c[16], &r->metrics[TSIM_M_BALANCEDNESS_BEFORE], 1.0, 3, show_std);
            ours(c[17], &r->metrics[TSIM_M_BALANCEDNESS_AFTER], 1.0, 3, show_std);
            ours(c[18], &r->metrics[TSIM_M_REHOMED_INTRA], 1.0, 1, show_std);
            ours(c[19], &r->metrics[TSIM_M_REHOMED_INTER], 1.0, 1, show_std);
            num(c[2], 100 * r->metrics[TSIM_M_RHO_BEFORE].mean, 1);
            for (int q = 0; q < 4; q++) {
                int dec = q == 0 ? 1 : 1;
                ours(c[4 + 3 * q], &r->metrics[metric[q]], 1.0, dec, show_std);
                if (have) {
                    num(c[5 + 3 * q], paper[q], q == 0 ? 1 : 0);
                    tsim_fmt_signed_num(c[6 + 3 * q], CELL, r->metrics[metric[q]].mean - paper[q], 1);
                } else {
                    snprintf(c[5 + 3 * q], CELL, "-");
                    snprintf(c[6 + 3 * q], CELL, "-");
                }
            }
        }
        tsim_table_add_row_cells(&t, c[0], CELL);
    }
    print_section(out, &t,
                  "# Table 1: ours vs the paper (improvement pp / weighted / intra / inter, means over records)\n\n");

    const cJSON *be = cJSON_GetObjectItemCaseSensitive(s->extra, "break_even");
    if (cJSON_GetArraySize(be) > 0) {
        const char *h2[] = {"EP", "init", "TAOT vs", "λ* ours", "TAOT cheaper when", "λ* paper"};
        if (tsim_table_init(&t, 6, h2))
            return -1;
        const cJSON *j;
        cJSON_ArrayForEach(j, be)
        {
            char c[6][CELL];
            ep_init_cells(c[0], c[1], cJSON_GetObjectItem(j, "ep")->valueint,
                          cJSON_GetObjectItem(j, "imbalance")->valuedouble);
            snprintf(c[2], CELL, "%s", cJSON_GetObjectItem(j, "b")->valuestring);
            break_even_cells(c[3], c[4], j);
            const cJSON *pl = cJSON_GetObjectItem(j, "paper_lambda_star");
            tsim_paper_cell unused;
            if (!comparable)
                snprintf(c[5], CELL, "-");
            else if (cJSON_IsNumber(pl))
                num(c[5], pl->valuedouble, 2);
            else if (!tsim_paper_table1(cJSON_GetObjectItem(j, "ep")->valueint,
                                        cJSON_GetObjectItem(j, "imbalance")->valuedouble, method_of(s, c[2]),
                                        &unused))
                snprintf(c[5], CELL, "-"); /* the paper has no such method (eplb, a relabelled planner) */
            else
                snprintf(c[5], CELL, "none");
            tsim_table_add_row_cells(&t, c[0], CELL);
        }
        print_section(out, &t, "\n## Break-even λ* of TAOT against each baseline (weighted = intra + λ·inter)\n\n");
    }
    if (rehomed)
        print_rehomed_note(out);
    char traces[160];
    traces_phrase(traces, sizeof traces, s);
    fprintf(out,
            "\nPaper: TAOT (arXiv 2608.03676) Table 1, Qwen3-30B-A3B traces that are not published. Ours: "
            "%s, so the numbers are comparable in regime, not identical. Δ = ours - paper.\n",
            traces);
    if (!comparable)
        fprintf(out,
                "\nThe paper's values are for K = 2 and λ = 3; this run has K = %g, λ_plan = %g, λ_eval = %g, so "
                "they are not comparable and their columns are left empty (\"-\").\n",
                run_slots, run_lp, run_le);
    return 0;
}

static int print_ablation(FILE *out, const tsim_study *s)
{
    const char *h[] = {"flow hint", "comm cost", "final imbalance %", "paper", "final balancedness", "intra", "paper",
                       "inter",     "paper",     "weighted",          "paper"};
    tsim_table t;
    if (tsim_table_init(&t, 11, h))
        return -1;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        char c[11][CELL];
        snprintf(c[0], CELL, "%s", r->flow_hint ? "on" : "off");
        snprintf(c[1], CELL, "%s", r->comm_cost ? "on" : "off");
        tsim_paper_ablation pa;
        bool have = tsim_paper_table2(r->flow_hint, r->comm_cost, &pa);
        ours(c[2], &r->metrics[TSIM_M_RHO_AFTER], 100.0, 2, true);
        ours(c[4], &r->metrics[TSIM_M_BALANCEDNESS_AFTER], 1.0, 4, true);
        ours(c[5], &r->metrics[TSIM_M_INTRA], 1.0, 2, true);
        ours(c[7], &r->metrics[TSIM_M_INTER], 1.0, 2, true);
        ours(c[9], &r->metrics[TSIM_M_WEIGHTED], 1.0, 2, true);
        if (have) {
            snprintf(c[3], CELL, "%.2f ± %.2f", 100 * pa.rho_after, 100 * pa.rho_after_std);
            snprintf(c[6], CELL, "%.2f ± %.2f", pa.intra, pa.intra_std);
            snprintf(c[8], CELL, "%.2f ± %.2f", pa.inter, pa.inter_std);
            snprintf(c[10], CELL, "%.2f ± %.2f", pa.weighted, pa.weighted_std);
        } else
            for (int k = 3; k <= 10; k += k == 3 ? 3 : 2)
                snprintf(c[k], CELL, "(not in paper)");
        tsim_table_add_row_cells(&t, c[0], CELL);
    }
    const tsim_study_row *r0 = s->n ? &s->rows[0] : NULL;
    print_section(out, &t,
                  "# TAOT ablation (paper's Table 2): EP%d, %.0f%% initial imbalance, mean ± std over %d seeds\n\n",
                  r0 ? r0->ep : 0, r0 ? r0->imbalance * 100 : 0, r0 ? r0->seeds : 0);
    fprintf(out, "\nThe std is across seeds of per-seed means. Paper: Table 2 of arXiv 2608.03676 (3 runs, "
                 "real traces); ours: synthetic traces generated per seed.\n");
    return 0;
}

static int print_sweep(FILE *out, const tsim_study *s)
{
    /* Distinct lambda_plan and lambda_eval values in row order. */
    double lps[TSIM_STUDY_LIST_MAX], les[TSIM_STUDY_LIST_MAX];
    int nlp = 0, nle = 0;
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        bool seen = false;
        for (int k = 0; k < nlp; k++)
            seen |= lps[k] == r->lambda_plan;
        if (!seen && nlp < TSIM_STUDY_LIST_MAX)
            lps[nlp++] = r->lambda_plan;
        seen = false;
        for (int k = 0; k < nle; k++)
            seen |= les[k] == r->lambda_eval;
        if (!seen && nle < TSIM_STUDY_LIST_MAX)
            les[nle++] = r->lambda_eval;
    }
    const bool rehomed = any_row_has(s, TSIM_M_REHOMED_INTRA), dropped = any_row_has(s, TSIM_M_DROPPED_AFTER);
    fprintf(out, "# λ sweep: weighted cost (intra + λ_eval·inter, mean per record)\n");
    /* Name the trace (its file name: the directory differs between machines). */
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(s->params, "trace");
    const cJSON *records = cJSON_GetObjectItemCaseSensitive(s->params, "records");
    const cJSON *slots = cJSON_GetObjectItemCaseSensitive(s->params, "slots");
    if (cJSON_IsString(trace) && trace->valuestring) {
        const char *base = strrchr(trace->valuestring, '/');
        fprintf(out, "\nTrace %s", base ? base + 1 : trace->valuestring);
        if (cJSON_IsNumber(records))
            fprintf(out, " (%.6g records)", records->valuedouble);
        if (cJSON_IsNumber(slots))
            fprintf(out, ", %.6g guest slots per rank", slots->valuedouble);
        fprintf(out, ".\n");
    }
    for (int a = 0; a < nlp; a++) {
        const char *h[7 + TSIM_STUDY_LIST_MAX];
        char hb[TSIM_STUDY_LIST_MAX][32];
        h[0] = "planner";
        h[1] = "rho after %";
        h[2] = "balancedness after";
        h[3] = "intra";
        h[4] = "inter";
        int nh = optional_headers(h, 5, rehomed, dropped);
        const int first_eval = nh;
        for (int e = 0; e < nle && nh < 28; e++) {
            snprintf(hb[e], sizeof hb[e], "λ_eval=%g", les[e]);
            h[nh++] = hb[e];
        }
        tsim_table t;
        if (tsim_table_init(&t, nh, h))
            return -1;
        /* one row per planner: rows come grouped by lambda_eval, planners inner */
        for (int i = 0; i < s->n; i++) {
            const tsim_study_row *r = &s->rows[i];
            if (r->lambda_plan != lps[a] || r->lambda_eval != les[0])
                continue;
            char c[32][CELL];
            snprintf(c[0], CELL, "%s", r->planner);
            if (!r->ok) {
                fill_cells(c, 1, nh, "n/a");
                tsim_table_add_row_cells(&t, c[0], CELL);
                continue;
            }
            num(c[1], 100 * r->metrics[TSIM_M_RHO_AFTER].mean, 2);
            num(c[2], r->metrics[TSIM_M_BALANCEDNESS_AFTER].mean, 4);
            num(c[3], r->metrics[TSIM_M_INTRA].mean, 2);
            num(c[4], r->metrics[TSIM_M_INTER].mean, 2);
            optional_cells(c, 5, r, rehomed, dropped);
            int col = first_eval;
            for (int k = 0; k < s->n && col < nh; k++) {
                const tsim_study_row *q = &s->rows[k];
                if (q->lambda_plan == lps[a] && strcmp(q->planner, r->planner) == 0 &&
                    q->lambda_eval == les[col - first_eval]) {
                    num(c[col], q->metrics[TSIM_M_WEIGHTED].mean, 2);
                    col++;
                    k = -1; /* next lambda_eval: search again from the start */
                }
            }
            tsim_table_add_row_cells(&t, c[0], CELL);
        }
        print_section(out, &t, "\n## λ_plan = %g\n\n", lps[a]);
    }
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(s->extra, "break_even");
    if (cJSON_GetArraySize(be) > 0) {
        const char *h2[] = {"λ_plan", "A", "B", "λ*", "A cheaper when"};
        tsim_table t;
        if (tsim_table_init(&t, 5, h2))
            return -1;
        const cJSON *j;
        cJSON_ArrayForEach(j, be)
        {
            char c[5][CELL];
            snprintf(c[0], CELL, "%g", cJSON_GetObjectItem(j, "lambda_plan")->valuedouble);
            snprintf(c[1], CELL, "%s", cJSON_GetObjectItem(j, "a")->valuestring);
            snprintf(c[2], CELL, "%s", cJSON_GetObjectItem(j, "b")->valuestring);
            break_even_cells(c[3], c[4], j);
            tsim_table_add_row_cells(&t, c[0], CELL);
        }
        print_section(out, &t, "\n## Break-even λ* per planner pair\n\n");
    }
    if (rehomed)
        print_rehomed_note(out);
    return 0;
}

static int print_scaling(FILE *out, const tsim_study *s)
{
    static const char *const axes[3] = {"ep", "imbalance", "slots"};
    static const char *const titles[3] = {"EP size", "initial imbalance", "guest slots per rank K"};
    bool timing = false, step = false;
    const bool rehomed = any_row_has(s, TSIM_M_REHOMED_INTRA), dropped = any_row_has(s, TSIM_M_DROPPED_AFTER);
    for (int i = 0; i < s->n; i++)
        if (s->rows[i].ok) {
            timing |= s->rows[i].metric_on[TSIM_M_PLAN_NS];
            step |= s->rows[i].metric_on[TSIM_M_SPEEDUP];
        }
    fprintf(out, "# Scaling: one axis at a time around the base point (generated traces)\n");
    for (int a = 0; a < 3; a++) {
        const char *h[18] = {"EP",          "init",  "K",     "planner", "rho before %", "rho after %", "balancedness before",
                             "balancedness after", "intra", "inter", "weighted"};
        int nh = optional_headers(h, 11, rehomed, dropped);
        if (timing)
            h[nh++] = "plan us p50";
        if (step) {
            h[nh++] = "speedup (model)";
            h[nh++] = "paper speedup";
        }
        tsim_table t;
        if (tsim_table_init(&t, nh, h))
            return -1;
        int rows = 0;
        for (int i = 0; i < s->n; i++) {
            const tsim_study_row *r = &s->rows[i];
            if (!r->axis || strcmp(r->axis, axes[a]) != 0)
                continue;
            char c[18][CELL];
            ep_init_cells(c[0], c[1], r->ep, r->imbalance);
            snprintf(c[2], CELL, "%d", r->slots);
            snprintf(c[3], CELL, "%s", r->planner);
            if (!r->ok) {
                fill_cells(c, 4, nh, "n/a");
            } else {
                num(c[4], 100 * r->metrics[TSIM_M_RHO_BEFORE].mean, 2);
                num(c[5], 100 * r->metrics[TSIM_M_RHO_AFTER].mean, 2);
                num(c[6], r->metrics[TSIM_M_BALANCEDNESS_BEFORE].mean, 4);
                num(c[7], r->metrics[TSIM_M_BALANCEDNESS_AFTER].mean, 4);
                num(c[8], r->metrics[TSIM_M_INTRA].mean, 2);
                num(c[9], r->metrics[TSIM_M_INTER].mean, 2);
                num(c[10], r->metrics[TSIM_M_WEIGHTED].mean, 2);
                int k = optional_cells(c, 11, r, rehomed, dropped);
                if (timing)
                    num(c[k++], r->metrics[TSIM_M_PLAN_NS].p50 / 1000.0, 1);
                if (step) {
                    num(c[k++], r->metrics[TSIM_M_SPEEDUP].mean, 2);
                    double v = a == 0 ? r->ep : a == 2 ? r->slots : r->imbalance, ps;
                    if (strcmp(tsim_study_row_method(r), "taot") == 0 && tsim_paper_speedup(axes[a], v, &ps))
                        num(c[k++], ps, 2);
                    else
                        snprintf(c[k++], CELL, "-");
                }
            }
            tsim_table_add_row_cells(&t, c[0], CELL);
            rows++;
        }
        if (rows)
            print_section(out, &t, "\n## %s\n\n", titles[a]);
        else
            tsim_table_free(&t);
    }
    if (rehomed)
        print_rehomed_note(out);
    if (step)
        fprintf(out, "\nspeedup (model) is the step-time model's estimate over plain EP for one MoE layer "
                     "(forward + backward); the paper's speedups are measured end to end in real training "
                     "(Fig. 3). The model is an estimate, not a measurement.\n");
    return 0;
}

int tsim_study_print(FILE *out, const tsim_study *s, tsim_format fmt, bool show_std, tsim_error *err)
{
    int rc = 0;
    if (strcmp(s->study, "advise") == 0 && fmt != TSIM_FORMAT_JSON) /* its own tables (advise_print.c) */
        return tsim_advise_print(out, s, fmt, err);
    if (fmt == TSIM_FORMAT_JSON) {
        cJSON *j = tsim_study_json(s);
        rc = j ? tsim_json_print(out, j) : -1;
        cJSON_Delete(j);
    } else if (fmt == TSIM_FORMAT_CSV)
        rc = print_csv(out, s);
    else {
        if (strcmp(s->study, "table1") == 0)
            rc = print_table1(out, s, show_std);
        else if (strcmp(s->study, "ablation") == 0)
            rc = print_ablation(out, s);
        else if (strcmp(s->study, "sweep") == 0)
            rc = print_sweep(out, s);
        else
            rc = print_scaling(out, s);
        bool any = false;
        for (int i = 0; i < s->n; i++) {
            const tsim_study_row *r = &s->rows[i];
            bool note = !r->ok;
            for (int b = 0; b < TSIM_NOTE_KINDS; b++)
                note |= r->notes[b] != 0;
            any |= note;
        }
        if (any && rc == 0) {
            fputs("\nNotes:\n", out);
            print_notes(out, s);
        }
        if (rc == 0)
            print_slot_budgets(out, s);
        if (rc == 0)
            rc = tsim_study_print_bounds(out, s);
    }
    return rc ? tsim_error_set(err, TSIM_E_INTERNAL, "out of memory while printing") : TSIM_OK;
}

/* The JSON result: tool, version, command, study, params, results[], extra fields. */
cJSON *tsim_study_json(const tsim_study *s)
{
    cJSON *root = tsim_result_json_new();
    cJSON_AddStringToObject(root, "study", s->study);
    cJSON_AddItemToObject(root, "params", cJSON_Duplicate(s->params, 1));
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < s->n; i++) {
        const tsim_study_row *r = &s->rows[i];
        cJSON *j = cJSON_CreateObject();
        if (r->axis)
            cJSON_AddStringToObject(j, "axis", r->axis);
        if (r->ep >= 0)
            cJSON_AddNumberToObject(j, "ep", r->ep);
        if (!isnan(r->imbalance))
            cJSON_AddNumberToObject(j, "imbalance", r->imbalance);
        if (r->slots >= 0)
            cJSON_AddNumberToObject(j, "slots", r->slots);
        if (r->planner_slots > 0) /* only where the planner's own K differs */
            cJSON_AddNumberToObject(j, "planner_slots", r->planner_slots);
        if (!isnan(r->lambda_plan))
            cJSON_AddNumberToObject(j, "lambda_plan", r->lambda_plan);
        if (!isnan(r->lambda_eval))
            cJSON_AddNumberToObject(j, "lambda_eval", r->lambda_eval);
        if (r->flow_hint >= 0)
            cJSON_AddBoolToObject(j, "flow_hint", r->flow_hint);
        if (r->comm_cost >= 0)
            cJSON_AddBoolToObject(j, "comm_cost", r->comm_cost);
        cJSON_AddStringToObject(j, "key", r->key);
        cJSON_AddStringToObject(j, "planner", r->planner);
        if (!r->ok) {
            cJSON_AddStringToObject(j, "error", r->error);
            cJSON_AddItemToArray(results, j);
            continue;
        }
        if (r->seeds > 1)
            cJSON_AddNumberToObject(j, "seeds", r->seeds);
        cJSON_AddNumberToObject(j, "records", (double)r->records);
        cJSON *metrics = cJSON_AddObjectToObject(j, "metrics");
        for (int m = 0; m < TSIM_M_COUNT; m++)
            if (r->metric_on[m])
                cJSON_AddItemToObject(metrics, tsim_metric_names[m], tsim_summary_json(&r->metrics[m]));
        if (r->bounds_on && r->bounds_fit) /* --bounds: why excess_* are absent */
            cJSON_AddStringToObject(j, "bounds", tsim_bounds_fit_text(r->bounds_fit));
        cJSON *vllm = cJSON_AddObjectToObject(j, "balancedness_vllm");
        cJSON_AddNumberToObject(vllm, "before", tsim_study_row_vllm(r, false));
        cJSON_AddNumberToObject(vllm, "after", tsim_study_row_vllm(r, true));
        cJSON *notes = NULL;
        for (int b = 0; b < TSIM_NOTE_KINDS; b++)
            if (r->notes[b]) {
                if (!notes)
                    notes = cJSON_AddObjectToObject(j, "notes");
                cJSON_AddNumberToObject(notes, tsim_note_names[b], (double)r->notes[b]);
            }
        /* The paper's figure for this cell, where it has one. */
        tsim_paper_cell pc;
        tsim_paper_ablation pa;
        double speed;
        if (strcmp(s->study, "table1") == 0 && tsim_study_paper_comparable(s) &&
            tsim_paper_table1(r->ep, r->imbalance, tsim_study_row_method(r), &pc)) {
            cJSON *p = cJSON_AddObjectToObject(j, "paper");
            cJSON_AddNumberToObject(p, "improve_pp", pc.improve_pp);
            cJSON_AddNumberToObject(p, "weighted", pc.weighted);
            cJSON_AddNumberToObject(p, "intra", pc.intra);
            cJSON_AddNumberToObject(p, "inter", pc.inter);
        } else if (strcmp(s->study, "ablation") == 0 && tsim_paper_table2(r->flow_hint, r->comm_cost, &pa)) {
            cJSON *p = cJSON_AddObjectToObject(j, "paper");
            cJSON_AddNumberToObject(p, "rho_after", pa.rho_after);
            cJSON_AddNumberToObject(p, "intra", pa.intra);
            cJSON_AddNumberToObject(p, "inter", pa.inter);
            cJSON_AddNumberToObject(p, "weighted", pa.weighted);
        } else if (strcmp(s->study, "scaling") == 0 && r->axis && r->metric_on[TSIM_M_SPEEDUP] &&
                   strcmp(tsim_study_row_method(r), "taot") == 0) {
            double v = strcmp(r->axis, "ep") == 0 ? r->ep : strcmp(r->axis, "slots") == 0 ? r->slots : r->imbalance;
            if (tsim_paper_speedup(r->axis, v, &speed)) {
                cJSON *p = cJSON_AddObjectToObject(j, "paper");
                cJSON_AddNumberToObject(p, "speedup", speed);
            }
        }
        cJSON_AddItemToArray(results, j);
    }
    for (cJSON *e = s->extra ? s->extra->child : NULL; e; e = e->next)
        cJSON_AddItemToObject(root, e->string, cJSON_Duplicate(e, 1));
    return root;
}
