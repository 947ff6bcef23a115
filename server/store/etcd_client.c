/* The etcd v3 client: one channel per endpoint, a pluck queue per call. */
#include "etcd_client.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "codec.h"
#include "etcd/rpc.pb-c.h"
#include "log.h"
#include "metrics.h"
#include "pem.h"
#include "unary_call.h"

typedef struct etcd_endpoint {
    char *url;    /* as configured, for messages */
    char *target; /* host:port */
    grpc_channel *channel;
} etcd_endpoint_t;

struct etcd_client {
    etcd_endpoint_t *endpoints;
    size_t count;
    atomic_size_t current; /* the endpoint that answered last */
    int64_t timeout_ms;
};

static int etcd__credentials(const state_config_t *st, grpc_channel_credentials **creds,
                             frugal_err_t *err) {
    if (strncmp(st->endpoints[0], "https://", 8) != 0) {
        *creds = grpc_insecure_credentials_create();
        return 0;
    }
    char *ca = NULL, *cert = NULL, *key = NULL;
    int rc = 0;
    /* Checked here: gRPC would only fail the connections, naming no file. */
    if ((st->tls_ca != NULL && ((rc = pem_read_file(st->tls_ca, &ca, err)) != 0 ||
                                (rc = pem_check_bundle(st->tls_ca, ca, err)) != 0)) ||
        (st->tls_cert != NULL && (rc = pem_read_file(st->tls_cert, &cert, err)) != 0) ||
        (st->tls_key != NULL && (rc = pem_read_file(st->tls_key, &key, err)) != 0) ||
        (cert != NULL && key != NULL &&
         (rc = pem_check_key_pair(st->tls_cert, cert, st->tls_key, key, err)) != 0))
        goto out;
    grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = cert};
    *creds = grpc_ssl_credentials_create(ca, cert != NULL ? &pair : NULL, NULL, NULL);
    if (*creds == NULL)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "state.tls: cannot create TLS credentials");
out:
    free(ca);
    free(cert);
    free(key);
    return rc;
}

int etcd_client_create(const state_config_t *st, etcd_client_t **out, frugal_err_t *err) {
    *out = NULL;
    etcd_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL || (c->endpoints = calloc(st->endpoints_count, sizeof(*c->endpoints))) == NULL) {
        free(c);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    c->timeout_ms = st->request_timeout_ms;
    grpc_channel_credentials *creds = NULL;
    int rc = etcd__credentials(st, &creds, err);
    if (rc != 0) {
        free(c->endpoints);
        free(c);
        return rc;
    }
    /* Reconnect soon after an etcd member comes back, not after gRPC's 1-120 s backoff:
     * a mutation waits for at most one request timeout. */
    /* No receive limit: a full read of a large state is over gRPC's 4 MiB default (etcd
     * bounds each write, 1.5 MiB by default, not the sum of the keys). */
    grpc_arg args[3] = {
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
         .value.integer = 100},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, .value.integer = 1000},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, .value.integer = -1},
    };
    grpc_channel_args cargs = {.num_args = 3, .args = args};
    for (size_t i = 0; i < st->endpoints_count; i++) {
        etcd_endpoint_t *e = &c->endpoints[i];
        const char *url = st->endpoints[i];
        e->url = strdup(url);
        e->target = strdup(strstr(url, "://") + 3);
        if (e->url == NULL || e->target == NULL) {
            c->count = i + 1;
            etcd_client_destroy(c);
            grpc_channel_credentials_release(creds);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        }
        e->channel = grpc_channel_create(e->target, creds, &cargs);
        c->count = i + 1;
    }
    grpc_channel_credentials_release(creds);
    *out = c;
    return 0;
}

void etcd_client_destroy(etcd_client_t *c) {
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->count; i++) {
        if (c->endpoints[i].channel != NULL)
            grpc_channel_destroy(c->endpoints[i].channel);
        free(c->endpoints[i].url);
        free(c->endpoints[i].target);
    }
    free(c->endpoints);
    free(c);
}

int64_t etcd_client_timeout_ms(const etcd_client_t *c) {
    return c->timeout_ms;
}

