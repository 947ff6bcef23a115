/* Unit tests of server/core/left_out.c, on cases whose answer is known by hand: the pods
 * an option leaves out of its related set go to the option that hosts pods at the lowest
 * price now, packed first-fit decreasing onto its node; options of another set, options
 * not in play and options that leave nothing out are charged nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "left_out.h"

#define GIB (1024LL * 1024 * 1024)

static const resources_t N1_8 = {8000, 30 * GIB, 0}, N1_16 = {16000, 60 * GIB, 0},
                         GPU_1 = {8000, 30 * GIB, 1};

static left_out_option_t option(size_t set, const uint32_t *pods, size_t count, resources_t node,
                                double node_price, int nodes, double t) {
    return (left_out_option_t){.in_play = true,
                               .set = set,
                               .pods = pods,
                               .pods_count = count,
                               .node = node,
                               .node_price = node_price,
                               .nodes_price = node_price * nodes,
                               .pods_price = t};
}

/* Three 1-core pods and two 9-core ones. n1-standard-8 x1 hosts the small ones; the
 * 16-core option x3 hosts all five, one large pod per node. The 8-core option leaves the
 * two large pods, which no 16-core node holds two of: 2 nodes at 0.76. */
static void test_large_pods_left_out(void **state) {
    (void)state;
    resources_t pods[] = {
        {1000, GIB, 0}, {1000, GIB, 0}, {1000, GIB, 0}, {9000, 4 * GIB, 0}, {9000, 4 * GIB, 0}};
    double prices[] = {0.04, 0.04, 0.04, 0.3, 0.3};
    uint32_t small[] = {0, 1, 2}, all[] = {0, 1, 2, 3, 4};
    left_out_option_t opts[] = {option(0, small, 3, N1_8, 0.38, 1, 0.12),
                                option(0, all, 5, N1_16, 0.76, 2, 0.72),
                                option(0, small, 3, N1_8, 0.38, 1, 0.12)};
    double cost[3], value[3];
    assert_int_equal(left_out_charge(pods, prices, 5, opts, 3, cost, value), 0);
    assert_true(cost[0] == 2 * 0.76);
    assert_true(value[0] == 0.6);
    assert_true(cost[1] == 0.0 && value[1] == 0.0);
    /* another group that leaves out the same pods: the same charge */
    assert_true(cost[2] == cost[0] && value[2] == value[0]);
}

/* Left-out pods go to the option with the lowest C / T among those hosting them, and
 * share its nodes first-fit decreasing: 5, 4, 3, 3 and 1 cores on 8-core nodes take two
 * ([5, 3] and [4, 3, 1]). */
static void test_packed_on_the_cheapest_host(void **state) {
    (void)state;
    resources_t pods[] = {{500, GIB / 2, 0}, {5000, GIB, 0}, {4000, GIB, 0},
                          {3000, GIB, 0},    {3000, GIB, 0}, {1000, GIB, 0}};
    double prices[] = {0.02, 0.2, 0.16, 0.12, 0.12, 0.04};
    uint32_t only_small[] = {0}, all[] = {0, 1, 2, 3, 4, 5};
    left_out_option_t opts[] = {
        option(0, only_small, 1, N1_8, 0.38, 1, 0.02),
        option(0, all, 6, N1_8, 0.38, 2, 0.66),  /* C / T = 1.1515 */
        option(0, all, 6, N1_16, 0.76, 2, 0.66), /* C / T = 2.303 */
    };
    double cost[3], value[3];
    assert_int_equal(left_out_charge(pods, prices, 6, opts, 3, cost, value), 0);
    assert_true(cost[0] == 2 * 0.38);
    assert_true(value[0] > 0.6399 && value[0] < 0.6401);
    assert_true(cost[1] == 0.0 && cost[2] == 0.0);
}

/* A GPU pod's set (its options carry no cpu pod) is another set: the cpu options are not
 * charged for it, and an option not in play neither hosts nor is charged. */
