/* --fail-if expressions: evaluation, precedence, names, explanations, and the
 * exact message of every class of malformed expression. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failif.h"

typedef struct {
    const char *name;
    double value;
} binding;

/* The names a study would offer. */
static const binding names[] = {
    {"taot.weighted.mean", 17.25},
    {"echo.weighted.mean", 24.5},
    {"taot.rho_after.p95", 0.03},
    {"taot-split.rho_after.p95", 0.07},
    {"ep16.imb70.taot.weighted.mean", 27},
    {"a", 3},
    {"b", 1},
    {"c", 2},
    {"zero", 0},
    {"neg", -4},
    {"min", 10}, /* a metric may well be called min */
    {"nan", NAN},
};

static int lookup(void *ctx, const char *name, double *value)
{
    int *calls = ctx;
    if (calls)
        (*calls)++;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(names[i].name, name) == 0) {
            *value = names[i].value;
            return 0;
        }
    }
    return -1;
}

/* Parses and evaluates; fails the test on any error. */
static bool holds(const char *expr, char *explain, size_t size)
{
    tsim_failif *f = NULL;
    tsim_error err = {0};
    int rc = tsim_failif_parse(expr, &f, &err);
    cr_assert_eq(rc, TSIM_OK, "parse '%s': %s", expr, err.msg);
    bool h = false;
    rc = tsim_failif_eval(f, lookup, NULL, &h, explain, size, &err);
    cr_assert_eq(rc, TSIM_OK, "eval '%s': %s", expr, err.msg);
    tsim_failif_free(f);
    return h;
}

static bool holds_quiet(const char *expr)
{
    char explain[512];
    return holds(expr, explain, sizeof explain);
}

static void expect_explain(const char *expr, bool want, const char *want_explain)
{
    char explain[512];
    bool h = holds(expr, explain, sizeof explain);
    cr_assert_eq(h, want, "'%s' should %s", expr, want ? "hold" : "not hold");
    cr_assert_str_eq(explain, want_explain);
}

static void expect_syntax_error(const char *expr, const char *want_msg)
{
    tsim_failif *f = (tsim_failif *)&f; /* must be reset to NULL on error */
    tsim_error err = {0};
    int rc = tsim_failif_parse(expr, &f, &err);
    cr_assert_eq(rc, TSIM_E_INPUT, "'%s' should not parse", expr);
    cr_assert_eq(err.code, TSIM_E_INPUT);
    cr_assert_null(f);
    cr_assert_str_eq(err.msg, want_msg);
}

static void expect_eval_error(const char *expr, const char *want_msg)
{
    tsim_failif *f = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_parse(expr, &f, &err), TSIM_OK, "%s", err.msg);
    bool h = true;
    char explain[64] = "untouched";
    cr_assert_eq(tsim_failif_eval(f, lookup, NULL, &h, explain, sizeof explain, &err), TSIM_E_INPUT, "'%s'", expr);
    cr_assert(!h);
    cr_assert_str_eq(err.msg, want_msg);
    tsim_failif_free(f);
}

Test(failif, true_and_false)
{
    expect_explain("taot.weighted.mean > echo.weighted.mean", false,
                   "taot.weighted.mean (17.25) > echo.weighted.mean (24.5)");
    expect_explain("taot.weighted.mean < echo.weighted.mean", true,
                   "taot.weighted.mean (17.25) < echo.weighted.mean (24.5)");
    expect_explain("taot.rho_after.p95 > 0.05", false, "taot.rho_after.p95 (0.03) > 0.05");
    expect_explain("taot-split.rho_after.p95 > 0.05", true, "taot-split.rho_after.p95 (0.07) > 0.05");
    expect_explain("ep16.imb70.taot.weighted.mean>=27", true, "ep16.imb70.taot.weighted.mean (27) >= 27");
}

Test(failif, every_comparison)
{
    cr_assert(holds_quiet("a > b"));
    cr_assert(!holds_quiet("a < b"));
    cr_assert(holds_quiet("a >= 3"));
    cr_assert(!holds_quiet("a > 3"));
    cr_assert(holds_quiet("a <= 3"));
    cr_assert(!holds_quiet("a < 3"));
    cr_assert(holds_quiet("a == 3"));
    cr_assert(!holds_quiet("a == 3.0001"));
    cr_assert(holds_quiet("a != 3.0001"));
    cr_assert(!holds_quiet("a != 3"));
}

