/* Kubernetes objects as kubectl prints them (`kubectl get pods -A -o json`, `kubectl
 * get nodes -o json`, or the same with -o yaml) converted into the generated protobuf-c
 * structs of proto/k8s/, so that the pure modules (pod, propose, ranking) work on them
 * exactly as on what cluster-autoscaler sends. Pure: no gRPC, no globals, thread-safe.
 *
 * The text is loaded with yaml_tree (JSON is YAML flow syntax), then mapped onto the
 * message descriptors: a JSON key is the proto field name (they are Kubernetes' JSON
 * names), map<string, X> fields are JSON objects, a Quantity is a string or a number,
 * null means absent, of duplicate keys the last wins (as in Go), keys the proto subset
 * does not declare are ignored. Every value of the wrong shape is an error that names
 * its position and path, e.g.
 * `12:21: items[0].spec.containers[1].resources.requests.cpu: bad quantity "x": ...`;
 * the cpu, memory and GPU quantities frugal reads are checked against the grammar. */
#ifndef FRUGAL_KUBE_JSON_H
#define FRUGAL_KUBE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "errors.h"
#include "k8s.h"
#include "yaml_tree.h"

/* Where and why a document was rejected; line and column are 1-based, 0 when unknown. */
typedef struct kube_json_error {
    int line;
    int column;
    char message[512];
} kube_json_error_t;

/* Pods of a list, in document order. Each item is heap-built (free with
 * k8s__io__api__core__v1__pod__free_unpacked), the list with kube_pod_list_clear. */
typedef struct kube_pod_list {
    k8s_pod_t **items;
    size_t count;
} kube_pod_list_t;

typedef struct kube_node_list {
    k8s_node_t **items;
    size_t count;
} kube_node_list_t;

/* Parse text[0..len): a v1 List (or PodList) whose "items" are Pods, or a single Pod.
 * Returns 0 with *out filled (possibly empty); FRUGAL_EINVAL with *err for text that is
 * not such a document (empty input included); FRUGAL_ENOMEM. On failure *out is empty. */
int kube_json_parse_pods(const char *text, size_t len, kube_pod_list_t *out,
                         kube_json_error_t *err);

/* The same for Nodes (a v1 List / NodeList of Nodes, or a single Node). */
int kube_json_parse_nodes(const char *text, size_t len, kube_node_list_t *out,
                          kube_json_error_t *err);

/* Convert one loaded object (a mapping) into a Pod / a Node; *out is heap-built. path
 * prefixes error messages (may be NULL). FRUGAL_EINVAL with *err, FRUGAL_ENOMEM. */
int kube_json_pod_from_tree(const yaml_tree_node_t *obj, const char *path, k8s_pod_t **out,
                            kube_json_error_t *err);
int kube_json_node_from_tree(const yaml_tree_node_t *obj, const char *path, k8s_node_t **out,
                             kube_json_error_t *err);

void kube_pod_list_clear(kube_pod_list_t *list);
void kube_node_list_clear(kube_node_list_t *list);

/* A pod waiting for a node: status.phase "Pending", no spec.nodeName, no scheduling gates
 * and no deletion timestamp. */
bool kube_pod_is_pending(const k8s_pod_t *pod);

/* The kind of the pod's controller (the owner reference with controller: true), e.g.
 * "ReplicaSet" or "DaemonSet"; NULL when it has none. */
const char *kube_pod_controller_kind(const k8s_pod_t *pod);

#endif
