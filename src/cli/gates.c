/* --fail-if over a study's rows (gates.h). The library evaluates and returns
 * each gate's message; saying it is the CLI's. */
#include "gates.h"

#include "failif.h"

int tsim_cli_check_gates(const tsim_study *s, const char *const *gates, int n, const char *cmd, FILE *log)
{
    int status = TSIM_OK;
    for (int g = 0; g < n; g++) {
        tsim_error gerr = {0};
        int rc = tsim_failif_check(gates[g], tsim_study_lookup, (void *)s, &gerr);
        if (rc == TSIM_OK)
            continue;
        fprintf(log, "taotsim %s: %s\n", cmd, gerr.msg);
        if (rc != TSIM_E_CHECK || status == TSIM_OK)
            status = rc == TSIM_E_CHECK ? TSIM_E_CHECK : TSIM_E_INPUT;
    }
    return status;
}

int tsim_cli_gate_add(const char **gates, int *n, int max, const char *expr, tsim_error *err)
{
    if (*n == max)
        return tsim_error_set(err, TSIM_E_INPUT, "at most %d --fail-if expressions", max);
    tsim_failif *f;
    int rc = tsim_failif_parse(expr, &f, err);
    if (rc)
        return rc;
    tsim_failif_free(f);
    gates[(*n)++] = expr;
    return TSIM_OK;
}
