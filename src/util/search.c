#include "search.h"

int tsim_search_sorted(int count, int64_t key, int64_t (*key_at)(const void *ctx, int i), const void *ctx)
{
    int lo = 0, hi = count;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (key_at(ctx, mid) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && key_at(ctx, lo) == key ? lo : -lo - 1;
}
