#include "sort.h"

#include <string.h>

void tsim_sort_stable_by_key(int *idx, int n, const int64_t *key, bool desc, int *tmp)
{
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                int64_t ka = key[idx[a]], kb = key[idx[b]];
                bool take_a = desc ? ka >= kb : ka <= kb;
                tmp[o++] = take_a ? idx[a++] : idx[b++];
            }
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof *idx * (size_t)n);
    }
}
