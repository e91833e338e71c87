/* The registry: every planner this build knows, by name, and the --planners
 * list syntax on top of it. Above every planner family (baselines/, gpu/) so
 * that it can list them; nothing below includes it. */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taot_planner.h"

extern const tsim_planner_desc tsim_planner_none;
extern const tsim_planner_desc tsim_planner_echo;
extern const tsim_planner_desc tsim_planner_llep;
extern const tsim_planner_desc tsim_planner_lplb;
extern const tsim_planner_desc tsim_planner_fastermoe;
extern const tsim_planner_desc tsim_planner_optimal;
extern const tsim_planner_desc tsim_planner_eplb;

/* THE list: adding a planner is its own files plus one line here (and its
 * extern above). The order is the order of --help and of "known:" lists. */
static const tsim_planner_desc *const registry[] = {
    &tsim_planner_none,
    &tsim_planner_taot,
    &tsim_planner_echo,
    &tsim_planner_llep,
    &tsim_planner_lplb,
    &tsim_planner_eplb,
    &tsim_planner_fastermoe,
    &tsim_planner_optimal,
    NULL,
};

const tsim_planner_desc *const *tsim_planner_all(void)
{
    return registry;
}

const tsim_planner_desc *tsim_planner_find(const char *name)
{
    for (const tsim_planner_desc *const *d = registry; *d; d++)
        if (strcmp((*d)->name, name) == 0)
            return *d;
    return NULL;
}

/* Calls fn for the common options, then every planner's, in registry order;
 * stops at the first that returns true and returns it. */
static const tsim_option_spec *option_scan(bool (*fn)(const tsim_option_spec *, void *), void *ctx)
{
    for (const tsim_option_spec *o = tsim_planner_common_options; o->name; o++)
        if (fn(o, ctx))
            return o;
    for (const tsim_planner_desc *const *d = registry; *d; d++)
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++)
            if (fn(o, ctx))
                return o;
    return NULL;
}

static bool has_name(const tsim_option_spec *o, void *name)
{
    return strcmp(o->name, name) == 0;
}

const tsim_option_spec *tsim_planner_option_find(const char *name)
{
    return option_scan(has_name, (void *)name);
}

const tsim_option_spec *tsim_planner_option_at(int i)
{
    for (const tsim_option_spec *o = tsim_planner_common_options; o->name; o++)
        if (i-- == 0)
            return o;
    for (const tsim_planner_desc *const *d = registry; *d; d++)
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++)
            if (i-- == 0)
                return o;
    return NULL;
}

/* Defaults: every option's `def` (flags: true), applied by the same parser. */
static bool apply_default(const tsim_option_spec *o, void *options)
{
    if (o->type == TSIM_OPTION_CLEAR) {
        *(bool *)((char *)options + o->offset) = true;
        return false;
    }
    tsim_error err = {0};
    /* A default that fails to parse is a bug in a table; the every-planner
     * test (test_core) checks each default against its own range. */
    if (o->def)
        tsim_option_apply(o, options, o->def, &err);
    return false;
}

void tsim_planner_options_default(tsim_planner_options *o)
{
    memset(o, 0, sizeof *o);
    option_scan(apply_default, o);
}

int tsim_planner_options_set(tsim_planner_options *o, const char *name, const char *value, bool *known,
                             tsim_error *err)
{
    const tsim_option_spec *spec = tsim_planner_option_find(name);
    *known = spec != NULL;
    if (!spec)
        return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s", name);
    return tsim_option_apply(spec, o, value, err);
}

static bool print_help(const tsim_option_spec *o, void *out)
{
    tsim_option_help_line(o, out);
    return false;
}

void tsim_planner_options_help(FILE *out)
{
    fputs("Planner options (prefixed by the planner they belong to):\n", out);
    option_scan(print_help, out);
}

bool tsim_planner_option_is_flag(const char *name)
{
    const tsim_option_spec *o = tsim_planner_option_find(name);
    return o && o->type == TSIM_OPTION_CLEAR;
}

