#include "plan.h"

#include <stdlib.h>
#include <string.h>

int tsim_plan_init(tsim_plan *p, int ranks, int capacity, tsim_error *err)
{
    memset(p, 0, sizeof *p);
    p->ranks = ranks;
    p->slot_limited = true;
    if (capacity < 4)
        capacity = 4;
    p->replicas = malloc(sizeof *p->replicas * (size_t)capacity);
    p->alloc = malloc(sizeof *p->alloc * (size_t)capacity * (size_t)ranks);
    if (!p->replicas || !p->alloc) {
        tsim_plan_free(p);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for a plan of %d replicas", capacity);
    }
    p->capacity = capacity;
    return TSIM_OK;
}

void tsim_plan_free(tsim_plan *p)
{
    free(p->replicas);
    free(p->alloc);
    free(p->placement);
    free(p->layout);
    p->layout = NULL;
    p->layout_positions = p->layout_cap = 0;
    p->replicas = NULL;
    p->alloc = NULL;
    p->placement = NULL;
    p->count = p->capacity = 0;
    p->placement_experts = p->placement_cap = 0;
}

void tsim_plan_reset(tsim_plan *p)
{
    p->count = 0;
    p->notes = 0;
    p->search = TSIM_SEARCH_NONE;
    p->search_gap = 0.0;
    p->placement_experts = 0;
    p->layout_positions = 0;
}

int32_t *tsim_plan_layout(tsim_plan *p, int positions)
{
    if (positions < 1)
        return NULL;
    if (positions > p->layout_cap) {
        int32_t *grown = realloc(p->layout, sizeof *grown * (size_t)positions);
        if (!grown)
            return NULL;
        p->layout = grown;
        p->layout_cap = positions;
    }
    p->layout_positions = positions;
    return p->layout;
}

int32_t *tsim_plan_placement(tsim_plan *p, int experts)
{
    if (experts < 1)
        return NULL;
    if (experts > p->placement_cap) {
        int32_t *grown = realloc(p->placement, sizeof *grown * (size_t)experts);
        if (!grown)
            return NULL;
        p->placement = grown;
        p->placement_cap = experts;
    }
    p->placement_experts = experts;
    return p->placement;
}

int tsim_plan_add(tsim_plan *p, int expert, int guest, int slot, int64_t planned)
{
    if (p->count == p->capacity) {
        int cap = p->capacity * 2;
        tsim_replica *rep = realloc(p->replicas, sizeof *rep * (size_t)cap);
        if (!rep)
            return -1;
        p->replicas = rep;
        int64_t *alloc = realloc(p->alloc, sizeof *alloc * (size_t)cap * (size_t)p->ranks);
        if (!alloc)
            return -1;
        p->alloc = alloc;
        p->capacity = cap;
    }
    int i = p->count++;
    p->replicas[i] = (tsim_replica){expert, guest, slot, planned};
    memset(tsim_plan_alloc_row(p, i), 0, sizeof *p->alloc * (size_t)p->ranks);
    return i;
}

static bool row_is_zero(const int64_t *row, int n)
{
    for (int r = 0; r < n; r++)
        if (row[r] != 0)
            return false;
    return true;
}

void tsim_plan_drop_empty(tsim_plan *p)
{
    int kept = 0;
    for (int i = 0; i < p->count; i++) {
        if (row_is_zero(tsim_plan_alloc_row(p, i), p->ranks))
            continue;
        if (kept != i) {
            p->replicas[kept] = p->replicas[i];
            memmove(tsim_plan_alloc_row(p, kept), tsim_plan_alloc_row(p, i), sizeof *p->alloc * (size_t)p->ranks);
        }
        kept++;
    }
    p->count = kept;
}

static int replica_before(const tsim_replica *a, const tsim_replica *b)
{
    if (a->expert != b->expert)
        return a->expert < b->expert;
    if (a->guest != b->guest)
        return a->guest < b->guest;
    return a->slot < b->slot;
}

void tsim_plan_sort(tsim_plan *p)
{
    /* Insertion sort: plans are short (at most R*K for slot planners) and it
     * needs no scratch memory; rows move with their replicas. */
    int64_t *tmp_row = NULL;
    for (int i = 1; i < p->count; i++) {
        if (!replica_before(&p->replicas[i], &p->replicas[i - 1]))
            continue;
        if (!tmp_row) {
            /* Use the spare capacity row if there is one; else allocate once. */
            if (p->count < p->capacity)
                tmp_row = tsim_plan_alloc_row(p, p->capacity - 1);
            else if (tsim_plan_add(p, 0, 0, 0, 0) >= 0) {
                p->count--;
                tmp_row = tsim_plan_alloc_row(p, p->capacity - 1);
            } else
                return;
        }
        tsim_replica key = p->replicas[i];
        size_t row_bytes = sizeof *p->alloc * (size_t)p->ranks;
        memcpy(tmp_row, tsim_plan_alloc_row(p, i), row_bytes);
        int j = i - 1;
        while (j >= 0 && replica_before(&key, &p->replicas[j])) {
            p->replicas[j + 1] = p->replicas[j];
            memcpy(tsim_plan_alloc_row(p, j + 1), tsim_plan_alloc_row(p, j), row_bytes);
            j--;
        }
        p->replicas[j + 1] = key;
        memcpy(tsim_plan_alloc_row(p, j + 1), tmp_row, row_bytes);
    }
}

bool tsim_plan_equal(const tsim_plan *a, const tsim_plan *b)
{
    if (a->count != b->count || a->ranks != b->ranks || a->placement_experts != b->placement_experts)
        return false;
    if (a->placement_experts &&
        memcmp(a->placement, b->placement, sizeof *a->placement * (size_t)a->placement_experts))
        return false;
    for (int i = 0; i < a->count; i++) {
        const tsim_replica *x = &a->replicas[i], *y = &b->replicas[i];
        if (x->expert != y->expert || x->guest != y->guest || x->slot != y->slot || x->planned != y->planned)
            return false;
        if (memcmp(tsim_plan_alloc_row_c(a, i), tsim_plan_alloc_row_c(b, i), sizeof *a->alloc * (size_t)a->ranks))
            return false;
    }
    return true;
}
