/* `frugal ctl`: global options, the dispatcher, and `raw` (see ctl.h); the other verbs
 * live in the ctl_*.c files. Output is a table by default and YAML with -o yaml; every
 * verb exits 0 on gRPC OK, 1 on any other status, 2 on a usage error. */
#include "ctl.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/log.h>

#include "cli.h"
#include "commands.h"

static int ctl__usage_verb(const char *verb);

/* ------------------------------------------------------------------------------------
 * Global options */

/* HOST:PORT with a port of 1 to 65535, or unix:PATH: gRPC would read port 99999 as
 * another port, and a missing one as 0. */
static bool ctl__address_valid(const char *a) {
    if (strncmp(a, "unix:", 5) == 0)
        return a[5] != '\0';
    /* gRPC's own target forms are passed as they are. */
    if (strstr(a, "://") != NULL || strncmp(a, "dns:", 4) == 0 || strncmp(a, "ipv4:", 5) == 0 ||
        strncmp(a, "ipv6:", 5) == 0)
        return true;
    const char *colon = strrchr(a, ':');
    if (colon == NULL || colon == a || colon[1] == '\0' || strlen(colon + 1) > 5)
        return false;
    /* An IPv6 address goes in brackets ([::1]:8086): bare, its last group reads as a port. */
    if (a[0] == '[' ? colon[-1] != ']' : memchr(a, ':', (size_t)(colon - a)) != NULL)
        return false;
    for (const char *p = colon + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    long port = strtol(colon + 1, NULL, 10);
    return port >= 1 && port <= 65535;
}

/* ------------------------------------------------------------------------------------
 * raw */

/* Read all of a file ("-" = stdin) into a malloc'ed buffer; 0, or -1 after saying why. */
static int ctl__read_file(const char *path, uint8_t **data, size_t *len) {
    bool from_stdin = strcmp(path, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "frugal ctl: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    int rc = cli_read_stream(f, &buf, len);
    if (!from_stdin) {
        fclose(f);
    }
    if (rc == ENOMEM) {
        fputs("error: out of memory\n", stderr);
        exit(1);
    }
    if (rc != 0) {
        fprintf(stderr, "frugal ctl: %s: read error\n", path);
        return -1;
    }
    *data = (uint8_t *)buf;
    return 0;
}

/* raw METHOD_PATH FILE: a testing aid that sends FILE's bytes verbatim and prints the
 * status name (and, with -o yaml, the message and the reply's size and bytes in hex). */
static int ctl_verb_raw(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 3 || argv[1][0] != '/') {
        return ctl__usage_verb(argv[0]);
    }
    uint8_t *body = NULL;
    size_t len = 0;
    if (ctl__read_file(argv[2], &body, &len) != 0) {
        return 2; /* as best-options and propose say of a FILE they cannot read */
    }
    uint8_t *reply = NULL;
    size_t reply_len = 0;
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    char *details = NULL;
    int rc = rpc_client_call(client, argv[1], body, len, &reply, &reply_len, &status, &details);
    free(body);
    if (rc != 0) {
        fprintf(stderr, "error: %s: local failure calling %s\n", frugal_err_name(rc), argv[1]);
        return 1;
    }
    if (format == CTL_FORMAT_YAML) {
        cli_yaml_kv(0, "status", rpc_status_name(status));
        cli_yaml_kv(0, "message", details);
        printf("responseBytes: %zu\n", reply_len);
        printf("responseHex: \"");
        for (size_t k = 0; k < reply_len; k++)
            printf("%02x", reply[k]);
        printf("\"\n");
    } else {
        printf("%s\n", rpc_status_name(status));
    }
    if (status != GRPC_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", rpc_status_name(status), details);
    }
    free(details);
    free(reply);
    return status == GRPC_STATUS_OK ? 0 : 1;
}

static const ctl_verb_t ctl_verbs_raw[] = {
    {"raw", "METHOD_PATH FILE   (FILE \"-\" = stdin; testing aid)", ctl_verb_raw},
};
static const size_t ctl_verbs_raw_count = sizeof(ctl_verbs_raw) / sizeof(ctl_verbs_raw[0]);

/* ------------------------------------------------------------------------------------
 * Dispatcher */

static const ctl_verb_t *ctl__find_verb(const char *name) {
    const struct {
        const ctl_verb_t *verbs;
        size_t count;
    } tables[] = {
        {ctl_verbs_cloud_provider, ctl_verbs_cloud_provider_count},
        {ctl_verbs_raw, ctl_verbs_raw_count},
        {ctl_verbs_best_options, ctl_verbs_best_options_count},
        {ctl_verbs_autoprov, ctl_verbs_autoprov_count},
    };
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        const ctl_verb_t *v = ctl_verb_find(tables[t].verbs, tables[t].count, name);
        if (v != NULL) {
            return v;
        }
    }
    return NULL;
}

/* Print the usage of one of this file's verbs; returns 2. */
static int ctl__usage_verb(const char *verb) {
    return ctl_usage_verb(ctl_verbs_raw, ctl_verbs_raw_count, verb);
}

static void ctl__print_verbs(FILE *f, const ctl_verb_t *verbs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  %s%s%s\n", verbs[i].name, verbs[i].usage[0] != '\0' ? " " : "",
                verbs[i].usage);
    }
}

