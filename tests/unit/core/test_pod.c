/* Unit tests of server/core/pod.c: effective requests with containers, init containers,
 * sidecars (in declaration order), overhead, pod-level resources, limits-only
 * containers, GPUs and malformed quantities. Pods are built with the generated
 * structs, packed, and decoded again through pod_decode_request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pod.h"

#define MI 1048576LL
#define GI 1073741824LL

typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry req_entry_t;
typedef K8s__Io__Api__Core__V1__ResourceRequirements__LimitsEntry lim_entry_t;
typedef K8s__Io__Api__Core__V1__PodSpec__OverheadEntry over_entry_t;

/* Everything a test allocates, freed in teardown. */
#define ARENA_MAX 1024
static void *arena[ARENA_MAX];
static size_t arena_n;

static void *take(size_t size) {
    assert_true(arena_n < ARENA_MAX);
    void *p = calloc(1, size);
    assert_non_null(p);
    arena[arena_n++] = p;
    return p;
}

static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < arena_n; i++)
        free(arena[i]);
    arena_n = 0;
    return 0;
}

static char *sdup(const char *s) {
    char *p = take(strlen(s) + 1);
    memcpy(p, s, strlen(s) + 1);
    return p;
}

static k8s_quantity_t *quantity(const char *s) {
    k8s_quantity_t init = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    k8s_quantity_t *q = take(sizeof(*q));
    *q = init;
    q->string = s != NULL ? sdup(s) : NULL;
    return q;
}

/* "cpu=500m memory=1Gi" -> count of pairs, keys and values split in place. */
static size_t split(const char *spec, char **keys, char **values, size_t max) {
    size_t n = 0;
    if (spec == NULL)
        return 0;
    char *s = sdup(spec);
    for (char *tok = strtok(s, " "); tok != NULL; tok = strtok(NULL, " ")) {
        assert_true(n < max);
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = '\0';
        keys[n] = tok;
        values[n] = eq + 1;
        n++;
    }
    return n;
}

static k8s_resource_requirements_t *requirements(const char *requests, const char *limits) {
    k8s_resource_requirements_t init = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    k8s_resource_requirements_t *rr = take(sizeof(*rr));
    char *keys[16], *values[16];
    *rr = init;
    size_t n = split(requests, keys, values, 16);
    rr->n_requests = n;
    rr->requests = take(sizeof(*rr->requests) * (n + 1));
    for (size_t i = 0; i < n; i++) {
        req_entry_t e = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
        rr->requests[i] = take(sizeof(e));
        *rr->requests[i] = e;
        rr->requests[i]->key = keys[i];
        rr->requests[i]->value = quantity(values[i]);
    }
    n = split(limits, keys, values, 16);
    rr->n_limits = n;
    rr->limits = take(sizeof(*rr->limits) * (n + 1));
    for (size_t i = 0; i < n; i++) {
        lim_entry_t e = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT;
        rr->limits[i] = take(sizeof(e));
        *rr->limits[i] = e;
        rr->limits[i]->key = keys[i];
        rr->limits[i]->value = quantity(values[i]);
    }
    return rr;
}

static k8s_container_t *container(const char *name, const char *requests, const char *limits,
                                  const char *restart) {
    k8s_container_t init = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    k8s_container_t *c = take(sizeof(*c));
    *c = init;
    c->name = sdup(name);
    if (requests != NULL || limits != NULL)
        c->resources = requirements(requests, limits);
    c->restartpolicy = restart != NULL ? sdup(restart) : NULL;
    return c;
}

#define MAX_CT 8
typedef struct pod_builder {
    k8s_pod_t pod;
    k8s_object_meta_t meta;
    k8s_pod_spec_t spec;
    k8s_container_t *containers[MAX_CT];
    k8s_container_t *inits[MAX_CT];
} pod_builder_t;

static k8s_pod_t *new_pod(const char *ns, const char *name) {
    pod_builder_t *b = take(sizeof(*b));
    k8s_pod_t pinit = K8S__IO__API__CORE__V1__POD__INIT;
    k8s_object_meta_t minit = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    k8s_pod_spec_t sinit = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    b->pod = pinit;
    b->meta = minit;
    b->spec = sinit;
    b->meta.name = name != NULL ? sdup(name) : NULL;
    b->meta.namespace_ = ns != NULL ? sdup(ns) : NULL;
    b->spec.containers = b->containers;
    b->spec.initcontainers = b->inits;
    b->pod.metadata = &b->meta;
    b->pod.spec = &b->spec;
    return &b->pod;
}

