/* Unit tests of the replay engine (server/replay/replay*.c): the seeded generator; the
 * mix and trace formats with the position of every refused value; the policies (CA's
 * definitions, the table order); runs that are deterministic, place every hostable pod,
 * count the pods no group can host, respect max_size, bill per loop and remove empty
 * nodes after scale_down_unneeded; a family's initial pods and bursts; the scale-down of
 * under-utilised nodes and the placements of pending pods (replay_options_t). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replay.h"

#define GIB (1024LL * 1024 * 1024)

static void test_rng(void **state) {
    (void)state;
    replay_rng_t a, b, c;
    replay_rng_seed(&a, 7);
    replay_rng_seed(&b, 7);
    replay_rng_seed(&c, 8);
    bool differs = false;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = replay_rng_next(&a);
        assert_true(x == replay_rng_next(&b));
        differs = differs || x != replay_rng_next(&c);
        double u = replay_rng_unit(&a);
        replay_rng_unit(&b);
        assert_true(u >= 0.0 && u < 1.0);
        size_t k = replay_rng_below(&a, 5);
        replay_rng_below(&b, 5);
        assert_true(k < 5);
    }
    assert_true(differs);
    /* Nearby seeds draw unrelated numbers: no draw of seed 8 is among seed 7's first
     * thousand (seed s + 1 once replayed seed s's stream one draw later). */
    uint64_t seen[1000];
    replay_rng_seed(&a, 7);
    replay_rng_seed(&c, 8);
    for (int i = 0; i < 1000; i++)
        seen[i] = replay_rng_next(&a);
    for (int i = 0; i < 1000; i++) {
        uint64_t x = replay_rng_next(&c);
        for (int j = 0; j < 1000; j++)
            assert_true(x != seen[j]);
    }
}

static int load(const char *path, const char *text, replay_workload_t *w, frugal_err_t *err) {
    frugal_err_clear(err);
    return replay_workload_load(path, text, strlen(text), w, err);
}

static void expect_error(const char *path, const char *text, const char *message) {
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load(path, text, &w, &err), FRUGAL_EINVAL);
    if (strstr(err.msg, message) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", message, err.msg);
    assert_null(w.families);
    assert_null(w.trace);
}

static const char mix[] = "description: test\n"
                          "arrivals_per_hour: 120\n"
                          "diurnal: 0.5\n"
                          "families:\n"
                          "  - name: web\n"
                          "    weight: 3\n"
                          "    cpu: [100m, 1]\n"
                          "    memory: [128Mi, 1Gi]\n"
                          "    lifetime: [1h, 72h]\n"
                          "  - name: gpu\n"
                          "    owner: Job\n"
                          "    cpu: 2\n"
                          "    memory: 8Gi\n"
                          "    gpu: 1\n"
                          "    lifetime: 600\n"
                          "    pod: {spec: {tolerations: [{key: g, operator: Exists}]}}\n";

static void test_mix(void **state) {
    (void)state;
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("dir/web.mix.yaml", mix, &w, &err), 0);
    assert_string_equal(w.name, "web.mix"); /* only the extension goes */
    assert_false(w.is_trace);
    assert_true(w.arrivals_per_hour == 120 && w.diurnal == 0.5);
    assert_int_equal(w.families_count, 2);
    const replay_family_t *f = &w.families[0];
    assert_string_equal(f->name, "web");
    assert_string_equal(f->owner, "ReplicaSet");
    assert_true(f->weight == 3);
    assert_int_equal(f->cpu_milli.min, 100);
    assert_int_equal(f->cpu_milli.max, 1000);
    assert_int_equal(f->memory_bytes.max, GIB);
    assert_int_equal(f->lifetime_s.min, 3600);
    assert_int_equal(f->lifetime_s.max, 72 * 3600);
    f = &w.families[1];
    assert_int_equal(f->gpu.min, 1);
    assert_int_equal(f->lifetime_s.max, 600);
    assert_int_equal(f->pod->spec->n_tolerations, 1);
    replay_workload_free(&w);
    /* A mix written as JSON, on one line or indented, is a mix; its first key decides. */
    static const char *const json_mixes[] = {
        "{\"arrivals_per_hour\": 5, \"families\": [{\"name\": \"a\", \"cpu\": \"1\", "
        "\"memory\": \"1Gi\", \"lifetime\": \"1h\"}]}\n",
        "\n# a comment\n{\n  'families': [{name: a, cpu: 1, memory: 1Gi, lifetime: 1h}],\n"
        "  \"arrivals_per_hour\": 5\n}\n",
    };
    for (size_t i = 0; i < sizeof(json_mixes) / sizeof(*json_mixes); i++) {
        assert_int_equal(load("m.json", json_mixes[i], &w, &err), 0);
        assert_false(w.is_trace);
        assert_int_equal(w.families_count, 1);
        assert_true(w.arrivals_per_hour == 5);
        replay_workload_free(&w);
    }
    /* Any other first key stays a trace's, and its error is a trace line's. */
    assert_int_equal(load("t.jsonl", "{\"time\": 0}\n", &w, &err), FRUGAL_EINVAL);
    assert_string_equal(err.msg, "t.jsonl:1:2: unknown trace field \"time\"");
}

