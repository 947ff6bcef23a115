/* Unit tests of the trace built from kube-state-metrics answers (server/replay/replay_prom.c):
 * a pod's arrival, run and requests (init containers included), owners, DaemonSets and
 * static pods, node selectors with kube-state-metrics' label names resolved, tolerations
 * (with their seconds), kube-state-metrics scraped with honor_labels: false, pods without creation
 * time counted, the range's cut, sidecars and overhead combined as the scheduler does,
 * and answers that are not Prometheus'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_json.h"
#include "pod.h"
#include "replay_prom.h"
#include "yaml_tree.h"

#define T0 1700000000

/* A matrix answer of one series with labels (JSON object body) and samples "[t, v]". */
static void add(replay_prom_t *b, replay_prom_series_t s, const char *labels, const char *values) {
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":"
             "[{\"metric\":{%s},\"values\":[%s]}]}}",
             labels, values);
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_add(b, s, text, strlen(text), &err), 0);
}

#define POD(name) "\"namespace\":\"ns\",\"pod\":\"" name "\",\"uid\":\"u-" name "\""

/* The trace of b's pods into *text (every one listed, none known beforehand), which must
 * build. (An out parameter of the caller's: gcc's -Wdangling-pointer misreads a returned
 * one.) */
static void trace_of(replay_prom_t *b, replay_prom_stats_t *st, char **text) {
    size_t len = 0;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_trace(b, NULL, 0, text, &len, st, &err), 0);
}

