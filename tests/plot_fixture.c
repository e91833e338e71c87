#include "plot_fixture.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plot.h"

const char *tsim_plot_test_root(void)
{
    const char *root = getenv("TSIM_SOURCE_ROOT");
    cr_assert(root && root[0], "TSIM_SOURCE_ROOT is not set (run through meson test)");
    return root;
}

cJSON *tsim_plot_test_load(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/plot/%s", tsim_plot_test_root(), name);
    cJSON *root = NULL;
    tsim_error err = {0};
    cr_assert_eq(tsim_plot_read_json(path, &root, &err), TSIM_OK, "%s", err.msg);
    return root;
}

void tsim_plot_test_tmpdir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/tsim_plot_test.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

void tsim_plot_test_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

char *tsim_plot_test_slurp(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    if (len_out)
        *len_out = (size_t)len;
    return buf;
}

bool tsim_plot_test_exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

int tsim_plot_test_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}
