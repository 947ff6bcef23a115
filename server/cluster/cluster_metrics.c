/* The node groups' gauges for /metrics, read under the cluster's read lock at scrape
 * time (nothing is kept between scrapes). See cluster.h. */
#include "cluster.h"
#include "cluster_nap.h"
#include "metrics.h"
#include "pricing.h"

typedef double (*group_figure_fn)(const cluster_t *c, const cluster_nap_survey_t *survey,
                                  const group_t *g);

static double figure_target(const cluster_t *c, const cluster_nap_survey_t *survey,
                            const group_t *g) {
    (void)c;
    (void)survey;
    return g->target_size;
}
/* The bounds as NodeGroups advertises them to CA: the cluster-wide limits may narrow
 * the configured ones. */
static double figure_min(const cluster_t *c, const cluster_nap_survey_t *survey, const group_t *g) {
    int32_t min, max;
    cluster_nap_sizes(c, survey, g, &min, &max);
    return min;
}
static double figure_max(const cluster_t *c, const cluster_nap_survey_t *survey, const group_t *g) {
    int32_t min, max;
    cluster_nap_sizes(c, survey, g, &min, &max);
    return max;
}

static void cluster__gauge(cluster_t *c, const cluster_nap_survey_t *survey, metrics_buf_t *b,
                           const char *name, const char *help, group_figure_fn fn) {
    static const char *const names[] = {"node_group"};
    metrics_buf_family(b, name, help, "gauge");
    for (size_t i = 0; i < cluster_groups_count(c); i++) {
        const group_t *g = cluster_group_at(c, i);
        const char *values[] = {g->spec.id};
        metrics_buf_sample(b, name, names, values, 1, fn(c, survey, g));
    }
}

void cluster_metrics_write(cluster_t *c, metrics_buf_t *b) {
    static const char *const state_names[] = {"node_group", "state"};
    static const char *const price_names[] = {"node_group", "capacity_type"};
    static const struct {
        instance_state_t state;
        const char *name;
    } states[] = {{INSTANCE_RUNNING, "running"},
                  {INSTANCE_CREATING, "creating"},
                  {INSTANCE_DELETING, "deleting"}};
    cluster_read_lock(c);
    const frugal_config_t *cfg = cluster_config(c); /* stable under the read lock */
    cluster_nap_survey_t survey;
    cluster_nap_survey(c, &survey);
    cluster__gauge(c, &survey, b, "frugal_node_group_target_size", "Node group target size.",
                   figure_target);
    cluster__gauge(c, &survey, b, "frugal_node_group_min_size",
                   "Node group minimum size, as advertised to CA.", figure_min);
    cluster__gauge(c, &survey, b, "frugal_node_group_max_size",
                   "Node group maximum size, as advertised to CA.", figure_max);
    metrics_buf_family(b, "frugal_instances", "Instances of a node group, by state.", "gauge");
    for (size_t i = 0; i < cluster_groups_count(c); i++) {
        const group_t *g = cluster_group_at(c, i);
        for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
            size_t n = 0;
            for (size_t k = 0; k < g->instances_count; k++)
                n += g->instances[k].state == states[s].state;
            const char *values[] = {g->spec.id, states[s].name};
            metrics_buf_sample(b, "frugal_instances", state_names, values, 2, (double)n);
        }
    }
    metrics_buf_family(b, "frugal_node_price_per_hour",
                       "Price of one node of the group per hour, as the expander ranks it.",
                       "gauge");
    for (size_t i = 0; i < cluster_groups_count(c); i++) {
        const group_t *g = cluster_group_at(c, i);
        double price = pricing_group_node_price(cfg, &g->spec);
        if (price < 0)
            continue; /* machine type not in the catalog: no price */
        const char *values[] = {g->spec.id, g->spec.spot ? "spot" : "on_demand"};
        metrics_buf_sample(b, "frugal_node_price_per_hour", price_names, values, 2, price);
    }
    cluster_read_unlock(c);
}
