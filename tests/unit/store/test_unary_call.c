/* Unit tests of server/store/unary_call.c: the caller keeps the request it passes in,
 * whole, after the call, so the etcd client can send it again to the next endpoint (gRPC
 * takes the slices out of the buffer a call sends; a retry once sent an empty request:
 * an empty Txn "succeeds", an empty KeepAlive renews lease 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "unary_call.h"

static int group_setup(void **state) {
    (void)state;
    grpc_init();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    grpc_shutdown_blocking();
    return 0;
}

/* A loopback port bound but not listening (fd kept open): connections are refused. */
static int refused_port(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

static void assert_holds(grpc_byte_buffer *b, const char *want) {
    grpc_byte_buffer_reader r;
    assert_true(grpc_byte_buffer_reader_init(&r, b));
    grpc_slice s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    assert_int_equal(GRPC_SLICE_LENGTH(s), strlen(want));
    assert_memory_equal(GRPC_SLICE_START_PTR(s), want, strlen(want));
    grpc_slice_unref(s);
}

static void test_request_kept_for_a_retry(void **state) {
    (void)state;
    int fd;
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", refused_port(&fd));
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, creds, NULL);
    grpc_channel_credentials_release(creds);
    grpc_slice s = grpc_slice_from_copied_string("a request");
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    for (int attempt = 0; attempt < 2; attempt++) {
        grpc_byte_buffer *resp = NULL;
        grpc_status_code st = GRPC_STATUS_OK;
        char *details = NULL;
        gpr_timespec deadline =
            gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(2000, GPR_TIMESPAN));
        assert_int_equal(unary_call(ch, "/x.Y/Z", deadline, NULL, 0, req, &resp, &st, &details), 0);
        assert_int_equal(st, GRPC_STATUS_UNAVAILABLE);
        assert_null(resp);
        free(details);
        assert_holds(req, "a request");
    }
    grpc_byte_buffer_destroy(req);
    grpc_channel_destroy(ch);
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_kept_for_a_retry),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
