/* Unit tests of server/core/quantity.c: the Kubernetes quantity grammar, exact scaling,
 * rounding up, rejects and formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "quantity.h"

static int64_t milli(const char *s) {
    int64_t v = -12345;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = quantity_parse_milli(s, &v, &err);
    if (rc != 0)
        fail_msg("quantity_parse_milli(\"%s\") failed: %s", s, err.msg);
    return v;
}

static int64_t value(const char *s) {
    int64_t v = -12345;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = quantity_parse_value(s, &v, &err);
    if (rc != 0)
        fail_msg("quantity_parse_value(\"%s\") failed: %s", s, err.msg);
    return v;
}

static void assert_rejected(const char *s) {
    int64_t v = 777;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (quantity_parse_value(s, &v, &err) != FRUGAL_EINVAL)
        fail_msg("\"%s\" accepted as a value (%lld)", s, (long long)v);
    assert_int_equal(err.code, FRUGAL_EINVAL);
    assert_true(strlen(err.msg) > 0);
    assert_int_equal(v, 777);
    if (quantity_parse_milli(s, &v, NULL) != FRUGAL_EINVAL)
        fail_msg("\"%s\" accepted as milli (%lld)", s, (long long)v);
}

static void test_plain_numbers(void **state) {
    (void)state;
    assert_int_equal(value("0"), 0);
    assert_int_equal(value("1"), 1);
    assert_int_equal(value("42"), 42);
    assert_int_equal(value("+2"), 2);
    assert_int_equal(value("-2"), -2);
    assert_int_equal(value("007"), 7);
    assert_int_equal(value("128974848"), 128974848);
    assert_int_equal(milli("1"), 1000);
    assert_int_equal(milli("2"), 2000);
    assert_int_equal(milli("1.5"), 1500);
    assert_int_equal(milli(".5"), 500);
    assert_int_equal(milli("0.1"), 100);
    assert_int_equal(milli("1."), 1000);
    assert_int_equal(milli("+.25"), 250);
    assert_int_equal(milli("-0.5"), -500);
    assert_int_equal(milli("0.000"), 0);
    assert_int_equal(milli("-0"), 0);
}

static void test_round_up(void **state) {
    (void)state;
    assert_int_equal(value("1.5"), 2);
    assert_int_equal(value("1.0000000000000000000000000000001"), 2);
    assert_int_equal(value("0.1"), 1);
    assert_int_equal(value("1m"), 1);
    assert_int_equal(value("1000m"), 1);
    assert_int_equal(value("1001m"), 2);
    assert_int_equal(milli("0.1m"), 1);
    assert_int_equal(milli("100n"), 1);
    assert_int_equal(milli("1u"), 1);
    assert_int_equal(milli("1000000n"), 1);
    assert_int_equal(milli("1000001n"), 2);
    assert_int_equal(milli("0.0001"), 1);
    /* Rounding up is towards +inf: negative values lose their fraction. */
    assert_int_equal(value("-1.5"), -1);
    assert_int_equal(value("-0.5"), 0);
    assert_int_equal(milli("-0.1m"), 0);
    /* Tiny values still round up to one unit. */
    assert_int_equal(value("1e-30"), 1);
    assert_int_equal(
        value("0.000000000000000000000000000000000000000000000000000000000000000000000001"), 1);
    assert_int_equal(value("1e-99999999999999999999"), 1);
}

static void test_decimal_suffixes(void **state) {
    (void)state;
    assert_int_equal(milli("500m"), 500);
    assert_int_equal(milli("1500m"), 1500);
    assert_int_equal(milli("250u"), 1);
    assert_int_equal(value("1k"), 1000);
    assert_int_equal(value("1.5k"), 1500);
    assert_int_equal(value("1M"), 1000000);
    assert_int_equal(value("2G"), 2000000000LL);
    assert_int_equal(value("1T"), 1000000000000LL);
    assert_int_equal(value("1P"), 1000000000000000LL);
    assert_int_equal(value("1E"), 1000000000000000000LL);
    assert_int_equal(value("9.2E"), 9200000000000000000LL);
    assert_int_equal(milli("1k"), 1000000);
    assert_int_equal(value("129M"), 129000000);
    assert_int_equal(value("0.5n"), 1);
}

static void test_binary_suffixes(void **state) {
    (void)state;
    assert_int_equal(value("1Ki"), 1024);
    assert_int_equal(value("1Mi"), 1048576);
    assert_int_equal(value("2Gi"), 2147483648LL);
    assert_int_equal(value("1Ti"), 1099511627776LL);
    assert_int_equal(value("1Pi"), 1125899906842624LL);
    assert_int_equal(value("1Ei"), 1152921504606846976LL);
    assert_int_equal(value("7.5Gi"), 8053063680LL);
    assert_int_equal(value("0.5Ki"), 512);
    assert_int_equal(value("1.5Mi"), 1572864);
    assert_int_equal(value("123Mi"), 128974848);
    assert_int_equal(value("0.1Ki"), 103); /* 102.4 rounds up */
    assert_int_equal(value("0.001Ki"), 2); /* 1.024 rounds up */
    assert_int_equal(value("7.99999999Ei"), 9223372025325560762LL);
    assert_int_equal(milli("1Ki"), 1024000);
    assert_int_equal(milli("0.5Mi"), 524288000);
    assert_int_equal(value("-1Ki"), -1024);
    assert_int_equal(value("-0.1Ki"), -102);
}

