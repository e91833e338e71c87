/* LABEL=plugin:LIB.so: a planner in a shared library exporting a descriptor
 * (include/taotsim/planner.h). The library is loaded once per configured
 * planner, its descriptor checked before use, and its options go through
 * taotsim's own option parser; plans go through the evaluator like every
 * other planner's. */
#include "external.h"

#include <dlfcn.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "record.h"
#include "topology.h"

/* The plugin's replica rows are copied as they are: same layout. */
_Static_assert(sizeof(taotsim_replica) == sizeof(tsim_replica), "replica layouts differ");

#define PLUGIN_ERROR_MAX 1024
#define PLUGIN_OPTIONS_MAX (1u << 20)
/* Records per plan_batch call: past this a batch buys nothing, and the plan
 * buffers (a batch of plans of R * K rows each) would grow without bound. */
#define PLUGIN_BATCH_MAX 4096
/* The plan buffers of one configured plugin, all batch slots together. */
#define PLUGIN_BUFFERS_MAX ((size_t)1 << 30)

/* Everything the plugin can write is a buffer: the sizes and pointers taotsim
 * reads back live here (R, E, capacity, the buffers' addresses), and the
 * structs handed over are refilled from them before every call. */
typedef struct {
    const tsim_external_config *cfg;
    const taotsim_planner_descriptor *d;
    void *inner;
    int R, E;
    taotsim_topology topo;       /* the plugin's copy (home: its own buffer) */
    int32_t *home;               /* [E]: the copy topo.home points at */
    int slots_per_plan;          /* public plans allocated: max(batch, 1) */
    int capacity;                /* replicas per plan, R * K */
    taotsim_record *recs;        /* [slots_per_plan] views of the records */
    const taotsim_record **rec_ptrs;
    int64_t *counts;             /* [slots_per_plan * R * E]: copies of the records' counts */
    taotsim_plan *plans;         /* [slots_per_plan] */
    taotsim_replica *replicas;   /* [slots_per_plan * (capacity + 1)] */
    int64_t *alloc;              /* [slots_per_plan * (capacity + 1) * R] */
    int32_t *placement;          /* [slots_per_plan * E] */
    char error[PLUGIN_ERROR_MAX];
} plugin_state;

/* ---- loading and checking -------------------------------------------------- */

static bool option_name_ok(const char *name)
{
    if (!name || !*name || strlen(name) > 48)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
              *c == '_'))
            return false;
    return true;
}

/* Checks one option of the plugin's table and turns it into taotsim's. */
static int convert_option(const tsim_external_config *cfg, const taotsim_option *o, size_t options_size,
                          tsim_option_spec *out, tsim_error *err)
{
    if (!option_name_ok(o->name))
        return tsim_error_set(err, TSIM_E_INPUT, "an option of the descriptor has a bad name (letters, digits, "
                                                 "'-', '_', at most 48)");
    size_t width, align;
    tsim_option_type type;
    switch (o->type) {
    case TAOTSIM_OPTION_DOUBLE:
        type = TSIM_OPTION_DOUBLE, width = sizeof(double), align = alignof(double);
        break;
    case TAOTSIM_OPTION_INT:
        type = TSIM_OPTION_INT, width = sizeof(int), align = alignof(int);
        break;
    case TAOTSIM_OPTION_INT64:
        type = TSIM_OPTION_INT64, width = sizeof(int64_t), align = alignof(int64_t);
        break;
    case TAOTSIM_OPTION_CHOICE:
        type = TSIM_OPTION_CHOICE, width = sizeof(int), align = alignof(int);
        if (!o->choices || !*o->choices)
            return tsim_error_set(err, TSIM_E_INPUT, "option '%s' is a choice without choices", o->name);
        break;
    case TAOTSIM_OPTION_STRING:
        type = TSIM_OPTION_STRING, width = o->size, align = 1;
        if (o->size < 2)
            return tsim_error_set(err, TSIM_E_INPUT, "option '%s' is a string of size %zu", o->name, o->size);
        break;
    default:
        return tsim_error_set(err, TSIM_E_INPUT, "option '%s' has unknown type %d", o->name, (int)o->type);
    }
    if (o->offset > options_size || width > options_size - o->offset || o->offset % align != 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "option '%s' lies at offset %zu (%zu bytes), outside or misaligned in the %zu-byte "
                              "options block",
                              o->name, o->offset, width, options_size);
    if (!o->def)
        return tsim_error_set(err, TSIM_E_INPUT, "option '%s' has no default", o->name);
    size_t n = strlen(cfg->label) + strlen(o->name) + 2;
    char *name = malloc(n);
    if (!name)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    snprintf(name, n, "%s-%s", cfg->label, o->name);
    *out = (tsim_option_spec){.name = name, .type = type, .offset = o->offset, .size = o->size, .lo = o->lo,
                              .hi = o->hi, .choices = o->choices, .arg = "X", .def = o->def,
                              .help = o->help ? o->help : ""};
    return TSIM_OK;
}

