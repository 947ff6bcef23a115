/* The exec provider's reconciliation: queue each group's `list` every
 * provider.reconcile_interval, and act on the judgement of its result (the judgement
 * itself is reconcile.c's): replace the running instances it misses, report (and with
 * reconcile_delete_unknown, delete) the machines frugal does not know
 * (exec_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "hook_output.h"
#include "hook_runner.h"
#include "log.h"
#include "metrics.h"

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

/* Replace g's instances at v's indexes: each becomes deleting (its delete hook removes
 * what may remain of its machine, retried and resumed after a restart like any delete)
 * and a new instance is appended, whose create is staged; the target size stays. All or
 * nothing. With mu held. */
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
        ok = ok && jobs[k] != NULL && jobs[n + k] != NULL;
    }
    instance_t *grown =
        ok ? realloc(g->instances, (g->instances_count + n) * sizeof(*grown)) : NULL;
    if (grown != NULL)
        g->instances = grown;
    if (grown == NULL || exec__reserve_locked(p, 2 * n) != 0) {
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
    for (size_t k = 0; k < n; k++) {
        instance_t *old = &g->instances[v->replace[k]];
        log_warn("exec: instance %s of %s is running but missing from %d lists of the hook: "
                 "replaced by %s",
                 old->id, g->spec.id, (int)p->cfg->exec_reconcile_missing_after, added[k].id);
        metrics_count(METRICS_RECONCILE_REPLACED, g->spec.id, NULL, NULL);
        old->state = INSTANCE_DELETING;
        old->state_since_ms = now;
        exec__stage_locked(p, jobs[n + k], EXEC_STAGE_REPLACE);
        g->instances[g->instances_count++] = added[k];
        exec__stage_locked(p, jobs[k], EXEC_STAGE_ENQUEUE);
    }
    g->next_seq += n;
    *changed = true;
    free(added);
    free(jobs);
}

/* Report (and with reconcile_delete_unknown, stage the delete of) the listed machines no
 * group holds: a warning when a machine first shows, info when it is deleted again, debug
 * while it only stays. A machine's delete runs again no sooner than EXEC_RETRY_MS after it
 * was queued, as a failed instance delete does: a failing API is not hammered, and a
 * machine the infrastructure still lists for a while after its delete is not deleted
 * twice. With mu held. */
static void exec__unknown_locked(exec_provider_t *p, const group_t *g, reconcile_group_t *rg,
                                 const hook_listing_t *l, const reconcile_verdict_t *v,
                                 int64_t now) {
    bool remove = p->cfg->exec_reconcile_delete_unknown;
    char held_back_why[48];
    snprintf(held_back_why, sizeof(held_back_why), ": its delete ran less than %d s ago",
             EXEC_RETRY_MS / 1000);
    metrics_set(METRICS_RECONCILE_UNKNOWN, v->unknown_count, g->spec.id, NULL);
    for (size_t i = 0; i < v->unknown_count; i++) {
        const char *id = v->unknown[i], *state = "";
        for (size_t k = 0; k < l->count; k++) {
            if (l->items[k].id == id)
                state = l->items[k].state;
        }
        bool known = reconcile_leak_known(rg, id);
        bool held_back = remove && !exec__backoff_allows_locked(p, g->spec.id, id, now);
        bool deleting = remove && !held_back;
        log_write(!known     ? LOG_LEVEL_WARN
                  : deleting ? LOG_LEVEL_INFO
                             : LOG_LEVEL_DEBUG,
                  "exec: machine %s%s%s%s is listed by the hook for node group %s but frugal does "
                  "not know it (a leak)%s",
                  id, state[0] != '\0' ? " (" : "", state, state[0] != '\0' ? ")" : "", g->spec.id,
                  !remove     ? "; provider.reconcile_delete_unknown deletes such machines"
                  : held_back ? held_back_why
                  : known     ? ": deleting it again"
                              : ": deleting it");
        exec_job_t *j = deleting ? exec__job_new(p, EXEC_DELETE, g, id, "") : NULL;
        if (j != NULL) {
            exec__backoff_set_locked(p, g->spec.id, id, now + EXEC_RETRY_MS);
            j->orphan = true;
            exec__stage_locked(p, j, EXEC_STAGE_ENQUEUE);
        } else if (deleting) {
            log_error("exec: out of memory: machine %s of %s is not deleted this time", id,
                      g->spec.id);
        }
    }
}

