/* The codec step of every call (service_method_call): a typed method's request is
 * unpacked, its response packed only on success, a failure (the handler's, a malformed
 * body, memory) answers a code and a message and no bytes; a raw method gets the body
 * as received. And the shape of every service table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <grpc/grpc.h>

#include "codec.h"
#include "health.pb-c.h"
#include "service.h"

typedef Grpc__Health__V1__HealthCheckRequest check_request_t;
typedef Grpc__Health__V1__HealthCheckResponse check_response_t;

/* Echoes the service name's length as the status; "fail" fails, "oom" runs out of
 * memory after filling the response. */
static int fake_typed(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                      frugal_err_t *err) {
    const check_request_t *req = request;
    check_response_t *resp = response;
    assert_ptr_equal(req->base.descriptor, &grpc__health__v1__health_check_request__descriptor);
    assert_ptr_equal(resp->base.descriptor, &grpc__health__v1__health_check_response__descriptor);
    if (strcmp(req->service, "fail") == 0)
        return frugal_err_set(err, FRUGAL_EPRECOND, "failed on purpose");
    resp->status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)strlen(req->service);
    if (strcmp(req->service, "oom") == 0)
        mem->out_of_memory = true;
    return 0;
}

static int fake_raw(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                    grpc_byte_buffer **response, frugal_err_t *err) {
    *response = grpc_byte_buffer_copy(request);
    return 0;
}

static const service_method_t typed_method =
    SERVICE_TYPED("/test.Fake/Typed", &grpc__health__v1__health_check_request__descriptor,
                  &grpc__health__v1__health_check_response__descriptor, fake_typed);
static const service_method_t raw_method = SERVICE_RAW("/test.Fake/Raw", fake_raw);

/* Call m with a HealthCheckRequest for service; the answer's status in *status. */
static int call(const service_method_t *m, const char *service, int *status, frugal_err_t *err) {
    check_request_t req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    grpc_byte_buffer *in = codec_pack(&req.base), *out = (grpc_byte_buffer *)1;
    service_ctx_t ctx = {0};
    frugal_err_clear(err);
    int rc = service_method_call(m, &ctx, in, gpr_inf_future(GPR_CLOCK_MONOTONIC), &out, err);
    grpc_byte_buffer_destroy(in);
    if (rc != 0) {
        assert_null(out);
        assert_true(err->msg[0] != '\0');
        return rc;
    }
    assert_non_null(out);
    check_response_t *resp;
    assert_int_equal(codec_unpack(&grpc__health__v1__health_check_response__descriptor, out,
                                  (ProtobufCMessage **)&resp, NULL),
                     0);
    *status = resp->status;
    codec_free(resp);
    grpc_byte_buffer_destroy(out);
    return 0;
}

static void test_round_trips(void **state) {
    (void)state;
    frugal_err_t err;
    int status = -1;
    assert_int_equal(call(&typed_method, "abc", &status, &err), 0);
    assert_int_equal(status, 3);
    assert_int_equal(call(&typed_method, "", &status, &err), 0);
    assert_int_equal(status, 0);
    /* The raw fake echoes the request; a HealthCheckRequest's service is field 1, as is
     * a response's status, so the echo of "" reads as status 0. */
    status = -1;
    assert_int_equal(call(&raw_method, "", &status, &err), 0);
    assert_int_equal(status, 0);
}

static void test_typed_failures_answer_nothing(void **state) {
    (void)state;
    frugal_err_t err;
    int status = -1;
    assert_int_equal(call(&typed_method, "fail", &status, &err), FRUGAL_EPRECOND);
    assert_string_equal(err.msg, "failed on purpose");
    assert_int_equal(call(&typed_method, "oom", &status, &err), FRUGAL_ENOMEM);
    assert_string_equal(err.msg, "out of memory");

    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff};
    grpc_byte_buffer *in = codec_from_bytes(garbage, sizeof(garbage)), *out = NULL;
    service_ctx_t ctx = {0};
    int rc = service_method_call(&typed_method, &ctx, in, gpr_inf_future(GPR_CLOCK_MONOTONIC), &out,
                                 &err);
    grpc_byte_buffer_destroy(in);
    assert_int_equal(rc, FRUGAL_EINVAL);
    assert_null(out);
    assert_non_null(strstr(err.msg, "grpc.health.v1.HealthCheckRequest"));
}

static void test_mem_copies(void **state) {
    (void)state;
    service_mem_t mem = {ARENA_INIT, false};
    char *s = service_strdup(&mem, "pool-a");
    assert_string_equal(s, "pool-a");
    assert_string_equal(service_strdup(&mem, NULL), "");
    static const uint8_t bytes[] = {1, 2, 3};
    ProtobufCBinaryData b = service_bytes(&mem, bytes, sizeof(bytes));
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, bytes, 3);
    assert_int_equal(service_bytes(&mem, NULL, 0).len, 0);
    check_response_t *msg =
        service_message(&mem, &grpc__health__v1__health_check_response__descriptor);
    assert_non_null(msg);
    assert_int_equal(msg->status, 0);
    assert_false(mem.out_of_memory);
    arena_free(&mem.arena);
}

/* Every method of every table is of one kind, typed with both descriptors, request and
 * response of the same package. */
static void test_tables(void **state) {
    (void)state;
    const service_def_t *services[] = {&service_cloudprovider, &service_expander, &service_health,
                                       &service_autoprovisioning};
    for (size_t s = 0; s < sizeof(services) / sizeof(services[0]); s++) {
        for (size_t i = 0; i < services[s]->methods_count; i++) {
            const service_method_t *m = &services[s]->methods[i];
            if (m->raw != NULL) {
                assert_null(m->handler);
                assert_null(m->request);
                assert_null(m->response);
                continue;
            }
            assert_non_null(m->handler);
            assert_non_null(m->request);
            assert_non_null(m->response);
            assert_string_equal(m->request->package_name, m->response->package_name);
            size_t rq = strlen(m->request->short_name), rs = strlen(m->response->short_name);
            assert_true(rq > 7 && strcmp(m->request->short_name + rq - 7, "Request") == 0);
            assert_true(rs > 8 && strcmp(m->response->short_name + rs - 8, "Response") == 0);
            /* The same stem: FooRequest answers FooResponse. */
            assert_int_equal(rq - 7, rs - 8);
            assert_memory_equal(m->request->short_name, m->response->short_name, rq - 7);
        }
    }
}

int main(void) {
    grpc_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_typed_failures_answer_nothing),
        cmocka_unit_test(test_mem_copies),
        cmocka_unit_test(test_tables),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    grpc_shutdown();
    return failed;
}
