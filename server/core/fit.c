/* Scheduling predicates: see fit.h. */
#include "fit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The quantity of resource name in a generated map field (entries with key and Quantity
 * value; the last of duplicate keys, as Go keeps), or NULL. */
#define FIT__FIND(out, entries, n, name)                                                           \
    do {                                                                                           \
        (out) = NULL;                                                                              \
        for (size_t i_ = 0; i_ < (n); i_++)                                                        \
            if ((entries)[i_]->key != NULL && strcmp((entries)[i_]->key, (name)) == 0)             \
                (out) = (entries)[i_]->value;                                                      \
    } while (0)

/* Whether cpu, memory and the GPUs, which fit_resources judges from the effective request. */
static bool fit__counted(const char *name) {
    return strcmp(name, K8S_RESOURCE_CPU) == 0 || strcmp(name, K8S_RESOURCE_MEMORY) == 0 ||
           strcmp(name, K8S_RESOURCE_NVIDIA_GPU) == 0 || strcmp(name, K8S_RESOURCE_AMD_GPU) == 0;
}

/* The value of q, rounded up; -1 when it is not a quantity. */
static int64_t fit__value(const k8s_quantity_t *q) {
    int64_t v;
    if (q == NULL || q->string == NULL ||
        quantity_parse_scaled(q->string, strlen(q->string), 0, &v, NULL) != 0 || v < 0)
        return -1;
    return v;
}

/* A container's request of name (its limit when it has no request, as the API server
 * defaults it); 0 when it has neither, -1 when it is not a quantity. */
static int64_t fit__container_request(const k8s_container_t *ct, const char *name) {
    const k8s_resource_requirements_t *rr = ct->resources;
    const k8s_quantity_t *q = NULL;
    if (rr != NULL) {
        FIT__FIND(q, rr->requests, rr->n_requests, name);
        if (q == NULL)
            FIT__FIND(q, rr->limits, rr->n_limits, name);
    }
    return q == NULL ? 0 : fit__value(q);
}

static bool fit__sidecar(const k8s_container_t *ct) {
    return ct->restartpolicy != NULL && strcmp(ct->restartpolicy, "Always") == 0;
}

/* The pod's effective request of name, combined as pod_effective_request combines cpu
 * and memory (containers and sidecars summed, each ordinary init container with the
 * sidecars before it, the larger wins, plus overhead); -1 when a quantity is invalid
 * or the sum overflows. */
static int64_t fit__named_request(const k8s_pod_spec_t *spec, const char *name) {
    int64_t total = 0, sidecars = 0, init_max = 0, r;
    for (size_t i = 0; i < spec->n_containers; i++)
        if ((r = fit__container_request(spec->containers[i], name)) < 0 ||
            __builtin_add_overflow(total, r, &total))
            return -1;
    for (size_t i = 0; i < spec->n_initcontainers; i++) {
        const k8s_container_t *ct = spec->initcontainers[i];
        if ((r = fit__container_request(ct, name)) < 0)
            return -1;
        if (fit__sidecar(ct)) {
            if (__builtin_add_overflow(total, r, &total) ||
                __builtin_add_overflow(sidecars, r, &sidecars))
                return -1;
            r = sidecars;
        } else if (__builtin_add_overflow(r, sidecars, &r)) {
            return -1;
        }
        if (r > init_max)
            init_max = r;
    }
    if (init_max > total)
        total = init_max;
    const k8s_quantity_t *q;
    FIT__FIND(q, spec->overhead, spec->n_overhead, name);
    if (q != NULL && ((r = fit__value(q)) < 0 || __builtin_add_overflow(total, r, &total)))
        return -1;
    return total;
}

/* Whether name, a resource the pod asks for, is within node's allocatable. */
static bool fit__named_fits(const k8s_pod_spec_t *spec, const k8s_node_t *node, const char *name,
                            char *why, size_t size) {
    if (fit__counted(name))
        return true;
    int64_t need = fit__named_request(spec, name);
    if (need < 0)
        return fit__fail(why, size, "%s: invalid quantity", name);
    if (need == 0)
        return true;
    const k8s_node_status_t *st = node != NULL ? node->status : NULL;
    const k8s_quantity_t *q = NULL;
    if (st != NULL)
        FIT__FIND(q, st->allocatable, st->n_allocatable, name);
    int64_t have = q != NULL ? fit__value(q) : 0;
    if (have < 0)
        have = 0;
    if (need <= have)
        return true;
    if (strcmp(name, K8S_RESOURCE_EPHEMERAL_STORAGE) == 0 || strncmp(name, "hugepages-", 10) == 0) {
        char a[64], b[64];
        return fit__fail(why, size, "%s %s > %s", name, quantity_format_bytes(need, a, sizeof(a)),
                         quantity_format_bytes(have, b, sizeof(b)));
    }
    return fit__fail(why, size, "%s %" PRId64 " > %" PRId64, name, need, have);
}

/* fit__named_fits for every resource named in the requirements rr. */
static bool fit__requirements_fit(const k8s_pod_spec_t *spec, const k8s_node_t *node,
                                  const k8s_resource_requirements_t *rr, char *why, size_t size) {
    for (size_t i = 0; rr != NULL && i < rr->n_requests; i++)
        if (rr->requests[i]->key != NULL &&
            !fit__named_fits(spec, node, rr->requests[i]->key, why, size))
            return false;
    for (size_t i = 0; rr != NULL && i < rr->n_limits; i++)
        if (rr->limits[i]->key != NULL &&
            !fit__named_fits(spec, node, rr->limits[i]->key, why, size))
            return false;
    return true;
}

bool fit_named_resources(const k8s_pod_spec_t *spec, const k8s_node_t *node, char *why,
                         size_t size) {
    if (spec == NULL)
        return true;
    for (size_t i = 0; i < spec->n_containers; i++)
        if (!fit__requirements_fit(spec, node, spec->containers[i]->resources, why, size))
            return false;
    for (size_t i = 0; i < spec->n_initcontainers; i++)
        if (!fit__requirements_fit(spec, node, spec->initcontainers[i]->resources, why, size))
            return false;
    for (size_t i = 0; i < spec->n_overhead; i++)
        if (spec->overhead[i]->key != NULL &&
            !fit__named_fits(spec, node, spec->overhead[i]->key, why, size))
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
