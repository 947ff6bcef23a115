/* The exec provider: machines are made and removed by an operator-supplied hook program
 * (provider.command), run without a shell as
 *
 *     HOOK create GROUP INSTANCE        HOOK delete GROUP PROVIDER_ID
 *     HOOK create-group GROUP           HOOK delete-group GROUP
 *     HOOK list GROUP
 *
 * with FRUGAL_* environment variables describing the group and the instance.
 *
 * Slots never wait for a hook: increase and delete_instances change the group and stage
 * jobs, which commit_staged queues once the cluster has written the state file (and
 * abort_staged drops when it could not: no hook may act on a change that was not
 * published); `parallelism` worker threads run them (with hook_runner: under a guard
 * process, in a process group of their own that dies with frugal and, with a shared
 * store, when the leadership lease runs out; stdout/stderr captured up to
 * HOOK_OUTPUT_MAX, the whole group killed at the timeout) and queue the results, which
 * the refresh slot applies to the group it is given. Refresh also re-queues the work of
 * every creating (without error) or deleting instance that has no job: after a restart
 * from the state file, after a failed delete (at most every EXEC_RETRY_MS), or when a
 * refresh result was not kept. Hooks must therefore be idempotent per INSTANCE name and per
 * PROVIDER_ID.
 *
 * With provider.reconcile_interval, refresh also queues a list of each group's machines
 * every interval (one at a time per group, never staged: it changes nothing by itself)
 * and judges its result (reconcile.h): a running instance missing from enough lists in a
 * row is replaced, a listed machine frugal does not know is reported (and deleted with
 * reconcile_delete_unknown). The judgement changes the group like any refresh, so the
 * cluster commits it before the staged creates and deletes it implies run.
 *
 * create-group and delete-group are the exception: they run synchronously, capped at
 * min(timeout, EXEC_GROUP_TIMEOUT_MS) (within CA's 5 s call timeout), because the
 * cluster needs their answer.
 *
 * Locking: the cluster serialises every slot and the commit/abort of the staged jobs;
 * mu guards the job queues, the busy map and the backoff list, which the workers share
 * with the slots. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hook_env.h"
#include "hook_output.h"
#include "hook_runner.h"
#include "log.h"
#include "metrics.h"
#include "provider.h"
#include "reconcile.h"
#include "strmap.h"

#define EXEC_RETRY_MS 30000        /* earliest re-run after a result was applied */
#define EXEC_GROUP_TIMEOUT_MS 3000 /* cap of the synchronous group hooks: < CA's 5 s */
#define EXEC_STOP_GRACE_MS 5000    /* destroy: how long running hooks may finish */
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
} exec_provider_t;

/* ------------------------------------------------------------------------------------
 * Jobs
 * ---------------------------------------------------------------------------------- */

static void exec__job_free(exec_job_t *j) {
    if (j == NULL)
        return;
    free(j->group);
    free(j->key);
    free(j->arg);
    hook_env_free(j->envp);
    free(j->first_line);
    free(j->output);
    free(j->message);
    free(j);
}

static void exec__list_free(exec_job_t *j) {
    while (j != NULL) {
        exec_job_t *next = j->next;
        exec__job_free(j);
        j = next;
    }
}

/* A job for instance id of g (name: its name, "" when unknown); NULL when out of
 * memory. */
static exec_job_t *exec__job_new(const exec_provider_t *p, exec_verb_t verb, const group_t *g,
                                 const char *id, const char *name) {
    exec_job_t *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->verb = verb;
    j->group = strdup(g->spec.id);
    j->key = strdup(id != NULL ? id : "");
    j->arg = strdup(verb == EXEC_CREATE ? name : id != NULL ? id : "");
    j->envp = hook_env_build(p->cfg, g, name, id != NULL ? id : "");
    if (j->group == NULL || j->key == NULL || j->arg == NULL || j->envp == NULL) {
        exec__job_free(j);
        return NULL;
    }
    return j;
}

/* Queue j; with mu held. Cannot fail: busy was reserved by the caller. */
static void exec__enqueue_locked(exec_provider_t *p, exec_job_t *j) {
    j->queued = true;
    j->next = NULL;
    if (p->pending_tail != NULL)
        p->pending_tail->next = j;
    else
        p->pending = j;
    p->pending_tail = j;
    if (!j->orphan && j->verb != EXEC_LIST)
        strmap_put(p->busy, j->key, j, NULL);
    pthread_cond_signal(&p->work_cv);
}

/* Remove id's job from pending if it has not started; with mu held. True when it
 * was removed (and freed). */
static bool exec__cancel_locked(exec_provider_t *p, const char *id) {
    exec_job_t *j = strmap_get(p->busy, id);
    if (j == NULL || !j->queued)
        return false;
    exec_job_t *prev = NULL;
    for (exec_job_t *q = p->pending; q != NULL; prev = q, q = q->next) {
        if (q != j)
            continue;
        if (prev != NULL)
            prev->next = q->next;
        else
            p->pending = q->next;
        if (p->pending_tail == q)
            p->pending_tail = prev;
        strmap_remove(p->busy, id);
        exec__job_free(j);
        return true;
    }
    return false;
}

/* Stage j for commit_staged; with mu held. Cannot fail: the caller reserved busy for
 * strmap_count(busy) + staged_busy + its jobs. */
static void exec__stage_locked(exec_provider_t *p, exec_job_t *j, exec_stage_t stage) {
    j->stage = stage;
    j->next = NULL;
    if (p->staged_tail != NULL)
        p->staged_tail->next = j;
    else
        p->staged = j;
    p->staged_tail = j;
    if (stage != EXEC_STAGE_CANCEL && !j->orphan)
        p->staged_busy++;
}

/* Reserve busy for n more staged jobs; with mu held. */
static int exec__reserve_locked(exec_provider_t *p, size_t n) {
    return strmap_reserve(p->busy, strmap_count(p->busy) + p->staged_busy + n);
}

static void exec__seen_clear(exec_provider_t *p) {
    for (size_t i = 0; i < p->seen_count; i++)
        free(p->seen[i]);
    p->seen_count = 0;
    p->refreshed = false;
    p->seen_oom = false;
}

