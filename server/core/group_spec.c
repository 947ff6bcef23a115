/* A node group's spec: deep copy and release (group_spec.h). */
#include "group_spec.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

void group_spec_clear(group_spec_t *spec) {
    free(spec->id);
    free(spec->machine_type);
    free(spec->zone);
    kv_list_clear(&spec->labels);
    taint_list_clear(&spec->taints);
    kv_list_clear(&spec->extra_resources);
    memset(spec, 0, sizeof(*spec));
}

int group_spec_copy(group_spec_t *dst, const group_spec_t *src) {
    memset(dst, 0, sizeof(*dst));
    dst->spot = src->spot;
    dst->spot_price = src->spot_price;
    if (labels_strdup(&dst->id, src->id) != 0 ||
        labels_strdup(&dst->machine_type, src->machine_type) != 0 ||
        labels_strdup(&dst->zone, src->zone) != 0 ||
        kv_list_copy(&dst->labels, &src->labels) != 0 ||
        taint_list_copy(&dst->taints, &src->taints) != 0 ||
        kv_list_copy(&dst->extra_resources, &src->extra_resources) != 0) {
        group_spec_clear(dst);
        return FRUGAL_ENOMEM;
    }
    return 0;
}
