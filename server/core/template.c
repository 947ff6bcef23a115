/* Template nodes: built as generated protobuf-c structs on the stack and the heap,
 * packed, and freed before returning. Strings are borrowed from the config (protobuf-c
 * only reads them while packing). */
#include "template.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "pricing.h"

#define TEMPLATE__TEXT(n) #n
#define TEMPLATE__QUANTITY(n) TEMPLATE__TEXT(n)
#define TEMPLATE_PODS TEMPLATE__QUANTITY(TEMPLATE_MAX_PODS)
#define TEMPLATE_BASE_LABELS 9

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry template_label_t;
typedef K8s__Io__Api__Core__V1__NodeStatus__CapacityEntry template_capacity_t;
typedef K8s__Io__Api__Core__V1__NodeStatus__AllocatableEntry template_allocatable_t;

char *template_region_of_zone(const char *zone, char *buf, size_t size) {
    const char *dash = strrchr(zone, '-');
    size_t n = dash != NULL && dash != zone ? (size_t)(dash - zone) : strlen(zone);
    snprintf(buf, size, "%.*s", (int)n, zone);
    return buf;
}

/* Set key=value in the label list, replacing an earlier value of the same key. */
static void template__label_put(template_label_t *labels, size_t *n, const char *key,
                                const char *value) {
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(labels[i].key, key) == 0) {
            labels[i].value = (char *)value;
            return;
        }
    }
    template_label_t init =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
    labels[*n] = init;
    labels[*n].key = (char *)key;
    labels[*n].value = (char *)value;
    (*n)++;
}

/* Give key the value of stable (set before), unless key is set already. */
static void template__label_mirror(template_label_t *labels, size_t *n, const char *key,
                                   const char *stable) {
    const char *value = NULL;
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(labels[i].key, key) == 0)
            return;
        if (strcmp(labels[i].key, stable) == 0)
            value = labels[i].value;
    }
    if (value != NULL)
        template__label_put(labels, n, key, value);
}

/* Set a capacity quantity, replacing an earlier one of the same resource. */
static void template__resource_put(const char **keys, const char **values, size_t *n,
                                   const char *key, const char *value) {
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(keys[i], key) == 0) {
            values[i] = value;
            return;
        }
    }
    keys[*n] = key;
    values[*n] = value;
    (*n)++;
}

int template_build(const frugal_config_t *cfg, const group_spec_t *spec, uint8_t **out, size_t *len,
                   frugal_err_t *err) {
    const machine_type_t *mt = config_find_machine_type(cfg, spec->machine_type);
    if (mt == NULL)
        return frugal_err_set(err, FRUGAL_ENOTFOUND,
                              "node group %s: machine type %s is not in the catalog", spec->id,
                              spec->machine_type != NULL ? spec->machine_type : "(none)");
    return template_build_machine(mt, spec, out, len, err);
}

