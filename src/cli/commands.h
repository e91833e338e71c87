/* The subcommands: each parses its arguments, calls the library and prints.
 * Each returns the process exit status (cli.md). */
#ifndef TSIM_COMMANDS_H
#define TSIM_COMMANDS_H

int tsim_cmd_gen(int argc, char **argv);       /* cmd_gen.c */
int tsim_cmd_validate(int argc, char **argv);  /* cmd_trace.c */
int tsim_cmd_convert(int argc, char **argv);   /* cmd_trace.c */
int tsim_cmd_index(int argc, char **argv);     /* cmd_index.c */
int tsim_cmd_replay(int argc, char **argv);    /* cmd_replay.c */
int tsim_cmd_vector(int argc, char **argv);    /* cmd_replay.c */
int tsim_cmd_bench(int argc, char **argv);     /* cmd_bench.c */
int tsim_cmd_plot(int argc, char **argv);      /* cmd_plot.c */
int tsim_cmd_report(int argc, char **argv);    /* cmd_report.c */
int tsim_cmd_table1(int argc, char **argv);    /* cmd_study.c */
int tsim_cmd_ablation(int argc, char **argv);  /* cmd_study.c */
int tsim_cmd_sweep(int argc, char **argv);     /* cmd_study.c */
int tsim_cmd_scaling(int argc, char **argv);   /* cmd_study.c */
int tsim_cmd_advise(int argc, char **argv);   /* cmd_advise.c */
int tsim_cmd_fit(int argc, char **argv);       /* cmd_fit.c */
int tsim_cmd_merge(int argc, char **argv);     /* cmd_merge.c */
int tsim_cmd_planners(int argc, char **argv);  /* cmd_planners.c */

#endif
