/* `frugal replay`'s engine (docs/replay.md): a deterministic what-if simulation of a
 * cluster under cluster-autoscaler's loop, in which a policy picks the scale-up option
 * of each loop. The BestOptions strategies run the real decision (decide.h) in process;
 * pods are placed with the real scheduling fit (fit.h).
 *
 * Three parts, all pure (no gRPC, no globals, no I/O but what the caller hands in):
 *  - workloads (replay_workload_*): a YAML mix of pod families, or a JSON-lines trace
 *    of Kubernetes pods, loaded with positions for every error;
 *  - policies (replay_policy_*): how one option is picked among those of a loop. A
 *    policy is a name and a replay_policy_ops_t; adding one is one table entry in
 *    replay_policy.c (docs/architecture.md, "Replay policies");
 *  - the simulation (replay_run): one workload, one policy, one seed -> figures.
 *
 * Determinism: every random draw comes from replay_rng_t seeded by the run's seed; the
 * same config, workload, policy and seed give the same figures on every machine. */
#ifndef FRUGAL_REPLAY_H
#define FRUGAL_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "demand.h"
#include "errors.h"
#include "k8s.h"
#include "node_info.h"
#include "pod.h"
#include "quantity.h"
#include "replay_bound.h"
#include "replay_rng.h"

/* CA's loop period, and how long a bought node takes to become ready. */
#define REPLAY_LOOP_SECONDS 10
#define REPLAY_BOOT_SECONDS 60
/* A group's scale_down_unneeded when its options do not set one (CA's default). */
#define REPLAY_UNNEEDED_SECONDS 600
/* The most pods a family may start with (`initial`) or bring in one arrival (`burst`). */
#define REPLAY_INITIAL_MAX 100000
/* The longest time a workload may name (a trace's t or duration, a lifetime): ten years,
 * far beyond any replay, and far from overflowing the milliseconds it is counted in. */
#define REPLAY_SECONDS_MAX (3660 * 86400)

/* ---- workloads ---- */

typedef struct replay_range {
    int64_t min;
    int64_t max;
} replay_range_t;

/* One family of a mix: its pods are drawn uniformly within the ranges (cpu in milli,
 * memory in bytes, GPUs), their lifetime log-uniformly in seconds. */
typedef struct replay_family {
    char *name;
    double weight; /* > 0; share of the arrivals = weight / sum of weights */
    replay_range_t cpu_milli;
    replay_range_t memory_bytes;
    replay_range_t gpu;
    replay_range_t lifetime_s;
    replay_range_t burst; /* pods per arrival, all of one request (default [1, 1]) */
    int64_t initial;      /* pods already running at the start (default 0) */
    char *owner;          /* controller kind, e.g. ReplicaSet, Job */
    k8s_pod_t *pod;       /* owner, nodeSelector and tolerations, shared by the family's pods */
} replay_family_t;

/* One line of a trace. */
typedef struct replay_trace_pod {
    int64_t t_s;        /* arrival, seconds from the trace's start */
    int64_t duration_s; /* how long it runs once placed */
    k8s_pod_t *pod;
    resources_t request; /* its effective request */
    size_t line;         /* in the file: equal arrivals keep the file's order */
} replay_trace_pod_t;

typedef struct replay_workload {
    char *name; /* the file's base name without extension */
    char *path; /* as given to replay_workload_load, for messages */
    bool is_trace;
    /* mix */
    double arrivals_per_hour; /* the whole mix's mean rate */
    double diurnal;           /* amplitude in [0, 1) of a daily sine on the rate */
    replay_family_t *families;
    size_t families_count;
    /* trace, sorted by t_s */
    replay_trace_pod_t *trace;
    size_t trace_count;
    int64_t trace_span_s;  /* the latest end of a pod (arrival + duration) */
    size_t trace_per_node; /* DaemonSet and static pods left out: they come with every node */
} replay_workload_t;

/* Load a workload from text[0..len) read from path (used in messages and for the name).
 * A text whose first non-blank character is '{' is a trace of JSON lines
 * `{"t": SECONDS, "pod": POD, "duration": SECONDS}` (t and duration may also be Go
 * durations, "90s"); anything else is a YAML mix (docs/replay.md). Errors are
 * `PATH:LINE:COL: path: reason` (a trace's: `PATH:LINE: ...`); FRUGAL_EINVAL,
 * FRUGAL_ENOMEM; on failure *out is empty. */
