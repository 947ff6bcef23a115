/* A pod's effective request, following the Kubernetes scheduler's PodRequests. */
#include "pod.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "kube_json.h"
#include "pb_unpack.h"

/* Where a quantity came from, for error messages. */
typedef struct pod__ctx {
    const k8s_pod_t *pod;
    const char *what; /* "container", "init container", "sidecar container", "overhead", ... */
    const char *name; /* container name or NULL */
} pod__ctx_t;

/* The resources frugal reads from one map, found by scanning its entries: cpu, memory and
 * GPUs, or (pod_named_request) one named resource alone. */
enum {
    POD__CPU,
    POD__MEMORY,
    POD__NVIDIA,
    POD__AMD,
    POD__STANDARD,
    POD__NAMED = POD__STANDARD,
    POD__NRES
};
static const char *const pod__names[POD__STANDARD] = {
    K8S_RESOURCE_CPU, K8S_RESOURCE_MEMORY, K8S_RESOURCE_NVIDIA_GPU, K8S_RESOURCE_AMD_GPU};

typedef struct pod__slots {
    const char *named; /* NULL: the standard resources */
    const k8s_quantity_t *q[POD__NRES];
    bool found[POD__NRES];
} pod__slots_t;

static void pod__slot_set(pod__slots_t *s, const char *key, const k8s_quantity_t *q) {
    if (key == NULL)
        return;
    if (s->named != NULL) {
        if (strcmp(key, s->named) == 0)
            s->q[POD__NAMED] = q, s->found[POD__NAMED] = true;
        return;
    }
    for (int r = 0; r < POD__STANDARD; r++) {
        if (strcmp(key, pod__names[r]) == 0) {
            /* Go keeps the last of duplicate map keys. */
            s->q[r] = q;
            s->found[r] = true;
        }
    }
}

/* Fill slots from a generated map field (entries with key and Quantity value), reading
 * the resource named (NULL: the standard ones). */
#define POD__SCAN(slots, entries, n, name)                                                         \
    do {                                                                                           \
        memset(&(slots), 0, sizeof(slots));                                                        \
        (slots).named = (name);                                                                    \
        for (size_t i_ = 0; i_ < (n); i_++)                                                        \
            pod__slot_set(&(slots), (entries)[i_]->key, (entries)[i_]->value);                     \
    } while (0)

static int pod__fail(const pod__ctx_t *c, const char *resource, const char *text, const char *why,
                     frugal_err_t *err) {
    char name[256];
    pod_format_name(c->pod, name, sizeof(name));
    if (c->name != NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "pod %s: %s %s: resource %s: quantity \"%s\": %s",
                              name, c->what, c->name, resource, text != NULL ? text : "", why);
    return frugal_err_set(err, FRUGAL_EINVAL, "pod %s: %s: resource %s: quantity \"%s\": %s", name,
                          c->what, resource, text != NULL ? text : "", why);
}

static int pod__add(int64_t *acc, int64_t v) {
    return __builtin_add_overflow(*acc, v, acc) ? -1 : 0;
}

/* Read resource r from requests, falling back to limits (the API server defaults a
 * missing request to its limit). *present says whether either had it. */
static int pod__read_one(const pod__ctx_t *c, const pod__slots_t *req, const pod__slots_t *lim,
                         int r, int scale, int64_t *out, bool *present, frugal_err_t *err) {
    const char *resource = r == POD__NAMED ? req->named : pod__names[r];
    const k8s_quantity_t *q = req->q[r];
    bool found = req->found[r];
    if (!found && lim != NULL) {
        q = lim->q[r];
        found = lim->found[r];
    }
    *out = 0;
    *present = found;
    if (!found)
        return 0;
    if (q == NULL || q->string == NULL)
        return pod__fail(c, resource, "", "empty quantity", err);
    frugal_err_t qerr;
    frugal_err_clear(&qerr);
    bool gpu = r == POD__NVIDIA || r == POD__AMD;
    /* GPUs are read in thousandths: a fraction is refused, as the API server does. */
    if (quantity_parse_scaled(q->string, strlen(q->string), gpu ? 3 : scale, out, &qerr) != 0)
        return pod__fail(c, resource, q->string, qerr.msg, err);
    if (*out < 0)
        return pod__fail(c, resource, q->string, "must not be negative", err);
    if (gpu && *out % 1000 != 0)
        return pod__fail(c, resource, q->string, "GPUs come whole", err);
    if (gpu)
        *out /= 1000;
    return 0;
}

