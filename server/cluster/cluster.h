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

/* Every mutation a call asks for (and CA's Refresh) is answered within this many ms of
 * the call's start: its wait for earlier mutations, the store's commits and the retries
 * after another replica's commit all fit in it, below CA's 5 s call timeout. Past it
 * the answer is FRUGAL_EUNAVAIL. */
#define CLUSTER_MUTATION_BUDGET_MS 3500

/* The call a mutation (or Refresh) serves, passed by the handler down to the commit: it
 * must be answered by deadline_ms (CLOCK_MONOTONIC ms; 0: no budget). The rpc layer
 * sets it from the call (CLUSTER_MUTATION_BUDGET_MS from its start, sooner when its own
 * deadline is). A NULL call (the maintenance tick, tests, tools) waits as long as the
 * store takes. */
typedef struct cluster_call {
    int64_t deadline_ms;
    bool callers_deadline; /* deadline_ms comes from the caller's deadline, not the budget */
    const char *method;    /* for the mutation's log line: the gRPC method path, or NULL */
    const char *peer;      /* and the client certificate's CN, or NULL */
} cluster_call_t;

typedef struct cluster cluster_t;
struct provider;

/* Build the cluster from cfg (it holds a reference until cluster_close) and the provider, then
 * resume from the state kept by state (a state_backend_t of state_backend.h, built by the
 * store layer; NULL: in memory only) when it holds any: groups absent from the config are
 * reported and dropped, sizes outside [min, max] are clamped with a warning. The caller
 * keeps state and destroys it after cluster_close. */
struct state_backend;
int cluster_open(const frugal_config_t *cfg, struct provider *provider, struct state_backend *state,
                 cluster_t **out, frugal_err_t *err);

/* The backend the cluster was opened with (NULL: in memory). */
struct state_backend *cluster_state(const cluster_t *c);

/* Persist (when a backend keeps the state) and free everything but the backend. */
void cluster_close(cluster_t *c);

/* Append the node groups' gauges (frugal_node_group_{target,min,max}_size,
 * frugal_instances, frugal_node_price_per_hour) in the Prometheus text format. Takes
 * the read lock. */
struct strbuf; /* metrics_buf_t (metrics.h) */
void cluster_metrics_write(cluster_t *c, struct strbuf *b);

/* The current config; stable while the caller holds the read lock (or is a mutation). */
const frugal_config_t *cluster_config(const cluster_t *c);

/* The current config with a reference the caller drops with config_release: a reload
 * may replace the cluster's config meanwhile, this one stays whole. */
const frugal_config_t *cluster_config_acquire(cluster_t *c);

/* Apply a new config (validated by config_load) to the running cluster in one commit:
 * prices, catalog, ranking, autoprovisioning settings (theoretical groups of newly allowed
 * shapes are added; autoprovisioned groups stay), group bounds, specs (labels,
 * taints, machine type, zone, spot) and options of configured groups; new groups start
 * at their initial size; groups absent from next are removed when empty. Refused, with
 * nothing changed, when next changes a key that needs a restart (listeners,
 * allow_insecure, max_message_bytes, state_file, provider), removes a group that still
 * has nodes, changes a group's managed flag, or puts a group's target size outside its
 * new bounds: FRUGAL_EPRECOND naming it. A commit that another replica beat is applied
 * again on the state it wrote (FRUGAL_EABORTED after a few). On 0 the cluster holds a
 * reference to next (the caller keeps its own) and has dropped its reference to the old
 * config. */
int cluster_reload(cluster_t *c, const frugal_config_t *next, frugal_err_t *err);

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

/* --- mutations: serialised, validated, durable before they return 0; each within
 * call's budget (NULL: none) --- */

/* IncreaseSize: delta > 0 (else EINVAL), target + delta <= max_size (else EPRECOND),
 * unknown id ENOTFOUND, unmanaged group EPRECOND. */
int cluster_increase_size(cluster_t *c, const cluster_call_t *call, const char *id, int32_t delta,
                          frugal_err_t *err);

/* DecreaseTargetSize: delta < 0 (else EINVAL); drops only not-yet-running (creating)
 * instances, newest first: target + delta must stay >= the running instances (else
 * EPRECOND) and >= min_size (else EPRECOND). */
int cluster_decrease_target_size(cluster_t *c, const cluster_call_t *call, const char *id,
                                 int32_t delta, frugal_err_t *err);

/* DeleteNodes: every provider id must be an instance of the group (else EINVAL naming
 * it), target - n >= min_size (else EPRECOND). The instances become deleting and the
 * target drops by n. */
int cluster_delete_nodes(cluster_t *c, const cluster_call_t *call, const char *id,
                         const char *const *provider_ids, size_t n, frugal_err_t *err);

/* Advance instance states through the provider (creating -> running after boot,
 * deleting -> gone); persists when anything changed. Called by Refresh and by the
 * maintenance tick. */
int cluster_refresh(cluster_t *c, const cluster_call_t *call, frugal_err_t *err);

/* cluster_refresh for a periodic tick: skipped (0, nothing done) while a change holds
 * the cluster (a hook may hold it for seconds), so the caller, serve's signal loop,
 * never waits behind it; the next tick refreshes. */
int cluster_refresh_when_idle(cluster_t *c, frugal_err_t *err);

/* Store the whole state now (no-op in memory). */
int cluster_persist(cluster_t *c, frugal_err_t *err);

/* Wall clock in ms since the epoch, as every cluster and provider timestamp uses it
 * (tests replace it: server/cluster/testing/cluster_testing.h). */
int64_t cluster_now_ms(void);

#endif