static void test_trace(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 7200, &b, &err), 0);
    /* web: created at +60, started at +90, seen until +3690: t 60, duration 3600. */
    add(b, REPLAY_PROM_CREATED, POD("web"), "[1700000100,\"1700000060\"]");
    add(b, REPLAY_PROM_START, POD("web"), "[1700000100,\"1700000090\"]");
    add(b, REPLAY_PROM_INFO_SEEN, POD("web"),
        "[1700000100,\"1700000090\"],[1700003700,\"1700003690\"]");
    add(b, REPLAY_PROM_REQUESTS, POD("web") ",\"container\":\"app\",\"resource\":\"cpu\"",
        "[1700000100,\"0.25\"]");
    add(b, REPLAY_PROM_REQUESTS, POD("web") ",\"container\":\"app\",\"resource\":\"memory\"",
        "[1700000100,\"1073741824\"]");
    add(b, REPLAY_PROM_INIT_REQUESTS, POD("web") ",\"container\":\"init\",\"resource\":\"cpu\"",
        "[1700000100,\"2\"]");
    add(b, REPLAY_PROM_OWNER,
        POD("web") ",\"owner_kind\":\"ReplicaSet\",\"owner_name\":\"web-7f\","
                   "\"owner_is_controller\":\"true\"",
        "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_NODESELECTORS,
        POD("web") ",\"nodeselector_example_com_pool\":\"a\","
                   "\"nodeselector_example_com_node_pool_v2\":\"b\"",
        "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_TOLERATIONS,
        POD("web") ",\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"web\","
                   "\"effect\":\"NoSchedule\"",
        "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_TOLERATIONS,
        POD("web") ",\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
                   "\"effect\":\"NoExecute\",\"toleration_seconds\":\"300\"",
        "[1700000100,\"1\"]");
    /* job: created before the range, completed inside: t 0, runs from the range's start. */
    add(b, REPLAY_PROM_CREATED, POD("job"), "[1700000000,\"1699999000\"]");
    add(b, REPLAY_PROM_COMPLETION, POD("job"), "[1700000600,\"1700000500\"]");
    add(b, REPLAY_PROM_INFO_SEEN, POD("job"), "[1700000600,\"1700000500\"]");
    /* A DaemonSet pod, a pod with requests and no creation, a pod gone before the range. */
    add(b, REPLAY_PROM_CREATED, POD("ds"), "[1700000000,\"1700000000\"]");
    add(b, REPLAY_PROM_OWNER, POD("ds") ",\"owner_kind\":\"DaemonSet\",\"owner_name\":\"x\"",
        "[1700000000,\"1\"]");
    /* A static pod: its mirror is owned by its Node, and comes with it as a DaemonSet's. */
    add(b, REPLAY_PROM_CREATED, POD("etcd-node-1"), "[1700000000,\"1700000000\"]");
    add(b, REPLAY_PROM_OWNER,
        POD("etcd-node-1") ",\"owner_kind\":\"Node\",\"owner_name\":\"node-1\","
                           "\"owner_is_controller\":\"true\"",
        "[1700000000,\"1\"]");
    add(b, REPLAY_PROM_REQUESTS, POD("ghost") ",\"container\":\"c\",\"resource\":\"cpu\"",
        "[1700000000,\"1\"]");
    /* a creation time that is no time is none: counted as ghost is */
    add(b, REPLAY_PROM_REQUESTS, POD("inf") ",\"container\":\"c\",\"resource\":\"cpu\"",
        "[1700000000,\"1\"]");
    add(b, REPLAY_PROM_CREATED, POD("inf"), "[1700000000,\"+Inf\"]");
    add(b, REPLAY_PROM_CREATED, POD("old"), "[1700000000,\"1699990000\"]");
    add(b, REPLAY_PROM_COMPLETION, POD("old"), "[1700000000,\"1699995000\"]");

    const char *known[] = {"example.com/pool", "example.com/nodePoolV2"};
    char *text = NULL;
    size_t len = 0;
    replay_prom_stats_t st;
    assert_int_equal(replay_prom_trace(b, known, 2, &text, &len, &st, &err), 0);
    assert_int_equal(st.pods, 2);
    assert_int_equal(st.per_node, 2);
    assert_int_equal(st.no_created, 2);
    assert_int_equal(st.outside, 1);
    const char *job = text, *web = strchr(text, '\n') + 1;
    assert_true(strncmp(job, "{\"t\": 0, ", 9) == 0);
    assert_non_null(strstr(job, "\"name\": \"job\""));
    assert_non_null(strstr(job, "\"duration\": 500}"));
    assert_true(strncmp(web, "{\"t\": 60, ", 10) == 0);
    assert_non_null(strstr(web, "\"duration\": 3600}"));
    assert_non_null(strstr(web, "{\"name\": \"app\", \"resources\": {\"requests\": {\"cpu\": "
                                "\"250m\", \"memory\": \"1073741824\"}}}"));
    assert_non_null(strstr(web, "\"initContainers\": [{\"name\": \"init\", \"resources\": "
                                "{\"requests\": {\"cpu\": \"2000m\"}}}]"));
    assert_non_null(strstr(web, "\"ownerReferences\": [{\"kind\": \"ReplicaSet\", \"name\": "
                                "\"web-7f\", \"controller\": true}]"));
    assert_non_null(strstr(web, "\"nodeSelector\": {\"example.com/pool\": \"a\", "
                                "\"example.com/nodePoolV2\": \"b\"}"));
    assert_non_null(strstr(web, "\"tolerations\": [{\"key\": \"dedicated\", \"operator\": "
                                "\"Equal\", \"value\": \"web\", \"effect\": \"NoSchedule\"}, "
                                "{\"key\": \"node.kubernetes.io/not-ready\", \"operator\": "
                                "\"Exists\", \"effect\": \"NoExecute\", \"tolerationSeconds\": "
                                "300}]"));
    free(text);
    replay_prom_free(b);
}

/* The effective request of the pod on the trace's only line. */
static resources_t only_pod_request(const char *text) {
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t ye;
    assert_int_equal(yaml_tree_load(text, strlen(text), &root, &ye), 0);
    k8s_pod_t *pod = NULL;
    kube_json_error_t je;
    assert_int_equal(kube_json_pod_from_tree(yaml_tree_mapping_get(root, "pod"), "pod", &pod, &je),
                     0);
    resources_t r;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(pod_effective_request(pod, &r, &err), 0);
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    yaml_tree_free(root);
    return r;
}

