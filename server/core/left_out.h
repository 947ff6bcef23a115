/* Pods left to a later scale-up (docs/ranking.md, "Pods left to a later scale-up").
 *
 * Cluster-autoscaler buys one option a loop; the pending pods the chosen option does not
 * host wait for the next loop, which buys nodes for them then. Options that carry a pod
 * in common compete for the same pods (a related set). An option that hosts only part
 * of its set's pods (the rest do not fit its nodes, or its group reaches max_size)
 * leaves them to that later scale-up, and demand-fit charges it what they will cost
 * there: each left-out pod goes to the option of the set that hosts pods at the lowest
 * price now (the lowest C / T), and the left-out pods of each such option are packed
 * first-fit decreasing onto its node (cpu, memory, GPUs, pod slots); the nodes they take, at its
 * node price, are the cost, and the pods' own prices the value. A pod that requests
 * nothing takes only a pod slot: charged for that alone, and not at all where its host's
 * nodes have no slot limit.
 *
 * Pure: no allocation kept, no locks. */
#ifndef FRUGAL_LEFT_OUT_H
#define FRUGAL_LEFT_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quantity.h"

/* One option, as this computation reads it. */
typedef struct left_out_option {
    bool in_play;         /* scorable: an option that is not hosts and is charged nothing */
    size_t set;           /* its related set, an index below n (0 when not): equal for
                           * options that compete for pods */
    const uint32_t *pods; /* indexes into the request's pods (out of range ones ignored) */
    size_t pods_count;
    resources_t node;   /* one node's capacity */
    int64_t max_pods;   /* the pods one node takes (kubelet's --max-pods); 0: no limit */
    double node_price;  /* P */
    double nodes_price; /* C = P x node count */
    double pods_price;  /* T */
} left_out_option_t;

/* For every option in play, cost[i] (per hour) and value[i] of the pods of its set it
 * leaves out, 0 and 0 when it leaves none; pods_count pods with their linear prices.
 * FRUGAL_ENOMEM with cost and value zeroed. */
int left_out_charge(const resources_t *pods, const double *pod_prices, size_t pods_count,
                    const left_out_option_t *options, size_t n, double *cost, double *value);

#endif
