/* Unit tests of the fluid lower bound (server/replay/replay_bound.c) on small cases whose
 * optimum is known by hand: one pod on one group, the groups a pod may use, two pods
 * that fit best on two different shapes, the integral over time, min_size paid without
 * pods, GPUs, pods left out, a program without a feasible solution, a direction between
 * the grid's points, and the grid's classes past REPLAY_BOUND_EXACT_CLASSES directions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "replay_bound.h"

#define GIB (1024LL * 1024 * 1024)

static const bool all[4] = {true, true, true, true};

static replay_bound_group_t group(int64_t cpu, int64_t gib, int64_t gpu, double price) {
    return (replay_bound_group_t){{cpu * 1000, gib * GIB, gpu}, price, 0, 1000};
}

static replay_bound_pod_t pod(int64_t from, int64_t to, int64_t milli, int64_t mib,
                              const bool *hosts) {
    return (replay_bound_pod_t){from, to, {milli, mib * 1024 * 1024, 0}, hosts};
}

static replay_bound_t bound(const replay_bound_group_t *g, size_t ng, const replay_bound_pod_t *p,
                            size_t np, int64_t horizon) {
    replay_bound_t b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_bound_compute(g, ng, 0, 0, p, np, horizon, &b, &err), 0);
    return b;
}

/* 2 cpu and 4 GiB for an hour on a 4-cpu 16-GiB node at 1/h: half a node, 0.5. */
static void test_one_pod(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 1.0)};
    replay_bound_pod_t p[] = {pod(0, 3600, 2000, 4096, all)};
    replay_bound_t b = bound(g, 1, p, 1, 3600);
    assert_true(b.ok);
    assert_float_equal(b.cost, 0.5, 1e-6);
    /* 3 cpu, 5 GiB (a direction between grid points): 0.75 of the node. */
    p[0] = pod(0, 3600, 3000, 5120, all);
    b = bound(g, 1, p, 1, 3600);
    assert_float_equal(b.cost, 0.75, 1e-6);
}

/* The pod may only use the dearer group: 1 cpu of a 2-cpu node at 3/h is 1.5. */
static void test_hosts(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(2, 8, 0, 1.0), group(2, 8, 0, 3.0)};
    bool only_b[] = {false, true};
    replay_bound_pod_t p[] = {pod(0, 3600, 1000, 1024, only_b)};
    replay_bound_t b = bound(g, 2, p, 1, 3600);
    assert_true(b.ok);
    assert_float_equal(b.cost, 1.5, 1e-6);
    /* Free to choose: the cheap one, 0.5. */
    p[0].hosts = all;
    assert_float_equal(bound(g, 2, p, 1, 3600).cost, 0.5, 1e-6);
}

/* A cpu-heavy and a memory-heavy pod, a memory-heavy and a cpu-heavy shape at 1/h each:
 * each pod on its shape takes half a node, 1.0 per hour; no less is possible, as both
 * shapes together hold (10 cpu, 10 GiB) for 2 and the pods need (5, 5). When the
 * cpu-heavy pod may only use the memory shape it takes 2 nodes, and the other pod half
 * a node of its own shape: 2.5 per hour. */
static void test_complementary(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(2, 8, 0, 1.0), group(8, 2, 0, 1.0)};
    replay_bound_pod_t p[] = {pod(0, 7200, 4000, 1024, all), pod(0, 7200, 1000, 4096, all)};
    replay_bound_t b = bound(g, 2, p, 2, 7200);
    assert_true(b.ok);
    assert_float_equal(b.cost, 2.0, 1e-6); /* 1.0 per hour for 2 h */
    bool only_a[] = {true, false};
    p[0].hosts = only_a;
    b = bound(g, 2, p, 2, 7200);
    assert_float_equal(b.cost, 2.0 * 2.5, 1e-6);
}

/* Pods one after the other: half an hour each at their own need. Many identical pods
 * form one class: 10 pods of 1 cpu are 2.5 nodes of 4 cpu. */
