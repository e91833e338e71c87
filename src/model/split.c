#include "split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tsim_split_scratch_init(tsim_split_scratch *s, int ranks, int max_replicas, tsim_error *err)
{
    memset(s, 0, sizeof *s);
    s->source_left = malloc(sizeof *s->source_left * (size_t)ranks);
    s->order = malloc(sizeof *s->order * (size_t)(max_replicas > 0 ? max_replicas : 1));
    if (!s->source_left || !s->order) {
        tsim_split_scratch_free(s);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the split scratch");
    }
    s->capacity = max_replicas > 0 ? max_replicas : 1;
    return TSIM_OK;
}

void tsim_split_scratch_free(tsim_split_scratch *s)
{
    free(s->source_left);
    free(s->order);
    memset(s, 0, sizeof *s);
}

/* (expert, slot order g*K+k) of replica i. */
static int64_t split_key(const tsim_plan *p, int i, int slots)
{
    const tsim_replica *r = &p->replicas[i];
    int64_t slot_order = (int64_t)r->guest * (slots > 0 ? slots : 1) + r->slot;
    return ((int64_t)r->expert << 32) | slot_order;
}

int tsim_split_plan(const tsim_record *rec, const int64_t *tpe, int slots, tsim_plan *plan, tsim_split_scratch *s,
                    tsim_error *err)
{
    const int R = rec->ranks, E = rec->experts, n = plan->count;
    if (n > s->capacity) {
        int *order = realloc(s->order, sizeof *order * (size_t)n);
        if (!order)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory in the split");
        s->order = order;
        s->capacity = n;
    }
    /* Insertion sort of replica indices by (expert, slot order): plans are short. */
    for (int i = 0; i < n; i++) {
        int64_t key = split_key(plan, i, slots);
        int j = i - 1;
        while (j >= 0 && split_key(plan, s->order[j], slots) > key) {
            s->order[j + 1] = s->order[j];
            j--;
        }
        s->order[j + 1] = i;
    }

    for (int begin = 0; begin < n;) {
        const int e = plan->replicas[s->order[begin]].expert;
        int end = begin;
        while (end < n && plan->replicas[s->order[end]].expert == e)
            end++;

        for (int r = 0; r < R; r++)
            s->source_left[r] = rec->counts[(size_t)r * (size_t)E + (size_t)e];
        const float total = (float)tpe[e];

        /* Proportional floors, in single precision as the published code does. */
        for (int q = begin; q < end; q++) {
            int i = s->order[q];
            int64_t *row = tsim_plan_alloc_row(plan, i);
            int64_t demand = plan->replicas[i].planned;
            memset(row, 0, sizeof *row * (size_t)R);
            if (tpe[e] == 0)
                continue;
            const float d = (float)demand;
            for (int r = 0; r < R && demand > 0; r++) {
                int64_t c = rec->counts[(size_t)r * (size_t)E + (size_t)e];
                if (c == 0)
                    continue;
                float share = (float)c / total;
                float product = share * d;
                int64_t f = (int64_t)floorf(product);
                /* Float rounding may overshoot by a token: never send more than
                 * is there or more than the slot still wants. */
                if (f > s->source_left[r])
                    f = s->source_left[r];
                if (f > demand)
                    f = demand;
                if (f < 0)
                    f = 0;
                row[r] = f;
                s->source_left[r] -= f;
                demand -= f;
            }
        }

        /* Remainders end to end: sources in rank order, slots in slot order. */
        int r = 0;
        for (int q = begin; q < end; q++) {
            int i = s->order[q];
            int64_t *row = tsim_plan_alloc_row(plan, i);
            int64_t want = plan->replicas[i].planned;
            for (int rr = 0; rr < R; rr++)
                want -= row[rr];
            while (want > 0 && r < R) {
                int64_t take = s->source_left[r] < want ? s->source_left[r] : want;
                row[r] += take;
                s->source_left[r] -= take;
                want -= take;
                if (s->source_left[r] == 0)
                    r++;
            }
        }
        begin = end;
    }
    return TSIM_OK;
}
