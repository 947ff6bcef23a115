/* The cluster's internals, shared by the files that implement it and by no one else
 * (a PRIVATE include directory of frugal_cluster): cluster.c (the commit engine),
 * cluster_mutate.c (the mutations), cluster_nap.c (node auto-provisioning) and
 * cluster_open.c (open, close, reload). Calls go one way only: everything into the
 * engine, the mutations and open into the NAP steps, open into cluster__remote; the
 * engine calls none of them. Everything here assumes the caller holds write_mu, or
 * runs before the cluster is shared. */
#ifndef FRUGAL_CLUSTER_INTERNAL_H
#define FRUGAL_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "group.h"
#include "provider.h"
#include "state_backend.h"
#include "strmap.h"

/* What the provider-id index points at. */
typedef struct iref {
    const group_t *g;
    const instance_t *inst;
} iref_t;

struct cluster {
    const frugal_config_t *cfg;
    provider_t *provider;
    state_backend_t *state; /* NULL: in memory only */
    pthread_rwlock_t lock;
    pthread_mutex_t write_mu;
    group_t **groups; /* config order, then autoprovisioned groups */
    iref_t **refs;    /* refs[i]: one per instance of groups[i] */
    size_t count;
    size_t cap;
    strmap_t *by_id;       /* group id -> group_t * */
    strmap_t *by_instance; /* provider id -> iref_t * */
    int64_t node_count;    /* sum of target sizes */
};

/* A pending change of the group list: replace groups[index] by next, remove it (next
 * NULL), or append next (index CLUSTER_APPEND). */
#define CLUSTER_APPEND SIZE_MAX

typedef struct change {
    size_t index;
    group_t *next;
    iref_t *refs;
} change_t;

/* The groups being built by cluster_open, before they are published. */
typedef struct gvec {
    group_t **items;
    bool *loaded; /* taken from the state file (else: configured initial size) */
    size_t count;
    size_t cap;
} gvec_t;

/* How a commit came about, passed from the mutation down to the backend's commit
 * (NULL: none of these, no budget: open, persist; a reload passes its next_cfg). */
typedef struct cluster_ctx {
    int64_t deadline_ms;             /* the call's budget ends then (CLOCK_MONOTONIC ms; 0: none) */
    bool remote;                     /* publishing another replica's commit: nothing to store */
    bool provider_work;              /* the leader's provider work (Refresh): fenced by its lease */
    bool restore;                    /* writing back a group whose stored key was deleted by hand */
    const frugal_config_t *next_cfg; /* a reload's: published with the groups */
} cluster_ctx_t;

/* ---- implemented in cluster.c: the commit engine ---- */

/* Index of the published group g, CLUSTER_APPEND when it is not published. */
size_t cluster__index_of(const cluster_t *c, const group_t *g);

/* The provider's second phase: start the machine work its slots staged once the state
 * that implies it is durable (a follower of a shared store drops it: the leader does
 * it). Every path that called a slot ends in this, cluster__staged_abort or
 * cluster__commit (which calls one of them itself). */
void cluster__staged_commit(cluster_t *c);

/* Drop the machine work the provider's slots staged (the change will not be
 * published). Every path that called a slot ends in this or in cluster__commit. */
void cluster__staged_abort(cluster_t *c);

/* Whether the provider still has machine work for g: it is then not empty. */
bool cluster__provider_busy(cluster_t *c, const group_t *g);

/* Apply changes: write the state file as it will be, then publish. Consumes every
 * changes[].next whatever the outcome, and ends the provider's staged work: committed
 * right after the write, aborted on failure (nothing changed). */
int cluster__commit(cluster_t *c, const cluster_ctx_t *ctx, change_t *changes, size_t n,
                    frugal_err_t *err);

/* cluster__commit of one change: the published group old becomes next (consumed). */
int cluster__replace(cluster_t *c, const cluster_ctx_t *ctx, const group_t *old, group_t *next,
                     frugal_err_t *err);

/* Take write_mu for a mutation that must be answered by call's deadline_ms (monotonic;
 * a NULL call or 0: wait as long as it takes), with some time left to do its work;
 * nothing changed otherwise: FRUGAL_EDEADLINE when the caller's own deadline leaves too
 * little time, else FRUGAL_EUNAVAIL (frugal's budget ran out waiting). */
