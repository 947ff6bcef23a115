/* Escalator's scale-up figures and CA's balanced split: see escalator.h. */
#include "escalator.h"

#include <math.h>
#include <string.h>

#include "instance_id.h"
#include "node_info.h"

/* Exact products: requests x 100 x nodes stays far inside 128 bits. */
typedef __int128 escalator_wide_t;

static escalator_wide_t escalator__ceil_div(escalator_wide_t a, escalator_wide_t b) {
    return a <= 0 ? 0 : a / b + (a % b != 0);
}

static int64_t escalator__clamp(escalator_wide_t v) {
    return v > INT64_MAX ? INT64_MAX : v < 0 ? 0 : (int64_t)v;
}

static void escalator__add(int64_t *acc, int64_t v) {
    if (__builtin_add_overflow(*acc, v, acc))
        *acc = INT64_MAX;
}

void escalator_group_init(escalator_group_t *g, int32_t threshold, bool scale_on_starve,
                          const resources_t *cached_allocatable) {
    memset(g, 0, sizeof(*g));
    g->threshold = threshold;
    g->scale_on_starve = scale_on_starve;
    if (cached_allocatable != NULL)
        g->node_allocatable = *cached_allocatable;
}

bool escalator_add_node(escalator_group_t *g, const resources_t *allocatable) {
    bool same = true;
    if (g->nodes == 0)
        g->node_allocatable = *allocatable;
    else if (allocatable->cpu_milli != g->node_allocatable.cpu_milli ||
             allocatable->memory_bytes != g->node_allocatable.memory_bytes)
        same = false;
    g->mixed_allocatable |= !same;
    g->nodes++;
    escalator__add(&g->capacity.cpu_milli, allocatable->cpu_milli);
    escalator__add(&g->capacity.memory_bytes, allocatable->memory_bytes);
    escalator__add(&g->capacity.gpu, allocatable->gpu);
    return same;
}

const char *escalator_missing_requests(const resources_t *request) {
    if (request->cpu_milli <= 0 && request->memory_bytes <= 0)
        return "no cpu and memory requests";
    if (request->cpu_milli <= 0)
        return "no cpu request";
    if (request->memory_bytes <= 0)
        return "no memory request";
    return NULL;
}

const char *escalator_add_pod(escalator_group_t *g, const resources_t *request, bool starving) {
    const char *missing = escalator_missing_requests(request);
    g->pods++;
    g->pods_without_requests += missing != NULL;
    g->starving |= starving;
    escalator__add(&g->requests.cpu_milli, request->cpu_milli);
    escalator__add(&g->requests.memory_bytes, request->memory_bytes);
    escalator__add(&g->requests.gpu, request->gpu);
    return missing;
}

double escalator_percent(int64_t requests, int64_t capacity) {
    if (requests <= 0)
        return 0;
    if (capacity <= 0)
        return INFINITY;
    return (double)requests / (double)capacity * 100.0;
}

int64_t escalator_delta_from_zero(const resources_t *requests, const resources_t *allocatable,
                                  int32_t threshold) {
    if (requests->cpu_milli <= 0 && requests->memory_bytes <= 0)
        return 0;
    if (allocatable->cpu_milli <= 0 || allocatable->memory_bytes <= 0 || threshold <= 0)
        return 1;
    escalator_wide_t cpu =
        escalator__ceil_div((escalator_wide_t)requests->cpu_milli * 100,
                            (escalator_wide_t)allocatable->cpu_milli * threshold);
    escalator_wide_t mem =
        escalator__ceil_div((escalator_wide_t)requests->memory_bytes * 100,
                            (escalator_wide_t)allocatable->memory_bytes * threshold);
    return escalator__clamp(cpu > mem ? cpu : mem);
}

/* ceil(nodes x (requests x 100 - threshold x capacity) / (threshold x capacity)), the
 * delta that brings requests / capacity down to the threshold; 0 below it. */
static escalator_wide_t escalator__delta(int64_t requests, int64_t capacity, int64_t nodes,
                                         int32_t threshold) {
    escalator_wide_t target = (escalator_wide_t)threshold * capacity;
    return escalator__ceil_div(((escalator_wide_t)requests * 100 - target) * nodes, target);
}

