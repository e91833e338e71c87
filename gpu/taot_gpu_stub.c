/* The GPU TAOT API when the build has no CUDA (meson -Dcuda=disabled, or no
 * nvcc found with -Dcuda=auto): nothing is available, every call says why, and
 * --taot-device gpu runs the CPU reference with TSIM_NOTE_GPU_FALLBACK. */
#include "taot_gpu.h"

#include <string.h>

#define NO_CUDA "this taotsim was built without CUDA (configure with -Dcuda=enabled, nvcc on PATH)"

int tsim_taot_gpu_available(char *why, size_t n)
{
    if (why && n) {
        strncpy(why, NO_CUDA, n - 1);
        why[n - 1] = '\0';
    }
    return 0;
}

void tsim_taot_gpu_settings_default(tsim_taot_gpu_settings *s)
{
    s->max_batch = TSIM_TAOT_GPU_DEFAULT_BATCH;
    s->use_graph = true;
    s->diagnostics = false;
}

tsim_taot_gpu *tsim_taot_gpu_create(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts, int max_batch,
                                    tsim_error *err)
{
    (void)topo;
    (void)common;
    (void)opts;
    (void)max_batch;
    tsim_error_set(err, TSIM_E_INPUT, "taot gpu: %s", NO_CUDA);
    return NULL;
}

tsim_taot_gpu *tsim_taot_gpu_create_ex(const tsim_topology *topo, const tsim_planner_common *common,
                                    const tsim_taot_options *opts,
                                       const tsim_taot_gpu_settings *settings, tsim_error *err)
{
    (void)settings;
    return tsim_taot_gpu_create(topo, common, opts, 1, err);
}

int tsim_taot_gpu_plan_batch(tsim_taot_gpu *g, const tsim_record *const *recs, int n, tsim_plan *plans,
                             tsim_error *err)
{
    (void)g;
    (void)recs;
    (void)n;
    (void)plans;
    return tsim_error_set(err, TSIM_E_INPUT, "taot gpu: %s", NO_CUDA);
}

bool tsim_taot_gpu_diagnostics(const tsim_taot_gpu *g, int i, struct tsim_taot_gpu_record_out *out)
{
    (void)g;
    (void)i;
    (void)out;
    return false;
}

void tsim_taot_gpu_free(tsim_taot_gpu *g)
{
    (void)g;
}

int tsim_taot_gpu_bench(tsim_taot_gpu_bench_result *out, const tsim_planner_common *common,
                        const tsim_taot_options *base, int records, uint64_t seed, tsim_error *err)
{
    memset(out, 0, sizeof *out);
    (void)common;
    (void)base;
    (void)records;
    (void)seed;
    return tsim_error_set(err, TSIM_E_INPUT, "taot gpu bench: no usable GPU: %s", NO_CUDA);
}