static void test_mix_errors(void **state) {
    (void)state;
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: ds, owner: DaemonSet, cpu: 1, "
                 "memory: 1Gi, lifetime: 1h}\n",
                 "m.yaml:3:23: families[0].owner: DaemonSet pods come with every node");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: 1h, colour: red}\n",
                 "m.yaml:3:50: families[0].colour: unknown family field");
    expect_error("m.yaml", "arrivals_per_hour: -1\nfamilies: []\n",
                 "m.yaml:1:20: arrivals_per_hour: must not be negative");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: -1h}\n",
                 "m.yaml:3:46: families[0].lifetime: must not be negative");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: [2, 1], memory: "
                 "1Gi, lifetime: 1h}\n",
                 "m.yaml:3:20: families[0].cpu: min is above max");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: lots, memory: "
                 "1Gi, lifetime: 1h}\n",
                 "m.yaml:3:20: families[0].cpu: quantity");
    expect_error("m.yaml", "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1}\n",
                 "m.yaml:3:5: families[0]: cpu, memory and lifetime are required");
    expect_error("m.yaml", "arrivals: 1\n", "m.yaml:1:1: arrivals: unknown key");
    expect_error("m.yaml", "families: [{name: a, cpu: 1, memory: 1Gi, lifetime: 1h}]\n",
                 "arrivals_per_hour: is required");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: 1h, pod: {spec: {nodeSelector: 3}}}\n",
                 "m.yaml:3:");
    /* Counts are whole numbers and a lifetime is at least 1 s before any rounding. */
    const char *head = "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, ";
    const struct {
        const char *fields, *message;
    } refused[] = {
        {"lifetime: 500ms}",
         "m.yaml:3:46: families[0].lifetime: must be at least 1s, got \"500ms\""},
        {"lifetime: [100ms, 1h]}", "m.yaml:3:47: families[0].lifetime: must be at least 1s"},
        {"lifetime: 0.99}", "m.yaml:3:46: families[0].lifetime: must be at least 1s, got \"0.99\""},
        {"lifetime: 1e12}", "m.yaml:3:46: families[0].lifetime: must be at most 3660 days"},
        {"lifetime: 1h, initial: 1.5}",
         "m.yaml:3:59: families[0].initial: expected a whole number, got \"1.5\""},
        {"lifetime: 1h, burst: 2.5}", "m.yaml:3:57: families[0].burst: expected a whole number"},
        {"lifetime: 1h, gpu: 0.5}", "m.yaml:3:55: families[0].gpu: expected a whole number"},
        {"lifetime: 1h, gpu: 1k}", "m.yaml:3:55: families[0].gpu: expected a whole number"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        char text[256];
        snprintf(text, sizeof(text), "%s%s\n", head, refused[i].fields);
        expect_error("m.yaml", text, refused[i].message);
    }
}

static const char trace[] =
    "{\"t\": 60, \"pod\": {\"metadata\": {\"name\": \"b\", \"ownerReferences\": [{\"kind\": "
    "\"Job\", \"controller\": true}]}, \"spec\": {\"containers\": [{\"resources\": "
    "{\"requests\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}}]}}, \"duration\": \"10m\"}\n"
    "\n"
    "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": "
    "\"500m\"}}}]}}, \"duration\": 3600}\n";

/* What scripts and kubectl write: Python's surrogate pairs for characters beyond U+FFFF,
 * quoted numbers, comment lines; DaemonSet and static pods come with every node and are
 * left out; a name keeps its dots, not its extension. */
static void test_trace_as_written(void **state) {
    (void)state;
    static const char text[] =
        "# exported from prod, week 1\n"
        "{\"t\": \"60\", \"duration\": \"3600\", \"pod\": {\"metadata\": {\"annotations\": "
        "{\"note\": \"\\ud83d\\ude00 \\\\ud83d\"}}, \"spec\": {\"containers\": [{\"name\": \"c\", "
        "\"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}}}\n"
        "{\"t\": 0, \"duration\": 60, \"pod\": {\"metadata\": {\"ownerReferences\": "
        "[{\"kind\": \"DaemonSet\", \"name\": \"ds\", \"controller\": true}]}}}\n"
        "{\"t\": 0, \"duration\": 60, \"pod\": {\"metadata\": {\"ownerReferences\": "
        "[{\"kind\": \"Node\", \"name\": \"n1\", \"controller\": true}]}}}\n";
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("/x/prod.week1.jsonl", text, &w, &err), 0);
    assert_string_equal(w.name, "prod.week1");
    assert_true(w.is_trace);
    assert_int_equal(w.trace_count, 1);
    assert_int_equal(w.trace_per_node, 2);
    assert_int_equal(w.trace[0].t_s, 60);
    assert_int_equal(w.trace[0].duration_s, 3600);
    assert_int_equal(w.trace[0].request.cpu_milli, 1000);
    const k8s_object_meta_t *meta = w.trace[0].pod->metadata;
    assert_string_equal(meta->annotations[0]->value, "\xf0\x9f\x98\x80 \\ud83d");
    replay_workload_free(&w);
    expect_error("t.jsonl",
                 "{\"t\": 0, \"duration\": 60, \"pod\": {\"metadata\": {\"ownerReferences\": "
                 "[{\"kind\": \"DaemonSet\", \"name\": \"ds\", \"controller\": true}]}}}\n",
                 "t.jsonl: the trace holds no pod but DaemonSet and static pods");
}

