#include "hook_env.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook_params.h"
#include "k8s.h"
#include "pricing.h"
#include "quantity.h"
#include "strbuf.h"
#include "template.h"

extern char **environ;

/* An environment being built: at most cap entries (the last slot stays NULL). */
typedef struct hook_envp {
    char **items;
    size_t count;
    size_t cap;
    bool oom;
} hook_envp_t;

static void hook__put(hook_envp_t *e, const char *name, const char *value) {
    if (e->oom || e->count + 1 >= e->cap) {
        e->oom = true;
        return;
    }
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = malloc(len);
    if (s == NULL) {
        e->oom = true;
        return;
    }
    snprintf(s, len, "%s=%s", name, value);
    e->items[e->count++] = s;
}

/* Append key SEP value[:effect] to the comma-separated list b. */
static void hook__csv_add(strbuf_t *b, const char *key, const char *sep, const char *value,
                          const char *effect) {
    strbuf_printf(b, "%s%s%s%s%s%s", b->len > 0 ? "," : "", key, sep, value, effect[0] ? ":" : "",
                  effect);
}

/* The list b holds: "" when empty, NULL when out of memory. */
static char *hook__csv_take(strbuf_t *b) {
    strbuf_append(b, "", 0);
    return strbuf_take(b);
}

char *hook_env_node_labels(const frugal_config_t *cfg, const group_spec_t *spec) {
    kv_list_t labels = {0};
    const machine_type_t *mt = config_find_machine_type(cfg, spec->machine_type);
    char region[256];
    int rc = 0;
    /* As the template node has them, so that the node matches what CA simulated. */
    if (mt != NULL)
        rc = rc || kv_list_put(&labels, K8S_LABEL_INSTANCE_TYPE, mt->name) < 0;
    if (spec->zone != NULL && spec->zone[0] != '\0') {
        rc = rc || kv_list_put(&labels, K8S_LABEL_ZONE, spec->zone) < 0;
        rc = rc || kv_list_put(&labels, K8S_LABEL_REGION,
                               template_region_of_zone(spec->zone, region, sizeof(region))) < 0;
    }
    if (mt != NULL && mt->gpu > 0 && mt->gpu_type != NULL)
        rc = rc || kv_list_put(&labels, FRUGAL_GPU_LABEL, mt->gpu_type) < 0;
    for (size_t i = 0; rc == 0 && i < spec->labels.count; i++) {
        const kv_t *kv = &spec->labels.items[i];
        bool found;
        size_t at = kv_list_find(&labels, kv->key, &found);
        if (found) {
            char *v = strdup(kv->value);
            rc = v == NULL;
            if (v != NULL) {
                free(labels.items[at].value);
                labels.items[at].value = v;
            }
        } else {
            rc = kv_list_put(&labels, kv->key, kv->value) != 0;
        }
    }
    if (rc != 0) {
        kv_list_clear(&labels);
        return NULL;
    }
    strbuf_t b = {0};
    for (size_t i = 0; i < labels.count; i++)
        hook__csv_add(&b, labels.items[i].key, "=", labels.items[i].value, "");
    kv_list_clear(&labels);
    return hook__csv_take(&b);
}

char *hook_env_node_taints(const group_spec_t *spec) {
    strbuf_t b = {0};
    for (size_t i = 0; i < spec->taints.count; i++) {
        const taint_t *t = &spec->taints.items[i];
        hook__csv_add(&b, t->key, t->value[0] != '\0' ? "=" : "", t->value, t->effect);
    }
    return hook__csv_take(&b);
}

/* Join a group's labels (k=v) or taints (k=v:Effect) with commas, as FRUGAL_LABELS and
 * FRUGAL_TAINTS always did; NULL when out of memory. */
static char *hook__join_spec(const group_spec_t *spec, bool taints) {
    strbuf_t b = {0};
    size_t count = taints ? spec->taints.count : spec->labels.count;
    for (size_t i = 0; i < count; i++) {
        if (taints)
            hook__csv_add(&b, spec->taints.items[i].key, "=", spec->taints.items[i].value,
                          spec->taints.items[i].effect);
        else
            hook__csv_add(&b, spec->labels.items[i].key, "=", spec->labels.items[i].value, "");
    }
    return hook__csv_take(&b);
}

/* Whether the inherited entry e (NAME=VALUE) is replaced by one of frugal's. */
static bool hook__shadowed(const frugal_config_t *cfg, const char *e) {
    if (strncmp(e, "FRUGAL_", 7) == 0)
        return true;
    const char *eq = strchr(e, '=');
    size_t len = eq != NULL ? (size_t)(eq - e) : strlen(e);
    for (size_t i = 0; i < cfg->exec_env_files.count; i++) {
        const char *key = cfg->exec_env_files.items[i].key;
        if (strlen(key) == len && strncmp(key, e, len) == 0)
            return true;
    }
    return false;
}

/* The hook parameters of g, merged: variable name -> value. */
static int hook__params(const frugal_config_t *cfg, const group_t *g, const machine_type_t *mt,
                        kv_list_t *out) {
    const node_group_config_t *ng =
        g->autoprovisioned ? NULL : config_find_node_group(cfg, g->spec.id);
    const kv_list_t *layers[] = {&cfg->exec_params, mt != NULL ? &mt->provider_params : NULL,
                                 ng != NULL ? &ng->provider_params : NULL};
    return hook_params_merge(layers, sizeof(layers) / sizeof(layers[0]), out);
}