static void test_other_sets_and_options_out_of_play(void **state) {
    (void)state;
    resources_t pods[] = {{1000, GIB, 0}, {2000, 8 * GIB, 1}, {6000, GIB, 0}};
    double prices[] = {0.04, 0.8, 0.2};
    uint32_t cpu_small[] = {0}, cpu_all[] = {0, 2}, gpu[] = {1};
    left_out_option_t opts[] = {option(0, cpu_small, 1, N1_8, 0.38, 1, 0.04),
                                option(1, gpu, 1, GPU_1, 0.73, 1, 0.8),
                                option(0, cpu_all, 2, N1_8, 0.38, 1, 0.24)};
    left_out_option_t out_of_play = opts[2];
    out_of_play.in_play = false;
    double cost[3], value[3];
    assert_int_equal(left_out_charge(pods, prices, 3, opts, 3, cost, value), 0);
    assert_true(cost[0] == 0.38 && value[0] == 0.2);
    assert_true(cost[1] == 0.0 && value[1] == 0.0);
    opts[2] = out_of_play; /* the only host of pod 2: nothing left out of the rest */
    assert_int_equal(left_out_charge(pods, prices, 3, opts, 3, cost, value), 0);
    assert_true(cost[0] == 0.0 && value[0] == 0.0);
    assert_true(cost[2] == 0.0 && value[2] == 0.0);
}

/* A pod that requests nothing fits wherever a pod fits (no slot limit here): nothing is charged for
 * it, and an option of T = 0 hosts no left-out pod. */
static void test_unpriced_pods(void **state) {
    (void)state;
    resources_t pods[] = {{1000, GIB, 0}, {0, 0, 0}};
    double prices[] = {0.04, 0.0};
    uint32_t first[] = {0}, second[] = {1}, both[] = {0, 1};
    left_out_option_t opts[] = {option(0, first, 1, N1_8, 0.38, 1, 0.04),
                                option(0, second, 1, N1_8, 0.38, 1, 0.0),
                                option(0, both, 2, N1_16, 0.76, 1, 0.04)};
    double cost[3], value[3];
    assert_int_equal(left_out_charge(pods, prices, 2, opts, 3, cost, value), 0);
    assert_true(cost[0] == 0.0 && value[0] == 0.0);
    /* pod 0's lowest C / T: the 8-core option (9.5, against 19) */
    assert_true(cost[1] == 0.38 && value[1] == 0.04);
}

/* Pod slots bound the packing as they bound a node: 250 pods of 10m and 16 MiB fit one
 * 8-core node's cpu and memory, but at 110 pods a node they take three. */
static void test_pod_slots(void **state) {
    (void)state;
    enum { TINY = 250 };
    resources_t pods[TINY + 1];
    double prices[TINY + 1];
    uint32_t all[TINY + 1], large[] = {TINY};
    for (uint32_t p = 0; p < TINY; p++)
        pods[p] = (resources_t){10, 16LL * 1024 * 1024, 0}, prices[p] = 0.001, all[p] = p;
    pods[TINY] = (resources_t){12000, 8 * GIB, 0}, prices[TINY] = 0.4, all[TINY] = TINY;
    left_out_option_t opts[] = {option(0, large, 1, N1_16, 0.76, 1, 0.4),
                                option(0, all, TINY + 1, N1_8, 0.38, 3, 0.65)};
    opts[1].max_pods = 110;
    double cost[2], value[2];
    assert_int_equal(left_out_charge(pods, prices, TINY + 1, opts, 2, cost, value), 0);
    assert_true(cost[0] > 3 * 0.38 - 1e-9 && cost[0] < 3 * 0.38 + 1e-9);
    opts[1].max_pods = 0; /* no limit: one node */
    assert_int_equal(left_out_charge(pods, prices, TINY + 1, opts, 2, cost, value), 0);
    assert_true(cost[0] == 0.38);
    /* Pods that request nothing (price 0) take slots alone: 250 need three nodes, and
     * nothing where the nodes have no slot limit. */
    for (uint32_t p = 0; p < TINY; p++)
        pods[p] = (resources_t){0, 0, 0}, prices[p] = 0.0;
    opts[1].max_pods = 110;
    assert_int_equal(left_out_charge(pods, prices, TINY + 1, opts, 2, cost, value), 0);
    assert_true(cost[0] > 3 * 0.38 - 1e-9 && cost[0] < 3 * 0.38 + 1e-9);
    assert_true(value[0] == 0.0);
    opts[1].max_pods = 0;
    assert_int_equal(left_out_charge(pods, prices, TINY + 1, opts, 2, cost, value), 0);
    assert_true(cost[0] == 0.0 && value[0] == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_pods_left_out),
        cmocka_unit_test(test_packed_on_the_cheapest_host),
        cmocka_unit_test(test_other_sets_and_options_out_of_play),
        cmocka_unit_test(test_unpriced_pods),
        cmocka_unit_test(test_pod_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
