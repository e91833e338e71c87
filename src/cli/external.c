#include "external.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "registry.h"
#include "utf8.h"

/* Resolution happens while the command sets up (the studies parse their
 * lists before their worker threads start), but the lock keeps it safe from
 * any thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tsim_external_config **configs;
static int n_configs, cap_configs;

static int exec_window = TSIM_EXEC_WINDOW_DEFAULT;
static double exec_timeout = TSIM_EXEC_TIMEOUT_DEFAULT;

/* Labels of the external planners on this command line, and their
 * --LABEL-KEY=VALUE options in the order given. */
#define MAX_LABELS 64
static char labels[MAX_LABELS][TSIM_LABEL_MAX];
static int n_labels;
typedef struct {
    char label[TSIM_LABEL_MAX];
    char *key, *value;
} label_option;
static label_option *label_options;
static int n_label_options, cap_label_options;

static _Thread_local const char *running_label;

void tsim_external_enter(const char *label)
{
    running_label = label;
}

void tsim_external_leave(void)
{
    running_label = NULL;
}

const char *tsim_external_running(void)
{
    return running_label;
}

static char *dup_text(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

int tsim_external_set_window(const char *value, tsim_error *err)
{
    return tsim_parse_int(value, 1, 65536, &exec_window, "--exec-window", err);
}

int tsim_external_set_timeout(const char *value, tsim_error *err)
{
    return tsim_parse_double(value, 0.001, 86400, &exec_timeout, "--exec-timeout", err);
}

void tsim_external_scan_list(const char *list)
{
    /* The entry syntax of tsim_planner_list_parse: ',' between entries,
     * LABEL= before the first ':'. */
    for (const char *entry = list; entry && *entry;) {
        size_t len = strcspn(entry, ",");
        const char *eq = memchr(entry, '=', len);
        const char *colon = memchr(entry, ':', len);
        if (eq && (!colon || eq < colon) && eq > entry && (size_t)(eq - entry) < TSIM_LABEL_MAX) {
            const char *name = eq + 1;
            size_t rest = len - (size_t)(name - entry);
            bool external = (rest >= 5 && strncmp(name, "exec:", 5) == 0) ||
                            (rest >= 7 && strncmp(name, "plugin:", 7) == 0);
            if (external && n_labels < MAX_LABELS) {
                memcpy(labels[n_labels], entry, (size_t)(eq - entry));
                labels[n_labels][eq - entry] = '\0';
                n_labels++;
            }
        }
        entry += len;
        if (*entry == ',')
            entry++;
    }
}

int tsim_external_take_option(const char *text, bool *taken, tsim_error *err)
{
    *taken = false;
    if (strncmp(text, "--", 2) != 0)
        return TSIM_OK;
    const char *body = text + 2;
    /* The longest label that prefixes the option wins ("a" vs "a-b"). */
    size_t best = 0;
    for (int i = 0; i < n_labels; i++) {
        size_t len = strlen(labels[i]);
        if (len > best && strncmp(body, labels[i], len) == 0 && body[len] == '-' && body[len + 1] &&
            body[len + 1] != '=')
            best = len;
    }
    if (best == 0)
        return TSIM_OK;
    *taken = true;
    const char *key = body + best + 1;
    const char *eq = strchr(key, '=');
    if (!eq)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "option '%s': an external planner's options take their value after '=' "
                              "(--%.*s-%s=VALUE)",
                              text, (int)best, body, key);
    if (n_label_options == cap_label_options) {
        int cap = cap_label_options ? 2 * cap_label_options : 16;
        label_option *grown = realloc(label_options, sizeof *grown * (size_t)cap);
        if (!grown)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        label_options = grown;
        cap_label_options = cap;
    }
    label_option *o = &label_options[n_label_options];
    snprintf(o->label, sizeof o->label, "%.*s", (int)best, body);
    o->key = dup_text(key, (size_t)(eq - key));
    o->value = dup_text(eq + 1, strlen(eq + 1));
    if (!o->key || !o->value) {
        free(o->key);
        free(o->value);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    n_label_options++;
    return TSIM_OK;
}

/* The command-line options of cfg's label, into cfg->keys/values (a key given
 * twice keeps its last value). */
static int copy_label_options(tsim_external_config *cfg, tsim_error *err)
{
    cfg->keys = calloc((size_t)n_label_options + 1, sizeof *cfg->keys);
    cfg->values = calloc((size_t)n_label_options + 1, sizeof *cfg->values);
    if (!cfg->keys || !cfg->values)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; i < n_label_options; i++) {
        const label_option *o = &label_options[i];
        if (strcmp(o->label, cfg->label) != 0)
            continue;
        int at = cfg->n_options;
        for (int k = 0; k < cfg->n_options; k++)
            if (strcmp(cfg->keys[k], o->key) == 0)
                at = k;
        if (at == cfg->n_options) {
            cfg->keys[at] = dup_text(o->key, strlen(o->key));
            cfg->n_options++;
        } else {
            free(cfg->values[at]);
        }
        cfg->values[at] = dup_text(o->value, strlen(o->value));
        if (!cfg->keys[at] || !cfg->values[at])
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    return TSIM_OK;
}

static bool valid_utf8(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = tsim_utf8_sequence(p);
        if (n == 0)
            return false;
        p += n;
    }
    return true;
}

