/* Unit tests of Escalator's calculations and CA's similar-group split
 * (server/core/escalator.c): every worked example of docs/escalator.md exactly, a group
 * at max (max_size and the cluster limits), memory-dominant utilisation, pods without
 * requests, nodes of different allocatable, and the split's ties and maxima. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "escalator.h"
#include "kube_json.h"
#include "node_info.h"

#define MB (1000LL * 1000LL)

static void assert_close(double got, double want) {
    if (fabs(got - want) > 1e-9)
        fail_msg("got %.12f, want %.12f", got, want);
}

/* count pods of request r on nodes nodes of allocatable a. */
static void fill(escalator_group_t *g, int64_t nodes, resources_t a, int64_t count, resources_t r) {
    for (int64_t i = 0; i < nodes; i++)
        assert_true(escalator_add_node(g, &a));
    for (int64_t i = 0; i < count; i++)
        assert_null(escalator_add_pod(g, &r, false));
}

/* 10 pods of 500m / 100 MB on 2 nodes of 1000m / 4000 MB, threshold 70. */
static void test_example_utilisation_and_delta(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_group_init(&g, ESCALATOR_DEFAULT_THRESHOLD, false, NULL);
    fill(&g, 2, (resources_t){1000, 4000 * MB, 0}, 10, (resources_t){500, 100 * MB, 0});
    assert_int_equal(g.pods, 10);
    assert_int_equal(g.requests.cpu_milli, 5000);
    assert_int_equal(g.capacity.memory_bytes, 8000 * MB);
    escalator_result_t r;
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.cpu_percent, 250.0);
    assert_close(r.memory_percent, 12.5);
    assert_close(r.used_percent, 250.0);
    assert_false(r.from_zero);
    assert_int_equal(r.delta_wanted, 6); /* ceil(5.142857...) */
    assert_int_equal(r.delta, 6);
    assert_false(r.capped);
    assert_close(r.cpu_after, 62.5); /* 8 nodes */
    assert_close(r.memory_after, 3.125);
}

static void test_below_and_at_threshold(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_result_t r;
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 2, (resources_t){1000, 4000 * MB, 0}, 2, (resources_t){500, 100 * MB, 0});
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.used_percent, 50.0);
    assert_int_equal(r.delta, 0);
    /* Exactly at the threshold: nothing to add; just above: one node. */
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 10, (resources_t){1000, 4000 * MB, 0}, 7, (resources_t){1000, MB, 0});
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.used_percent, 70.0);
    assert_int_equal(r.delta, 0);
    resources_t one = {1, 0, 0};
    escalator_add_pod(&g, &one, false);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_int_equal(r.delta, 1);
    /* 140 % on 3 nodes: exactly 3 more, no rounding up past a whole number. */
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 3, (resources_t){1000, 4000 * MB, 0}, 42, (resources_t){100, MB, 0});
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.used_percent, 140.0);
    assert_int_equal(r.delta, 3);
}

static void test_memory_dominant(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_group_init(&g, 70, false, NULL);
    /* 4 pods of 100m / 1800 MB on 2 nodes of 2000m / 4000 MB: cpu 10 %, memory 90 %. */
    fill(&g, 2, (resources_t){2000, 4000 * MB, 0}, 4, (resources_t){100, 1800 * MB, 0});
    escalator_result_t r;
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.cpu_percent, 10.0);
    assert_close(r.memory_percent, 90.0);
    assert_close(r.used_percent, 90.0);
    assert_int_equal(r.delta, 1); /* ceil((90 - 70) / 70 x 2) = ceil(0.571...) */
    assert_close(r.memory_after, 60.0);
}

static void test_from_zero(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_result_t r;
    resources_t node = {1000, 4000 * MB, 0};
    escalator_group_init(&g, 70, false, &node);
    resources_t pod = {1800, 0, 0};
    assert_non_null(escalator_add_pod(&g, &pod, true)); /* no memory request */
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_true(r.from_zero);
    assert_true(isinf(r.used_percent));
    assert_int_equal(r.delta, 3); /* ceil(1800 / 1000 / 70 x 100) = ceil(2.571...) */
    assert_close(r.cpu_after, 60.0);
    assert_int_equal(escalator_delta_from_zero(&pod, &node, 70), 3);

    /* No cached capacity: one node. */
    escalator_group_init(&g, 70, false, NULL);
    escalator_add_pod(&g, &pod, true);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_true(r.from_zero);
    assert_int_equal(r.delta, 1);

    /* No nodes and no requests: nothing to do. */
    escalator_group_init(&g, 70, false, &node);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_false(r.from_zero);
    assert_close(r.used_percent, 0.0);
    assert_int_equal(r.delta, 0);
    resources_t none = {0, 0, 0};
    assert_int_equal(escalator_delta_from_zero(&none, &node, 70), 0);
    /* Memory the larger resource from zero: 9000 MB on 4000 MB nodes at 70 %. */
    resources_t big = {100, 9000 * MB, 0};
    assert_int_equal(escalator_delta_from_zero(&big, &node, 70), 4);
}

