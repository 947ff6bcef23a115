/* The contract between the gRPC plumbing (grpc_server.c, server_calls.c) and the services.
 *
 * A service is a table of methods. A typed method names the protobuf-c descriptors of
 * its request and its response; its handler gets the decoded request and fills the
 * response, and service_method_call (service.c) does the rest: it unpacks the body
 * (INVALID_ARGUMENT naming the type when it is no such message), calls the handler,
 * packs the response it filled, and frees the request and the call's memory. A raw
 * method gets the body as received and answers bytes itself: only BestOptions is one,
 * whose requests reach hundreds of MiB and are walked in place by a streaming decoder
 * (expander_decode.h) rather than unpacked whole, and whose answer echoes the request's
 * slices instead of copying them.
 *
 * Either kind returns 0 with an answer or a FRUGAL_E* code with err->msg, which the
 * plumbing turns into the mapped gRPC status and message (status.h). Handlers run on
 * the worker thread that accepted the call and may run concurrently with each other. */
#ifndef FRUGAL_SERVICE_H
#define FRUGAL_SERVICE_H

#include <stdbool.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include "arena.h"
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
    /* The call carried the `frugal-explain` request metadata (WIRE_EXPLAIN_METADATA):
     * BestOptions then answers every option with its figures, not only the winners. */
    bool explain;
    /* The services the call's listener offers (LISTENER_SERVICE_* bits); 0: every one. */
    unsigned services;
    /* The server is draining (frugal_server_stop began): health answers NOT_SERVING. */
    bool stopping;
} service_ctx_t;

/* The memory a typed handler builds its response in: the response message itself and
 * every array, string and byte field it points to that the handler does not borrow
 * from the request or from ctx->cfg (both outlive the packing). What comes from the
 * cluster is copied, since the handler releases the cluster's lock before its
 * response is packed. Freed at once by the plumbing after packing. */
typedef struct service_mem {
    arena_t arena;
    bool out_of_memory; /* a copy failed: the call answers FRUGAL_ENOMEM */
} service_mem_t;

/* count * size zeroed bytes of m; NULL when out of memory (the handler fails). */
void *service_alloc(service_mem_t *m, size_t count, size_t size);

/* A message of type desc in m, initialised; NULL when out of memory (the handler
 * fails). For the messages a response points to. */
void *service_message(service_mem_t *m, const ProtobufCMessageDescriptor *desc);

/* A copy of s (NULL reads as "") in m, for a response field; when out of memory, ""
 * and m->out_of_memory set, so the call fails after the handler returns. */
char *service_strdup(service_mem_t *m, const char *s);

/* A copy of data[0..len) in m for a bytes field; the same failure rule as
 * service_strdup (an empty field then). */
ProtobufCBinaryData service_bytes(service_mem_t *m, const uint8_t *data, size_t len);

/* request: the decoded request message of the method's request type (never NULL: an
 * empty body is a message with every field unset), owned by the plumbing. response:
 * the method's response message, initialised, in mem; the handler sets its fields.
 * On an error the response is dropped. */
typedef int (*service_typed_fn)(service_ctx_t *ctx, const void *request, void *response,
                                service_mem_t *mem, frugal_err_t *err);

/* request: the received body (never NULL: an empty message is a zero-length buffer),
 * owned by the plumbing. On 0, *response must be set (the plumbing takes ownership).
 * deadline: the call's deadline (GPR_CLOCK_MONOTONIC), for long handlers to give up. */
typedef int (*service_raw_fn)(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                              grpc_byte_buffer **response, frugal_err_t *err);

/* Exactly one of handler (typed, with both descriptors) and raw is set. */
typedef struct service_method {
    const char *path;                           /* "/package.Service/Method" */
    const ProtobufCMessageDescriptor *request;  /* typed: the body's type */
    const ProtobufCMessageDescriptor *response; /* typed: the answer's type */
    service_typed_fn handler;                   /* typed */
    service_raw_fn raw;                         /* raw */
    /* It changes the cluster, so it may wait for earlier changes (a slow disk, etcd, a
     * hook): the plumbing lets such calls hold all workers but one (server_calls.c). */
    bool changes;
} service_method_t;

/* A table entry of each kind. */
#define SERVICE_TYPED(path, request_desc, response_desc, fn)                                       \
    { (path), (request_desc), (response_desc), (fn), NULL, false }
#define SERVICE_TYPED_CHANGE(path, request_desc, response_desc, fn)                                \
    { (path), (request_desc), (response_desc), (fn), NULL, true }
#define SERVICE_RAW(path, fn)                                                                      \
    { (path), NULL, NULL, NULL, (fn), false }

typedef struct service_def {
    const char *name; /* full service name, for the health service */
    const service_method_t *methods;
    size_t methods_count;
    unsigned listener_service; /* its LISTENER_SERVICE_* bit (listen[].services) */
} service_def_t;

/* Run method m on the received body request, as the plumbing does for every call:
 * 0 with *response set (the caller owns it), or a FRUGAL_E* code with err->msg and
 * *response left NULL. deadline: the call's (GPR_CLOCK_MONOTONIC), for raw methods. */
int service_method_call(const service_method_t *m, service_ctx_t *ctx, grpc_byte_buffer *request,
                        gpr_timespec deadline, grpc_byte_buffer **response, frugal_err_t *err);

/* Export the expander's counters from 0 before their first event, so that a rule's
 * rate() or increase() sees it (a series that appears at 1 shows no increase): every
 * unscored reason, and the decisions of every group the cluster knows now (marked as
 * frugal's own: hidden once the group is gone, metrics_keep_groups). Called before
 * each scrape's samples are written; c NULL: the reasons only. */
void expander_metrics_declare(cluster_t *c);

extern const service_def_t service_cloudprovider;
extern const service_def_t service_expander;
extern const service_def_t service_health;
extern const service_def_t service_autoprovisioning;

#endif
