#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "external.h"
#include "registry.h"

/* getopt_long's val for option i of the merged table: past every char. */
#define VAL_BASE 1000

/* Where an option of the merged table comes from. */
enum { FROM_COMMAND, FROM_PLANNER, FROM_STEP_MODEL, FROM_HELP, FROM_EXEC };

typedef struct {
    int from;
    int id;                        /* FROM_COMMAND */
    const tsim_option_spec *spec;  /* FROM_PLANNER */
    const char *name;
    bool has_value;
} merged_option;

static int add(merged_option *m, struct option *lo, int n, int from, const char *name, bool has_value)
{
    m[n] = (merged_option){.from = from, .name = name, .has_value = has_value};
    lo[n] = (struct option){.name = name, .has_arg = has_value ? required_argument : no_argument, .flag = NULL,
                            .val = VAL_BASE + n};
    return n + 1;
}

/* The argv element that held the option getopt_long just returned. */
static const char *option_text(char **argv, bool has_value)
{
    if (has_value && optarg == argv[optind - 1])
        return argv[optind - 2];
    return argv[optind - 1];
}

/* Long names must be given in full: getopt_long would take any unique prefix,
 * which breaks scripts when a later version adds an option. */
static bool spelled_in_full(const char *text, const char *name)
{
    if (strncmp(text, "--", 2) != 0)
        return true; /* a short option */
    size_t len = strcspn(text + 2, "=");
    return len == strlen(name) && strncmp(text + 2, name, len) == 0;
}

/* External planners (external.h): their labels are learnt from --planners
 * before parsing, so that --LABEL-KEY=VALUE, unknown to every table, can be
 * told from a typo; the exec settings come with the planner options. */
static const char *const exec_options[] = {"exec-window", "exec-timeout", NULL};

static void scan_external_labels(const tsim_cli_parser *p, int argc, char **argv)
{
    bool has_planners = false;
    for (const tsim_cli_option *o = p->options; o && o->name; o++)
        has_planners = has_planners || strcmp(o->name, "planners") == 0;
    for (int i = 1; has_planners && i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strncmp(argv[i], "--planners=", 11) == 0)
            tsim_external_scan_list(argv[i] + 11);
        else if (strcmp(argv[i], "--planners") == 0 && i + 1 < argc)
            tsim_external_scan_list(argv[++i]);
    }
}

/* An option no table knows: an external planner's, or an error. */
static int unknown_option(const tsim_cli_parser *p, const char *text, bool *taken)
{
    tsim_error err = {0};
    if (tsim_external_take_option(text, taken, &err))
        return tsim_cli_usage_error(p->cmd, "%s", err.msg);
    return 0;
}

