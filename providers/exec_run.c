/* The exec provider's worker threads: each takes the oldest pending job (an instance's
 * before a machine's that no instance holds), runs its hook with hook_runner (under a
 * guard, in a process group of its own, killed at the timeout, at the fence or when the
 * work was released) and files the outcome in results for refresh to apply
 * (exec_internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "exec_internal.h"
#include "hook_output.h"
#include "hook_runner.h"
#include "log.h"
#include "metrics.h"

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
             "hook create printed a provider id that %s (a provider id is one word of "
             "UTF-8 text without control characters, not frugal://): refused",
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
        /* execve says ENOENT for a missing #! interpreter too, which misleads. */
        if (res.error == ENOENT && access(cmd, F_OK) == 0)
            snprintf(what, sizeof(what),
                     "cannot run %s: the interpreter its #! line names "
                     "does not exist",
                     cmd);
        else
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
            /* A NUL byte would cut the id short where the line is read as a string. */
            const char *nl = memchr(res.out->data, '\n', res.out->len);
            size_t first = nl != NULL ? (size_t)(nl - res.out->data) : res.out->len;
            if (j->first_line != NULL && memchr(res.out->data, '\0', first) != NULL)
                j->first_line[0] = '\0'; /* refused below as empty */
            if (j->verb == EXEC_CREATE && nl == NULL && res.out->overflow) {
                free(j->first_line);
                j->first_line = NULL;
                snprintf(what, sizeof(what),
                         "hook create printed a provider id over %d KiB, cut short: refused",
                         HOOK_OUTPUT_MAX / 1024);
                exec__fail(j, EXEC_FAILED, NULL, what);
                break;
            }
            exec__check_id(j);
            if (j->verb == EXEC_LIST)
                exec__keep_list(j, res.out);
        } else if (j->verb == EXEC_CREATE && WIFEXITED(status) &&
                   WEXITSTATUS(status) == EXEC_EXIT_NO_RESOURCES) { /* only a create's 3 */
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

void exec__run(exec_provider_t *p, exec_job_t *j, int64_t timeout_ms) {
    int64_t t0 = clock_mono_ms();
    exec__run_hook(p, j, timeout_ms);
    const char *verb = exec__verb_name(j->verb);
    /* A create's id may yet be refused (another instance of the group has it): a run
     * that frugal refuses is a failed one for the alerts, so it is counted once its
     * result was applied (exec__job_free). */
    if (!(j->verb == EXEC_CREATE && j->outcome == EXEC_OK && j->first_line != NULL))
        exec__count_run(j);
    metrics_observe(METRICS_HOOK_SECONDS, (double)(clock_mono_ms() - t0) / 1000.0, verb, NULL);
}

void *exec__worker(void *arg) {
    exec_provider_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->pending == NULL && !p->stopping)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stopping)
            break;
        /* An instance's work first: CA waits on its creates, while the deletes of machines
         * no instance holds (leaks, a dropped create's machine) can be many and wait. */
        exec_job_t *prev = NULL, *j = p->pending;
        for (exec_job_t *q = p->pending, *before = NULL; q != NULL; before = q, q = q->next) {
            if (!q->orphan) {
                prev = before, j = q;
                break;
            }
        }
        exec__list_unlink(&p->pending, &p->pending_tail, prev, j);
        j->queued = false;
        j->worker = true;
        j->epoch = atomic_load(&p->released); /* release bumps it under mu */
        j->next = p->active;
        p->active = j;
        p->running++;
        int64_t timeout = p->timeout_ms;
        if (j->verb == EXEC_LIST) {
            int64_t interval = p->cfg->exec_reconcile_interval_ms;
            int64_t cap =
                interval > EXEC_LIST_TIMEOUT_FLOOR_MS ? interval : EXEC_LIST_TIMEOUT_FLOOR_MS;
            timeout = timeout < cap ? timeout : cap;
        }
        pthread_mutex_unlock(&p->mu);

        exec__run(p, j, timeout);
        if (j->outcome == EXEC_FENCED)
            log_warn("exec hook %s %s%s%s: %s; its result is not kept (the leader runs it)",
                     exec__verb_name(j->verb), j->group, j->arg[0] ? " " : "", j->arg,
                     j->message != NULL ? j->message : "fenced");
        else if (j->outcome != EXEC_OK)
            log_warn("exec hook %s %s%s%s failed: %s", exec__verb_name(j->verb), j->group,
                     j->arg[0] ? " " : "", j->arg, j->message != NULL ? j->message : "");
        else
            log_debug("exec hook %s %s%s%s: OK", exec__verb_name(j->verb), j->group,
                      j->arg[0] ? " " : "", j->arg);

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
            exec__list_append(&p->results, &p->results_tail, j);
        }
        pthread_cond_broadcast(&p->idle_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}
