/* The ops endpoint (`ops_listen: HOST:PORT`): plain HTTP served by libmicrohttpd on its
 * own thread, with /healthz (the process is alive), /readyz (config and state loaded,
 * gRPC listeners up, not draining) and /metrics (Prometheus text format:
 * docs/operations.md). GET and HEAD only; anything else gets a 4xx answer and leaves
 * the server as it was. */
#ifndef FRUGAL_OPS_HTTP_H
#define FRUGAL_OPS_HTTP_H

#include <stdbool.h>

#include "cluster.h"
#include "config.h"
#include "errors.h"
#include "metrics.h"

typedef struct ops_http ops_http_t;
struct frugal_server;

/* Listen on address (HOST:PORT, as config.c checked it) and serve until ops_http_stop.
 * cfg and cluster must outlive the endpoint. Not ready until ops_http_set_readiness. */
int ops_http_start(const char *address, const frugal_config_t *cfg, cluster_t *cluster,
                   ops_http_t **out, frugal_err_t *err);

/* What /readyz answers: 503 "starting" until ready, 200 "ready", then 503 "draining"
 * once the server stops. */
typedef enum { OPS_STARTING, OPS_READY, OPS_DRAINING } ops_readiness_t;
void ops_http_set_readiness(ops_http_t *ops, ops_readiness_t readiness);

/* The gRPC server whose limits /metrics reports (frugal_server_get_usage), or NULL
 * (before it starts and before it stops: a scrape never reads a stopped server). */
void ops_http_set_server(ops_http_t *ops, const struct frugal_server *server);

/* Stop listening, finish the requests in progress, free everything. NULL is a no-op. */
void ops_http_stop(ops_http_t *ops);

/* The whole /metrics page into b: the registry, the node groups, the certificates'
 * expiry, the transport's limits and what uses them (server may be NULL) and the
 * process_* metrics. */
void ops_metrics_render(const frugal_config_t *cfg, cluster_t *cluster,
                        const struct frugal_server *server, metrics_buf_t *b);

#endif
