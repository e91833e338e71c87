/* Where a result file comes from (provenance.h). */
#include "provenance.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "tsim_config.h"

cJSON *tsim_result_json_new(void)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "tool", "taotsim");
    cJSON_AddStringToObject(j, "version", TSIM_VERSION);
    cJSON_AddStringToObject(j, "command", tsim_report_command_line());
    return j;
}

static char command_line[4096];

void tsim_report_set_command_line(int argc, char **argv)
{
    size_t used = 0;
    command_line[0] = '\0';
    for (int i = 0; i < argc; i++) {
        const char *a = i == 0 ? "taotsim" : argv[i];
        int n = snprintf(command_line + used, sizeof command_line - used, "%s%s", i ? " " : "", a);
        if (n < 0 || (size_t)n >= sizeof command_line - used)
            break;
        used += (size_t)n;
    }
}

const char *tsim_report_command_line(void)
{
    return command_line;
}