int replay_workload_load(const char *path, const char *text, size_t len, replay_workload_t *out,
                         frugal_err_t *err);

void replay_workload_free(replay_workload_t *w);

/* ---- the simulated cluster, as a policy sees it ---- */

/* One configured managed group. */
typedef struct replay_group {
    const node_group_config_t *cfg;
    node_info_t info;   /* the template: capacity (= allocatable), GPU, similarity key */
    k8s_node_t *node;   /* the same template: labels and taints for the fit */
    double price;       /* per node-hour, as billed */
    int64_t unneeded_s; /* scale_down_unneeded */
    int32_t nodes;      /* current size */
} replay_group_t;

/* A pod of the simulation. */
typedef struct replay_pod {
    int64_t arrive_s;
    int64_t duration_s;
    resources_t request;
    pod_lifetime_t lifetime;
    uint32_t shape; /* pods of one shape share their spec (family, or trace line) */
    const k8s_pod_t *spec_pod;
} replay_pod_t;

/* One scale-up option of a loop: node_count new nodes of a group, hosting pods (indexes
 * into replay_view_t.pending), as first-fit-decreasing placed them. */
typedef struct replay_option {
    size_t group;
    int32_t node_count;
    const uint32_t *pods;
    size_t pods_count;
} replay_option_t;

typedef struct replay_view {
    const frugal_config_t *cfg;
    const replay_group_t *groups;
    size_t groups_count;
    const replay_pod_t *pods; /* every pod of the run */
    const uint32_t *pending;  /* the loop's pending pods (indexes into pods), the
                               * distinct pods every option draws from */
    size_t pending_count;
    int64_t now_s;
    int64_t cluster_nodes; /* nodes alive, booting included */
    char *why;             /* NULL, or why_size bytes for the figures of the choice */
    size_t why_size;
} replay_view_t;

/* ---- policies ---- */

/* How a policy picks one option. init gets a config it may keep borrowed for the run
 * and the run's random generator; choose writes the index of the chosen option (n > 0)
 * and, when view->why is not NULL, the figures that chose it there (frugal's strategies:
 * the winner's ranking figures, as in BestOptions' debug; CA's expanders leave it empty). */
typedef struct replay_policy_ops {
    const char *name;
    const char *summary; /* one line, for --help and the docs */
    int (*init)(void **state, const frugal_config_t *cfg, replay_rng_t *rng, frugal_err_t *err);
    int (*choose)(void *state, const replay_view_t *view, const replay_option_t *options, size_t n,
                  size_t *chosen, frugal_err_t *err);
    void (*free)(void *state);
    /* Forget what the policy learned, as a restarted server does; NULL: it keeps nothing. */
    void (*restart)(void *state);
} replay_policy_ops_t;

/* Escalator's policy (docs/escalator.md): not a choice among options; the simulation
 * scales every group by its utilisation each loop and scales down by tainting, and never
 * calls its choose. */
extern const replay_policy_ops_t replay_policy_escalator;

/* The policy called name; NULL when there is none. */
const replay_policy_ops_t *replay_policy_find(const char *name);

/* The policies, in report order (random first: the others are compared to it). */
const replay_policy_ops_t *const *replay_policy_list(size_t *count);

/* ---- one run ---- */

/* How many of a run's unhostable pods it remembers, for their names. */
#define REPLAY_UNHOSTABLE_NAMED 10

typedef struct replay_figures {
    double cost;       /* what the nodes cost, billed per loop */
    double ideal_cost; /* the pods' requests priced linearly for as long as they ran */
    double pending_pod_minutes;
    int64_t nodes_bought;
    int64_t pods;       /* pods that arrived */
    int64_t unhostable; /* pods no group can ever host: counted, never placed */
    /* the first REPLAY_UNHOSTABLE_NAMED of them: their family or trace pod */
    uint32_t unhostable_shapes[REPLAY_UNHOSTABLE_NAMED];
    int64_t decisions;     /* loops in which the policy picked an option */
    int64_t nodes_drained; /* non-empty nodes removed (replay_options_t) */
} replay_figures_t;

