/* Unit tests of server/core/template.c: build the template node of hand-made groups, unpack
 * it, and check name, every label, taints, capacity, allocatable and the condition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "k8s.h"
#include "template.h"

#define GIB 1073741824LL

static machine_type_t types[] = {
    {"n1-standard-2", 2000, 8053063680LL, 0, NULL, 0.095, 0.02, {0}},
    {"half-core", 1500, 3 * GIB / 2, 0, NULL, -1, -1, {0}},
    {"gpu-t4", 4000, 15 * GIB, 2, "nvidia-tesla-t4", -1, -1, {0}},
};

static frugal_config_t make_config(void) {
    frugal_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.pricing.cpu = 0.033174;
    cfg.pricing.memory_gib = 0.004446;
    cfg.pricing.gpu = 0.7;
    cfg.pricing.builtin_catalog = true;
    cfg.machine_types = types;
    cfg.machine_types_count = sizeof(types) / sizeof(types[0]);
    return cfg;
}

static group_spec_t make_spec(const char *id, const char *mt, const char *zone) {
    group_spec_t spec;
    memset(&spec, 0, sizeof(spec));
    spec.id = (char *)id;
    spec.machine_type = (char *)mt;
    spec.zone = (char *)zone;
    spec.spot_price = -1;
    return spec;
}

static k8s_node_t *build(const group_spec_t *spec) {
    frugal_config_t cfg = make_config();
    uint8_t *buf = NULL;
    size_t len = 0;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (template_build(&cfg, spec, &buf, &len, &err) != 0)
        fail_msg("template_build: %s", err.msg);
    assert_non_null(buf);
    assert_true(len > 0);
    k8s_node_t *node = k8s__io__api__core__v1__node__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(node);
    return node;
}

static const char *label(const k8s_node_t *n, const char *key) {
    const char *v = NULL;
    int seen = 0;
    for (size_t i = 0; i < n->metadata->n_labels; i++) {
        if (strcmp(n->metadata->labels[i]->key, key) == 0) {
            v = n->metadata->labels[i]->value;
            seen++;
        }
    }
    assert_true(seen <= 1);
    return v;
}

static const char *capacity(const k8s_node_t *n, const char *key) {
    const char *v = NULL;
    int seen = 0;
    for (size_t i = 0; i < n->status->n_capacity; i++) {
        if (strcmp(n->status->capacity[i]->key, key) == 0) {
            v = n->status->capacity[i]->value->string;
            seen++;
        }
    }
    assert_true(seen <= 1);
    return v;
}

static const char *allocatable(const k8s_node_t *n, const char *key) {
    for (size_t i = 0; i < n->status->n_allocatable; i++)
        if (strcmp(n->status->allocatable[i]->key, key) == 0)
            return n->status->allocatable[i]->value->string;
    return NULL;
}

/* Capacity and allocatable hold the same resources with the same values. */
static void assert_capacity_is_allocatable(const k8s_node_t *n) {
    assert_int_equal(n->status->n_capacity, n->status->n_allocatable);
    for (size_t i = 0; i < n->status->n_capacity; i++) {
        const char *a = allocatable(n, n->status->capacity[i]->key);
        assert_non_null(a);
        assert_string_equal(a, n->status->capacity[i]->value->string);
    }
}

static void assert_ready(const k8s_node_t *n) {
    assert_int_equal(n->status->n_conditions, 1);
    assert_string_equal(n->status->conditions[0]->type, "Ready");
    assert_string_equal(n->status->conditions[0]->status, "True");
    assert_string_equal(n->status->conditions[0]->reason, "KubeletReady");
}

