/* Configuration sections of the decisions: autoprovisioning and ranking. */
#include "config_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprov.h"
#include "k8s_name.h"
#include "strmap.h"

/* ---- autoprovisioning ---- */

/* Relies on the effective catalog. Absent: every machine type of the catalog. */
static bool parse_ap_machine_types(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                   void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = &cfg->autoprovisioning;
    if (node == NULL) {
        for (size_t i = 0; i < cfg->machine_types_count; i++) {
            char **slot =
                config__grow(ctx, &ap->machine_types, &ap->machine_types_count, sizeof(char *));
            if (slot == NULL || (*slot = config__strdup(ctx, cfg->machine_types[i].name)) == NULL) {
                return false;
            }
        }
        return true;
    }
    config__parse_strings(ctx, node, path, &ap->machine_types, &ap->machine_types_count);
    ap->machine_types_listed = true;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        if (item->type == YAML_TREE_SCALAR && !yaml_tree_is_null(item) &&
            config_find_machine_type(cfg, item->u.scalar.text) == NULL &&
            !config__machine_type_refused(ctx, item->u.scalar.text)) {
            config__path_index(sub, path, i);
            config__error(ctx, item, sub, "unknown machine type \"%s\"", item->u.scalar.text);
        }
    }
    return true;
}

/* Relies on the node groups. Absent: the distinct zones of the groups, in order. */
static bool parse_ap_zones(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = &cfg->autoprovisioning;
    if (node != NULL) {
        config__parse_strings(ctx, node, path, &ap->zones, &ap->zones_count);
        for (size_t i = 0; i < config__seq_count(node); i++) {
            const yaml_tree_node_t *item = node->u.sequence.items[i];
            char sub[CONFIG_PATH_MAX];
            config__path_index(sub, path, i);
            if (item->type == YAML_TREE_SCALAR && item->u.scalar.len > 0)
                config__check_label_value(ctx, item, sub);
        }
        return true;
    }
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const char *zone = cfg->node_groups[i].spec.zone;
        bool seen = zone == NULL;
        for (size_t j = 0; j < ap->zones_count && !seen; j++) {
            seen = strcmp(ap->zones[j], zone) == 0;
        }
        if (seen) {
            continue;
        }
        char **slot = config__grow(ctx, &ap->zones, &ap->zones_count, sizeof(char *));
        if (slot == NULL || (*slot = config__strdup(ctx, zone)) == NULL) {
            return false;
        }
    }
    return true;
}

static bool parse_ap_label_sets(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    autoprov_config_t *ap = &ctx->cfg->autoprovisioning;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < config__seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        config__path_index(sub, path, i);
        kv_list_t l = {0};
        if (!config__parse_nap_labels(ctx, item, sub, &l)) {
            kv_list_clear(&l);
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < ap->label_sets_count && !dup; j++)
            dup = kv_list_equal(&ap->label_sets[j], &l);
        if (dup) {
            config__error(ctx, item, sub, "duplicate label set");
            kv_list_clear(&l);
            continue;
        }
        kv_list_t *slot = config__grow(ctx, &ap->label_sets, &ap->label_sets_count, sizeof(l));
        if (slot == NULL) {
            kv_list_clear(&l);
            return false;
        }
        *slot = l;
    }
    return true;
}

static const key_spec_t limits_keys[] = {
    KEY_RANGE("min_cpu", config__parse_cpu, autoprov_config_t, min_cpu_milli, "0", 0, INFINITY,
              false),
    KEY_RANGE("max_cpu", config__parse_cpu, autoprov_config_t, max_cpu_milli, NULL, 0, INFINITY,
              false),
    KEY_RANGE("min_memory", config__parse_bytes, autoprov_config_t, min_memory_bytes, "0", 0,
              INFINITY, false),
    KEY_RANGE("max_memory", config__parse_bytes, autoprov_config_t, max_memory_bytes, NULL, 0,
              INFINITY, false),
};

/* limits: stored in the autoprovisioning struct itself (offset 0 of it). */
static bool parse_ap_limits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    autoprov_config_t *ap = field;
    char sub[CONFIG_PATH_MAX];
    size_t before = ctx->error_count;
    config__section_parse(ctx, node, path, limits_keys, TABLE_LEN(limits_keys), ap);
    if (ctx->error_count != before) {
        return false;
    }
    if (ap->min_cpu_milli > ap->max_cpu_milli) {
        config__path_join(sub, path, "min_cpu");
        config__error(ctx, yaml_tree_mapping_get(node, "min_cpu"), sub,
                      "min_cpu is greater than max_cpu");
    }
    if (ap->min_memory_bytes > ap->max_memory_bytes) {
        config__path_join(sub, path, "min_memory");
        config__error(ctx, yaml_tree_mapping_get(node, "min_memory"), sub,
                      "min_memory is greater than max_memory");
    }
    return true;
}

