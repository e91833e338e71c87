/* Read-only access to zip archives (.pt and .npz) through libzip, with the
 * checks a hostile archive needs: every entry's declared size and
 * compression ratio are bounded before anything is inflated (zip bombs),
 * the CRC is checked on every read, and a damaged or truncated archive is an
 * error naming the file and the entry. */
#ifndef TSIM_ZIP_READER_H
#define TSIM_ZIP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* An entry larger than this many times its compressed size is refused
 * (deflate reaches about 1032:1 at most on real data only for runs of zeros
 * far beyond any count array). */
#define TSIM_ZIP_MAX_RATIO 200
/* Entries up to this size are exempt from the ratio check. */
#define TSIM_ZIP_RATIO_FREE ((int64_t)1 << 20)
/* The largest entry read at all (64 GiB). */
#define TSIM_ZIP_MAX_ENTRY ((int64_t)1 << 36)

typedef struct tsim_zip tsim_zip;

/* Opens path. */
int tsim_zip_open(tsim_zip **out, const char *path, tsim_error *err);
/* Opens an archive held in memory (fuzzing, tests); name is used in messages.
 * data must outlive the archive. */
int tsim_zip_open_buffer(tsim_zip **out, const char *name, const void *data, size_t len, tsim_error *err);
void tsim_zip_close(tsim_zip *z);

int64_t tsim_zip_count(const tsim_zip *z);
/* The name of entry i, or NULL. */
const char *tsim_zip_name(const tsim_zip *z, int64_t i);
/* The index of the entry called name, or -1. */
int64_t tsim_zip_find(const tsim_zip *z, const char *name);
/* The uncompressed size the archive declares for entry i (checked against
 * the limits), or an error. */
int tsim_zip_size(const tsim_zip *z, int64_t i, int64_t *size, tsim_error *err);
/* Reads entry i whole into a new buffer (NUL-terminated, *len excludes it);
 * entries above max bytes are refused. */
int tsim_zip_read_all(const tsim_zip *z, int64_t i, int64_t max, unsigned char **buf, size_t *len,
                      tsim_error *err);
/* Copies entry i into fd from its current position, in chunks. */
int tsim_zip_extract(const tsim_zip *z, int64_t i, int fd, int64_t *written, tsim_error *err);

/* Where the data of entry i starts in the archive file, when the entry is
 * stored (not compressed) and the archive was opened from a path: 0 with
 * *offset set, or -1 (read it with tsim_zip_extract instead). The local
 * header is read and checked against libzip's view of the entry. */
int tsim_zip_stored_offset(const tsim_zip *z, int64_t i, int64_t *offset);
/* Reads entry i through once to verify its CRC, keeping nothing. */
int tsim_zip_verify(const tsim_zip *z, int64_t i, tsim_error *err);

/* An unnamed temporary file for extracted data (in $TMPDIR or /tmp). */
int tsim_tmpfile(tsim_error *err);

#endif