/* A sidecar (kube_pod_init_container_info restart_policy="Always") runs beside the
 * containers and beside the ordinary init containers; the overhead adds to the whole. */
static void test_sidecars_and_overhead(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 7200, &b, &err), 0);
    add(b, REPLAY_PROM_CREATED, POD("mesh"), "[1700000100,\"1700000060\"]");
    add(b, REPLAY_PROM_REQUESTS, POD("mesh") ",\"container\":\"app\",\"resource\":\"cpu\"",
        "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_REQUESTS, POD("mesh") ",\"container\":\"app\",\"resource\":\"memory\"",
        "[1700000100,\"1073741824\"]");
    add(b, REPLAY_PROM_INIT_REQUESTS, POD("mesh") ",\"container\":\"setup\",\"resource\":\"cpu\"",
        "[1700000100,\"2\"]");
    add(b, REPLAY_PROM_INIT_REQUESTS, POD("mesh") ",\"container\":\"proxy\",\"resource\":\"cpu\"",
        "[1700000100,\"0.1\"]");
    add(b, REPLAY_PROM_INIT_REQUESTS,
        POD("mesh") ",\"container\":\"proxy\",\"resource\":\"memory\"",
        "[1700000100,\"134217728\"]");
    add(b, REPLAY_PROM_INIT_INFO, POD("mesh") ",\"container\":\"setup\",\"restart_policy\":\"\"",
        "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_INIT_INFO,
        POD("mesh") ",\"container\":\"proxy\",\"restart_policy\":\"Always\"", "[1700000100,\"1\"]");
    add(b, REPLAY_PROM_OVERHEAD_CPU, POD("mesh"), "[1700000100,\"0.25\"]");
    add(b, REPLAY_PROM_OVERHEAD_MEMORY, POD("mesh"), "[1700000100,\"104857600\"]");
    replay_prom_stats_t st;
    char *text = NULL;
    trace_of(b, &st, &text);
    assert_int_equal(st.pods, 1);
    assert_non_null(strstr(text, "\"initContainers\": [{\"name\": \"proxy\", \"restartPolicy\": "
                                 "\"Always\", "));
    assert_non_null(strstr(text, "\"overhead\": {\"cpu\": \"250m\", \"memory\": \"104857600\"}"));
    /* cpu: max(app 1 + proxy 0.1, setup 2 + proxy 0.1) + 0.25; memory: app + proxy + overhead. */
    resources_t r = only_pod_request(text);
    assert_int_equal(r.cpu_milli, 2350);
    assert_int_equal(r.memory_bytes, 1073741824LL + 134217728LL + 104857600LL);
    free(text);
    replay_prom_free(b);
}

/* Scraped with honor_labels: false, the target's namespace, pod and container labels
 * stay and kube-state-metrics' own come as exported_*: the pod's are those. */
static void test_exported_labels(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 7200, &b, &err), 0);
#define KSM "\"namespace\":\"monitoring\",\"pod\":\"ksm-6b7c9\",\"container\":\"ksm\","
#define SHOP KSM "\"exported_namespace\":\"shop\",\"exported_pod\":\"web-1\",\"uid\":\"u1\""
    add(b, REPLAY_PROM_CREATED, SHOP, "[1700000100,\"1700000060\"]");
    add(b, REPLAY_PROM_REQUESTS, SHOP ",\"exported_container\":\"app\",\"resource\":\"cpu\"",
        "[1700000100,\"0.25\"]");
    add(b, REPLAY_PROM_REQUESTS, SHOP ",\"exported_container\":\"proxy\",\"resource\":\"cpu\"",
        "[1700000100,\"0.1\"]");
    replay_prom_stats_t st;
    char *text = NULL;
    trace_of(b, &st, &text);
    assert_int_equal(st.pods, 1);
    assert_non_null(strstr(text, "\"name\": \"web-1\", \"namespace\": \"shop\""));
    assert_non_null(strstr(text, "{\"name\": \"app\", \"resources\": {\"requests\": {\"cpu\": "
                                 "\"250m\"}}}, {\"name\": \"proxy\""));
    assert_int_equal(only_pod_request(text).cpu_milli, 350);
    free(text);
    replay_prom_free(b);
