/* --fail-if expressions: CI gates over a study's results, e.g.
 *   --fail-if 'taot.weighted.mean > echo.weighted.mean'
 *   --fail-if 'taot.rho_after.p95 > 0.05 || taot-split.rho_after.p95 > 0.05'
 *
 * Grammar (usual C precedence, left associative):
 *   or   := and ('||' and)*
 *   and  := cmp ('&&' cmp)*
 *   cmp  := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
 *   sum  := prod (('+' | '-') prod)*
 *   prod := unary (('*' | '/') unary)*
 *   unary := '-' unary | '(' or ')' | NUMBER | NAME | FUNC '(' or (',' or)* ')'
 * The whole expression, and each operand of '&&' and '||', must be a
 * comparison; the operands of comparisons, arithmetic and functions must be
 * values. Comparisons do not chain ('a < b < c' is an error).
 *
 * NUMBER: digits with an optional fraction and exponent (3, 0.05, .5, 1e-3).
 * NAME: starts with a letter, then letters, digits, '_' and '.'; a '-' belongs
 *   to the name only when it sits between two letters or digits, so
 *   'taot-split.rho_after.p95' is one name, while 'a - b', 'a -b' and 'a- b'
 *   subtract ('a-b' is the name "a-b").
 * FUNC: abs(x), min(a, b), max(a, b); these words are names unless followed
 *   by '('.
 *
 * Values are doubles. Division by zero and a name whose value is NaN are
 * errors, so a gate can never pass silently on a value that does not exist.
 * Every name is looked up, also on the side of '&&'/'||' that does not decide
 * the outcome, so a misspelt name is always reported. */
#ifndef TSIM_FAILIF_H
#define TSIM_FAILIF_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Resolves a name to its value: 0 found, -1 unknown name,
 * TSIM_FAILIF_UNMEASURED for a metric the run did not measure for that
 * planner (an option turns it on, or it is n/a for the planner). */
#define TSIM_FAILIF_UNMEASURED (-2)
typedef int (*tsim_failif_lookup)(void *ctx, const char *name, double *value);

typedef struct tsim_failif tsim_failif;

/* Parses expr. Syntax errors are TSIM_E_INPUT with a message
 * "--fail-if 'EXPR': column N: ..." (columns count from 1). */
int tsim_failif_parse(const char *expr, tsim_failif **out, tsim_error *err);

/* Evaluates f. *holds says whether the condition is true. explain (if not
 * NULL) receives the expression with every name's value, e.g.
 * "taot.weighted.mean (17.25) > echo.weighted.mean (24.5)"; a compound side of
 * a comparison also shows its value: "a (3) - b (1) [= 2] > 1". Values print
 * with %.6g. An unknown name is TSIM_E_INPUT "--fail-if 'EXPR': unknown name
 * 'NAME'". */
int tsim_failif_eval(const tsim_failif *f, tsim_failif_lookup lookup, void *ctx, bool *holds, char *explain,
                     size_t explain_size, tsim_error *err);

/* The expression text as given to tsim_failif_parse. */
const char *tsim_failif_text(const tsim_failif *f);

void tsim_failif_free(tsim_failif *f);

/* Parse and evaluate in one call, for the study commands: TSIM_OK when the
 * condition does not hold; TSIM_E_CHECK when it holds, with the message
 * "--fail-if 'EXPR' holds: EXPLAIN"; TSIM_E_INPUT on a malformed expression or
 * an unknown name. */
int tsim_failif_check(const char *expr, tsim_failif_lookup lookup, void *ctx, tsim_error *err);

#endif
