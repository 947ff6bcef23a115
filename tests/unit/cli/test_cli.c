/* The CLI's one set of output writers (cli.h): YAML quoting as every `-o yaml` uses
 * it, and the aligned table. Output is captured by pointing stdout at a temporary
 * file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "prom_http.h"

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
    putchar('|');
    cli_yaml_str("n\xc3\xa9"
                 "e\xff\xfe\xc3"); /* UTF-8 kept, other bytes escaped */
    char *out = capture_end(&c);
    assert_string_equal(out, "\"pool-a\"|\"true\"|\"7m0s\"|\"\"|\"a\\\"b\\\\c\\x0ad\\x09e\\x7f\"|"
                             "\"n\xc3\xa9"
                             "e\\xff\\xfe\\xc3\"");
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

static void write_through(const char *path, const char *text, bool keep) {
    cli_tmp_file_t t;
    assert_int_equal(cli_tmp_open(&t, path), 0);
    fputs(text, t.f);
    assert_int_equal(cli_tmp_close(&t, keep), 0);
}

static void assert_holds(const char *path, const char *want) {
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(cli_read_file(path, &text, &len), 0);
    assert_string_equal(text, want);
    free(text);
}

/* A file, a link to one (the link stays), a dangling link (written through), a failure
 * (nothing left), a directory (refused) and a pipe-like path (written straight). */
static void test_tmp_file_paths(void **state) {
    (void)state;
    char dir[] = "/tmp/frugal-test-cli-XXXXXX", a[96], tmp[96], link[96], dangling[96], b[96];
    assert_non_null(mkdtemp(dir));
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(tmp, sizeof(tmp), "%s/a.tmp.%ld", dir, (long)getpid());
    snprintf(link, sizeof(link), "%s/link", dir);
    snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
    snprintf(b, sizeof(b), "%s/b", dir);

    /* A.tmp of the user's own is neither overwritten nor removed. */
    char mine[96];
    snprintf(mine, sizeof(mine), "%s/a.tmp", dir);
    write_through(mine, "notes", true);
    write_through(a, "one", true);
    assert_holds(a, "one");
    assert_int_equal(access(tmp, F_OK), -1);
    assert_holds(mine, "notes");
    write_through(a, "failed", false);
    assert_holds(mine, "notes");

    assert_int_equal(symlink(a, link), 0);
    write_through(link, "two", true);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_holds(a, "two");

    write_through(a, "partial", false);
    assert_holds(a, "two");
    assert_int_equal(access(tmp, F_OK), -1);

    assert_int_equal(symlink(b, dangling), 0);
    write_through(dangling, "three", true);
    assert_holds(b, "three");

    cli_tmp_file_t t;
    assert_int_equal(cli_tmp_open(&t, dir), EISDIR);
    /* A pipe, its reader open first so that opening it for writing does not wait. */
    char fifo[96], got[16] = "";
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(reader >= 0);
    assert_int_equal(cli_tmp_open(&t, fifo), 0);
    assert_null(t.tmp);
    fputs("four", t.f);
    assert_int_equal(cli_tmp_close(&t, true), 0);
    assert_int_equal(read(reader, got, sizeof(got) - 1), 4);
    assert_string_equal(got, "four");
    close(reader);
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    unlink(fifo);
    unlink(dangling), unlink(b), unlink(link), unlink(a), unlink(mine);
    assert_int_equal(rmdir(dir), 0);
}

/* A URL's password never reaches a message; the rest of it stays as given. */
static void test_url_password_hidden(void **state) {
    (void)state;
    const char *cases[][2] = {
        {"https://admin:s3cret@prom.example:9090/p", "https://admin:***@prom.example:9090/p"},
        {"http://:tok@h", "http://:***@h"},
        {"http://user@h/x", "http://user@h/x"},
        {"http://h/a:b@c", "http://h/a:b@c"},
        {"http://h:9090", "http://h:9090"},
        {"http://u:p@q@h?x=@", "http://u:***@h?x=@"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *shown = prom_http_url_shown(cases[i][0]);
        assert_string_equal(shown, cases[i][1]);
        free(shown);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_strings_are_always_quoted),
        cmocka_unit_test(test_yaml_keys),
        cmocka_unit_test(test_table_aligns_without_trailing_blanks),
        cmocka_unit_test(test_tmp_file_paths),
        cmocka_unit_test(test_url_password_hidden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
