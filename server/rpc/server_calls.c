/* The gRPC server's workers and each call's state machine: arm a request, admit the
 * call (its connection's fair share, the server's cap), receive its message within the
 * limits, run its handler (changes parked beyond changes_max), reply, record its metrics
 * and free it when its last operation completes (docs/architecture.md). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "cluster.h"
#include "clock.h"
#include "conn_share.h"
#include "log.h"
#include "metrics.h"
#include "peer_socket.h"
#include "status.h"
#include "wire_names.h"
#include "server_internal.h"

/* Methods frugal does not serve count under one name, so a client cannot grow the
 * metrics without bound. */
static call_metrics_t unknown_method_metrics = {NULL, "unknown", "unknown", {NULL}, NULL};

/* Split path "/package.Service/Method" into m's names and look up its histogram cell. */
void server__call_metrics_init(call_metrics_t *m, const char *path) {
    const char *slash = strrchr(path, '/');
    m->names = strdup(path[0] == '/' ? path + 1 : path);
    if (m->names == NULL || slash == NULL || slash == path) {
        m->service = m->method = "unknown";
    } else {
        m->names[slash - path - 1] = '\0';
        m->service = m->names;
        m->method = m->names + (slash - path);
    }
    m->seconds = metrics_cell(METRICS_GRPC_SECONDS, m->service, m->method, NULL);
    /* Every code's series at 0 from the start: a rule's rate() or increase() then sees
     * the first call that ends with it (a series that appears at 1 shows no increase). */
    for (int code = 0; code < CALL_CODES; code++)
        atomic_store_explicit(&m->handled[code],
                              metrics_cell(METRICS_GRPC_HANDLED, m->service, m->method,
                                           rpc_status_name((grpc_status_code)code)),
                              memory_order_release);
}

static void call_metrics_record(call_metrics_t *m, grpc_status_code status, double seconds) {
    if (status < 0 || status >= CALL_CODES)
        status = GRPC_STATUS_UNKNOWN;
    metrics_cell_t *cell = atomic_load_explicit(&m->handled[status], memory_order_acquire);
    if (cell == NULL) {
        cell = metrics_cell(METRICS_GRPC_HANDLED, m->service, m->method, rpc_status_name(status));
        atomic_store_explicit(&m->handled[status], cell, memory_order_release);
    }
    metrics_cell_add(cell, 1);
    metrics_cell_observe(m->seconds, seconds);
}

/* A call's state passes from the worker that starts an operation to the worker that
 * gets its completion through gRPC's completion queue, which orders the two. gRPC is
 * not built with ThreadSanitizer, so under TSan that edge is declared here: released
 * before each operation is started, acquired when its tag comes back. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define CALL_HANDOFF_RELEASE(cs) __tsan_release(cs)
#define CALL_HANDOFF_ACQUIRE(cs) __tsan_acquire(cs)
#endif
#endif
#ifndef CALL_HANDOFF_RELEASE
#define CALL_HANDOFF_RELEASE(cs) ((void)(cs))
#define CALL_HANDOFF_ACQUIRE(cs) ((void)(cs))
#endif

/* After a call this large, freed memory is handed back to the system: a BestOptions
 * request of hundreds of MiB must not stay resident for the rest of the process's life. */
#define LARGE_CALL_BYTES (16u << 20)

/* Look up the histogram cell of the methods frugal does not serve; before any worker runs. */
void server__unknown_metrics_init(void) {
    unknown_method_metrics.seconds = metrics_cell(METRICS_GRPC_SECONDS, "unknown", "unknown", NULL);
}

/* ------------------------------------------------------------------------------------
 * Limits: calls in flight, the receive timeout, handing memory back (docs/limits.md)
 * ---------------------------------------------------------------------------------- */

/* How often overdue bodies are looked for and freed memory is handed back. */
#define LIMITS_SWEEP_MS 250
/* After this many calls freed within one sweep period, freed memory goes back to the
 * system: a burst of cancelled streams must not stay resident. */
#define LIMITS_TRIM_AFTER_CALLS 512

