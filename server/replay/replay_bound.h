/* The fluid lower bound of a replay (docs/replay.md, "BOUND"): what hosting the pods at
 * their trace times would cost at least on the configured groups, when nodes could be
 * bought in fractions and pods split between groups.
 *
 * At every instant the pods running form a linear program (solved with GLPK's simplex):
 *   minimise   sum_g price_g x_g
 *   subject to sum_{g hosts c} y_cg = load_c                 for every pod class c
 *              sum_c d_cr y_cg <= capacity_gr x_g             for every group g, resource r
 *              sum_g capacity_gr x_g <= limit_r               (cluster-wide cpu, memory)
 *              min_size_g <= x_g <= max_size_g, y >= 0
 * A class is the pods that the same groups can host and whose requests point the same
 * way (d_c, per unit of load): splitting one pod or many such pods between groups is the
 * same program, so classes make it exact and small. With more than
 * REPLAY_BOUND_EXACT_CLASSES exact classes, a pod whose direction lies between the points
 * of a grid of REPLAY_BOUND_GRID steps per doubling is split into the grid directions
 * around it (its parts may then go to different groups: the optimum can only fall, still
 * a lower bound). The bound is the integral over time of the program's optimum, in the unit of
 * the replay's COST (price-hours). The program changes only when the running set does:
 * each change re-solves it from the previous optimal basis, up to REPLAY_BOUND_MAX_SOLVES
 * changes; past that, windows of equal length are solved for their mean load.
 *
 * Pure; thread-safe (GLPK keeps its environment per thread, freed before returning). */
#ifndef FRUGAL_REPLAY_BOUND_H
#define FRUGAL_REPLAY_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "quantity.h"

#define REPLAY_BOUND_GRID 4
#define REPLAY_BOUND_EXACT_CLASSES 256
#define REPLAY_BOUND_MAX_SOLVES 1024
#define REPLAY_BOUND_MIN_WINDOW 10

typedef struct replay_bound_group {
    resources_t capacity; /* one node's allocatable */
    double price;         /* per node-hour */
    int32_t min_size, max_size;
} replay_bound_group_t;

typedef struct replay_bound_pod {
    int64_t start_s, end_s; /* runs in [start_s, end_s) */
    resources_t request;
    const bool *hosts; /* [groups_count]: the groups whose nodes can host it */
} replay_bound_pod_t;

typedef struct replay_bound {
    bool ok;          /* false: the bound is unknown, reason says why */
    double cost;      /* price-hours; valid when ok */
    char reason[192]; /* when !ok: "no feasible solution at 5.2 h: ..." */
    size_t classes;   /* pod classes of the program */
    bool exact;       /* the classes' directions are the pods' own, not the grid's */
    size_t solves;    /* programs solved (changes of the running set) */
} replay_bound_t;

/* The bound of pods on groups over [0, horizon_s); limits <= 0 or INT64_MAX mean none.
 * Pods that no group hosts, or that request nothing, are left out. An LP that GLPK cannot
 * solve (no feasible solution, numerical failure) is not an error: out->ok is false with
 * the reason. FRUGAL_ENOMEM. */
int replay_bound_compute(const replay_bound_group_t *groups, size_t groups_count,
                         int64_t max_cpu_milli, int64_t max_memory_bytes,
                         const replay_bound_pod_t *pods, size_t pods_count, int64_t horizon_s,
                         replay_bound_t *out, frugal_err_t *err);

#endif
