/* The planner registry and the --planners list syntax (architecture.md). */
#ifndef TSIM_REGISTRY_H
#define TSIM_REGISTRY_H

#include <stdbool.h>
#include <stdio.h>

#include "planner.h"

/* The most planners a build registers (built-ins and test planners). */
#define TSIM_REGISTRY_MAX 32

/* The options a command builds from its flags (--lambda-plan, --taot-iters
 * 5, ...): the common ones plus one block per registered planner, by registry
 * position. Configuring a planner copies its block, then applies the
 * LABEL=NAME:--opt=v overrides. */
typedef struct {
    tsim_planner_common common;
    tsim_options_block own[TSIM_REGISTRY_MAX];
} tsim_planner_options;

const tsim_planner_desc *tsim_planner_find(const char *name);

/* d's block in o (NULL for a planner not registered, e.g. an external one). */
void *tsim_planner_options_own(tsim_planner_options *o, const tsim_planner_desc *d);
const void *tsim_planner_options_own_const(const tsim_planner_options *o, const tsim_planner_desc *d);

/* p becomes planner d labelled label (NULL: d's name) with base's options;
 * its state is not started. */
void tsim_planner_configure(tsim_planner *p, const tsim_planner_desc *d, const char *label,
                            const tsim_planner_options *base);
/* d's init with base's options for d. */
int tsim_planner_init_with(const tsim_planner_desc *d, void **state, const tsim_topology *topo,
                           const tsim_planner_options *base, tsim_error *err);

/* NULL-terminated list of every registered planner. */
const tsim_planner_desc *const *tsim_planner_all(void);

/* Parses one entry of --planners: NAME, or LABEL=NAME, or LABEL=NAME:--opt=v:--flag
 * (options after the planner name, each starting at a ':' followed by "--",
 * so a value may hold a ':' as in --lplb-graph=torus:2x4), applied on top of
 * base. LABEL=exec:CMD (CMD: the rest of the entry) and
 * LABEL=plugin:LIB.so[:--opt=v...] are external planners, handed to the
 * resolver. */
int tsim_planner_spec_parse(tsim_planner *p, const char *spec, const tsim_planner_options *base, tsim_error *err);

/* Turns an external planner name ("exec:CMD" or "plugin:PATH") into a
 * configured planner: p arrives with its label and options (base) set; the
 * resolver sets p->desc and p->opts.external. options is the text after
 * PATH for plugins ("--a=1:--b" with ':' before each further "--"), or NULL.
 * The library never starts processes or loads code itself: the taotsim
 * command installs the resolver at start-up; without one, external names
 * are refused. */
typedef int (*tsim_planner_resolver)(tsim_planner *p, const char *name, const char *options, tsim_error *err);
void tsim_planner_set_resolver(tsim_planner_resolver fn);

/* Appends one --planners entry to out[0..*n), rejecting a label already there. */
int tsim_planner_list_add(tsim_planner *out, int max, int *n, const char *spec, const tsim_planner_options *base,
                          tsim_error *err);

/* Parses a comma-separated --planners list into out[0..max-1]; *n receives
 * the count (at least one). */
int tsim_planner_list_parse(const char *list, const tsim_planner_options *base, tsim_planner *out, int max, int *n,
                            tsim_error *err);


/* Every option of every planner comes from the descriptors' tables. */
void tsim_planner_options_default(tsim_planner_options *o);
/* Sets one option by its CLI name without the leading dashes ("taot-iters").
 * value is NULL for flags. Returns TSIM_OK, or TSIM_E_INPUT with a message;
 * *known is set false when the name is not a planner option at all. */
int tsim_planner_options_set(tsim_planner_options *o, const char *name, const char *value, bool *known,
                             tsim_error *err);
/* The same for one configured planner: its own options and the common ones
 * only; another planner's option is refused, naming its owner. */
int tsim_planner_option_set(tsim_planner *p, const char *name, const char *value, tsim_error *err);
/* The planner whose table holds the option called name (NULL: common or none). */
const tsim_planner_desc *tsim_planner_option_owner(const char *name);
/* The option called name (common or any planner's), or NULL. */
const tsim_option_spec *tsim_planner_option_find(const char *name);
/* The i-th option (common first, then by registry order), NULL past the end. */
const tsim_option_spec *tsim_planner_option_at(int i);
bool tsim_planner_option_is_flag(const char *name);
bool tsim_planner_option_exists(const char *name);

#endif
