/* pod_file.h: the one reader of the pod entries `ctl propose` and `ctl best-options`
 * read, with one strictness (unknown keys are errors) and FILE:LINE:COL messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pod_file.h"

static yaml_tree_node_t *load(const char *text) {
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t yerr;
    assert_int_equal(yaml_tree_load(text, strlen(text), &root, &yerr), 0);
    return root;
}

/* pod_file_read_pods of text must fail with exactly msg. */
static void expect_error(const char *text, const char *msg) {
    yaml_tree_node_t *root = load(text);
    pod_file_pods_t pods = {NULL, 7};
    frugal_err_t err = {0};
    assert_int_equal(pod_file_read_pods("p.yaml", root, &pods, &err), FRUGAL_EINVAL);
    assert_string_equal(err.msg, msg);
    assert_null(pods.items);
    assert_int_equal(pods.count, 0);
    yaml_tree_free(root);
}

static void test_full_entry(void **state) {
    (void)state;
    yaml_tree_node_t *root =
        load("- name: web\n"
             "  namespace: shop\n"
             "  cpu: 500m\n"
             "  memory: 64Mi\n"
             "  gpu: 1\n"
             "  count: 3\n"
             "  owner: ReplicaSet\n"
             "  created: 2026-01-01T00:00:30+00:30\n"
             "  node_selector: {team: web, disktype: ssd}\n"
             "  tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule},\n"
             "                {key: batch}]\n"
             "- {cpu: 1}\n");
    pod_file_pods_t pods;
    frugal_err_t err = {0};
    assert_int_equal(pod_file_read_pods("p.yaml", root, &pods, &err), 0);
    assert_int_equal(pods.count, 2);
    const pod_spec_t *s = &pods.items[0].spec;
    assert_string_equal(s->name, "web");
    assert_string_equal(s->namespace_, "shop");
    assert_string_equal(s->cpu, "500m");
    assert_string_equal(s->memory, "64Mi");
    assert_string_equal(s->gpu, "1");
    assert_int_equal(pods.items[0].count, 3);
    assert_string_equal(s->owner_kind, "ReplicaSet");
    assert_int_equal(s->created_s, 1767225600 + 30 - 1800);
    assert_int_equal(s->node_selector.count, 2);
    assert_int_equal(s->n_tolerations, 2);
    assert_string_equal(s->tolerations[0].operator_, "Equal");
    assert_string_equal(s->tolerations[0].value, "web");
    assert_string_equal(s->tolerations[1].key, "batch");
    assert_null(s->tolerations[1].operator_); /* left unset */
    assert_null(s->tolerations[1].effect);
    /* Defaults of a minimal entry. */
    s = &pods.items[1].spec;
    assert_null(s->name);
    assert_null(s->namespace_);
    assert_null(s->memory);
    assert_int_equal(pods.items[1].count, 1);
    assert_null(s->owner_kind);
    assert_int_equal(s->created_s, 0);
    assert_int_equal(s->n_tolerations, 0);
    /* What the reader accepts packs. */
    uint8_t *bytes;
    size_t len;
    assert_int_equal(pod_spec_pack(&pods.items[0].spec, &bytes, &len, &err), 0);
    free(bytes);
    pod_file_pods_free(&pods);
    assert_null(pods.items);
    yaml_tree_free(root);
}

static void test_unknown_keys_are_errors(void **state) {
    (void)state;
    expect_error("- {name: a, cpus: 1}\n",
                 "p.yaml:1:13: unknown key cpus (expected one of name, namespace, cpu, memory, "
                 "gpu, node_selector, tolerations, count, owner, created)");
    expect_error("- name: a\n  tolerations:\n    - {key: k, operater: Exists}\n",
                 "p.yaml:3:16: unknown key operater (expected one of key, operator, value, "
                 "effect)");
}

static void test_values_are_checked(void **state) {
    (void)state;
    expect_error("- {cpu: lots}\n", "p.yaml:1:9: cpu: invalid quantity \"lots\"");
    expect_error("- {memory: 12XB}\n", "p.yaml:1:12: memory: invalid quantity \"12XB\"");
    expect_error("- {gpu: -1}\n", "p.yaml:1:9: gpu: invalid quantity \"-1\"");
    expect_error("- {count: 100001}\n",
                 "p.yaml:1:11: count: expected an integer in 0..100000, got \"100001\"");
    expect_error("- {count: two}\n",
                 "p.yaml:1:11: count: expected an integer in 0..100000, got \"two\"");
    expect_error("- {name: [a]}\n", "p.yaml:1:10: name: expected a scalar");
    expect_error("- {node_selector: [a]}\n", "p.yaml:1:19: node_selector: expected a mapping");
    expect_error("- {tolerations: {key: a}}\n", "p.yaml:1:17: tolerations: expected a list");
    expect_error("- {created: yesterday}\n",
                 "p.yaml:1:13: created: expected RFC 3339 (2026-01-02T15:04:05Z) or unix "
                 "seconds, got \"yesterday\"");
    expect_error("- {created: 1970-01-01T00:00:00Z}\n",
                 "p.yaml:1:13: created: expected RFC 3339 (2026-01-02T15:04:05Z) or unix "
                 "seconds, got \"1970-01-01T00:00:00Z\"");
    expect_error("- just-a-name\n", "p.yaml:1:3: expected a mapping");
    expect_error("{name: a}\n", "p.yaml:1:1: expected a list of pods");
}

static void test_count_zero_and_empty(void **state) {
    (void)state;
    yaml_tree_node_t *root = load("- {cpu: 1, count: 0}\n");
    pod_file_pods_t pods;
    assert_int_equal(pod_file_read_pods("p.yaml", root, &pods, NULL), 0);
    assert_int_equal(pods.items[0].count, 0);
    pod_file_pods_free(&pods);
    yaml_tree_free(root);
    assert_int_equal(pod_file_read_pods("p.yaml", NULL, &pods, NULL), 0);
    assert_int_equal(pods.count, 0);
}

static void test_load(void **state) {
    (void)state;
    char path[] = "/tmp/test_pod_file_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char bad[] = "- {cpu: 1\n";
    assert_int_equal(write(fd, bad, sizeof(bad) - 1), (ssize_t)(sizeof(bad) - 1));
    close(fd);
    yaml_tree_node_t *root = NULL;
    frugal_err_t err = {0};
    assert_int_equal(pod_file_load(path, &root, &err), FRUGAL_EINVAL);
    assert_int_equal(strncmp(err.msg, path, strlen(path)), 0);
    assert_int_equal(err.msg[strlen(path)], ':');
    unlink(path);
    assert_int_equal(pod_file_load(path, &root, &err), FRUGAL_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_null(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_entry),
        cmocka_unit_test(test_unknown_keys_are_errors),
        cmocka_unit_test(test_values_are_checked),
        cmocka_unit_test(test_count_zero_and_empty),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
