/* Line-at-a-time input from a plain or gzip-compressed file, for the streaming
 * readers (JSONL, CSV). Lines are returned in place, in a buffer that grows to
 * the longest line seen (up to a cap), so memory stays flat however long the
 * file is. */
#ifndef TSIM_GZLINE_H
#define TSIM_GZLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The longest line accepted by default: far above any record within the
 * dimension limits that a real trace uses, far below what would exhaust memory. */
#define TSIM_GZLINE_DEFAULT_MAX ((size_t)256 << 20)

typedef struct {
    const char *path; /* for messages; not owned */
    int fd;           /* the file (plain or gzip) */
    void *gz;         /* z_stream (inflate state), NULL for plain input */
    unsigned char *in; /* compressed input buffer (gzip) */
    bool in_eof;      /* the file has no more compressed bytes */
    int64_t in_read;  /* compressed bytes read from the file */
    char *buf;
    size_t cap;   /* allocated bytes of buf */
    size_t start; /* first unconsumed byte */
    size_t end;   /* one past the last byte read */
    size_t scan;  /* bytes after start already known to hold no newline */
    bool eof;
    long line;     /* number of the last line returned (1-based) */
    int64_t bytes; /* uncompressed bytes returned so far, newlines included */
    int64_t file_size;
    size_t max_line;
} tsim_gzline;

/* Opens path; gz selects zlib. A file with the gzip magic and no .gz suffix,
 * or a .gz file without it, is refused: the name decides the format. */
int tsim_gzline_open(tsim_gzline *s, const char *path, bool gz, size_t max_line, tsim_error *err);

/* Next line without its "\n" (a trailing "\r" is kept), NUL-terminated and
 * writable until the next call. Returns 1, 0 at the end of the file, or
 * TSIM_E_INPUT (too long, a NUL byte in it, unreadable, truncated or corrupt
 * gzip) with err naming "path:line" (and the column of a NUL). */
int tsim_gzline_next(tsim_gzline *s, char **line, size_t *len, tsim_error *err);

/* Continues at a byte offset of the file where a line starts (for gzip, where
 * a member starts), numbering that line `line`: what was buffered is
 * dropped. */
int tsim_gzline_seek(tsim_gzline *s, int64_t offset, long line, tsim_error *err);

/* Bytes of the file consumed so far (compressed bytes for gzip). */
int64_t tsim_gzline_offset(const tsim_gzline *s);

void tsim_gzline_close(tsim_gzline *s);

#endif
