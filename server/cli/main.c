/* The frugal binary: dispatches to its subcommands (README.md, "Commands"). */
#include <stdio.h>
#include <string.h>

#include <grpc/grpc.h>

#include "commands.h"
#include "revision.h"

static void usage(FILE *f) {
    fprintf(f, "usage: frugal COMMAND [ARGS]\n"
               "\n"
               "  serve -c FILE          run the server until SIGTERM/SIGINT\n"
               "  check -c FILE          validate a config and print a summary\n"
               "  ctl --addr HOST:PORT VERB ...   call the server (frugal ctl --help)\n"
               "  plan -c FILE --pods PODS.json [--nodes NODES.json] [-o yaml]\n"
               "                         offline: what frugal would decide for these pods\n"
               "  replay -c FILE WORKLOAD... [--strategy S]... [--seeds N] [--hours H] [-o FMT]\n"
               "                         offline: what each scale-up strategy costs on a workload\n"
               "  state export|import -c FILE ...  move the state between a state file and the\n"
               "                         configured backend (frugal state --help)\n"
               "  version                version and build info\n");
}

static int cmd_version(void) {
    printf("frugal %s\ncommit %s\ngrpc core %s\nbuilt %s %s\n", FRUGAL_VERSION, revision_get(),
           grpc_version_string(), __DATE__, __TIME__);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "ctl") == 0)
        return cmd_ctl(argc - 1, argv + 1);
    if (strcmp(cmd, "plan") == 0)
        return cmd_plan(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0)
        return cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "state") == 0)
        return cmd_state(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
        return cmd_version();
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "frugal: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}
