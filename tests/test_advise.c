/* taotsim advise (study/advise*.c): the setting keys, the Pareto set and the
 * recommendation over random rows (properties), and a small sweep on a
 * bundled trace (which settings, -j and --shard give the same rows). */
#include <criterion/criterion.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "experiments.h"
#include "study_print.h"

Test(advise, keys_spell_their_setting)
{
    tsim_advise_setting s;
    cr_assert_eq(tsim_advise_setting_parse("k2.i8.hprev", &s), 0);
    cr_assert_eq(s.slots, 2);
    cr_assert_eq(s.interval, 8);
    cr_assert_str_eq(s.history, "prev");
    cr_assert(isnan(s.lambda_plan));
    cr_assert_eq(tsim_advise_setting_parse("k1.lp2p5", &s), 0);
    cr_assert_eq(s.slots, 1);
    cr_assert_eq(s.interval, 0);
    cr_assert_str_eq(s.history, "");
    cr_assert_float_eq(s.lambda_plan, 2.5, 1e-12);
    cr_assert_eq(tsim_advise_setting_parse("kfree", &s), 0);
    cr_assert_eq(s.slots, 0);
    cr_assert_eq(tsim_advise_setting_parse("k2.hnone", &s), 0);
    cr_assert_str_eq(s.history, "none");
    /* not advise keys: another study's, no K, a bad number */
    cr_assert_eq(tsim_advise_setting_parse("ep16.imb70", &s), -1);
    cr_assert_eq(tsim_advise_setting_parse("i8.hprev", &s), -1);
    cr_assert_eq(tsim_advise_setting_parse("k0", &s), -1);
    cr_assert_eq(tsim_advise_setting_parse("k2.ix", &s), -1);
}

/* ---- the Pareto set and the recommendation, over random rows ------------------ */

static void random_study(tsim_study *s, unsigned *seed, int n)
{
    tsim_study_init(s, "advise");
    cJSON_AddNumberToObject(s->params, "lambda_eval", 3);
    cJSON_AddNumberToObject(s->params, "expert_mb", 10);
    cJSON_AddNumberToObject(s->params, "target_balancedness", 0.9);
    const int b = tsim_advise_balancedness_metric();
    cr_assert_geq(b, 0, "this build has no balancedness_after metric");
    for (int i = 0; i < n; i++) {
        tsim_study_row *r = tsim_study_add(s);
        cr_assert(r);
        snprintf(r->planner, sizeof r->planner, "p%d", rand_r(seed) % 3);
        r->ok = rand_r(seed) % 10 != 0;
        r->slots = 1 + rand_r(seed) % 4;
        /* few distinct values, so ties happen */
        static const char *const hist[] = {"prev", "none", "oracle"};
        snprintf(r->key, sizeof r->key, "k%d.i%d.h%s", r->slots, 1 + i, hist[rand_r(seed) % 3]);
        r->metric_on[b] = r->metric_on[TSIM_M_WEIGHTED] = true;
        r->metric_on[TSIM_M_REHOMED_INTRA] = r->metric_on[TSIM_M_REHOMED_INTER] = true;
        r->metrics[b].mean = 0.8 + 0.05 * (rand_r(seed) % 5);
        r->metrics[TSIM_M_WEIGHTED].mean = rand_r(seed) % 4;
        r->metrics[TSIM_M_REHOMED_INTRA].mean = rand_r(seed) % 2;
        r->metrics[TSIM_M_REHOMED_INTER].mean = rand_r(seed) % 2;
    }
}

static bool listed(const cJSON *pareto, const tsim_study_row *r)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pareto)
    {
        if (strcmp(cJSON_GetObjectItem(p, "planner")->valuestring, r->planner) == 0 &&
            strcmp(cJSON_GetObjectItem(p, "key")->valuestring, r->key) == 0)
            return true;
    }
    return false;
}

static bool deployable(const tsim_study_row *r)
{
    return r->ok && !strstr(r->key, "horacle");
}

