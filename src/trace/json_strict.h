/* A strict RFC 8259 checker for one JSON value. cJSON is lenient (any byte up
 * to 0x20 is whitespace to it, "00012" reads as 12, "1e-400" as 0, "\u0000"
 * cuts a string short), so every text the trace readers hand to cJSON passes
 * through this first; what it accepts, cJSON reads exactly. */
#ifndef TSIM_JSON_STRICT_H
#define TSIM_JSON_STRICT_H

#include <stddef.h>

#include "error.h"

struct cJSON;

/* Containers nested deeper than this are refused (cJSON's own limit is 1000). */
#define TSIM_JSON_MAX_DEPTH 512
/* The longest number accepted: cJSON reads at most 63 characters of one. */
#define TSIM_JSON_MAX_NUMBER 63

typedef struct {
    size_t at;     /* offset of the offending byte (== len: the text ended early) */
    char what[128]; /* the problem; "" when only the position is known ("malformed JSON near ...") */
} tsim_json_fault;

/* Checks the JSON value at the start of text[0..len) (whitespace before it is
 * skipped). Returns the offset one past the value, or (size_t)-1 with *fault
 * filled. Strings may not hold \u0000 (no C string can carry it) and must be
 * valid UTF-8; numbers must fit a double without turning into 0 or infinity. */
size_t tsim_json_check(const char *text, size_t len, tsim_json_fault *fault);

/* The same for a whole text: one value with only whitespace around it.
 * Returns len, or (size_t)-1 with *fault. */
size_t tsim_json_check_all(const char *text, size_t len, tsim_json_fault *fault);

/* JSON whitespace: space, tab, line feed, carriage return. */
static inline int tsim_json_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Offset of the first byte at or after `from` that is not JSON whitespace. */
size_t tsim_json_skip_ws(const char *text, size_t len, size_t from);

/* Every JSON document taotsim reads whole (partial results, regimes, spec
 * vectors, results to plot) goes through these, so cJSON only ever sees text
 * the checker accepted: a NUL byte, trailing garbage or "00012" is an error.
 * name is how messages call the text (a file name). */

/* Parses text[0..len) as one JSON document (one value, only whitespace
 * around it). NULL with err: TSIM_E_INPUT "NAME:LINE:COLUMN: malformed
 * JSON..." (or "NAME: empty, not JSON"), TSIM_E_INTERNAL out of memory. */
struct cJSON *tsim_json_parse_strict(const char *text, size_t len, const char *name, tsim_error *err);

/* Reads the file at path ("-": standard input) and parses it as above. A file
 * longer than max bytes (a multiple of 1 MiB) is refused before it is read when its size is known,
 * and as soon as max is passed otherwise (pipes, /dev/zero); `what` names the
 * kind of document in that message ("a partial result"). */
int tsim_json_read_file(const char *path, size_t max, const char *what, struct cJSON **out, tsim_error *err);

#endif
