/* The replay simulation's loop (see replay.h and docs/replay.md), on the cluster of
 * replay.c (private/replay_internal.h).
 *
 * Time advances in CA loops of REPLAY_LOOP_SECONDS, but only loops in which something
 * can happen are run: an arrival, a pod ending, a node becoming ready or unneeded, or
 * pods still pending that an option could host. A node bills price x loops alive, so a
 * skipped loop costs what it would have cost. One loop:
 *   1. pods whose time is up leave their node;
 *   2. pods bound to a node that became ready start;
 *   3. the pods that arrived are pending (a pod no group could ever host is counted and
 *      dropped);
 *   4. pending pods go onto free capacity, ready or booting nodes, first fit in the
 *      order the nodes were bought, or the node replay_options_t.placement scores best
 *      (the scheduler places a pod as soon as it fits; a pod that fits a booting node is
 *      not a reason to scale up, as in CA);
 *   5. if pods are still pending, each group with room offers an option: its pods
 *      placed first-fit-decreasing (CA's estimator order) onto new nodes, within
 *      max_size and the cluster-wide cpu/memory limits; the policy picks one; its nodes
 *      are bought, ready REPLAY_BOOT_SECONDS later, with their pods bound;
 *   6. a ready node empty for its group's scale_down_unneeded is removed (never below
 *      min_size);
 *   7. with replay_options_t.scale_down_utilization, CA's scale-down of under-utilised
 *      nodes (replay__consolidate). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "binpack.h"
#include "escalator.h"
#include "replay_internal.h"

/* ---- one loop ---- */

/* The option of group g for the pending pods: first-fit-decreasing onto new nodes (their
 * room and pod count in room and held), within max_size and the cluster limits.
 * assign[k] is the new node of pods[k]. */
static void replay__option(replay__sim_t *s, size_t g, binpack_key_t *keys, resources_t *room,
                           int32_t *held, uint32_t *pods, uint32_t *assign, replay_option_t *o) {
    const replay_group_t *grp = &s->groups[g];
    const resources_t *cap = &grp->info.capacity;
    const autoprov_config_t *ap = &s->cfg->autoprovisioning;
    int64_t headroom = grp->cfg->max_size - grp->nodes;
    if (cap->cpu_milli > 0 && ap->max_cpu_milli < INT64_MAX) {
        int64_t by = (ap->max_cpu_milli - s->cpu_alive) / cap->cpu_milli;
        headroom = by < headroom ? by : headroom;
    }
    if (cap->memory_bytes > 0 && ap->max_memory_bytes < INT64_MAX) {
        int64_t by = (ap->max_memory_bytes - s->mem_alive) / cap->memory_bytes;
        headroom = by < headroom ? by : headroom;
    }
    memset(o, 0, sizeof(*o));
    o->group = g;
    o->pods = pods;
    if (headroom <= 0)
        return;
    size_t n = 0;
    for (size_t k = 0; k < s->pending_count; k++) {
        const replay_pod_t *p = &s->pods[s->pending[k]];
        if (!replay__can_host(s, p, g))
            continue;
        keys[n++] = (binpack_key_t){binpack_size(&p->request, cap), k}; /* k: into pending */
    }
    binpack_sort_largest_first(keys, n);
    int32_t opened = 0;
    for (size_t i = 0; i < n; i++) {
        const resources_t *r = &s->pods[s->pending[keys[i].at]].request;
        int32_t j = 0;
        while (j < opened && (!replay__fits(r, &room[j]) || !replay__slot(s, (uint32_t)g, held[j])))
            j++;
        if (j == opened) {
            if (opened == headroom)
                continue;
            held[opened] = 0;
            room[opened++] = *cap;
        }
        replay__take(&room[j], r, 1);
        held[j]++;
        pods[o->pods_count] = (uint32_t)keys[i].at;
        assign[o->pods_count++] = (uint32_t)j;
    }
    o->node_count = opened;
}

/* Buy count nodes for group g the way CA with --balance-similar-node-groups does:
 * spread over the groups similar to g (escalator_split), booting until
 * REPLAY_BOOT_SECONDS from now; *bought receives how many (fewer when the similar groups
 * reach max_size). The new nodes get consecutive ids, group by group. */