int tsim_cli_parse(const tsim_cli_parser *p, int argc, char **argv)
{
    int cap = 4;
    for (const tsim_cli_option *o = p->options; o && o->name; o++)
        cap++;
    if (p->planner)
        for (int i = 0; tsim_planner_option_at(i); i++)
            cap++;
    if (p->step_model)
        for (int i = 0; tsim_step_model_option_name(i); i++)
            cap++;
    merged_option *m = calloc((size_t)cap, sizeof *m);
    struct option *lo = calloc((size_t)cap + 1, sizeof *lo);
    char *shorts = calloc(2 * (size_t)cap + 4, 1);
    if (!m || !lo || !shorts) {
        free(m);
        free(lo);
        free(shorts);
        tsim_error err = {0};
        tsim_error_set(&err, TSIM_E_INPUT, "out of memory parsing the command line");
        return tsim_cli_fail(p->cmd, &err);
    }
    /* ':' first: a missing value is reported as ':' rather than '?'. */
    strcpy(shorts, ":h");
    int n = 0;
    n = add(m, lo, n, FROM_HELP, "help", false);
    for (const tsim_cli_option *o = p->options; o && o->name; o++) {
        if (o->short_name) {
            size_t len = strlen(shorts);
            shorts[len] = (char)o->short_name;
            if (o->has_value)
                shorts[len + 1] = ':';
        }
        n = add(m, lo, n, FROM_COMMAND, o->name, o->has_value);
        m[n - 1].id = o->id;
    }
    if (p->planner)
        for (int i = 0; tsim_planner_option_at(i); i++) {
            const tsim_option_spec *s = tsim_planner_option_at(i);
            n = add(m, lo, n, FROM_PLANNER, s->name, s->type != TSIM_OPTION_CLEAR);
            m[n - 1].spec = s;
        }
    if (p->step_model)
        for (int i = 0; tsim_step_model_option_name(i); i++) {
            const char *name = tsim_step_model_option_name(i);
            n = add(m, lo, n, FROM_STEP_MODEL, name, !tsim_step_model_option_is_flag(name));
        }
    if (p->planner) {
        for (int i = 0; exec_options[i]; i++)
            n = add(m, lo, n, FROM_EXEC, exec_options[i], true);
        scan_external_labels(p, argc, argv);
    }

    int status = 0;
    tsim_error err = {0};
    opterr = 0;
    optind = 0; /* GNU: a full re-initialisation, so commands can be parsed again (tests) */
    for (;;) {
        int c = getopt_long(argc, argv, shorts, lo, NULL);
        if (c == -1)
            break;
        if (c == ':') {
            const char *name = optopt >= VAL_BASE ? m[optopt - VAL_BASE].name : NULL;
            if (name)
                status = tsim_cli_usage_error(p->cmd, "option --%s needs a value", name);
            else
                status = tsim_cli_usage_error(p->cmd, "option -%c needs a value", optopt);
            break;
        }
        if (c == '?') {
            if (optopt >= VAL_BASE)
                status = tsim_cli_usage_error(p->cmd, "option --%s takes no value (got '%s')",
                                              m[optopt - VAL_BASE].name, argv[optind - 1]);
            else if (optopt)
                status = tsim_cli_usage_error(p->cmd, "unknown option '-%c'", optopt);
            else {
                const char *text = argv[optind - 1];
                bool taken = false;
                if ((status = unknown_option(p, text, &taken)) != 0)
                    break;
                if (taken)
                    continue;
                char name[128];
                snprintf(name, sizeof name, "%.*s", (int)strcspn(text + strspn(text, "-"), "="),
                         text + strspn(text, "-"));
                const char *hint = p->hint ? p->hint(name) : NULL;
                status = tsim_cli_usage_error(p->cmd, "unknown option '%s'%s%s", text, hint ? ": " : "",
                                              hint ? hint : "");
            }
            break;
        }
        if (c == 'h') {
            status = TSIM_CLI_HELP;
            break;
        }
        int index = -1;
        if (c >= VAL_BASE) {
            index = c - VAL_BASE;
            if (!spelled_in_full(option_text(argv, m[index].has_value), m[index].name)) {
                /* getopt_long took an abbreviation: maybe --LABEL-KEY=VALUE */
                const char *text = option_text(argv, m[index].has_value);
                bool taken = false;
                if ((status = unknown_option(p, text, &taken)) != 0)
                    break;
                if (taken) /* it had "=VALUE", so getopt_long took no further argument */
                    continue;
                status = tsim_cli_usage_error(p->cmd, "unknown option '%s' (did you mean --%s?)", text,
                                              m[index].name);
                break;
            }
        } else {
            for (const tsim_cli_option *o = p->options; o && o->name; o++)
                if (o->short_name == c)
                    for (int i = 0; i < n; i++)
                        if (m[i].from == FROM_COMMAND && m[i].id == o->id)
                            index = i;
            if (index < 0) {
                status = tsim_cli_usage_error(p->cmd, "unknown option '-%c'", c);
                break;
            }
        }
        const merged_option *o = &m[index];
        const char *value = o->has_value ? optarg : NULL;
        int rc = TSIM_OK;
        bool known;
        switch (o->from) {
        case FROM_HELP:
            status = TSIM_CLI_HELP;
            break;
        case FROM_COMMAND:
            rc = p->on_option(p->ctx, o->id, value, &err);
            break;
        case FROM_PLANNER:
            rc = tsim_planner_options_set(p->planner, o->spec->name, value, &known, &err);
            if (rc == TSIM_OK && p->on_planner_option)
                p->on_planner_option(p->ctx, o->spec);
            break;
        case FROM_EXEC:
            rc = strcmp(o->name, "exec-window") == 0 ? tsim_external_set_window(value, &err)
                                                       : tsim_external_set_timeout(value, &err);
            break;
        default:
            rc = tsim_step_model_option(p->step_model, o->name, value, &known, &err);
            break;
        }
        if (status == TSIM_CLI_HELP)
            break;
        if (rc) {
            status = tsim_cli_usage_error(p->cmd, "%s", err.msg);
            break;
        }
    }
    /* GNU getopt_long moved every positional argument behind the options. */
    for (int i = optind; status == 0 && i < argc; i++) {
        if (!p->on_positional) {
            status = tsim_cli_usage_error(p->cmd, "unexpected argument '%s'", argv[i]);
            break;
        }
        if (p->on_positional(p->ctx, argv[i], &err))
            status = tsim_cli_usage_error(p->cmd, "%s", err.msg);
    }
    free(m);
    free(lo);
    free(shorts);
    return status;
}
