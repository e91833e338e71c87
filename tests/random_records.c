#include "random_records.h"

#include <math.h>
#include <string.h>

uint64_t tsim_rand_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int64_t tsim_rand_range(uint64_t *state, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(tsim_rand_next(state) % span);
}

double tsim_rand_unit(uint64_t *state)
{
    return (double)(tsim_rand_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

void tsim_random_shape_draw(uint64_t *state, int max_ranks, tsim_random_shape *s)
{
    static const int rpns[] = {1, 2, 4, 8};
    s->ranks = (int)tsim_rand_range(state, 2, max_ranks);
    s->experts = s->ranks * (int)tsim_rand_range(state, 1, 8);
    s->slots = (int)tsim_rand_range(state, 1, 4);
    s->ranks_per_node = rpns[tsim_rand_range(state, 0, 3)];
}

void tsim_random_shape_draw_any(uint64_t *state, int max_ranks, tsim_random_shape *s)
{
    static const int slot_choices[] = {1, 2, 2}; /* the paper's K = 2 most often */
    if (tsim_rand_range(state, 0, 4) < 3 && max_ranks >= 4) { /* a cluster */
        int most = 2; /* the largest power of two in range, at most 2^6 */
        while (most < 6 && (2 << most) <= max_ranks)
            most++;
        s->ranks = 1 << (int)tsim_rand_range(state, 2, most);
        s->ranks_per_node = 1 << (int)tsim_rand_range(state, 0, s->ranks >= 8 ? 3 : 2);
        s->slots = slot_choices[tsim_rand_range(state, 0, 2)];
        s->experts = s->ranks * (int)tsim_rand_range(state, 2, 8);
        return;
    }
    int64_t top = INT64_C(1) << tsim_rand_range(state, 0, 6); /* anything in range, small R more often */
    s->ranks = (int)tsim_rand_range(state, 1, top < max_ranks ? top : max_ranks);
    s->ranks_per_node = (int)tsim_rand_range(state, 1, 8);
    s->slots = (int)tsim_rand_range(state, 0, 4);
    s->experts = s->ranks * (int)tsim_rand_range(state, 1, 8);
}

void tsim_random_home(uint64_t *state, const tsim_random_shape *s, int32_t *home)
{
    const int E = s->experts, hpr = E / s->ranks;
    for (int e = 0; e < E; e++)
        home[e] = e / hpr;
    for (int e = E - 1; e > 0; e--) { /* Fisher-Yates keeps each rank's count */
        int j = (int)tsim_rand_range(state, 0, e);
        int32_t t = home[e];
        home[e] = home[j];
        home[j] = t;
    }
}

void tsim_random_record(uint64_t *state, const tsim_random_shape *s, tsim_record *rec)
{
    const int R = s->ranks, E = s->experts;
    tsim_record_alloc(rec, R, E, NULL);
    int pattern = (int)tsim_rand_range(state, 0, 7);
    int64_t scale = tsim_rand_range(state, 1, 4) == 1 ? 20 : 2000;
    int hot_rank = (int)tsim_rand_range(state, 0, R - 1);
    int hpr = E / R;
    double zipf_s = 0.5 + 1.5 * tsim_rand_unit(state);
    for (int r = 0; r < R; r++) {
        for (int e = 0; e < E; e++) {
            int64_t c = 0;
            switch (pattern) {
            case 0: /* uniform */
                c = tsim_rand_range(state, 0, scale);
                break;
            case 1: /* Zipf over experts (random permutation via hash) */
            {
                int rank_of = (int)((uint64_t)(e * 2654435761u) % (uint64_t)E);
                c = (int64_t)((double)scale * 4.0 / pow(1.0 + rank_of, zipf_s) * tsim_rand_unit(state));
                break;
            }
            case 2: /* one hot rank's experts */
                c = tsim_rand_range(state, 0, scale) * (e / hpr == hot_rank ? 6 : 1);
                break;
            case 3: /* a few hot experts */
                c = tsim_rand_range(state, 0, scale) * (e % 7 == 3 ? 20 : 1);
                break;
            case 4: /* zero rows and columns */
                c = (r % 3 == 1 || e % 5 == 2) ? 0 : tsim_rand_range(state, 0, scale);
                break;
            case 5: /* all zero */
                c = 0;
                break;
            case 6: /* tiny counts */
                c = tsim_rand_range(state, 0, 2);
                break;
            default: /* balanced: the same count everywhere */
                c = scale;
                break;
            }
            rec->counts[(size_t)r * (size_t)E + (size_t)e] = c;
        }
    }
}