/* The resident set of this process in bytes (/proc/self/statm), 0 when unreadable. */
static int64_t resident_bytes(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    long long pages = 0;
    if (sscanf(buf, "%*s %lld", &pages) != 1)
        return 0;
    return (int64_t)pages * sysconf(_SC_PAGESIZE);
}

static int64_t mono_ms(void) {
    gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void call_record(const call_state_t *cs, grpc_status_code status);

/* Unlink cs from the receive list; receive_mu held, cs on it. */
static void receive_list_unlink(frugal_server_t *s, call_state_t *cs) {
    if (cs->recv_prev != NULL)
        cs->recv_prev->recv_next = cs->recv_next;
    else
        s->receive_head = cs->recv_next;
    if (cs->recv_next != NULL)
        cs->recv_next->recv_prev = cs->recv_prev;
    else
        s->receive_tail = cs->recv_prev;
    cs->recv_prev = cs->recv_next = NULL;
    cs->on_receive_list = false;
    atomic_fetch_sub(&s->receiving, 1);
}

/* Append cs (a call about to receive its body, by receive_by) to the receive list. The
 * timeout is the same for every call, so the list stays ordered by receive_by. */
static void receive_list_add(frugal_server_t *s, call_state_t *cs, gpr_timespec receive_by) {
    cs->receive_by = receive_by;
    pthread_mutex_lock(&s->receive_mu);
    cs->recv_prev = s->receive_tail;
    cs->recv_next = NULL;
    if (s->receive_tail != NULL)
        s->receive_tail->recv_next = cs;
    else
        s->receive_head = cs;
    s->receive_tail = cs;
    cs->on_receive_list = true;
    atomic_fetch_add(&s->receiving, 1);
    pthread_mutex_unlock(&s->receive_mu);
}

/* Take cs off the receive list if the sweep did not already. */
static void receive_list_remove(frugal_server_t *s, call_state_t *cs) {
    pthread_mutex_lock(&s->receive_mu);
    if (cs->on_receive_list)
        receive_list_unlink(s, cs);
    pthread_mutex_unlock(&s->receive_mu);
}

/* At most once per LIMITS_SWEEP_MS, by whichever worker comes first: cancel the calls
 * whose body did not arrive within limits.receive_timeout (their receive completes and
 * frees them), and hand freed memory back to the system after a burst of calls. */
static void server__maintain(frugal_server_t *s) {
    int64_t now = mono_ms();
    long long due = atomic_load(&s->next_maintenance_ms);
    if (now < due ||
        !atomic_compare_exchange_strong(&s->next_maintenance_ms, &due, now + LIMITS_SWEEP_MS))
        return;
    gpr_timespec tnow = gpr_now(GPR_CLOCK_MONOTONIC);
    size_t cancelled = 0;
    pthread_mutex_lock(&s->receive_mu);
    while (s->receive_head != NULL && gpr_time_cmp(s->receive_head->receive_by, tnow) <= 0) {
        call_state_t *cs = s->receive_head;
        receive_list_unlink(s, cs);
        cs->receive_timed_out = true;
        grpc_call_cancel_with_status(cs->call, GRPC_STATUS_DEADLINE_EXCEEDED,
                                     "no request message within limits.receive_timeout", NULL);
        cancelled++;
    }
    pthread_mutex_unlock(&s->receive_mu);
    if (cancelled > 0)
        metrics_cell_add(metrics_cell(METRICS_CALLS_REFUSED, "receive_timeout", NULL, NULL),
                         cancelled);
    if (cancelled > 0)
        log_warn("cancelled %zu call(s) that sent no request message within %lld ms "
                 "(limits.receive_timeout)",
                 cancelled, (long long)gpr_time_to_millis(s->receive_timeout));
    /* Streams a flood resets are mostly freed inside gRPC before frugal sees them as
     * calls, so the count of freed calls misses them: resident memory over the budget is
     * handed back too. */
    int64_t budget = s->ctx->cfg->limits.memory_bytes; /* the start's, as the quota's */
    if (atomic_exchange(&s->freed_since_trim, 0) >= LIMITS_TRIM_AFTER_CALLS ||
        (budget > 0 && resident_bytes() > budget))
        malloc_trim(0);
}

/* Free cs, its last operation done. */
static void call_state_destroy(call_state_t *cs) {
    if (cs->record_at_close && cs->reply_sent && !cs->cancelled)
        call_record(cs, cs->close_status);
    bool large = cs->payload_bytes >= LARGE_CALL_BYTES;
    if (cs->counted) {
        conn_share_release(cs->worker->server->shares, cs->share_slot);
        atomic_fetch_sub(&cs->worker->server->inflight, 1);
        atomic_fetch_add(&cs->worker->server->freed_since_trim, 1);
    }
    if (cs->call != NULL)
        grpc_call_unref(cs->call);
    grpc_metadata_array_destroy(&cs->request_metadata);
    if (cs->entry == NULL)
        grpc_call_details_destroy(&cs->details);
    if (cs->payload != NULL)
        grpc_byte_buffer_destroy(cs->payload);
    if (cs->response != NULL)
        grpc_byte_buffer_destroy(cs->response);
    grpc_slice_unref(cs->status_details);
    free(cs);
    if (large)
        malloc_trim(0);
}

/* One of cs's operations is done with it: the call's flow (refused, cancelled or its
 * reply completed), or the watch on its stream's end. The last one frees it. */
static void call_state_free(call_state_t *cs) {
    if (atomic_fetch_sub_explicit(&cs->refs, 1, memory_order_acq_rel) == 1)
        call_state_destroy(cs);
}

static const char *call_method_name(const call_state_t *cs, char *buf, size_t size) {
    if (cs->entry != NULL)
        return cs->entry->method->path;
    size_t n = GRPC_SLICE_LENGTH(cs->details.method);
    if (n >= size)
        n = size - 1;
    memcpy(buf, GRPC_SLICE_START_PTR(cs->details.method), n);
    buf[n] = '\0';
    return buf;
}

/* Whether the call's request metadata holds key (any value). */
static bool call_has_metadata(const call_state_t *cs, const char *key) {
    for (size_t i = 0; i < cs->request_metadata.count; i++)
        if (grpc_slice_str_cmp(cs->request_metadata.metadata[i].key, key) == 0)
            return true;
    return false;
}

/* The metrics of cs's method: its entry's, or for a call to a method its listener does
 * not offer, those of the same method on the listener that does (a method frugal
 * serves somewhere keeps its name); unknown_method_metrics for any other path. */
static call_metrics_t *call_metrics_of(const call_state_t *cs) {
    if (cs->entry != NULL)
        return &cs->entry->metrics;
    const frugal_server_t *s = cs->worker->server;
    for (size_t i = 0; i < s->methods_count; i++)
        if (grpc_slice_str_cmp(cs->details.method, s->methods[i].method->path) == 0)
            return &s->methods[i].metrics;
    return &unknown_method_metrics;
}

/* Count cs's answer in the per-method metrics. */
static void call_record(const call_state_t *cs, grpc_status_code status) {
    double seconds =
        gpr_timespec_to_micros(gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), cs->started)) / 1e6;
    call_metrics_record(call_metrics_of(cs), status, seconds);
}

