/* Reconciliation of the exec provider's groups with what the infrastructure lists
 * (docs/hooks.md, "Reconciliation"): the judgement of one `HOOK list GROUP` against the
 * group frugal holds, and what frugal remembers of a group between two lists. No I/O and
 * no locks: the exec provider runs the hooks, calls these under its own lock and acts on
 * the verdict. */
#ifndef FRUGAL_RECONCILE_H
#define FRUGAL_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "hook_output.h"

/* A running instance some lists in a row did not show. */
typedef struct reconcile_miss {
    char *id;
    int32_t count;
} reconcile_miss_t;

/* What frugal remembers of one group between its lists. */
typedef struct reconcile_group {
    struct reconcile_group *next;
    char *group;
    int64_t next_list_ms; /* no list is queued before (the clock of the refresh) */
    int64_t listed_ms;    /* when the list in flight was queued */
    /* Unknown machines are judged only when no machine work of the group ran from the
     * list's queueing to its judgement: a machine being made or removed then is neither
     * known nor a leak. */
    bool settled;     /* no machine work queued or running when the list was queued */
    uint64_t work;    /* machine work results applied to the group so far */
    uint64_t work_at; /* work when the list in flight was queued */
    /* The same for every group's machine work, which must be quiet too: a hook that
     * lists more than GROUP's machines may show another group's new machine before
     * frugal knows it. */
    bool settled_all;
    uint64_t work_all_at;
    reconcile_miss_t *misses;
    size_t misses_count;
    char **held; /* the group's instance ids at its last refresh (reconcile_note_held) */
    size_t held_count;
    char **leaks; /* the unknown machines of the last judged list (reconcile_note_leaks) */
    size_t leaks_count;
    size_t foreign_count; /* machines of other groups the last judged list showed */
} reconcile_group_t;

/* Every group's record. */
typedef struct reconcile {
    reconcile_group_t *groups;
} reconcile_t;

/* group's record, created (next list: at once) on first use; NULL when out of memory. */
reconcile_group_t *reconcile_group(reconcile_t *r, const char *group);

/* Forget the groups keep(arg, id) refuses. */
void reconcile_prune(reconcile_t *r, bool (*keep)(void *arg, const char *group), void *arg);

/* Forget everything (this replica no longer owns the machine work). */
void reconcile_clear(reconcile_t *r);

/* How a list is judged. */
typedef struct reconcile_policy {
    int64_t interval_ms;   /* an instance running for less than this is never missing */
    int32_t missing_after; /* consecutive lists without a running instance to replace it */
} reconcile_policy_t;

typedef struct reconcile_verdict {
    size_t *replace; /* indexes into g->instances, ascending */
    size_t replace_count;
    const char **unknown; /* listed ids no group holds (borrowed from the listing) */
    size_t unknown_count;
    const char **foreign; /* listed ids another group holds: not leaks (borrowed) */
    size_t foreign_count;
    bool unknown_judged; /* false: the round could not tell (machine work in flight) */
} reconcile_verdict_t;

/* Remember g's instance ids in rg (every state): another group's list that shows one of
 * them (a hook that lists more than GROUP's machines) is not shown a leak. 0, or
 * FRUGAL_ENOMEM with rg unchanged. */
int reconcile_note_held(reconcile_group_t *rg, const group_t *g);

/* Whether the last judged list of rg showed the unknown machine id too (it was
 * reported then). */
bool reconcile_leak_known(const reconcile_group_t *rg, const char *id);

/* Remember v's unknown machines as the last judged list's. 0, or FRUGAL_ENOMEM with rg
 * unchanged. */
int reconcile_note_leaks(reconcile_group_t *rg, const reconcile_verdict_t *v);

/* Judge listing l, queued at rg->listed_ms, against g: a running instance that was
 * running already an interval before the list and is not listed misses once more, and
 * is to be replaced at missing_after misses (its count then starts over); any other
 * instance's count is dropped. With judge_unknown, the listed ids no instance of g has
 * are unknown, unless another group's record in all (may be NULL) holds them: those are
 * foreign. Updates rg's misses. 0, or FRUGAL_ENOMEM with rg unchanged and *out empty. */
int reconcile_judge(reconcile_group_t *rg, const group_t *g, const reconcile_t *all,
                    const hook_listing_t *l, const reconcile_policy_t *policy, bool judge_unknown,
                    reconcile_verdict_t *out);

void reconcile_verdict_clear(reconcile_verdict_t *v);

/* Whether listing l is to be believed about g: a list that shows none of g's running
 * instances while at least two would be judged (a hook asking the wrong project or
 * region, an empty answer) would replace them all, and delete the live machines with
 * their deletes; it is not. Nor is one that misses g's only judged instance and shows
 * machines no group of all holds: with reconcile_delete_unknown, a hook asking the wrong
 * place would have those deleted as leaks. */
bool reconcile_credible(const reconcile_group_t *rg, const group_t *g, const reconcile_t *all,
                        const hook_listing_t *l, const reconcile_policy_t *policy, size_t *judged);

#endif
