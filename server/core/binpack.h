/* First fit of pods onto new nodes of one shape: how many nodes CA's estimator buys for
 * them (in the order it considers them: largest first), and what pods left to a later
 * scale-up will take (left_out.h). Pure. */
#ifndef FRUGAL_BINPACK_H
#define FRUGAL_BINPACK_H

#include <stddef.h>
#include <stdint.h>

#include "quantity.h"

/* The nodes of shape node, max_pods pod slots each (0: no limit), that the pods
 * pods[order[0..count)] take when each goes, in that order, to the first node with room
 * for its cpu, memory, GPUs and a slot, else to a new node (a pod larger than a node
 * still takes one of its own). room and slots are scratch of count rows. */
size_t binpack_first_fit(const resources_t *pods, const size_t *order, size_t count,
                         const resources_t *node, int64_t max_pods, resources_t *room,
                         int64_t *slots);

#endif