static void test_basic_group(void **state) {
    (void)state;
    kv_t labels[] = {{"team", "web"}, {"tier", "frontend"}};
    taint_t taints[] = {{"dedicated", "web", "NoSchedule"}, {"spot", "", "PreferNoSchedule"}};
    group_spec_t spec = make_spec("pool-a", "n1-standard-2", "us-central1-a");
    spec.labels.items = labels;
    spec.labels.count = 2;
    spec.taints.items = taints;
    spec.taints.count = 2;
    k8s_node_t *n = build(&spec);

    assert_string_equal(n->metadata->name, "template-pool-a");
    assert_int_equal(n->metadata->n_labels, 10);
    assert_string_equal(label(n, K8S_LABEL_OS), "linux");
    assert_string_equal(label(n, K8S_LABEL_ARCH), "amd64");
    assert_string_equal(label(n, K8S_LABEL_OS_BETA), "linux"); /* as kubelet sets them */
    assert_string_equal(label(n, K8S_LABEL_ARCH_BETA), "amd64");
    assert_string_equal(label(n, K8S_LABEL_HOSTNAME), "template-pool-a");
    assert_string_equal(label(n, K8S_LABEL_INSTANCE_TYPE), "n1-standard-2");
    assert_string_equal(label(n, K8S_LABEL_ZONE), "us-central1-a");
    assert_string_equal(label(n, K8S_LABEL_REGION), "us-central1");
    assert_string_equal(label(n, "team"), "web");
    assert_string_equal(label(n, "tier"), "frontend");
    assert_null(label(n, FRUGAL_LABEL_NODE_GROUP));
    assert_null(label(n, FRUGAL_GPU_LABEL));

    assert_non_null(n->spec);
    assert_int_equal(n->spec->n_taints, 2);
    assert_string_equal(n->spec->taints[0]->key, "dedicated");
    assert_string_equal(n->spec->taints[0]->value, "web");
    assert_string_equal(n->spec->taints[0]->effect, "NoSchedule");
    assert_string_equal(n->spec->taints[1]->key, "spot");
    assert_string_equal(n->spec->taints[1]->value, "");
    assert_string_equal(n->spec->taints[1]->effect, "PreferNoSchedule");
    assert_null(n->spec->providerid);

    assert_int_equal(n->status->n_capacity, 4);
    assert_string_equal(capacity(n, "cpu"), "2");
    assert_string_equal(capacity(n, "memory"), "7680Mi");
    assert_string_equal(capacity(n, "pods"), "110");
    assert_string_equal(capacity(n, "ephemeral-storage"), "100Gi");
    assert_null(capacity(n, "nvidia.com/gpu"));
    assert_capacity_is_allocatable(n);
    assert_ready(n);
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_no_zone_fractional_cpu(void **state) {
    (void)state;
    group_spec_t spec = make_spec("small", "half-core", NULL);
    k8s_node_t *n = build(&spec);
    assert_string_equal(n->metadata->name, "template-small");
    assert_int_equal(n->metadata->n_labels, 6);
    assert_null(label(n, K8S_LABEL_ZONE));
    assert_null(label(n, K8S_LABEL_REGION));
    assert_string_equal(capacity(n, "cpu"), "1500m");
    assert_string_equal(capacity(n, "memory"), "1536Mi");
    assert_int_equal(n->spec->n_taints, 0);
    assert_capacity_is_allocatable(n);
    assert_ready(n);
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

/* An operator's os or arch label carries over to the beta label kubelet sets beside it,
 * unless the beta label is given too. */
static void test_beta_labels_follow(void **state) {
    (void)state;
    group_spec_t spec = make_spec("arm", "n1-standard-2", NULL);
    kv_t labels[] = {{K8S_LABEL_ARCH, "arm64"}, {K8S_LABEL_OS_BETA, "plan9"}};
    spec.labels.items = labels;
    spec.labels.count = 2;
    k8s_node_t *n = build(&spec);
    assert_string_equal(label(n, K8S_LABEL_ARCH), "arm64");
    assert_string_equal(label(n, K8S_LABEL_ARCH_BETA), "arm64");
    assert_string_equal(label(n, K8S_LABEL_OS), "linux");
    assert_string_equal(label(n, K8S_LABEL_OS_BETA), "plan9");
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_gpu_group(void **state) {
    (void)state;
    kv_t extras[] = {{"example.com/fpga", "1"}, {"pods", "58"}};
    group_spec_t spec = make_spec("gpus", "gpu-t4", "europe-west4-b");
    spec.extra_resources.items = extras;
    spec.extra_resources.count = 2;
    k8s_node_t *n = build(&spec);
    assert_string_equal(label(n, FRUGAL_GPU_LABEL), "nvidia-tesla-t4");
    assert_string_equal(label(n, K8S_LABEL_REGION), "europe-west4");
    assert_string_equal(capacity(n, "nvidia.com/gpu"), "2");
    assert_string_equal(capacity(n, "cpu"), "4");
    assert_string_equal(capacity(n, "memory"), "15Gi");
    assert_string_equal(capacity(n, "example.com/fpga"), "1");
    assert_string_equal(capacity(n, "pods"), "58"); /* extra resources override */
    assert_int_equal(n->status->n_capacity, 6);
    assert_capacity_is_allocatable(n);
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_extra_gpu(void **state) {
    (void)state;
    /* NAP attaches GPUs to a plain machine type through extra resources. */
    kv_t extras[] = {{"amd.com/gpu", "1"}, {"cpu", "500m"}, {"nvidia.com/gpu", "1"}};
    group_spec_t spec = make_spec("nap-x", "n1-standard-2", NULL);
    spec.extra_resources.items = extras;
    spec.extra_resources.count = 3;
    k8s_node_t *n = build(&spec);
    assert_string_equal(capacity(n, "nvidia.com/gpu"), "1");
    assert_string_equal(capacity(n, "amd.com/gpu"), "1");
    assert_string_equal(capacity(n, "cpu"), "2500m");
    assert_capacity_is_allocatable(n);
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_similar_groups_differ_only_in_zone(void **state) {
    (void)state;
    kv_t labels[] = {{"team", "web"}};
    group_spec_t a = make_spec("web-a", "n1-standard-2", "us-central1-a");
    group_spec_t b = make_spec("web-b", "n1-standard-2", "us-central1-b");
    a.labels.items = b.labels.items = labels;
    a.labels.count = b.labels.count = 1;
    k8s_node_t *na = build(&a), *nb = build(&b);
    assert_int_equal(na->metadata->n_labels, nb->metadata->n_labels);
    for (size_t i = 0; i < na->metadata->n_labels; i++) {
        const char *key = na->metadata->labels[i]->key;
        if (strcmp(key, K8S_LABEL_HOSTNAME) == 0 || strcmp(key, K8S_LABEL_ZONE) == 0 ||
            strcmp(key, K8S_LABEL_REGION) == 0)
            continue;
        assert_non_null(label(nb, key));
        assert_string_equal(na->metadata->labels[i]->value, label(nb, key));
    }
    k8s__io__api__core__v1__node__free_unpacked(na, NULL);
    k8s__io__api__core__v1__node__free_unpacked(nb, NULL);
}

static void test_group_labels_override(void **state) {
    (void)state;
    kv_t labels[] = {{K8S_LABEL_ARCH, "arm64"}};
    group_spec_t spec = make_spec("arm", "n1-standard-2", NULL);
    spec.labels.items = labels;
    spec.labels.count = 1;
    k8s_node_t *n = build(&spec);
    assert_string_equal(label(n, K8S_LABEL_ARCH), "arm64");
    assert_int_equal(n->metadata->n_labels, 6);
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_errors(void **state) {
    (void)state;
    frugal_config_t cfg = make_config();
    uint8_t *buf = (uint8_t *)"untouched";
    size_t len = 99;
    frugal_err_t err;
    group_spec_t spec = make_spec("lost", "n1-standard-3", NULL);
    frugal_err_clear(&err);
    assert_int_equal(template_build(&cfg, &spec, &buf, &len, &err), FRUGAL_ENOTFOUND);
    assert_non_null(strstr(err.msg, "n1-standard-3"));
    assert_int_equal(len, 99);

    kv_t extras[] = {{"memory", "lots"}};
    spec = make_spec("bad", "n1-standard-2", NULL);
    spec.extra_resources.items = extras;
    spec.extra_resources.count = 1;
    assert_int_equal(template_build(&cfg, &spec, &buf, &len, &err), FRUGAL_EINVAL);
    assert_int_equal(len, 99);
}

/* From a machine type outside any config: its capacity, and no instance-type label
 * when it has no name; the spec's machine_type is not read. */
static void test_from_machine_type(void **state) {
    (void)state;
    machine_type_t mt = {NULL, 3000, 6 * GIB, 1, NULL, -1, -1, {0}};
    group_spec_t spec = make_spec("adhoc", "ignored", "europe-west4-b");
    uint8_t *buf = NULL;
    size_t len = 0;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(template_build_machine(&mt, &spec, &buf, &len, &err), 0);
    k8s_node_t *n = k8s__io__api__core__v1__node__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(n);
    assert_string_equal(n->metadata->name, "template-adhoc");
    assert_null(label(n, K8S_LABEL_INSTANCE_TYPE));
    assert_string_equal(label(n, K8S_LABEL_REGION), "europe-west4");
    assert_string_equal(capacity(n, K8S_RESOURCE_CPU), "3");
    assert_string_equal(capacity(n, K8S_RESOURCE_MEMORY), "6Gi");
    assert_string_equal(capacity(n, K8S_RESOURCE_NVIDIA_GPU), "1");
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);

    mt.name = "custom-3";
    assert_int_equal(template_build_machine(&mt, &spec, &buf, &len, &err), 0);
    n = k8s__io__api__core__v1__node__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(n);
    assert_string_equal(label(n, K8S_LABEL_INSTANCE_TYPE), "custom-3");
    k8s__io__api__core__v1__node__free_unpacked(n, NULL);
}

static void test_region_of_zone(void **state) {
    (void)state;
    char buf[64];
    assert_string_equal(template_region_of_zone("us-central1-a", buf, sizeof(buf)), "us-central1");
    assert_string_equal(template_region_of_zone("europe-west4-b", buf, sizeof(buf)),
                        "europe-west4");
    assert_string_equal(template_region_of_zone("local", buf, sizeof(buf)), "local");
    assert_string_equal(template_region_of_zone("", buf, sizeof(buf)), "");
    char small[4];
    assert_string_equal(template_region_of_zone("us-central1-a", small, sizeof(small)), "us-");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_group),
        cmocka_unit_test(test_no_zone_fractional_cpu),
        cmocka_unit_test(test_beta_labels_follow),
        cmocka_unit_test(test_gpu_group),
        cmocka_unit_test(test_extra_gpu),
        cmocka_unit_test(test_similar_groups_differ_only_in_zone),
        cmocka_unit_test(test_group_labels_override),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_from_machine_type),
        cmocka_unit_test(test_region_of_zone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