static void test_scale_on_starve(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_result_t r;
    resources_t node = {1000, 4000 * MB, 0};
    resources_t small = {100, 100 * MB, 0}, huge = {4000, 100 * MB, 0};
    /* Without the option a starving pod below the threshold changes nothing. */
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 4, node, 1, small);
    escalator_add_pod(&g, &huge, true);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_int_equal(r.delta, 2); /* 102.5 %: ceil(32.5 / 70 x 4) */
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 10, node, 1, small);
    escalator_add_pod(&g, &huge, true);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.used_percent, 41.0);
    assert_int_equal(r.delta, 0);
    assert_false(r.starved);
    /* With it the delta is at least 1. */
    escalator_group_init(&g, 70, true, NULL);
    fill(&g, 10, node, 1, small);
    escalator_add_pod(&g, &huge, true);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_int_equal(r.delta, 1);
    assert_true(r.starved);
    /* ... but only when a pod starves. */
    escalator_group_init(&g, 70, true, NULL);
    fill(&g, 10, node, 2, small);
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_int_equal(r.delta, 0);
}

static void test_group_at_max(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_result_t r;
    escalator_group_init(&g, 70, false, NULL);
    fill(&g, 2, (resources_t){1000, 4000 * MB, 0}, 10, (resources_t){500, 100 * MB, 0});
    /* max_size 5: 3 of the 6 wanted. */
    escalator_scale_up(&g, 5, NULL, NULL, &r);
    assert_int_equal(r.delta_wanted, 6);
    assert_int_equal(r.delta, 3);
    assert_true(r.capped);
    assert_close(r.cpu_after, 100.0);
    /* At max_size already. */
    escalator_scale_up(&g, 2, NULL, NULL, &r);
    assert_int_equal(r.delta, 0);
    assert_true(r.capped);
    /* The cluster cpu limit: 4500m left of 10 cores allows 4 more 1000m nodes. */
    autoprov_config_t limits = {.max_cpu_milli = 10000, .max_memory_bytes = INT64_MAX};
    autoprov_totals_t totals = {5500, 20000 * MB};
    escalator_scale_up(&g, 100, &limits, &totals, &r);
    assert_int_equal(r.delta, 4);
    assert_true(r.capped);
    /* The memory limit: 9000 MB left allows 2 more 4000 MB nodes. */
    limits = (autoprov_config_t){.max_cpu_milli = INT64_MAX, .max_memory_bytes = 29000 * MB};
    escalator_scale_up(&g, 100, &limits, &totals, &r);
    assert_int_equal(r.delta, 2);
    /* Limits far away: the whole delta. */
    limits = (autoprov_config_t){.max_cpu_milli = INT64_MAX, .max_memory_bytes = INT64_MAX};
    escalator_scale_up(&g, -1, &limits, &totals, &r);
    assert_int_equal(r.delta, 6);
    assert_false(r.capped);
}

static void test_pods_without_requests(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_group_init(&g, 70, false, NULL);
    resources_t node = {1000, 4000 * MB, 0};
    escalator_add_node(&g, &node);
    resources_t none = {0, 0, 0}, cpu_only = {200, 0, 0}, mem_only = {0, MB, 0},
                both = {200, MB, 0};
    assert_string_equal(escalator_add_pod(&g, &none, false), "no cpu and memory requests");
    assert_string_equal(escalator_add_pod(&g, &cpu_only, false), "no memory request");
    assert_string_equal(escalator_add_pod(&g, &mem_only, false), "no cpu request");
    assert_null(escalator_add_pod(&g, &both, false));
    assert_int_equal(g.pods, 4); /* counted all the same */
    assert_int_equal(g.pods_without_requests, 3);
    assert_int_equal(g.requests.cpu_milli, 400);
    escalator_result_t r;
    escalator_scale_up(&g, -1, NULL, NULL, &r);
    assert_close(r.cpu_percent, 40.0);
}

