#include "reconcile.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

reconcile_group_t *reconcile_group(reconcile_t *r, const char *group) {
    for (reconcile_group_t *rg = r->groups; rg != NULL; rg = rg->next) {
        if (strcmp(rg->group, group) == 0)
            return rg;
    }
    reconcile_group_t *rg = calloc(1, sizeof(*rg));
    if (rg == NULL || (rg->group = strdup(group)) == NULL) {
        free(rg);
        return NULL;
    }
    rg->next = r->groups;
    r->groups = rg;
    return rg;
}

static void reconcile__misses_free(reconcile_miss_t *m, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(m[i].id);
    free(m);
}

static void reconcile__ids_free(char **ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static void reconcile__group_free(reconcile_group_t *rg) {
    reconcile__misses_free(rg->misses, rg->misses_count);
    reconcile__ids_free(rg->held, rg->held_count);
    reconcile__ids_free(rg->leaks, rg->leaks_count);
    free(rg->group);
    free(rg);
}

void reconcile_prune(reconcile_t *r, bool (*keep)(void *arg, const char *group), void *arg) {
    for (reconcile_group_t **at = &r->groups; *at != NULL;) {
        reconcile_group_t *rg = *at;
        if (keep(arg, rg->group)) {
            at = &rg->next;
            continue;
        }
        *at = rg->next;
        reconcile__group_free(rg);
    }
}

void reconcile_clear(reconcile_t *r) {
    while (r->groups != NULL) {
        reconcile_group_t *rg = r->groups;
        r->groups = rg->next;
        reconcile__group_free(rg);
    }
}

static int32_t reconcile__missed(const reconcile_group_t *rg, const char *id) {
    for (size_t i = 0; i < rg->misses_count; i++) {
        if (strcmp(rg->misses[i].id, id) == 0)
            return rg->misses[i].count;
    }
    return 0;
}

static bool reconcile__held(const group_t *g, const char *id) {
    for (size_t i = 0; i < g->instances_count; i++) {
        if (strcmp(g->instances[i].id, id) == 0)
            return true;
    }
    return false;
}

/* Replace *ids (its *count) with copies of the n ids id_at(src, i). 0, or
 * FRUGAL_ENOMEM with *ids unchanged. */
static int reconcile__ids_set(char ***ids, size_t *count, size_t n,
                              const char *(*id_at)(const void *src, size_t i), const void *src) {
    char **copy = calloc(n > 0 ? n : 1, sizeof(*copy));
    for (size_t i = 0; copy != NULL && i < n; i++) {
        if ((copy[i] = strdup(id_at(src, i))) == NULL) {
            reconcile__ids_free(copy, i);
            copy = NULL;
        }
    }
    if (copy == NULL)
        return FRUGAL_ENOMEM;
    reconcile__ids_free(*ids, *count);
    *ids = copy;
    *count = n;
    return 0;
}

static const char *reconcile__instance_id(const void *group, size_t i) {
    return ((const group_t *)group)->instances[i].id;
}

int reconcile_note_held(reconcile_group_t *rg, const group_t *g) {
    size_t n = g->instances_count;
    /* Every refresh notes it; most find what the last one noted. */
    bool same = rg->held_count == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(rg->held[i], g->instances[i].id) == 0;
    if (same)
        return 0;
    return reconcile__ids_set(&rg->held, &rg->held_count, n, reconcile__instance_id, g);
}

bool reconcile_leak_known(const reconcile_group_t *rg, const char *id) {
    for (size_t i = 0; i < rg->leaks_count; i++)
        if (strcmp(rg->leaks[i], id) == 0)
            return true;
    return false;
}

static const char *reconcile__unknown_id(const void *verdict, size_t i) {
    return ((const reconcile_verdict_t *)verdict)->unknown[i];
}

int reconcile_note_leaks(reconcile_group_t *rg, const reconcile_verdict_t *v) {
    return reconcile__ids_set(&rg->leaks, &rg->leaks_count, v->unknown_count, reconcile__unknown_id,
                              v);
}

/* Whether a group of all other than rg held id at its last refresh. */
static bool reconcile__held_elsewhere(const reconcile_t *all, const reconcile_group_t *rg,
                                      const char *id) {
    for (const reconcile_group_t *o = all != NULL ? all->groups : NULL; o != NULL; o = o->next) {
        for (size_t i = 0; o != rg && i < o->held_count; i++) {
            if (strcmp(o->held[i], id) == 0)
                return true;
        }
    }
    return false;
}

void reconcile_verdict_clear(reconcile_verdict_t *v) {
    free(v->replace);
    free(v->unknown);
    free(v->foreign);
    memset(v, 0, sizeof(*v));
}

/* Whether instance in is judged by a list queued at rg->listed_ms. */
static bool reconcile__judged(const reconcile_group_t *rg, const instance_t *in,
                              const reconcile_policy_t *policy) {
    return in->state == INSTANCE_RUNNING &&
           in->state_since_ms <= rg->listed_ms - policy->interval_ms;
}

bool reconcile_credible(const reconcile_group_t *rg, const group_t *g, const reconcile_t *all,
                        const hook_listing_t *l, const reconcile_policy_t *policy, size_t *judged) {
    size_t listed = 0;
    *judged = 0;
    for (size_t i = 0; i < g->instances_count; i++) {
        const instance_t *in = &g->instances[i];
        if (!reconcile__judged(rg, in, policy))
            continue;
        (*judged)++;
        listed += hook_listing_has(l, in->id);
    }
    if (*judged == 0 || listed > 0)
        return true;
    if (*judged >= 2)
        return false;
    for (size_t i = 0; i < l->count; i++) {
        if (!reconcile__held(g, l->items[i].id) &&
            !reconcile__held_elsewhere(all, rg, l->items[i].id))
            return false;
    }
    return true;
}

int reconcile_judge(reconcile_group_t *rg, const group_t *g, const reconcile_t *all,
                    const hook_listing_t *l, const reconcile_policy_t *policy, bool judge_unknown,
                    reconcile_verdict_t *out) {
    memset(out, 0, sizeof(*out));
    size_t n = g->instances_count;
    reconcile_miss_t *misses = calloc(n > 0 ? n : 1, sizeof(*misses));
    size_t kept = 0;
    out->replace = calloc(n > 0 ? n : 1, sizeof(*out->replace));
    out->unknown = calloc(l->count > 0 ? l->count : 1, sizeof(*out->unknown));
    out->foreign = calloc(l->count > 0 ? l->count : 1, sizeof(*out->foreign));
    if (misses == NULL || out->replace == NULL || out->unknown == NULL || out->foreign == NULL)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const instance_t *in = &g->instances[i];
        /* Creating, deleting, or created within the last interval: not judged. */
        if (!reconcile__judged(rg, in, policy) || hook_listing_has(l, in->id))
            continue;
        int32_t count = reconcile__missed(rg, in->id) + 1;
        if (count >= policy->missing_after) {
            out->replace[out->replace_count++] = i;
            continue;
        }
        if ((misses[kept].id = strdup(in->id)) == NULL)
            goto oom;
        misses[kept++].count = count;
    }
    out->unknown_judged = judge_unknown;
    for (size_t i = 0; judge_unknown && i < l->count; i++) {
        const char *id = l->items[i].id;
        if (reconcile__held(g, id))
            continue;
        if (reconcile__held_elsewhere(all, rg, id))
            out->foreign[out->foreign_count++] = id;
        else
            out->unknown[out->unknown_count++] = id;
    }
    reconcile__misses_free(rg->misses, rg->misses_count);
    rg->misses = misses;
    rg->misses_count = kept;
    return 0;
oom:
    reconcile__misses_free(misses, kept);
    reconcile_verdict_clear(out);
    return FRUGAL_ENOMEM;
}
