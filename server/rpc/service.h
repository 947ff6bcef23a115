/* The contract between the gRPC plumbing (grpc_server.c) and the services.
 *
 * A service is a table of methods; each handler gets the request payload and returns
 * either 0 with a response payload or a FRUGAL_E* code with err->msg, which the
 * plumbing turns into the mapped gRPC status and message. Handlers run on the worker
 * thread that accepted the call and may run concurrently with each other. */
#ifndef FRUGAL_SERVICE_H
#define FRUGAL_SERVICE_H

#include <grpc/grpc.h>

#include "cluster.h"
#include "demand.h"
#include "config.h"
#include "errors.h"
#include "status.h"

typedef struct service_ctx {
    const frugal_config_t *cfg;
    cluster_t *cluster;
    /* The memory of recent pods the demand-fit ranking reads (demand.h), owned by the
     * caller of frugal_server_start (`serve`): BestOptions records its pods under
     * demand-fit, and so does ProposeNodeGroups. Lock-free and bounded. NULL: none. */
    demand_memory_t *demand;
    cluster_call_t call; /* this call's budget, which handlers pass to cluster mutations */
} service_ctx_t;

/* request: the received message (never NULL; an empty message is a zero-length buffer),
 * owned by the plumbing. On 0, *response must be set (the plumbing takes ownership).
 * deadline: the call's deadline (GPR_CLOCK_MONOTONIC), for long handlers to give up. */
typedef int (*service_handler_fn)(service_ctx_t *ctx, grpc_byte_buffer *request,
                                  gpr_timespec deadline, grpc_byte_buffer **response,
                                  frugal_err_t *err);

typedef struct service_method {
    const char *path; /* "/package.Service/Method" */
    service_handler_fn handler;
} service_method_t;

typedef struct service_def {
    const char *name; /* full service name, for the health service */
    const service_method_t *methods;
    size_t methods_count;
    unsigned listener_service; /* its LISTENER_SERVICE_* bit (listen[].services) */
} service_def_t;

extern const service_def_t service_cloudprovider;
extern const service_def_t service_expander;
extern const service_def_t service_health;
extern const service_def_t service_autoprovisioning;

#endif
