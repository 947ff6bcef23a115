#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "provider.h"

static provider_t *make_provider(int64_t boot_seconds) {
    frugal_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.provider_kind = "simulated";
    cfg.boot_seconds = boot_seconds;
    provider_t *p = NULL;
    assert_int_equal(provider_create(&cfg, &p, NULL), 0);
    assert_non_null(p);
    return p;
}

static void make_group(group_t *g, const char *id) {
    memset(g, 0, sizeof(*g));
    g->spec.id = strdup(id);
    g->spec.machine_type = strdup("n1-standard-2");
    g->max_size = 100;
    g->managed = true;
    g->exists = true;
    g->next_seq = 1;
}

static void test_registry(void **state) {
    (void)state;
    assert_ptr_equal(provider_lookup("simulated"), &provider_simulated_ops);
    assert_string_equal(provider_lookup("simulated")->kind, "simulated");
    assert_null(provider_lookup("nope"));
    assert_null(provider_lookup(NULL));

    frugal_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.provider_kind = "aws";
    provider_t *p = (provider_t *)0x1;
    frugal_err_t err = {0};
    assert_int_equal(provider_create(&cfg, &p, &err), FRUGAL_ENOTFOUND);
    assert_null(p);
    assert_string_equal(err.msg, "unknown provider kind \"aws\"");

    cfg.provider_kind = NULL; /* defaults to simulated */
    assert_int_equal(provider_create(&cfg, &p, &err), 0);
    assert_ptr_equal(p->ops, &provider_simulated_ops);
    provider_destroy(p);
    provider_destroy(NULL);
}

static void test_increase_ids(void **state) {
    (void)state;
    provider_t *p = make_provider(0);
    group_t g;
    make_group(&g, "pool-a");
    assert_int_equal(provider_increase(p, &g, 3, 1000, NULL), 0);
    assert_int_equal(g.target_size, 3);
    assert_int_equal(g.instances_count, 3);
    assert_int_equal(g.next_seq, 4);
    assert_string_equal(g.instances[0].id, "frugal://pool-a/pool-a-1");
    assert_string_equal(g.instances[2].id, "frugal://pool-a/pool-a-3");
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(g.instances[i].state, INSTANCE_CREATING);
        assert_int_equal(g.instances[i].state_since_ms, 1000);
    }
    assert_int_equal(provider_increase(p, &g, 0, 1000, NULL), FRUGAL_EINVAL);
    assert_int_equal(g.instances_count, 3);

    /* Ids are never reused, even after removal. */
    bool changed = false;
    assert_int_equal(provider_decrease_target(p, &g, -1, 0, NULL), 0);
    assert_int_equal(provider_increase(p, &g, 1, 1000, NULL), 0);
    assert_string_equal(g.instances[2].id, "frugal://pool-a/pool-a-4");
    (void)changed;
    group_clear(&g);
    provider_destroy(p);
}

static void test_refresh_boot(void **state) {
    (void)state;
    provider_t *p = make_provider(30);
    group_t g;
    make_group(&g, "g");
    assert_int_equal(provider_increase(p, &g, 2, 1000, NULL), 0);
    bool changed = false;
    assert_int_equal(provider_refresh(p, &g, 1000 + 29999, &changed, NULL), 0);
    assert_false(changed);
    assert_int_equal(g.instances[0].state, INSTANCE_CREATING);
    assert_int_equal(provider_refresh(p, &g, 1000 + 30000, &changed, NULL), 0);
    assert_true(changed);
    assert_int_equal(g.instances[0].state, INSTANCE_RUNNING);
    assert_int_equal(g.instances[1].state, INSTANCE_RUNNING);
    assert_int_equal(g.instances[1].state_since_ms, 31000);

    /* Delete the first: deleting for boot_seconds, then gone. */
    size_t idx = 0;
    assert_int_equal(provider_delete_instances(p, &g, &idx, 1, 40000, NULL), 0);
    assert_int_equal(g.target_size, 1);
    assert_int_equal(g.instances[0].state, INSTANCE_DELETING);
    changed = false;
    assert_int_equal(provider_refresh(p, &g, 40000 + 29999, &changed, NULL), 0);
    assert_false(changed);
    assert_int_equal(g.instances_count, 2);
    assert_int_equal(provider_refresh(p, &g, 40000 + 30000, &changed, NULL), 0);
    assert_true(changed);
    assert_int_equal(g.instances_count, 1);
    assert_string_equal(g.instances[0].id, "frugal://g/g-2");

    size_t bad = 5;
    assert_int_equal(provider_delete_instances(p, &g, &bad, 1, 0, NULL), FRUGAL_EINVAL);
    assert_int_equal(g.target_size, 1);
    group_clear(&g);
    provider_destroy(p);
}

