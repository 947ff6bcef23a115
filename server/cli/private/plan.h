/* The plan of `frugal plan`: the pending pods, the options as BestOptions would decide
 * them, every configured group's utilisation and the proposals. plan.c builds it;
 * plan_print.c prints it as a table or YAML and calls nothing of plan.c. */
#ifndef FRUGAL_PLAN_H
#define FRUGAL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "decide.h"
#include "escalator.h"
#include "fit.h"
#include "k8s.h"
#include "kube_json.h"
#include "node_info.h"
#include "pod.h"
#include "propose.h"
#include "quantity.h"
#include "ranking.h"

/* One configured managed group as an option. */
typedef struct plan_group {
    const node_group_config_t *cfg;
    node_info_t info; /* the decoded template: allocatable, GPU, similarity key */
    k8s_node_t *node; /* the same template, for labels and taints */
    uint32_t *pods;   /* indexes of the pending pods it can host */
    size_t pods_count;
    uint32_t *held; /* those the option holds: all, or what its node_count nodes take */
    size_t held_count;
    int64_t nodes_needed;
    int32_t node_count; /* nodes_needed capped by max_size */
    const char *skip;   /* why it is not an option; NULL when it is one */
    char skip_buf[128];
    size_t option; /* index into the ranking arrays when an option */
} plan_group_t;

/* A problem with one node, pod or group that the report goes on past. */
typedef struct plan_note {
    char subject[320]; /* "node NAME", "pod NS/NAME" */
    char message[384];
} plan_note_t;

/* Escalator's view of one configured group (docs/escalator.md). */
typedef struct plan_util {
    const node_group_config_t *cfg;
    escalator_group_t eg;
    escalator_result_t res;
} plan_util_t;

typedef struct plan {
    const frugal_config_t *cfg;
    const char *pods_path;
    const char *nodes_path; /* NULL: cluster size from the config */
    kube_pod_list_t pods;
    kube_node_list_t nodes;
    size_t daemonset_pods;     /* pending but left out */
    const k8s_pod_t **pending; /* the pending pods ... */
    propose_pod_t *pp;         /* ... as the algorithms see them */
    size_t n_pending;
    bool *hosted; /* pending pod -> some option hosts it */
    int64_t cluster_size;
    bool cluster_size_fixed; /* ranking.cluster_size, not counted */
    int64_t pref_cpu_milli;
    double damper_price;
    plan_group_t *groups;
    size_t n_groups;
    resources_t *requests;         /* pending pod -> its effective request */
    pod_lifetime_t *lifetimes;     /* pending pod -> its owner's lifetime (demand-fit) */
    int64_t *created_ms;           /* pending pod -> its creation time, -1: none */
    decide_option_t *options;      /* the options as BestOptions would receive them ... */
    decide_result_t decision;      /* ... and its decision */
    const ranking_input_t *in;     /* = decision.inputs */
    const ranking_figures_t *figs; /* = decision.figures */
    bool *winner;
    size_t *option_group; /* option -> group index */
    size_t *ranked;       /* the options as printed: winners, then by score, unscored last */
    size_t n_options;
    bool proposed;
    propose_result_t proposals;
    plan_util_t *util; /* configured group -> its utilisation */
    plan_note_t *notes;
    size_t n_notes, cap_notes;
} plan_t;

/* Helpers of both files, inline: plan_print.c calls no function of plan.c
 * (scripts/check-mutual-calls.sh). */

/* A configured group's size when the server starts: size, else min_size. */
static inline int32_t plan_initial_size(const node_group_config_t *g) {
    return g->size >= 0 ? g->size : g->min_size;
}

/* Whether g can host pending pod i; when not, why (for the "why" of unhostable pods). */
static inline bool plan_can_host(const plan_t *pl, const plan_group_t *g, size_t i, char *why,
                                 size_t size) {
    return fit_pod(pl->pending[i]->spec, &pl->pp[i].request, g->node, &g->info.capacity, why, size);
}

/* Print the plan to stdout as tables (plan_print_table) or YAML (plan_print_yaml);
 * both return 0. */
int plan_print_table(const plan_t *pl);
int plan_print_yaml(const plan_t *pl);

#endif
