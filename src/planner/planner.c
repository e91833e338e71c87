#include "planner.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

const tsim_option_spec tsim_planner_common_options[] = {
    {.name = "lambda-plan", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_planner_common, lambda_plan),
     .lo = 1e-9, .hi = 1e9, .arg = "X", .def = "3", .help = "lambda the topology-aware planners believe"},
    {0},
};

/* "a|b|c" -> "a, b or c" for messages. */
static void choices_text(const char *choices, char *out, size_t n)
{
    size_t used = 0, count = 1;
    for (const char *p = choices; *p; p++)
        count += *p == '|';
    size_t seen = 0;
    out[0] = '\0';
    for (const char *p = choices; *p && used + 8 < n;) {
        size_t len = strcspn(p, "|");
        seen++;
        const char *sep = seen == 1 ? "" : seen == count ? " or " : ", ";
        int w = snprintf(out + used, n - used, "%s%.*s", sep, (int)len, p);
        if (w < 0)
            break;
        used += (size_t)w;
        p += len;
        if (*p == '|')
            p++;
    }
}

static int choice_index(const char *choices, const char *value)
{
    int i = 0;
    for (const char *p = choices; *p; i++) {
        size_t len = strcspn(p, "|");
        if (strlen(value) == len && strncmp(p, value, len) == 0)
            return i;
        p += len;
        if (*p == '|')
            p++;
    }
    return -1;
}

int tsim_option_apply(const tsim_option_spec *spec, void *options, const char *value, tsim_error *err)
{
    char what[96];
    snprintf(what, sizeof what, "--%s", spec->name);
    void *field = (char *)options + spec->offset;
    if (spec->type == TSIM_OPTION_CLEAR) {
        if (value)
            return tsim_error_set(err, TSIM_E_INPUT, "%s takes no value", what);
        *(bool *)field = false;
        return TSIM_OK;
    }
    /* an empty text is a value only for strings (a file option's "none") */
    if (!value || (!*value && spec->type != TSIM_OPTION_STRING))
        return tsim_error_set(err, TSIM_E_INPUT, "%s needs a value", what);
    switch (spec->type) {
    case TSIM_OPTION_DOUBLE:
        return tsim_parse_double(value, spec->lo, spec->hi, field, what, err);
    case TSIM_OPTION_INT:
        return tsim_parse_int(value, (int)spec->lo, (int)spec->hi, field, what, err);
    case TSIM_OPTION_INT64:
        return tsim_parse_int64(value, (int64_t)spec->lo, (int64_t)spec->hi, field, what, err);
    case TSIM_OPTION_CHOICE: {
        int i = choice_index(spec->choices, value);
        if (i < 0) {
            char expected[256];
            choices_text(spec->choices, expected, sizeof expected);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: expected %s, got '%s'", what, expected, value);
        }
        *(int *)field = i;
        return TSIM_OK;
    }
    case TSIM_OPTION_STRING:
        if (strlen(value) >= spec->size)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' is too long", what, value);
        snprintf(field, spec->size, "%s", value);
        return TSIM_OK;
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "%s: unknown option type", what);
    }
}

int tsim_planner_start(tsim_planner *p, const tsim_topology *topo, tsim_error *err)
{
    int rc = p->desc->init(&p->state, topo, &p->common, p->own.bytes, err);
    if (rc)
        tsim_error_prefix(err, "planner '%s'", p->label);
    return rc;
}

int tsim_planner_slots(const tsim_planner *p, const tsim_topology *topo, int *k, tsim_error *err)
{
    if (p->desc->slots_rule) {
        int rc = p->desc->slots_rule(topo, p->common.slots, k, err);
        if (rc)
            tsim_error_prefix(err, "planner '%s'", p->label);
        return rc;
    }
    *k = p->common.slots > 0 ? p->common.slots : topo->slots;
    return TSIM_OK;
}

void tsim_planner_stop(tsim_planner *p)
{
    if (p->desc && p->state)
        p->desc->free(p->state);
    p->state = NULL;
}