static void add_container(k8s_pod_t *pod, const char *name, const char *requests,
                          const char *limits) {
    assert_true(pod->spec->n_containers < MAX_CT);
    pod->spec->containers[pod->spec->n_containers++] = container(name, requests, limits, NULL);
}

static void add_init(k8s_pod_t *pod, const char *name, const char *requests, bool sidecar) {
    assert_true(pod->spec->n_initcontainers < MAX_CT);
    pod->spec->initcontainers[pod->spec->n_initcontainers++] =
        container(name, requests, NULL, sidecar ? "Always" : NULL);
}

static void set_overhead(k8s_pod_t *pod, const char *overhead) {
    char *keys[8], *values[8];
    size_t n = split(overhead, keys, values, 8);
    pod->spec->n_overhead = n;
    pod->spec->overhead = take(sizeof(*pod->spec->overhead) * (n + 1));
    for (size_t i = 0; i < n; i++) {
        over_entry_t e = K8S__IO__API__CORE__V1__POD_SPEC__OVERHEAD_ENTRY__INIT;
        pod->spec->overhead[i] = take(sizeof(e));
        *pod->spec->overhead[i] = e;
        pod->spec->overhead[i]->key = keys[i];
        pod->spec->overhead[i]->value = quantity(values[i]);
    }
}

/* Effective request both directly and through pack + pod_decode_request. */
static resources_t request(const k8s_pod_t *pod) {
    resources_t direct, decoded;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (pod_effective_request(pod, &direct, &err) != 0)
        fail_msg("pod_effective_request: %s", err.msg);
    size_t len = k8s__io__api__core__v1__pod__get_packed_size(pod);
    uint8_t *buf = take(len + 1);
    k8s__io__api__core__v1__pod__pack(pod, buf);
    if (pod_decode_request(buf, len, &decoded, &err) != 0)
        fail_msg("pod_decode_request: %s", err.msg);
    assert_int_equal(direct.cpu_milli, decoded.cpu_milli);
    assert_int_equal(direct.memory_bytes, decoded.memory_bytes);
    assert_int_equal(direct.gpu, decoded.gpu);
    return direct;
}

static void assert_request(const k8s_pod_t *pod, int64_t cpu, int64_t mem, int64_t gpu) {
    resources_t r = request(pod);
    if (r.cpu_milli != cpu || r.memory_bytes != mem || r.gpu != gpu)
        fail_msg("got cpu %lld memory %lld gpu %lld, want %lld %lld %lld", (long long)r.cpu_milli,
                 (long long)r.memory_bytes, (long long)r.gpu, (long long)cpu, (long long)mem,
                 (long long)gpu);
}

/* Expect FRUGAL_EINVAL with every needle in the message, both directly and decoded. */
static void assert_invalid(const k8s_pod_t *pod, const char *n1, const char *n2, const char *n3) {
    resources_t r = {7, 7, 7};
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(pod_effective_request(pod, &r, &err), FRUGAL_EINVAL);
    assert_int_equal(err.code, FRUGAL_EINVAL);
    const char *needles[] = {n1, n2, n3};
    for (int i = 0; i < 3; i++)
        if (needles[i] != NULL && strstr(err.msg, needles[i]) == NULL)
            fail_msg("\"%s\" not in \"%s\"", needles[i], err.msg);
    assert_int_equal(r.cpu_milli, 7);
    size_t len = k8s__io__api__core__v1__pod__get_packed_size(pod);
    uint8_t *buf = take(len + 1);
    k8s__io__api__core__v1__pod__pack(pod, buf);
    assert_int_equal(pod_decode_request(buf, len, &r, NULL), FRUGAL_EINVAL);
}