static bool parse_ap_prefix(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (!k8s_name_is_dns_label(s) || strlen(s) > 20) {
        config__error(
            ctx, node, path,
            "invalid prefix \"%s\": must be 1-20 lowercase alphanumerics or '-', starting "
            "and ending with an alphanumeric",
            s);
        return false;
    }
    return config__parse_string(ctx, node, path, field, spec);
}

static const key_spec_t autoprov_keys[] = {
    KEY("enabled", YAML_TREE_SCALAR, config__parse_bool, autoprov_config_t, enabled, "false"),
    KEY("prefix", YAML_TREE_SCALAR, parse_ap_prefix, autoprov_config_t, prefix, "nap"),
    KEY("machine_types", YAML_TREE_SEQUENCE, parse_ap_machine_types, autoprov_config_t,
        machine_types, NULL),
    KEY("zones", YAML_TREE_SEQUENCE, parse_ap_zones, autoprov_config_t, zones, NULL),
    KEY("label_sets", YAML_TREE_SEQUENCE, parse_ap_label_sets, autoprov_config_t, label_sets,
        "[{}]"),
    /* offset 0: parse_ap_limits fills the autoprovisioning struct itself */
    KEY("limits", YAML_TREE_MAPPING, parse_ap_limits, autoprov_config_t, enabled, NULL),
    KEY_RANGE("max_node_groups", config__parse_int32, autoprov_config_t, max_node_groups, "50", 0,
              INT32_MAX, false),
    KEY("empty_group_ttl", YAML_TREE_SCALAR, config__parse_duration_ms, autoprov_config_t,
        empty_group_ttl_ms, "10m"),
    KEY_RANGE("max_theoretical_groups", config__parse_int32, autoprov_config_t,
              max_theoretical_groups, "200", 0, INT32_MAX, false),
};

/* The k-th offered shape, for a message. */
static void ap_shape_name(const autoprov_config_t *ap, size_t k, char *buf, size_t size) {
    const char *type, *zone;
    const kv_list_t *labels;
    autoprov_offered_shape(ap, k, &type, &zone, &labels);
    int len = snprintf(buf, size, "machine type %s", type);
    if (zone != NULL && len >= 0 && (size_t)len < size)
        len += snprintf(buf + len, size - (size_t)len, " in zone %s", zone);
    if (ap->label_sets_count > 1 && len >= 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, " with label set %zu",
                 (size_t)(labels - ap->label_sets) + 1);
}

/* Two shapes that the config offers must not get one autoprovisioned group id (a-b in
 * zone c and a in zone b-c both give nap-a-b-c): the second would never be offered. */
static void check_ap_ids(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         const autoprov_config_t *ap) {
    size_t n = autoprov_offered_count(ap);
    char **ids = calloc(n > 0 ? n : 1, sizeof(*ids));
    strmap_t *seen = NULL;
    if (ids == NULL || strmap_create(n, &seen) != 0) {
        config__error(ctx, node, path, "out of memory");
        free(ids);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const char *type, *zone;
        const kv_list_t *labels;
        autoprov_offered_shape(ap, k, &type, &zone, &labels);
        if (autoprov_group_id(ap->prefix, type, zone, labels, NULL, NULL, &ids[k], NULL) != 0) {
            config__error(ctx, node, path, "out of memory");
            break;
        }
        void *first = strmap_get(seen, ids[k]);
        if (first != NULL) {
            char a[CONFIG_PATH_MAX], b[CONFIG_PATH_MAX];
            ap_shape_name(ap, (size_t)(uintptr_t)first - 1, a, sizeof(a));
            ap_shape_name(ap, k, b, sizeof(b));
            config__error(ctx, node, path,
                          "%s and %s get the same autoprovisioned node group id %s: rename "
                          "one of them",
                          a, b, ids[k]);
        } else if (strmap_put(seen, ids[k], (void *)(uintptr_t)(k + 1), NULL) != 0) {
            config__error(ctx, node, path, "out of memory");
            break;
        }
    }
    strmap_destroy(seen);
    for (size_t k = 0; k < n; k++)
        free(ids[k]);
    free(ids);
}

