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

/* taotsim's blocked gzip: each member's header has FEXTRA set and one
 * subfield, ID1 'T' ID2 'm', LEN 4, holding the member's total length in
 * bytes (header, deflate data and the 8-byte trailer; little-endian), so a
 * reader can read whole members and inflate them on other threads. Any gzip
 * reader skips the field. */
#define TSIM_GZ_SUBFIELD_ID1 'T'
#define TSIM_GZ_SUBFIELD_ID2 'm'
#define TSIM_GZ_MEMBER_HEADER 20 /* 10 fixed bytes, XLEN, the subfield */

struct tsim_gzmembers;

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
    struct tsim_gzmembers *mem; /* parallel inflation, when started */
    bool mactive;               /* lines come from inflated members */
    bool resume_at_end;         /* the one-thread path resumes just after a member */
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

/* Parallel inflation of a gzip file whose members carry their length
 * (TSIM_GZ_SUBFIELD_*): from the next member end on, the caller's thread
 * only reads whole members into up to `slots` slots, and other threads
 * inflate them (tsim_gzline_help); lines, errors and their messages stay
 * exactly those of the one-thread path, which takes over again at any
 * member without the subfield or that does not inflate cleanly. wake(arg)
 * is called (no lock held) when members wait for a helper. A no-op for
 * plain input or a file that is not a regular file. */
int tsim_gzline_members_start(tsim_gzline *s, int slots, void (*wake)(void *), void *arg, tsim_error *err);

/* Whether a member waits for inflation (cheap, no lock). */
bool tsim_gzline_has_work(const tsim_gzline *s);

/* Inflates one waiting member, if any; safe from any thread while another
 * reads lines. Returns whether it inflated one. */
bool tsim_gzline_help(tsim_gzline *s);

/* Frees the member slots; no helper may be inside tsim_gzline_help. */
void tsim_gzline_members_stop(tsim_gzline *s);

#endif
