/* The restricted unpickler (see pickle.h). A stack machine over the opcodes
 * torch.save emits (protocol 2, and the protocol 4 framing opcodes); the
 * stack holds pointers into an arena freed at once, so shared and even
 * cyclic references (memo) need no reference counting. */
#include "pickle.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memo slots a pickle may use (torch.save numbers them from 0). */
#define MEMO_MAX (1 << 22)
/* Marks on the stack at once. */
#define MARKS_MAX (1 << 16)

enum { CLS_ORDERED_DICT = 1, CLS_REBUILD_TENSOR, CLS_STORAGE };

static const struct {
    const char *name;
    tsim_storage_type t;
    int size;
} storages[] = {
    {"DoubleStorage", TSIM_ST_F8, 8}, {"FloatStorage", TSIM_ST_F4, 4}, {"HalfStorage", TSIM_ST_F2, 2},
    {"BFloat16Storage", TSIM_ST_BF16, 2}, {"LongStorage", TSIM_ST_I8, 8}, {"IntStorage", TSIM_ST_I4, 4},
    {"ShortStorage", TSIM_ST_I2, 2}, {"CharStorage", TSIM_ST_I1, 1}, {"ByteStorage", TSIM_ST_U1, 1},
    {"BoolStorage", TSIM_ST_BOOL, 1},
};
#define N_STORAGES (sizeof storages / sizeof storages[0])

int tsim_storage_size(tsim_storage_type t)
{
    for (size_t k = 0; k < N_STORAGES; k++)
        if (storages[k].t == t)
            return storages[k].size;
    return 1;
}

const char *tsim_storage_name(tsim_storage_type t)
{
    for (size_t k = 0; k < N_STORAGES; k++)
        if (storages[k].t == t)
            return storages[k].name;
    return "?";
}

