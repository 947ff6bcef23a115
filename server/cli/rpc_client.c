/* A minimal unary gRPC client on the C core API (see rpc_client.h).
 *
 * One channel per client, shared by all calls; each call owns a pluck completion
 * queue, runs a single batch and is torn down completely before returning, so any
 * number of threads may call concurrently without locks. */
#include "rpc_client.h"

#include "pem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
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
    int rc = pem_read_file(opts->tls_ca, &ca, err);
    if (rc != 0) {
        goto fail_ca;
    }
    if (opts->tls_cert != NULL) {
        rc = pem_read_file(opts->tls_cert, &cert, err);
        if (rc != 0) {
            goto fail_cert;
        }
        rc = pem_read_file(opts->tls_key, &key, err);
        if (rc != 0) {
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

/* Copy a received message into one malloc'ed block; NULL/0 for no or empty message. */
static int rpc_client__copy_message(grpc_byte_buffer *buf, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    if (buf == NULL) {
        return 0;
    }
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, buf)) {
        return FRUGAL_EINTERNAL;
    }
    grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    size_t n = GRPC_SLICE_LENGTH(all);
    int rc = 0;
    if (n > 0) {
        *data = malloc(n);
        if (*data == NULL) {
            rc = FRUGAL_ENOMEM;
        } else {
            memcpy(*data, GRPC_SLICE_START_PTR(all), n);
            *len = n;
        }
    }
    grpc_slice_unref(all);
    return rc;
}

static char *rpc_client__slice_strdup(grpc_slice s) {
    size_t n = GRPC_SLICE_LENGTH(s);
    char *out = malloc(n + 1);
    if (out != NULL) {
        memcpy(out, GRPC_SLICE_START_PTR(s), n);
        out[n] = '\0';
    }
    return out;
}

int rpc_client_call(rpc_client_t *client, const char *method, const uint8_t *request,
                    size_t request_len, uint8_t **response, size_t *response_len,
                    grpc_status_code *status, char **details) {
    *response = NULL;
    *response_len = 0;
    *details = NULL;
    int rc = 0;

    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(client->timeout_ms, GPR_TIMESPAN));
    grpc_slice method_slice = grpc_slice_from_copied_string(method);
    grpc_call *call = grpc_channel_create_call(client->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               method_slice, NULL, deadline, NULL);
    grpc_slice_unref(method_slice);
    if (call == NULL) {
        rc = FRUGAL_EINTERNAL;
        goto fail_call;
    }

    /* The call completes before this function returns, so the request can be sent from
     * the caller's buffer without a copy (hundreds of MiB for large BestOptions). */
    grpc_slice body = grpc_slice_from_static_buffer(request, request_len);
    grpc_byte_buffer *send_buf = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);

    grpc_metadata_array initial_md, trailing_md;
    grpc_metadata_array_init(&initial_md);
    grpc_metadata_array_init(&trailing_md);
    grpc_byte_buffer *recv_buf = NULL;
    grpc_status_code call_status = GRPC_STATUS_UNKNOWN;
    grpc_slice status_details = grpc_empty_slice();

    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = 0;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send_buf;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv_buf;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
    ops[5].data.recv_status_on_client.status = &call_status;
    ops[5].data.recv_status_on_client.status_details = &status_details;

    void *tag = &ops[0];
    if (grpc_call_start_batch(call, ops, 6, tag, NULL) != GRPC_CALL_OK) {
        rc = FRUGAL_EINTERNAL;
        goto fail_batch;
    }
    /* The deadline bounds the call, so this pluck returns once it has passed. */
    grpc_event ev = grpc_completion_queue_pluck(cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type != GRPC_OP_COMPLETE) {
        rc = FRUGAL_EINTERNAL;
        goto fail_batch;
    }

    *details = rpc_client__slice_strdup(status_details);
    if (*details == NULL) {
        rc = FRUGAL_ENOMEM;
        goto fail_batch;
    }
    if (call_status == GRPC_STATUS_OK) {
        rc = rpc_client__copy_message(recv_buf, response, response_len);
        if (rc != 0) {
            free(*details);
            *details = NULL;
            goto fail_batch;
        }
    }
    *status = call_status;

fail_batch:
    grpc_slice_unref(status_details);
    if (recv_buf != NULL) {
        grpc_byte_buffer_destroy(recv_buf);
    }
    grpc_metadata_array_destroy(&initial_md);
    grpc_metadata_array_destroy(&trailing_md);
    grpc_byte_buffer_destroy(send_buf);
    grpc_call_unref(call);
fail_call:
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return rc;
}
