/* External planners (docs/planner-protocol.md): LABEL=exec:CMD, a process
 * speaking line-delimited JSON, and LABEL=plugin:LIB.so, a C plugin. They live
 * in the CLI layer because the library never starts processes or loads code:
 * main installs the resolver the registry hands exec:/plugin: names to. */
#ifndef TSIM_CLI_EXTERNAL_H
#define TSIM_CLI_EXTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "planner.h"
#include "taotsim/planner.h"

#define TSIM_EXEC_WINDOW_DEFAULT 64
#define TSIM_EXEC_TIMEOUT_DEFAULT 10.0

enum { TSIM_EXTERNAL_EXEC, TSIM_EXTERNAL_PLUGIN };

/* One configured external planner, kept until tsim_external_cleanup. */
typedef struct {
    int kind;                    /* TSIM_EXTERNAL_* */
    char label[TSIM_LABEL_MAX];
    char *name;                  /* "exec:CMD" or "plugin:PATH": the descriptor's name */
    const char *target;          /* CMD or PATH (inside name) */
    int n_options;               /* exec: --LABEL-KEY=VALUE, as strings */
    char **keys, **values;
    int window;                  /* exec: records in flight */
    double timeout_s;            /* exec: seconds per answer */
    tsim_planner_desc desc;
    /* plugin */
    void *library;
    const taotsim_planner_descriptor *plugin;
    void *options_block;         /* the plugin's options, defaults then values */
    tsim_option_spec *plugin_options; /* its table as taotsim's, named LABEL-KEY */
    int n_plugin_options;
} tsim_external_config;

/* The --help lines of external planners and their options. */
void tsim_external_help(FILE *out);

/* Installs the resolver; main calls it once at start-up. */
void tsim_external_install(void);
/* Frees every configuration and unloads the plugins (after the command). */
void tsim_external_cleanup(void);

/* The exec settings of this command line (--exec-window, --exec-timeout). */
int tsim_external_set_window(const char *value, tsim_error *err);
int tsim_external_set_timeout(const char *value, tsim_error *err);

/* Before the options are parsed: remembers the labels of the external
 * planners in a --planners value, whose --LABEL-KEY=VALUE options the parser
 * then accepts. */
void tsim_external_scan_list(const char *list);
/* text: an option as typed ("--mine-depth=3"). Sets *taken when it names a
 * remembered external label; it is then stored for that planner, or refused
 * (no '=VALUE') with a message. */
int tsim_external_take_option(const char *text, bool *taken, tsim_error *err);

/* Around every call into a plugin (its constructors at load time included):
 * the calling thread is running planner `label`, so that an exit() from
 * inside it is reported as the planner's (signals.c's exit guard). */
void tsim_external_enter(const char *label);
void tsim_external_leave(void);
/* The label of the planner this thread is running code of, or NULL. */
const char *tsim_external_running(void);

/* The end of a run, before any file is written: closes every running exec
 * planner's standard input and waits for it to exit. A planner that exits
 * with a status other than 0, or writes after its last answer (now or when a
 * study freed it), fails the run: TSIM_E_INPUT with the message. */
int tsim_external_finish(tsim_error *err);
int tsim_exec_finish_all(tsim_error *err);

/* Kills every running exec planner's process group; async-signal-safe
 * (the handler of signals.c calls it). */
void tsim_exec_kill_all(void);

/* The descriptor functions of each kind (exec_planner.c, plugin_planner.c). */
void tsim_exec_describe(tsim_planner_desc *d);
void tsim_plugin_describe(tsim_planner_desc *d);
/* Loads and checks a plugin, fills cfg->plugin and the options block;
 * options: the spec's own "--KEY=VALUE:--KEY2=V" text (NULL: none). */
int tsim_plugin_load(tsim_external_config *cfg, const char *options, tsim_error *err);
void tsim_plugin_unload(tsim_external_config *cfg);

#endif
