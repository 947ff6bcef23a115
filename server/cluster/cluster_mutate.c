/* The cluster's mutations: IncreaseSize, DecreaseTargetSize, DeleteNodes, Refresh (with
 * the NAP steps of cluster_nap.c), and the apply of other replicas' commits. Each one
 * validates on the published groups, changes a private copy through the provider and
 * hands it to the commit engine (cluster.c). */
#include "cluster_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

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

static int cluster__increase_locked(cluster_t *c, const cluster_ctx_t *ctx, const char *id,
                                    int32_t delta, frugal_err_t *err) {
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
        if ((rc = provider_create_group(c->provider, next, err)) != 0)
            goto fail;
        next->exists = true;
        next->empty_since_ms = 0;
    }
    if ((rc = provider_increase(c->provider, next, delta, now, err)) != 0) {
        if (rc == FRUGAL_ENOMEM)
            frugal_err_set(err, rc, "increase of %s by %d: out of memory for the new instances", id,
                           (int)delta);
        goto fail;
    }
    cluster__update_empty(next, now);
    return cluster__replace(c, ctx, g, next, err);
fail:
    cluster__staged_abort(c);
    group_free(next);
    return rc;
}

/* The arguments of the size mutations, for cluster__mutate. */
typedef struct cluster__size_args {
    const char *id;
    int32_t delta;
} cluster__size_args_t;

static int cluster__increase_run(cluster_t *c, const cluster_ctx_t *ctx, const void *args,
                                 frugal_err_t *err) {
    const cluster__size_args_t *a = args;
    return cluster__increase_locked(c, ctx, a->id, a->delta, err);
}

int cluster_increase_size(cluster_t *c, const cluster_call_t *call, const char *id, int32_t delta,
                          frugal_err_t *err) {
    cluster__size_args_t a = {id, delta};
    return cluster__mutate(c, call, "IncreaseSize", id, delta, cluster__increase_run, &a, err);
}

static int cluster__decrease_locked(cluster_t *c, const cluster_ctx_t *ctx, const char *id,
                                    int32_t delta, frugal_err_t *err) {
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
    /* The configured limit is named first; then the instances a decrease may not drop. */
    int64_t target = (int64_t)g->target_size + delta;
    if (target < g->min_size)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "decrease of %s by %d would go below min_size %d (target %d)", id,
                              (int)delta, (int)g->min_size, (int)g->target_size);
    if (target < registered)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "decrease of %s by %d would go below the %" PRId64
                              " running instances (target %d, %" PRId64 " not yet running)",
                              id, (int)delta, registered, (int)g->target_size, creating);
    if (-(int64_t)delta > creating)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "decrease of %s by %d would remove more than the %" PRId64
                              " instances not yet running (target %d, %" PRId64 " running)",
                              id, (int)delta, creating, (int)g->target_size, registered);

    int64_t now = cluster_now_ms();
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        return rc;
    if ((rc = provider_decrease_target(c->provider, next, delta, now, err)) != 0) {
        cluster__staged_abort(c);
        group_free(next);
        return rc;
    }
    cluster__update_empty(next, now);
    return cluster__replace(c, ctx, g, next, err);
}

static int cluster__decrease_run(cluster_t *c, const cluster_ctx_t *ctx, const void *args,
                                 frugal_err_t *err) {
    const cluster__size_args_t *a = args;
    return cluster__decrease_locked(c, ctx, a->id, a->delta, err);
}

int cluster_decrease_target_size(cluster_t *c, const cluster_call_t *call, const char *id,
                                 int32_t delta, frugal_err_t *err) {
    cluster__size_args_t a = {id, delta};
    return cluster__mutate(c, call, "DecreaseTargetSize", id, delta, cluster__decrease_run, &a,
                           err);
}

