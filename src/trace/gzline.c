#include "gzline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "crc32_fast.h"
#include "fdio.h"

#define INITIAL_CAP ((size_t)256 << 10)
#define IN_CAP ((size_t)128 << 10)

static int fail(tsim_gzline *s, long line, tsim_error *err, const char *what, const char *detail)
{
    if (detail)
        return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: %s: %s", s->path, line, what, detail);
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: %s", s->path, line, what);
}

int tsim_gzline_open(tsim_gzline *s, const char *path, bool gz, size_t max_line, tsim_error *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->fd = -1;
    s->max_line = max_line ? max_line : TSIM_GZLINE_DEFAULT_MAX;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot read: it is a directory", path);
    }
    s->file_size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;

    /* The name decides the format; say so when the content disagrees. */
    unsigned char magic[2] = {0, 0};
    ssize_t got = pread(fd, magic, sizeof magic, 0);
    bool is_gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gz && !is_gzip && S_ISREG(st.st_mode)) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT, "%s:1: not a gzip file, though its name ends in .gz", path);
    }
    if (!gz && is_gzip) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:1: the file is gzip-compressed; name it with a .gz suffix to read it", path);
    }

    s->cap = INITIAL_CAP;
    if (s->cap > s->max_line + 2)
        s->cap = s->max_line + 2;
    s->buf = malloc(s->cap);
    if (!s->buf) {
        close(fd);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    s->fd = fd;
    if (gz) {
        /* Our own inflate loop rather than gzread: gzread silently ignores
         * bytes after the last gzip member, which would hide a damaged file. */
        z_stream *zs = calloc(1, sizeof *zs);
        s->in = malloc(IN_CAP);
        if (!zs || !s->in || inflateInit2(zs, 15 + 16) != Z_OK) {
            free(zs);
            free(s->in);
            free(s->buf);
            s->in = NULL;
            s->buf = NULL;
            close(fd);
            s->fd = -1;
            return tsim_error_set(err, TSIM_E_INTERNAL, "%s: zlib could not start", path);
        }
        s->gz = zs;
    }
    return TSIM_OK;
}

/* Refills the compressed input buffer when it is empty. */
static int read_compressed(tsim_gzline *s, z_stream *zs, tsim_error *err)
{
    if (zs->avail_in > 0 || s->in_eof)
        return TSIM_OK;
    ssize_t n = tsim_read_some(s->fd, s->in, IN_CAP);
    if (n < 0)
        return fail(s, s->line + 1, err, "read error", strerror(errno));
    if (n == 0)
        s->in_eof = true;
    zs->next_in = s->in;
    zs->avail_in = (uInt)n;
    s->in_read += n;
    return TSIM_OK;
}

static bool take_over(tsim_gzline *s, int64_t off);

/* Refills the input buffer so it starts at the member that starts here:
 * every member is then fed to zlib in the same pieces however the file was
 * reached (from its start, a seek, or the member threads handing a damaged
 * member back), so the lines handed out before an error are the same. */
static int align_input(tsim_gzline *s, z_stream *zs, tsim_error *err)
{
    size_t have = zs->avail_in;
    memmove(s->in, zs->next_in, have);
    zs->next_in = s->in;
    if (!s->in_eof && have < IN_CAP) {
        size_t n = tsim_read_full(s->fd, s->in + have, IN_CAP - have);
        have += n;
        s->in_read += (int64_t)n;
        if (have < IN_CAP && errno)
            return fail(s, s->line + 1, err, "read error", strerror(errno));
        if (have < IN_CAP)
            s->in_eof = true;
    }
    zs->avail_in = (uInt)have;
    return TSIM_OK;
}

/* At the end of a gzip member: the end of the file, another member (reset
 * the stream, or hand the rest to the member threads) or an error. Sets
 * *stop when fill_gzip should return. */
