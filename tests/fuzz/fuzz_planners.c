/* libFuzzer target: every registered planner on records decoded from the fuzz
 * bytes, every plan checked by the evaluator. The bytes give the topology
 * (R 1..16, E = R x 1..8, K 0..4, rpn 1..R+3 so it may exceed R or not divide
 * it, contiguous or round-robin homes), planner options (lambda_plan and the
 * TAOT self bonus up to the ends of their CLI ranges), 1..3 records and their
 * counts, from zero to 2^40. A planner may refuse a topology or a record with
 * TSIM_E_INPUT and a message; anything else that is not a plan the evaluator
 * accepts (TSIM_E_INTERNAL, a message-less error, a non-finite metric) aborts. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "../test_options.h"
#include "fuzz_common.h"
#include "planner.h"
#include "registry.h"
#include "record.h"
#include "session.h"
#include "topology.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} bytes;

static unsigned take(bytes *b)
{
    if (b->n == 0)
        return 0;
    b->n--;
    return *b->p++;
}

/* One count: small, zero, medium or huge (up to exactly 2^40). */
static int64_t take_count(bytes *b)
{
    unsigned c = take(b);
    switch (c >> 6) {
    case 0:
        return c & 63;
    case 1:
        return 0;
    case 2:
        return (int64_t)((c & 63) << 8 | take(b));
    default: {
        uint64_t v = 0;
        for (int i = 0; i < 5; i++)
            v = v << 8 | take(b);
        if (c & 1)
            return TSIM_MAX_COUNT - (int64_t)(v & 0xff);
        return (int64_t)(v % ((uint64_t)TSIM_MAX_COUNT + 1));
    }
    }
}

#define MAX_RECORDS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bytes b = {data, size};
    int R = 1 + (int)(take(&b) % 16);
    int E = R * (1 + (int)(take(&b) % 8));
    int K = (int)(take(&b) % 5);
    int rpn = 1 + (int)(take(&b) % (unsigned)(R + 3));
    unsigned flags = take(&b) | take(&b) << 8;
    int n_records = 1 + (int)(take(&b) % MAX_RECORDS);

    int32_t *home = NULL;
    if (flags & 1) {
        home = malloc(sizeof *home * (size_t)E);
        if (!home)
            return 0;
        for (int e = 0; e < E; e++)
            home[e] = e % R; /* round robin: still E/R experts per rank */
    }
    tsim_record recs[MAX_RECORDS];
    tsim_error err = {0};
    for (int i = 0; i < n_records; i++) {
        if (tsim_record_alloc(&recs[i], R, E, &err))
            fuzz_fail("tsim_record_alloc: %s", err.msg);
        recs[i].index = i;
        recs[i].microbatch = i;
        /* a run of equal bytes fills the record: whole-record patterns are cheap to find */
        for (size_t c = 0; c < (size_t)R * (size_t)E; c++)
            recs[i].counts[c] = take_count(&b);
    }

    tsim_planner_options opts;
    tsim_planner_options_default(&opts);
    static const double lambdas[4] = {3.0, 1.0, 1e-9, 1e9}; /* the default, then the CLI's range */
    opts.common.lambda_plan = lambdas[((flags >> 1) & 1) | ((flags >> 12) & 2)];
    TSIM_OPTS(opts, taot)->phase3 = (flags & 4) ? TSIM_TAOT_SPLIT : TSIM_TAOT_AUCTION;
    TSIM_OPTS(opts, taot)->flow_hint = !(flags & 8);
    TSIM_OPTS(opts, taot)->comm_cost = !(flags & 16);
    TSIM_OPTS(opts, taot)->self_bonus = (flags & 32) ? ((flags & 0x4000) ? -1e6 : 0.5) : 0.0;
    TSIM_OPTS(opts, taot)->iters = (flags & 0x8000) ? 0 : 50;
    TSIM_OPTS(opts, llep)->min_chunk = (flags & 64) ? 1 : 1024;
    TSIM_OPTS(opts, llep)->alpha = (flags & 128) ? 1.5 : 1.0;
    TSIM_OPTS(opts, llep)->threshold = (flags & 256) ? 1.3 : 0.0;
    TSIM_OPTS(opts, lplb)->solver = (flags & 512) ? TSIM_LPLB_EXACT : TSIM_LPLB_IPM;
    TSIM_OPTS(opts, lplb)->history = (int)((flags >> 10) % 3);
    TSIM_OPTS(opts, fastermoe)->model_us = (flags & 0x2000) ? 0.0 : 380.0; /* 0: shadow every strict gap */
    TSIM_OPTS(opts, optimal)->node_limit = 50; /* the MIP must not eat the fuzzer's time */

    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        /* expensive planners (the MIP yardstick) are for small shapes; larger
         * ones only cost fuzzing time */
        if ((*d)->cost == TSIM_COST_EXPENSIVE && E * (R - 1) > 64)
            continue;
        tsim_planner p;
        tsim_planner_configure(&p, *d, NULL, &opts);
        tsim_session s;
        int rc = tsim_session_init(&s, R, E, rpn, K, home, &p, 1, 3.0, &err);
        if (rc) {
            if (rc != TSIM_E_INPUT || !err.msg[0])
                fuzz_fail("%s: init R=%d E=%d K=%d rpn=%d returned %d: %s", (*d)->name, R, E, K, rpn, rc, err.msg);
            continue;
        }
        for (int i = 0; i < n_records; i++) {
            rc = tsim_session_record(&s, &recs[i], &err);
            if (rc) {
                if (rc != TSIM_E_INPUT || !err.msg[0])
                    fuzz_fail("%s: R=%d E=%d K=%d rpn=%d record %d returned %d: %s", (*d)->name, R, E, K, rpn, i,
                              rc, err.msg);
                break;
            }
            for (int m = 0; m < TSIM_M_COUNT; m++) {
                double v = s.results[0].metrics[m].values[i];
                if (!isfinite(v))
                    fuzz_fail("%s: record %d: metric %s is %g", (*d)->name, i, tsim_metric_names[m], v);
            }
        }
        tsim_session_free(&s);
    }
    for (int i = 0; i < n_records; i++)
        tsim_record_free(&recs[i]);
    free(home);
    return 0;
}