Test(failif, logic)
{
    cr_assert(holds_quiet("a > 1 && b < 2"));
    cr_assert(!holds_quiet("a > 1 && b > 2"));
    cr_assert(holds_quiet("a > 5 || b < 2"));
    cr_assert(!holds_quiet("a > 5 || b > 2"));
    /* && binds tighter than ||: false || (true && true). */
    cr_assert(holds_quiet("a > 5 || a > 1 && b > 0"));
    /* (false || true) && false. */
    cr_assert(!holds_quiet("(a > 5 || a > 1) && b > 9"));
    expect_explain("a > 5 || a > 1 && b > 0", true, "a (3) > 5 || a (3) > 1 && b (1) > 0");
    expect_explain("(a > 5 || a > 1) && b > 9", false, "(a (3) > 5 || a (3) > 1) && b (1) > 9");
}

Test(failif, arithmetic_precedence)
{
    /* a + b * c = 3 + 2 = 5, not (3 + 1) * 2 = 8. */
    cr_assert(holds_quiet("a + b * c == 5"));
    cr_assert(holds_quiet("(a + b) * c == 8"));
    /* Left associative: 3 - 1 - 2 = 0 and 3 / 1 / 2 = 1.5. */
    cr_assert(holds_quiet("a - b - c == 0"));
    cr_assert(holds_quiet("a - (b - c) == 4"));
    cr_assert(holds_quiet("a / b / c == 1.5"));
    cr_assert(holds_quiet("-a * c == -6"));
    cr_assert(holds_quiet("- -a == 3"));
    cr_assert(holds_quiet("2 * -b == -2"));
    cr_assert(holds_quiet("1e1 == 10 && .5 == 0.5 && 2.5E-1 == 0.25 && 1e+2 == 100"));
    expect_explain("a + b * c == 5", true, "a (3) + b (1) * c (2) [= 5] == 5");
    expect_explain("(a + b) * c > 7", true, "(a (3) + b (1)) * c (2) [= 8] > 7");
    expect_explain("a - (b - c) > 0", true, "a (3) - (b (1) - c (2)) [= 4] > 0");
    expect_explain("- -a < -0.5", false, "-(-a (3)) [= 3] < -0.5");
}

Test(failif, functions)
{
    cr_assert(holds_quiet("abs(neg) == 4"));
    cr_assert(holds_quiet("min(a, b) == 1 && max(a, b) == 3"));
    cr_assert(holds_quiet("max(min(a, c), b) == 2"));
    cr_assert(holds_quiet("abs(a - c * c) == 1"));
    /* "min" without '(' is a name like any other. */
    cr_assert(holds_quiet("min > 9"));
    expect_explain("abs(taot.weighted.mean - echo.weighted.mean) > 5", true,
                   "abs(taot.weighted.mean (17.25) - echo.weighted.mean (24.5)) [= 7.25] > 5");
}

Test(failif, dash_in_names)
{
    /* With spaces (or a space on one side) '-' subtracts; glued between two
     * alphanumerics it is part of the name. */
    cr_assert(holds_quiet("a - b == 2"));
    cr_assert(holds_quiet("a -b == 2"));
    cr_assert(holds_quiet("a- b == 2"));
    cr_assert(holds_quiet("a -1 == 2"));
    expect_eval_error("a-1 > 0", "--fail-if 'a-1 > 0': unknown name 'a-1' (a '-' between letters or digits is "
                                 "part of a name; write 'a - b' to subtract)");
    expect_eval_error("a-b > 0", "--fail-if 'a-b > 0': unknown name 'a-b' (a '-' between letters or digits is "
                                 "part of a name; write 'a - b' to subtract)");
    /* After a ')' or before a '(' the '-' is an operator. */
    cr_assert(holds_quiet("(a)-b == 2"));
    cr_assert(holds_quiet("a-(b) == 2"));
}

Test(failif, values_format_with_6_significant_digits)
{
    expect_explain("taot.weighted.mean / 3 > 0", true, "taot.weighted.mean (17.25) / 3 [= 5.75] > 0");
    expect_explain("a / 7 > 0.1234567", true, "a (3) / 7 [= 0.428571] > 0.1234567");
}

Test(failif, unknown_names)
{
    expect_eval_error("taot.weighted.maen > 1", "--fail-if 'taot.weighted.maen > 1': unknown name 'taot.weighted.maen'");
    /* The side of || that does not decide is still checked. */
    expect_eval_error("a > 1 || bogus > 1", "--fail-if 'a > 1 || bogus > 1': unknown name 'bogus'");
    expect_eval_error("max(a, nope) > 1", "--fail-if 'max(a, nope) > 1': unknown name 'nope'");
}

