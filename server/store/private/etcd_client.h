/* A small etcd v3 client on the gRPC C core: unary calls (KV, Lease, and KeepAlive as a
 * one-message stream) and a Watch stream, over the endpoints of the config's `state:`
 * section with failover and a deadline per call.
 *
 * Failover: endpoints are tried in order, starting at the last one that answered. A
 * call that could not be sent (the endpoint is down, refuses, or its TLS handshake
 * fails) moves to the next endpoint while the deadline allows. A call that was sent and
 * then failed is retried elsewhere only when it is idempotent (ETCD_CALL_IDEMPOTENT): a
 * transaction that may have been applied is never sent twice. */
#ifndef FRUGAL_ETCD_CLIENT_H
#define FRUGAL_ETCD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "config.h"
#include "errors.h"

typedef struct etcd_client etcd_client_t;

#define ETCD_CALL_IDEMPOTENT 1

/* Method paths of etcd's services. */
#define ETCD_KV_RANGE "/etcdserverpb.KV/Range"
#define ETCD_KV_PUT "/etcdserverpb.KV/Put"
#define ETCD_KV_DELETE_RANGE "/etcdserverpb.KV/DeleteRange"
#define ETCD_KV_TXN "/etcdserverpb.KV/Txn"
#define ETCD_LEASE_GRANT "/etcdserverpb.Lease/LeaseGrant"
#define ETCD_LEASE_REVOKE "/etcdserverpb.Lease/LeaseRevoke"
#define ETCD_LEASE_KEEPALIVE "/etcdserverpb.Lease/LeaseKeepAlive"
#define ETCD_WATCH "/etcdserverpb.Watch/Watch"

/* Channels to st's endpoints (none is contacted yet). The TLS files are read now:
 * FRUGAL_EIO naming an unreadable one. Call after grpc_init. */
int etcd_client_create(const state_config_t *st, etcd_client_t **out, frugal_err_t *err);

void etcd_client_destroy(etcd_client_t *c);

/* The deadline of one call (state.request_timeout), in ms. */
int64_t etcd_client_timeout_ms(const etcd_client_t *c);

/* Call method with req and unpack the answer as rdesc into *resp (free with
 * protobuf_c_message_free_unpacked). timeout_ms <= 0: the client's timeout. Errors:
 * FRUGAL_EUNAVAIL naming the endpoints tried and gRPC's reason (no endpoint answered in
 * time, or a sent non-idempotent call failed: it may have been applied), FRUGAL_EINVAL
 * for etcd's refusals (with etcd's message), FRUGAL_ENOTFOUND for etcd's NOT_FOUND (an
 * expired lease), FRUGAL_EPRECOND for OUT_OF_RANGE (a compacted revision). */
int etcd_client_call(etcd_client_t *c, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, ProtobufCMessage **resp, int flags,
                     int64_t timeout_ms, frugal_err_t *err);

/* A Watch stream on one endpoint. */
typedef struct etcd_watch etcd_watch_t;

/* Open a Watch stream and send req (a WatchRequest) on it, trying the endpoints in
 * turn. */
int etcd_watch_open(etcd_client_t *c, const ProtobufCMessage *req, etcd_watch_t **out,
                    frugal_err_t *err);

/* Wait up to timeout_ms for the next WatchResponse (*resp, NULL when the wait timed out:
 * returns 0). FRUGAL_EUNAVAIL when the stream ended; the caller then closes it. */
int etcd_watch_next(etcd_watch_t *w, ProtobufCMessage **resp, int64_t timeout_ms,
                    frugal_err_t *err);

/* Cancel the stream and free it. */
void etcd_watch_close(etcd_watch_t *w);

/* The calls and the next Watch leave w's endpoint for the next one (w's stream is stuck
 * there: a member that hangs keeps its streams open). */
void etcd_watch_avoid(etcd_client_t *c, const etcd_watch_t *w);

#endif
