/* The one option parser of every command (getopt_long): the command's own
 * options, plus the planner options of every registered descriptor and the
 * step-model options when the command takes them. Flags take no value
 * (`--timing=no` is an error), names must be spelled in full, and positional
 * arguments may come anywhere. */
#ifndef TSIM_CLI_OPTIONS_H
#define TSIM_CLI_OPTIONS_H

#include <stdbool.h>

#include "error.h"
#include "planner.h"
#include "registry.h"
#include "stepmodel.h"

typedef struct {
    const char *name; /* long name without dashes; NULL ends the table */
    int short_name;   /* 'o', 'j' ... or 0 */
    bool has_value;
    int id;           /* handed to on_option; > 0 */
} tsim_cli_option;

typedef struct {
    const char *cmd;                 /* "replay": for messages */
    const tsim_cli_option *options;  /* the command's own */
    tsim_planner_options *planner;   /* planner options go here; NULL: not accepted */
    tsim_step_model *step_model;     /* step-model options go here; NULL: not accepted */
    /* value is NULL for flags. Errors are usage errors (exit 2). */
    int (*on_option)(void *ctx, int id, const char *value, tsim_error *err);
    /* NULL: positional arguments are refused. */
    int (*on_positional)(void *ctx, const char *arg, tsim_error *err);
    /* Optional: told of each planner option once it is set. */
    void (*on_planner_option)(void *ctx, const tsim_option_spec *spec);
    /* Optional: a hint for an unknown option (without dashes), or NULL. */
    const char *(*hint)(const char *name);
    void *ctx;
} tsim_cli_parser;

/* Returned when -h/--help was given (the caller prints its help, exit 0). */
#define TSIM_CLI_HELP (-1)

/* Parses argv[1..argc-1]. Returns 0, TSIM_CLI_HELP, or 2 after printing the
 * usage error ("taotsim CMD: ...\nTry 'taotsim CMD --help'."). */
int tsim_cli_parse(const tsim_cli_parser *p, int argc, char **argv);

#endif
