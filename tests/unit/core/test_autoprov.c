/* Unit tests of server/core/autoprov.c: ids of autoprovisioned groups, the cluster-wide
 * limit arithmetic (the design's limit example, exactly), and name validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "autoprov.h"
#include "config.h"
#include "k8s_name.h"
#include "metrics.h"

#define GIB 1073741824LL

/* ------------------------------------------------------------------------------------
 * Ids
 * ---------------------------------------------------------------------------------- */

static void test_id_without_labels(void **state) {
    (void)state;
    char *id = NULL;
    assert_int_equal(
        autoprov_group_id("nap", "n1-standard-4", "us-central1-a", NULL, NULL, NULL, &id, NULL), 0);
    assert_string_equal(id, "nap-n1-standard-4-us-central1-a");
    free(id);
    kv_list_t empty = {NULL, 0};
    assert_int_equal(autoprov_group_id("nap", "n1-standard-4", NULL, &empty, NULL, NULL, &id, NULL),
                     0);
    assert_string_equal(id, "nap-n1-standard-4");
    free(id);
}

static void test_id_hash_is_stable_and_sorted(void **state) {
    (void)state;
    kv_t ab[] = {{"a", "1"}, {"b", "2"}};
    kv_t ba[] = {{"b", "2"}, {"a", "1"}};
    kv_t other[] = {{"a", "1"}, {"b", "3"}};
    kv_list_t l1 = {ab, 2}, l2 = {ba, 2}, l3 = {other, 2};
    char h1[16], h2[16], h3[16];
    assert_true(autoprov_shape_hash(&l1, NULL, NULL, h1, sizeof(h1)));
    assert_true(autoprov_shape_hash(&l2, NULL, NULL, h2, sizeof(h2)));
    assert_true(autoprov_shape_hash(&l3, NULL, NULL, h3, sizeof(h3)));
    assert_int_equal(strlen(h1), AUTOPROV_HASH_LEN);
    assert_string_equal(h1, h2);
    assert_string_not_equal(h1, h3);
    for (size_t i = 0; i < AUTOPROV_HASH_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", h1[i]));

    char *id = NULL;
    assert_int_equal(autoprov_group_id("nap", "n1-standard-4", "z1", &l1, NULL, NULL, &id, NULL),
                     0);
    char want[64];
    snprintf(want, sizeof(want), "nap-n1-standard-4-z1-%s", h1);
    assert_string_equal(id, want);
    free(id);

    /* A taint makes another shape, and so another id. */
    taint_t t[] = {{"dedicated", "ml", "NoSchedule"}};
    taint_list_t tl = {t, 1};
    char h4[16];
    assert_true(autoprov_shape_hash(&l1, &tl, NULL, h4, sizeof(h4)));
    assert_string_not_equal(h1, h4);
    kv_list_t none = {NULL, 0};
    assert_false(autoprov_shape_hash(&none, NULL, NULL, h4, sizeof(h4)));
    assert_string_equal(h4, "");
}

/* id_of: autoprov_group_id with a zone and labels, asserted to be a DNS label. */
static char *id_of(const char *type, const char *zone, const kv_list_t *labels) {
    char *id = NULL;
    assert_int_equal(autoprov_group_id("nap", type, zone, labels, NULL, NULL, &id, NULL), 0);
    assert_true(k8s_name_is_dns_label(id));
    return id;
}

/* Names that do not make a DNS label as they are (AWS's m5.large, Azure's
 * Standard_D4s_v5, names too long) are mapped and cut, with a hash of the names as given:
 * the state file and CA's ids then accept them, and distinct names stay distinct. */
static void test_id_of_names_that_are_not_labels(void **state) {
    (void)state;
    char *dotted = id_of("m5.large", "us-east-1a", NULL);
    assert_int_equal(strncmp(dotted, "nap-m5-large-us-east-1a-", 24), 0);
    assert_int_equal(strlen(dotted), 24 + AUTOPROV_HASH_LEN);
    char *dashed = id_of("m5-large", "us-east-1a", NULL);
    assert_string_equal(dashed, "nap-m5-large-us-east-1a");
    char *again = id_of("m5.large", "us-east-1a", NULL);
    assert_string_equal(dotted, again);

    char *azure = id_of("Standard_D4s_v5", "westeurope", NULL);
    assert_int_equal(strncmp(azure, "nap-standard-d4s-v5-westeurope-", 31), 0);
    char *upper_zone = id_of("n1-standard-4", "EU-West", NULL);
    assert_int_equal(strncmp(upper_zone, "nap-n1-standard-4-eu-west-", 26), 0);

    kv_t gpu[] = {{"accelerator", "a100"}};
    kv_list_t labels = {gpu, 1};
    char *labelled = id_of("m5.large", "us-east-1a", &labels);
    assert_string_not_equal(labelled, dotted);

    const char *long_a = "a-very-long-machine-type-name-from-some-catalog-variant-one";
    const char *long_b = "a-very-long-machine-type-name-from-some-catalog-variant-two";
    const char *long_zone = "a-rather-long-zone-name-somewhere-far-away-1";
    char *la = id_of(long_a, long_zone, NULL);
    char *lb = id_of(long_b, long_zone, NULL);
    char *short_zone = id_of(long_a, "z1", NULL);
    assert_true(strlen(la) <= 63 && strlen(short_zone) <= 63);
    assert_string_not_equal(la, lb);
    assert_int_equal(strncmp(short_zone, "nap-a-very-long-machine-type-name-from-some-c", 45), 0);
    assert_non_null(strstr(short_zone, "-z1-"));

    char *no_zone = NULL;
    assert_int_equal(autoprov_group_id("nap", "m5.large", NULL, NULL, NULL, NULL, &no_zone, NULL),
                     0);
    assert_int_equal(strncmp(no_zone, "nap-m5-large-", 13), 0);
    assert_int_equal(strlen(no_zone), 13 + AUTOPROV_HASH_LEN);
    char *list[] = {dotted,   dashed, again, azure,      upper_zone,
                    labelled, la,     lb,    short_zone, no_zone};
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
        free(list[i]);
}

/* ------------------------------------------------------------------------------------
 * The design's limit example: "main" unmanaged 2 x n1-standard-2, "as" 1 x
 * n1-standard-16 (0..2), an autoprovisioned group of 2 x n1-highmem-4.
 * ---------------------------------------------------------------------------------- */

typedef struct example {
    frugal_config_t *cfg;
    autoprov_totals_t totals;
    resources_t std2, std16, highmem4, std1;
} example_t;

static resources_t node_of(const frugal_config_t *cfg, const char *name) {
    const machine_type_t *mt = config_find_machine_type(cfg, name);
    assert_non_null(mt);
    return (resources_t){mt->cpu_milli, mt->memory_bytes, mt->gpu};
}

static void example_load(example_t *ex, const char *max_cpu) {
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "node_groups:\n"
             "  - {id: main, machine_type: n1-standard-2, size: 2, managed: false}\n"
             "  - {id: as, machine_type: n1-standard-16, min_size: 0, max_size: 2, size: 1}\n"
             "autoprovisioning:\n"
             "  enabled: true\n"
             "  machine_types: [n1-standard-1, n1-standard-2, n1-highmem-4, n1-standard-16]\n"
             "  zones: [us-central1-a]\n"
             "  limits: {max_cpu: %s}\n",
             max_cpu);
    char *errors = NULL;
    int rc = config_load_string("example.yaml", yaml, strlen(yaml), &ex->cfg, &errors);
    if (rc != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
    ex->std1 = node_of(ex->cfg, "n1-standard-1");
    ex->std2 = node_of(ex->cfg, "n1-standard-2");
    ex->std16 = node_of(ex->cfg, "n1-standard-16");
    ex->highmem4 = node_of(ex->cfg, "n1-highmem-4");
    memset(&ex->totals, 0, sizeof(ex->totals));
    autoprov_totals_add(&ex->totals, 2, &ex->std2);
    autoprov_totals_add(&ex->totals, 1, &ex->std16);
    autoprov_totals_add(&ex->totals, 2, &ex->highmem4);
    assert_int_equal(ex->totals.cpu_milli, 28000);
}

static void example_free(example_t *ex) {
    config_free(ex->cfg);
}

static int grow(const example_t *ex, const char *id, const char *type, const resources_t *node,
                int32_t delta, frugal_err_t *err) {
    return autoprov_check_increase(&ex->cfg->autoprovisioning, &ex->totals, id, type, node, delta,
                                   err);
}

static void test_limit_example_max_cpu_5(void **state) {
    (void)state;
    example_t ex;
    example_load(&ex, "5");
    const autoprov_config_t *ap = &ex.cfg->autoprovisioning;
    frugal_err_t err = {0};
    /* Already over the limit: not shrunk, but nothing can grow. */
    assert_int_equal(grow(&ex, "as", "n1-standard-16", &ex.std16, 1, &err), FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "max_cpu"));
    assert_non_null(strstr(err.msg, "44 cores"));
    assert_non_null(strstr(err.msg, "limit of 5 cores"));
    assert_non_null(strstr(err.msg, "at 28 cores"));
    assert_int_equal(grow(&ex, "nap-hm", "n1-highmem-4", &ex.highmem4, 1, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(grow(&ex, "nap-s1", "n1-standard-1", &ex.std1, 1, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.std16, 1, 2), 1);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.highmem4, 2, AUTOPROV_GROUP_MAX_SIZE),
                     2);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.std1, 0, AUTOPROV_GROUP_MAX_SIZE), 0);
    example_free(&ex);
}

