/* Proposals from pending pods: see propose.h. */
#include "propose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprov.h"
#include "binpack.h"
#include "escalator.h"
#include "fit.h"
#include "group_rules.h"
#include "pod.h"
#include "pricing.h"
#include "pb_unpack.h"
#include "template.h"

#define PROPOSE_DEFAULT_EFFECT "NoSchedule"

/* ------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------- */

static const char *propose__s(const char *s) {
    return s != NULL ? s : "";
}

/* ------------------------------------------------------------------------------------
 * Pods
 * ---------------------------------------------------------------------------------- */

/* A toleration asks for a group tainted by its key unless the key is a wildcard or one
 * of Kubernetes' own condition taints. */
static bool propose__custom_key(const char *key) {
    return key != NULL && key[0] != '\0' && strncmp(key, "node.kubernetes.io/", 19) != 0 &&
           strncmp(key, "node.alpha.kubernetes.io/", 25) != 0;
}

void propose_pod_clear(propose_pod_t *p) {
    free(p->name);
    free(p->affinity);
    kv_list_clear(&p->selector);
    taint_list_clear(&p->taints);
    memset(p, 0, sizeof(*p));
}

/* Add a selector pin; a second, different value for a key makes the pod impossible, and
 * so does a key or value no node label can have (no group could ever carry it). */
static int propose__pin(propose_pod_t *p, const char *key, const char *value) {
    if (group_rules_label(key, value, true, NULL, 0) != GROUP_RULE_OK) {
        p->impossible = true;
        return 0;
    }
    int rc = kv_list_put(&p->selector, key, value);
    if (rc == 1) {
        p->impossible = true;
        return 0;
    }
    return rc;
}

/* Whether the resources spec asks for beyond cpu, memory and GPUs fit a proposed
 * group's template node (template.c): its ephemeral storage, and no extended resource
 * or hugepages (a proposal carries none). A resource template.c gives every node must
 * be added here too. */
static bool propose__named_resources_fit(const k8s_pod_spec_t *spec) {
    k8s_quantity_t storage = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    storage.string = TEMPLATE_EPHEMERAL_STORAGE;
    K8s__Io__Api__Core__V1__NodeStatus__AllocatableEntry entry =
        K8S__IO__API__CORE__V1__NODE_STATUS__ALLOCATABLE_ENTRY__INIT;
    entry.key = K8S_RESOURCE_EPHEMERAL_STORAGE;
    entry.value = &storage;
    K8s__Io__Api__Core__V1__NodeStatus__AllocatableEntry *entries[] = {&entry};
    k8s_node_status_t status = K8S__IO__API__CORE__V1__NODE_STATUS__INIT;
    status.n_allocatable = 1;
    status.allocatable = entries;
    k8s_node_t node = K8S__IO__API__CORE__V1__NODE__INIT;
    node.status = &status;
    return fit_named_resources(spec, &node, NULL, 0);
}

