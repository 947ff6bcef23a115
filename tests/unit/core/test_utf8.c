/* Unit tests of server/core/utf8.c: well-formed sequences of every length, the forms
 * UTF-8 forbids (overlong, surrogates, past U+10FFFF, cut short, a stray continuation
 * byte), and the scrub of a hook's message into text that can be stored and sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "utf8.h"

static void test_valid(void **state) {
    (void)state;
    assert_true(utf8_valid(""));
    assert_true(utf8_valid("plain ascii"));
    assert_true(utf8_valid("d\xc3\xa9j\xc3\xa0")); /* déjà */
    assert_true(utf8_valid("\xe2\x82\xac"));       /* € */
    assert_true(utf8_valid("\xf0\x9f\x98\x80"));   /* U+1F600 */
    assert_false(utf8_valid("d\xe9j\xe0"));        /* Latin-1 */
    assert_false(utf8_valid("\xc0\xaf"));          /* overlong '/' */
    assert_false(utf8_valid("\xed\xa0\x80"));      /* a surrogate */
    assert_false(utf8_valid("\xf4\x90\x80\x80"));  /* past U+10FFFF */
    assert_false(utf8_valid("\xe2\x82"));          /* cut short */
    assert_false(utf8_valid("a\x80"));             /* a stray continuation byte */
    assert_false(utf8_valid("\xff\xfe"));
}

static void test_scrub(void **state) {
    (void)state;
    char latin1[] = "erreur: d\xe9j\xe0 utilis\xe9";
    utf8_scrub(latin1);
    assert_string_equal(latin1, "erreur: d?j? utilis?");
    char mixed[] = "ok \xc3\xa9\x1b[0m\ttab\xe2\x82";
    utf8_scrub(mixed);
    assert_string_equal(mixed, "ok \xc3\xa9?[0m\ttab??");
    assert_true(utf8_valid(mixed));
    /* C1 controls (a terminal's CSI, NEL) become one '?' each; other text stays. */
    char c1[] = "boom \xc2\x9b[2J\xc2\x85 \xc2\xa0\xe2\x80\x8b"
                " end";
    utf8_scrub(c1);
    assert_string_equal(c1, "boom ?[2J? \xc2\xa0\xe2\x80\x8b"
                            " end");
    char cut[] = "a\xc2";
    utf8_scrub(cut);
    assert_string_equal(cut, "a?");
}

static void test_class(void **state) {
    (void)state;
    assert_int_equal(utf8_class('a'), UTF8_VISIBLE);
    assert_int_equal(utf8_class(0xE9), UTF8_VISIBLE);
    assert_int_equal(utf8_class(' '), UTF8_SPACE);
    assert_int_equal(utf8_class('\n'), UTF8_SPACE);
    assert_int_equal(utf8_class(0xA0), UTF8_SPACE);
    assert_int_equal(utf8_class(0x2028), UTF8_SPACE);
    assert_int_equal(utf8_class(0x3000), UTF8_SPACE);
    assert_int_equal(utf8_class(0), UTF8_CONTROL);
    assert_int_equal(utf8_class(0x7F), UTF8_CONTROL);
    assert_int_equal(utf8_class(0x85), UTF8_CONTROL);
    assert_int_equal(utf8_class(0x9F), UTF8_CONTROL);
    assert_int_equal(utf8_class(0xA1), UTF8_VISIBLE);
    assert_int_equal(utf8_class(0x200B), UTF8_INVISIBLE);
    assert_int_equal(utf8_class(0x202E), UTF8_INVISIBLE);
    assert_int_equal(utf8_class(0xFEFF), UTF8_INVISIBLE);
    uint32_t cp = 0;
    assert_int_equal(utf8_next((const unsigned char *)"\xe2\x82\xac", 3, &cp), 3);
    assert_int_equal(cp, 0x20AC);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
