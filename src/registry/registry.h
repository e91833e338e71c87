/* The planner registry and the --planners list syntax (architecture.md). */
#ifndef TSIM_REGISTRY_H
#define TSIM_REGISTRY_H

#include <stdbool.h>
#include <stdio.h>

#include "planner.h"

const tsim_planner_desc *tsim_planner_find(const char *name);

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

/* Writes one line per planner of the list that fell back (see fell_back). */
void tsim_planner_report_fallbacks(const tsim_planner *planners, int n, FILE *out);

/* Every option of every planner comes from the descriptors' tables. */
void tsim_planner_options_default(tsim_planner_options *o);
/* Sets one option by its CLI name without the leading dashes ("taot-iters").
 * value is NULL for flags. Returns TSIM_OK, or TSIM_E_INPUT with a message;
 * *known is set false when the name is not a planner option at all. */
int tsim_planner_options_set(tsim_planner_options *o, const char *name, const char *value, bool *known,
                             tsim_error *err);
/* Prints every planner option with its default, for --help. */
void tsim_planner_options_help(FILE *out);
/* The option called name (common or any planner's), or NULL. */
const tsim_option_spec *tsim_planner_option_find(const char *name);
/* The i-th option (common first, then by registry order), NULL past the end. */
const tsim_option_spec *tsim_planner_option_at(int i);
bool tsim_planner_option_is_flag(const char *name);
bool tsim_planner_option_exists(const char *name);

#endif
