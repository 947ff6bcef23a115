/* The backend interface: what creates and deletes machines.
 *
 * A backend is a const provider_ops_t table plus a registry entry under the config's
 * provider.kind. Concrete providers embed provider_t first. The cluster module calls
 * every slot with its write lock held, on a private copy of the group: a slot that
 * fails must leave the group as it found it, and no slot may block for long (CA's call
 * timeout is 5 s): slow machine work happens later, reported through refresh.
 *
 * Two phases: increase, delete_instances, decrease_target and refresh only stage the
 * machine work they imply. The cluster then writes the state file and calls exactly one
 * of commit_staged (the write succeeded: start the staged work) or abort_staged (the
 * write failed, or the change was refused after the slots ran: forget it), so no
 * machine is made or destroyed for a change that was never published. */
#ifndef FRUGAL_PROVIDER_H
#define FRUGAL_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>

#include "group.h"
#include "config.h"
#include "errors.h"

typedef struct provider provider_t;

typedef struct provider_ops {
    const char *kind;

    /* Allocate a provider for cfg (which outlives it). */
    int (*create)(const frugal_config_t *cfg, provider_t **out, frugal_err_t *err);
    void (*destroy)(provider_t *p);

    /* Request delta (> 0) new instances: append them to g->instances (state creating,
     * ids unique for ever, from g->next_seq) and raise g->target_size by delta. */
    int (*increase)(provider_t *p, group_t *g, int32_t delta, int64_t now_ms, frugal_err_t *err);

    /* Delete the instances at the given indexes of g->instances: mark them deleting
     * and lower g->target_size by n. */
    int (*delete_instances)(provider_t *p, group_t *g, const size_t *indexes, size_t n,
                            int64_t now_ms, frugal_err_t *err);

    /* Drop -delta (delta < 0) not-yet-running requests, newest first, and lower
     * g->target_size accordingly (a request that may have made a machine may become
     * deleting instead, since now_ms). The cluster has checked there are enough. */
    int (*decrease_target)(provider_t *p, group_t *g, int32_t delta, int64_t now_ms,
                           frugal_err_t *err);

    /* Advance g's instances to now (creating -> running, deleting -> removed); set
     * *changed when anything changed that must be persisted. A provider may replace an
     * instance's id (the machine's real provider id): the cluster re-indexes the group,
     * and refuses the whole result when the new id belongs to another group. */
    int (*refresh)(provider_t *p, group_t *g, int64_t now_ms, bool *changed, frugal_err_t *err);

    /* Node auto-provisioning: make the theoretical group g real / remove the empty g.
     * These may block briefly (the exec provider runs its hook, capped at 3 s so the
     * call fails within CA's 5 s timeout). They act at once, before the commit. */
    int (*create_group)(provider_t *p, group_t *g, frugal_err_t *err);
    int (*delete_group)(provider_t *p, group_t *g, frugal_err_t *err);

    /* Called by the cluster after the durable write succeeded (commit_staged: start
     * what the slots staged since the last commit or abort) / after it failed or was
     * refused (abort_staged: drop it). Cannot fail. After a refresh of every existing
     * group, commit_staged may also clean up the work of groups that no longer exist.
     * The simulated provider has none (NULL). */
    void (*commit_staged)(provider_t *p);
    void (*abort_staged)(provider_t *p);

    /* This replica no longer owns the machine work (it lost a shared store's
     * leadership): end the running work at once and forget the queued and finished
     * work, which the leader redoes from the stored instances. Cannot fail. NULL:
     * nothing to end. */
    void (*release)(provider_t *p);

    /* This replica may run machine work until until_ms (CLOCK_MONOTONIC, ms; 0: not at
     * all, INT64_MAX: for ever, the default): a shared store's leadership lease. The
     * provider must end its running work by then on its own, even if this process is
     * paused and fence is not called again (release follows later, when the process
     * runs). Called on a backend thread at every renewal: must not block. NULL: the
     * provider's work needs no fence. */
    void (*fence)(provider_t *p, int64_t until_ms);

    /* Whether machine work (queued, running, or finished but not yet applied by
     * refresh) remains for group g: such a group is not empty for deletion. NULL: never
     * busy. */
    bool (*busy)(provider_t *p, const group_t *g);

    /* A config reload is being applied: the slots called from now on read cfg (which
     * the provider retains, config_retain, until the next configure or destroy). The
     * cluster calls it with its write lock held, before the reload's slots, and again
     * with the running config when the reload fails. NULL: the provider keeps nothing
     * of the config that a reload may change. */
    void (*configure)(provider_t *p, const frugal_config_t *cfg);
} provider_ops_t;

