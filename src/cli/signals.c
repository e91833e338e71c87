/* Every way the process can end before a command finishes removes its
 * temporary output files and the exec planners' process groups:
 *  - a signal whose default action ends the process: INT, TERM, QUIT, HUP,
 *    PIPE, XFSZ as before, and USR1, USR2, ALRM, the profiling and real-time
 *    signals ... exit with 128 + the signal;
 *  - a crash (SEGV, BUS, ILL, FPE, ABRT, SYS, TRAP, e.g. in a plugin):
 *    the handler cleans up and hands the signal to the action it replaced
 *    (the default, or a sanitizer's report), so a crash stays a crash;
 *  - exit() from inside a planner (a plugin's plan, init or constructor): the
 *    atexit guard says so and turns it into exit status 2.
 * Handlers only unlink and kill: async-signal-safe. */
#define _GNU_SOURCE /* SIGSTKFLT, SIGPWR */
#include "signals.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "external.h"
#include "outfile.h"

static void cleanup(void)
{
    tsim_outfile_unlink_pending();
    tsim_exec_kill_all(); /* external planners end with taotsim */
}

static void on_signal(int sig)
{
    cleanup();
    _exit(128 + sig);
}

/* The actions crash signals had before (the default, or a sanitizer's
 * reporter): put back once the files are gone. */
static struct sigaction before[65];

static void put(const char *s);

static void on_crash(int sig, siginfo_t *info, void *context)
{
    (void)context;
    const char *label = tsim_external_running();
    if (label) {
        put("taotsim: planner '");
        put(label);
        put("' crashed the process; nothing written\n");
    }
    cleanup();
    sigaction(sig, &before[sig], NULL);
    /* Sent (kill, raise, abort): send it again. A fault: returning repeats
     * the faulting instruction, now under the previous action. */
    if (info->si_code <= 0)
        raise(sig);
}

static void put(const char *s)
{
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
    (void)ignored;
}

static void exit_guard(void)
{
    const char *label = tsim_external_running();
    cleanup();
    if (!label)
        return;
    put("taotsim: planner '");
    put(label);
    put("' exited the process (a plugin returns from its functions; it never calls exit); nothing written\n");
    _exit(2);
}

static void install(int sig, void (*handler)(int), bool unless_ignored)
{
    struct sigaction sa, old;
    if (unless_ignored && sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

void tsim_cli_install_signal_cleanup(void)
{
    /* Interrupts always clean up, even where a shell started us with them
     * ignored (a non-interactive shell's background job ignores INT and QUIT). */
    install(SIGINT, on_signal, false);
    install(SIGTERM, on_signal, false);
    install(SIGQUIT, on_signal, false);
    /* The other signals that end a process clean up too, unless the caller
     * ignores them on purpose (nohup for HUP; trap '' XFSZ so that a full
     * file is a write error, not death; a PIPE ignored so that EPIPE is). */
    static const int if_not_ignored[] = {
        SIGHUP, SIGPIPE, SIGXFSZ, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGIO,
#ifdef SIGPWR
        SIGPWR,
#endif
#ifdef SIGSTKFLT
        SIGSTKFLT,
#endif
    };
    for (size_t i = 0; i < sizeof if_not_ignored / sizeof if_not_ignored[0]; i++)
        install(if_not_ignored[i], on_signal, true);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        install(sig, on_signal, true);
    static const int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP};
    /* A stack overflow's SEGV still finds a stack to clean up on. */
    static char alt_stack[64 * 1024];
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0};
    int on_stack = sigaltstack(&ss, NULL) == 0 ? SA_ONSTACK : 0;
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | on_stack;
        sigemptyset(&sa.sa_mask);
        sigaction(crashes[i], &sa, &before[crashes[i]]);
    }
    atexit(exit_guard);
}