/* Remember that group was refreshed this round; with mu held. */
static void exec__seen_add(exec_provider_t *p, const char *group) {
    p->refreshed = true;
    for (size_t i = 0; i < p->seen_count; i++) {
        if (strcmp(p->seen[i], group) == 0)
            return;
    }
    if (p->seen_count == p->seen_cap) {
        size_t cap = p->seen_cap > 0 ? p->seen_cap * 2 : 16;
        char **seen = realloc(p->seen, cap * sizeof(*seen));
        if (seen == NULL) {
            p->seen_oom = true; /* no sweep this round: never delete a live group's work */
            return;
        }
        p->seen = seen;
        p->seen_cap = cap;
    }
    if ((p->seen[p->seen_count] = strdup(group)) == NULL)
        p->seen_oom = true;
    else
        p->seen_count++;
}

static bool exec__seen_has(const exec_provider_t *p, const char *group) {
    for (size_t i = 0; i < p->seen_count; i++) {
        if (strcmp(p->seen[i], group) == 0)
            return true;
    }
    return false;
}

/* An orphan delete of the machine made by the finished create j, whose instance no
 * group lists any more (j's own environment, FRUGAL_PROVIDER_ID set to the machine's
 * id); NULL when out of memory. */
static exec_job_t *exec__orphan_of(const exec_job_t *j) {
    const char *id = j->first_line != NULL ? j->first_line : j->key;
    exec_job_t *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    o->verb = EXEC_DELETE;
    o->orphan = true;
    o->group = strdup(j->group);
    o->key = strdup(id);
    o->arg = strdup(id);
    o->envp = hook_env_with_provider_id(j->envp, id);
    bool ok = o->group != NULL && o->key != NULL && o->arg != NULL && o->envp != NULL;
    if (!ok) {
        exec__job_free(o);
        return NULL;
    }
    return o;
}

/* ------------------------------------------------------------------------------------
 * Running a hook
 * ---------------------------------------------------------------------------------- */

static const char *exec__verb_name(exec_verb_t v) {
    switch (v) {
    case EXEC_CREATE:
        return "create";
    case EXEC_DELETE:
        return "delete";
    case EXEC_CREATE_GROUP:
        return "create-group";
    case EXEC_DELETE_GROUP:
        return "delete-group";
    case EXEC_LIST:
        return "list";
    }
    return "?";
}

/* Set j->message to fmt..., then ": LAST_STDERR_LINE" when there is one. */
static void exec__fail(exec_job_t *j, exec_outcome_t outcome, const hook_output_t *err,
                       const char *what) {
    char *line = err != NULL ? hook_output_line(err, true) : NULL;
    size_t len = strlen(what) + (line != NULL ? strlen(line) : 0) + 3;
    j->outcome = outcome;
    free(j->message);
    j->message = malloc(len);
    if (j->message != NULL)
        snprintf(j->message, len, "%s%s%s", what, line != NULL ? ": " : "",
                 line != NULL ? line : "");
    free(line);
}

/* A create's provider id (the first line it printed) must be one token: refuse the
 * result otherwise, so that no unusable id reaches the state, CA or kubelet. */
static void exec__check_id(exec_job_t *j) {
    char why[96], msg[FRUGAL_ERR_MSG_MAX];
    const char *problem = NULL;
    if (j->verb != EXEC_CREATE || j->first_line == NULL ||
        (problem = hook_output_id_problem(j->first_line, why, sizeof(why))) == NULL)
        return;
    snprintf(msg, sizeof(msg),
             "hook create printed a provider id that %s (a provider id is one word without "
             "control characters): refused",
             problem);
    free(j->first_line);
    j->first_line = NULL;
    exec__fail(j, EXEC_FAILED, NULL, msg);
}

/* A list's whole stdout, for its judgement. */
static void exec__keep_list(exec_job_t *j, const hook_output_t *out) {
    if ((j->output = malloc(out->len + 1)) == NULL) {
        exec__fail(j, EXEC_FAILED, NULL, "out of memory keeping the list");
        return;
    }
    memcpy(j->output, out->data, out->len + 1);
    j->output_len = out->len;
    j->truncated = out->overflow;
}

/* Whether j's running hook must end now: destroy's grace is over, or release gave the
 * work away since a worker took it. */
typedef struct exec_stop {
    exec_provider_t *p;
    const exec_job_t *j;
} exec_stop_t;

static bool exec__stop_requested(void *arg) {
    const exec_stop_t *s = arg;
    return atomic_load(&s->p->kill_all) ||
           (s->j->worker && atomic_load(&s->p->released) != s->j->epoch);
}

/* Run j's hook to completion (or timeout_ms, or kill_all) and record its outcome.
 * Never fails: a hook that cannot be started is EXEC_FAILED. */
