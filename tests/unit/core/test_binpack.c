/* Unit tests of server/core/binpack.c, on cases whose answer is known by hand: CA's
 * estimator's order (largest share of the node first, ties in index order) and first fit
 * onto new nodes with cpu, memory, GPUs and pod slots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "binpack.h"

#define GIB (1024LL * 1024 * 1024)

static const resources_t NODE = {2000, 8 * GIB, 0};

static void test_size(void **state) {
    (void)state;
    resources_t pod = {500, 4 * GIB, 0};
    assert_true(binpack_size(&pod, &NODE) == 0.25 + 0.5);
    resources_t no_memory = {2000, 0, 0};
    assert_true(binpack_size(&pod, &no_memory) == 0.25); /* a dimension it lacks counts 0 */
}

/* Largest first; equal sizes (a cpu-heavy and a memory-heavy pod) keep their index order
 * whatever their place in the input. */
static void test_order(void **state) {
    (void)state;
    binpack_key_t keys[] = {{0.5, 0}, {1.0, 1}, {0.75, 2}, {0.5, 3}, {1.0, 4}, {0.5, 5}};
    binpack_sort_largest_first(keys, 6);
    static const size_t want[] = {1, 4, 2, 0, 3, 5};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(keys[i].at, want[i]);
}

/* Three pods of 1.2 cores take three 2-core nodes; two of 0.8 then fill the first two. */
static void test_first_fit(void **state) {
    (void)state;
    resources_t pods[] = {
        {1200, GIB, 0}, {1200, GIB, 0}, {1200, GIB, 0}, {800, GIB, 0}, {800, GIB, 0}};
    size_t order[] = {0, 1, 2, 3, 4};
    resources_t room[5];
    int64_t slots[5];
    assert_int_equal(binpack_first_fit(pods, order, 5, &NODE, 0, room, slots), 3);
    assert_int_equal(room[0].cpu_milli, 0);
    assert_int_equal(room[1].cpu_milli, 0);
    assert_int_equal(room[2].cpu_milli, 800);
    /* one pod slot a node: a node each */
    assert_int_equal(binpack_first_fit(pods, order, 5, &NODE, 1, room, slots), 5);
}

/* Largest first, each pod's node: the two 0.8-core pods (given first) follow the three of
 * 1.2 cores onto the first two nodes; under a limit of 2 nodes only the third 1.2-core
 * pod is left out. */
static void test_largest_first_nodes(void **state) {
    (void)state;
    resources_t pods[] = {
        {800, GIB, 0}, {800, GIB, 0}, {1200, GIB, 0}, {1200, GIB, 0}, {1200, GIB, 0}};
    size_t nodes = 0, node_of[5];
    assert_int_equal(binpack_largest_first(pods, 5, &NODE, 0, &nodes, node_of), 0);
    assert_int_equal(nodes, 3);
    static const size_t want[] = {0, 1, 0, 1, 2};
    for (size_t k = 0; k < 5; k++)
        assert_int_equal(node_of[k], want[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_first_fit),
        cmocka_unit_test(test_largest_first_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
