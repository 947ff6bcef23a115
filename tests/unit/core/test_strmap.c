#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "strmap.h"

static void test_put_get_remove(void **state) {
    (void)state;
    strmap_t *m = NULL;
    assert_int_equal(strmap_create(0, &m), 0);
    int a = 1, b = 2, c = 3;
    assert_null(strmap_get(m, "a"));
    assert_int_equal(strmap_put(m, "a", &a, NULL), 0);
    assert_int_equal(strmap_put(m, "b", &b, NULL), 0);
    assert_int_equal(strmap_count(m), 2);
    assert_ptr_equal(strmap_get(m, "a"), &a);
    assert_ptr_equal(strmap_get(m, "b"), &b);
    assert_null(strmap_get(m, "c"));
    assert_null(strmap_get(m, ""));

    void *old = NULL;
    char key_copy[] = "a";
    assert_int_equal(strmap_put(m, key_copy, &c, &old), 0);
    assert_ptr_equal(old, &a);
    assert_int_equal(strmap_count(m), 2);
    assert_ptr_equal(strmap_get(m, "a"), &c);

    assert_ptr_equal(strmap_remove(m, "a"), &c);
    assert_null(strmap_remove(m, "a"));
    assert_null(strmap_get(m, "a"));
    assert_int_equal(strmap_count(m), 1);
    assert_int_equal(strmap_put(m, "x", NULL, NULL), FRUGAL_EINVAL);
    strmap_destroy(m);
    strmap_destroy(NULL);
}

/* Thousands of provider ids differing only in their suffix, inserted, removed in a
 * scattered order and checked against the expected contents after every phase. */
static void test_many_keys_against_reference(void **state) {
    (void)state;
    enum { N = 20000 };
    char **keys = calloc(N, sizeof(*keys));
    int *vals = calloc(N, sizeof(*vals));
    assert_non_null(keys);
    assert_non_null(vals);
    strmap_t *m = NULL;
    assert_int_equal(strmap_create(4, &m), 0);
    for (int i = 0; i < N; i++) {
        char buf[64];
        snprintf(buf, sizeof(buf), "frugal://pool-a/pool-a-%d", i);
        keys[i] = strdup(buf);
        vals[i] = i;
        assert_int_equal(strmap_put(m, keys[i], &vals[i], NULL), 0);
    }
    assert_int_equal(strmap_count(m), N);
    /* Remove every key whose index is not coprime-ish with 3 or 7, in a stride order. */
    size_t removed = 0;
    for (size_t k = 0, i = 0; k < N; k++, i = (i + 7919) % N) {
        if (i % 3 == 0 || i % 7 == 0) {
            assert_ptr_equal(strmap_remove(m, keys[i]), &vals[i]);
            removed++;
        }
    }
    assert_int_equal(strmap_count(m), N - removed);
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0 || i % 7 == 0)
            assert_null(strmap_get(m, keys[i]));
        else
            assert_ptr_equal(strmap_get(m, keys[i]), &vals[i]);
    }
    /* Iteration visits each remaining entry once. */
    size_t pos = 0, seen = 0;
    const char *key;
    void *value;
    while (strmap_next(m, &pos, &key, &value)) {
        assert_string_equal(key, keys[*(int *)value]);
        seen++;
    }
    assert_int_equal(seen, N - removed);
    /* Re-insert the removed ones. */
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0 || i % 7 == 0)
            assert_int_equal(strmap_put(m, keys[i], &vals[i], NULL), 0);
    }
    for (int i = 0; i < N; i++)
        assert_ptr_equal(strmap_get(m, keys[i]), &vals[i]);
    strmap_destroy(m);
    for (int i = 0; i < N; i++)
        free(keys[i]);
    free(keys);
    free(vals);
}

static void test_reserve(void **state) {
    (void)state;
    strmap_t *m = NULL;
    assert_int_equal(strmap_create(0, &m), 0);
    int v = 0;
    assert_int_equal(strmap_put(m, "keep", &v, NULL), 0);
    assert_int_equal(strmap_reserve(m, 1000), 0);
    assert_ptr_equal(strmap_get(m, "keep"), &v);
    assert_int_equal(strmap_reserve(m, 10), 0); /* never shrinks */
    assert_ptr_equal(strmap_get(m, "keep"), &v);
    strmap_destroy(m);
}

/* Wrap-around removal: keys crowding the end of a small table. */
static void test_small_table_churn(void **state) {
    (void)state;
    strmap_t *m = NULL;
    assert_int_equal(strmap_create(0, &m), 0);
    char keys[6][8];
    int vals[6];
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 6; i++) {
            snprintf(keys[i], sizeof(keys[i]), "k%d", (round * 6 + i) % 37);
            vals[i] = i;
            strmap_put(m, keys[i], &vals[i], NULL);
        }
        for (int i = 0; i < 6; i++)
            assert_non_null(strmap_get(m, keys[i]));
        for (int i = 5; i >= 0; i--)
            strmap_remove(m, keys[i]);
        assert_int_equal(strmap_count(m), 0);
    }
    strmap_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_remove),
        cmocka_unit_test(test_many_keys_against_reference),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_small_table_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
