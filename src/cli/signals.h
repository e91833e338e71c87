/* Signal handling belongs to the CLI: every signal that ends the process,
 * a crash, and exit() from inside a plugin remove every temporary output
 * file and the exec planners (signals.c says how each ends). */
#ifndef TSIM_SIGNALS_H
#define TSIM_SIGNALS_H

void tsim_cli_install_signal_cleanup(void);

#endif
