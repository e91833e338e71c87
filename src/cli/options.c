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

/* The merged table of one parse: getopt_long's options and where each comes from. */
typedef struct {
    merged_option *m;
    struct option *lo;
    char *shorts;
    int n;
} merged_table;

static void table_free(merged_table *t)
{
    free(t->m);
    free(t->lo);
    free(t->shorts);
}

/* Help, the command's options, then the planner's, the step model's and the
 * exec settings when the command takes them. */
static int table_build(const tsim_cli_parser *p, merged_table *t)
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
    t->m = calloc((size_t)cap, sizeof *t->m);
    t->lo = calloc((size_t)cap + 1, sizeof *t->lo);
    t->shorts = calloc(2 * (size_t)cap + 4, 1);
    if (!t->m || !t->lo || !t->shorts) {
        table_free(t);
        tsim_error err = {0};
        tsim_error_set(&err, TSIM_E_INPUT, "out of memory parsing the command line");
        return tsim_cli_fail(p->cmd, &err);
    }
    merged_option *m = t->m;
    /* ':' first: a missing value is reported as ':' rather than '?'. */
    strcpy(t->shorts, ":h");
    int n = add(m, t->lo, 0, FROM_HELP, "help", false);
    for (const tsim_cli_option *o = p->options; o && o->name; o++) {
        if (o->short_name) {
            size_t len = strlen(t->shorts);
            t->shorts[len] = (char)o->short_name;
            if (o->has_value)
                t->shorts[len + 1] = ':';
        }
        n = add(m, t->lo, n, FROM_COMMAND, o->name, o->has_value);
        m[n - 1].id = o->id;
    }
    if (p->planner)
        for (int i = 0; tsim_planner_option_at(i); i++) {
            const tsim_option_spec *s = tsim_planner_option_at(i);
            n = add(m, t->lo, n, FROM_PLANNER, s->name, s->type != TSIM_OPTION_CLEAR);
            m[n - 1].spec = s;
        }
    if (p->step_model)
        for (int i = 0; tsim_step_model_option_name(i); i++) {
            const char *name = tsim_step_model_option_name(i);
            n = add(m, t->lo, n, FROM_STEP_MODEL, name, !tsim_step_model_option_is_flag(name));
        }
    if (p->planner)
        for (int i = 0; exec_options[i]; i++)
            n = add(m, t->lo, n, FROM_EXEC, exec_options[i], true);
    t->n = n;
    return 0;
}

/* getopt_long returned ':' or '?'. Returns the status: 2 after the message,
 * or 0 when an external planner took the option. */
static int getopt_trouble(const tsim_cli_parser *p, const merged_table *t, int c, char **argv)
{
    if (c == ':') {
        if (optopt >= VAL_BASE)
            return tsim_cli_usage_error(p->cmd, "option --%s needs a value", t->m[optopt - VAL_BASE].name);
        return tsim_cli_usage_error(p->cmd, "option -%c needs a value", optopt);
    }
    if (optopt >= VAL_BASE)
        return tsim_cli_usage_error(p->cmd, "option --%s takes no value (got '%s')", t->m[optopt - VAL_BASE].name,
                                    argv[optind - 1]);
    if (optopt)
        return tsim_cli_usage_error(p->cmd, "unknown option '-%c'", optopt);
    const char *text = argv[optind - 1];
    bool taken = false;
    int status = unknown_option(p, text, &taken);
    if (status || taken)
        return status;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(text + strspn(text, "-"), "="), text + strspn(text, "-"));
    const char *hint = p->hint ? p->hint(name) : NULL;
    return tsim_cli_usage_error(p->cmd, "unknown option '%s'%s%s", text, hint ? ": " : "", hint ? hint : "");
}

/* The merged-table entry of what getopt_long returned: *index, or the status
 * (2 after the message; 0 with *index -1 when an external planner took it). */
static int find_entry(const tsim_cli_parser *p, const merged_table *t, int c, char **argv, int *index)
{
    *index = -1;
    if (c >= VAL_BASE) {
        const merged_option *o = &t->m[c - VAL_BASE];
        const char *text = option_text(argv, o->has_value);
        if (spelled_in_full(text, o->name)) {
            *index = c - VAL_BASE;
            return 0;
        }
        /* getopt_long took an abbreviation: maybe --LABEL-KEY=VALUE (then it
         * had "=VALUE", so getopt_long took no further argument) */
        bool taken = false;
        int status = unknown_option(p, text, &taken);
        if (status || taken)
            return status;
        return tsim_cli_usage_error(p->cmd, "unknown option '%s' (did you mean --%s?)", text, o->name);
    }
    for (const tsim_cli_option *o = p->options; o && o->name; o++)
        if (o->short_name == c)
            for (int i = 0; i < t->n; i++)
                if (t->m[i].from == FROM_COMMAND && t->m[i].id == o->id)
                    *index = i;
    if (*index < 0)
        return tsim_cli_usage_error(p->cmd, "unknown option '-%c'", c);
    return 0;
}

/* Hands one option to whoever takes it. Returns 0, TSIM_CLI_HELP or 2. */
static int apply(const tsim_cli_parser *p, const merged_option *o, const char *value)
{
    tsim_error err = {0};
    int rc = TSIM_OK;
    bool known;
    switch (o->from) {
    case FROM_HELP:
        return TSIM_CLI_HELP;
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
    return rc ? tsim_cli_usage_error(p->cmd, "%s", err.msg) : 0;
}

int tsim_cli_parse(const tsim_cli_parser *p, int argc, char **argv)
{
    merged_table t = {0};
    int status = table_build(p, &t);
    if (status)
        return status;
    if (p->planner)
        scan_external_labels(p, argc, argv);
    opterr = 0;
    optind = 0; /* GNU: a full re-initialisation, so commands can be parsed again (tests) */
    while (status == 0) {
        int c = getopt_long(argc, argv, t.shorts, t.lo, NULL);
        if (c == -1)
            break;
        if (c == 'h') {
            status = TSIM_CLI_HELP;
            break;
        }
        int index = -1;
        if (c == ':' || c == '?')
            status = getopt_trouble(p, &t, c, argv);
        else
            status = find_entry(p, &t, c, argv, &index);
        if (status == 0 && index >= 0)
            status = apply(p, &t.m[index], t.m[index].has_value ? optarg : NULL);
    }
    /* GNU getopt_long moved every positional argument behind the options. */
    for (int i = optind; status == 0 && i < argc; i++) {
        tsim_error err = {0};
        if (!p->on_positional)
            status = tsim_cli_usage_error(p->cmd, "unexpected argument '%s'", argv[i]);
        else if (p->on_positional(p->ctx, argv[i], &err))
            status = tsim_cli_usage_error(p->cmd, "%s", err.msg);
    }
    table_free(&t);
    return status;
}
