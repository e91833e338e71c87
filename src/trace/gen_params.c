/* The generator's parameters (gen.h): defaults, the range checks that name
 * each option, --hot-ranks parsing and printing, and whether two parameter
 * sets give the same records, and the meta that records them in a trace.
 * The sampling itself is in gen.c. */
#include "gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "topology.h"

void tsim_gen_params_default(tsim_gen_params *p)
{
    memset(p, 0, sizeof *p);
    p->experts = 128;
    p->ep = 16;
    p->ranks_per_node = 8;
    p->topk = 8;
    p->tokens = 4096;
    p->microbatches = 32;
    p->layers = 4;
    p->concentration = 200.0;
    p->drift = 0.05;
    p->hot_placement = TSIM_HOT_FIRST;
    p->hot_ranks = 1;
    p->n_hot_list = 0;
    p->hot_experts = 0;
    p->hot_skew = 0.0;
    p->hot_fraction = 0.0;
    p->seed = 1;
    p->threads = 1;
    p->version = TSIM_GEN_VERSION;
}

/* When v is outside lo..hi, sets err to "OPTION V is out of range LO..HI" (with
 * " (BOUND)" where other options set the bound) and returns true: the one
 * wording of the generator's range checks. */
static bool int_out_of_range(tsim_error *err, const char *option, int v, int lo, int hi, const char *bound)
{
    if (v >= lo && v <= hi)
        return false;
    tsim_error_set(err, TSIM_E_INPUT, "%s %d is out of range %d..%d%s%s%s", option, v, lo, hi, bound ? " (" : "",
                   bound ? bound : "", bound ? ")" : "");
    return true;
}

/* The same for a real value; NaN is out of every range. */
static bool real_out_of_range(tsim_error *err, const char *option, double v, double lo, double hi)
{
    if (v >= lo && v <= hi)
        return false;
    tsim_error_set(err, TSIM_E_INPUT, "%s %g is out of range %g..%g", option, v, lo, hi);
    return true;
}

