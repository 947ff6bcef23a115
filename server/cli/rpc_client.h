/* A minimal unary gRPC client on the C core API, used by `frugal ctl`, the tests and
 * the benchmarks. Plaintext, TLS (server verified against tls_ca) and mutual TLS. */
#ifndef FRUGAL_RPC_CLIENT_H
#define FRUGAL_RPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include "errors.h"
#include "status.h"

typedef struct rpc_client_options {
    const char *address;  /* host:port or unix:PATH */
    const char *tls_ca;   /* PEM file; NULL: plaintext */
    const char *tls_cert; /* client certificate for mutual TLS, or NULL */
    const char *tls_key;
    const char *tls_server_name; /* override of the name checked in the server cert, or NULL */
    int64_t timeout_ms;          /* per call; default 5000 when 0 */
    int64_t max_receive_bytes;   /* default 512 MiB when 0 */
} rpc_client_options_t;

typedef struct rpc_client rpc_client_t;

/* Calls grpc_init; rpc_client_close calls grpc_shutdown. */
int rpc_client_open(const rpc_client_options_t *opts, rpc_client_t **out, frugal_err_t *err);
void rpc_client_close(rpc_client_t *client);

/* One unary call of method ("/pkg.Service/Method") with a raw request body. Returns 0
 * when the call completed with any status: *status and *details (malloc'ed, may be "")
 * describe it and, on GRPC_STATUS_OK, *response and *response_len hold the reply
 * (malloc'ed; NULL/0 when empty). Negative only for local failures. Thread-safe:
 * several threads may call concurrently on one client. */
int rpc_client_call(rpc_client_t *client, const char *method, const uint8_t *request,
                    size_t request_len, uint8_t **response, size_t *response_len,
                    grpc_status_code *status, char **details);

/* rpc_client_call with the request metadata md[0..md_count). */
int rpc_client_call_metadata(rpc_client_t *client, const char *method, const grpc_metadata *md,
                             size_t md_count, const uint8_t *request, size_t request_len,
                             uint8_t **response, size_t *response_len, grpc_status_code *status,
                             char **details);

#endif
