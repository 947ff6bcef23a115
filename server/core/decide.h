/* The BestOptions decision (docs/ranking.md): which of the scale-up options
 * cluster-autoscaler offers is the cheapest, and every figure behind the choice.
 *
 * The one implementation of it: the expander service converts a decoded request into
 * these structs, `frugal plan` converts its simulated options, and both get the same
 * winner and the same figures for the same pods and groups. An option is priced from
 * its template node: P is the price of the template's instance type in the effective
 * catalog (with the group's spot settings), else the group's spot price override, else
 * the linear price of the template's capacity; T is the sum of its pods' linear prices;
 * the score, the ties and the zone balance are ranking.h's.
 *
 * Pure: plain structs in and out, no gRPC, no locks, no logging. */
#ifndef FRUGAL_DECIDE_H
#define FRUGAL_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "demand.h"
#include "errors.h"
#include "node_info.h"
#include "quantity.h"
#include "ranking.h"

/* What frugal knows of an option's group. */
typedef struct decide_group {
    /* false: frugal does not manage the group (another provider's): it exists, is
     * priced on demand and counts as empty for the zone balance; the rest is unread. */
    bool known;
    bool exists;       /* false: theoretical (autoprovisioned, not created yet) */
    bool spot;         /* priced at the spot price */
    double spot_price; /* the group's spot price override; < 0 when not given */
    int64_t nodes;     /* current size (target), for the zone balance */
    int64_t max_size;  /* the group's max_size; 0: not known */
} decide_group_t;

/* One scale-up option. Everything is borrowed for the call (and by the result, see
 * decide_result_t). */
typedef struct decide_option {
    const char *group_id;
    int32_t node_count;
    bool bad_pod;            /* one of its pods could not be decoded */
    const node_info_t *node; /* the group's decoded template node; NULL when there is none */
    const uint32_t *pods;    /* its pods: indexes into decide_request_t.pods */
    size_t pods_count;
    decide_group_t group;
} decide_option_t;

typedef struct decide_request {
    const decide_option_t *options;
    size_t options_count;
    const resources_t *pods; /* effective requests of the distinct pods */
    size_t pods_count;
    int64_t cluster_size; /* nodes frugal counts, for the preferred node size (replaced by
                           * ranking.cluster_size when that is a number) */
    bool timed;           /* now_ms is known: demand-fit weighs spare room by the arrival rate */
    int64_t now_ms;       /* when the request came, on the caller's clock */
    const int64_t *pod_seen_ms;     /* per distinct pod, when it arrived on the same clock (its
                                     * creation time); NULL, or a negative entry: at now_ms */
    const uint64_t *pod_identities; /* per distinct pod, pod_identity (0: none); NULL: none */
} decide_request_t;

/* Whether a request carries mixed GPU demand (docs/ranking.md): not known yet (the
 * decision finds out), or known to be one or the other. */
typedef enum {
    DECIDE_GPU_MIX_UNKNOWN = 0,
    DECIDE_GPU_MIX_NONE,
    DECIDE_GPU_MIX_SOME
} decide_gpu_mix_t;

/* What demand-fit reads beyond the request (decide_best_options_demand); the two
 * pointers may be NULL. */
typedef struct decide_demand {
    const pod_lifetime_t *pod_lifetimes; /* per distinct pod; NULL: all unknown */
    const demand_summary_t *recent;      /* recent demand; NULL or few pods: the
                                          * request's own pods give the shape */
    decide_gpu_mix_t request_gpu_mix;    /* the request's GPU pods, when the caller
                                          * already knows (decide_best_options_remember) */
} decide_demand_t;

/* demand-fit: the share of an option's spare room expected to be used, for a node whose
 * pods stay (long or unknown lifetime) and for one whose pods run to completion (it may
 * be removed before arrivals fill it). Chosen with `frugal replay` (docs/decisions.md). */
#define DECIDE_USE_LONG 1.0
#define DECIDE_USE_SHORT 0.8
/* demand-fit: the time in which the spare room must be filled to count, in hours, for
 * pods that stay (a node of services lives for days) and for pods that run to
 * completion (a node of Jobs goes when they end). Slot j of k is filled after j over
 * the recent arrival rate; the share of the horizon it is used is what it is worth. */