/* Start a batch on a call (tag: its call state, handed off already: not read here)
 * unless the queue is closed (stop is past its grace and the call was cancelled): false,
 * and nothing started, when it could not start. */
static bool call_start_batch(frugal_server_t *s, grpc_call *call, const grpc_op *ops, size_t n,
                             void *tag) {
    pthread_rwlock_rdlock(&s->cq_lock);
    grpc_call_error rc =
        s->cq_closed ? GRPC_CALL_ERROR : grpc_call_start_batch(call, ops, n, tag, NULL);
    bool closed = s->cq_closed;
    pthread_rwlock_unlock(&s->cq_lock);
    if (rc != GRPC_CALL_OK && !closed)
        log_error("grpc_call_start_batch failed (%d); dropping call", (int)rc);
    return rc == GRPC_CALL_OK;
}

/* Start the single reply batch of a unary call. */
static void call_reply(call_state_t *cs, grpc_status_code status, const char *message) {
    if (cs->record_at_close)
        cs->close_status = status;
    else
        call_record(cs, status);
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = 0;
    n++;
    if (status == GRPC_STATUS_OK && cs->response != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = cs->response;
        n++;
    }
    cs->status_details = grpc_slice_from_copied_string(message != NULL ? message : "");
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = status;
    ops[n].data.send_status_from_server.status_details =
        status == GRPC_STATUS_OK ? NULL : &cs->status_details;
    ops[n].data.send_status_from_server.trailing_metadata_count = 0;
    n++;

    cs->phase = CALL_REPLYING;
    grpc_call *call = cs->call; /* read before the hand-off: the completion may free cs */
    frugal_server_t *s = cs->worker->server;
    CALL_HANDOFF_RELEASE(cs);
    if (!call_start_batch(s, call, ops, n, cs))
        call_state_free(cs);
}