static void test_over_time(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 2.0)};
    replay_bound_pod_t p[12];
    p[0] = pod(0, 1800, 4000, 1024, all);    /* 1 node x 0.5 h x 2 = 1.0 */
    p[1] = pod(1800, 3600, 2000, 1024, all); /* 0.5 x 0.5 x 2 = 0.5 */
    for (int i = 2; i < 12; i++)
        p[i] = pod(3600, 7200, 1000, 1024, all); /* 2.5 x 1 x 2 = 5.0 */
    replay_bound_t b = bound(g, 1, p, 12, 7200);
    assert_true(b.ok);
    assert_float_equal(b.cost, 6.5, 1e-6);
    /* Cut at the horizon: the last hour is left out. */
    assert_float_equal(bound(g, 1, p, 12, 3600).cost, 1.5, 1e-6);
}

/* A day with one change off any grid: for the first hour two 4-cpu pods and a 1-cpu pod
 * need 9 cpu; the cheap group has one node (4 cpu at 1/h), the rest goes to the dear one
 * (5 cpu, 1.25 nodes at 3/h): 4.75 per hour. Then the 1-cpu pod alone for 23 h, a quarter
 * of the cheap node: 5.75. 10.5 in all, solved per change, not for a window's mean. */
static void test_per_change(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 1.0), group(4, 16, 0, 3.0)};
    g[0].max_size = 1;
    replay_bound_pod_t p[] = {pod(0, 3600, 4000, 1024, all), pod(0, 3600, 4000, 1024, all),
                              pod(0, 86400, 1000, 1024, all)};
    replay_bound_t b = bound(g, 2, p, 3, 86400);
    assert_true(b.ok);
    assert_float_equal(b.cost, 10.5, 1e-6);
    /* Past REPLAY_BOUND_MAX_SOLVES changes, windows of their mean load: exact here, as one
     * group without bounds makes the optimum linear in the load. 2,000 pods of 1 cpu for
     * 20 s each: 2,000 x 0.25 x 20 / 3600. */
    static replay_bound_pod_t many[2000];
    for (int i = 0; i < 2000; i++)
        many[i] = pod(i * 40 + 7, i * 40 + 27, 1000, 1024, all);
    b = bound(g + 1, 1, many, 2000, 86400);
    assert_true(b.ok);
    assert_float_equal(b.cost, 3.0 * 2000 * 0.25 * 20 / 3600, 1e-6);
}

/* min_size nodes are paid without pods; pods fill them first. */
static void test_min_size(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 1.0)};
    g[0].min_size = 2;
    replay_bound_t b = bound(g, 1, NULL, 0, 3600);
    assert_true(b.ok);
    assert_float_equal(b.cost, 2.0, 1e-6);
    replay_bound_pod_t p[] = {pod(0, 3600, 4000, 1024, all)};
    assert_float_equal(bound(g, 1, p, 1, 3600).cost, 2.0, 1e-6);
}

/* A GPU pod needs the GPU group, whole: 1 node at 2/h. */
static void test_gpu(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(8, 32, 0, 0.5), group(8, 32, 1, 2.0)};
    bool gpu_only[] = {false, true};
    replay_bound_pod_t p[] = {pod(0, 3600, 2000, 8192, gpu_only)};
    p[0].request.gpu = 1;
    replay_bound_t b = bound(g, 2, p, 1, 3600);
    assert_true(b.ok);
    assert_float_equal(b.cost, 2.0, 1e-6);
}

/* No group hosts it, or it requests nothing: left out. */
static void test_left_out(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 1.0)};
    bool none[] = {false};
    replay_bound_pod_t p[] = {pod(0, 3600, 2000, 1024, none), pod(0, 3600, 0, 0, all)};
    replay_bound_t b = bound(g, 1, p, 2, 3600);
    assert_true(b.ok);
    assert_float_equal(b.cost, 0.0, 1e-9);
}