bool tsim_planner_option_exists(const char *name)
{
    return tsim_planner_option_find(name) != NULL;
}

int tsim_planner_spec_parse(tsim_planner *p, const char *spec, const tsim_planner_options *base, tsim_error *err)
{
    memset(p, 0, sizeof *p);
    p->opts = *base;
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return tsim_error_set(err, TSIM_E_INPUT, "planner spec '%.40s...' is too long", spec);
    snprintf(buf, sizeof buf, "%s", spec);

    char *name = buf, *label = NULL;
    char *eq = strchr(buf, '=');
    char *colon = strchr(buf, ':');
    if (eq && (!colon || eq < colon)) {
        *eq = '\0';
        label = buf;
        name = eq + 1;
    }
    char *opts = strchr(name, ':');
    if (opts)
        *opts++ = '\0';
    p->desc = tsim_planner_find(name);
    if (!p->desc) {
        char names[256] = "";
        for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
            if (names[0])
                strncat(names, ", ", sizeof names - strlen(names) - 1);
            strncat(names, (*d)->name, sizeof names - strlen(names) - 1);
        }
        return tsim_error_set(err, TSIM_E_INPUT, "unknown planner '%s' (known: %s)", name, names);
    }
    const char *shown = label && *label ? label : name;
    if (strlen(shown) >= sizeof p->label)
        return tsim_error_set(err, TSIM_E_INPUT, "planner label '%s' is too long", shown);
    snprintf(p->label, sizeof p->label, "%s", shown);

    while (opts && *opts) {
        char *next = strchr(opts, ':');
        if (next)
            *next++ = '\0';
        char *opt = opts;
        if (strncmp(opt, "--", 2) != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "planner '%s': option '%s' must start with --", p->label, opt);
        opt += 2;
        char *val = strchr(opt, '=');
        if (val)
            *val++ = '\0';
        bool known;
        int rc = tsim_planner_options_set(&p->opts, opt, val, &known, err);
        if (rc) {
            tsim_error_prefix(err, "planner '%s'", p->label);
            return rc;
        }
        opts = next;
    }
    return TSIM_OK;
}

int tsim_planner_list_add(tsim_planner *out, int max, int *n, const char *spec, const tsim_planner_options *base,
                          tsim_error *err)
{
    if (*n >= max)
        return tsim_error_set(err, TSIM_E_INPUT, "at most %d planners", max);
    int rc = tsim_planner_spec_parse(&out[*n], spec, base, err);
    if (rc)
        return rc;
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i].label, out[*n].label) == 0)
            return tsim_error_set(err, TSIM_E_INPUT, "planner label '%s' appears twice; use LABEL=NAME", out[i].label);
    (*n)++;
    return TSIM_OK;
}

int tsim_planner_list_parse(const char *list, const tsim_planner_options *base, tsim_planner *out, int max, int *n,
                            tsim_error *err)
{
    char buf[2048];
    *n = 0;
    if (strlen(list) >= sizeof buf)
        return tsim_error_set(err, TSIM_E_INPUT, "--planners list is too long");
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int rc = tsim_planner_list_add(out, max, n, tok, base, err);
        if (rc)
            return rc;
    }
    if (*n == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "--planners is empty");
    return TSIM_OK;
}

void tsim_planner_report_fallbacks(const tsim_planner *planners, int n, FILE *out)
{
    for (int i = 0; i < n; i++) {
        const tsim_planner *p = &planners[i];
        char why[256];
        if (p->state && p->desc->fell_back && p->desc->fell_back(p->state, why, sizeof why))
            fprintf(out, "taotsim: planner '%s' fell back: %s\n", p->label, why);
        if (p->state && p->desc->note && p->desc->note(p->state, why, sizeof why))
            fprintf(out, "taotsim: planner '%s': %s\n", p->label, why);
    }
}