static const tsim_option_spec *plugin_option_find(const tsim_external_config *cfg, const char *key)
{
    size_t skip = strlen(cfg->label) + 1;
    for (int i = 0; i < cfg->n_plugin_options; i++)
        if (strcmp(cfg->plugin_options[i].name + skip, key) == 0)
            return &cfg->plugin_options[i];
    return NULL;
}

/* KEY=VALUE for the plugin; "--LABEL-KEY" in messages. */
static int plugin_option_set(tsim_external_config *cfg, const char *key, const char *value, tsim_error *err)
{
    const tsim_option_spec *spec = plugin_option_find(cfg, key);
    if (!spec) {
        char known[512] = "";
        for (int i = 0; i < cfg->n_plugin_options; i++) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof known - used, "%s--%s", i ? ", " : "", cfg->plugin_options[i].name);
        }
        return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s-%s (plugin '%s' takes %s)", cfg->label, key,
                              cfg->plugin->name, known[0] ? known : "no options");
    }
    return tsim_option_apply(spec, cfg->options_block, value, err);
}

static int check_descriptor(tsim_external_config *cfg, const taotsim_planner_descriptor *d, tsim_error *err)
{
    const char *path = cfg->target;
    /* The version first: nothing else of a descriptor of another ABI can be read. */
    if (d->abi_version != TAOTSIM_PLANNER_ABI_VERSION)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: built for planner ABI %u, this taotsim speaks ABI %u (rebuild the plugin against "
                              "this taotsim's include/taotsim/planner.h)",
                              path, d->abi_version, TAOTSIM_PLANNER_ABI_VERSION);
    if (d->descriptor_size != sizeof *d)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: its descriptor is %u bytes, ABI %u's is %zu (built against another header?)", path,
                              d->descriptor_size, TAOTSIM_PLANNER_ABI_VERSION, sizeof *d);
    if (!option_name_ok(d->name))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: the descriptor has no name (letters, digits, '-', '_')", path);
    const char *missing = !d->init ? "init" : !d->plan ? "plan" : !d->free ? "free" : NULL;
    if (missing)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: the descriptor of '%s' has no %s function", path, d->name,
                              missing);
    if (d->batch > PLUGIN_BATCH_MAX)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' asks for batches of %d records; at most %d", path,
                              d->name, (int)d->batch, PLUGIN_BATCH_MAX);
    if (d->batch > 1 && !d->plan_batch)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' asks for batches of %d but has no plan_batch", path,
                              d->name, (int)d->batch);
    if (d->options_size > PLUGIN_OPTIONS_MAX || (d->options && d->options_size == 0))
        return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' declares an options block of %zu bytes", path, d->name,
                              d->options_size);
    int n = 0;
    for (const taotsim_option *o = d->options; o && o->name; o++)
        if (++n > 256)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: '%s' has more than 256 options (no terminator?)", path,
                                  d->name);
    cfg->plugin_options = calloc((size_t)n + 1, sizeof *cfg->plugin_options);
    cfg->options_block = calloc(1, d->options_size ? d->options_size : 1);
    if (!cfg->plugin_options || !cfg->options_block)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        const taotsim_option *o = &d->options[i];
        int rc = convert_option(cfg, o, d->options_size, &cfg->plugin_options[i], err);
        if (rc) {
            tsim_error_prefix(err, "%s", path);
            return rc;
        }
        cfg->n_plugin_options = i + 1;
        for (int k = 0; k < i; k++)
            if (strcmp(d->options[k].name, o->name) == 0)
                return tsim_error_set(err, TSIM_E_INPUT, "%s: option '%s' is listed twice", path, o->name);
        if ((rc = tsim_option_apply(&cfg->plugin_options[i], cfg->options_block, o->def, err))) {
            tsim_error_prefix(err, "%s: the default of option '%s' does not parse", path, o->name);
            return rc;
        }
    }
    return TSIM_OK;
}