int tsim_gen_params_check(const tsim_gen_params *p, tsim_error *err)
{
    if (int_out_of_range(err, "--experts", p->experts, 1, TSIM_MAX_EXPERTS, NULL) ||
        int_out_of_range(err, "--ep", p->ep, 1, TSIM_MAX_RANKS, NULL))
        return TSIM_E_INPUT;
    if (p->experts % p->ep != 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d is not divisible by --ep %d", p->experts, p->ep);
    if ((int64_t)p->experts * p->ep > TSIM_GEN_MAX_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT, "--experts %d x --ep %d is above the %d counts a record may hold",
                              p->experts, p->ep, TSIM_GEN_MAX_CELLS);
    if (int_out_of_range(err, "--rpn", p->ranks_per_node, 1, TSIM_MAX_RANKS, NULL) ||
        int_out_of_range(err, "--topk", p->topk, 1, p->experts, "the number of experts") ||
        int_out_of_range(err, "--tokens", p->tokens, 1, TSIM_GEN_MAX_TOKENS, NULL))
        return TSIM_E_INPUT;
    if (p->microbatches < 1 || p->layers < 1)
        return tsim_error_set(err, TSIM_E_INPUT, "--microbatches and --layers must be at least 1, got %d and %d",
                              p->microbatches, p->layers);
    if ((int64_t)p->microbatches * p->layers > TSIM_GEN_MAX_RECORDS)
        return tsim_error_set(err, TSIM_E_INPUT, "--microbatches %d x --layers %d is above %d records",
                              p->microbatches, p->layers, TSIM_GEN_MAX_RECORDS);
    /* Its own message: the bound reads 1e9, where %g would write 1e+09. */
    if (!(p->concentration >= 1e-3 && p->concentration <= 1e9))
        return tsim_error_set(err, TSIM_E_INPUT, "--concentration %g is out of range 0.001..1e9", p->concentration);
    if (real_out_of_range(err, "--drift", p->drift, 0.0, 1.0))
        return TSIM_E_INPUT;
    if (p->hot_move < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--hot-move %d is negative", p->hot_move);
    switch (p->hot_placement) {
    case TSIM_HOT_FIRST:
        if (int_out_of_range(err, "--hot-ranks", p->hot_ranks, 1, p->ep, "the EP size"))
            return TSIM_E_INPUT;
        break;
    case TSIM_HOT_PER_NODE: {
        int most = p->ranks_per_node < p->ep ? p->ranks_per_node : p->ep;
        if (p->hot_ranks < 1 || p->hot_ranks > most)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "--hot-ranks per-node:%d is out of range 1..%d (the ranks per node, at most the EP "
                                  "size)",
                                  p->hot_ranks, most);
        break;
    }
    case TSIM_HOT_LIST:
        if (p->n_hot_list < 1 || p->n_hot_list > TSIM_GEN_MAX_HOT_LIST)
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks: a list of 1..%d ranks, got %d",
                                  TSIM_GEN_MAX_HOT_LIST, p->n_hot_list);
        for (int i = 0; i < p->n_hot_list; i++) {
            if (p->hot_list[i] < 0 || p->hot_list[i] >= p->ep)
                return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks: rank %d is out of range 0..%d (EP%d)",
                                      p->hot_list[i], p->ep - 1, p->ep);
            if (i > 0 && p->hot_list[i] <= p->hot_list[i - 1])
                return tsim_error_set(err, TSIM_E_INPUT,
                                      "--hot-ranks: the ranks must be distinct and ascending (%d after %d)",
                                      p->hot_list[i], p->hot_list[i - 1]);
        }
        break;
    default:
        return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks: unknown placement %d", (int)p->hot_placement);
    }
    /* 0 (every expert of a hot rank) is the default, not an option value, so
     * the range shown starts at 1. */
    if ((p->hot_experts != 0 &&
         int_out_of_range(err, "--hot-experts", p->hot_experts, 1, p->experts / p->ep, "the experts per rank")) ||
        real_out_of_range(err, "--hot-skew", p->hot_skew, 0.0, TSIM_GEN_MAX_SKEW))
        return TSIM_E_INPUT;
    if (p->hot_skew > 0.0 && tsim_gen_hot_experts_per_rank(p) < 2)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--hot-skew %g weighs the j-th hot expert of each hot rank by (j + 1)^-S, but each hot "
                              "rank has one hot expert (%s), so it would change nothing; drop --hot-skew or give "
                              "--hot-experts 2 or more",
                              p->hot_skew, p->experts / p->ep == 1 ? "one expert per rank" : "--hot-experts 1");
    if (real_out_of_range(err, "--hot-fraction", p->hot_fraction, 0.0, 1.0))
        return TSIM_E_INPUT;
    if (p->version < TSIM_GEN_VERSION || p->version > TSIM_GEN_VERSION_BLOCKS)
        return tsim_error_set(err, TSIM_E_INPUT, "--generator %d is not a generator version (1, 2 or 3)", p->version);
    /* 0 threads samples on the caller's thread alone, as 1 does (gen.c), so the
     * range shown starts at 1 too. */
    if (p->threads != 0 && int_out_of_range(err, "-j", p->threads, 1, TSIM_GEN_MAX_THREADS, NULL))
        return TSIM_E_INPUT;
    if (p->seed > TSIM_GEN_MAX_SEED)
        return tsim_error_set(err, TSIM_E_INPUT, "--seed %llu is out of range 0..%llu", (unsigned long long)p->seed,
                              (unsigned long long)TSIM_GEN_MAX_SEED);
    return TSIM_OK;
}

static int parse_rank_list(const char *s, tsim_gen_params *p, const char *shown, tsim_error *err)
{
    int n = 0;
    const char *q = s;
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(q, &end, 10);
        if (end == q || (*end != ',' && *end != '\0') || errno || v < 0 || v >= TSIM_MAX_RANKS ||
            (q[0] < '0' || q[0] > '9'))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "--hot-ranks '%s': expected N, per-node:N or a list of ranks such as 0,8,16,24",
                                  shown);
        if (n == TSIM_GEN_MAX_HOT_LIST)
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks '%s': more than %d ranks", shown,
                                  TSIM_GEN_MAX_HOT_LIST);
        p->hot_list[n++] = (int)v;
        if (*end == '\0')
            break;
        q = end + 1;
    }
    /* Sorted, so that a placement has one form (0,1 is the same trace as 2). */
    for (int i = 1; i < n; i++) {
        int v = p->hot_list[i], j = i;
        for (; j > 0 && p->hot_list[j - 1] > v; j--)
            p->hot_list[j] = p->hot_list[j - 1];
        p->hot_list[j] = v;
    }
    for (int i = 1; i < n; i++)
        if (p->hot_list[i] == p->hot_list[i - 1])
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks '%s': rank %d is listed twice", shown,
                                  p->hot_list[i]);
    p->n_hot_list = n;
    p->hot_placement = TSIM_HOT_LIST;
    p->hot_ranks = n;
    return TSIM_OK;
}

