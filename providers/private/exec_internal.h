/* The exec provider's internals, shared by its files and by no one else (a PRIVATE
 * include directory of frugal_cluster):
 *
 *   exec.c            the provider's slots: increase, delete, refresh (applying the
 *                     results), the group hooks, commit and abort of the staged jobs,
 *                     release, fence
 *   exec_job.c        a job and the queues it moves through (staged, pending, active,
 *                     results), the busy map, the groups seen this round
 *   exec_run.c        the worker threads: running a job's hook with hook_runner and
 *                     recording its outcome
 *   exec_reconcile.c  reconciliation: queueing each group's `list`, acting on the
 *                     judgement of its result (reconcile.c's)
 *
 * Calls go one way only: exec.c into the other three, exec_run.c and exec_reconcile.c
 * into exec_job.c, which calls none of them. */
#ifndef FRUGAL_EXEC_INTERNAL_H
#define FRUGAL_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "group.h"
#include "provider.h"
#include "reconcile.h"
#include "strmap.h"

#define EXEC_RETRY_MS 30000        /* earliest re-run after a result was applied */
#define EXEC_GROUP_TIMEOUT_MS 3000 /* cap of the synchronous group hooks: < CA's 5 s */
/* A list runs at most one reconcile interval (the next one is due then), and never less
 * than this: a list that hangs holds a worker that creates and deletes also need. */
#define EXEC_LIST_TIMEOUT_FLOOR_MS 10000
#define EXEC_STOP_GRACE_MS 5000 /* destroy: how long running hooks may finish */
#define EXEC_EXIT_NO_RESOURCES 3

typedef enum exec_verb {
    EXEC_CREATE,
    EXEC_DELETE,
    EXEC_CREATE_GROUP,
    EXEC_DELETE_GROUP,
    EXEC_LIST, /* a group's machines (reconciliation): no instance, its own key "" */
} exec_verb_t;

typedef enum exec_outcome {
    EXEC_OK,
    EXEC_NO_RESOURCES, /* exit status 3 */
    EXEC_FAILED,       /* other status, signal, or the hook could not be started */
    EXEC_TIMEOUT,
    EXEC_FENCED, /* not run, or killed, because the leadership lease ran out: no result */
} exec_outcome_t;

/* What commit_staged does with a staged job. */
typedef enum exec_stage {
    EXEC_STAGE_ENQUEUE, /* queue it */
    EXEC_STAGE_CANCEL,  /* cancel key's queued job (the job only carries the key) */
    EXEC_STAGE_REPLACE, /* cancel key's queued job, then queue this one unless key is busy */
} exec_stage_t;

typedef struct exec_job {
    struct exec_job *next;
    exec_verb_t verb;
    exec_stage_t stage;
    bool orphan; /* delete of a machine whose instance is gone: not in busy */
    bool rerun;  /* a create queued again (a restart, a retry): an earlier run may have made
                  * the machine */
    bool queued; /* in pending (else running or in results) */
    bool worker; /* run by a worker, which took it in release epoch `epoch` */
    unsigned epoch;
    char *group;
    char *key;   /* the instance's provider id when queued: how results find it */
    char *arg;   /* argv[3]: instance name (create) or provider id (delete) */
    char **envp; /* NULL-terminated, owned */
    exec_outcome_t outcome;
    char *first_line; /* first line of stdout, NULL when empty */
    char *output;     /* list: the whole stdout (output_len bytes), NULL otherwise */
    size_t output_len;
    bool truncated; /* stdout was longer than HOOK_OUTPUT_MAX */
    bool counted;   /* in frugal_hook_runs_total already */
    char *message;  /* what went wrong, NULL when OK */
} exec_job_t;

/* Until when (CLOCK_MONOTONIC ms) this replica may run machine work: INT64_MAX unless a
 * shared state store fences it with its leadership lease. */
typedef struct exec_fence {
    atomic_llong until_ms;
} exec_fence_t;

typedef struct exec_backoff {
    struct exec_backoff *next;
    char *group;
    char *id;
    int64_t not_before_ms;
} exec_backoff_t;

typedef struct exec_provider {
    provider_t base; /* first: a provider_t * is an exec_provider_t * */
    /* Retained; changed by configure, read by the slots (both serialised by the
     * cluster), never by the workers. */
    const frugal_config_t *cfg;
    char *command; /* provider.command: a restart changes it, the workers read it */
    int64_t timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* pending non-empty, or stopping */
    pthread_cond_t idle_cv; /* a worker finished a job */
    exec_job_t *pending, *pending_tail;
    exec_job_t *results, *results_tail;
    exec_job_t *active; /* the jobs the workers run now */
    /* Staged by the slots, queued by commit_staged, dropped by abort_staged; only the
     * cluster's (serialised) thread touches them, under mu for busy(). */
    exec_job_t *staged, *staged_tail;
    size_t staged_busy; /* staged jobs that will enter busy */
    /* The groups refreshed since the last commit/abort: after a refresh round,
     * commit_staged orphan-deletes the results of every other group (it is gone). */
    char **seen;
    size_t seen_count, seen_cap;
    bool refreshed, seen_oom;
    strmap_t *busy; /* provider id -> its job, from enqueue until applied */
    exec_backoff_t *backoff;
    size_t running;
    bool stopping;
    atomic_bool kill_all; /* destroy's grace is over: kill running hooks */
    atomic_uint released; /* bumped by release: the workers kill the hooks taken before */
    pthread_t *threads;
    size_t threads_count;
    exec_fence_t *fence;   /* a shared page: the guards read it (see hook_runner.h) */
    reconcile_t reconcile; /* the groups' lists: refresh, commit and release, under mu */
    uint64_t work;         /* machine work results applied to any group so far, under mu */
} exec_provider_t;

