/* The cluster: groups, instances, their indexes, and the copy-validate-persist-swap
 * discipline that makes every mutation durable and all-or-nothing.
 *
 * Two locks: write_mu serialises mutators for their whole duration (validation,
 * provider call on a private copy, state file write), while the rwlock is taken for
 * writing only for the short pointer swap that publishes the result. Readers therefore
 * never wait for an fsync, and a published group_t is immutable until it is replaced
 * and freed under the write lock. Mutators read the published groups under write_mu
 * alone: nobody else can change them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np: writer preference on glibc */
#endif
#include "cluster_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "state.h"

/* ------------------------------------------------------------------------------------
 * Clock
 * ---------------------------------------------------------------------------------- */

static int64_t (*cluster_clock)(void);

void cluster_set_clock_for_testing(int64_t (*now_ms)(void)) {
    cluster_clock = now_ms;
}

int64_t cluster_now_ms(void) {
    if (cluster_clock != NULL)
        return cluster_clock();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic clock in ms, for durations in log lines. */
static double cluster__mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------------------------
 * Reads
 * ---------------------------------------------------------------------------------- */

const frugal_config_t *cluster_config(const cluster_t *c) {
    return c->cfg;
}

struct state_backend *cluster_state(const cluster_t *c) {
    return c->state;
}

const frugal_config_t *cluster_config_acquire(cluster_t *c) {
    pthread_rwlock_rdlock(&c->lock);
    const frugal_config_t *cfg = c->cfg;
    config_retain(cfg);
    pthread_rwlock_unlock(&c->lock);
    return cfg;
}

void cluster_read_lock(cluster_t *c) {
    pthread_rwlock_rdlock(&c->lock);
}

void cluster_read_unlock(cluster_t *c) {
    pthread_rwlock_unlock(&c->lock);
}

size_t cluster_groups_count(const cluster_t *c) {
    return c->count;
}

const group_t *cluster_group_at(const cluster_t *c, size_t i) {
    return i < c->count ? c->groups[i] : NULL;
}

const group_t *cluster_find_group(const cluster_t *c, const char *id) {
    return id != NULL ? strmap_get(c->by_id, id) : NULL;
}

const group_t *cluster_find_instance(const cluster_t *c, const char *provider_id,
                                     const instance_t **instance) {
    const iref_t *r = provider_id != NULL ? strmap_get(c->by_instance, provider_id) : NULL;
    if (instance != NULL)
        *instance = r != NULL ? r->inst : NULL;
    return r != NULL ? r->g : NULL;
}

int64_t cluster_node_count(const cluster_t *c) {
    return c->node_count;
}

/* ------------------------------------------------------------------------------------
 * Commit: prepare (may fail), persist (may fail), publish (cannot fail)
 * ---------------------------------------------------------------------------------- */

size_t cluster__index_of(const cluster_t *c, const group_t *g) {
    for (size_t i = 0; i < c->count; i++) {
        if (c->groups[i] == g)
            return i;
    }
    return CLUSTER_APPEND;
}

static iref_t *cluster__refs_build(const group_t *g) {
    iref_t *refs = malloc((g->instances_count > 0 ? g->instances_count : 1) * sizeof(*refs));
    if (refs == NULL)
        return NULL;
    for (size_t i = 0; i < g->instances_count; i++) {
        refs[i].g = g;
        refs[i].inst = &g->instances[i];
    }
    return refs;
}

/* The provider's second phase: start the machine work its slots staged once the state
 * that implies it is durable, or drop it. Every path that called a slot ends in exactly
 * one of the two (cluster__commit calls them itself). */
static void cluster__staged_commit(cluster_t *c) {
    /* With a shared store the machine work belongs to the leader: a follower drops what
     * its slots staged, and the leader's refresh queues it from the stored instances
     * (creating or deleting without a job), as after a restart. */
    if (!state_backend_leader(c->state)) {
        cluster__staged_abort(c);
        return;
    }
    if (c->provider->ops->commit_staged != NULL)
        c->provider->ops->commit_staged(c->provider);
}

static void cluster__fence(void *provider, int64_t until_ms) {
    provider_t *p = provider;
    p->ops->fence(p, until_ms);
}

void cluster__staged_abort(cluster_t *c) {
    if (c->provider->ops->abort_staged != NULL)
        c->provider->ops->abort_staged(c->provider);
}

bool cluster__provider_busy(cluster_t *c, const group_t *g) {
    return c->provider->ops->busy != NULL && c->provider->ops->busy(c->provider, g);
}

/* Store the state as it will be once changes are applied (the backend's commit). */
static int cluster__persist_view(cluster_t *c, const change_t *changes, size_t n,
                                 frugal_err_t *err) {
    if (c->state == NULL || c->remote)
        return 0;
    const group_t **view = malloc((c->count + n + 1) * sizeof(*view));
    const group_t **changed = malloc((n + 1) * sizeof(*changed));
    const char **removed = malloc((n + 1) * sizeof(*removed));
    if (view == NULL || changed == NULL || removed == NULL) {
        free(view);
        free(changed);
        free(removed);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory writing the state");
    }
    state_commit_t sc = {.view = view,
                         .changed = changed,
                         .removed = (const char *const *)removed,
                         .provider_work = c->provider_work,
                         .whole_view = c->cfg->autoprovisioning.enabled,
                         .deadline_ms = c->deadline_ms};
    for (size_t i = 0; i < c->count; i++) {
        const group_t *g = c->groups[i];
        for (size_t j = 0; j < n; j++) {
            if (changes[j].index == i)
                g = changes[j].next;
        }
        if (g != NULL)
            view[sc.count++] = g;
    }
    for (size_t j = 0; j < n; j++) {
        if (changes[j].index == CLUSTER_APPEND)
            view[sc.count++] = changes[j].next;
        if (changes[j].next != NULL)
            changed[sc.changed_count++] = changes[j].next;
        else if (changes[j].index != CLUSTER_APPEND)
            removed[sc.removed_count++] = c->groups[changes[j].index]->spec.id;
    }
    int rc = state_backend_commit(c->state, &sc, err);
    free(view);
    free(changed);
    free(removed);
    return rc;
}

/* A backstop against a provider bug: two instances of one group with the same id would
 * corrupt the index and make the state file unreadable at the next start. */
static int cluster__check_unique_ids(const group_t *g, frugal_err_t *err) {
    strmap_t *seen = NULL;
    if (strmap_create(g->instances_count, &seen) != 0)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < g->instances_count && rc == 0; i++) {
        void *old = NULL;
        if (strmap_put(seen, g->instances[i].id, (void *)&g->instances[i], &old) != 0)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        else if (old != NULL)
            rc = frugal_err_set(err, FRUGAL_EINTERNAL,
                                "node group %s: the provider gave two instances the id %s; "
                                "change refused",
                                g->spec.id, g->instances[i].id);
    }
    strmap_destroy(seen);
    return rc;
}

