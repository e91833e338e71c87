/* libFuzzer target: the restricted unpickler on raw pickle bytes. A load
 * either fails with TSIM_E_INPUT and a message naming the place, or yields a
 * root whose dict lookups and tensor fields are sane. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsim_pickle pk;
    tsim_error err = {0};
    int rc = tsim_pickle_load(&pk, data, size, "f.pt: entry 'a/data.pkl'", &err);
    if (rc) {
        if (rc != TSIM_E_INPUT && rc != TSIM_E_INTERNAL)
            fuzz_fail("unexpected status %d", rc);
        if (rc == TSIM_E_INPUT && strncmp(err.msg, "f.pt: entry 'a/data.pkl': pickle byte ", 38) != 0)
            fuzz_fail("message without the place: %s", err.msg);
        return 0;
    }
    const tsim_pk *root = pk.root;
    if (!root)
        fuzz_fail("no root after a successful load");
    (void)tsim_pk_get(root, "records");
    for (size_t k = 0; k < pk.n_all; k++) {
        const tsim_pk *v = pk.all[k];
        if (v->kind == TSIM_PK_TENSOR && (v->ndim < 0 || v->ndim > TSIM_PK_MAX_DIMS || !v->storage))
            fuzz_fail("tensor with %d dimensions", v->ndim);
    }
    tsim_pickle_free(&pk);
    return 0;
}