static int after_member(tsim_gzline *s, z_stream *zs, size_t produced, bool *stop, tsim_error *err)
{
    int rc = read_compressed(s, zs, err);
    if (rc)
        return rc;
    *stop = true;
    if (zs->avail_in == 0 && s->in_eof) {
        if (produced == 0)
            s->eof = true;
        return TSIM_OK;
    }
    if (zs->next_in[0] != 0x1f || (zs->avail_in > 1 && zs->next_in[1] != 0x8b)) {
        /* the member's lines first (its CRC passed), then the error: so the
         * member threads, which see the garbage after serving them, agree */
        if (produced > 0)
            return TSIM_OK;
        char where[96];
        snprintf(where, sizeof where, "at compressed byte %lld", (long long)(s->in_read - (int64_t)zs->avail_in));
        return fail(s, s->line + 1, err, "data after the end of the gzip stream", where);
    }
    if (take_over(s, s->in_read - (int64_t)zs->avail_in))
        return TSIM_OK; /* the next fill serves inflated members */
    inflateReset(zs); /* another gzip member follows */
    *stop = produced > 0;
    return align_input(s, zs, err);
}

/* Inflates at least one byte into buf (or reaches the end, or hands over to
 * the member threads). Concatenated gzip members are read in turn; anything
 * else after a member is an error. */
static int fill_gzip(tsim_gzline *s, size_t room, tsim_error *err)
{
    z_stream *zs = s->gz;
    if (room > (size_t)UINT_MAX)
        room = UINT_MAX;
    bool ended = s->resume_at_end; /* the member threads stopped at a member end */
    s->resume_at_end = false;
    for (;;) {
        size_t produced = 0;
        int zrc = Z_STREAM_END;
        if (!ended) {
            int rc = read_compressed(s, zs, err);
            if (rc)
                return rc;
            zs->next_out = (Bytef *)(s->buf + s->end);
            zs->avail_out = (uInt)room;
            zrc = inflate(zs, Z_NO_FLUSH);
            produced = room - zs->avail_out;
            s->end += produced;
        }
        ended = false;
        if (zrc == Z_STREAM_END) {
            bool stop = false;
            int rc = after_member(s, zs, produced, &stop, err);
            if (rc || stop)
                return rc;
        } else if (zrc == Z_BUF_ERROR || (zrc == Z_OK && produced == 0 && zs->avail_in == 0 && s->in_eof)) {
            if (produced)
                return TSIM_OK;
            if (zs->avail_in == 0 && s->in_eof)
                return fail(s, s->line + 1, err, "truncated gzip file (the compressed data ends early)", NULL);
        } else if (zrc != Z_OK) {
            return fail(s, s->line + 1, err, "corrupt gzip data", zs->msg ? zs->msg : "inflate failed");
        }
        if (produced)
            return TSIM_OK;
    }
}

static int fill_members(tsim_gzline *s, size_t room, tsim_error *err);

/* Reads more bytes after s->end. Returns 0, or an error status. */
static int fill(tsim_gzline *s, tsim_error *err)
{
    size_t room = s->cap - s->end - 1; /* one byte kept for the NUL */
    if (room > (size_t)INT_MAX)
        room = (size_t)INT_MAX;
    if (s->gz)
        return s->mactive ? fill_members(s, room, err) : fill_gzip(s, room, err);
    ssize_t n = tsim_read_some(s->fd, s->buf + s->end, room);
    if (n < 0)
        return fail(s, s->line + 1, err, "read error", strerror(errno));
    if (n == 0)
        s->eof = true;
    s->end += (size_t)n;
    return TSIM_OK;
}

/* Lines are handed out as C strings: a NUL inside one would silently cut it
 * short (a line starting with NUL would even pass as blank), so it is an
 * error at its line and column. */
static bool has_nul(const tsim_gzline *s, const char *line, size_t n, tsim_error *err)
{
    const char *z = memchr(line, '\0', n);
    if (!z)
        return false;
    tsim_error_set(err, TSIM_E_INPUT, "%s:%ld:%ld: NUL byte (text has none: is the file binary or damaged?)", s->path,
                   s->line + 1, (long)(z - line) + 1);
    return true;
}