static int replay__buy_balanced(replay__sim_t *s, size_t g, int64_t count, int64_t now,
                                int64_t *bought, frugal_err_t *err) {
    size_t G = s->groups_count;
    const char **keys = calloc(G, sizeof(*keys));
    int64_t *sizes = calloc(G, sizeof(*sizes)), *max = calloc(G, sizeof(*max));
    int64_t *share = calloc(G, sizeof(*share));
    int rc = 0;
    *bought = 0;
    if (!keys || !sizes || !max || !share) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < G; k++) {
        keys[k] = s->groups[k].info.similarity_key;
        sizes[k] = s->groups[k].nodes;
        max[k] = s->groups[k].cfg->max_size;
    }
    escalator_split(keys, sizes, max, G, g, count, share);
    for (size_t k = 0; k < G && rc == 0; k++) {
        for (int64_t i = 0; i < share[k] && rc == 0; i++) {
            uint32_t id = 0;
            if ((rc = replay__buy(s, k, now, &id, err)) == 0) {
                s->nodes[id].ready_s = now + REPLAY_BOOT_SECONDS;
                (*bought)++;
            }
        }
    }
done:
    free(keys);
    free(sizes);
    free(max);
    free(share);
    return rc;
}

/* Escalator's own figures for the scale-down (its documented example configuration):
 * below TAINT_LOWER percent it taints FAST nodes a loop, below TAINT_UPPER SLOW ones; a
 * tainted node is removed once empty for SOFT_GRACE seconds (its pods are never evicted
 * here: the hard grace period is not modelled); after a scale-up the group waits
 * COOL_DOWN seconds. It looks at the cluster every SCAN seconds. */
#define REPLAY_ESCALATOR_TAINT_LOWER 10
#define REPLAY_ESCALATOR_TAINT_UPPER 40
#define REPLAY_ESCALATOR_SLOW 2
#define REPLAY_ESCALATOR_FAST 5
#define REPLAY_ESCALATOR_SOFT_GRACE 60
#define REPLAY_ESCALATOR_COOL_DOWN 120
#define REPLAY_ESCALATOR_SCAN 60 /* Escalator's default scan interval */

/* Whether groups a and b scale as one set (similar groups, docs/escalator.md). */
static bool replay__similar(const replay__sim_t *s, size_t a, size_t b) {
    const char *ka = s->groups[a].info.similarity_key, *kb = s->groups[b].info.similarity_key;
    return a == b || (ka != NULL && kb != NULL && strcmp(ka, kb) == 0);
}

/* One Escalator loop (docs/escalator.md). Escalator scales an auto-scaling group, which
 * spreads its nodes over zones itself: a set of similar groups is one Escalator group
 * here, grown with CA's split. Its utilisation counts the untainted nodes of the set and
 * the pending pods it owns (a pending pod belongs to the first group, in configuration
 * order, that can host it: Escalator expects each pod to select one group); then it
 * untaints or buys the delta, or taints nodes when the utilisation is low. untainted is
 * scratch space of groups_count entries; cool_down[g] is when the set led by g may act
 * again. */