int cluster__commit(cluster_t *c, change_t *changes, size_t n, frugal_err_t *err) {
    size_t appends = 0;
    size_t instances = strmap_count(c->by_instance);
    group_t **old_groups = NULL;
    iref_t **old_refs = NULL;
    int rc = 0;

    for (size_t j = 0; j < n; j++) {
        changes[j].refs = NULL;
        appends += changes[j].index == CLUSTER_APPEND;
    }
    for (size_t j = 0; j < n; j++) {
        if (changes[j].next == NULL)
            continue;
        if ((rc = cluster__check_unique_ids(changes[j].next, err)) != 0)
            goto fail;
        instances += changes[j].next->instances_count;
        changes[j].refs = cluster__refs_build(changes[j].next);
        if (changes[j].refs == NULL) {
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory indexing instances");
            goto fail;
        }
    }
    /* Reserve everything publishing needs so that it cannot fail after the write. */
    if (c->count + appends > c->cap) {
        size_t cap = c->cap * 2 > c->count + appends ? c->cap * 2 : c->count + appends;
        group_t **groups = realloc(c->groups, cap * sizeof(*groups));
        if (groups != NULL)
            c->groups = groups;
        iref_t **refs = groups != NULL ? realloc(c->refs, cap * sizeof(*refs)) : NULL;
        if (refs != NULL)
            c->refs = refs;
        if (groups == NULL || refs == NULL) {
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory adding node groups");
            goto fail;
        }
        c->cap = cap;
    }
    if (strmap_reserve(c->by_id, c->count + appends) != 0 ||
        strmap_reserve(c->by_instance, instances) != 0) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory growing the indexes");
        goto fail;
    }
    old_groups = calloc(n > 0 ? n : 1, sizeof(*old_groups));
    old_refs = calloc(n > 0 ? n : 1, sizeof(*old_refs));
    if (old_groups == NULL || old_refs == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = cluster__persist_view(c, changes, n, err)) != 0)
        goto fail;
    cluster__staged_commit(c);

    /* Publish: nothing below can fail. */
    pthread_rwlock_wrlock(&c->lock);
    if (c->next_cfg != NULL) /* a reload: the config changes with the groups */
        c->cfg = c->next_cfg;
    for (size_t j = 0; j < n; j++) {
        change_t *ch = &changes[j];
        if (ch->index != CLUSTER_APPEND) {
            group_t *old = c->groups[ch->index];
            for (size_t i = 0; i < old->instances_count; i++)
                strmap_remove(c->by_instance, old->instances[i].id);
            strmap_remove(c->by_id, old->spec.id);
            c->node_count -= old->target_size;
            old_groups[j] = old;
            old_refs[j] = c->refs[ch->index];
            c->groups[ch->index] = ch->next;
            c->refs[ch->index] = ch->refs;
        } else {
            c->groups[c->count] = ch->next;
            c->refs[c->count] = ch->refs;
            c->count++;
        }
        if (ch->next != NULL) {
            strmap_put(c->by_id, ch->next->spec.id, ch->next, NULL);
            for (size_t i = 0; i < ch->next->instances_count; i++)
                strmap_put(c->by_instance, ch->next->instances[i].id, &ch->refs[i], NULL);
            c->node_count += ch->next->target_size;
        }
    }
    /* Close the holes left by removed groups, keeping the order. */
    size_t w = 0;
    for (size_t i = 0; i < c->count; i++) {
        if (c->groups[i] != NULL) {
            c->groups[w] = c->groups[i];
            c->refs[w] = c->refs[i];
            w++;
        }
    }
    c->count = w;
    pthread_rwlock_unlock(&c->lock);

    for (size_t j = 0; j < n; j++) {
        group_free(old_groups[j]);
        free(old_refs[j]);
    }
    free(old_groups);
    free(old_refs);
    return 0;

fail:
    cluster__staged_abort(c);
    free(old_groups);
    free(old_refs);
    for (size_t j = 0; j < n; j++) {
        free(changes[j].refs);
        changes[j].refs = NULL;
        group_free(changes[j].next);
        changes[j].next = NULL;
    }
    return rc;
}

int cluster__replace(cluster_t *c, const group_t *old, group_t *next, frugal_err_t *err) {
    change_t ch = {cluster__index_of(c, old), next, NULL};
    if (ch.index == CLUSTER_APPEND) {
        cluster__staged_abort(c);
        group_free(next);
        return frugal_err_set(err, FRUGAL_EINTERNAL, "node group %s is not published",
                              old->spec.id);
    }
    return cluster__commit(c, &ch, 1, err);
}

void cluster__update_empty(group_t *g, int64_t now) {
    bool empty = g->target_size == 0 && g->instances_count == 0;
    if (!empty)
        g->empty_since_ms = 0;
    else if (g->empty_since_ms == 0)
        g->empty_since_ms = now;
}

/* ------------------------------------------------------------------------------------
 * Mutations
 * ---------------------------------------------------------------------------------- */

static int cluster__find_mutable(cluster_t *c, const char *id, const char *verb,
                                 const group_t **out, frugal_err_t *err) {
    const group_t *g = cluster_find_group(c, id);
    if (g == NULL)
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found",
                              id != NULL ? id : "");
    if (!g->managed)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s is not managed by frugal: cannot %s it", id, verb);
    *out = g;
    return 0;
}