int tsim_plugin_load(tsim_external_config *cfg, const char *options, tsim_error *err)
{
    const char *path = cfg->target;
    tsim_external_enter(cfg->label); /* its constructors run here */
    cfg->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    tsim_external_leave();
    if (!cfg->library) {
        const char *why = dlerror();
        return tsim_error_set(err, TSIM_E_INPUT, "cannot load %s: %s%s", path, why ? why : "unknown error",
                              strchr(path, '/') ? "" : " (give a path with a '/', e.g. ./libmine.so)");
    }
    void *sym = dlsym(cfg->library, TAOTSIM_PLANNER_ENTRY);
    if (!sym)
        return tsim_error_set(err, TSIM_E_INPUT, "%s does not export %s (include/taotsim/planner.h)", path,
                              TAOTSIM_PLANNER_ENTRY);
    taotsim_planner_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* POSIX: dlsym's object pointer holds a function */
    tsim_external_enter(cfg->label);
    const taotsim_planner_descriptor *d = entry();
    tsim_external_leave();
    if (!d)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: %s() returned no descriptor", path, TAOTSIM_PLANNER_ENTRY);
    cfg->plugin = d;
    int rc = check_descriptor(cfg, d, err);
    if (rc)
        return rc;
    cfg->desc.summary = d->summary;
    /* Options: the command line's --LABEL-KEY=VALUE, then the spec's own
     * ":--KEY=VALUE" (the same ':' rule as built-in planners). */
    for (int i = 0; i < cfg->n_options && rc == TSIM_OK; i++)
        rc = plugin_option_set(cfg, cfg->keys[i], cfg->values[i], err);
    if (rc || !options)
        return rc;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", options);
    for (char *opt = buf; opt && rc == TSIM_OK;) {
        char *next = strstr(opt, ":--");
        if (next)
            *next++ = '\0';
        if (strncmp(opt, "--", 2) != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "option '%s' must start with --", opt);
        char *value = strchr(opt + 2, '=');
        if (value)
            *value++ = '\0';
        rc = plugin_option_set(cfg, opt + 2, value, err);
        opt = next;
    }
    return rc;
}

void tsim_plugin_unload(tsim_external_config *cfg)
{
    for (int i = 0; i < cfg->n_plugin_options; i++)
        free((char *)cfg->plugin_options[i].name);
    free(cfg->plugin_options);
    free(cfg->options_block);
    cfg->plugin_options = NULL;
    cfg->options_block = NULL;
    cfg->n_plugin_options = 0;
    if (cfg->library) {
        tsim_external_enter(cfg->label); /* its destructors run here */
        dlclose(cfg->library);
        tsim_external_leave();
    }
    cfg->library = NULL;
    cfg->plugin = NULL;
}

/* ---- running it -------------------------------------------------------------- */

static void plugin_free(void *state)
{
    plugin_state *ps = state;
    if (!ps)
        return;
    if (ps->inner) {
        tsim_external_enter(ps->cfg->label);
        ps->d->free(ps->inner);
        tsim_external_leave();
    }
    free(ps->home);
    free(ps->recs);
    free(ps->rec_ptrs);
    free(ps->counts);
    free(ps->plans);
    free(ps->replicas);
    free(ps->alloc);
    free(ps->placement);
    free(ps);
}

/* The plan buffers of P batch slots: false when they would pass
 * PLUGIN_BUFFERS_MAX (a huge batch on a huge topology). */
static bool buffers_fit(size_t P, size_t R, size_t E, size_t cap)
{
    const size_t per_slot = sizeof(taotsim_record) + sizeof(taotsim_plan) + R * E * sizeof(int64_t) +
                            cap * (sizeof(taotsim_replica) + R * sizeof(int64_t)) + E * sizeof(int32_t);
    return per_slot <= PLUGIN_BUFFERS_MAX / P;
}