static int replay__escalate(replay__sim_t *s, int64_t now, int64_t *cool_down, int64_t *untainted,
                            bool *scaled, frugal_err_t *err) {
    if (now % REPLAY_ESCALATOR_SCAN != 0)
        return 0;
    autoprov_totals_t totals = {s->cpu_alive, s->mem_alive};
    for (size_t g = 0; g < s->groups_count; g++) {
        replay_group_t *grp = &s->groups[g];
        size_t leader = 0;
        while (!replay__similar(s, leader, g))
            leader++;
        if (leader != g || now < cool_down[g])
            continue; /* a set acts once, through its first group */
        int64_t max = 0, tainted = 0;
        for (size_t k = g; k < s->groups_count; k++) {
            untainted[k] = 0;
            if (replay__similar(s, k, g))
                max += s->groups[k].cfg->max_size;
        }
        escalator_group_t eg;
        escalator_group_init(&eg, grp->cfg->scale_up_threshold, grp->cfg->scale_on_starve,
                             &grp->info.capacity);
        for (size_t a = 0; a < s->alive_count; a++) {
            const replay__node_t *n = &s->nodes[s->alive[a]];
            if (n->group < g || !replay__similar(s, n->group, g))
                continue;
            if (n->tainted_s >= 0) {
                tainted++;
                continue;
            }
            untainted[n->group]++;
            resources_t used = grp->info.capacity;
            replay__take(&used, &n->free, 1);
            escalator_add_node(&eg, &grp->info.capacity);
            escalator_add_pod(&eg, &used, false);
        }
        for (size_t k = 0; k < s->pending_count; k++) {
            const replay_pod_t *p = &s->pods[s->pending[k]];
            size_t owner = 0;
            while (owner < s->groups_count && !replay__can_host(s, p, owner))
                owner++;
            if (owner < s->groups_count && replay__similar(s, owner, g))
                escalator_add_pod(&eg, &p->request, true);
        }
        /* Tainted nodes still count toward the groups' sizes. */
        max -= tainted;
        escalator_result_t r;
        escalator_scale_up(&eg,
                           max > INT32_MAX ? INT32_MAX
                           : max < 0       ? 0
                                           : (int32_t)max,
                           &s->cfg->autoprovisioning, &totals, &r);
        if (r.delta > 0) {
            int64_t left = r.delta;
            /* Untaint the newest tainted nodes first, then buy. */
            for (size_t a = s->alive_count; a > 0 && left > 0; a--) {
                replay__node_t *n = &s->nodes[s->alive[a - 1]];
                if (n->group >= g && n->tainted_s >= 0 && replay__similar(s, n->group, g)) {
                    n->tainted_s = -1;
                    left--;
                }
            }
            int64_t bought = 0;
            if (left > 0) {
                int rc = replay__buy_balanced(s, g, left, now, &bought, err);
                if (rc != 0)
                    return rc;
            }
            s->fig.nodes_bought += bought;
            s->fig.decisions += bought > 0; /* a loop that bought, as for the options */
            cool_down[g] = now + REPLAY_ESCALATOR_COOL_DOWN;
            totals = (autoprov_totals_t){s->cpu_alive, s->mem_alive};
            *scaled = true;
            continue;
        }
        if (r.used_percent >= REPLAY_ESCALATOR_TAINT_UPPER)
            continue;
        int64_t taint = r.used_percent < REPLAY_ESCALATOR_TAINT_LOWER ? REPLAY_ESCALATOR_FAST
                                                                      : REPLAY_ESCALATOR_SLOW;
        /* The oldest ready nodes first, as Escalator taints, never below min_size. */
        for (size_t a = 0; a < s->alive_count && taint > 0; a++) {
            replay__node_t *n = &s->nodes[s->alive[a]];
            if (n->group < g || n->tainted_s >= 0 || n->ready_s > now ||
                !replay__similar(s, n->group, g) ||
                untainted[n->group] <= s->groups[n->group].cfg->min_size)
                continue;
            n->tainted_s = now;
            untainted[n->group]--;
            taint--;
        }
    }
    return 0;
}

/* Escalator's removal: node a is tainted, ready and empty for the soft grace period. */
static bool replay__escalator_unneeded(const replay__sim_t *s, size_t a, int64_t now) {
    const replay__node_t *n = &s->nodes[s->alive[a]];
    if (n->tainted_s < 0 || n->pods > 0 || n->ready_s > now)
        return false;
    int64_t since = n->empty_since_s > n->tainted_s ? n->empty_since_s : n->tainted_s;
    return now - since >= REPLAY_ESCALATOR_SOFT_GRACE;
}

/* The requests (of a compat class) that found no node in this pass: placing pods only
 * takes room, so a later pod of the same class and request finds none either. */
typedef struct replay__misses {
    uint32_t *pods; /* a pod of each miss + 1; 0 empty */
    size_t cap;
} replay__misses_t;

/* The fields replay.c's replay__miss_hashes hashes. */
static bool replay__same_miss(const replay__sim_t *s, const replay_pod_t *a,
                              const replay_pod_t *b) {
    return s->compat_class[a->shape] == s->compat_class[b->shape] &&
           a->request.cpu_milli == b->request.cpu_milli &&
           a->request.memory_bytes == b->request.memory_bytes && a->request.gpu == b->request.gpu;
}