void escalator_scale_up(const escalator_group_t *g, int32_t max_size,
                        const autoprov_config_t *limits, const autoprov_totals_t *totals,
                        escalator_result_t *out) {
    memset(out, 0, sizeof(*out));
    const resources_t *req = &g->requests, *cap = &g->capacity;
    int64_t wanted;
    if (g->nodes == 0) {
        out->from_zero = req->cpu_milli > 0 || req->memory_bytes > 0;
        out->cpu_percent = out->from_zero ? INFINITY : 0;
        out->memory_percent = out->cpu_percent;
        wanted = escalator_delta_from_zero(req, &g->node_allocatable, g->threshold);
    } else {
        out->cpu_percent = escalator_percent(req->cpu_milli, cap->cpu_milli);
        out->memory_percent = escalator_percent(req->memory_bytes, cap->memory_bytes);
        /* The dominant resource, compared exactly: cpu_req/cpu_cap >= mem_req/mem_cap. A
         * resource with requests on no capacity needs no figure: one node more is a start. */
        if (cap->cpu_milli <= 0 || cap->memory_bytes <= 0) {
            wanted = isinf(out->cpu_percent) || isinf(out->memory_percent) ? 1 : 0;
        } else {
            bool cpu = (escalator_wide_t)req->cpu_milli * cap->memory_bytes >=
                       (escalator_wide_t)req->memory_bytes * cap->cpu_milli;
            wanted = escalator__clamp(
                cpu ? escalator__delta(req->cpu_milli, cap->cpu_milli, g->nodes, g->threshold)
                    : escalator__delta(req->memory_bytes, cap->memory_bytes, g->nodes,
                                       g->threshold));
        }
    }
    out->used_percent =
        out->cpu_percent > out->memory_percent ? out->cpu_percent : out->memory_percent;
    if (g->scale_on_starve && g->starving && wanted < 1) {
        wanted = 1;
        out->starved = true;
    }
    out->delta_wanted = wanted;

    int64_t room = INT64_MAX;
    int64_t current = g->nodes > INT32_MAX ? INT32_MAX : g->nodes;
    if (max_size >= 0)
        room = max_size > current ? max_size - current : 0;
    if (limits != NULL && totals != NULL) {
        int32_t bound = max_size >= 0 ? max_size : INT32_MAX;
        int64_t limit_room =
            autoprov_max_size(limits, totals, &g->node_allocatable, (int32_t)current, bound) -
            current;
        if (limit_room < room)
            room = limit_room;
    }
    out->delta = wanted < room ? wanted : room;
    out->capped = out->delta < wanted;

    resources_t after = *cap;
    escalator__add(&after.cpu_milli,
                   escalator__clamp((escalator_wide_t)out->delta * g->node_allocatable.cpu_milli));
    escalator__add(&after.memory_bytes, escalator__clamp((escalator_wide_t)out->delta *
                                                         g->node_allocatable.memory_bytes));
    out->cpu_after = escalator_percent(req->cpu_milli, after.cpu_milli);
    out->memory_after = escalator_percent(req->memory_bytes, after.memory_bytes);
}

bool escalator_in_set(const char *const *keys, size_t i, size_t chosen) {
    if (i == chosen)
        return true;
    return keys != NULL && keys[i] != NULL && keys[chosen] != NULL &&
           strcmp(keys[i], keys[chosen]) == 0;
}

/* Room of group i above size: INT64_MAX without a bound. */
static int64_t escalator__room(const int64_t *max_sizes, size_t i, int64_t size) {
    if (max_sizes == NULL || max_sizes[i] < 0)
        return INT64_MAX;
    return max_sizes[i] > size ? max_sizes[i] - size : 0;
}

