/* The registry: every planner this build knows, by name, and the --planners
 * list syntax on top of it. Above every planner family (baselines/, gpu/) so
 * that it can list them; nothing below includes it. */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "taot_planner.h"

extern const tsim_planner_desc tsim_planner_none;
extern const tsim_planner_desc tsim_planner_echo;
extern const tsim_planner_desc tsim_planner_llep;
extern const tsim_planner_desc tsim_planner_lplb;
extern const tsim_planner_desc tsim_planner_fastermoe;
extern const tsim_planner_desc tsim_planner_optimal;
extern const tsim_planner_desc tsim_planner_eplb;
extern const tsim_planner_desc tsim_planner_moonep;
extern const tsim_planner_desc tsim_planner_ultraep;
extern const tsim_planner_desc tsim_planner_trtllm;
extern const tsim_planner_desc tsim_planner_swift;
extern const tsim_planner_desc tsim_planner_frontier;

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
    &tsim_planner_moonep,
    &tsim_planner_ultraep,
    &tsim_planner_trtllm,
    &tsim_planner_swift,
    &tsim_planner_frontier,
    NULL,
};

/* Test-only planners (tests/planners/): the test programs link a list of
 * them, registered like the built-ins (their own files plus one line in that
 * list); the taotsim binary does not, and this weak reference is then NULL. */
extern const tsim_planner_desc *const tsim_test_planners[] __attribute__((weak));

static const tsim_planner_desc *all_planners[TSIM_REGISTRY_MAX + 1];
static pthread_once_t all_once = PTHREAD_ONCE_INIT;

static void all_build(void)
{
    int n = 0;
    for (const tsim_planner_desc *const *d = registry; *d && n < TSIM_REGISTRY_MAX; d++)
        all_planners[n++] = *d;
    for (const tsim_planner_desc *const *d = tsim_test_planners; d && *d && n < TSIM_REGISTRY_MAX; d++)
        all_planners[n++] = *d;
    all_planners[n] = NULL;
}

const tsim_planner_desc *const *tsim_planner_all(void)
{
    pthread_once(&all_once, all_build);
    return all_planners;
}

const tsim_planner_desc *tsim_planner_find(const char *name)
{
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        if (strcmp((*d)->name, name) == 0)
            return *d;
    return NULL;
}

static tsim_planner_resolver resolver;

void tsim_planner_set_resolver(tsim_planner_resolver fn)
{
    resolver = fn;
}

/* Calls fn for the common options, then every planner's, in registry order;
 * stops at the first that returns true and returns it. */
static const tsim_option_spec *option_scan(bool (*fn)(const tsim_option_spec *, void *), void *ctx)
{
    for (const tsim_option_spec *o = tsim_planner_common_options; o->name; o++)
        if (fn(o, ctx))
            return o;
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
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
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++)
            if (i-- == 0)
                return o;
    return NULL;
}

static int registry_index(const tsim_planner_desc *d)
{
    int i = 0;
    for (const tsim_planner_desc *const *p = tsim_planner_all(); *p; p++, i++)
        if (*p == d)
            return i;
    return -1;
}

void *tsim_planner_options_own(tsim_planner_options *o, const tsim_planner_desc *d)
{
    int i = registry_index(d);
    return i < 0 ? NULL : o->own[i].bytes;
}

const void *tsim_planner_options_own_const(const tsim_planner_options *o, const tsim_planner_desc *d)
{
    return tsim_planner_options_own((tsim_planner_options *)o, d);
}

void tsim_planner_options_default(tsim_planner_options *o)
{
    memset(o, 0, sizeof *o);
    tsim_option_table_defaults(tsim_planner_common_options, &o->common);
    int i = 0;
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++, i++)
        tsim_option_table_defaults((*d)->options, o->own[i].bytes);
}

void tsim_planner_configure(tsim_planner *p, const tsim_planner_desc *d, const char *label,
                            const tsim_planner_options *base)
{
    char shown[TSIM_LABEL_MAX]; /* label may point into p */
    snprintf(shown, sizeof shown, "%s", label ? label : d->name);
    memset(p, 0, sizeof *p);
    p->desc = d;
    snprintf(p->label, sizeof p->label, "%s", shown);
    p->common = base->common;
    p->common.external = NULL;
    const void *own = tsim_planner_options_own_const(base, d);
    if (own && d->options_size <= sizeof p->own.bytes)
        memcpy(p->own.bytes, own, d->options_size);
}

int tsim_planner_init_with(const tsim_planner_desc *d, void **state, const tsim_topology *topo,
                           const tsim_planner_options *base, tsim_error *err)
{
    return d->init(state, topo, &base->common, tsim_planner_options_own_const(base, d), err);
}

const tsim_planner_desc *tsim_planner_option_owner(const char *name)
{
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++)
        for (const tsim_option_spec *o = (*d)->options; o && o->name; o++)
            if (strcmp(o->name, name) == 0)
                return *d;
    return NULL;
}