/* Relies on the node groups: with autoprovisioning on, no configured id may look like
 * an autoprovisioned one. */
bool config__parse_autoprov(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = field;
    ap->max_cpu_milli = INT64_MAX;
    ap->max_memory_bytes = INT64_MAX;
    size_t errors_before = ctx->error_count;
    config__section_parse(ctx, node, path, autoprov_keys, TABLE_LEN(autoprov_keys), ap);
    if (!ap->enabled || ap->prefix == NULL) {
        return true;
    }
    /* An empty list offers no group at all; leaving the key out gives its default. */
    static const char *const empty_lists[][2] = {
        {"machine_types", "no machine type (omit the key for every machine type)"},
        {"label_sets", "no label set (omit the key for one empty set)"}};
    for (size_t k = 0; k < TABLE_LEN(empty_lists); k++) {
        const yaml_tree_node_t *list = yaml_tree_mapping_get(node, empty_lists[k][0]);
        if (list != NULL && list->type == YAML_TREE_SEQUENCE && list->u.sequence.count == 0) {
            char sub[CONFIG_PATH_MAX];
            config__path_join(sub, path, empty_lists[k][0]);
            config__error(ctx, list, sub, "autoprovisioning is enabled but offers %s",
                          empty_lists[k][1]);
        }
    }
    size_t plen = strlen(ap->prefix);
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const char *id = cfg->node_groups[i].spec.id;
        if (strncmp(id, ap->prefix, plen) == 0 && id[plen] == '-') {
            char sub[CONFIG_PATH_MAX];
            snprintf(sub, sizeof(sub), "node_groups[%zu].id", ctx->group_items[i]);
            config__error(ctx, yaml_tree_mapping_get(ctx->group_nodes[i], "id"), sub,
                          "id \"%s\" starts with the autoprovisioning prefix \"%s-\"", id,
                          ap->prefix);
        }
    }
    if (ctx->error_count == errors_before)
        check_ap_ids(ctx, node, path, ap);
    return true;
}

/* ---- ranking ---- */

static const key_spec_t damper_keys[] = {
    KEY_RANGE("cpu", config__parse_cpu, resources_t, cpu_milli, "500m", 0, INFINITY, false),
    KEY_RANGE("memory", config__parse_bytes, resources_t, memory_bytes, "500Mi", 0, INFINITY,
              false),
};

static bool parse_damper(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    config__section_parse(ctx, node, path, damper_keys, TABLE_LEN(damper_keys), field);
    return true;
}

static const key_spec_t preferred_keys[] = {
    KEY_RANGE("max_nodes", config__parse_int32, preferred_node_t, max_nodes, NULL, 1, INT32_MAX,
              false),
    KEY_REQ_RANGE("cpu", config__parse_cpu, preferred_node_t, cpu_milli, 0, INFINITY, true),
};

/* Strictly ascending max_nodes; only the last entry, which must exist, is unbounded. */
static bool parse_preferred_nodes(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    ranking_config_t *r = &ctx->cfg->ranking;
    char sub[CONFIG_PATH_MAX];
    size_t before = ctx->error_count;
    if (config__seq_count(node) == 0) {
        config__error(ctx, node, path, "at least one entry is required");
        return false;
    }
    size_t n = node->u.sequence.count;
    free(r->preferred_nodes);
    r->preferred_nodes_count = 0;
    r->preferred_nodes = config__calloc(ctx, n, sizeof(preferred_node_t));
    if (r->preferred_nodes == NULL) {
        return false;
    }
    r->preferred_nodes_count = n;
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        preferred_node_t *p = &r->preferred_nodes[i];
        size_t item_before = ctx->error_count;
        p->max_nodes = -1;
        config__path_index(sub, path, i);
        config__section_parse(ctx, item, sub, preferred_keys, TABLE_LEN(preferred_keys), p);
        if (ctx->error_count != item_before) {
            continue;
        }
        if (p->max_nodes < 0 && i + 1 < n) {
            config__error(ctx, item, sub, "only the last entry may omit max_nodes");
        } else if (p->max_nodes >= 0 && i + 1 == n) {
            config__error(ctx, item, sub,
                          "the last entry must omit max_nodes: it covers every larger cluster");
        } else if (i > 0 && p->max_nodes >= 0 && r->preferred_nodes[i - 1].max_nodes >= 0 &&
                   p->max_nodes <= r->preferred_nodes[i - 1].max_nodes) {
            char max_path[CONFIG_PATH_MAX];
            config__path_join(max_path, sub, "max_nodes");
            config__error(ctx, yaml_tree_mapping_get(item, "max_nodes"), max_path,
                          "max_nodes must be ascending: %" PRId32 " follows %" PRId32, p->max_nodes,
                          r->preferred_nodes[i - 1].max_nodes);
        }
    }
    return ctx->error_count == before;
}