int64_t escalator_split(const char *const *keys, const int64_t *sizes, const int64_t *max_sizes,
                        size_t n, size_t chosen, int64_t add, int64_t *out) {
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    if (chosen >= n || add <= 0)
        return 0;
    /* Water filling, equivalent to placing one node at a time on the smallest group
     * below its max with ties to the lowest index: raise the groups at the lowest level
     * together to the next level (the next larger size, or the first max reached), and
     * when the nodes left do not suffice, share them out in index order. */
    int64_t left = add;
    while (left > 0) {
        int64_t level = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            int64_t size = sizes[i] + out[i];
            if (escalator_in_set(keys, i, chosen) && escalator__room(max_sizes, i, size) > 0 &&
                size < level)
                level = size;
        }
        if (level == INT64_MAX)
            break; /* every group of the set is at its max */
        int64_t members = 0, next = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            if (!escalator_in_set(keys, i, chosen))
                continue;
            int64_t size = sizes[i] + out[i];
            int64_t room = escalator__room(max_sizes, i, size);
            if (room == 0)
                continue;
            if (size == level) {
                members++;
                if (room != INT64_MAX && level + room < next)
                    next = level + room;
            } else if (size < next) {
                next = size;
            }
        }
        escalator_wide_t cost = (escalator_wide_t)members * ((escalator_wide_t)next - level);
        int64_t each = cost <= left ? next - level : left / members;
        int64_t extra = cost <= left ? 0 : left % members;
        for (size_t i = 0; i < n; i++) {
            int64_t size = sizes[i] + out[i];
            if (!escalator_in_set(keys, i, chosen) || size != level ||
                escalator__room(max_sizes, i, size) == 0)
                continue;
            int64_t give = each + (extra > 0);
            extra -= extra > 0;
            out[i] += give;
            left -= give;
        }
    }
    return add - left;
}

/* The index of the configured group called id (length len), or -1. */
static long escalator__group_index(const frugal_config_t *cfg, const char *id, size_t len) {
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const char *gid = cfg->node_groups[i].spec.id;
        if (strlen(gid) == len && strncmp(gid, id, len) == 0)
            return (long)i;
    }
    return -1;
}

/* Whether node carries the machine type, zone and labels of g. */
static bool escalator__same_shape(const node_group_config_t *g, const k8s_node_t *node) {
    const char *type = node_info_label(node, K8S_LABEL_INSTANCE_TYPE);
    if (type == NULL || strcmp(type, g->spec.machine_type) != 0)
        return false;
    const char *zone = node_info_label(node, K8S_LABEL_ZONE);
    if (g->spec.zone != NULL && (zone == NULL || strcmp(zone, g->spec.zone) != 0))
        return false;
    for (size_t i = 0; i < g->spec.labels.count; i++) {
        const char *v = node_info_label(node, g->spec.labels.items[i].key);
        if (v == NULL || strcmp(v, g->spec.labels.items[i].value) != 0)
            return false;
    }
    return true;
}

long escalator_group_of_node(const frugal_config_t *cfg, const k8s_node_t *node,
                             escalator_claim_t *how) {
    escalator_claim_t rule = ESCALATOR_CLAIM_NONE;
    long found = -1;
    const char *label = node_info_label(node, FRUGAL_LABEL_NODE_GROUP);
    if (label != NULL && (found = escalator__group_index(cfg, label, strlen(label))) >= 0)
        rule = ESCALATOR_CLAIM_LABEL;
    const char *pid = node->spec != NULL ? node->spec->providerid : NULL;
    size_t len;
    const char *id = found < 0 ? instance_id_group(pid, &len) : NULL;
    if (id != NULL && (found = escalator__group_index(cfg, id, len)) >= 0)
        rule = ESCALATOR_CLAIM_PROVIDER_ID;
    for (size_t i = 0; found < 0 && i < cfg->node_groups_count; i++) {
        if (escalator__same_shape(&cfg->node_groups[i], node)) {
            found = (long)i;
            rule = ESCALATOR_CLAIM_TYPE_ZONE;
        }
    }
    if (how != NULL)
        *how = rule;
    return found;
}

const char *escalator_claim_name(escalator_claim_t how) {
    switch (how) {
    case ESCALATOR_CLAIM_LABEL:
        return "label";
    case ESCALATOR_CLAIM_PROVIDER_ID:
        return "provider id";
    case ESCALATOR_CLAIM_TYPE_ZONE:
        return "instance type and zone";
    case ESCALATOR_CLAIM_NONE:
        break;
    }
    return "none";
}