static void exec__run_hook(exec_provider_t *p, exec_job_t *j, int64_t timeout_ms) {
    const char *cmd = p->command;
    const char *verb = exec__verb_name(j->verb);
    char *argv[] = {(char *)cmd, (char *)verb, j->group,
                    j->verb == EXEC_CREATE || j->verb == EXEC_DELETE ? j->arg : NULL, NULL};
    exec_stop_t stop = {p, j};
    hook_spec_t spec = {.cmd = cmd,
                        .argv = argv,
                        .envp = j->envp,
                        .timeout_ms = timeout_ms,
                        .fence = j->worker ? &p->fence->until_ms : NULL,
                        .stop = exec__stop_requested,
                        .stop_arg = &stop};
    hook_result_t res;
    hook_runner_run(&spec, &res);
    const hook_output_t *err = res.err;
    int status = res.status;
    char what[256];

    j->outcome = EXEC_FAILED;
    switch (res.end) {
    case HOOK_NO_MEMORY:
        exec__fail(j, EXEC_FAILED, NULL, "out of memory running the hook");
        break;
    case HOOK_NO_PIPES:
        snprintf(what, sizeof(what), "cannot create pipes: %s", strerror(res.error));
        exec__fail(j, EXEC_FAILED, NULL, what);
        break;
    case HOOK_NO_SPAWN:
        snprintf(what, sizeof(what), "cannot run %s: %s", cmd, strerror(res.error));
        exec__fail(j, EXEC_FAILED, NULL, what);
        break;
    case HOOK_FENCED:
        snprintf(what, sizeof(what), "hook %s %s: this replica's leadership lease ran out", verb,
                 res.started ? "killed" : "not started");
        exec__fail(j, EXEC_FENCED, res.started ? err : NULL, what);
        break;
    case HOOK_TIMED_OUT:
        snprintf(what, sizeof(what), "hook %s timed out after %" PRId64 " ms: killed", verb,
                 timeout_ms);
        exec__fail(j, EXEC_TIMEOUT, err, what);
        break;
    case HOOK_STOPPED:
        snprintf(what, sizeof(what), "hook %s killed: %s", verb,
                 atomic_load(&p->kill_all) ? "frugal is stopping"
                                           : "this replica is no longer the leader");
        exec__fail(j, EXEC_FAILED, err, what);
        break;
    case HOOK_GUARD_LOST:
        snprintf(what, sizeof(what), "hook %s: its guard process ended without a report (%s %d)",
                 verb, WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        exec__fail(j, EXEC_FAILED, err, what);
        break;
    case HOOK_EXITED:
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            j->outcome = EXEC_OK;
            j->first_line = hook_output_line(res.out, false);
            exec__check_id(j);
            if (j->verb == EXEC_LIST)
                exec__keep_list(j, res.out);
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXEC_EXIT_NO_RESOURCES) {
            char *line = hook_output_line(err, true);
            j->outcome = EXEC_NO_RESOURCES;
            j->message = line != NULL ? line : strdup("out of resources (exit status 3)");
        } else {
            if (WIFEXITED(status))
                snprintf(what, sizeof(what), "hook %s exited with status %d", verb,
                         WEXITSTATUS(status));
            else
                snprintf(what, sizeof(what), "hook %s killed by signal %d", verb,
                         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            exec__fail(j, EXEC_FAILED, err, what);
        }
        break;
    }
    hook_result_clear(&res);
}

/* Run j's hook and record it: frugal_hook_runs_total{verb,result}, frugal_hook_seconds. */
static void exec__run(exec_provider_t *p, exec_job_t *j, int64_t timeout_ms) {
    static const char *const results[] = {[EXEC_OK] = "ok",
                                          [EXEC_NO_RESOURCES] = "no_resources",
                                          [EXEC_FAILED] = "failed",
                                          [EXEC_TIMEOUT] = "timeout",
                                          [EXEC_FENCED] = "fenced"};
    int64_t t0 = clock_mono_ms();
    exec__run_hook(p, j, timeout_ms);
    const char *verb = exec__verb_name(j->verb);
    metrics_count(METRICS_HOOK_RUNS, verb, results[j->outcome], NULL);
    metrics_observe(METRICS_HOOK_SECONDS, (double)(clock_mono_ms() - t0) / 1000.0, verb, NULL);
}

/* An orphan delete is recorded nowhere else: the leader cannot run it again. */
static void exec__warn_orphan_dropped(const exec_job_t *j) {
    if (j->orphan && j->verb == EXEC_DELETE)
        log_warn("exec: machine %s of node group %s (made for an instance that no longer "
                 "exists) was not deleted: this replica lost the leadership; delete it by hand",
                 j->arg, j->group);
}

static void *exec__worker(void *arg) {
    exec_provider_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->pending == NULL && !p->stopping)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stopping)
            break;
        exec_job_t *j = p->pending;
        p->pending = j->next;
        if (p->pending == NULL)
            p->pending_tail = NULL;
        j->queued = false;
        j->worker = true;
        j->epoch = atomic_load(&p->released); /* release bumps it under mu */
        j->next = p->active;
        p->active = j;
        p->running++;
        pthread_mutex_unlock(&p->mu);

        exec__run(p, j, p->timeout_ms);
        if (j->outcome == EXEC_FENCED)
            log_warn("exec hook %s %s %s: %s; its result is not kept (the leader runs it)",
                     exec__verb_name(j->verb), j->group, j->arg,
                     j->message != NULL ? j->message : "fenced");
        else if (j->outcome != EXEC_OK)
            log_warn("exec hook %s %s %s failed: %s", exec__verb_name(j->verb), j->group, j->arg,
                     j->message != NULL ? j->message : "");
        else
            log_debug("exec hook %s %s %s: OK", exec__verb_name(j->verb), j->group, j->arg);

        pthread_mutex_lock(&p->mu);
        p->running--;
        for (exec_job_t **a = &p->active; *a != NULL; a = &(*a)->next) {
            if (*a == j) {
                *a = j->next;
                break;
            }
        }
        j->next = NULL;
        /* Fenced: no result, as after release; the instance stays creating or deleting
         * without a job, so the leader's refresh (this replica's, should it lead again)
         * queues it anew. */
        if (j->outcome == EXEC_FENCED && !j->orphan && strmap_get(p->busy, j->key) == j)
            strmap_remove(p->busy, j->key);
        if (j->outcome == EXEC_FENCED)
            exec__warn_orphan_dropped(j);
        if (j->orphan || j->outcome == EXEC_FENCED) {
            exec__job_free(j);
        } else {
            if (p->results_tail != NULL)
                p->results_tail->next = j;
            else
                p->results = j;
            p->results_tail = j;
        }
        pthread_cond_broadcast(&p->idle_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ------------------------------------------------------------------------------------
 * Slots
 * ---------------------------------------------------------------------------------- */

static void exec_destroy(provider_t *base);

static int exec_create(const frugal_config_t *cfg, provider_t **out, frugal_err_t *err) {
    *out = NULL;
    if (cfg->exec_command == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "provider kind exec needs provider.command");
    if (access(cfg->exec_command, X_OK) != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "provider.command %s is not executable: %s",
                              cfg->exec_command, strerror(errno));
    exec_provider_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory creating the exec provider");
    int rc;
    p->base.ops = &provider_exec_ops;
    if ((p->command = strdup(cfg->exec_command)) == NULL) {
        free(p);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory creating the exec provider");
    }
    config_retain(cfg);
    p->cfg = cfg;
    p->timeout_ms = cfg->exec_timeout_ms > 0 ? cfg->exec_timeout_ms : 600000;
    atomic_init(&p->kill_all, false);
    atomic_init(&p->released, 0);
    p->fence =
        mmap(NULL, sizeof(*p->fence), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->fence == MAP_FAILED) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "cannot map the exec provider's fence: %s",
                            strerror(errno));
        goto fail_mutex;
    }
    atomic_init(&p->fence->until_ms, INT64_MAX);
    size_t n = cfg->exec_parallelism > 0 ? (size_t)cfg->exec_parallelism : 4;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "cannot create the exec provider's mutex");
        goto fail_mutex;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool cv_ok = pthread_cond_init(&p->work_cv, NULL) == 0;
    bool idle_ok = pthread_cond_init(&p->idle_cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!cv_ok || !idle_ok) {
        if (cv_ok)
            pthread_cond_destroy(&p->work_cv);
        if (idle_ok)
            pthread_cond_destroy(&p->idle_cv);
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "cannot create the exec provider's conditions");
        goto fail_cond;
    }
    if (strmap_create(64, &p->busy) != 0 || (p->threads = calloc(n, sizeof(pthread_t))) == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory creating the exec provider");
        goto fail_threads;
    }
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&p->threads[i], NULL, exec__worker, p) != 0) {
            rc = frugal_err_set(err, FRUGAL_EINTERNAL, "cannot start exec worker thread %zu", i);
            goto fail_threads;
        }
        p->threads_count++;
    }
    log_info("exec provider: hook %s, timeout %" PRId64 " ms, parallelism %zu", cfg->exec_command,
             p->timeout_ms, n);
    *out = &p->base;
    return 0;

