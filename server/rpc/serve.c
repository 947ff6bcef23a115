/* `frugal serve -c FILE`: load the config, resume the cluster, serve every service on
 * every listener until SIGTERM/SIGINT, then drain (10 s grace), persist and exit 0. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/grpc.h>

#include "cluster.h"
#include "serve.h"
#include "config.h"
#include "grpc_server.h"
#include "log.h"
#include "provider.h"
#include "service.h"

#define SERVE_GRACE_MS 10000
/* How often instance states advance without a Refresh (boot, deletion, NAP TTL). */
#define SERVE_TICK_MS 1000

static void serve_usage(FILE *f) {
    fprintf(f, "usage: frugal serve -c FILE [--init-state] [--log-level debug|info|warn|error]\n");
}

/* Wait for SIGTERM/SIGINT, ticking the cluster between signals. Returns the signal. */
static int serve_wait(cluster_t *cluster, const sigset_t *signals) {
    for (;;) {
        struct timespec tick = {SERVE_TICK_MS / 1000, (SERVE_TICK_MS % 1000) * 1000000L};
        int sig = sigtimedwait(signals, NULL, &tick);
        if (sig > 0)
            return sig;
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        frugal_err_t err;
        frugal_err_clear(&err);
        if (cluster_refresh(cluster, &err) != 0)
            log_warn("periodic refresh failed: %s", err.msg);
    }
}

int cmd_serve(int argc, char **argv) {
    const char *path = NULL;
    bool init_state = false;
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"init-state", no_argument, NULL, 'I'},
                                             {"log-level", required_argument, NULL, 'l'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        log_level_t level;
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 'I':
            init_state = true;
            break;
        case 'l':
            if (log_parse_level(optarg, &level) != 0) {
                fprintf(stderr, "frugal serve: unknown log level \"%s\"\n", optarg);
                return 2;
            }
            log_set_level(level);
            break;
        case 'h':
            serve_usage(stdout);
            return 0;
        default:
            serve_usage(stderr);
            return 2;
        }
    }
    if (path == NULL || optind != argc) {
        serve_usage(stderr);
        return 2;
    }

    /* Block the stop signals before any thread (ours or gRPC's) exists, so only
     * sigtimedwait below ever sees them. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load(path, &cfg, &errors) != 0) {
        fputs(errors != NULL ? errors : "invalid configuration\n", stderr);
        free(errors);
        return 1;
    }

    int status = 1;
    frugal_err_t err;
    frugal_err_clear(&err);
    provider_t *provider = NULL;
    cluster_t *cluster = NULL;
    frugal_server_t *server = NULL;
    grpc_init();
    if (cluster_check_state_present(cfg, init_state, &err) != 0)
        goto fail_provider;
    if (provider_create(cfg, &provider, &err) != 0)
        goto fail_provider;
    if (cluster_open(cfg, provider, &cluster, &err) != 0)
        goto fail_cluster;
    service_ctx_t ctx = {.cfg = cfg, .cluster = cluster};
    const service_def_t *services[] = {&service_cloudprovider, &service_expander,
                                       &service_autoprovisioning, &service_health};
    if (frugal_server_start(&ctx, services, sizeof(services) / sizeof(services[0]), &server,
                            &err) != 0)
        goto fail_server;
    log_info("frugal %s serving (%zu listener(s), state %s)", FRUGAL_VERSION, cfg->listeners_count,
             cfg->state_file != NULL ? cfg->state_file : "in memory");

    int sig = serve_wait(cluster, &signals);
    log_info("received %s: draining (grace %d s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
             SERVE_GRACE_MS / 1000);
    frugal_server_stop(server, SERVE_GRACE_MS);
    if (cluster_persist(cluster, &err) != 0) {
        log_error("final persist failed: %s", err.msg);
        goto fail_server;
    }
    status = 0;
    log_info("stopped");

fail_server:
    cluster_close(cluster);
fail_cluster:
    provider_destroy(provider);
fail_provider:
    if (status != 0 && err.msg[0] != '\0')
        log_error("%s", err.msg);
    grpc_shutdown_blocking(); /* everything torn down before exit, for leak checkers too */
    config_free(cfg);
    return status;
}
