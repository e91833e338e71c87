/* Internals shared by the trace reader and writer files (trace.c,
 * trace_json.c, trace_csv.c, trace_write.c). Not part of the library API. */
#ifndef TSIM_TRACE_INTERNAL_H
#define TSIM_TRACE_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gzline.h"
#include "trace.h"

/* How many distinct unknown key names get their own warning; past that, one
 * last warning says the rest are ignored silently (keeps memory bounded). */
#define TSIM_WARN_KEYS_MAX 64
/* Layers remembered per microbatch for the duplicate check. */
#define TSIM_SEEN_LAYERS_MAX 65536
/* The duplicate check remembers every (dataset, microbatch, layer) of the
 * trace up to this many records (about 10 MB of table); beyond it, only the
 * current (dataset, microbatch) run, so memory stays flat however long the
 * trace is. */
#define TSIM_SEEN_RECORDS_MAX (1 << 18)
/* microbatch and layer must be exact in a double (cJSON parses numbers as doubles). */
#define TSIM_MAX_INDEX ((INT64_C(1) << 53) - 1)
/* Tokens in one record, so that loads and sums downstream never overflow int64. */
#define TSIM_MAX_RECORD_TOTAL (INT64_C(1) << 62)

enum { REC_NONE = 0, REC_COUNTS = 1, REC_EXPERT_COUNTS = 2 };

/* One record as parsed, before the even split and the checks shared by every
 * format. Its numbers are in the reader's buffers (see tsim_reader_row). */
typedef struct {
    int64_t microbatch;
    int64_t layer;
    int kind;
    long line;
    char tag[TSIM_TAG_MAX];
    bool total_ok; /* the parser already found the counts' sum within TSIM_MAX_RECORD_TOTAL */
} tsim_raw_record;

/* Whether R x E counts (each at most 2^40) sum to at most TSIM_MAX_RECORD_TOTAL. */
bool tsim_counts_total_ok(const int64_t *counts, size_t cells);

struct tsim_reader {
    char *path;
    tsim_trace_format fmt;
    tsim_trace_header hdr; /* effective: ep and rpn after the options */
    int file_ep;           /* rows of "counts" in the file */
    bool rebucket;         /* file_ep != hdr.ep: rows are summed, then split again */
    char *dataset;         /* filter, or NULL */

    tsim_record rec;  /* hdr.ep x experts, returned to the caller */
    int64_t *tpe;     /* [E] per-expert totals (expert_counts, CSV, rebucketing) */
    int64_t *scratch; /* [E] one "counts" row when rebucketing */

    int64_t produced;    /* records returned */
    int64_t raw_records; /* records parsed (before the dataset filter) */
    bool finished;
    int sticky_rc; /* once an error was returned, every later call returns it */
    tsim_error sticky;

    /* warnings: a FIFO of messages, and the unknown key names already warned about */
    char **warnings;
    size_t warn_n, warn_cap, warn_head;
    char *warn_taken; /* the string last handed out */
    char *warned_keys[TSIM_WARN_KEYS_MAX];
    int warned_n;
    bool warned_overflow;

    /* duplicate check: layers seen in the current (tag, microbatch) run */
    bool have_prev;
    int64_t prev_microbatch;
    char prev_tag[TSIM_TAG_MAX];
    void *seen_slots; /* open addressing hash set of layers (trace.c) */
    size_t seen_cap, seen_n;
    uint64_t seen_gen; /* slots of older generations count as empty */
    bool seen_runs_only; /* past TSIM_SEEN_RECORDS_MAX: check within the current run only */

    /* JSONL and CSV */
    tsim_gzline lines;
    bool lines_open;

    /* JSON document: the whole text, and where the records array stands */
    char *text;
    size_t text_len;
    size_t pos;     /* next byte to read in the records array */
    size_t line_at; /* byte offset whose line number is line_no */
    long line_no;
    bool records_begun; /* the first element has been read */

    /* CSV */
    long csv_tag_col;      /* column of the tag (0, or 1 after an index column) */
    char csv_tag_name[48]; /* its name, printable, for messages */
    char *csv_tag_column;  /* its name when it is not "dataset" (into meta), else NULL */
    bool csv_has_rank;     /* a "rank" column: one row per source rank */
    long csv_first_expert; /* column of expert 0 */
    long csv_fields;
    struct csv_field *csv_row; /* [csv_fields] */
    int64_t *csv_pending;      /* [E] cells of the row read ahead (rank column) */
    void *csv_pending_key;     /* its key columns */
    bool csv_have_pending;
    bool *csv_rank_seen; /* [file_ep] ranks of the record being built */