fail_threads:
    exec_destroy(&p->base); /* joins the threads started, frees the rest */
    return rc;
fail_cond:
    pthread_mutex_destroy(&p->mu);
fail_mutex:
    if (p->fence != NULL && p->fence != MAP_FAILED)
        munmap(p->fence, sizeof(*p->fence));
    config_release(p->cfg);
    free(p->command);
    free(p);
    return rc;
}

static void exec_destroy(provider_t *base) {
    exec_provider_t *p = (exec_provider_t *)base;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work_cv);
    int64_t grace = p->timeout_ms < EXEC_STOP_GRACE_MS ? p->timeout_ms : EXEC_STOP_GRACE_MS;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += grace / 1000;
    until.tv_nsec += (grace % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (p->running > 0)
        log_info("exec provider stopping: waiting up to %" PRId64 " ms for %zu running hooks",
                 grace, p->running);
    while (p->running > 0) {
        if (pthread_cond_timedwait(&p->idle_cv, &p->mu, &until) == ETIMEDOUT)
            break;
    }
    if (p->running > 0)
        log_warn("exec provider stopping: killing %zu hooks still running", p->running);
    atomic_store(&p->kill_all, true);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->threads_count; i++)
        pthread_join(p->threads[i], NULL);
    /* Queued work is not lost: refresh re-queues it from the state file after a restart. */
    exec__list_free(p->pending);
    exec__list_free(p->results);
    exec__list_free(p->staged);
    exec__seen_clear(p);
    free(p->seen);
    reconcile_clear(&p->reconcile);
    while (p->backoff != NULL) {
        exec_backoff_t *b = p->backoff;
        p->backoff = b->next;
        free(b->group);
        free(b->id);
        free(b);
    }
    strmap_destroy(p->busy);
    free(p->threads);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_mutex_destroy(&p->mu);
    munmap(p->fence, sizeof(*p->fence));
    config_release(p->cfg);
    free(p->command);
    free(p);
}

static void exec_configure(provider_t *base, const frugal_config_t *cfg) {
    exec_provider_t *p = (exec_provider_t *)base;
    config_retain(cfg);
    config_release(p->cfg);
    p->cfg = cfg;
}

