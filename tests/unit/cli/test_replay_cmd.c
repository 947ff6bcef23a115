/* Unit tests of `frugal replay`'s command line (server/cli/replay.c): usage errors exit
 * 2 (an unknown strategy, a bad --seeds, --hours, --scale-down-utilization or
 * --placement, no workload, an unknown output format, a --from-prometheus URL with a
 * query or fragment), unreadable or invalid input exits 1, and
 * short runs on a reference workload exit 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "commands.h"

/* cmd_replay with argv = {"replay", args..., NULL}. */
static int run(char **argv) {
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    return cmd_replay(argc, argv);
}

#define RUN(...) run((char *[]){"replay", __VA_ARGS__, NULL})

static void test_usage(void **state) {
    (void)state;
    char cfg[] = "bench/workloads/cluster.yaml", web[] = "bench/workloads/web.yaml";
    assert_int_equal(RUN("-c", cfg), 2);
    assert_int_equal(RUN(web), 2);
    assert_int_equal(RUN("-c", cfg, web, "--strategy", "cheapest"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--seeds", "0"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--seeds", "1.5"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--hours", "-1"), 2);
    assert_int_equal(RUN("-c", cfg, web, "-o", "xml"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--bogus", "1"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--seeds"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--scale-down-utilization", "0"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--scale-down-utilization", "1.5"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--scale-down-utilization", "-0.5"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--scale-down-utilization", "half"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--placement", "best-fit"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--placement", "Least-Allocated"), 2);
    assert_int_equal(RUN("-c", cfg, web, "--placement"), 2);
}

/* What RUN(...) wrote to stderr, in buf. */
#define STDERR_OF(buf, ...)                                                                        \
    do {                                                                                           \
        FILE *saved_ = stderr;                                                                     \
        stderr = tmpfile();                                                                        \
        assert_int_equal(RUN(__VA_ARGS__), 2);                                                     \
        rewind(stderr);                                                                            \
        size_t n_ = fread(buf, 1, sizeof(buf) - 1, stderr);                                        \
        buf[n_] = '\0';                                                                            \
        fclose(stderr);                                                                            \
        stderr = saved_;                                                                           \
    } while (0)

/* An unknown option is named as such even when no value follows it; every known one
 * given last asks for its value. */
static void test_option_named(void **state) {
    (void)state;
    char cfg[] = "bench/workloads/cluster.yaml", web[] = "bench/workloads/web.yaml";
    char err[4096];
    STDERR_OF(err, "-c", cfg, web, "--bogus");
    assert_non_null(strstr(err, "unexpected argument \"--bogus\""));
    assert_null(strstr(err, "needs a value"));
    /* every option the usage names, so the parser and the usage cannot drift apart */
    char usage[8192];
    FILE *saved = stdout;
    stdout = tmpfile();
    assert_int_equal(RUN("--help"), 0);
    rewind(stdout);
    size_t n = fread(usage, 1, sizeof(usage) - 1, stdout);
    usage[n] = '\0';
    fclose(stdout);
    stdout = saved;
    size_t named = 0;
    for (const char *p = usage; (p = strchr(p, '-')) != NULL;) {
        size_t len = strspn(p, "-abcdefghijklmnopqrstuvwxyz");
        bool option = (p == usage || strchr(" [", p[-1]) != NULL) && len >= 2 && p[1] != ' ' &&
                      (p[1] != '-' || len >= 3);
        if (option) {
            char opt[64], want[96];
            snprintf(opt, sizeof(opt), "%.*s", (int)len, p);
            STDERR_OF(err, web, opt);
            snprintf(want, sizeof(want), "%s needs a value", opt);
            assert_non_null(strstr(err, want));
            named++;
        }
        p += len > 0 ? len : 1;
    }
    assert_true(named >= 19);
}

/* The API path goes after --from-prometheus' URL: one with a query or a fragment is
 * refused, named, before anything is asked. */
static void test_prometheus_url(void **state) {
    (void)state;
    char cfg[] = "bench/workloads/cluster.yaml", err[4096];
    STDERR_OF(err, "-c", cfg, "--from-prometheus", "http://h:9090?x=1", "--since", "1h");
    assert_string_equal(err, "frugal replay: --from-prometheus: a URL with a query (?...) cannot "
                             "take the API path, got http://h:9090?x=1\n");
    STDERR_OF(err, "-c", cfg, "--from-prometheus", "https://u:pw@h/prom/#top", "--since", "1h");
    assert_string_equal(err, "frugal replay: --from-prometheus: a URL with a fragment (#...) "
                             "cannot take the API path, got https://u:***@h/prom/#top\n");
}

static void test_inputs(void **state) {
    (void)state;
    char cfg[] = "bench/workloads/cluster.yaml", web[] = "bench/workloads/web.yaml";
    char missing[] = "bench/workloads/none.yaml";
    assert_int_equal(RUN("-c", cfg, missing), 1);
    assert_int_equal(RUN("-c", missing, web), 1);
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = RUN("-c", cfg, web, "--strategy", "random", "--strategy", "demand-fit", "--seeds", "2",
                 "--hours", "2", "-o", "csv");
    int rc2 = RUN("-c", cfg, web, "--strategy", "demand-fit", "--seeds", "1", "--hours", "2",
                  "--scale-down-utilization", "1");
    int rc3 = RUN("-c", cfg, web, "--strategy", "demand-fit", "--seeds", "1", "--hours", "2",
                  "--placement", "least-allocated");
    int rc4 = RUN("-c", cfg, web, "--strategy", "random", "--seeds", "1", "--hours", "2",
                  "--placement", "most-allocated", "--scale-down-utilization", "0.5");
    fclose(stdout);
    stdout = saved;
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
    assert_int_equal(rc3, 0);
    assert_int_equal(rc4, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_option_named),
        cmocka_unit_test(test_prometheus_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