static bool dominates(const tsim_advise_score *a, const tsim_advise_score *b)
{
    return a->balancedness >= b->balancedness && a->memory_mb <= b->memory_mb &&
           a->weight_traffic <= b->weight_traffic &&
           (a->balancedness > b->balancedness || a->memory_mb < b->memory_mb || a->weight_traffic < b->weight_traffic);
}

Test(advise, pareto_and_recommendation_hold_on_random_rows)
{
    unsigned seed = 24;
    for (int trial = 0; trial < 300; trial++) {
        tsim_study s;
        random_study(&s, &seed, 1 + trial % 25);
        tsim_error err = {0};
        cr_assert_eq(tsim_advise_finish(&s, &err), TSIM_OK, "%s", err.msg);
        const cJSON *pareto = cJSON_GetObjectItem(s.extra, "pareto");
        const cJSON *rec = cJSON_GetObjectItem(s.extra, "recommendation");
        tsim_advise_score *sc = calloc((size_t)s.n, sizeof *sc);
        for (int i = 0; i < s.n; i++)
            tsim_advise_score_row(&s, &s.rows[i], &sc[i]);
        int best = -1;
        for (int i = 0; i < s.n; i++) {
            bool dominated = false;
            for (int k = 0; k < s.n; k++)
                dominated |= deployable(&s.rows[k]) && dominates(&sc[k], &sc[i]);
            /* the set is exactly the deployable rows that nothing dominates */
            cr_assert_eq(listed(pareto, &s.rows[i]), deployable(&s.rows[i]) && !dominated, "trial %d row %d", trial,
                         i);
            if (!deployable(&s.rows[i]) || sc[i].balancedness < 0.9)
                continue;
            /* least memory, then least weight traffic, then best balance, then the first */
            if (best < 0 || sc[i].memory_mb < sc[best].memory_mb ||
                (sc[i].memory_mb == sc[best].memory_mb &&
                 (sc[i].weight_traffic < sc[best].weight_traffic ||
                  (sc[i].weight_traffic == sc[best].weight_traffic && sc[i].balancedness > sc[best].balancedness))))
                best = i;
        }
        /* the ranking --export-layout walks starts with the recommendation */
        int *order = calloc((size_t)s.n, sizeof *order);
        const int ranked = tsim_advise_ranked(&s, order);
        cr_assert_eq(ranked > 0, best >= 0, "trial %d", trial);
        if (ranked > 0)
            cr_assert_eq(order[0], best, "trial %d", trial);
        for (int k = 1; k < ranked; k++)
            cr_assert_leq(sc[order[k - 1]].memory_mb, sc[order[k]].memory_mb, "trial %d", trial);
        free(order);
        const cJSON *key = cJSON_GetObjectItem(rec, "key");
        if (best < 0) {
            cr_assert(cJSON_IsNull(cJSON_GetObjectItem(rec, "planner")), "trial %d", trial);
        } else {
            cr_assert(cJSON_IsString(key), "trial %d: no recommendation", trial);
            cr_assert_str_eq(key->valuestring, s.rows[best].key, "trial %d", trial);
            cr_assert_str_eq(cJSON_GetObjectItem(rec, "planner")->valuestring, s.rows[best].planner);
        }
        free(sc);
        tsim_study_free(&s);
    }
}

