/* The exec provider's jobs and their queues: a job is staged by a slot, queued by
 * commit_staged (pending, and in the busy map under its instance's provider id), run by
 * a worker (active), then kept in results until refresh applies it
 * (exec_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "hook_env.h"
#include "log.h"
#include "metrics.h"

void exec__job_free(exec_job_t *j) {
    if (j == NULL)
        return;
    /* A create that printed an id is counted here, after its result was applied (which
     * may have refused the id: a failed run) or dropped; other runs already are. */
    if (j->worker)
        exec__count_run(j);
    free(j->group);
    free(j->key);
    free(j->arg);
    hook_env_free(j->envp);
    free(j->first_line);
    free(j->output);
    free(j->message);
    free(j);
}

void exec__list_free(exec_job_t *j) {
    while (j != NULL) {
        exec_job_t *next = j->next;
        exec__job_free(j);
        j = next;
    }
}

/* A job of verb in group: its key, argv[3] and environment (envp, taken: freed on
 * failure); NULL when out of memory. */
static exec_job_t *exec__job_make(exec_verb_t verb, const char *group, const char *key,
                                  const char *arg, char **envp) {
    exec_job_t *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        hook_env_free(envp);
        return NULL;
    }
    j->verb = verb;
    j->envp = envp;
    j->group = strdup(group);
    j->key = strdup(key);
    j->arg = strdup(arg);
    if (j->group == NULL || j->key == NULL || j->arg == NULL || j->envp == NULL) {
        exec__job_free(j);
        return NULL;
    }
    return j;
}

/* A job for instance id of g (name: its name, "" when unknown); NULL when out of
 * memory. */
exec_job_t *exec__job_new(const exec_provider_t *p, exec_verb_t verb, const group_t *g,
                          const char *id, const char *name) {
    const char *key = id != NULL ? id : "";
    return exec__job_make(verb, g->spec.id, key, verb == EXEC_CREATE ? name : key,
                          hook_env_build(p->cfg, g, name, key));
}

/* An orphan delete of the machine made by the finished create j, whose instance no
 * group lists any more (j's own environment, FRUGAL_PROVIDER_ID set to the machine's
 * id); NULL when out of memory. */
exec_job_t *exec__orphan_of(const exec_job_t *j) {
    const char *id = j->first_line != NULL ? j->first_line : j->key;
    exec_job_t *o =
        exec__job_make(EXEC_DELETE, j->group, id, id, hook_env_with_provider_id(j->envp, id));
    if (o != NULL)
        o->orphan = true;
    return o;
}