/* The slot of a miss like pod's: taken (a pod like it missed), else where it would go. */
static size_t replay__miss_slot(const replay__sim_t *s, const replay__misses_t *m, uint32_t pod) {
    const replay_pod_t *p = &s->pods[pod];
    size_t i = s->miss_hash[pod] & (m->cap - 1);
    while (m->pods[i] != 0 && !replay__same_miss(s, &s->pods[m->pods[i] - 1], p))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* The most free cpu, memory and GPUs any untainted live node has, each on its own: a
 * request over one of them fits no node. Placing pods only takes room, so it stays an
 * upper bound for the rest of the pass. */
static resources_t replay__room_bound(const replay__sim_t *s) {
    resources_t most = {0, 0, 0};
    for (size_t a = 0; a < s->alive_count; a++) {
        const replay__node_t *n = &s->nodes[s->alive[a]];
        if (n->tainted_s >= 0)
            continue;
        most.cpu_milli = n->free.cpu_milli > most.cpu_milli ? n->free.cpu_milli : most.cpu_milli;
        most.memory_bytes =
            n->free.memory_bytes > most.memory_bytes ? n->free.memory_bytes : most.memory_bytes;
        most.gpu = n->free.gpu > most.gpu ? n->free.gpu : most.gpu;
    }
    return most;
}

/* Steps 4 and 5; *scaled tells whether an option was bought. */
static int replay__schedule(replay__sim_t *s, int64_t now, bool *scaled, frugal_err_t *err) {
    *scaled = false;
    size_t keep = 0;
    replay__misses_t misses = {NULL, 16};
    while (misses.cap < 2 * s->pending_count)
        misses.cap *= 2;
    if ((misses.pods = calloc(misses.cap, sizeof(*misses.pods))) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    const resources_t bound = replay__room_bound(s);
    for (size_t k = 0; k < s->pending_count; k++) {
        uint32_t pod = s->pending[k];
        const replay_pod_t *p = &s->pods[pod];
        size_t slot = replay__miss_slot(s, &misses, pod);
        size_t a = misses.pods[slot] != 0 || !replay__fits(&p->request, &bound)
                       ? s->alive_count
                       : replay__pick_node(s, p, NULL, NULL, NULL, s->alive_count, true, now);
        if (a < s->alive_count) {
            replay__place(s, pod, s->alive[a], now);
        } else {
            misses.pods[slot] = pod + 1;
            s->pending[keep++] = pod;
        }
    }
    free(misses.pods);
    s->pending_count = keep;
    if (keep == 0 || s->policy == &replay_policy_escalator)
        return 0; /* Escalator scales in replay__escalate */

    size_t G = s->groups_count, P = s->pending_count;
    replay_option_t *opts = calloc(G, sizeof(*opts));
    uint32_t *pods = calloc(G * P, sizeof(*pods));
    uint32_t *assign = calloc(G * P, sizeof(*assign));
    binpack_key_t *keys = calloc(P, sizeof(*keys));
    resources_t *room = calloc(P, sizeof(*room));
    int32_t *held = calloc(P, sizeof(*held));
    size_t *which = calloc(G, sizeof(*which));
    int rc = 0;
    if (!opts || !pods || !assign || !keys || !room || !held || !which) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t g = 0; g < G; g++) {
        replay__option(s, g, keys, room, held, pods + g * P, assign + g * P, &opts[n]);
        if (opts[n].node_count > 0 && opts[n].pods_count > 0)
            which[n++] = g;
    }
    if (n == 0)
        goto done;
    char why[1024];
    why[0] = '\0';
    replay_view_t view = {s->cfg,
                          s->groups,
                          s->groups_count,
                          s->pods,
                          s->pending,
                          s->pending_count,
                          now,
                          (int64_t)s->alive_count,
                          s->on_decision ? why : NULL,
                          sizeof(why)};
    size_t chosen = 0;
    if (s->restart_at_s > 0 && now >= s->restart_at_s) {
        if (s->policy->restart != NULL)
            s->policy->restart(s->policy_state);
        s->restart_at_s = 0;
    }
    if ((rc = s->policy->choose(s->policy_state, &view, opts, n, &chosen, err)) != 0)
        goto done;
    const replay_option_t *o = &opts[chosen];
    if (s->on_decision) {
        replay_decision_t d = {now,
                               s->groups[o->group].cfg->spec.id,
                               o->node_count,
                               o->pods_count,
                               s->pending_count,
                               n,
                               why};
        s->on_decision(s->on_decision_ctx, &d);
    }
    const uint32_t *as = assign + which[chosen] * P;
    uint32_t first = (uint32_t)s->nodes_count;
    int64_t bought = 0;
    if ((rc = replay__buy_balanced(s, o->group, o->node_count, now, &bought, err)) != 0)
        goto done;
    s->fig.nodes_bought += bought;
    s->fig.decisions++;
    if (bought > 0)
        s->last_up_s = now;
    bool *taken = (bool *)keys; /* P bytes are free in keys now */
    memset(taken, 0, P * sizeof(bool));
    for (size_t k = 0; k < o->pods_count; k++) {
        /* A pod keeps its place on the k-th new node when that node's group (similar, in
         * another zone) can host it; otherwise it stays pending. */
        uint32_t node = first + as[k];
        const replay_pod_t *p = &s->pods[s->pending[o->pods[k]]];
        if ((int64_t)as[k] >= bought ||
            !s->compat[p->shape * s->groups_count + s->nodes[node].group])
            continue;
        taken[o->pods[k]] = true;
        replay__place(s, s->pending[o->pods[k]], node, now);
    }
    keep = 0;
    for (size_t k = 0; k < P; k++)
        if (!taken[k])
            s->pending[keep++] = s->pending[k];
    s->pending_count = keep;
    *scaled = true;
done:
    free(opts);
    free(pods);
    free(assign);
    free(keys);
    free(room);
    free(held);
    free(which);
    return rc;
}

static int64_t replay__min(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* ---- step 7: CA's scale-down of under-utilised nodes ---- */

/* Whether the ready node n is below its group's threshold: its GPU share for a GPU
 * node, else the larger of its cpu and memory shares (requests over capacity). */
static bool replay__underused(const replay__sim_t *s, const replay__node_t *n) {
    const resources_t *cap = &s->groups[n->group].info.capacity;
    if (cap->gpu > 0)
        return (double)(cap->gpu - n->free.gpu) / (double)cap->gpu < s->gpu_threshold[n->group];
    double cpu = cap->cpu_milli > 0
                     ? (double)(cap->cpu_milli - n->free.cpu_milli) / (double)cap->cpu_milli
                     : 0;
    double mem = cap->memory_bytes > 0 ? (double)(cap->memory_bytes - n->free.memory_bytes) /
                                             (double)cap->memory_bytes
                                       : 0;
    return (cpu > mem ? cpu : mem) < s->threshold[n->group];
}

/* Step 7 (docs/replay.md, "Scale-down of under-utilised nodes"). A ready node below its
 * threshold with pods is a candidate; in purchase order, a candidate that received no
 * pods in this pass is unneeded when each of its pods fits (placed as in step 4: first
 * fit in purchase order or by s->placement's score) on another ready node that is not unneeded in
 * this pass (the pods are taken from a copy of the nodes' free capacity, and their new nodes are
 * touched). A node unneeded for its group's scale_down_unneeded is drained, its pods moved where
 * the pass put them (they keep running, their end unchanged) and it is removed: never below
 * min_size, not within REPLAY_DELAY_AFTER_ADD_SECONDS of a scale-up, one a loop. *next is lowered
 * to the loop at which the next unneeded node could go. */
static int replay__consolidate(replay__sim_t *s, int64_t now, int64_t *next, frugal_err_t *err) {
    size_t A = s->alive_count, C = 0;
    for (size_t a = 0; a < A; a++) {
        replay__node_t *n = &s->nodes[s->alive[a]];
        n->candidate = -1;
        if (n->ready_s <= now && n->pods > 0 && n->tainted_s < 0 && replay__underused(s, n))
            n->candidate = (int32_t)C++;
        else
            n->unneeded_s = -1;
    }
    if (C == 0)
        return 0;
    /* The candidates' pods (ready nodes hold running pods only): heap slots, bucketed. */
    size_t *start = calloc(C + 1, sizeof(*start)), *fill = calloc(C, sizeof(*fill));
    resources_t *room = calloc(A, sizeof(*room));
    int32_t *held = calloc(A, sizeof(*held));
    uint8_t *flag = calloc(A, sizeof(*flag));
    uint32_t *slot = NULL, *dest = NULL;
    int rc = 0;
    if (!start || !fill || !room || !held || !flag) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t h = 0; h < s->heap_count; h++) {
        int32_t c = s->nodes[s->heap[h].node].candidate;
        if (c >= 0)
            start[c + 1]++;
    }
    for (size_t c = 0; c < C; c++) {
        start[c + 1] += start[c];
        fill[c] = start[c];
    }
    slot = calloc(start[C] + 1, sizeof(*slot));
    dest = calloc(start[C] + 1, sizeof(*dest));
    if (!slot || !dest) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t h = 0; h < s->heap_count; h++) {
        int32_t c = s->nodes[s->heap[h].node].candidate;
        if (c >= 0)
            slot[fill[c]++] = (uint32_t)h;
    }
    for (size_t a = 0; a < A; a++) {
        room[a] = s->nodes[s->alive[a]].free;
        held[a] = s->nodes[s->alive[a]].pods;
    }

    /* Which candidates are unneeded in this loop. */
    for (size_t a = 0; a < A; a++) {
        replay__node_t *n = &s->nodes[s->alive[a]];
        if (n->candidate < 0)
            continue;
        if (flag[a] & REPLAY__TOUCHED) {
            n->unneeded_s = -1;
            continue;
        }
        size_t c = (size_t)n->candidate, k = start[c];
        for (; k < start[c + 1]; k++) {
            const replay_pod_t *p = &s->pods[s->heap[slot[k]].pod];
            size_t b = replay__pick_node(s, p, room, held, flag, a, false, now);
            if (b == A)
                break;
            replay__take(&room[b], &p->request, 1);
            held[b]++;
            dest[k] = (uint32_t)b;
        }
        if (k < start[c + 1]) { /* a pod fits nowhere: give back what the others took */
            for (size_t j = start[c]; j < k; j++) {
                replay__take(&room[dest[j]], &s->pods[s->heap[slot[j]].pod].request, -1);
                held[dest[j]]--;
            }
            n->unneeded_s = -1;
            continue;
        }
        flag[a] |= REPLAY__REMOVING;
        for (size_t j = start[c]; j < k; j++)
            flag[dest[j]] |= REPLAY__TOUCHED;
        if (n->unneeded_s < 0)
            n->unneeded_s = now;
    }

    /* The first due one goes; the others set when the next loop is. */
    int64_t quiet = s->last_up_s + REPLAY_DELAY_AFTER_ADD_SECONDS;
    size_t drain = A;
    for (size_t a = 0; a < A; a++) {
        const replay__node_t *n = &s->nodes[s->alive[a]];
        const replay_group_t *g = &s->groups[n->group];
        if (!(flag[a] & REPLAY__REMOVING) || g->nodes <= g->cfg->min_size)
            continue;
        int64_t due = n->unneeded_s + g->unneeded_s;
        if (due > now)
            *next = replay__min(*next, due);
        else if (now < quiet)
            *next = replay__min(*next, quiet);
        else if (drain < A)
            *next = replay__min(*next, now + REPLAY_LOOP_SECONDS);
        else
            drain = a;
    }
    if (drain < A) {
        replay__node_t *n = &s->nodes[s->alive[drain]];
        size_t c = (size_t)n->candidate;
        for (size_t k = start[c]; k < start[c + 1]; k++) {
            replay__heap_item_t *it = &s->heap[slot[k]];
            const resources_t *r = &s->pods[it->pod].request;
            it->node = s->alive[dest[k]];
            replay__take(&s->nodes[it->node].free, r, 1);
            s->nodes[it->node].pods++;
            replay__take(&n->free, r, -1);
        }
        n->pods = 0;
        n->unneeded_s = -1;
        replay__remove(s, drain, now);
        s->fig.nodes_drained++;
    }
done:
    free(start);
    free(fill);
    free(room);
    free(held);
    free(flag);
    free(slot);
    free(dest);
    return rc;
}

