/* PLACEHOLDER: replaced by validate/convert. */
#include "commands.h"
int tsim_cmd_validate(int argc, char **argv) { (void)argc; (void)argv; return 3; }
int tsim_cmd_convert(int argc, char **argv) { (void)argc; (void)argv; return 3; }
