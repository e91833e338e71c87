/* Allocation-free stable sorting for planners (glibc's qsort may malloc and
 * is not stable; planners must not allocate per record and ties must keep
 * index order). */
#ifndef TSIM_SORT_H
#define TSIM_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stable bottom-up merge sort of idx[0..n) by key[idx[i]], descending when
 * desc, else ascending; equal keys keep their input order. tmp holds n ints. */
void tsim_sort_stable_by_key(int *idx, int n, const int64_t *key, bool desc, int *tmp);

/* In-place ascending heap sort of a[0..n): no allocation (qsort may malloc). */
void tsim_sort_i64(int64_t *a, size_t n);

#endif
