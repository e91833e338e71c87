/* A restricted unpickler for what torch.save writes: None, bools, ints,
 * floats, strings, lists, tuples, dicts, collections.OrderedDict, and tensors
 * rebuilt from storages (torch._utils._rebuild_tensor_v2 with torch.*Storage
 * persistent ids). Like PyTorch's weights_only=True, every other global and
 * opcode is refused, naming it: loading never runs anything. */
#ifndef TSIM_PICKLE_H
#define TSIM_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    TSIM_PK_NONE,
    TSIM_PK_BOOL,
    TSIM_PK_INT,
    TSIM_PK_FLOAT,
    TSIM_PK_STR,
    TSIM_PK_LIST,
    TSIM_PK_TUPLE,
    TSIM_PK_DICT,
    TSIM_PK_TENSOR,
    TSIM_PK_STORAGE,
    TSIM_PK_CLASS /* an allowed global, before it is called */
} tsim_pk_kind;

/* Element types of torch storages. */
typedef enum {
    TSIM_ST_F8, TSIM_ST_F4, TSIM_ST_F2, TSIM_ST_BF16, TSIM_ST_I8, TSIM_ST_I4, TSIM_ST_I2, TSIM_ST_I1, TSIM_ST_U1,
    TSIM_ST_BOOL
} tsim_storage_type;

#define TSIM_PK_MAX_DIMS 8

typedef struct tsim_pk tsim_pk;
struct tsim_pk {
    tsim_pk_kind kind;
    int64_t i; /* bool, int; class: which */
    double f;
    char *s; /* str; storage: its key (archive/data/<key>) */
    size_t len;
    tsim_pk **items; /* list, tuple; dict: key, value, key, value... */
    size_t n, cap;   /* items (a dict holds 2n) */
    /* storage and tensor */
    tsim_storage_type st;
    int64_t numel; /* storage: elements */
    const tsim_pk *storage; /* tensor */
    int64_t offset;         /* tensor: storage offset, in elements */
    int ndim;
    int64_t shape[TSIM_PK_MAX_DIMS], stride[TSIM_PK_MAX_DIMS];
};

typedef struct {
    tsim_pk *root;
    tsim_pk **all; /* every value, freed together */
    size_t n_all, cap_all;
} tsim_pickle;

/* Loads data; where ("file.pt: entry 'archive/data.pkl'") prefixes every
 * message, which names the byte offset. */
int tsim_pickle_load(tsim_pickle *out, const unsigned char *data, size_t len, const char *where, tsim_error *err);
void tsim_pickle_free(tsim_pickle *p);

/* The value of a dict's str key, or NULL. */
const tsim_pk *tsim_pk_get(const tsim_pk *dict, const char *key);
/* "int", "list", "tensor"...: for messages. */
const char *tsim_pk_kind_name(tsim_pk_kind k);
/* Bytes per element of a storage type; its name ("torch.IntStorage"). */
int tsim_storage_size(tsim_storage_type t);
const char *tsim_storage_name(tsim_storage_type t);

#endif