static void test_mixed_allocatable(void **state) {
    (void)state;
    escalator_group_t g;
    escalator_group_init(&g, 70, false, &(resources_t){500, MB, 0});
    assert_true(escalator_add_node(&g, &(resources_t){1000, 4000 * MB, 0}));
    assert_int_equal(g.node_allocatable.cpu_milli, 1000); /* the first node's, not the cache */
    assert_false(escalator_add_node(&g, &(resources_t){2000, 4000 * MB, 0}));
    assert_true(g.mixed_allocatable);
    assert_int_equal(g.nodes, 2);
    assert_int_equal(g.capacity.cpu_milli, 3000);
}

static const char *const KEYS3[] = {"a", "a", "a"};

static void test_split_examples(void **state) {
    (void)state;
    int64_t sizes[] = {1, 3, 6}, out[3];
    assert_int_equal(escalator_split(KEYS3, sizes, NULL, 3, 2, 1, out), 1);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 0);
    assert_int_equal(escalator_split(KEYS3, sizes, NULL, 3, 2, 4, out), 4);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 0);
    /* 10 more: 8 bring all three to 6, then A and B (lowest indexes) get one each. */
    assert_int_equal(escalator_split(KEYS3, sizes, NULL, 3, 0, 10, out), 10);
    assert_int_equal(out[0], 6);
    assert_int_equal(out[1], 4);
    assert_int_equal(out[2], 0);
}

/* The water filling agrees with placing one node at a time. */
static void test_split_matches_one_at_a_time(void **state) {
    (void)state;
    const char *keys[] = {"x", "y", "x", "x", NULL, "x"};
    int64_t sizes[] = {4, 0, 2, 2, 0, 9};
    int64_t max[] = {7, -1, 5, -1, -1, 10};
    for (int64_t add = 0; add <= 30; add++) {
        int64_t out[6], want[6] = {0};
        int64_t placed = escalator_split(keys, sizes, max, 6, 3, add, out);
        int64_t placed_want = 0;
        for (int64_t k = 0; k < add; k++) {
            size_t best = 6;
            for (size_t i = 0; i < 6; i++) {
                if (keys[i] == NULL || strcmp(keys[i], "x") != 0)
                    continue;
                int64_t s = sizes[i] + want[i];
                if (max[i] >= 0 && s >= max[i])
                    continue;
                if (best == 6 || s < sizes[best] + want[best])
                    best = i;
            }
            if (best == 6)
                break;
            want[best]++;
            placed_want++;
        }
        assert_int_equal(placed, placed_want);
        for (size_t i = 0; i < 6; i++)
            assert_int_equal(out[i], want[i]);
    }
}

static void test_split_limits(void **state) {
    (void)state;
    /* A group without a key is similar to none: it takes everything itself. */
    const char *keys[] = {NULL, NULL};
    int64_t sizes[] = {5, 0}, out[2];
    assert_int_equal(escalator_split(keys, sizes, NULL, 2, 0, 3, out), 3);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 0);
    /* The whole set at its maxima: only what fits is placed. */
    int64_t max[] = {6, 1};
    const char *same[] = {"k", "k"};
    assert_int_equal(escalator_split(same, sizes, max, 2, 0, 5, out), 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1);
    assert_int_equal(escalator_split(same, sizes, max, 2, 5, 5, out), 0); /* bad index */
    assert_int_equal(escalator_split(same, sizes, NULL, 2, 0, 0, out), 0);
}

static const char group_config[] =
    "node_groups:\n"
    "  - {id: a, machine_type: n1-standard-2, zone: us-central1-a, max_size: 5}\n"
    "  - {id: b, machine_type: n1-standard-2, zone: us-central1-b, max_size: 5}\n"
    "  - {id: web, machine_type: n1-standard-2, max_size: 5, labels: {team: web}}\n"
    "  - {id: any, machine_type: n1-standard-2, max_size: 5}\n";