Test(failif, every_name_is_looked_up)
{
    tsim_failif *f = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_parse("a > 1 || b > 1 || c > 1", &f, &err), TSIM_OK);
    int calls = 0;
    bool h = false;
    cr_assert_eq(tsim_failif_eval(f, lookup, &calls, &h, NULL, 0, &err), TSIM_OK);
    cr_assert(h);
    cr_assert_eq(calls, 3);
    tsim_failif_free(f);
}

Test(failif, bad_values)
{
    expect_eval_error("a / zero > 1", "--fail-if 'a / zero > 1': column 3: division by zero");
    expect_eval_error("nan > 1", "--fail-if 'nan > 1': 'nan' has no value (NaN)");
}

Test(failif, explain_is_truncated_safely)
{
    tsim_failif *f = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_parse("taot.weighted.mean > echo.weighted.mean", &f, &err), TSIM_OK);
    char small[11];
    memset(small, 'x', sizeof small);
    bool h = true;
    cr_assert_eq(tsim_failif_eval(f, lookup, NULL, &h, small, sizeof small, &err), TSIM_OK);
    cr_assert(!h);
    cr_assert_str_eq(small, "taot.weigh");
    cr_assert_str_eq(tsim_failif_text(f), "taot.weighted.mean > echo.weighted.mean");
    tsim_failif_free(f);
}