int propose_pod_from_k8s(const k8s_pod_t *pod, propose_pod_t *p, frugal_err_t *err) {
    memset(p, 0, sizeof(*p));
    char name[512];
    int rc = pod_effective_request(pod, &p->request, err);
    if (rc != 0)
        return rc;
    p->name = strdup(pod_format_name(pod, name, sizeof(name)));
    if (p->name == NULL)
        goto nomem;
    p->lifetime = pod_lifetime(pod);
    p->created_ms = pod_created_ms(pod);
    p->identity = pod_identity(pod);
    const k8s_pod_spec_t *spec = pod->spec;
    if (spec == NULL)
        return 0;
    if (!propose__named_resources_fit(spec))
        p->impossible = true;
    for (size_t i = 0; i < spec->n_nodeselector; i++) {
        if (spec->nodeselector[i]->key == NULL)
            continue;
        if (propose__pin(p, spec->nodeselector[i]->key, propose__s(spec->nodeselector[i]->value)) !=
            0)
            goto nomem;
    }
    /* Required node affinity: terms are ORed, so only a single term pins anything. */
    const K8s__Io__Api__Core__V1__NodeSelector *req =
        spec->affinity != NULL && spec->affinity->nodeaffinity != NULL
            ? spec->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution
            : NULL;
    bool pins_say_all = req == NULL || req->n_nodeselectorterms == 0;
    if (req != NULL && req->n_nodeselectorterms == 1) {
        const K8s__Io__Api__Core__V1__NodeSelectorTerm *term = req->nodeselectorterms[0];
        pins_say_all = term->n_matchfields == 0;
        for (size_t i = 0; i < term->n_matchexpressions; i++) {
            const K8s__Io__Api__Core__V1__NodeSelectorRequirement *e = term->matchexpressions[i];
            if (e->key == NULL || e->operator_ == NULL || strcmp(e->operator_, "In") != 0 ||
                e->n_values != 1) {
                pins_say_all = false;
                continue;
            }
            if (propose__pin(p, e->key, propose__s(e->values[0])) != 0)
                goto nomem;
        }
    }
    if (!pins_say_all) {
        p->affinity_len = k8s__io__api__core__v1__node_selector__get_packed_size(req);
        if ((p->affinity = malloc(p->affinity_len > 0 ? p->affinity_len : 1)) == NULL)
            goto nomem;
        k8s__io__api__core__v1__node_selector__pack(req, p->affinity);
    }
    for (size_t i = 0; i < spec->n_tolerations; i++) {
        const k8s_toleration_t *t = spec->tolerations[i];
        if (!propose__custom_key(t->key))
            continue;
        bool exists = t->operator_ != NULL && strcmp(t->operator_, "Exists") == 0;
        const char *effect =
            t->effect != NULL && t->effect[0] != '\0' ? t->effect : PROPOSE_DEFAULT_EFFECT;
        /* A toleration of a taint no node can carry asks for nothing a group could
         * offer: the pod is served as if it did not have it. */
        if (group_rules_taint(t->key, exists ? NULL : t->value, effect, NULL, 0) != GROUP_RULE_OK)
            continue;
        if (taint_list_put(&p->taints, t->key, exists ? "" : propose__s(t->value), effect) != 0)
            goto nomem;
    }
    return 0;
nomem:
    propose_pod_clear(p);
    return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
}

int propose_pod_decode(const uint8_t *data, size_t len, propose_pod_t *p, frugal_err_t *err) {
    memset(p, 0, sizeof(*p));
    k8s_pod_t *pod = (k8s_pod_t *)pb_unpack(&k8s__io__api__core__v1__pod__descriptor, len, data);
    if (pod == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "pod: %zu bytes are not a valid v1.Pod", len);
    int rc = propose_pod_from_k8s(pod, p, err);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * Machine types and well-known labels
 * ---------------------------------------------------------------------------------- */

/* What a group of one machine type can offer a selector. */
typedef struct propose_type {
    const machine_type_t *mt;
    char *const *zones;
    size_t zones_count;
} propose_type_t;

/* A flat view of a label set under construction: borrowed key/value pointers, sorted. */
typedef struct propose_set {
    const kv_t **items;
    size_t count;
} propose_set_t;

static const char *propose__set_get(const propose_set_t *s, const char *key) {
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i]->key, key) == 0)
            return s->items[i]->value;
    return NULL;
}

/* The value of key in a ∪ b (a wins; the caller checked they agree), NULL when absent. */
static const char *propose__get2(const propose_set_t *a, const kv_list_t *b, const char *key) {
    const char *v = a != NULL ? propose__set_get(a, key) : NULL;
    if (v == NULL && b != NULL) {
        bool found;
        size_t at = kv_list_find(b, key, &found);
        if (found)
            v = b->items[at].value;
    }
    return v;
}

/* A further test of a candidate zone (the pods' affinity); NULL accepts any. */
typedef struct propose_zone_test {
    bool (*holds)(const void *ctx, const char *zone);
    const void *ctx;
} propose_zone_test_t;

/* Whether a node of type t can carry the well-known labels of a ∪ b, and the zone such
 * a group gets: the first allowed zone that passes test (borrowed from the config; NULL
 * when no zone is configured). */
