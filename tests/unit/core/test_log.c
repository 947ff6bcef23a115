#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const struct timespec TS = {1700000000, 123456789};

static void test_json_escape(void **state) {
    (void)state;
    char out[64];
    log_json_escape(out, sizeof(out),
                    "a\"b\\c\nd\te\x01"
                    "f\xc3\xa9");
    assert_string_equal(out, "a\\\"b\\\\c\\nd\\te\\u0001f\xc3\xa9");
    /* cut, never inside an escape nor a UTF-8 character */
    log_json_escape(out, 5, "ab\"cd");
    assert_string_equal(out, "ab\\\"");
    log_json_escape(out, 4, "ab\"cd");
    assert_string_equal(out, "ab");
    log_json_escape(out, 4, "a\xc3\xa9\xc3\xa9");
    assert_string_equal(out, "a\xc3\xa9");
    log_json_escape(out, sizeof(out), "bad\xff\xc3");
    assert_string_equal(out, "bad\xef\xbf\xbd\xef\xbf\xbd");
}

/* log_json_fputs writes what log_json_escape gives, quoted, however long. */
static void test_json_fputs(void **state) {
    (void)state;
    FILE *f = tmpfile();
    log_json_fputs(f, "w\x01\"\xff\xc3\xa9");
    log_json_fputs(f, NULL);
    char long_name[3000];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    log_json_fputs(f, long_name);
    rewind(f);
    char got[4096];
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    got[n] = '\0';
    fclose(f);
    char want[4096];
    snprintf(want, sizeof(want), "\"w\\u0001\\\"\xef\xbf\xbd\xc3\xa9\"\"\"\"%s\"", long_name);
    assert_string_equal(got, want);
}

static void test_json_line(void **state) {
    (void)state;
    char line[1024];
    log_field_t f[] = {LOG_STR("method", "/a.B/C"), LOG_INT("delta", -2),
                       LOG_NUM("duration_ms", 1.5), LOG_STR("peer", NULL),
                       LOG_NUM("score", 1.0 / 0.0)};
    log_format_line(line, sizeof(line), LOG_FORMAT_JSON, LOG_LEVEL_INFO, &TS, f, 5, "say \"hi\"");
    assert_string_equal(line, "{\"ts\":\"2023-11-14T22:13:20.123Z\",\"level\":\"info\","
                              "\"msg\":\"say \\\"hi\\\"\",\"method\":\"/a.B/C\",\"delta\":-2,"
                              "\"duration_ms\":1.5,\"peer\":null,\"score\":null}\n");
}

static void test_text_line(void **state) {
    (void)state;
    char line[1024];
    log_field_t f[] = {LOG_STR("method", "/a.B/C"), LOG_STR("message", "two words"),
                       LOG_STR("peer", NULL), LOG_INT("delta", 3)};
    log_format_line(line, sizeof(line), LOG_FORMAT_TEXT, LOG_LEVEL_WARN, &TS, f, 4, "a\nb");
    assert_string_equal(line, "2023-11-14T22:13:20.123Z warn  a b method=/a.B/C "
                              "message=\"two words\" delta=3\n");
}

static void test_long_json_line_stays_valid(void **state) {
    (void)state;
    char msg[3000];
    memset(msg, '"', sizeof(msg) - 1);
    msg[sizeof(msg) - 1] = '\0';
    char line[512];
    log_field_t f[] = {LOG_STR("node_group", "web")};
    size_t n =
        log_format_line(line, sizeof(line), LOG_FORMAT_JSON, LOG_LEVEL_ERROR, &TS, f, 1, msg);
    assert_true(n < sizeof(line));
    assert_int_equal(line[n - 1], '\n');
    assert_non_null(strstr(line, "\",\"node_group\":\"web\"}\n"));
    /* every quote inside msg is escaped: an even number of backslash-quote pairs */
    const char *m = strstr(line, "\"msg\":\"") + 7;
    const char *end = strstr(m, "\",\"node_group\"");
    assert_int_equal((end - m) % 2, 0);
}

static void test_parse(void **state) {
    (void)state;
    log_format_t f;
    log_level_t l;
    assert_int_equal(log_parse_format("json", &f), 0);
    assert_int_equal(f, LOG_FORMAT_JSON);
    assert_int_equal(log_parse_format("xml", &f), -1);
    assert_int_equal(log_parse_level("warn", &l), 0);
    assert_int_equal(l, LOG_LEVEL_WARN);
    setenv("FRUGAL_LOG_LEVEL", "debug", 1);
    setenv("FRUGAL_LOG_FORMAT", "json", 1);
    assert_int_equal(log_init_from_env(), 0);
    assert_int_equal(log_get_level(), LOG_LEVEL_DEBUG);
    assert_int_equal(log_get_format(), LOG_FORMAT_JSON);
    setenv("FRUGAL_LOG_LEVEL", "loud", 1);
    assert_int_equal(log_init_from_env(), -1);
    assert_int_equal(log_get_level(), LOG_LEVEL_DEBUG); /* unchanged */
    unsetenv("FRUGAL_LOG_LEVEL");
    unsetenv("FRUGAL_LOG_FORMAT");
    log_set_level(LOG_LEVEL_INFO);
    log_set_format(LOG_FORMAT_TEXT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_json_fputs),
        cmocka_unit_test(test_json_line),
        cmocka_unit_test(test_text_line),
        cmocka_unit_test(test_long_json_line_stays_valid),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