#undef SHOP
#undef KSM
}

static void expect_refused(const char *text, const char *message) {
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 60, &b, &err), 0);
    assert_int_equal(replay_prom_add(b, REPLAY_PROM_CREATED, text, strlen(text), &err),
                     FRUGAL_EINVAL);
    if (strstr(err.msg, message) == NULL || strstr(err.msg, "scanning") != NULL)
        fail_msg("expected \"%s\" in \"%s\"", message, err.msg);
    replay_prom_free(b);
}

/* kube-state-metrics gives a completion time whenever a container is terminated: one that
 * restarted leaves it behind while the pod runs on. In a pod that restarted a container,
 * a completion whose series ends before the pod's is no end; without a restart, the
 * completion time ends the pod as always. */
static void test_completion_left_behind(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 8 * 3600, &b, &err), 0);
    char seen[512] = "", at[64];
    for (int h = 1; h <= 8; h++) {
        snprintf(at, sizeof(at), "%s[%d,\"%d\"]", h > 1 ? "," : "", T0 + h * 3600,
                 T0 + h * 3600 - 10);
        strcat(seen, at);
    }
    const char *names[] = {"restarted", "finished", "brief"};
    char pods[3][128];
    for (int i = 0; i < 3; i++) {
        snprintf(pods[i], sizeof(pods[i]), "\"namespace\":\"ns\",\"pod\":\"%s\",\"uid\":\"u-%s\"",
                 names[i], names[i]);
        add(b, REPLAY_PROM_CREATED, pods[i], "[1700003600,\"1700000000\"]");
        add(b, REPLAY_PROM_START, pods[i], "[1700003600,\"1700000000\"]");
        add(b, REPLAY_PROM_INFO_SEEN, pods[i], seen);
    }
    /* restarted: a container terminated at +3h and ran again, the pod ran to the end */
    add(b, REPLAY_PROM_COMPLETION, pods[0], "[1700014400,\"1700010800\"]");
    add(b, REPLAY_PROM_RESTARTS, pods[0], "[1700014400,\"1\"],[1700018000,\"1\"]");
    add(b, REPLAY_PROM_COMPLETION_SEEN, pods[0], "[1700014400,\"1700014390\"]");
    /* finished: a Job's pod done at +2h, kept (and its completion with it) until the end,
     * though one of its containers restarted before */
    add(b, REPLAY_PROM_COMPLETION, pods[1],
        "[1700010800,\"1700007200\"],[1700014400,\"1700007200\"],[1700018000,\"1700007200\"],"
        "[1700021600,\"1700007200\"],[1700025200,\"1700007200\"],[1700028800,\"1700007200\"]");
    add(b, REPLAY_PROM_RESTARTS, pods[1], "[1700003600,\"1\"]");
    add(b, REPLAY_PROM_COMPLETION_SEEN, pods[1], "[1700028800,\"1700028790\"]");
    /* brief: a completion series shorter than the pod's, no restart: the completion */
    add(b, REPLAY_PROM_COMPLETION, pods[2], "[1700014400,\"1700010800\"]");
    replay_prom_stats_t st;
    char *text = NULL;
    trace_of(b, &st, &text);
    assert_int_equal(st.pods, 3);
    for (int i = 0; i < 3; i++) {
        /* restarted is seen at the last scrape, 10 s before the end: it runs to the end */
        static const char *const want[] = {"\"duration\": 28800}", "\"duration\": 7200}",
                                           "\"duration\": 10800}"};
        char name[64];
        snprintf(name, sizeof(name), "\"name\": \"%s\"", names[i]);
        const char *line = strstr(text, name), *end = line != NULL ? strchr(line, '\n') : NULL;
        assert_non_null(end);
        const char *d = strstr(line, want[i]);
        assert_true(d != NULL && d < end);
    }
    free(text);
    replay_prom_free(b);
}

