/* The subcommands of the frugal binary (README.md, "Commands"). Each takes the
 * arguments after its own name (argv[0] is the subcommand) and returns the exit status. */
#ifndef FRUGAL_COMMANDS_H
#define FRUGAL_COMMANDS_H

#include "config.h"
#include "serve.h"

int cmd_check(int argc, char **argv);  /* server/cli/cmd_check.c */
int cmd_ctl(int argc, char **argv);    /* server/cli/ctl.c */
int cmd_plan(int argc, char **argv);   /* server/cli/plan.c */
int cmd_replay(int argc, char **argv); /* server/cli/replay.c */
int cmd_state(int argc, char **argv);  /* server/cli/cmd_state.c */

/* Load the config at path for a command; on failure print its FILE:LINE:COL errors (or
 * why it could not be read) to stderr, as error log lines when the log is JSON (every
 * line of serve's stderr then parses), and return 1, else 0 (server/cli/cmd_check.c). */
int cmd_load_config(const char *path, frugal_config_t **cfg);

/* One error log line per line of text (config errors: FILE:LINE:COL each). */
void cmd_log_lines(const char *text);

#endif