static void test_empty_pod(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("default", "empty");
    assert_request(pod, 0, 0, 0);
    add_container(pod, "none", NULL, NULL);
    assert_request(pod, 0, 0, 0);
    k8s_pod_t bare = K8S__IO__API__CORE__V1__POD__INIT;
    resources_t r;
    assert_int_equal(pod_effective_request(&bare, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 0);
}

static void test_containers_sum(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("web", "a");
    add_container(pod, "app", "cpu=500m memory=1Gi", NULL);
    add_container(pod, "proxy", "cpu=0.25 memory=128Mi", NULL);
    add_container(pod, "log", "cpu=1 ephemeral-storage=1Gi example.com/foo=3", NULL);
    assert_request(pod, 1750, GI + 128 * MI, 0);
}

static void test_rounding(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("default", "round");
    add_container(pod, "a", "cpu=100n memory=0.5", NULL);
    add_container(pod, "b", "cpu=0.1m memory=1.5", NULL);
    assert_request(pod, 2, 3, 0);
}

static void test_limits_only(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("default", "limits");
    /* Limit used when the request is missing; the request wins when both are set. */
    add_container(pod, "a", NULL, "cpu=2 memory=2Gi");
    add_container(pod, "b", "cpu=100m", "cpu=1 memory=512Mi");
    add_container(pod, "c", "cpu=100m memory=64Mi", "cpu=4 memory=4Gi");
    assert_request(pod, 2200, 2 * GI + 512 * MI + 64 * MI, 0);
}

static void test_gpus(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("ml", "train");
    add_container(pod, "a", "cpu=1", "nvidia.com/gpu=2");
    add_container(pod, "b", "amd.com/gpu=1", "amd.com/gpu=1");
    add_container(pod, "c", "nvidia.com/gpu=1 amd.com/gpu=1", NULL);
    add_container(pod, "d", "example.com/gpu=5", NULL);
    assert_request(pod, 1000, 0, 5);
}

static void test_init_containers(void **state) {
    (void)state;
    /* An ordinary init container bigger than the app wins per resource. */
    k8s_pod_t *pod = new_pod("default", "init");
    add_container(pod, "app", "cpu=500m memory=2Gi", NULL);
    add_init(pod, "migrate", "cpu=2 memory=256Mi", false);
    add_init(pod, "fetch", "cpu=1 memory=3Gi", false);
    assert_request(pod, 2000, 3 * GI, 0);

    /* Init containers run one at a time: they do not add up. */
    pod = new_pod("default", "init2");
    add_container(pod, "app", "cpu=100m", NULL);
    add_init(pod, "a", "cpu=1", false);
    add_init(pod, "b", "cpu=1", false);
    assert_request(pod, 1000, 0, 0);

    /* GPUs of init containers take the max too. */
    pod = new_pod("default", "init3");
    add_container(pod, "app", "nvidia.com/gpu=1", NULL);
    add_init(pod, "warm", "nvidia.com/gpu=2", false);
    assert_request(pod, 0, 0, 2);
}

static void test_sidecars(void **state) {
    (void)state;
    /* A sidecar adds to the containers. */
    k8s_pod_t *pod = new_pod("default", "side");
    add_container(pod, "app", "cpu=1 memory=1Gi", NULL);
    add_init(pod, "mesh", "cpu=200m memory=128Mi", true);
    assert_request(pod, 1200, GI + 128 * MI, 0);

    /* Sidecar declared BEFORE the init container runs alongside it: 1 + 1.5 = 2.5. */
    pod = new_pod("default", "before");
    add_container(pod, "app", "cpu=500m", NULL);
    add_init(pod, "mesh", "cpu=1", true);
    add_init(pod, "setup", "cpu=1500m", false);
    assert_request(pod, 2500, 0, 0);

    /* Sidecar declared AFTER the init container: the init runs alone. max(1.5, 0.5+1). */
    pod = new_pod("default", "after");
    add_container(pod, "app", "cpu=500m", NULL);
    add_init(pod, "setup", "cpu=1500m", false);
    add_init(pod, "mesh", "cpu=1", true);
    assert_request(pod, 1500, 0, 0);

    /* Two sidecars around an init container; memory and cpu independently. */
    pod = new_pod("default", "mixed");
    add_container(pod, "app", "cpu=100m memory=100Mi", NULL);
    add_init(pod, "s1", "cpu=300m memory=50Mi", true);
    add_init(pod, "i1", "cpu=1 memory=10Mi", false);
    add_init(pod, "s2", "cpu=200m memory=500Mi", true);
    add_init(pod, "i2", "cpu=100m memory=1Gi", false);
    /* regular + sidecars: cpu 600m, mem 650Mi; i1 with s1: cpu 1300m, mem 60Mi;
     * i2 with s1+s2: cpu 600m, mem 1024+550Mi. */
    assert_request(pod, 1300, GI + 550 * MI, 0);

    /* restartPolicy other than Always is an ordinary init container. */
    pod = new_pod("default", "never");
    add_container(pod, "app", "cpu=1", NULL);
    add_init(pod, "x", "cpu=500m", false);
    pod->spec->initcontainers[0]->restartpolicy = sdup("OnFailure");
    assert_request(pod, 1000, 0, 0);
}

static void test_overhead(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("default", "kata");
    add_container(pod, "app", "cpu=1 memory=1Gi", NULL);
    add_init(pod, "big", "cpu=3", false);
    set_overhead(pod, "cpu=250m memory=160Mi");
    assert_request(pod, 3250, GI + 160 * MI, 0);
}

static void test_pod_level_resources(void **state) {
    (void)state;
    /* Pod-level requests replace the aggregate for what they set; overhead still adds. */
    k8s_pod_t *pod = new_pod("default", "podlevel");
    add_container(pod, "app", "cpu=1 memory=1Gi nvidia.com/gpu=1", NULL);
    add_container(pod, "side", "cpu=1 memory=1Gi", NULL);
    pod->spec->resources = requirements("cpu=3", NULL);
    assert_request(pod, 3000, 2 * GI, 1);
    set_overhead(pod, "cpu=100m memory=10Mi");
    assert_request(pod, 3100, 2 * GI + 10 * MI, 1);
    /* Smaller than the containers: still precedence. */
    pod->spec->resources = requirements("cpu=500m memory=512Mi", NULL);
    assert_request(pod, 600, 522 * MI, 1);
    /* Pod-level limits default the pod-level requests. */
    pod->spec->resources = requirements(NULL, "memory=4Gi");
    assert_request(pod, 2100, 4 * GI + 10 * MI, 1);
    /* GPUs are not a pod-level resource. */
    pod->spec->resources = requirements("nvidia.com/gpu=4", NULL);
    assert_request(pod, 2100, 2 * GI + 10 * MI, 1);
    /* Empty pod-level resources change nothing. */
    pod->spec->resources = requirements(NULL, NULL);
    assert_request(pod, 2100, 2 * GI + 10 * MI, 1);
}

static void test_malformed(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("prod", "bad");
    add_container(pod, "ok", "cpu=1", NULL);
    add_container(pod, "broken", "cpu=1 memory=1KiB", NULL);
    assert_invalid(pod, "prod/bad", "broken", "memory");

    pod = new_pod("prod", "bad-limit");
    add_container(pod, "lim", NULL, "cpu=2cores");
    assert_invalid(pod, "prod/bad-limit", "lim", "cpu");

    pod = new_pod("prod", "huge"); /* each fits 64 bits, their sum does not */
    add_container(pod, "a", "memory=5E", NULL);
    add_container(pod, "b", "memory=5E", NULL);
    assert_invalid(pod, "prod/huge", "memory: the total request of its containers is out of range",
                   NULL);

    pod = new_pod("prod", "huge-init");
    add_init(pod, "side", "cpu=5P", true);
    add_init(pod, "init", "cpu=5P", false);
    assert_invalid(pod, "prod/huge-init", "cpu: the total request of an init container", NULL);

    pod = new_pod("prod", "half-gpu"); /* the API server refuses a fraction of a GPU */
    add_container(pod, "g", "nvidia.com/gpu=500m", NULL);
    assert_invalid(pod, "nvidia.com/gpu", "\"500m\"", "GPUs come whole");

    pod = new_pod("prod", "bad-init");
    add_container(pod, "app", "cpu=1", NULL);
    add_init(pod, "setup", "nvidia.com/gpu=x", false);
    assert_invalid(pod, "prod/bad-init", "setup", "nvidia.com/gpu");

    pod = new_pod("prod", "bad-overhead");
    set_overhead(pod, "cpu=1.2.3");
    assert_invalid(pod, "prod/bad-overhead", "overhead", "cpu");

    pod = new_pod("prod", "bad-podlevel");
    pod->spec->resources = requirements("memory=--1", NULL);
    assert_invalid(pod, "prod/bad-podlevel", "memory", NULL);

    pod = new_pod("prod", "negative");
    add_container(pod, "neg", "cpu=-1", NULL);
    assert_invalid(pod, "neg", "cpu", "negative");

    pod = new_pod("prod", "overflow");
    add_container(pod, "huge", "memory=8Ei", NULL);
    assert_invalid(pod, "huge", "memory", NULL);

    pod = new_pod("prod", "sum-overflow");
    add_container(pod, "a", "memory=7Ei", NULL);
    add_container(pod, "b", "memory=7Ei", NULL);
    assert_invalid(pod, "prod/sum-overflow", NULL, NULL);

    /* A request entry without a quantity string. */
    pod = new_pod("prod", "empty-q");
    add_container(pod, "e", "cpu=1", NULL);
    pod->spec->containers[0]->resources->requests[0]->value->string = NULL;
    assert_invalid(pod, "e", "cpu", NULL);
}

static void test_decode_errors(void **state) {
    (void)state;
    resources_t r;
    frugal_err_t err;
    static const uint8_t garbage[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    frugal_err_clear(&err);
    assert_int_equal(pod_decode_request(garbage, sizeof(garbage), &r, &err), FRUGAL_EINVAL);
    assert_int_equal(err.code, FRUGAL_EINVAL);
    static const uint8_t truncated[] = {0x12, 0x05, 0x12, 0x03};
    assert_int_equal(pod_decode_request(truncated, sizeof(truncated), &r, NULL), FRUGAL_EINVAL);
    /* Zero bytes are a valid, empty pod. */
    assert_int_equal(pod_decode_request(garbage, 0, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 0);
    /* Unknown fields are skipped: field 99 varint before a normal pod. */
    k8s_pod_t *pod = new_pod("default", "unknown");
    add_container(pod, "app", "cpu=1", NULL);
    size_t len = k8s__io__api__core__v1__pod__get_packed_size(pod);
    uint8_t *buf = take(len + 3);
    buf[0] = 0x98; /* field 99, wire type 0 */
    buf[1] = 0x06;
    buf[2] = 0x01;
    k8s__io__api__core__v1__pod__pack(pod, buf + 3);
    assert_int_equal(pod_decode_request(buf, len + 3, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 1000);
}

/* metadata.creationTimestamp in milliseconds; the zero time Kubernetes sends for "not
 * set" (an empty Time), no Time and no metadata are no creation time. */
static void test_created(void **state) {
    (void)state;
    k8s_pod_t *pod = new_pod("default", "web");
    assert_int_equal(pod_created_ms(pod), -1);
    k8s_time_t *t = take(sizeof(*t));
    k8s_time_t init = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    *t = init;
    pod->metadata->creationtimestamp = t;
    assert_int_equal(pod_created_ms(pod), -1);
    t->has_seconds = true;
    t->seconds = 1767225600;
    t->has_nanos = true;
    t->nanos = 250999999;
    assert_int_equal(pod_created_ms(pod), 1767225600250LL);
    t->seconds = -5;
    assert_int_equal(pod_created_ms(pod), -1);
    pod->metadata = NULL;
    assert_int_equal(pod_created_ms(pod), -1);
    assert_int_equal(pod_created_ms(NULL), -1);
}

static void test_format_name(void **state) {
    (void)state;
    char buf[64];
    k8s_pod_t *pod = new_pod("kube-system", "dns");
    assert_string_equal(pod_format_name(pod, buf, sizeof(buf)), "kube-system/dns");
    pod = new_pod(NULL, "lonely");
    assert_string_equal(pod_format_name(pod, buf, sizeof(buf)), "default/lonely");
    pod = new_pod("ns", NULL);
    pod->metadata->generatename = sdup("web-");
    assert_string_equal(pod_format_name(pod, buf, sizeof(buf)), "ns/web-");
    pod = new_pod("ns", "a-very-long-name-indeed");
    char small[8];
    assert_string_equal(pod_format_name(pod, small, sizeof(small)), "ns/a-ve");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_empty_pod, teardown),
        cmocka_unit_test_teardown(test_created, teardown),
        cmocka_unit_test_teardown(test_containers_sum, teardown),
        cmocka_unit_test_teardown(test_rounding, teardown),
        cmocka_unit_test_teardown(test_limits_only, teardown),
        cmocka_unit_test_teardown(test_gpus, teardown),
        cmocka_unit_test_teardown(test_init_containers, teardown),
        cmocka_unit_test_teardown(test_sidecars, teardown),
        cmocka_unit_test_teardown(test_overhead, teardown),
        cmocka_unit_test_teardown(test_pod_level_resources, teardown),
        cmocka_unit_test_teardown(test_malformed, teardown),
        cmocka_unit_test_teardown(test_decode_errors, teardown),
        cmocka_unit_test_teardown(test_format_name, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
