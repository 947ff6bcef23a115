/* Unit tests of server/core/strbuf.c: appends of any length, printf beyond any fixed
 * buffer, take and free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static void test_append_and_printf(void **state) {
    (void)state;
    strbuf_t b = {0};
    assert_null(strbuf_take(&b)); /* nothing appended */
    strbuf_puts(&b, "a");
    strbuf_append(&b, "bcdef", 2);
    strbuf_printf(&b, "-%d-%s", 42, "x");
    assert_string_equal(b.data, "abc-42-x");
    assert_int_equal(b.len, 8);
    /* Longer than any first allocation, and than a line buffer. */
    char big[5000];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    strbuf_printf(&b, "[%s]", big);
    assert_int_equal(b.len, 8 + 2 + sizeof(big) - 1);
    assert_int_equal(b.data[b.len - 1], ']');
    assert_int_equal(strlen(b.data), b.len);
    assert_false(b.failed);
    char *s = strbuf_take(&b);
    assert_non_null(s);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_true(strncmp(s, "abc-42-x[yyy", 12) == 0);
    free(s);
    strbuf_puts(&b, "again");
    assert_string_equal(b.data, "again");
    strbuf_free(&b);
    assert_null(b.data);
    strbuf_free(&b); /* twice is harmless */
}

/* A failed buffer drops what follows and hands nothing over. */
static void test_failed(void **state) {
    (void)state;
    strbuf_t b = {0};
    strbuf_puts(&b, "kept");
    b.failed = true;
    strbuf_puts(&b, " dropped");
    strbuf_printf(&b, "%s", " dropped");
    assert_string_equal(b.data, "kept");
    assert_null(strbuf_take(&b));
    assert_null(b.data);
    assert_false(b.failed);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_printf),
        cmocka_unit_test(test_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
