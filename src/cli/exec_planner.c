/* LABEL=exec:CMD: a planner in another process, speaking line-delimited JSON
 * on its standard input and output (docs/planner-protocol.md). One child per
 * configured planner in a session, so each study worker has its own. Every
 * failure kills the child's process group, reaps the child and comes back as
 * TSIM_E_INPUT naming the record and the problem. */
#define _GNU_SOURCE /* pipe2 */
#include "external.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "json_strict.h"
#include "plan.h"
#include "exec_planner.h"
#include "planner_procs.h"
#include "record.h"
#include "topology.h"

extern char **environ;

/* The process groups of the running planners, for the signal handler: a
 * taotsim ended by a signal takes its planners with it. Lock-free atomics,
 * so the handler may read them. */
#define LIVE_GROUPS 256
static _Atomic int live_groups[LIVE_GROUPS];

static void live_add(pid_t pgid)
{
    for (int i = 0; i < LIVE_GROUPS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&live_groups[i], &expected, (int)pgid))
            return;
    }
}

static void live_remove(pid_t pgid)
{
    for (int i = 0; i < LIVE_GROUPS; i++) {
        int expected = (int)pgid;
        if (atomic_compare_exchange_strong(&live_groups[i], &expected, 0))
            return;
    }
}

void tsim_exec_kill_all(void)
{
    for (int i = 0; i < LIVE_GROUPS; i++) {
        int pgid = atomic_load(&live_groups[i]);
        if (pgid > 0)
            kill(-pgid, SIGKILL);
    }
}


/* ---- the child's standard error, passed through with the label ---------- */

static void err_flush_line(exec_state *x)
{
    if (x->err_len == 0)
        return;
    fprintf(stderr, "[%s] %.*s\n", x->cfg->label, (int)x->err_len, x->err_line);
    x->err_len = 0;
}

static void err_take(exec_state *x, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            if (x->err_len == 0)
                fprintf(stderr, "[%s]\n", x->cfg->label);
            else
                err_flush_line(x);
            continue;
        }
        if (x->err_len == sizeof x->err_line)
            err_flush_line(x);
        x->err_line[x->err_len++] = buf[i];
    }
}

/* Reads what the child's standard error holds now; closes it at EOF. */
static void err_read(exec_state *x)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(x->child_err, buf, sizeof buf);
        if (n > 0) {
            err_take(x, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            err_flush_line(x);
            close(x->child_err);
            x->child_err = -1;
        }
        return;
    }
}

/* ---- the child's life ------------------------------------------------------ */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Waits up to ms for the child to exit, without reaping it: the zombie keeps
 * its process group id reserved until every member is killed. */