struct provider {
    const provider_ops_t *ops;
};

/* The backend registered under kind, NULL when none. */
const provider_ops_t *provider_lookup(const char *kind);

/* Convenience: look up cfg->provider_kind and create it; ENOTFOUND naming the kind. */
int provider_create(const frugal_config_t *cfg, provider_t **out, frugal_err_t *err);
void provider_destroy(provider_t *p);

/* The backends compiled in, for the registry. */
extern const provider_ops_t provider_simulated_ops;
extern const provider_ops_t provider_exec_ops;

/* ---- Calling a provider: every slot through these, never through ops directly. An
 * optional slot that is NULL does what its comment above says; a machine slot that is
 * NULL refuses with FRUGAL_EUNIMPL naming the provider's kind. ---- */

static inline int provider__missing(const provider_t *p, const char *slot, frugal_err_t *err) {
    return frugal_err_set(err, FRUGAL_EUNIMPL, "provider %s has no %s", p->ops->kind, slot);
}

static inline int provider_increase(provider_t *p, group_t *g, int32_t delta, int64_t now_ms,
                                    frugal_err_t *err) {
    return p->ops->increase != NULL ? p->ops->increase(p, g, delta, now_ms, err)
                                    : provider__missing(p, "increase", err);
}

static inline int provider_delete_instances(provider_t *p, group_t *g, const size_t *indexes,
                                            size_t n, int64_t now_ms, frugal_err_t *err) {
    return p->ops->delete_instances != NULL
               ? p->ops->delete_instances(p, g, indexes, n, now_ms, err)
               : provider__missing(p, "delete_instances", err);
}

static inline int provider_decrease_target(provider_t *p, group_t *g, int32_t delta, int64_t now_ms,
                                           frugal_err_t *err) {
    return p->ops->decrease_target != NULL ? p->ops->decrease_target(p, g, delta, now_ms, err)
                                           : provider__missing(p, "decrease_target", err);
}

static inline int provider_refresh(provider_t *p, group_t *g, int64_t now_ms, bool *changed,
                                   frugal_err_t *err) {
    return p->ops->refresh != NULL ? p->ops->refresh(p, g, now_ms, changed, err)
                                   : provider__missing(p, "refresh", err);
}

static inline int provider_create_group(provider_t *p, group_t *g, frugal_err_t *err) {
    return p->ops->create_group != NULL ? p->ops->create_group(p, g, err)
                                        : provider__missing(p, "create_group", err);
}

static inline int provider_delete_group(provider_t *p, group_t *g, frugal_err_t *err) {
    return p->ops->delete_group != NULL ? p->ops->delete_group(p, g, err)
                                        : provider__missing(p, "delete_group", err);
}

static inline void provider_commit_staged(provider_t *p) {
    if (p->ops->commit_staged != NULL)
        p->ops->commit_staged(p);
}

static inline void provider_abort_staged(provider_t *p) {
    if (p->ops->abort_staged != NULL)
        p->ops->abort_staged(p);
}

static inline bool provider_has_release(const provider_t *p) {
    return p->ops->release != NULL;
}

static inline void provider_release(provider_t *p) {
    if (p->ops->release != NULL)
        p->ops->release(p);
}

/* Whether the provider's work needs the leadership lease's fence at all. */
static inline bool provider_has_fence(const provider_t *p) {
    return p->ops->fence != NULL;
}

static inline void provider_fence(provider_t *p, int64_t until_ms) {
    if (p->ops->fence != NULL)
        p->ops->fence(p, until_ms);
}

static inline bool provider_busy(provider_t *p, const group_t *g) {
    return p->ops->busy != NULL && p->ops->busy(p, g);
}

static inline void provider_configure(provider_t *p, const frugal_config_t *cfg) {
    if (p->ops->configure != NULL)
        p->ops->configure(p, cfg);
}

#endif
