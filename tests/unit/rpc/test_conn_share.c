/* conn_share: each connection's count of calls in flight and its fair share of the cap,
 * the table's entries freed at 0 (also under concurrent use), the warning limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn_share.h"

#define A "ipv4:10.0.0.5:41234"
#define B "ipv4:10.0.0.6:50000"

/* Acquire up to n calls of peer into slots; returns how many were counted. */
static long acquire_n(conn_share_t *t, const char *peer, long n, conn_share_slot_t *slots,
                      conn_share_use_t *last) {
    long got = 0;
    for (long i = 0; i < n; i++) {
        conn_share_slot_t slot;
        if (!conn_share_acquire(t, peer, &slot, last))
            break;
        assert_true(slot != CONN_SHARE_UNTRACKED);
        slots[got++] = slot;
    }
    return got;
}

static void release_n(conn_share_t *t, conn_share_slot_t *slots, long n) {
    for (long i = 0; i < n; i++)
        conn_share_release(t, slots[i]);
}

static void test_share_divides_the_cap(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1024, 32);
    assert_non_null(t);
    static conn_share_slot_t a[1024], b[1024];
    conn_share_use_t use;
    /* Alone, a connection gets half: the other half stays for a newcomer. */
    assert_int_equal(acquire_n(t, A, 1024, a, &use), 512);
    assert_int_equal(use.held, 512);
    assert_int_equal(use.share, 512);
    assert_int_equal(use.connections, 1);
    assert_int_equal(conn_share_busiest(t), 512);
    assert_int_equal(conn_share_connections(t), 1);
    /* The newcomer gets a share too; the first connection can take no more. */
    assert_int_equal(acquire_n(t, B, 1024, b, &use), 1024 / 3);
    assert_int_equal(use.connections, 2);
    conn_share_slot_t extra;
    assert_false(conn_share_acquire(t, A, &extra, &use));
    assert_int_equal(use.share, 1024 / 3);
    assert_int_equal(use.held, 512);
    assert_int_equal(conn_share_connections(t), 2);
    /* Released, the entries go: nothing is held, no connection counted. */
    release_n(t, a, 512);
    assert_int_equal(conn_share_connections(t), 1);
    assert_int_equal(conn_share_busiest(t), 1024 / 3);
    release_n(t, b, 1024 / 3);
    assert_int_equal(conn_share_connections(t), 0);
    assert_int_equal(conn_share_busiest(t), 0);
    /* and a connection alone has half again */
    assert_int_equal(acquire_n(t, B, 1024, b, &use), 512);
    release_n(t, b, 512);
    conn_share_destroy(t);
}

/* A closed connection takes no more calls and no longer divides the cap; its calls stay
 * counted until released, and then its entry goes. */
static void test_mark_closed(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1024, 32);
    static conn_share_slot_t a[16], b[1024];
    conn_share_use_t use;
    assert_int_equal(acquire_n(t, A, 10, a, &use), 10);
    assert_int_equal(conn_share_connections(t), 1);
    assert_true(conn_share_mark_closed(t, use.slot));
    assert_false(conn_share_mark_closed(t, use.slot));
    assert_false(conn_share_mark_closed(t, CONN_SHARE_UNTRACKED));
    assert_int_equal(conn_share_connections(t), 0);
    conn_share_slot_t extra;
    assert_false(conn_share_acquire(t, A, &extra, &use));
    assert_int_equal(use.held, 10);
    assert_true(use.closed); /* refused for the close, not for its share */
    /* another connection alone again: half the cap */
    assert_int_equal(acquire_n(t, B, 1024, b, &use), 512);
    assert_false(use.closed);
    assert_int_equal(conn_share_busiest(t), 512);
    release_n(t, a, 10);
    release_n(t, b, 512);
    assert_int_equal(conn_share_connections(t), 0);
    assert_int_equal(conn_share_busiest(t), 0);
    /* its entry gone, the address is a new connection */
    assert_int_equal(acquire_n(t, A, 1, a, &use), 1);
    assert_int_equal(conn_share_connections(t), 1);
    conn_share_release(t, a[0]);
    conn_share_destroy(t);
}

static void test_floor(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(64, 32);
    static conn_share_slot_t s[8][64];
    char peer[64];
    conn_share_use_t use;
    /* 64 / (n + 1) is below 32 from the second connection on: each still gets 32. */
    for (int i = 0; i < 8; i++) {
        snprintf(peer, sizeof(peer), "ipv6:[fd00::%d]:443", i);
        assert_int_equal(acquire_n(t, peer, 64, s[i], &use), 32);
        assert_int_equal(use.share, 32);
    }
    assert_int_equal(conn_share_connections(t), 8);
    for (int i = 0; i < 8; i++)
        release_n(t, s[i], 32);
    assert_int_equal(conn_share_connections(t), 0);
    conn_share_destroy(t);
}

/* More connections than the table has room for near their place: the calls are still
 * admitted (only the total cap applies to them) and release does nothing. */
