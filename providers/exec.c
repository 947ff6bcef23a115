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
 * with the slots.
 *
 * This file holds the slots; the jobs and their queues, the workers and the
 * reconciliation have files of their own (providers/private/exec_internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "exec_internal.h"
#include "clock.h"
#include "log.h"
#include "utf8.h"

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
    exec__metrics_init();
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
    struct timespec until = clock_timespec_in(CLOCK_MONOTONIC, grace);
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
    /* Under mu too: the workers read the reconcile interval for a list's timeout. */
    pthread_mutex_lock(&p->mu);
    const frugal_config_t *old = p->cfg;
    p->cfg = cfg;
    exec__reconcile_configure_locked(p);
    pthread_mutex_unlock(&p->mu);
    config_release(old);
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

/* Make the instances at indexes deleting and stage their deletes: at commit, a create
 * still queued is dropped; one running finishes first, then refresh queues the delete
 * (with the id the create reported). */
static int exec__stage_deletes(exec_provider_t *p, group_t *g, const size_t *indexes, size_t n,
                               int64_t now_ms, frugal_err_t *err) {
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
        exec__stage_locked(p, jobs[i], EXEC_STAGE_REPLACE);
    }
    pthread_mutex_unlock(&p->mu);
    free(jobs);
    return 0;
}

static int exec_delete_instances(provider_t *base, group_t *g, const size_t *indexes, size_t n,
                                 int64_t now_ms, frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    int rc = group_check_delete(g, indexes, n, err);
    if (rc == 0)
        rc = exec__stage_deletes(p, g, indexes, n, now_ms, err);
    if (rc == 0)
        g->target_size -= (int32_t)n;
    return rc;
}

/* DecreaseTargetSize's instances, the newest creating ones. One whose first create is
 * still queued never ran: its create is cancelled at commit and the instance goes. Any
 * other may have made a machine (its create runs, or failed or timed out, or it comes
 * from before a restart, whose hook may have run, even if its create is queued again):
 * it becomes deleting, so that its delete runs (after the create, with the id that
 * reported, else the placeholder) and survives a restart; dropped outright, its machine
 * would leak. */
static int exec_decrease_target(provider_t *base, group_t *g, int32_t delta, int64_t now_ms,
                                frugal_err_t *err) {
    exec_provider_t *p = (exec_provider_t *)base;
    size_t drop = 0;
    int rc = group_check_decrease(g, delta, &drop, err);
    if (rc != 0)
        return rc;
    exec_job_t **cancels = calloc(drop > 0 ? drop : 1, sizeof(*cancels));
    size_t *made = calloc(drop > 0 ? drop : 1, sizeof(*made));
    size_t c = 0, m = 0;
    if (cancels == NULL || made == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    pthread_mutex_lock(&p->mu);
    for (size_t r = g->instances_count; rc == 0 && r-- > 0 && c + m < drop;) {
        const instance_t *in = &g->instances[r];
        if (in->state != INSTANCE_CREATING)
            continue;
        const exec_job_t *job = strmap_get(p->busy, in->id);
        bool queued = job != NULL && job->queued && job->verb == EXEC_CREATE && !job->rerun;
        /* Exit 3 says the create made nothing: there is nothing to delete. */
        bool no_resources =
            job == NULL && in->error_code != NULL && strcmp(in->error_code, "OutOfResources") == 0;
        if (!queued && !no_resources) {
            made[m++] = r;
            continue;
        }
        if ((cancels[c] = calloc(1, sizeof(exec_job_t))) == NULL ||
            (cancels[c]->key = strdup(in->id)) == NULL) {
            exec__job_free(cancels[c]);
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            break;
        }
        c++;
    }
    pthread_mutex_unlock(&p->mu);
    /* The deletes first (a failure leaves g as it was), then the never-run creates, which
     * are then the newest creating instances. */
    if (rc == 0)
        rc = exec__stage_deletes(p, g, made, m, now_ms, err);
    if (rc == 0) {
        pthread_mutex_lock(&p->mu);
        for (size_t k = 0; k < c; k++)
            exec__stage_locked(p, cancels[k], EXEC_STAGE_CANCEL);
        pthread_mutex_unlock(&p->mu);
        group_drop_creating(g, c);
        g->target_size += delta;
    } else {
        for (size_t k = 0; cancels != NULL && k < c; k++)
            exec__job_free(cancels[k]);
    }
    free(cancels);
    free(made);
    return rc;
}

static void exec__set_error(instance_t *in, const char *code, const char *msg, int32_t cls) {
    char *c = strdup(code);
    char *m = strdup(msg != NULL ? msg : "");
    if (m != NULL)
        utf8_scrub(m); /* a hook's text, maybe cut in the middle of a character */
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
        /* Dropped while its create ran (it was taken between the drop and its commit):
         * remove what it made; a failed or timed-out create may have made something too.
         * Exit 3 made nothing; a fenced run has no result. */
        if (j->outcome == EXEC_OK || j->outcome == EXEC_FAILED || j->outcome == EXEC_TIMEOUT) {
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
        exec__list_unlink(&p->results, &p->results_tail, prev, j);
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
        p->work++;
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
        j->rerun = true;
        log_info("exec: %s of instance %s of %s has no job: running the %s hook",
                 in->state == INSTANCE_CREATING ? "creation" : "deletion", in->id, g->spec.id,
                 exec__verb_name(j->verb));
        exec__stage_locked(p, j, EXEC_STAGE_ENQUEUE);
    }
    /* 3. Judge the group's list (its replacements come with their jobs), then queue the
     * next one every reconcile_interval. What g holds now is what other groups' lists are
     * checked against (out of memory: the previous record stays). */
    if (rg != NULL && p->cfg->exec_reconcile_interval_ms > 0)
        (void)reconcile_note_held(rg, g);
    if (list != NULL && rg != NULL && p->cfg->exec_reconcile_interval_ms > 0)
        exec__reconcile_locked(p, g, rg, list, now_ms, changed); /* not once turned off */
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
        exec__list_unlink(&p->results, &p->results_tail, prev, j);
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
    exec__reconcile_forget_locked(p); /* a later leadership starts counting afresh */
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
