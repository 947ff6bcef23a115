/* The CLI's one set of output writers (cli.h): YAML quoting as every `-o yaml` uses
 * it, and the aligned table. Output is captured by pointing stdout at a temporary
 * file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct capture {
    int saved_fd;
    FILE *tmp;
} capture_t;

static void capture_begin(capture_t *c) {
    fflush(stdout);
    c->tmp = tmpfile();
    assert_non_null(c->tmp);
    c->saved_fd = dup(STDOUT_FILENO);
    assert_true(c->saved_fd >= 0);
    assert_true(dup2(fileno(c->tmp), STDOUT_FILENO) >= 0);
}

/* Restore stdout and return what was written (malloc'ed). */
static char *capture_end(capture_t *c) {
    fflush(stdout);
    assert_true(dup2(c->saved_fd, STDOUT_FILENO) >= 0);
    close(c->saved_fd);
    rewind(c->tmp);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(cli_read_stream(c->tmp, &text, &len), 0);
    fclose(c->tmp);
    return text;
}

static void test_yaml_strings_are_always_quoted(void **state) {
    (void)state;
    capture_t c;
    capture_begin(&c);
    cli_yaml_str("pool-a");
    putchar('|');
    cli_yaml_str("true");
    putchar('|');
    cli_yaml_str("7m0s");
    putchar('|');
    cli_yaml_str(NULL);
    putchar('|');
    cli_yaml_str("a\"b\\c\nd\te\x7f");
    char *out = capture_end(&c);
    assert_string_equal(out, "\"pool-a\"|\"true\"|\"7m0s\"|\"\"|\"a\\\"b\\\\c\\x0ad\\x09e\\x7f\"");
    free(out);
}

static void test_yaml_keys(void **state) {
    (void)state;
    capture_t c;
    capture_begin(&c);
    cli_yaml_kv(0, "id", "pool-a");
    cli_yaml_item_kv(2, "key", "dedicated");
    cli_yaml_kv(4, "value", "web");
    cli_yaml_pair(2, "kubernetes.io/os", "linux");
    char *out = capture_end(&c);
    assert_string_equal(out, "id: \"pool-a\"\n"
                             "  - key: \"dedicated\"\n"
                             "    value: \"web\"\n"
                             "  \"kubernetes.io/os\": \"linux\"\n");
    free(out);
}

static void test_table_aligns_without_trailing_blanks(void **state) {
    (void)state;
    capture_t c;
    capture_begin(&c);
    cli_table_t t = {.ncols = 3};
    cli_table_row(&t, "ID", "MIN", "DEBUG");
    cli_table_row(&t, "pool-long", "1", "");
    cli_table_row(&t, "b", NULL, "x");
    cli_table_flush(&t, 2);
    char *out = capture_end(&c);
    assert_string_equal(out, "  ID         MIN  DEBUG\n"
                             "  pool-long  1\n"
                             "  b               x\n");
    assert_int_equal(t.nrows, 0);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_strings_are_always_quoted),
        cmocka_unit_test(test_yaml_keys),
        cmocka_unit_test(test_table_aligns_without_trailing_blanks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
