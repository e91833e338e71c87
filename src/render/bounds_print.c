/* The --bounds section of the study tables (study.h): one row per cell and
 * planner, the mean excess imbalance (pp) and excess cost, or n/a with the
 * reason the planner is outside the bounds' model. */
#include <string.h>

#include "bounds.h"
#include "study_print.h"

static bool any_bounds(const tsim_study *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->rows[i].ok && s->rows[i].bounds_on)
            return true;
    return false;
}

int tsim_study_print_bounds(FILE *out, const tsim_study *s)
{
    if (!any_bounds(s))
        return 0;
    static const char *const headers[] = {"cell", "planner", "excess imbalance pp", "excess cost", "bound applies"};
    tsim_table t;
    if (tsim_table_init(&t, 5, headers))
        return -1;
    int rc = 0;
    for (int i = 0; i < s->n && rc == 0; i++) {
        const tsim_study_row *r = &s->rows[i];
        if (!r->ok || !r->bounds_on)
            continue;
        char c[5][64];
        snprintf(c[0], sizeof c[0], "%s", r->key[0] ? r->key : "-");
        snprintf(c[1], sizeof c[1], "%s", r->planner);
        if (r->bounds_fit) {
            snprintf(c[2], sizeof c[2], "n/a");
            snprintf(c[3], sizeof c[3], "n/a");
            snprintf(c[4], sizeof c[4], "no: %s", tsim_bounds_fit_text(r->bounds_fit));
        } else {
            tsim_fmt_num(c[2], sizeof c[2], 100.0 * r->metrics[TSIM_M_EXCESS_IMBALANCE].mean, 3);
            tsim_fmt_num(c[3], sizeof c[3], r->metrics[TSIM_M_EXCESS_COST].mean, 2);
            snprintf(c[4], sizeof c[4], "yes");
        }
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        rc = tsim_table_add_row(&t, cells);
    }
    if (rc == 0) {
        fputs("\n## Distance from the proven bounds (--bounds)\n\n", out);
        tsim_table_print(&t, out, TSIM_FORMAT_MD);
        fputs("\nexcess imbalance: rho_after minus the least rho_after any plan with the same weighted cost can "
              "reach; excess cost: weighted minus the least weighted cost of any plan with the same rho_after. "
              "Both are means per record of proven lower bounds (src/bound), at each planner's own K and the "
              "study's lambda_eval; n/a where the bound's model (at most K guests per rank, homes fixed) does not "
              "hold for the planner.\n",
              out);
    }
    tsim_table_free(&t);
    return rc;
}