static bool propose__resolve(const propose_type_t *t, const propose_set_t *a, const kv_list_t *b,
                             const propose_zone_test_t *test, const char **zone_out) {
    const machine_type_t *mt = t->mt;
    const char *v;
    if ((v = propose__get2(a, b, K8S_LABEL_INSTANCE_TYPE)) != NULL && strcmp(v, mt->name) != 0)
        return false;
    static const char *const fixed[][2] = {{K8S_LABEL_OS, "linux"},
                                           {K8S_LABEL_OS_BETA, "linux"},
                                           {K8S_LABEL_ARCH, "amd64"},
                                           {K8S_LABEL_ARCH_BETA, "amd64"}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        if ((v = propose__get2(a, b, fixed[i][0])) != NULL && strcmp(v, fixed[i][1]) != 0)
            return false;
    }
    if (propose__get2(a, b, K8S_LABEL_HOSTNAME) != NULL)
        return false;
    if ((v = propose__get2(a, b, FRUGAL_GPU_LABEL)) != NULL &&
        (mt->gpu <= 0 || mt->gpu_type == NULL || strcmp(v, mt->gpu_type) != 0))
        return false;
    const char *zone = propose__get2(a, b, K8S_LABEL_ZONE);
    const char *region = propose__get2(a, b, K8S_LABEL_REGION);
    const char *chosen = NULL;
    char buf[256];
    for (size_t i = 0; i < t->zones_count && chosen == NULL; i++) {
        if (zone != NULL && strcmp(zone, t->zones[i]) != 0)
            continue;
        if (region != NULL &&
            strcmp(region, template_region_of_zone(t->zones[i], buf, sizeof(buf))) != 0)
            continue;
        if (test != NULL && !test->holds(test->ctx, t->zones[i]))
            continue;
        chosen = t->zones[i];
    }
    if (chosen == NULL && (zone != NULL || region != NULL || t->zones_count > 0))
        return false;
    if (t->zones_count == 0 && test != NULL && !test->holds(test->ctx, NULL))
        return false;
    if (zone_out != NULL)
        *zone_out = chosen;
    return true;
}

/* Whether a pod's request fits one node of type mt (a new node: nothing runs there yet). */
static bool propose__fits(const machine_type_t *mt, const resources_t *r) {
    resources_t allocatable = {mt->cpu_milli, mt->memory_bytes, mt->gpu};
    return fit_resources(r, &allocatable, NULL, 0);
}

/* Whether the required node affinity aff (a serialized v1.NodeSelector) holds on the
 * template node of a group of type t in zone with set's labels. */
static bool propose__affinity_holds(const propose_type_t *t, const propose_set_t *set,
                                    const char *zone, const uint8_t *aff, size_t aff_len) {
    group_spec_t spec;
    memset(&spec, 0, sizeof(spec));
    spec.id = "proposal";
    bool holds = false;
    uint8_t *bytes = NULL;
    size_t len = 0;
    k8s_node_t *node = NULL;
    K8s__Io__Api__Core__V1__NodeSelector *sel = NULL;
    if (zone != NULL && (spec.zone = strdup(zone)) == NULL)
        goto done;
    for (size_t i = 0; i < set->count; i++)
        if (group_rules_label(set->items[i]->key, NULL, false, NULL, 0) != GROUP_RULE_RESERVED &&
            kv_list_put(&spec.labels, set->items[i]->key, set->items[i]->value) < 0)
            goto done;
    if (template_build_machine(t->mt, &spec, &bytes, &len, NULL) != 0)
        goto done;
    node = (k8s_node_t *)pb_unpack(&k8s__io__api__core__v1__node__descriptor, len, bytes);
    sel = (K8s__Io__Api__Core__V1__NodeSelector *)pb_unpack(
        &k8s__io__api__core__v1__node_selector__descriptor, aff_len, aff);
    if (node != NULL && sel != NULL) {
        K8s__Io__Api__Core__V1__NodeAffinity na = K8S__IO__API__CORE__V1__NODE_AFFINITY__INIT;
        K8s__Io__Api__Core__V1__Affinity a = K8S__IO__API__CORE__V1__AFFINITY__INIT;
        k8s_pod_spec_t pod = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
        na.requiredduringschedulingignoredduringexecution = sel;
        a.nodeaffinity = &na;
        pod.affinity = &a;
        holds = fit_node_affinity(&pod, node, NULL, 0);
    }
done:
    kv_list_clear(&spec.labels);
    free(spec.zone);
    free(bytes);
    if (node != NULL)
        protobuf_c_message_free_unpacked(&node->base, NULL);
    if (sel != NULL)
        protobuf_c_message_free_unpacked(&sel->base, NULL);
    return holds;
}