int tsim_gen_hot_ranks_parse(const char *s, tsim_gen_params *p, tsim_error *err)
{
    static const char per_node[] = "per-node:", ranks[] = "ranks:";
    if (!s)
        s = "";
    if (strncmp(s, per_node, sizeof per_node - 1) == 0) {
        const char *v = s + sizeof per_node - 1;
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (end == v || *end || errno || v[0] < '0' || v[0] > '9' || n < 1 || n > TSIM_MAX_RANKS)
            return tsim_error_set(err, TSIM_E_INPUT, "--hot-ranks '%s': per-node:N needs N in 1..%d", s,
                                  TSIM_MAX_RANKS);
        p->hot_placement = TSIM_HOT_PER_NODE;
        p->hot_ranks = (int)n;
        p->n_hot_list = 0;
        return TSIM_OK;
    }
    if (strncmp(s, ranks, sizeof ranks - 1) == 0)
        return parse_rank_list(s + sizeof ranks - 1, p, s, err);
    if (strchr(s, ','))
        return parse_rank_list(s, p, s, err);
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (end == s || *end || errno || s[0] < '0' || s[0] > '9' || n < 1 || n > TSIM_MAX_RANKS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--hot-ranks '%s': expected N (1..%d), per-node:N or a list of ranks such as 0,8,16,24",
                              s, TSIM_MAX_RANKS);
    p->hot_placement = TSIM_HOT_FIRST;
    p->hot_ranks = (int)n;
    p->n_hot_list = 0;
    return TSIM_OK;
}

