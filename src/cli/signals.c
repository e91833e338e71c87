#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"

static void on_signal(int sig)
{
    tsim_outfile_unlink_pending();
    _exit(128 + sig);
}

void tsim_cli_install_signal_cleanup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}