/* Answer cs with status and free it now: no reply batch, so a refused call costs
 * nothing while it waits for its stream to close (under a flood of streams the
 * transport may take long to get there, and refused calls would pile up). The status
 * and message still reach the client, in the trailers gRPC sends with the cancel. */
static void call_refuse(call_state_t *cs, grpc_status_code status, const char *message) {
    call_record(cs, status);
    grpc_call_cancel_with_status(cs->call, status, message, NULL);
    call_state_free(cs);
}

/* The client certificate's CN into buf; NULL when the peer sent none. */
static const char *call_peer_cn(const call_state_t *cs, char *buf, size_t size) {
    grpc_auth_context *ctx = grpc_call_auth_context(cs->call);
    if (ctx == NULL)
        return NULL;
    grpc_auth_property_iterator it =
        grpc_auth_context_find_properties_by_name(ctx, GRPC_X509_CN_PROPERTY_NAME);
    const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);
    const char *cn = NULL;
    if (p != NULL && p->value != NULL) {
        snprintf(buf, size, "%.*s", (int)p->value_length, p->value);
        cn = buf;
    }
    grpc_auth_context_release(ctx);
    return cn;
}

/* Every call at debug level; the cluster logs mutations at info level itself. */
static void call_log(const call_state_t *cs, grpc_status_code status, const char *message) {
    if (log_get_level() > LOG_LEVEL_DEBUG)
        return;
    char name[256], cn[256];
    gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);
    double ms = gpr_timespec_to_micros(gpr_time_sub(now, cs->started)) / 1000.0;
    log_field_t fields[] = {
        LOG_STR("method", call_method_name(cs, name, sizeof(name))),
        LOG_STR("code", rpc_status_name(status)),
        LOG_NUM("duration_ms", ms),
        LOG_STR("peer", call_peer_cn(cs, cn, sizeof(cn))),
        LOG_STR("message", message != NULL && message[0] ? message : NULL),
    };
    log_fields(LOG_LEVEL_DEBUG, fields, sizeof(fields) / sizeof(fields[0]), "rpc");
}

/* When the cluster must be done with cs (CLOCK_MONOTONIC ms): CLUSTER_MUTATION_BUDGET_MS
 * after the call arrived (the time it waited for a worker included), and a little
 * before the call's own deadline should that come first (then *own is set). Computed as time left,
 * since gRPC's monotonic clock need not share CLOCK_MONOTONIC's origin. */
static int64_t call_budget_end(const call_state_t *cs, gpr_timespec deadline, bool *own) {
    gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);
    *own = false;
    int64_t left = CLUSTER_MUTATION_BUDGET_MS -
                   gpr_time_to_millis(
                       gpr_time_sub(now, gpr_convert_clock_type(cs->started, GPR_CLOCK_MONOTONIC)));
    if (gpr_time_cmp(deadline, gpr_inf_future(GPR_CLOCK_MONOTONIC)) != 0) {
        int64_t callers = gpr_time_to_millis(gpr_time_sub(deadline, now)) - 200;
        *own = callers < left;
        if (*own)
            left = callers;
    }
    return clock_mono_ms() + left;
}