static int plugin_alloc(plugin_state *ps, const tsim_topology *topo, tsim_error *err)
{
    const size_t R = (size_t)ps->R, E = (size_t)ps->E;
    const size_t P = (size_t)ps->slots_per_plan, cap = (size_t)ps->capacity + 1;
    if (!buffers_fit(P, R, E, cap))
        return tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' asks for batches of %d records: their plans would "
                              "take more than %zu MiB on %zu ranks and %zu experts (ask for smaller batches)",
                              ps->d->name, ps->slots_per_plan, PLUGIN_BUFFERS_MAX >> 20, R, E);
    ps->home = malloc(E * sizeof *ps->home);
    ps->recs = calloc(P, sizeof *ps->recs);
    ps->rec_ptrs = calloc(P, sizeof *ps->rec_ptrs);
    ps->counts = calloc(P * R * E, sizeof *ps->counts);
    ps->plans = calloc(P, sizeof *ps->plans);
    ps->replicas = calloc(P * cap, sizeof *ps->replicas);
    ps->alloc = calloc(P * cap * R, sizeof *ps->alloc);
    ps->placement = calloc(P * E, sizeof *ps->placement);
    if (!ps->home || !ps->recs || !ps->rec_ptrs || !ps->counts || !ps->plans || !ps->replicas || !ps->alloc ||
        !ps->placement)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory for plugin plans");
    memcpy(ps->home, topo->home, E * sizeof *ps->home);
    return TSIM_OK;
}

/* The topology as the plugin sees it: its own copy (home included), which
 * taotsim never reads back. */
static void fill_topology(plugin_state *ps, const tsim_topology *topo, double lambda_plan)
{
    ps->topo = (taotsim_topology){.ranks = topo->ranks, .experts = topo->experts,
                                  .ranks_per_node = topo->ranks_per_node, .slots = topo->slots, .home = ps->home,
                                  .lambda_plan = lambda_plan};
}

static int plugin_init(void **state, const tsim_topology *topo, const tsim_planner_options *opts, tsim_error *err)
{
    const tsim_external_config *cfg = opts->external;
    plugin_state *ps = calloc(1, sizeof *ps);
    if (!ps)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    ps->cfg = cfg;
    ps->d = cfg->plugin;
    ps->R = topo->ranks;
    ps->E = topo->experts;
    ps->slots_per_plan = ps->d->batch > 1 ? ps->d->batch : 1;
    ps->capacity = topo->ranks * topo->slots;
    int rc = plugin_alloc(ps, topo, err);
    if (rc) {
        plugin_free(ps);
        return rc;
    }
    fill_topology(ps, topo, opts->lambda_plan);
    ps->error[0] = '\0';
    tsim_external_enter(cfg->label);
    int declined = ps->d->init(&ps->inner, &ps->topo, ps->d->options_size ? cfg->options_block : NULL, ps->error,
                               sizeof ps->error);
    tsim_external_leave();
    if (declined != 0) {
        ps->inner = NULL;
        ps->error[sizeof ps->error - 1] = '\0';
        rc = tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' declined: %s", ps->d->name,
                            ps->error[0] ? ps->error : "(no message)");
        err->declined = true;
        plugin_free(ps);
        return rc;
    }
    *state = ps;
    return TSIM_OK;
}

/* Batch slot k, ready for the plugin: the record's counts copied into its
 * own buffer, the plan's sizes and buffers set from taotsim's values. */
static void fill_slot(plugin_state *ps, int k, const tsim_record *rec)
{
    const size_t R = (size_t)ps->R, E = (size_t)ps->E, cap = (size_t)ps->capacity + 1;
    int64_t *counts = ps->counts + (size_t)k * R * E;
    memcpy(counts, rec->counts, R * E * sizeof *counts);
    ps->recs[k] = (taotsim_record){.index = rec->index, .microbatch = rec->microbatch, .layer = rec->layer,
                                   .ranks = ps->R, .experts = ps->E, .counts = counts};
    ps->rec_ptrs[k] = &ps->recs[k];
    ps->plans[k] = (taotsim_plan){.ranks = ps->R, .capacity = ps->capacity, .replicas = ps->replicas + k * cap,
                                  .alloc = ps->alloc + k * cap * R, .placement = ps->placement + k * E};
}

/* Slot k's plan into taotsim's. Only count and has_placement are the
 * plugin's to set; both are checked against taotsim's own sizes, and the
 * rows are read from taotsim's buffers, whatever the struct says now. */