static void test_trace(void **state) {
    (void)state;
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("/x/t.jsonl", trace, &w, &err), 0);
    assert_true(w.is_trace);
    assert_int_equal(w.trace_count, 2);
    assert_int_equal(w.trace[0].t_s, 0); /* sorted by arrival */
    assert_int_equal(w.trace[0].request.cpu_milli, 500);
    assert_int_equal(w.trace[1].duration_s, 600);
    assert_int_equal(w.trace[1].request.memory_bytes, GIB);
    assert_int_equal(pod_lifetime(w.trace[1].pod), POD_LIFETIME_SHORT);
    assert_int_equal(w.trace_span_s, 3600);
    replay_workload_free(&w);

    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": 1}\n{\"t\": 0, \"pod\": {\n",
                 "t.jsonl:2:");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": -1}\n",
                 "t.jsonl:1:33: duration: must not be negative");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": \"0x10\"}\n",
                 "t.jsonl:1:33: duration:");
    expect_error("t.jsonl", "{\"t\": -5, \"pod\": {}, \"duration\": 1}\n",
                 "t.jsonl:1:7: t: must not be negative");
    expect_error("t.jsonl", "{\"t\": 0, \"duration\": 1}\n", "t.jsonl:1:1: \"pod\" is required");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}}\n", "t.jsonl:1:1: \"duration\" is required");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": 1}\n  [1]\n",
                 "t.jsonl:2:3: malformed trace line: expected {\"t\", \"pod\", \"duration\"}");
    /* A UTF-8 byte order mark is skipped; an empty file says so. */
    replay_workload_t bom;
    frugal_err_t berr;
    frugal_err_clear(&berr);
    const char *bom_text = "\xef\xbb\xbf{\"t\": 0, \"pod\": {}, \"duration\": 60}\n";
    assert_int_equal(replay_workload_load("t.jsonl", bom_text, strlen(bom_text), &bom, &berr), 0);
    assert_true(bom.is_trace);
    assert_int_equal(bom.trace_count, 1);
    replay_workload_free(&bom);
    /* Tabs are JSON whitespace, before the object too; the columns stay the line's. */
    const char *tab_text = "\t{\"t\": 0, \"pod\": {}, \"duration\": 60}\n"
                           " \t{\"t\":\t5, \"pod\": {},\t\"duration\": 60}\t\n";
    assert_int_equal(replay_workload_load("t.jsonl", tab_text, strlen(tab_text), &bom, &berr), 0);
    assert_int_equal(bom.trace_count, 2);
    replay_workload_free(&bom);
    /* A pod of duration 0 still waits for a node: the trace lasts past its arrival. */
    const char *zero_text = "{\"t\": 0, \"pod\": {}, \"duration\": 60}\n"
                            "{\"t\": 600, \"pod\": {}, \"duration\": 0}\n";
    assert_int_equal(replay_workload_load("t.jsonl", zero_text, strlen(zero_text), &bom, &berr), 0);
    assert_int_equal(bom.trace_span_s, 601);
    replay_workload_free(&bom);
    expect_error("t.jsonl", "\t{\"t\": 0, \"pod\": {}, \"duration\": -1}\n",
                 "t.jsonl:1:34: duration: must not be negative");
    expect_error("t.jsonl", "\xff\xfe{\x00", "t.jsonl: UTF-16 text");
    expect_error("t.jsonl", " \n\n",
                 "t.jsonl: empty (expected a workload mix or a JSON-lines trace)");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": 1, \"t\": 2}\n",
                 "t.jsonl:1:36: duplicate trace field \"t\"");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": 1, \"x\": 2}\n",
                 "t.jsonl:1:36: unknown trace field \"x\"");
    expect_error(
        "t.jsonl",
        "{\"t\": 0, \"duration\": 1, \"pod\": {\"spec\": {\"affinity\": {\"nodeAffinity\": "
        "{\"requiredDuringSchedulingIgnoredDuringExecution\": {\"nodeSelectorTerms\": "
        "[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"in\", \"values\": "
        "[\"b\"]}]}]}}}}}}\n",
        "t.jsonl:1:32: pod: required node affinity: unknown operator \"in\" (In, NotIn, "
        "Exists, DoesNotExist, Gt or Lt)");
    expect_error("t.jsonl", "{{}}\n",
                 "t.jsonl:1:2: malformed trace line: a field name is a mapping, not a string");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {\"spec\": 3}, \"duration\": 1}\n", "t.jsonl:1:");
    /* Times far beyond any replay would overflow the milliseconds they are counted in. */
    expect_error("t.jsonl", "{\"t\": 1e19, \"pod\": {}, \"duration\": 1}\n",
                 "t.jsonl:1:7: t: must be at most 3660 days, got \"1e19\"");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {}, \"duration\": 1e19}\n",
                 "t.jsonl:1:33: duration: must be at most 3660 days");
    expect_error("t.jsonl", "{\"t\": 0, \"pod\": {\"kind\": \"Service\"}, \"duration\": 1}\n",
                 "t.jsonl:1:26: pod.kind: Service, expected Pod");
}