int tsim_gzline_next(tsim_gzline *s, char **line, size_t *len, tsim_error *err)
{
    for (;;) {
        size_t avail = s->end - s->start;
        char *from = s->buf + s->start;
        char *nl = avail > s->scan ? memchr(from + s->scan, '\n', avail - s->scan) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - from);
            if (n > s->max_line)
                break;
            if (has_nul(s, from, n, err))
                return TSIM_E_INPUT;
            *nl = '\0';
            *line = from;
            *len = n;
            s->start += n + 1;
            s->scan = 0;
            s->line++;
            s->bytes += (int64_t)n + 1;
            return 1;
        }
        s->scan = avail;
        if (avail > s->max_line)
            break;
        if (s->eof) {
            if (avail == 0)
                return 0;
            /* A last line without a newline. */
            if (has_nul(s, from, avail, err))
                return TSIM_E_INPUT;
            from[avail] = '\0';
            *line = from;
            *len = avail;
            s->start = s->end;
            s->scan = 0;
            s->line++;
            s->bytes += (int64_t)avail;
            return 1;
        }
        if (s->start > 0) {
            memmove(s->buf, from, avail);
            s->start = 0;
            s->end = avail;
        }
        if (s->end + 1 >= s->cap) {
            size_t cap = s->cap * 2;
            if (cap > s->max_line + 2)
                cap = s->max_line + 2;
            char *p = realloc(s->buf, cap);
            if (!p)
                return tsim_error_set(err, TSIM_E_INTERNAL, "%s:%ld: out of memory for a %zu-byte line", s->path,
                                      s->line + 1, cap);
            s->buf = p;
            s->cap = cap;
        }
        int rc = fill(s, err);
        if (rc)
            return rc;
    }
    return tsim_error_set(err, TSIM_E_INPUT, "%s:%ld: line is longer than the limit of %zu bytes", s->path, s->line + 1,
                          s->max_line);
}

static void drop_members(tsim_gzline *s);

int tsim_gzline_seek(tsim_gzline *s, int64_t offset, long line, tsim_error *err)
{
    drop_members(s);
    if (lseek(s->fd, (off_t)offset, SEEK_SET) != (off_t)offset)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot seek to byte %lld: %s", s->path, (long long)offset,
                              strerror(errno));
    s->start = s->end = s->scan = 0;
    s->eof = false;
    s->line = line - 1;
    s->bytes = s->gz ? 0 : offset;
    if (s->gz) {
        z_stream *zs = s->gz;
        inflateReset(zs);
        zs->next_in = s->in;
        zs->avail_in = 0;
        s->in_eof = false;
        s->in_read = offset;
    }
    return TSIM_OK;
}

static int64_t member_offset(const tsim_gzline *s);

int64_t tsim_gzline_offset(const tsim_gzline *s)
{
    if (s->gz)
        return s->mactive ? member_offset(s) : s->in_read - (int64_t)((z_stream *)s->gz)->avail_in;
    return s->bytes;
}

