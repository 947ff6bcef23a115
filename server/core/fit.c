/* Scheduling predicates: see fit.h. */
#include "fit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod.h"

typedef K8s__Io__Api__Core__V1__NodeSelectorRequirement fit_requirement_t;
typedef K8s__Io__Api__Core__V1__NodeSelectorTerm fit_term_t;

static const char *fit__s(const char *s) {
    return s != NULL ? s : "";
}

/* Write the reason of a failed predicate when the caller wants one; returns false. */
static bool fit__fail(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fit__fail(char *why, size_t size, const char *fmt, ...) {
    if (why == NULL || size == 0)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return false;
}

/* The value of label key on node; NULL when the node does not carry it. */
static const char *fit__label(const k8s_node_t *node, const char *key) {
    const k8s_object_meta_t *m = node != NULL ? node->metadata : NULL;
    for (size_t i = 0; m != NULL && i < m->n_labels; i++)
        if (m->labels[i]->key != NULL && strcmp(m->labels[i]->key, key) == 0)
            return fit__s(m->labels[i]->value);
    return NULL;
}

bool fit_resources(const resources_t *request, const resources_t *allocatable, char *why,
                   size_t size) {
    char a[64], b[64];
    if (request->cpu_milli > allocatable->cpu_milli)
        return fit__fail(why, size, "cpu %s > %s",
                         quantity_format_milli(request->cpu_milli, a, sizeof(a)),
                         quantity_format_milli(allocatable->cpu_milli, b, sizeof(b)));
    if (request->memory_bytes > allocatable->memory_bytes)
        return fit__fail(why, size, "memory %s > %s",
                         quantity_format_bytes(request->memory_bytes, a, sizeof(a)),
                         quantity_format_bytes(allocatable->memory_bytes, b, sizeof(b)));
    if (request->gpu > allocatable->gpu)
        return fit__fail(why, size, "gpu %" PRId64 " > %" PRId64, request->gpu, allocatable->gpu);
    return true;
}

/* node's allocatable of name, rounded up; 0 when it does not list it or it is no
 * quantity. */
static int64_t fit__allocatable(const k8s_node_t *node, const char *name) {
    const k8s_node_status_t *st = node != NULL ? node->status : NULL;
    const k8s_quantity_t *q = NULL;
    for (size_t i = 0; st != NULL && i < st->n_allocatable; i++)
        if (st->allocatable[i]->key != NULL && strcmp(st->allocatable[i]->key, name) == 0)
            q = st->allocatable[i]->value; /* the last of duplicate keys, as Go keeps */
    int64_t v;
    if (q == NULL || q->string == NULL ||
        quantity_parse_scaled(q->string, strlen(q->string), 0, &v, NULL) != 0 || v < 0)
        return 0;
    return v;
}

/* Whether name, a resource the pod asks for, is within node's allocatable. */
static bool fit__named_fits(const k8s_pod_t *pod, const k8s_node_t *node, const char *name,
                            char *why, size_t size) {
    if (name == NULL || pod_resource_is_standard(name))
        return true;
    int64_t need;
    if (pod_named_request(pod, name, &need, NULL) != 0)
        return fit__fail(why, size, "%s: invalid quantity", name);
    int64_t have = fit__allocatable(node, name);
    if (need <= have)
        return true;
    if (strcmp(name, K8S_RESOURCE_EPHEMERAL_STORAGE) == 0 ||
        strncmp(name, K8S_RESOURCE_HUGEPAGES_PREFIX, strlen(K8S_RESOURCE_HUGEPAGES_PREFIX)) == 0) {
        char a[64], b[64];
        return fit__fail(why, size, "%s %s > %s", name, quantity_format_bytes(need, a, sizeof(a)),
                         quantity_format_bytes(have, b, sizeof(b)));
    }
    return fit__fail(why, size, "%s %" PRId64 " > %" PRId64, name, need, have);
}

/* fit__named_fits for every resource named in the requirements rr (may be NULL). */
static bool fit__requirements_fit(const k8s_pod_t *pod, const k8s_node_t *node,
                                  const k8s_resource_requirements_t *rr, char *why, size_t size) {
    for (size_t i = 0; rr != NULL && i < rr->n_requests; i++)
        if (!fit__named_fits(pod, node, rr->requests[i]->key, why, size))
            return false;
    for (size_t i = 0; rr != NULL && i < rr->n_limits; i++)
        if (!fit__named_fits(pod, node, rr->limits[i]->key, why, size))
            return false;
    return true;
}

bool fit_named_resources(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why,
                         size_t size) {
    if (spec == NULL)
        return true;
    /* pod_named_request reads the spec alone; a pod around it names no one in errors. */
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.spec = (k8s_pod_spec_t *)spec;
    for (size_t i = 0; i < spec->n_containers; i++)
        if (!fit__requirements_fit(&pod, node, spec->containers[i]->resources, why, size))
            return false;
    for (size_t i = 0; i < spec->n_initcontainers; i++)
        if (!fit__requirements_fit(&pod, node, spec->initcontainers[i]->resources, why, size))
            return false;
    if (!fit__requirements_fit(&pod, node, spec->resources, why, size))
        return false;
    for (size_t i = 0; i < spec->n_overhead; i++)
        if (!fit__named_fits(&pod, node, spec->overhead[i]->key, why, size))
            return false;
    return true;
}

bool fit_node_selector(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size) {
    for (size_t k = 0; spec != NULL && k < spec->n_nodeselector; k++) {
        const char *key = spec->nodeselector[k]->key;
        const char *want = fit__s(spec->nodeselector[k]->value);
        if (key == NULL)
            continue;
        const char *have = fit__label(node, key);
        if (have == NULL || strcmp(have, want) != 0)
            return fit__fail(why, size, "node selector %s=%s", key, want);
    }
    return true;
}

static bool fit__int(const char *s, long long *out) {
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return s[0] != '\0' && *end == '\0' && errno == 0;
}

static bool fit__requirement_holds(const k8s_node_t *node, const fit_requirement_t *e) {
    const char *v = e->key != NULL ? fit__label(node, e->key) : NULL;
    const char *op = fit__s(e->operator_);
    bool in = false;
    for (size_t i = 0; v != NULL && i < e->n_values; i++)
        in = in || (e->values[i] != NULL && strcmp(e->values[i], v) == 0);
    if (strcmp(op, "In") == 0)
        return in;
    if (strcmp(op, "NotIn") == 0)
        return !in;
    if (strcmp(op, "Exists") == 0)
        return v != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return v == NULL;
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        long long have, want;
        if (v == NULL || e->n_values != 1 || e->values[0] == NULL || !fit__int(v, &have) ||
            !fit__int(e->values[0], &want))
            return false;
        return op[0] == 'G' ? have > want : have < want;
    }
    return false;
}

