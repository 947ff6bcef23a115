/* The gRPC server's listeners and life: one gRPC server per distinct set of services,
 * the transport's limits as channel arguments, TLS with reload, the workers started on
 * one shared queue (server_calls.c runs them), and the graceful stop. */
#include "grpc_server.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "clock.h"
#include "conn_share.h"
#include "log.h"
#include "metrics.h"
#include "server_internal.h"
#include "tls_reload.h"

static grpc_server_credentials *listener_credentials(const listener_config_t *l,
                                                     tls_reloader_t **reloader, frugal_err_t *err) {
    *reloader = NULL;
    if (l->tls_cert == NULL)
        return grpc_insecure_server_credentials_create();
    return tls_server_credentials(l, reloader, err);
}

/* Free what frugal_server_start allocated, once the grpc server is destroyed. */
static void server__free(frugal_server_t *s) {
    for (size_t i = 0; s->reloaders != NULL && i < s->listeners_count; i++)
        tls_reloader_free(s->reloaders[i]);
    free(s->reloaders);
    for (size_t i = 0; s->methods != NULL && i < s->methods_count; i++)
        free(s->methods[i].metrics.names);
    free(s->endpoints);
    if (s->quota != NULL)
        grpc_resource_quota_unref(s->quota);
    conn_share_destroy(s->shares);
    pthread_mutex_destroy(&s->receive_mu);
    pthread_mutex_destroy(&s->changes_mu);
    pthread_rwlock_destroy(&s->cq_lock);
    free(s->methods);
    free(s->workers);
    free(s);
}

/* Whether address is a unix:PATH on which a server accepts connections. gRPC removes the
 * file of a unix socket before it binds its own there, which would silently take the
 * address from a running server (a TCP port in use fails instead); a stale file that
 * refuses connections is gRPC's to replace. */
static bool listener_unix_in_use(const char *address) {
    if (strncmp(address, "unix:", 5) != 0)
        return false;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = address + 5;
    if (strlen(path) >= sizeof(sa.sun_path))
        return false;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return false;
    /* EAGAIN: a server whose backlog is full (a stopped process) still holds it. */
    bool in_use = connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN;
    close(fd);
    return in_use;
}

static size_t worker_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    /* At least four, so that slow calls (large BestOptions) leave workers free for the
     * small, frequent ones CA must get within its 5 s timeout. */
    return n < 4 ? 4 : (size_t)n;
}

/* The endpoint serving exactly the given services, made (server created, methods of the
 * services it offers registered) when there is none yet. NULL with err set on failure. */
static endpoint_t *server__endpoint(frugal_server_t *s, unsigned services,
                                    const service_def_t *const *defs, size_t defs_count,
                                    const grpc_channel_args *args, frugal_err_t *err) {
    for (size_t i = 0; i < s->endpoints_count; i++)
        if (s->endpoints[i].services == services)
            return &s->endpoints[i];
    endpoint_t *ep = &s->endpoints[s->endpoints_count];
    ep->server = grpc_server_create(args, NULL);
    if (ep->server == NULL) {
        frugal_err_set(err, FRUGAL_EINTERNAL, "grpc_server_create failed");
        return NULL;
    }
    s->endpoints_count++;
    ep->services = services;
    ep->methods = &s->methods[s->methods_count];
    for (size_t i = 0; i < defs_count; i++) {
        if ((defs[i]->listener_service & services) == 0)
            continue;
        for (size_t j = 0; j < defs[i]->methods_count; j++) {
            method_entry_t *e = &ep->methods[ep->methods_count++];
            s->methods_count++;
            e->method = &defs[i]->methods[j];
            e->ep = ep;
            server__call_metrics_init(&e->metrics, e->method->path);
            /* Headers only: the message is received separately, under the receive
             * timeout and the cap on calls in flight (call_accept). */
            e->handle = grpc_server_register_method(ep->server, e->method->path, NULL,
                                                    GRPC_SRM_PAYLOAD_NONE, 0);
            if (e->handle == NULL) {
                frugal_err_set(err, FRUGAL_EINTERNAL, "cannot register %s", e->method->path);
                return NULL;
            }
        }
    }
    return ep;
}

#define SERVER_ARGS_MAX 12

