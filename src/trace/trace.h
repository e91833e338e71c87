/* Traces (trace-format.md): streaming readers for JSON, JSONL(.gz) and CSV
 * import, and writers for JSON and JSONL(.gz). The reader holds one record at a
 * time: each parsed record is copied into flat int64 arrays and its cJSON tree
 * freed at once. */
#ifndef TSIM_TRACE_H
#define TSIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "record.h"

struct cJSON;

/* The largest JSON document (.json) read: its whole text is held in memory
 * while the records stream out of it, so a longer trace belongs in JSON Lines
 * (the same bound as one JSON Lines line, TSIM_GZLINE_DEFAULT_MAX). */
#define TSIM_JSON_DOC_MAX ((size_t)256 << 20)

/* Import-only formats (docs/import.md) follow CSV: NumPy .npy, .safetensors,
 * and a directory of Megatron-LM router traces (router_trace_rank{N}.jsonl). */
typedef enum {
    TSIM_FMT_JSON,
    TSIM_FMT_JSONL,
    TSIM_FMT_JSONL_GZ,
    TSIM_FMT_CSV,
    TSIM_FMT_NPY,
    TSIM_FMT_SAFETENSORS,
    TSIM_FMT_MEGATRON,
    TSIM_FMT_PT,  /* torch.save .pt (SGLang expert-distribution dumps), or a directory of them */
    TSIM_FMT_NPZ, /* NumPy .npz, or a directory of per-rank .npz loads */
    TSIM_FMT_TRTLLM /* a TensorRT-LLM expert statistics directory (meta_info.json, rank{N}.safetensors) */
} tsim_trace_format;

/* Format from the file name: .json, .jsonl, .jsonl.gz, .csv (and .csv.gz),
 * .npy, .safetensors. (A directory is a Megatron trace: tsim_reader_open
 * looks at the path itself before its name.) */
int tsim_trace_format_from_path(const char *path, tsim_trace_format *fmt, tsim_error *err);

/* True for the formats that can only be read (CSV, .npy, .safetensors,
 * Megatron directories): writers and generators refuse them. */
bool tsim_trace_format_import_only(tsim_trace_format fmt);

typedef struct {
    int experts;          /* E */
    int ep;               /* R: the effective EP size (after any --ep rebucketing; tsim_reader_source_ep gives the file's) */
    int ranks_per_node;   /* rpn (default 8) */
    int topk;             /* 0 when absent */
    int32_t *home;        /* [E] or NULL for contiguous blocks */
    struct cJSON *meta;   /* owned; NULL when absent */
} tsim_trace_header;

void tsim_trace_header_free(tsim_trace_header *h);
/* Deep copy (meta included). */
int tsim_trace_header_copy(tsim_trace_header *dst, const tsim_trace_header *src, tsim_error *err);

typedef struct {
    int ep;                 /* > 0: replay at this EP size (rebucketing; required for totals without a
                               rank axis: CSV without a rank column, .npy/.safetensors [L,E] and [T,L,E]) */
    int ranks_per_node;     /* > 0: override the header's rpn */
    const char *dataset;    /* keep only records whose tag equals this (NULL = all) */
    /* Format options; each is an error with any other format. */
    const char *block;      /* Megatron: "decoder" (NULL: the default) or "mtp" (--block) */
    int experts;            /* Megatron: > 0 the number of experts (--experts); 0: the largest id
                               seen + 1, rounded up to a multiple of the ranks */
    const char *tensor;     /* safetensors: the tensor to read (--tensor; NULL: "counts") */
    const char *array;      /* .npz: the array to read (--array; NULL: the only one) */
    const char *megatron_parallel; /* Megatron: "tp=T,pp=P,ep=E[,...]" (--megatron-parallel; NULL: one EP group) */
    int num_layers;         /* Megatron with --megatron-parallel: > 0 the model's layers (--num-layers) */
    int ep_group;           /* Megatron with --megatron-parallel: > 0 read only expert data parallel group
                               ep_group - 1 (--ep-group N-1); 0: every group, tagged "ep-group-N" */
} tsim_read_options;

typedef struct tsim_reader tsim_reader;

/* Opens a trace and reads its header. Every error names the file and line. */
int tsim_reader_open(tsim_reader **out, const char *path, const tsim_read_options *opts, tsim_error *err);

/* The header as the records come out: ep is the effective EP (after --ep),
 * ranks_per_node the effective rpn; home NULL after rebucketing. */
const tsim_trace_header *tsim_reader_header(const tsim_reader *r);

/* True when records were rebucketed to another EP size (say so once). */
bool tsim_reader_rebucketed(const tsim_reader *r);

/* Reads the next record into a buffer the reader owns (valid until the next
 * call). Returns 1 with *rec set, 0 at the end of the trace, or an error
 * status (TSIM_E_INPUT) with err naming file:line. An empty trace is an error
 * reported by the first call. */
int tsim_reader_next(tsim_reader *r, const tsim_record **rec, tsim_error *err);

