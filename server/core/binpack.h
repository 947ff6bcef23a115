/* First fit of pods onto new nodes of one shape: how many nodes CA's estimator buys for
 * them (in the order it considers them: largest first), and what pods left to a later
 * scale-up will take (left_out.h). Pure. */
#ifndef FRUGAL_BINPACK_H
#define FRUGAL_BINPACK_H

#include <stddef.h>
#include <stdint.h>

#include "quantity.h"

/* A pod in CA's estimator's order: its size on a node of the option's shape (its share
 * of the node's cpu plus its share of the node's memory, binpack_size) and its index. */
typedef struct binpack_key {
    double size;
    size_t at;
} binpack_key_t;

/* pod's share of node's cpu plus its share of node's memory (a dimension the node lacks
 * counts 0). */
double binpack_size(const resources_t *pod, const resources_t *node);

/* Sort keys largest first, ties in index order (so that a plan and a replay of the same
 * pods pack them alike, whatever qsort does with ties). */
void binpack_sort_largest_first(binpack_key_t *keys, size_t count);

/* The nodes of shape node, max_pods pod slots each (0: no limit), that the pods
 * pods[order[0..count)] take when each goes, in that order, to the first node with room
 * for its cpu, memory, GPUs and a slot, else to a new node (a pod larger than a node
 * still takes one of its own). room and slots are scratch of count rows. */
size_t binpack_first_fit(const resources_t *pods, const size_t *order, size_t count,
                         const resources_t *node, int64_t max_pods, resources_t *room,
                         int64_t *slots);

/* binpack_first_fit that also writes, for each pod, the index of the node it went to
 * (node_of: one row per pod). Under a node limit N (the group's max_size), CA's
 * estimator keeps exactly the pods with node_of < N: later nodes never change where an
 * earlier pod went. */
size_t binpack_first_fit_nodes(const resources_t *pods, const size_t *order, size_t count,
                               const resources_t *node, int64_t max_pods, resources_t *room,
                               int64_t *slots, size_t *node_of);

/* The pods[0..count) as CA's estimator packs them, largest first (binpack_size, ties in
 * index order) then first fit, onto nodes of shape node: *nodes used, and with node_of
 * each pod's node. 0, or FRUGAL_ENOMEM with nothing written. */
int binpack_largest_first(const resources_t *pods, size_t count, const resources_t *node,
                          int64_t max_pods, size_t *nodes, size_t *node_of);

#endif
