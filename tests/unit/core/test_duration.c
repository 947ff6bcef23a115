/* duration.h: the one duration grammar (config and ctl), and Go's rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "duration.h"

#define S 1000000000LL

static int64_t parse_ok(const char *s) {
    int64_t ns = -42;
    frugal_err_t err = {0};
    assert_int_equal(duration_parse(s, &ns, &err), 0);
    assert_int_equal(err.code, 0);
    return ns;
}

static void parse_bad(const char *s) {
    int64_t ns = -42;
    frugal_err_t err = {0};
    assert_int_equal(duration_parse(s, &ns, &err), FRUGAL_EINVAL);
    assert_int_equal(ns, -42); /* untouched */
    assert_non_null(strstr(err.msg, "invalid duration"));
    assert_non_null(strstr(err.msg, s));
}

static void test_units_and_sums(void **state) {
    (void)state;
    assert_int_equal(parse_ok("0"), 0);
    assert_int_equal(parse_ok("0s"), 0);
    assert_int_equal(parse_ok("45s"), 45 * S);
    assert_int_equal(parse_ok("10m"), 600 * S);
    assert_int_equal(parse_ok("1h30m"), 5400 * S);
    assert_int_equal(parse_ok("1h30m15s"), 5415 * S);
    assert_int_equal(parse_ok("250ms"), 250000000);
    assert_int_equal(parse_ok("7ns"), 7);
    assert_int_equal(parse_ok("3us"), 3000);
    assert_int_equal(parse_ok("3\xc2\xb5s"), 3000); /* µs, micro sign */
    assert_int_equal(parse_ok("3\xce\xbcs"), 3000); /* μs, Greek mu */
    assert_int_equal(parse_ok("1m1ms"), 60 * S + 1000000);
    assert_int_equal(parse_ok("+1s"), S); /* Go's leading plus */
    assert_int_equal(parse_ok("+0"), 0);
    parse_bad("+");
    parse_bad("++1s");
}

static void test_fractions_are_exact(void **state) {
    (void)state;
    assert_int_equal(parse_ok("1.5h"), 5400 * S);
    assert_int_equal(parse_ok(".5s"), S / 2);
    assert_int_equal(parse_ok("1.s"), S);
    assert_int_equal(parse_ok("0.1s"), 100000000);
    assert_int_equal(parse_ok("1.000000001s"), S + 1);
    assert_int_equal(parse_ok("1.0000000019s"), S + 1); /* below 1 ns: dropped */
    assert_int_equal(parse_ok("2562047h47m16.854775807s"), INT64_MAX);
}

static void test_rejected(void **state) {
    (void)state;
    parse_bad("");
    parse_bad("600");  /* no unit */
    parse_bad("10 m"); /* space */
    parse_bad("10 minutes");
    parse_bad("-5s");  /* negative: no sign but Go's leading plus */
    parse_bad("1e3s"); /* no exponent */
    parse_bad("5d");   /* no such unit */
    parse_bad("5sx");
    parse_bad(".s");
    parse_bad("00");
    parse_bad("2562047h47m16.854775808s"); /* one past INT64_MAX */
    parse_bad("99999999999999999999s");
}

static void test_format(void **state) {
    (void)state;
    char buf[64];
    assert_string_equal(duration_format(0, buf, sizeof(buf)), "0s");
    assert_string_equal(duration_format(3600 * S, buf, sizeof(buf)), "1h0m0s");
    assert_string_equal(duration_format(900 * S, buf, sizeof(buf)), "15m0s");
    assert_string_equal(duration_format(1500000000, buf, sizeof(buf)), "1.5s");
    assert_string_equal(duration_format(250000000, buf, sizeof(buf)), "0.25s");
    assert_string_equal(duration_format(-90 * S, buf, sizeof(buf)), "-1m30s");
    assert_string_equal(duration_format(INT64_MIN, buf, sizeof(buf)), "-2562047h47m16.854775808s");
    /* What is formatted parses back to the same value. */
    assert_int_equal(parse_ok(duration_format(5415 * S + 7, buf, sizeof(buf))), 5415 * S + 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_and_sums),
        cmocka_unit_test(test_fractions_are_exact),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
