/* Shared pieces of the libFuzzer targets: the fuzz input written to a scratch
 * file with the suffix that selects the reader, and a full read of a trace
 * that checks the reader's promises (records shaped as the header says,
 * counts within the limits, every error a TSIM_E_INPUT naming the file). */
#ifndef TSIM_FUZZ_COMMON_H
#define TSIM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* Writes data to a per-process scratch file ending in suffix (the file is
 * reused between calls with the same suffix) and returns its path. */
const char *fuzz_write_file(const char *suffix, const uint8_t *data, size_t size);

/* Reads the whole trace at path with opts; aborts on a broken promise. */
void fuzz_read_trace(const char *path, const tsim_read_options *opts);

/* abort() with a message on stderr: what libFuzzer reports as a crash. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
