/* libFuzzer target: the --fail-if expression parser and evaluator on any
 * bytes (up to the first NUL, as the command line would pass them). Promises
 * checked: parse succeeds or fails with TSIM_E_INPUT and a "--fail-if '..."
 * message, leaving no tree; a parsed expression evaluates to OK or TSIM_E_INPUT
 * (unknown name, NaN value, division by zero), never anything else; the
 * explanation is a terminated string that fits its buffer; the one-call check
 * agrees with parse + eval. Depth is bounded inside the library, so neither
 * the parser nor the evaluator may overflow the stack (the sanitizers and
 * libFuzzer's own stack checks report that as a crash). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "failif.h"
#include "fuzz_common.h"

/* Names a study would offer: values from a hash of the name, so the same
 * name always has the same value; "nan..." has no value; names starting with
 * 'x' are unknown. */
static int lookup(void *ctx, const char *name, double *value)
{
    int *calls = ctx;
    (*calls)++;
    if (name[0] == 'x')
        return -1;
    if (strncmp(name, "nan", 3) == 0) {
        *value = NAN;
        return 0;
    }
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, 1e300, -1e300, 5e-324, 0.05};
    *value = (h & 7) == 0 ? specials[(h >> 3) % 8] : (double)(int32_t)h / 1024.0;
    return 0;
}

static void check_message(const tsim_error *err, const char *what)
{
    if (err->msg[0] == '\0')
        fuzz_fail("%s: an error without a message", what);
    if (strnlen(err->msg, sizeof err->msg) == sizeof err->msg)
        fuzz_fail("%s: unterminated message", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';

    tsim_failif *f = (tsim_failif *)expr; /* must come back NULL on error */
    tsim_error err = {0};
    int rc = tsim_failif_parse(expr, &f, &err);
    if (rc != TSIM_OK) {
        if (rc != TSIM_E_INPUT || err.code != TSIM_E_INPUT)
            fuzz_fail("parse returned %d (code %d): %s", rc, err.code, err.msg);
        if (f != NULL)
            fuzz_fail("parse failed but left a tree");
        check_message(&err, "parse");
        if (strncmp(err.msg, "--fail-if '", 11) != 0)
            fuzz_fail("parse message does not quote the expression: %s", err.msg);
    } else {
        if (!f || strcmp(tsim_failif_text(f), expr) != 0)
            fuzz_fail("parsed expression lost its text");
        int calls = 0;
        bool holds = false;
        char explain[96];
        memset(explain, 'x', sizeof explain);
        tsim_error eval_err = {0};
        int erc = tsim_failif_eval(f, lookup, &calls, &holds, explain, sizeof explain, &eval_err);
        if (erc != TSIM_OK && erc != TSIM_E_INPUT)
            fuzz_fail("eval returned %d: %s", erc, eval_err.msg);
        if (memchr(explain, '\0', sizeof explain) == NULL)
            fuzz_fail("explanation not terminated within its buffer");
        if (erc != TSIM_OK) {
            check_message(&eval_err, "eval");
            if (holds)
                fuzz_fail("eval failed but says the condition holds");
        }
        /* A second evaluation gives the same answer: nothing is kept between. */
        int calls2 = 0;
        bool holds2 = false;
        tsim_error eval_err2 = {0};
        int erc2 = tsim_failif_eval(f, lookup, &calls2, &holds2, NULL, 0, &eval_err2);
        if (erc2 != erc || holds2 != holds || strcmp(eval_err2.msg, eval_err.msg) != 0)
            fuzz_fail("two evaluations disagree: %d/%d vs %d/%d", erc, holds, erc2, holds2);
        tsim_error check_err = {0};
        int calls3 = 0;
        int crc = tsim_failif_check(expr, lookup, &calls3, &check_err);
        int want = erc != TSIM_OK ? erc : (holds ? TSIM_E_CHECK : TSIM_OK);
        if (crc != want)
            fuzz_fail("check returned %d, parse + eval say %d", crc, want);
        if (crc != TSIM_OK)
            check_message(&check_err, "check");
        tsim_failif_free(f);
    }
    free(expr);
    return 0;
}
