/* Unit tests of template node decoding (server/core/node_info.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "k8s.h"
#include "node_info.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry label_entry_t;
typedef K8s__Io__Api__Core__V1__NodeStatus__CapacityEntry capacity_entry_t;
typedef K8s__Io__Api__Core__V1__NodeStatus__AllocatableEntry allocatable_entry_t;

/* A node description: NULL-terminated pairs / triples of strings. */
typedef struct node_desc {
    const char *name;
    const char *const *labels;      /* key, value, ..., NULL */
    const char *const *capacity;    /* resource, quantity, ..., NULL */
    const char *const *allocatable; /* resource, quantity, ..., NULL */
    const char *const *taints;      /* key, value, effect, ..., NULL */
} node_desc_t;

static size_t count_items(const char *const *v, size_t per) {
    size_t n = 0;
    while (v && v[n * per])
        n++;
    return n;
}

/* Serialize the described v1.Node (malloc'ed). */
static uint8_t *node_pack(const node_desc_t *d, size_t *len) {
    k8s_node_t node = K8S__IO__API__CORE__V1__NODE__INIT;
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    k8s_node_spec_t spec = K8S__IO__API__CORE__V1__NODE_SPEC__INIT;
    k8s_node_status_t status = K8S__IO__API__CORE__V1__NODE_STATUS__INIT;
    node.metadata = &meta;
    node.spec = &spec;
    node.status = &status;
    meta.name = (char *)d->name;

    size_t nl = count_items(d->labels, 2), nc = count_items(d->capacity, 2);
    size_t na = count_items(d->allocatable, 2), nt = count_items(d->taints, 3);
    label_entry_t labels[16], *lp[16];
    capacity_entry_t caps[16], *cp[16];
    allocatable_entry_t allocs[16], *ap[16];
    k8s_quantity_t qc[16], qa[16];
    k8s_taint_t taints[16], *tp[16];
    for (size_t i = 0; i < nl; i++) {
        label_entry_t e =
            K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
        e.key = (char *)d->labels[2 * i];
        e.value = (char *)d->labels[2 * i + 1];
        labels[i] = e;
        lp[i] = &labels[i];
    }
    for (size_t i = 0; i < nc; i++) {
        capacity_entry_t e = K8S__IO__API__CORE__V1__NODE_STATUS__CAPACITY_ENTRY__INIT;
        k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
        q.string = (char *)d->capacity[2 * i + 1];
        qc[i] = q;
        e.key = (char *)d->capacity[2 * i];
        e.value = &qc[i];
        caps[i] = e;
        cp[i] = &caps[i];
    }
    for (size_t i = 0; i < na; i++) {
        allocatable_entry_t e = K8S__IO__API__CORE__V1__NODE_STATUS__ALLOCATABLE_ENTRY__INIT;
        k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
        q.string = (char *)d->allocatable[2 * i + 1];
        qa[i] = q;
        e.key = (char *)d->allocatable[2 * i];
        e.value = &qa[i];
        allocs[i] = e;
        ap[i] = &allocs[i];
    }
    for (size_t i = 0; i < nt; i++) {
        k8s_taint_t t = K8S__IO__API__CORE__V1__TAINT__INIT;
        t.key = (char *)d->taints[3 * i];
        t.value = (char *)d->taints[3 * i + 1];
        t.effect = (char *)d->taints[3 * i + 2];
        taints[i] = t;
        tp[i] = &taints[i];
    }
    meta.n_labels = nl;
    meta.labels = lp;
    status.n_capacity = nc;
    status.capacity = cp;
    status.n_allocatable = na;
    status.allocatable = ap;
    spec.n_taints = nt;
    spec.taints = tp;
    *len = k8s__io__api__core__v1__node__get_packed_size(&node);
    uint8_t *buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    k8s__io__api__core__v1__node__pack(&node, buf);
    return buf;
}

static void decode_ok(const node_desc_t *d, node_info_t *info) {
    size_t len;
    uint8_t *buf = node_pack(d, &len);
    frugal_err_t err = {0};
    assert_int_equal(node_info_decode(buf, len, info, &err), 0);
    free(buf);
}

static const char *const std8_cap[] = {"cpu", "8", "memory", "30Gi", "pods", "110", NULL};