/* ------------------------------------------------------------------------------------
 * The algorithm
 * ---------------------------------------------------------------------------------- */

/* Working state shared by all machine types: distinct selectors and taint sets. */
typedef struct propose_work {
    const propose_pod_t *pods;
    size_t n;
    size_t *sel_of;                /* pod -> distinct selector index */
    size_t *taints_of;             /* pod -> distinct taint set index */
    const kv_list_t **sels;        /* distinct selectors (with their affinity), in order of first
                                      appearance */
    const propose_pod_t **sel_pod; /* selector -> its first pod, whose affinity it has */
    size_t sels_count;
    const taint_list_t **tsets; /* distinct taint sets, in order of first appearance */
    size_t tsets_count;
    bool *served_by_some; /* pod -> some machine type can serve it */
    /* per-round scratch */
    bool *remaining;        /* pod -> not yet served for the current machine type */
    size_t *counts;         /* selector -> remaining pods of the partition */
    size_t *order;          /* selectors by popularity */
    bool *folded;           /* selector -> in the current label set */
    const kv_t **set_items; /* backing store of the current label set */
    size_t set_cap;
} propose_work_t;

static void propose__work_free(propose_work_t *w) {
    free(w->sel_of);
    free(w->taints_of);
    free(w->sels);
    free(w->sel_pod);
    free(w->tsets);
    free(w->served_by_some);
    free(w->remaining);
    free(w->counts);
    free(w->order);
    free(w->folded);
    free(w->set_items);
}

static bool propose__same_affinity(const propose_pod_t *a, const propose_pod_t *b) {
    return a->affinity_len == b->affinity_len && (a->affinity == NULL) == (b->affinity == NULL) &&
           (a->affinity == NULL || memcmp(a->affinity, b->affinity, a->affinity_len) == 0);
}

/* Whether the affinity of selector s and of every folded one holds for set in a zone. */
typedef struct propose_fold {
    const propose_work_t *w;
    const propose_type_t *t;
    const propose_set_t *set;
    size_t s;
} propose_fold_t;

static bool propose__affinities_hold(const void *ctx, const char *zone) {
    const propose_fold_t *f = ctx;
    for (size_t k = 0; k < f->w->sels_count; k++) {
        const propose_pod_t *p = f->w->sel_pod[k];
        if ((k == f->s || f->w->folded[k]) && p->affinity != NULL &&
            !propose__affinity_holds(f->t, f->set, zone, p->affinity, p->affinity_len))
            return false;
    }
    return true;
}

static int propose__work_init(propose_work_t *w, const propose_pod_t *pods, size_t n) {
    memset(w, 0, sizeof(*w));
    w->pods = pods;
    w->n = n;
    size_t m = n > 0 ? n : 1;
    size_t total_keys = 1;
    for (size_t i = 0; i < n; i++)
        total_keys += pods[i].selector.count;
    w->sel_of = calloc(m, sizeof(*w->sel_of));
    w->taints_of = calloc(m, sizeof(*w->taints_of));
    w->sels = calloc(m, sizeof(*w->sels));
    w->sel_pod = calloc(m, sizeof(*w->sel_pod));
    w->tsets = calloc(m, sizeof(*w->tsets));
    w->served_by_some = calloc(m, sizeof(*w->served_by_some));
    w->remaining = calloc(m, sizeof(*w->remaining));
    w->counts = calloc(m, sizeof(*w->counts));
    w->order = calloc(m, sizeof(*w->order));
    w->folded = calloc(m, sizeof(*w->folded));
    w->set_items = calloc(total_keys, sizeof(*w->set_items));
    w->set_cap = total_keys;
    if (w->sel_of == NULL || w->taints_of == NULL || w->sels == NULL || w->sel_pod == NULL ||
        w->tsets == NULL || w->served_by_some == NULL || w->remaining == NULL ||
        w->counts == NULL || w->order == NULL || w->folded == NULL || w->set_items == NULL) {
        propose__work_free(w);
        return FRUGAL_ENOMEM;
    }
    /* Distinct selectors and taint sets: few of them, a linear scan per pod is fine for
     * hundreds of pods (quadratic only in the number of distinct ones). */
    for (size_t i = 0; i < n; i++) {
        size_t s = 0;
        while (s < w->sels_count && !(kv_list_equal(w->sels[s], &pods[i].selector) &&
                                      propose__same_affinity(w->sel_pod[s], &pods[i])))
            s++;
        if (s == w->sels_count) {
            w->sel_pod[w->sels_count] = &pods[i];
            w->sels[w->sels_count++] = &pods[i].selector;
        }
        w->sel_of[i] = s;
        size_t t = 0;
        while (t < w->tsets_count && !taint_list_equal(w->tsets[t], &pods[i].taints))
            t++;
        if (t == w->tsets_count)
            w->tsets[w->tsets_count++] = &pods[i].taints;
        w->taints_of[i] = t;
    }
    return 0;
}

