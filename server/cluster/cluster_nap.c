/* Node auto-provisioning on the cluster, the read side: totals, advertised sizes and the
 * limit checks, computed from the published groups through cluster.h's public reads.
 * The lifecycle mutations live in cluster.c (they need its commit machinery). */
#include "cluster_nap.h"

#include <string.h>

#include "pricing.h"

int cluster_nap_node_capacity(const frugal_config_t *cfg, const group_t *g, resources_t *out) {
    const machine_type_t *mt = config_find_machine_type(cfg, g->spec.machine_type);
    if (mt == NULL)
        return FRUGAL_ENOTFOUND;
    frugal_err_t ignored;
    if (pricing_machine_capacity(mt, &g->spec, out, &ignored) != 0) {
        /* Malformed extra resources were refused when the group was made; count the
         * machine alone rather than nothing. */
        *out = (resources_t){mt->cpu_milli, mt->memory_bytes, mt->gpu};
    }
    return 0;
}

void cluster_nap_totals(const cluster_t *c, autoprov_totals_t *out) {
    const frugal_config_t *cfg = cluster_config(c);
    memset(out, 0, sizeof(*out));
    size_t n = cluster_groups_count(c);
    for (size_t i = 0; i < n; i++) {
        const group_t *g = cluster_group_at(c, i);
        resources_t node;
        if (g->target_size > 0 && cluster_nap_node_capacity(cfg, g, &node) == 0)
            autoprov_totals_add(out, g->target_size, &node);
    }
}

int32_t cluster_nap_existing_groups(const cluster_t *c) {
    int32_t count = 0;
    size_t n = cluster_groups_count(c);
    for (size_t i = 0; i < n; i++) {
        const group_t *g = cluster_group_at(c, i);
        count += g->autoprovisioned && g->exists;
    }
    return count;
}

int32_t cluster_nap_max_size(const cluster_t *c, const group_t *g) {
    const frugal_config_t *cfg = cluster_config(c);
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled)
        return g->max_size;
    if (g->autoprovisioned && !g->exists && cluster_nap_existing_groups(c) >= ap->max_node_groups)
        return g->target_size;
    if (ap->max_cpu_milli == INT64_MAX && ap->max_memory_bytes == INT64_MAX)
        return g->max_size; /* unlimited: no need for the O(groups) totals */
    resources_t node;
    if (cluster_nap_node_capacity(cfg, g, &node) != 0)
        return g->max_size;
    autoprov_totals_t totals;
    cluster_nap_totals(c, &totals);
    return autoprov_max_size(ap, &totals, &node, g->target_size, g->max_size);
}

int cluster_nap_check_increase(const cluster_t *c, const group_t *g, int32_t delta,
                               frugal_err_t *err) {
    const frugal_config_t *cfg = cluster_config(c);
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled)
        return 0;
    if (g->autoprovisioned && !g->exists) {
        int32_t existing = cluster_nap_existing_groups(c);
        if (existing >= ap->max_node_groups)
            return frugal_err_set(err, FRUGAL_EEXHAUSTED,
                                  "cannot create node group %s: max_node_groups %d reached (%d "
                                  "autoprovisioned groups exist)",
                                  g->spec.id, (int)ap->max_node_groups, (int)existing);
    }
    resources_t node;
    /* A machine type gone from the catalog (a group resumed from an older state file)
     * counts as nothing in the totals, so it cannot be held against the limits either. */
    if (cluster_nap_node_capacity(cfg, g, &node) != 0)
        return 0;
    autoprov_totals_t totals;
    cluster_nap_totals(c, &totals);
    return autoprov_check_increase(ap, &totals, g->spec.id, g->spec.machine_type, &node, delta,
                                   err);
}

int cluster_nap_check_delete(const cluster_t *c, const group_t *g, int32_t n, frugal_err_t *err) {
    const frugal_config_t *cfg = cluster_config(c);
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled || n <= 0)
        return 0;
    resources_t node;
    if (cluster_nap_node_capacity(cfg, g, &node) != 0)
        return 0;
    autoprov_totals_t totals;
    cluster_nap_totals(c, &totals);
    return autoprov_check_decrease(ap, &totals, g->spec.id, g->spec.machine_type, &node, n, err);
}

bool cluster_nap_configured_shape(const frugal_config_t *cfg, const group_spec_t *spec) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled || spec->taints.count > 0 || spec->extra_resources.count > 0 || spec->spot)
        return false;
    bool type_ok = false;
    for (size_t i = 0; i < ap->machine_types_count && !type_ok; i++)
        type_ok = strcmp(ap->machine_types[i], spec->machine_type) == 0;
    bool zone_ok = ap->zones_count == 0 && (spec->zone == NULL || spec->zone[0] == '\0');
    for (size_t i = 0; i < ap->zones_count && !zone_ok; i++)
        zone_ok = spec->zone != NULL && strcmp(ap->zones[i], spec->zone) == 0;
    bool labels_ok = ap->label_sets_count == 0 && spec->labels.count == 0;
    for (size_t i = 0; i < ap->label_sets_count && !labels_ok; i++)
        labels_ok = kv_list_equal(&ap->label_sets[i], &spec->labels);
    return type_ok && zone_ok && labels_ok;
}
