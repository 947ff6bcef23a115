/* The frugal binary: dispatches to its subcommands (README.md, "Commands"). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
               "  state init|export|import -c FILE ...  initialise the configured state, or move\n"
               "                         it to and from a state file (frugal state --help)\n"
               "  version                version and build info\n");
}

static int cmd_version(void) {
    printf("frugal %s\ncommit %s\ngrpc core %s\nbuilt %s %s\n", FRUGAL_VERSION, revision_get(),
           grpc_version_string(), __DATE__, __TIME__);
    return 0;
}

/* Where the value of an option written NAME=VALUE starts ('=' included): a long option,
 * --seeds=3, or one of the short ones that take a value, -c=FILE and -o=FMT. A value that
 * merely looks like an option (--label -bad=x) is not one of these. NULL: not so written. */
static char *option_value_sign(char *a) {
    if (a[0] == '-' && a[1] == '-' && isalpha((unsigned char)a[2]))
        return strchr(a, '=');
    if (a[0] == '-' && (a[1] == 'c' || a[1] == 'o') && a[2] == '=')
        return a + 2;
    return NULL;
}

/* argv with every option written NAME=VALUE before a "--" given as NAME VALUE, as the
 * subcommands read their options; the strings are argv's own, cut at the '='. NULL when
 * out of memory. */
static char **split_option_values(int argc, char **argv, int *out_argc) {
    char **out = calloc(2 * (size_t)argc + 1, sizeof(*out));
    int n = 0;
    bool options = true;
    for (int i = 0; out != NULL && i < argc; i++) {
        char *eq = options && i > 1 ? option_value_sign(argv[i]) : NULL;
        options = options && strcmp(argv[i], "--") != 0;
        out[n++] = argv[i];
        if (eq != NULL) {
            *eq = '\0';
            out[n++] = eq + 1;
        }
    }
    *out_argc = n;
    return out;
}

static int dispatch(int argc, char **argv) {
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
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "frugal version: unexpected argument \"%s\"\n", argv[2]);
            return 2;
        }
        return cmd_version();
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "frugal: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    int n = 0;
    char **args = split_option_values(argc, argv, &n);
    if (args == NULL) {
        fprintf(stderr, "frugal: out of memory\n");
        return 1;
    }
    int rc = dispatch(n, args);
    free(args);
    /* Output to a full disk or a closed pipe must not pass for success (a backup that
     * was never written). */
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
        fprintf(stderr, "frugal: writing the output failed: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
