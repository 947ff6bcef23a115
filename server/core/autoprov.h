/* Node auto-provisioning, the pure part (docs/autoprovisioning.md): the ids
 * of autoprovisioned groups and the arithmetic of the cluster-wide cpu/memory limits.
 * No gRPC, no locks: the cluster computes the totals under its lock and asks here.
 *
 * Limits count every node of every group, managed, unmanaged and autoprovisioned, as
 * target size x the capacity of its machine type. They are not enforced backwards: a
 * cluster already over a max is never shrunk, it just cannot grow, and one already
 * under a min cannot shrink further. */
#ifndef FRUGAL_AUTOPROV_H
#define FRUGAL_AUTOPROV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"
#include "quantity.h"

/* Upper bound of an autoprovisioned group's size, before the limits cut it. */
#define AUTOPROV_GROUP_MAX_SIZE 1000

/* Length of the label-set hash in an id: 8 hex digits. */
#define AUTOPROV_HASH_LEN 8

/* Cluster-wide totals the limits are checked against. */
typedef struct autoprov_totals {
    int64_t cpu_milli;
    int64_t memory_bytes;
} autoprov_totals_t;

/* Add count nodes of capacity node to t (saturating at INT64_MAX). */
void autoprov_totals_add(autoprov_totals_t *t, int64_t count, const resources_t *node);

/* The short stable hash of a group's shape beyond machine type and zone: FNV-1a of the
 * sorted "key=value" label pairs (then, when present, the taints as "taint:k=v:Effect"
 * and the extra resources as "resource:name=qty"), as AUTOPROV_HASH_LEN lowercase hex
 * digits into buf (size > AUTOPROV_HASH_LEN). Returns false (buf "") when all are empty:
 * such a group has no hash in its id. Any list may be NULL. */
bool autoprov_shape_hash(const kv_list_t *labels, const taint_list_t *taints,
                         const kv_list_t *extra_resources, char *buf, size_t size);

/* How many shapes the configuration offers: machine type x zone x label set. */
size_t autoprov_offered_count(const autoprov_config_t *ap);

/* The k-th offered shape (k < autoprov_offered_count), label sets varying fastest, then
 * zones, then machine types: *zone NULL when no zone is configured, *labels empty when
 * no label set is. */
void autoprov_offered_shape(const autoprov_config_t *ap, size_t k, const char **machine_type,
                            const char **zone, const kv_list_t **labels);

/* The id `<prefix>-<machine-type>-<zone>[-<hash>]` (no zone part when zone is NULL or
 * empty; prefix NULL means "nap") into a malloc'ed *out. FRUGAL_EINVAL without a
 * machine type, FRUGAL_ENOMEM. */
int autoprov_group_id(const char *prefix, const char *machine_type, const char *zone,
                      const kv_list_t *labels, const taint_list_t *taints,
                      const kv_list_t *extra_resources, char **out, frugal_err_t *err);

/* Whether adding delta nodes of capacity node (machine type name for the message) to
 * a cluster at totals stays within the max limits of ap. 0, or FRUGAL_EEXHAUSTED naming
 * the group, the limit and the figures. */
int autoprov_check_increase(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                            const char *group_id, const char *machine_type, const resources_t *node,
                            int32_t delta, frugal_err_t *err);

/* Whether removing n nodes of capacity node keeps the cluster at or above the min
 * limits. 0, or FRUGAL_EPRECOND naming the group, the limit and the figures. */
int autoprov_check_decrease(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                            const char *group_id, const char *machine_type, const resources_t *node,
                            int32_t n, frugal_err_t *err);

/* The minSize advertised for a group of capacity node at target with its own min_size:
 * max(min_size, target - floor(cpu above min_cpu / node cpu), target - floor(memory
 * above min_memory / node memory)): never above target unless min_size is. */
int32_t autoprov_min_size(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                          const resources_t *node, int32_t target, int32_t min_size);

/* Whether the config caps the cluster's cpu or memory (autoprov_max_size applies), and
 * whether it sets a floor on them (autoprov_min_size applies). */
bool autoprov_has_maxima(const autoprov_config_t *ap);
bool autoprov_has_minima(const autoprov_config_t *ap);

/* The maxSize advertised for a group of capacity node at target with its own max_size:
 * min(max_size, target + floor(remaining cpu / node cpu), target + floor(remaining
 * memory / node memory)), never below target (nor below 0). */
int32_t autoprov_max_size(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                          const resources_t *node, int32_t target, int32_t max_size);

#endif
