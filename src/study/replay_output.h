/* Printing a replay session's results: markdown, CSV or the JSON schema of cli.md. */
#ifndef TSIM_REPLAY_OUTPUT_H
#define TSIM_REPLAY_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "report.h"
#include "session.h"
#include "trace.h"

struct cJSON;

typedef struct {
    tsim_format format;
    bool per_record;
    const char *trace_path;
    const tsim_trace_header *header;
    int64_t records;
    const struct tsim_traffic *traffic; /* --traffic: a table (md, csv) or "traffic" (JSON); NULL none */
} tsim_replay_output_options;

int tsim_replay_output_print(FILE *out, const tsim_session *s, const tsim_replay_output_options *o, tsim_error *err);

/* The whole JSON result of a replay (study "replay"). */
struct cJSON *tsim_replay_json(const tsim_session *s, const tsim_replay_output_options *o);

/* The "results" entry of one planner: planner, label, options, metrics (and notes). */
struct cJSON *tsim_planner_result_json(const tsim_session *s, int planner);

/* "params": slots, lambda_plan (of the first planner), lambda_eval. */
struct cJSON *tsim_session_params_json(const tsim_session *s);

#endif