static void test_policies(void **state) {
    (void)state;
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    assert_int_equal(n, 6);
    assert_string_equal(list[0]->name, "random");
    assert_ptr_equal(list[5], &replay_policy_escalator); /* the baseline, last */
    assert_ptr_equal(replay_policy_find("least-waste"), list[2]);
    assert_null(replay_policy_find("cheapest"));

    /* least-waste and most-pods as CA defines them, on two options. */
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("c.yaml", "", 0, &cfg, &errors), 0);
    replay_group_t groups[2] = {{.info = {.capacity = {2000, 8 * GIB, 0}}},
                                {.info = {.capacity = {16000, 64 * GIB, 0}}}};
    replay_pod_t pods[3] = {{.request = {1000, 4 * GIB, 0}},
                            {.request = {1000, 4 * GIB, 0}},
                            {.request = {1000, 4 * GIB, 0}}};
    uint32_t pending[3] = {0, 1, 2}, a[] = {0, 1}, b[] = {0, 1, 2};
    replay_view_t view = {cfg, groups, 2, pods, pending, 3, 0, 0, NULL, 0};
    replay_option_t opts[2] = {{0, 1, a, 2}, {1, 1, b, 3}};
    replay_rng_t rng;
    replay_rng_seed(&rng, 1);
    const replay_policy_ops_t *lw = replay_policy_find("least-waste");
    const replay_policy_ops_t *mp = replay_policy_find("most-pods");
    void *st = NULL;
    size_t chosen = 9;
    frugal_err_t err;
    assert_int_equal(lw->init(&st, cfg, &rng, &err), 0);
    assert_int_equal(lw->choose(st, &view, opts, 2, &chosen, &err), 0);
    assert_int_equal(chosen, 0); /* 2 cpu + 8Gi fully used */
    lw->free(st);
    assert_int_equal(mp->init(&st, cfg, &rng, &err), 0);
    assert_int_equal(mp->choose(st, &view, opts, 2, &chosen, &err), 0);
    assert_int_equal(chosen, 1);
    mp->free(st);
    config_free(cfg);
}

static const char cluster[] =
    "node_groups:\n"
    "  - {id: small, machine_type: n1-standard-2, min_size: 0, max_size: 3}\n"
    "  - {id: big, machine_type: n1-standard-8, min_size: 1, max_size: 2,\n"
    "     options: {scale_down_unneeded: 1m}}\n";

static void test_run(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("c.yaml", cluster, strlen(cluster), &cfg, &errors), 0);
    const char *text = "arrivals_per_hour: 30\n"
                       "families:\n"
                       "  - {name: a, cpu: [100m, 1], memory: [128Mi, 2Gi], lifetime: [5m, 2h]}\n"
                       "  - {name: huge, weight: 0.1, cpu: 64, memory: 1Gi, lifetime: 1h}\n";
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("w.yaml", text, &w, &err), 0);
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    int64_t pods = -1;
    for (size_t i = 0; i < n; i++) {
        replay_figures_t f1, f2, f3;
        assert_int_equal(replay_run(cfg, &w, list[i], 3, 24, &f1, &err), 0);
        assert_int_equal(replay_run(cfg, &w, list[i], 3, 24, &f2, &err), 0);
        assert_int_equal(replay_run(cfg, &w, list[i], 4, 24, &f3, &err), 0);
        assert_memory_equal(&f1, &f2, sizeof(f1)); /* deterministic */
        assert_true(f1.pods != f3.pods || f1.cost != f3.cost);
        if (pods < 0)
            pods = f1.pods;
        assert_int_equal(f1.pods, pods); /* the same pods for every policy of a seed */
        assert_true(f1.unhostable > 0 && f1.unhostable < f1.pods / 5);
        assert_true(f1.cost >= 0.38 * 24 - 1e-9); /* big's min_size node, all day */
        assert_true(f1.ideal_cost > 0 && f1.cost > f1.ideal_cost * 0.9);
        assert_true(f1.decisions <= f1.nodes_bought);
    }
    replay_workload_free(&w);

    /* A trace: one pod that needs a new node; billed per 10 s loop from its purchase
     * until it has been empty for 1 min. */
    const char *tr = "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": "
                     "{\"requests\": {\"cpu\": \"7\"}}}]}}, \"duration\": 600}\n"
                     "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": "
                     "{\"requests\": {\"cpu\": \"7\"}}}]}}, \"duration\": 3600}\n";
    assert_int_equal(load("t.jsonl", tr, &w, &err), 0);
    replay_figures_t f;
    assert_int_equal(replay_run(cfg, &w, replay_policy_find("random"), 1, 2, &f, &err), 0);
    assert_int_equal(f.pods, 2);
    assert_int_equal(f.nodes_bought, 1); /* the min_size node takes one, a new big the other */
    assert_int_equal(f.decisions, 1);
    /* The second pod waited for the loop and the boot: 60 s + 0 (loop at t = 0). */
    assert_true(fabs(f.pending_pod_minutes - 1.0) < 1e-9);
    /* The initial node takes the first line's pod (600 s), a new node the second from
     * 60 s; the initial node, empty at 600 s and unneeded at 660 s, goes (the group
     * stays at min_size); the new one bills until the end: 660 s + 2 h. */
    if (fabs(f.cost - 0.38 * (7200 + 660) / 3600.0) > 1e-9)
        fail_msg("cost %f", f.cost);
    replay_workload_free(&w);
    config_free(cfg);
}

