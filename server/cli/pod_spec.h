/* One-container v1.Pods described by a few plain fields, as `frugal ctl` sends them
 * (pod-price, propose PODS_FILE, best-options FILE).
 *
 * A pod_spec_t borrows every string it points to; pod_spec_pack copies what it needs
 * into the bytes it returns. Pure C, no gRPC, thread-safe. */
#ifndef FRUGAL_POD_SPEC_H
#define FRUGAL_POD_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"

/* A toleration; any field may be NULL (left unset in the pod). */
typedef struct pod_toleration {
    const char *key;
    const char *operator_;
    const char *value;
    const char *effect;
} pod_toleration_t;

typedef struct pod_spec {
    const char *namespace_; /* NULL: "default" */
    const char *name;       /* NULL: left unset */
    /* Requests of the one container "main", as Kubernetes quantity strings; NULL: not
     * requested. The GPU is requested as nvidia.com/gpu. */
    const char *cpu;
    const char *memory;
    const char *gpu;
    kv_list_t node_selector; /* the pod's nodeSelector, in list order */
    const char *owner_kind;  /* its controller's kind (Job, ReplicaSet, ...); NULL: none */
    int64_t created_s;       /* metadata.creationTimestamp, unix seconds; 0: unset */
    const pod_toleration_t *tolerations;
    size_t n_tolerations;
} pod_spec_t;

/* Pack the v1.Pod spec describes into *out (malloc'ed, the caller frees it), *len
 * bytes long. FRUGAL_EINVAL, with err naming the field ("memory: invalid quantity
 * \"x\""), when cpu is not a quantity in milli-units or memory or gpu not one in
 * whole units; FRUGAL_ENOMEM. On failure *out and *len are unchanged. */
int pod_spec_pack(const pod_spec_t *spec, uint8_t **out, size_t *len, frugal_err_t *err);

#endif