static const tsim_option_spec *common_option(const char *name)
{
    for (const tsim_option_spec *o = tsim_planner_common_options; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

int tsim_planner_options_set(tsim_planner_options *o, const char *name, const char *value, bool *known,
                             tsim_error *err)
{
    const tsim_option_spec *spec = common_option(name);
    *known = true;
    if (spec)
        return tsim_option_apply(spec, &o->common, value, err);
    const tsim_planner_desc *d = tsim_planner_option_owner(name);
    spec = d ? tsim_planner_option_find(name) : NULL;
    *known = spec != NULL;
    if (!spec)
        return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s", name);
    return tsim_option_apply(spec, tsim_planner_options_own(o, d), value, err);
}

int tsim_planner_option_set(tsim_planner *p, const char *name, const char *value, tsim_error *err)
{
    if (strcmp(name, "slots") == 0) /* this planner's own slot budget K */
        return tsim_parse_int(value ? value : "", 1, 1024, &p->common.slots, "--slots", err);
    const tsim_option_spec *spec = common_option(name);
    if (spec)
        return tsim_option_apply(spec, &p->common, value, err);
    for (spec = p->desc->options; spec && spec->name; spec++)
        if (strcmp(spec->name, name) == 0)
            return tsim_option_apply(spec, p->own.bytes, value, err);
    const tsim_planner_desc *owner = tsim_planner_option_owner(name);
    if (owner)
        return tsim_error_set(err, TSIM_E_INPUT, "--%s is an option of %s, not of %s", name, owner->name,
                              p->desc->name);
    return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s", name);
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

/* Options follow the planner name as ":--opt=v:--flag". A ':' starts the
 * next option only when "--" follows it, so a value may hold one
 * (--lplb-graph=torus:2x4). Cuts s at that ':' and returns the next option,
 * or NULL. */
static char *next_option(char *s)
{
    char *sep = strstr(s, ":--");
    if (!sep)
        return NULL;
    *sep = '\0';
    return sep + 1;
}

static int external_kind(const char *name)
{
    return strncmp(name, "exec:", 5) == 0 || strncmp(name, "plugin:", 7) == 0;
}

/* An external planner's label prefixes its command-line options
 * (--LABEL-KEY=VALUE): a plain name that no built-in planner owns. */
static int check_external_label(const char *label, const char *name, tsim_error *err)
{
    if (!label || !*label)
        return tsim_error_set(err, TSIM_E_INPUT, "external planner '%s' needs a label: LABEL=%s", name, name);
    for (const char *c = label; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              (*c == '-' && c != label)))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "planner label '%s': an external planner's label takes letters, digits, '_' and "
                                  "'-' (it prefixes its options, --%s-KEY=VALUE)",
                                  label, label);
    if (tsim_planner_find(label))
        return tsim_error_set(err, TSIM_E_INPUT,
                              "planner label '%s' is the name of a built-in planner; give the external planner "
                              "another label",
                              label);
    return TSIM_OK;
}

int tsim_planner_spec_parse(tsim_planner *p, const char *spec, const tsim_planner_options *base, tsim_error *err)
{
    memset(p, 0, sizeof *p);
    p->common = base->common;
    p->common.external = NULL;
    char buf[1024];
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
    if (external_kind(name)) {
        int rc = check_external_label(label, name, err);
        if (rc)
            return rc;
        if (strlen(label) >= sizeof p->label)
            return tsim_error_set(err, TSIM_E_INPUT, "planner label '%s' is too long", label);
        snprintf(p->label, sizeof p->label, "%s", label);
        /* exec: the command runs to the end of the entry (it may hold ':' and
         * spaces); plugin: the library path, then options as for a built-in. */
        const char *opts = name[0] == 'p' ? next_option(name) : NULL;
        if (!resolver)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "planner '%s': external planners (exec:, plugin:) run from the taotsim command only",
                                  p->label);
        rc = resolver(p, name, opts, err);
        if (rc == TSIM_OK && (!p->desc || !p->common.external))
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "planner '%s': the resolver returned no planner", p->label);
        return rc;
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
        return tsim_error_set(err, TSIM_E_INPUT, "unknown planner '%s' (known: %s; external: LABEL=exec:CMD, "
                              "LABEL=plugin:LIB.so)", name, names);
    }
    tsim_planner_configure(p, p->desc, NULL, base);
    const char *shown = label && *label ? label : name;
    if (strlen(shown) >= sizeof p->label)
        return tsim_error_set(err, TSIM_E_INPUT, "planner label '%s' is too long", shown);
    /* A label names the planner in --fail-if (LABEL.METRIC.STAT), markdown and
     * CSV tables, JSON and gnuplot word lists: letters, digits, '_', '-', '+'. */
    for (const char *c = shown; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '+'))
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "planner label '%s': '%c' is not allowed (letters, digits, '_', '-' and '+' only)",
                                  shown, *c);
    snprintf(p->label, sizeof p->label, "%s", shown);

    while (opts && *opts) {
        char *next = next_option(opts);
        char *opt = opts;
        if (strncmp(opt, "--", 2) != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "planner '%s': option '%s' must start with --", p->label, opt);
        opt += 2;
        char *val = strchr(opt, '=');
        if (val)
            *val++ = '\0';
        int rc = tsim_planner_option_set(p, opt, val, err);
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
