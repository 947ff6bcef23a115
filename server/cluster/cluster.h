/* The cluster: every node group's target size and instances, the single source of
 * truth the CloudProvider handlers read and mutate. The groups and instances themselves
 * are the data model of group.h.
 *
 * Concurrency: readers bracket their use of any group_t/instance_t pointer with
 * cluster_read_lock/cluster_read_unlock (many readers at once). Mutations take the
 * write lock themselves, so concurrent mutations are serialised and no interleaving can
 * exceed max_size or go under min_size.
 *
 * Durability: with a state file, a mutation is validated, applied to a copy, written
 * (temp file, fsync, rename, fsync of the directory) and only then made visible; on any
 * error nothing changed. */
#ifndef FRUGAL_CLUSTER_H
#define FRUGAL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"
#include "group.h"

typedef struct cluster cluster_t;
struct provider;

/* Build the cluster from cfg (which must outlive it) and the provider, then resume from
 * cfg->state_file when it exists: groups absent from the config are reported and
 * dropped, sizes outside [min, max] are clamped with a warning. */
int cluster_open(const frugal_config_t *cfg, struct provider *provider, cluster_t **out,
                 frugal_err_t *err);

/* Whether the cluster may open: a configured state file that does not exist is refused
 * (FRUGAL_EPRECOND, naming what to check and how to initialise) unless init, so that a
 * volume that failed to mount never starts a fresh cluster by accident. 0 without a
 * state file or when it exists. */
int cluster_check_state_present(const frugal_config_t *cfg, bool init, frugal_err_t *err);

/* Persist (when a state file is configured) and free everything. */
void cluster_close(cluster_t *c);

const frugal_config_t *cluster_config(const cluster_t *c);

/* The lock prefers writers: never take the read lock twice in one thread (a waiting
 * mutation would deadlock it). */
void cluster_read_lock(cluster_t *c);
void cluster_read_unlock(cluster_t *c);

/* --- reads: call with the read lock held; pointers valid until it is released --- */
size_t cluster_groups_count(const cluster_t *c);
const group_t *cluster_group_at(const cluster_t *c, size_t i);
/* O(1). NULL when absent. */
const group_t *cluster_find_group(const cluster_t *c, const char *id);
/* O(1) lookup of an instance by provider id; NULL when no group has it. */
const group_t *cluster_find_instance(const cluster_t *c, const char *provider_id,
                                     const instance_t **instance);
/* Cluster size for the ranking: sum of every group's target size, unmanaged included. */
int64_t cluster_node_count(const cluster_t *c);

/* --- mutations: serialised, validated, durable before they return 0 --- */

/* IncreaseSize: delta > 0 (else EINVAL), target + delta <= max_size (else EPRECOND),
 * unknown id ENOTFOUND, unmanaged group EPRECOND. */
int cluster_increase_size(cluster_t *c, const char *id, int32_t delta, frugal_err_t *err);

/* DecreaseTargetSize: delta < 0 (else EINVAL); drops only not-yet-running (creating)
 * instances, newest first: target + delta must stay >= the running instances (else
 * EPRECOND) and >= min_size (else EPRECOND). */
int cluster_decrease_target_size(cluster_t *c, const char *id, int32_t delta, frugal_err_t *err);

/* DeleteNodes: every provider id must be an instance of the group (else EINVAL naming
 * it), target - n >= min_size (else EPRECOND). The instances become deleting and the
 * target drops by n. */
int cluster_delete_nodes(cluster_t *c, const char *id, const char *const *provider_ids, size_t n,
                         frugal_err_t *err);

/* Advance instance states through the provider (creating -> running after boot,
 * deleting -> gone); persists when anything changed. Called by Refresh and by the
 * maintenance tick. */
int cluster_refresh(cluster_t *c, frugal_err_t *err);

/* Write the state file now (no-op without one). */
int cluster_persist(cluster_t *c, frugal_err_t *err);

/* Wall clock in ms since the epoch, as every cluster and provider timestamp uses it.
 * Tests replace it with cluster_set_clock_for_testing (NULL restores the wall clock);
 * set it before any thread uses the cluster. */
int64_t cluster_now_ms(void);
void cluster_set_clock_for_testing(int64_t (*now_ms)(void));

#endif