/* An exec planner gets its options as JSON strings, which are UTF-8. */
static int check_exec_options(const tsim_external_config *cfg, tsim_error *err)
{
    for (int i = 0; i < cfg->n_options; i++) {
        if (!valid_utf8(cfg->keys[i]))
            return tsim_error_set(err, TSIM_E_INPUT, "planner '%s': an option's name (--%s-...) is not valid UTF-8 "
                                  "(an exec planner gets its options as JSON text)", cfg->label, cfg->label);
        if (!valid_utf8(cfg->values[i]))
            return tsim_error_set(err, TSIM_E_INPUT, "planner '%s': --%s-%s: the value is not valid UTF-8 (an exec "
                                  "planner gets its options as JSON text)", cfg->label, cfg->label, cfg->keys[i]);
    }
    return TSIM_OK;
}

static void config_free(tsim_external_config *cfg)
{
    if (!cfg)
        return;
    if (cfg->kind == TSIM_EXTERNAL_PLUGIN)
        tsim_plugin_unload(cfg);
    for (int i = 0; i < cfg->n_options; i++) {
        free(cfg->keys[i]);
        free(cfg->values[i]);
    }
    free(cfg->keys);
    free(cfg->values);
    free(cfg->name);
    free(cfg);
}

/* The desc's given_option: an exec planner's --LABEL-KEY=VALUE settings as
 * given, a plugin's every option (defaults included) as it holds them. */
