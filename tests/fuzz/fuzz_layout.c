/* libFuzzer target: the layout reader (SGLang's physical_to_logical_map and
 * TensorRT-LLM's initial_global_assignments, layout_io.h). Promises checked:
 * the reader returns OK or TSIM_E_INPUT with a message naming the file;
 * what it accepts has rows of one width, ascending distinct layers and ids
 * from 0; the checker against a topology answers OK or TSIM_E_INPUT; what is
 * written in either form reads back to the same table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "layout_io.h"

static void round_trip(const tsim_layout_table *t, tsim_layout_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    tsim_error err = {0};
    int rc = tsim_layout_write(m, t, fmt, &err);
    fclose(m);
    if (rc == TSIM_E_INPUT && fmt == TSIM_LAYOUT_SGLANG) {
        free(buf); /* layers not 0..L-1: refused, as documented */
        return;
    }
    if (rc)
        fuzz_fail("write failed: %s", err.msg);
    const char *path = fuzz_write_file(fmt == TSIM_LAYOUT_SGLANG ? ".sg.json" : ".tr.json", (const uint8_t *)buf, len);
    free(buf);
    tsim_layout_table back;
    tsim_layout_format got;
    if (tsim_layout_read(path, &back, &got, &err))
        fuzz_fail("a written layout does not read back: %s", err.msg);
    if (got != fmt || back.count != t->count || back.physical != t->physical ||
        memcmp(back.layers, t->layers, sizeof *t->layers * (size_t)t->count) != 0 ||
        memcmp(back.map, t->map, sizeof *t->map * (size_t)t->count * (size_t)t->physical) != 0)
        fuzz_fail("a written layout reads back different");
    tsim_layout_table_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".json", data, size);
    tsim_layout_table t;
    tsim_error err = {0};
    int rc = tsim_layout_read(path, &t, NULL, &err);
    if (rc) {
        if (rc != TSIM_E_INPUT || !strstr(err.msg, path))
            fuzz_fail("read: code %d, message '%s'", rc, err.msg);
        return 0;
    }
    if (t.count < 1 || t.physical < 1)
        fuzz_fail("an empty table was accepted");
    for (int k = 0; k < t.count; k++)
        if (t.layers[k] < 0 || (k && t.layers[k] <= t.layers[k - 1]))
            fuzz_fail("layers out of order");
    for (size_t i = 0; i < (size_t)t.count * (size_t)t.physical; i++)
        if (t.map[i] < 0)
            fuzz_fail("a negative id was accepted");
    rc = tsim_layout_check(&t, 2, t.physical / 2 > 0 ? t.physical / 2 : 1, 3, path, &err);
    if (rc != TSIM_OK && rc != TSIM_E_INPUT)
        fuzz_fail("check: code %d", rc);
    round_trip(&t, TSIM_LAYOUT_SGLANG);
    round_trip(&t, TSIM_LAYOUT_TRTLLM);
    tsim_layout_table_free(&t);
    return 0;
}
