/* What the ranking needs from a template v1.Node (docs/wire.md, "Kubernetes subset"):
 * machine type, zone, capacity, GPU presence and the key that tells similar groups
 * apart. Pure, thread-safe. */
#ifndef FRUGAL_NODE_INFO_H
#define FRUGAL_NODE_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "k8s.h"
#include "quantity.h"

typedef struct node_info {
    char *name;           /* metadata.name, "" when absent */
    char *instance_type;  /* node.kubernetes.io/instance-type, NULL when absent */
    char *zone;           /* topology.kubernetes.io/zone, NULL when absent */
    resources_t capacity; /* status.capacity (allocatable when capacity is empty) */
    bool has_gpu;         /* GPU capacity (nvidia.com/gpu, amd.com/gpu) or the GPU label */
    int64_t max_pods;     /* the "pods" capacity (allocatable): pods it runs; 0: no limit */
    /* Equal for similar groups: the instance type (the capacity when it has none), the
     * labels except hostname, zone and region, and the taints, all sorted. */
    char *similarity_key;
} node_info_t;

/* Decode a serialized v1.Node. FRUGAL_EINVAL when the bytes are not a v1.Node or a
 * capacity quantity is malformed; FRUGAL_ENOMEM. On success release with node_info_free. */
int node_info_decode(const uint8_t *data, size_t len, node_info_t *out, frugal_err_t *err);

void node_info_free(node_info_t *info);

/* The allocatable cpu, memory and GPUs of a real node: status.allocatable, else
 * status.capacity (all zero when it has neither). FRUGAL_EINVAL naming the resource for
 * a malformed quantity; *out is unchanged then. */
int node_info_allocatable(const k8s_node_t *node, resources_t *out, frugal_err_t *err);

/* The value of label key on node ("" for a label without a value), NULL when absent. */
const char *node_info_label(const k8s_node_t *node, const char *key);

#endif