/* A pod seen at kube-state-metrics' last scrape, 30 s before the range's end, runs to the
 * end; one last seen a scrape earlier ends there. When the last scrape is more than 5
 * minutes before the end (kube-state-metrics gone), every pod ends at its last sample. */
static void test_running_at_end(void **state) {
    (void)state;
    for (int gone = 0; gone <= 1; gone++) {
        replay_prom_t *b;
        frugal_err_t err;
        frugal_err_clear(&err);
        int64_t end = T0 + 3600 + (gone ? 600 : 0);
        assert_int_equal(replay_prom_new(T0, end, &b, &err), 0);
        add(b, REPLAY_PROM_CREATED, POD("live"), "[1700000060,\"1700000000\"]");
        add(b, REPLAY_PROM_INFO_SEEN, POD("live"), "[1700003600,\"1700003570\"]");
        add(b, REPLAY_PROM_CREATED, POD("left"), "[1700000060,\"1700000000\"]");
        add(b, REPLAY_PROM_INFO_SEEN, POD("left"), "[1700003600,\"1700003540\"]");
        replay_prom_stats_t st;
        char *text = NULL;
        trace_of(b, &st, &text);
        assert_int_equal(st.pods, 2);
        const char *left = strstr(text, "\"name\": \"left\""),
                   *live = strstr(text, "\"name\": \"live\"");
        assert_non_null(left), assert_non_null(live);
        assert_non_null(strstr(left, "\"duration\": 3540}"));
        assert_non_null(strstr(live, gone ? "\"duration\": 3570}" : "\"duration\": 3600}"));
        free(text);
        replay_prom_free(b);
    }
}

/* A pod kube_pod_info was never seen at (its last sample is read at whole minutes) lived
 * between two of them: it ends by the next minute, and a range that starts after that
 * leaves it out, rather than running it to the range's end. */
static void test_unseen_brief_pod(void **state) {
    (void)state;
    for (int later = 0; later <= 1; later++) {
        replay_prom_t *b;
        frugal_err_t err;
        frugal_err_clear(&err);
        /* created at T0 + 65, started at T0 + 66, gone before the next whole minute,
         * T0 + 100 (T0 is 20 s past one) */
        int64_t start = later ? T0 + 600 : T0;
        assert_int_equal(replay_prom_new(start, T0 + 3600, &b, &err), 0);
        add(b, REPLAY_PROM_CREATED, POD("blip"), "[1700003600,\"1700000065\"]");
        add(b, REPLAY_PROM_START, POD("blip"), "[1700003600,\"1700000066\"]");
        replay_prom_stats_t st;
        char *text = NULL;
        trace_of(b, &st, &text);
        if (later) {
            assert_int_equal(st.pods, 0);
            assert_int_equal(st.outside, 1);
        } else {
            assert_int_equal(st.pods, 1);
            assert_non_null(strstr(text, "{\"t\": 65, "));
            assert_non_null(strstr(text, "\"duration\": 34}"));
        }
        free(text);
        replay_prom_free(b);
    }
}

/* A partial answer is kept, and its first warning and the count of answers with one are
 * given for the command to show. */
static void test_warnings(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 3600, &b, &err), 0);
    size_t answers = 9;
    assert_null(replay_prom_warning(b, &answers));
    assert_int_equal(answers, 0);
    const char *partial = "{\"status\":\"success\",\"warnings\":[\"store eu-1 down\",\"limit\"],"
                          "\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{" POD(
                              "w") "},\"values\":[[1700000100,\"1700000060\"]]}]}}";
    for (int i = 0; i < 2; i++)
        assert_int_equal(replay_prom_add(b, REPLAY_PROM_CREATED, partial, strlen(partial), &err),
                         0);
    assert_string_equal(replay_prom_warning(b, &answers), "store eu-1 down");
    assert_int_equal(answers, 2);
    replay_prom_free(b);
}

