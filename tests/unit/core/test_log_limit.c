/* log_limit: one line per interval, with the count of those held back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "log_limit.h"

static void test_one_per_interval(void **state) {
    (void)state;
    log_limit_t l = {0};
    long held = -1;
    assert_true(log_limit_due(&l, 50, &held)); /* the first is logged */
    assert_int_equal(held, 0);
    for (int i = 0; i < 3; i++)
        assert_false(log_limit_due(&l, 50, &held));
    usleep(60000);
    assert_true(log_limit_due(&l, 50, &held));
    assert_int_equal(held, 3);
    assert_false(log_limit_due(&l, 50, NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_per_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