Test(failif, check_helper)
{
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_check("taot.weighted.mean > echo.weighted.mean", lookup, NULL, &err), TSIM_OK);
    cr_assert_eq(tsim_failif_check("taot.weighted.mean < echo.weighted.mean", lookup, NULL, &err), TSIM_E_CHECK);
    cr_assert_str_eq(err.msg, "--fail-if 'taot.weighted.mean < echo.weighted.mean' holds: "
                              "taot.weighted.mean (17.25) < echo.weighted.mean (24.5)");
    cr_assert_eq(tsim_failif_check("a >", lookup, NULL, &err), TSIM_E_INPUT);
    cr_assert_eq(tsim_failif_check("x > 1", lookup, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--fail-if 'x > 1': unknown name 'x'");
}

Test(failif, malformed_empty)
{
    expect_syntax_error("", "--fail-if '': empty expression");
    expect_syntax_error("   \t", "--fail-if '   \t': empty expression");
    tsim_failif *f = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_parse(NULL, &f, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, "--fail-if '': empty expression");
}

Test(failif, malformed_no_comparison)
{
    expect_syntax_error("taot.weighted.mean",
                        "--fail-if 'taot.weighted.mean': column 1: expected a comparison (such as "
                        "'taot.rho_after.p95 > 0.05'), found a value");
    expect_syntax_error("3", "--fail-if '3': column 1: expected a comparison (such as 'taot.rho_after.p95 > "
                             "0.05'), found a value");
    expect_syntax_error("a + b", "--fail-if 'a + b': column 1: expected a comparison (such as "
                                 "'taot.rho_after.p95 > 0.05'), found a value");
    expect_syntax_error("a && b > 1", "--fail-if 'a && b > 1': column 1: expected a comparison before '&&', "
                                      "found a value");
    expect_syntax_error("a > 1 || b", "--fail-if 'a > 1 || b': column 10: expected a comparison after '||', "
                                      "found a value");
}

Test(failif, malformed_dangling_operator)
{
    expect_syntax_error("a >", "--fail-if 'a >': column 4: expected a number, a name or '(' after '>', found the "
                               "end of the expression");
    expect_syntax_error("a > b &&", "--fail-if 'a > b &&': column 9: expected a number, a name or '(' after "
                                    "'&&', found the end of the expression");
    expect_syntax_error("> 1", "--fail-if '> 1': column 1: expected a number, a name or '(', found '>'");
    expect_syntax_error("a > * b", "--fail-if 'a > * b': column 5: expected a number, a name or '(' after '>', "
                                   "found '*'");
    expect_syntax_error("a + > 1", "--fail-if 'a + > 1': column 5: expected a number, a name or '(' after '+', "
                                   "found '>'");
    expect_syntax_error("a -", "--fail-if 'a -': column 4: expected a number, a name or '(' after '-', found "
                               "the end of the expression");
}

Test(failif, malformed_parentheses)
{
    expect_syntax_error("(a > b", "--fail-if '(a > b': column 7: expected ')' to close the '(' at column 1, "
                                  "found the end of the expression");
    expect_syntax_error("((a > b) && c < 1", "--fail-if '((a > b) && c < 1': column 18: expected ')' to close "
                                             "the '(' at column 1, found the end of the expression");
    expect_syntax_error("a > b)", "--fail-if 'a > b)': column 6: unmatched ')'");
    expect_syntax_error("()", "--fail-if '()': column 2: expected a number, a name or '(' after '(', found ')'");
    expect_syntax_error("(a > b c)", "--fail-if '(a > b c)': column 8: expected ')' to close the '(' at column "
                                     "1, found 'c'");
}

Test(failif, malformed_trailing_garbage)
{
    expect_syntax_error("a > b c", "--fail-if 'a > b c': column 7: expected an operator or the end of the "
                                   "expression, found 'c'");
    expect_syntax_error("a > 1 2", "--fail-if 'a > 1 2': column 7: expected an operator or the end of the "
                                   "expression, found '2'");
    expect_syntax_error("a > 1 (c)", "--fail-if 'a > 1 (c)': column 7: expected an operator or the end of the "
                                     "expression, found '('");
    /* A name before '(' is a call, spaces or not. */
    expect_syntax_error("a > b (c)", "--fail-if 'a > b (c)': column 5: unknown function 'b'; the functions are "
                                     "abs, min and max");
    expect_syntax_error("a > b $", "--fail-if 'a > b $': column 7: unexpected character '$'");
    expect_syntax_error("a > b\x01", "--fail-if 'a > b\x01': column 6: unexpected byte 0x01");
}

Test(failif, malformed_numbers)
{
    expect_syntax_error("a > 1.2.3", "--fail-if 'a > 1.2.3': column 5: bad number '1.2.3'");
    expect_syntax_error("a > 1e", "--fail-if 'a > 1e': column 5: bad number '1e'");
    expect_syntax_error("a > 1e+", "--fail-if 'a > 1e+': column 5: bad number '1e'");
    expect_syntax_error("a > 3abc", "--fail-if 'a > 3abc': column 5: bad number '3abc'");
    expect_syntax_error("a > 0x10", "--fail-if 'a > 0x10': column 5: bad number '0x10'");
    expect_syntax_error("a > 1e999", "--fail-if 'a > 1e999': column 5: number out of range '1e999'");
}

Test(failif, malformed_operators)
{
    expect_syntax_error("a = b", "--fail-if 'a = b': column 3: '=' is not an operator; use '==' to compare");
    expect_syntax_error("a > 1 & b > 1", "--fail-if 'a > 1 & b > 1': column 7: '&' is not an operator; use '&&'");
    expect_syntax_error("a > 1 | b > 1", "--fail-if 'a > 1 | b > 1': column 7: '|' is not an operator; use '||'");
    expect_syntax_error("!a", "--fail-if '!a': column 1: '!' is not an operator; use '!=' to compare");
    expect_syntax_error("a < b < c", "--fail-if 'a < b < c': column 7: comparisons cannot be chained; join them "
                                     "with '&&'");
    expect_syntax_error("(a > 1) > 0", "--fail-if '(a > 1) > 0': column 1: a comparison cannot be an operand of "
                                       "'>'");
    expect_syntax_error("(a > 1) + 1 > 0", "--fail-if '(a > 1) + 1 > 0': column 1: a comparison cannot be an "
                                           "operand of '+'");
    expect_syntax_error("-(a > 1) && b > 1", "--fail-if '-(a > 1) && b > 1': column 2: a comparison cannot be "
                                             "an operand of '-'");
}

Test(failif, malformed_functions)
{
    expect_syntax_error("foo(a) > 1", "--fail-if 'foo(a) > 1': column 1: unknown function 'foo'; the functions "
                                      "are abs, min and max");
    expect_syntax_error("abs(a, b) > 1", "--fail-if 'abs(a, b) > 1': column 1: 'abs' takes 1 argument, found 2");
    expect_syntax_error("min(a) > 1", "--fail-if 'min(a) > 1': column 1: 'min' takes 2 arguments, found 1");
    expect_syntax_error("max(a, b, c) > 1", "--fail-if 'max(a, b, c) > 1': column 1: 'max' takes 2 arguments, "
                                            "found 3");
    expect_syntax_error("abs(a > 1) > 0", "--fail-if 'abs(a > 1) > 0': column 5: a comparison cannot be an "
                                          "argument of 'abs'");
    expect_syntax_error("min(a b) > 1", "--fail-if 'min(a b) > 1': column 7: expected ',' or ')' in the call of "
                                        "'min' at column 1, found 'b'");
    expect_syntax_error("abs() > 1", "--fail-if 'abs() > 1': column 5: expected a number, a name or '(' after "
                                     "'(', found ')'");
}

Test(failif, deep_nesting_is_an_error_not_a_crash)
{
    char expr[1200];
    size_t n = 0;
    for (int i = 0; i < 500; i++)
        expr[n++] = '(';
    memcpy(expr + n, "a > 1", 5);
    n += 5;
    for (int i = 0; i < 500; i++)
        expr[n++] = ')';
    expr[n] = '\0';
    tsim_failif *f = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_failif_parse(expr, &f, &err), TSIM_E_INPUT);
    /* A long expression is shortened in messages. */
    char want[512];
    snprintf(want, sizeof want, "--fail-if '%.*s...': column 201: expression nested too deeply (more than 200 levels)",
             160, expr);
    cr_assert_str_eq(err.msg, want);
    /* 100 levels are fine. */
    n = 0;
    for (int i = 0; i < 100; i++)
        expr[n++] = '(';
    memcpy(expr + n, "a > 1", 5);
    n += 5;
    for (int i = 0; i < 100; i++)
        expr[n++] = ')';
    expr[n] = '\0';
    cr_assert(holds_quiet(expr));
}

