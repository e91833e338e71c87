#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "external.h"
#include "outfile.h"

static void on_signal(int sig)
{
    tsim_outfile_unlink_pending();
    tsim_exec_kill_all(); /* external planners end with taotsim */
    _exit(128 + sig);
}

void tsim_cli_install_signal_cleanup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* Interrupts always clean up, even where a shell started us with them
     * ignored (a non-interactive shell's background job ignores INT and QUIT). */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    /* The other signals that end a process mid-write clean up too, unless the
     * caller ignores them on purpose (nohup for HUP; trap '' XFSZ so that a
     * full file is a write error, not death; a PIPE ignored so that EPIPE is). */
    static const int if_not_ignored[] = {SIGHUP, SIGPIPE, SIGXFSZ};
    for (size_t i = 0; i < sizeof if_not_ignored / sizeof if_not_ignored[0]; i++) {
        struct sigaction old;
        if (sigaction(if_not_ignored[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(if_not_ignored[i], &sa, NULL);
    }
}