static void test_refresh_zero_boot(void **state) {
    (void)state;
    provider_t *p = make_provider(0);
    group_t g;
    make_group(&g, "g");
    assert_int_equal(provider_increase(p, &g, 1, 5000, NULL), 0);
    bool changed = false;
    assert_int_equal(provider_refresh(p, &g, 5000, &changed, NULL), 0);
    assert_true(changed);
    assert_int_equal(g.instances[0].state, INSTANCE_RUNNING);
    /* A failed creation stays creating with its error for CA to see. */
    assert_int_equal(provider_increase(p, &g, 1, 5000, NULL), 0);
    g.instances[1].error_code = strdup("OUT_OF_RESOURCES");
    changed = false;
    assert_int_equal(provider_refresh(p, &g, 9000, &changed, NULL), 0);
    assert_false(changed);
    assert_int_equal(g.instances[1].state, INSTANCE_CREATING);
    group_clear(&g);
    provider_destroy(p);
}

static void test_decrease_newest_creating(void **state) {
    (void)state;
    provider_t *p = make_provider(0);
    group_t g;
    make_group(&g, "g");
    assert_int_equal(provider_increase(p, &g, 2, 0, NULL), 0);
    bool changed = false;
    assert_int_equal(provider_refresh(p, &g, 0, &changed, NULL), 0); /* g-1, g-2 running */
    assert_int_equal(provider_increase(p, &g, 3, 10, NULL), 0);      /* g-3..g-5 creating */
    /* Make g-2 creating again between running ones to check ordering: move nothing, just
     * drop two newest creating. */
    assert_int_equal(provider_decrease_target(p, &g, -2, 0, NULL), 0);
    assert_int_equal(g.target_size, 3);
    assert_int_equal(g.instances_count, 3);
    assert_string_equal(g.instances[0].id, "frugal://g/g-1");
    assert_string_equal(g.instances[1].id, "frugal://g/g-2");
    assert_string_equal(g.instances[2].id, "frugal://g/g-3");

    /* Not enough creating: refused, unchanged. */
    frugal_err_t err = {0};
    assert_int_equal(provider_decrease_target(p, &g, -2, 0, &err), FRUGAL_EPRECOND);
    assert_int_equal(g.target_size, 3);
    assert_int_equal(g.instances_count, 3);
    assert_int_equal(provider_decrease_target(p, &g, 0, 0, &err), FRUGAL_EINVAL);

    /* Creating instances interleaved with running ones: only creating ones go. */
    assert_int_equal(provider_refresh(p, &g, 10, &changed, NULL), 0);
    assert_int_equal(provider_increase(p, &g, 1, 20, NULL), 0); /* g-6 creating */
    g.instances[1].state = INSTANCE_CREATING;                   /* g-2 creating */
    assert_int_equal(provider_decrease_target(p, &g, -2, 0, NULL), 0);
    assert_int_equal(g.instances_count, 2);
    assert_string_equal(g.instances[0].id, "frugal://g/g-1");
    assert_string_equal(g.instances[1].id, "frugal://g/g-3");
    assert_int_equal(g.target_size, 2);
    group_clear(&g);
    provider_destroy(p);
}

static void test_groups(void **state) {
    (void)state;
    provider_t *p = make_provider(0);
    group_t g;
    make_group(&g, "nap-x");
    g.exists = false;
    assert_int_equal(provider_create_group(p, &g, NULL), 0);
    assert_true(g.exists);
    assert_int_equal(provider_delete_group(p, &g, NULL), 0);
    assert_false(g.exists);
    group_clear(&g);
    provider_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_increase_ids),
        cmocka_unit_test(test_refresh_boot),
        cmocka_unit_test(test_refresh_zero_boot),
        cmocka_unit_test(test_decrease_newest_creating),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