/* gRPC's default leaves a connection that never completes its TLS and HTTP/2 handshake
 * open for 120 s; a client that cannot finish it in 10 s cannot make CA's 5 s calls. */
#define SERVER_HANDSHAKE_TIMEOUT_MS 10000

/* Client keepalive: gRPC's server defaults take a ping within 5 min of the last one (2 h
 * on a connection without calls) as a strike, and after 2 strikes send GOAWAY
 * "too_many_pings" and close the connection, failing its calls. A client's keepalive of
 * 10 s (grpc-go's shortest) without calls met that at its fourth ping. Pings 5 s apart
 * or more are accepted, with calls or without; a faster pinger still gets the GOAWAY
 * (docs/limits.md). */
#define SERVER_MIN_PING_INTERVAL_MS 5000
#define SERVER_MAX_PING_STRIKES 2

static int clamp_int(int64_t v) {
    return v > INT_MAX ? INT_MAX : (int)v;
}

/* The channel arguments: message sizes, and the transport's limits (config limits): a
 * resource quota of limits.memory for everything the transport holds, streams per
 * connection, the header size, how long a connection may stay idle or in its handshake,
 * how often a client may ping. Creates
 * s->quota. Returns the number of args filled. */
static size_t server__channel_args(frugal_server_t *s, const frugal_config_t *cfg, grpc_arg *args) {
    const limits_config_t *l = &cfg->limits;
    size_t n = 0;
    const struct {
        const char *key;
        int64_t value;
    } ints[] = {
        {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, cfg->max_message_bytes},
        {GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1},
        {GRPC_ARG_MAX_CONCURRENT_STREAMS, l->max_concurrent_streams},
        {GRPC_ARG_MAX_METADATA_SIZE, l->max_header_bytes},
        {GRPC_ARG_MAX_CONNECTION_IDLE_MS, l->idle_timeout_ms > 0 ? l->idle_timeout_ms : INT_MAX},
        {GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, SERVER_HANDSHAKE_TIMEOUT_MS},
        /* No SO_REUSEPORT: a second server on the same port must fail to bind, not split
         * the calls with the first (with the state-file lock: one writer). */
        {GRPC_ARG_ALLOW_REUSEPORT, 0},
        {GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1},
        {GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, SERVER_MIN_PING_INTERVAL_MS},
        {GRPC_ARG_HTTP2_MAX_PING_STRIKES, SERVER_MAX_PING_STRIKES},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        args[n].type = GRPC_ARG_INTEGER;
        args[n].key = (char *)ints[i].key;
        args[n].value.integer = clamp_int(ints[i].value);
        n++;
    }
    s->quota = grpc_resource_quota_create("frugal");
    grpc_resource_quota_resize(s->quota, (size_t)l->memory_bytes);
    args[n].type = GRPC_ARG_POINTER;
    args[n].key = GRPC_ARG_RESOURCE_QUOTA;
    args[n].value.pointer.p = s->quota;
    args[n].value.pointer.vtable = grpc_resource_quota_arg_vtable();
    n++;
    return n;
}

/* Destroy a server that never ran. gRPC aborts the destruction of one that holds bound
 * ports (an earlier listener's) unless it was shut down first, and shutdown reports on a
 * queue registered before start. */
