/* UltraEP (ultraep.md): quota-driven balancing inside each node, every
 * microbatch. A threshold search carves each overloaded rank's excess into
 * quotas that go to the same node's underloaded ranks; nothing crosses a node.
 * Stateless: each record is planned from its own counts alone. */
#ifndef TSIM_ULTRAEP_H
#define TSIM_ULTRAEP_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

enum {
    TSIM_ULTRAEP_QUOTA = 0,  /* the default GPU quota solver (ultraep.md 3) */
    TSIM_ULTRAEP_LEGACY = 1, /* the legacy CPU solver (ultraep.md 4) */
};

/* --ultraep-* options (ultraep.md section 6), published defaults in (). */
typedef struct {
    int solver;               /* TSIM_ULTRAEP_* (quota) */
    int64_t min_tokens;       /* fallback floor; <= 1 acts as 1 (1024) */
    double oracle_eps;        /* fast tries' margin over lo; negative acts as 0 (0.01) */
    double balance_threshold; /* raises lo to ceil(mean * F); below 1 acts as 1 (1.0) */
    bool locality;            /* local fill of the split (on) */
    bool zero_master;         /* a home may keep 0 tokens of an expert (off) */
} tsim_ultraep_options;

typedef struct tsim_ultraep tsim_ultraep;

void tsim_ultraep_options_default(tsim_ultraep_options *opt);

/* --ultraep-solver quota|legacy into *out. */
int tsim_ultraep_parse_solver(const char *text, int *out, tsim_error *err);

/* --ultraep-locality / --ultraep-zero-master: "on" or "off". option names the
 * flag in the message ("--ultraep-locality"). */
int tsim_ultraep_parse_on_off(const char *option, const char *text, bool *out, tsim_error *err);

/* Checks the configuration (nodes split R, slots >= 0, finite options) and
 * allocates all scratch. slots is K (any K >= 0 works). */
int tsim_ultraep_init(tsim_ultraep **out, const tsim_topology *topo, int slots, const tsim_ultraep_options *opt,
                      tsim_error *err);

/* Plans one record into plan (reset here). plan->ranks must be R. */
int tsim_ultraep_plan(tsim_ultraep *u, const tsim_record *rec, tsim_plan *plan, tsim_error *err);

void tsim_ultraep_free(tsim_ultraep *u);

#endif