static bool parse_strategy(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    int s = config_ranking_strategy_parse(node->u.scalar.text);
    if (s < 0) {
        config__error(ctx, node, path,
                      "unknown strategy \"%s\" (expected pricing-proposal or demand-fit)",
                      node->u.scalar.text);
        return false;
    }
    *(ranking_strategy_t *)field = (ranking_strategy_t)s;
    return true;
}

/* A node count (>= 1), or `auto`: RANKING_CLUSTER_SIZE_AUTO. */
static bool parse_cluster_size(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    if (strcmp(node->u.scalar.text, "auto") == 0) {
        *(int64_t *)field = RANKING_CLUSTER_SIZE_AUTO;
        return true;
    }
    int64_t v;
    if (!config__scalar_to_int64(node, &v) || v < 1) {
        config__error(ctx, node, path, "expected auto or a node count >= 1, got \"%s\"",
                      node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

static const key_spec_t ranking_keys[] = {
    KEY("strategy", YAML_TREE_SCALAR, parse_strategy, ranking_config_t, strategy, "demand-fit"),
    KEY("cluster_size", YAML_TREE_SCALAR, parse_cluster_size, ranking_config_t, cluster_size,
        "auto"),
    KEY("damper", YAML_TREE_MAPPING, parse_damper, ranking_config_t, damper, NULL),
    KEY("preferred_nodes", YAML_TREE_SEQUENCE, parse_preferred_nodes, ranking_config_t,
        preferred_nodes,
        "[{max_nodes: 2, cpu: 1}, {max_nodes: 6, cpu: 2}, {max_nodes: 20, cpu: 4},"
        " {max_nodes: 80, cpu: 8}, {max_nodes: 300, cpu: 16}, {cpu: 32}]"),
    KEY_RANGE("suppress_scale", config__parse_double, ranking_config_t, suppress_scale, "15", 0,
              INFINITY, true),
    KEY_RANGE("gpu_unfitness", config__parse_double, ranking_config_t, gpu_unfitness, "1000", 0,
              INFINITY, true),
    KEY_RANGE("not_exist_penalty", config__parse_double, ranking_config_t, not_exist_penalty, "2.0",
              0, INFINITY, true),
};

bool config__parse_ranking(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    config__section_parse(ctx, node, path, ranking_keys, TABLE_LEN(ranking_keys), field);
    return true;
}

const char *config_ranking_strategy_name(ranking_strategy_t s) {
    return s == RANKING_STRATEGY_DEMAND_FIT ? "demand-fit" : "pricing-proposal";
}

int config_ranking_strategy_parse(const char *name) {
    if (strcmp(name, "pricing-proposal") == 0)
        return RANKING_STRATEGY_PRICING_PROPOSAL;
    if (strcmp(name, "demand-fit") == 0)
        return RANKING_STRATEGY_DEMAND_FIT;
    return -1;
}

bool config_ranking_size_unknown(const frugal_config_t *cfg, char *buf, size_t size) {
    const ranking_config_t *r = &cfg->ranking;
    if (r->strategy != RANKING_STRATEGY_PRICING_PROPOSAL ||
        r->cluster_size != RANKING_CLUSTER_SIZE_AUTO || cfg->autoprovisioning.enabled)
        return false;
    /* The count is the groups' sizes: a managed group's can grow, an unmanaged one's is
     * its configured size. */
    for (size_t i = 0; i < cfg->node_groups_count; i++)
        if (cfg->node_groups[i].managed || cfg->node_groups[i].size > 0)
            return false;
    snprintf(buf, size,
             "ranking: the pricing-proposal strategy prefers a node size by cluster size, but "
             "no node group gives frugal a size, so it cannot count the cluster's nodes; every "
             "option is ranked as for an empty cluster. Set ranking.cluster_size, or "
             "ranking.strategy: demand-fit");
    return true;
}
