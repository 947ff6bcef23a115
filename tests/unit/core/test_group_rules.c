/* Unit tests of server/core/group_rules.c: the one wording of each problem of a group's
 * labels and taints, the reserved labels only an operator may set, and the checks a
 * caller leaves out by passing NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "group_rules.h"

static void test_labels(void **state) {
    (void)state;
    char why[256];
    assert_int_equal(group_rules_label("team", "web", false, why, sizeof(why)), GROUP_RULE_OK);
    assert_int_equal(group_rules_label("example.com/tier", "", false, why, sizeof(why)),
                     GROUP_RULE_OK);
    assert_int_equal(group_rules_label("-bad", "x", true, why, sizeof(why)), GROUP_RULE_KEY);
    assert_non_null(strstr(why, "invalid label key \"-bad\": name must be 1-63 characters"));
    assert_int_equal(group_rules_label("team", "web team", true, why, sizeof(why)),
                     GROUP_RULE_VALUE);
    assert_non_null(
        strstr(why, "invalid label value \"web team\" for key team: must be empty or 1-63"));
    /* Reserved: a client may not set it, an operator may (the group's label wins). */
    assert_int_equal(group_rules_label("kubernetes.io/arch", "arm64", false, why, sizeof(why)),
                     GROUP_RULE_RESERVED);
    assert_string_equal(why, "label kubernetes.io/arch is set by frugal from the machine type "
                             "and zone");
    assert_int_equal(group_rules_label("kubernetes.io/arch", "arm64", true, why, sizeof(why)),
                     GROUP_RULE_OK);
    /* The label that names a node's group: an operator's, never an autoprovisioned group's. */
    assert_int_equal(group_rules_label("frugal.io/node-group", "web", false, why, sizeof(why)),
                     GROUP_RULE_RESERVED);
    assert_non_null(strstr(why, "label frugal.io/node-group names a node's group"));
    assert_int_equal(group_rules_label("frugal.io/node-group", "web", true, why, sizeof(why)),
                     GROUP_RULE_OK);
    /* No value: the key alone; no buffer: the verdict only. */
    assert_int_equal(group_rules_label("-bad", NULL, false, NULL, 0), GROUP_RULE_KEY);
    assert_int_equal(group_rules_label("team", NULL, false, NULL, 0), GROUP_RULE_OK);
    group_rules_label_twice("team", why, sizeof(why));
    assert_string_equal(why, "label team given twice");
}

static void test_taints(void **state) {
    (void)state;
    char why[256];
    assert_int_equal(group_rules_taint("dedicated", "web", "NoSchedule", why, sizeof(why)),
                     GROUP_RULE_OK);
    assert_int_equal(group_rules_taint("gpu", "", "NoExecute", why, sizeof(why)), GROUP_RULE_OK);
    assert_int_equal(group_rules_taint("a b", "", "NoSchedule", why, sizeof(why)), GROUP_RULE_KEY);
    assert_non_null(strstr(why, "invalid taint key \"a b\": "));
    assert_int_equal(group_rules_taint("k", "v v", "NoSchedule", why, sizeof(why)),
                     GROUP_RULE_VALUE);
    assert_non_null(strstr(why, "invalid taint value \"v v\": "));
    assert_int_equal(group_rules_taint("k", "v", "Sometimes", why, sizeof(why)), GROUP_RULE_EFFECT);
    assert_string_equal(why, "invalid taint effect \"Sometimes\": want NoSchedule, "
                             "PreferNoSchedule or NoExecute");
    /* Reserved label keys are fine as taint keys. */
    assert_int_equal(group_rules_taint("kubernetes.io/arch", "", "NoSchedule", NULL, 0),
                     GROUP_RULE_OK);
    assert_int_equal(group_rules_taint(NULL, NULL, "Sometimes", NULL, 0), GROUP_RULE_EFFECT);
    assert_int_equal(group_rules_taint("k", NULL, NULL, NULL, 0), GROUP_RULE_OK);
    group_rules_taint_twice("k", "NoSchedule", why, sizeof(why));
    assert_string_equal(why, "taint k:NoSchedule given twice");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_taints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
