/* Escalator's utilisation-driven scale-up, and cluster-autoscaler's balanced split of a
 * scale-up over similar node groups (docs/escalator.md).
 *
 * Escalator sizes a group from how much of its allocatable its pods request:
 *  - requests: the summed effective requests of the group's pods (DaemonSet pods are
 *    the caller's to leave out), capacity: the summed allocatable of its nodes;
 *  - utilisation: requests / capacity x 100 for cpu and for memory; the larger one is
 *    the one used;
 *  - delta: ceil((utilisation - threshold) / threshold x nodes) when the utilisation is
 *    at or above the threshold, else 0;
 *  - from zero (no nodes, some requests): utilisation is +infinity and the delta is
 *    ceil(requests / one node's allocatable / threshold x 100), the larger resource; 1
 *    when one node's allocatable is unknown;
 *  - scale_on_starve: a group with a pod that cannot be scheduled gets a delta >= 1;
 *  - the delta is then capped by max_size and by the cluster-wide cpu/memory limits.
 * The delta is computed in exact integer arithmetic (no rounding at whole numbers).
 * The model assumes equal nodes in a group and pods with requests: escalator_add_node
 * and escalator_add_pod say when an input breaks it, so callers can report it.
 *
 * Pure: plain structs in and out, no allocation, no globals, thread-safe. */
#ifndef FRUGAL_ESCALATOR_H
#define FRUGAL_ESCALATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autoprov.h"
#include "config.h"
#include "k8s.h"
#include "quantity.h"

/* Escalator's default scale-up threshold, percent (node_groups[].scale_up_threshold). */
#define ESCALATOR_DEFAULT_THRESHOLD 70

/* One group's figures, accumulated with escalator_add_node and escalator_add_pod. */
typedef struct escalator_group {
    int32_t threshold;            /* scale-up threshold, percent, in (0, 100] */
    bool scale_on_starve;         /* a pod that cannot be scheduled forces a delta >= 1 */
    resources_t node_allocatable; /* one node's allocatable: the first node's, else the
                                   * cached one given to escalator_group_init (0: unknown) */
    int64_t nodes;
    resources_t capacity; /* summed allocatable of the nodes */
    int64_t pods;
    int64_t pods_without_requests; /* counted pods whose cpu or memory request is 0 */
    resources_t requests;          /* summed effective requests of the pods */
    bool starving;                 /* one of the pods cannot be scheduled */
    bool mixed_allocatable;        /* nodes with different allocatable were added */
} escalator_group_t;

/* What escalator_scale_up makes of a group. */
typedef struct escalator_result {
    double cpu_percent;    /* requests / capacity x 100; +infinity from zero */
    double memory_percent; /* the same for memory */
    double used_percent;   /* the larger of the two */
    bool from_zero;        /* no nodes: the delta comes from one node's allocatable */
    bool starved;          /* scale_on_starve raised the delta to 1 */
    int64_t delta_wanted;  /* the delta before the caps */
    int64_t delta;         /* after max_size and the cluster limits, >= 0 */
    bool capped;           /* delta < delta_wanted */
    double cpu_after;      /* utilisation once delta nodes of node_allocatable are added */
    double memory_after;
} escalator_result_t;

/* Start g empty with its threshold, scale_on_starve and the cached allocatable of one
 * node (e.g. the template's; NULL or zeros when unknown). */
void escalator_group_init(escalator_group_t *g, int32_t threshold, bool scale_on_starve,
                          const resources_t *cached_allocatable);

/* Count one node of allocatable into g. Returns false when its cpu or memory differs
 * from the nodes added before (g->mixed_allocatable is then set): the model's
 * assumption of equal nodes is broken, the node is counted all the same. */
bool escalator_add_node(escalator_group_t *g, const resources_t *allocatable);

/* Count one pod of effective request into g; starving: it cannot be scheduled. Returns
 * escalator_missing_requests(request): non-NULL when the pod breaks the assumption that
 * every pod has requests (it is counted all the same). */
const char *escalator_add_pod(escalator_group_t *g, const resources_t *request, bool starving);

/* "no cpu and memory requests", "no cpu request", "no memory request", or NULL when
 * the request has both. */
const char *escalator_missing_requests(const resources_t *request);

/* requests / capacity x 100 (0 for no requests, +infinity for requests on no capacity). */
double escalator_percent(int64_t requests, int64_t capacity);

/* The delta from zero: the larger of ceil(requests x 100 / (allocatable x threshold))
 * over cpu and memory; 1 when allocatable has no cpu or no memory; 0 without requests.
 * GPUs are not part of the model. threshold in (0, 100]. */
int64_t escalator_delta_from_zero(const resources_t *requests, const resources_t *allocatable,
                                  int32_t threshold);

/* The scale-up of g, capped so the group stays within max_size (< 0: no bound) and,
 * when limits is non-NULL, the cluster within its max cpu/memory with totals the
 * cluster's current capacity (autoprov_max_size). */
void escalator_scale_up(const escalator_group_t *g, int32_t max_size,
                        const autoprov_config_t *limits, const autoprov_totals_t *totals,
                        escalator_result_t *out);

/* Whether group i is in the similar set of group chosen: i == chosen, or both keys are
 * non-NULL and equal (keys may be NULL: no group is similar to another). */
bool escalator_in_set(const char *const *keys, size_t i, size_t chosen);

/* Cluster-autoscaler's --balance-similar-node-groups split of add nodes over the groups
 * whose similarity key equals keys[chosen] (NULL keys are similar to none, so the set is
 * then the chosen group alone): one node at a time to the smallest group of the set that
 * is below its max (sizes[i], max_sizes[i] < 0: no bound), ties to the lowest index.
 * out[0..n) receives each group's share (0 outside the set). Returns how many nodes were
 * placed (< add when the whole set reaches its maxima). */
int64_t escalator_split(const char *const *keys, const int64_t *sizes, const int64_t *max_sizes,
                        size_t n, size_t chosen, int64_t add, int64_t *out);

/* How escalator_group_of_node found a node's group. */
typedef enum escalator_claim {
    ESCALATOR_CLAIM_NONE = 0,
    ESCALATOR_CLAIM_LABEL,       /* the frugal.io/node-group label names it */
    ESCALATOR_CLAIM_PROVIDER_ID, /* spec.providerID is frugal://<group>/<name> */
    ESCALATOR_CLAIM_TYPE_ZONE,   /* instance type and zone (and the group's labels) */
} escalator_claim_t;

/* The configured group a real node belongs to, as an index into cfg->node_groups, or -1
 * when none claims it. Rules, first match wins: the frugal.io/node-group label naming a
 * configured group; a provider id frugal://<group>/<name> naming one; else the first
 * group, in configuration order, whose machine type equals the node's instance-type
 * label, whose zone (when set) equals its zone label and whose labels it all carries.
 * *how (may be NULL) receives the rule. */
long escalator_group_of_node(const frugal_config_t *cfg, const k8s_node_t *node,
                             escalator_claim_t *how);

/* "label", "provider id", "instance type and zone", or "none". */
const char *escalator_claim_name(escalator_claim_t how);

#endif
