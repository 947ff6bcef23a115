/* The cluster's commit engine: the published groups and their indexes, the reads, and
 * the copy-validate-persist-publish discipline that makes every mutation durable and
 * all-or-nothing, with the provider's staged work started or dropped with it; the
 * driver every mutation runs in (budgeted lock, retry after another replica's commit,
 * log line). The mutations are cluster_mutate.c and cluster_nap.c, open, load and
 * reload cluster_open.c; all of them commit through this file and nothing else.
 *
 * Two locks: write_mu serialises mutators for their whole duration (validation,
 * provider call on a private copy, state file write), while the rwlock is taken for
 * writing only for the short pointer swap that publishes the result. Readers therefore
 * never wait for an fsync, and a published group_t is immutable until it is replaced
 * and freed under the write lock. Mutators read the published groups under write_mu
 * alone: nobody else can change them. */
#include "cluster_internal.h"
#include "testing/cluster_testing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

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
    return clock_wall_ms();
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
void cluster__staged_commit(cluster_t *c) {
    /* With a shared store the machine work belongs to the leader: a follower drops what
     * its slots staged, and the leader's refresh queues it from the stored instances
     * (creating or deleting without a job), as after a restart. */
    if (!state_backend_leader(c->state)) {
        cluster__staged_abort(c);
        return;
    }
    provider_commit_staged(c->provider);
}

void cluster__staged_abort(cluster_t *c) {
    provider_abort_staged(c->provider);
}

bool cluster__provider_busy(cluster_t *c, const group_t *g) {
    return provider_busy(c->provider, g);
}

