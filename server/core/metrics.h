/* The metrics registry: counters and histograms that any layer records into without
 * gRPC, and their exposition in the Prometheus text format (docs/operations.md).
 *
 * Recording is lock-free: a cell (one set of label values of one family) is found or
 * created on a lock-free list, and its figures are relaxed atomic adds. A caller on a
 * hot path looks its cell up once and keeps the pointer (cells live until
 * metrics_reset_for_testing), so a recording is one to three atomic adds. A family
 * holds at most 2,048 series; label sets past them are counted in one series whose
 * every label is "_overflow" (logged once).
 *
 * Gauges that describe state (node groups, certificates, the process) are not kept
 * here: whoever owns the state writes them at scrape time with metrics_buf_family and
 * metrics_buf_sample. */
#ifndef FRUGAL_METRICS_H
#define FRUGAL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* The families recorded through this registry. */
typedef enum metrics_id {
    METRICS_GRPC_HANDLED,         /* counter {grpc_service, grpc_method, grpc_code} */
    METRICS_GRPC_SECONDS,         /* histogram {grpc_service, grpc_method} */
    METRICS_EXPANDER_DECISIONS,   /* counter {node_group} */
    METRICS_EXPANDER_UNSCORED,    /* counter {reason} */
    METRICS_LIMIT_REFUSALS,       /* counter {resource} */
    METRICS_STATE_WRITE_SECONDS,  /* histogram, no labels */
    METRICS_HOOK_RUNS,            /* counter {verb, result} */
    METRICS_HOOK_SECONDS,         /* histogram {verb} */
    METRICS_ETCD_SECONDS,         /* histogram {method, outcome} */
    METRICS_ETCD_TXN_REFUSED,     /* counter {reason}: conflict | fenced */
    METRICS_STATE_WRITE_FAILURES, /* counter, no labels */
    METRICS_CALLS_REFUSED,        /* counter {reason}: connection_share | total | receive_timeout */
    METRICS_CONNECTIONS_CLOSED,   /* counter, no labels */
    METRICS_RECONCILE_REPLACED,   /* counter {node_group} */
    METRICS_RECONCILE_LIST_FAILURES, /* counter {node_group, reason} */
    METRICS_RECONCILE_UNKNOWN,       /* gauge {node_group}: set with metrics_set */
    METRICS_FAMILIES_COUNT
} metrics_id_t;

typedef struct metrics_cell metrics_cell_t;

/* The cell of family id with these label values (as many as the family has labels;
 * the rest are ignored and may be NULL), created on first use. NULL only when out of
 * memory; recording into NULL does nothing. Safe from any thread. */
metrics_cell_t *metrics_cell(metrics_id_t id, const char *v1, const char *v2, const char *v3);

/* The cell of a family labelled node_group first, for group, marked as one of frugal's
 * own groups (configured, autoprovisioned, theoretical): metrics_keep_groups hides it
 * once the group is gone. Cells of the reconcile families are all owned; a decision's
 * group may be one only cluster-autoscaler knows, and stays shown. */
metrics_cell_t *metrics_own_group(metrics_id_t id, const char *group);

/* Hide, until a later call finds the group again, the owned series of every group that
 * exists() says no longer exists (a deleted autoprovisioned group, one a reload dropped),
 * so the exposition does not keep stale groups forever. Called before each exposition. */
void metrics_keep_groups(bool (*exists)(const char *group, void *ctx), void *ctx);

/* Add n to a counter cell. */
void metrics_cell_add(metrics_cell_t *cell, uint64_t n);
/* Record one observation of seconds in a histogram cell (negative counts as 0). */
void metrics_cell_observe(metrics_cell_t *cell, double seconds);

/* Look up and record in one call, for paths that are not hot. */
void metrics_count(metrics_id_t id, const char *v1, const char *v2, const char *v3);
void metrics_observe(metrics_id_t id, double seconds, const char *v1, const char *v2);

/* Set a gauge family's cell to value. */
void metrics_set(metrics_id_t id, uint64_t value, const char *v1, const char *v2);

/* A counter cell's value, or a histogram cell's observation count (tests, logs). */
uint64_t metrics_cell_value(const metrics_cell_t *cell);

/* frugal_config_last_reload_success_timestamp_seconds: the time (seconds since the
 * epoch) the running config was loaded. `frugal serve` sets it at start; a config
 * reload that succeeds sets it again, one that fails leaves it. */
void metrics_config_reloaded(double unix_seconds);
/* frugal_config_last_reload_successful: 0 from a refused reload until the next one that
 * takes effect (metrics_config_reloaded sets it back to 1). */
void metrics_config_reload_failed(void);
double metrics_config_reload_time(void);

/* The replicated state backend's gauges (etcd): whether this replica holds the leader
 * lease, and whether its cache may be stale (its Watch is down). Both 0 until set;
 * exported only once a backend has set them. */
void metrics_state_leader(bool leader);
void metrics_state_stale(bool stale);

/* Free every cell (pointers held by callers become invalid) and zero the reload time.
 * Not thread-safe: for tests only. */
void metrics_reset_for_testing(void);

/* ---- exposition ---- */

/* The text of an exposition, a strbuf (strbuf.h): on allocation failure it stops
 * growing and sets failed. */
typedef strbuf_t metrics_buf_t;

void metrics_buf_printf(metrics_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void metrics_buf_free(metrics_buf_t *b);

/* The # HELP and # TYPE lines of a family (type: "counter", "gauge", "histogram"). */
void metrics_buf_family(metrics_buf_t *b, const char *name, const char *help, const char *type);

/* One sample line: name, then labels as pairs names[i]="values[i]" (values escaped
 * as the format requires), then the value (integers without a fraction, +Inf/NaN
 * spelled as Prometheus does). */
void metrics_buf_sample(metrics_buf_t *b, const char *name, const char *const *names,
                        const char *const *values, size_t n, double value);

/* Append every family of the registry, with its HELP and TYPE even when it has no
 * sample yet, plus frugal_build_info and the reload gauges. */
void metrics_write(metrics_buf_t *b);

#endif
