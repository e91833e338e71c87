/* Output files written atomically: a temporary name in the same directory,
 * renamed over the target on commit, removed on abort, on any signal that
 * ends the process and at exit (the CLI's handlers), so an interrupted run
 * never leaves a half-written file. "-" means stdout; "" is refused. Any
 * number of outputs may be open at once. */
#ifndef TSIM_OUTFILE_H
#define TSIM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

typedef struct {
    FILE *fp;
    char *path;     /* final path, NULL for stdout */
    char *tmp_path; /* temporary path being written */
} tsim_outfile;

int tsim_outfile_open(tsim_outfile *f, const char *path, tsim_error *err);

/* Before any work: the output can be created (its directory exists and is
 * writable; it is not a directory). "-" and NULL (stdout) always can. */
int tsim_outfile_check_writable(const char *path, tsim_error *err);

/* Before any work: no output is the same file as an input or as another
 * output (device and inode where the file exists, resolved paths otherwise).
 * output_flags name each output in the message ("-o", "--dump-plans"). */
int tsim_outfile_check_distinct(const char *const *outputs, const char *const *output_flags, int n_outputs,
                                const char *const *inputs, int n_inputs, tsim_error *err);

/* The temporary name an output is written under (mkstemp template) in out[n]. */
void tsim_outfile_temp_name(const char *path, char *out, size_t n);
/* Flushes and checks for write errors (e.g. a full disk) without committing:
 * lets a command that writes several files find a failure in any of them
 * before it renames the first into place. */
int tsim_outfile_flush(tsim_outfile *f, tsim_error *err);
/* Flushes, checks for write errors (e.g. a full disk), renames into place. */
int tsim_outfile_commit(tsim_outfile *f, tsim_error *err);
/* Removes the temporary file; safe to call after commit (does nothing). */
void tsim_outfile_abort(tsim_outfile *f);

/* Unlinks every temporary file still open. Async-signal-safe (no lock, no
 * heap): the CLI's signal handlers and exit guard call it (the library
 * installs no handler). */
void tsim_outfile_unlink_pending(void);

#endif