/* Repeats unit n times into buf (NUL-terminated), after prefix. */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix)
{
    size_t pl = strlen(prefix), ul = strlen(unit), sl = strlen(suffix);
    char *buf = malloc(pl + ul * n + sl + 1);
    cr_assert_not_null(buf);
    memcpy(buf, prefix, pl);
    for (size_t i = 0; i < n; i++)
        memcpy(buf + pl + i * ul, unit, ul);
    memcpy(buf + pl + ul * n, suffix, sl + 1);
    return buf;
}

static void expect_too_deep(const char *expr, int col)
{
    char want[512];
    snprintf(want, sizeof want,
             "--fail-if '%.*s%s': column %d: expression nested too deeply (more than 200 levels)",
             strlen(expr) > 160 ? 160 : (int)strlen(expr), expr, strlen(expr) > 160 ? "..." : "", col);
    expect_syntax_error(expr, want);
}

/* Unary minus used to recurse past the depth count: 100,000 of them crashed
 * the parser (stack overflow). The 201st level is refused; a chain as deep
 * as the tree allows (198 minus signs, the number and the comparison) works. */
Test(failif, long_unary_minus_chain_is_an_error_not_a_crash)
{
    char *expr = repeat("", "-", 100000, "1 > 0");
    expect_too_deep(expr, 201);
    free(expr);
    expr = repeat("", "-", 201, "a > 0");
    expect_too_deep(expr, 201);
    free(expr);
    expr = repeat("", "-", 198, "1 > 0"); /* an even count: 1 > 0 */
    cr_assert(holds_quiet(expr));
    free(expr);
    expr = repeat("", "-", 197, "1 > 0");
    cr_assert(!holds_quiet(expr));
    free(expr);
    /* Minus signs and parentheses count together. */
    expr = repeat("", "-(", 100, "a > 0");
    expect_too_deep(expr, 201);
    free(expr);
}

/* A flat chain is a loop, not nesting: '1+1+...+1>0' with 200 terms was
 * refused as "nested too deeply" (and before that bound, 200,000 terms
 * overflowed the stack in the evaluator). Chains of every binding now
 * evaluate whatever their length, and are freed without recursion. */