typedef struct pod__has {
    bool cpu, memory, gpu;
} pod__has_t;

/* Resources of a requests map with its limits map (lim may be NULL); a named resource
 * goes into out->cpu_milli, in its own unit (has->cpu: present). */
static int pod__read_slots(const pod__ctx_t *c, const pod__slots_t *req, const pod__slots_t *lim,
                           resources_t *out, pod__has_t *has, frugal_err_t *err) {
    int64_t nvidia, amd;
    bool hn, ha;
    int rc;
    pod__has_t h;

    if (req->named != NULL) {
        memset(out, 0, sizeof(*out));
        memset(&h, 0, sizeof(h));
        rc = pod__read_one(c, req, lim, POD__NAMED, 0, &out->cpu_milli, &h.cpu, err);
        if (has != NULL)
            *has = h;
        return rc;
    }

    rc = pod__read_one(c, req, lim, POD__CPU, 3, &out->cpu_milli, &h.cpu, err);
    if (rc == 0)
        rc = pod__read_one(c, req, lim, POD__MEMORY, 0, &out->memory_bytes, &h.memory, err);
    if (rc == 0)
        rc = pod__read_one(c, req, lim, POD__NVIDIA, 0, &nvidia, &hn, err);
    if (rc == 0)
        rc = pod__read_one(c, req, lim, POD__AMD, 0, &amd, &ha, err);
    if (rc != 0)
        return rc;
    h.gpu = hn || ha;
    out->gpu = nvidia;
    if (pod__add(&out->gpu, amd) != 0)
        return pod__fail(c, "gpu", "", "out of range", err);
    if (has != NULL)
        *has = h;
    return 0;
}

static int pod__read_requirements(const pod__ctx_t *c, const k8s_resource_requirements_t *rr,
                                  const char *named, resources_t *out, pod__has_t *has,
                                  frugal_err_t *err) {
    pod__slots_t req, lim;
    if (rr == NULL) {
        memset(out, 0, sizeof(*out));
        if (has != NULL)
            memset(has, 0, sizeof(*has));
        return 0;
    }
    POD__SCAN(req, rr->requests, rr->n_requests, named);
    POD__SCAN(lim, rr->limits, rr->n_limits, named);
    return pod__read_slots(c, &req, &lim, out, has, err);
}

static int pod__read_container(const k8s_pod_t *pod, const char *what, const k8s_container_t *ct,
                               const char *named, resources_t *out, frugal_err_t *err) {
    pod__ctx_t c = {pod, what, ct->name != NULL ? ct->name : ""};
    return pod__read_requirements(&c, ct->resources, named, out, NULL, err);
}

/* Add r to acc: NULL, or the resource whose sum is out of range (named, when it is the
 * one summed). */
static const char *pod__sum(resources_t *acc, const resources_t *r, const char *named) {
    if (pod__add(&acc->cpu_milli, r->cpu_milli) != 0)
        return named != NULL ? named : "cpu";
    if (pod__add(&acc->memory_bytes, r->memory_bytes) != 0)
        return "memory";
    if (pod__add(&acc->gpu, r->gpu) != 0)
        return "GPUs";
    return NULL;
}

static void pod__max(resources_t *acc, const resources_t *r) {
    if (r->cpu_milli > acc->cpu_milli)
        acc->cpu_milli = r->cpu_milli;
    if (r->memory_bytes > acc->memory_bytes)
        acc->memory_bytes = r->memory_bytes;
    if (r->gpu > acc->gpu)
        acc->gpu = r->gpu;
}

static int pod__overflow(const k8s_pod_t *pod, const char *resource, const char *of,
                         frugal_err_t *err) {
    char name[256];
    return frugal_err_set(err, FRUGAL_EINVAL, "pod %s: %s: the total request of %s is out of range",
                          pod_format_name(pod, name, sizeof(name)), resource, of);
}

/* The effective request of the standard resources (named NULL), or of the resource
 * named, in out->cpu_milli. */
