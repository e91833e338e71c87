/* taotsim planners [NAME]: every registered planner, from its descriptor
 * alone (summary, source, options with defaults and ranges, contracts), and
 * the lines the other commands print about planners. */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "registry.h"

static const char *state_text(const tsim_planner_desc *d, char *buf, size_t n)
{
    switch (d->state) {
    case TSIM_STATE_NONE:
        return "stateless (every record alone)";
    case TSIM_STATE_WINDOW:
        snprintf(buf, n, "the last %d records of the record's layer", d->state_window);
        return buf;
    case TSIM_STATE_LAYER_PREFIX:
        return "every earlier record of the layer (layouts that chain)";
    case TSIM_STATE_EVERY_RECORD:
        return "every record, in order";
    }
    return "?";
}

/* "[lo, hi]" for numbers, the choices for a choice, nothing otherwise. */
static void range_text(const tsim_option_spec *o, char *buf, size_t n)
{
    buf[0] = '\0';
    if (o->type == TSIM_OPTION_DOUBLE)
        snprintf(buf, n, "[%g, %g]", o->lo, o->hi);
    else if (o->type == TSIM_OPTION_INT || o->type == TSIM_OPTION_INT64)
        snprintf(buf, n, "[%.0f, %.0f]", o->lo, o->hi);
    else if (o->type == TSIM_OPTION_STRING)
        snprintf(buf, n, "at most %zu characters", o->size - 1);
}

/* An option's --help line: the help column starts at 28, with at least two
 * spaces before it. */
static void help_line(const tsim_option_spec *spec, FILE *out)
{
    char head[128];
    int n = snprintf(head, sizeof head, "  --%s%s%s", spec->name, spec->arg ? " " : "", spec->arg ? spec->arg : "");
    int pad = n < 26 ? 28 - n : 2;
    if (spec->def && !strstr(spec->help, "(default"))
        fprintf(out, "%s%*s%s (default %s)\n", head, pad, "", spec->help, spec->def);
    else
        fprintf(out, "%s%*s%s\n", head, pad, "", spec->help);
}

static void option_line(const tsim_option_spec *o, FILE *out)
{
    help_line(o, out);
    char range[160];
    range_text(o, range, sizeof range);
    if (range[0])
        fprintf(out, "%28s%s\n", "", range);
}

static void describe(const tsim_planner_desc *d, FILE *out)
{
    char buf[96];
    fprintf(out, "%s: %s\n", d->name, d->summary);
    fprintf(out, "  source:  %s\n", d->source ? d->source : "-");
    fprintf(out, "  state:   %s\n", state_text(d, buf, sizeof buf));
    fprintf(out, "  cost:    %s\n", d->cost == TSIM_COST_EXPENSIVE ? "expensive (left out of bench by default)" : "cheap");
    fprintf(out, "  slots:   %s\n", d->slots_help ? d->slots_help : "the command's --slots, or its own --slots=K after a label");
    if (!d->options && !d->reads_lambda_plan) {
        fputs("  options: none\n", out);
        return;
    }
    fputs("  options:\n", out);
    if (d->reads_lambda_plan)
        option_line(&tsim_planner_common_options[0], out);
    for (const tsim_option_spec *o = d->options; o && o->name; o++)
        option_line(o, out);
}

static void planners_usage(FILE *out)
{
    fputs("usage: taotsim planners [NAME]\n"
          "\n"
          "Lists every planner this build knows (or NAME only): what it does, the paper\n"
          "or system it follows, its options with their defaults and ranges, what it\n"
          "remembers between records, its cost class and its slot budget.\n"
          "\n"
          "  -h, --help           this help\n",
          out);
}

int tsim_cmd_planners(int argc, char **argv)
{
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            planners_usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' || name) {
            fprintf(stderr, "taotsim planners: unexpected argument '%s'\n", argv[i]);
            planners_usage(stderr);
            return 2;
        }
        name = argv[i];
    }
    if (name && !tsim_planner_find(name)) {
        fprintf(stderr, "taotsim planners: unknown planner '%s'; 'taotsim planners' lists them\n", name);
        return 2;
    }
    bool first = true;
    for (const tsim_planner_desc *const *d = tsim_planner_all(); *d; d++) {
        if (name && strcmp((*d)->name, name) != 0)
            continue;
        if (!first)
            fputc('\n', stdout);
        describe(*d, stdout);
        first = false;
    }
    return fflush(stdout) ? 3 : 0;
}

void tsim_cli_planners_help(FILE *out)
{
    fputs("Planners and their options: 'taotsim planners' lists every planner with its\n"
          "options, defaults and ranges. An option given on the command line\n"
          "(--taot-iters N, ...) applies to every planner of that name;\n"
          "after a label it applies to that planner only, as does --slots=K (its own slot\n"
          "budget): LABEL=NAME:--opt=v:--slots=K.\n",
          out);
}

void tsim_cli_report_fallbacks(const tsim_planner *planners, int n, FILE *out)
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
