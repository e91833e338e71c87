/* Test helper shared by the plot suites (test_plot.c: data files, scripts, bad
 * input; test_plot_render.c: images through gnuplot): result files from
 * tests/data/plot, temporary output directories and their files. */
#ifndef TSIM_PLOT_FIXTURE_H
#define TSIM_PLOT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* $TSIM_SOURCE_ROOT (asserted to be set: meson test sets it). */
const char *tsim_plot_test_root(void);

/* tests/data/plot/NAME read with tsim_plot_read_json (asserted to succeed). */
cJSON *tsim_plot_test_load(const char *name);

/* A new directory under /tmp, its path in dir. */
void tsim_plot_test_tmpdir(char *dir, size_t size);

/* Removes a flat directory of files (what a plot call writes). */
void tsim_plot_test_remove_dir(const char *dir);

/* The whole file, NUL-terminated (free it); its length in *len_out if given. */
char *tsim_plot_test_slurp(const char *path, size_t *len_out);

bool tsim_plot_test_exists(const char *dir, const char *name);

/* The number of entries in dir, "." and ".." aside. */
int tsim_plot_test_count_entries(const char *dir);

#endif