int cluster__lock_until(cluster_t *c, const cluster_call_t *call, frugal_err_t *err);

/* How many times a write that another replica beat is tried again. */
#define CLUSTER_COMMIT_ATTEMPTS 4

/* After a failed attempt (rc): whether to run it again. Only when another replica
 * committed first (FRUGAL_EABORTED), at most CLUSTER_COMMIT_ATTEMPTS times, within
 * deadline_ms (0: none), and once the backend delivered that commit to the cache.
 * *attempt counts. */
bool cluster__retry(cluster_t *c, int rc, int *attempt, int64_t deadline_ms);

/* One mutation as every public one runs: locked(c, ctx, args, err) under write_mu
 * within call's budget (NULL: none), run again (on the cache that now holds the other
 * replica's change) when another replica committed first (FRUGAL_EABORTED), at most a
 * few times; then the info line naming method, id and delta. err may be NULL: the line
 * still names the reason. ctx carries the call's deadline to the commit. */
typedef int (*cluster_locked_fn)(cluster_t *c, const cluster_ctx_t *ctx, const void *args,
                                 frugal_err_t *err);
int cluster__mutate(cluster_t *c, const cluster_call_t *call, const char *method, const char *id,
                    long delta, cluster_locked_fn locked, const void *args, frugal_err_t *err);

/* Take target, instances and bookkeeping from a stored record of g (from is emptied of
 * its instances). */
void cluster__adopt(group_t *g, group_t *from);

/* NAP bookkeeping: remember when g became empty (nothing requested, no instance left),
 * 0 while it is not. */
void cluster__update_empty(group_t *g, int64_t now);

/* Append g (owned from now on) to v. 0 or FRUGAL_ENOMEM (g not taken). */
int cluster__gvec_push(gvec_t *v, group_t *g, bool loaded);

/* Free v's groups and arrays; v is empty after. */
void cluster__gvec_free(gvec_t *v);

/* ---- implemented in cluster_mutate.c ---- */

/* The backend's watch callback (state_watch_fn, arg the cluster): publish the group id as
 * another replica stored it (sg NULL: removed). */
void cluster__remote(void *arg, const char *id, const group_t *sg);

/* ---- implemented in cluster_nap.c: the NAP steps of the mutations and of open ---- */

/* The limits step of IncreaseSize, on the published groups: g may grow by delta
 * without crossing a max limit and, when g is theoretical, one more group may exist.
 * FRUGAL_EEXHAUSTED naming the limit; always 0 without autoprovisioning. */
int cluster__nap_check_increase(const cluster_t *c, const group_t *g, int32_t delta,
                                frugal_err_t *err);

/* The limits step of DeleteNodes: removing n nodes of g keeps the cluster at or above
 * the min limits. FRUGAL_EPRECOND naming the limit. */
int cluster__nap_check_delete(const cluster_t *c, const group_t *g, int32_t n, frugal_err_t *err);

/* At open: one theoretical group per allowed machine type x zone x label set pushed to
 * v, unless v holds it already (brought back by the state file). */
int cluster__nap_add_theoretical(const frugal_config_t *cfg, gvec_t *v, frugal_err_t *err);

/* Why the theoretical autoprovisioned group g, holding nothing, is dropped under cfg (at
 * a start or a reload), NULL when it stays: its machine type is no longer allowed, or its
 * id has another prefix (the prefix changed; the config offers the shape under the new
 * one). */
const char *cluster__nap_stale(const frugal_config_t *cfg, const group_t *g);

/* The TTL step of refresh, on the private copy *g: an autoprovisioned group empty for
 * empty_group_ttl is deleted through the provider and becomes theoretical again when
 * the config offers its shape (*changed); otherwise it is removed (*removed, *g freed
 * and NULL). A theoretical group made by NewNodeGroup and never created is forgotten
 * the same way. When the provider refuses, that is logged and the group stays (retried
 * next tick). */
void cluster__nap_expire(cluster_t *c, group_t **g, int64_t now, bool *changed, bool *removed);

#endif