/* The group of a node built from labels and a provider id. */
static long group_of(const frugal_config_t *cfg, const char *labels, const char *pid,
                     escalator_claim_t *how) {
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\", \"labels\": {%s}},"
             " \"spec\": {\"providerID\": \"%s\"}}",
             labels, pid);
    kube_node_list_t nodes;
    kube_json_error_t err;
    if (kube_json_parse_nodes(text, strlen(text), &nodes, &err) != 0)
        fail_msg("node JSON: %s", err.message);
    long g = escalator_group_of_node(cfg, nodes.items[0], how);
    kube_node_list_clear(&nodes);
    return g;
}

#define TYPE2 "\"node.kubernetes.io/instance-type\": \"n1-standard-2\""
#define ZONE_B "\"topology.kubernetes.io/zone\": \"us-central1-b\""

static void test_group_of_node(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(
        config_load_string("t.yaml", group_config, strlen(group_config), &cfg, &errors), 0);
    escalator_claim_t how;
    /* The label first, even against the provider id and the shape. */
    assert_int_equal(group_of(cfg, "\"frugal.io/node-group\": \"web\", " TYPE2 ", " ZONE_B,
                              "frugal://a/a-1", &how),
                     2);
    assert_int_equal(how, ESCALATOR_CLAIM_LABEL);
    assert_string_equal(escalator_claim_name(how), "label");
    /* A label naming no group falls through to the provider id. */
    assert_int_equal(group_of(cfg, "\"frugal.io/node-group\": \"zz\"", "frugal://b/b-7", &how), 1);
    assert_int_equal(how, ESCALATOR_CLAIM_PROVIDER_ID);
    /* Instance type and zone; then the group's labels; then a zone-less group. */
    assert_int_equal(group_of(cfg, TYPE2 ", " ZONE_B, "aws:///i-1", &how), 1);
    assert_int_equal(how, ESCALATOR_CLAIM_TYPE_ZONE);
    assert_int_equal(group_of(cfg, TYPE2 ", \"team\": \"web\"", "", &how), 2);
    assert_int_equal(group_of(cfg, TYPE2, "frugal://gone/gone-1", &how), 3);
    /* Another instance type: nobody's. */
    assert_int_equal(group_of(cfg, "\"node.kubernetes.io/instance-type\": \"m5.large\"", "", &how),
                     -1);
    assert_int_equal(how, ESCALATOR_CLAIM_NONE);
    assert_string_equal(escalator_claim_name(how), "none");
    config_free(cfg);
}

static void test_node_allocatable(void **state) {
    (void)state;
    static const char text[] =
        "{\"kind\": \"List\", \"items\": ["
        "{\"kind\": \"Node\", \"status\": {\"capacity\": {\"cpu\": \"2\", \"memory\": \"8Gi\"},"
        "  \"allocatable\": {\"cpu\": \"1930m\", \"memory\": \"6Gi\", \"nvidia.com/gpu\": \"1\"}}},"
        "{\"kind\": \"Node\", \"status\": {\"capacity\": {\"cpu\": \"2\", \"memory\": \"8Gi\"}}},"
        "{\"kind\": \"Node\"}]}";
    kube_node_list_t nodes;
    kube_json_error_t jerr;
    assert_int_equal(kube_json_parse_nodes(text, strlen(text), &nodes, &jerr), 0);
    resources_t r;
    frugal_err_t err;
    assert_int_equal(node_info_allocatable(nodes.items[0], &r, &err), 0);
    assert_int_equal(r.cpu_milli, 1930);
    assert_int_equal(r.memory_bytes, 6LL << 30);
    assert_int_equal(r.gpu, 1);
    assert_int_equal(node_info_allocatable(nodes.items[1], &r, &err), 0); /* capacity */
    assert_int_equal(r.cpu_milli, 2000);
    assert_int_equal(node_info_allocatable(nodes.items[2], &r, &err), 0);
    assert_int_equal(r.cpu_milli, 0);
    kube_node_list_clear(&nodes);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_utilisation_and_delta),
        cmocka_unit_test(test_below_and_at_threshold),
        cmocka_unit_test(test_memory_dominant),
        cmocka_unit_test(test_from_zero),
        cmocka_unit_test(test_scale_on_starve),
        cmocka_unit_test(test_group_at_max),
        cmocka_unit_test(test_pods_without_requests),
        cmocka_unit_test(test_mixed_allocatable),
        cmocka_unit_test(test_split_examples),
        cmocka_unit_test(test_split_matches_one_at_a_time),
        cmocka_unit_test(test_split_limits),
        cmocka_unit_test(test_group_of_node),
        cmocka_unit_test(test_node_allocatable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