static int take_plan(plugin_state *ps, int k, tsim_plan *out, tsim_error *err)
{
    const size_t R = (size_t)ps->R, E = (size_t)ps->E, cap = (size_t)ps->capacity + 1;
    const taotsim_plan *pp = &ps->plans[k];
    const taotsim_replica *replicas = ps->replicas + k * cap;
    const int64_t *alloc = ps->alloc + k * cap * R;
    const char *changed = pp->ranks != ps->R ? "ranks" : pp->capacity != ps->capacity ? "capacity"
                          : pp->replicas != replicas ? "replicas" : pp->alloc != alloc ? "alloc"
                          : pp->placement != ps->placement + k * E ? "placement" : NULL;
    if (changed)
        return tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' changed the plan's '%s', which only taotsim sets "
                              "(a plugin sets count, has_placement and the rows)", ps->d->name, changed);
    const int32_t count = pp->count, has_placement = pp->has_placement;
    if (count < 0 || count > ps->capacity)
        return tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' returned %d replicas, capacity %d", ps->d->name,
                              (int)count, ps->capacity);
    if (has_placement != 0 && has_placement != 1)
        return tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' set has_placement to %d (0 or 1)", ps->d->name,
                              (int)has_placement);
    tsim_plan_reset(out);
    for (int i = 0; i < count; i++) {
        const taotsim_replica *r = &replicas[i];
        int at = tsim_plan_add(out, r->expert, r->guest, r->slot, r->planned);
        if (at < 0)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        memcpy(tsim_plan_alloc_row(out, at), alloc + (size_t)i * R, sizeof *alloc * R);
    }
    if (has_placement) {
        int32_t *home = tsim_plan_placement(out, ps->E);
        if (!home)
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        memcpy(home, ps->placement + k * E, sizeof *home * E);
    }
    return TSIM_OK;
}

static int plugin_plan(void *state, const tsim_record *rec, tsim_plan *out, tsim_error *err)
{
    plugin_state *ps = state;
    fill_slot(ps, 0, rec);
    ps->error[0] = '\0';
    tsim_external_enter(ps->cfg->label);
    int failed = ps->d->plan(ps->inner, &ps->recs[0], &ps->plans[0], ps->error, sizeof ps->error);
    tsim_external_leave();
    if (failed != 0) {
        ps->error[sizeof ps->error - 1] = '\0';
        return tsim_error_set(err, TSIM_E_INPUT, "plugin '%s' failed: %s", ps->d->name,
                              ps->error[0] ? ps->error : "(no message)");
    }
    return take_plan(ps, 0, out, err);
}

/* Batches of at most the plugin's own batch size. */
static int plugin_plan_batch(void *state, const tsim_record *const *recs, int n, tsim_plan *plans, tsim_error *err)
{
    plugin_state *ps = state;
    if (!ps->d->plan_batch) {
        for (int k = 0; k < n; k++) {
            int rc = plugin_plan(state, recs[k], &plans[k], err);
            if (rc) {
                tsim_error_prefix(err, "record %lld", (long long)recs[k]->index);
                return rc;
            }
        }
        return TSIM_OK;
    }
    for (int start = 0; start < n; start += ps->slots_per_plan) {
        int m = n - start < ps->slots_per_plan ? n - start : ps->slots_per_plan;
        for (int k = 0; k < m; k++)
            fill_slot(ps, k, recs[start + k]);
        ps->error[0] = '\0';
        tsim_external_enter(ps->cfg->label);
        int failed = ps->d->plan_batch(ps->inner, ps->rec_ptrs, m, ps->plans, ps->error, sizeof ps->error);
        tsim_external_leave();
        if (failed != 0) {
            ps->error[sizeof ps->error - 1] = '\0';
            return tsim_error_set(err, TSIM_E_INPUT, "record %lld: plugin '%s' failed on the batch of records "
                                  "%lld..%lld: %s", (long long)recs[start]->index, ps->d->name,
                                  (long long)recs[start]->index, (long long)recs[start + m - 1]->index,
                                  ps->error[0] ? ps->error : "(no message)");
        }
        for (int k = 0; k < m; k++) {
            int rc = take_plan(ps, k, &plans[start + k], err);
            if (rc) {
                tsim_error_prefix(err, "record %lld", (long long)recs[start + k]->index);
                return rc;
            }
        }
    }
    return TSIM_OK;
}

static int plugin_window(const void *state)
{
    const plugin_state *ps = state;
    return ps->d->plan_batch ? ps->slots_per_plan : 1;
}

void tsim_plugin_describe(tsim_planner_desc *d)
{
    *d = (tsim_planner_desc){
        .init = plugin_init,
        .plan = plugin_plan,
        .free = plugin_free,
        .plan_batch = plugin_plan_batch,
        .window = plugin_window,
        .external = true,
    };
}
