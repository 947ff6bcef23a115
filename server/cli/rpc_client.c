/* A minimal unary gRPC client on the C core API (see rpc_client.h).
 *
 * One channel per client, shared by all calls; each call (unary_call) owns a pluck
 * completion queue, runs a single batch and is torn down completely before returning,
 * so any number of threads may call concurrently without locks. */
#include "rpc_client.h"

#include "codec.h"
#include "pem.h"
#include "unary_call.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#define RPC_CLIENT_DEFAULT_TIMEOUT_MS 5000
#define RPC_CLIENT_DEFAULT_MAX_RECEIVE (512 * 1024 * 1024)

struct rpc_client {
    grpc_channel *channel;
    int64_t timeout_ms;
};

/* Channel credentials for opts: insecure without a CA, else TLS, mutual with a cert. */
static int rpc_client__credentials(const rpc_client_options_t *opts,
                                   grpc_channel_credentials **creds, frugal_err_t *err) {
    if (opts->tls_ca == NULL) {
        if (opts->tls_cert != NULL || opts->tls_key != NULL) {
            return frugal_err_set(err, FRUGAL_EINVAL, "a client certificate needs --tls-ca");
        }
        *creds = grpc_insecure_credentials_create();
        return 0;
    }
    if ((opts->tls_cert == NULL) != (opts->tls_key == NULL)) {
        return frugal_err_set(err, FRUGAL_EINVAL, "client certificate and key go together");
    }
    char *ca = NULL, *cert = NULL, *key = NULL;
    /* gRPC would only fail the connection ("empty address list") without naming the file. */
    int rc = pem_read_file(opts->tls_ca, &ca, err);
    if (rc == 0)
        rc = pem_check_bundle(opts->tls_ca, ca, err);
    if (rc != 0) {
        free(ca);
        goto fail_ca;
    }
    if (opts->tls_cert != NULL) {
        rc = pem_read_file(opts->tls_cert, &cert, err);
        if (rc != 0) {
            goto fail_cert;
        }
        rc = pem_read_file(opts->tls_key, &key, err);
        if (rc == 0)
            rc = pem_check_key_pair(opts->tls_cert, cert, opts->tls_key, key, err);
        if (rc != 0) {
            free(key);
            goto fail_key;
        }
        grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = cert};
        *creds = grpc_ssl_credentials_create(ca, &pair, NULL, NULL);
    } else {
        *creds = grpc_ssl_credentials_create(ca, NULL, NULL, NULL);
    }
    if (*creds == NULL) {
        rc = frugal_err_set(err, FRUGAL_EINVAL, "cannot create TLS credentials from %s",
                            opts->tls_ca);
    }
    /* The credentials keep their own copies of the PEM strings. */
    free(key);
fail_key:
    free(cert);
fail_cert:
    free(ca);
fail_ca:
    return rc;
}

int rpc_client_open(const rpc_client_options_t *opts, rpc_client_t **out, frugal_err_t *err) {
    if (opts->address == NULL || opts->address[0] == '\0') {
        return frugal_err_set(err, FRUGAL_EINVAL, "no server address");
    }
    rpc_client_t *client = calloc(1, sizeof(*client));
    if (client == NULL) {
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    client->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : RPC_CLIENT_DEFAULT_TIMEOUT_MS;
    int64_t max_receive =
        opts->max_receive_bytes > 0 ? opts->max_receive_bytes : RPC_CLIENT_DEFAULT_MAX_RECEIVE;
    if (max_receive > INT32_MAX) {
        max_receive = INT32_MAX;
    }

    grpc_init();
    grpc_channel_credentials *creds = NULL;
    int rc = rpc_client__credentials(opts, &creds, err);
    if (rc != 0) {
        goto fail_creds;
    }

    grpc_arg args[3];
    size_t nargs = 0;
    args[nargs].type = GRPC_ARG_INTEGER;
    args[nargs].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[nargs].value.integer = (int)max_receive;
    nargs++;
    /* Unlimited sending: the tests send oversized bodies on purpose. */
    args[nargs].type = GRPC_ARG_INTEGER;
    args[nargs].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[nargs].value.integer = -1;
    nargs++;
    if (opts->tls_server_name != NULL) {
        args[nargs].type = GRPC_ARG_STRING;
        args[nargs].key = GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
        args[nargs].value.string = (char *)opts->tls_server_name;
        nargs++;
    }
    grpc_channel_args channel_args = {.num_args = nargs, .args = args};
    client->channel = grpc_channel_create(opts->address, creds, &channel_args);
    grpc_channel_credentials_release(creds);
    if (client->channel == NULL) {
        rc = frugal_err_set(err, FRUGAL_EINVAL, "cannot create a channel to %s", opts->address);
        goto fail_channel;
    }
    *out = client;
    return 0;

fail_channel:
fail_creds:
    grpc_shutdown();
    free(client);
    return rc;
}

void rpc_client_close(rpc_client_t *client) {
    if (client == NULL) {
        return;
    }
    grpc_channel_destroy(client->channel);
    free(client);
    /* Blocking: a CLI exits right after this, and gRPC's asynchronous shutdown would
     * still be tearing down TLS sessions on its own threads. */
    grpc_shutdown_blocking();
}

int rpc_client_call(rpc_client_t *client, const char *method, const uint8_t *request,
                    size_t request_len, uint8_t **response, size_t *response_len,
                    grpc_status_code *status, char **details) {
    return rpc_client_call_metadata(client, method, NULL, 0, request, request_len, response,
                                    response_len, status, details);
}

int rpc_client_call_metadata(rpc_client_t *client, const char *method, const grpc_metadata *md,
                             size_t md_count, const uint8_t *request, size_t request_len,
                             uint8_t **response, size_t *response_len, grpc_status_code *status,
                             char **details) {
    *response = NULL;
    *response_len = 0;
    *details = NULL;
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(client->timeout_ms, GPR_TIMESPAN));
    /* The call completes before this function returns, so the request can be sent from
     * the caller's buffer without a copy (hundreds of MiB for large BestOptions). */
    grpc_slice body = grpc_slice_from_static_buffer(request, request_len);
    grpc_byte_buffer *send_buf = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    grpc_byte_buffer *recv_buf = NULL;
    grpc_status_code call_status = GRPC_STATUS_UNKNOWN;
    int rc = unary_call(client->channel, method, deadline, md, md_count, send_buf, &recv_buf,
                        &call_status, details);
    grpc_byte_buffer_destroy(send_buf);
    if (rc == 0 && call_status == GRPC_STATUS_OK && recv_buf != NULL) {
        frugal_err_t err;
        rc = codec_read_all(recv_buf, response, response_len, &err);
        if (rc != 0) {
            free(*details);
            *details = NULL;
        }
    }
    if (recv_buf != NULL)
        grpc_byte_buffer_destroy(recv_buf);
    if (rc == 0)
        *status = call_status;
    return rc;
}