static void test_limit_example_max_cpu_32(void **state) {
    (void)state;
    example_t ex;
    example_load(&ex, "32");
    const autoprov_config_t *ap = &ex.cfg->autoprovisioning;
    frugal_err_t err = {0};
    /* One more n1-highmem-4 ... */
    assert_int_equal(grow(&ex, "nap-hm", "n1-highmem-4", &ex.highmem4, 1, &err), 0);
    assert_int_equal(grow(&ex, "nap-hm", "n1-highmem-4", &ex.highmem4, 2, &err), FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "36 cores"));
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.highmem4, 2, AUTOPROV_GROUP_MAX_SIZE),
                     3);
    /* ... or a new group of up to 4 n1-standard-1 ... */
    assert_int_equal(grow(&ex, "nap-s1", "n1-standard-1", &ex.std1, 4, &err), 0);
    assert_int_equal(grow(&ex, "nap-s1", "n1-standard-1", &ex.std1, 5, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.std1, 0, AUTOPROV_GROUP_MAX_SIZE), 4);
    /* ... but "as" cannot grow. */
    assert_int_equal(grow(&ex, "as", "n1-standard-16", &ex.std16, 1, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.std16, 1, 2), 1);
    example_free(&ex);
}

/* The minimums raise the advertised minSize, so that CA never drains a node whose
 * DeleteNodes the limits would refuse (28 cores and 127 GiB in the example). */
