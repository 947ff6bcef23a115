/* A pod's effective request, as the Kubernetes scheduler computes it (docs/wire.md):
 * sum over containers plus sidecar init containers (restartPolicy "Always"); each
 * ordinary init container runs alone, after the sidecars started before it, and the
 * larger per resource wins; plus overhead. Pod-level resources take precedence when
 * set. Requests only; a container with limits but no requests counts its limits as
 * requests (as the API server defaults them). GPUs are nvidia.com/gpu + amd.com/gpu.
 * Pure functions, thread-safe. */
#ifndef FRUGAL_POD_H
#define FRUGAL_POD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "k8s.h"
#include "quantity.h"

/* Effective request of a decoded pod. FRUGAL_EINVAL with err naming the pod, the
 * container and the resource when a quantity is malformed. */
int pod_effective_request(const k8s_pod_t *pod, resources_t *out, frugal_err_t *err);

/* Whether name is one of the resources pod_effective_request combines: cpu, memory,
 * nvidia.com/gpu, amd.com/gpu. */
bool pod_resource_is_standard(const char *name);

/* The effective request of one resource other than cpu, memory and GPUs
 * (ephemeral-storage, hugepages-*, an extended resource such as example.com/fpga),
 * combined as above, in the resource's own unit rounded up (bytes, or a count); pod-level
 * resources count for hugepages only, as Kubernetes allows. FRUGAL_EINVAL with err as
 * above when one of its quantities is malformed. */
int pod_named_request(const k8s_pod_t *pod, const char *name, int64_t *out, frugal_err_t *err);

/* Unpack serialized v1.Pod bytes and compute its effective request. FRUGAL_EINVAL
 * when the bytes are not a valid v1.Pod. */
int pod_decode_request(const uint8_t *data, size_t len, resources_t *out, frugal_err_t *err);

/* How long a pod is expected to stay, from the kind of its controller. */
typedef enum pod_lifetime {
    POD_LIFETIME_UNKNOWN = 0, /* no controller, or a kind frugal does not know */
    POD_LIFETIME_SHORT,       /* Job, CronJob: runs to completion */
    POD_LIFETIME_LONG,        /* ReplicaSet, StatefulSet, Deployment, DaemonSet, ... */
} pod_lifetime_t;

/* The lifetime of a controller kind (NULL: none). */
pod_lifetime_t pod_lifetime_of_kind(const char *kind);

/* Whether pods of controller kind come with every node, whatever scales: a DaemonSet's,
 * or a static pod's (its mirror pod is owned by its Node). kind may be NULL. */
bool pod_kind_per_node(const char *kind);

/* The lifetime of a decoded pod, from its controlling owner reference. */
pod_lifetime_t pod_lifetime(const k8s_pod_t *pod);

/* When a decoded pod was created (metadata.creationTimestamp), in milliseconds since
 * the epoch; -1 when it has none (an unset or zero time, as Kubernetes sends for "not
 * set"). */
int64_t pod_created_ms(const k8s_pod_t *pod);

/* Who a decoded pod is, for recognising it when it comes again: a hash of its
 * metadata.uid, else of "namespace/name"; 0 when it has neither. Never 0 otherwise. */
uint64_t pod_identity(const k8s_pod_t *pod);

/* What BestOptions reads of a pod. */
typedef struct pod_summary {
    resources_t request;     /* its effective request */
    pod_lifetime_t lifetime; /* pod_lifetime */
    int64_t created_ms;      /* pod_created_ms */
    uint64_t identity;       /* pod_identity */
} pod_summary_t;

/* pod_decode_request, giving the whole summary. On failure out->created_ms is -1 and
 * out->identity 0. */
int pod_decode_summary(const uint8_t *data, size_t len, pod_summary_t *out, frugal_err_t *err);

/* "namespace/name" of a pod (generateName when the name is empty) into buf. */
char *pod_format_name(const k8s_pod_t *pod, char *buf, size_t size);

#endif
