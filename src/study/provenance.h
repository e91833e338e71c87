/* Where a result comes from: the tool, its version and the command line that
 * made it. Every JSON result and partial starts with these; the study layer
 * writes partials itself, so this sits here rather than in render/. */
#ifndef TSIM_PROVENANCE_H
#define TSIM_PROVENANCE_H

struct cJSON;

/* {"tool":"taotsim","version":..,"command":..}: the start of every result file. */
struct cJSON *tsim_result_json_new(void);

/* The full command line as one string, recorded in result files (set once by
 * the CLI's main; "taotsim" stands for argv[0]). */
void tsim_report_set_command_line(int argc, char **argv);
const char *tsim_report_command_line(void);

#endif
