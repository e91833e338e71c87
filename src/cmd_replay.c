#include "commands.h"
int tsim_cmd_replay(int argc, char **argv) { (void)argc; (void)argv; return 3; }
int tsim_cmd_vector(int argc, char **argv) { (void)argc; (void)argv; return 3; }