void tsim_gzline_close(tsim_gzline *s)
{
    tsim_gzline_members_stop(s);
    if (s->gz) {
        inflateEnd(s->gz);
        free(s->gz);
    }
    if (s->fd >= 0)
        close(s->fd);
    free(s->in);
    free(s->buf);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* ---- parallel inflation of members that carry their length -------------
 *
 * The reading thread reads whole members (it knows each one's length from
 * its header) into a ring of slots; helpers inflate any waiting slot into the
 * slot's own text buffer, checking CRC-32 and length; the reading thread
 * serves text from the oldest slot, inflating it itself when no helper took
 * it yet. A member that does not inflate cleanly, or bytes after a member
 * that are not a member with the subfield, hand the file back to the
 * one-thread path at that offset, which then reads (or fails) exactly as it
 * does on its own. */

/* Members longer than this, or with more text, stay on the one-thread path. */
#define MEMBER_MAX ((size_t)1 << 30)

enum { MEM_FREE = 0, MEM_PENDING, MEM_TAKEN, MEM_DONE, MEM_BAD };

typedef struct {
    int state;
    int64_t offset;   /* where the member starts in the file */
    unsigned char *z; /* the whole member, header to trailer */
    size_t zlen, zcap;
    char *text; /* its text, once inflated */
    size_t tlen, tcap;
    z_stream zs; /* raw inflate, set up on first use */
    bool zs_ready;
} gz_member;

struct tsim_gzmembers {
    gz_member *m;
    int64_t cap, head, tail;
    int64_t next_off; /* where the next member to read starts */
    bool queue_end;   /* no member after tail: the file ends at next_off (at_eof) or the one-thread path resumes there */
    bool at_eof;
    int pending;     /* slots waiting for a helper; read without the lock */
    gz_member *cur;  /* the member whose text is being served */
    size_t cur_pos;
    int64_t done_off; /* end of the member being served, for progress */
    int64_t given_back; /* the one-thread path reads the member here itself */
    pthread_mutex_t lock;
    pthread_cond_t done; /* a helper finished a member */
    void (*wake)(void *);
    void *wake_arg;
};

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The total length of the member at off if its header is exactly taotsim's
 * (FEXTRA with the one subfield, nothing else optional), else 0; *eof tells
 * whether the file ends at off. */
static size_t member_length(int fd, int64_t off, bool *eof)
{
    unsigned char h[TSIM_GZ_MEMBER_HEADER];
    unsigned char one;
    *eof = pread(fd, &one, 1, (off_t)off) == 0;
    if (*eof || tsim_pread_full(fd, h, sizeof h, off) != sizeof h)
        return 0;
    if (h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3] != 4 || h[10] != 8 || h[11] != 0 ||
        h[12] != TSIM_GZ_SUBFIELD_ID1 || h[13] != TSIM_GZ_SUBFIELD_ID2 || h[14] != 4 || h[15] != 0)
        return 0;
    size_t len = le32(h + 16);
    return len >= TSIM_GZ_MEMBER_HEADER + 8 && len <= MEMBER_MAX ? len : 0;
}

/* At a member end on the one-thread path: continue with the member threads
 * if they are started and the next member carries its length. */
static bool take_over(tsim_gzline *s, int64_t off)
{
    struct tsim_gzmembers *ms = s->mem;
    bool eof;
    if (!ms || off == ms->given_back || !member_length(s->fd, off, &eof))
        return false;
    ms->next_off = ms->done_off = off;
    ms->queue_end = ms->at_eof = false;
    s->mactive = true;
    return true;
}

/* Inflates a whole member into its text buffer; MEM_DONE only if the deflate
 * data ends exactly before the trailer and CRC-32 and length match it. */
static int inflate_member(gz_member *m)
{
    const size_t data_end = m->zlen - 8;
    const uint32_t crc = le32(m->z + data_end), isize = le32(m->z + data_end + 4);
    if (isize > MEMBER_MAX)
        return MEM_BAD;
    if (isize + 1 > m->tcap) {
        char *p = realloc(m->text, (size_t)isize + 1);
        if (!p)
            return MEM_BAD;
        m->text = p;
        m->tcap = (size_t)isize + 1;
    }
    if (!m->zs_ready) {
        memset(&m->zs, 0, sizeof m->zs);
        if (inflateInit2(&m->zs, -15) != Z_OK)
            return MEM_BAD;
        m->zs_ready = true;
    } else {
        inflateReset(&m->zs);
    }
    m->zs.next_in = m->z + TSIM_GZ_MEMBER_HEADER;
    m->zs.avail_in = (uInt)(data_end - TSIM_GZ_MEMBER_HEADER);
    m->zs.next_out = (Bytef *)m->text;
    m->zs.avail_out = (uInt)isize;
    int zrc = inflate(&m->zs, Z_FINISH);
    if (zrc != Z_STREAM_END || m->zs.avail_in != 0 || m->zs.avail_out != 0)
        return MEM_BAD;
    if (tsim_crc32(0, (const unsigned char *)m->text, isize) != crc)
        return MEM_BAD;
    m->tlen = isize;
    return MEM_DONE;
}