int replay_run(const frugal_config_t *cfg, const replay_workload_t *w,
               const replay_policy_ops_t *policy, uint64_t seed, double hours,
               replay_figures_t *out, frugal_err_t *err) {
    return replay_run_with(cfg, w, policy, seed, hours, NULL, out, err);
}

/* Step 7's thresholds, when opts turns it on: the group's own, else opts'. */
static int replay__thresholds(replay__sim_t *s, const replay_options_t *opts, frugal_err_t *err) {
    if (opts == NULL || !(opts->scale_down_utilization > 0) ||
        s->policy == &replay_policy_escalator)
        return 0;
    size_t G = s->groups_count ? s->groups_count : 1;
    s->threshold = calloc(G, sizeof(*s->threshold));
    s->gpu_threshold = calloc(G, sizeof(*s->gpu_threshold));
    if (!s->threshold || !s->gpu_threshold)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t g = 0; g < s->groups_count; g++) {
        const group_options_t *o = &s->groups[g].cfg->options;
        s->threshold[g] = o->has_scale_down_utilization_threshold
                              ? o->scale_down_utilization_threshold
                              : opts->scale_down_utilization;
        s->gpu_threshold[g] = o->has_scale_down_gpu_utilization_threshold
                                  ? o->scale_down_gpu_utilization_threshold
                                  : opts->scale_down_utilization;
    }
    return 0;
}

