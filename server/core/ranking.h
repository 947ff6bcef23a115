/* The cost-based ranking of BestOptions (docs/ranking.md).
 *
 * Pure: plain structs in, figures and the selected indexes out; no gRPC, no locks, no
 * allocation. The expander service and `frugal plan` fill one ranking_input_t per
 * option from whatever they decoded and call ranking_select. */
#ifndef FRUGAL_RANKING_H
#define FRUGAL_RANKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Two scores tie when they differ by at most this much, relative to the larger. */
#define RANKING_TIE_RELATIVE 1e-9
/* demand-fit's mixed-GPU gate (docs/ranking.md): a GPU group is pricier than the
 * cheapest offered when it costs more per GPU by more than this share. */
#define RANKING_GPU_PRICE_TOLERANCE 0.01

/* What the ranking needs to know about one option. */
typedef struct ranking_input {
    const char *group_id;       /* for log messages */
    bool scorable;              /* false: no template, undecodable pod, bad node count... */
    int32_t node_count;         /* > 0 when scorable */
    double node_price;          /* P: price of one node per hour */
    double pods_price;          /* T: price of the option's pods per hour */
    int64_t node_cpu_milli;     /* template cpu capacity, > 0 when scorable */
    bool has_gpu;               /* the template has GPU capacity or the GPU label */
    bool exists;                /* false: the group does not exist yet (NAP) */
    const char *similarity_key; /* equal keys = similar groups; NULL: similar to none */
    int64_t group_nodes;        /* the group's current size (target), for the zone balance */
    /* demand-fit only (decide.c fills them): */
    double spare_value;          /* the new nodes' room left after the pods, in the cluster's
                                  * recent demand shape, priced linearly (per hour) */
    double use_share;            /* the share of that room expected to be used */
    double arrivals_per_hour;    /* the recent arrival rate use_share was weighed by; 0: none */
    double gib_per_core;         /* the demand shape used */
    bool gpu_unused;             /* GPU nodes for pods that request no GPU */
    bool gpu_mixed;              /* some recent or requested GPU pod takes several GPUs or is
                                  * restricted to some GPU groups, and pricier GPU nodes run:
                                  * the spare GPUs decide, counted in full */
    double left_out_nodes_price; /* the nodes the pods it leaves to a later scale-up will
                                  * take (left_out.h), per hour; 0 when it leaves none */
    double left_out_pods_price;  /* those pods' price */
} ranking_input_t;

/* Every figure of one option's score, as printed in its debug string. */
typedef struct ranking_figures {
    bool scored;          /* false when the input was not scorable */
    double node_price;    /* P */
    double pods_price;    /* T */
    double ratio;         /* (C + X) / (T + X), C = P x nodeCount */
    double unfitness;     /* max(pref/node, node/pref) in cpu */
    double suppressed;    /* unfitness suppressed by node count, or gpu_unfitness */
    double score;         /* suppressed x ratio (x not_exist_penalty) */
    double pods_ratio;    /* demand-fit only: C / T, what the option costs per unit of the
                           * pods it hosts now, without its spare room (C when T is 0) */
    bool mixed_gpu;       /* demand-fit, parsed back only: the option's gpu_mixed */
    bool most_pods_first; /* demand-fit: chosen among pods unrelated to the best score's
                           * for serving more of them (decide.h) */
    double nodes_price;   /* C = P x nodeCount */
    double damper_price;  /* X (the formula only) */
    double pref_cpu;      /* the preferred node's cores unfitness is measured from (the
                           * formula only) */
    double penalty;       /* not_exist_penalty for a group that does not exist yet, else 1 */
} ranking_figures_t;
/* Under demand-fit, ratio is (C + left_out_nodes_price) / (T + left_out_pods_price +
 * use_share x spare_value) and unfitness and
 * suppressed are the GPU factor (1 or gpu_unfitness); spare_value, use_share and
 * gib_per_core are in the option's ranking_input_t. */

/* (unfitness - 1) x (1 - tanh((node_count - 1) / scale)) + 1. */
double ranking_suppress(double unfitness, int32_t node_count, double scale);

/* Preferred node cpu (milli-cores) for a cluster of cluster_size nodes: the first
 * preferred_nodes entry whose max_nodes bound (inclusive) holds it, else the unbounded
 * last one. Returns 0 when the table is empty. */