void tsim_option_table_defaults(const tsim_option_spec *table, void *block)
{
    for (const tsim_option_spec *o = table; o && o->name; o++) {
        if (o->type == TSIM_OPTION_CLEAR) {
            *(bool *)((char *)block + o->offset) = true;
            continue;
        }
        /* A default that fails to parse is a bug in a table; the every-planner
         * test (test_core) checks each default against its own range. */
        tsim_error err = {0};
        if (o->def)
            tsim_option_apply(o, block, o->def, &err);
    }
}

void tsim_option_key(const char *planner, const tsim_option_spec *spec, char *key, size_t n)
{
    const char *name = spec->name;
    size_t plen = strlen(planner);
    if (strncmp(name, planner, plen) == 0 && name[plen] == '-')
        name += plen + 1;
    if (spec->type == TSIM_OPTION_CLEAR && strncmp(name, "no-", 3) == 0)
        name += 3;
    snprintf(key, n, "%s", name);
    for (char *c = key; *c; c++)
        if (*c == '-')
            *c = '_';
}

/* The n-th value of "a|b|c" into out. */
static void choice_at(const char *choices, int n, char *out, size_t size)
{
    const char *p = choices;
    for (int i = 0; i < n && *p; i++) {
        p += strcspn(p, "|");
        if (*p == '|')
            p++;
    }
    snprintf(out, size, "%.*s", (int)strcspn(p, "|"), p);
}

void tsim_option_value_text(const tsim_option_value *v, char *out, size_t n)
{
    const tsim_option_spec *o = v->spec;
    switch (o->type) {
    case TSIM_OPTION_DOUBLE:
        snprintf(out, n, "%.17g", *(const double *)v->value);
        break;
    case TSIM_OPTION_INT:
        snprintf(out, n, "%d", *(const int *)v->value);
        break;
    case TSIM_OPTION_INT64:
        snprintf(out, n, "%lld", (long long)*(const int64_t *)v->value);
        break;
    case TSIM_OPTION_CHOICE:
        choice_at(o->choices, *(const int *)v->value, out, n);
        break;
    case TSIM_OPTION_STRING:
        snprintf(out, n, "%s", (const char *)v->value);
        break;
    case TSIM_OPTION_CLEAR:
        snprintf(out, n, "%s", *(const bool *)v->value ? "true" : "false");
        break;
    }
}

static size_t option_width(const tsim_option_spec *o)
{
    switch (o->type) {
    case TSIM_OPTION_DOUBLE:
        return sizeof(double);
    case TSIM_OPTION_INT64:
        return sizeof(int64_t);
    case TSIM_OPTION_INT:
    case TSIM_OPTION_CHOICE:
        return sizeof(int);
    case TSIM_OPTION_CLEAR:
        return sizeof(bool);
    case TSIM_OPTION_STRING:
        return o->size;
    }
    return 0;
}

/* True when the option at block equals its table default. */
static bool at_default(const tsim_option_spec *o, const void *block)
{
    tsim_options_block def;
    memset(&def, 0, sizeof def);
    size_t w = option_width(o);
    if (o->offset + w > sizeof def.bytes)
        return false;
    const tsim_option_spec one[2] = {*o, {0}};
    tsim_option_table_defaults(one, def.bytes);
    const char *have = (const char *)block + o->offset, *want = (const char *)def.bytes + o->offset;
    if (o->type == TSIM_OPTION_STRING)
        return strncmp(have, want, w) == 0;
    return memcmp(have, want, w) == 0;
}

void tsim_option_visit_one(const char *planner, const tsim_option_spec *o, const void *block, tsim_option_visit fn,
                           void *ctx)
{
    tsim_option_value v = {.spec = o, .value = (const char *)block + o->offset};
    tsim_option_key(planner, o, v.key, sizeof v.key);
    v.is_default = at_default(o, block);
    v.common = !planner[0];
    fn(&v, ctx);
}

void tsim_planner_options_each(const tsim_planner *p, tsim_option_visit fn, void *ctx)
{
    for (const tsim_option_spec *o = tsim_planner_common_options; o->name; o++)
        tsim_option_visit_one("", o, &p->common, fn, ctx);
    if (p->desc->options_each) {
        p->desc->options_each(&p->common, fn, ctx);
        return;
    }
    for (const tsim_option_spec *o = p->desc->options; o && o->name; o++)
        tsim_option_visit_one(p->desc->name, o, p->own.bytes, fn, ctx);
}