static int cluster__increase_locked(cluster_t *c, const char *id, int32_t delta,
                                    frugal_err_t *err) {
    const group_t *g = NULL;
    int rc = cluster__find_mutable(c, id, "increase", &g, err);
    if (rc != 0)
        return rc;
    if (delta <= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "increase of %s: delta %d must be positive", id,
                              (int)delta);
    if ((int64_t)g->target_size + delta > g->max_size)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "increase of %s by %d would exceed max_size %d (target %d)", id,
                              (int)delta, (int)g->max_size, (int)g->target_size);
    if ((rc = cluster__nap_check_increase(c, g, delta, err)) != 0)
        return rc;

    int64_t now = cluster_now_ms();
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        return rc;
    if (!next->exists) {
        if ((rc = c->provider->ops->create_group(c->provider, next, err)) != 0)
            goto fail;
        next->exists = true;
        next->empty_since_ms = 0;
    }
    if ((rc = c->provider->ops->increase(c->provider, next, delta, now, err)) != 0)
        goto fail;
    cluster__update_empty(next, now);
    return cluster__replace(c, g, next, err);
fail:
    cluster__staged_abort(c);
    group_free(next);
    return rc;
}

/* The log line of a mutation: method, group, delta, outcome (err's message on failure)
 * and the time since t0 (cluster__mono_ms). */
static void cluster__log(const char *method, const char *id, long delta, int rc,
                         const frugal_err_t *err, double t0) {
    double ms = cluster__mono_ms() - t0;
    log_field_t fields[] = {
        LOG_STR("node_group", id != NULL ? id : ""),
        LOG_INT("delta", delta),
        LOG_STR("code", frugal_err_code_name(rc)),
        LOG_STR("message", rc != 0 && err != NULL ? err->msg : NULL),
        LOG_NUM("duration_ms", ms),
    };
    log_fields(LOG_LEVEL_INFO, fields, sizeof(fields) / sizeof(fields[0]), "%s", method);
}

/* The arguments of the size mutations, for cluster__mutate. */
typedef struct cluster__size_args {
    const char *id;
    int32_t delta;
} cluster__size_args_t;

static int cluster__increase_run(cluster_t *c, const void *args, frugal_err_t *err) {
    const cluster__size_args_t *a = args;
    return cluster__increase_locked(c, a->id, a->delta, err);
}

int cluster_increase_size(cluster_t *c, const char *id, int32_t delta, frugal_err_t *err) {
    cluster__size_args_t a = {id, delta};
    return cluster__mutate(c, "IncreaseSize", id, delta, cluster__increase_run, &a, err);
}

static int cluster__decrease_locked(cluster_t *c, const char *id, int32_t delta,
                                    frugal_err_t *err) {
    const group_t *g = NULL;
    int rc = cluster__find_mutable(c, id, "decrease", &g, err);
    if (rc != 0)
        return rc;
    if (delta >= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "decrease of %s: delta %d must be negative", id,
                              (int)delta);
    int64_t creating = 0;
    int64_t registered = 0;
    for (size_t i = 0; i < g->instances_count; i++) {
        creating += g->instances[i].state == INSTANCE_CREATING;
        registered += g->instances[i].state == INSTANCE_RUNNING;
    }
    int64_t target = (int64_t)g->target_size + delta;
    if (target < registered || -(int64_t)delta > creating)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "decrease of %s by %d would go below the %" PRId64
                              " running instances (target %d, %" PRId64 " not yet running)",
                              id, (int)delta, registered, (int)g->target_size, creating);
    if (target < g->min_size)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "decrease of %s by %d would go below min_size %d (target %d)", id,
                              (int)delta, (int)g->min_size, (int)g->target_size);

    int64_t now = cluster_now_ms();
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        return rc;
    if ((rc = c->provider->ops->decrease_target(c->provider, next, delta, err)) != 0) {
        cluster__staged_abort(c);
        group_free(next);
        return rc;
    }
    cluster__update_empty(next, now);
    return cluster__replace(c, g, next, err);
}

static int cluster__decrease_run(cluster_t *c, const void *args, frugal_err_t *err) {
    const cluster__size_args_t *a = args;
    return cluster__decrease_locked(c, a->id, a->delta, err);
}

int cluster_decrease_target_size(cluster_t *c, const char *id, int32_t delta, frugal_err_t *err) {
    cluster__size_args_t a = {id, delta};
    return cluster__mutate(c, "DecreaseTargetSize", id, delta, cluster__decrease_run, &a, err);
}