/* A family's `initial` pods are there at the start, on the nodes that exist; `burst`
 * brings several pods of one request per arrival; both refuse what makes no sense. */
static void test_initial_and_burst(void **state) {
    (void)state;
    replay_workload_t w;
    frugal_err_t err;
    const char *text = "arrivals_per_hour: 0.0001\n"
                       "families:\n"
                       "  - {name: a, cpu: 1, memory: 1Gi, lifetime: 1h, initial: 4}\n";
    assert_int_equal(load("w.yaml", text, &w, &err), 0);
    assert_int_equal(w.families[0].initial, 4);
    assert_int_equal(w.families[0].burst.min, 1);
    assert_int_equal(w.families[0].burst.max, 1);
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("c.yaml", cluster, strlen(cluster), &cfg, &errors), 0);
    replay_figures_t f;
    assert_int_equal(replay_run(cfg, &w, replay_policy_find("demand-fit"), 1, 2, &f, &err), 0);
    /* The four fit the big group's existing node at 0: nothing bought, nothing waits. */
    assert_int_equal(f.pods, 4);
    assert_int_equal(f.nodes_bought, 0);
    assert_true(f.pending_pod_minutes == 0.0);
    replay_workload_free(&w);

    text = "arrivals_per_hour: 3\n"
           "families:\n"
           "  - {name: a, cpu: [100m, 1], memory: 1Gi, lifetime: 10m, burst: 10}\n";
    assert_int_equal(load("w.yaml", text, &w, &err), 0);
    assert_int_equal(replay_run(cfg, &w, replay_policy_find("random"), 1, 24, &f, &err), 0);
    assert_true(f.pods >= 20 && f.pods % 10 == 0);
    replay_workload_free(&w);
    config_free(cfg);

    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: 1h, burst: 0}\n",
                 "m.yaml:3:57: families[0].burst: must be within [1, 100000]");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: 1h, initial: [1, 2]}\n",
                 "m.yaml:3:59: families[0].initial: expected a scalar");
    expect_error("m.yaml",
                 "arrivals_per_hour: 1\nfamilies:\n  - {name: a, cpu: 1, memory: 1Gi, "
                 "lifetime: 1h, initial: 100001}\n",
                 "m.yaml:3:59: families[0].initial: must be at most 100000");
}

static void test_run_needs_groups(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("c.yaml", "", 0, &cfg, &errors), 0);
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("w.yaml",
                          "arrivals_per_hour: 1\nfamilies: [{name: a, cpu: 1, "
                          "memory: 1Gi, lifetime: 1h}]\n",
                          &w, &err),
                     0);
    replay_figures_t f;
    assert_int_equal(replay_run(cfg, &w, replay_policy_find("random"), 1, 1, &f, &err),
                     FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "no managed node group"));
    replay_workload_free(&w);
    config_free(cfg);
}

/* Three pods on two ready n1-standard-8 (0.38/h, 8 cores), first
 * fit: A (4 cores, 5 min) and B (2 cores) on node 0, C (3 cores, or 6.5 with c6) on node
 * 1; B and C run the whole 2 h. After A ends node 0 holds 2 cores (25 %). */
static const char *consolidate_trace(bool c6) {
    return c6 ? "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"4\"}}}]}}, \"duration\": 300}\n"
                "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"2\"}}}]}}, \"duration\": 7200}\n"
                "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"6500m\"}}}]}}, \"duration\": 7200}\n"
              : "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"4\"}}}]}}, \"duration\": 300}\n"
                "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"2\"}}}]}}, \"duration\": 7200}\n"
                "{\"t\": 0, \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "
                "{\"cpu\": \"3\"}}}]}}, \"duration\": 7200}\n";
}

/* Run trace (plus extra lines) for 2 h on a group of two nodes with the given options,
 * --scale-down-utilization threshold (0: off) and placement. */
static replay_figures_t placement_run(const char *group_extra, const char *trace_text,
                                      double threshold, replay_placement_t placement) {
    char cluster_text[512];
    snprintf(cluster_text, sizeof(cluster_text),
             "node_groups:\n"
             "  - {id: big, machine_type: n1-standard-8, max_size: 3, size: 2%s}\n",
             group_extra);
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(
        config_load_string("c.yaml", cluster_text, strlen(cluster_text), &cfg, &errors), 0);
    replay_workload_t w;
    frugal_err_t err;
    assert_int_equal(load("t.jsonl", trace_text, &w, &err), 0);
    replay_options_t opts = {.scale_down_utilization = threshold, .placement = placement};
    replay_figures_t f;
    assert_int_equal(replay_run_with(cfg, &w, replay_policy_find("random"), 1, 2, &opts, &f, &err),
                     0);
    assert_int_equal(f.pods, w.trace_count);
    replay_workload_free(&w);
    config_free(cfg);
    return f;
}

static replay_figures_t consolidate_run(const char *group_extra, const char *trace_text,
                                        double threshold) {
    return placement_run(group_extra, trace_text, threshold, REPLAY_PLACE_FIRST_FIT);
}

static void assert_cost(const replay_figures_t *f, double node_seconds) {
    if (fabs(f->cost - 0.38 * node_seconds / 3600.0) > 1e-9)
        fail_msg("cost %f, expected %f", f->cost, 0.38 * node_seconds / 3600.0);
}