int replay_run_with(const frugal_config_t *cfg, const replay_workload_t *w,
                    const replay_policy_ops_t *policy, uint64_t seed, double hours,
                    const replay_options_t *opts, replay_figures_t *out, frugal_err_t *err) {
    replay__sim_t s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    s.policy = policy;
    s.placement = opts != NULL ? opts->placement : REPLAY_PLACE_FIRST_FIT;
    s.restart_at_s = opts != NULL ? (int64_t)llround(opts->restart_at_h * 3600.0) : 0;
    s.on_decision = opts != NULL ? opts->on_decision : NULL;
    s.on_decision_ctx = opts != NULL ? opts->on_decision_ctx : NULL;
    if ((unsigned)s.placement > REPLAY_PLACE_MOST_ALLOCATED)
        return frugal_err_set(err, FRUGAL_EINVAL, "unknown placement %d", (int)s.placement);
    int rc = replay__setup(&s, cfg, w, seed, hours, err);
    if (rc == 0)
        rc = replay__thresholds(&s, opts, err);
    size_t m = s.pods_count ? s.pods_count : 1;
    if (rc == 0 &&
        (!(s.pending = calloc(m, sizeof(*s.pending))) || !(s.bound = calloc(m, sizeof(*s.bound))) ||
         !(s.bound_node = calloc(m, sizeof(*s.bound_node))) ||
         !(s.heap = calloc(m, sizeof(*s.heap))) || !(s.start_s = calloc(m, sizeof(*s.start_s)))))
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    /* The policy's random draws come from their own stream: the workload's pods are the
     * same for every policy of a seed. */
    replay_rng_t prng;
    replay_rng_seed(&prng, seed ^ 0xD1B54A32D192ED03ULL);
    if (rc == 0)
        rc = policy->init(&s.policy_state, cfg, &prng, err);
    /* The groups' initial nodes, ready at 0. */
    for (size_t g = 0; rc == 0 && g < s.groups_count; g++) {
        const node_group_config_t *gc = s.groups[g].cfg;
        int32_t initial = gc->size >= 0 ? gc->size : gc->min_size;
        for (int32_t i = 0; rc == 0 && i < initial; i++) {
            uint32_t id;
            rc = replay__buy(&s, g, 0, &id, err);
        }
    }
    s.fig.pods = (int64_t)s.pods_count;
    int64_t *cool_down = calloc(2 * s.groups_count + 1, sizeof(*cool_down)); /* + scratch */
    if (rc == 0 && cool_down == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t next_pod = 0;
    int64_t now = 0;
    while (rc == 0 && now < s.horizon_s) {
        /* 1. endings */
        while (s.heap_count > 0 && s.heap[0].end_s <= now) {
            replay__heap_item_t it = replay__heap_pop(&s);
            replay__node_t *n = &s.nodes[it.node];
            replay__take(&n->free, &s.pods[it.pod].request, -1);
            if (--n->pods == 0)
                n->empty_since_s = it.end_s;
        }
        /* 2. bound pods whose node is ready */
        size_t keep = 0;
        for (size_t k = 0; k < s.bound_count; k++) {
            const replay__node_t *n = &s.nodes[s.bound_node[k]];
            if (n->ready_s <= now) {
                replay__start(&s, s.bound[k], s.bound_node[k], n->ready_s);
            } else {
                s.bound[keep] = s.bound[k];
                s.bound_node[keep++] = s.bound_node[k];
            }
        }
        s.bound_count = keep;
        /* 3. arrivals */
        for (; next_pod < s.pods_count && s.pods[next_pod].arrive_s <= now; next_pod++) {
            bool hostable = false;
            for (size_t g = 0; g < s.groups_count && !hostable; g++)
                hostable = replay__can_host(&s, &s.pods[next_pod], g);
            if (hostable)
                s.pending[s.pending_count++] = (uint32_t)next_pod;
            else if (s.fig.unhostable++ < REPLAY_UNHOSTABLE_NAMED)
                s.fig.unhostable_shapes[s.fig.unhostable - 1] = s.pods[next_pod].shape;
        }
        /* 4, 5 */
        bool scaled = false;
        if (s.pending_count > 0 && (rc = replay__schedule(&s, now, &scaled, err)) != 0)
            break;
        if (policy == &replay_policy_escalator &&
            (rc = replay__escalate(&s, now, cool_down, cool_down + s.groups_count, &scaled, err)) !=
                0)
            break;
        /* 6. empty nodes; and the next time anything can happen */
        int64_t next = s.horizon_s;
        for (size_t a = 0; a < s.alive_count;) {
            replay__node_t *n = &s.nodes[s.alive[a]];
            replay_group_t *g = &s.groups[n->group];
            if (policy == &replay_policy_escalator) { /* Escalator removes only what it tainted */
                if (replay__escalator_unneeded(&s, a, now)) {
                    replay__remove(&s, a, now);
                    continue;
                }
                a++;
                continue;
            }
            if (n->ready_s > now) {
                next = replay__min(next, n->ready_s);
            } else if (n->pods == 0) {
                int64_t since = n->empty_since_s > n->ready_s ? n->empty_since_s : n->ready_s;
                int64_t due = since + g->unneeded_s;
                if (due <= now && g->nodes > g->cfg->min_size) {
                    replay__remove(&s, a, now);
                    continue;
                }
                if (g->nodes > g->cfg->min_size)
                    next = replay__min(next, due > now ? due : now + REPLAY_LOOP_SECONDS);
            }
            a++;
        }
        /* 7. under-utilised nodes */
        if (s.threshold != NULL && (rc = replay__consolidate(&s, now, &next, err)) != 0)
            break;
        if (next_pod < s.pods_count)
            next = replay__min(next, s.pods[next_pod].arrive_s);
        if (s.heap_count > 0)
            next = replay__min(next, s.heap[0].end_s);
        if ((scaled && s.pending_count > 0) || policy == &replay_policy_escalator)
            next = now + REPLAY_LOOP_SECONDS; /* Escalator looks at every loop */
        /* The first loop at or after next. */
        int64_t loop = (next + REPLAY_LOOP_SECONDS - 1) / REPLAY_LOOP_SECONDS * REPLAY_LOOP_SECONDS;
        now = loop > now ? loop : now + REPLAY_LOOP_SECONDS;
    }
    if (rc == 0) {
        while (s.alive_count > 0)
            replay__remove(&s, s.alive_count - 1, s.horizon_s);
        for (size_t k = 0; k < s.pending_count; k++)
            s.fig.pending_pod_minutes +=
                (double)(s.horizon_s - s.pods[s.pending[k]].arrive_s) / 60.0;
        for (size_t k = 0; k < s.bound_count; k++)
            s.fig.pending_pod_minutes += (double)(s.horizon_s - s.pods[s.bound[k]].arrive_s) / 60.0;
        *out = s.fig;
    }
    free(cool_down);
    replay__free(&s);
    return rc;
}