/* Queue g's list when reconciliation is on, its interval has passed and no list of g is
 * queued, running or unapplied. With mu held. */
void exec__list_queue_locked(exec_provider_t *p, const group_t *g, reconcile_group_t *rg,
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
    rg->settled_all = !exec__group_busy_locked(p, NULL);
    rg->work_all_at = p->work;
    exec__enqueue_locked(p, j);
}

/* Judge g's finished list j and act on it. A list that failed or cannot be read
 * changes nothing. With mu held. */
void exec__reconcile_locked(exec_provider_t *p, group_t *g, reconcile_group_t *rg,
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
    size_t judged = 0;
    if (!reconcile_credible(rg, g, &p->reconcile, &l, &policy, &judged)) {
        if (judged == 1)
            log_warn("exec: list of node group %s ignored (none_listed): it shows machines no "
                     "node group holds but not the group's running instance (does the hook ask "
                     "the right place?)",
                     g->spec.id);
        else
            log_warn("exec: list of node group %s ignored (none_listed): it shows none of the "
                     "group's %zu running instances (does the hook ask the right place?)",
                     g->spec.id, judged);
        metrics_count(METRICS_RECONCILE_LIST_FAILURES, g->spec.id, "none_listed", NULL);
        hook_listing_clear(&l);
        return;
    }
    /* Unknown machines are judged only in a list that started and ended while no group
     * had machine work: a machine being made or removed then is neither known nor a leak,
     * and a hook that lists more than GROUP's machines may show another group's new
     * machine before frugal knows it. The next quiet list decides. */
    bool judge_unknown = rg->settled && rg->work == rg->work_at &&
                         !exec__group_busy_locked(p, g->spec.id) && rg->settled_all &&
                         p->work == rg->work_all_at && !exec__group_busy_locked(p, NULL);
    reconcile_verdict_t v;
    if (reconcile_judge(rg, g, &p->reconcile, &l, &policy, judge_unknown, &v) != 0) {
        log_error("exec: out of memory judging the list of node group %s", g->spec.id);
    } else {
        log_debug("exec: list of %s: %zu machines, %zu instances to replace, %zu unknown%s",
                  g->spec.id, l.count, v.replace_count, v.unknown_count,
                  v.unknown_judged ? "" : " (not judged: machine work in flight)");
        /* Said once while the list keeps showing them. */
        if (v.foreign_count > 0)
            log_write(rg->foreign_count == 0 ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG,
                      "exec: the list of node group %s shows machines of other node groups (%zu, "
                      "%s first): not leaks, but `HOOK list GROUP` should list GROUP's alone",
                      g->spec.id, v.foreign_count, v.foreign[0]);
        if (v.unknown_judged) {
            rg->foreign_count = v.foreign_count;
            exec__unknown_locked(p, g, rg, &l, &v, now);
            if (reconcile_note_leaks(rg, &v) != 0)
                log_error("exec: out of memory noting the leaks of %s: warned again", g->spec.id);
        }
        if (v.replace_count > 0)
            exec__replace_locked(p, g, &v, now, changed);
        reconcile_verdict_clear(&v);
    }
    hook_listing_clear(&l);
}

/* Forget every group's record, and zero the leak gauge of the groups that showed leaks:
 * nobody lists them any more. With mu held. */
void exec__reconcile_forget_locked(exec_provider_t *p) {
    for (const reconcile_group_t *rg = p->reconcile.groups; rg != NULL; rg = rg->next) {
        if (rg->leaks_count > 0)
            metrics_set(METRICS_RECONCILE_UNKNOWN, 0, rg->group, NULL);
    }
    reconcile_clear(&p->reconcile);
}

void exec__reconcile_configure_locked(exec_provider_t *p) {
    int64_t interval = p->cfg->exec_reconcile_interval_ms;
    if (interval <= 0) {
        exec__reconcile_forget_locked(p);
        return;
    }
    for (reconcile_group_t *rg = p->reconcile.groups; rg != NULL; rg = rg->next) {
        if (rg->next_list_ms > rg->listed_ms + interval)
            rg->next_list_ms = rg->listed_ms + interval;
    }
}

/* reconcile_prune's test: the group was refreshed this round. */
bool exec__reconcile_keep(void *arg, const char *group) {
    exec_provider_t *p = arg;
    if (exec__seen_has(p, group))
        return true;
    metrics_set(METRICS_RECONCILE_UNKNOWN, 0, group, NULL);
    return false;
}