/* Whether sel agrees with every key of set (no key with two values). */
static bool propose__agrees(const propose_set_t *set, const kv_list_t *sel) {
    for (size_t i = 0; i < sel->count; i++) {
        const char *v = propose__set_get(set, sel->items[i].key);
        if (v != NULL && strcmp(v, sel->items[i].value) != 0)
            return false;
    }
    return true;
}

/* set ∪= sel (the caller checked agreement and capacity). */
static void propose__merge(propose_set_t *set, const kv_list_t *sel) {
    for (size_t i = 0; i < sel->count; i++)
        if (propose__set_get(set, sel->items[i].key) == NULL)
            set->items[set->count++] = &sel->items[i];
}

/* Sort without the global comparator state (qsort has no context argument in C11):
 * insertion sort, distinct selectors are few. */
static void propose__sort_order(size_t *order, size_t n, const size_t *counts) {
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i];
        size_t j = i;
        while (j > 0 && (counts[order[j - 1]] < counts[v] ||
                         (counts[order[j - 1]] == counts[v] && order[j - 1] > v))) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

/* How many nodes of shape node the proposal's pods take, first fit largest first as
 * CA's estimator packs them (their GPUs and the template's pod slots included): the
 * headroom's count may be fewer when the pods do not divide (5 pods of 2.1 cores on
 * 4-core nodes take 5, not 4). 0, or FRUGAL_ENOMEM. */
static int propose__first_fit(const propose_work_t *w, const propose_proposal_t *p,
                              const resources_t *node, int64_t *out) {
    resources_t *pods = calloc(p->pods_count + 1, sizeof(*pods));
    if (pods == NULL)
        return FRUGAL_ENOMEM;
    for (size_t k = 0; k < p->pods_count; k++)
        pods[k] = w->pods[p->pods[k]].request;
    size_t used = 0;
    int rc = binpack_largest_first(pods, p->pods_count, node, TEMPLATE_MAX_PODS, &used, NULL);
    free(pods);
    *out = (int64_t)used;
    return rc;
}

typedef struct propose_out {
    propose_proposal_t *items;
    size_t count;
    size_t cap;
} propose_out_t;

static void propose__proposal_clear(propose_proposal_t *p) {
    free(p->group_id);
    kv_list_clear(&p->labels);
    taint_list_clear(&p->taints);
    free(p->pods);
    memset(p, 0, sizeof(*p));
}

/* Turn the current label set into a proposal serving every remaining pod of the
 * partition whose selector was folded, and mark those pods served. */
