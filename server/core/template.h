/* Template nodes (docs/wire.md, "Template nodes"): the v1.Node CA simulates a
 * group's new nodes from. Named template-<group id>; labels os, arch, hostname,
 * instance-type, zone and region, plus the group's labels; the group's taints;
 * capacity = allocatable = cpu, memory, pods (110), ephemeral-storage (100Gi),
 * nvidia.com/gpu when present, plus extra resources; a Ready condition. No label
 * unique to the group, so similar groups in different zones balance as one set. */
#ifndef FRUGAL_TEMPLATE_H
#define FRUGAL_TEMPLATE_H

#define TEMPLATE_MAX_PODS 110              /* the "pods" capacity: kubelet's --max-pods default */
#define TEMPLATE_EPHEMERAL_STORAGE "100Gi" /* the "ephemeral-storage" capacity */

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Serialized v1.Node of the group described by spec; *out is malloc'ed (caller frees).
 * FRUGAL_ENOTFOUND when the spec's machine type is not in cfg's effective catalog. */
int template_build(const frugal_config_t *cfg, const group_spec_t *spec, uint8_t **out, size_t *len,
                   frugal_err_t *err);

/* The same for a group of machine type mt, whatever catalog it comes from (spec's
 * machine_type is not read; its id, zone, labels, taints and extra resources are).
 * A machine type without a name gives a node without the instance-type label.
 * FRUGAL_EINVAL for a malformed extra resource, FRUGAL_ENOMEM. */
int template_build_machine(const machine_type_t *mt, const group_spec_t *spec, uint8_t **out,
                           size_t *len, frugal_err_t *err);

/* Region of a zone: the zone without its last "-x" part ("us-central1-a" -> "us-central1"). */
char *template_region_of_zone(const char *zone, char *buf, size_t size);

#endif