/* Run cs's handler and reply. */
static void call_run(call_state_t *cs) {
    worker_t *w = cs->worker;
    if (cs->payload != NULL)
        cs->payload_bytes = grpc_byte_buffer_length(cs->payload);

    if (cs->entry == NULL) {
        char name[256];
        char msg[400];
        snprintf(msg, sizeof(msg), "method %s is not implemented",
                 call_method_name(cs, name, sizeof(name)));
        call_log(cs, GRPC_STATUS_UNIMPLEMENTED, msg);
        call_reply(cs, GRPC_STATUS_UNIMPLEMENTED, msg);
        return;
    }

    frugal_err_t err;
    frugal_err_clear(&err);
    int rc;
    if (cs->payload == NULL) {
        cs->record_at_close = true;
        rc = frugal_err_set(&err, FRUGAL_EINVAL, "request message missing");
    } else if (gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC),
                            gpr_convert_clock_type(cs->deadline, GPR_CLOCK_MONOTONIC)) > 0) {
        call_log(cs, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline passed before handling");
        call_reply(cs, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");
        return;
    } else {
        /* One config snapshot for the whole call: a reload swaps in a new one for the
         * calls that start after it, this one keeps its own until it returns. */
        service_ctx_t ctx = *w->server->ctx;
        if (ctx.cluster != NULL)
            ctx.cfg = cluster_config_acquire(ctx.cluster);
        gpr_timespec deadline = gpr_convert_clock_type(cs->deadline, GPR_CLOCK_MONOTONIC);
        ctx.call.deadline_ms = call_budget_end(cs, deadline, &ctx.call.callers_deadline);
        char name[256], cn[256];
        if (cs->entry->method->changes) { /* what a mutation's log line names */
            ctx.call.method = call_method_name(cs, name, sizeof(name));
            ctx.call.peer = call_peer_cn(cs, cn, sizeof(cn));
        }
        ctx.explain = call_has_metadata(cs, WIRE_EXPLAIN_METADATA);
        ctx.services = cs->entry->ep->services;
        ctx.stopping = atomic_load(&w->server->stopping);
        rc = service_method_call(cs->entry->method, &ctx, cs->payload, deadline, &cs->response,
                                 &err);
        if (ctx.cluster != NULL)
            config_release(ctx.cfg);
    }
    if (rc == 0 && cs->response == NULL)
        rc = frugal_err_set(&err, FRUGAL_EINTERNAL, "handler produced no response");
    grpc_status_code status = rc == 0 ? GRPC_STATUS_OK : frugal_err_status(rc);
    const char *message = rc == 0 ? "" : (err.msg[0] ? err.msg : frugal_err_describe(rc));
    call_log(cs, status, message);
    call_reply(cs, status, message);
}

/* The request message arrived: run the handler now, or park a change while
 * changes_max of them run (frugal_server.changes_mu). A parked call's budget still
 * counts from its arrival (call_budget_end), so it never answers later than it would
 * have behind a busy worker. */
static void call_handle_request(call_state_t *cs) {
    frugal_server_t *s = cs->worker->server;
    if (cs->entry == NULL || !cs->entry->method->changes || cs->payload == NULL) {
        call_run(cs);
        return;
    }
    pthread_mutex_lock(&s->changes_mu);
    if (atomic_load(&s->changes_running) >= s->changes_max) {
        cs->parked_next = NULL;
        if (s->parked_tail != NULL)
            s->parked_tail->parked_next = cs;
        else
            s->parked_head = cs;
        s->parked_tail = cs;
        atomic_fetch_add(&s->changes_parked, 1);
        pthread_mutex_unlock(&s->changes_mu);
        return;
    }
    atomic_fetch_add(&s->changes_running, 1);
    pthread_mutex_unlock(&s->changes_mu);
    while (cs != NULL) {
        call_run(cs);
        pthread_mutex_lock(&s->changes_mu);
        cs = s->parked_head;
        if (cs != NULL) {
            s->parked_head = cs->parked_next;
            if (s->parked_head == NULL)
                s->parked_tail = NULL;
            atomic_fetch_sub(&s->changes_parked, 1);
        } else {
            atomic_fetch_sub(&s->changes_running, 1);
        }
        pthread_mutex_unlock(&s->changes_mu);
    }
}

/* cs's connection (peer) holds its share: count the refusal and warn once a minute per
 * host. */
static void call_refused_for_share(call_state_t *cs, const char *peer, const char *msg) {
    frugal_server_t *s = cs->worker->server;
    metrics_cell_add(s->refused_share, 1);
    if (!conn_share_should_warn(s->shares, CONN_SHARE_REFUSED, peer, clock_mono_ms() / 1000))
        return;
    char cn_buf[256];
    const char *cn = call_peer_cn(cs, cn_buf, sizeof(cn_buf));
    log_warn("refusing calls of %s%s%s: %s; further refusals of this address are not logged "
             "for a minute (frugal_calls_refused_total)",
             peer, cn != NULL ? ", certificate CN " : "", cn != NULL ? cn : "", msg);
}

/* An HTTP/2 client may keep at most max_concurrent_streams streams open on a connection.
 * streams: the connection's calls whose stream gRPC has not yet reported ended (the
 * calls' RECV_CLOSE_ON_SERVER, call_watch_close). More than twice as many, or more than
 * that many plus one per worker and its whole share, and it resets streams faster than
 * gRPC's transport gets to them (rapid reset; the margins are for ends reported but not
 * yet taken from the queue). Not the calls held: a client that resets a call at its
 * deadline while frugal still holds it (a change parked behind a slow hook) and opens
 * the next, as grpc-go does, keeps within its streams however many such calls frugal
 * holds, and must not be cut off. gRPC 1.51 reads a flooding connection in one task that
 * lasts as long as the flood, and other connections' work queues behind it: the
 * connection is closed (at most once a second per connection) so that the others get
 * through. within_share: the call was within its connection's share. */
static void call_close_flooder(call_state_t *cs, const char *peer, long streams,
                               const conn_share_use_t *use, bool within_share) {
    frugal_server_t *s = cs->worker->server;
    int64_t now_s = clock_mono_ms() / 1000;
    long over = within_share ? 2 * s->max_streams : s->max_streams + (long)s->workers_count;
    if (streams <= over || !conn_share_should_close(s->shares, peer, now_s) ||
        peer_socket_shutdown(peer) == 0)
        return;
    conn_share_mark_closed(s->shares, use->slot);
    metrics_cell_add(s->closed_connections, 1);
    if (!conn_share_should_warn(s->shares, CONN_SHARE_CLOSED, peer, now_s))
        return;
    char cn_buf[256];
    const char *cn = call_peer_cn(cs, cn_buf, sizeof(cn_buf));
    log_warn("closed the connection of %s%s%s: it held %ld calls whose stream gRPC had not "
             "reported ended (%ld calls in flight), more than %ld (%s the %ld streams "
             "limits.max_concurrent_streams lets it open%s): it resets streams faster than "
             "they are served; further closes of this address are not logged for a minute "
             "(frugal_connections_closed_total)",
             peer, cn != NULL ? ", certificate CN " : "", cn != NULL ? cn : "", streams, use->held,
             over, within_share ? "twice" : "past its fair share of calls:", s->max_streams,
             within_share ? "" : ", plus one a worker");
}

/* Count cs in its connection's calls in flight and in the server's, or refuse it
 * (RESOURCE_EXHAUSTED, freed) when its connection holds its fair share or the server
 * its cap. A connection holding more than CONN_SHARE_FLOOR calls gets 3/4 of the cap:
 * the rest is kept for the others, so that the calls of closed flooding connections,
 * which gRPC may take a while to cancel, do not fill it. False: refused. */
static bool call_admit(call_state_t *cs) {
    frugal_server_t *s = cs->worker->server;
    long per_worker = s->max_inflight / (long)s->workers_count;
    char msg[300];
    cs->counted = true;
    long n = atomic_fetch_add(&s->inflight, 1) + 1;
    char *got = grpc_call_get_peer(cs->call);
    const char *peer = got != NULL ? got : "unknown";
    conn_share_use_t use;
    bool within_share = conn_share_acquire(s->shares, peer, &cs->share_slot, &use);
    bool over_cap = n > s->max_inflight ||
                    (use.held > CONN_SHARE_FLOOR && n > s->max_inflight - s->max_inflight / 4);
    bool admitted = within_share && !over_cap;
    cs->stream_counted = admitted; /* until call_watch_close reports its end */
    long streams = admitted ? conn_share_stream_open(s->shares, cs->share_slot)
                            : conn_share_streams(s->shares, use.slot);
    call_close_flooder(cs, peer, streams, &use, within_share);
    if (!within_share && use.closed) {
        snprintf(msg, sizeof(msg),
                 "connection closed: it reset streams faster than they were served (%ld calls "
                 "in flight); open a new one",
                 use.held);
        call_refused_for_share(cs, peer, msg);
    } else if (!within_share) {
        snprintf(msg, sizeof(msg),
                 "connection busy: %ld calls in flight, its fair share (limits."
                 "max_calls_per_worker %ld x %zu workers / (%ld connections with calls + 1), "
                 "at least %d)",
                 use.held, per_worker, s->workers_count, use.connections, CONN_SHARE_FLOOR);
        call_refused_for_share(cs, peer, msg);
    } else if (over_cap) {
        snprintf(msg, sizeof(msg),
                 "server busy: %ld calls in flight (limits.max_calls_per_worker %ld x %zu "
                 "workers; 3/4 of it for a connection holding over %d)",
                 n - 1, per_worker, s->workers_count, CONN_SHARE_FLOOR);
        metrics_cell_add(s->refused_total, 1);
    }
    gpr_free(got);
    if (!admitted) {
        call_log(cs, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
        call_refuse(cs, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
    }
    return admitted;
}

/* The tag of a call's close watch: its state's address with the low bit set. */
#define CLOSE_TAG(cs) ((void *)((uintptr_t)(cs) | 1u))
#define IS_CLOSE_TAG(tag) (((uintptr_t)(tag)&1u) != 0)
#define CLOSE_TAG_CALL(tag) ((call_state_t *)((uintptr_t)(tag) & ~(uintptr_t)1u))

/* The end of cs's stream was reported (or will never be): it no longer counts among its
 * connection's streams. */
static void call_stream_ended(call_state_t *cs) {
    if (cs->stream_counted)
        conn_share_stream_ended(cs->worker->server->shares, cs->share_slot);
    cs->stream_counted = false;
}

/* Watch for the end of an admitted call's stream: RECV_CLOSE_ON_SERVER completes when the
 * client resets it, its deadline passes or the reply has been sent, and until then the
 * call counts among its connection's streams (call_close_flooder). Its own reference on
 * cs: the call is freed when both the watch and the call's flow are done. */
static void call_watch_close(call_state_t *cs) {
    frugal_server_t *s = cs->worker->server;
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &cs->cancelled;
    atomic_fetch_add_explicit(&cs->refs, 1, memory_order_relaxed);
    CALL_HANDOFF_RELEASE(cs);
    if (!call_start_batch(s, cs->call, &op, 1, CLOSE_TAG(cs))) {
        call_stream_ended(cs);
        atomic_fetch_sub_explicit(&cs->refs, 1, memory_order_relaxed);
    }
}

/* A call arrived, headers only: re-arm the same method first, count the call and refuse
 * it when its connection or the server is at its limit (call_admit), else start
 * receiving its message. It gets limits.receive_timeout for it, or its deadline when
 * that comes first: a far deadline must not let a client hold calls it never sends. */
static void call_accept(call_state_t *cs) {
    worker_t *w = cs->worker;
    frugal_server_t *s = w->server;
    server__request(w, cs->ep, cs->entry);
    cs->started = gpr_now(GPR_CLOCK_MONOTONIC);
    if (!call_admit(cs))
        return;
    call_watch_close(cs);
    if (cs->entry == NULL) {
        call_handle_request(cs);
        return;
    }
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &cs->payload;
    cs->phase = CALL_RECEIVING;
    gpr_timespec receive_by = gpr_time_add(cs->started, s->receive_timeout);
    if (gpr_time_cmp(gpr_convert_clock_type(cs->deadline, GPR_CLOCK_MONOTONIC), receive_by) > 0)
        receive_list_add(s, cs, receive_by);
    grpc_call *call = cs->call; /* read before the hand-off: the completion may free cs */
    CALL_HANDOFF_RELEASE(cs);
    if (!call_start_batch(s, call, &op, 1, cs)) {
        receive_list_remove(s, cs);
        call_state_free(cs);
    }
}

/* gRPC failed cs's receive before its deadline: it refused the message before frugal
 * saw it, over max_message_bytes (the client gets RESOURCE_EXHAUSTED) or compressed data
 * it cannot decompress (the client sees its stream reset). A client's cancel or a closed
 * connection completes the receive without a message instead. Counted as
 * RESOURCE_EXHAUSTED either way, warned at most once a minute. */
static void call_unreadable(call_state_t *cs) {
    frugal_server_t *s = cs->worker->server;
    call_record(cs, GRPC_STATUS_RESOURCE_EXHAUSTED);
    if (!log_limit_due(&s->unreadable_log, 60000, NULL))
        return;
    char name[256];
    log_warn("gRPC refused a %s request before frugal could read it: larger than "
             "max_message_bytes (%lld), or compressed data it cannot decompress; further "
             "refusals are not logged for a minute (grpc_server_handled_total, "
             "grpc_code=\"RESOURCE_EXHAUSTED\")",
             call_method_name(cs, name, sizeof(name)), s->max_message_bytes);
}

/* The receive of a call's message completed. */
static void call_received(call_state_t *cs, bool ok) {
    receive_list_remove(cs->worker->server, cs);
    /* A body that never came within the call's deadline or limits.receive_timeout is an
     * answer (DEADLINE_EXCEEDED, sent by gRPC) the metrics count; a client's cancel is
     * not. gRPC ends the receive of a call past its deadline without a message. */
    bool expired = gpr_time_cmp(gpr_now(cs->deadline.clock_type), cs->deadline) >= 0;
    bool overdue = cs->receive_timed_out || ((!ok || cs->payload == NULL) && expired);
    if (overdue)
        call_record(cs, GRPC_STATUS_DEADLINE_EXCEEDED);
    else if (!ok && !atomic_load(&cs->worker->server->stopping))
        call_unreadable(cs);
    if (!ok || overdue) {
        call_state_free(cs); /* cancelled: by the client, a limit or the receive timeout */
        return;
    }
    call_handle_request(cs);
}

void server__request(worker_t *w, endpoint_t *ep, method_entry_t *entry) {
    if (atomic_load(&w->server->stopping))
        return;
    call_state_t *cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        log_error("out of memory arming a request");
        return;
    }
    cs->phase = CALL_REQUESTED;
    atomic_init(&cs->refs, 1);
    cs->worker = w;
    cs->share_slot = CONN_SHARE_UNTRACKED;
    cs->entry = entry;
    cs->ep = ep;
    cs->status_details = grpc_empty_slice();
    grpc_metadata_array_init(&cs->request_metadata);
    grpc_call_error rc;
    if (entry == NULL)
        grpc_call_details_init(&cs->details);
    CALL_HANDOFF_RELEASE(cs);
    if (entry != NULL) {
        rc =
            grpc_server_request_registered_call(ep->server, entry->handle, &cs->call, &cs->deadline,
                                                &cs->request_metadata, NULL, w->cq, w->cq, cs);
    } else {
        rc = grpc_server_request_call(ep->server, &cs->call, &cs->details, &cs->request_metadata,
                                      w->cq, w->cq, cs);
    }
    if (rc != GRPC_CALL_OK) {
        log_error("requesting a call failed (%d)", (int)rc);
        call_state_free(cs);
    }
}

void *server__worker_main(void *arg) {
    worker_t *w = arg;
    for (;;) {
        gpr_timespec wake = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(LIMITS_SWEEP_MS, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(w->cq, wake, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        server__maintain(w->server);
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (IS_CLOSE_TAG(ev.tag)) { /* the call's stream ended */
            call_state_t *cs = CLOSE_TAG_CALL(ev.tag);
            CALL_HANDOFF_ACQUIRE(cs);
            call_stream_ended(cs);
            call_state_free(cs);
            continue;
        }
        call_state_t *cs = ev.tag;
        CALL_HANDOFF_ACQUIRE(cs);
        if (cs->phase == CALL_REQUESTED && ev.success) {
            call_accept(cs);
        } else if (cs->phase == CALL_RECEIVING) {
            call_received(cs, ev.success);
        } else {
            cs->reply_sent = cs->phase == CALL_REPLYING && ev.success;
            call_state_free(cs); /* reply done, or a request cancelled by shutdown */
        }
    }
    return NULL;
}
