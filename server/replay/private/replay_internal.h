/* The replay simulation's internals, shared by its two files and by no one else (a
 * PRIVATE include directory of frugal_replay): replay.c (the simulated cluster: its
 * setup, placement on existing nodes, buying, billing and removing nodes) and
 * replay_loop.c (CA's loop over it: options, Escalator, scale-down, the run). Calls go
 * one way only: the loop into replay.c, which calls nothing of the loop. */
#ifndef FRUGAL_REPLAY_INTERNAL_H
#define FRUGAL_REPLAY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* ---- state ---- */

typedef struct replay__node {
    uint32_t group;
    resources_t free;
    int64_t bought_s;
    int64_t ready_s;
    int64_t empty_since_s; /* when its last pod left (or it became ready empty) */
    int32_t pods;          /* running or bound */
    int64_t tainted_s;     /* Escalator: when the node was tainted; -1 when it is not */
    int64_t unneeded_s;    /* since when it is unneeded though not empty (step 7); -1 */
    int32_t candidate;     /* step 7's scratch: its index among the loop's candidates, -1 */
} replay__node_t;

typedef struct replay__heap_item {
    int64_t end_s;
    uint32_t pod;
    uint32_t node;
} replay__heap_item_t;

typedef struct replay__sim {
    const frugal_config_t *cfg;
    const replay_policy_ops_t *policy;
    void *policy_state;
    replay_rng_t rng;
    int64_t horizon_s;
    replay_group_t *groups;
    size_t groups_count;
    replay_pod_t *pods;
    size_t pods_count;
    size_t shapes;
    bool *compat;           /* [shape * groups_count + group]: selector, affinity, taints */
    uint32_t *compat_class; /* [shape]: the first shape with the same compat row */
    uint64_t *miss_hash;    /* [pod]: the hash of its compat class and request (replay_loop.c) */
    /* nodes: ids stable (index), alive ones listed in purchase order */
    replay__node_t *nodes;
    size_t nodes_count, nodes_cap;
    uint32_t *alive;
    size_t alive_count;
    /* pods waiting: pending (no node) and bound (to a booting node) */
    uint32_t *pending;
    size_t pending_count;
    uint32_t *bound;
    uint32_t *bound_node;
    size_t bound_count;
    replay__heap_item_t *heap;
    size_t heap_count;
    int64_t *start_s; /* per pod; -1 until it runs */
    int64_t cpu_alive, mem_alive;
    replay_figures_t fig;
    /* step 7, when on: each group's thresholds (cpu/memory, GPU); the last scale-up */
    double *threshold, *gpu_threshold;
    int64_t last_up_s;
    replay_placement_t placement; /* steps 4 and 7 */
    int64_t restart_at_s;         /* replay_options_t; 0 once done or never */
    void (*on_decision)(void *ctx, const replay_decision_t *d);
    void *on_decision_ctx;
} replay__sim_t;

#define REPLAY__REMOVING 1 /* step 7: unneeded in this loop, its pods go elsewhere */
#define REPLAY__TOUCHED 2  /* step 7: receives the pods of a node unneeded in this loop */

/* ---- small helpers of both files ---- */

static inline bool replay__fits(const resources_t *r, const resources_t *free_) {
    return r->cpu_milli <= free_->cpu_milli && r->memory_bytes <= free_->memory_bytes &&
           r->gpu <= free_->gpu;
}

/* Whether a node of group g that holds pods pods has a pod slot left: kubelet runs at
 * most the template's "pods" capacity (none given: no limit). */
static inline bool replay__slot(const replay__sim_t *s, uint32_t g, int32_t pods) {
    int64_t max = s->groups[g].info.max_pods;
    return max <= 0 || pods < max;
}

static inline void replay__take(resources_t *free_, const resources_t *r, int sign) {
    free_->cpu_milli -= sign * r->cpu_milli;
    free_->memory_bytes -= sign * r->memory_bytes;
    free_->gpu -= sign * r->gpu;
}

static inline bool replay__can_host(const replay__sim_t *s, const replay_pod_t *p, size_t g) {
    return s->compat[p->shape * s->groups_count + g] &&
           replay__fits(&p->request, &s->groups[g].info.capacity);
}

/* ---- replay.c ---- */

/* The groups, the pods of seed over the horizon and which groups each can go to. */
int replay__setup(replay__sim_t *s, const frugal_config_t *cfg, const replay_workload_t *w,
                  uint64_t seed, double hours, frugal_err_t *err);
void replay__free(replay__sim_t *s);

/* The running pod that ends first, taken off the heap (heap_count > 0). */
replay__heap_item_t replay__heap_pop(replay__sim_t *s);

/* The node where the scheduler puts pod p (steps 4 and 7): an index into s->alive,
 * s->alive_count when none; see replay.c. */
size_t replay__pick_node(const replay__sim_t *s, const replay_pod_t *p, const resources_t *room,
                         const int32_t *held, const uint8_t *flag, size_t self, bool booting_ok,
                         int64_t now);

/* Buy a node of group g at now, ready at once (a caller that boots it sets ready_s); its
 * id in *id. */
int replay__buy(replay__sim_t *s, size_t g, int64_t now, uint32_t *id, frugal_err_t *err);
/* Bill node a (index into s->alive) up to now and forget it. */
void replay__remove(replay__sim_t *s, size_t a, int64_t now);
/* Pod starts on node at at (not before it arrived): its pending time, ideal cost, end. */
void replay__start(replay__sim_t *s, uint32_t pod, uint32_t node, int64_t at);
/* Put pod on node: it runs now when the node is ready, else when it is. */
void replay__place(replay__sim_t *s, uint32_t pod, uint32_t node, int64_t now);

#endif
