#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "revision.h"

static int reset(void **state) {
    (void)state;
    metrics_reset_for_testing();
    return 0;
}

static char *exposition(void) {
    metrics_buf_t b = {0};
    metrics_write(&b);
    assert_false(b.failed);
    return b.data;
}

static void test_counter_cells(void **state) {
    (void)state;
    metrics_cell_t *a = metrics_cell(METRICS_GRPC_HANDLED, "svc", "M", "OK");
    metrics_cell_t *b = metrics_cell(METRICS_GRPC_HANDLED, "svc", "M", "NOT_FOUND");
    assert_non_null(a);
    assert_ptr_not_equal(a, b);
    assert_ptr_equal(metrics_cell(METRICS_GRPC_HANDLED, "svc", "M", "OK"), a);
    metrics_cell_add(a, 2);
    metrics_count(METRICS_GRPC_HANDLED, "svc", "M", "OK");
    assert_int_equal(metrics_cell_value(a), 3);
    assert_int_equal(metrics_cell_value(b), 0);
    metrics_cell_add(NULL, 1); /* no-op */
    char *text = exposition();
    assert_non_null(strstr(text, "# HELP grpc_server_handled_total "));
    assert_non_null(strstr(text, "# TYPE grpc_server_handled_total counter\n"));
    assert_non_null(strstr(
        text,
        "grpc_server_handled_total{grpc_service=\"svc\",grpc_method=\"M\",grpc_code=\"OK\"} 3\n"));
    char info[128];
    snprintf(info, sizeof(info), "frugal_build_info{version=\"%s\",revision=\"%s\"} 1\n",
             FRUGAL_VERSION, revision_get());
    assert_non_null(strstr(text, info));
    assert_true(strlen(revision_get()) == 12 || strcmp(revision_get(), "unknown") == 0);
    free(text);
}

/* A counter without labels is exported at 0 before its first failure. */
static void test_state_write_failures(void **state) {
    (void)state;
    char *text = exposition();
    assert_non_null(strstr(text, "# TYPE frugal_state_write_failures_total counter\n"
                                 "frugal_state_write_failures_total 0\n"));
    free(text);
    metrics_count(METRICS_STATE_WRITE_FAILURES, NULL, NULL, NULL);
    metrics_count(METRICS_STATE_WRITE_FAILURES, NULL, NULL, NULL);
    text = exposition();
    assert_non_null(strstr(text, "\nfrugal_state_write_failures_total 2\n"));
    assert_null(strstr(text, "frugal_state_write_failures_total 0\n"));
    free(text);
}

static void test_label_escaping(void **state) {
    (void)state;
    metrics_count(METRICS_EXPANDER_DECISIONS, "a\"b\\c\nd", NULL, NULL);
    char *text = exposition();
    assert_non_null(
        strstr(text, "frugal_expander_decisions_total{node_group=\"a\\\"b\\\\c\\nd\"} 1\n"));
    free(text);
}

static void test_histogram(void **state) {
    (void)state;
    metrics_cell_t *h = metrics_cell(METRICS_GRPC_SECONDS, "svc", "M", NULL);
    metrics_cell_observe(h, 0.0007);
    metrics_cell_observe(h, 0.003);
    metrics_cell_observe(h, 7.0);
    metrics_cell_observe(h, -1); /* counts as 0 */
    assert_int_equal(metrics_cell_value(h), 4);
    metrics_observe(METRICS_STATE_WRITE_SECONDS, 0.002, NULL, NULL);
    char *text = exposition();
    const char *p = "grpc_server_handling_seconds_bucket{grpc_service=\"svc\",grpc_method=\"M\",";
    char want[256];
    snprintf(want, sizeof(want), "%sle=\"0.0005\"} 1\n", p);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "%sle=\"0.001\"} 2\n", p);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "%sle=\"0.005\"} 3\n", p);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "%sle=\"5\"} 3\n", p);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "%sle=\"+Inf\"} 4\n", p);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(
        text, "grpc_server_handling_seconds_count{grpc_service=\"svc\",grpc_method=\"M\"} 4\n"));
    assert_non_null(strstr(
        text, "grpc_server_handling_seconds_sum{grpc_service=\"svc\",grpc_method=\"M\"} 7.0037"));
    assert_non_null(strstr(text, "frugal_state_write_seconds_bucket{le=\"0.0025\"} 1\n"));
    assert_non_null(strstr(text, "frugal_state_write_seconds_count 1\n"));
    free(text);
}

static void test_reload_time_and_samples(void **state) {
    (void)state;
    metrics_config_reloaded(1700000000.5);
    char *text = exposition();
    assert_non_null(
        strstr(text, "frugal_config_last_reload_success_timestamp_seconds 1700000000.5\n"));
    assert_non_null(strstr(text, "frugal_config_last_reload_successful 1\n"));
    free(text);
    /* a refused reload: the gauge drops, the timestamp stays; the next good one restores */
    metrics_config_reload_failed();
    text = exposition();
    assert_non_null(strstr(text, "frugal_config_last_reload_successful 0\n"));
    assert_non_null(
        strstr(text, "frugal_config_last_reload_success_timestamp_seconds 1700000000.5\n"));
    free(text);
    metrics_config_reloaded(1700000001);
    text = exposition();
    assert_non_null(strstr(text, "frugal_config_last_reload_successful 1\n"));
    free(text);
    metrics_buf_t b = {0};
    const char *names[] = {"node_group", "state"};
    const char *values[] = {"g", "running"};
    metrics_buf_sample(&b, "x", names, values, 2, 2.25);
    metrics_buf_sample(&b, "y", NULL, NULL, 0, 1.0 / 0.0);
    assert_string_equal(b.data, "x{node_group=\"g\",state=\"running\"} 2.25\ny +Inf\n");
    metrics_buf_free(&b);
}

