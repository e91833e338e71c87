#include "planner_configs.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "registry.h"

bool planner_is_expensive(const tsim_planner_desc *desc)
{
    /* With the descriptor's cost class this body becomes
     *     return desc->cost == TSIM_COST_EXPENSIVE; */
    const size_t n = strlen(desc->name);
    for (const tsim_option_spec *o = desc->options; o && o->name; o++)
        if (strncmp(o->name, desc->name, n) == 0 && strcmp(o->name + n, "-node-limit") == 0)
            return true;
    return false;
}

static void config_add(tsim_config_spec *out, int max, int *n, const char *planner, const char *option,
                       const char *value)
{
    cr_assert_lt(*n, max, "more planner configurations than %d", max);
    char label[TSIM_LABEL_MAX];
    snprintf(label, sizeof label, "%s-%s", planner, value ? value : option + strlen(planner) + 1);
    if (value)
        snprintf(out[(*n)++], sizeof out[0], "%s=%s:--%s=%s", label, planner, option, value);
    else
        snprintf(out[(*n)++], sizeof out[0], "%s=%s:--%s", label, planner, option);
}

/* The variants of one option: each choice but the default, or the flag. */
static void option_variants(tsim_config_spec *out, int max, int *n, const char *planner, const tsim_option_spec *o)
{
    if (o->type == TSIM_OPTION_CLEAR)
        config_add(out, max, n, planner, o->name, NULL);
    for (const char *v = o->type == TSIM_OPTION_CHOICE ? o->choices : NULL; v && *v;) {
        size_t len = strcspn(v, "|");
        char value[64];
        snprintf(value, sizeof value, "%.*s", (int)len, v);
        if (!o->def || strcmp(value, o->def) != 0)
            config_add(out, max, n, planner, o->name, value);
        v += len + (v[len] == '|');
    }
}

int tsim_registry_configs(tsim_config_spec *out, int max, bool variants)
{
    int n = 0;
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        cr_assert_lt(n, max, "more planner configurations than %d", max);
        snprintf(out[n++], sizeof out[0], "%s", (*d)->name);
        for (const tsim_option_spec *o = (*d)->options; variants && o && o->name; o++)
            option_variants(out, max, &n, (*d)->name, o);
    }
    return n;
}