static int cluster__delete_locked(cluster_t *c, const char *id, const char *const *provider_ids,
                                  size_t n, frugal_err_t *err) {
    const group_t *g = NULL;
    int rc = cluster__find_mutable(c, id, "delete nodes of", &g, err);
    if (rc != 0)
        return rc;
    if (n == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delete from %s: no nodes given", id);
    size_t *indexes = malloc(n * sizeof(*indexes));
    if (indexes == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *pid = provider_ids[i] != NULL ? provider_ids[i] : "";
        const instance_t *inst = NULL;
        const group_t *owner = cluster_find_instance(c, pid, &inst);
        if (owner != g) {
            if (owner != NULL)
                rc =
                    frugal_err_set(err, FRUGAL_EINVAL,
                                   "node %s is not an instance of node group %s (it belongs to %s)",
                                   pid, id, owner->spec.id);
            else
                rc = frugal_err_set(err, FRUGAL_EINVAL,
                                    "node %s is not an instance of node group %s", pid, id);
            goto out;
        }
        for (size_t j = 0; j < i; j++) {
            if (provider_ids[j] != NULL && strcmp(provider_ids[j], pid) == 0) {
                rc = frugal_err_set(err, FRUGAL_EINVAL, "node %s given twice", pid);
                goto out;
            }
        }
        /* Deleting a node already being deleted is a retry: it counts once. */
        if (inst->state != INSTANCE_DELETING)
            indexes[k++] = (size_t)(inst - g->instances);
    }
    if ((int64_t)g->target_size - (int64_t)k < g->min_size) {
        rc = frugal_err_set(err, FRUGAL_EPRECOND,
                            "deleting %zu nodes of %s would go below min_size %d (target %d)", k,
                            id, (int)g->min_size, (int)g->target_size);
        goto out;
    }
    if ((rc = cluster__nap_check_delete(c, g, (int32_t)k, err)) != 0)
        goto out;
    if (k == 0)
        goto out;

    int64_t now = cluster_now_ms();
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        goto out;
    if ((rc = c->provider->ops->delete_instances(c->provider, next, indexes, k, now, err)) != 0) {
        cluster__staged_abort(c);
        group_free(next);
        goto out;
    }
    cluster__update_empty(next, now);
    rc = cluster__replace(c, g, next, err);
out:
    free(indexes);
    return rc;
}

typedef struct cluster__delete_args {
    const char *id;
    const char *const *provider_ids;
    size_t n;
} cluster__delete_args_t;

static int cluster__delete_run(cluster_t *c, const void *args, frugal_err_t *err) {
    const cluster__delete_args_t *a = args;
    return cluster__delete_locked(c, a->id, a->provider_ids, a->n, err);
}

int cluster_delete_nodes(cluster_t *c, const char *id, const char *const *provider_ids, size_t n,
                         frugal_err_t *err) {
    cluster__delete_args_t a = {id, provider_ids, n};
    return cluster__mutate(c, "DeleteNodes", id, -(long)n, cluster__delete_run, &a, err);
}

/* A provider's refresh may replace instance ids (the exec provider: the machine's real
 * provider id). Publishing re-indexes the whole group (cluster__commit removes the old
 * group's ids and adds the new group's), so the provider-id index follows; but an id
 * already indexed for another group, or new in two groups of one refresh, would corrupt
 * it. True (logged) when next has one: that group's refresh is then not kept this time.
 * Otherwise next's ids that are not indexed yet are added to *fresh (keys borrowed from
 * next, which outlives *fresh); out of memory for it also keeps the group unchanged. */
static bool cluster__foreign_instance(const cluster_t *c, const group_t *g, const group_t *next,
                                      strmap_t **fresh) {
    for (size_t i = 0; i < next->instances_count; i++) {
        const char *id = next->instances[i].id;
        const group_t *owner = cluster_find_instance(c, id, NULL);
        if (owner == NULL && *fresh != NULL)
            owner = strmap_get(*fresh, id);
        if (owner != NULL && owner != g) {
            log_error("refresh of node group %s: instance id %s belongs to node group %s: "
                      "result not kept",
                      g->spec.id, id, owner->spec.id);
            return true;
        }
    }
    for (size_t i = 0; i < next->instances_count; i++) {
        const char *id = next->instances[i].id;
        if (cluster_find_instance(c, id, NULL) != NULL)
            continue;
        if ((*fresh == NULL && strmap_create(16, fresh) != 0) ||
            strmap_put(*fresh, id, (void *)g, NULL) != 0)
            return true;
    }
    return false;
}

static int cluster__refresh_locked(cluster_t *c, frugal_err_t *err) {
    int64_t now = cluster_now_ms();
    change_t *changes = calloc(c->count > 0 ? c->count : 1, sizeof(*changes));
    if (changes == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t n = 0;
    int rc = 0;
    strmap_t *fresh = NULL; /* ids new in this refresh -> their group */
    for (size_t i = 0; i < c->count; i++) {
        const group_t *g = c->groups[i];
        if (!g->managed)
            continue;
        group_t *next = NULL;
        if ((rc = group_dup(g, &next, err)) != 0)
            goto fail;
        bool changed = false;
        frugal_err_t perr = {0};
        if (g->exists) {
            rc = c->provider->ops->refresh(c->provider, next, now, &changed, &perr);
            if (rc != 0) {
                /* One backend failure must not stall every other group (nor abort CA's
                 * loop): that group keeps its state until the next refresh. */
                log_warn("refresh of node group %s failed: %s", g->spec.id, perr.msg);
                group_free(next);
                rc = 0;
                continue;
            }
        }
        if (changed && cluster__foreign_instance(c, g, next, &fresh)) {
            group_free(next);
            continue;
        }
        int64_t before = next->empty_since_ms;
        cluster__update_empty(next, now);
        bool removed = false;
        cluster__nap_expire(c, &next, now, &changed, &removed);
        if (!changed && !removed && before == next->empty_since_ms) {
            group_free(next);
            continue;
        }
        changes[n].index = i;
        changes[n].next = next;
        n++;
    }
    if (n > 0)
        rc = cluster__commit(c, changes, n, err);
    else
        cluster__staged_commit(c); /* nothing to write: the state file holds it already */
    strmap_destroy(fresh);
    free(changes);
    return rc;
fail:
    cluster__staged_abort(c);
    strmap_destroy(fresh);
    for (size_t j = 0; j < n; j++)
        group_free(changes[j].next);
    free(changes);
    return rc;
}

/* The least time a mutation must have left when it takes the write lock. */
#define CLUSTER_MUTATION_FLOOR_MS 100

static _Thread_local int64_t cluster__call_deadline_ms;

void cluster_call_deadline(int64_t deadline_ms) {
    cluster__call_deadline_ms = deadline_ms;
}

/* Take write_mu for a mutation that must be answered by deadline_ms (monotonic), with
 * at least CLUSTER_MUTATION_FLOOR_MS left to do its work: a change is never started
 * (and maybe applied) that the caller will have stopped waiting for. */
static int cluster__lock_until(cluster_t *c, int64_t deadline_ms, frugal_err_t *err) {
    if (deadline_ms == 0) {
        pthread_mutex_lock(&c->write_mu);
        return 0;
    }
    int64_t last = deadline_ms - CLUSTER_MUTATION_FLOOR_MS;
    int rc = pthread_mutex_trylock(&c->write_mu);
    if (rc == EBUSY) {
        /* pthread_mutex_timedlock takes CLOCK_REALTIME: the monotonic budget, converted
         * (pthread_mutex_clocklock would not need it, but ThreadSanitizer does not know
         * that call and then reports every unlock). */
        int64_t wait_ms = last - (int64_t)cluster__mono_ms();
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        if (wait_ms < 0)
            wait_ms = 0;
        until.tv_sec += (time_t)(wait_ms / 1000);
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        rc = pthread_mutex_timedlock(&c->write_mu, &until);
    }
    if (rc == 0 && (int64_t)cluster__mono_ms() < last)
        return 0;
    if (rc == 0)
        pthread_mutex_unlock(&c->write_mu);
    return frugal_err_set(err, FRUGAL_EUNAVAIL,
                          "gave up waiting for earlier changes to be stored in %s (slow or "
                          "unreachable) within this call's budget of %d ms: nothing changed",
                          state_backend_describe(c->state), CLUSTER_MUTATION_BUDGET_MS);
}

int cluster_refresh(cluster_t *c, frugal_err_t *err) {
    double t0 = cluster__mono_ms();
    /* Provider work (instance states, hook results, expiry) belongs to the leader of a
     * shared store; the others learn its results through the backend's watch. A replica
     * that was leader (paused past its lease, say) ends the hooks it still runs, so they
     * never run beside the new leader's. */
    if (!state_backend_leader(c->state)) {
        if (c->provider->ops->release != NULL) {
            pthread_mutex_lock(&c->write_mu);
            c->provider->ops->release(c->provider);
            pthread_mutex_unlock(&c->write_mu);
        }
        return 0;
    }
    /* CA's Refresh is a call too: the same budget as a mutation. */
    int64_t deadline = cluster__call_deadline_ms;
    int rc = cluster__lock_until(c, deadline, err);
    if (rc == 0) {
        c->provider_work = true;
        c->deadline_ms = deadline;
        rc = cluster__refresh_locked(c, err);
        c->provider_work = false;
        c->deadline_ms = 0;
        pthread_mutex_unlock(&c->write_mu);
    }
    if (rc != 0)
        log_warn("Refresh failed: %s (duration_ms=%.1f)", err != NULL ? err->msg : "",
                 cluster__mono_ms() - t0);
    return rc;
}

int cluster_persist(cluster_t *c, frugal_err_t *err) {
    pthread_mutex_lock(&c->write_mu);
    int rc = cluster__persist_view(c, NULL, 0, err);
    pthread_mutex_unlock(&c->write_mu);
    return rc;
}

static void cluster__adopt(group_t *g, group_t *from);

static bool cluster__retry(cluster_t *c, int rc, int *attempt, int64_t deadline_ms) {
    if (rc != FRUGAL_EABORTED || ++*attempt > 4 ||
        (deadline_ms > 0 && (int64_t)cluster__mono_ms() >= deadline_ms))
        return false;
    frugal_err_t err = {0};
    if (state_backend_sync(c->state, deadline_ms, &err) != 0) {
        log_warn("%s", err.msg);
        return false;
    }
    return deadline_ms == 0 || (int64_t)cluster__mono_ms() < deadline_ms;
}

int cluster__mutate(cluster_t *c, const char *method, const char *id, long delta,
                    cluster_locked_fn locked, const void *args, frugal_err_t *err) {
    frugal_err_t local = {0};
    if (err == NULL)
        err = &local;
    double t0 = cluster__mono_ms();
    int64_t deadline = cluster__call_deadline_ms;
    int rc, attempt = 0;
    do {
        if ((rc = cluster__lock_until(c, deadline, err)) != 0)
            break;
        c->deadline_ms = deadline;
        rc = locked(c, args, err);
        c->deadline_ms = 0;
        pthread_mutex_unlock(&c->write_mu);
    } while (cluster__retry(c, rc, &attempt, deadline));
    cluster__log(method, id, delta, rc, err, t0);
    return rc;
}

/* The backend's watch: another replica committed g (NULL: removed group id). Publish it
 * as it is stored: a configured group takes its sizes and instances (as at open), an
 * autoprovisioned one comes whole. */
static void cluster__remote(void *arg, const char *id, const group_t *sg) {
    cluster_t *c = arg;
    frugal_err_t err = {0};
    int rc = 0;
    pthread_mutex_lock(&c->write_mu);
    c->remote = true;
    const group_t *cur = strmap_get(c->by_id, id);
    group_t *next = NULL;
    if (sg == NULL) {
        if (cur != NULL && cur->autoprovisioned) {
            change_t ch = {.index = cluster__index_of(c, cur), .next = NULL};
            rc = cluster__commit(c, &ch, 1, &err);
        }
    } else if (cur != NULL && !cur->autoprovisioned) {
        group_t tmp;
        if (cur->managed && (rc = group_dup(cur, &next, &err)) == 0) {
            if (group_copy(&tmp, sg) != 0) {
                group_free(next);
                rc = frugal_err_set(&err, FRUGAL_ENOMEM, "out of memory");
            } else {
                cluster__adopt(next, &tmp);
                group_clear(&tmp);
                cluster__update_empty(next, cluster_now_ms());
                rc = cluster__replace(c, cur, next, &err);
            }
        }
    } else if (sg->autoprovisioned && c->cfg->autoprovisioning.enabled) {
        if ((rc = group_dup(sg, &next, &err)) == 0) {
            next->managed = true;
            if (cur != NULL) {
                rc = cluster__replace(c, cur, next, &err);
            } else {
                change_t ch = {.index = CLUSTER_APPEND, .next = next};
                rc = cluster__commit(c, &ch, 1, &err);
            }
        }
    }
    c->remote = false;
    pthread_mutex_unlock(&c->write_mu);
    if (rc != 0)
        log_error("applying another replica's change of node group %s failed: %s", id, err.msg);
}

/* ------------------------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------------------- */

static group_t *cluster__group_from_config(const node_group_config_t *ng) {
    group_t *g = NULL;
    if (group_new(&ng->spec, &g) != 0)
        return NULL;
    g->min_size = ng->min_size;
    g->max_size = ng->max_size;
    g->managed = ng->managed;
    g->autoprovisioned = false;
    g->exists = true;
    g->options = ng->options;
    /* Unmanaged groups are only counted: their size is whatever the config says. */
    g->target_size = ng->managed ? 0 : (ng->size >= 0 ? ng->size : ng->min_size);
    return g;
}

/* Take target, instances and bookkeeping from the state file's record. */
static void cluster__adopt(group_t *g, group_t *from) {
    for (size_t i = 0; i < g->instances_count; i++)
        instance_clear(&g->instances[i]);
    free(g->instances);
    g->instances = from->instances;
    g->instances_count = from->instances_count;
    g->target_size = from->target_size;
    g->next_seq = from->next_seq > 0 ? from->next_seq : 1;
    g->empty_since_ms = from->empty_since_ms;
    from->instances = NULL;
    from->instances_count = 0;
}

/* Bring a managed group's target into [min_size, max_size] through the provider. */
static int cluster__clamp(cluster_t *c, group_t *g, int64_t now, frugal_err_t *err) {
    provider_t *p = c->provider;
    int rc = 0;
    if (g->target_size > g->max_size) {
        log_warn("node group %s: target size %d from the state file exceeds max_size %d: clamped",
                 g->spec.id, (int)g->target_size, (int)g->max_size);
        int32_t excess = g->target_size - g->max_size;
        int32_t creating = 0;
        for (size_t i = 0; i < g->instances_count; i++)
            creating += g->instances[i].state == INSTANCE_CREATING;
        int32_t drop = creating < excess ? creating : excess;
        if (drop > 0 && (rc = p->ops->decrease_target(p, g, -drop, err)) != 0)
            return rc;
        excess -= drop;
        if (excess > 0) {
            /* Delete the newest live instances for the rest. */
            size_t *idx = malloc((size_t)excess * sizeof(*idx));
            if (idx == NULL)
                return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            size_t k = 0;
            for (size_t i = g->instances_count; i-- > 0 && k < (size_t)excess;) {
                if (g->instances[i].state != INSTANCE_DELETING)
                    idx[k++] = i;
            }
            if (k > 0)
                rc = p->ops->delete_instances(p, g, idx, k, now, err);
            free(idx);
            if (rc != 0)
                return rc;
            if (g->target_size > g->max_size)
                g->target_size = g->max_size;
        }
    } else if (g->target_size < g->min_size) {
        log_warn("node group %s: target size %d from the state file is below min_size %d: clamped",
                 g->spec.id, (int)g->target_size, (int)g->min_size);
        if (g->exists || (rc = p->ops->create_group(p, g, err)) == 0) {
            g->exists = true;
            rc = p->ops->increase(p, g, g->min_size - g->target_size, now, err);
        }
    }
    return rc;
}

int cluster__gvec_push(gvec_t *v, group_t *g, bool loaded) {
    if (v->count == v->cap) {
        size_t cap = v->cap != 0 ? v->cap * 2 : 16;
        group_t **items = realloc(v->items, cap * sizeof(*items));
        if (items == NULL)
            return FRUGAL_ENOMEM;
        v->items = items;
        bool *l = realloc(v->loaded, cap * sizeof(*l));
        if (l == NULL)
            return FRUGAL_ENOMEM;
        v->loaded = l;
        v->cap = cap;
    }
    v->items[v->count] = g;
    v->loaded[v->count] = loaded;
    v->count++;
    return 0;
}

static void gvec_free(gvec_t *v) {
    for (size_t i = 0; i < v->count; i++)
        group_free(v->items[i]);
    free(v->items);
    free(v->loaded);
    memset(v, 0, sizeof(*v));
}

/* Resume from the state file: it rules target sizes and instances of managed groups and
 * brings back autoprovisioned groups; configuration changes win over it otherwise. */
static int cluster__load_state(cluster_t *c, gvec_t *v, frugal_err_t *err) {
    const frugal_config_t *cfg = c->cfg;
    state_t st;
    int rc = state_backend_load(c->state, &st, err);
    if (rc == FRUGAL_ENOTFOUND) {
        log_info("%s does not exist: starting fresh", state_backend_describe(c->state));
        return 0;
    }
    if (rc != 0)
        return rc;
    size_t configured = v->count;
    for (size_t i = 0; i < st.count; i++) {
        group_t *sg = &st.groups[i];
        size_t j = 0;
        while (j < configured && strcmp(v->items[j]->spec.id, sg->spec.id) != 0)
            j++;
        if (j < configured) {
            group_t *g = v->items[j];
            if (sg->managed != g->managed) {
                log_warn("node group %s is %s in the config but %s in the state file: "
                         "starting it as configured",
                         g->spec.id, g->managed ? "managed" : "unmanaged",
                         sg->managed ? "managed" : "unmanaged");
                continue;
            }
            if (!g->managed)
                continue;
            cluster__adopt(g, sg);
            v->loaded[j] = true;
        } else if (sg->autoprovisioned && cfg->autoprovisioning.enabled) {
            group_t *g = malloc(sizeof(*g));
            if (g == NULL) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto out;
            }
            *g = *sg;
            memset(sg, 0, sizeof(*sg));
            g->managed = true;
            if (g->next_seq == 0)
                g->next_seq = 1;
            if (cluster__gvec_push(v, g, true) != 0) {
                group_free(g);
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto out;
            }
        } else {
            log_warn("%s: node group %s is %s: dropped with its %zu instances",
                     state_backend_describe(c->state), sg->spec.id,
                     sg->autoprovisioned ? "autoprovisioned but autoprovisioning is disabled"
                                         : "no longer in the config",
                     sg->instances_count);
        }
    }
out:
    state_free(&st);
    return rc;
}

/* Every instance id must be unique across groups: the provider-id index relies on it. */
static int cluster__check_unique(const gvec_t *v, frugal_err_t *err) {
    size_t total = 0;
    for (size_t i = 0; i < v->count; i++)
        total += v->items[i]->instances_count;
    strmap_t *seen = NULL;
    if (strmap_create(total, &seen) != 0)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < v->count && rc == 0; i++) {
        group_t *g = v->items[i];
        for (size_t j = 0; j < g->instances_count; j++) {
            const group_t *other = strmap_get(seen, g->instances[j].id);
            if (other != NULL) {
                rc = frugal_err_set(err, FRUGAL_EINVAL, "instance %s belongs to both %s and %s",
                                    g->instances[j].id, other->spec.id, g->spec.id);
                break;
            }
            if (strmap_put(seen, g->instances[j].id, g, NULL) != 0) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                break;
            }
        }
    }
    strmap_destroy(seen);
    return rc;
}