static void test_basic(void **state) {
    (void)state;
    static const char *const labels[] = {
        K8S_LABEL_INSTANCE_TYPE,
        "n1-standard-8",
        K8S_LABEL_ZONE,
        "us-central1-a",
        K8S_LABEL_REGION,
        "us-central1",
        K8S_LABEL_HOSTNAME,
        "template-pool-a",
        "team",
        "web",
        NULL,
    };
    node_desc_t d = {"template-pool-a", labels, std8_cap, NULL, NULL};
    node_info_t info;
    decode_ok(&d, &info);
    assert_string_equal(info.name, "template-pool-a");
    assert_string_equal(info.instance_type, "n1-standard-8");
    assert_string_equal(info.zone, "us-central1-a");
    assert_int_equal(info.capacity.cpu_milli, 8000);
    assert_int_equal(info.capacity.memory_bytes, 30LL << 30);
    assert_int_equal(info.capacity.gpu, 0);
    assert_int_equal(info.max_pods, 110);
    assert_false(info.has_gpu);
    assert_non_null(info.similarity_key);
    assert_non_null(strstr(info.similarity_key, "n1-standard-8"));
    assert_non_null(strstr(info.similarity_key, "team=web"));
    assert_null(strstr(info.similarity_key, "us-central1"));
    assert_null(strstr(info.similarity_key, "template-pool-a"));
    node_info_free(&info);
}

static void test_gpu_detection(void **state) {
    (void)state;
    static const char *const nvidia[] = {"cpu", "4", "memory", "15Gi", K8S_RESOURCE_NVIDIA_GPU,
                                         "2",   NULL};
    static const char *const amd[] = {"cpu", "4", "memory", "15Gi", K8S_RESOURCE_AMD_GPU,
                                      "1",   NULL};
    static const char *const zero[] = {"cpu", "4", "memory", "15Gi", K8S_RESOURCE_NVIDIA_GPU,
                                       "0",   NULL};
    static const char *const gpu_label[] = {FRUGAL_GPU_LABEL, "nvidia-tesla-t4", NULL};
    node_info_t info;

    node_desc_t d = {"n", NULL, nvidia, NULL, NULL};
    decode_ok(&d, &info);
    assert_true(info.has_gpu);
    assert_int_equal(info.capacity.gpu, 2);
    node_info_free(&info);

    d.capacity = amd;
    decode_ok(&d, &info);
    assert_true(info.has_gpu);
    assert_int_equal(info.capacity.gpu, 1);
    node_info_free(&info);

    d.capacity = zero;
    decode_ok(&d, &info);
    assert_false(info.has_gpu);
    node_info_free(&info);

    /* GPU counts whose sum overflows make the template undecodable, not negative. */
    static const char *const overflow[] = {
        "cpu", "4", K8S_RESOURCE_NVIDIA_GPU, "9223372036854775807", K8S_RESOURCE_AMD_GPU,
        "1",   NULL};
    d.capacity = overflow;
    size_t len;
    uint8_t *bytes = node_pack(&d, &len);
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(node_info_decode(bytes, len, &info, &err), FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "overflow"));
    free(bytes);
    d.capacity = zero;

    /* The GPU label alone (a template whose GPUs are not in capacity yet). */
    d.labels = gpu_label;
    decode_ok(&d, &info);
    assert_true(info.has_gpu);
    assert_int_equal(info.capacity.gpu, 0);
    node_info_free(&info);
}

static void test_allocatable_fallback(void **state) {
    (void)state;
    static const char *const alloc[] = {"cpu", "3500m", "memory", "12Gi", NULL};
    node_desc_t d = {"n", NULL, NULL, alloc, NULL};
    node_info_t info;
    decode_ok(&d, &info);
    assert_int_equal(info.capacity.cpu_milli, 3500);
    assert_null(info.instance_type);
    assert_null(info.zone);
    /* Capacity wins over allocatable when both are present. */
    d.capacity = std8_cap;
    node_info_free(&info);
    decode_ok(&d, &info);
    assert_int_equal(info.capacity.cpu_milli, 8000);
    node_info_free(&info);
}

