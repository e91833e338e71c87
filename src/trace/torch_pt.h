/* Shared by the .pt and .npz readers (trace_pt.c, trace_npz.c). */
#ifndef TSIM_TORCH_PT_H
#define TSIM_TORCH_PT_H

#include "pickle.h"
#include "trace_internal.h"
#include "zip_reader.h"

/* The largest pickle (data.pkl) read: it is held in memory. */
#define TSIM_PT_PICKLE_MAX ((int64_t)256 << 20)
/* The largest tensor loaded into memory whole (maps, per-pass counts). */
#define TSIM_PT_TENSOR_MAX ((int64_t)1 << 31)

/* A directory holding *.pt (1) or *.npz (2) files or meta_info.json (3, TensorRT-LLM), else 0. */
int tsim_dir_kind(const char *path);
/* The sorted paths of dir's files ending in suffix. */
int tsim_dir_list(const char *dir, const char *suffix, char ***paths, size_t *n, tsim_error *err);
void tsim_dir_list_free(char **paths, size_t n);
/* Writes n bytes at off, whole. */
int tsim_pwrite_all(int fd, const void *buf, size_t n, int64_t off, tsim_error *err);
int tsim_pread_all(int fd, void *buf, size_t n, int64_t off, tsim_error *err);
/* Sets meta {"source": source, "file": base of r->path, more...}. */
int tsim_set_meta(tsim_reader *r, const char *source, const char *key, const char *value, tsim_error *err);

#endif