static void test_not_prometheus(void **state) {
    (void)state;
    expect_refused(
        "<html>hello</html>",
        "not a Prometheus answer: not a JSON object (it starts with \"<html>hello</htm...\")");
    expect_refused(" \n", "not a Prometheus answer: an empty body");
    /* a cut answer in our words, not the YAML parser's */
    expect_refused("{\"status\": \"success\", \"data\": [\"kube_pod_cre",
                   "not a Prometheus answer: not JSON (cut short?) at line 1, column ");
    expect_refused("{\"status\": \"success\", \"data\": [", "not JSON (cut short?)");
    expect_refused("{\"data\": 1}", "not a Prometheus answer: no \"status\"");
    expect_refused("{\"status\": \"success\", \"data\": {}}", "no data.result list");
    expect_refused("{\"status\": \"error\", \"errorType\": \"bad_data\", \"error\": \"parse "
                   "error\"}",
                   "Prometheus answered error: parse error");
    expect_refused("{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", "
                   "\"result\": [{\"values\": []}]}}",
                   "without a metric, or with values that are not [time, \"number\"] pairs");
    expect_refused("{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", "
                   "\"result\": [{\"metric\": {\"__name__\": \"kube_pod_created\"}, "
                   "\"values\": [[1, \"abc\"]]}]}}",
                   "with values that are not [time, \"number\"] pairs");
    /* an instant query's answer, or one without its type, is no range query's */
    expect_refused("{\"status\": \"success\", \"data\": {\"resultType\": \"vector\", "
                   "\"result\": []}}",
                   "not a Prometheus answer to a range query: data.resultType is \"vector\", not "
                   "matrix");
    expect_refused("{\"status\": \"success\", \"data\": {\"result\": []}}",
                   "data.resultType is missing, not matrix");
}

static void test_has_metric(void **state) {
    (void)state;
    const char *names = "{\"status\":\"success\",\"data\":[\"up\",\"kube_pod_created\"]}";
    bool has = false;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_has_metric(names, strlen(names), "kube_pod_created", &has, &err),
                     0);
    assert_true(has);
    assert_int_equal(replay_prom_has_metric(names, strlen(names), "kube_pod_info", &has, &err), 0);
    assert_false(has);
    assert_int_equal(replay_prom_has_metric("hello", 5, "x", &has, &err), FRUGAL_EINVAL);
    char buf[REPLAY_PROM_QUERY_MAX];
    assert_string_equal(
        replay_prom_query(REPLAY_PROM_INFO_SEEN, "a|\"b\"", 3600, buf, sizeof(buf)),
        "max_over_time(timestamp(kube_pod_info{exported_namespace!=\"\","
        "exported_namespace=~\"a|\\\"b\\\"\"})"
        "[3600s:1m]) or max_over_time(timestamp(kube_pod_info{exported_namespace=\"\","
        "namespace=~\"a|\\\"b\\\"\"})[3600s:1m])");
    assert_string_equal(replay_prom_query(REPLAY_PROM_OWNER, NULL, 600, buf, sizeof(buf)),
                        "max_over_time(kube_pod_owner[600s])");
}

/* Without a uid label, a name whose kube_pod_created changed was reused by a new pod: it
 * is counted, to be warned of; with a uid, each pod is its own. The last scrape is
 * kube-state-metrics' over every namespace, not the last sample of the pods asked for:
 * asked for with --namespace (others 1), else the latest kube_pod_info sample, even of a
 * series that names no pod (others 2). */