/* exec_job.c */

void exec__job_free(exec_job_t *j);

void exec__list_free(exec_job_t *j);

/* Append j to the list *head .. *tail (one of pending, staged, results). */
void exec__list_append(exec_job_t **head, exec_job_t **tail, exec_job_t *j);

/* Take j (preceded by prev, NULL when first) out of the list *head .. *tail. */
void exec__list_unlink(exec_job_t **head, exec_job_t **tail, exec_job_t *prev, exec_job_t *j);

/* A job for instance id of g (name: its name, "" when unknown); NULL when out of
 * memory. */
exec_job_t *exec__job_new(const exec_provider_t *p, exec_verb_t verb, const group_t *g,
                          const char *id, const char *name);

/* An orphan delete of the machine made by the finished create j, whose instance no
 * group lists any more (j's own environment, FRUGAL_PROVIDER_ID set to the machine's
 * id); NULL when out of memory. */
exec_job_t *exec__orphan_of(const exec_job_t *j);

/* Queue j; with mu held. Cannot fail: busy was reserved by the caller. */
void exec__enqueue_locked(exec_provider_t *p, exec_job_t *j);

/* Remove id's job from pending if it has not started; with mu held. True when it
 * was removed (and freed). */
bool exec__cancel_locked(exec_provider_t *p, const char *id);

/* Stage j for commit_staged; with mu held. Cannot fail: the caller reserved busy for
 * strmap_count(busy) + staged_busy + its jobs. */
void exec__stage_locked(exec_provider_t *p, exec_job_t *j, exec_stage_t stage);

/* Reserve busy for n more staged jobs; with mu held. */
int exec__reserve_locked(exec_provider_t *p, size_t n);

void exec__seen_clear(exec_provider_t *p);

/* Remember that group was refreshed this round; with mu held. */
void exec__seen_add(exec_provider_t *p, const char *group);

bool exec__seen_has(const exec_provider_t *p, const char *group);

/* Whether list holds machine work (any job but a list) of group. */
bool exec__list_has_group(const exec_job_t *j, const char *group);

/* Whether machine work of group is staged, queued, running or not yet applied. */
bool exec__group_busy_locked(const exec_provider_t *p, const char *group);

bool exec__has_list(const exec_job_t *j, const char *group);

const char *exec__verb_name(exec_verb_t v);

/* Remember not to re-run id's hook before until; with mu held. */
void exec__backoff_set_locked(exec_provider_t *p, const char *group, const char *id, int64_t until);

/* Whether id may be re-run now; drops expired entries of group. With mu held. */
bool exec__backoff_allows_locked(exec_provider_t *p, const char *group, const char *id,
                                 int64_t now);

/* Every frugal_hook_runs_total{verb,result} series at 0, so that a rule's increase()
 * sees the first failure of a kind (a series that appears at 1 shows no increase). */
void exec__metrics_init(void);

/* Count j's run in frugal_hook_runs_total with its outcome, once. */
void exec__count_run(exec_job_t *j);

/* An orphan delete is recorded nowhere else: the leader cannot run it again. */
void exec__warn_orphan_dropped(const exec_job_t *j);

/* exec_run.c */

/* Run j's hook and record it: frugal_hook_seconds, and frugal_hook_runs_total{verb,result}
 * unless its result may still be refused when applied (a create that printed an id). */
void exec__run(exec_provider_t *p, exec_job_t *j, int64_t timeout_ms);

void *exec__worker(void *arg);

/* exec_reconcile.c */

/* Queue g's list when reconciliation is on, its interval has passed and no list of g is
 * queued, running or unapplied. With mu held. */
void exec__list_queue_locked(exec_provider_t *p, const group_t *g, reconcile_group_t *rg,
                             int64_t now);

/* Judge g's finished list j and act on it. A list that failed or cannot be read
 * changes nothing. With mu held. */
void exec__reconcile_locked(exec_provider_t *p, group_t *g, reconcile_group_t *rg,
                            const exec_job_t *j, int64_t now, bool *changed);

/* Forget every group's record and the leaks it reported (this replica no longer
 * reconciles). With mu held. */
void exec__reconcile_forget_locked(exec_provider_t *p);

/* Apply a reload's reconcile_interval at once: off forgets every record, a shorter one
 * brings each group's next list forward. With mu held. */
void exec__reconcile_configure_locked(exec_provider_t *p);

/* reconcile_prune's test: the group was refreshed this round. */
bool exec__reconcile_keep(void *arg, const char *group);

#endif