/* The FRUGAL_* variables that describe g and the instance. */
static void hook__describe(hook_envp_t *e, const frugal_config_t *cfg, const group_t *g,
                           const machine_type_t *mt, const char *name, const char *provider_id) {
    const group_spec_t *spec = &g->spec;
    char cpu[32] = "", mem[32] = "", gpu[16] = "0", price[32] = "";
    resources_t cap; /* as the template promises it: with NewNodeGroup's extra resources */
    frugal_err_t err = {0};
    if (mt != NULL && pricing_machine_capacity(mt, spec, &cap, &err) == 0) {
        quantity_format_milli(cap.cpu_milli, cpu, sizeof(cpu));
        quantity_format_bytes(cap.memory_bytes, mem, sizeof(mem));
        snprintf(gpu, sizeof(gpu), "%" PRId64, cap.gpu);
    }
    double p = pricing_group_node_price(cfg, spec);
    if (p >= 0)
        snprintf(price, sizeof(price), "%.10g", p);
    char *labels = hook__join_spec(spec, false);
    char *taints = hook__join_spec(spec, true);
    char *node_labels = hook_env_node_labels(cfg, spec);
    char *node_taints = hook_env_node_taints(spec);
    if (labels == NULL || taints == NULL || node_labels == NULL || node_taints == NULL)
        e->oom = true;
    hook__put(e, "FRUGAL_GROUP", spec->id);
    hook__put(e, "FRUGAL_INSTANCE", name);
    hook__put(e, "FRUGAL_PROVIDER_ID", provider_id);
    hook__put(e, "FRUGAL_MACHINE_TYPE", spec->machine_type != NULL ? spec->machine_type : "");
    hook__put(e, "FRUGAL_ZONE", spec->zone != NULL ? spec->zone : "");
    hook__put(e, "FRUGAL_LABELS", labels != NULL ? labels : "");
    hook__put(e, "FRUGAL_TAINTS", taints != NULL ? taints : "");
    hook__put(e, "FRUGAL_NODE_LABELS", node_labels != NULL ? node_labels : "");
    hook__put(e, "FRUGAL_NODE_TAINTS", node_taints != NULL ? node_taints : "");
    hook__put(e, "FRUGAL_CPU", cpu);
    hook__put(e, "FRUGAL_MEMORY", mem);
    hook__put(e, "FRUGAL_GPU", gpu);
    hook__put(e, "FRUGAL_GPU_TYPE", mt != NULL && mt->gpu_type != NULL ? mt->gpu_type : "");
    hook__put(e, "FRUGAL_SPOT", spec->spot ? "true" : "false");
    hook__put(e, "FRUGAL_PRICE", price);
    free(labels);
    free(taints);
    free(node_labels);
    free(node_taints);
}

#define HOOK_ENV_OWN 15 /* FRUGAL_* variables of hook__describe */

char **hook_env_build(const frugal_config_t *cfg, const group_t *g, const char *name,
                      const char *provider_id) {
    const machine_type_t *mt = config_find_machine_type(cfg, g->spec.machine_type);
    kv_list_t params = {0};
    if (hook__params(cfg, g, mt, &params) != 0)
        return NULL;
    size_t inherited = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        inherited++;
    hook_envp_t e = {.cap =
                         inherited + cfg->exec_env_files.count + params.count + HOOK_ENV_OWN + 1};
    e.items = calloc(e.cap, sizeof(*e.items));
    if (e.items == NULL) {
        kv_list_clear(&params);
        return NULL;
    }
    for (char **in = environ; in != NULL && *in != NULL && !e.oom; in++) {
        if (hook__shadowed(cfg, *in))
            continue;
        if ((e.items[e.count] = strdup(*in)) == NULL)
            e.oom = true;
        else
            e.count++;
    }
    for (size_t i = 0; i < cfg->exec_env_files.count; i++)
        hook__put(&e, cfg->exec_env_files.items[i].key, cfg->exec_env_files.items[i].value);
    hook__describe(&e, cfg, g, mt, name, provider_id);
    for (size_t i = 0; i < params.count; i++)
        hook__put(&e, params.items[i].key, params.items[i].value);
    kv_list_clear(&params);
    if (e.oom) {
        hook_env_free(e.items);
        return NULL;
    }
    return e.items;
}

void hook_env_free(char **envp) {
    if (envp == NULL)
        return;
    for (char **e = envp; *e != NULL; e++)
        free(*e);
    free(envp);
}

char **hook_env_with_provider_id(char *const *envp, const char *provider_id) {
    static const char var[] = "FRUGAL_PROVIDER_ID=";
    size_t n = 0;
    while (envp[n] != NULL)
        n++;
    char **out = calloc(n + 1, sizeof(*out));
    for (size_t i = 0; out != NULL && i < n; i++) {
        if (strncmp(envp[i], var, sizeof(var) - 1) == 0) {
            size_t len = sizeof(var) + strlen(provider_id);
            if ((out[i] = malloc(len)) != NULL)
                snprintf(out[i], len, "%s%s", var, provider_id);
        } else {
            out[i] = strdup(envp[i]);
        }
        if (out[i] == NULL) {
            hook_env_free(out);
            return NULL;
        }
    }
    return out;
}
