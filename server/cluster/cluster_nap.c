/* Node auto-provisioning on the cluster: see cluster_nap.h. The read side (totals,
 * advertised sizes, limit checks) uses only cluster.h's public reads; the lifecycle
 * mutations commit through the cluster's own machinery (cluster_internal.h). */
#include "cluster_nap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "duration.h"
#include "log.h"
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

void cluster_nap_survey(const cluster_t *c, cluster_nap_survey_t *out) {
    const autoprov_config_t *ap = &cluster_config(c)->autoprovisioning;
    memset(out, 0, sizeof(*out));
    if (!ap->enabled)
        return;
    out->existing_groups = cluster_nap_existing_groups(c);
    /* Without limits to apply, no need for the totals. */
    if (autoprov_has_maxima(ap) || autoprov_has_minima(ap))
        cluster_nap_totals(c, &out->totals);
}

void cluster_nap_sizes(const cluster_t *c, const cluster_nap_survey_t *survey, const group_t *g,
                       int32_t *min, int32_t *max) {
    const frugal_config_t *cfg = cluster_config(c);
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    *min = g->min_size;
    *max = g->max_size;
    if (!ap->enabled)
        return;
    bool full = g->autoprovisioned && !g->exists && survey->existing_groups >= ap->max_node_groups;
    if (full)
        *max = g->target_size;
    bool maxima = !full && autoprov_has_maxima(ap);
    bool minima = autoprov_has_minima(ap);
    resources_t node;
    if (cluster_nap_node_capacity(cfg, g, &node) != 0) {
        /* A machine type gone from the catalog: nothing counts its nodes against the
         * limits, so the group does not grow (cluster__nap_check_increase). */
        if (*max > g->target_size)
            *max = g->target_size;
        return;
    }
    if (maxima)
        *max = autoprov_max_size(ap, &survey->totals, &node, g->target_size, g->max_size);
    if (minima)
        *min = autoprov_min_size(ap, &survey->totals, &node, g->target_size, g->min_size);
}

int32_t cluster_nap_max_size(const cluster_t *c, const group_t *g) {
    cluster_nap_survey_t survey;
    cluster_nap_survey(c, &survey);
    int32_t min, max;
    cluster_nap_sizes(c, &survey, g, &min, &max);
    return max;
}

int cluster__nap_check_increase(const cluster_t *c, const group_t *g, int32_t delta,
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
     * counts as nothing in the totals: it could grow past every limit unseen. */
    if (cluster_nap_node_capacity(cfg, g, &node) != 0)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s: machine type %s is no longer in the catalog: the "
                              "group can shrink, not grow",
                              g->spec.id, g->spec.machine_type);
    autoprov_totals_t totals;
    cluster_nap_totals(c, &totals);
    return autoprov_check_increase(ap, &totals, g->spec.id, g->spec.machine_type, &node, delta,
                                   err);
}

