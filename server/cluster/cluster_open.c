/* The cluster's life: open (build from the config, resume from the backend's state,
 * clamp, initial sizes), close, and reload of the config in one commit. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np: writer preference on glibc */
#endif
#include "cluster_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "state.h"

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

/* The backend's lease: how long this replica may still run machine work. */
static void cluster__fence(void *provider, int64_t until_ms) {
    provider_fence(provider, until_ms);
}

/* A managed group's target counts its instances creating or running, as every change
 * keeps it; a state edited by hand may not. CA asked for the target, so missing
 * instances are made (a target above them would wait for nodes nothing makes, and CA's
 * revert of it is refused), and extra ones are counted in it (CA scales them down). */
static int cluster__repair_target(cluster_t *c, group_t *g, int64_t now, frugal_err_t *err) {
    int32_t live = 0;
    for (size_t i = 0; i < g->instances_count; i++)
        live += g->instances[i].state != INSTANCE_DELETING;
    if (live == g->target_size || !g->exists)
        return 0;
    log_warn("node group %s: target size %d from the state file, but %d instances are creating "
             "or running (a hand edit?): %s",
             g->spec.id, (int)g->target_size, (int)live,
             g->target_size > live ? "the missing ones are made" : "the target counts them all");
    int32_t missing = g->target_size - live;
    g->target_size = live;
    return missing > 0 ? provider_increase(c->provider, g, missing, now, err) : 0;
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
        if (drop > 0 && (rc = provider_decrease_target(p, g, -drop, now, err)) != 0)
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
                rc = provider_delete_instances(p, g, idx, k, now, err);
            free(idx);
            if (rc != 0)
                return rc;
            if (g->target_size > g->max_size)
                g->target_size = g->max_size;
        }
    } else if (g->target_size < g->min_size) {
        log_warn("node group %s: target size %d from the state file is below min_size %d: clamped",
                 g->spec.id, (int)g->target_size, (int)g->min_size);
        if (g->exists || (rc = provider_create_group(p, g, err)) == 0) {
            g->exists = true;
            rc = provider_increase(p, g, g->min_size - g->target_size, now, err);
        }
    }
    return rc;
}

/* The refusal to drop group g while it holds nodes: "BEFOREnode group ID still has N
 * node(s) (target size T)AFTER", as a start and a reload word it alike. */
static int cluster__refuse_nonempty(const char *before, const group_t *g, const char *after,
                                    frugal_err_t *err) {
    return frugal_err_set(err, FRUGAL_EPRECOND,
                          "%snode group %s still has %zu node%s (target size %d)%s", before,
                          g->spec.id, g->instances_count, g->instances_count == 1 ? "" : "s",
                          (int)g->target_size, after);
}

/* A group of the state file that the config no longer has (or an autoprovisioned one
 * while autoprovisioning is off): dropped when empty; refused while it holds nodes, as a
 * reload refuses it, since nothing would ever delete its machines or list them again. */
