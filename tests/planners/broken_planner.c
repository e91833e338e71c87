/* A deliberately broken exec planner for the protocol tests (issue 12): each
 * MODE breaks the protocol one way. `broken_planner MODE PIDFILE` writes its
 * pid (and a grandchild's, for hang-with-child and setsid-child(-quiet), whose
 * grandchild leaves the process group) to PIDFILE first, so a test
 * can check that taotsim left no process behind ("options" appends the
 * handshake line it received there). Plans, where it makes any,
 * are empty or put expert 0 (home rank 0 in the test traces) somewhere. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static long long request_id(const char *line)
{
    const char *at = strstr(line, "\"id\":");
    return at ? strtoll(at + 5, NULL, 10) : -1;
}

static void sleep_forever(void)
{
    for (;;)
        pause();
}

static void answer_empty(long long id)
{
    printf("{\"id\":%lld,\"replicas\":[],\"alloc\":[]}\n", id);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: broken_planner MODE PIDFILE\n");
        return 2;
    }
    const char *mode = argv[1];
    FILE *pf = fopen(argv[2], "w");
    if (!pf)
        return 2;
    fprintf(pf, "%ld\n", (long)getpid());
    if (strcmp(mode, "hang-with-child") == 0 || strncmp(mode, "setsid-child", 12) == 0) {
        /* The planner goes on only once the grandchild has left the group:
         * otherwise whether it escapes depends on which process the
         * scheduler runs first, and so would taotsim's report of it. */
        int ready[2];
        if (pipe(ready) != 0)
            return 2;
        pid_t child = fork();
        if (child == 0) {
            close(ready[0]);
            if (strncmp(mode, "setsid-child", 12) == 0)
                setsid(); /* out of the planner's process group; it holds the pipes */
            if (strcmp(mode, "setsid-child-quiet") == 0) {
                /* ... or not: the pipes close as the planner exits, and only
                 * the tag finds what it left running */
                close(STDIN_FILENO);
                close(STDOUT_FILENO);
                close(STDERR_FILENO);
            }
            close(ready[1]); /* the planner's read returns: setsid is done */
            sleep_forever();
        }
        close(ready[1]);
        char byte;
        while (read(ready[0], &byte, 1) > 0)
            ;
        close(ready[0]);
        fprintf(pf, "%ld\n", (long)child);
    }
    fclose(pf);

    if (strcmp(mode, "stdout-before-handshake") == 0) {
        printf("hello from the planner\n");
        fflush(stdout);
    }
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, stdin) < 0)
        return 1;
    if (strcmp(mode, "decline") == 0) {
        printf("{\"ok\":false,\"error\":\"this planner needs at least 8 ranks\"}\n");
        return 0;
    }
    if (strcmp(mode, "bad-version") == 0) {
        printf("{\"ok\":true,\"version\":2}\n");
        return 0;
    }
    if (strcmp(mode, "hang-handshake") == 0)
        sleep_forever();
    printf("{\"ok\":true,\"name\":\"broken-%s\"}\n", mode ? mode : "");
    fflush(stdout);
    if (strcmp(mode, "options") == 0) { /* the handshake, for the tests to read */
        FILE *f = fopen(argv[2], "a");
        if (f) {
            fputs(line, f);
            fclose(f);
        }
    }

    long long held = -1, last_id = -1;
    for (int n = 0; getline(&line, &cap, stdin) > 0; n++) {
        long long id = request_id(line);
        last_id = id;
        if (strcmp(mode, "garbage") == 0) {
            printf("this is not json\n");
        } else if (strcmp(mode, "wrong-id") == 0) {
            printf("{\"id\":%lld,\"replicas\":[],\"alloc\":[]}\n", id + 100);
        } else if (strcmp(mode, "twice") == 0) {
            answer_empty(id);
            answer_empty(id);
        } else if (strcmp(mode, "invalid-plan") == 0) {
            printf("{\"id\":%lld,\"replicas\":[[0,0,0,5]],\"alloc\":[[1,0,0,0,5]]}\n", id);
        } else if (strcmp(mode, "overdraw") == 0) {
            printf("{\"id\":%lld,\"replicas\":[[0,3,0,5]],\"alloc\":[[1,0,3,0,1000000]]}\n", id);
        } else if (strcmp(mode, "bad-row") == 0) {
            printf("{\"id\":%lld,\"replicas\":[[0,3,0]],\"alloc\":[]}\n", id);
        } else if (strcmp(mode, "exit-early") == 0) {
            if (n == 2)
                _exit(3); /* at once: no exit handlers (a sanitizer's leak report would change the status) */
            answer_empty(id);
        } else if (strcmp(mode, "crash") == 0) {
            if (n == 1)
                raise(SIGSEGV);
            answer_empty(id);
        } else if (strcmp(mode, "hang") == 0 || strcmp(mode, "hang-with-child") == 0 ||
                   strcmp(mode, "setsid-child-hang") == 0) {
            sleep_forever();
        } else if (strcmp(mode, "huge-line") == 0) {
            for (long i = 0; i < 64L * 1024 * 1024; i++)
                putchar(' ');
            putchar('\n');
        } else if (strcmp(mode, "odd-valid") == 0) {
            /* valid in every odd way JSON allows: keys in any order, unknown
             * keys with nested values and brackets inside strings, spaces,
             * an integral number written 2.0e0, a null placement */
            printf("{ \"note\" : {\"a\":[1,{\"b\":\"]}\"}],\"c\":\"x\\\"y\"},\t\"alloc\" : [ [1, 0, 3, 0, 2.0e0] ], "
                   "\"id\" : %lld, \"placement\": null, \"replicas\":[[0,3,0,2]], "
                   "\"extra\": [true,false,null,-1.5e3]}\n", id);
        } else if (strcmp(mode, "fraction") == 0) {
            printf("{\"id\":%lld,\"replicas\":[[0,3,0,2]],\"alloc\":[[1,0,3,0,1.5]]}\n", id);
        } else if (strcmp(mode, "error-escaped") == 0) {
            printf("{\"id\":%lld,\"error\":\"bad \\\"input\\\"\\nsecond line \\u00e9\"}\n", id);
        } else if (strcmp(mode, "error-number") == 0) {
            printf("{\"id\":%lld,\"error\":5,\"replicas\":[],\"alloc\":[]}\n", id);
        } else if (strcmp(mode, "error-answer") == 0) {
            printf("{\"id\":%lld,\"error\":\"out of memory on the planner's GPU\"}\n", id);
        } else if (strcmp(mode, "reverse") == 0) {
            /* answers in pairs, the later record first: ids must be matched */
            if (held < 0) {
                held = id;
                continue;
            }
            answer_empty(id);
            answer_empty(held);
            held = -1;
        } else if (strcmp(mode, "stderr") == 0) {
            fprintf(stderr, "planning record %lld\n", id);
            fflush(stderr);
            answer_empty(id);
        } else {
            answer_empty(id); /* ignore-eof, exit-status, options: valid answers */
        }
        fflush(stdout);
    }
    if (held >= 0)
        answer_empty(held);
    if (strcmp(mode, "late-answer") == 0) /* stdin has closed: a second, invalid answer for the last id */
        printf("{\"id\":%lld,\"replicas\":[[0,0,0]],\"alloc\":[]}\n", last_id);
    if (strcmp(mode, "ignore-eof") == 0)
        sleep_forever();
    free(line);
    return strcmp(mode, "exit-status") == 0 ? 4 : 0;
}