/* Node 0 at 25 % is unneeded from 300 s (B fits node 1); CA's 10 min later it is drained:
 * B moves to node 1 and keeps running, node 0 goes at 900 s. */
static void test_scale_down_underused(void **state) {
    (void)state;
    replay_figures_t f = consolidate_run(", min_size: 0", consolidate_trace(false), 0.5);
    assert_int_equal(f.nodes_drained, 1);
    assert_true(f.pending_pod_minutes == 0.0);
    assert_cost(&f, 900 + 7200);
    /* Without the option both nodes run to the end, as before. */
    replay_figures_t off = consolidate_run(", min_size: 0", consolidate_trace(false), 0);
    assert_int_equal(off.nodes_drained, 0);
    assert_cost(&off, 7200 + 7200);
    /* With scale_down_unneeded 1m node 0 is due at 360 s, but CA scales nothing down
     * within 10 min of its start (its last scale-up time): it goes at 600 s. */
    f = consolidate_run(", min_size: 0, options: {scale_down_unneeded: 1m}",
                        consolidate_trace(false), 0.5);
    assert_int_equal(f.nodes_drained, 1);
    assert_cost(&f, 600 + 7200);
}

/* Nodes that stay: B does not fit node 1 beside a 6.5-core C; 25 % is not below a group's
 * own threshold of 0.2 (it overrides the option); min_size 2. */
static void test_scale_down_underused_stays(void **state) {
    (void)state;
    replay_figures_t f = consolidate_run(", min_size: 0", consolidate_trace(true), 0.5);
    assert_int_equal(f.nodes_drained, 0);
    assert_cost(&f, 7200 + 7200);
    f = consolidate_run(", min_size: 0, options: {scale_down_utilization_threshold: 0.2}",
                        consolidate_trace(false), 0.5);
    assert_int_equal(f.nodes_drained, 0); /* node 1, at 38 %, is not below 0.2 either */
    assert_cost(&f, 7200 + 7200);
    f = consolidate_run(", min_size: 2", consolidate_trace(false), 0.5);
    assert_int_equal(f.nodes_drained, 0);
    assert_cost(&f, 7200 + 7200);
    /* A 0.2 option alone keeps them too; the group's 0.5 drains under it. */
    f = consolidate_run(", min_size: 0", consolidate_trace(false), 0.2);
    assert_int_equal(f.nodes_drained, 0);
    f = consolidate_run(", min_size: 0, options: {scale_down_utilization_threshold: 0.5}",
                        consolidate_trace(false), 0.2);
    assert_int_equal(f.nodes_drained, 1);
}

/* A scale-up at 400 s (D, 7.5 cores, fits no node) holds the drain of node 0 (due at
 * 360 s) until 400 + 600 s; D's node bills from 400 s. */
static void test_scale_down_after_add(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof(text),
             "%s{\"t\": 400, \"pod\": {\"spec\": {\"containers\": [{\"resources\": "
             "{\"requests\": {\"cpu\": \"7500m\"}}}]}}, \"duration\": 7200}\n",
             consolidate_trace(false));
    replay_figures_t f =
        consolidate_run(", min_size: 0, options: {scale_down_unneeded: 1m}", text, 0.5);
    assert_int_equal(f.nodes_bought, 1);
    assert_int_equal(f.nodes_drained, 1);
    assert_cost(&f, 1000 + 7200 + (7200 - 400));
}

/* The cluster and a small mix (10 pods an hour, minutes to hours) of the option tests. */
static void load_option_case(frugal_config_t **cfg, replay_workload_t *w) {
    char *errors = NULL;
    frugal_err_t err;
    assert_int_equal(config_load_string("c.yaml", cluster, strlen(cluster), cfg, &errors), 0);
    const char *text = "arrivals_per_hour: 10\n"
                       "families:\n"
                       "  - {name: a, cpu: [100m, 2], memory: [128Mi, 4Gi], lifetime: [5m, 4h]}\n";
    assert_int_equal(load("w.yaml", text, w, &err), 0);
}

/* Without the option (NULL or zero) a run is replay_run's, byte for byte; escalator
 * ignores it; with it every strategy stays deterministic. */
static void test_scale_down_option_off(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    replay_workload_t w;
    frugal_err_t err;
    load_option_case(&cfg, &w);
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    replay_options_t zero = {.placement = REPLAY_PLACE_FIRST_FIT},
                     half = {.scale_down_utilization = 0.5};
    bool drained = false;
    for (size_t i = 0; i < n; i++) {
        replay_figures_t f1, f2, f3, f4, f5;
        assert_int_equal(replay_run(cfg, &w, list[i], 2, 24, &f1, &err), 0);
        assert_int_equal(replay_run_with(cfg, &w, list[i], 2, 24, NULL, &f2, &err), 0);
        assert_int_equal(replay_run_with(cfg, &w, list[i], 2, 24, &zero, &f3, &err), 0);
        assert_memory_equal(&f1, &f2, sizeof(f1));
        assert_memory_equal(&f1, &f3, sizeof(f1));
        assert_int_equal(f1.nodes_drained, 0);
        assert_int_equal(replay_run_with(cfg, &w, list[i], 2, 24, &half, &f4, &err), 0);
        assert_int_equal(replay_run_with(cfg, &w, list[i], 2, 24, &half, &f5, &err), 0);
        assert_memory_equal(&f4, &f5, sizeof(f4));
        assert_int_equal(f4.pods, f1.pods);
        if (list[i] == &replay_policy_escalator)
            assert_memory_equal(&f4, &f1, sizeof(f1));
        else
            drained = drained || f4.nodes_drained > 0;
    }
    assert_true(drained);
    replay_workload_free(&w);
    config_free(cfg);
}