static void cluster__free(cluster_t *c) {
    if (c->provider->ops->fence != NULL)
        state_backend_lease(c->state, NULL, NULL);
    for (size_t i = 0; i < c->count; i++) {
        group_free(c->groups[i]);
        free(c->refs[i]);
    }
    free(c->groups);
    free(c->refs);
    strmap_destroy(c->by_id);
    strmap_destroy(c->by_instance);
    pthread_mutex_destroy(&c->write_mu);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

int cluster_open(const frugal_config_t *cfg, struct provider *provider, struct state_backend *state,
                 cluster_t **out, frugal_err_t *err) {
    int rc;
    gvec_t v = {0};
    change_t *changes = NULL;
    *out = NULL;
    cluster_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    c->cfg = cfg;
    c->provider = provider;
    c->state = state;
    /* CA's O(1) reads (TargetSize, pricing) arrive in bursts; with glibc's default
     * reader preference a steady stream of them could starve a mutation forever. */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
#if defined(__GLIBC__)
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    int lrc = pthread_rwlock_init(&c->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (lrc != 0) {
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "cannot create the cluster lock");
        goto fail_rwlock;
    }
    if (pthread_mutex_init(&c->write_mu, NULL) != 0) {
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "cannot create the cluster mutex");
        goto fail_mutex;
    }
    if (strmap_create(cfg->node_groups_count + 16, &c->by_id) != 0 ||
        strmap_create(256, &c->by_instance) != 0) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail_build;
    }

    /* Build every group privately, then publish them all in one commit, which also
     * writes the state file. */
    int64_t now = cluster_now_ms();
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const node_group_config_t *ng = &cfg->node_groups[i];
        for (size_t j = 0; j < v.count; j++) {
            if (strcmp(v.items[j]->spec.id, ng->spec.id) == 0) {
                rc = frugal_err_set(err, FRUGAL_EINVAL, "duplicate node group id %s", ng->spec.id);
                goto fail_build;
            }
        }
        group_t *g = cluster__group_from_config(ng);
        if (g == NULL || cluster__gvec_push(&v, g, false) != 0) {
            group_free(g);
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            goto fail_build;
        }
    }
    if (c->state != NULL) {
        if ((rc = cluster__load_state(c, &v, err)) != 0)
            goto fail_build;
    } else {
        log_warn("no state_file configured: node group sizes live in memory only");
    }
    if ((rc = cluster__nap_add_theoretical(cfg, &v, err)) != 0)
        goto fail_build;
    for (size_t i = 0; i < v.count; i++) {
        group_t *g = v.items[i];
        if (!g->managed)
            continue;
        if (!v.loaded[i]) {
            const node_group_config_t *ng = &cfg->node_groups[i];
            int32_t initial = ng->size >= 0 ? ng->size : ng->min_size;
            if (initial > g->max_size)
                initial = g->max_size;
            if (initial > 0 && (rc = provider->ops->increase(provider, g, initial, now, err)) != 0)
                goto fail_build;
        } else if ((rc = cluster__clamp(c, g, now, err)) != 0) {
            goto fail_build;
        }
        cluster__update_empty(g, now);
    }
    if ((rc = cluster__check_unique(&v, err)) != 0)
        goto fail_build;

    changes = calloc(v.count > 0 ? v.count : 1, sizeof(*changes));
    if (changes == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail_build;
    }
    for (size_t i = 0; i < v.count; i++) {
        changes[i].index = CLUSTER_APPEND;
        changes[i].next = v.items[i];
        v.items[i] = NULL;
    }
    /* Before the first commit can start machine work: the leadership lease bounds it. */
    if (c->provider->ops->fence != NULL)
        state_backend_lease(c->state, cluster__fence, c->provider);
    rc = cluster__commit(c, changes, v.count, err);
    free(changes);
    v.count = 0;
    gvec_free(&v);
    if (rc != 0) {
        cluster__free(c);
        return rc;
    }
    log_info("cluster open: %zu node groups, %zu instances, %" PRId64 " nodes targeted", c->count,
             strmap_count(c->by_instance), c->node_count);
    /* From here on another thread may publish other replicas' changes. */
    if ((rc = state_backend_watch(c->state, cluster__remote, c, err)) != 0) {
        cluster__free(c);
        return rc;
    }

    config_retain(cfg);
    *out = c;
    return 0;

