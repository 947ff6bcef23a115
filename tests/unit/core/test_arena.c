/* arena.h: alignment, big allocations beside the current block, zeroing, copies, and
 * freeing everything at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdalign.h>
#include <string.h>

#include "arena.h"

static void test_alignment_and_distinct(void **state) {
    (void)state;
    arena_t a = ARENA_INIT;
    char *prev = NULL;
    for (size_t n = 0; n < 100; n++) {
        char *p = arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
        assert_true(p != prev);
        memset(p, 0xab, n); /* writable, and must not overlap the previous one */
        if (prev != NULL)
            assert_true(prev + (n - 1) <= p || p + n <= prev);
        prev = p;
    }
    arena_free(&a);
    assert_null(a.head);
}

static void test_big_allocation_keeps_the_block(void **state) {
    (void)state;
    arena_t a = {NULL, 256};
    char *small1 = arena_alloc(&a, 16);
    char *big = arena_alloc(&a, 10000); /* a block of its own */
    char *small2 = arena_alloc(&a, 16);
    assert_non_null(small1);
    assert_non_null(big);
    assert_non_null(small2);
    /* The second small one still comes from the first block, right after the first. */
    assert_ptr_equal(small2, small1 + 16);
    memset(big, 1, 10000);
    arena_free(&a);
    /* Reusable after free. */
    assert_non_null(arena_alloc(&a, 300));
    arena_free(&a);
}

static void test_calloc_zeroes_and_checks_overflow(void **state) {
    (void)state;
    arena_t a = ARENA_INIT;
    unsigned char *p = arena_alloc(&a, 64);
    memset(p, 0xff, 64);
    arena_free(&a);
    unsigned char *z = arena_calloc(&a, 16, 4);
    assert_non_null(z);
    for (size_t i = 0; i < 64; i++)
        assert_int_equal(z[i], 0);
    assert_null(arena_calloc(&a, SIZE_MAX / 2, 3));
    assert_null(arena_alloc(&a, SIZE_MAX - 8));
    arena_free(&a);
}

static void test_copies(void **state) {
    (void)state;
    arena_t a = ARENA_INIT;
    char *s = arena_strdup(&a, "pool-a");
    assert_string_equal(s, "pool-a");
    char *t = arena_strndup(&a, "abcdef", 3);
    assert_string_equal(t, "abc");
    char *e = arena_strndup(&a, NULL, 0);
    assert_string_equal(e, "");
    const char with_nul[] = {'x', '\0', 'y'};
    char *u = arena_strndup(&a, with_nul, 3);
    assert_memory_equal(u, with_nul, 3);
    assert_int_equal(u[3], '\0');
    arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment_and_distinct),
        cmocka_unit_test(test_big_allocation_keeps_the_block),
        cmocka_unit_test(test_calloc_zeroes_and_checks_overflow),
        cmocka_unit_test(test_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