static void test_reused_name_and_last_scrape(void **state) {
    (void)state;
    assert_false(replay_prom_asked(REPLAY_PROM_LAST_SCRAPE, NULL));
    assert_true(replay_prom_asked(REPLAY_PROM_LAST_SCRAPE, "team-.*"));
    assert_true(replay_prom_asked(REPLAY_PROM_INFO_SEEN, NULL));
    for (int others = 0; others <= 2; others++) {
        replay_prom_t *b;
        frugal_err_t err;
        frugal_err_clear(&err);
        assert_int_equal(replay_prom_new(T0, T0 + 3100, &b, &err), 0);
        const char *bare = "\"namespace\":\"ns\",\"pod\":\"db-0\"";
        add(b, REPLAY_PROM_CREATED, bare,
            "[1700001000,\"1700000000\"],[1700002000,\"1700001500\"]");
        add(b, REPLAY_PROM_INFO_SEEN, bare, "[1700002000,\"1700001980\"]");
        add(b, REPLAY_PROM_CREATED, POD("web"), "[1700003100,\"1700000000\"]");
        add(b, REPLAY_PROM_INFO_SEEN, POD("web"), "[1700003100,\"1700003000\"]");
        /* another namespace's pod scraped 90 s later: web ended at its last sample, not
         * at the end, though that sample is within the 5 minutes before it */
        if (others)
            add(b, others == 1 ? REPLAY_PROM_LAST_SCRAPE : REPLAY_PROM_INFO_SEEN, "",
                "[1700003100,\"1700003090\"]");
        replay_prom_stats_t st;
        char *text = NULL;
        trace_of(b, &st, &text);
        assert_int_equal(st.pods, 2);
        assert_int_equal(st.reused, 1);
        const char *web = strstr(text, "\"name\": \"web\"");
        assert_non_null(web);
        assert_non_null(strstr(web, others ? "\"duration\": 3000}" : "\"duration\": 3100}"));
        free(text);
        replay_prom_free(b);
    }
}

/* --namespace as a PromQL double-quoted string: a newline or a control character in it
 * escaped (raw, Prometheus says "unterminated quoted string"); a cut stops before an
 * escape that does not fit. */
static void test_namespace_escaped(void **state) {
    (void)state;
    char buf[REPLAY_PROM_QUERY_MAX];
    assert_string_equal(
        replay_prom_query(REPLAY_PROM_OWNER, "a\n\"b\"\\.\t\x01|\r", 60, buf, sizeof(buf)),
        "max_over_time(kube_pod_owner{exported_namespace!=\"\","
        "exported_namespace=~\"a\\n\\\"b\\\"\\\\.\\t\\x01|\\r\"}[60s]) or "
        "max_over_time(kube_pod_owner{exported_namespace=\"\","
        "namespace=~\"a\\n\\\"b\\\"\\\\.\\t\\x01|\\r\"}[60s])");
    char small[4];
    assert_false(replay_prom_escape("ab\n", small, sizeof(small)));
    assert_string_equal(small, "ab");
    assert_true(replay_prom_escape("a\n", small, sizeof(small)));
    assert_string_equal(small, "a\\n");
    /* the longest regex, each character escaped as \xNN, still fits a query */
    char re[REPLAY_PROM_REGEX_MAX + 1];
    memset(re, 1, REPLAY_PROM_REGEX_MAX);
    re[REPLAY_PROM_REGEX_MAX] = '\0';
    replay_prom_query(REPLAY_PROM_INIT_REQUESTS, re, 3600, buf, sizeof(buf));
    assert_non_null(strstr(buf, "[3600s]) or max_over_time("));
    assert_string_equal(buf + strlen(buf) - 10, "\"}[3600s])");
}

/* Without kube_pod_owner (denylisted), kube_pod_info's created_by_kind and
 * created_by_name are the owner: DaemonSet and Node-owned pods are left out as with it.
 * kube_pod_owner wins where it gives one. */