/* Reads members into every free slot (reading thread) and wakes helpers. */
static void top_up(tsim_gzline *s, struct tsim_gzmembers *ms)
{
    int queued = 0;
    while (!ms->queue_end && ms->tail - ms->head < ms->cap) {
        gz_member *m = &ms->m[ms->tail % ms->cap];
        size_t len = member_length(s->fd, ms->next_off, &ms->at_eof);
        if (len && len > m->zcap) {
            unsigned char *p = realloc(m->z, len);
            if (p) {
                m->z = p;
                m->zcap = len;
            }
        }
        if (!len || len > m->zcap || tsim_pread_full(s->fd, m->z, len, ms->next_off) != len) {
            ms->queue_end = true; /* the one-thread path takes it from here */
            break;
        }
        m->zlen = len;
        m->offset = ms->next_off;
        ms->next_off += (int64_t)len;
        pthread_mutex_lock(&ms->lock);
        m->state = MEM_PENDING;
        ms->tail++;
        __atomic_add_fetch(&ms->pending, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&ms->lock);
        queued++;
    }
    if (queued && ms->wake)
        ms->wake(ms->wake_arg);
}

/* Under the lock: marks the oldest waiting slot taken; NULL if none. */
static gz_member *take_member(struct tsim_gzmembers *ms)
{
    for (int64_t q = ms->head; q < ms->tail; q++) {
        gz_member *m = &ms->m[q % ms->cap];
        if (m->state == MEM_PENDING) {
            m->state = MEM_TAKEN;
            __atomic_sub_fetch(&ms->pending, 1, __ATOMIC_RELAXED);
            return m;
        }
    }
    return NULL;
}

/* Empties the ring (after the helpers finish what they took) and returns
 * the file to the one-thread path. */
static void drop_members(tsim_gzline *s)
{
    struct tsim_gzmembers *ms = s->mem;
    s->mactive = false;
    s->resume_at_end = false;
    if (!ms)
        return;
    pthread_mutex_lock(&ms->lock);
    for (int64_t q = ms->head; q < ms->tail; q++) {
        gz_member *m = &ms->m[q % ms->cap];
        while (m->state == MEM_TAKEN)
            pthread_cond_wait(&ms->done, &ms->lock);
        if (m->state == MEM_PENDING)
            __atomic_sub_fetch(&ms->pending, 1, __ATOMIC_RELAXED);
        m->state = MEM_FREE;
    }
    ms->head = ms->tail;
    ms->cur = NULL;
    ms->given_back = -1;
    pthread_mutex_unlock(&ms->lock);
}

/* Hands the file back to the one-thread path at off, just after a member
 * end (or at a member start, which reads the same): what it does there is
 * what it would have done reading alone. */
static int resume_one_thread(tsim_gzline *s, int64_t off, tsim_error *err)
{
    drop_members(s);
    s->mem->given_back = off;
    if (lseek(s->fd, (off_t)off, SEEK_SET) != (off_t)off)
        return fail(s, s->line + 1, err, "read error", strerror(errno));
    z_stream *zs = s->gz;
    zs->next_in = s->in;
    zs->avail_in = 0;
    s->in_eof = false;
    s->in_read = off;
    s->resume_at_end = true;
    return TSIM_OK;
}

/* Serves text from inflated members (reading thread). Returns with bytes
 * added, the end of the file, or the one-thread path set to resume. */