static void test_placement_names(void **state) {
    (void)state;
    const char *names[] = {"first-fit", "least-allocated", "most-allocated"};
    for (int i = 0; i < 3; i++) {
        replay_placement_t p = REPLAY_PLACE_MOST_ALLOCATED;
        assert_int_equal(replay_placement_parse(names[i], &p), 0);
        assert_int_equal(p, i);
        assert_string_equal(replay_placement_name(p), names[i]);
    }
    replay_placement_t p = REPLAY_PLACE_LEAST_ALLOCATED;
    assert_int_equal(replay_placement_parse("best-fit", &p), -1);
    assert_int_equal(replay_placement_parse("", &p), -1);
    assert_int_equal(p, REPLAY_PLACE_LEAST_ALLOCATED);
}

#define PLACEMENT_POD(t, cpu, duration)                                                            \
    "{\"t\": " #t ", \"pod\": {\"spec\": {\"containers\": [{\"resources\": {\"requests\": "        \
    "{\"cpu\": \"" cpu "\"}}}]}}, \"duration\": " #duration "}\n"

/* Two ready n1-standard-8 (8 cores), never scaled down (min_size 2), room for one more.
 * A probe P (1 core) arrives at 100 s when one node is half full (4 cores) and the other
 * empty; Q (7.5 cores) at 110 s fits without a new node only if P left the empty node
 * alone. first_full: node 0 (the first bought) is the half-full one (H); else node 1 is
 * (X, 5 cores, fills node 0 until 50 s, so H goes to node 1).
 *   node 0 half full: first fit and most-allocated put P on node 0, least-allocated on
 *   node 1 (7/8 free after it against 3/8): only least-allocated buys a node for Q;
 *   node 1 half full: first fit and least-allocated put P on node 0, most-allocated on
 *   node 1 (3/8 free after it against 7/8): only most-allocated buys none. */
static int64_t placement_bought(bool first_full, replay_placement_t placement) {
    const char *pods = first_full ? PLACEMENT_POD(0, "4", 7200) PLACEMENT_POD(100, "1", 7200)
                                        PLACEMENT_POD(110, "7500m", 600)
                                  : PLACEMENT_POD(0, "5", 50) PLACEMENT_POD(0, "4", 7200)
                                        PLACEMENT_POD(100, "1", 7200)
                                            PLACEMENT_POD(110, "7500m", 600);
    replay_figures_t f = placement_run(", min_size: 2", pods, 0, placement);
    assert_int_equal(f.unhostable, 0);
    return f.nodes_bought;
}

static void test_placement(void **state) {
    (void)state;
    assert_int_equal(placement_bought(true, REPLAY_PLACE_FIRST_FIT), 0);
    assert_int_equal(placement_bought(true, REPLAY_PLACE_LEAST_ALLOCATED), 1);
    assert_int_equal(placement_bought(true, REPLAY_PLACE_MOST_ALLOCATED), 0);
    assert_int_equal(placement_bought(false, REPLAY_PLACE_FIRST_FIT), 1);
    assert_int_equal(placement_bought(false, REPLAY_PLACE_LEAST_ALLOCATED), 1);
    assert_int_equal(placement_bought(false, REPLAY_PLACE_MOST_ALLOCATED), 0);
}

/* A scoring scheduler places on nodes that exist. Node 0 holds A (6 of 8 cores), node 1
 * X (8: full); B (4 cores) at 100 s buys node 2. C (1 core) at 110 s fits ready node 0
 * (2 free) and booting node 2 (4 free after B): least-allocated prefers node 2's room,
 * but C goes to node 0 at once, as under first fit, instead of waiting out the boot. */
static void test_placement_ready_first(void **state) {
    (void)state;
    const char *pods = PLACEMENT_POD(0, "6", 7200) PLACEMENT_POD(0, "8", 7200)
        PLACEMENT_POD(100, "4", 7200) PLACEMENT_POD(110, "1", 7200);
    replay_figures_t first = placement_run(", min_size: 2", pods, 0, REPLAY_PLACE_FIRST_FIT);
    replay_figures_t least = placement_run(", min_size: 2", pods, 0, REPLAY_PLACE_LEAST_ALLOCATED);
    assert_int_equal(first.nodes_bought, 1);
    assert_int_equal(least.nodes_bought, 1);
    assert_true(first.pending_pod_minutes > 0); /* B waits for node 2 */
    assert_true(fabs(least.pending_pod_minutes - first.pending_pod_minutes) < 1e-9);
}

/* consolidate_trace's pods under the other placements. least-allocated puts B (2 cores)
 * and C (3) on the empty node 1, so node 0 holds A alone, empties at 300 s and goes as
 * an empty node at 900 s: nothing to drain, the same cost. most-allocated packs B beside
 * A as first fit does (C no longer fits there), and the drain moves B as before. */
