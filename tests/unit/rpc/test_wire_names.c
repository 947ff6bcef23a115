/* wire_names.h against the service tables: every method path of the header is served
 * by exactly one table, under its service's name, and every served path is in the
 * header (so a client built from the header reaches every method). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "service.h"
#include "wire_names.h"

static const char *const header_paths[] = {
    WIRE_CP_NODE_GROUPS,
    WIRE_CP_NODE_GROUP_FOR_NODE,
    WIRE_CP_PRICING_NODE_PRICE,
    WIRE_CP_PRICING_POD_PRICE,
    WIRE_CP_GPU_LABEL,
    WIRE_CP_GET_AVAILABLE_GPU_TYPES,
    WIRE_CP_CLEANUP,
    WIRE_CP_REFRESH,
    WIRE_CP_TARGET_SIZE,
    WIRE_CP_INCREASE_SIZE,
    WIRE_CP_DELETE_NODES,
    WIRE_CP_DECREASE_TARGET_SIZE,
    WIRE_CP_NODES,
    WIRE_CP_TEMPLATE_NODE_INFO,
    WIRE_CP_GET_OPTIONS,
    WIRE_AP_GET_AVAILABLE_MACHINE_TYPES,
    WIRE_AP_NEW_NODE_GROUP,
    WIRE_AP_NODE_GROUP_CREATE,
    WIRE_AP_NODE_GROUP_DELETE,
    WIRE_AP_NODE_GROUP_INFO,
    WIRE_AP_GET_RESOURCE_LIMITER,
    WIRE_AP_PROPOSE_NODE_GROUPS,
    WIRE_EXPANDER_BEST_OPTIONS,
    WIRE_HEALTH_CHECK,
};
#define N_HEADER_PATHS (sizeof(header_paths) / sizeof(header_paths[0]))

static const service_def_t *const services[] = {&service_cloudprovider, &service_autoprovisioning,
                                                &service_expander, &service_health};
#define N_SERVICES (sizeof(services) / sizeof(services[0]))

static size_t served_count(const char *path) {
    size_t n = 0;
    for (size_t s = 0; s < N_SERVICES; s++)
        for (size_t m = 0; m < services[s]->methods_count; m++)
            n += strcmp(services[s]->methods[m].path, path) == 0;
    return n;
}

static void test_every_header_path_is_served_once(void **state) {
    (void)state;
    for (size_t i = 0; i < N_HEADER_PATHS; i++)
        assert_int_equal(served_count(header_paths[i]), 1);
}

static void test_every_served_path_is_in_the_header(void **state) {
    (void)state;
    size_t total = 0;
    for (size_t s = 0; s < N_SERVICES; s++) {
        const service_def_t *svc = services[s];
        size_t len = strlen(svc->name);
        for (size_t m = 0; m < svc->methods_count; m++) {
            const char *p = svc->methods[m].path;
            /* "/<service name>/<method>" */
            assert_int_equal(p[0], '/');
            assert_memory_equal(p + 1, svc->name, len);
            assert_int_equal(p[len + 1], '/');
            bool found = false;
            for (size_t i = 0; i < N_HEADER_PATHS; i++)
                found = found || strcmp(header_paths[i], p) == 0;
            assert_true(found);
            total++;
        }
    }
    assert_int_equal(total, N_HEADER_PATHS);
}

static void test_service_names(void **state) {
    (void)state;
    assert_string_equal(service_cloudprovider.name,
                        "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider");
    assert_string_equal(
        WIRE_CP_NODE_GROUPS,
        "/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroups");
    assert_string_equal(WIRE_AP_PROPOSE_NODE_GROUPS,
                        "/frugal.v1.Autoprovisioning/ProposeNodeGroups");
    assert_string_equal(WIRE_EXPANDER_BEST_OPTIONS, "/grpcplugin.Expander/BestOptions");
    assert_string_equal(WIRE_HEALTH_CHECK, "/grpc.health.v1.Health/Check");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_header_path_is_served_once),
        cmocka_unit_test(test_every_served_path_is_in_the_header),
        cmocka_unit_test(test_service_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
