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

static void sift_down(int64_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1] > a[child])
            child++;
        if (a[root] >= a[child])
            return;
        int64_t t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

void tsim_sort_i64(int64_t *a, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        int64_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}