int cluster__nap_check_delete(const cluster_t *c, const group_t *g, int32_t n, frugal_err_t *err) {
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

static bool cluster__nap_type_allowed(const autoprov_config_t *ap, const char *machine_type) {
    for (size_t i = 0; i < ap->machine_types_count; i++) {
        if (strcmp(ap->machine_types[i], machine_type) == 0)
            return true;
    }
    return false;
}

/* Whether spec's id is the one its shape gets under ap's prefix now, as the config and
 * NewNodeGroup make ids (true when out of memory: the group is kept). */
static bool cluster__nap_zone_allowed(const autoprov_config_t *ap, const char *zone) {
    bool ok = ap->zones_count == 0 && (zone == NULL || zone[0] == '\0');
    for (size_t i = 0; i < ap->zones_count && !ok; i++)
        ok = zone != NULL && strcmp(ap->zones[i], zone) == 0;
    return ok;
}

static bool cluster__nap_current_id(const autoprov_config_t *ap, const group_spec_t *spec) {
    char *id = NULL;
    if (autoprov_group_id(ap->prefix, spec->machine_type, spec->zone, &spec->labels, &spec->taints,
                          &spec->extra_resources, &id, NULL) != 0)
        return true;
    bool same = strcmp(id, spec->id) == 0;
    free(id);
    return same;
}

bool cluster_nap_configured_shape(const frugal_config_t *cfg, const group_spec_t *spec) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled || spec->taints.count > 0 || spec->extra_resources.count > 0 || spec->spot)
        return false;
    bool type_ok = cluster__nap_type_allowed(ap, spec->machine_type);
    bool zone_ok = cluster__nap_zone_allowed(ap, spec->zone);
    bool labels_ok = ap->label_sets_count == 0 && spec->labels.count == 0;
    for (size_t i = 0; i < ap->label_sets_count && !labels_ok; i++)
        labels_ok = kv_list_equal(&ap->label_sets[i], &spec->labels);
    /* Under the id the config gives it now: not one kept from another prefix. */
    return type_ok && zone_ok && labels_ok && cluster__nap_current_id(ap, spec);
}

const char *cluster__nap_stale(const frugal_config_t *cfg, const group_t *g) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!g->autoprovisioned || g->exists || g->target_size > 0 || g->instances_count > 0)
        return NULL;
    if (!cluster__nap_type_allowed(ap, g->spec.machine_type))
        return "its machine type is no longer allowed";
    if (!cluster__nap_zone_allowed(ap, g->spec.zone))
        return "its zone is no longer allowed";
    /* Another id was made under another prefix (nap-gpu- is not nap-, though it starts so). */
    return cluster__nap_current_id(ap, &g->spec)
               ? NULL
               : "its id is not the one the autoprovisioning prefix gives it";
}

/* ------------------------------------------------------------------------------------
 * Lifecycle: theoretical groups, NewNodeGroup, NodeGroupCreate, NodeGroupDelete, TTL
 * ---------------------------------------------------------------------------------- */

static bool cluster__nap_same_shape(const group_spec_t *a, const group_spec_t *b) {
    return strcmp(a->machine_type, b->machine_type) == 0 &&
           strcmp(a->zone != NULL ? a->zone : "", b->zone != NULL ? b->zone : "") == 0 &&
           kv_list_equal(&a->labels, &b->labels) && taint_list_equal(&a->taints, &b->taints) &&
           kv_list_equal(&a->extra_resources, &b->extra_resources);
}

/* A new theoretical autoprovisioned group of shape spec (deep-copied); NULL when out of
 * memory. */
static group_t *cluster__nap_group_new(const group_spec_t *spec) {
    group_t *g = NULL;
    if (group_new(spec, &g) != 0)
        return NULL;
    g->min_size = 0;
    g->max_size = AUTOPROV_GROUP_MAX_SIZE;
    g->managed = true;
    g->autoprovisioned = true;
    g->exists = false;
    return g;
}

int cluster__nap_add_theoretical(const frugal_config_t *cfg, gvec_t *v, frugal_err_t *err) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled)
        return 0;
    size_t n = autoprov_offered_count(ap);
    for (size_t k = 0; k < n; k++) {
        group_spec_t spec;
        memset(&spec, 0, sizeof(spec));
        const char *type, *zone;
        const kv_list_t *labels;
        autoprov_offered_shape(ap, k, &type, &zone, &labels);
        spec.machine_type = (char *)type; /* borrowed: group_new copies the spec */
        spec.zone = (char *)zone;
        spec.labels = *labels;
        spec.spot_price = -1;
        int rc = autoprov_group_id(ap->prefix, spec.machine_type, spec.zone, &spec.labels, NULL,
                                   NULL, &spec.id, err);
        if (rc != 0)
            return rc;
        bool known = false;
        for (size_t i = 0; i < v->count && !known; i++)
            known = strcmp(v->items[i]->spec.id, spec.id) == 0;
        group_t *g = known ? NULL : cluster__nap_group_new(&spec);
        free(spec.id);
        if (known)
            continue;
        /* "loaded": its size is not a configured initial size. */
        if (g == NULL || cluster__gvec_push(v, g, true) != 0) {
            group_free(g);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        }
    }
    return 0;
}

