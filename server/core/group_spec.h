/* A node group's shape, wherever it comes from (the configuration, the state,
 * NewNodeGroup, a proposal): its machine type, zone, labels, taints and extra
 * resources, and its deep copy and release (group_spec.c). */
#ifndef FRUGAL_GROUP_SPEC_H
#define FRUGAL_GROUP_SPEC_H

#include <stdbool.h>

#include "labels.h"

/* What a node group's nodes look like: shared by configured and autoprovisioned groups,
 * and all a template node is built from. */
typedef struct group_spec {
    char *id;
    char *machine_type; /* name in the effective catalog */
    char *zone;         /* NULL when not set */
    bool spot;          /* priced at the spot price */
    double spot_price;  /* per hour; < 0 when not given */
    kv_list_t labels;
    taint_list_t taints;
    kv_list_t extra_resources; /* resource name -> quantity string (NAP NewNodeGroup) */
} group_spec_t;

/* A spec's deep copy and release. A copy that fails returns FRUGAL_ENOMEM and leaves dst
 * zeroed; group_spec_clear frees the members and zeroes the struct (clearing a zeroed
 * spec is a no-op). */
int group_spec_copy(group_spec_t *dst, const group_spec_t *src);
void group_spec_clear(group_spec_t *spec);

#endif