#define DECIDE_SPARE_HORIZON_LONG_H 72.0
#define DECIDE_SPARE_HORIZON_SHORT_H 8.0
/* demand-fit: below this many remembered pods the request's own pods give the shape;
 * below this many remembered pods that stay, every remembered pod does; below this many
 * remembered GPU pods the GPU demand is not yet known. */
#define DECIDE_DEMAND_MIN_PODS 16
/* demand-fit: GPU pods an hour from which a GPU demand not yet known (fewer than
 * DECIDE_DEMAND_MIN_PODS GPU pods remembered) is read as GPU nodes being built: a large
 * node's spare GPUs fill within the half hour. */
#define DECIDE_GPU_BUILD_PER_HOUR 8.0

/* Why an option was left out of the ranking, first rule first. */
typedef enum decide_skip {
    DECIDE_SKIP_NONE = 0,    /* ranked (figures.scored may still be false: no finite score) */
    DECIDE_SKIP_NODE_COUNT,  /* node_count is not positive */
    DECIDE_SKIP_BAD_POD,     /* a pod could not be decoded */
    DECIDE_SKIP_NO_TEMPLATE, /* no template node */
    DECIDE_SKIP_NO_CPU,      /* the template node has no cpu capacity */
} decide_skip_t;

/* The decision. Arrays are indexed like the request's options. */
typedef struct decide_result {
    decide_skip_t *skips;
    ranking_input_t *inputs;    /* P (node_price), T (pods_price) and the rest of the
                                 * ranking's inputs; group_id and similarity_key borrow
                                 * from the request */
    ranking_figures_t *figures; /* scored, P, T, ratio, unfitness, suppressed, score */
    size_t *selected;           /* winners' indexes in request order ... */
    size_t selected_count;      /* ... >= 1 when there is an option */
    bool any_scored;            /* false: no option could be scored; every one is selected */
    /* The strategy whose figures these are: the configured one, or pricing-proposal when
     * demand-fit could score no option because its pods request nothing (BestEffort
     * pods: T and the spare room are 0, and only the formula's X prices them). */
    ranking_strategy_t strategy;
    double damper_price; /* X */
    int64_t preferred_cpu_milli;
    int64_t cluster_size; /* the size the ranking used */
    /* demand-fit: the winners are not the best score's but those of pods that no option
     * sharing a pod with it serves, chosen because they serve more pods. CA scales up one
     * option a loop, and whatever it picks, unrelated pods wait for another loop; their
     * order costs nothing but the wait, so the most pods go first (docs/ranking.md). */
    bool most_pods_first;
} decide_result_t;

/* Decide among req's options with cfg's pricing and ranking. On success *out owns its
 * arrays (decide_result_free); FRUGAL_ENOMEM leaves *out empty. */
int decide_best_options(const frugal_config_t *cfg, const decide_request_t *req,
                        decide_result_t *out, frugal_err_t *err);

/* decide_best_options with what demand-fit reads beyond the request (demand may be
 * NULL: lifetimes unknown, no recent demand). Other strategies ignore it. */
int decide_best_options_demand(const frugal_config_t *cfg, const decide_request_t *req,
                               const decide_demand_t *demand, decide_result_t *out,
                               frugal_err_t *err);

/* Remember req's pods in memory, then decide with the recent demand they join: the one
 * way BestOptions, `frugal plan` and `frugal replay` decide. Under demand-fit, pod i of
 * req (lifetimes[i]; lifetimes NULL: unknown) is recorded in memory when remember is
 * NULL or remember[i] (a pod that could not be decoded is not demand), and the decision
 * reads memory's summary and the lifetimes; memory NULL: no recent demand. Other
 * strategies record nothing and read neither. As decide_best_options otherwise. */
int decide_best_options_remember(const frugal_config_t *cfg, const decide_request_t *req,
                                 const pod_lifetime_t *lifetimes, const bool *remember,
                                 demand_memory_t *memory, decide_result_t *out, frugal_err_t *err);

void decide_result_free(decide_result_t *r);

#endif