static gpr_timespec etcd__deadline(int64_t at_ms) {
    return gpr_time_add(gpr_time_0(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(at_ms, GPR_TIMESPAN));
}

static int64_t etcd__now_ms(void) {
    gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void etcd__queue_drain(grpc_completion_queue *cq) {
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
}

/* Wait until ch is READY (connecting it), at most until at_ms. */
static bool etcd__wait_ready(grpc_channel *ch, int64_t at_ms) {
    grpc_connectivity_state s = grpc_channel_check_connectivity_state(ch, 1);
    if (s == GRPC_CHANNEL_READY)
        return true;
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    bool ready = false;
    while (etcd__now_ms() < at_ms) {
        int tag;
        grpc_channel_watch_connectivity_state(ch, s, etcd__deadline(at_ms), cq, &tag);
        grpc_event ev =
            grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (!ev.success)
            break; /* the deadline passed */
        s = grpc_channel_check_connectivity_state(ch, 1);
        if (s == GRPC_CHANNEL_READY) {
            ready = true;
            break;
        }
        if (s == GRPC_CHANNEL_TRANSIENT_FAILURE)
            break; /* refused, unreachable or the TLS handshake failed: next endpoint */
    }
    etcd__queue_drain(cq);
    return ready;
}

/* One unary call on e's channel until at_ms: *status, *details (malloc'ed), *resp. */
static void etcd__call_once(etcd_endpoint_t *e, const char *method, grpc_byte_buffer *req,
                            int64_t at_ms, grpc_byte_buffer **resp, grpc_status_code *status,
                            char **details) {
    if (unary_call(e->channel, method, etcd__deadline(at_ms), NULL, 0, req, resp, status,
                   details) != 0) {
        *status = GRPC_STATUS_INTERNAL;
        *details = strdup("");
    }
}

/* One attempt on one endpoint. *status and details (malloc'ed) describe the outcome;
 * *sent tells whether the request may have reached etcd. */
static int etcd__attempt(etcd_endpoint_t *e, const char *method, grpc_byte_buffer *req,
                         int64_t at_ms, grpc_byte_buffer **resp, grpc_status_code *status,
                         char **details, bool *sent) {
    *resp = NULL;
    *details = NULL;
    *sent = false;
    if (!etcd__wait_ready(e->channel, at_ms)) {
        /* Why: a fail-fast probe (an empty Range, harmless even if it reaches etcd) on
         * the failed channel answers with gRPC's reason (refused, TLS verify failed...). */
        grpc_byte_buffer *probe = codec_from_bytes(NULL, 0), *ignored = NULL;
        grpc_status_code pst = GRPC_STATUS_UNAVAILABLE;
        char *why = NULL;
        if (probe != NULL && etcd__now_ms() < at_ms)
            etcd__call_once(e, ETCD_KV_RANGE, probe, at_ms, &ignored, &pst, &why);
        grpc_byte_buffer_destroy(probe);
        grpc_byte_buffer_destroy(ignored);
        *status = GRPC_STATUS_UNAVAILABLE;
        size_t n = (why != NULL ? strlen(why) : 0) + 64;
        *details = malloc(n);
        if (*details != NULL)
            snprintf(*details, n, "not connected%s%s",
                     why != NULL && why[0] && pst != GRPC_STATUS_OK ? ": " : "",
                     why != NULL && pst != GRPC_STATUS_OK ? why : "");
        free(why);
        return 0;
    }
    *sent = true;
    etcd__call_once(e, method, req, at_ms, resp, status, details);
    return 0;
}

static int etcd__status_error(grpc_status_code st, const char *method, const char *url,
                              const char *details, frugal_err_t *err) {
    /* What etcd refuses is never the caller's mistake: a full store (NOSPACE) or a rate
     * limit (RESOURCE_EXHAUSTED) passes, so retry (UNAVAILABLE); a request over etcd's
     * limits (INVALID_ARGUMENT: too large, too many operations) or anything else is a
     * state frugal cannot write in (FAILED_PRECONDITION), not CA's bad argument. */
    int code = st == GRPC_STATUS_NOT_FOUND ? FRUGAL_ENOTFOUND
               : st == GRPC_STATUS_UNAVAILABLE || st == GRPC_STATUS_DEADLINE_EXCEEDED ||
                       st == GRPC_STATUS_RESOURCE_EXHAUSTED
                   ? FRUGAL_EUNAVAIL
                   : FRUGAL_EPRECOND;
    return frugal_err_set(err, code, "etcd %s at %s: %s", method, url, details);
}

static int etcd__call(etcd_client_t *c, const char *method, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *rdesc, ProtobufCMessage **resp, int flags,
                      int64_t timeout_ms, frugal_err_t *err) {
    *resp = NULL;
    int64_t t0 = etcd__now_ms();
    int64_t end = t0 + (timeout_ms > 0 ? timeout_ms : c->timeout_ms);
    grpc_byte_buffer *body = codec_pack(req);
    if (body == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t first = atomic_load(&c->current) % c->count;
    char tried[FRUGAL_ERR_MSG_MAX] = "";
    size_t used = 0;
    int rc = FRUGAL_EUNAVAIL;
    for (size_t k = 0; k < c->count; k++) {
        size_t i = (first + k) % c->count;
        etcd_endpoint_t *e = &c->endpoints[i];
        int64_t now = etcd__now_ms();
        if (now >= end)
            break;
        /* Leave time for the endpoints not tried yet. */
        int64_t share = (end - now) / (int64_t)(c->count - k);
        int64_t at = k + 1 == c->count || share < 300 ? end : now + share;
        grpc_byte_buffer *answer = NULL;
        grpc_status_code st = GRPC_STATUS_UNKNOWN;
        char *details = NULL;
        bool sent = false;
        etcd__attempt(e, method, body, at, &answer, &st, &details, &sent);
        if (st == GRPC_STATUS_OK) {
            atomic_store(&c->current, i);
            rc = answer != NULL ? codec_unpack(rdesc, answer, resp, err)
                                : frugal_err_set(err, FRUGAL_EUNAVAIL, "etcd %s at %s: no answer",
                                                 method, e->url);
            grpc_byte_buffer_destroy(answer);
            free(details);
            grpc_byte_buffer_destroy(body);
            return rc;
        }
        grpc_byte_buffer_destroy(answer);
        bool retry = st == GRPC_STATUS_UNAVAILABLE || st == GRPC_STATUS_DEADLINE_EXCEEDED;
        if (!retry || (sent && !(flags & ETCD_CALL_IDEMPOTENT))) {
            rc = etcd__status_error(st, method, e->url, details != NULL ? details : "", err);
            if (retry)
                rc = frugal_err_set(err, FRUGAL_EUNAVAIL,
                                    "etcd %s at %s failed after it was sent (%s): it may or may "
                                    "not have been applied",
                                    method, e->url, details != NULL ? details : "");
            free(details);
            grpc_byte_buffer_destroy(body);
            return rc;
        }
        int n = snprintf(tried + used, sizeof(tried) - used, "%s%s (%s)", used > 0 ? ", " : "",
                         e->url, details != NULL ? details : "");
        if (n > 0)
            used = used + (size_t)n < sizeof(tried) ? used + (size_t)n : sizeof(tried) - 1;
        free(details);
    }

    grpc_byte_buffer_destroy(body);
    return frugal_err_set(
        err, rc, "etcd unavailable: no endpoint answered %s (after %lld of %lld ms): %s", method,
        (long long)(etcd__now_ms() - t0), (long long)(end - t0), used > 0 ? tried : "no time left");
}

int etcd_client_call(etcd_client_t *c, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, ProtobufCMessage **resp, int flags,
                     int64_t timeout_ms, frugal_err_t *err) {
    int64_t t0 = etcd__now_ms();
    int rc = etcd__call(c, method, req, rdesc, resp, flags, timeout_ms, err);
    metrics_observe(METRICS_ETCD_SECONDS, (double)(etcd__now_ms() - t0) / 1000.0, method,
                    rc == 0 ? "ok" : frugal_err_name(rc));
    return rc;
}

/* ---- Watch ---- */

struct etcd_watch {
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_byte_buffer *recv;
    bool recv_pending;
    bool send_pending;
    grpc_byte_buffer *body; /* the create request, until its send completed */
    grpc_metadata_array im;
    grpc_metadata_array tm;
    grpc_status_code status;
    grpc_slice details;
    bool ended;
    const char *url;
};

static int etcd__watch_start(etcd_endpoint_t *e, const ProtobufCMessage *req, int64_t at_ms,
                             etcd_watch_t **out) {
    if (!etcd__wait_ready(e->channel, at_ms))
        return FRUGAL_EUNAVAIL;
    etcd_watch_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return FRUGAL_ENOMEM;
    w->url = e->url;
    w->cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice m = grpc_slice_from_static_string(ETCD_WATCH);
    w->call = grpc_channel_create_call(e->channel, NULL, GRPC_PROPAGATE_DEFAULTS, w->cq, m, NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_metadata_array_init(&w->im);
    grpc_metadata_array_init(&w->tm);
    w->details = grpc_empty_slice();
    grpc_byte_buffer *body = codec_pack(req);
    w->body = body;
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = body;
    /* Messages are handed over only once the initial metadata was received. */
    ops[2].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[2].data.recv_initial_metadata.recv_initial_metadata = &w->im;
    ops[3].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[3].data.recv_status_on_client.trailing_metadata = &w->tm;
    ops[3].data.recv_status_on_client.status = &w->status;
    ops[3].data.recv_status_on_client.status_details = &w->details;
    /* Two batches: the send (tag w) and the status (tag &w->status), which completes
     * when the stream ends. */
    w->send_pending = true;
    grpc_call_start_batch(w->call, ops, 3, w, NULL);
    grpc_call_start_batch(w->call, ops + 3, 1, &w->status, NULL);
    grpc_event ev = grpc_completion_queue_pluck(w->cq, w, etcd__deadline(at_ms), NULL);
    w->send_pending = ev.type == GRPC_QUEUE_TIMEOUT;
    if (ev.type != GRPC_OP_COMPLETE || !ev.success) {
        etcd_watch_close(w);
        return FRUGAL_EUNAVAIL;
    }
    *out = w;
    return 0;
}

void etcd_watch_avoid(etcd_client_t *c, const etcd_watch_t *w) {
    size_t i = atomic_load(&c->current) % c->count;
    if (c->endpoints[i].url == w->url)
        atomic_store(&c->current, (i + 1) % c->count);
}

int etcd_watch_open(etcd_client_t *c, const ProtobufCMessage *req, etcd_watch_t **out,
                    frugal_err_t *err) {
    *out = NULL;
    size_t first = atomic_load(&c->current) % c->count;
    for (size_t k = 0; k < c->count; k++) {
        size_t i = (first + k) % c->count;
        int rc = etcd__watch_start(&c->endpoints[i], req, etcd__now_ms() + c->timeout_ms, out);
        if (rc == 0) {
            atomic_store(&c->current, i);
            return 0;
        }
        if (rc == FRUGAL_ENOMEM)
            return frugal_err_set(err, rc, "out of memory");
    }
    return frugal_err_set(err, FRUGAL_EUNAVAIL, "etcd unavailable: no endpoint accepted a Watch");
}

int etcd_watch_next(etcd_watch_t *w, ProtobufCMessage **resp, int64_t timeout_ms,
                    frugal_err_t *err) {
    *resp = NULL;
    if (w->ended)
        return frugal_err_set(err, FRUGAL_EUNAVAIL, "etcd Watch at %s ended", w->url);
    if (!w->recv_pending) {
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &w->recv;
        if (grpc_call_start_batch(w->call, &op, 1, &w->recv, NULL) != GRPC_CALL_OK) {
            w->ended = true;
            return frugal_err_set(err, FRUGAL_EUNAVAIL, "etcd Watch at %s ended", w->url);
        }
        w->recv_pending = true;
    }
    grpc_event ev = grpc_completion_queue_pluck(w->cq, &w->recv,
                                                etcd__deadline(etcd__now_ms() + timeout_ms), NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT)
        return 0;
    w->recv_pending = false;
    if (!ev.success || w->recv == NULL) {
        w->ended = true;
        return frugal_err_set(err, FRUGAL_EUNAVAIL, "etcd Watch at %s ended", w->url);
    }
    int rc = codec_unpack(&etcdserverpb__watch_response__descriptor, w->recv, resp, err);
    grpc_byte_buffer_destroy(w->recv);
    w->recv = NULL;
    return rc;
}

void etcd_watch_close(etcd_watch_t *w) {
    if (w == NULL)
        return;
    grpc_call_cancel(w->call, NULL);
    if (w->send_pending)
        grpc_completion_queue_pluck(w->cq, w, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (w->recv_pending)
        grpc_completion_queue_pluck(w->cq, &w->recv, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_pluck(w->cq, &w->status, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_byte_buffer_destroy(w->recv);
    grpc_byte_buffer_destroy(w->body);
    grpc_slice_unref(w->details);
    grpc_metadata_array_destroy(&w->im);
    grpc_metadata_array_destroy(&w->tm);
    grpc_call_unref(w->call);
    etcd__queue_drain(w->cq);
    free(w);
}
