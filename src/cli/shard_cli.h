/* What taotsim merge needs from the commands whose shards it merges: the
 * configuration a replay command line sets, parsed by replay's own parser. */
#ifndef TSIM_SHARD_CLI_H
#define TSIM_SHARD_CLI_H

#include <stdbool.h>

#include "error.h"
#include "planner.h"
#include "stepmodel.h"

#define TSIM_MERGE_PLANNERS_MAX 64

typedef struct {
    tsim_planner planners[TSIM_MERGE_PLANNERS_MAX]; /* as --planners lists them (not started) */
    int n_planners;
    int slots;
    double lambda_eval;
    double capacity_factor; /* --capacity-factor (0: none) */
    bool timing, step_model_on, per_record;
    bool planners_given; /* --planners given: else replay leaves lplb out where it cannot run */
    tsim_step_model step_model;
} tsim_replay_merge_config;

/* argv[0] is "replay". A command line that does not parse prints its usage
 * error and returns TSIM_E_INPUT. */
int tsim_replay_config_parse(int argc, char **argv, tsim_replay_merge_config *out, tsim_error *err);

#endif