void exec__list_append(exec_job_t **head, exec_job_t **tail, exec_job_t *j) {
    j->next = NULL;
    if (*tail != NULL)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

void exec__list_unlink(exec_job_t **head, exec_job_t **tail, exec_job_t *prev, exec_job_t *j) {
    if (prev != NULL)
        prev->next = j->next;
    else
        *head = j->next;
    if (*tail == j)
        *tail = prev;
}

/* Queue j; with mu held. Cannot fail: busy was reserved by the caller. */
void exec__enqueue_locked(exec_provider_t *p, exec_job_t *j) {
    j->queued = true;
    exec__list_append(&p->pending, &p->pending_tail, j);
    if (!j->orphan && j->verb != EXEC_LIST)
        strmap_put(p->busy, j->key, j, NULL);
    pthread_cond_signal(&p->work_cv);
}

/* Remove id's job from pending if it has not started; with mu held. True when it
 * was removed (and freed). */
bool exec__cancel_locked(exec_provider_t *p, const char *id) {
    exec_job_t *j = strmap_get(p->busy, id);
    if (j == NULL || !j->queued)
        return false;
    exec_job_t *prev = NULL;
    for (exec_job_t *q = p->pending; q != NULL; prev = q, q = q->next) {
        if (q != j)
            continue;
        exec__list_unlink(&p->pending, &p->pending_tail, prev, j);
        strmap_remove(p->busy, id);
        exec__job_free(j);
        return true;
    }
    return false;
}

/* Stage j for commit_staged; with mu held. Cannot fail: the caller reserved busy for
 * strmap_count(busy) + staged_busy + its jobs. */
void exec__stage_locked(exec_provider_t *p, exec_job_t *j, exec_stage_t stage) {
    j->stage = stage;
    exec__list_append(&p->staged, &p->staged_tail, j);
    if (stage != EXEC_STAGE_CANCEL && !j->orphan)
        p->staged_busy++;
}

/* Reserve busy for n more staged jobs; with mu held. */
int exec__reserve_locked(exec_provider_t *p, size_t n) {
    return strmap_reserve(p->busy, strmap_count(p->busy) + p->staged_busy + n);
}

void exec__seen_clear(exec_provider_t *p) {
    for (size_t i = 0; i < p->seen_count; i++)
        free(p->seen[i]);
    p->seen_count = 0;
    p->refreshed = false;
    p->seen_oom = false;
}

/* Remember that group was refreshed this round; with mu held. */
void exec__seen_add(exec_provider_t *p, const char *group) {
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

bool exec__seen_has(const exec_provider_t *p, const char *group) {
    for (size_t i = 0; i < p->seen_count; i++) {
        if (strcmp(p->seen[i], group) == 0)
            return true;
    }
    return false;
}

/* Whether list holds machine work (any job but a list) of group (NULL: of any group). */
bool exec__list_has_group(const exec_job_t *j, const char *group) {
    for (; j != NULL; j = j->next) {
        if (j->verb != EXEC_LIST && j->group != NULL &&
            (group == NULL || strcmp(j->group, group) == 0))
            return true;
    }
    return false;
}

/* Whether machine work of group (NULL: of any group) is staged, queued, running or not
 * yet applied. */
bool exec__group_busy_locked(const exec_provider_t *p, const char *group) {
    return exec__list_has_group(p->pending, group) || exec__list_has_group(p->active, group) ||
           exec__list_has_group(p->results, group) || exec__list_has_group(p->staged, group);
}

bool exec__has_list(const exec_job_t *j, const char *group) {
    for (; j != NULL; j = j->next) {
        if (j->verb == EXEC_LIST && strcmp(j->group, group) == 0)
            return true;
    }
    return false;
}

const char *exec__verb_name(exec_verb_t v) {
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

/* An orphan delete is recorded nowhere else: the leader cannot run it again. */
void exec__warn_orphan_dropped(const exec_job_t *j) {
    if (j->orphan && j->verb == EXEC_DELETE)
        log_warn("exec: machine %s of node group %s (made for an instance that no longer "
                 "exists) was not deleted: this replica lost the leadership; delete it by hand",
                 j->arg, j->group);
}

void exec__backoff_set_locked(exec_provider_t *p, const char *group, const char *id,
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

bool exec__backoff_allows_locked(exec_provider_t *p, const char *group, const char *id,
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

static const char *const exec__results[] = {[EXEC_OK] = "ok",
                                            [EXEC_NO_RESOURCES] = "no_resources",
                                            [EXEC_FAILED] = "failed",
                                            [EXEC_TIMEOUT] = "timeout",
                                            [EXEC_FENCED] = "fenced"};

/* Every verb's series exist at 0 before its first run, so that a rate over the first
 * run sees it (a series that appears with its first sample has no increase). */
void exec__metrics_init(void) {
    for (int v = EXEC_CREATE; v <= EXEC_LIST; v++) {
        const char *verb = exec__verb_name((exec_verb_t)v);
        for (size_t r = 0; r < sizeof(exec__results) / sizeof(exec__results[0]); r++)
            metrics_cell(METRICS_HOOK_RUNS, verb, exec__results[r], NULL);
        metrics_cell(METRICS_HOOK_SECONDS, verb, NULL, NULL);
    }
}

void exec__count_run(exec_job_t *j) {
    if (!j->counted)
        metrics_count(METRICS_HOOK_RUNS, exec__verb_name(j->verb), exec__results[j->outcome], NULL);
    j->counted = true;
}