static int exec_increase(provider_t *base, group_t *g, int32_t delta, int64_t now_ms,
                         frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    if (delta <= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be positive", (int)delta);
    if ((int64_t)g->target_size + delta > INT32_MAX)
        return frugal_err_set(err, FRUGAL_EINVAL, "target size of %s would overflow", g->spec.id);
    size_t n = (size_t)delta;
    instance_t *added = calloc(n, sizeof(*added));
    exec_job_t **jobs = calloc(n, sizeof(*jobs));
    if (added == NULL || jobs == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if (instance_init_new(&added[i], g, g->next_seq + i, now_ms) != 0)
            goto fail;
        const char *name = strrchr(added[i].id, '/') + 1;
        if ((jobs[i] = exec__job_new(p, EXEC_CREATE, g, added[i].id, name)) == NULL)
            goto fail;
    }
    instance_t *grown = realloc(g->instances, (g->instances_count + n) * sizeof(*grown));
    if (grown == NULL)
        goto fail;
    g->instances = grown;
    pthread_mutex_lock(&p->mu);
    if (exec__reserve_locked(p, n) != 0) {
        pthread_mutex_unlock(&p->mu);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        exec__stage_locked(p, jobs[i], EXEC_STAGE_ENQUEUE);
    pthread_mutex_unlock(&p->mu);
    memcpy(&g->instances[g->instances_count], added, n * sizeof(*added));
    g->instances_count += n;
    g->next_seq += n;
    g->target_size += delta;
    free(added);
    free(jobs);
    return 0;

fail:
    for (size_t i = 0; added != NULL && jobs != NULL && i < n; i++) {
        free(added[i].id);
        exec__job_free(jobs[i]);
    }
    free(added);
    free(jobs);
    return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
}

static int exec_delete_instances(provider_t *base, group_t *g, const size_t *indexes, size_t n,
                                 int64_t now_ms, frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    for (size_t i = 0; i < n; i++) {
        if (indexes[i] >= g->instances_count)
            return frugal_err_set(err, FRUGAL_EINVAL, "instance index %zu out of range",
                                  indexes[i]);
    }
    if ((int64_t)n > g->target_size)
        return frugal_err_set(err, FRUGAL_EINVAL, "cannot delete %zu of %d instances", n,
                              (int)g->target_size);
    exec_job_t **jobs = calloc(n > 0 ? n : 1, sizeof(*jobs));
    if (jobs == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const instance_t *in = &g->instances[indexes[i]];
        jobs[i] =
            exec__job_new(p, EXEC_DELETE, g, in->id, instance_name_in_group(in->id, g->spec.id));
        if (jobs[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                exec__job_free(jobs[k]);
            free(jobs);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        }
    }
    pthread_mutex_lock(&p->mu);
    if (exec__reserve_locked(p, n) != 0) {
        pthread_mutex_unlock(&p->mu);
        for (size_t k = 0; k < n; k++)
            exec__job_free(jobs[k]);
        free(jobs);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        instance_t *in = &g->instances[indexes[i]];
        in->state = INSTANCE_DELETING;
        in->state_since_ms = now_ms;
        /* At commit, a create still queued is dropped; one running finishes first,
         * then refresh queues the delete (with the id the create reported). */
        exec__stage_locked(p, jobs[i], EXEC_STAGE_REPLACE);
    }
    pthread_mutex_unlock(&p->mu);
    free(jobs);
    g->target_size -= (int32_t)n;
    return 0;
}

static int exec_decrease_target(provider_t *base, group_t *g, int32_t delta, frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    if (delta >= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be negative", (int)delta);
    size_t drop = (size_t)(-(int64_t)delta);
    size_t creating = 0;
    for (size_t i = 0; i < g->instances_count; i++)
        creating += g->instances[i].state == INSTANCE_CREATING;
    if (creating < drop)
        return frugal_err_set(err, FRUGAL_EPRECOND, "only %zu instances of %s are not running yet",
                              creating, g->spec.id);
    /* Newest first, compacting the survivors in place. A dropped instance's queued
     * create is cancelled at commit; a running one that then succeeds is deleted as an
     * orphan. The cancels are allocated first: a failure leaves g as it was. */
    exec_job_t **cancels = calloc(drop > 0 ? drop : 1, sizeof(*cancels));
    if (cancels == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t c = 0;
    for (size_t r = g->instances_count; r-- > 0 && c < drop;) {
        if (g->instances[r].state != INSTANCE_CREATING)
            continue;
        if ((cancels[c] = calloc(1, sizeof(exec_job_t))) == NULL ||
            (cancels[c]->key = strdup(g->instances[r].id)) == NULL) {
            for (size_t k = 0; k <= c; k++)
                exec__job_free(cancels[k]);
            free(cancels);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        }
        c++;
    }
    pthread_mutex_lock(&p->mu);
    for (size_t k = 0; k < c; k++)
        exec__stage_locked(p, cancels[k], EXEC_STAGE_CANCEL);
    free(cancels);
    pthread_mutex_unlock(&p->mu);
    group_drop_creating(g, drop);
    g->target_size += delta;
    return 0;
}

static void exec__set_error(instance_t *in, const char *code, const char *msg, int32_t cls) {
    char *c = strdup(code);
    char *m = strdup(msg != NULL ? msg : "");
    if (c == NULL || m == NULL) {
        free(c);
        free(m);
        return; /* the error is logged already; the instance stays creating */
    }
    free(in->error_code);
    free(in->error_message);
    in->error_code = c;
    in->error_message = m;
    in->error_class = cls;
}

static ssize_t exec__find(const group_t *g, const char *id) {
    for (size_t i = 0; i < g->instances_count; i++) {
        if (strcmp(g->instances[i].id, id) == 0)
            return (ssize_t)i;
    }
    return -1;
}

/* Remember not to re-run id's hook before until; with mu held. */
static void exec__backoff_set_locked(exec_provider_t *p, const char *group, const char *id,
                                     int64_t until) {
    for (exec_backoff_t *b = p->backoff; b != NULL; b = b->next) {
        if (strcmp(b->id, id) == 0) {
            b->not_before_ms = until;
            return;
        }
    }
    exec_backoff_t *b = calloc(1, sizeof(*b));
    if (b == NULL || (b->group = strdup(group)) == NULL || (b->id = strdup(id)) == NULL) {
        if (b != NULL)
            free(b->group);
        free(b);
        return; /* no backoff: a retry comes sooner, nothing worse */
    }
    b->not_before_ms = until;
    b->next = p->backoff;
    p->backoff = b;
}

/* Whether id may be re-run now; drops expired entries of group. With mu held. */
static bool exec__backoff_allows_locked(exec_provider_t *p, const char *group, const char *id,
                                        int64_t now) {
    bool allowed = true;
    for (exec_backoff_t **bp = &p->backoff; *bp != NULL;) {
        exec_backoff_t *b = *bp;
        if (strcmp(b->group, group) == 0 && b->not_before_ms <= now) {
            *bp = b->next;
            free(b->group);
            free(b->id);
            free(b);
            continue;
        }
        if (id != NULL && strcmp(b->id, id) == 0)
            allowed = false;
        bp = &b->next;
    }
    return allowed;
}

/* Apply one finished job to g; with mu held. */
static void exec__apply_locked(exec_provider_t *p, group_t *g, exec_job_t *j, int64_t now,
                               bool *changed) {
    ssize_t idx = exec__find(g, j->key);
    instance_t *in = idx >= 0 ? &g->instances[idx] : NULL;
    /* A failure is retried (when refresh finds the instance without a job) no sooner
     * than EXEC_RETRY_MS; so is a create whose new id the cluster did not keep. */
    if (j->outcome != EXEC_OK || (j->verb == EXEC_CREATE && j->first_line != NULL))
        exec__backoff_set_locked(p, g->spec.id, j->key, now + EXEC_RETRY_MS);
    if (j->verb == EXEC_DELETE) {
        if (in == NULL)
            return;
        if (in->state != INSTANCE_DELETING) {
            log_warn("exec: delete hook of %s finished but the instance is no longer deleting",
                     j->key);
            return;
        }
        if (j->outcome == EXEC_OK) {
            log_info("exec: instance %s of %s deleted", j->key, g->spec.id);
            instance_clear(in);
            memmove(in, in + 1, (g->instances_count - (size_t)idx - 1) * sizeof(*in));
            g->instances_count--;
            *changed = true;
        } else {
            log_warn("exec: deleting instance %s of %s failed (retried in %d s): %s", j->key,
                     g->spec.id, EXEC_RETRY_MS / 1000, j->message != NULL ? j->message : "");
        }
        return;
    }
    /* create */
    const char *real = j->first_line;
    if (in == NULL) {
        if (j->outcome == EXEC_OK) {
            /* Dropped while its create ran: remove the machine it made. */
            const char *id = real != NULL ? real : j->key;
            exec_job_t *orphan =
                exec__job_new(p, EXEC_DELETE, g, id, instance_name_in_group(j->key, j->group));
            log_warn("exec: instance %s of %s was dropped while being created: deleting %s", j->key,
                     g->spec.id, id);
            if (orphan != NULL) {
                orphan->orphan = true;
                exec__enqueue_locked(p, orphan);
            }
        }
        return;
    }
    if (j->outcome == EXEC_OK && real != NULL && strcmp(real, in->id) != 0 &&
        exec__find(g, real) >= 0) {
        char msg[FRUGAL_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "the hook reported provider id %s, already used in %s", real,
                 g->spec.id);
        free(j->message);
        j->message = strdup(msg);
        j->outcome = EXEC_FAILED;
        log_error("exec: create of %s: %s", j->key, msg);
    }
    if (j->outcome == EXEC_OK) {
        if (real != NULL && strcmp(real, in->id) != 0) {
            char *id = strdup(real);
            if (id == NULL)
                return; /* stays creating, no job: re-run after the backoff */
            free(in->id);
            in->id = id;
        }
        if (in->state == INSTANCE_CREATING) {
            in->state = INSTANCE_RUNNING;
            in->state_since_ms = now;
            free(in->error_code);
            free(in->error_message);
            in->error_code = in->error_message = NULL;
            in->error_class = 0;
        }
        log_info("exec: instance %s of %s created as %s", j->arg, g->spec.id, in->id);
        *changed = true;
        return;
    }
    if (in->state != INSTANCE_CREATING)
        return; /* deleting meanwhile: the delete hook runs next */
    if (j->outcome == EXEC_NO_RESOURCES)
        exec__set_error(in, "OutOfResources", j->message, 1);
    else
        exec__set_error(in, j->outcome == EXEC_TIMEOUT ? "Timeout" : "CreateFailed", j->message,
                        99);
    *changed = true;
}

/* Take j (preceded by prev, NULL when first) out of the results list. Lock held. */
static void exec__results_unlink(exec_provider_t *p, exec_job_t *prev, exec_job_t *j) {
    if (prev != NULL)
        prev->next = j->next;
    else
        p->results = j->next;
    if (p->results_tail == j)
        p->results_tail = prev;
}

/* Whether list holds machine work (any job but a list) of group. */
static bool exec__list_has_group(const exec_job_t *j, const char *group) {
    for (; j != NULL; j = j->next) {
        if (j->verb != EXEC_LIST && j->group != NULL && strcmp(j->group, group) == 0)
            return true;
    }
    return false;
}

/* Whether machine work of group is staged, queued, running or not yet applied. */
static bool exec__group_busy_locked(const exec_provider_t *p, const char *group) {
    return exec__list_has_group(p->pending, group) || exec__list_has_group(p->active, group) ||
           exec__list_has_group(p->results, group) || exec__list_has_group(p->staged, group);
}

/* ------------------------------------------------------------------------------------
 * Reconciliation (the judgement itself is reconcile.c's)
 * ---------------------------------------------------------------------------------- */

static bool exec__has_list(const exec_job_t *j, const char *group) {
    for (; j != NULL; j = j->next) {
        if (j->verb == EXEC_LIST && strcmp(j->group, group) == 0)
            return true;
    }
    return false;
}

/* Queue g's list when reconciliation is on, its interval has passed and no list of g is
 * queued, running or unapplied. With mu held. */
static void exec__list_queue_locked(exec_provider_t *p, const group_t *g, reconcile_group_t *rg,
                                    int64_t now) {
    int64_t interval = p->cfg->exec_reconcile_interval_ms;
    if (interval <= 0 || now < rg->next_list_ms || exec__has_list(p->pending, g->spec.id) ||
        exec__has_list(p->active, g->spec.id) || exec__has_list(p->results, g->spec.id))
        return;
    exec_job_t *j = exec__job_new(p, EXEC_LIST, g, NULL, "");
    if (j == NULL)
        return; /* out of memory: tried again at the next refresh */
    rg->listed_ms = now;
    rg->next_list_ms = now + interval;
    rg->settled = !exec__group_busy_locked(p, g->spec.id);
    rg->work_at = rg->work;
    exec__enqueue_locked(p, j);
}

/* Why the list job j cannot be judged (and its metric reason), NULL when l holds it. */
static const char *exec__list_problem(const exec_job_t *j, hook_listing_t *l, const char **reason,
                                      char *why, size_t size) {
    if (j->outcome != EXEC_OK) {
        *reason = j->outcome == EXEC_TIMEOUT ? "timeout" : "failed";
        return j->message != NULL ? j->message : "the hook failed";
    }
    if (j->truncated) {
        *reason = "truncated";
        snprintf(why, size, "its output is over %d KiB", HOOK_OUTPUT_MAX / 1024);
        return why;
    }
    int rc = hook_output_parse_list(j->output, j->output_len, l, why, size);
    if (rc == FRUGAL_ENOMEM) {
        *reason = "failed";
        return "out of memory reading it";
    }
    *reason = "malformed";
    return rc != 0 ? why : NULL;
}

/* Replace g's instances at v's indexes: each is dropped (an orphan delete removes what
 * may remain of its machine) and a new instance is appended, whose create is staged;
 * the target size stays. All or nothing. With mu held. */
static void exec__replace_locked(exec_provider_t *p, group_t *g, const reconcile_verdict_t *v,
                                 int64_t now, bool *changed) {
    size_t n = v->replace_count;
    instance_t *added = calloc(n, sizeof(*added));
    exec_job_t **jobs = calloc(2 * n, sizeof(*jobs)); /* creates, then deletes */
    bool ok = added != NULL && jobs != NULL;
    for (size_t k = 0; ok && k < n; k++) {
        const instance_t *old = &g->instances[v->replace[k]];
        ok = instance_init_new(&added[k], g, g->next_seq + k, now) == 0;
        if (ok)
            jobs[k] = exec__job_new(p, EXEC_CREATE, g, added[k].id, strrchr(added[k].id, '/') + 1);
        if (ok)
            jobs[n + k] = exec__job_new(p, EXEC_DELETE, g, old->id,
                                        instance_name_in_group(old->id, g->spec.id));
        ok = ok && jobs[k] != NULL && jobs[n + k] != NULL && exec__reserve_locked(p, k + 1) == 0;
    }
    if (!ok) {
        log_error("exec: out of memory replacing %zu missing instances of %s: retried at a "
                  "later list",
                  n, g->spec.id);
        for (size_t k = 0; added != NULL && jobs != NULL && k < n; k++) {
            instance_clear(&added[k]);
            exec__job_free(jobs[k]);
            exec__job_free(jobs[n + k]);
        }
        free(added);
        free(jobs);
        return;
    }
    for (size_t k = n; k-- > 0;) { /* descending: the indexes below stay valid */
        instance_t *old = &g->instances[v->replace[k]];
        log_warn("exec: instance %s of %s is running but missing from %d lists of the hook: "
                 "replaced by %s",
                 old->id, g->spec.id, (int)p->cfg->exec_reconcile_missing_after, added[k].id);
        metrics_count(METRICS_RECONCILE_REPLACED, g->spec.id, NULL, NULL);
        instance_clear(old);
        memmove(old, old + 1, (g->instances_count - v->replace[k] - 1) * sizeof(*old));
        g->instances_count--;
        jobs[n + k]->orphan = true;
        exec__stage_locked(p, jobs[n + k], EXEC_STAGE_ENQUEUE);
    }
    for (size_t k = 0; k < n; k++) { /* the count is unchanged: the array has the room */
        g->instances[g->instances_count++] = added[k];
        exec__stage_locked(p, jobs[k], EXEC_STAGE_ENQUEUE);
    }
    g->next_seq += n;
    *changed = true;
    free(added);
    free(jobs);
}

/* Report (and with reconcile_delete_unknown, stage the delete of) the listed machines g
 * does not hold. With mu held. */
static void exec__unknown_locked(exec_provider_t *p, const group_t *g, const hook_listing_t *l,
                                 const reconcile_verdict_t *v) {
    bool remove = p->cfg->exec_reconcile_delete_unknown;
    metrics_set(METRICS_RECONCILE_UNKNOWN, v->unknown_count, g->spec.id, NULL);
    for (size_t i = 0; i < v->unknown_count; i++) {
        const char *id = v->unknown[i], *state = "";
        for (size_t k = 0; k < l->count; k++) {
            if (l->items[k].id == id)
                state = l->items[k].state;
        }
        log_warn("exec: machine %s%s%s%s is listed by the hook for node group %s but frugal does "
                 "not know it (a leak)%s",
                 id, state[0] != '\0' ? " (" : "", state, state[0] != '\0' ? ")" : "", g->spec.id,
                 remove ? ": deleting it"
                        : "; provider.reconcile_delete_unknown deletes such "
                          "machines");
        exec_job_t *j = remove ? exec__job_new(p, EXEC_DELETE, g, id, "") : NULL;
        if (j != NULL) {
            j->orphan = true;
            exec__stage_locked(p, j, EXEC_STAGE_ENQUEUE);
        } else if (remove) {
            log_error("exec: out of memory: machine %s of %s is not deleted this time", id,
                      g->spec.id);
        }
    }
}

/* Judge g's finished list j and act on it. A list that failed or cannot be read
 * changes nothing. With mu held. */
static void exec__reconcile_locked(exec_provider_t *p, group_t *g, reconcile_group_t *rg,
                                   const exec_job_t *j, int64_t now, bool *changed) {
    hook_listing_t l = {0};
    char why[160];
    const char *reason = NULL;
    const char *problem = exec__list_problem(j, &l, &reason, why, sizeof(why));
    if (problem != NULL) {
        log_warn("exec: list of node group %s ignored (%s): %s", g->spec.id, reason, problem);
        metrics_count(METRICS_RECONCILE_LIST_FAILURES, g->spec.id, reason, NULL);
        return;
    }
    const reconcile_policy_t policy = {.interval_ms = p->cfg->exec_reconcile_interval_ms,
                                       .missing_after = p->cfg->exec_reconcile_missing_after};
    bool judge_unknown =
        rg->settled && rg->work == rg->work_at && !exec__group_busy_locked(p, g->spec.id);
    reconcile_verdict_t v;
    if (reconcile_judge(rg, g, &l, &policy, judge_unknown, &v) != 0) {
        log_error("exec: out of memory judging the list of node group %s", g->spec.id);
    } else {
        log_debug("exec: list of %s: %zu machines, %zu instances to replace, %zu unknown%s",
                  g->spec.id, l.count, v.replace_count, v.unknown_count,
                  v.unknown_judged ? "" : " (not judged: machine work in flight)");
        if (v.unknown_judged)
            exec__unknown_locked(p, g, &l, &v);
        if (v.replace_count > 0)
            exec__replace_locked(p, g, &v, now, changed);
        reconcile_verdict_clear(&v);
    }
    hook_listing_clear(&l);
}

/* reconcile_prune's test: the group was refreshed this round. */
static bool exec__reconcile_keep(void *arg, const char *group) {
    exec_provider_t *p = arg;
    if (exec__seen_has(p, group))
        return true;
    metrics_set(METRICS_RECONCILE_UNKNOWN, 0, group, NULL);
    return false;
}

static int exec_refresh(provider_t *base, group_t *g, int64_t now_ms, bool *changed,
                        frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    pthread_mutex_lock(&p->mu);
    exec__seen_add(p, g->spec.id);
    /* 1. Apply this group's finished jobs (its list is judged last). */
    exec_job_t *prev = NULL, *list = NULL;
    reconcile_group_t *rg = reconcile_group(&p->reconcile, g->spec.id);
    for (exec_job_t *j = p->results; j != NULL;) {
        exec_job_t *next = j->next;
        if (strcmp(j->group, g->spec.id) != 0) {
            prev = j;
            j = next;
            continue;
        }
        exec__results_unlink(p, prev, j);
        if (j->verb == EXEC_LIST) {
            exec__job_free(list);
            list = j;
            j = next;
            continue;
        }
        strmap_remove(p->busy, j->key);
        exec__apply_locked(p, g, j, now_ms, changed);
        exec__job_free(j);
        if (rg != NULL)
            rg->work++;
        j = next;
    }

    /* 2. Re-queue the work of instances that have none (restart, failed delete). */
    exec__backoff_allows_locked(p, g->spec.id, NULL, now_ms);
    for (size_t i = 0; i < g->instances_count; i++) {
        const instance_t *in = &g->instances[i];
        bool todo = (in->state == INSTANCE_CREATING && in->error_code == NULL) ||
                    in->state == INSTANCE_DELETING;
        if (!todo || strmap_get(p->busy, in->id) != NULL ||
            !exec__backoff_allows_locked(p, g->spec.id, in->id, now_ms))
            continue;
        const char *name = instance_name_in_group(in->id, g->spec.id);
        exec_job_t *j = exec__job_new(p, in->state == INSTANCE_CREATING ? EXEC_CREATE : EXEC_DELETE,
                                      g, in->id, name);
        if (j == NULL || exec__reserve_locked(p, 1) != 0) {
            exec__job_free(j);
            exec__job_free(list);
            pthread_mutex_unlock(&p->mu);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory queueing hooks");
        }
        log_info("exec: %s of instance %s of %s has no job: running the %s hook",
                 in->state == INSTANCE_CREATING ? "creation" : "deletion", in->id, g->spec.id,
                 exec__verb_name(j->verb));
        exec__stage_locked(p, j, EXEC_STAGE_ENQUEUE);
    }
    /* 3. Judge the group's list (its replacements come with their jobs), then queue the
     * next one every reconcile_interval. */
    if (list != NULL && rg != NULL)
        exec__reconcile_locked(p, g, rg, list, now_ms, changed);
    exec__job_free(list);
    if (rg != NULL)
        exec__list_queue_locked(p, g, rg, now_ms);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Run a group hook now, in the caller's thread. */
static int exec__group_hook(exec_provider_t *p, group_t *g, exec_verb_t verb, frugal_err_t *err) {
    exec_job_t *j = exec__job_new(p, verb, g, NULL, "");
    if (j == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    int64_t cap = p->timeout_ms < EXEC_GROUP_TIMEOUT_MS ? p->timeout_ms : EXEC_GROUP_TIMEOUT_MS;
    exec__run(p, j, cap);
    int rc = 0;
    if (j->outcome != EXEC_OK)
        rc = frugal_err_set(err, FRUGAL_EUNAVAIL, "%s of node group %s failed: %s",
                            exec__verb_name(verb), g->spec.id,
                            j->message != NULL ? j->message : "out of resources");
    else
        log_info("exec: hook %s %s: OK", exec__verb_name(verb), g->spec.id);
    exec__job_free(j);
    return rc;
}

static int exec_create_group(provider_t *base, group_t *g, frugal_err_t *err) {
    int rc = exec__group_hook((exec_provider_t *)base, g, EXEC_CREATE_GROUP, err);
    if (rc == 0)
        g->exists = true;
    return rc;
}

static int exec_delete_group(provider_t *base, group_t *g, frugal_err_t *err) {
    int rc = exec__group_hook((exec_provider_t *)base, g, EXEC_DELETE_GROUP, err);
    if (rc == 0)
        g->exists = false;
    return rc;
}

/* Drop the results of groups no refresh of this round saw (deleted, or theoretical
 * again): a create that made a machine is orphan-deleted, nothing waits for the rest.
 * With mu held. */
static void exec__sweep_locked(exec_provider_t *p) {
    exec_job_t *prev = NULL;
    for (exec_job_t *j = p->results; j != NULL;) {
        exec_job_t *next = j->next;
        if (exec__seen_has(p, j->group)) {
            prev = j;
            j = next;
            continue;
        }
        exec__results_unlink(p, prev, j);
        if (strmap_get(p->busy, j->key) == j)
            strmap_remove(p->busy, j->key);
        if (j->verb == EXEC_CREATE && j->outcome == EXEC_OK) {
            exec_job_t *orphan = exec__orphan_of(j);
            log_warn("exec: instance %s was created in node group %s, which no longer exists: "
                     "deleting %s",
                     j->arg, j->group, j->first_line != NULL ? j->first_line : j->key);
            if (orphan != NULL)
                exec__enqueue_locked(p, orphan);
            else
                log_error("exec: out of memory: machine %s of %s is not deleted",
                          j->first_line != NULL ? j->first_line : j->key, j->group);
        } else {
            log_info("exec: hook %s %s %s finished after its node group was removed: dropped",
                     exec__verb_name(j->verb), j->group, j->arg);
        }
        exec__job_free(j);
        j = next;
    }
}

static void exec_commit_staged(provider_t *base) {
    exec_provider_t *p = (exec_provider_t *)base;
    pthread_mutex_lock(&p->mu);
    exec_job_t *j = p->staged;
    p->staged = p->staged_tail = NULL;
    p->staged_busy = 0;
    while (j != NULL) {
        exec_job_t *next = j->next;
        switch (j->stage) {
        case EXEC_STAGE_CANCEL:
            exec__cancel_locked(p, j->key);
            exec__job_free(j);
            break;
        case EXEC_STAGE_REPLACE:
            exec__cancel_locked(p, j->key);
            /* fall through */
        case EXEC_STAGE_ENQUEUE:
            if (!j->orphan && strmap_get(p->busy, j->key) != NULL)
                exec__job_free(j); /* its running job goes first (see delete_instances) */
            else
                exec__enqueue_locked(p, j);
            break;
        }
        j = next;
    }
    if (p->refreshed && !p->seen_oom) {
        exec__sweep_locked(p);
        reconcile_prune(&p->reconcile, exec__reconcile_keep, p);
    }
    exec__seen_clear(p);
    pthread_mutex_unlock(&p->mu);
}

static void exec_abort_staged(provider_t *base) {
    exec_provider_t *p = (exec_provider_t *)base;
    pthread_mutex_lock(&p->mu);
    exec__list_free(p->staged);
    p->staged = p->staged_tail = NULL;
    p->staged_busy = 0;
    exec__seen_clear(p);
    pthread_mutex_unlock(&p->mu);
}

/* Forget every job of list (pending or results), with mu held. */
static void exec__forget_locked(exec_provider_t *p, exec_job_t *list) {
    while (list != NULL) {
        exec_job_t *next = list->next;
        if (!list->orphan && strmap_get(p->busy, list->key) == list)
            strmap_remove(p->busy, list->key);
        exec__warn_orphan_dropped(list);
        exec__job_free(list);
        list = next;
    }
}

/* Shared with the running guards: each kills its hook's group at until_ms. */
static void exec_fence(provider_t *base, int64_t until_ms) {
    exec_provider_t *p = (exec_provider_t *)base;
    atomic_store(&p->fence->until_ms, until_ms);
}

static void exec_release(provider_t *base) {
    exec_provider_t *p = (exec_provider_t *)base;
    pthread_mutex_lock(&p->mu);
    if (p->active != NULL || p->pending != NULL || p->results != NULL) {
        log_warn("exec: no longer the leader: killing %zu running hooks, dropping the queued "
                 "and finished ones (the leader runs them again)",
                 p->running);
        /* The workers free what they run now instead of keeping its result. */
        for (exec_job_t *j = p->active; j != NULL; j = j->next) {
            if (!j->orphan && strmap_get(p->busy, j->key) == j)
                strmap_remove(p->busy, j->key);
            j->orphan = true;
        }
        atomic_fetch_add(&p->released, 1);
        exec__forget_locked(p, p->pending);
        exec__forget_locked(p, p->results);
        p->pending = p->pending_tail = NULL;
        p->results = p->results_tail = NULL;
    }
    reconcile_clear(&p->reconcile); /* a later leadership starts counting afresh */
    pthread_mutex_unlock(&p->mu);
}

static bool exec_busy(provider_t *base, const group_t *g) {
    exec_provider_t *p = (exec_provider_t *)base;
    pthread_mutex_lock(&p->mu);
    bool busy = exec__group_busy_locked(p, g->spec.id);
    pthread_mutex_unlock(&p->mu);
    return busy;
}

const provider_ops_t provider_exec_ops = {
    .kind = "exec",
    .create = exec_create,
    .destroy = exec_destroy,
    .increase = exec_increase,
    .delete_instances = exec_delete_instances,
    .decrease_target = exec_decrease_target,
    .refresh = exec_refresh,
    .create_group = exec_create_group,
    .delete_group = exec_delete_group,
    .commit_staged = exec_commit_staged,
    .abort_staged = exec_abort_staged,
    .release = exec_release,
    .fence = exec_fence,
    .busy = exec_busy,
    .configure = exec_configure,
};
