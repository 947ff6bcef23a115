/* Where the cluster keeps its state: the interface every state backend implements, and
 * the file backend behind it.
 *
 * The cluster calls a backend at four moments: at open (load what was stored), for
 * every change before it is published (commit: OK only once the store holds it), at
 * start of `frugal serve` (lock: the file backend's single-writer flock; a shared
 * backend elects a leader instead) and, for a shared backend, to hear of changes other
 * replicas committed (watch). The backends themselves (the file, etcd) live in the store
 * layer (server/store/), which builds the configured one; `frugal serve` hands it to
 * cluster_open. What only one kind of store has to answer (is the state there, who holds
 * the lock) is an op too, so that no caller asks which kind it talks to. */
#ifndef FRUGAL_STATE_BACKEND_H
#define FRUGAL_STATE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "group.h"
#include "state.h"

typedef struct state_backend state_backend_t;

/* One commit: the groups as they will be once it is published. */
typedef struct state_commit {
    const group_t *const *view; /* every group, in cluster order */
    size_t count;
    const group_t *const *changed; /* groups replaced or added by this commit */
    size_t changed_count;
    const char *const *removed; /* ids of groups this commit removes */
    size_t removed_count;
    bool provider_work;  /* made by the leader's provider work: fenced by its lease */
    bool whole_view;     /* validated against every group (cluster-wide limits): a shared
                            store must refuse it when any group changed meanwhile */
    bool restore;        /* the changed groups' keys were deleted outside frugal: write them
                            expecting them absent (what the cache last saw is gone) */
    bool import;         /* a whole state written into an empty store (state import): a
                            store written in several steps marks it valid last */
    int64_t deadline_ms; /* CLOCK_MONOTONIC ms the commit must be answered by (a call's
                            budget: FRUGAL_EUNAVAIL when it cannot); 0: the store's own
                            timeout */
} state_commit_t;

/* Called by a shared backend when another replica committed: g is the group as now
 * stored (NULL: the group with that id was removed). The callee copies what it keeps. */
typedef void (*state_watch_fn)(void *arg, const char *id, const group_t *g);

/* Called by a shared backend when this replica's leadership is won, renewed or lost:
 * until_ms is the CLOCK_MONOTONIC time (ms) up to which it surely leads (its lease
 * cannot have expired in the store before then), 0 when it does not lead. */
typedef void (*state_lease_fn)(void *arg, int64_t until_ms);

/* Whether a missing state may be initialised from the configuration: never (a start
 * that finds none refuses), deliberately (`--init-state`, `state init`), or only where
 * the store is new (`--init-new-volume`: the state file's directory holds nothing of an
 * earlier state, so a changed state_file or a lost file is refused). */
typedef enum {
    STATE_INIT_NEVER = 0,
    STATE_INIT_DELIBERATE,
    STATE_INIT_NEW_VOLUME,
} state_init_t;

typedef struct state_backend_ops {
    const char *kind; /* "file", "etcd" */
    /* Read the stored groups into *out (state_free). FRUGAL_ENOTFOUND when nothing is
     * stored yet (a fresh start); any other error refuses the start and names what is
     * wrong. */
    int (*load)(state_backend_t *b, state_t *out, frugal_err_t *err);
    /* Make the commit durable. On failure nothing is stored and the error says why:
     * FRUGAL_EUNAVAIL (store unreachable), FRUGAL_EABORTED (another writer won:
     * retry on the current state), FRUGAL_EIO. */
    int (*commit)(state_backend_t *b, const state_commit_t *c, frugal_err_t *err);
    /* Take what makes this process a legitimate writer before anything is served (the
     * file backend's flock; NULL: nothing to take). */
    int (*lock)(state_backend_t *b, frugal_err_t *err);
    /* Refuse to start on a store that should hold the state but does not (a volume that
     * failed to mount): FRUGAL_EPRECOND naming what to check and how to initialise with
     * the configuration at config_path (NULL: unnamed); init allows it (logged) as
     * state_init_t says. NULL op: an empty store is a fresh start. */
    int (*check_present)(state_backend_t *b, const char *config_path, state_init_t init,
                         frugal_err_t *err);
    /* Keep every other writer out while an offline command (`frugal state import`)
     * writes: the file backend's lock. NULL: the store's transactions do already. */
    int (*exclude)(state_backend_t *b, frugal_err_t *err);
    /* The group id as the store holds it now, into *out (group_clear), for a group this
     * replica does not serve yet (another replica's config has it): a reload that adds it
     * takes it over rather than write it afresh. FRUGAL_ENOTFOUND when none is stored.
     * NULL op: the store holds this replica's groups only. */
    int (*stored)(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err);
    /* Whether this replica runs provider work (hooks, timers, expiry) now. NULL: always. */
    bool (*leader)(state_backend_t *b);
    /* Deliver other replicas' commits to fn from now on, on a thread of the backend; fn
     * NULL stops the deliveries (returns once none is running). NULL op: the store has
     * one writer. */
    int (*watch)(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err);
    /* Report this replica's leadership to fn from now on: at once, then at every
     * renewal or change, on a thread of the backend; fn NULL stops the reports (returns
     * once none is running). NULL op: the replica always leads. */
    void (*lease)(state_backend_t *b, state_lease_fn fn, void *arg);
    /* After FRUGAL_EABORTED: wait until watch delivered every commit that made it fail,
     * so that a retry sees them, but not past deadline_ms (CLOCK_MONOTONIC ms; 0: the
     * store's own timeout). NULL: nothing to wait for. */
    int (*sync)(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err);
    /* A short description for log lines: "state file /x", "etcd prefix /p/". */
    const char *(*describe)(const state_backend_t *b);
    /* Release the lock and free everything. */
    void (*destroy)(state_backend_t *b);
} state_backend_ops_t;

struct state_backend {
    const state_backend_ops_t *ops;
    void *impl;
};

/* Dispatch helpers: each tolerates a NULL optional op. */
int state_backend_load(state_backend_t *b, state_t *out, frugal_err_t *err);
int state_backend_commit(state_backend_t *b, const state_commit_t *c, frugal_err_t *err);
int state_backend_lock(state_backend_t *b, frugal_err_t *err);
int state_backend_check_present(state_backend_t *b, const char *config_path, state_init_t init,
                                frugal_err_t *err);
int state_backend_exclude(state_backend_t *b, frugal_err_t *err);
bool state_backend_leader(state_backend_t *b);
int state_backend_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err);
void state_backend_lease(state_backend_t *b, state_lease_fn fn, void *arg);
int state_backend_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err);
int state_backend_stored(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err);
const char *state_backend_describe(const state_backend_t *b);
void state_backend_destroy(state_backend_t *b);

#endif