static int ctl__usage(FILE *f) {
    fputs("usage: frugal ctl --addr HOST:PORT [--tls-ca F] [--tls-cert F --tls-key F]\n"
          "                  [--tls-server-name N] [--timeout MS] [-o table|yaml] VERB ARGS...\n"
          "(these options may also follow the verb)\n"
          "verbs:\n",
          f);
    ctl__print_verbs(f, ctl_verbs_cloud_provider, ctl_verbs_cloud_provider_count);
    ctl__print_verbs(f, ctl_verbs_raw, ctl_verbs_raw_count);
    ctl__print_verbs(f, ctl_verbs_best_options, ctl_verbs_best_options_count);
    ctl__print_verbs(f, ctl_verbs_autoprov, ctl_verbs_autoprov_count);
    return f == stdout ? 0 : 2;
}

/* gRPC's own log lines (a failed TLS handshake, say) would clutter the one
 * "STATUS: message" line ctl prints; they stay off unless GRPC_VERBOSITY asks. */
static void ctl__quiet_grpc_log(gpr_log_func_args *args) {
    (void)args;
}

/* Whether argv[*i] is one of ctl's own options (1, its value consumed, *i advanced), not
 * one (0), or one with a bad or missing value (-1, after a one-line error). */
static int ctl__global_option(int argc, char **argv, int *i, rpc_client_options_t *opts,
                              ctl_format_t *format) {
    /* The first five take a string as it is; then --timeout, then -o / --output. */
    static const char *const names[] = {"--addr",    "--tls-ca",          "--tls-cert",
                                        "--tls-key", "--tls-server-name", "--timeout",
                                        "-o",        "--output"};
    const char **strings[] = {&opts->address, &opts->tls_ca, &opts->tls_cert, &opts->tls_key,
                              &opts->tls_server_name};
    const size_t n_strings = sizeof(strings) / sizeof(strings[0]), timeout = n_strings;
    size_t k = 0;
    while (k < sizeof(names) / sizeof(names[0]) && strcmp(argv[*i], names[k]) != 0)
        k++;
    if (k == sizeof(names) / sizeof(names[0]))
        return 0;
    const char *v = ctl_optarg(argc, argv, i);
    if (v == NULL)
        return -1;
    if (k < n_strings) {
        *strings[k] = v;
    } else if (k == timeout) {
        char *end;
        errno = 0;
        long long ms = strtoll(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || ms <= 0) {
            fprintf(stderr, "frugal ctl: --timeout %s is not a positive number of milliseconds\n",
                    v);
            return -1;
        }
        opts->timeout_ms = ms;
    } else if (strcmp(v, "yaml") == 0) {
        *format = CTL_FORMAT_YAML;
    } else if (strcmp(v, "table") == 0) {
        *format = CTL_FORMAT_TABLE;
    } else {
        fprintf(stderr, "frugal ctl: -o %s: expected table or yaml\n", v);
        return -1;
    }
    return 1;
}

int cmd_ctl(int argc, char **argv) {
    rpc_client_options_t opts = {0};
    ctl_format_t format = CTL_FORMAT_TABLE;
    int i = 1;
    bool options_ended = false;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *o = argv[i];
        if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
            return ctl__usage(stdout);
        }
        if (strcmp(o, "--") == 0) {
            options_ended = true;
            i++;
            break;
        }
        int got = ctl__global_option(argc, argv, &i, &opts, &format);
        if (got < 0)
            return 2;
        if (got == 0) {
            fprintf(stderr, "frugal ctl: unknown option %s\n", o);
            return ctl__usage(stderr);
        }
    }
    if (i >= argc) {
        return ctl__usage(stderr);
    }
    const ctl_verb_t *verb = ctl__find_verb(argv[i]);
    if (verb == NULL) {
        fprintf(stderr, "frugal ctl: unknown verb %s (frugal ctl --help lists them)\n", argv[i]);
        return 2;
    }
    /* ctl's own options may also follow the verb ("node-groups -o yaml"): they are taken
     * out of the verb's arguments, up to a "--", which is dropped; after a "--" before
     * the verb, every argument is the verb's. */
    int verb_argc = 0;
    char **verb_argv = argv + i;
    for (int k = i; k < argc; k++) {
        if (options_ended) {
            verb_argv[verb_argc++] = argv[k];
            continue;
        }
        if (strcmp(argv[k], "--") == 0) {
            for (k++; k < argc;)
                verb_argv[verb_argc++] = argv[k++];
            break;
        }
        int got = ctl__global_option(argc, argv, &k, &opts, &format);
        if (got < 0)
            return 2;
        if (got == 0)
            verb_argv[verb_argc++] = argv[k];
    }
    if (opts.address == NULL) {
        fprintf(stderr, "frugal ctl: --addr HOST:PORT is required\n");
        return 2;
    }
    if ((opts.tls_cert == NULL) != (opts.tls_key == NULL) ||
        (opts.tls_ca == NULL && (opts.tls_cert != NULL || opts.tls_server_name != NULL))) {
        fprintf(stderr, "frugal ctl: --tls-cert and --tls-key go together, and they and "
                        "--tls-server-name need --tls-ca\n");
        return 2;
    }
    if (!ctl__address_valid(opts.address)) {
        fprintf(stderr,
                "frugal ctl: --addr \"%s\": expected HOST:PORT (port 1 to 65535) or "
                "unix:PATH\n",
                opts.address);
        return 2;
    }
    if (getenv("GRPC_VERBOSITY") == NULL) {
        gpr_set_log_function(ctl__quiet_grpc_log);
    }
    rpc_client_t *client = NULL;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (rpc_client_open(&opts, &client, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    int rc = verb->run(client, format, verb_argc, verb_argv);
    fflush(stdout);
    rpc_client_close(client);
    return rc;
}
