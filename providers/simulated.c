/* The simulated provider: machines exist only as records. An instance is creating for
 * boot_seconds after it was requested, then running; a deleted instance is deleting for
 * boot_seconds, then gone. Nothing blocks, nothing fails but allocation, which makes it
 * the backend of the demo, the unit tests and the integration tests. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"

typedef struct simulated {
    provider_t base; /* first: a provider_t * is a simulated_t * */
    int64_t boot_ms;
} simulated_t;

static int simulated_create(const frugal_config_t *cfg, provider_t **out, frugal_err_t *err) {
    simulated_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory creating the simulated provider");
    s->base.ops = &provider_simulated_ops;
    s->boot_ms = cfg->boot_seconds > 0 ? cfg->boot_seconds * 1000 : 0;
    *out = &s->base;
    return 0;
}

static void simulated_destroy(provider_t *p) {
    free(p);
}

static int simulated_increase(provider_t *p, group_t *g, int32_t delta, int64_t now_ms,
                              frugal_err_t *err) {
    (void)p;
    if (delta <= 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be positive", (int)delta);
    if ((int64_t)g->target_size + delta > INT32_MAX)
        return frugal_err_set(err, FRUGAL_EINVAL, "target size of %s would overflow", g->spec.id);
    size_t n = (size_t)delta;
    size_t count = g->instances_count + n;
    instance_t *added = calloc(n, sizeof(*added));
    if (added == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (instance_init_new(&added[i], g, g->next_seq + i, now_ms) != 0)
            goto fail;
    }
    instance_t *grown = realloc(g->instances, count * sizeof(*grown));
    if (grown == NULL)
        goto fail;
    memcpy(&grown[g->instances_count], added, n * sizeof(*added));
    free(added);
    g->instances = grown;
    g->instances_count = count;
    g->next_seq += n;
    g->target_size += delta;
    return 0;

fail:
    for (size_t i = 0; i < n; i++)
        free(added[i].id);
    free(added);
    return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
}

static int simulated_delete_instances(provider_t *p, group_t *g, const size_t *indexes, size_t n,
                                      int64_t now_ms, frugal_err_t *err) {
    (void)p;
    int rc = group_check_delete(g, indexes, n, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        instance_t *in = &g->instances[indexes[i]];
        in->state = INSTANCE_DELETING;
        in->state_since_ms = now_ms;
    }
    g->target_size -= (int32_t)n;
    return 0;
}

static int simulated_decrease_target(provider_t *p, group_t *g, int32_t delta, int64_t now_ms,
                                     frugal_err_t *err) {
    (void)now_ms; /* its requests make nothing until they run */
    (void)p;
    size_t drop = 0;
    int rc = group_check_decrease(g, delta, &drop, err);
    if (rc != 0)
        return rc;
    group_drop_creating(g, drop);
    g->target_size += delta;
    return 0;
}

static int simulated_refresh(provider_t *p, group_t *g, int64_t now_ms, bool *changed,
                             frugal_err_t *err) {
    (void)err;
    const simulated_t *s = (const simulated_t *)p;
    size_t w = 0;
    for (size_t r = 0; r < g->instances_count; r++) {
        instance_t *in = &g->instances[r];
        bool due = now_ms - in->state_since_ms >= s->boot_ms;
        if (due && in->state == INSTANCE_CREATING && in->error_code == NULL) {
            in->state = INSTANCE_RUNNING;
            in->state_since_ms = now_ms;
            *changed = true;
        } else if (due && in->state == INSTANCE_DELETING) {
            instance_clear(in);
            *changed = true;
            continue;
        }
        g->instances[w++] = *in;
    }
    g->instances_count = w;
    return 0;
}

static int simulated_create_group(provider_t *p, group_t *g, frugal_err_t *err) {
    (void)p;
    (void)err;
    g->exists = true;
    return 0;
}

static int simulated_delete_group(provider_t *p, group_t *g, frugal_err_t *err) {
    (void)p;
    (void)err;
    g->exists = false;
    return 0;
}

const provider_ops_t provider_simulated_ops = {
    .kind = "simulated",
    .create = simulated_create,
    .destroy = simulated_destroy,
    .increase = simulated_increase,
    .delete_instances = simulated_delete_instances,
    .decrease_target = simulated_decrease_target,
    .refresh = simulated_refresh,
    .create_group = simulated_create_group,
    .delete_group = simulated_delete_group,
};
