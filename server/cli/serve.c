/* `frugal serve -c FILE`: the one place that wires the layers. Load the config, open the
 * store (store.h) and take its lock, resume the cluster on it, serve each listener's
 * services (the rpc layer) until SIGTERM/SIGINT, then drain (10 s grace), persist and exit
 * 0. SIGHUP, or a change of the config file, reloads the config. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/support/log.h>

#include "clock.h"
#include "cluster.h"
#include "commands.h"
#include "serve.h"
#include "config.h"
#include "file_version.h"
#include "grpc_server.h"
#include "log.h"
#include "log_limit.h"
#include "metrics.h"
#include "ops_http.h"
#include "pricing.h"
#include "provider.h"
#include "service.h"
#include "state_backend.h"
#include "store.h"

#define SERVE_GRACE_MS 10000
/* How often instance states advance without a Refresh (boot, deletion, NAP TTL). */
#define SERVE_TICK_MS 1000
/* How long gRPC's own cleanup may take at exit (see serve__grpc_cleanup). */
#define SERVE_GRPC_CLEANUP_MS 1000

static void serve_usage(FILE *f) {
    fprintf(f,
            "usage: frugal serve -c FILE [--init-state | --init-new-volume]\n"
            "                    [--log-level debug|info|warn|error] [--log-format text|json]\n");
}

/* A failed TLS handshake is logged at most once a minute: gRPC logs one error line per
 * connection, and any peer that can connect (a scanner, plaintext junk) could fill the
 * log with them. */
#define SERVE_HANDSHAKE_LOG_MS 60000

static log_limit_t serve__handshake_log;

/* gRPC's own log lines, in frugal's format (gRPC filters them by GRPC_VERBOSITY first). */
static void serve_grpc_log(gpr_log_func_args *args) {
    log_level_t level = args->severity == GPR_LOG_SEVERITY_ERROR  ? LOG_LEVEL_ERROR
                        : args->severity == GPR_LOG_SEVERITY_INFO ? LOG_LEVEL_INFO
                                                                  : LOG_LEVEL_DEBUG;
    log_field_t fields[] = {LOG_STR("source", "grpc"), LOG_STR("file", args->file),
                            LOG_INT("line", args->line)};
    long unlogged = 0;
    if (strncmp(args->message, "Handshake failed", 16) == 0) {
        if (!log_limit_due(&serve__handshake_log, SERVE_HANDSHAKE_LOG_MS, &unlogged))
            return;
        log_fields(LOG_LEVEL_WARN, fields, 3,
                   "%s (a TLS client refused or gone; %ld more since the last one logged; "
                   "further ones are not logged for a minute)",
                   args->message, unlogged);
        return;
    }
    log_fields(level, fields, 3, "%s", args->message);
}

/* The warning of every group of cfg with option overrides that old (NULL at start) did
 * not have with overrides already: once per such group. */
static void serve__warn_options(const frugal_config_t *cfg, const frugal_config_t *old) {
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const node_group_config_t *ng = &cfg->node_groups[i];
        const node_group_config_t *was =
            old != NULL ? config_find_node_group(old, ng->spec.id) : NULL;
        if (!config_group_has_options(&ng->options) ||
            (was != NULL && config_group_has_options(&was->options)))
            continue;
        char msg[300];
        config_format_options_warning(ng->spec.id, msg, sizeof(msg));
        log_warn("%s", msg);
    }
}

/* The warning of every spot group of cfg balanced with an on-demand twin, unless old
 * (NULL at start) had the same pair. */
static void serve__warn_spot_twins(const frugal_config_t *cfg, const frugal_config_t *old) {
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        size_t twin = config_spot_twin(cfg, i);
        if (twin == cfg->node_groups_count)
            continue;
        const char *id = cfg->node_groups[i].spec.id, *twin_id = cfg->node_groups[twin].spec.id;
        bool warned = false;
        for (size_t j = 0; old != NULL && j < old->node_groups_count; j++) {
            if (strcmp(old->node_groups[j].spec.id, id) != 0)
                continue;
            size_t t = config_spot_twin(old, j);
            warned =
                t < old->node_groups_count && strcmp(old->node_groups[t].spec.id, twin_id) == 0;
            break;
        }
        if (warned)
            continue;
        char msg[400];
        config_format_spot_twin_warning(id, twin_id, msg, sizeof(msg));
        log_warn("%s", msg);
    }
}

typedef bool (*config_warning_fn)(const frugal_config_t *cfg, char *buf, size_t size);

/* warning's text for cfg, unless old (NULL at start) gave the same text already. */
static void serve__warn_once(config_warning_fn warning, const frugal_config_t *cfg,
                             const frugal_config_t *old) {
    char msg[512], before[512];
    if (warning(cfg, msg, sizeof(msg)) &&
        (old == NULL || !warning(old, before, sizeof(before)) || strcmp(msg, before) != 0))
        log_warn("%s", msg);
}

/* The warnings of a config that makes part of frugal do nothing. */
static void serve__warn_inert(const frugal_config_t *cfg, const frugal_config_t *old) {
    serve__warn_once(config_unpriced_pods_warning, cfg, old);
    serve__warn_once(pricing_unpriced_damper_warning, cfg, old);
    serve__warn_once(config_autoprov_limits_warning, cfg, old);
}