static void test_similarity(void **state) {
    (void)state;
    static const char *const a[] = {
        K8S_LABEL_INSTANCE_TYPE,
        "n1-standard-8",
        K8S_LABEL_ZONE,
        "us-central1-a",
        K8S_LABEL_REGION,
        "us-central1",
        K8S_LABEL_HOSTNAME,
        "template-a",
        "team",
        "web",
        "failure-domain.beta.kubernetes.io/zone",
        "us-central1-a",
        NULL,
    };
    /* Same but another zone/region/hostname, labels in another order. */
    static const char *const b[] = {
        "team",           "web",          K8S_LABEL_HOSTNAME,
        "template-b",     K8S_LABEL_ZONE, "europe-west1-b",
        K8S_LABEL_REGION, "europe-west1", K8S_LABEL_INSTANCE_TYPE,
        "n1-standard-8",  NULL,
    };
    static const char *const c[] = {
        K8S_LABEL_INSTANCE_TYPE, "n1-standard-8", "team", "db", NULL,
    };
    static const char *const d_type[] = {
        K8S_LABEL_INSTANCE_TYPE, "n1-highmem-8", "team", "web", NULL,
    };
    static const char *const taint1[] = {"dedicated", "web",       "NoSchedule", "x",
                                         "",          "NoExecute", NULL};
    static const char *const taint2[] = {"x",   "",           "NoExecute", "dedicated",
                                         "web", "NoSchedule", NULL};
    static const char *const taint3[] = {"dedicated", "web", "PreferNoSchedule", NULL};

    node_info_t ia, ib, ic, id;
    node_desc_t da = {"a", a, std8_cap, NULL, taint1}, db = {"b", b, std8_cap, NULL, taint2};
    decode_ok(&da, &ia);
    decode_ok(&db, &ib);
    assert_string_equal(ia.similarity_key, ib.similarity_key);

    node_desc_t dc = {"c", c, std8_cap, NULL, taint1};
    decode_ok(&dc, &ic);
    assert_string_not_equal(ia.similarity_key, ic.similarity_key);
    node_info_free(&ic);

    node_desc_t dd = {"d", d_type, std8_cap, NULL, taint1};
    decode_ok(&dd, &id);
    assert_string_not_equal(ia.similarity_key, id.similarity_key);
    node_info_free(&id);

    db.taints = taint3;
    node_info_free(&ib);
    decode_ok(&db, &ib);
    assert_string_not_equal(ia.similarity_key, ib.similarity_key);
    db.taints = NULL;
    node_info_free(&ib);
    decode_ok(&db, &ib);
    assert_string_not_equal(ia.similarity_key, ib.similarity_key);
    node_info_free(&ib);
    node_info_free(&ia);

    /* Without an instance type the capacity stands for the machine type. */
    static const char *const cap4[] = {"cpu", "4", "memory", "15Gi", NULL};
    node_desc_t e1 = {"e1", NULL, std8_cap, NULL, NULL}, e2 = {"e2", NULL, cap4, NULL, NULL};
    decode_ok(&e1, &ia);
    decode_ok(&e2, &ib);
    assert_string_not_equal(ia.similarity_key, ib.similarity_key);
    node_info_free(&ia);
    node_info_free(&ib);
}

static void test_invalid(void **state) {
    (void)state;
    frugal_err_t err = {0};
    node_info_t info;
    static const uint8_t garbage[] = {0x0a, 0x50, 0x01};
    assert_int_equal(node_info_decode(garbage, sizeof(garbage), &info, &err), FRUGAL_EINVAL);
    assert_true(strlen(err.msg) > 0);

    static const char *const bad_cpu[] = {"cpu", "eight", NULL};
    node_desc_t d = {"n", NULL, bad_cpu, NULL, NULL};
    size_t len;
    uint8_t *buf = node_pack(&d, &len);
    assert_int_equal(node_info_decode(buf, len, &info, &err), FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "cpu"));
    free(buf);

    /* A negative capacity is refused, naming the resource and the quantity. */
    static const char *const negative[][4] = {{"cpu", "-4", "memory", "1Gi"},
                                              {"cpu", "4", "memory", "-1Gi"},
                                              {"cpu", "4", "nvidia.com/gpu", "-1"}};
    for (size_t i = 0; i < 3; i++) {
        const char *caps[] = {negative[i][0], negative[i][1], negative[i][2], negative[i][3], NULL};
        node_desc_t nd = {"n", NULL, caps, NULL, NULL};
        buf = node_pack(&nd, &len);
        assert_int_equal(node_info_decode(buf, len, &info, &err), FRUGAL_EINVAL);
        assert_non_null(strstr(err.msg, "negative quantity"));
        assert_non_null(strstr(err.msg, i == 0 ? "cpu" : i == 1 ? "memory" : "nvidia.com/gpu"));
        free(buf);
    }

    /* An empty message is a node without anything: decodable, no cpu. */
    static const uint8_t empty[1];
    assert_int_equal(node_info_decode(empty, 0, &info, &err), 0);
    assert_int_equal(info.capacity.cpu_milli, 0);
    node_info_free(&info);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_gpu_detection),
        cmocka_unit_test(test_allocatable_fallback),
        cmocka_unit_test(test_similarity),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
