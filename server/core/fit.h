/* Can a pod be scheduled on a node? The scheduling predicates frugal simulates, one
 * place for every user (`frugal plan`, the proposals, `frugal replay`):
 *  - resources: the pod's effective request fits the node's allocatable cpu, memory
 *    and GPUs, and every other resource it asks for (ephemeral-storage, hugepages-*,
 *    extended resources such as example.com/fpga) fits the node's allocatable of it (0
 *    when the node does not list it);
 *  - node selector: every nodeSelector pair is one of the node's labels;
 *  - required node affinity: one of its terms holds (In, NotIn, Exists, DoesNotExist,
 *    Gt, Lt over the labels; a term with matchFields names specific nodes: never);
 *  - taints: the pod tolerates each NoSchedule and NoExecute taint of the node.
 * Pod affinity, topology spread and the pods already on the node are not simulated.
 *
 * Pure, thread-safe, no allocation. When a predicate fails and why is not NULL, a short
 * reason is written to why[0..size) ("cpu 3 > 2", "node selector team=web", "required
 * node affinity", "taint dedicated=web:NoSchedule"). */
#ifndef FRUGAL_FIT_H
#define FRUGAL_FIT_H

#include <stdbool.h>
#include <stddef.h>

#include "k8s.h"
#include "quantity.h"

/* Whether request fits allocatable in cpu, memory and GPUs. */
bool fit_resources(const resources_t *request, const resources_t *allocatable, char *why,
                   size_t size);

/* Whether every resource spec asks for other than cpu, memory and GPUs, as the scheduler
 * combines the containers' requests, fits node's allocatable of it ("example.com/fpga 1
 * > 0"; an invalid quantity never fits). */
bool fit_named_resources(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why,
                         size_t size);

/* Whether node (may be NULL: no labels) carries every nodeSelector pair of spec (may be
 * NULL: no selector). */
bool fit_node_selector(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size);

/* Whether node satisfies spec's required node affinity (true when there is none). */
bool fit_node_affinity(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size);

/* Whether every operator of spec's required node affinity is one Kubernetes knows (In,
 * NotIn, Exists, DoesNotExist, Gt, Lt); when not, the first other one is named in why.
 * The API server refuses the others; a pod written by hand may carry one ("in"). */
bool fit_node_affinity_valid(const k8s_pod_spec_t *spec, char *why, size_t size);

/* Whether spec's tolerations tolerate taint (a taint of any effect). */
bool fit_tolerates(const k8s_pod_spec_t *spec, const k8s_taint_t *taint);

/* Whether spec tolerates every NoSchedule and NoExecute taint of node. */
bool fit_taints(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size);

/* All of the above, in that order (the first failing one gives the reason): whether a
 * pod with this spec and effective request can be placed on node, whose allocatable
 * resources are allocatable. */
bool fit_pod(const k8s_pod_spec_t *spec, const resources_t *request, const k8s_node_t *node,
             const resources_t *allocatable, char *why, size_t size);

#endif
