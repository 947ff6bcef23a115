/* Unit tests of the Escalator baseline of `frugal replay` and of CA's balance-similar
 * split in the simulation (server/replay/replay_loop.c, docs/escalator.md): Escalator's
 * scale-up from zero leaves its headroom where CA's first-fit-decreasing estimate does
 * not, and a scale-up on one of three similar groups of 1, 3 and 6 nodes goes +3 / +1
 * to the two smallest, whatever group the policy chose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "replay.h"

static frugal_config_t *load(const char *text) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load_string("t.yaml", text, strlen(text), &cfg, &errors) != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
    return cfg;
}

/* A trace of count pods of 500m / 100M arriving at t, running for duration seconds,
 * appended to buf. */
static void trace_pods(char *buf, size_t size, int count, int t, int duration) {
    for (int i = 0; i < count; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len,
                 "{\"t\": %d, \"duration\": %d, \"pod\": {\"metadata\": {\"name\": \"p%d-%d\","
                 " \"namespace\": \"batch\"}, \"spec\": {\"containers\": [{\"name\": \"c\","
                 " \"resources\": {\"requests\": {\"cpu\": \"500m\", \"memory\": \"100M\"}}}]}}}\n",
                 t, duration, t, i);
    }
}

static void run(const frugal_config_t *cfg, const char *trace, const char *policy, double hours,
                replay_figures_t *out) {
    replay_workload_t w;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (replay_workload_load("trace.jsonl", trace, strlen(trace), &w, &err) != 0)
        fail_msg("trace: %s", err.msg);
    const replay_policy_ops_t *p = replay_policy_find(policy);
    assert_non_null(p);
    if (replay_run(cfg, &w, p, 1, hours, out, &err) != 0)
        fail_msg("run: %s", err.msg);
    replay_workload_free(&w);
}

static const char one_group[] =
    "machine_types: [{name: m1, cpu: 1, memory: 4000M, price: 0.1}]\n"
    "node_groups: [{id: jobs, machine_type: m1, min_size: 0, max_size: 20}]\n";

/* 10 pods of 500m from zero: Escalator buys ceil(5 / 1 / 0.7) = 8 nodes, CA's estimate 5. */
static void test_escalator_from_zero(void **state) {
    (void)state;
    frugal_config_t *cfg = load(one_group);
    char trace[8192] = "";
    trace_pods(trace, sizeof(trace), 10, 0, 7200);
    replay_figures_t f;
    run(cfg, trace, "escalator", 1, &f);
    assert_int_equal(f.nodes_bought, 8);
    assert_int_equal(f.decisions, 1);
    assert_int_equal(f.pods, 10);
    run(cfg, trace, "random", 1, &f);
    assert_int_equal(f.nodes_bought, 5);
    config_free(cfg);
}

/* Escalator taints and removes the nodes once the pods are gone. */
static void test_escalator_scales_down(void **state) {
    (void)state;
    frugal_config_t *cfg = load(one_group);
    char trace[8192] = "";
    trace_pods(trace, sizeof(trace), 10, 0, 600);
    replay_figures_t f;
    run(cfg, trace, "escalator", 2, &f);
    assert_int_equal(f.nodes_bought, 8);
    /* 8 nodes for the 10-minute run plus the boot, the taint and the grace period, far
     * from 2 hours of them. */
    assert_true(f.cost < 8 * 0.1 * 0.5);
    assert_true(f.cost > 8 * 0.1 * 10 / 60.0);
    config_free(cfg);
}

/* Three similar groups of 1, 3 and 6 full nodes; 8 more pods need 4 nodes: +3 on a
 * (the cheapest), +1 on b, whatever group was chosen. */
static void test_split_similar_groups(void **state) {
    (void)state;
    frugal_config_t *cfg =
        load("machine_types: [{name: m1, cpu: 1, memory: 4000M, price: 1}]\n"
             "node_groups:\n"
             "  - {id: a, machine_type: m1, zone: z-a, size: 1, max_size: 20, spot: true,"
             " spot_price: 0.01}\n"
             "  - {id: b, machine_type: m1, zone: z-b, size: 3, max_size: 20, spot: true,"
             " spot_price: 0.1}\n"
             "  - {id: c, machine_type: m1, zone: z-c, size: 6, max_size: 20, spot: true,"
             " spot_price: 1}\n");
    char trace[32768] = "";
    trace_pods(trace, sizeof(trace), 20, 0, 100000); /* fill the 10 nodes */
    trace_pods(trace, sizeof(trace), 8, 100, 100000);
    const char *policies[] = {"random", "most-pods", "pricing-proposal"};
    for (size_t i = 0; i < sizeof(policies) / sizeof(*policies); i++) {
        replay_figures_t f;
        run(cfg, trace, policies[i], 1, &f);
        assert_int_equal(f.nodes_bought, 4);
        /* The initial nodes for the hour, then 3 x a and 1 x b from t = 100 s. */
        double want = (0.01 + 3 * 0.1 + 6 * 1.0) + (3 * 0.01 + 0.1) * 3500.0 / 3600.0;
        if (f.cost < want - 1e-9 || f.cost > want + 1e-9)
            fail_msg("%s: cost %.9f, want %.9f", policies[i], f.cost, want);
    }
    config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escalator_from_zero),
        cmocka_unit_test(test_escalator_scales_down),
        cmocka_unit_test(test_split_similar_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
