/* Signal handling belongs to the CLI: a terminating signal removes every
 * temporary output file and exits with 128 + the signal. */
#ifndef TSIM_SIGNALS_H
#define TSIM_SIGNALS_H

void tsim_cli_install_signal_cleanup(void);

#endif
