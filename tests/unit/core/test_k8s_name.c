/* Unit tests of server/core/k8s_name.c: the one validator of Kubernetes names (DNS
 * labels, qualified names, label values, taint effects) and the reserved labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "k8s.h"
#include "k8s_name.h"

/* n copies of c into buf (size > n), NUL-terminated. */
static char *repeat(char *buf, char c, size_t n) {
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

static void test_dns_label(void **state) {
    (void)state;
    char buf[128];
    assert_true(k8s_name_is_dns_label("pool-a"));
    assert_true(k8s_name_is_dns_label("a"));
    assert_true(k8s_name_is_dns_label("0a-9"));
    assert_true(k8s_name_is_dns_label(repeat(buf, 'a', 63)));
    assert_false(k8s_name_is_dns_label(repeat(buf, 'a', 64)));
    assert_false(k8s_name_is_dns_label(""));
    assert_false(k8s_name_is_dns_label(NULL));
    assert_false(k8s_name_is_dns_label("Pool_A"));
    assert_false(k8s_name_is_dns_label("pool.a"));
    assert_false(k8s_name_is_dns_label("-pool"));
    assert_false(k8s_name_is_dns_label("pool-"));
}

static void test_keys(void **state) {
    (void)state;
    assert_true(k8s_name_is_key("team"));
    assert_true(k8s_name_is_key("example.com/team"));
    assert_true(k8s_name_is_key("nvidia.com/gpu"));
    assert_true(k8s_name_is_key("a_b.c-d"));
    assert_true(k8s_name_is_key("Team.X"));
    assert_false(k8s_name_is_key(""));
    assert_false(k8s_name_is_key("-team"));
    assert_false(k8s_name_is_key("team-"));
    assert_false(k8s_name_is_key("Example.com/team"));
    assert_false(k8s_name_is_key("a/b/c"));
    assert_false(k8s_name_is_key("/team"));
    assert_false(k8s_name_is_key("example.com/"));
    assert_false(k8s_name_is_key("has space"));
    assert_false(k8s_name_is_key("ex..com/team"));
    assert_false(k8s_name_is_key("-ex.com/team"));
    assert_false(k8s_name_is_key(NULL));
}

/* The limits: name 63, each DNS label of the prefix 63, the prefix 253. */
static void test_key_lengths(void **state) {
    (void)state;
    char name[128], label[128], key[1024];
    assert_true(k8s_name_is_key(repeat(name, 'a', 63)));
    assert_false(k8s_name_is_key(repeat(name, 'a', 64)));
    snprintf(key, sizeof(key), "example.com/%s", repeat(name, 'n', 63));
    assert_true(k8s_name_is_key(key));
    snprintf(key, sizeof(key), "example.com/%s", repeat(name, 'n', 64));
    assert_false(k8s_name_is_key(key));
    /* A 64-character DNS label in the prefix, even under 253 in all. */
    snprintf(key, sizeof(key), "%s.com/team", repeat(label, 'p', 63));
    assert_true(k8s_name_is_key(key));
    snprintf(key, sizeof(key), "%s.com/team", repeat(label, 'p', 64));
    assert_false(k8s_name_is_key(key));
    /* Four 63-character labels and their dots: 255 > 253. */
    repeat(label, 'p', 63);
    snprintf(key, sizeof(key), "%s.%s.%s.%s/team", label, label, label, label);
    assert_false(k8s_name_is_key(key));
    /* 253 exactly: three 63s, then 61. */
    char last[64];
    snprintf(key, sizeof(key), "%s.%s.%s.%s/team", label, label, label, repeat(last, 'q', 61));
    assert_true(k8s_name_is_key(key));
}

/* The reasons are the phrases the config prints after `invalid label key "K": `. */
static void test_problems(void **state) {
    (void)state;
    assert_null(k8s_name_key_problem("example.com/team"));
    assert_string_equal(k8s_name_key_problem("Example.COM/x"),
                        "prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.', at "
                        "most 253 characters)");
    assert_string_equal(k8s_name_key_problem("-bad"),
                        "name must be 1-63 characters of [A-Za-z0-9._-], starting and ending with "
                        "an alphanumeric, after an optional DNS prefix and '/'");
    assert_non_null(k8s_name_key_problem(NULL));
    assert_null(k8s_name_value_problem(""));
    assert_null(k8s_name_value_problem(NULL));
    assert_string_equal(k8s_name_value_problem("web team"),
                        "must be empty or 1-63 characters of [A-Za-z0-9._-], starting and ending "
                        "with an alphanumeric");
}

static void test_values(void **state) {
    (void)state;
    char buf[128];
    assert_true(k8s_name_is_value(""));
    assert_true(k8s_name_is_value("web-1"));
    assert_true(k8s_name_is_value("Web_1.x"));
    assert_true(k8s_name_is_value(repeat(buf, 'v', 63)));
    assert_false(k8s_name_is_value(repeat(buf, 'v', 64)));
    assert_false(k8s_name_is_value("web 1"));
    assert_false(k8s_name_is_value("-x"));
    assert_false(k8s_name_is_value("x."));
    assert_false(k8s_name_is_value("a/b"));
}

static void test_taint_effects(void **state) {
    (void)state;
    assert_true(k8s_name_is_taint_effect("NoSchedule"));
    assert_true(k8s_name_is_taint_effect("PreferNoSchedule"));
    assert_true(k8s_name_is_taint_effect("NoExecute"));
    assert_false(k8s_name_is_taint_effect("noschedule"));
    assert_false(k8s_name_is_taint_effect(""));
    assert_false(k8s_name_is_taint_effect(NULL));
}

/* Every label the template node sets by itself, the GPU label included. */
static void test_reserved_labels(void **state) {
    (void)state;
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_INSTANCE_TYPE));
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_ZONE));
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_REGION));
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_HOSTNAME));
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_OS));
    assert_true(k8s_name_is_reserved_label(K8S_LABEL_ARCH));
    assert_true(k8s_name_is_reserved_label(FRUGAL_GPU_LABEL));
    assert_false(k8s_name_is_reserved_label("team"));
    assert_false(k8s_name_is_reserved_label("node.kubernetes.io/instance"));
    assert_false(k8s_name_is_reserved_label(FRUGAL_LABEL_NODE_GROUP));
    assert_false(k8s_name_is_reserved_label(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns_label),       cmocka_unit_test(test_keys),
        cmocka_unit_test(test_key_lengths),     cmocka_unit_test(test_problems),
        cmocka_unit_test(test_values),          cmocka_unit_test(test_taint_effects),
        cmocka_unit_test(test_reserved_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