fail_build:
    cluster__staged_abort(c);
    gvec_free(&v);
    strmap_destroy(c->by_id);
    strmap_destroy(c->by_instance);
    pthread_mutex_destroy(&c->write_mu);
fail_mutex:
    pthread_rwlock_destroy(&c->lock);
fail_rwlock:
    free(c);
    return rc;
}

void cluster_close(cluster_t *c) {
    if (c == NULL)
        return;
    frugal_err_t err = {0};
    if (cluster_persist(c, &err) != 0)
        log_error("persisting the state at close failed: %s", err.msg);
    const frugal_config_t *cfg = c->cfg;
    state_backend_watch(c->state, NULL, NULL, &err); /* no callback into a freed cluster */
    cluster__free(c);
    config_release(cfg);
}

/* ------------------------------------------------------------------------------------
 * Reload
 * ---------------------------------------------------------------------------------- */

static bool cluster__str_differs(const char *a, const char *b) {
    return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

/* The first key of next that differs from cur and needs a restart, NULL when none. */
static const char *cluster__restart_key(const frugal_config_t *cur, const frugal_config_t *next) {
    if (cur->listeners_count != next->listeners_count)
        return "listen";
    for (size_t i = 0; i < cur->listeners_count; i++) {
        const listener_config_t *a = &cur->listeners[i], *b = &next->listeners[i];
        if (cluster__str_differs(a->address, b->address) ||
            cluster__str_differs(a->tls_cert, b->tls_cert) ||
            cluster__str_differs(a->tls_key, b->tls_key) ||
            cluster__str_differs(a->tls_client_ca, b->tls_client_ca) || a->services != b->services)
            return "listen";
    }
    if (cur->allow_insecure != next->allow_insecure)
        return "allow_insecure";
    if (cur->max_message_bytes != next->max_message_bytes)
        return "max_message_bytes";
    if (cluster__str_differs(cur->state_file, next->state_file))
        return "state_file";
    if (cluster__str_differs(cur->ops_listen, next->ops_listen))
        return "ops_listen";
    const state_config_t *sa = &cur->state, *sb = &next->state;
    bool state_differs =
        sa->backend != sb->backend || cluster__str_differs(sa->prefix, sb->prefix) ||
        cluster__str_differs(sa->tls_ca, sb->tls_ca) ||
        cluster__str_differs(sa->tls_cert, sb->tls_cert) ||
        cluster__str_differs(sa->tls_key, sb->tls_key) || sa->lease_ttl_ms != sb->lease_ttl_ms ||
        sa->request_timeout_ms != sb->request_timeout_ms ||
        sa->endpoints_count != sb->endpoints_count;
    for (size_t i = 0; !state_differs && i < sa->endpoints_count; i++)
        state_differs = strcmp(sa->endpoints[i], sb->endpoints[i]) != 0;
    if (state_differs)
        return "state";
    if (cluster__str_differs(cur->provider_kind, next->provider_kind) ||
        cur->boot_seconds != next->boot_seconds ||
        cluster__str_differs(cur->exec_command, next->exec_command) ||
        cur->exec_timeout_ms != next->exec_timeout_ms ||
        cur->exec_parallelism != next->exec_parallelism)
        return "provider";
    return NULL;
}

/* The change a reload makes to the published configured group g (*next NULL: remove
 * it), or a refusal. */
static int cluster__reload_group(cluster_t *c, const group_t *g, const frugal_config_t *cfg,
                                 group_t **next, frugal_err_t *err) {
    *next = NULL;
    const node_group_config_t *ng = config_find_node_group(cfg, g->spec.id);
    if (ng == NULL) {
        if (g->target_size > 0 || g->instances_count > 0 || cluster__provider_busy(c, g))
            return frugal_err_set(err, FRUGAL_EPRECOND,
                                  "node group %s still has %zu nodes (target size %d): remove "
                                  "it from the config only once it is empty",
                                  g->spec.id, g->instances_count, (int)g->target_size);
        return 0;
    }
    if (ng->managed != g->managed)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s: managed changes only with a restart", g->spec.id);
    if (g->managed && (g->target_size < ng->min_size || g->target_size > ng->max_size))
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "node group %s: target size %d is outside the new bounds [%d, %d]",
                              g->spec.id, (int)g->target_size, (int)ng->min_size,
                              (int)ng->max_size);
    group_t *copy = NULL;
    int rc = group_dup(g, &copy, err);
    if (rc != 0)
        return rc;
    group_spec_clear(&copy->spec);
    if (group_spec_copy(&copy->spec, &ng->spec) != 0) {
        group_free(copy);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    copy->min_size = ng->min_size;
    copy->max_size = ng->max_size;
    copy->options = ng->options;
    if (!g->managed)
        copy->target_size = ng->size >= 0 ? ng->size : ng->min_size;
    *next = copy;
    return 0;
}

int cluster_reload(cluster_t *c, const frugal_config_t *next, frugal_err_t *err) {
    pthread_mutex_lock(&c->write_mu);
    const frugal_config_t *cur = c->cfg;
    int rc = 0;
    size_t n = 0;
    change_t *changes = calloc(c->count + next->node_groups_count + 1, sizeof(*changes));
    const char *key = cluster__restart_key(cur, next);
    if (changes == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    else if (key != NULL)
        rc = frugal_err_set(err, FRUGAL_EPRECOND, "%s changes only with a restart", key);
    for (size_t i = 0; rc == 0 && i < c->count; i++) {
        if (c->groups[i]->autoprovisioned)
            continue; /* they follow the autoprovisioning settings, which apply at once */
        group_t *g = NULL;
        if ((rc = cluster__reload_group(c, c->groups[i], next, &g, err)) == 0)
            changes[n++] = (change_t){.index = i, .next = g};
    }
    int64_t now = cluster_now_ms();
    for (size_t i = 0; rc == 0 && i < next->node_groups_count; i++) {
        const node_group_config_t *ng = &next->node_groups[i];
        const group_t *old = cluster_find_group(c, ng->spec.id);
        if (old != NULL && old->autoprovisioned) {
            rc = frugal_err_set(err, FRUGAL_EPRECOND,
                                "node group %s is autoprovisioned: choose another id", ng->spec.id);
        } else if (old == NULL) {
            group_t *g = cluster__group_from_config(ng);
            int32_t initial = ng->size >= 0 ? ng->size : ng->min_size;
            if (g == NULL)
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            else if (g->managed && initial > 0)
                rc = c->provider->ops->increase(c->provider, g, initial, now, err);
            if (g != NULL)
                cluster__update_empty(g, now);
            changes[n++] = (change_t){.index = CLUSTER_APPEND, .next = g};
        }
    }
    gvec_t v = {0}; /* every group after the reload (borrowed), then new theoretical ones */
    for (size_t i = 0; rc == 0 && i < c->count + n; i++) {
        group_t *g = i < c->count ? c->groups[i] : changes[i - c->count].next;
        if (g != NULL && cluster__gvec_push(&v, g, true) != 0)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    size_t known = v.count;
    if (rc == 0)
        rc = cluster__nap_add_theoretical(next, &v, err);
    change_t *grown =
        rc == 0 ? realloc(changes, (n + v.count - known + 1) * sizeof(*changes)) : NULL;
    if (grown != NULL)
        changes = grown;
    else if (rc == 0)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = known; i < v.count; i++) {
        if (grown != NULL)
            changes[n++] = (change_t){.index = CLUSTER_APPEND, .next = v.items[i]};
        else
            group_free(v.items[i]);
    }
    free(v.items);
    free(v.loaded);
    if (rc == 0) {
        config_retain(next);
        c->next_cfg = next;
        rc = cluster__commit(c, changes, n, err); /* consumes every next */
        c->next_cfg = NULL;
        n = 0;
        if (rc != 0)
            config_release(next);
    } else {
        cluster__staged_abort(c);
    }
    for (size_t i = 0; i < n; i++)
        group_free(changes[i].next);
    free(changes);
    pthread_mutex_unlock(&c->write_mu);
    if (rc == 0)
        config_release(cur);
    return rc;
}