void tsim_gen_hot_ranks_format(const tsim_gen_params *p, char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = '\0';
    if (p->hot_placement == TSIM_HOT_FIRST) {
        snprintf(buf, n, "%d", p->hot_ranks);
        return;
    }
    if (p->hot_placement == TSIM_HOT_PER_NODE) {
        snprintf(buf, n, "per-node:%d", p->hot_ranks);
        return;
    }
    size_t at = 0;
    if (p->n_hot_list == 1)
        at = (size_t)snprintf(buf, n, "ranks:");
    for (int i = 0; i < p->n_hot_list && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", i ? "," : "", p->hot_list[i]);
}

int tsim_gen_hot_rank_list(const tsim_gen_params *p, int *ranks)
{
    int n = 0;
    switch (p->hot_placement) {
    case TSIM_HOT_FIRST:
        for (int r = 0; r < p->hot_ranks && r < p->ep; r++) {
            if (ranks)
                ranks[n] = r;
            n++;
        }
        break;
    case TSIM_HOT_PER_NODE:
        for (int first = 0; first < p->ep; first += p->ranks_per_node)
            for (int i = 0; i < p->hot_ranks && first + i < p->ep && i < p->ranks_per_node; i++) {
                if (ranks)
                    ranks[n] = first + i;
                n++;
            }
        break;
    case TSIM_HOT_LIST:
        for (int i = 0; i < p->n_hot_list; i++) {
            if (ranks)
                ranks[n] = p->hot_list[i];
            n++;
        }
        break;
    }
    return n;
}

int tsim_gen_hot_experts_per_rank(const tsim_gen_params *p)
{
    return p->hot_experts > 0 ? p->hot_experts : p->experts / p->ep;
}

int64_t tsim_gen_trial_records(const tsim_gen_params *p, int stride)
{
    return ((int64_t)p->microbatches + stride - 1) / stride * p->layers;
}

int64_t tsim_gen_record_count(const tsim_gen_params *p)
{
    return tsim_gen_trial_records(p, 1);
}

bool tsim_gen_default_regime(const tsim_gen_params *p)
{
    return p->hot_placement == TSIM_HOT_FIRST && p->hot_experts == 0 && p->hot_skew == 0.0;
}

bool tsim_gen_same_records(const tsim_gen_params *a, const tsim_gen_params *b)
{
    if (a->experts != b->experts || a->ep != b->ep || a->ranks_per_node != b->ranks_per_node ||
        a->topk != b->topk || a->tokens != b->tokens || a->microbatches != b->microbatches ||
        a->layers != b->layers || a->concentration != b->concentration || a->drift != b->drift ||
        a->hot_move != b->hot_move || a->seed != b->seed || tsim_gen_hot_tokens(a) != tsim_gen_hot_tokens(b) ||
        tsim_gen_hot_experts_per_rank(a) != tsim_gen_hot_experts_per_rank(b))
        return false;
    const int na = tsim_gen_hot_rank_list(a, NULL), nb = tsim_gen_hot_rank_list(b, NULL);
    if (na != nb)
        return false;
    /* Walk both lists without allocating: the i-th hot rank of each. */
    int ia = 0;
    bool same = true;
    for (int r = 0; r < a->ep && same; r++) {
        bool in_a = false, in_b = false;
        if (a->hot_placement == TSIM_HOT_FIRST)
            in_a = r < a->hot_ranks;
        else if (a->hot_placement == TSIM_HOT_PER_NODE)
            in_a = r % a->ranks_per_node < a->hot_ranks;
        else
            in_a = ia < a->n_hot_list && a->hot_list[ia] == r;
        if (in_a && a->hot_placement == TSIM_HOT_LIST)
            ia++;
        if (b->hot_placement == TSIM_HOT_FIRST) {
            in_b = r < b->hot_ranks;
        } else if (b->hot_placement == TSIM_HOT_PER_NODE) {
            in_b = r % b->ranks_per_node < b->hot_ranks;
        } else {
            for (int i = 0; i < b->n_hot_list && !in_b; i++)
                in_b = b->hot_list[i] == r;
        }
        same = in_a == in_b;
    }
    if (!same)
        return false;
    /* The skew enters only through the weights (j + 1)^-S (exactly 1 at
     * S = 0 and for j = 0), so equal weights give equal records. */
    for (int j = 1; j < tsim_gen_hot_experts_per_rank(a); j++)
        if (pow((double)(j + 1), -a->hot_skew) != pow((double)(j + 1), -b->hot_skew))
            return false;
    return true;
}

/* The trace's meta: the parameters, f and the calibration (gen.h). */
cJSON *tsim_gen_meta(const tsim_gen_params *p, const tsim_gen_calibration *cal, double achieved)
{
    cJSON *meta = cJSON_CreateObject();
    if (!meta)
        return NULL;
    bool ok = cJSON_AddStringToObject(meta, "source", "synthetic") != NULL;
    cJSON *gen = ok ? cJSON_AddObjectToObject(meta, "generator") : NULL;
    ok = gen && cJSON_AddStringToObject(gen, "name", TSIM_GEN_NAME) &&
         cJSON_AddNumberToObject(gen, "version", p->version) &&
         cJSON_AddNumberToObject(gen, "seed", (double)p->seed) &&
         cJSON_AddNumberToObject(gen, "experts", p->experts) && cJSON_AddNumberToObject(gen, "ep", p->ep) &&
         cJSON_AddNumberToObject(gen, "ranks_per_node", p->ranks_per_node) &&
         cJSON_AddNumberToObject(gen, "topk", p->topk) && cJSON_AddNumberToObject(gen, "tokens", p->tokens) &&
         cJSON_AddNumberToObject(gen, "microbatches", p->microbatches) &&
         cJSON_AddNumberToObject(gen, "layers", p->layers) &&
         cJSON_AddNumberToObject(gen, "concentration", p->concentration) &&
         cJSON_AddNumberToObject(gen, "drift", p->drift) &&
         cJSON_AddNumberToObject(gen, "hot_ranks", tsim_gen_hot_rank_list(p, NULL));
    /* The regime, beyond today's default shape (whose traces keep their bytes). */
    if (ok && !tsim_gen_default_regime(p)) {
        char spec[64];
        tsim_gen_hot_ranks_format(p, spec, sizeof spec);
        int *ranks = malloc(sizeof *ranks * (size_t)(p->ep > 0 ? p->ep : 1));
        cJSON *list = NULL;
        ok = ranks && cJSON_AddStringToObject(gen, "hot_placement", spec) &&
             (list = cJSON_AddArrayToObject(gen, "hot_rank_list")) != NULL;
        int n = ok ? tsim_gen_hot_rank_list(p, ranks) : 0;
        for (int i = 0; ok && i < n; i++) {
            cJSON *v = cJSON_CreateNumber(ranks[i]);
            ok = v && cJSON_AddItemToArray(list, v);
        }
        free(ranks);
        ok = ok && cJSON_AddNumberToObject(gen, "hot_experts", tsim_gen_hot_experts_per_rank(p)) &&
             cJSON_AddNumberToObject(gen, "hot_skew", p->hot_skew);
    }
    if (ok && p->hot_move > 0) /* absent when 0, so older traces keep their bytes */
        ok = cJSON_AddNumberToObject(gen, "hot_move", p->hot_move) != NULL;
    ok = ok && cJSON_AddNumberToObject(gen, "hot_fraction", p->hot_fraction) &&
         cJSON_AddNumberToObject(gen, "hot_tokens_per_record", (double)tsim_gen_hot_tokens(p)) &&
         cJSON_AddNumberToObject(gen, "imbalance_achieved", achieved);
    if (ok && cal)
        ok = cJSON_AddNumberToObject(gen, "imbalance_target", cal->target) &&
             cJSON_AddNumberToObject(gen, "imbalance_base", cal->base) &&
             cJSON_AddNumberToObject(gen, "calibration_trials", cal->trials);
    /* absent when the trials ran over the whole trace, so older traces keep their bytes */
    if (ok && cal && cal->trial_records > 0 && cal->trial_records < tsim_gen_record_count(p))
        ok = cJSON_AddNumberToObject(gen, "calibration_records", (double)cal->trial_records) != NULL;
    if (!ok) {
        cJSON_Delete(meta);
        return NULL;
    }
    return meta;
}