static void test_owner_from_created_by(void **state) {
    (void)state;
    replay_prom_t *b;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(replay_prom_new(T0, T0 + 3600, &b, &err), 0);
    const char *pods[][3] = {{"ds", "DaemonSet", "ds"},       {"kube-proxy", "Node", "node-1"},
                             {"web", "ReplicaSet", "web-7f"}, {"bare", "<none>", "<none>"},
                             {"both", "DaemonSet", "x"},      {"nolabel", NULL, NULL}};
    for (size_t i = 0; i < sizeof(pods) / sizeof(*pods); i++) {
        char labels[256];
        int n = snprintf(labels, sizeof(labels),
                         "\"namespace\":\"ns\",\"pod\":\"%s\",\"uid\":\"u%zu\"", pods[i][0], i);
        add(b, REPLAY_PROM_CREATED, labels, "[1700000100,\"1700000060\"]");
        if (pods[i][1] != NULL)
            snprintf(labels + n, sizeof(labels) - (size_t)n,
                     ",\"created_by_kind\":\"%s\",\"created_by_name\":\"%s\"", pods[i][1],
                     pods[i][2]);
        add(b, REPLAY_PROM_INFO_SEEN, labels, "[1700003600,\"1700003000\"]");
    }
    add(b, REPLAY_PROM_OWNER,
        "\"namespace\":\"ns\",\"pod\":\"both\",\"uid\":\"u4\",\"owner_kind\":\"StatefulSet\","
        "\"owner_name\":\"db\",\"owner_is_controller\":\"true\"",
        "[1700000100,\"1\"]");
    replay_prom_stats_t st;
    char *text = NULL;
    trace_of(b, &st, &text);
    assert_int_equal(st.per_node, 2);
    assert_int_equal(st.pods, 4);
    assert_null(strstr(text, "\"name\": \"ds\""));
    assert_null(strstr(text, "\"name\": \"kube-proxy\""));
    assert_non_null(strstr(text, "\"name\": \"web\", \"namespace\": \"ns\", \"ownerReferences\": "
                                 "[{\"kind\": \"ReplicaSet\", \"name\": \"web-7f\", "
                                 "\"controller\": true}]"));
    assert_non_null(strstr(text, "\"name\": \"both\", \"namespace\": \"ns\", \"ownerReferences\": "
                                 "[{\"kind\": \"StatefulSet\", \"name\": \"db\""));
    assert_non_null(strstr(text, "\"name\": \"bare\", \"namespace\": \"ns\"}"));
    assert_non_null(strstr(text, "\"name\": \"nolabel\", \"namespace\": \"ns\"}"));
    free(text);
    replay_prom_free(b);
}

/* A pod without requests (BestEffort, or only ephemeral storage asked) is a valid Pod:
 * one container without resources, named as its series name one, else "main". */
static void test_no_requests(void **state) {
    (void)state;
    const char *cases[][2] = {
        {"", "[{\"name\": \"main\"}]"},
        {",\"container\":\"scratch\",\"resource\":\"ephemeral_storage\"",
         "[{\"name\": \"scratch\"}]"},
    };
    for (int i = 0; i < 2; i++) {
        replay_prom_t *b;
        frugal_err_t err;
        frugal_err_clear(&err);
        assert_int_equal(replay_prom_new(T0, T0 + 3600, &b, &err), 0);
        add(b, REPLAY_PROM_CREATED, POD("be"), "[1700000100,\"1700000060\"]");
        if (cases[i][0][0] != '\0') {
            char labels[256];
            snprintf(labels, sizeof(labels), "%s%s", POD("be"), cases[i][0]);
            add(b, REPLAY_PROM_REQUESTS, labels, "[1700000100,\"1073741824\"]");
        }
        replay_prom_stats_t st;
        char *text = NULL;
        trace_of(b, &st, &text);
        assert_int_equal(st.pods, 1);
        char want[128];
        snprintf(want, sizeof(want), "\"spec\": {\"containers\": %s}", cases[i][1]);
        if (strstr(text, want) == NULL)
            fail_msg("expected %s in %s", want, text);
        resources_t r = only_pod_request(text);
        assert_int_equal(r.cpu_milli, 0);
        assert_int_equal(r.memory_bytes, 0);
        free(text);
        replay_prom_free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_sidecars_and_overhead),
        cmocka_unit_test(test_exported_labels),
        cmocka_unit_test(test_completion_left_behind),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_not_prometheus),
        cmocka_unit_test(test_has_metric),
        cmocka_unit_test(test_unseen_brief_pod),
        cmocka_unit_test(test_running_at_end),
        cmocka_unit_test(test_reused_name_and_last_scrape),
        cmocka_unit_test(test_namespace_escaped),
        cmocka_unit_test(test_no_requests),
        cmocka_unit_test(test_owner_from_created_by),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
