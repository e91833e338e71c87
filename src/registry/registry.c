/* The registry: every planner this build knows, by name, and the --planners
 * list syntax on top of it. Above every planner family (baselines/, gpu/) so
 * that it can list them; nothing below includes it. */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#include "taot_planner.h"

extern const tsim_planner_desc tsim_planner_none;
extern const tsim_planner_desc tsim_planner_echo;
extern const tsim_planner_desc tsim_planner_llep;
extern const tsim_planner_desc tsim_planner_lplb;
extern const tsim_planner_desc tsim_planner_fastermoe;
extern const tsim_planner_desc tsim_planner_optimal;
extern const tsim_planner_desc tsim_planner_eplb;

static const tsim_planner_desc *const registry[] = {
    &tsim_planner_none, &tsim_planner_taot, &tsim_planner_echo, &tsim_planner_llep, &tsim_planner_lplb,
    &tsim_planner_fastermoe, &tsim_planner_optimal, &tsim_planner_eplb, NULL,
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
    }
}
