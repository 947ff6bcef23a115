/* Unit tests of server/cli/pod_spec.c: a packed pod decodes to the requested resources,
 * its namespace, name, node selector, tolerations, controller and creation time; a
 * malformed quantity is
 * rejected with its field named and nothing returned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pod.h"
#include "pod_spec.h"

#define GI 1073741824LL

/* Pack spec, unpack it again; the caller frees the pod with free_unpacked. */
static k8s_pod_t *roundtrip(const pod_spec_t *spec) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    frugal_err_t err = {0};
    assert_int_equal(pod_spec_pack(spec, &bytes, &len, &err), 0);
    assert_non_null(bytes);
    k8s_pod_t *pod = k8s__io__api__core__v1__pod__unpack(NULL, len, bytes);
    free(bytes);
    assert_non_null(pod);
    return pod;
}

static void test_resources(void **state) {
    (void)state;
    pod_spec_t spec = {.name = "web-0", .cpu = "1500m", .memory = "2Gi", .gpu = "1"};
    k8s_pod_t *pod = roundtrip(&spec);
    assert_string_equal(pod->metadata->name, "web-0");
    assert_string_equal(pod->metadata->namespace_, "default");
    assert_int_equal(pod->spec->n_containers, 1);
    assert_string_equal(pod->spec->containers[0]->name, "main");
    assert_int_equal(pod->spec->n_nodeselector, 0);
    assert_int_equal(pod->spec->n_tolerations, 0);
    resources_t r;
    frugal_err_t err = {0};
    assert_int_equal(pod_effective_request(pod, &r, &err), 0);
    assert_int_equal(r.cpu_milli, 1500);
    assert_int_equal(r.memory_bytes, 2 * GI);
    assert_int_equal(r.gpu, 1);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
}

static void test_absent_resources(void **state) {
    (void)state;
    pod_spec_t spec = {.namespace_ = "batch", .cpu = "250m"};
    k8s_pod_t *pod = roundtrip(&spec);
    assert_null(pod->metadata->name);
    assert_string_equal(pod->metadata->namespace_, "batch");
    assert_int_equal(pod->spec->containers[0]->resources->n_requests, 1);
    resources_t r;
    assert_int_equal(pod_effective_request(pod, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 250);
    assert_int_equal(r.memory_bytes, 0);
    assert_int_equal(r.gpu, 0);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
}

static void test_selector_and_tolerations(void **state) {
    (void)state;
    pod_spec_t spec = {.name = "p", .cpu = "1", .memory = "1Gi"};
    assert_int_equal(kv_list_put(&spec.node_selector, "team", "web"), 0);
    assert_int_equal(kv_list_put(&spec.node_selector, "disk", "ssd"), 0);
    const pod_toleration_t tols[2] = {{"dedicated", "Equal", "web", "NoSchedule"},
                                      {"spot", "Exists", NULL, NULL}};
    spec.tolerations = tols;
    spec.n_tolerations = 2;
    k8s_pod_t *pod = roundtrip(&spec);
    assert_int_equal(pod->spec->n_nodeselector, 2);
    assert_string_equal(pod->spec->nodeselector[0]->key, "disk");
    assert_string_equal(pod->spec->nodeselector[0]->value, "ssd");
    assert_string_equal(pod->spec->nodeselector[1]->key, "team");
    assert_string_equal(pod->spec->nodeselector[1]->value, "web");
    assert_int_equal(pod->spec->n_tolerations, 2);
    assert_string_equal(pod->spec->tolerations[0]->key, "dedicated");
    assert_string_equal(pod->spec->tolerations[0]->operator_, "Equal");
    assert_string_equal(pod->spec->tolerations[0]->value, "web");
    assert_string_equal(pod->spec->tolerations[0]->effect, "NoSchedule");
    assert_string_equal(pod->spec->tolerations[1]->key, "spot");
    assert_string_equal(pod->spec->tolerations[1]->operator_, "Exists");
    assert_null(pod->spec->tolerations[1]->value);
    assert_null(pod->spec->tolerations[1]->effect);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    kv_list_clear(&spec.node_selector);
}

/* Each resource's bad value is reported under its own name; out is left alone. */
static void test_bad_quantity(void **state) {
    (void)state;
    static const struct {
        pod_spec_t spec;
        const char *msg;
    } cases[] = {
        {{.cpu = "lots", .memory = "1Gi"}, "cpu: invalid quantity \"lots\""},
        {{.cpu = "1", .memory = "1Gx"}, "memory: invalid quantity \"1Gx\""},
        {{.cpu = "1", .memory = "1Gi", .gpu = "one"}, "gpu: invalid quantity \"one\""},
        {{.cpu = "", .memory = "1Gi"}, "cpu: invalid quantity \"\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        uint8_t *bytes = (uint8_t *)"untouched";
        size_t len = 42;
        frugal_err_t err = {0};
        assert_int_equal(pod_spec_pack(&cases[i].spec, &bytes, &len, &err), FRUGAL_EINVAL);
        assert_int_equal(err.code, FRUGAL_EINVAL);
        assert_string_equal(err.msg, cases[i].msg);
        assert_string_equal((const char *)bytes, "untouched");
        assert_int_equal(len, 42);
    }
}

/* Memory and GPUs are checked in whole units: a byte count too large in milli-units
 * is still a valid memory quantity. */
static void test_memory_whole_units(void **state) {
    (void)state;
    pod_spec_t spec = {.cpu = "1", .memory = "7Ei"};
    k8s_pod_t *pod = roundtrip(&spec);
    resources_t r;
    frugal_err_t err = {0};
    assert_int_equal(pod_effective_request(pod, &r, &err), 0);
    assert_int_equal(r.cpu_milli, 1000);
    assert_int_equal(r.memory_bytes, 7LL << 60); /* 8070450532247928832 bytes */
    assert_int_equal(r.gpu, 0);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
}

/* The owner is the controller BestOptions reads a lifetime from, the creation time the
 * arrival demand-fit reads; both absent: unknown lifetime, no creation time. */
static void test_owner_and_created(void **state) {
    (void)state;
    pod_spec_t spec = {.cpu = "1", .owner_kind = "Job", .created_s = 1767225600};
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(pod_spec_pack(&spec, &bytes, &len, NULL), 0);
    pod_summary_t s;
    assert_int_equal(pod_decode_summary(bytes, len, &s, NULL), 0);
    free(bytes);
    assert_int_equal(s.request.cpu_milli, 1000);
    assert_int_equal(s.lifetime, POD_LIFETIME_SHORT);
    assert_int_equal(s.created_ms, 1767225600000LL);
    assert_true(s.identity == 0); /* no uid, no name */

    pod_spec_t plain = {.cpu = "1", .name = "web-0"};
    assert_int_equal(pod_spec_pack(&plain, &bytes, &len, NULL), 0);
    assert_int_equal(pod_decode_summary(bytes, len, &s, NULL), 0);
    free(bytes);
    assert_int_equal(s.lifetime, POD_LIFETIME_UNKNOWN);
    assert_int_equal(s.created_ms, -1);
    assert_true(s.identity != 0); /* default/web-0 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources),
        cmocka_unit_test(test_absent_resources),
        cmocka_unit_test(test_selector_and_tolerations),
        cmocka_unit_test(test_bad_quantity),
        cmocka_unit_test(test_memory_whole_units),
        cmocka_unit_test(test_owner_and_created),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
