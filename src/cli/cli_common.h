/* Shared pieces of the subcommands: error reporting, progress, the command
 * line recorded in result files. The library never prints; only the CLI does. */
#ifndef TSIM_CLI_COMMON_H
#define TSIM_CLI_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "error.h"
#include "planner.h"

/* Prints "taotsim CMD: message" on stderr and returns the exit status
 * (err->code, or 3 with "internal error" wording for TSIM_E_INTERNAL). */
int tsim_cli_fail(const char *cmd, const tsim_error *err);

/* A command's main with the command line as typed (tsim_argv_identity, for
 * a shard's partial result), taken before parsing since getopt_long reorders
 * argv; ctx is the command's own. */
typedef int (*tsim_cli_identity_main)(int argc, char **argv, char **id_argv, int id_argc, void *ctx);
int tsim_cli_run_with_identity(const char *cmd, int argc, char **argv, tsim_cli_identity_main run, void *ctx);

/* The lines every command's --help prints about planners: they point to
 * `taotsim planners`, so adding a planner changes no command's help
 * (cmd_planners.c). */
void tsim_cli_planners_help(FILE *out);
/* One line per planner of the list that fell back (its fell_back hook) or has
 * a note worth telling (its note hook). */
void tsim_cli_report_fallbacks(const tsim_planner *planners, int n, FILE *out);

/* Prints a usage error ("taotsim CMD: msg\nTry 'taotsim CMD --help'.") and returns 2. */
int tsim_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


/* Before any work: DIR (named by flag, e.g. "--plots") can hold the files a
 * command writes: an existing directory it may write, or a path whose
 * nearest existing ancestor is such a directory. A regular file, or a path
 * through one, is refused. NULL always can. */
int tsim_cli_check_output_dir(const char *dir, const char *flag, tsim_error *err);

/* A progress line on stderr, at most a few times a second, only when stderr is
 * a terminal and the work has taken more than a second. */
typedef struct {
    bool enabled;
    double start;
    double last;
    bool printed;
    const char *what;
} tsim_progress;

void tsim_progress_start(tsim_progress *p, const char *what);
void tsim_progress_update(tsim_progress *p, int64_t done, int64_t total); /* total <= 0: unknown */
void tsim_progress_finish(tsim_progress *p);


#endif
