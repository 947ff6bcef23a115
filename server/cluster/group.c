/* The data model: see group.h. */
#include "group.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance_id.h"

void instance_clear(instance_t *inst) {
    free(inst->id);
    free(inst->error_code);
    free(inst->error_message);
    memset(inst, 0, sizeof(*inst));
}

int instance_copy(instance_t *dst, const instance_t *src) {
    *dst = *src;
    dst->id = NULL;
    dst->error_code = NULL;
    dst->error_message = NULL;
    if (labels_strdup(&dst->id, src->id) != 0 ||
        labels_strdup(&dst->error_code, src->error_code) != 0 ||
        labels_strdup(&dst->error_message, src->error_message) != 0) {
        instance_clear(dst);
        return FRUGAL_ENOMEM;
    }
    return 0;
}

int instance_init_new(instance_t *inst, const group_t *g, uint64_t seq, int64_t now_ms) {
    /* Sized to fit: a truncated name would give two instances one id. */
    int len = snprintf(NULL, 0, "frugal://%s/%s-%" PRIu64, g->spec.id, g->spec.id, seq);
    char *id = malloc((size_t)len + 1);
    if (id == NULL)
        return FRUGAL_ENOMEM;
    snprintf(id, (size_t)len + 1, "frugal://%s/%s-%" PRIu64, g->spec.id, g->spec.id, seq);
    inst->id = id;
    inst->state = INSTANCE_CREATING;
    inst->state_since_ms = now_ms;
    return 0;
}

int group_check_decrease(const group_t *g, int32_t delta, size_t *drop, frugal_err_t *err) {
    if (delta >= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be negative", (int)delta);
    *drop = (size_t)(-(int64_t)delta);
    size_t creating = 0;
    for (size_t i = 0; i < g->instances_count; i++)
        creating += g->instances[i].state == INSTANCE_CREATING;
    if (creating < *drop)
        return frugal_err_set(err, FRUGAL_EPRECOND, "only %zu instances of %s are not running yet",
                              creating, g->spec.id);
    return 0;
}

int group_check_delete(const group_t *g, const size_t *indexes, size_t n, frugal_err_t *err) {
    for (size_t i = 0; i < n; i++) {
        if (indexes[i] >= g->instances_count)
            return frugal_err_set(err, FRUGAL_EINVAL, "instance index %zu out of range",
                                  indexes[i]);
    }
    if ((int64_t)n > g->target_size)
        return frugal_err_set(err, FRUGAL_EINVAL, "cannot delete %zu of %d instances", n,
                              (int)g->target_size);
    return 0;
}

void group_drop_creating(group_t *g, size_t drop) {
    /* Newest first: walk from the end, compacting the survivors towards the end. */
    size_t w = g->instances_count;
    size_t left = drop;
    for (size_t r = g->instances_count; r-- > 0;) {
        instance_t *in = &g->instances[r];
        if (left > 0 && in->state == INSTANCE_CREATING) {
            instance_clear(in);
            left--;
            continue;
        }
        g->instances[--w] = *in;
    }
    memmove(g->instances, &g->instances[w], (g->instances_count - w) * sizeof(instance_t));
    g->instances_count -= drop - left;
}

void group_clear(group_t *g) {
    group_spec_clear(&g->spec);
    for (size_t i = 0; i < g->instances_count; i++)
        instance_clear(&g->instances[i]);
    free(g->instances);
    memset(g, 0, sizeof(*g));
}

int group_copy(group_t *dst, const group_t *src) {
    *dst = *src;
    dst->instances = NULL;
    dst->instances_count = 0;
    if (group_spec_copy(&dst->spec, &src->spec) != 0)
        goto fail;
    if (src->instances_count > 0) {
        dst->instances = calloc(src->instances_count, sizeof(instance_t));
        if (dst->instances == NULL)
            goto fail;
        for (size_t i = 0; i < src->instances_count; i++) {
            if (instance_copy(&dst->instances[i], &src->instances[i]) != 0)
                goto fail;
            dst->instances_count = i + 1;
        }
    }
    return 0;
fail:
    group_clear(dst);
    return FRUGAL_ENOMEM;
}

int group_new(const group_spec_t *spec, group_t **out) {
    *out = NULL;
    group_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return FRUGAL_ENOMEM;
    if (group_spec_copy(&g->spec, spec) != 0) {
        free(g);
        return FRUGAL_ENOMEM;
    }
    g->next_seq = 1;
    *out = g;
    return 0;
}

int group_dup(const group_t *g, group_t **out, frugal_err_t *err) {
    *out = NULL;
    group_t *copy = malloc(sizeof(*copy));
    if (copy == NULL || group_copy(copy, g) != 0) {
        free(copy);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory copying node group %s",
                              g->spec.id);
    }
    *out = copy;
    return 0;
}

void group_free(group_t *g) {
    if (g == NULL)
        return;
    group_clear(g);
    free(g);
}

const char *instance_name_in_group(const char *id, const char *group) {
    size_t len;
    const char *in = instance_id_group(id, &len);
    return in != NULL && strlen(group) == len && strncmp(in, group, len) == 0 ? in + len + 1 : "";
}