/* Which memory budget applies and why; a warning when the container's limit could not
 * be read or the budget cannot hold one message of max_message_bytes. */
static void serve__log_memory_budget(const frugal_config_t *cfg) {
    const limits_config_t *l = &cfg->limits;
    if (l->memory_source_unreadable)
        log_warn("memory budget %" PRId64 " bytes: %s", l->memory_bytes, l->memory_source);
    else
        log_info("memory budget %" PRId64 " bytes: %s", l->memory_bytes, l->memory_source);
    if (l->memory_bytes < cfg->max_message_bytes)
        log_warn("memory budget %" PRId64 " bytes cannot hold one message of max_message_bytes "
                 "(%" PRId64 "): set limits.memory or a larger container limit",
                 l->memory_bytes, cfg->max_message_bytes);
}

/* A reload took effect. */
static void serve__reload_applied(const frugal_config_t *cfg, const char *why) {
    metrics_config_reloaded((double)time(NULL));
    log_info("config %s reloaded (%s): %zu node groups", cfg->path, why, cfg->node_groups_count);
}

/* Re-read, validate and apply the config at path. On any error the running config stays
 * and every problem is logged (one FILE:LINE:COL line each). */
static void serve__reload(cluster_t *cluster, const char *path, const char *why) {
    frugal_config_t *next = NULL;
    char *errors = NULL;
    if (config_load(path, &next, &errors) != 0) {
        metrics_config_reload_failed();
        log_error("config reload (%s) refused, keeping the running config:", why);
        cmd_log_lines(errors);
        free(errors);
        return;
    }
    frugal_err_t err;
    frugal_err_clear(&err);
    const frugal_config_t *old = cluster_config_acquire(cluster);
    if (cluster_reload(cluster, next, &err) != 0) {
        metrics_config_reload_failed();
        log_error("config reload (%s) refused, keeping the running config: %s: %s", why, path,
                  err.msg);
    } else {
        serve__warn_options(next, old);
        serve__warn_spot_twins(next, old);
        serve__warn_inert(next, old);
        serve__reload_applied(next, why);
    }
    config_release(old);
    config_release(next); /* the cluster holds its own reference on success */
}

/* Wait for SIGTERM/SIGINT, ticking the cluster between signals and reloading the config
 * on SIGHUP or when its file changes. Returns the stop signal. */
static int serve_wait(cluster_t *cluster, const char *path, const sigset_t *signals) {
    /* A ConfigMap update swaps a symlink, an edit changes the size or the mtime. */
    file_version_t seen;
    file_version_of(path, &seen);
    for (;;) {
        struct timespec tick = {SERVE_TICK_MS / 1000, (SERVE_TICK_MS % 1000) * 1000000L};
        int sig = sigtimedwait(signals, NULL, &tick);
        if (sig == SIGHUP) {
            file_version_of(path, &seen);
            serve__reload(cluster, path, "SIGHUP");
            continue;
        }
        if (sig > 0)
            return sig;
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        file_version_t now;
        file_version_of(path, &now);
        if (!file_version_equal(&seen, &now)) {
            seen = now;
            serve__reload(cluster, path, "file changed");
        }
        frugal_err_t err;
        frugal_err_clear(&err);
        if (cluster_refresh_when_idle(cluster, &err) != 0)
            log_warn("periodic refresh failed: %s", err.msg);
    }
}

typedef struct serve_cleanup {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} serve_cleanup_t;