int template_build_machine(const machine_type_t *mt, const group_spec_t *spec, uint8_t **out,
                           size_t *len, frugal_err_t *err) {
    resources_t cap;
    int rc = pricing_machine_capacity(mt, spec, &cap, err);
    if (rc != 0)
        return rc;
    /* nvidia.com/gpu carries the GPUs of the machine type and of nvidia extras only. */
    int64_t amd = 0;
    for (size_t i = 0; i < spec->extra_resources.count; i++)
        if (strcmp(spec->extra_resources.items[i].key, K8S_RESOURCE_AMD_GPU) == 0 &&
            quantity_parse_value(spec->extra_resources.items[i].value, &amd, err) != 0)
            return FRUGAL_EINVAL;
    int64_t nvidia = cap.gpu - amd;

    char *name = NULL;
    template_label_t *labels = NULL;
    template_label_t **label_ptrs = NULL;
    const char **res_keys = NULL, **res_values = NULL;
    k8s_quantity_t *quantities = NULL;
    template_capacity_t *caps = NULL, **cap_ptrs = NULL;
    template_allocatable_t *allocs = NULL, **alloc_ptrs = NULL;
    k8s_taint_t *taints = NULL, **taint_ptrs = NULL;
    uint8_t *buf = NULL;
    rc = FRUGAL_ENOMEM;

    size_t name_len = strlen("template-") + strlen(spec->id) + 1;
    size_t max_labels = TEMPLATE_BASE_LABELS + spec->labels.count;
    size_t max_res = 5 + spec->extra_resources.count;
    size_t ntaints = spec->taints.count;
    name = malloc(name_len);
    labels = calloc(max_labels, sizeof(*labels));
    label_ptrs = calloc(max_labels, sizeof(*label_ptrs));
    res_keys = calloc(max_res, sizeof(*res_keys));
    res_values = calloc(max_res, sizeof(*res_values));
    quantities = calloc(max_res, sizeof(*quantities));
    caps = calloc(max_res, sizeof(*caps));
    cap_ptrs = calloc(max_res, sizeof(*cap_ptrs));
    allocs = calloc(max_res, sizeof(*allocs));
    alloc_ptrs = calloc(max_res, sizeof(*alloc_ptrs));
    taints = calloc(ntaints + 1, sizeof(*taints));
    taint_ptrs = calloc(ntaints + 1, sizeof(*taint_ptrs));
    if (name == NULL || labels == NULL || label_ptrs == NULL || res_keys == NULL ||
        res_values == NULL || quantities == NULL || caps == NULL || cap_ptrs == NULL ||
        allocs == NULL || alloc_ptrs == NULL || taints == NULL || taint_ptrs == NULL) {
        frugal_err_set(err, FRUGAL_ENOMEM, "template %s: out of memory", spec->id);
        goto done;
    }
    snprintf(name, name_len, "template-%s", spec->id);

    /* Labels: well-known ones first, then the group's (which may override them). */
    char region[256];
    size_t nlabels = 0;
    template__label_put(labels, &nlabels, K8S_LABEL_OS, "linux");
    template__label_put(labels, &nlabels, K8S_LABEL_ARCH, "amd64");
    template__label_put(labels, &nlabels, K8S_LABEL_HOSTNAME, name);
    if (mt->name != NULL && mt->name[0] != '\0')
        template__label_put(labels, &nlabels, K8S_LABEL_INSTANCE_TYPE, mt->name);
    if (spec->zone != NULL && spec->zone[0] != '\0') {
        template__label_put(labels, &nlabels, K8S_LABEL_ZONE, spec->zone);
        template__label_put(labels, &nlabels, K8S_LABEL_REGION,
                            template_region_of_zone(spec->zone, region, sizeof(region)));
    }
    if (mt->gpu > 0 && mt->gpu_type != NULL)
        template__label_put(labels, &nlabels, FRUGAL_GPU_LABEL, mt->gpu_type);
    for (size_t i = 0; i < spec->labels.count; i++)
        template__label_put(labels, &nlabels, spec->labels.items[i].key,
                            spec->labels.items[i].value);
    template__label_mirror(labels, &nlabels, K8S_LABEL_OS_BETA, K8S_LABEL_OS);
    template__label_mirror(labels, &nlabels, K8S_LABEL_ARCH_BETA, K8S_LABEL_ARCH);
    for (size_t i = 0; i < nlabels; i++)
        label_ptrs[i] = &labels[i];

    /* Capacity = allocatable. */
    char cpu_buf[32], mem_buf[32], gpu_buf[32];
    size_t nres = 0;
    template__resource_put(res_keys, res_values, &nres, K8S_RESOURCE_CPU,
                           quantity_format_milli(cap.cpu_milli, cpu_buf, sizeof(cpu_buf)));
    template__resource_put(res_keys, res_values, &nres, K8S_RESOURCE_MEMORY,
                           quantity_format_bytes(cap.memory_bytes, mem_buf, sizeof(mem_buf)));
    template__resource_put(res_keys, res_values, &nres, K8S_RESOURCE_PODS, TEMPLATE_PODS);
    template__resource_put(res_keys, res_values, &nres, K8S_RESOURCE_EPHEMERAL_STORAGE,
                           TEMPLATE_EPHEMERAL_STORAGE);
    if (nvidia > 0) {
        snprintf(gpu_buf, sizeof(gpu_buf), "%" PRId64, nvidia);
        template__resource_put(res_keys, res_values, &nres, K8S_RESOURCE_NVIDIA_GPU, gpu_buf);
    }
    for (size_t i = 0; i < spec->extra_resources.count; i++) {
        const kv_t *kv = &spec->extra_resources.items[i];
        /* cpu, memory and GPUs were added to the machine's capacity above. */
        if (strcmp(kv->key, K8S_RESOURCE_CPU) == 0 || strcmp(kv->key, K8S_RESOURCE_MEMORY) == 0 ||
            strcmp(kv->key, K8S_RESOURCE_NVIDIA_GPU) == 0)
            continue;
        template__resource_put(res_keys, res_values, &nres, kv->key, kv->value);
    }
    for (size_t i = 0; i < nres; i++) {
        k8s_quantity_t qinit = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
        template_capacity_t cinit = K8S__IO__API__CORE__V1__NODE_STATUS__CAPACITY_ENTRY__INIT;
        template_allocatable_t ainit = K8S__IO__API__CORE__V1__NODE_STATUS__ALLOCATABLE_ENTRY__INIT;
        quantities[i] = qinit;
        quantities[i].string = (char *)res_values[i];
        caps[i] = cinit;
        caps[i].key = (char *)res_keys[i];
        caps[i].value = &quantities[i];
        cap_ptrs[i] = &caps[i];
        allocs[i] = ainit;
        allocs[i].key = (char *)res_keys[i];
        allocs[i].value = &quantities[i];
        alloc_ptrs[i] = &allocs[i];
    }

    for (size_t i = 0; i < ntaints; i++) {
        k8s_taint_t tinit = K8S__IO__API__CORE__V1__TAINT__INIT;
        taints[i] = tinit;
        taints[i].key = spec->taints.items[i].key;
        taints[i].value = spec->taints.items[i].value;
        taints[i].effect = spec->taints.items[i].effect;
        taint_ptrs[i] = &taints[i];
    }

    k8s_node_condition_t ready = K8S__IO__API__CORE__V1__NODE_CONDITION__INIT;
    k8s_node_condition_t *conditions[1] = {&ready};
    ready.type = "Ready";
    ready.status = "True";
    ready.reason = "KubeletReady";
    ready.message = "kubelet is posting ready status";

    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = name;
    meta.n_labels = nlabels;
    meta.labels = label_ptrs;

    k8s_node_spec_t node_spec = K8S__IO__API__CORE__V1__NODE_SPEC__INIT;
    node_spec.n_taints = ntaints;
    node_spec.taints = taint_ptrs;

    k8s_node_status_t status = K8S__IO__API__CORE__V1__NODE_STATUS__INIT;
    status.n_capacity = nres;
    status.capacity = cap_ptrs;
    status.n_allocatable = nres;
    status.allocatable = alloc_ptrs;
    status.n_conditions = 1;
    status.conditions = conditions;

    k8s_node_t node = K8S__IO__API__CORE__V1__NODE__INIT;
    node.metadata = &meta;
    node.spec = &node_spec;
    node.status = &status;

    size_t size = k8s__io__api__core__v1__node__get_packed_size(&node);
    buf = malloc(size > 0 ? size : 1);
    if (buf == NULL) {
        frugal_err_set(err, FRUGAL_ENOMEM, "template %s: out of memory", spec->id);
        goto done;
    }
    k8s__io__api__core__v1__node__pack(&node, buf);
    *out = buf;
    *len = size;
    rc = 0;

done:
    free(taint_ptrs);
    free(taints);
    free(alloc_ptrs);
    free(allocs);
    free(cap_ptrs);
    free(caps);
    free(quantities);
    free(res_values);
    free(res_keys);
    free(label_ptrs);
    free(labels);
    free(name);
    return rc;
}
