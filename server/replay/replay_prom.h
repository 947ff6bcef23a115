/* A replay trace built from kube-state-metrics series (docs/replay.md, "--from-prometheus"):
 * the answers of Prometheus' /api/v1/query_range for a few series are added one by one
 * (a long range comes as several windows of the same series), then written as the
 * JSON-lines trace that replay_workload_load reads. Pure: the HTTP side is the caller's.
 *
 * Per pod (keyed by its uid, else namespace/name):
 *  - arrival: the value of kube_pod_created;
 *  - runs from kube_pod_start_time (else its arrival) until kube_pod_completion_time,
 *    else until the last sample of kube_pod_info (the answer of timestamp(kube_pod_info));
 *    but a completion time whose series' last sample is more than a minute before
 *    kube_pod_info's, in a pod whose kube_pod_container_status_restarts_total shows a
 *    restart, is a container that stopped and ran again while the pod ran on, not the
 *    pod's end; a pod seen at kube-state-metrics' last scrape (of any namespace) within
 *    the range's last 5 minutes runs to the range's end;
 *  - requests: kube_pod_container_resource_requests and
 *    kube_pod_init_container_resource_requests as containers and init containers (cpu,
 *    memory, nvidia.com/gpu, amd.com/gpu), combined by pod_effective_request as the
 *    scheduler does: an init container whose kube_pod_init_container_info has
 *    restart_policy="Always" is a sidecar (written before the ordinary init containers,
 *    whose order the series do not give), kube_pod_overhead_cpu_cores and
 *    kube_pod_overhead_memory_bytes are the pod's overhead;
 *  - owner: kube_pod_owner's controller, else kube_pod_info's created_by_kind and
 *    created_by_name (kube_pod_owner denylisted); DaemonSet and static (Node-owned) pods
 *    are left out;
 *  - a pod without requests (BestEffort) gets one container without resources, named as
 *    a series of it names one, else "main";
 *  - namespace, pod and container from exported_namespace, exported_pod and
 *    exported_container when a series has them (scraped with honor_labels: false);
 *  - kube_pod_nodeselectors and kube_pod_tolerations when present. */
#ifndef FRUGAL_REPLAY_PROM_H
#define FRUGAL_REPLAY_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"

typedef enum replay_prom_series {
    REPLAY_PROM_CREATED,
    REPLAY_PROM_INFO_SEEN, /* timestamp(kube_pod_info) */
    REPLAY_PROM_START,
    REPLAY_PROM_COMPLETION,
    REPLAY_PROM_REQUESTS,
    REPLAY_PROM_INIT_REQUESTS,
    REPLAY_PROM_OWNER,
    REPLAY_PROM_NODESELECTORS,
    REPLAY_PROM_TOLERATIONS,
    REPLAY_PROM_INIT_INFO, /* restart_policy="Always" marks a sidecar */
    REPLAY_PROM_OVERHEAD_CPU,
    REPLAY_PROM_OVERHEAD_MEMORY,
    REPLAY_PROM_RESTARTS,        /* only the pods with a container restarted: `> 0` */
    REPLAY_PROM_COMPLETION_SEEN, /* timestamp(kube_pod_completion_time) */
    REPLAY_PROM_LAST_SCRAPE,     /* max(timestamp(kube_pod_info)), every namespace */
    REPLAY_PROM_SERIES_COUNT
} replay_prom_series_t;

/* The longest --namespace expression, and the room a query needs with it (escaped, each
 * character may take 4). */
#define REPLAY_PROM_REGEX_MAX 1000
#define REPLAY_PROM_QUERY_MAX 8704

/* s as the inside of a PromQL double-quoted string into buf (of size): backslash, double
 * quote, newline, carriage return and tab as \\, \", \n, \r, \t, other control
 * characters as \xNN. Cut before an escape that does not fit: false when s was cut. */
bool replay_prom_escape(const char *s, char *buf, size_t size);

/* The metric each series comes from, and the PromQL that asks for it into buf (of
 * REPLAY_PROM_QUERY_MAX): evaluated every step_s seconds, each point sums up the step
 * before it, one sample per series and step (`max_over_time(METRIC[STEPs])`; the end of
 * a pod's kube_pod_info as `max_over_time(timestamp(kube_pod_info)[STEPs:1m])`, its last
 * sample's own time). With namespace_re (not NULL, at most REPLAY_PROM_REGEX_MAX long),
 * escaped by replay_prom_escape, only the pods of the namespaces it matches:
 * `Q{exported_namespace=~"RE"} or
 * Q{exported_namespace="",namespace=~"RE"}`, for a Prometheus that keeps the target's own
 * namespace label and renames the pod's. */
const char *replay_prom_metric(replay_prom_series_t s);
const char *replay_prom_query(replay_prom_series_t s, const char *namespace_re, int64_t step_s,
                              char *buf, size_t size);

/* Whether series s must be asked for: kube-state-metrics' last scrape only with a
 * namespace_re, since without one the kube_pod_info series give it (it is the costliest
 * query but one, a subquery over every pod). */
bool replay_prom_asked(replay_prom_series_t s, const char *namespace_re);

/* Whether the answer of /api/v1/label/__name__/values lists metric. FRUGAL_EINVAL when
 * the text is not such a Prometheus answer; FRUGAL_ENOMEM. */
int replay_prom_has_metric(const char *text, size_t len, const char *metric, bool *has,
                           frugal_err_t *err);

typedef struct replay_prom replay_prom_t;

typedef struct replay_prom_stats {
    size_t pods;       /* written to the trace */
    size_t per_node;   /* left out: owned by a DaemonSet or a Node (static pods) */
    size_t no_created; /* left out: requests but no kube_pod_created */
    size_t outside;    /* left out: not running within the range */
    size_t reused;     /* pod names reused by a new pod, the series without uid: merged */
} replay_prom_stats_t;

/* The first warning Prometheus gave with an answer (a partial answer: a store down, a
 * limit hit), NULL when none; *answers: how many answers carried warnings. */
const char *replay_prom_warning(const replay_prom_t *b, size_t *answers);

/* A builder for the range [start_s, end_s) (unix seconds). FRUGAL_ENOMEM. */
int replay_prom_new(int64_t start_s, int64_t end_s, replay_prom_t **out, frugal_err_t *err);
void replay_prom_free(replay_prom_t *b);

/* Add one answer of query_range for series s. FRUGAL_EINVAL when the text is not a
 * Prometheus answer ("not a Prometheus answer: ...") or an error answer (its message).
 * FRUGAL_ENOMEM. */
int replay_prom_add(replay_prom_t *b, replay_prom_series_t s, const char *text, size_t len,
                    frugal_err_t *err);

/* Write the trace: one `{"t": S, "pod": POD, "duration": S}` line per pod running within
 * the range, ordered by arrival; t is seconds from start_s. Label keys of node selectors
 * come as kube-state-metrics' label names (other characters than letters, digits and
 * underscores as underscores, camelCase as snake_case, lower case): one that is the
 * label name of one of known_keys (the groups' labels) is written as that key.
 * *text is malloc'd (free it). FRUGAL_ENOMEM. */
int replay_prom_trace(const replay_prom_t *b, const char *const *known_keys, size_t known_count,
                      char **text, size_t *len, replay_prom_stats_t *stats, frugal_err_t *err);

#endif
