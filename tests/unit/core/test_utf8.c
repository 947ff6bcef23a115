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
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_scrub),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