static bool given_option(const tsim_planner_options *opts, int i, const char **key, char *value, size_t n)
{
    const tsim_external_config *cfg = opts->external;
    if (!cfg || i < 0)
        return false;
    if (cfg->kind == TSIM_EXTERNAL_EXEC) {
        if (i >= cfg->n_options)
            return false;
        *key = cfg->keys[i];
        snprintf(value, n, "%s", cfg->values[i]);
        return true;
    }
    if (i >= cfg->n_plugin_options)
        return false;
    const tsim_option_spec *o = &cfg->plugin_options[i];
    const char *at = (const char *)cfg->options_block + o->offset;
    *key = o->name + strlen(cfg->label) + 1; /* named LABEL-KEY */
    switch (o->type) {
    case TSIM_OPTION_DOUBLE:
        snprintf(value, n, "%.17g", *(const double *)(const void *)at);
        break;
    case TSIM_OPTION_INT:
        snprintf(value, n, "%d", *(const int *)(const void *)at);
        break;
    case TSIM_OPTION_INT64:
        snprintf(value, n, "%lld", (long long)*(const int64_t *)(const void *)at);
        break;
    case TSIM_OPTION_CHOICE: {
        const char *c = o->choices;
        for (int k = *(const int *)(const void *)at; k > 0 && c; k--)
            c = (c = strchr(c, '|')) ? c + 1 : NULL;
        snprintf(value, n, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
        break;
    }
    case TSIM_OPTION_STRING:
        snprintf(value, n, "%.*s", (int)strnlen(at, o->size), at);
        break;
    case TSIM_OPTION_CLEAR:
        snprintf(value, n, "%s", *(const bool *)(const void *)at ? "true" : "false");
        break;
    }
    return true;
}

static int resolve(tsim_planner *p, const char *name, const char *options, tsim_error *err)
{
    tsim_external_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    const bool exec = strncmp(name, "exec:", 5) == 0;
    cfg->kind = exec ? TSIM_EXTERNAL_EXEC : TSIM_EXTERNAL_PLUGIN;
    snprintf(cfg->label, sizeof cfg->label, "%s", p->label);
    cfg->name = dup_text(name, strlen(name));
    cfg->window = exec_window;
    cfg->timeout_s = exec_timeout;
    int rc = TSIM_OK;
    if (!cfg->name) {
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        goto fail;
    }
    cfg->target = cfg->name + (exec ? 5 : 7);
    if (!*cfg->target) {
        rc = tsim_error_set(err, TSIM_E_INPUT, "planner '%s': %s", p->label,
                            exec ? "exec: needs a command (LABEL=exec:CMD)" : "plugin: needs a library (LABEL=plugin:LIB.so)");
        goto fail;
    }
    pthread_mutex_lock(&lock);
    rc = copy_label_options(cfg, err);
    pthread_mutex_unlock(&lock);
    if (rc)
        goto fail;
    if (exec) {
        tsim_exec_describe(&cfg->desc);
        if ((rc = check_exec_options(cfg, err)))
            goto fail;
    } else {
        tsim_plugin_describe(&cfg->desc);
        if ((rc = tsim_plugin_load(cfg, options, err))) {
            tsim_error_prefix(err, "planner '%s'", p->label);
            goto fail;
        }
    }
    cfg->desc.name = cfg->name;
    cfg->desc.given_option = given_option;
    pthread_mutex_lock(&lock);
    if (n_configs == cap_configs) {
        int cap = cap_configs ? 2 * cap_configs : 8;
        tsim_external_config **grown = realloc(configs, sizeof *grown * (size_t)cap);
        if (grown) {
            configs = grown;
            cap_configs = cap;
        }
    }
    if (n_configs < cap_configs)
        configs[n_configs++] = cfg;
    else
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    pthread_mutex_unlock(&lock);
    if (rc)
        goto fail;
    p->desc = &cfg->desc;
    p->opts.external = cfg;
    return TSIM_OK;
fail:
    config_free(cfg);
    return rc;
}

void tsim_external_help(FILE *out)
{
    fprintf(out, "\n"
                 "External planners (docs/planner-protocol.md), as --planners entries:\n"
                 "  LABEL=exec:CMD            a process speaking line-delimited JSON; CMD (run by\n"
                 "                            /bin/sh) is the rest of the entry\n"
                 "  LABEL=plugin:LIB[:--K=V]  a C plugin (include/taotsim/planner.h)\n"
                 "  --LABEL-KEY=VALUE         an option of the external planner LABEL\n"
                 "  --exec-window N           records in flight per exec planner (default %d)\n"
                 "  --exec-timeout S          seconds an exec planner may take per answer (default %g)\n",
            TSIM_EXEC_WINDOW_DEFAULT, TSIM_EXEC_TIMEOUT_DEFAULT);
}

int tsim_external_finish(tsim_error *err)
{
    return tsim_exec_finish_all(err);
}

void tsim_external_install(void)
{
    tsim_planner_set_resolver(resolve);
}

void tsim_external_cleanup(void)
{
    tsim_error ignored = {0};
    tsim_exec_finish_all(&ignored); /* a late failure of this command is not the next one's */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_configs; i++)
        config_free(configs[i]);
    free(configs);
    configs = NULL;
    n_configs = cap_configs = 0;
    for (int i = 0; i < n_label_options; i++) {
        free(label_options[i].key);
        free(label_options[i].value);
    }
    free(label_options);
    label_options = NULL;
    n_label_options = cap_label_options = 0;
    n_labels = 0;
    exec_window = TSIM_EXEC_WINDOW_DEFAULT;
    exec_timeout = TSIM_EXEC_TIMEOUT_DEFAULT;
    pthread_mutex_unlock(&lock);
}
