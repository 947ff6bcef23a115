/* peer_socket: gRPC's peer names against socket addresses, and shutting down the one
 * connection of a real loopback pair that a peer name designates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer_socket.h"

static struct sockaddr_in v4(const char *ip, unsigned port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, unsigned port) {
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    a.sin6_port = htons((uint16_t)port);
    inet_pton(AF_INET6, ip, &a.sin6_addr);
    return a;
}

static void test_matches(void **state) {
    (void)state;
    struct sockaddr_in a = v4("10.0.0.5", 41234);
    struct sockaddr_in6 mapped = v6("::ffff:10.0.0.5", 41234);
    struct sockaddr_in6 b = v6("fd00::1", 443);
    const struct sockaddr *sa = (const struct sockaddr *)&a;
    const struct sockaddr *sm = (const struct sockaddr *)&mapped;
    const struct sockaddr *sb = (const struct sockaddr *)&b;
    assert_true(peer_socket_matches("ipv4:10.0.0.5:41234", sa));
    assert_true(peer_socket_matches("ipv4:10.0.0.5:41234", sm)); /* a dual-stack socket */
    assert_false(peer_socket_matches("ipv4:10.0.0.5:41235", sa));
    assert_false(peer_socket_matches("ipv4:10.0.0.6:41234", sa));
    assert_true(peer_socket_matches("ipv6:[fd00::1]:443", sb));
    assert_true(peer_socket_matches("ipv6:%5Bfd00::1%5D:443", sb));
    assert_false(peer_socket_matches("ipv6:[fd00::2]:443", sb));
    /* not an IP peer, or not one gRPC would write */
    assert_false(peer_socket_matches("unix:/run/frugal.sock", sa));
    assert_false(peer_socket_matches("ipv4:10.0.0.5", sa));
    assert_false(peer_socket_matches("ipv4:10.0.0.5:", sa));
    assert_false(peer_socket_matches("ipv4:10.0.0.5:99999", sa));
    assert_false(peer_socket_matches("ipv4:10.0.0.5:1x", sa));
    assert_false(peer_socket_matches("", sa));
    assert_false(peer_socket_matches("unknown", sa));
}

/* A loopback connection: the server's end is shut down by the client's name (its
 * remote end), the client's end is not (its remote is the listener's port). */
static void test_shutdown(void **state) {
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in any = v4("127.0.0.1", 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&any, sizeof(any)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    struct sockaddr_in srv;
    socklen_t len = sizeof(srv);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&srv, &len), 0);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
    int afd = accept(lfd, NULL, NULL);
    assert_true(afd >= 0);
    struct sockaddr_in cli;
    len = sizeof(cli);
    assert_int_equal(getsockname(cfd, (struct sockaddr *)&cli, &len), 0);
    char peer[64];
    snprintf(peer, sizeof(peer), "ipv4:127.0.0.1:%u", ntohs(cli.sin_port) + 1u);
    assert_int_equal(peer_socket_shutdown(peer), 0); /* nobody there */
    assert_int_equal(peer_socket_shutdown("unix:/x"), 0);
    /* what the client sent and the server did not read is dropped with the connection */
    assert_int_equal(send(cfd, "flood", 5, 0), 5);
    usleep(10000);
    snprintf(peer, sizeof(peer), "ipv4:127.0.0.1:%u", ntohs(cli.sin_port));
    assert_int_equal(peer_socket_shutdown(peer), 1);
    char c;
    assert_true(recv(cfd, &c, 1, 0) <= 0); /* the client sees the end (a reset) */
    assert_true(recv(afd, &c, 1, 0) <= 0); /* and the server's end reads no more */
    close(afd);
    close(cfd);
    close(lfd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
