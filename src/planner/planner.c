#include "planner.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

const tsim_option_spec tsim_planner_common_options[] = {
    {.name = "lambda-plan", .type = TSIM_OPTION_DOUBLE, .offset = offsetof(tsim_planner_options, lambda_plan),
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
    if (!value || !*value)
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

void tsim_option_help_line(const tsim_option_spec *spec, FILE *out)
{
    char head[128];
    int n = snprintf(head, sizeof head, "  --%s%s%s", spec->name, spec->arg ? " " : "", spec->arg ? spec->arg : "");
    /* The help column starts at 28, with at least two spaces before it. */
    int pad = n < 26 ? 28 - n : 2;
    if (spec->def && !strstr(spec->help, "(default"))
        fprintf(out, "%s%*s%s (default %s)\n", head, pad, "", spec->help, spec->def);
    else
        fprintf(out, "%s%*s%s\n", head, pad, "", spec->help);
}

int tsim_planner_start(tsim_planner *p, const tsim_topology *topo, tsim_error *err)
{
    int rc = p->desc->init(&p->state, topo, &p->opts, err);
    if (rc)
        tsim_error_prefix(err, "planner '%s'", p->label);
    return rc;
}

void tsim_planner_stop(tsim_planner *p)
{
    if (p->desc && p->state)
        p->desc->free(p->state);
    p->state = NULL;
}
