/* Proposals from pending pods (ProposeNodeGroups, `frugal plan`): which node groups —
 * machine type, zone, labels, taints — would serve a set of pods, how many nodes each
 * needs, ranked by the cost function of the ranking module. Pure: plain structs in and
 * out, no gRPC, no locks, no cluster.
 *
 * The algorithm, run on its own for each allowed machine type:
 *  - candidates are the pods whose effective request fits one node of the type and
 *    whose selector the type can satisfy (instance-type, zone, region, os, arch and GPU
 *    labels must match what the template node will carry; a hostname never does);
 *  - pods are partitioned by the custom taints their tolerations ask for (a toleration
 *    of a valid taint whose key is outside node.kubernetes.io/ and
 *    node.alpha.kubernetes.io/): each
 *    partition gets groups carrying exactly those taints, so a taint is never a
 *    requirement for a pod that does not tolerate it;
 *  - within a partition, the most popular distinct selector starts the label set and
 *    the next most popular ones (ties: first seen first) are folded in when compatible
 *    with it and with the machine type (no key with two values); the pods of the folded
 *    selectors form one proposal and are removed, and the rest start over.
 * A proposal's node count leaves Escalator's headroom (escalator.h, delta from zero at
 * PROPOSE_SCALE_UP_THRESHOLD over the machine type's allocatable), so the new group starts
 * at or below that utilisation rather than full.
 * Proposals come back cheapest first (lowest score, ties in the order produced: machine
 * types in the order given, then rounds). A pod no allowed type can serve is reported
 * as unschedulable. */
#ifndef FRUGAL_PROPOSE_H
#define FRUGAL_PROPOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"
#include "k8s.h"
#include "pod.h"
#include "quantity.h"
#include "ranking.h"

/* One pending pod as the algorithm sees it. */
typedef struct propose_pod {
    char *name;          /* "namespace/name" */
    resources_t request; /* effective request */
    kv_list_t selector;  /* nodeSelector plus required node-affinity pins; sorted, unique */
    taint_list_t taints; /* taints its custom tolerations ask for; sorted, unique */
    bool impossible;     /* contradictory selectors, a label no node can carry, or a
                            resource no proposed node has (an extended resource, more
                            ephemeral storage than a template's): no proposal can serve it */
    /* Its required node affinity (a serialized v1.NodeSelector) when the pins above do not
     * say all of it (several terms, NotIn, Exists, Gt, ...): a proposal's template node must
     * satisfy it. NULL when the pins say it all. */
    uint8_t *affinity;
    size_t affinity_len;
    pod_lifetime_t lifetime; /* what demand-fit's memory of recent pods keeps of it */
    int64_t created_ms;
    uint64_t identity;
} propose_pod_t;

/* Build p from a decoded v1.Pod: name, effective request, selector (nodeSelector plus,
 * when the required node affinity has exactly one term, its "In" expressions with a
 * single value), the rest of that affinity, taints from custom tolerations (operator
 * Exists: empty value; no effect: NoSchedule). FRUGAL_EINVAL for a malformed quantity,
 * FRUGAL_ENOMEM. On failure p is zeroed. */
int propose_pod_from_k8s(const k8s_pod_t *pod, propose_pod_t *p, frugal_err_t *err);

/* The same from serialized v1.Pod bytes; FRUGAL_EINVAL when they are not a v1.Pod. */
int propose_pod_decode(const uint8_t *data, size_t len, propose_pod_t *p, frugal_err_t *err);

/* Free p's members and zero it. */
void propose_pod_clear(propose_pod_t *p);

/* The utilisation, percent, a proposal's nodes are sized to (Escalator's default): the
 * group it proposes has no node_groups[] entry of its own to configure one. */
#define PROPOSE_SCALE_UP_THRESHOLD 70

typedef struct propose_params {
    const frugal_config_t *cfg; /* catalog, pricing, ranking, autoprovisioning */
    int64_t cluster_size;       /* nodes, for the preferred node size of the ranking */
    /* Whether a group of this id exists already (no not_exist_penalty); NULL: none does. */
    bool (*group_exists)(void *ctx, const char *id);
    void *ctx;
} propose_params_t;

typedef struct propose_proposal {
    char *group_id;                     /* the autoprovisioned id such a group gets */
    const machine_type_t *machine_type; /* borrowed from cfg */
    const char *zone;                   /* borrowed from cfg; NULL when no zone is configured */
    kv_list_t labels;                   /* the label set (well-known labels excluded) */
    taint_list_t taints;
    size_t *pods; /* indexes into the input pods */
    size_t pods_count;
    int32_t node_count; /* Escalator's delta from zero at PROPOSE_SCALE_UP_THRESHOLD:
                         * ceil(summed requests x 100 / (one node x threshold)), larger
                         * of cpu and memory; at least the GPUs' ceil(gpus / node gpus), 1 */
    bool exists;
    ranking_figures_t figures; /* figures.score is the cost score */
} propose_proposal_t;

typedef struct propose_result {
    propose_proposal_t *proposals; /* cheapest first */
    size_t count;
    size_t *unschedulable; /* indexes of pods no allowed machine type can serve */
    size_t unschedulable_count;
} propose_result_t;

/* Run the algorithm over pods[0..n) with the machine types and zones allowed by
 * params->cfg->autoprovisioning. On success *out owns the result (propose_result_clear);
 * FRUGAL_ENOMEM leaves it empty. */
int propose_node_groups(const propose_params_t *params, const propose_pod_t *pods, size_t n,
                        propose_result_t *out, frugal_err_t *err);

void propose_result_clear(propose_result_t *r);

#endif