static int propose__emit(const propose_params_t *params, propose_work_t *w, const propose_type_t *t,
                         size_t tset, const propose_set_t *set, const char *zone,
                         propose_out_t *out, frugal_err_t *err) {
    const frugal_config_t *cfg = params->cfg;
    if (out->count == out->cap) {
        size_t cap = out->cap > 0 ? out->cap * 2 : 16;
        propose_proposal_t *items = realloc(out->items, cap * sizeof(*items));
        if (items == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        out->items = items;
        out->cap = cap;
    }
    propose_proposal_t p;
    memset(&p, 0, sizeof(p));
    p.machine_type = t->mt;
    p.zone = zone;
    int rc = 0;
    for (size_t i = 0; i < set->count && rc == 0; i++)
        if (group_rules_label(set->items[i]->key, NULL, false, NULL, 0) != GROUP_RULE_RESERVED)
            rc = kv_list_put(&p.labels, set->items[i]->key, set->items[i]->value) < 0
                     ? FRUGAL_ENOMEM
                     : 0;
    if (rc == 0)
        rc = taint_list_copy(&p.taints, w->tsets[tset]);
    if (rc == 0)
        rc = autoprov_group_id(cfg->autoprovisioning.prefix != NULL ? cfg->autoprovisioning.prefix
                                                                    : "nap",
                               t->mt->name, zone, &p.labels, &p.taints, NULL, &p.group_id, err);
    if (rc == 0 && (p.pods = malloc(w->n * sizeof(*p.pods))) == NULL)
        rc = FRUGAL_ENOMEM;
    if (rc != 0) {
        propose__proposal_clear(&p);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }

    resources_t sum = {0, 0, 0};
    double pods_price = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (!w->remaining[i] || w->taints_of[i] != tset || !w->folded[w->sel_of[i]])
            continue;
        w->remaining[i] = false;
        w->served_by_some[i] = true;
        p.pods[p.pods_count++] = i;
        sum.cpu_milli += w->pods[i].request.cpu_milli;
        sum.memory_bytes += w->pods[i].request.memory_bytes;
        sum.gpu += w->pods[i].request.gpu;
        pods_price += pricing_linear(&cfg->pricing, &w->pods[i].request);
    }
    /* Escalator's delta from zero, so the new group starts at the threshold's headroom;
     * GPUs are outside that model and only need to fit. */
    resources_t alloc = {t->mt->cpu_milli, t->mt->memory_bytes, t->mt->gpu};
    int64_t nodes = escalator_delta_from_zero(&sum, &alloc, PROPOSE_SCALE_UP_THRESHOLD);
    int64_t packed = 0;
    if (propose__first_fit(w, &p, &alloc, &packed) != 0) {
        propose__proposal_clear(&p);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    if (packed > nodes)
        nodes = packed;
    if (nodes < 1)
        nodes = 1;
    p.node_count = nodes > INT32_MAX ? INT32_MAX : (int32_t)nodes;
    p.exists = params->group_exists != NULL && params->group_exists(params->ctx, p.group_id);

    ranking_input_t in = {
        .group_id = p.group_id,
        .scorable = true,
        .node_count = p.node_count,
        .node_price = pricing_machine_price(cfg, t->mt, false, -1),
        .pods_price = pods_price,
        .node_cpu_milli = t->mt->cpu_milli,
        .has_gpu = t->mt->gpu > 0,
        .exists = p.exists,
        .similarity_key = NULL,
    };
    double damper = pricing_linear(&cfg->pricing, &cfg->ranking.damper);
    int64_t pref = ranking_preferred_cpu_milli(&cfg->ranking, params->cluster_size);
    ranking_score(&cfg->ranking, damper, pref, &in, &p.figures);
    out->items[out->count++] = p;
    return 0;
}

/* Every proposal of one machine type. */
static int propose__for_type(const propose_params_t *params, propose_work_t *w,
                             const propose_type_t *t, propose_out_t *out, frugal_err_t *err) {
    bool any = false;
    for (size_t i = 0; i < w->n; i++) {
        const propose_pod_t *p = &w->pods[i];
        w->remaining[i] = !p->impossible && propose__fits(t->mt, &p->request) &&
                          propose__resolve(t, NULL, &p->selector, NULL, NULL);
        any = any || w->remaining[i];
    }
    if (!any)
        return 0;
    for (size_t tset = 0; tset < w->tsets_count; tset++) {
        for (;;) {
            memset(w->counts, 0, w->sels_count * sizeof(*w->counts));
            bool left = false;
            for (size_t i = 0; i < w->n; i++) {
                if (w->remaining[i] && w->taints_of[i] == tset) {
                    w->counts[w->sel_of[i]]++;
                    left = true;
                }
            }
            if (!left)
                break;
            size_t k = 0;
            for (size_t s = 0; s < w->sels_count; s++)
                if (w->counts[s] > 0)
                    w->order[k++] = s;
            propose__sort_order(w->order, k, w->counts);

            /* The most popular selector starts the set; the others fold in when they
             * agree with it and the machine type can still carry the result. */
            propose_set_t set = {w->set_items, 0};
            memset(w->folded, 0, w->sels_count * sizeof(*w->folded));
            const char *zone = NULL;
            bool any_folded = false;
            for (size_t j = 0; j < k; j++) {
                const kv_list_t *sel = w->sels[w->order[j]];
                const char *z = NULL;
                if (!propose__agrees(&set, sel))
                    continue;
                size_t before = set.count;
                propose__merge(&set, sel);
                propose_fold_t fold = {w, t, &set, w->order[j]};
                propose_zone_test_t affinities = {propose__affinities_hold, &fold};
                if (!propose__resolve(t, &set, NULL, &affinities, &z)) {
                    set.count = before;
                    continue;
                }
                w->folded[w->order[j]] = true;
                zone = z;
                any_folded = true;
            }
            if (!any_folded) {
                /* The most popular selector's own affinity fails on any group of this
                 * type that its labels make: this type serves none of its pods. */
                for (size_t i = 0; i < w->n; i++)
                    if (w->remaining[i] && w->taints_of[i] == tset && w->sel_of[i] == w->order[0])
                        w->remaining[i] = false;
                continue;
            }
            int rc = propose__emit(params, w, t, tset, &set, zone, out, err);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* Cheapest first; unscored proposals last; ties keep the production order. */
static int propose__by_score(const void *a, const void *b) {
    const propose_proposal_t *x = a, *y = b;
    if (x->figures.scored != y->figures.scored)
        return x->figures.scored ? -1 : 1;
    if (x->figures.scored && !ranking_scores_tie(x->figures.score, y->figures.score))
        return x->figures.score < y->figures.score ? -1 : 1;
    return 0;
}

/* A stable sort: merge sort through a scratch array (qsort is not stable). */
static int propose__stable_sort(propose_proposal_t *items, size_t n) {
    if (n < 2)
        return 0;
    propose_proposal_t *tmp = malloc(n * sizeof(*tmp));
    if (tmp == NULL)
        return FRUGAL_ENOMEM;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = propose__by_score(&items[j], &items[i]) < 0 ? items[j++] : items[i++];
            while (i < mid)
                tmp[k++] = items[i++];
            while (j < hi)
                tmp[k++] = items[j++];
        }
        memcpy(items, tmp, n * sizeof(*items));
    }
    free(tmp);
    return 0;
}

int propose_node_groups(const propose_params_t *params, const propose_pod_t *pods, size_t n,
                        propose_result_t *out, frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    const frugal_config_t *cfg = params->cfg;
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    propose_work_t w;
    if (propose__work_init(&w, pods, n) != 0)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    propose_out_t res = {NULL, 0, 0};
    int rc = 0;
    size_t types = ap->machine_types_count;
    for (size_t i = 0; i < types && rc == 0; i++) {
        const machine_type_t *mt = config_find_machine_type(cfg, ap->machine_types[i]);
        if (mt == NULL)
            continue;
        propose_type_t t = {mt, ap->zones, ap->zones_count};
        rc = propose__for_type(params, &w, &t, &res, err);
    }
    if (rc == 0 && propose__stable_sort(res.items, res.count) != 0)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    size_t *unsched = NULL;
    size_t unsched_count = 0;
    if (rc == 0 && (unsched = malloc((n > 0 ? n : 1) * sizeof(*unsched))) == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    if (rc != 0) {
        for (size_t i = 0; i < res.count; i++)
            propose__proposal_clear(&res.items[i]);
        free(res.items);
        propose__work_free(&w);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        if (!w.served_by_some[i])
            unsched[unsched_count++] = i;
    propose__work_free(&w);
    out->proposals = res.items;
    out->count = res.count;
    out->unschedulable = unsched;
    out->unschedulable_count = unsched_count;
    return 0;
}

void propose_result_clear(propose_result_t *r) {
    for (size_t i = 0; i < r->count; i++)
        propose__proposal_clear(&r->proposals[i]);
    free(r->proposals);
    free(r->unschedulable);
    memset(r, 0, sizeof(*r));
}