static void test_min_size_from_minimums(void **state) {
    (void)state;
    example_t ex;
    example_load(&ex, "80");
    autoprov_config_t ap = ex.cfg->autoprovisioning;
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.std16, 1, 0), 0);    /* no minimum */
    ap.min_cpu_milli = 20000;                                                    /* 8 cores above */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.std2, 2, 0), 0);     /* 4 may go */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.highmem4, 2, 0), 0); /* 2 may go */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.std16, 1, 0), 1);    /* none */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.std2, 2, 3), 3);     /* its own */
    ap.min_memory_bytes = 100LL << 30; /* 27 GiB above: one n1-highmem-4 (26 GiB) */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.highmem4, 2, 0), 1);
    ap.min_cpu_milli = 40000; /* already under a minimum: nothing may go */
    assert_int_equal(autoprov_min_size(&ap, &ex.totals, &ex.std2, 2, 0), 2);
    frugal_err_t err = {0};
    assert_int_equal(
        autoprov_check_decrease(&ap, &ex.totals, "g", "n1-standard-2", &ex.std2, 1, &err),
        FRUGAL_EPRECOND);
    example_free(&ex);
}

static void test_limit_example_max_cpu_80(void **state) {
    (void)state;
    example_t ex;
    example_load(&ex, "80");
    const autoprov_config_t *ap = &ex.cfg->autoprovisioning;
    frugal_err_t err = {0};
    /* "as" may grow by 1: up to its own max_size. */
    assert_int_equal(grow(&ex, "as", "n1-standard-16", &ex.std16, 1, &err), 0);
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.std16, 1, 2), 2);
    /* The highmem group up to 15 nodes: 52 cores left = 13 more n1-highmem-4. */
    assert_int_equal(autoprov_max_size(ap, &ex.totals, &ex.highmem4, 2, AUTOPROV_GROUP_MAX_SIZE),
                     15);
    assert_int_equal(grow(&ex, "nap-hm", "n1-highmem-4", &ex.highmem4, 13, &err), 0);
    assert_int_equal(grow(&ex, "nap-hm", "n1-highmem-4", &ex.highmem4, 14, &err),
                     FRUGAL_EEXHAUSTED);
    example_free(&ex);
}

