/* Everything an exec planner starts. A process group does not hold a
 * planner's descendants: one may call setsid (a daemon) and keep the pipes
 * open after the planner exits. So each planner runs with a tag of its own
 * in its environment, TAOTSIM_PLANNER_TAG=PID.N, which its descendants
 * inherit, and at its end every process that carries the tag is killed;
 * those that were orphaned come back to taotsim (the subreaper) to be
 * reaped. */
#ifndef TSIM_CLI_PLANNER_PROCS_H
#define TSIM_CLI_PLANNER_PROCS_H

#include <stddef.h>
#include <sys/types.h>

/* Writes planner n's tag ("NAME=VALUE") into tag[size] and returns a
 * malloc'ed copy of taotsim's environment (the strings shared, not copied)
 * with the tag in place of any inherited one; NULL when out of memory. */
char **tsim_procs_tagged_environ(char *tag, size_t size, unsigned n);

/* Kills every process whose environment holds tag (from /proc; nothing where
 * there is none), reaps those that are taotsim's children, and returns how
 * many of them were outside process group `group` (0: how many in all): those
 * the planner left behind, where its own group dies with it. */
int tsim_procs_kill_tagged(const char *tag, pid_t group);

#endif
