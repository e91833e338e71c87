#include "planner_procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TAG_NAME "TAOTSIM_PLANNER_TAG"

char **tsim_procs_tagged_environ(char *tag, size_t size, unsigned n)
{
    snprintf(tag, size, TAG_NAME "=%ld.%u", (long)getpid(), n);
    size_t count = 0;
    while (environ[count])
        count++;
    char **envp = malloc(sizeof *envp * (count + 2));
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], TAG_NAME "=", sizeof TAG_NAME) != 0)
            envp[k++] = environ[i];
    envp[k++] = tag;
    envp[k] = NULL;
    return envp;
}

/* Whether /proc/PID/environ holds the string tag (NUL-separated strings). */
static bool environ_has(const char *pid, const char *tag)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    for (ssize_t got = 1; buf && got > 0;) {
        if (len == cap) {
            char *grown = realloc(buf, 2 * cap + 1);
            if (!grown)
                break;
            buf = grown;
            cap *= 2;
        }
        got = read(fd, buf + len, cap - len);
        if (got > 0)
            len += (size_t)got;
    }
    close(fd);
    if (!buf)
        return false;
    buf[len] = '\0';
    bool found = false;
    for (size_t at = 0; at < len && !found; at += strlen(buf + at) + 1)
        found = strcmp(buf + at, tag) == 0;
    free(buf);
    return found;
}

/* In rounds: one may fork while the others are killed. */
int tsim_procs_kill_tagged(const char *tag, pid_t group)
{
    int killed = 0;
    const pid_t self = getpid();
    for (int round = 0; round < 8; round++) {
        DIR *proc = opendir("/proc");
        if (!proc)
            return killed;
        int now = 0;
        for (struct dirent *d; (d = readdir(proc));) {
            if (d->d_name[0] < '1' || d->d_name[0] > '9' || atol(d->d_name) == self ||
                !environ_has(d->d_name, tag))
                continue;
            pid_t pid = (pid_t)atol(d->d_name);
            /* read before the kill: a member of the group dies with it anyway */
            const bool in_group = group > 0 && getpgid(pid) == group;
            if (kill(pid, SIGKILL) != 0)
                continue;
            now++;
            killed += !in_group;
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ; /* ECHILD for one that is not (yet) taotsim's child */
        }
        closedir(proc);
        if (now == 0)
            break;
    }
    return killed;
}