/* A term holds when all its expressions do; matchFields names specific nodes, which a
 * node still to be created is not, and an empty term selects nothing. */
static bool fit__term_holds(const k8s_node_t *node, const fit_term_t *t) {
    if (t->n_matchfields > 0 || t->n_matchexpressions == 0)
        return false;
    for (size_t i = 0; i < t->n_matchexpressions; i++)
        if (!fit__requirement_holds(node, t->matchexpressions[i]))
            return false;
    return true;
}

bool fit_node_affinity(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size) {
    const K8s__Io__Api__Core__V1__NodeSelector *req =
        spec != NULL && spec->affinity != NULL && spec->affinity->nodeaffinity != NULL
            ? spec->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution
            : NULL;
    if (req == NULL)
        return true;
    for (size_t k = 0; k < req->n_nodeselectorterms; k++)
        if (fit__term_holds(node, req->nodeselectorterms[k]))
            return true;
    return fit__fail(why, size, "required node affinity");
}

bool fit_node_affinity_valid(const k8s_pod_spec_t *spec, char *why, size_t size) {
    static const char *const known[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    const K8s__Io__Api__Core__V1__NodeSelector *req =
        spec != NULL && spec->affinity != NULL && spec->affinity->nodeaffinity != NULL
            ? spec->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution
            : NULL;
    for (size_t k = 0; req != NULL && k < req->n_nodeselectorterms; k++) {
        const fit_term_t *t = req->nodeselectorterms[k];
        for (size_t i = 0; i < t->n_matchexpressions; i++) {
            const char *op = fit__s(t->matchexpressions[i]->operator_);
            bool ok = false;
            for (size_t j = 0; j < sizeof(known) / sizeof(*known) && !ok; j++)
                ok = strcmp(op, known[j]) == 0;
            if (!ok)
                return fit__fail(why, size,
                                 "required node affinity: unknown operator \"%s\" (In, NotIn, "
                                 "Exists, DoesNotExist, Gt or Lt)",
                                 op);
        }
    }
    return true;
}

bool fit_tolerates(const k8s_pod_spec_t *spec, const k8s_taint_t *taint) {
    const char *tkey = fit__s(taint->key);
    const char *tvalue = fit__s(taint->value);
    const char *teffect = fit__s(taint->effect);
    for (size_t i = 0; spec != NULL && i < spec->n_tolerations; i++) {
        const k8s_toleration_t *t = spec->tolerations[i];
        bool exists = t->operator_ != NULL && strcmp(t->operator_, "Exists") == 0;
        if (t->effect != NULL && t->effect[0] != '\0' && strcmp(t->effect, teffect) != 0)
            continue;
        if (t->key == NULL || t->key[0] == '\0') {
            if (exists)
                return true; /* an empty key with Exists tolerates everything */
            continue;
        }
        if (strcmp(t->key, tkey) != 0)
            continue;
        if (exists || strcmp(fit__s(t->value), tvalue) == 0)
            return true;
    }
    return false;
}

bool fit_taints(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why, size_t size) {
    const k8s_node_spec_t *ns = node != NULL ? node->spec : NULL;
    for (size_t k = 0; ns != NULL && k < ns->n_taints; k++) {
        const k8s_taint_t *t = ns->taints[k];
        /* PreferNoSchedule only steers the scheduler: it never keeps a pod off. */
        if (t->effect == NULL ||
            (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0))
            continue;
        if (!fit_tolerates(spec, t))
            return fit__fail(why, size, "taint %s=%s:%s", fit__s(t->key), fit__s(t->value),
                             t->effect);
    }
    return true;
}

bool fit_pod(const k8s_pod_spec_t *spec, const resources_t *request, const k8s_node_t *node,
             const resources_t *allocatable, char *why, size_t size) {
    return fit_resources(request, allocatable, why, size) &&
           fit_named_resources(spec, node, why, size) && fit_node_selector(spec, node, why, size) &&
           fit_node_affinity(spec, node, why, size) && fit_taints(spec, node, why, size);
}
