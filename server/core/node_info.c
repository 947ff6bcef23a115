/* Template node decoding: see node_info.h. */
#include "node_info.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "pb_unpack.h"
#include "strbuf.h"

/* Labels that differ between similar groups in different zones (CA's
 * --balance-similar-node-groups ignores the same ones). */
static const char *const node_info_ignored_labels[] = {
    K8S_LABEL_HOSTNAME,
    K8S_LABEL_ZONE,
    K8S_LABEL_REGION,
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.gke.io/zone",
};

static bool node_info__ignored(const char *key) {
    for (size_t i = 0; i < sizeof(node_info_ignored_labels) / sizeof(*node_info_ignored_labels);
         i++)
        if (strcmp(key, node_info_ignored_labels[i]) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "\x1f"-separated so that no label text can forge another set. */
#define SEP "\x1f"

static char *node_info__similarity_key(const k8s_node_t *node, const node_info_t *info) {
    strbuf_t s = {0};
    if (info->instance_type)
        strbuf_printf(&s, "type=%s" SEP, info->instance_type);
    else
        strbuf_printf(&s, "capacity=%" PRId64 "/%" PRId64 "/%" PRId64 SEP, info->capacity.cpu_milli,
                      info->capacity.memory_bytes, info->capacity.gpu);

    const k8s_object_meta_t *meta = node->metadata;
    size_t nl = meta ? meta->n_labels : 0;
    const k8s_node_spec_t *spec = node->spec;
    size_t nt = spec ? spec->n_taints : 0;
    size_t n = nl + nt, k = 0;
    char **items = calloc(n ? n : 1, sizeof(*items));
    if (!items) {
        strbuf_free(&s);
        return NULL;
    }
    for (size_t i = 0; i < nl; i++) {
        const char *key = meta->labels[i]->key ? meta->labels[i]->key : "";
        const char *value = meta->labels[i]->value ? meta->labels[i]->value : "";
        if (node_info__ignored(key))
            continue;
        size_t len = strlen(key) + strlen(value) + 8;
        if (!(items[k] = malloc(len)))
            goto fail;
        snprintf(items[k++], len, "l:%s=%s", key, value);
    }
    for (size_t i = 0; i < nt; i++) {
        const k8s_taint_t *t = spec->taints[i];
        const char *key = t->key ? t->key : "", *value = t->value ? t->value : "";
        const char *effect = t->effect ? t->effect : "";
        size_t len = strlen(key) + strlen(value) + strlen(effect) + 8;
        if (!(items[k] = malloc(len)))
            goto fail;
        snprintf(items[k++], len, "t:%s=%s:%s", key, value, effect);
    }
    qsort(items, k, sizeof(*items), cmp_str);
    for (size_t i = 0; i < k; i++)
        strbuf_printf(&s, "%s" SEP, items[i]);
    for (size_t i = 0; i < k; i++)
        free(items[i]);
    free(items);
    return strbuf_take(&s);

fail:
    for (size_t i = 0; i < k; i++)
        free(items[i]);
    free(items);
    strbuf_free(&s);
    return NULL;
}

/* Add one resource of a capacity or allocatable map to out (and the pod count to *pods,
 * when not NULL); what names the map in messages. A negative quantity is refused: a
 * node cannot offer less than nothing. */
static int node_info__resource(const char *what, const char *key, const k8s_quantity_t *quantity,
                               resources_t *out, int64_t *pods, frugal_err_t *err) {
    const char *q = quantity && quantity->string ? quantity->string : "0";
    frugal_err_t qerr = {0};
    int64_t v;
    key = key ? key : "";
    bool cpu = strcmp(key, K8S_RESOURCE_CPU) == 0;
    bool memory = strcmp(key, K8S_RESOURCE_MEMORY) == 0;
    bool gpu = strcmp(key, K8S_RESOURCE_NVIDIA_GPU) == 0 || strcmp(key, K8S_RESOURCE_AMD_GPU) == 0;
    bool count = pods != NULL && strcmp(key, K8S_RESOURCE_PODS) == 0;
    if (!cpu && !memory && !gpu && !count)
        return 0;
    int rc = cpu ? quantity_parse_milli(q, &v, &qerr) : quantity_parse_value(q, &v, &qerr);
    if (rc != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s %s: %s", what, key, qerr.msg);
    if (v < 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s %s: negative quantity \"%s\"", what, key, q);
    if (count)
        *pods = v;
    else if (cpu)
        out->cpu_milli = v;
    else if (memory)
        out->memory_bytes = v;
    else if (__builtin_add_overflow(out->gpu, v, &out->gpu))
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: GPU count overflows", what);
    return 0;
}

#define NODE_INFO_TEMPLATE "template node capacity"

int node_info_allocatable(const k8s_node_t *node, resources_t *out, frugal_err_t *err) {
    resources_t r = {0, 0, 0};
    const k8s_node_status_t *status = node->status;
    int rc = 0;
    if (status != NULL && status->n_allocatable > 0) {
        for (size_t i = 0; i < status->n_allocatable && rc == 0; i++)
            rc = node_info__resource("allocatable", status->allocatable[i]->key,
                                     status->allocatable[i]->value, &r, NULL, err);
    } else if (status != NULL) {
        for (size_t i = 0; i < status->n_capacity && rc == 0; i++)
            rc = node_info__resource("capacity", status->capacity[i]->key,
                                     status->capacity[i]->value, &r, NULL, err);
    }
    if (rc == 0)
        *out = r;
    return rc;
}

const char *node_info_label(const k8s_node_t *node, const char *key) {
    const k8s_object_meta_t *meta = node->metadata;
    for (size_t i = meta != NULL ? meta->n_labels : 0; i-- > 0;) /* a map: the last wins */
        if (meta->labels[i]->key != NULL && strcmp(meta->labels[i]->key, key) == 0)
            return meta->labels[i]->value != NULL ? meta->labels[i]->value : "";
    return NULL;
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

int node_info_decode(const uint8_t *data, size_t len, node_info_t *out, frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    k8s_node_t *node =
        (k8s_node_t *)pb_unpack(&k8s__io__api__core__v1__node__descriptor, len, data);
    if (!node)
        return frugal_err_set(err, FRUGAL_EINVAL, "template node: not a valid v1.Node (%zu bytes)",
                              len);

    node_info_t info = {0};
    int rc = 0;
    const k8s_object_meta_t *meta = node->metadata;
    const char *type = NULL, *zone = NULL;
    bool gpu_label = false;
    for (size_t i = 0; meta && i < meta->n_labels; i++) {
        const char *key = meta->labels[i]->key ? meta->labels[i]->key : "";
        const char *value = meta->labels[i]->value;
        if (strcmp(key, K8S_LABEL_INSTANCE_TYPE) == 0 && value && *value)
            type = value;
        else if (strcmp(key, K8S_LABEL_ZONE) == 0 && value && *value)
            zone = value;
        else if (strcmp(key, FRUGAL_GPU_LABEL) == 0)
            gpu_label = true;
    }
    const k8s_node_status_t *status = node->status;
    if (status && status->n_capacity) {
        for (size_t i = 0; i < status->n_capacity && rc == 0; i++)
            rc = node_info__resource(NODE_INFO_TEMPLATE, status->capacity[i]->key,
                                     status->capacity[i]->value, &info.capacity, &info.max_pods,
                                     err);
    } else if (status) {
        for (size_t i = 0; i < status->n_allocatable && rc == 0; i++)
            rc = node_info__resource(NODE_INFO_TEMPLATE, status->allocatable[i]->key,
                                     status->allocatable[i]->value, &info.capacity, &info.max_pods,
                                     err);
    }
    if (rc != 0)
        goto done;
    info.has_gpu = gpu_label || info.capacity.gpu > 0;
    info.name = strdup(meta && meta->name ? meta->name : "");
    info.instance_type = dup_or_null(type);
    info.zone = dup_or_null(zone);
    info.similarity_key = node_info__similarity_key(node, &info);
    if (!info.name || (type && !info.instance_type) || (zone && !info.zone) ||
        !info.similarity_key) {
        node_info_free(&info);
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory decoding a template node");
        goto done;
    }
    *out = info;
done:
    k8s__io__api__core__v1__node__free_unpacked(node, NULL);
    return rc;
}

void node_info_free(node_info_t *info) {
    if (!info)
        return;
    free(info->name);
    free(info->instance_type);
    free(info->zone);
    free(info->similarity_key);
    memset(info, 0, sizeof(*info));
}