    /* .npy, .safetensors and Megatron directories: the format's own state */
    void *ext;
    void (*ext_close)(tsim_reader *r);
    /* bytes parsed so far, and progress through the input */
    void (*ext_progress)(const tsim_reader *r, int64_t *bytes, int64_t *done, int64_t *total);
    int64_t skipped_zero; /* all-zero records skipped (ring buffers leave unused rows zero) */

    struct tsim_parallel *par; /* JSON Lines parsed on several threads, or NULL */

    /* reads the next record into the buffers: 1, 0 at the end, or an error */
    int (*next_raw)(tsim_reader *r, tsim_raw_record *raw, tsim_error *err);
};

/* trace.c */
/* "a number", "a string", ...: what a JSON value is, for messages. */
const char *tsim_json_type_name(const cJSON *v);
/* A number as the file wrote it, closely enough for a message. */
void tsim_number_text(char *buf, size_t cap, double v);
/* True for a line of spaces, tabs and carriage returns only. */
bool tsim_line_blank(const char *s);
/* The next line that is not blank (tsim_gzline_next's returns otherwise). */
int tsim_next_content_line(tsim_reader *r, char **line, size_t *len, tsim_error *err);
int tsim_reader_warn(tsim_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Warns once per unknown key name; where is "path:line" or "path:line: record N". */
int tsim_reader_warn_key(tsim_reader *r, const char *where, const char *context, const char *key);
/* Validates a header object (JSONL line 1, or the JSON document's keys
 * gathered in one object) into r->hdr and r->file_ep. key_line(ctx, key)
 * gives the line of a key for messages. */
typedef long (*tsim_key_line_fn)(const void *ctx, const char *key);
int tsim_reader_parse_header(tsim_reader *r, const cJSON *obj, tsim_key_line_fn key_line, const void *ctx,
                             long obj_line, tsim_error *err);
/* Allocates the record buffers for r->hdr (limits already checked). */
int tsim_reader_alloc_buffers(tsim_reader *r, tsim_error *err);
/* Where row `row` of "counts" goes: straight into the record, or into scratch
 * when rebucketing (then tsim_reader_row_done adds it to the totals). */
static inline int64_t *tsim_reader_row(tsim_reader *r, int row)
{
    return r->rebucket ? r->scratch : r->rec.counts + (size_t)row * (size_t)r->hdr.experts;
}
void tsim_reader_row_done(tsim_reader *r);
/* Zeroes the totals before a record whose "counts" rows are being summed. */
void tsim_reader_begin_counts(tsim_reader *r);

/* Where the JSON Lines fast path puts a record's numbers: the reader's own
 * buffers, or those of a slot of the parallel reader (trace_parallel.c). */
typedef struct {
    int experts, file_ep;
    bool rebucket;
    int64_t *counts;  /* [ep x experts] */
    int64_t *tpe;     /* [experts] */
    int64_t *scratch; /* [experts] */
} tsim_parse_target;

/* trace_json.c */
tsim_parse_target tsim_reader_parse_target(tsim_reader *r);
/* The strict fast path for one JSON Lines record line (NUL-terminated, len
 * bytes): true when it took the whole line. It touches only the target, so
 * any thread may run it. False leaves the target's contents undefined. */
bool tsim_jsonl_fast(const tsim_parse_target *t, const char *line, size_t len, tsim_raw_record *raw);
/* The cJSON path for the same line (the caller's thread, in record order:
 * it may warn and gives every error message). 1 or an error status. */
int tsim_jsonl_slow(tsim_reader *r, const char *line, size_t len, long lineno, tsim_raw_record *raw,
                    tsim_error *err);
/* trace_parallel.c: JSON Lines records parsed on `threads` more threads of
 * its own and by `sharers` of the caller's threads (tsim_reader_help),
 * returned in order (r->next_raw is replaced). */
int tsim_parallel_start(tsim_reader *r, int threads, int sharers, tsim_error *err);
void tsim_parallel_stop(tsim_reader *r);

int tsim_json_open(tsim_reader *r, tsim_error *err);  /* JSON document */
int tsim_jsonl_open(tsim_reader *r, tsim_error *err); /* JSONL(.gz) */
/* Parses one record object (already a cJSON tree) into the buffers. */
int tsim_record_from_cjson(tsim_reader *r, const cJSON *obj, const char *where, tsim_raw_record *raw, tsim_error *err);

/* trace_csv.c */
int tsim_csv_open(tsim_reader *r, bool gz, const tsim_read_options *opts, tsim_error *err);

/* trace_dense.c: records out of a dense little-endian array of shape [L,E],
 * [T,L,E] or [T,L,R,E] (.npy and .safetensors). */
typedef enum { TSIM_DT_I4, TSIM_DT_I8, TSIM_DT_U4, TSIM_DT_U8, TSIM_DT_F4, TSIM_DT_F8 } tsim_dtype;
typedef struct {
    char what[96]; /* "" or "tensor \"counts\" ": names the array in messages */
    tsim_dtype dtype;
    int ndim;
    int64_t shape[4];
    int64_t data_offset; /* file offset of the first element */
} tsim_dense_spec;
/* Checks the shape against the limits and the data size against the bytes
 * the file holds at data_offset (data_bytes, exact), then sets up r->hdr
 * (experts, ep) and r->next_raw. Totals ([L,E], [T,L,E]) need opts->ep. The
 * file descriptor is the reader's from now on. */
int tsim_dense_open(tsim_reader *r, int fd, const tsim_dense_spec *spec, int64_t data_bytes,
                    const tsim_read_options *opts, tsim_error *err);
/* Bytes per element of a dtype. */
int tsim_dtype_size(tsim_dtype t);
/* The dtype a file names: .npy's "<i8" (npy true) or safetensors' "I64".
 * False for every other name. */
bool tsim_dtype_from_name(const char *name, bool npy, tsim_dtype *out);
/* The shapes the reader takes, as messages list them. */
#define TSIM_DENSE_SHAPES                                                                                              \
    "expected [L, E] (one record per layer), [T, L, E] (totals per microbatch and layer) or [T, L, R, E] (per "       \
    "source rank)"
/* The error for an array of more than 4 dimensions ("PATH: WHAT has N
 * dimensions: expected ..."); what is "shape" or "tensor \"NAME\"". */
int tsim_dense_too_many_dims(const tsim_reader *r, const char *what, int ndim, tsim_error *err);
/* Opens r->path for reading: a regular file, its descriptor and size. */
int tsim_dense_open_file(const tsim_reader *r, int *fd, int64_t *size, tsim_error *err);
/* A trace meta object {"source": source, "file": the path's base name}, or NULL. */
cJSON *tsim_dense_meta(const tsim_reader *r, const char *source);
/* tsim_dense_open, then meta becomes the trace's meta. fd and meta belong to
 * the reader from now on, whatever the result. */
int tsim_dense_finish(tsim_reader *r, int fd, const tsim_dense_spec *spec, int64_t data_bytes,
                      const tsim_read_options *opts, cJSON *meta, tsim_error *err);
/* "[2, 3, 4]" */
void tsim_shape_text(char *buf, size_t cap, const int64_t *shape, int ndim);

/* trace_npy.c: the one .npy header parser (also for the arrays of .npz
 * archives). ndim may exceed 4; shape holds the first 4 dimensions. */
typedef struct {
    char descr[32];
    bool fortran;
    tsim_dtype dtype;
    int ndim;
    int64_t shape[4];
    int64_t data_offset; /* the first byte of the data */
} tsim_npy_info;
/* Reads and checks the header of the .npy at offset base of fd (size bytes) strictly; path
 * names it in messages ("x.npz: array 'loads'" for an archive entry). */
int tsim_npy_read_header(const char *path, int fd, int64_t base, int64_t size, tsim_npy_info *nh, tsim_error *err);
/* tsim_npy_open for the size bytes of an .npy at offset base of fd (a stored
 * .npz entry read in place); fd is the reader's from now on. */
int tsim_npy_open_at(tsim_reader *r, int fd, int64_t base, int64_t size, const tsim_read_options *opts,
                     tsim_error *err);

/* trace_npy.c, trace_safetensors.c, trace_megatron.c */
int tsim_npy_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);
int tsim_safetensors_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);
int tsim_megatron_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);
/* The header of a safetensors file, every tensor entry checked (dtype,
 * shape, data_offsets inside the file, no overlaps, no gaps): *root is its
 * JSON object (the caller deletes it), *data_start the file offset that
 * data_offsets count from. */
int tsim_safetensors_index(const char *path, int fd, int64_t size, cJSON **root, int64_t *data_start,
                           tsim_error *err);
/* trace_trtllm.c: TensorRT-LLM expert statistics (meta_info.json, rank{N}.safetensors) */
int tsim_trtllm_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);
/* trace_pt.c, trace_npz.c: SGLang .pt dumps and NumPy .npz (files or directories) */
int tsim_pt_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);
int tsim_npz_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err);

/* The last component of a path ("dir/" gives "dir"), for meta. */
void tsim_path_base(const char *path, char *buf, size_t cap);

/* Test hook: the longest line the JSONL and CSV readers accept (0 = default). */
void tsim_trace_set_max_line(size_t bytes);
size_t tsim_trace_max_line(void);

#endif
