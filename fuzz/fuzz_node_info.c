/* libFuzzer target: node_info_decode on arbitrary bytes (the serialized template v1.Node
 * of NodeGroupTemplateNodeInfo and the expander's node infos). Checks:
 * - success, or FRUGAL_EINVAL / FRUGAL_ENOMEM with a message and *out left empty;
 * - on success: a name and a similarity key, an instance type and zone that are NULL or
 *   non-empty, the key starts with the instance type (or the capacity when there is
 *   none), has_gpu whenever the capacity counts GPUs;
 * - the result depends on the node, not on its encoding: the node re-serialized by
 *   protobuf-c, and the same node with its labels and taints in reverse order, decode
 *   to the same info. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "k8s.h"
#include "node_info.h"
#include "pb_unpack.h"

static bool str_eq(const char *a, const char *b) {
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool info_eq(const node_info_t *a, const node_info_t *b) {
    return str_eq(a->name, b->name) && str_eq(a->instance_type, b->instance_type) &&
           str_eq(a->zone, b->zone) && str_eq(a->similarity_key, b->similarity_key) &&
           a->capacity.cpu_milli == b->capacity.cpu_milli &&
           a->capacity.memory_bytes == b->capacity.memory_bytes &&
           a->capacity.gpu == b->capacity.gpu && a->has_gpu == b->has_gpu;
}

static void check_success(const node_info_t *info) {
    if (info->name == NULL || info->similarity_key == NULL)
        __builtin_trap();
    if ((info->instance_type != NULL && info->instance_type[0] == '\0') ||
        (info->zone != NULL && info->zone[0] == '\0'))
        __builtin_trap();
    if (info->capacity.gpu > 0 && !info->has_gpu)
        __builtin_trap();
    char prefix[128];
    if (info->instance_type != NULL)
        snprintf(prefix, sizeof(prefix), "type=");
    else
        snprintf(prefix, sizeof(prefix), "capacity=%" PRId64 "/%" PRId64 "/%" PRId64 "\x1f",
                 info->capacity.cpu_milli, info->capacity.memory_bytes, info->capacity.gpu);
    if (strncmp(info->similarity_key, prefix, strlen(prefix)) != 0)
        __builtin_trap();
    if (info->instance_type != NULL &&
        strncmp(info->similarity_key + 5, info->instance_type, strlen(info->instance_type)) != 0)
        __builtin_trap();
}

/* Decode node (re-serialized) and require the same outcome as first. */
static void check_same(const k8s_node_t *node, int rc0, const node_info_t *first) {
    size_t len = k8s__io__api__core__v1__node__get_packed_size(node);
    uint8_t *bytes = malloc(len > 0 ? len : 1);
    if (bytes == NULL)
        return;
    k8s__io__api__core__v1__node__pack(node, bytes);
    /* protobuf-c reads a field number 0 spelled as a two-byte tag (0x85 0x00) as an
     * unknown field, writes it back as 0x05 and then refuses that: not a frugal matter. */
    k8s_node_t *check = k8s__io__api__core__v1__node__unpack(NULL, len, bytes);
    if (check == NULL) {
        free(bytes);
        return;
    }
    k8s__io__api__core__v1__node__free_unpacked(check, NULL);
    node_info_t again;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = node_info_decode(bytes, len, &again, &err);
    free(bytes);
    if (rc == FRUGAL_ENOMEM || rc0 == FRUGAL_ENOMEM) {
        node_info_free(&again);
        return;
    }
    if ((rc == 0) != (rc0 == 0))
        __builtin_trap();
    if (rc == 0 && !info_eq(first, &again))
        __builtin_trap();
    node_info_free(&again);
}

static void reverse(void **items, size_t n) {
    for (size_t i = 0; i < n / 2; i++) {
        void *t = items[i];
        items[i] = items[n - 1 - i];
        items[n - 1 - i] = t;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    node_info_t info;
    frugal_err_t err;
    frugal_err_clear(&err);
    memset(&info, 0xa5, sizeof(info));
    int rc = node_info_decode(data, size, &info, &err);
    if (rc != 0) {
        static const node_info_t empty;
        if ((rc != FRUGAL_EINVAL && rc != FRUGAL_ENOMEM) || err.code != rc || err.msg[0] == '\0' ||
            memcmp(&info, &empty, sizeof(info)) != 0)
            __builtin_trap();
    } else {
        check_success(&info);
    }

    /* The same node, encoded anew: pb_unpack (protobuf-c, groups skipped) accepted these
     * bytes iff decode got past the unpack. */
    k8s_node_t *node =
        (k8s_node_t *)pb_unpack(&k8s__io__api__core__v1__node__descriptor, size, data);
    if (node != NULL) {
        check_same(node, rc, &info);
        if (node->metadata != NULL)
            reverse((void **)node->metadata->labels, node->metadata->n_labels);
        if (node->spec != NULL)
            reverse((void **)node->spec->taints, node->spec->n_taints);
        /* Labels (and the capacity map) may repeat a key; the last one wins and
         * reversing changes which, so only check nodes whose keys are distinct. */
        bool distinct = true;
        const k8s_object_meta_t *m = node->metadata;
        for (size_t i = 0; m != NULL && i < m->n_labels && distinct; i++)
            for (size_t j = i + 1; j < m->n_labels && distinct; j++)
                distinct = !str_eq(m->labels[i]->key, m->labels[j]->key);
        if (distinct)
            check_same(node, rc, &info);
        k8s__io__api__core__v1__node__free_unpacked(node, NULL);
    } else if (rc == 0) {
        __builtin_trap();
    }
    node_info_free(&info);
    return 0;
}
