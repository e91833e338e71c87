#include "record.h"

#include <stdlib.h>
#include <string.h>

int tsim_record_alloc(tsim_record *rec, int ranks, int experts, tsim_error *err)
{
    memset(rec, 0, sizeof *rec);
    rec->ranks = ranks;
    rec->experts = experts;
    rec->counts = calloc((size_t)ranks * (size_t)experts, sizeof *rec->counts);
    if (!rec->counts)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a %d x %d record", ranks, experts);
    return TSIM_OK;
}

void tsim_record_free(tsim_record *rec)
{
    free(rec->counts);
    rec->counts = NULL;
}

void tsim_record_split_even(tsim_record *rec, const int64_t *tpe)
{
    const int R = rec->ranks, E = rec->experts;
    for (int e = 0; e < E; e++) {
        int64_t base = tpe[e] / R, extra = tpe[e] % R;
        for (int r = 0; r < R; r++)
            rec->counts[(size_t)r * (size_t)E + (size_t)e] = base + (r < extra ? 1 : 0);
    }
}

void tsim_record_expert_totals(const tsim_record *rec, int64_t *tpe)
{
    const int R = rec->ranks, E = rec->experts;
    memset(tpe, 0, sizeof *tpe * (size_t)E);
    for (int r = 0; r < R; r++) {
        const int64_t *row = rec->counts + (size_t)r * (size_t)E;
        for (int e = 0; e < E; e++)
            tpe[e] += row[e];
    }
}