static int pod__effective(const k8s_pod_t *pod, const char *named, resources_t *out,
                          frugal_err_t *err) {
    resources_t total = {0, 0, 0}, sidecars = {0, 0, 0}, init_max = {0, 0, 0}, r;
    const k8s_pod_spec_t *spec = pod->spec;
    const char *beyond;
    int rc;

    if (spec == NULL) {
        *out = total;
        return 0;
    }
    for (size_t i = 0; i < spec->n_containers; i++) {
        rc = pod__read_container(pod, "container", spec->containers[i], named, &r, err);
        if (rc != 0)
            return rc;
        if ((beyond = pod__sum(&total, &r, named)) != NULL)
            return pod__overflow(pod, beyond, "its containers", err);
    }
    /* Sidecars run alongside everything started after them; an ordinary init container
     * runs alone with the sidecars declared before it. */
    for (size_t i = 0; i < spec->n_initcontainers; i++) {
        const k8s_container_t *ct = spec->initcontainers[i];
        bool sidecar = ct->restartpolicy != NULL && strcmp(ct->restartpolicy, "Always") == 0;
        rc = pod__read_container(pod, sidecar ? "sidecar container" : "init container", ct, named,
                                 &r, err);
        if (rc != 0)
            return rc;
        if (sidecar) {
            if ((beyond = pod__sum(&total, &r, named)) != NULL ||
                (beyond = pod__sum(&sidecars, &r, named)) != NULL)
                return pod__overflow(pod, beyond, "its containers and sidecars", err);
            pod__max(&init_max, &sidecars);
        } else {
            if ((beyond = pod__sum(&r, &sidecars, named)) != NULL)
                return pod__overflow(pod, beyond, "an init container and the sidecars before it",
                                     err);
            pod__max(&init_max, &r);
        }
    }
    pod__max(&total, &init_max);

    /* Pod-level requests (cpu, memory and hugepages only) replace the containers'
     * aggregate. */
    const k8s_resource_requirements_t *pr = spec->resources;
    if (pr != NULL && (named == NULL || strncmp(named, K8S_RESOURCE_HUGEPAGES_PREFIX,
                                                strlen(K8S_RESOURCE_HUGEPAGES_PREFIX)) == 0)) {
        pod__ctx_t c = {pod, "pod resources", NULL};
        pod__has_t has;
        rc = pod__read_requirements(&c, pr, named, &r, &has, err);
        if (rc != 0)
            return rc;
        if (has.cpu)
            total.cpu_milli = r.cpu_milli;
        if (has.memory)
            total.memory_bytes = r.memory_bytes;
    }

    if (spec->n_overhead > 0) {
        pod__ctx_t c = {pod, "overhead", NULL};
        pod__slots_t over;
        POD__SCAN(over, spec->overhead, spec->n_overhead, named);
        rc = pod__read_slots(&c, &over, NULL, &r, NULL, err);
        if (rc != 0)
            return rc;
        if ((beyond = pod__sum(&total, &r, named)) != NULL)
            return pod__overflow(pod, beyond, "its containers and overhead", err);
    }
    *out = total;
    return 0;
}

int pod_effective_request(const k8s_pod_t *pod, resources_t *out, frugal_err_t *err) {
    return pod__effective(pod, NULL, out, err);
}

bool pod_resource_is_standard(const char *name) {
    for (int r = 0; r < POD__STANDARD; r++)
        if (strcmp(name, pod__names[r]) == 0)
            return true;
    return false;
}

int pod_named_request(const k8s_pod_t *pod, const char *name, int64_t *out, frugal_err_t *err) {
    resources_t r;
    int rc = pod__effective(pod, name, &r, err);
    *out = rc == 0 ? r.cpu_milli : 0;
    return rc;
}

int64_t pod_created_ms(const k8s_pod_t *pod) {
    const k8s_time_t *t =
        pod != NULL && pod->metadata != NULL ? pod->metadata->creationtimestamp : NULL;
    /* Seconds beyond what milliseconds hold are no time a pod was created at. */
    if (t == NULL || t->seconds <= 0 || t->seconds > INT64_MAX / 1000 - 1)
        return -1;
    int64_t nanos = t->nanos > 0 && t->nanos < 1000000000 ? t->nanos : 0;
    return t->seconds * 1000 + nanos / 1000000;
}