static void test_limit_memory_and_unlimited(void **state) {
    (void)state;
    autoprov_config_t ap;
    memset(&ap, 0, sizeof(ap));
    ap.max_cpu_milli = INT64_MAX;
    ap.max_memory_bytes = 100 * GIB;
    autoprov_totals_t totals = {8000, 60 * GIB};
    resources_t node = {4000, 15 * GIB, 0};
    frugal_err_t err = {0};
    assert_int_equal(autoprov_max_size(&ap, &totals, &node, 3, 100), 5);
    assert_true(autoprov_has_maxima(&ap));
    assert_false(autoprov_has_minima(&ap));
    assert_int_equal(autoprov_check_increase(&ap, &totals, "g", "t", &node, 2, &err), 0);
    metrics_cell_t *refusals = metrics_cell(METRICS_LIMIT_REFUSALS, "memory", NULL, NULL);
    uint64_t before = metrics_cell_value(refusals);
    assert_int_equal(autoprov_check_increase(&ap, &totals, "g", "t", &node, 3, &err),
                     FRUGAL_EEXHAUSTED);
    assert_int_equal(metrics_cell_value(refusals), before + 1); /* counted for /metrics */
    assert_non_null(strstr(err.msg, "max_memory"));
    assert_non_null(strstr(err.msg, "100Gi"));
    /* Unlimited: the group's own max rules. */
    ap.max_memory_bytes = INT64_MAX;
    assert_false(autoprov_has_maxima(&ap));
    assert_int_equal(autoprov_max_size(&ap, &totals, &node, 3, 100), 100);
    assert_int_equal(autoprov_check_increase(&ap, &totals, "g", "t", &node, 1000000, &err), 0);
    /* Over a limit already: the advertised max never drops below the target. */
    ap.max_cpu_milli = 1000;
    assert_int_equal(autoprov_max_size(&ap, &totals, &node, 3, 100), 3);
}

static void test_limit_min(void **state) {
    (void)state;
    autoprov_config_t ap;
    memset(&ap, 0, sizeof(ap));
    ap.max_cpu_milli = INT64_MAX;
    ap.max_memory_bytes = INT64_MAX;
    ap.min_cpu_milli = 8000;
    ap.min_memory_bytes = 0;
    assert_true(autoprov_has_minima(&ap));
    assert_false(autoprov_has_maxima(&ap));
    autoprov_totals_t totals = {12000, 45 * GIB};
    resources_t node = {2000, 7 * GIB, 0};
    frugal_err_t err = {0};
    assert_int_equal(autoprov_check_decrease(&ap, &totals, "g", "n1-standard-2", &node, 2, &err),
                     0);
    assert_int_equal(autoprov_check_decrease(&ap, &totals, "g", "n1-standard-2", &node, 3, &err),
                     FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "min_cpu"));
    assert_non_null(strstr(err.msg, "6 cores"));
    ap.min_cpu_milli = 0;
    ap.min_memory_bytes = 40 * GIB;
    assert_int_equal(autoprov_check_decrease(&ap, &totals, "g", "n1-standard-2", &node, 1, &err),
                     FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "min_memory"));
}

static void test_fractional_cores_in_messages(void **state) {
    (void)state;
    autoprov_config_t ap;
    memset(&ap, 0, sizeof(ap));
    ap.max_cpu_milli = 2500;
    ap.max_memory_bytes = INT64_MAX;
    autoprov_totals_t totals = {2000, 0};
    resources_t node = {1000, GIB, 0};
    frugal_err_t err = {0};
    assert_int_equal(autoprov_check_increase(&ap, &totals, "g", "t", &node, 1, &err),
                     FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "limit of 2.5 cores"));
    assert_int_equal(autoprov_max_size(&ap, &totals, &node, 0, 10), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_without_labels),
        cmocka_unit_test(test_id_hash_is_stable_and_sorted),
        cmocka_unit_test(test_id_of_names_that_are_not_labels),
        cmocka_unit_test(test_limit_example_max_cpu_5),
        cmocka_unit_test(test_limit_example_max_cpu_32),
        cmocka_unit_test(test_limit_example_max_cpu_80),
        cmocka_unit_test(test_min_size_from_minimums),
        cmocka_unit_test(test_limit_memory_and_unlimited),
        cmocka_unit_test(test_limit_min),
        cmocka_unit_test(test_fractional_cores_in_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