#define RACERS 4
#define PER_RACER 20000

static void *racer(void *arg) {
    char name[16];
    for (int i = 0; i < PER_RACER; i++) {
        snprintf(name, sizeof(name), "g%d", i % 8); /* cells created concurrently */
        metrics_count(METRICS_EXPANDER_DECISIONS, name, NULL, NULL);
    }
    (void)arg;
    return NULL;
}

static void test_concurrent_recording(void **state) {
    (void)state;
    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, racer, NULL), 0);
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    uint64_t total = 0;
    for (int g = 0; g < 8; g++) {
        char name[16];
        snprintf(name, sizeof(name), "g%d", g);
        total += metrics_cell_value(metrics_cell(METRICS_EXPANDER_DECISIONS, name, NULL, NULL));
    }
    assert_int_equal(total, RACERS * PER_RACER);
    /* one cell per label value: each appears once */
    char *text = exposition();
    const char *first = strstr(text, "{node_group=\"g3\"}");
    assert_non_null(first);
    assert_null(strstr(first + 1, "{node_group=\"g3\"}"));
    free(text);
}

/* A client naming ever new groups (BestOptions) makes at most 2,048 series; the rest
 * are counted together under _overflow. */
static void test_series_bound(void **state) {
    (void)state;
    char name[32];
    for (int i = 0; i < 2048 + 10; i++) {
        snprintf(name, sizeof(name), "ca-only-%d", i);
        metrics_count(METRICS_EXPANDER_DECISIONS, name, NULL, NULL);
    }
    metrics_count(METRICS_EXPANDER_DECISIONS, "ca-only-7", NULL, NULL); /* an old one */
    assert_int_equal(
        metrics_cell_value(metrics_cell(METRICS_EXPANDER_DECISIONS, "ca-only-7", NULL, NULL)), 2);
    char *text = exposition();
    assert_non_null(
        strstr(text, "frugal_expander_decisions_total{node_group=\"ca-only-2047\"} 1\n"));
    assert_null(strstr(text, "ca-only-2048"));
    assert_non_null(strstr(text, "frugal_expander_decisions_total{node_group=\"_overflow\"} 10\n"));
    size_t series = 0;
    for (const char *p = text; (p = strstr(p, "frugal_expander_decisions_total{")) != NULL; p++)
        series++;
    assert_int_equal(series, 2048 + 1);
    free(text);
    /* families of two labels overflow as a whole label set */
    for (int i = 0; i < 2048 + 1; i++) {
        snprintf(name, sizeof(name), "g%d", i);
        metrics_count(METRICS_RECONCILE_LIST_FAILURES, name, "timeout", NULL);
    }
    text = exposition();
    assert_non_null(strstr(text, "frugal_reconcile_list_failures_total{node_group=\"_overflow\","
                                 "reason=\"_overflow\"} 1\n"));
    free(text);
}

static bool only_a(const char *group, void *ctx) {
    (void)ctx;
    return strcmp(group, "a") == 0;
}

static bool a_and_b(const char *group, void *ctx) {
    (void)ctx;
    return strcmp(group, "a") == 0 || strcmp(group, "b") == 0;
}

/* The series of a group frugal no longer has are hidden; a group only CA knows (never
 * owned) stays; a group that comes back shows again with its count. */
static void test_keep_groups(void **state) {
    (void)state;
    metrics_cell_add(metrics_own_group(METRICS_EXPANDER_DECISIONS, "a"), 1);
    metrics_cell_add(metrics_own_group(METRICS_EXPANDER_DECISIONS, "b"), 3);
    metrics_count(METRICS_EXPANDER_DECISIONS, "ca-only", NULL, NULL);
    metrics_set(METRICS_RECONCILE_UNKNOWN, 2, "b", NULL);
    metrics_count(METRICS_RECONCILE_LIST_FAILURES, "b", "failed", NULL);
    metrics_keep_groups(only_a, NULL);
    char *text = exposition();
    assert_non_null(strstr(text, "frugal_expander_decisions_total{node_group=\"a\"} 1\n"));
    assert_non_null(strstr(text, "frugal_expander_decisions_total{node_group=\"ca-only\"} 1\n"));
    assert_null(strstr(text, "node_group=\"b\""));
    free(text);
    metrics_keep_groups(a_and_b, NULL);
    text = exposition();
    assert_non_null(strstr(text, "frugal_expander_decisions_total{node_group=\"b\"} 3\n"));
    assert_non_null(strstr(text, "frugal_reconcile_unknown_machines{node_group=\"b\"} 2\n"));
    assert_non_null(strstr(text, "frugal_reconcile_list_failures_total{node_group=\"b\","
                                 "reason=\"failed\"} 1\n"));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_counter_cells, reset),
        cmocka_unit_test_setup(test_label_escaping, reset),
        cmocka_unit_test_setup(test_histogram, reset),
        cmocka_unit_test_setup(test_reload_time_and_samples, reset),
        cmocka_unit_test_setup(test_state_write_failures, reset),
        cmocka_unit_test_setup(test_concurrent_recording, reset),
        cmocka_unit_test_setup(test_series_bound, reset),
        cmocka_unit_test_setup(test_keep_groups, reset),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    metrics_reset_for_testing();
    return rc;
}
