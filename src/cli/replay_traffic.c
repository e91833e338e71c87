#include "replay_traffic.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "parse.h"
#include "plot.h"
#include "plot_traffic.h"

void tsim_replay_extras_default(tsim_replay_extras *x)
{
    memset(x, 0, sizeof *x);
    x->export_planner = -1;
    x->plot_formats = TSIM_PLOT_PNG;
}

int tsim_replay_extras_option(tsim_replay_extras *x, int id, const char *val, tsim_error *err)
{
    switch (id) {
    case TSIM_RX_TRAFFIC:
        return tsim_traffic_level_parse(val, &x->level, err);
    case TSIM_RX_HIDDEN_BYTES:
        x->hidden_given = true;
        return tsim_parse_double(val, 1e-9, 1e12, &x->hidden_bytes, "--hidden-bytes", err);
    case TSIM_RX_EXPERT_MB:
        x->expert_given = true;
        return tsim_parse_double(val, 1e-9, 1e9, &x->expert_mb, "--expert-mb", err);
    case TSIM_RX_TRAFFIC_OUT:
        x->traffic_out = val;
        return TSIM_OK;
    case TSIM_RX_PLOTS:
        x->plots_dir = val;
        return TSIM_OK;
    case TSIM_RX_PLOT_FORMAT:
        x->plot_format_given = true;
        return tsim_plot_formats_parse(val, &x->plot_formats, err);
    case TSIM_RX_EXPORT_LAYOUT:
        x->export_path = val;
        return TSIM_OK;
    case TSIM_RX_EXPORT_FORMAT:
        x->export_format_given = true;
        return tsim_layout_format_parse(val, &x->export_format, err);
    default:
        return tsim_error_set(err, TSIM_E_INTERNAL, "replay: option %d has no handler", id);
    }
}

int tsim_replay_extras_check(const tsim_replay_extras *x, bool sharded, tsim_error *err)
{
    const bool traffic = x->level != TSIM_TRAFFIC_OFF;
    if (!traffic && (x->traffic_out || x->plots_dir || x->hidden_given || x->expert_given || x->plot_format_given))
        return tsim_error_set(err, TSIM_E_INPUT, "%s needs --traffic node|rank",
                              x->traffic_out ? "--traffic-out" : x->plots_dir ? "--plots"
                                                             : x->hidden_given ? "--hidden-bytes"
                                                             : x->expert_given ? "--expert-mb"
                                                                               : "--plot-format");
    if (x->export_format_given && !x->export_path)
        return tsim_error_set(err, TSIM_E_INPUT, "--export-format needs --export-layout FILE");
    if (sharded && (traffic || x->export_path))
        return tsim_error_set(err, TSIM_E_INPUT, "--%s does not combine with --shard (run it unsharded)",
                              traffic ? "traffic" : "export-layout");
    return TSIM_OK;
}

int tsim_replay_extras_outputs(const tsim_replay_extras *x, const char **paths, const char **flags)
{
    int n = 0;
    if (x->traffic_out) {
        paths[n] = x->traffic_out;
        flags[n++] = "--traffic-out";
    }
    if (x->export_path) {
        paths[n] = x->export_path;
        flags[n++] = "--export-layout";
    }
    return n;
}

/* The one layout planner of the run, or a usage error naming what is wrong. */
static int find_export_planner(tsim_replay_extras *x, const tsim_session *s, tsim_error *err)
{
    int found = 0;
    for (int i = 0; i < s->n_planners; i++)
        if (tsim_planner_has_layouts(&s->planners[i])) {
            if (found++ == 0)
                x->export_planner = i;
        }
    if (found != 1)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--export-layout needs exactly one planner whose plans are layouts (eplb, trtllm, "
                              "swift) in --planners; this run has %d",
                              found);
    tsim_layout_collector_init(&x->layouts);
    return TSIM_OK;
}

int tsim_replay_extras_start(tsim_replay_extras *x, const tsim_session *s, tsim_error *err)
{
    int rc;
    if (x->export_path && (rc = find_export_planner(x, s, err)))
        return rc;
    if (x->level == TSIM_TRAFFIC_OFF)
        return TSIM_OK;
    if (x->plots_dir && (rc = tsim_plot_check(x->plot_formats, err)))
        return rc;
    if ((rc = tsim_traffic_init(&x->traffic, x->level, s, err)))
        return rc;
    x->traffic_ready = true;
    x->traffic.hidden_bytes = x->hidden_bytes;
    x->traffic.expert_mb = x->expert_mb;
    return TSIM_OK;
}

int tsim_replay_extras_plan(tsim_replay_extras *x, const tsim_session *s, int planner, const tsim_record *rec,
                            const tsim_plan *plan, tsim_error *err)
{
    int rc;
    if (x->traffic_ready && (rc = tsim_traffic_add(&x->traffic, planner, &s->topo, rec, plan, err)))
        return rc;
    if (planner != x->export_planner)
        return TSIM_OK;
    return tsim_layout_collector_add(&x->layouts, rec, plan, err);
}

/* The export file's text: every planned layer must have a layout. */
static int write_export(tsim_replay_extras *x, const tsim_session *s, tsim_error *err)
{
    const tsim_layout_table *table;
    int rc = tsim_layout_collector_finish(&x->layouts, s->planners[x->export_planner].label, &table, err);
    if (rc)
        return rc;
    rc = tsim_outfile_open(&x->export_file, x->export_path, err);
    if (rc)
        return rc;
    x->export_open = true;
    if ((rc = tsim_layout_write(x->export_file.fp, table, x->export_format, err))) {
        tsim_error_prefix(err, "--export-layout %s", x->export_path);
        return rc;
    }
    return tsim_outfile_flush(&x->export_file, err);
}

int tsim_replay_extras_write(tsim_replay_extras *x, const tsim_session *s, const char *trace_path, tsim_error *err)
{
    int rc;
    if (x->export_path && (rc = write_export(x, s, err)))
        return rc;
    if (!x->traffic_out)
        return TSIM_OK;
    if ((rc = tsim_outfile_open(&x->traffic_file, x->traffic_out, err)))
        return rc;
    x->traffic_open = true;
    cJSON *j = tsim_traffic_json(&x->traffic, s, trace_path);
    rc = j ? tsim_json_print(x->traffic_file.fp, j) : -1;
    cJSON_Delete(j);
    if (rc)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory printing the traffic matrices");
    return tsim_outfile_flush(&x->traffic_file, err);
}

int tsim_replay_extras_commit(tsim_replay_extras *x, const tsim_session *s, const char *trace_path, tsim_error *err)
{
    int rc;
    if (x->export_open) {
        x->export_open = false;
        if ((rc = tsim_outfile_commit(&x->export_file, err)))
            return rc;
    }
    if (x->traffic_open) {
        x->traffic_open = false;
        if ((rc = tsim_outfile_commit(&x->traffic_file, err)))
            return rc;
    }
    if (x->plots_dir && x->traffic_ready)
        return tsim_plot_traffic(&x->traffic, s, trace_path, x->plots_dir, x->plot_formats, stderr, err);
    return TSIM_OK;
}

void tsim_replay_extras_free(tsim_replay_extras *x)
{
    if (x->export_open)
        tsim_outfile_abort(&x->export_file);
    if (x->traffic_open)
        tsim_outfile_abort(&x->traffic_file);
    if (x->traffic_ready)
        tsim_traffic_free(&x->traffic);
    tsim_layout_collector_free(&x->layouts);
    memset(x, 0, sizeof *x);
}
