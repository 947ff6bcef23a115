/* Unit tests of server/core/timestamp.c: RFC 3339 with "Z", an offset or a fraction, and
 * unix seconds, parse; anything else, and times not after the epoch, do not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "timestamp.h"

static void test_forms(void **state) {
    (void)state;
    int64_t t = 0;
    assert_true(timestamp_parse("2026-01-01T00:00:00Z", &t));
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("2026-01-01T00:00:00.999z", &t));
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("2026-01-01T01:30:00+01:30", &t));
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("2025-12-31T22:00:00-02:00", &t));
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("1767225600", &t));
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("1767225600.75", &t)); /* Prometheus' own form */
    assert_int_equal(t, 1767225600);
    assert_true(timestamp_parse("2024-02-29T12:00:00Z", &t)); /* a leap day */
    assert_int_equal(t, 1709208000);
    assert_true(timestamp_parse("9999-12-31T23:59:59Z", &t));
    assert_int_equal(t, 253402300799LL);
    assert_true(timestamp_parse_rfc3339("2026-01-01T00:00:00Z", &t));
    assert_int_equal(t, 1767225600);
    assert_false(timestamp_parse_rfc3339("1767225600", &t)); /* Kubernetes' times only */
}

static void test_rejected(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "yesterday",
        "0",
        "-5",
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:00+0100",
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00Zx",
        "1970-01-01T00:00:00Z",
        "12s",
        "+5",
        " 5",
        "99999999999999999999",
        "253402300800",
        "2016-12-31T23:59:60Z",
        "2026-02-30T23:59:60Z",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00+1:00",
        "-2026-01-01T00:00:00Z",
        "2026-1-01T00:00:00Z",
        "1767225600.",
        ".5",
        "1767225600.5.5",
        "1767225600.5Z",
        "0.5",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int64_t t = 42;
        if (timestamp_parse(bad[i], &t))
            fail_msg("\"%s\" parsed", bad[i]);
        assert_int_equal(t, 42);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