/* Continues a JSON Lines reader (.jsonl, .jsonl.gz, read without --ep or
 * --dataset) at a seek point of its index, before the first
 * tsim_reader_next: the byte offset where the block starts (a gzip member of
 * a .jsonl.gz; -1: where the reader stands, after the header), the record number (from 0) and line number (from 1) there,
 * then `skip` more records passed over without parsing. Records keep their
 * numbers in the whole trace (tsim_record.index, messages). The caller
 * checks the index against the file first (tsim_index_check_blocks). */
int tsim_reader_seek(tsim_reader *r, int64_t offset, int64_t first_record, int64_t first_line, int64_t skip,
                     tsim_error *err);

/* Parses JSON Lines records (.jsonl, .jsonl.gz) on `threads` more threads
 * besides the caller's, before the first tsim_reader_next: the caller's
 * thread still reads (and inflates) the lines, in order, and the records,
 * warnings and errors are the same as with one thread. A no-op for the other
 * formats or threads < 1. After tsim_reader_seek if both are used. */
int tsim_reader_set_threads(tsim_reader *r, int threads, tsim_error *err);

/* The same read-ahead, but no thread is started: up to `sharers` threads the
 * caller runs anyway (replay -j's planning threads) parse read-ahead lines by
 * calling tsim_reader_help whenever they have nothing else to do. N threads
 * then share N cores, where N more parsing threads would compete with them
 * for the cores (a context switch per few records). */
int tsim_reader_share_parsing(tsim_reader *r, int sharers, tsim_error *err);

/* Parses one line the reader has read ahead, if one waits for a parser; safe
 * to call from any thread while another calls tsim_reader_next, never after
 * tsim_reader_close. Returns whether it parsed one (false at once for a
 * reader without read-ahead). */
bool tsim_reader_help(tsim_reader *r);

/* Whether the caller may take the counts of the record tsim_reader_next
 * returned (a reader with read-ahead recycles buffers and rewrites every cell
 * of each). If so, tsim_reader_replace_counts(r, other) hands the reader
 * another buffer of the same R x E cells, and rec->counts' old buffer is the
 * caller's to keep and free. */
bool tsim_reader_lends_counts(const tsim_reader *r);
void tsim_reader_replace_counts(tsim_reader *r, int64_t *counts);

/* Number of records read so far. */
int64_t tsim_reader_count(const tsim_reader *r);

/* All-zero records skipped so far (.npy and .safetensors: ring buffers leave
 * unused rows zero); the reader also queues a warning saying how many at the
 * end of the trace. */
int64_t tsim_reader_skipped_zero(const tsim_reader *r);

/* The library never prints: warnings (unknown keys, one per key name) queue
 * in the reader. Returns the oldest pending warning, or NULL when none; the
 * string stays valid until the next call or tsim_reader_close. Commands drain
 * it after tsim_reader_open and after each tsim_reader_next. */
const char *tsim_reader_take_warning(tsim_reader *r);

/* The EP size stored in the file (the header reports the effective one). */
int tsim_reader_source_ep(const tsim_reader *r);

/* Uncompressed bytes parsed so far (for throughput measurements). */
int64_t tsim_reader_bytes(const tsim_reader *r);

/* Bytes of the input file consumed so far and its size (for progress;
 * compressed bytes for .gz). */
void tsim_reader_progress(const tsim_reader *r, int64_t *done, int64_t *total);

void tsim_reader_close(tsim_reader *r);

typedef struct tsim_writer tsim_writer;

/* Writes JSON or JSONL(.gz) by the file name, atomically (temporary file then
 * rename on tsim_writer_close with commit = true). Records are written with
 * "counts" (per source rank). */
int tsim_writer_open(tsim_writer **out, const char *path, const tsim_trace_header *h, tsim_error *err);
int tsim_writer_write(tsim_writer *w, const tsim_record *rec, tsim_error *err);
/* The deflate level (0..9, default 6) of a .jsonl.gz, before the first
 * record; other formats ignore it. .jsonl.gz is blocked gzip: independent
 * members of about 1 MiB of text, each ending at a record boundary. */
int tsim_writer_set_gzip_level(tsim_writer *w, int level, tsim_error *err);
/* commit = false discards the output. */
int tsim_writer_close(tsim_writer *w, bool commit, tsim_error *err);

/* The header at close, for a header known only once every record is written
 * (gen's achieved mean imbalance), in one pass over the records: true when
 * path can be written that way: a .json or .jsonl file (a new one or a
 * regular file), not "-", not a device, not .jsonl.gz (whose first gzip
 * member holds the header and the first records). */
bool tsim_writer_can_defer_header(const char *path);
/* Opens such a writer for records of ep x experts: tsim_writer_write puts
 * them in a scratch file beside path (a temporary file like the output's,
 * removed however the run ends). */
int tsim_writer_open_body(tsim_writer **out, const char *path, int ep, int experts, tsim_error *err);
/* Closes a writer of tsim_writer_open_body. commit = true writes the output
 * atomically: h's header (the same text tsim_writer_open writes; its ep and
 * experts must be the records'), then the records, byte for byte the file
 * tsim_writer_open, the same records and tsim_writer_close give. commit =
 * false, or any error, leaves neither the output nor the scratch file.
 * tsim_writer_close refuses to commit such a writer. */
int tsim_writer_close_with_header(tsim_writer *w, const tsim_trace_header *h, bool commit, tsim_error *err);

#endif