/* Simulate hours of w (a trace: hours <= 0 means its whole span) under cfg's managed
 * groups with policy, seeded by seed. FRUGAL_EINVAL when cfg has no managed group or a
 * group's template cannot be built; FRUGAL_ENOMEM; the policy's errors. */
int replay_run(const frugal_config_t *cfg, const replay_workload_t *w,
               const replay_policy_ops_t *policy, uint64_t seed, double hours,
               replay_figures_t *out, frugal_err_t *err);

/* CA's delay between a scale-up and the next scale-down of a non-empty node
 * (--scale-down-delay-after-add). */
#define REPLAY_DELAY_AFTER_ADD_SECONDS 600

/* Where the simulated scheduler puts a pending pod among the existing nodes that can
 * host it (step 4, and step 7's moves): */
typedef enum replay_placement {
    REPLAY_PLACE_FIRST_FIT = 0,   /* the first in the order the nodes were bought */
    REPLAY_PLACE_LEAST_ALLOCATED, /* kube-scheduler's default scoring: the emptiest */
    REPLAY_PLACE_MOST_ALLOCATED,  /* its bin-packing scoring: the fullest */
} replay_placement_t;

/* The placement called name (first-fit, least-allocated, most-allocated): 0, or -1 for
 * an unknown name. */
int replay_placement_parse(const char *name, replay_placement_t *out);
/* The name of p, as replay_placement_parse reads it. */
const char *replay_placement_name(replay_placement_t p);

/* One decision of a run, as replay_options_t.on_decision sees it. */
typedef struct replay_decision {
    int64_t time_s;       /* simulated seconds since the run's start */
    const char *group_id; /* the group of the option chosen */
    int32_t node_count;   /* the nodes it asked for */
    size_t pods;          /* the pending pods it hosts */
    size_t pending;       /* the pods pending when it was chosen */
    size_t options;       /* the options offered */
    const char *why;      /* the policy's figures (replay_policy_ops_t.choose), maybe "" */
} replay_decision_t;

/* How a run simulates beyond its inputs; all zero is replay_run's simulation. */
typedef struct replay_options {
    /* 0: only empty nodes are removed. In (0, 1]: CA's scale-down of under-utilised
     * nodes too (docs/replay.md), a node being unneeded when its utilisation is below
     * this; a group's options.scale_down_utilization_threshold (for a GPU node
     * scale_down_gpu_utilization_threshold) overrides it. Not for escalator, which
     * removes what it tainted. */
    double scale_down_utilization;
    /* Among the nodes that can host a pod (compatible, not tainted by Escalator, with
     * room), least- and most-allocated pick the highest, resp. lowest, mean over cpu and
     * memory of the free share of capacity once the pod is on it, as kube-scheduler's
     * LeastAllocated and MostAllocated score nodes; ties go to the node bought first.
     * The options' new nodes are still filled first-fit-decreasing (CA's estimator). */
    replay_placement_t placement;
    /* > 0: the policy restarts (replay_policy_ops_t.restart) at this many hours into the
     * run, before the first decision at or after it (frugal replay --restart-at). */
    double restart_at_h;
    /* When set, called with on_decision_ctx after each decision (frugal replay
     * --decisions); d and its strings live for the call only. */
    void (*on_decision)(void *ctx, const replay_decision_t *d);
    void *on_decision_ctx;
} replay_options_t;

/* replay_run with opts (NULL: all zero). */
int replay_run_with(const frugal_config_t *cfg, const replay_workload_t *w,
                    const replay_policy_ops_t *policy, uint64_t seed, double hours,
                    const replay_options_t *opts, replay_figures_t *out, frugal_err_t *err);

/* The fluid lower bound (replay_bound.h) of the pods replay_run(cfg, w, any policy, seed,
 * hours) would see, at their trace times, on cfg's managed groups; the pods no group can
 * host are left out. The same errors as replay_run; an LP GLPK cannot solve is not one
 * (out->ok false, out->reason). */
int replay_bound(const frugal_config_t *cfg, const replay_workload_t *w, uint64_t seed,
                 double hours, replay_bound_t *out, frugal_err_t *err);

#endif