Test(failif, long_operator_chains_evaluate)
{
    char *expr = repeat("1", "+1", 199, ">0"); /* the 200 terms */
    char explain[1024];
    cr_assert(holds(expr, explain, sizeof explain));
    cr_assert(strstr(explain, "[= 200] > 0") != NULL, "%s", explain);
    free(expr);
    expr = repeat("1", "+1", 200000, " > 200000");
    cr_assert(holds(expr, explain, sizeof explain));
    /* Too long for the buffer: the head, " ... ", and the tail with the verdict. */
    cr_assert_eq(strlen(explain), sizeof explain - 1);
    cr_assert(strncmp(explain, "1 + 1 + 1", 9) == 0, "%s", explain);
    cr_assert(strstr(explain, "1 ... ") != NULL || strstr(explain, "+ ... ") != NULL, "%s", explain);
    const char *verdict = "+ 1 [= 200001] > 200000";
    cr_assert_str_eq(explain + strlen(explain) - strlen(verdict), verdict);
    free(expr);
    expr = repeat("1", "+1", 200000, " > 200001");
    cr_assert(!holds_quiet(expr));
    free(expr);
    expr = repeat("b", " - b", 5000, " == -4999");
    cr_assert(holds_quiet(expr));
    free(expr);
    expr = repeat("a", " * b / b", 250, " == 3");
    cr_assert(holds_quiet(expr));
    free(expr);
    expr = repeat("a > 1", " && a > 1", 300, "");
    cr_assert(holds_quiet(expr));
    free(expr);
    expr = repeat("a > 1", " && a > 1", 300, " && a < 1");
    cr_assert(!holds_quiet(expr));
    free(expr);
    expr = repeat("a < 1", " || a < 1", 300, " || a > 1");
    cr_assert(holds_quiet(expr));
    free(expr);
    /* A chain of products inside a chain of sums, and '&&' inside '||'. */
    expr = repeat("0", " + a * a * b", 1000, " == 9000");
    cr_assert(holds_quiet(expr));
    free(expr);
    /* Through the one-call check the studies use. */
    tsim_error err = {0};
    expr = repeat("b", " + b", 5000, " > 0");
    cr_assert_eq(tsim_failif_check(expr, lookup, NULL, &err), TSIM_E_CHECK, "%s", err.msg);
    free(expr);
    /* An error late in a long chain still names its column. */
    expr = repeat("b", " + b", 300, " / zero > 0");
    char want[512];
    snprintf(want, sizeof want, "--fail-if '%.160s...': column %d: division by zero", expr, 1 + 4 * 300 + 2);
    cr_assert_eq(tsim_failif_check(expr, lookup, NULL, &err), TSIM_E_INPUT);
    cr_assert_str_eq(err.msg, want);
    free(expr);
}

/* The depth limit still holds for real nesting: unary minus, parentheses
 * that nest to the right, and a chain whose right operand is nested. */
Test(failif, nesting_is_still_bounded)
{
    /* 199 minus signs fit the parser but not the tree: the comparison would
     * be level 201. */
    char *expr = repeat("", "-", 199, "1 > 0");
    expect_too_deep(expr, 202); /* the '>' */
    free(expr);
    expr = repeat("", "-", 198, "1 > 0");
    cr_assert(holds_quiet(expr));
    free(expr);
    /* 1+(1+(1+...)): 300 levels of parentheses. */
    char *open = repeat("", "1+(", 300, "1");
    expr = repeat(open, ")", 300, " > 0");
    expect_too_deep(expr, 3 * 200 + 1); /* the '1' inside the 200th '(' is level 201 */
    free(open);
    free(expr);
    /* A long chain of right operands nested 150 deep each still works: the
     * chain adds no depth. */
    open = repeat("", "abs(", 150, "b");
    char *nested = repeat(open, ")", 150, "");
    size_t nl = strlen(nested);
    char *chain = malloc(nl * 400 + 400 * 3 + 16);
    cr_assert_not_null(chain);
    size_t at = 0;
    for (int i = 0; i < 400; i++) {
        if (i)
            at += (size_t)sprintf(chain + at, " + ");
        memcpy(chain + at, nested, nl);
        at += nl;
    }
    strcpy(chain + at, " == 400");
    cr_assert(holds_quiet(chain));
    free(open);
    free(nested);
    free(chain);
}

/* Function calls nest like parentheses: abs(abs(...)) past 200 levels is
 * refused at the 201st 'abs' (column 801), max(a, max(a, ...)) at the first
 * argument of the 200th max (the 201st level, column 1398); 150 levels
 * evaluate. */
Test(failif, nested_function_calls_are_bounded)
{
    char *open = repeat("", "abs(", 300, "neg");
    char *expr = repeat(open, ")", 300, " > 1");
    expect_too_deep(expr, 801);
    free(open);
    free(expr);
    open = repeat("", "max(a, ", 250, "neg");
    expr = repeat(open, ")", 250, " > 1");
    expect_too_deep(expr, 7 * 199 + 5);
    free(open);
    free(expr);
    open = repeat("", "abs(", 150, "neg");
    expr = repeat(open, ")", 150, " == 4");
    cr_assert(holds_quiet(expr));
    free(open);
    free(expr);
}