static void server__discard(grpc_server *server) {
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_server_register_completion_queue(server, cq, NULL);
    grpc_server_start(server);
    grpc_server_shutdown_and_notify(server, cq, server);
    grpc_completion_queue_pluck(cq, server, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    grpc_server_destroy(server);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
}

int frugal_server_start(service_ctx_t *ctx, const service_def_t *const *services,
                        size_t services_count, frugal_server_t **out, frugal_err_t *err) {
    const frugal_config_t *cfg = ctx->cfg;
    frugal_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    s->ctx = ctx;
    /* before any worker exists */
    server__unknown_metrics_init();

    pthread_mutex_init(&s->receive_mu, NULL);
    pthread_mutex_init(&s->changes_mu, NULL);
    pthread_rwlock_init(&s->cq_lock, NULL);
    grpc_arg args[SERVER_ARGS_MAX];
    size_t nargs = server__channel_args(s, cfg, args);
    grpc_channel_args channel_args = {.num_args = nargs, .args = args};

    size_t total = 0;
    for (size_t i = 0; i < services_count; i++)
        total += services[i]->methods_count;
    size_t listeners = cfg->listeners_count ? cfg->listeners_count : 1;
    s->methods = calloc(total * listeners, sizeof(*s->methods));
    s->endpoints = calloc(listeners, sizeof(*s->endpoints));
    s->workers_count = worker_count();
    s->changes_max = s->workers_count > 1 ? (long)s->workers_count - 1 : 1;
    s->max_inflight = (long)cfg->limits.max_calls_per_worker * (long)s->workers_count;
    s->shares = conn_share_create(s->max_inflight, CONN_SHARE_FLOOR);
    s->refused_share = metrics_cell(METRICS_CALLS_REFUSED, "connection_share", NULL, NULL);
    s->refused_total = metrics_cell(METRICS_CALLS_REFUSED, "total", NULL, NULL);
    metrics_cell(METRICS_CALLS_REFUSED, "receive_timeout", NULL, NULL); /* its series at 0 */
    s->closed_connections = metrics_cell(METRICS_CONNECTIONS_CLOSED, NULL, NULL, NULL);
    s->max_streams = cfg->limits.max_concurrent_streams;
    s->receive_timeout = gpr_time_from_millis(cfg->limits.receive_timeout_ms, GPR_TIMESPAN);
    s->max_message_bytes = (long long)cfg->max_message_bytes;
    s->workers = calloc(s->workers_count, sizeof(*s->workers));
    s->listeners_count = cfg->listeners_count;
    s->reloaders = calloc(listeners, sizeof(*s->reloaders));
    if (s->methods == NULL || s->endpoints == NULL || s->workers == NULL || s->reloaders == NULL ||
        s->shares == NULL) {
        frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail_server;
    }

    for (size_t i = 0; i < cfg->listeners_count; i++) {
        const listener_config_t *l = &cfg->listeners[i];
        endpoint_t *ep = server__endpoint(s, l->services | LISTENER_SERVICE_HEALTH, services,
                                          services_count, &channel_args, err);
        if (ep == NULL)
            goto fail_server;
        if (listener_unix_in_use(l->address)) {
            frugal_err_set(err, FRUGAL_EIO,
                           "cannot listen on %s: another server is listening on it (address in "
                           "use)",
                           l->address);
            goto fail_server;
        }
        grpc_server_credentials *creds = listener_credentials(l, &s->reloaders[i], err);
        if (creds == NULL)
            goto fail_server;
        int port = grpc_server_add_http2_port(ep->server, l->address, creds);
        grpc_server_credentials_release(creds);
        if (port == 0) {
            frugal_err_set(err, FRUGAL_EIO, "cannot listen on %s (address in use or invalid)",
                           l->address);
            goto fail_server;
        }
        char offered[80];
        config_format_services(ep->services, offered, sizeof(offered));
        log_info("listening on %s (%s; %s)", l->address,
                 l->tls_cert == NULL ? "plaintext"
                                     : (l->tls_client_ca != NULL ? "mutual TLS" : "TLS"),
                 offered);
    }

    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->shutdown_cq = grpc_completion_queue_create_for_pluck(NULL);
    for (size_t e = 0; e < s->endpoints_count; e++) {
        grpc_server_register_completion_queue(s->endpoints[e].server, s->cq, NULL);
        grpc_server_register_completion_queue(s->endpoints[e].server, s->shutdown_cq, NULL);
        grpc_server_start(s->endpoints[e].server);
    }
    for (size_t i = 0; i < s->workers_count; i++) {
        s->workers[i].server = s;
        s->workers[i].cq = s->cq;
    }

    for (size_t i = 0; i < s->workers_count; i++) {
        worker_t *w = &s->workers[i];
        for (size_t e = 0; e < s->endpoints_count; e++) {
            endpoint_t *ep = &s->endpoints[e];
            for (size_t m = 0; m < ep->methods_count; m++)
                server__request(w, ep, &ep->methods[m]);
            server__request(w, ep, NULL);
        }
        if (pthread_create(&w->thread, NULL, server__worker_main, w) != 0) {
            frugal_err_set(err, FRUGAL_EINTERNAL, "cannot start worker thread");
            frugal_server_stop(s, 0);
            return FRUGAL_EINTERNAL;
        }
        w->thread_started = true;
    }
    *out = s;
    return 0;

fail_server:
    for (size_t e = 0; s->endpoints != NULL && e < s->endpoints_count; e++)
        server__discard(s->endpoints[e].server);
    server__free(s);
    return err != NULL && err->code ? err->code : FRUGAL_EINTERNAL;
}

void frugal_server_get_usage(const frugal_server_t *s, frugal_server_usage_t *out) {
    out->memory_budget_bytes = s->ctx->cfg->limits.memory_bytes;
    out->calls_in_flight = atomic_load(&((frugal_server_t *)s)->inflight);
    out->calls_in_flight_max = s->max_inflight;
    out->calls_awaiting_body = atomic_load(&((frugal_server_t *)s)->receiving);
    out->connection_calls_max = conn_share_busiest(s->shares);
    out->connections_with_calls = conn_share_connections(s->shares);
    out->changes_running = atomic_load(&((frugal_server_t *)s)->changes_running);
    out->changes_parked = atomic_load(&((frugal_server_t *)s)->changes_parked);
}

double frugal_server_certificate_not_after(const frugal_server_t *s, size_t i) {
    if (i >= s->listeners_count || s->reloaders == NULL || s->reloaders[i] == NULL)
        return -1;
    return tls_reloader_not_after(s->reloaders[i]);
}

/* How long stop waits for the workers to free the calls the server let go of. */
#define STOP_DRAIN_MS 2000
/* How often stop looks whether any call is still in flight while the server shuts down. */
#define STOP_SLICE_MS 100

void frugal_server_stop(frugal_server_t *s, int64_t grace_ms) {
    atomic_store(&s->stopping, true);
    for (size_t e = 0; e < s->endpoints_count; e++)
        grpc_server_shutdown_and_notify(s->endpoints[e].server, s->shutdown_cq, &s->endpoints[e]);
    int64_t deadline_ms = clock_mono_ms() + grace_ms;
    bool cancelled = false;
    int idle_slices = 0;
    for (size_t e = 0; e < s->endpoints_count; e++) {
        for (;;) {
            grpc_event ev = grpc_completion_queue_pluck(
                s->shutdown_cq, &s->endpoints[e],
                cancelled ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                          : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(STOP_SLICE_MS, GPR_TIMESPAN)),
                NULL);
            if (ev.type != GRPC_QUEUE_TIMEOUT)
                break;
            /* Two slices without a call: what holds the shutdown is a connection that
             * never finished its handshake, which no grace helps. */
            idle_slices = atomic_load(&s->inflight) == 0 ? idle_slices + 1 : 0;
            if (idle_slices >= 2)
                log_info("no call in flight: closing the connections still in their "
                         "handshake instead of waiting out the %lld ms grace",
                         (long long)grace_ms);
            else if (clock_mono_ms() >= deadline_ms)
                log_warn("in-flight calls did not finish within %lld ms; cancelling them",
                         (long long)grace_ms);
            else
                continue;
            for (size_t k = 0; k < s->endpoints_count; k++)
                grpc_server_cancel_all_calls(s->endpoints[k].server);
            cancelled = true;
        }
    }
    /* The server has let go of its calls, but their last completions (a cancelled
     * receive) may still wait in the queue: let the workers free them first. */
    for (int waited = 0; atomic_load(&s->inflight) > 0 && waited < STOP_DRAIN_MS; waited += 10)
        usleep(10 * 1000);
    pthread_rwlock_wrlock(&s->cq_lock);
    s->cq_closed = true;
    pthread_rwlock_unlock(&s->cq_lock);
    grpc_completion_queue_shutdown(s->cq);
    for (size_t i = 0; i < s->workers_count; i++) {
        if (s->workers[i].thread_started)
            pthread_join(s->workers[i].thread, NULL);
    }
    bool any_started = false;
    for (size_t i = 0; i < s->workers_count; i++)
        any_started = any_started || s->workers[i].thread_started;
    if (!any_started)
        server__worker_main(&s->workers[0]); /* drains and frees what was armed */
    for (size_t e = 0; e < s->endpoints_count; e++)
        grpc_server_destroy(s->endpoints[e].server);
    grpc_completion_queue_destroy(s->cq);
    grpc_completion_queue_shutdown(s->shutdown_cq);
    while (
        grpc_completion_queue_pluck(s->shutdown_cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
            .type != GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(s->shutdown_cq);
    server__free(s);
}