static bool child_exited(exec_state *x, int ms, siginfo_t *info)
{
    for (int waited = 0;; waited += 5) {
        memset(info, 0, sizeof *info);
        if (waitid(P_PID, (id_t)x->pid, info, WEXITED | WNOHANG | WNOWAIT) == 0 && info->si_pid == x->pid)
            return true;
        if (waited >= ms)
            return false;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Kills whatever is left of the child's process group and reaps all of it:
 * the shell, and (taotsim being their subreaper) the processes it started,
 * which would otherwise linger as zombies where nothing reaps orphans. */
static void child_reap(exec_state *x)
{
    if (x->pid <= 0)
        return;
    kill(-x->pid, SIGKILL);
    while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    live_remove(x->pid);
    /* every member is dying: this ends with ECHILD */
    while (waitpid(-x->pid, NULL, 0) > 0 || errno == EINTR)
        ;
    x->left_behind += tsim_procs_kill_tagged(x->tag, x->pid); /* and those that left the group */
    x->pid = 0;
}

/* After a failure: the child is killed, its last words on standard error are
 * passed on (briefly: a grandchild may hold the pipe open), all closed. */
static void child_abort(exec_state *x)
{
    close_fd(&x->to_child);
    child_reap(x);
    int64_t until = tsim_now_ns() + INT64_C(200) * 1000 * 1000;
    while (x->child_err >= 0) {
        int64_t left = (until - tsim_now_ns()) / 1000000;
        struct pollfd pfd = {x->child_err, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            break;
        err_read(x);
    }
    err_flush_line(x);
    close_fd(&x->child_err);
    close_fd(&x->from_child);
}

/* What became of a child whose pipe closed: "exited with status 3". */
static void describe_end(exec_state *x, char *out, size_t n)
{
    siginfo_t info;
    if (x->pid > 0 && child_exited(x, 1000, &info)) {
        if (info.si_code == CLD_EXITED && info.si_status > 128 && info.si_status < 128 + 65)
            /* what a shell reports for a command that a signal killed */
            snprintf(out, n, "the planner exited with status %d (signal %d: %s)", info.si_status,
                     info.si_status - 128, strsignal(info.si_status - 128));
        else if (info.si_code == CLD_EXITED)
            snprintf(out, n, "the planner exited with status %d%s", info.si_status,
                     info.si_status == 127 ? " (command not found?)" : "");
        else
            snprintf(out, n, "the planner was killed by signal %d (%s)", info.si_status, strsignal(info.si_status));
    } else {
        snprintf(out, n, "the planner closed its standard output");
    }
}

/* Every failure goes through here: the child is gone when it returns. */
static int fail(exec_state *x, tsim_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(exec_state *x, tsim_error *err, const char *fmt, ...)
{
    char msg[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    child_abort(x);
    return tsim_error_set(err, TSIM_E_INPUT, "%s", msg);
}

static int child_start(exec_state *x, tsim_error *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    /* The request channel is a socket so that writing to a dead child is
     * EPIPE (MSG_NOSIGNAL) rather than a SIGPIPE that would end taotsim.
     * Every descriptor is close-on-exec: a child started by another study
     * worker must not hold this child's pipes open. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
        pipe2(er, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]);
            close_fd(&out[i]);
            close_fd(&er[i]);
        }
        return tsim_error_set(err, TSIM_E_INPUT, "cannot create pipes for the planner: %s", strerror(e));
    }
#ifdef __linux__
    /* Orphans of the planner's shell come back to taotsim to be reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, er[1], STDERR_FILENO);
    posix_spawnattr_init(&attr);
    /* Its own process group, so that a shell's children die with it. */
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char sh[] = "sh", dash_c[] = "-c";
    char *argv[] = {sh, dash_c, (char *)x->cfg->target, NULL};
    pid_t pid = 0;
    static _Atomic unsigned next_tag;
    char **envp = tsim_procs_tagged_environ(x->tag, sizeof x->tag, atomic_fetch_add(&next_tag, 1) + 1);
    int rc = envp ? posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, envp) : ENOMEM;
    free(envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close_fd(&in[1]);
    close_fd(&out[1]);
    close_fd(&er[1]);
    if (rc != 0) {
        close_fd(&in[0]);
        close_fd(&out[0]);
        close_fd(&er[0]);
        return tsim_error_set(err, TSIM_E_INPUT, "cannot start /bin/sh: %s", strerror(rc));
    }
    x->pid = pid;
    live_add(pid);
    x->to_child = in[0];
    x->from_child = out[0];
    x->child_err = er[0];
    fcntl(x->to_child, F_SETFL, fcntl(x->to_child, F_GETFL) | O_NONBLOCK);
    fcntl(x->from_child, F_SETFL, fcntl(x->from_child, F_GETFL) | O_NONBLOCK);
    fcntl(x->child_err, F_SETFL, fcntl(x->child_err, F_GETFL) | O_NONBLOCK);
    return TSIM_OK;
}

/* ---- buffers ---------------------------------------------------------------- */

static int send_reserve(exec_state *x, size_t more, tsim_error *err)
{
    if (x->send_off > 0 && x->send_off == x->send_len)
        x->send_off = x->send_len = 0;
    if (x->send_len + more <= x->send_cap)
        return TSIM_OK;
    /* Moving the unsent bytes down pays only when they are fewer than those
     * already sent; otherwise the buffer grows (a window's worth of requests
     * would be moved once per record). */
    if (x->send_off > 0 && x->send_len - x->send_off <= x->send_off) {
        memmove(x->send, x->send + x->send_off, x->send_len - x->send_off);
        x->send_len -= x->send_off;
        x->send_off = 0;
        if (x->send_len + more <= x->send_cap)
            return TSIM_OK;
    }
    size_t cap = x->send_cap ? x->send_cap : 65536;
    while (cap < x->send_len + more)
        cap *= 2;
    char *grown = realloc(x->send, cap);
    if (!grown)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for planner requests");
    x->send = grown;
    x->send_cap = cap;
    return TSIM_OK;
}

/* Decimal digits of v at p (no NUL); returns the length. Two digits per
 * division: formatting the counts is most of taotsim's share of a request. */
static size_t put_i64(char *p, int64_t v)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                   "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                   "8081828384858687888990919293949596979899";
    char tmp[24];
    char *end = tmp + sizeof tmp, *q = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        const unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = pairs[d + 1];
        *--q = pairs[d];
    }
    if (u >= 10) {
        *--q = pairs[u * 2 + 1];
        *--q = pairs[u * 2];
    } else {
        *--q = (char)('0' + u);
    }
    size_t len = 0;
    if (v < 0)
        p[len++] = '-';
    memcpy(p + len, q, (size_t)(end - q));
    return len + (size_t)(end - q);
}

static int append_request(exec_state *x, const tsim_record *rec, uint64_t id, tsim_error *err)
{
    const size_t cells = (size_t)rec->ranks * (size_t)rec->experts;
    int rc = send_reserve(x, 160 + cells * 21 + (size_t)rec->ranks * 3, err);
    if (rc)
        return rc;
    char *p = x->send + x->send_len;
    p += sprintf(p, "{\"id\":%" PRIu64 ",\"record\":%lld,\"microbatch\":%lld,\"layer\":%lld,\"counts\":[", id,
                 (long long)rec->index, (long long)rec->microbatch, (long long)rec->layer);
    for (int r = 0; r < rec->ranks; r++) {
        *p++ = r ? ',' : '[';
        if (r)
            *p++ = '[';
        const int64_t *row = rec->counts + (size_t)r * (size_t)rec->experts;
        for (int e = 0; e < rec->experts; e++) {
            if (e)
                *p++ = ',';
            p += put_i64(p, row[e]);
        }
        *p++ = ']';
    }
    memcpy(p, "]}\n", 3);
    p += 3;
    x->send_len = (size_t)(p - x->send);
    return TSIM_OK;
}

/* ---- the exchange ------------------------------------------------------------ */

/* Writes what the child will take now, without waiting. */
static void send_some(exec_state *x)
{
    if (x->not_reading)
        x->send_off = x->send_len;
    while (x->send_off < x->send_len) {
        ssize_t n = send(x->to_child, x->send + x->send_off, x->send_len - x->send_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            x->send_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        /* EPIPE, ECONNRESET: it reads no more (it may have exited). Its
         * answers so far are still to be read; the end of its output then
         * says what happened, at the first record left unanswered. */
        x->not_reading = true;
        x->send_off = x->send_len;
    }
}

/* Reads what standard output holds now (out_eof at its end). */
static int read_some(exec_state *x, tsim_error *err)
{
    for (;;) {
        if (x->in_start > 0 && (x->in_start == x->in_len || x->in_cap - x->in_len < READ_CHUNK)) {
            memmove(x->in, x->in + x->in_start, x->in_len - x->in_start);
            x->in_len -= x->in_start;
            x->in_start = 0;
        }
        if (x->in_cap - x->in_len < READ_CHUNK) {
            size_t cap = x->in_cap ? 2 * x->in_cap : 2 * READ_CHUNK;
            char *grown = realloc(x->in, cap);
            if (!grown)
                return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for planner answers");
            x->in = grown;
            x->in_cap = cap;
        }
        ssize_t n = read(x->from_child, x->in + x->in_len, x->in_cap - x->in_len);
        if (n > 0) {
            x->in_len += (size_t)n;
            /* stop at the length limit: the caller reports a line too long */
            if (x->in_len - x->in_start > x->line_max)
                return TSIM_OK;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return TSIM_OK;
        x->out_eof = true;
        return TSIM_OK;
    }
}

/* The next line of the child's standard output, without its newline, valid
 * until the next call. Sends pending requests and passes standard error on
 * while it waits. On failure `why` says what happened (the child is still
 * there; the caller names the record and calls fail). */
static int next_line(exec_state *x, int64_t deadline, const char **line, size_t *len, char *why, size_t wn,
                     tsim_error *err)
{
    size_t scanned = 0;
    for (;;) {
        const size_t avail = x->in_len - x->in_start;
        char *start = x->in + x->in_start;
        char *nl = avail > scanned ? memchr(start + scanned, '\n', avail - scanned) : NULL;
        if (nl) {
            *line = start;
            *len = (size_t)(nl - start);
            x->in_start += *len + 1;
            if (*len > x->line_max)
                break;
            return TSIM_OK;
        }
        scanned = avail;
        if (avail > x->line_max)
            break;
        if (x->out_eof) {
            describe_end(x, why, wn);
            if (avail > 0)
                strncat(why, " in the middle of a line", wn - strlen(why) - 1);
            return TSIM_E_INPUT;
        }
        int64_t left_ms = (deadline - tsim_now_ns() + 999999) / 1000000;
        if (left_ms <= 0) {
            snprintf(why, wn, "no answer within %g s (--exec-timeout)", x->cfg->timeout_s);
            return TSIM_E_INPUT;
        }
        struct pollfd fds[3];
        int nfds = 0, at_in = -1, at_out = -1, at_err = -1;
        if (x->send_off < x->send_len && !x->not_reading) {
            at_in = nfds;
            fds[nfds++] = (struct pollfd){x->to_child, POLLOUT, 0};
        }
        at_out = nfds;
        fds[nfds++] = (struct pollfd){x->from_child, POLLIN, 0};
        if (x->child_err >= 0) {
            at_err = nfds;
            fds[nfds++] = (struct pollfd){x->child_err, POLLIN, 0};
        }
        int ready = poll(fds, (nfds_t)nfds, left_ms > INT32_MAX ? INT32_MAX : (int)left_ms);
        if (ready < 0 && errno != EINTR)
            return tsim_error_set(err, TSIM_E_INTERNAL, "poll: %s", strerror(errno));
        if (ready <= 0)
            continue;
        if (at_err >= 0 && fds[at_err].revents)
            err_read(x);
        if (at_in >= 0 && fds[at_in].revents)
            send_some(x);
        if (fds[at_out].revents) {
            int rc = read_some(x, err);
            if (rc)
                return rc;
        }
    }
    snprintf(why, wn, "an answer line longer than %zu bytes", x->line_max);
    return TSIM_E_INPUT;
}

/* Plans recs[0..n) with up to `window` records in flight. On failure *failed
 * is the batch position the message is about. */
static int exchange(exec_state *x, const tsim_record *const *recs, int n, tsim_plan *plans, int *failed,
                    tsim_error *err)
{
    if (x->pid <= 0)
        return tsim_error_set(err, TSIM_E_INPUT, "the planner is no longer running");
    if (n > x->answered_cap) {
        unsigned char *grown = realloc(x->answered, (size_t)n);
        if (!grown)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        x->answered = grown;
        x->answered_cap = n;
    }
    memset(x->answered, 0, (size_t)n);
    const uint64_t base = x->next_id;
    const int64_t timeout_ns = (int64_t)(x->cfg->timeout_s * 1e9);
    int sent = 0, got = 0, oldest = 0;
    int64_t deadline = tsim_now_ns() + timeout_ns;
    char why[TSIM_ERROR_MSG_MAX - 64];
    why[0] = '\0';
    while (got < n) {
        /* Each request leaves as soon as it is written, so the planner works
         * on the first while taotsim formats the next; ahead of a slow
         * planner at most SEND_AHEAD bytes wait here (a record of a huge
         * topology is megabytes). */
        for (; sent < n && sent - got < x->cfg->window && (sent == got || x->send_len - x->send_off < SEND_AHEAD);
             sent++) {
            int rc = append_request(x, recs[sent], base + (uint64_t)sent, err);
            if (rc) {
                child_abort(x);
                return rc;
            }
            x->next_id = base + (uint64_t)sent + 1;
            send_some(x);
        }
        const char *line = NULL;
        size_t len = 0;
        int rc = next_line(x, deadline, &line, &len, why, sizeof why, err);
        int which = oldest;
        if (rc == TSIM_OK)
            rc = exec_read_answer(x, line, len, base, sent, plans, &which, why, sizeof why);
        if (rc) {
            *failed = which;
            if (!why[0]) { /* taotsim's own trouble (memory, poll), already in err */
                child_abort(x);
                return rc;
            }
            return fail(x, err, "%s", why);
        }
        x->answered[which] = 1;
        got++;
        while (oldest < n && x->answered[oldest])
            oldest++;
        deadline = tsim_now_ns() + timeout_ns;
    }
    return TSIM_OK;
}

/* ---- the descriptor --------------------------------------------------------- */

static void exec_free(void *state);
static void running_add(exec_state *x);

static cJSON *handshake_json(const exec_state *x, const tsim_topology *topo, const tsim_planner_common *opts)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "protocol", "taotsim-planner");
    cJSON_AddNumberToObject(j, "version", PROTOCOL_VERSION);
    cJSON_AddStringToObject(j, "label", x->cfg->label);
    cJSON *t = cJSON_AddObjectToObject(j, "topology");
    cJSON_AddNumberToObject(t, "ranks", topo->ranks);
    cJSON_AddNumberToObject(t, "experts", topo->experts);
    cJSON_AddNumberToObject(t, "ranks_per_node", topo->ranks_per_node);
    cJSON_AddNumberToObject(t, "slots", topo->slots);
    cJSON_AddNumberToObject(t, "lambda_plan", opts->lambda_plan);
    cJSON *home = cJSON_AddArrayToObject(t, "home");
    for (int e = 0; home && e < topo->experts; e++)
        cJSON_AddItemToArray(home, cJSON_CreateNumber(topo->home[e]));
    cJSON *o = cJSON_AddObjectToObject(j, "options");
    for (int i = 0; o && i < x->cfg->n_options; i++)
        cJSON_AddStringToObject(o, x->cfg->keys[i], x->cfg->values[i]);
    return j;
}

/* The planner's first line: {"ok":true,"name":...} or {"ok":false,"error":...}. */
static int read_handshake(exec_state *x, const char *line, size_t len, tsim_error *err)
{
    tsim_json_fault fault = {0};
    char ex[96];
    exec_excerpt(line, len, ex, sizeof ex);
    cJSON *root = NULL;
    if (tsim_json_check_all(line, len, &fault) == (size_t)-1 || !(root = cJSON_ParseWithLength(line, len)) ||
        !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(x, err,
                    "handshake: expected {\"ok\":true,...} as the first line of the planner's standard output, got "
                    "'%s' (a planner writes only protocol lines there; logs go to standard error)",
                    ex);
    }
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(root, "ok");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
    int rc = TSIM_OK;
    if (cJSON_IsFalse(ok)) {
        rc = fail(x, err, "declined: %s", cJSON_IsString(error) ? error->valuestring : "(no \"error\" given)");
        err->declined = true;
    } else if (!cJSON_IsTrue(ok)) {
        rc = fail(x, err, "handshake: expected {\"ok\":true,...}, got '%s'", ex);
    } else if (version && !(cJSON_IsNumber(version) && version->valuedouble == PROTOCOL_VERSION)) {
        char shown[32] = "?";
        if (cJSON_IsNumber(version))
            snprintf(shown, sizeof shown, "%g", version->valuedouble);
        rc = fail(x, err, "handshake: the planner speaks protocol version %s; taotsim speaks %d", shown,
                  PROTOCOL_VERSION);
    } else if (cJSON_IsString(name)) {
        snprintf(x->name, sizeof x->name, "%s", name->valuestring);
    }
    cJSON_Delete(root);
    return rc;
}

static int exec_init(void **state, const tsim_topology *topo, const tsim_planner_common *opts, const void *own,
                     tsim_error *err)
{
    (void)own; /* an exec planner's options live in its configuration */
    const tsim_external_config *cfg = opts->external;
    exec_state *x = calloc(1, sizeof *x);
    if (!x)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    x->cfg = cfg;
    x->to_child = x->from_child = x->child_err = -1;
    x->R = topo->ranks;
    x->E = topo->experts;
    x->K = topo->slots;
    x->slots_per_rank = topo->experts_per_rank + topo->slots;
    /* The longest answer a valid plan needs (R*K replicas, an alloc entry per
     * source of each, a placement), with room for spaces: past it a line is
     * refused rather than read without end. */
    const size_t rk = (size_t)x->R * (size_t)(x->K > 0 ? x->K : 1);
    x->line_max = 1024 * 1024 + rk * 96 + rk * (size_t)x->R * 96 + (size_t)x->E * 16;
    x->slot_table = malloc(sizeof *x->slot_table * (size_t)x->R * (size_t)x->slots_per_rank + 1);
    if (!x->slot_table) {
        free(x);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    for (size_t i = 0; i < (size_t)x->R * (size_t)x->slots_per_rank; i++)
        x->slot_table[i] = -1;
    *state = x;
    int rc = child_start(x, err);
    if (rc) {
        exec_free(x);
        *state = NULL;
        return rc;
    }
    cJSON *hello = handshake_json(x, topo, opts);
    char *text = hello ? cJSON_PrintUnformatted(hello) : NULL;
    cJSON_Delete(hello);
    if (!text || send_reserve(x, strlen(text) + 1, err)) {
        free(text);
        child_abort(x);
        exec_free(x);
        *state = NULL;
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    size_t n = strlen(text);
    memcpy(x->send + x->send_len, text, n);
    x->send[x->send_len + n] = '\n';
    x->send_len += n + 1;
    free(text);
    char why[TSIM_ERROR_MSG_MAX - 64] = "";
    const char *line = NULL;
    size_t len = 0;
    send_some(x);
    rc = next_line(x, tsim_now_ns() + (int64_t)(cfg->timeout_s * 1e9), &line, &len, why, sizeof why, err);
    if (rc)
        rc = why[0] ? fail(x, err, "handshake: %s", why) : rc;
    else
        rc = read_handshake(x, line, len, err);
    if (rc) {
        child_abort(x);
        exec_free(x);
        *state = NULL;
        return rc;
    }
    running_add(x);
    return TSIM_OK;
}

static int exec_plan_batch(void *state, const tsim_record *const *recs, int n, tsim_plan *plans, tsim_error *err)
{
    exec_state *x = state;
    int failed = 0;
    int rc = exchange(x, recs, n, plans, &failed, err);
    /* "record N: ..." as plan_batch reports it (the session adds the planner) */
    if (rc)
        tsim_error_prefix(err, "record %lld", (long long)recs[failed]->index);
    return rc;
}

/* One record: the session names it in the message. */
static int exec_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    int failed = 0;
    return exchange(state, &rec, 1, out, &failed, err);
}

static int exec_window(const void *state)
{
    const exec_state *x = state;
    return x->cfg->window;
}

/* ---- the end of a run --------------------------------------------------------
 * After the last answer taotsim closes the planner's standard input; the
 * planner must then exit with status 0 and write nothing more. Anything else
 * is a failure of the run: the commands end every planner (tsim_external_finish)
 * before they write a file, and a planner that a study has already freed
 * leaves its failure here for them to find. */

static pthread_mutex_t ends_lock = PTHREAD_MUTEX_INITIALIZER;
static exec_state **running;        /* planners started and not yet ended */
static int n_running, cap_running;
static char late_failure[TSIM_ERROR_MSG_MAX]; /* the first failure at an end, "" when none */

static void running_add(exec_state *x)
{
    pthread_mutex_lock(&ends_lock);
    if (n_running == cap_running) {
        int cap = cap_running ? 2 * cap_running : 8;
        exec_state **grown = realloc(running, sizeof *grown * (size_t)cap);
        if (grown) {
            running = grown;
            cap_running = cap;
        }
    }
    if (n_running < cap_running)
        running[n_running++] = x;
    pthread_mutex_unlock(&ends_lock);
}

/* Takes x off the list; false when it was not there (ended already). */
static bool running_take(exec_state *x)
{
    bool found = false;
    pthread_mutex_lock(&ends_lock);
    for (int i = 0; i < n_running; i++)
        if (running[i] == x) {
            running[i] = running[--n_running];
            found = true;
            break;
        }
    pthread_mutex_unlock(&ends_lock);
    return found;
}

static void late_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void late_fail(const char *fmt, ...)
{
    pthread_mutex_lock(&ends_lock);
    if (!late_failure[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(late_failure, sizeof late_failure, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&ends_lock);
}

/* Reads the planner's output until it closes or the deadline; the first
 * line it writes after its last answer is a failure. */
static void drain_after_last(exec_state *x, int64_t deadline)
{
    bool reported = false, exited = false;
    while (x->from_child >= 0 || x->child_err >= 0) {
        int64_t left_ms = (deadline - tsim_now_ns()) / 1000000;
        if (left_ms <= 0)
            return;
        siginfo_t info;
        if (!exited && child_exited(x, 0, &info)) {
            /* The planner is gone; what still holds its pipes is something it
             * started and left behind (a daemon in a session of its own). */
            exited = true;
            kill(-x->pid, SIGKILL);
            x->left_behind += tsim_procs_kill_tagged(x->tag, x->pid);
        }
        if (!exited && left_ms > 20)
            left_ms = 20; /* look at the planner again soon */
        struct pollfd fds[2];
        int nfds = 0, at_err = -1, at_out = -1;
        if (x->from_child >= 0) {
            at_out = nfds;
            fds[nfds++] = (struct pollfd){x->from_child, POLLIN, 0};
        }
        if (x->child_err >= 0) {
            at_err = nfds;
            fds[nfds++] = (struct pollfd){x->child_err, POLLIN, 0};
        }
        if (poll(fds, (nfds_t)nfds, (int)(left_ms > INT32_MAX ? INT32_MAX : left_ms)) <= 0)
            continue;
        if (at_err >= 0 && fds[at_err].revents)
            err_read(x);
        if (at_out >= 0 && fds[at_out].revents) {
            char sink[4096], ex[96];
            ssize_t got = read(x->from_child, sink, sizeof sink);
            if (got > 0 && !reported) {
                size_t shown = (size_t)got;
                while (shown > 0 && (sink[shown - 1] == '\n' || sink[shown - 1] == '\r'))
                    shown--;
                exec_excerpt(sink, shown, ex, sizeof ex);
                late_fail("planner '%s': it wrote after its last answer, when its standard input had closed: '%s'",
                          x->cfg->label, ex);
                reported = true;
            }
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
                close_fd(&x->from_child);
        }
    }
}

/* Closes standard input, waits for the planner to exit, reaps it. */
static void exec_end(exec_state *x)
{
    if (x->pid <= 0)
        return;
    close_fd(&x->to_child);
    const int64_t deadline = tsim_now_ns() + (int64_t)(x->cfg->timeout_s * 1e9);
    drain_after_last(x, deadline);
    siginfo_t info;
    int64_t left_ms = (deadline - tsim_now_ns()) / 1000000;
    if (child_exited(x, left_ms > 0 ? (int)left_ms : 0, &info)) {
        if (info.si_code == CLD_EXITED && info.si_status != 0)
            late_fail("planner '%s': it exited with status %d after its last answer (a planner exits with 0 when "
                      "its standard input closes)", x->cfg->label, info.si_status);
        else if (info.si_code != CLD_EXITED)
            late_fail("planner '%s': it was killed by signal %d (%s) after its last answer", x->cfg->label,
                      info.si_status, strsignal(info.si_status));
    } else {
        fprintf(stderr, "taotsim: planner '%s' did not exit within %g s of its standard input closing; killed\n",
                x->cfg->label, x->cfg->timeout_s);
    }
    child_reap(x);
    /* Said once, after the last sweep: which sweep met a straggler first
     * (the one above, as the pipes stay open, or child_reap's) is a race,
     * the count of them is not. */
    if (x->left_behind > 0)
        fprintf(stderr, "taotsim: planner '%s' left %d process%s running after it exited; killed\n",
                x->cfg->label, x->left_behind, x->left_behind == 1 ? "" : "es");
    err_flush_line(x);
}

int tsim_exec_finish_all(tsim_error *err)
{
    for (;;) {
        pthread_mutex_lock(&ends_lock);
        exec_state *x = n_running ? running[--n_running] : NULL;
        pthread_mutex_unlock(&ends_lock);
        if (!x)
            break;
        exec_end(x);
    }
    pthread_mutex_lock(&ends_lock);
    int rc = late_failure[0] ? tsim_error_set(err, TSIM_E_INPUT, "%s", late_failure) : TSIM_OK;
    late_failure[0] = '\0';
    pthread_mutex_unlock(&ends_lock);
    return rc;
}

static void exec_free(void *state)
{
    exec_state *x = state;
    if (!x)
        return;
    if (running_take(x))
        exec_end(x);
    else
        child_reap(x); /* a failed start; an ended planner has no pid left */
    err_flush_line(x);
    close_fd(&x->to_child);
    close_fd(&x->from_child);
    close_fd(&x->child_err);
    free(x->send);
    free(x->in);
    free(x->answered);
    free(x->slot_table);
    free(x);
}

/* An exec planner's options: the --LABEL-KEY=VALUE texts it is handed. */
static void exec_options_each(const tsim_planner_common *common, tsim_option_visit fn, void *ctx)
{
    const tsim_external_config *cfg = common->external;
    for (int i = 0; cfg && i < cfg->n_options; i++) {
        tsim_option_value v = {.spec = &(const tsim_option_spec){.name = cfg->keys[i], .type = TSIM_OPTION_STRING},
                               .value = cfg->values[i]};
        snprintf(v.key, sizeof v.key, "%s", cfg->keys[i]);
        fn(&v, ctx);
    }
}

void tsim_exec_describe(tsim_planner_desc *d)
{
    *d = (tsim_planner_desc){
        .summary = "an external planner over a pipe (docs/planner-protocol.md)",
        .init = exec_init,
        .plan = exec_plan,
        .free = exec_free,
        .plan_batch = exec_plan_batch,
        .window = exec_window,
        .external = true,
        /* nothing is known of what it remembers: every record, in order */
        .state = TSIM_STATE_EVERY_RECORD,
        .reads_lambda_plan = true,
        .options_each = exec_options_each,
    };
}