Test(advise, memory_is_k_slots_or_the_peak_guests)
{
    tsim_study s;
    tsim_study_init(&s, "advise");
    cJSON_AddNumberToObject(s.params, "expert_mb", 9.5);
    cJSON_AddNumberToObject(s.params, "lambda_eval", 2);
    tsim_study_row *r = tsim_study_add(&s);
    r->ok = true;
    r->slots = 3;
    r->metric_on[TSIM_M_REHOMED_INTRA] = r->metric_on[TSIM_M_REHOMED_INTER] = true;
    r->metrics[TSIM_M_WEIGHTED].mean = 5;
    r->metrics[TSIM_M_REHOMED_INTRA].mean = 1;
    r->metrics[TSIM_M_REHOMED_INTER].mean = 0.5;
    tsim_advise_score sc;
    tsim_advise_score_row(&s, r, &sc);
    cr_assert_float_eq(sc.memory_mb, 28.5, 1e-12);
    cr_assert_float_eq(sc.weight_traffic, 5 + 1 + 2 * 0.5, 1e-12);
    cr_assert_float_eq(sc.moves, 1.5, 1e-12);
    r->slots = -1; /* no slot limit: the most guests a rank held */
    r->planner_slots = 6;
    tsim_advise_score_row(&s, r, &sc);
    cr_assert_float_eq(sc.memory_mb, 57, 1e-12);
    tsim_study_free(&s);
}

/* ---- a small sweep on a bundled trace ---------------------------------------------- */

static void small_config(tsim_advise_config *c, char *trace, size_t n)
{
    const char *root = getenv("TSIM_SOURCE_ROOT");
    snprintf(trace, n, "%s/traces/ep16-imb50.jsonl.gz", root ? root : ".");
    tsim_advise_config_default(c);
    c->trace = trace;
    c->planners = "none,eplb,taot,llep";
    c->slot_list[0] = 1;
    c->slot_list[1] = 2;
    c->n_slots = 2;
    c->intervals[0] = 1;
    c->intervals[1] = 8;
    c->n_intervals = 2;
    c->lambdas[0] = 3;
    c->n_lambdas = 1;
}

static char *json_of(const tsim_study *s)
{
    cJSON *j = tsim_study_json(s);
    cJSON_DeleteItemFromObject(j, "command");
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
}

Test(advise, sweeps_each_planners_own_knobs)
{
    char trace[4096];
    tsim_advise_config c;
    small_config(&c, trace, sizeof trace);
    tsim_study s;
    tsim_error err = {0};
    cr_assert_eq(tsim_run_advise(&c, &s, &err), TSIM_OK, "%s", err.msg);
    /* none and llep once (no slot limit), eplb K x (intervals x prev + none),
     * taot K x one lambda_plan */
    static const char *const want[][2] = {
        {"none", "kfree"},         {"eplb", "k1.i1.hprev"}, {"eplb", "k1.i8.hprev"}, {"eplb", "k1.hnone"},
        {"eplb", "k2.i1.hprev"},   {"eplb", "k2.i8.hprev"}, {"eplb", "k2.hnone"},    {"taot", "k1.lp3"},
        {"taot", "k2.lp3"},        {"llep", "kfree"},
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    cr_assert_eq(s.n, n);
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(s.rows[i].planner, want[i][0], "row %d", i);
        cr_assert_str_eq(s.rows[i].key, want[i][1], "row %d", i);
        cr_assert(s.rows[i].ok, "row %d: %s", i, s.rows[i].error);
        cr_assert_eq(s.rows[i].records, 32);
    }
    /* interval 1 re-homes more often than interval 8 */
    cr_assert_gt(s.rows[1].metrics[TSIM_M_REHOMED_INTRA].mean + s.rows[1].metrics[TSIM_M_REHOMED_INTER].mean,
                 s.rows[2].metrics[TSIM_M_REHOMED_INTRA].mean + s.rows[2].metrics[TSIM_M_REHOMED_INTER].mean);
    cr_assert_eq(s.rows[0].planner_slots, 0, "none hosts no guest");
    cr_assert_gt(s.rows[9].planner_slots, 0, "llep's peak guests stand for its memory");
    /* the same bytes at any -j (shards: the i24a-advise-shard golden case) */
    char *one = json_of(&s);
    tsim_study_free(&s);
    c.threads = 3;
    cr_assert_eq(tsim_run_advise(&c, &s, &err), TSIM_OK, "%s", err.msg);
    char *three = json_of(&s);
    cr_assert_str_eq(three, one);
    tsim_study_free(&s);
    free(three);
    free(one);
}
