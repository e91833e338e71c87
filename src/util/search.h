/* Binary search over a sorted sequence of 64-bit keys that the caller stores
 * however it likes (per-layer tables keyed by layer index, say). */
#ifndef TSIM_SEARCH_H
#define TSIM_SEARCH_H

#include <stdint.h>

/* key_at(ctx, i) is the key of element i of count, ascending. Returns the
 * index of key, or -(insertion point) - 1 when it is absent, so that a
 * caller can insert at -result - 1 and keep the order. */
int tsim_search_sorted(int count, int64_t key, int64_t (*key_at)(const void *ctx, int i), const void *ctx);

#endif
