/* Where the plot templates (plots/) and the bundled traces (traces/) are:
 * the source tree for a binary run from its build directory (development),
 * else beside an installed or bundled binary, else the configured data
 * directory (meson's datadir/taotsim). Only the CLI asks, and passes the
 * answer down to the library. */
#ifndef TSIM_DATADIR_H
#define TSIM_DATADIR_H

/* The directory holding plots/ and traces/ (never NULL). */
const char *tsim_cli_data_dir(void);
/* Its plots/ folder: the templates unless $TAOTSIM_PLOTS_DIR says otherwise. */
const char *tsim_plots_default_dir(void);

#endif
