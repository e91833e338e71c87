/* realpath is XSI, beyond the project-wide _POSIX_C_SOURCE. */
#define _XOPEN_SOURCE 700
#include "datadir.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsim_config.h"

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *tsim_cli_data_dir(void)
{
    static char found[PATH_MAX];
    if (found[0])
        return found;
    char exe[PATH_MAX], build_root[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0'; /* exe is now the binary's directory */
        /* 1. run from its own build tree: the source tree (development only) */
        if (realpath(TSIM_BUILD_ROOT, build_root) && strncmp(exe, build_root, strlen(build_root)) == 0 &&
            (exe[strlen(build_root)] == '\0' || exe[strlen(build_root)] == '/') && is_dir(TSIM_SOURCE_ROOT "/plots")) {
            snprintf(found, sizeof found, "%s", TSIM_SOURCE_ROOT);
            return found;
        }
        /* 2. installed under a prefix: PREFIX/bin/taotsim -> PREFIX/share/taotsim */
        snprintf(probe, sizeof probe, "%s/../share/taotsim", exe);
        if (is_dir(probe) && realpath(probe, found))
            return found;
        /* 3. a self-contained folder (the GPU bundle): plots/ beside the binary */
        snprintf(probe, sizeof probe, "%s/plots", exe);
        if (is_dir(probe)) {
            snprintf(found, sizeof found, "%s", exe);
            return found;
        }
    }
    /* 4. the configured data directory */
    snprintf(found, sizeof found, "%s", TSIM_DATA_DIR);
    return found;
}

const char *tsim_plots_default_dir(void)
{
    static char dir[PATH_MAX + 8];
    if (!dir[0])
        snprintf(dir, sizeof dir, "%s/plots", tsim_cli_data_dir());
    return dir;
}