void cluster__nap_expire(cluster_t *c, group_t **g, int64_t now, bool *changed, bool *removed) {
    const autoprov_config_t *ap = &c->cfg->autoprovisioning;
    group_t *next = *g;
    if (!ap->enabled || !next->autoprovisioned || next->empty_since_ms == 0 ||
        now - next->empty_since_ms < ap->empty_group_ttl_ms)
        return;
    bool configured = cluster_nap_configured_shape(c->cfg, &next->spec);
    if (!next->exists && configured)
        return;
    if (cluster__provider_busy(c, next)) {
        log_debug("autoprovisioned node group %s is empty but its machine hooks still run: "
                  "not deleted yet",
                  next->spec.id);
        return;
    }
    if (next->exists) {
        frugal_err_t perr = {0};
        if (provider_delete_group(c->provider, next, &perr) != 0) {
            log_warn("deleting empty autoprovisioned node group %s failed: %s", next->spec.id,
                     perr.msg);
            return;
        }
        log_info("autoprovisioned node group %s empty for %" PRId64 " ms: deleted%s", next->spec.id,
                 now - next->empty_since_ms, configured ? ", theoretical again" : "");
    } else {
        log_info("node group %s from NewNodeGroup never created in %" PRId64 " ms: forgotten",
                 next->spec.id, now - next->empty_since_ms);
    }
    if (configured) {
        next->exists = false;
        next->empty_since_ms = now;
        *changed = true;
        return;
    }
    group_free(next);
    *g = NULL;
    *removed = true;
}

int32_t cluster_nap_theoretical_groups(const cluster_t *c) {
    int32_t count = 0;
    size_t n = cluster_groups_count(c);
    for (size_t i = 0; i < n; i++) {
        const group_t *g = cluster_group_at(c, i);
        count +=
            g->autoprovisioned && !g->exists && !cluster_nap_configured_shape(c->cfg, &g->spec);
    }
    return count;
}

/* NewNodeGroup may add one more theoretical group: max_theoretical_groups bounds those
 * not yet created (each is listed to CA and walked by every mutation). */
static int cluster__nap_check_theoretical(const cluster_t *c, const char *id, frugal_err_t *err) {
    const autoprov_config_t *ap = &c->cfg->autoprovisioning;
    int32_t count = cluster_nap_theoretical_groups(c);
    if (count < ap->max_theoretical_groups)
        return 0;
    char ttl[32];
    return frugal_err_set(err, FRUGAL_EEXHAUSTED,
                          "cannot add node group %s: autoprovisioning.max_theoretical_groups %d "
                          "reached (%d groups from NewNodeGroup not created yet; unused ones are "
                          "forgotten after empty_group_ttl %s)",
                          id, (int)ap->max_theoretical_groups, (int)count,
                          duration_format(ap->empty_group_ttl_ms * 1000000, ttl, sizeof(ttl)));
}

