/* SPDX-License-Identifier: MIT */
/* The clattn subcommands. Each takes the arguments after its own name
 * (argv[0] is the subcommand) and returns the process exit status. */
#ifndef CLATTN_TOOLS_COMMANDS_H
#define CLATTN_TOOLS_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);

#endif
