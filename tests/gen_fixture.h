/* The small generator shape the generator tests share: EP4, 32 experts,
 * top-4, 256 tokens per rank, 3 microbatches of 2 layers, f = 0.1, seed 7. */
#ifndef TSIM_TEST_GEN_FIXTURE_H
#define TSIM_TEST_GEN_FIXTURE_H

#include "gen.h"

static inline tsim_gen_params tsim_test_small_gen_params(void)
{
    tsim_gen_params p;
    tsim_gen_params_default(&p);
    p.experts = 32;
    p.ep = 4;
    p.ranks_per_node = 2;
    p.topk = 4;
    p.tokens = 256;
    p.microbatches = 3;
    p.layers = 2;
    p.hot_fraction = 0.1;
    p.seed = 7;
    return p;
}

#endif
