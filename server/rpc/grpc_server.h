/* The gRPC plumbing: listeners, worker threads sharing one completion queue, the
 * per-call state machine, and graceful shutdown. Knows nothing about the services
 * beyond service.h. */
#ifndef FRUGAL_GRPC_SERVER_H
#define FRUGAL_GRPC_SERVER_H

#include "config.h"
#include "errors.h"
#include "service.h"

typedef struct frugal_server frugal_server_t;

/* Bind every listener of ctx->cfg, register every method of the given services and
 * start workers threads. On failure nothing is left running. grpc_init must have been
 * called. */
int frugal_server_start(service_ctx_t *ctx, const service_def_t *const *services,
                        size_t services_count, frugal_server_t **out, frugal_err_t *err);

/* Stop accepting, let in-flight calls finish for up to grace_ms, cancel the rest,
 * drain, join the workers and free everything. */
void frugal_server_stop(frugal_server_t *server, int64_t grace_ms);

/* What the limits allow and what currently uses them (docs/limits.md), for metrics. */
typedef struct frugal_server_usage {
    int64_t memory_budget_bytes; /* limits.memory, the transport's resource quota */
    long calls_in_flight;        /* handed to a worker and not yet freed */
    long calls_in_flight_max;    /* limits.max_calls_per_worker x workers */
    long calls_awaiting_body;    /* without deadline, under limits.receive_timeout */
    long connection_calls_max;   /* calls in flight of the busiest connection */
    long connections_with_calls; /* connections holding calls in flight */
    long changes_running;        /* calls that change the cluster, being handled */
    long changes_parked;         /* changes waiting for a worker that finishes one */
} frugal_server_usage_t;

/* A snapshot of server's usage; safe from any thread while the server runs. */
void frugal_server_get_usage(const frugal_server_t *server, frugal_server_usage_t *out);

/* notAfter (seconds since the epoch) of the certificate listener i (in the config's
 * order) serves to new connections; -1 for a plaintext listener. */
double frugal_server_certificate_not_after(const frugal_server_t *server, size_t i);

#endif