static void test_exponents(void **state) {
    (void)state;
    assert_int_equal(value("1e3"), 1000);
    assert_int_equal(value("1E3"), 1000);
    assert_int_equal(value("1e+3"), 1000);
    assert_int_equal(value("1.5e3"), 1500);
    assert_int_equal(value("1e0"), 1);
    assert_int_equal(milli("1E-3"), 1);
    assert_int_equal(milli("1e-3"), 1);
    assert_int_equal(milli("5e-4"), 1);
    assert_int_equal(value("1E-3"), 1);
    assert_int_equal(milli("25e-2"), 250);
}

static void test_limits(void **state) {
    (void)state;
    assert_int_equal(value("9223372036854775807"), INT64_MAX);
    assert_int_equal(value("-9223372036854775808"), INT64_MIN);
    assert_int_equal(value("9223372036854775806.5"), INT64_MAX);
    assert_int_equal(milli("9223372036854775.807"), INT64_MAX);
    assert_int_equal(value("000000000000000000000000000000000000000001"), 1);
    assert_int_equal(value("7Ei"), 8070450532247928832LL);
}

static void test_overflow(void **state) {
    (void)state;
    assert_rejected("9223372036854775808");
    assert_rejected("9223372036854775807.1");
    assert_rejected("-9223372036854775809");
    assert_rejected("8Ei");
    assert_rejected("10E");
    assert_rejected("1e19");
    assert_rejected("1e999999999999");
    assert_rejected("99999999999999999999999999999999999999999999");
    int64_t v;
    assert_int_equal(quantity_parse_milli("9223372036854776", &v, NULL), FRUGAL_EINVAL);
    assert_int_equal(quantity_parse_milli("10P", &v, NULL), FRUGAL_EINVAL);
}

static void test_rejects(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",     "1.2.3", "1Ki2", "Ki",   "1 m", " 1",   "1 ", "1KiB", "--1", "+-1", "1e",  "1E+",
        "1e-",  "1e1.5", ".",    "-",    "+",   "m",    "1K", "1kb",  "1mi", "1ki", "abc", "1,5",
        "0x10", "1i",    "1b",   "1e3m", "1mm", "1.5.", "e3", "1ee3", "1\t", "NaN", "inf", "1Gi ",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_rejected(bad[i]);
    int64_t v;
    frugal_err_t err;
    assert_int_equal(quantity_parse_value(NULL, &v, &err), FRUGAL_EINVAL);
}

static void test_scaled_length(void **state) {
    (void)state;
    int64_t v = 0;
    /* Only s[0..len) is read. */
    assert_int_equal(quantity_parse_scaled("2Gi-garbage", 3, 0, &v, NULL), 0);
    assert_int_equal(v, 2147483648LL);
    assert_int_equal(quantity_parse_scaled("15", 1, 0, &v, NULL), 0);
    assert_int_equal(v, 1);
    assert_int_equal(quantity_parse_scaled("1.5", 3, 6, &v, NULL), 0);
    assert_int_equal(v, 1500000);
    assert_int_equal(quantity_parse_scaled("1500", 4, -3, &v, NULL), 0);
    assert_int_equal(v, 2);
    assert_int_equal(quantity_parse_scaled("1", 0, 0, &v, NULL), FRUGAL_EINVAL);
}

static void test_format_bytes(void **state) {
    (void)state;
    char buf[32];
    assert_string_equal(quantity_format_bytes(0, buf, sizeof(buf)), "0");
    assert_string_equal(quantity_format_bytes(8053063680LL, buf, sizeof(buf)), "7680Mi");
    assert_string_equal(quantity_format_bytes(2147483648LL, buf, sizeof(buf)), "2Gi");
    assert_string_equal(quantity_format_bytes(1572864, buf, sizeof(buf)), "1536Ki");
    assert_string_equal(quantity_format_bytes(1024, buf, sizeof(buf)), "1Ki");
    assert_string_equal(quantity_format_bytes(1000, buf, sizeof(buf)), "1000");
    assert_string_equal(quantity_format_bytes(1025, buf, sizeof(buf)), "1025");
    assert_string_equal(quantity_format_bytes(1152921504606846976LL, buf, sizeof(buf)), "1Ei");
    assert_string_equal(quantity_format_bytes(-2048, buf, sizeof(buf)), "-2Ki");
    /* Formatting then parsing gives the same bytes. */
    static const int64_t samples[] = {1, 512, 3932160000LL, 1932735283LL, 16106127360LL, 7LL << 40};
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        quantity_format_bytes(samples[i], buf, sizeof(buf));
        assert_int_equal(value(buf), samples[i]);
    }
}

static void test_format_milli(void **state) {
    (void)state;
    char buf[32];
    assert_string_equal(quantity_format_milli(0, buf, sizeof(buf)), "0");
    assert_string_equal(quantity_format_milli(2000, buf, sizeof(buf)), "2");
    assert_string_equal(quantity_format_milli(1500, buf, sizeof(buf)), "1500m");
    assert_string_equal(quantity_format_milli(500, buf, sizeof(buf)), "500m");
    assert_string_equal(quantity_format_milli(96000, buf, sizeof(buf)), "96");
    assert_string_equal(quantity_format_milli(-250, buf, sizeof(buf)), "-250m");
    quantity_format_milli(1234567, buf, sizeof(buf));
    assert_int_equal(milli(buf), 1234567);
    /* Truncates safely into a short buffer. */
    char small[4];
    assert_string_equal(quantity_format_milli(123456, small, sizeof(small)), "123");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_numbers),    cmocka_unit_test(test_round_up),
        cmocka_unit_test(test_decimal_suffixes), cmocka_unit_test(test_binary_suffixes),
        cmocka_unit_test(test_exponents),        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_overflow),         cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_scaled_length),    cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_format_milli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
