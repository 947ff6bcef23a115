/* Private to rpc's gRPC server: grpc_server.c (listeners, start and stop) and
 * server_calls.c (the workers and each call's state machine) share these types; no other
 * file may include it. */
#ifndef FRUGAL_SERVER_INTERNAL_H
#define FRUGAL_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <grpc/grpc.h>

#include "conn_share.h"
#include "grpc_server.h"
#include "log_limit.h"
#include "metrics.h"
#include "service.h"
#include "tls_reload.h"

/* gRPC's status codes are 0 (OK) to 16 (UNAUTHENTICATED). */
#define CALL_CODES (GRPC_STATUS_UNAUTHENTICATED + 1)

/* grpc_server_handled_total and grpc_server_handling_seconds of one method. */
typedef struct call_metrics {
    char *names; /* "service\0method\0" */
    const char *service;
    const char *method;
    _Atomic(metrics_cell_t *) handled[CALL_CODES];
    metrics_cell_t *seconds;
} call_metrics_t;

typedef struct endpoint endpoint_t;

/* A registered method: the service's entry plus grpc's handle for it, and its metrics
 * cells, looked up once (per status code on its first use) so a call records with
 * atomic adds only. */
typedef struct method_entry {
    const service_method_t *method;
    void *handle;
    endpoint_t *ep;
    call_metrics_t metrics;
} method_entry_t;

/* One grpc server per distinct listen[].services set: gRPC registers methods per
 * server, not per port, so listeners offering the same services share one, and a method
 * a listener does not offer is an unknown path there (UNIMPLEMENTED). */
struct endpoint {
    grpc_server *server;
    unsigned services;
    method_entry_t *methods; /* a slice of frugal_server.methods */
    size_t methods_count;
};

typedef struct worker worker_t;

typedef enum call_phase { CALL_REQUESTED, CALL_RECEIVING, CALL_REPLYING } call_phase_t;

/* One call's state; the completion-queue tag points at it. A call is freed when its
 * last outstanding operation completes: the request, then its receive and reply
 * batches, and beside them, once it is admitted, the watch on its stream's end
 * (RECV_CLOSE_ON_SERVER, tagged with the low bit set). */
typedef struct call_state {
    call_phase_t phase;
    atomic_int refs; /* the call's flow, and its close watch while that is started */
    worker_t *worker;
    method_entry_t *entry; /* NULL: the generic request for unknown methods */
    endpoint_t *ep;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array request_metadata;
    grpc_byte_buffer *payload;
    grpc_call_details details; /* generic requests only */
    grpc_byte_buffer *response;
    grpc_slice status_details;
    int cancelled;
    gpr_timespec started;
    size_t payload_bytes;
    bool counted;                 /* included in the server's calls in flight */
    conn_share_slot_t share_slot; /* where its connection's count is, or UNTRACKED */
    bool stream_counted;          /* among its connection's streams until its end comes */
    bool reply_sent;              /* the reply batch completed with success */
    bool receive_timed_out;       /* cancelled by limits.receive_timeout */
    /* Its status counts once the reply is sent and the stream ended, unless the client
     * cancelled: a call without a request message is a cancel as often as a malformed
     * call. */
    bool record_at_close;
    grpc_status_code close_status;
    bool on_receive_list;         /* waiting for a body, without a deadline */
    gpr_timespec receive_by;      /* monotonic */
    struct call_state *recv_prev; /* the receive list, oldest first */
    struct call_state *recv_next;
    struct call_state *parked_next; /* the parked changes, oldest first */
} call_state_t;

struct worker {
    struct frugal_server *server;
    grpc_completion_queue *cq; /* the server's shared queue */
    pthread_t thread;
    bool thread_started;
};

struct frugal_server {
    atomic_bool stopping; /* frugal_server_stop began: no new call is armed */
    endpoint_t *endpoints;
    size_t endpoints_count;
    service_ctx_t *ctx;
    method_entry_t *methods;
    size_t methods_count;
    worker_t *workers;
    size_t workers_count;
    /* One queue shared by every worker: gRPC matches a new call to any armed request,
     * so with a queue per worker a call could wait behind a slow handler (a BestOptions
     * of hundreds of MiB) while other workers idle. Shared, any idle worker takes it. */
    grpc_completion_queue *cq;
    grpc_completion_queue *shutdown_cq;
    /* A batch started on a queue already shut down aborts the process in gRPC: batches
     * start under the read lock, the queue is marked closed under the write lock. */
    pthread_rwlock_t cq_lock;
    bool cq_closed;
    tls_reloader_t **reloaders; /* one per listener, NULL for plaintext ones */
    size_t listeners_count;
    /* limits (config limits, docs/limits.md) */
    grpc_resource_quota *quota; /* the transport's memory budget */
    atomic_long inflight;       /* calls handed to a worker and not yet freed */
    long max_inflight;          /* max_calls_per_worker x workers */
    /* calls in flight per connection; frugal_calls_refused_total's two reasons */
    conn_share_t *shares;
    metrics_cell_t *refused_share, *refused_total;
    metrics_cell_t *closed_connections; /* frugal_connections_closed_total */
    long max_streams;                   /* limits.max_concurrent_streams */
    gpr_timespec receive_timeout;
    pthread_mutex_t receive_mu; /* guards the receive list */
    call_state_t *receive_head; /* calls waiting for their body, by receive_by */
    call_state_t *receive_tail;
    atomic_long receiving;
    atomic_llong next_maintenance_ms; /* monotonic ms of the next sweep */
    atomic_long freed_since_trim;     /* calls freed since memory was last handed back */
    long long max_message_bytes;
    /* Changes (service_method_t.changes) may wait seconds for earlier ones (a slow disk,
     * an unreachable etcd, a hook): at most changes_max of them (all workers but one)
     * run at once, so reads always find a worker; the others are parked, and a worker
     * that finishes a change runs the oldest parked one before taking new calls. */
    pthread_mutex_t changes_mu;
    /* changed under changes_mu; atomic so the metrics read them without it */
    atomic_long changes_running, changes_parked;
    long changes_max;
    call_state_t *parked_head, *parked_tail;
    log_limit_t unreadable_log; /* a message gRPC refused: logged once a minute */
};

/* server_calls.c */

/* Fill m for the method at path ("/package.Service/Method"): its names and its cells. */
void server__call_metrics_init(call_metrics_t *m, const char *path);

/* Look up the cells of the methods frugal does not serve; before any worker runs. */
void server__unknown_metrics_init(void);

/* Arm one request on ep for entry (NULL: the generic request for unknown methods), on
 * w's queue; nothing once the server is stopping. */
void server__request(worker_t *w, endpoint_t *ep, method_entry_t *entry);

/* A worker thread: takes completions from the shared queue until it is shut down. */
void *server__worker_main(void *arg);

#endif