static void *serve__grpc_shutdown_thread(void *arg) {
    serve_cleanup_t *c = arg;
    grpc_shutdown_blocking();
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* gRPC's cleanup, everything torn down before exit for leak checkers too. After a large
 * answer blocked a socket write, gRPC 1.51 polls that socket from a backup poller that
 * sleeps up to 10 s, and the cleanup joins it: everything of frugal is stopped and
 * stored by then, so past SERVE_GRPC_CLEANUP_MS the process exits without waiting. */
static void serve__grpc_cleanup(int status) {
    serve_cleanup_t c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    pthread_t t;
    if (pthread_create(&t, NULL, serve__grpc_shutdown_thread, &c) != 0) {
        grpc_shutdown_blocking();
        return;
    }
    struct timespec until = clock_timespec_in(CLOCK_REALTIME, SERVE_GRPC_CLEANUP_MS);
    pthread_mutex_lock(&c.mu);
    while (!c.done && pthread_cond_timedwait(&c.cv, &c.mu, &until) != ETIMEDOUT) {
    }
    bool done = c.done;
    pthread_mutex_unlock(&c.mu);
    if (done) {
        pthread_join(t, NULL);
        return;
    }
    log_info("gRPC's cleanup still waits on a socket poller after %d ms (a large answer's "
             "write); exiting without it",
             SERVE_GRPC_CLEANUP_MS);
    fflush(NULL);
    _exit(status);
}

int cmd_serve(int argc, char **argv) {
    const char *path = NULL;
    state_init_t init_state = STATE_INIT_NEVER;
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"init-state", no_argument, NULL, 'I'},
                                             {"init-new-volume", no_argument, NULL, 'N'},
                                             {"log-level", required_argument, NULL, 'l'},
                                             {"log-format", required_argument, NULL, 'f'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    if (log_init_from_env() != 0)
        return 2;
    while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        log_level_t level;
        log_format_t format;
        switch (opt) {
        case 'c':
            if (path != NULL) {
                fprintf(stderr, "frugal serve: -c given twice\n");
                return 2;
            }
            path = optarg;
            break;
        case 'I':
        case 'N':
            if (init_state != STATE_INIT_NEVER) {
                fprintf(stderr, "frugal serve: --init-state and --init-new-volume: give one\n");
                return 2;
            }
            init_state = opt == 'I' ? STATE_INIT_DELIBERATE : STATE_INIT_NEW_VOLUME;
            break;
        case 'l':
            if (log_parse_level(optarg, &level) != 0) {
                fprintf(stderr, "frugal serve: unknown log level \"%s\"\n", optarg);
                return 2;
            }
            log_set_level(level);
            break;
        case 'f':
            if (log_parse_format(optarg, &format) != 0) {
                fprintf(stderr, "frugal serve: unknown log format \"%s\"\n", optarg);
                return 2;
            }
            log_set_format(format);
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
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    frugal_config_t *cfg = NULL;
    if (cmd_load_config(path, &cfg) != 0)
        return 1;

    char why[512];
    if (config_ranking_size_unknown(cfg, why, sizeof(why)))
        log_warn("%s", why);
    serve__log_memory_budget(cfg);
    if (config_simulated_exposed(cfg, why, sizeof(why)))
        log_warn("%s", why);

    int status = 1;
    frugal_err_t err;
    frugal_err_clear(&err);
    state_backend_t *state = NULL;
    provider_t *provider = NULL;
    cluster_t *cluster = NULL;
    frugal_server_t *server = NULL;
    ops_http_t *ops = NULL;
    demand_memory_t *demand = NULL;
    metrics_config_reloaded((double)time(NULL));
    gpr_set_log_function(serve_grpc_log);
    grpc_init();
    /* One writer per state file (a shared store: a leader), before anything is bound
     * or read. */
    if (store_open(cfg, &state, &err) != 0 || state_backend_lock(state, &err) != 0) {
        log_error("%s", err.msg);
        state_backend_destroy(state);
        grpc_shutdown_blocking();
        config_free(cfg);
        return 1;
    }
    serve__warn_options(cfg, NULL);
    serve__warn_spot_twins(cfg, NULL);
    serve__warn_inert(cfg, NULL);
    /* A missing state file is refused unless --init-state: never a silent fresh start. */
    if (state_backend_check_present(state, cfg->path, init_state, &err) != 0)
        goto fail_provider;
    if (provider_create(cfg, &provider, &err) != 0)
        goto fail_provider;
    if (cluster_open(cfg, provider, state, &cluster, &err) != 0)
        goto fail_cluster;
    if (cfg->ops_listen != NULL && ops_http_start(cfg->ops_listen, cfg, cluster, &ops, &err) != 0)
        goto fail_server;
    /* The services' memory of recent pods (demand-fit) lives as long as the server. */
    if ((demand = calloc(1, sizeof(*demand))) == NULL) {
        frugal_err_set(&err, FRUGAL_ENOMEM, "out of memory");
        goto fail_server;
    }
    demand_init(demand);
    service_ctx_t ctx = {.cfg = cfg, .cluster = cluster, .demand = demand};
    const service_def_t *services[] = {&service_cloudprovider, &service_expander,
                                       &service_autoprovisioning, &service_health};
    if (frugal_server_start(&ctx, services, sizeof(services) / sizeof(services[0]), &server,
                            &err) != 0)
        goto fail_server;
    ops_http_set_server(ops, server);
    ops_http_set_readiness(ops, OPS_READY);
    log_info("frugal %s serving (%zu listener(s), state %s)", FRUGAL_VERSION, cfg->listeners_count,
             cfg->state_file != NULL ? cfg->state_file : state_backend_describe(state));

    int sig = serve_wait(cluster, path, &signals);
    log_info("received %s: draining (grace %d s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
             SERVE_GRACE_MS / 1000);
    ops_http_set_readiness(ops, OPS_DRAINING);
    ops_http_set_server(ops, NULL); /* before the server it reads is freed */
    frugal_server_stop(server, SERVE_GRACE_MS);
    if (cluster_persist(cluster, &err) != 0) {
        log_error("final persist failed: %s", err.msg);
        goto fail_server;
    }
    status = 0;
    log_info("stopped");

fail_server:
    ops_http_stop(ops);
    free(demand); /* after the server: its calls used it */
    cluster_close(cluster);
fail_cluster:
    provider_destroy(provider);
fail_provider:
    if (status != 0 && err.msg[0] != '\0')
        log_error("%s", err.msg);
    state_backend_destroy(state); /* after the cluster: releases the lock last */
    serve__grpc_cleanup(status);
    config_release(cfg);
    return status;
}