static int cluster__drop_unconfigured(cluster_t *c, const group_t *sg, frugal_err_t *err) {
    const char *why =
        sg->autoprovisioned ? "autoprovisioning is disabled" : "it is no longer in the config";
    const char *fix = sg->autoprovisioned
                          ? "enable autoprovisioning until it is empty"
                          : "configure it again and scale it to 0 before removing it";
    if (sg->target_size > 0 || sg->instances_count > 0) {
        char before[FRUGAL_ERR_MSG_MAX], after[FRUGAL_ERR_MSG_MAX];
        snprintf(before, sizeof(before), "%s: ", state_backend_describe(c->state));
        snprintf(after, sizeof(after), " but %s: %s", why, fix);
        return cluster__refuse_nonempty(before, sg, after, err);
    }
    log_warn("%s: the empty node group %s dropped: %s", state_backend_describe(c->state),
             sg->spec.id, why);
    return 0;
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
        if (j < configured && sg->autoprovisioned) {
            /* Its instances are machines of the autoprovisioned shape, not of the group
             * configured under the same id now (a reload refuses this too); one that holds
             * nothing simply goes. */
            if (sg->exists || sg->target_size > 0 || sg->instances_count > 0) {
                rc = frugal_err_set(
                    err, FRUGAL_EPRECOND,
                    "%s: node group %s is autoprovisioned (machine type %s) but the config also "
                    "has it: choose another id for the configured group",
                    state_backend_describe(c->state), sg->spec.id, sg->spec.machine_type);
                goto out;
            }
            log_warn("%s: the empty autoprovisioned node group %s dropped: the config has a "
                     "group of that id",
                     state_backend_describe(c->state), sg->spec.id);
            continue;
        }
        const char *stale = sg->autoprovisioned && cfg->autoprovisioning.enabled
                                ? cluster__nap_stale(cfg, sg)
                                : NULL;
        if (stale != NULL) {
            log_warn("%s: autoprovisioned node group %s dropped (%s)",
                     state_backend_describe(c->state), sg->spec.id, stale);
        } else if (j < configured) {
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
            if (config_find_machine_type(cfg, g->spec.machine_type) == NULL)
                log_warn("%s: autoprovisioned node group %s: machine type %s is no longer in "
                         "the catalog: CA gets no template for it",
                         state_backend_describe(c->state), g->spec.id, g->spec.machine_type);
            if (cluster__gvec_push(v, g, true) != 0) {
                group_free(g);
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto out;
            }
        } else if ((rc = cluster__drop_unconfigured(c, sg, err)) != 0) {
            goto out;
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
    if (provider_has_fence(c->provider))
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

static int cluster__open_once(const frugal_config_t *cfg, struct provider *provider,
                              struct state_backend *state, cluster_t **out, frugal_err_t *err) {
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
            if (initial > 0 && (rc = provider_increase(provider, g, initial, now, err)) != 0)
                goto fail_build;
        } else if ((rc = cluster__repair_target(c, g, now, err)) != 0 ||
                   (rc = cluster__clamp(c, g, now, err)) != 0) {
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
    if (provider_has_fence(c->provider))
        state_backend_lease(c->state, cluster__fence, c->provider);
    rc = cluster__commit(c, NULL, changes, v.count, err);
    free(changes);
    v.count = 0;
    cluster__gvec_free(&v);
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
    cluster__gvec_free(&v);
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
    /* A file backend is its path (state_file above), however it was written. */
    bool state_differs = sa->backend != sb->backend;
    if (!state_differs && sa->backend == STATE_BACKEND_ETCD) {
        state_differs = cluster__str_differs(sa->prefix, sb->prefix) ||
                        cluster__str_differs(sa->tls_ca, sb->tls_ca) ||
                        cluster__str_differs(sa->tls_cert, sb->tls_cert) ||
                        cluster__str_differs(sa->tls_key, sb->tls_key) ||
                        sa->lease_ttl_ms != sb->lease_ttl_ms ||
                        sa->request_timeout_ms != sb->request_timeout_ms ||
                        sa->endpoints_count != sb->endpoints_count;
        for (size_t i = 0; !state_differs && i < sa->endpoints_count; i++)
            state_differs = strcmp(sa->endpoints[i], sb->endpoints[i]) != 0;
    }
    if (state_differs)
        return "state";
    /* The transport is built with the limits. */
    const limits_config_t *la = &cur->limits, *lb = &next->limits;
    if (la->memory_bytes != lb->memory_bytes)
        return "limits.memory";
    if (la->receive_timeout_ms != lb->receive_timeout_ms)
        return "limits.receive_timeout";
    if (la->idle_timeout_ms != lb->idle_timeout_ms)
        return "limits.idle_timeout";
    if (la->max_concurrent_streams != lb->max_concurrent_streams)
        return "limits.max_concurrent_streams";
    if (la->max_calls_per_worker != lb->max_calls_per_worker)
        return "limits.max_calls_per_worker";
    if (la->max_header_bytes != lb->max_header_bytes)
        return "limits.max_header_bytes";
    if (cluster__str_differs(cur->provider_kind, next->provider_kind))
        return "provider.kind";
    if (cur->boot_seconds != next->boot_seconds)
        return "provider.boot_seconds";
    if (cluster__str_differs(cur->exec_command, next->exec_command))
        return "provider.command";
    if (cur->exec_timeout_ms != next->exec_timeout_ms)
        return "provider.timeout";
    if (cur->exec_parallelism != next->exec_parallelism)
        return "provider.parallelism";
    return NULL;
}

/* The change a reload makes to the published configured group g (*next NULL: remove
 * it), or a refusal. */
static int cluster__reload_group(cluster_t *c, const group_t *g, const frugal_config_t *cfg,
                                 group_t **next, frugal_err_t *err) {
    *next = NULL;
    const node_group_config_t *ng = config_find_node_group(cfg, g->spec.id);
    if (ng == NULL) {
        bool busy = cluster__provider_busy(c, g);
        if (g->target_size > 0 || g->instances_count > 0 || busy)
            return cluster__refuse_nonempty(
                "", g,
                busy ? " and machine hooks running: remove it from the config only once it is "
                       "empty"
                     : ": remove it from the config only once it is empty",
                err);
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

/* An autoprovisioned group across a reload: dropped when autoprovisioning is turned
 * off and it is theoretical (CA could otherwise still create it, unbounded by the limits
 * that no longer apply), or when it is theoretical and stale (cluster__nap_stale);
 * turning autoprovisioning off while it has nodes, or exists, is refused, as removing a
 * configured group with nodes is. */
static int cluster__reload_nap_group(cluster_t *c, const group_t *g, const frugal_config_t *next,
                                     const char **drop, frugal_err_t *err) {
    const autoprov_config_t *ap = &next->autoprovisioning;
    bool holds = g->target_size > 0 || g->instances_count > 0 || cluster__provider_busy(c, g);
    if (!ap->enabled && holds)
        return cluster__refuse_nonempty("autoprovisioning.enabled: autoprovisioned ", g,
                                        ": turn autoprovisioning off only once it is empty", err);
    /* Dropped here, a created group would never have its provider's delete_group run. */
    if (!ap->enabled && g->exists)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "autoprovisioning.enabled: autoprovisioned node group %s exists "
                              "(empty): delete it first (frugal ctl delete %s), or wait for "
                              "empty_group_ttl",
                              g->spec.id, g->spec.id);
    const char *stale = ap->enabled && !holds ? cluster__nap_stale(next, g) : NULL;
    *drop = !ap->enabled ? "autoprovisioning is off" : stale;
    return 0;
}

/* A group a reload adds may be stored already, by a replica whose config had it first
 * (a shared store): g takes over its target size and instances, which writing g afresh
 * would lose. *adopted: it did. */
static int cluster__reload_adopt(cluster_t *c, group_t *g, bool *adopted, frugal_err_t *err) {
    group_t stored;
    memset(&stored, 0, sizeof(stored));
    int rc = state_backend_stored(c->state, g->spec.id, &stored, err);
    *adopted = false;
    if (rc == FRUGAL_ENOTFOUND)
        return 0;
    if (rc == 0 && (stored.autoprovisioned || !stored.managed)) {
        rc = frugal_err_set(err, FRUGAL_EPRECOND,
                            "node group %s: %s holds it as %s: choose another id", g->spec.id,
                            state_backend_describe(c->state),
                            stored.autoprovisioned ? "autoprovisioned" : "unmanaged");
    } else if (rc == 0) {
        log_info("reload: node group %s resumes as %s holds it (target size %d, %zu instances)",
                 g->spec.id, state_backend_describe(c->state), (int)stored.target_size,
                 stored.instances_count);
        cluster__adopt(g, &stored);
        *adopted = true;
    }
    group_clear(&stored);
    return rc;
}

static int cluster__reload_once(cluster_t *c, const frugal_config_t *next, frugal_err_t *err) {
    pthread_mutex_lock(&c->write_mu);
    const frugal_config_t *cur = c->cfg;
    int rc = 0;
    size_t n = 0;
    change_t *changes = calloc(c->count + next->node_groups_count + 1, sizeof(*changes));
    /* Each autoprovisioned group dropped, and why, logged once the reload took effect. */
    struct {
        const char *why;
        char *id; /* copied: the group is gone after the commit */
    } *drops = calloc(c->count + 1, sizeof(*drops));
    const char *key = cluster__restart_key(cur, next);
    if (changes == NULL || drops == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    else if (key != NULL)
        rc = frugal_err_set(err, FRUGAL_EPRECOND, "%s changes only with a restart", key);
    bool configured = rc == 0; /* the slots below and later hooks use next */
    if (configured)
        provider_configure(c->provider, next);
    for (size_t i = 0; rc == 0 && i < c->count; i++) {
        if (c->groups[i]->autoprovisioned) {
            /* They follow the autoprovisioning settings, which apply at once. */
            const char *drop = NULL;
            rc = cluster__reload_nap_group(c, c->groups[i], next, &drop, err);
            if (rc == 0 && drop != NULL) {
                drops[i].why = drop;
                changes[n++] = (change_t){.index = i, .next = NULL};
            }
            continue;
        }
        group_t *g = NULL;
        if ((rc = cluster__reload_group(c, c->groups[i], next, &g, err)) == 0)
            changes[n++] = (change_t){.index = i, .next = g};
    }
    int64_t now = cluster_now_ms();
    for (size_t i = 0; rc == 0 && i < next->node_groups_count; i++) {
        const node_group_config_t *ng = &next->node_groups[i];
        const group_t *old = cluster_find_group(c, ng->spec.id);
        /* An autoprovisioned group this reload drops (it holds nothing) leaves its id. */
        bool dropped = false;
        for (size_t k = 0; old != NULL && k < n && !dropped; k++)
            dropped = changes[k].next == NULL && changes[k].index == cluster__index_of(c, old);
        if (old != NULL && old->autoprovisioned && !dropped) {
            rc = frugal_err_set(err, FRUGAL_EPRECOND,
                                "node group %s is autoprovisioned: choose another id", ng->spec.id);
        } else if (old == NULL || dropped) {
            group_t *g = cluster__group_from_config(ng);
            int32_t initial = ng->size >= 0 ? ng->size : ng->min_size;
            bool adopted = false;
            if (g == NULL)
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            else if (g->managed && !dropped)
                rc = cluster__reload_adopt(c, g, &adopted, err);
            if (rc == 0 && g != NULL && g->managed && !adopted && initial > 0)
                rc = provider_increase(c->provider, g, initial, now, err);
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
    size_t groups_before = c->count;
    for (size_t i = 0; rc == 0 && i < groups_before; i++)
        if (drops[i].why != NULL && (drops[i].id = strdup(c->groups[i]->spec.id)) == NULL)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    if (rc == 0) {
        config_retain(next);
        cluster_ctx_t reload = {.next_cfg = next};
        rc = cluster__commit(c, &reload, changes, n, err); /* consumes every next */
        n = 0;
        if (rc != 0)
            config_release(next);
    } else {
        cluster__staged_abort(c);
    }
    for (size_t i = 0; i < n; i++)
        group_free(changes[i].next);
    free(changes);
    for (size_t i = 0; drops != NULL && i < groups_before; i++) {
        if (rc == 0 && drops[i].id != NULL)
            log_warn("reload: autoprovisioned node group %s dropped (%s)", drops[i].id,
                     drops[i].why);
        free(drops[i].id);
    }
    free(drops);
    if (rc != 0 && configured)
        provider_configure(c->provider, cur);
    pthread_mutex_unlock(&c->write_mu);
    if (rc == 0)
        config_release(cur);
    return rc;
}

/* Replicas started together on an empty etcd prefix race for its first write: the loser
 * loads what the winner wrote and opens again. */
int cluster_open(const frugal_config_t *cfg, struct provider *provider, struct state_backend *state,
                 cluster_t **out, frugal_err_t *err) {
    int rc, attempt = 0;
    while ((rc = cluster__open_once(cfg, provider, state, out, err)) == FRUGAL_EABORTED &&
           ++attempt <= CLUSTER_COMMIT_ATTEMPTS)
        log_info("%s: loading the state again", err->msg);
    return rc;
}

/* Replicas reloading the same edit at once race for the write: the loser catches up
 * with the winner's and applies its reload again (usually a no-op by then). */
int cluster_reload(cluster_t *c, const frugal_config_t *next, frugal_err_t *err) {
    int rc, attempt = 0;
    while ((rc = cluster__reload_once(c, next, err)) == FRUGAL_EABORTED &&
           cluster__retry(c, rc, &attempt, 0))
        log_info("%s: applying the reload again", err->msg);
    return rc;
}
