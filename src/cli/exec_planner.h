/* Inside the exec planner (exec_planner.c, exec_planner_answer.c): its state
 * and the reader of its answers. Internal to the CLI; external.h is the
 * public side. */
#ifndef TSIM_CLI_EXEC_PLANNER_H
#define TSIM_CLI_EXEC_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "external.h"
#include "plan.h"

#define PROTOCOL_VERSION 1
#define READ_CHUNK 65536
#define STDERR_LINE_MAX 4096
#define SEND_AHEAD (8u << 20)

typedef struct {
    const tsim_external_config *cfg;
    int R, E, K, slots_per_rank; /* slots_per_rank: hpr + K, the most any plan uses */
    pid_t pid;                   /* 0 once reaped */
    int to_child, from_child, child_err; /* -1 once closed */
    bool out_eof;
    bool not_reading;            /* sending failed: the planner stopped reading (it may have exited) */
    /* requests not yet written: [send_off, send_len) */
    char *send;
    size_t send_len, send_off, send_cap;
    /* standard output read so far: the current line starts at in_start */
    char *in;
    size_t in_len, in_start, in_cap, line_max;
    /* the child's standard error, up to its next newline */
    char err_line[STDERR_LINE_MAX];
    size_t err_len;
    uint64_t next_id;
    unsigned char *answered; /* [answered_cap] per record of a batch */
    int answered_cap;
    int32_t *slot_table;     /* [R * slots_per_rank]: replica index of (guest, slot), -1 free */
    char name[64];           /* what the planner calls itself */
    char tag[64];            /* in the environment of all it starts (planner_procs.h) */
    int left_behind;         /* tagged processes outside its group killed at its end */
} exec_state;

/* A short, printable excerpt of a bad line for messages. */
void exec_excerpt(const char *line, size_t len, char *out, size_t n);

/* One answer line of a batch whose ids are base..base+n-1; sent of them
 * went out. Sets *which to the batch position it answers (or the one it is
 * blamed on). */
int exec_read_answer(exec_state *x, const char *line, size_t len, uint64_t base, int sent, tsim_plan *plans,
                     int *which, char *why, size_t wn);

#endif
