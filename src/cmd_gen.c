/* PLACEHOLDER: replaced by gen. */
#include "commands.h"
int tsim_cmd_gen(int argc, char **argv) { (void)argc; (void)argv; return 3; }