int64_t ranking_preferred_cpu_milli(const ranking_config_t *cfg, int64_t cluster_size);

/* Score one option. damper_price is X, pref_cpu_milli from ranking_preferred_cpu_milli
 * (0: no preferred node size, unfitness 1). Sets out->scored to false (and leaves the figures 0)
 * when in is not scorable or the score is not a finite positive number. */
void ranking_score(const ranking_config_t *cfg, double damper_price, int64_t pref_cpu_milli,
                   const ranking_input_t *in, ranking_figures_t *out);

/* Score one option under demand-fit: C / (T + use_share x spare_value), C = P x
 * nodeCount, times gpu_unfitness when gpu_unused and not_exist_penalty when the group
 * does not exist. Same contract as ranking_score. */
void ranking_score_demand_fit(const ranking_config_t *cfg, const ranking_input_t *in,
                              ranking_figures_t *out);

/* Score every option (under cfg->strategy) into figures[0..n) and write the indexes of
 * the answer, in request order, to selected[0..n); returns how many. The answer is the
 * options with the lowest score (ties within RANKING_TIE_RELATIVE); under demand-fit,
 * when the lowest score is a GPU node for pods that request GPUs and gpu_mixed is
 * false, the options with the lowest pods_ratio among those hosting no less (T) than
 * the lowest-scored one (and tied with the first of them in score too); among tied options
 * with equal similarity keys only one stays: the group with the fewest nodes now (so
 * zones fill evenly), then the option buying the fewest, then the first received.
 * When no option can be scored every index is selected: never empty for n > 0. */
size_t ranking_select(const ranking_config_t *cfg, double damper_price, int64_t cluster_size,
                      const ranking_input_t *in, size_t n, ranking_figures_t *figures,
                      size_t *selected);

/* True when a and b tie within RANKING_TIE_RELATIVE. */
bool ranking_scores_tie(double a, double b);

/* The figures as appended to an option's debug string under pricing-proposal:
 * "node_price=%f pods_price=%f ratio=%f unfitness=%f suppressed=%f score=%f" (P, T, then
 * the score's terms), then " not_exist_penalty=%f" for a group that does not exist yet;
 * ranking_parse_figures also reads the nine figures (with C, X, pref_cpu) that servers
 * wrote for a while.
 * Returns what snprintf returns. */
int ranking_format_figures(const ranking_figures_t *f, char *buf, size_t size);

/* The same under demand-fit, with the option's input (in) for the terms of its score:
 * "strategy=demand-fit node_price=%f pods_price=%f spare_value=%f use=%f
 * arrivals_per_hour=%f gib_per_core=%f gpu_factor=%f mixed_gpu=%d ratio=%f pods_ratio=%f
 * score=%f", then " most_pods_first=1" when f->most_pods_first. */
int ranking_format_demand_figures(const ranking_figures_t *f, const ranking_input_t *in, char *buf,
                                  size_t size);

/* ranking_format_figures or ranking_format_demand_figures, as strategy says. */
int ranking_format_strategy_figures(ranking_strategy_t strategy, const ranking_figures_t *f,
                                    const ranking_input_t *in, char *buf, size_t size);

/* Room enough for either form of the figures. */
#define RANKING_FIGURES_MAX 384

/* The separator put between the incoming debug string and the figures. */
#define RANKING_DEBUG_SEPARATOR " | frugal: "
/* What precedes the figures of an option that did not win, in an answer that explains
 * every option (the `frugal-explain` metadata of `frugal ctl best-options`). */
#define RANKING_DEBUG_NOT_CHOSEN " | frugal, not chosen: "

/* Parse the figures back from a debug string (the last RANKING_DEBUG_SEPARATOR part);
 * the demand-fit form fills P, T, ratio, pods_ratio, score, mixed_gpu, and the GPU
 * factor as unfitness and suppressed.
 * Returns 0, or FRUGAL_EINVAL when the string carries no complete figures. */
int ranking_parse_figures(const char *debug, ranking_figures_t *out);

/* ranking_parse_figures after the last separator (RANKING_DEBUG_NOT_CHOSEN, say). */
int ranking_parse_figures_after(const char *debug, const char *separator, ranking_figures_t *out);

#endif