uint64_t pod_identity(const k8s_pod_t *pod) {
    const k8s_object_meta_t *m = pod != NULL ? pod->metadata : NULL;
    if (m == NULL)
        return 0;
    uint64_t h = HASH_FNV_OFFSET;
    if (m->uid != NULL && m->uid[0] != '\0') {
        for (const char *c = m->uid; *c != '\0'; c++)
            h = hash_fnv_byte(h, (unsigned char)*c);
    } else if (m->name != NULL && m->name[0] != '\0') {
        char name[512];
        pod_format_name(pod, name, sizeof(name));
        h = hash_fnv_byte(h, '/'); /* never the hash of a uid of the same bytes */
        for (const char *c = name; *c != '\0'; c++)
            h = hash_fnv_byte(h, (unsigned char)*c);
    } else {
        return 0;
    }
    h = hash_finish(h);
    return h != 0 ? h : 1;
}

/* Unpack serialized v1.Pod bytes; NULL, with err set, when they are not one. */
static k8s_pod_t *pod__unpack(const uint8_t *data, size_t len, frugal_err_t *err) {
    k8s_pod_t *pod = (k8s_pod_t *)pb_unpack(&k8s__io__api__core__v1__pod__descriptor, len, data);
    if (pod == NULL)
        frugal_err_set(err, FRUGAL_EINVAL, "pod: %zu bytes are not a valid v1.Pod", len);
    return pod;
}

int pod_decode_summary(const uint8_t *data, size_t len, pod_summary_t *out, frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    out->created_ms = -1;
    k8s_pod_t *pod = pod__unpack(data, len, err);
    if (pod == NULL)
        return FRUGAL_EINVAL;
    int rc = pod_effective_request(pod, &out->request, err);
    out->lifetime = pod_lifetime(pod);
    out->created_ms = pod_created_ms(pod);
    out->identity = pod_identity(pod);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    return rc;
}

int pod_decode_request(const uint8_t *data, size_t len, resources_t *out, frugal_err_t *err) {
    k8s_pod_t *pod = pod__unpack(data, len, err);
    if (pod == NULL)
        return FRUGAL_EINVAL;
    int rc = pod_effective_request(pod, out, err);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    return rc;
}

bool pod_kind_per_node(const char *kind) {
    return kind != NULL && (strcmp(kind, "DaemonSet") == 0 || strcmp(kind, "Node") == 0);
}

pod_lifetime_t pod_lifetime_of_kind(const char *kind) {
    static const char *const short_kinds[] = {"Job", "CronJob"};
    static const char *const long_kinds[] = {"ReplicaSet", "StatefulSet", "Deployment", "DaemonSet",
                                             "ReplicationController"};
    if (kind == NULL)
        return POD_LIFETIME_UNKNOWN;
    for (size_t i = 0; i < sizeof(short_kinds) / sizeof(short_kinds[0]); i++)
        if (strcmp(kind, short_kinds[i]) == 0)
            return POD_LIFETIME_SHORT;
    for (size_t i = 0; i < sizeof(long_kinds) / sizeof(long_kinds[0]); i++)
        if (strcmp(kind, long_kinds[i]) == 0)
            return POD_LIFETIME_LONG;
    return POD_LIFETIME_UNKNOWN;
}

pod_lifetime_t pod_lifetime(const k8s_pod_t *pod) {
    return pod != NULL ? pod_lifetime_of_kind(kube_pod_controller_kind(pod)) : POD_LIFETIME_UNKNOWN;
}

char *pod_format_name(const k8s_pod_t *pod, char *buf, size_t size) {
    const k8s_object_meta_t *m = pod != NULL ? pod->metadata : NULL;
    const char *ns =
        m != NULL && m->namespace_ != NULL && m->namespace_[0] != '\0' ? m->namespace_ : "default";
    const char *name = "";
    if (m != NULL && m->name != NULL && m->name[0] != '\0')
        name = m->name;
    else if (m != NULL && m->generatename != NULL)
        name = m->generatename;
    snprintf(buf, size, "%s/%s", ns, name);
    return buf;
}
