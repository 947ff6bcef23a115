/* The subcommands of the frugal binary (README.md, "Commands"). Each takes the
 * arguments after its own name (argv[0] is the subcommand) and returns the exit status. */
#ifndef FRUGAL_COMMANDS_H
#define FRUGAL_COMMANDS_H

#include "serve.h"

int cmd_check(int argc, char **argv);  /* server/cli/cmd_check.c */
int cmd_ctl(int argc, char **argv);    /* server/cli/ctl.c */
int cmd_plan(int argc, char **argv);   /* server/cli/plan.c */
int cmd_replay(int argc, char **argv); /* server/cli/replay.c */
int cmd_state(int argc, char **argv);  /* server/cli/cmd_state.c */

#endif