static int fill_members(tsim_gzline *s, size_t room, tsim_error *err)
{
    struct tsim_gzmembers *ms = s->mem;
    for (;;) {
        gz_member *m = ms->cur;
        if (m && ms->cur_pos < m->tlen) {
            size_t n = m->tlen - ms->cur_pos < room ? m->tlen - ms->cur_pos : room;
            memcpy(s->buf + s->end, m->text + ms->cur_pos, n);
            s->end += n;
            ms->cur_pos += n;
            return TSIM_OK;
        }
        if (m) {
            pthread_mutex_lock(&ms->lock);
            m->state = MEM_FREE;
            ms->head++;
            pthread_mutex_unlock(&ms->lock);
            ms->cur = NULL;
        }
        top_up(s, ms);
        if (ms->head == ms->tail) {
            if (!ms->at_eof)
                return resume_one_thread(s, ms->next_off, err);
            s->eof = true;
            return TSIM_OK;
        }
        m = &ms->m[ms->head % ms->cap];
        pthread_mutex_lock(&ms->lock);
        if (m->state == MEM_PENDING) {
            /* no helper took it yet: inflate it here rather than wait */
            m->state = MEM_TAKEN;
            __atomic_sub_fetch(&ms->pending, 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&ms->lock);
            int state = inflate_member(m);
            pthread_mutex_lock(&ms->lock);
            m->state = state;
        }
        while (m->state == MEM_TAKEN)
            pthread_cond_wait(&ms->done, &ms->lock);
        pthread_mutex_unlock(&ms->lock);
        if (m->state == MEM_BAD)
            return resume_one_thread(s, m->offset, err);
        ms->cur = m;
        ms->cur_pos = 0;
        ms->done_off = m->offset + (int64_t)m->zlen;
    }
}

static int64_t member_offset(const tsim_gzline *s)
{
    return s->mem->done_off;
}

bool tsim_gzline_has_work(const tsim_gzline *s)
{
    return s->mem && __atomic_load_n(&s->mem->pending, __ATOMIC_ACQUIRE) > 0;
}

bool tsim_gzline_help(tsim_gzline *s)
{
    struct tsim_gzmembers *ms = s->mem;
    if (!tsim_gzline_has_work(s))
        return false;
    pthread_mutex_lock(&ms->lock);
    gz_member *m = take_member(ms);
    pthread_mutex_unlock(&ms->lock);
    if (!m)
        return false;
    int state = inflate_member(m);
    pthread_mutex_lock(&ms->lock);
    m->state = state;
    pthread_cond_broadcast(&ms->done);
    pthread_mutex_unlock(&ms->lock);
    return true;
}

int tsim_gzline_members_start(tsim_gzline *s, int slots, void (*wake)(void *), void *arg, tsim_error *err)
{
    if (!s->gz || s->mem || s->file_size <= 0)
        return TSIM_OK;
    struct tsim_gzmembers *ms = calloc(1, sizeof *ms);
    if (ms)
        ms->m = calloc((size_t)(slots < 2 ? 2 : slots), sizeof *ms->m);
    if (!ms || !ms->m) {
        free(ms);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for the inflating threads");
    }
    ms->cap = slots < 2 ? 2 : slots;
    ms->given_back = -1;
    ms->wake = wake;
    ms->wake_arg = arg;
    pthread_mutex_init(&ms->lock, NULL);
    pthread_cond_init(&ms->done, NULL);
    s->mem = ms;
    return TSIM_OK;
}

void tsim_gzline_members_stop(tsim_gzline *s)
{
    struct tsim_gzmembers *ms = s->mem;
    if (!ms)
        return;
    drop_members(s);
    for (int64_t i = 0; i < ms->cap; i++) {
        if (ms->m[i].zs_ready)
            inflateEnd(&ms->m[i].zs);
        free(ms->m[i].z);
        free(ms->m[i].text);
    }
    pthread_mutex_destroy(&ms->lock);
    pthread_cond_destroy(&ms->done);
    free(ms->m);
    free(ms);
    s->mem = NULL;
}