const char *tsim_pk_kind_name(tsim_pk_kind k)
{
    static const char *const names[] = {"None", "bool", "int", "float", "str", "list", "tuple", "dict",
                                        "tensor", "storage", "class"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

typedef struct {
    const unsigned char *d;
    size_t len, p, op_at;
    const char *where;
    tsim_error *err;
    tsim_pickle *out;
    tsim_pk **stack;
    size_t sn, scap;
    size_t *marks;
    size_t mn, mcap;
    tsim_pk **memo;
    size_t memo_n;
} unpickler;

static int fail(unpickler *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(unpickler *u, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsim_error_set(u->err, TSIM_E_INPUT, "%s: pickle byte %zu: %s", u->where, u->op_at, msg);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

static tsim_pk *new_value(unpickler *u, tsim_pk_kind kind)
{
    tsim_pickle *o = u->out;
    if (grow((void **)&o->all, &o->cap_all, o->n_all + 1, sizeof *o->all))
        return NULL;
    tsim_pk *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->kind = kind;
    o->all[o->n_all++] = v;
    return v;
}

static int push(unpickler *u, tsim_pk *v)
{
    if (!v || grow((void **)&u->stack, &u->scap, u->sn + 1, sizeof *u->stack))
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    u->stack[u->sn++] = v;
    return 0;
}

static int push_new(unpickler *u, tsim_pk_kind kind, tsim_pk **v)
{
    *v = new_value(u, kind);
    return push(u, *v);
}

static int need_bytes(unpickler *u, size_t n)
{
    if (u->len - u->p < n)
        return fail(u, "the pickle ends inside an opcode (truncated?)");
    return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* Stack items above the topmost mark: their index, after popping the mark. */
static int pop_mark(unpickler *u, size_t *from)
{
    if (u->mn == 0)
        return fail(u, "no MARK on the stack");
    *from = u->marks[--u->mn];
    return 0;
}

static int add_item(unpickler *u, tsim_pk *c, tsim_pk *v)
{
    if (grow((void **)&c->items, &c->cap, c->n + 1, sizeof *c->items))
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    c->items[c->n++] = v;
    return 0;
}

static int set_item(unpickler *u, tsim_pk *d, tsim_pk *k, tsim_pk *v)
{
    if (d->kind != TSIM_PK_DICT)
        return fail(u, "SETITEM on a %s, not a dict", tsim_pk_kind_name(d->kind));
    if (grow((void **)&d->items, &d->cap, 2 * d->n + 2, sizeof *d->items))
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    d->items[2 * d->n] = k;
    d->items[2 * d->n + 1] = v;
    d->n++;
    return 0;
}

static int global(unpickler *u, const char *mod, const char *name)
{
    tsim_pk *c = NULL;
    int rc = push_new(u, TSIM_PK_CLASS, &c);
    if (rc)
        return rc;
    if (strcmp(mod, "collections") == 0 && strcmp(name, "OrderedDict") == 0) {
        c->i = CLS_ORDERED_DICT;
        return 0;
    }
    if (strcmp(mod, "torch._utils") == 0 && strcmp(name, "_rebuild_tensor_v2") == 0) {
        c->i = CLS_REBUILD_TENSOR;
        return 0;
    }
    if (strcmp(mod, "torch") == 0)
        for (size_t k = 0; k < N_STORAGES; k++)
            if (strcmp(name, storages[k].name) == 0) {
                c->i = CLS_STORAGE;
                c->st = storages[k].t;
                return 0;
            }
    return fail(u, "global '%.80s.%.80s' is not allowed: a .pt file may hold only tensors, numbers, strings, lists "
                   "and dicts (it is never run)",
                mod, name);
}

/* A text line for GLOBAL (module or name). */
static int read_line(unpickler *u, char *buf, size_t cap)
{
    const unsigned char *nl = memchr(u->d + u->p, '\n', u->len - u->p);
    if (!nl)
        return fail(u, "GLOBAL without a newline (truncated?)");
    size_t n = (size_t)(nl - (u->d + u->p));
    if (n >= cap)
        return fail(u, "GLOBAL name longer than %zu bytes", cap - 1);
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = u->d[u->p + k];
        buf[k] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
    }
    buf[n] = 0;
    u->p += n + 1;
    return 0;
}

static int int_arg(const tsim_pk *v, int64_t *out)
{
    if (v->kind != TSIM_PK_INT)
        return -1;
    *out = v->i;
    return 0;
}

/* (storage, offset, size, stride, requires_grad, hooks[, metadata]) */
static int rebuild_tensor(unpickler *u, const tsim_pk *args, tsim_pk **out)
{
    if (args->kind != TSIM_PK_TUPLE || args->n < 4 || args->items[0]->kind != TSIM_PK_STORAGE ||
        args->items[2]->kind != TSIM_PK_TUPLE || args->items[3]->kind != TSIM_PK_TUPLE)
        return fail(u, "_rebuild_tensor_v2 with arguments that are not (storage, offset, size, stride, ...)");
    const tsim_pk *size = args->items[2], *stride = args->items[3];
    if (size->n != stride->n || size->n > TSIM_PK_MAX_DIMS)
        return fail(u, "tensor with %zu sizes and %zu strides (at most %d dimensions)", size->n, stride->n,
                    TSIM_PK_MAX_DIMS);
    tsim_pk *t = new_value(u, TSIM_PK_TENSOR);
    if (!t)
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    t->storage = args->items[0];
    t->st = t->storage->st;
    if (int_arg(args->items[1], &t->offset) || t->offset < 0)
        return fail(u, "tensor storage offset is not a non-negative int");
    t->ndim = (int)size->n;
    for (int k = 0; k < t->ndim; k++)
        if (int_arg(size->items[k], &t->shape[k]) || int_arg(stride->items[k], &t->stride[k]) || t->shape[k] < 0 ||
            t->stride[k] < 0)
            return fail(u, "tensor size or stride %d is not a non-negative int", k);
    *out = t;
    return 0;
}

static int reduce(unpickler *u)
{
    if (u->sn < 2)
        return fail(u, "REDUCE on a stack of %zu items", u->sn);
    tsim_pk *args = u->stack[--u->sn], *fn = u->stack[--u->sn];
    if (fn->kind != TSIM_PK_CLASS || fn->i == CLS_STORAGE)
        return fail(u, "REDUCE calls a %s, not an allowed global", tsim_pk_kind_name(fn->kind));
    if (args->kind != TSIM_PK_TUPLE)
        return fail(u, "REDUCE with %s arguments, not a tuple", tsim_pk_kind_name(args->kind));
    tsim_pk *v = NULL;
    if (fn->i == CLS_ORDERED_DICT) {
        if (args->n != 0)
            return fail(u, "OrderedDict called with arguments");
        v = new_value(u, TSIM_PK_DICT);
    } else {
        int rc = rebuild_tensor(u, args, &v);
        if (rc)
            return rc;
    }
    return push(u, v);
}

/* ('storage', torch.XStorage, key, location, numel) */
static int persistent_load(unpickler *u)
{
    if (u->sn < 1)
        return fail(u, "BINPERSID on an empty stack");
    const tsim_pk *pid = u->stack[--u->sn];
    if (pid->kind != TSIM_PK_TUPLE || pid->n != 5 || pid->items[0]->kind != TSIM_PK_STR ||
        strcmp(pid->items[0]->s, "storage") != 0 || pid->items[1]->kind != TSIM_PK_CLASS ||
        pid->items[1]->i != CLS_STORAGE || pid->items[2]->kind != TSIM_PK_STR || pid->items[4]->kind != TSIM_PK_INT)
        return fail(u, "persistent id is not ('storage', torch.<type>Storage, key, location, size)");
    tsim_pk *s = NULL;
    int rc = push_new(u, TSIM_PK_STORAGE, &s);
    if (rc)
        return rc;
    s->st = pid->items[1]->st;
    s->s = pid->items[2]->s;
    s->len = pid->items[2]->len;
    s->numel = pid->items[4]->i;
    if (s->numel < 0)
        return fail(u, "storage of %lld elements", (long long)s->numel);
    return 0;
}

static const char *opcode_name(unsigned char op)
{
    static const struct {
        unsigned char op;
        const char *name;
    } names[] = {{'i', "INST"}, {'o', "OBJ"}, {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"}, {'b', "BUILD"},
                 {'P', "PERSID"}, {'I', "INT"}, {'L', "LONG"}, {'F', "FLOAT"}, {'S', "STRING"},
                 {'V', "UNICODE"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'B', "BINBYTES"},
                 {'C', "SHORT_BINBYTES"}, {0x8e, "BINBYTES8"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"},
                 {0x98, "READONLY_BUFFER"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {'g', "GET"},
                 {'p', "PUT"}, {'0', "POP"}, {'1', "DUP"}, {'2', "POP_MARK"}, {0x8b, "LONG4"},
                 {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {'d', "DICT"}, {'l', "LIST"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (names[k].op == op)
            return names[k].name;
    return NULL;
}

static int refuse_opcode(unpickler *u, unsigned char op)
{
    const char *name = opcode_name(op);
    if (name)
        return fail(u, "opcode %s (0x%02x) is not allowed in a .pt file", name, op);
    return fail(u, "unknown opcode 0x%02x", op);
}

static int memo_put(unpickler *u, uint64_t idx)
{
    if (u->sn == 0)
        return fail(u, "memo store from an empty stack");
    if (idx >= MEMO_MAX)
        return fail(u, "memo index %llu is above the limit of %d", (unsigned long long)idx, MEMO_MAX);
    if (idx >= u->memo_n) {
        size_t n = u->memo_n ? u->memo_n : 64;
        while (n <= idx)
            n *= 2;
        tsim_pk **m = realloc(u->memo, n * sizeof *m);
        if (!m)
            return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
        memset(m + u->memo_n, 0, (n - u->memo_n) * sizeof *m);
        u->memo = m;
        u->memo_n = n;
    }
    u->memo[idx] = u->stack[u->sn - 1];
    return 0;
}

static int memo_get(unpickler *u, uint64_t idx)
{
    if (idx >= u->memo_n || !u->memo[idx])
        return fail(u, "memo index %llu was never stored", (unsigned long long)idx);
    return push(u, u->memo[idx]);
}

static int string(unpickler *u, int width)
{
    int rc = need_bytes(u, (size_t)width);
    if (rc)
        return rc;
    uint64_t n = le(u->d + u->p, width);
    u->p += (size_t)width;
    if (n > u->len - u->p)
        return fail(u, "a string of %llu bytes runs past the end of the pickle", (unsigned long long)n);
    tsim_pk *v = NULL;
    if ((rc = push_new(u, TSIM_PK_STR, &v)))
        return rc;
    v->s = malloc((size_t)n + 1);
    if (!v->s)
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    memcpy(v->s, u->d + u->p, (size_t)n);
    v->s[n] = 0;
    v->len = (size_t)n;
    u->p += (size_t)n;
    return 0;
}

static int integer(unpickler *u, int width, bool is_signed)
{
    int rc = need_bytes(u, (size_t)width);
    if (rc)
        return rc;
    uint64_t raw = le(u->d + u->p, width);
    u->p += (size_t)width;
    tsim_pk *v = NULL;
    if ((rc = push_new(u, TSIM_PK_INT, &v)))
        return rc;
    if (is_signed && width < 8 && (raw >> (8 * width - 1)) & 1)
        raw |= ~UINT64_C(0) << (8 * width);
    v->i = (int64_t)raw;
    return 0;
}

/* LONG1: a little-endian two's complement integer of n bytes. */
static int long1(unpickler *u)
{
    int rc = need_bytes(u, 1);
    if (rc)
        return rc;
    int n = u->d[u->p++];
    if (n > 8)
        return fail(u, "an integer of %d bytes does not fit in 64 bits", n);
    if (n == 0) {
        tsim_pk *v = NULL;
        return push_new(u, TSIM_PK_INT, &v);
    }
    return integer(u, n, true);
}

static int sequence(unpickler *u, tsim_pk_kind kind, size_t count)
{
    size_t from = 0;
    if (count == SIZE_MAX) {
        int rc = pop_mark(u, &from);
        if (rc)
            return rc;
    } else {
        if (u->sn < count)
            return fail(u, "TUPLE%zu on a stack of %zu items", count, u->sn);
        from = u->sn - count;
    }
    tsim_pk *t = new_value(u, kind);
    if (!t)
        return tsim_error_set(u->err, TSIM_E_INTERNAL, "out of memory");
    for (size_t k = from; k < u->sn; k++)
        if (add_item(u, t, u->stack[k]))
            return TSIM_E_INTERNAL;
    u->sn = from;
    return push(u, t);
}

static int appends(unpickler *u, bool marked)
{
    size_t from = u->sn - (u->sn ? 1 : 0);
    if (marked) {
        int rc = pop_mark(u, &from);
        if (rc)
            return rc;
    }
    if (from == 0)
        return fail(u, "APPEND without a list");
    tsim_pk *list = u->stack[from - 1];
    if (list->kind != TSIM_PK_LIST)
        return fail(u, "APPEND to a %s, not a list", tsim_pk_kind_name(list->kind));
    for (size_t k = from; k < u->sn; k++)
        if (add_item(u, list, u->stack[k]))
            return TSIM_E_INTERNAL;
    u->sn = from;
    return 0;
}

static int setitems(unpickler *u, bool marked)
{
    size_t from = u->sn >= 2 ? u->sn - 2 : 0;
    if (marked) {
        int rc = pop_mark(u, &from);
        if (rc)
            return rc;
    }
    if (from == 0 || (u->sn - from) % 2)
        return fail(u, "SETITEMS without a dict or with an odd number of items");
    tsim_pk *d = u->stack[from - 1];
    for (size_t k = from; k < u->sn; k += 2) {
        int rc = set_item(u, d, u->stack[k], u->stack[k + 1]);
        if (rc)
            return rc;
    }
    u->sn = from;
    return 0;
}

static int stack_global(unpickler *u)
{
    if (u->sn < 2 || u->stack[u->sn - 1]->kind != TSIM_PK_STR || u->stack[u->sn - 2]->kind != TSIM_PK_STR)
        return fail(u, "STACK_GLOBAL without two strings on the stack");
    char mod[128], name[128];
    snprintf(mod, sizeof mod, "%s", u->stack[u->sn - 2]->s);
    snprintf(name, sizeof name, "%s", u->stack[u->sn - 1]->s);
    for (char *c = mod; *c; c++)
        *c = (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f ? '?' : *c;
    for (char *c = name; *c; c++)
        *c = (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f ? '?' : *c;
    u->sn -= 2;
    return global(u, mod, name);
}

static int step(unpickler *u, unsigned char op, bool *done)
{
    tsim_pk *v = NULL;
    int rc;
    char mod[128], name[128];
    switch (op) {
    case 0x80: /* PROTO */
        if ((rc = need_bytes(u, 1)))
            return rc;
        if (u->d[u->p] < 2 || u->d[u->p] > 5)
            return fail(u, "pickle protocol %d is not supported (2 to 5 are)", u->d[u->p]);
        u->p++;
        return 0;
    case 0x95: /* FRAME: framing only */
        if ((rc = need_bytes(u, 8)))
            return rc;
        u->p += 8;
        return 0;
    case '}': return push_new(u, TSIM_PK_DICT, &v);
    case ']': return push_new(u, TSIM_PK_LIST, &v);
    case ')': return push_new(u, TSIM_PK_TUPLE, &v);
    case 'N': return push_new(u, TSIM_PK_NONE, &v);
    case 0x88:
    case 0x89:
        if ((rc = push_new(u, TSIM_PK_BOOL, &v)))
            return rc;
        v->i = op == 0x88;
        return 0;
    case '(':
        if (u->mn >= MARKS_MAX || grow((void **)&u->marks, &u->mcap, u->mn + 1, sizeof *u->marks))
            return fail(u, "too many MARKs");
        u->marks[u->mn++] = u->sn;
        return 0;
    case 'q': if ((rc = need_bytes(u, 1))) return rc; u->p += 1; return memo_put(u, le(u->d + u->p - 1, 1));
    case 'r': if ((rc = need_bytes(u, 4))) return rc; u->p += 4; return memo_put(u, le(u->d + u->p - 4, 4));
    case 'h': if ((rc = need_bytes(u, 1))) return rc; u->p += 1; return memo_get(u, le(u->d + u->p - 1, 1));
    case 'j': if ((rc = need_bytes(u, 4))) return rc; u->p += 4; return memo_get(u, le(u->d + u->p - 4, 4));
    case 'X': return string(u, 4);
    case 0x8c: return string(u, 1);
    case 0x8d: return string(u, 8);
    case 'J': return integer(u, 4, true);
    case 'K': return integer(u, 1, false);
    case 'M': return integer(u, 2, false);
    case 0x8a: return long1(u);
    case 'G': {
        if ((rc = need_bytes(u, 8)))
            return rc;
        uint64_t bits = 0;
        for (int k = 0; k < 8; k++)
            bits = bits << 8 | u->d[u->p + (size_t)k];
        u->p += 8;
        if ((rc = push_new(u, TSIM_PK_FLOAT, &v)))
            return rc;
        memcpy(&v->f, &bits, sizeof v->f);
        return 0;
    }
    case 'a': return appends(u, false);
    case 'e': return appends(u, true);
    case 's': return setitems(u, false);
    case 'u': return setitems(u, true);
    case 't': return sequence(u, TSIM_PK_TUPLE, SIZE_MAX);
    case 0x85: return sequence(u, TSIM_PK_TUPLE, 1);
    case 0x86: return sequence(u, TSIM_PK_TUPLE, 2);
    case 0x87: return sequence(u, TSIM_PK_TUPLE, 3);
    case 'c':
        if ((rc = read_line(u, mod, sizeof mod)) || (rc = read_line(u, name, sizeof name)))
            return rc;
        return global(u, mod, name);
    case 0x93: return stack_global(u);
    case 'Q': return persistent_load(u);
    case 'R': return reduce(u);
    case '.':
        *done = true;
        return 0;
    default: return refuse_opcode(u, op);
    }
}

int tsim_pickle_load(tsim_pickle *out, const unsigned char *data, size_t len, const char *where, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    unpickler u = {.d = data, .len = len, .where = where, .err = err, .out = out};
    bool done = false;
    int rc = 0;
    size_t memoized = 0; /* MEMOIZE numbers its slots in order */
    while (!rc && !done) {
        if (u.p >= u.len) {
            u.op_at = u.p;
            rc = fail(&u, "the pickle ends without STOP (truncated?)");
            break;
        }
        u.op_at = u.p;
        unsigned char op = u.d[u.p++];
        if (op == 0x94)
            rc = memo_put(&u, memoized++);
        else
            rc = step(&u, op, &done);
    }
    if (!rc && u.sn != 1)
        rc = fail(&u, "STOP with %zu items on the stack, expected 1", u.sn);
    if (!rc && u.p != u.len)
        rc = fail(&u, "%zu bytes after STOP", u.len - u.p);
    if (!rc)
        out->root = u.stack[0];
    free(u.stack);
    free(u.marks);
    free(u.memo);
    if (rc)
        tsim_pickle_free(out);
    return rc;
}

void tsim_pickle_free(tsim_pickle *p)
{
    for (size_t k = 0; k < p->n_all; k++) {
        if (p->all[k]->kind == TSIM_PK_STR)
            free(p->all[k]->s);
        free(p->all[k]->items);
        free(p->all[k]);
    }
    free(p->all);
    memset(p, 0, sizeof *p);
}

const tsim_pk *tsim_pk_get(const tsim_pk *dict, const char *key)
{
    if (!dict || dict->kind != TSIM_PK_DICT)
        return NULL;
    for (size_t k = 0; k < dict->n; k++) {
        const tsim_pk *kk = dict->items[2 * k];
        if (kk->kind == TSIM_PK_STR && strcmp(kk->s, key) == 0)
            return dict->items[2 * k + 1];
    }
    return NULL;
}
