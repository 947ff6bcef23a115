/* grpc.health.v1.Health/Check called directly (no network): SERVING for the server and
 * for the services the call's listener offers, NOT_FOUND for the others, NOT_SERVING once
 * the server is stopping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <grpc/grpc.h>

#include "errors.h"
#include "health.pb-c.h"
#include "svc_harness.h"
#include "wire_names.h"

static const char config[] = "node_groups:\n"
                             "  - id: web\n"
                             "    machine_type: n1-standard-2\n"
                             "    zone: us-central1-a\n"
                             "    max_size: 3\n";

static int fx_setup(void **state) {
    *state = svc_fx_open(config);
    return 0;
}

/* The Check answer for service name, or -1 with err set when it is refused. */
static int check(svc_fx_t *f, const char *name, frugal_err_t *err) {
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)name;
    Grpc__Health__V1__HealthCheckResponse *resp = NULL;
    int rc = svc_call(f, &service_health, "Check", &req.base,
                      &grpc__health__v1__health_check_response__descriptor,
                      (ProtobufCMessage **)&resp, err);
    if (rc != 0)
        return -1;
    int status = (int)resp->status;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return status;
}

static void test_serving(void **state) {
    svc_fx_t *f = *state;
    frugal_err_t err;
    const char *names[] = {"", WIRE_SERVICE_CLOUDPROVIDER, WIRE_SERVICE_EXPANDER,
                           WIRE_SERVICE_AUTOPROVISIONING, WIRE_SERVICE_HEALTH};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_int_equal(check(f, names[i], &err),
                         GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
}

static void test_unknown_service(void **state) {
    svc_fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(check(f, "example.Unknown", &err), -1);
    assert_string_equal(err.msg, "service \"example.Unknown\" is not served here");
}

/* A listener that offers the expander alone does not serve the CloudProvider. */
static void test_listener_services(void **state) {
    svc_fx_t *f = *state;
    frugal_err_t err;
    f->ctx.services = LISTENER_SERVICE_EXPANDER | LISTENER_SERVICE_HEALTH;
    assert_int_equal(check(f, WIRE_SERVICE_EXPANDER, &err),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    assert_int_equal(check(f, "", &err),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    assert_int_equal(check(f, WIRE_SERVICE_CLOUDPROVIDER, &err), -1);
    assert_non_null(strstr(err.msg, "is not served here"));
}

/* A Check the server took before it began to stop learns that it is going away. */
static void test_stopping(void **state) {
    svc_fx_t *f = *state;
    frugal_err_t err;
    f->ctx.stopping = true;
    assert_int_equal(check(f, "", &err),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
    assert_int_equal(check(f, WIRE_SERVICE_CLOUDPROVIDER, &err),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
    assert_int_equal(check(f, "example.Unknown", &err), -1);
}

int main(void) {
    grpc_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serving, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_service, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_listener_services, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_stopping, fx_setup, svc_fx_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    grpc_shutdown();
    return failed;
}