static int cluster__delete_locked(cluster_t *c, const cluster_ctx_t *ctx, const char *id,
                                  const char *const *provider_ids, size_t n, frugal_err_t *err) {
    const group_t *g = NULL;
    int rc = cluster__find_mutable(c, id, "delete nodes of", &g, err);
    if (rc != 0)
        return rc;
    if (n == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delete from %s: no nodes given", id);
    size_t *indexes = malloc(n * sizeof(*indexes));
    /* Which of g's instances were named already: a repeat is found in constant time, so
     * that a list of 100,000 nodes does not hold the write lock for seconds. */
    bool *named = calloc(g->instances_count + 1, sizeof(*named));
    if (indexes == NULL || named == NULL) {
        free(indexes);
        free(named);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    size_t k = 0, failed = 0;
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
        size_t at = (size_t)(inst - g->instances);
        if (named[at]) {
            rc = frugal_err_set(err, FRUGAL_EINVAL, "node %s given twice", pid);
            goto out;
        }
        named[at] = true;
        /* Deleting a node already being deleted is a retry: it counts once. */
        if (inst->state != INSTANCE_DELETING)
            indexes[k++] = at;
        if (inst->state == INSTANCE_CREATING && inst->error_code != NULL)
            failed++;
    }
    /* CA deletes an instance that failed to create at its next loop. At min_size that
     * is a replacement, as a cloud's instance group retries: refused, CA >= 1.28 would
     * stop autoscaling the whole cluster (it lowers the target instead, and is refused
     * again, every loop). */
    int64_t below = (int64_t)g->min_size - ((int64_t)g->target_size - (int64_t)k);
    if (below > (int64_t)failed) {
        rc = frugal_err_set(err, FRUGAL_EPRECOND,
                            "deleting %zu nodes of %s would go below min_size %d (target %d)", k,
                            id, (int)g->min_size, (int)g->target_size);
        goto out;
    }
    int32_t replace = below > 0 ? (int32_t)below : 0;
    if ((rc = cluster__nap_check_delete(c, g, (int32_t)k - replace, err)) != 0)
        goto out;
    if (k == 0)
        goto out;

    int64_t now = cluster_now_ms();
    group_t *next = NULL;
    if ((rc = group_dup(g, &next, err)) != 0)
        goto out;
    if ((rc = provider_delete_instances(c->provider, next, indexes, k, now, err)) != 0 ||
        (replace > 0 && (rc = provider_increase(c->provider, next, replace, now, err)) != 0)) {
        cluster__staged_abort(c);
        group_free(next);
        goto out;
    }
    int32_t min_size = g->min_size;
    cluster__update_empty(next, now);
    rc = cluster__replace(c, ctx, g, next, err);
    if (rc == 0 && replace > 0)
        log_info("node group %s: %d instance(s) that failed to create replaced to stay at "
                 "min_size %d",
                 id, (int)replace, (int)min_size);
out:
    free(indexes);
    free(named);
    return rc;
}

typedef struct cluster__delete_args {
    const char *id;
    const char *const *provider_ids;
    size_t n;
} cluster__delete_args_t;

static int cluster__delete_run(cluster_t *c, const cluster_ctx_t *ctx, const void *args,
                               frugal_err_t *err) {
    const cluster__delete_args_t *a = args;
    return cluster__delete_locked(c, ctx, a->id, a->provider_ids, a->n, err);
}

int cluster_delete_nodes(cluster_t *c, const cluster_call_t *call, const char *id,
                         const char *const *provider_ids, size_t n, frugal_err_t *err) {
    cluster__delete_args_t a = {id, provider_ids, n};
    return cluster__mutate(c, call, "DeleteNodes", id, -(long)n, cluster__delete_run, &a, err);
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

static int cluster__refresh_locked(cluster_t *c, const cluster_ctx_t *ctx, frugal_err_t *err) {
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
            rc = provider_refresh(c->provider, next, now, &changed, &perr);
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
        rc = cluster__commit(c, ctx, changes, n, err);
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

/* A replica that was leader (paused past its lease, say) ends the hooks it still runs, so
 * they never run beside the new leader's. */
static void cluster__follow(cluster_t *c) {
    if (provider_has_release(c->provider)) {
        pthread_mutex_lock(&c->write_mu);
        provider_release(c->provider);
        pthread_mutex_unlock(&c->write_mu);
    }
}

/* when_idle: skip it (0, nothing done) whenever a change holds write_mu. */
static int cluster__refresh(cluster_t *c, const cluster_call_t *call, bool when_idle,
                            frugal_err_t *err) {
    double t0 = clock_mono_ms_exact();
    /* Provider work (instance states, hook results, expiry) belongs to the leader of a
     * shared store; the others learn its results through the backend's watch. */
    if (!state_backend_leader(c->state)) {
        cluster__follow(c);
        return 0;
    }
    /* CA's Refresh is a call too: the same budget as a mutation. */
    cluster_ctx_t ctx = {.deadline_ms = call != NULL ? call->deadline_ms : 0,
                         .provider_work = true};
    /* A mutation on another replica may commit first: refresh again on its result. */
    int rc, attempt = 0;
    do {
        if (when_idle) {
            if (pthread_mutex_trylock(&c->write_mu) != 0)
                return 0;
        } else if ((rc = cluster__lock_until(c, call, err)) != 0) {
            break;
        }
        rc = cluster__refresh_locked(c, &ctx, err);
        pthread_mutex_unlock(&c->write_mu);
    } while (cluster__retry(c, rc, &attempt, ctx.deadline_ms));
    if (rc == FRUGAL_EPRECOND && !state_backend_leader(c->state)) {
        /* Paused past the lease in the middle of it: the store refused the write, as it
         * must, and the new leader does the work. Not a failure of this replica. */
        log_info("Refresh abandoned: the leadership moved during it: %s (duration_ms=%.1f)",
                 err != NULL ? err->msg : "", clock_mono_ms_exact() - t0);
        if (err != NULL)
            frugal_err_clear(err);
        cluster__follow(c);
        return 0;
    }
    if (rc != 0)
        log_warn("Refresh failed: %s (duration_ms=%.1f)", err != NULL ? err->msg : "",
                 clock_mono_ms_exact() - t0);
    return rc;
}

int cluster_refresh(cluster_t *c, const cluster_call_t *call, frugal_err_t *err) {
    return cluster__refresh(c, call, false, err);
}

int cluster_refresh_when_idle(cluster_t *c, frugal_err_t *err) {
    return cluster__refresh(c, NULL, true, err);
}

/* A group this replica has configured lost its stored key: deleted by hand, or by a
 * replica whose reload removed the (empty) group first. Starting without it, a replica
 * would take the group at its initial size and forget its machines, so the leader writes
 * its copy back; the others keep theirs meanwhile. (A reload removing the group here too
 * deletes it again.) */
static int cluster__restore_deleted(cluster_t *c, const group_t *cur, frugal_err_t *err) {
    if (!state_backend_leader(c->state)) {
        log_warn("the stored node group %s was deleted (by hand, or by a replica whose config "
                 "no longer has it): the leader writes it back; this replica keeps its copy",
                 cur->spec.id);
        return 0;
    }
    log_error("the stored node group %s was deleted (by hand, or by a replica whose config "
              "no longer has it): written back from this replica's copy (target size %d, %zu "
              "instances)",
              cur->spec.id, (int)cur->target_size, cur->instances_count);
    group_t *copy = NULL;
    int rc = group_dup(cur, &copy, err);
    const cluster_ctx_t local = {.restore = true};
    if (rc == 0)
        rc = cluster__replace(c, &local, cur, copy, err);
    return rc;
}

/* The backend's watch: another replica committed g (NULL: removed group id). Publish it
 * as it is stored: a configured group takes its sizes and instances (as at open), an
 * autoprovisioned one comes whole. */
void cluster__remote(void *arg, const char *id, const group_t *sg) {
    cluster_t *c = arg;
    const cluster_ctx_t ctx = {.remote = true};
    frugal_err_t err = {0};
    int rc = 0;
    pthread_mutex_lock(&c->write_mu);
    const group_t *cur = strmap_get(c->by_id, id);
    group_t *next = NULL;
    if (sg == NULL) {
        if (cur != NULL && cur->autoprovisioned) {
            change_t ch = {.index = cluster__index_of(c, cur), .next = NULL};
            rc = cluster__commit(c, &ctx, &ch, 1, &err);
        } else if (cur != NULL && cur->managed) {
            rc = cluster__restore_deleted(c, cur, &err);
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
                /* Adopted all the same: the shared state is the truth, and machine work
                 * is the leader's, not this replica's to clamp. */
                if (next->target_size > next->max_size || next->target_size < next->min_size)
                    log_warn("node group %s: another replica set its target to %d, outside "
                             "this replica's min_size %d / max_size %d: the replicas' "
                             "configurations differ; give them the same one",
                             id, (int)next->target_size, (int)next->min_size, (int)next->max_size);
                rc = cluster__replace(c, &ctx, cur, next, &err);
            }
        }
    } else if (sg->autoprovisioned && c->cfg->autoprovisioning.enabled) {
        if ((rc = group_dup(sg, &next, &err)) == 0) {
            next->managed = true;
            if (cur != NULL) {
                rc = cluster__replace(c, &ctx, cur, next, &err);
            } else {
                change_t ch = {.index = CLUSTER_APPEND, .next = next};
                rc = cluster__commit(c, &ctx, &ch, 1, &err);
            }
        }
    }
    pthread_mutex_unlock(&c->write_mu);
    if (rc != 0)
        log_error("applying another replica's change of node group %s failed: %s", id, err.msg);
}
