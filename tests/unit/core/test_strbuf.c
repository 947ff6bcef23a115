/* Unit tests of server/core/strbuf.c: appends of any length, printf beyond any fixed
 * buffer, take and free, whole streams. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
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

/* Whole streams, across chunks, with and without a limit, and a directory's error. */
static void test_read_stream(void **state) {
    (void)state;
    size_t big = 300000; /* several chunks */
    FILE *f = tmpfile();
    assert_non_null(f);
    for (size_t i = 0; i < big; i++)
        fputc('a' + (int)(i % 26), f);
    rewind(f);
    strbuf_t b = {0};
    strbuf_puts(&b, "head:");
    assert_int_equal(strbuf_read_stream(&b, f, SIZE_MAX), 0);
    assert_int_equal(b.len, 5 + big);
    assert_int_equal(b.data[5 + big - 1], 'a' + (int)((big - 1) % 26));
    assert_int_equal(b.data[b.len], '\0');
    strbuf_free(&b);
    rewind(f);
    assert_int_equal(strbuf_read_stream(&b, f, big), 0); /* exactly the limit */
    strbuf_free(&b);
    rewind(f);
    assert_int_equal(strbuf_read_stream(&b, f, big - 1), EFBIG);
    strbuf_free(&b);
    fclose(f);
    FILE *dir = fopen(".", "rb");
    assert_non_null(dir);
    assert_int_equal(strbuf_read_stream(&b, dir, SIZE_MAX), EISDIR);
    fclose(dir);
    strbuf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_printf),
        cmocka_unit_test(test_failed),
        cmocka_unit_test(test_read_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