static void test_untracked_when_full(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1, 1); /* 64 slots */
    conn_share_slot_t slots[200];
    char peer[64];
    size_t untracked = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(peer, sizeof(peer), "ipv4:10.1.%d.%d:1000", i / 256, i % 256);
        assert_true(conn_share_acquire(t, peer, &slots[i], NULL));
        untracked += slots[i] == CONN_SHARE_UNTRACKED;
    }
    assert_true(untracked >= 200 - 64);
    assert_int_equal(conn_share_connections(t), 200 - (long)untracked);
    for (int i = 0; i < 200; i++)
        conn_share_release(t, slots[i]);
    assert_int_equal(conn_share_connections(t), 0);
    assert_int_equal(conn_share_busiest(t), 0);
    conn_share_destroy(t);
}

static void test_warn_once_a_minute_per_host(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1024, 32);
    assert_true(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1000", 100));
    /* the same host on another connection, within the minute: no new line */
    assert_false(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1001", 130));
    assert_false(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1000", 159));
    assert_true(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv6:[::1]:1000", 130));
    assert_false(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv6:[::1]:2000", 131));
    assert_true(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.6:1000", 130));
    assert_true(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1002", 160));
    assert_false(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1002", 161));
    /* at most 256 hosts a minute in all */
    char peer[64];
    int warned = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(peer, sizeof(peer), "ipv4:10.2.%d.%d:80", i / 256, i % 256);
        warned += conn_share_should_warn(t, CONN_SHARE_REFUSED, peer, 200);
    }
    assert_true(warned > 100 && warned <= 256);
    conn_share_destroy(t);
}

static void test_close_once_a_second_per_connection(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1024, 32);
    assert_true(conn_share_should_close(t, "ipv4:10.0.0.5:1000", 100));
    assert_false(conn_share_should_close(t, "ipv4:10.0.0.5:1000", 100));
    /* another connection of the same host is another connection */
    assert_true(conn_share_should_close(t, "ipv4:10.0.0.5:1001", 100));
    assert_true(conn_share_should_close(t, "ipv4:10.0.0.5:1000", 101));
    /* closing does not use up the warning, nor the reverse */
    assert_true(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1000", 101));
    assert_false(conn_share_should_warn(t, CONN_SHARE_REFUSED, "ipv4:10.0.0.5:1000", 102));
    assert_true(conn_share_should_close(t, "ipv4:10.0.0.5:1000", 102));
    conn_share_destroy(t);
}

/* Threads count and release calls of a few connections at once: every count stays
 * within its share (give or take a call per thread racing for a new entry), and once
 * all is released the table is empty. */
#define THREADS 4
#define ROUNDS 20000

typedef struct race {
    conn_share_t *t;
    int id;
    long over;
} race_t;

static void *race_main(void *arg) {
    race_t *r = arg;
    conn_share_slot_t held[64];
    int n = 0;
    unsigned seed = (unsigned)r->id;
    char peer[32];
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(peer, sizeof(peer), "ipv4:127.0.0.1:%d", rand_r(&seed) % 3);
        conn_share_use_t use;
        conn_share_slot_t slot;
        if (n < 64 && conn_share_acquire(r->t, peer, &slot, &use)) {
            held[n++] = slot;
            if (use.held > 32 + THREADS)
                r->over++;
        } else if (n > 0) {
            int k = rand_r(&seed) % n;
            conn_share_release(r->t, held[k]);
            held[k] = held[--n];
        }
    }
    while (n > 0)
        conn_share_release(r->t, held[--n]);
    return NULL;
}

/* A connection's open streams: counted per admitted call, down as their ends come,
 * apart from the calls still held (a call whose stream ended stays in flight). */
static void test_streams(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(1024, 32);
    static conn_share_slot_t a[3], b[1];
    conn_share_use_t use;
    assert_int_equal(acquire_n(t, A, 3, a, &use), 3);
    assert_int_equal(acquire_n(t, B, 1, b, &use), 1);
    for (long i = 0; i < 3; i++)
        assert_int_equal(conn_share_stream_open(t, a[i]), i + 1);
    assert_int_equal(conn_share_stream_open(t, b[0]), 1);
    conn_share_stream_ended(t, a[0]);
    conn_share_stream_ended(t, a[1]);
    assert_int_equal(conn_share_streams(t, a[2]), 1);
    assert_int_equal(conn_share_streams(t, b[0]), 1);
    assert_int_equal(conn_share_busiest(t), 3); /* the calls are still held */
    conn_share_stream_ended(t, a[2]);
    conn_share_stream_ended(t, b[0]);
    release_n(t, a, 3);
    release_n(t, b, 1);
    assert_int_equal(conn_share_connections(t), 0);
    assert_int_equal(conn_share_stream_open(t, CONN_SHARE_UNTRACKED), 0);
    assert_int_equal(conn_share_streams(t, CONN_SHARE_UNTRACKED), 0);
    conn_share_stream_ended(t, CONN_SHARE_UNTRACKED); /* nothing */
    conn_share_destroy(t);
}

static void test_concurrent(void **state) {
    (void)state;
    conn_share_t *t = conn_share_create(64, 32);
    pthread_t th[THREADS];
    race_t r[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (race_t){t, i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].over, 0);
    }
    assert_int_equal(conn_share_connections(t), 0);
    assert_int_equal(conn_share_busiest(t), 0);
    conn_share_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_divides_the_cap),
        cmocka_unit_test(test_mark_closed),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_untracked_when_full),
        cmocka_unit_test(test_warn_once_a_minute_per_host),
        cmocka_unit_test(test_close_once_a_second_per_connection),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
