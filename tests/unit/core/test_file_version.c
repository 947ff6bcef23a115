/* file_version: what makes a file's version differ (the watcher reloads on it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_version.h"

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The status change time moves in steps of the kernel's clock tick: wait past one. */
static void next_tick(void) {
    usleep(20000);
}

static void test_versions(void **state) {
    (void)state;
    char dir[] = "/tmp/frugal-test-file-version.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64], other[64];
    snprintf(path, sizeof(path), "%s/f", dir);
    snprintf(other, sizeof(other), "%s/g", dir);
    file_version_t a, b;
    assert_int_equal(file_version_of(path, &a), -1); /* absent: zeroed */
    write_file(path, "one");
    assert_int_equal(file_version_of(path, &b), 0);
    assert_false(file_version_equal(&a, &b));
    assert_int_equal(file_version_of(path, &a), 0);
    assert_true(file_version_equal(&a, &b));
    /* a chmod: a file that could not be read is read again once it can be */
    next_tick();
    assert_int_equal(chmod(path, 0), 0);
    assert_int_equal(file_version_of(path, &b), 0);
    assert_false(file_version_equal(&a, &b));
    next_tick();
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(file_version_of(path, &a), 0);
    assert_false(file_version_equal(&a, &b));
    /* a rewrite of another size, and a rename over it */
    next_tick();
    write_file(path, "three");
    assert_int_equal(file_version_of(path, &b), 0);
    assert_false(file_version_equal(&a, &b));
    write_file(other, "three");
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(file_version_of(path, &a), 0);
    assert_false(file_version_equal(&a, &b));
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