/* More than max_size nodes' worth: no feasible solution, the reason says when. */
static void test_infeasible(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(4, 16, 0, 1.0)};
    g[0].max_size = 1;
    replay_bound_pod_t p[] = {pod(0, 3600, 3000, 1024, all), pod(1800, 3600, 3000, 1024, all)};
    replay_bound_t b = bound(g, 1, p, 2, 3600);
    assert_false(b.ok);
    assert_non_null(strstr(b.reason, "no feasible solution at 0.50 h"));
    /* The cluster-wide cpu limit likewise. */
    g[0].max_size = 10;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_bound_compute(g, 1, 4000, 0, p, 2, 3600, &b, &err), 0);
    assert_false(b.ok);
    assert_non_null(strstr(b.reason, "no feasible solution"));
}

/* A direction between grid points, with two shapes to choose from: 4 cpu and 6 GiB for
 * an hour on A (8 cpu, 11585 MiB at 1/h) takes max(4/8, 6144/11585) of a node, 0.530341;
 * on B (8 cpu, 13777 MiB at 1.1/h) half a node, 0.55. Exact: 0.530341, not the 0.516 of
 * the pod's grid parts each going to the shape that suits it. */
static void test_off_grid(void **state) {
    (void)state;
    replay_bound_group_t g[] = {{{8000, 11585LL << 20, 0}, 1.0, 0, 1000},
                                {{8000, 13777LL << 20, 0}, 1.1, 0, 1000}};
    replay_bound_pod_t p[] = {pod(0, 3600, 4000, 6144, all)};
    replay_bound_t b = bound(g, 2, p, 1, 3600);
    assert_true(b.ok && b.exact);
    assert_float_equal(b.cost, 6144.0 / 11585.0, 1e-6);
    /* Pods of one direction in other sizes are one class: 2 cpu and 3 GiB twice more. */
    replay_bound_pod_t q[] = {p[0], pod(0, 3600, 2000, 3072, all), pod(0, 3600, 2000, 3072, all)};
    b = bound(g, 2, q, 3, 3600);
    assert_int_equal(b.classes, 1);
    assert_float_equal(b.cost, 2 * 6144.0 / 11585.0, 1e-6);
}

/* Past REPLAY_BOUND_EXACT_CLASSES directions the grid's classes: 300 pods of 1 cpu and
 * 1 GiB + i MiB, each for 12 s on one group (where the grid parts lose nothing):
 * sum over i of max(1/8, (1024 + i)/32768) x 12 / 3600. */
static void test_grid_classes(void **state) {
    (void)state;
    replay_bound_group_t g[] = {group(8, 32, 0, 1.0)};
    static replay_bound_pod_t p[300];
    double want = 0;
    for (int i = 0; i < 300; i++) {
        p[i] = pod(i * 12, i * 12 + 12, 1000, 1024 + i, all);
        want += (1.0 / 8 > (1024.0 + i) / 32768 ? 1.0 / 8 : (1024.0 + i) / 32768) * 12 / 3600;
    }
    replay_bound_t b = bound(g, 1, p, 300, 3600);
    assert_true(b.ok);
    assert_false(b.exact);
    assert_true(b.classes < 300);
    assert_float_equal(b.cost, want, 1e-6);
    b = bound(g, 1, p, REPLAY_BOUND_EXACT_CLASSES, 3600);
    assert_true(b.exact);
    assert_int_equal(b.classes, REPLAY_BOUND_EXACT_CLASSES);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_pod),       cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_complementary), cmocka_unit_test(test_over_time),
        cmocka_unit_test(test_min_size),      cmocka_unit_test(test_gpu),
        cmocka_unit_test(test_left_out),      cmocka_unit_test(test_infeasible),
        cmocka_unit_test(test_per_change),    cmocka_unit_test(test_off_grid),
        cmocka_unit_test(test_grid_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
