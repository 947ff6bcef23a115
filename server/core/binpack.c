/* First fit onto nodes of one shape: see binpack.h. */
#include "binpack.h"

#include <stdlib.h>

#include "errors.h"

double binpack_size(const resources_t *pod, const resources_t *node) {
    return (node->cpu_milli > 0 ? (double)pod->cpu_milli / (double)node->cpu_milli : 0) +
           (node->memory_bytes > 0 ? (double)pod->memory_bytes / (double)node->memory_bytes : 0);
}

static int binpack__key_cmp(const void *a, const void *b) {
    const binpack_key_t *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1; /* decreasing */
    return (x->at > y->at) - (x->at < y->at);
}

void binpack_sort_largest_first(binpack_key_t *keys, size_t count) {
    qsort(keys, count, sizeof(*keys), binpack__key_cmp);
}

size_t binpack_first_fit(const resources_t *pods, const size_t *order, size_t count,
                         const resources_t *node, int64_t max_pods, resources_t *room,
                         int64_t *slots) {
    return binpack_first_fit_nodes(pods, order, count, node, max_pods, room, slots, NULL);
}

size_t binpack_first_fit_nodes(const resources_t *pods, const size_t *order, size_t count,
                               const resources_t *node, int64_t max_pods, resources_t *room,
                               int64_t *slots, size_t *node_of) {
    size_t used = 0;
    for (size_t k = 0; k < count; k++) {
        const resources_t *p = &pods[order[k]];
        size_t b = 0;
        while (b < used &&
               (room[b].cpu_milli < p->cpu_milli || room[b].memory_bytes < p->memory_bytes ||
                room[b].gpu < p->gpu || slots[b] == 0))
            b++;
        if (node_of != NULL)
            node_of[order[k]] = b;
        if (b == used) {
            room[used] = *node;
            slots[used++] = max_pods > 0 ? max_pods : -1;
        }
        room[b].cpu_milli -= p->cpu_milli;
        room[b].memory_bytes -= p->memory_bytes;
        room[b].gpu -= p->gpu;
        if (slots[b] > 0)
            slots[b]--;
    }
    return used;
}

int binpack_largest_first(const resources_t *pods, size_t count, const resources_t *node,
                          int64_t max_pods, size_t *nodes, size_t *node_of) {
    binpack_key_t *keys = calloc(count + 1, sizeof(*keys));
    size_t *order = calloc(count + 1, sizeof(*order));
    resources_t *room = calloc(count + 1, sizeof(*room));
    int64_t *slots = calloc(count + 1, sizeof(*slots));
    int rc = keys != NULL && order != NULL && room != NULL && slots != NULL ? 0 : FRUGAL_ENOMEM;
    if (rc == 0) {
        for (size_t k = 0; k < count; k++)
            keys[k] = (binpack_key_t){binpack_size(&pods[k], node), k};
        binpack_sort_largest_first(keys, count);
        for (size_t k = 0; k < count; k++)
            order[k] = keys[k].at;
        *nodes = binpack_first_fit_nodes(pods, order, count, node, max_pods, room, slots, node_of);
    }
    free(keys), free(order), free(room), free(slots);
    return rc;
}
