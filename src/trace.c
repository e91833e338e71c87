/* PLACEHOLDER: replaced by the trace I/O implementation. */
#include "trace.h"
#include <stdlib.h>
int tsim_trace_format_from_path(const char *path, tsim_trace_format *fmt, tsim_error *err) { (void)path; (void)fmt; return tsim_error_set(err, TSIM_E_INTERNAL, "trace I/O not built yet"); }
void tsim_trace_header_free(tsim_trace_header *h) { (void)h; }
int tsim_trace_header_copy(tsim_trace_header *d, const tsim_trace_header *s, tsim_error *err) { (void)d; (void)s; return tsim_error_set(err, TSIM_E_INTERNAL, "not built"); }
int tsim_reader_open(tsim_reader **out, const char *path, const tsim_read_options *o, tsim_error *err) { (void)out; (void)path; (void)o; return tsim_error_set(err, TSIM_E_INTERNAL, "not built"); }
const tsim_trace_header *tsim_reader_header(const tsim_reader *r) { (void)r; return NULL; }
bool tsim_reader_rebucketed(const tsim_reader *r) { (void)r; return false; }
int tsim_reader_next(tsim_reader *r, const tsim_record **rec, tsim_error *err) { (void)r; (void)rec; return tsim_error_set(err, TSIM_E_INTERNAL, "not built"); }
int64_t tsim_reader_count(const tsim_reader *r) { (void)r; return 0; }
void tsim_reader_progress(const tsim_reader *r, int64_t *d, int64_t *t) { (void)r; *d = *t = 0; }
void tsim_reader_close(tsim_reader *r) { (void)r; }
int tsim_writer_open(tsim_writer **out, const char *path, const tsim_trace_header *h, tsim_error *err) { (void)out; (void)path; (void)h; return tsim_error_set(err, TSIM_E_INTERNAL, "not built"); }
int tsim_writer_write(tsim_writer *w, const tsim_record *rec, tsim_error *err) { (void)w; (void)rec; return tsim_error_set(err, TSIM_E_INTERNAL, "not built"); }
int tsim_writer_close(tsim_writer *w, bool commit, tsim_error *err) { (void)w; (void)commit; (void)err; return 0; }