/* Store the state as it will be once changes are applied (the backend's commit). */
static int cluster__persist_view(cluster_t *c, const cluster_ctx_t *ctx, const change_t *changes,
                                 size_t n, frugal_err_t *err) {
    if (c->state == NULL || ctx->remote)
        return 0;
    const group_t **view = malloc((c->count + n + 1) * sizeof(*view));
    const group_t **changed = malloc((n + 1) * sizeof(*changed));
    const char **removed = malloc((n + 1) * sizeof(*removed));
    /* the config this commit publishes: a reload's limits guard its own write */
    const frugal_config_t *published = ctx->next_cfg != NULL ? ctx->next_cfg : c->cfg;
    if (view == NULL || changed == NULL || removed == NULL) {
        free(view);
        free(changed);
        free(removed);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory writing the state");
    }
    state_commit_t sc = {.view = view,
                         .changed = changed,
                         .removed = (const char *const *)removed,
                         .provider_work = ctx->provider_work,
                         /* A restore writes a group back unchanged: no limit to guard. */
                         .whole_view = published->autoprovisioning.enabled && !ctx->restore,
                         .restore = ctx->restore,
                         .deadline_ms = ctx->deadline_ms};
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

int cluster__commit(cluster_t *c, const cluster_ctx_t *ctx, change_t *changes, size_t n,
                    frugal_err_t *err) {
    static const cluster_ctx_t no_call = {0};
    if (ctx == NULL)
        ctx = &no_call;
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
    /* Reserve everything publishing needs so that it cannot fail after the write. A
     * reserve may move the arrays and rehash the indexes the readers use: under the
     * write lock too. */
    pthread_rwlock_wrlock(&c->lock);
    if (c->count + appends > c->cap) {
        size_t cap = c->cap * 2 > c->count + appends ? c->cap * 2 : c->count + appends;
        group_t **groups = realloc(c->groups, cap * sizeof(*groups));
        if (groups != NULL)
            c->groups = groups;
        iref_t **refs = groups != NULL ? realloc(c->refs, cap * sizeof(*refs)) : NULL;
        if (refs != NULL)
            c->refs = refs;
        if (groups == NULL || refs == NULL)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory adding node groups");
        else
            c->cap = cap;
    }
    if (rc == 0 && (strmap_reserve(c->by_id, c->count + appends) != 0 ||
                    strmap_reserve(c->by_instance, instances) != 0))
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory growing the indexes");
    pthread_rwlock_unlock(&c->lock);
    if (rc != 0)
        goto fail;
    old_groups = calloc(n > 0 ? n : 1, sizeof(*old_groups));
    old_refs = calloc(n > 0 ? n : 1, sizeof(*old_refs));
    if (old_groups == NULL || old_refs == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail;
    }
    /* A call's change prepared past its deadline is dropped: its caller has stopped
     * waiting and takes it as failed. (Refresh's provider work is kept: the server's
     * own tick, with no deadline, would only redo it.) */
    if (ctx->deadline_ms > 0 && !ctx->provider_work && clock_mono_ms() >= ctx->deadline_ms) {
        rc = frugal_err_set(err, FRUGAL_EDEADLINE,
                            "preparing the change took past this call's deadline: nothing "
                            "changed");
        goto fail;
    }
    if ((rc = cluster__persist_view(c, ctx, changes, n, err)) != 0)
        goto fail;
    cluster__staged_commit(c);

    /* Publish: nothing below can fail. */
    pthread_rwlock_wrlock(&c->lock);
    if (ctx->next_cfg != NULL) /* a reload: the config changes with the groups */
        c->cfg = ctx->next_cfg;
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

int cluster__replace(cluster_t *c, const cluster_ctx_t *ctx, const group_t *old, group_t *next,
                     frugal_err_t *err) {
    change_t ch = {cluster__index_of(c, old), next, NULL};
    if (ch.index == CLUSTER_APPEND) {
        cluster__staged_abort(c);
        group_free(next);
        return frugal_err_set(err, FRUGAL_EINTERNAL, "node group %s is not published",
                              old->spec.id);
    }
    return cluster__commit(c, ctx, &ch, 1, err);
}

void cluster__update_empty(group_t *g, int64_t now) {
    bool empty = g->target_size == 0 && g->instances_count == 0;
    if (!empty)
        g->empty_since_ms = 0;
    else if (g->empty_since_ms == 0)
        g->empty_since_ms = now;
}

/* ------------------------------------------------------------------------------------
 * The mutation driver: budgeted lock, retry after another replica's commit, log line
 * ---------------------------------------------------------------------------------- */

/* The log line of a mutation: what it did, the call's method and peer, group, delta,
 * outcome (err's message on failure) and the time since t0 (clock_mono_ms_exact). */
static void cluster__log(const char *what, const cluster_call_t *call, const char *id, long delta,
                         int rc, const frugal_err_t *err, double t0) {
    double ms = clock_mono_ms_exact() - t0;
    log_field_t fields[] = {
        LOG_STR("method", call != NULL && call->method != NULL ? call->method : what),
        LOG_STR("peer", call != NULL ? call->peer : NULL),
        LOG_STR("node_group", id != NULL ? id : ""),
        LOG_INT("delta", delta),
        LOG_STR("code", frugal_err_code_name(rc)),
        LOG_STR("message", rc != 0 && err != NULL ? err->msg : NULL),
        LOG_NUM("duration_ms", ms),
    };
    log_fields(LOG_LEVEL_INFO, fields, sizeof(fields) / sizeof(fields[0]), "%s", what);
}

/* The least time a mutation must have left when it takes the write lock. */
#define CLUSTER_MUTATION_FLOOR_MS 100

/* Take write_mu for a mutation that must be answered by deadline_ms (monotonic), with
 * at least CLUSTER_MUTATION_FLOOR_MS left to do its work: a change is never started
 * (and maybe applied) that the caller will have stopped waiting for. */
int cluster__lock_until(cluster_t *c, const cluster_call_t *call, frugal_err_t *err) {
    int64_t deadline_ms = call != NULL ? call->deadline_ms : 0;
    if (deadline_ms == 0) {
        pthread_mutex_lock(&c->write_mu);
        return 0;
    }
    int64_t last = deadline_ms - CLUSTER_MUTATION_FLOOR_MS;
    int64_t budget = deadline_ms - clock_mono_ms();
    if (budget <= CLUSTER_MUTATION_FLOOR_MS && call->callers_deadline)
        return frugal_err_set(err, FRUGAL_EDEADLINE,
                              "this call's deadline leaves %" PRId64 " ms to make the change, "
                              "not the %d ms it needs at least: nothing changed (give the call "
                              "a deadline of a second or more)",
                              budget > 0 ? budget : 0, CLUSTER_MUTATION_FLOOR_MS);
    int rc = pthread_mutex_trylock(&c->write_mu);
    if (rc == EBUSY) {
        /* pthread_mutex_timedlock takes CLOCK_REALTIME: the monotonic budget, converted
         * (pthread_mutex_clocklock would not need it, but ThreadSanitizer does not know
         * that call and then reports every unlock). */
        int64_t wait_ms = last - clock_mono_ms();
        struct timespec until = clock_timespec_in(CLOCK_REALTIME, wait_ms > 0 ? wait_ms : 0);
        rc = pthread_mutex_timedlock(&c->write_mu, &until);
    }
    if (rc == 0 && clock_mono_ms() < last)
        return 0;
    if (rc == 0)
        pthread_mutex_unlock(&c->write_mu);
    /* What holds the earlier changes up: their provider work (an exec hook), or storing
     * them. */
    if (c->state == NULL)
        return frugal_err_set(err, FRUGAL_EUNAVAIL,
                              "gave up waiting for earlier changes to finish (their provider "
                              "work is slow) within this call's budget of %" PRId64
                              " ms: nothing changed",
                              budget);
    return frugal_err_set(err, FRUGAL_EUNAVAIL,
                          "gave up waiting for earlier changes to finish (their provider work is "
                          "slow, or %s is slow or unreachable) within this call's budget of "
                          "%" PRId64 " ms: nothing changed",
                          state_backend_describe(c->state), budget);
}

int cluster_persist(cluster_t *c, frugal_err_t *err) {
    pthread_mutex_lock(&c->write_mu);
    static const cluster_ctx_t no_call = {0};
    int rc = cluster__persist_view(c, &no_call, NULL, 0, err);
    pthread_mutex_unlock(&c->write_mu);
    return rc;
}

bool cluster__retry(cluster_t *c, int rc, int *attempt, int64_t deadline_ms) {
    if (rc != FRUGAL_EABORTED || ++*attempt > CLUSTER_COMMIT_ATTEMPTS ||
        (deadline_ms > 0 && clock_mono_ms() >= deadline_ms))
        return false;
    frugal_err_t err = {0};
    if (state_backend_sync(c->state, deadline_ms, &err) != 0) {
        log_warn("%s", err.msg);
        return false;
    }
    return deadline_ms == 0 || clock_mono_ms() < deadline_ms;
}

int cluster__mutate(cluster_t *c, const cluster_call_t *call, const char *method, const char *id,
                    long delta, cluster_locked_fn locked, const void *args, frugal_err_t *err) {
    frugal_err_t local = {0};
    if (err == NULL)
        err = &local;
    double t0 = clock_mono_ms_exact();
    cluster_ctx_t ctx = {.deadline_ms = call != NULL ? call->deadline_ms : 0};
    int rc, attempt = 0;
    do {
        if ((rc = cluster__lock_until(c, call, err)) != 0)
            break;
        rc = locked(c, &ctx, args, err);
        pthread_mutex_unlock(&c->write_mu);
    } while (cluster__retry(c, rc, &attempt, ctx.deadline_ms));
    cluster__log(method, call, id, delta, rc, err, t0);
    return rc;
}

void cluster__adopt(group_t *g, group_t *from) {
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

void cluster__gvec_free(gvec_t *v) {
    for (size_t i = 0; i < v->count; i++)
        group_free(v->items[i]);
    free(v->items);
    free(v->loaded);
    memset(v, 0, sizeof(*v));
}
