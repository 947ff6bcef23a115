/* Hourly prices of resources, machines and node groups. */
#include "pricing.h"

#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "k8s.h"

#define PRICING_GIB 1073741824.0

double pricing_linear(const pricing_config_t *pricing, const resources_t *r) {
    return (double)r->cpu_milli / 1000.0 * pricing->cpu +
           (double)r->memory_bytes / PRICING_GIB * pricing->memory_gib +
           (double)r->gpu * pricing->gpu;
}

/* On-demand price: configured/catalog, else linear from the pricing section, GPUs at
 * pricing.gpu. */
static double pricing__on_demand(const frugal_config_t *cfg, const machine_type_t *mt) {
    if (mt->price >= 0)
        return mt->price;
    resources_t r = {mt->cpu_milli, mt->memory_bytes, mt->gpu};
    return pricing_linear(&cfg->pricing, &r);
}

double pricing_machine_price(const frugal_config_t *cfg, const machine_type_t *mt, bool spot,
                             double spot_price_override) {
    if (spot) {
        if (spot_price_override >= 0)
            return spot_price_override;
        if (mt->spot_price >= 0)
            return mt->spot_price;
    }
    return pricing__on_demand(cfg, mt);
}

double pricing_group_node_price(const frugal_config_t *cfg, const group_spec_t *spec) {
    const machine_type_t *mt = config_find_machine_type(cfg, spec->machine_type);
    if (mt == NULL)
        return -1.0;
    return pricing_machine_price(cfg, mt, spec->spot, spec->spot_price);
}

static int pricing__add(int64_t *acc, int64_t v) {
    if (__builtin_add_overflow(*acc, v, acc))
        return -1;
    return 0;
}

int pricing_machine_capacity(const machine_type_t *mt, const group_spec_t *spec, resources_t *out,
                             frugal_err_t *err) {
    resources_t r = {mt->cpu_milli, mt->memory_bytes, mt->gpu};

    if (spec != NULL) {
        for (size_t i = 0; i < spec->extra_resources.count; i++) {
            const kv_t *kv = &spec->extra_resources.items[i];
            int64_t v, *acc;
            int rc;
            if (strcmp(kv->key, K8S_RESOURCE_CPU) == 0) {
                rc = quantity_parse_milli(kv->value, &v, err);
                acc = &r.cpu_milli;
            } else if (strcmp(kv->key, K8S_RESOURCE_MEMORY) == 0) {
                rc = quantity_parse_value(kv->value, &v, err);
                acc = &r.memory_bytes;
            } else if (strcmp(kv->key, K8S_RESOURCE_NVIDIA_GPU) == 0 ||
                       strcmp(kv->key, K8S_RESOURCE_AMD_GPU) == 0) {
                rc = quantity_parse_value(kv->value, &v, err);
                acc = &r.gpu;
            } else {
                continue;
            }
            if (rc != 0)
                return frugal_err_set(err, FRUGAL_EINVAL,
                                      "extra resource %s: invalid quantity \"%s\"", kv->key,
                                      kv->value != NULL ? kv->value : "");
            if (v < 0 || pricing__add(acc, v) != 0)
                return frugal_err_set(err, FRUGAL_EINVAL,
                                      "extra resource %s: quantity \"%s\" out of range", kv->key,
                                      kv->value);
        }
    }
    *out = r;
    return 0;
}

bool pricing_unpriced_damper_warning(const frugal_config_t *cfg, char *buf, size_t size) {
    if (pricing_linear(&cfg->pricing, &cfg->ranking.damper) > 0.0 ||
        config_unpriced_pods_warning(cfg, buf, size))
        return false;
    snprintf(buf, size,
             "ranking.damper is priced at 0: a request whose pods all request nothing "
             "(BestEffort) cannot be scored, and BestOptions answers it with its options "
             "unchanged (cluster-autoscaler then picks one at random)");
    return true;
}
