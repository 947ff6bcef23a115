/* Node auto-provisioning on the cluster (docs/autoprovisioning.md): the cluster-wide
 * cpu/memory limits as they apply to the live groups, and the lifecycle of
 * autoprovisioned groups (theoretical -> created -> empty for empty_group_ttl ->
 * deleted). The limit steps of IncreaseSize and DeleteNodes are the cluster's own
 * (private/cluster_internal.h). Built on the commit engine alone (cluster.c).
 *
 * Reads (cluster_nap_totals, cluster_nap_sizes, cluster_nap_existing_groups) are
 * pure functions of the published groups: call them with the cluster's read lock held.
 * Mutations follow cluster.h's discipline: serialised, validated, durable before they
 * return 0, nothing changed on failure. All of this is inert unless
 * autoprovisioning.enabled, except that the totals can always be computed. */
#ifndef FRUGAL_CLUSTER_NAP_H
#define FRUGAL_CLUSTER_NAP_H

#include <stdbool.h>
#include <stdint.h>

#include "autoprov.h"
#include "cluster.h"

/* Capacity of one node of g (its machine type plus its cpu/memory extra resources).
 * FRUGAL_ENOTFOUND when the machine type is not in the catalog. */
int cluster_nap_node_capacity(const frugal_config_t *cfg, const group_t *g, resources_t *out);

/* Totals over every group, managed, unmanaged and autoprovisioned: target size x node
 * capacity. Read lock held. */
void cluster_nap_totals(const cluster_t *c, autoprov_totals_t *out);

/* The cluster-wide figures the advertised sizes depend on, taken once for a pass over
 * every group (NodeGroups, a scrape), so that the pass stays O(groups). */
typedef struct {
    autoprov_totals_t totals; /* as cluster_nap_totals */
    int32_t existing_groups;  /* as cluster_nap_existing_groups */
} cluster_nap_survey_t;

/* Fills out; all zero when autoprovisioning is disabled, the totals zero when no
 * cluster-wide limit is set. Read lock held. */
void cluster_nap_survey(const cluster_t *c, cluster_nap_survey_t *out);

/* The minSize and maxSize advertised to CA for g: its min_size raised to what the
 * cluster-wide minimums still allow (autoprov_min_size), so that CA does not drain a
 * node whose DeleteNodes would be refused, and its max_size as cluster_nap_max_size.
 * survey is the cluster's, taken under the same read lock. */
void cluster_nap_sizes(const cluster_t *c, const cluster_nap_survey_t *survey, const group_t *g,
                       int32_t *min, int32_t *max);

/* The maxSize advertised to CA for g: its max_size cut by what the cluster-wide limits
 * still allow (never below its target), and its target for a theoretical group once
 * max_node_groups groups exist. Just g->max_size without autoprovisioning. Read lock
 * held. */
int32_t cluster_nap_max_size(const cluster_t *c, const group_t *g);

/* How many autoprovisioned groups exist (were created). Read lock held. */
int32_t cluster_nap_existing_groups(const cluster_t *c);

/* How many theoretical autoprovisioned groups NewNodeGroup added (not created yet, not
 * a shape the config offers). Read lock held, or write_mu. */
int32_t cluster_nap_theoretical_groups(const cluster_t *c);

/* NewNodeGroup: make spec (whose id the caller set, see autoprov_group_id) a theoretical
 * autoprovisioned group, listed from now on and persisted. When a group with that id
 * exists already and has the same shape, nothing changes (*added false); with another
 * shape FRUGAL_EEXISTS. FRUGAL_EPRECOND when autoprovisioning is disabled;
 * FRUGAL_EEXHAUSTED (naming the limit) when max_theoretical_groups such groups exist. */
int cluster_nap_new_group(cluster_t *c, const group_spec_t *spec, bool *added, frugal_err_t *err);

/* NodeGroupCreate: create the theoretical autoprovisioned group id through the provider
 * (max_node_groups applies: FRUGAL_EEXHAUSTED). ENOTFOUND, EPRECOND when it is not
 * autoprovisioned, EEXISTS when it exists already. */
int cluster_nap_create_group(cluster_t *c, const cluster_call_t *call, const char *id,
                             frugal_err_t *err);

/* NodeGroupDelete: delete the autoprovisioned, empty group id through the provider; it
 * becomes theoretical again when the config offers its shape, else it disappears. A
 * theoretical group made by NewNodeGroup is simply forgotten. ENOTFOUND; EPRECOND when it
 * is not autoprovisioned, not empty, or a theoretical group of the config. */
int cluster_nap_delete_group(cluster_t *c, const cluster_call_t *call, const char *id,
                             frugal_err_t *err);

/* Whether spec is the shape of a theoretical group the config offers (its id is one of
 * machine types x zones x label sets). */
bool cluster_nap_configured_shape(const frugal_config_t *cfg, const group_spec_t *spec);

#endif