static void test_placement_and_scale_down(void **state) {
    (void)state;
    replay_figures_t f =
        placement_run(", min_size: 0", consolidate_trace(false), 0.5, REPLAY_PLACE_LEAST_ALLOCATED);
    assert_int_equal(f.nodes_drained, 0);
    assert_cost(&f, 900 + 7200);
    f = placement_run(", min_size: 0", consolidate_trace(false), 0, REPLAY_PLACE_LEAST_ALLOCATED);
    assert_cost(&f, 900 + 7200);
    f = placement_run(", min_size: 0", consolidate_trace(false), 0.5, REPLAY_PLACE_MOST_ALLOCATED);
    assert_int_equal(f.nodes_drained, 1);
    assert_true(f.pending_pod_minutes == 0.0);
    assert_cost(&f, 900 + 7200);
    f = placement_run(", min_size: 0", consolidate_trace(false), 0, REPLAY_PLACE_MOST_ALLOCATED);
    assert_cost(&f, 7200 + 7200);
}

/* Every strategy runs deterministically under each placement, on the same pods; a
 * placement outside the enum is refused. */
/* What test_decisions' hook saw. */
typedef struct seen_decisions {
    int64_t count, last_s;
    size_t with_figures;
    bool ordered, valid;
} seen_decisions_t;

static void count_decision(void *ctx, const replay_decision_t *d) {
    seen_decisions_t *seen = ctx;
    seen->ordered = seen->ordered && d->time_s >= seen->last_s;
    seen->valid = seen->valid && d->group_id != NULL && d->node_count > 0 && d->pods > 0 &&
                  d->pods <= d->pending && d->options > 0 && d->why != NULL;
    seen->with_figures += strstr(d->why, "score=") != NULL;
    seen->last_s = d->time_s;
    seen->count++;
}

/* The decision hook sees every choice among options of a run, in time order, with
 * frugal's figures for frugal's strategies only, and changes nothing of the run. */
static void test_decisions(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    replay_workload_t w;
    frugal_err_t err;
    load_option_case(&cfg, &w);
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    for (size_t i = 0; i < n; i++) {
        seen_decisions_t seen = {0, 0, 0, true, true};
        replay_options_t opts = {.on_decision = count_decision, .on_decision_ctx = &seen};
        replay_figures_t plain, hooked;
        assert_int_equal(replay_run(cfg, &w, list[i], 4, 24, &plain, &err), 0);
        assert_int_equal(replay_run_with(cfg, &w, list[i], 4, 24, &opts, &hooked, &err), 0);
        assert_memory_equal(&plain, &hooked, sizeof(plain));
        /* Escalator scales every group by itself: no choice among options to report. */
        assert_int_equal(seen.count, list[i] == &replay_policy_escalator ? 0 : hooked.decisions);
        assert_true(seen.ordered);
        assert_true(seen.valid);
        bool frugal = strcmp(list[i]->name, "pricing-proposal") == 0 ||
                      strcmp(list[i]->name, "demand-fit") == 0;
        if (list[i] != &replay_policy_escalator)
            assert_true(seen.count > 0 && seen.with_figures <= (size_t)seen.count);
        assert_int_equal(seen.with_figures, frugal ? (size_t)seen.count : 0);
    }
    replay_workload_free(&w);
    config_free(cfg);
}

static void test_placement_runs(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    replay_workload_t w;
    frugal_err_t err;
    load_option_case(&cfg, &w);
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    for (size_t i = 0; i < n; i++) {
        replay_figures_t ff;
        assert_int_equal(replay_run(cfg, &w, list[i], 3, 24, &ff, &err), 0);
        for (int p = REPLAY_PLACE_LEAST_ALLOCATED; p <= REPLAY_PLACE_MOST_ALLOCATED; p++) {
            replay_options_t opts = {.scale_down_utilization =
                                         p == REPLAY_PLACE_MOST_ALLOCATED ? 0.5 : 0,
                                     .placement = (replay_placement_t)p};
            replay_figures_t f1, f2;
            assert_int_equal(replay_run_with(cfg, &w, list[i], 3, 24, &opts, &f1, &err), 0);
            assert_int_equal(replay_run_with(cfg, &w, list[i], 3, 24, &opts, &f2, &err), 0);
            assert_memory_equal(&f1, &f2, sizeof(f1));
            assert_int_equal(f1.pods, ff.pods);
            assert_int_equal(f1.unhostable, ff.unhostable);
        }
    }
    replay_options_t bad = {.placement = (replay_placement_t)7};
    replay_figures_t f;
    assert_int_equal(replay_run_with(cfg, &w, list[0], 3, 24, &bad, &f, &err), FRUGAL_EINVAL);
    replay_workload_free(&w);
    config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_mix),
        cmocka_unit_test(test_mix_errors),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_trace_as_written),
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_initial_and_burst),
        cmocka_unit_test(test_run_needs_groups),
        cmocka_unit_test(test_scale_down_underused),
        cmocka_unit_test(test_scale_down_underused_stays),
        cmocka_unit_test(test_scale_down_after_add),
        cmocka_unit_test(test_scale_down_option_off),
        cmocka_unit_test(test_placement_names),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_placement_ready_first),
        cmocka_unit_test(test_placement_and_scale_down),
        cmocka_unit_test(test_placement_runs),
        cmocka_unit_test(test_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
