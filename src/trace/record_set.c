#include "record_set.h"

#include <stdlib.h>
#include <string.h>

#include "trace.h"

void tsim_record_set_init(tsim_record_set *rs, int ranks, int experts, int ranks_per_node)
{
    memset(rs, 0, sizeof *rs);
    rs->ranks = ranks;
    rs->experts = experts;
    rs->ranks_per_node = ranks_per_node;
}

void tsim_record_set_free(tsim_record_set *rs)
{
    free(rs->recs);
    free(rs->counts);
    free(rs->home);
    memset(rs, 0, sizeof *rs);
}

int tsim_record_set_push(tsim_record_set *rs, const tsim_record *rec, tsim_error *err)
{
    if (rec->ranks != rs->ranks || rec->experts != rs->experts)
        return tsim_error_set(err, TSIM_E_INTERNAL, "record %lld is %d x %d, the set's %d x %d",
                              (long long)rec->index, rec->ranks, rec->experts, rs->ranks, rs->experts);
    const size_t cells = (size_t)rs->ranks * (size_t)rs->experts;
    if (rs->n == rs->cap) {
        const int grown = rs->cap ? rs->cap * 2 : 64;
        tsim_record *recs = realloc(rs->recs, sizeof *recs * (size_t)grown);
        if (recs)
            rs->recs = recs;
        int64_t *counts = recs ? realloc(rs->counts, sizeof *counts * cells * (size_t)grown) : NULL;
        if (!counts)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory holding the trace (%d records)", rs->n);
        rs->counts = counts;
        rs->cap = grown;
        /* the buffer may have moved */
        for (int i = 0; i < rs->n; i++)
            rs->recs[i].counts = rs->counts + cells * (size_t)i;
    }
    tsim_record *dst = &rs->recs[rs->n];
    *dst = *rec;
    dst->counts = rs->counts + cells * (size_t)rs->n;
    memcpy(dst->counts, rec->counts, sizeof *dst->counts * cells);
    rs->n++;
    return TSIM_OK;
}

int tsim_record_set_read(tsim_record_set *rs, const char *path, tsim_error *err)
{
    memset(rs, 0, sizeof *rs);
    tsim_reader *r;
    tsim_read_options ro = {0};
    int rc = tsim_reader_open(&r, path, &ro, err);
    if (rc)
        return rc;
    const tsim_trace_header *h = tsim_reader_header(r);
    tsim_record_set_init(rs, h->ep, h->experts, h->ranks_per_node);
    if (h->home) {
        rs->home = malloc(sizeof *rs->home * (size_t)h->experts);
        if (rs->home)
            memcpy(rs->home, h->home, sizeof *rs->home * (size_t)h->experts);
        else
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    while (rc == TSIM_OK) {
        const tsim_record *rec;
        int got = tsim_reader_next(r, &rec, err);
        if (got == 0)
            break;
        rc = got == 1 ? tsim_record_set_push(rs, rec, err) : got < 0 ? TSIM_E_INPUT : got;
    }
    tsim_reader_close(r);
    if (rc)
        tsim_record_set_free(rs);
    return rc;
}