int cluster_nap_new_group(cluster_t *c, const group_spec_t *spec, bool *added, frugal_err_t *err) {
    *added = false;
    if (!c->cfg->autoprovisioning.enabled)
        return frugal_err_set(err, FRUGAL_EPRECOND, "autoprovisioning is disabled");
    pthread_mutex_lock(&c->write_mu);
    int rc = 0;
    const group_t *g = cluster_find_group(c, spec->id);
    if (g != NULL) {
        if (!g->autoprovisioned || !cluster__nap_same_shape(&g->spec, spec))
            rc = frugal_err_set(err, FRUGAL_EEXISTS,
                                "node group %s exists already with another shape", spec->id);
        goto out;
    }
    if ((rc = cluster__nap_check_theoretical(c, spec->id, err)) != 0)
        goto out;
    group_t *next = cluster__nap_group_new(spec);
    if (next == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    /* Never created within empty_group_ttl, it is forgotten again. */
    next->empty_since_ms = cluster_now_ms();
    change_t ch = {CLUSTER_APPEND, next, NULL};
    if ((rc = cluster__commit(c, NULL, &ch, 1, err)) == 0) {
        *added = true;
        log_info("NewNodeGroup group=%s machine_type=%s: theoretical group added", spec->id,
                 spec->machine_type);
    }
out:
    pthread_mutex_unlock(&c->write_mu);
    return rc;
}

static int cluster__nap_create_locked(cluster_t *c, const cluster_ctx_t *ctx, const char *id,
                                      frugal_err_t *err) {
    const group_t *g = cluster_find_group(c, id);
    if (g == NULL)
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", id);
    if (!g->autoprovisioned)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is configured, not autoprovisioned: nothing to create",
                              id);
    if (g->exists)
        return frugal_err_set(err, FRUGAL_EEXISTS, "node group %s exists already", id);
    int rc = cluster__nap_check_increase(c, g, 0, err);
    if (rc != 0)
        return rc;
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        return rc;
    if ((rc = provider_create_group(c->provider, next, err)) != 0) {
        group_free(next);
        return rc;
    }
    next->exists = true;
    next->empty_since_ms = 0;
    cluster__update_empty(next, cluster_now_ms());
    return cluster__replace(c, ctx, g, next, err);
}

static int cluster__nap_create_run(cluster_t *c, const cluster_ctx_t *ctx, const void *id,
                                   frugal_err_t *err) {
    return cluster__nap_create_locked(c, ctx, id, err);
}

int cluster_nap_create_group(cluster_t *c, const cluster_call_t *call, const char *id,
                             frugal_err_t *err) {
    return cluster__mutate(c, call, "NodeGroupCreate", id, 0, cluster__nap_create_run, id, err);
}

static int cluster__nap_delete_locked(cluster_t *c, const cluster_ctx_t *ctx, const char *id,
                                      frugal_err_t *err) {
    const group_t *g = cluster_find_group(c, id);
    if (g == NULL)
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", id);
    if (!g->autoprovisioned)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is configured, not autoprovisioned: cannot delete it",
                              id);
    bool configured = cluster_nap_configured_shape(c->cfg, &g->spec);
    if (!g->exists && configured)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is a theoretical group of the config: it does not "
                              "exist, nothing to delete",
                              id);
    if (g->target_size > 0 || g->instances_count > 0)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is not empty (target %d, %zu instances)", id,
                              (int)g->target_size, g->instances_count);
    if (cluster__provider_busy(c, g))
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is not empty: machine hooks of it still run", id);
    group_t *next = NULL;
    int rc = group_dup(g, &next, err);
    if (rc != 0)
        return rc;
    if (next->exists && (rc = provider_delete_group(c->provider, next, err)) != 0) {
        group_free(next);
        return rc;
    }
    if (configured) {
        next->exists = false;
        next->empty_since_ms = cluster_now_ms();
        return cluster__replace(c, ctx, g, next, err);
    }
    group_free(next);
    change_t ch = {cluster__index_of(c, g), NULL, NULL};
    return cluster__commit(c, ctx, &ch, 1, err);
}

static int cluster__nap_delete_run(cluster_t *c, const cluster_ctx_t *ctx, const void *id,
                                   frugal_err_t *err) {
    return cluster__nap_delete_locked(c, ctx, id, err);
}

int cluster_nap_delete_group(cluster_t *c, const cluster_call_t *call, const char *id,
                             frugal_err_t *err) {
    return cluster__mutate(c, call, "NodeGroupDelete", id, 0, cluster__nap_delete_run, id, err);
}
