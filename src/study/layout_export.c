#include "layout_export.h"

#include <string.h>

bool tsim_planner_has_layouts(const tsim_planner *p)
{
    const char *n = p->desc->name;
    return strcmp(n, "eplb") == 0 || strcmp(n, "trtllm") == 0 || strcmp(n, "swift") == 0;
}

void tsim_layout_collector_init(tsim_layout_collector *c)
{
    tsim_layout_table_init(&c->layouts, 0);
    tsim_layout_table_init(&c->seen, 1);
}

void tsim_layout_collector_free(tsim_layout_collector *c)
{
    tsim_layout_table_free(&c->layouts);
    tsim_layout_table_free(&c->seen);
}

int tsim_layout_collector_add(tsim_layout_collector *c, const tsim_record *rec, const tsim_plan *plan,
                              tsim_error *err)
{
    const int32_t one = 0;
    int rc = tsim_layout_table_put(&c->seen, rec->layer, &one, err);
    if (rc || plan->layout_positions < 1)
        return rc; /* eplb before its first layout: nothing to keep yet */
    if (c->layouts.physical == 0)
        c->layouts.physical = plan->layout_positions;
    if (plan->layout_positions != c->layouts.physical)
        return tsim_error_set(err, TSIM_E_INTERNAL, "layouts of %d and %d positions in one run",
                              c->layouts.physical, plan->layout_positions);
    return tsim_layout_table_put(&c->layouts, rec->layer, plan->layout, err);
}

int tsim_layout_collector_finish(const tsim_layout_collector *c, const char *label, const tsim_layout_table **out,
                                 tsim_error *err)
{
    if (c->seen.count == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--export-layout: planner '%s' planned no record", label);
    for (int k = 0; k < c->seen.count; k++)
        if (!tsim_layout_table_find(&c->layouts, c->seen.layers[k]))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "--export-layout: planner '%s' ended layer %lld without a layout (eplb has none "
                                  "until it first recomputes one: record 1 of a layer under --eplb-history prev, "
                                  "never under none)",
                                  label, (long long)c->seen.layers[k]);
    *out = &c->layouts;
    return TSIM_OK;
}
