/* Unit tests of server/core/pricing.c: linear prices, configured and catalog machine prices,
 * GPU pricing, spot prices, group prices and machine capacity. Configs are built by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "pricing.h"

#define GIB 1073741824LL
#define EPS 1e-12

static void assert_price(double got, double want) {
    if (fabs(got - want) > EPS * (1 + fabs(want)))
        fail_msg("price %.12f, want %.12f", got, want);
}

/* n1-standard-2 as config.c would merge it from the catalog, a custom type without a
 * price, a GPU type priced from the catalog, one with an unknown GPU type and a spot one. */
static machine_type_t types[] = {
    {"n1-standard-2", 2000, 8053063680LL, 0, NULL, 0.095, 0.02, {0}},
    {"custom-4", 4000, 16 * GIB, 0, NULL, -1, -1, {0}},
    {"gpu-t4", 4000, 16 * GIB, 2, "nvidia-tesla-t4", -1, -1, {0}},
    {"gpu-mystery", 4000, 16 * GIB, 1, "acme-gpu", -1, -1, {0}},
    {"priced-gpu", 8000, 32 * GIB, 1, "nvidia-tesla-v100", 3.0, 1.1, {0}},
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

static group_spec_t make_spec(const char *mt) {
    group_spec_t spec;
    memset(&spec, 0, sizeof(spec));
    spec.id = "pool";
    spec.machine_type = (char *)mt;
    spec.spot_price = -1;
    return spec;
}

static void test_linear(void **state) {
    (void)state;
    frugal_config_t cfg = make_config();
    resources_t r = {1000, GIB, 0};
    assert_price(pricing_linear(&cfg.pricing, &r), 0.033174 + 0.004446);
    r = (resources_t){500, 512 * 1024 * 1024, 0};
    assert_price(pricing_linear(&cfg.pricing, &r), 0.5 * 0.033174 + 0.5 * 0.004446);
    r = (resources_t){0, 0, 3};
    assert_price(pricing_linear(&cfg.pricing, &r), 2.1);
    r = (resources_t){0, 0, 0};
    assert_price(pricing_linear(&cfg.pricing, &r), 0);
    /* The catalog's linear prices are the defaults. */
    pricing_config_t p = {CATALOG_LINEAR_CPU, CATALOG_LINEAR_MEMORY_GB, CATALOG_LINEAR_GPU, true};
    r = (resources_t){2000, 4 * GIB, 1};
    assert_price(pricing_linear(&p, &r), 2 * 0.033174 + 4 * 0.004446 + 0.7);
}

static void test_machine_price(void **state) {
    (void)state;
    frugal_config_t cfg = make_config();
    /* Configured/catalog price wins. */
    assert_price(pricing_machine_price(&cfg, &types[0], false, -1), 0.095);
    /* No price: linear from capacity. */
    assert_price(pricing_machine_price(&cfg, &types[1], false, -1), 4 * 0.033174 + 16 * 0.004446);
    /* No price: GPUs at pricing.gpu too, whatever their type (the catalog's per-GPU
     * prices are not the pricing section's). */
    assert_price(pricing_machine_price(&cfg, &types[2], false, -1),
                 4 * 0.033174 + 16 * 0.004446 + 2 * 0.7);
    assert_price(pricing_machine_price(&cfg, &types[3], false, -1),
                 4 * 0.033174 + 16 * 0.004446 + 0.7);
    /* A configured price includes everything. */
    assert_price(pricing_machine_price(&cfg, &types[4], false, -1), 3.0);
    /* catalog: none changes nothing here. */
    cfg.pricing.builtin_catalog = false;
    assert_price(pricing_machine_price(&cfg, &types[2], false, -1),
                 4 * 0.033174 + 16 * 0.004446 + 2 * 0.7);
    /* Custom linear prices are honoured. */
    cfg.pricing.cpu = 1;
    cfg.pricing.memory_gib = 0.5;
    cfg.pricing.gpu = 10;
    assert_price(pricing_machine_price(&cfg, &types[1], false, -1), 4 + 8);
    assert_price(pricing_machine_price(&cfg, &types[3], false, -1), 4 + 8 + 10);
}

static void test_spot_price(void **state) {
    (void)state;
    frugal_config_t cfg = make_config();
    /* Override, then the machine type's spot price, then on-demand. */
    assert_price(pricing_machine_price(&cfg, &types[0], true, 0.05), 0.05);
    assert_price(pricing_machine_price(&cfg, &types[0], true, -1), 0.02);
    assert_price(pricing_machine_price(&cfg, &types[0], true, 0), 0);
    assert_price(pricing_machine_price(&cfg, &types[1], true, -1), 4 * 0.033174 + 16 * 0.004446);
    assert_price(pricing_machine_price(&cfg, &types[1], true, 0.01), 0.01);
    assert_price(pricing_machine_price(&cfg, &types[4], true, -1), 1.1);
    /* Without spot the spot prices are ignored. */
    assert_price(pricing_machine_price(&cfg, &types[0], false, 0.05), 0.095);
}

static void test_group_node_price(void **state) {
    (void)state;
    frugal_config_t cfg = make_config();
    group_spec_t spec = make_spec("n1-standard-2");
    assert_price(pricing_group_node_price(&cfg, &spec), 0.095);
    spec.spot = true;
    assert_price(pricing_group_node_price(&cfg, &spec), 0.02);
    spec.spot_price = 0.03;
    assert_price(pricing_group_node_price(&cfg, &spec), 0.03);
    spec = make_spec("gpu-t4");
    assert_price(pricing_group_node_price(&cfg, &spec), 4 * 0.033174 + 16 * 0.004446 + 2 * 0.7);
    /* Not in the effective catalog (cfg holds it; the builtin table is not consulted). */
    spec = make_spec("n1-standard-4");
    assert_true(pricing_group_node_price(&cfg, &spec) < 0);
    spec = make_spec("nope");
    assert_true(pricing_group_node_price(&cfg, &spec) < 0);
    frugal_config_t empty;
    memset(&empty, 0, sizeof(empty));
    assert_true(pricing_group_node_price(&empty, &spec) < 0);
}

static void test_machine_capacity(void **state) {
    (void)state;
    resources_t r;
    frugal_err_t err;
    assert_int_equal(pricing_machine_capacity(&types[0], NULL, &r, &err), 0);
    assert_int_equal(r.cpu_milli, 2000);
    assert_int_equal(r.memory_bytes, 8053063680LL);
    assert_int_equal(r.gpu, 0);
    assert_int_equal(pricing_machine_capacity(&types[2], NULL, &r, &err), 0);
    assert_int_equal(r.gpu, 2);

    kv_t extras[] = {
        {"amd.com/gpu", "1"}, {"cpu", "500m"},         {"example.com/dongle", "3"},
        {"memory", "1Gi"},    {"nvidia.com/gpu", "2"},
    };
    group_spec_t spec = make_spec("gpu-t4");
    spec.extra_resources.items = extras;
    spec.extra_resources.count = 5;
    assert_int_equal(pricing_machine_capacity(&types[2], &spec, &r, &err), 0);
    assert_int_equal(r.cpu_milli, 4500);
    assert_int_equal(r.memory_bytes, 17 * GIB);
    assert_int_equal(r.gpu, 5);

    kv_t bad[] = {{"cpu", "lots"}};
    spec.extra_resources.items = bad;
    spec.extra_resources.count = 1;
    r.cpu_milli = 42;
    frugal_err_clear(&err);
    assert_int_equal(pricing_machine_capacity(&types[2], &spec, &r, &err), FRUGAL_EINVAL);
    assert_int_equal(err.code, FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "cpu"));
    assert_int_equal(r.cpu_milli, 42); /* unchanged on failure */

    kv_t neg[] = {{"memory", "-1Gi"}};
    spec.extra_resources.items = neg;
    assert_int_equal(pricing_machine_capacity(&types[2], &spec, &r, NULL), FRUGAL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),           cmocka_unit_test(test_machine_price),
        cmocka_unit_test(test_spot_price),       cmocka_unit_test(test_group_node_price),
        cmocka_unit_test(test_machine_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
